//! Kafka framing: every request and response is a 4-byte big-endian size
//! followed by that many bytes. This module owns only that size prefix and
//! the maximum frame size; it knows nothing of headers or bodies.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::WireError;

/// Kafka's default `socket.request.max.bytes`: 104857600 bytes (100 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 104_857_600;

/// The most the read buffer grows by ahead of the bytes that arrived.
pub const RESERVE_STEP_BYTES: usize = 64 * 1024;

/// Bytes of the size prefix in front of every frame.
pub const SIZE_PREFIX_BYTES: usize = 4;

/// A tokio-util codec for Kafka frames (source: Kafka's `NetworkReceive`).
///
/// Decoding yields the frame payload without its size prefix; encoding
/// writes the prefix and the payload. A frame whose announced size exceeds
/// `max_frame_bytes` (`socket.request.max.bytes`) or is negative is
/// [`WireError::FrameTooLarge`] / [`WireError::NegativeFrameSize`]: the caller
/// must close the connection, as Kafka does, since the stream can no longer be
/// resynchronised.
#[derive(Debug, Clone)]
pub struct KafkaFrameCodec {
    max_frame_bytes: usize,
}

impl KafkaFrameCodec {
    /// A codec that accepts frames of at most `max_frame_bytes` bytes
    /// (payload, without the 4-byte prefix).
    pub fn new(max_frame_bytes: usize) -> Self {
        Self { max_frame_bytes }
    }

    /// The largest payload, in bytes, this codec accepts.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// Changes the largest payload accepted from the next frame on (a
    /// connection starts with a small limit until it is authorized).
    pub fn set_max_frame_bytes(&mut self, max_frame_bytes: usize) {
        self.max_frame_bytes = max_frame_bytes;
    }
}

impl Default for KafkaFrameCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_BYTES)
    }
}

impl Decoder for KafkaFrameCodec {
    type Item = BytesMut;
    type Error = WireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, WireError> {
        if src.len() < SIZE_PREFIX_BYTES {
            return Ok(None);
        }
        let announced = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
        if announced < 0 {
            return Err(WireError::NegativeFrameSize(announced));
        }
        let size = announced as usize;
        if size > self.max_frame_bytes {
            return Err(WireError::FrameTooLarge {
                size,
                max: self.max_frame_bytes,
            });
        }
        if src.len() < SIZE_PREFIX_BYTES + size {
            // Grow with what arrives, never by what is only announced: a
            // peer that sends a 4-byte size of 100 MiB and then nothing must
            // not make us allocate 100 MiB.
            src.reserve((SIZE_PREFIX_BYTES + size - src.len()).min(RESERVE_STEP_BYTES));
            return Ok(None);
        }
        src.advance(SIZE_PREFIX_BYTES);
        Ok(Some(src.split_to(size)))
    }
}

impl Encoder<Bytes> for KafkaFrameCodec {
    type Error = WireError;

    fn encode(&mut self, payload: Bytes, dst: &mut BytesMut) -> Result<(), WireError> {
        let size = i32::try_from(payload.len()).map_err(|_| WireError::FrameTooLarge {
            size: payload.len(),
            max: i32::MAX as usize,
        })?;
        dst.reserve(SIZE_PREFIX_BYTES + payload.len());
        dst.put_i32(size);
        dst.extend_from_slice(&payload);
        Ok(())
    }
}

/// What [`AnnouncingFrameCodec`] yields.
#[derive(Debug)]
pub enum Incoming {
    /// A valid size prefix arrived: the next frame's payload is this many
    /// bytes (what has arrived of it so far stays in the read buffer).
    Announced(usize),
    /// A whole frame's payload, without its size prefix.
    Frame(BytesMut),
}

/// [`KafkaFrameCodec`] that first yields each frame's announced size, as
/// soon as its 4-byte prefix is in, then the frame. `Framed` reads from the
/// socket only while the codec has nothing to yield, so a caller that waits
/// after [`Incoming::Announced`] before polling again stops reading from that
/// connection: how `queued.max.request.bytes` holds a connection back until
/// the bytes it announces fit (Kafka's `MemoryPool` muting a channel).
/// Errors: as [`KafkaFrameCodec`] (a size over the maximum or negative is
/// never announced).
#[derive(Debug, Clone, Default)]
pub struct AnnouncingFrameCodec {
    inner: KafkaFrameCodec,
    announced: bool,
}

impl AnnouncingFrameCodec {
    /// A codec that accepts frames of at most `max_frame_bytes` bytes.
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            inner: KafkaFrameCodec::new(max_frame_bytes),
            announced: false,
        }
    }

    /// As [`KafkaFrameCodec::set_max_frame_bytes`].
    pub fn set_max_frame_bytes(&mut self, max_frame_bytes: usize) {
        self.inner.set_max_frame_bytes(max_frame_bytes);
    }
}

impl Decoder for AnnouncingFrameCodec {
    type Item = Incoming;
    type Error = WireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Incoming>, WireError> {
        if !self.announced && src.len() >= SIZE_PREFIX_BYTES {
            let announced = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
            if let Ok(size) = usize::try_from(announced)
                && size <= self.inner.max_frame_bytes()
            {
                self.announced = true;
                return Ok(Some(Incoming::Announced(size)));
            }
        }
        Ok(self.inner.decode(src)?.map(|frame| {
            self.announced = false;
            Incoming::Frame(frame)
        }))
    }
}

impl Encoder<Bytes> for AnnouncingFrameCodec {
    type Error = WireError;

    fn encode(&mut self, payload: Bytes, dst: &mut BytesMut) -> Result<(), WireError> {
        self.inner.encode(payload, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_size_alone_reserves_no_more_than_a_step() {
        let mut codec = KafkaFrameCodec::default();
        let mut buf = BytesMut::new();
        buf.put_i32(100 * 1024 * 1024);
        buf.put_u8(0);
        assert!(codec.decode(&mut buf).expect("a valid prefix").is_none());
        assert!(
            buf.capacity() <= SIZE_PREFIX_BYTES + 1 + RESERVE_STEP_BYTES + 64,
            "reserved {} bytes",
            buf.capacity()
        );
    }

    #[test]
    fn a_lowered_limit_refuses_the_next_large_frame() {
        let mut codec = KafkaFrameCodec::default();
        codec.set_max_frame_bytes(10);
        let mut buf = BytesMut::new();
        buf.put_i32(11);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(WireError::FrameTooLarge { size: 11, max: 10 })
        ));
    }

    #[test]
    fn the_announcing_codec_yields_the_size_before_the_frame() {
        let mut codec = AnnouncingFrameCodec::new(100);
        let mut buf = BytesMut::new();
        buf.put_i32(3);
        assert!(matches!(
            codec.decode(&mut buf),
            Ok(Some(Incoming::Announced(3)))
        ));
        assert!(codec.decode(&mut buf).expect("waits").is_none());
        buf.extend_from_slice(b"abc");
        assert!(matches!(codec.decode(&mut buf), Ok(Some(Incoming::Frame(f))) if &f[..] == b"abc"));
        buf.put_i32(101);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(WireError::FrameTooLarge {
                size: 101,
                max: 100
            })
        ));
    }
}
