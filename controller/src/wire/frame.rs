//! Kafka framing: every request and response is a 4-byte big-endian size
//! followed by that many bytes. This module owns only that size prefix and
//! the maximum frame size; it knows nothing of headers or bodies.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::WireError;

/// Kafka's default `socket.request.max.bytes`: 104857600 bytes (100 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 104_857_600;

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
            // Reserve only what is announced (bounded by the maximum above).
            src.reserve(SIZE_PREFIX_BYTES + size - src.len());
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
