//! Fuzz target: any bytes, as the response frame a peer answers to one of
//! our requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
//! FetchSnapshot, ApiVersions, DescribeQuorum, AddRaftVoter, RemoveRaftVoter,
//! … at any version we send), must decode to a response or an error, never a
//! panic. The first byte picks the api, the second the version; the rest is
//! the frame payload, as `wire::client` hands it to `decode_response`.
//! A decoded body must encode again and decode to the same value.

#![no_main]

use bytes::Bytes;
use kraft_controller::wire::{SUPPORTED_APIS, decode_response, encode_response};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [api, version, frame @ ..] = data else {
        return;
    };
    let api = &SUPPORTED_APIS[usize::from(*api) % SUPPORTED_APIS.len()];
    let span = (api.max_version - api.min_version + 1) as u8;
    let version = api.min_version + i16::from(*version % span);
    let Ok((correlation_id, body)) =
        decode_response(api.key, version, Bytes::copy_from_slice(frame))
    else {
        return;
    };
    // Fields a version cannot carry are never decoded, so encoding at the
    // same version must succeed and give back the same value.
    let encoded = encode_response(correlation_id, api.key, version, &body)
        .expect("a decoded response encodes at its own version");
    let (again_id, again) =
        decode_response(api.key, version, encoded).expect("an encoded response decodes");
    assert_eq!(again_id, correlation_id);
    assert_eq!(again, body, "{:?} v{version} round trip", api.key);
});
