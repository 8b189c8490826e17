//! Fuzz target: any bytes, as one request frame payload and as a stream of
//! size-prefixed frames, must decode to a request or an error, never a panic
//! or an abort (DESIGN 2.2: bad input closes one connection, nothing else).

#![no_main]

use bytes::{Bytes, BytesMut};
use kraft_controller::wire::{KafkaFrameCodec, decode_request};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    if let Err(kraft_controller::wire::WireError::Unsupported(u)) =
        decode_request(Bytes::copy_from_slice(data))
    {
        let _ = u.response();
    }
    let mut stream = BytesMut::from(data);
    let mut codec = KafkaFrameCodec::new(1 << 16);
    while let Ok(Some(frame)) = codec.decode(&mut stream) {
        let _ = decode_request(frame.freeze());
    }
});
