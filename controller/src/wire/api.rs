//! The server side's request and response types: `kafka-protocol`'s
//! [`ApiKey`], [`RequestKind`] and [`ResponseKind`], widened by the few
//! messages the crate (0.18) lacks and [`super::own_messages`] encodes:
//! UnregisterController (api key 94, v0, KIP-1312, Kafka 4.4) and
//! AddRaftVoter v1 (KIP-1186 `AckWhenCommitted`, Kafka 4.2).
//!
//! Every other api stays `kafka-protocol`'s own type inside the `Kafka`
//! variants, so the server matches on the crate's enums as before. An
//! AddRaftVoter request is always [`Request::AddRaftVoter`] (v0 too, with
//! `ack_when_committed` true), never `RequestKind::AddRaftVoter`, so the
//! flag cannot be lost on the way to the raft engine; its answer is
//! `kafka-protocol`'s v0 response (v1's layout is v0's).
//!
//! Owns these types and their header versions; it must not decide what to
//! answer.

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::own_messages::{
    AddRaftVoterRequestV1, UNREGISTER_CONTROLLER_API_KEY, UnregisterControllerRequest,
    UnregisterControllerResponse,
};

/// An api this controller can be asked for: one `kafka-protocol` knows, or
/// UnregisterController (api key 94), which it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// An api of `kafka-protocol`'s [`ApiKey`].
    Kafka(ApiKey),
    /// UnregisterController (api key 94, Kafka 4.4's
    /// `ApiKeys.UNREGISTER_CONTROLLER`, KIP-1312).
    UnregisterController,
}

impl Api {
    /// The api key on the wire (`ApiKey as i16`, or 94).
    pub fn key(self) -> i16 {
        match self {
            Api::Kafka(k) => k as i16,
            Api::UnregisterController => UNREGISTER_CONTROLLER_API_KEY,
        }
    }

    /// The api of a wire key; `None` for a key neither `kafka-protocol` nor
    /// [`super::own_messages`] knows.
    pub fn from_key(key: i16) -> Option<Self> {
        if key == UNREGISTER_CONTROLLER_API_KEY {
            return Some(Api::UnregisterController);
        }
        ApiKey::try_from(key).ok().map(Api::Kafka)
    }

    /// The `kafka-protocol` key, `None` for UnregisterController.
    pub fn kafka(self) -> Option<ApiKey> {
        match self {
            Api::Kafka(k) => Some(k),
            Api::UnregisterController => None,
        }
    }

    /// The request header version of this api at `version`:
    /// `kafka-protocol`'s, and v2 for UnregisterController (flexible from
    /// v0, Kafka 4.4.0's `UnregisterControllerRequest.json`).
    pub fn request_header_version(self, version: i16) -> i16 {
        match self {
            Api::Kafka(k) => k.request_header_version(version),
            Api::UnregisterController => 2,
        }
    }

    /// The response header version of this api at `version`:
    /// `kafka-protocol`'s, and v1 for UnregisterController (flexible).
    pub fn response_header_version(self, version: i16) -> i16 {
        match self {
            Api::Kafka(k) => k.response_header_version(version),
            Api::UnregisterController => 1,
        }
    }
}

impl From<ApiKey> for Api {
    fn from(key: ApiKey) -> Self {
        Api::Kafka(key)
    }
}

impl PartialEq<ApiKey> for Api {
    fn eq(&self, other: &ApiKey) -> bool {
        *self == Api::Kafka(*other)
    }
}

/// A request body as the server decodes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Any request `kafka-protocol` decodes (never its `AddRaftVoter`).
    Kafka(RequestKind),
    /// AddRaftVoter (80) at v0 or v1, with KIP-1186's `AckWhenCommitted`
    /// (true at v0).
    AddRaftVoter(AddRaftVoterRequestV1),
    /// UnregisterController (94).
    UnregisterController(UnregisterControllerRequest),
}

impl Request {
    /// The api of this body; `None` for a `kafka-protocol` request of an
    /// api the server never decodes (see [`super::request_api_key`]).
    pub fn api(&self) -> Option<Api> {
        match self {
            Request::Kafka(k) => super::request_api_key(k).map(Api::Kafka),
            Request::AddRaftVoter(_) => Some(Api::Kafka(ApiKey::AddRaftVoter)),
            Request::UnregisterController(_) => Some(Api::UnregisterController),
        }
    }
}

/// The same request: a `kafka-protocol` AddRaftVoter equals
/// [`Request::AddRaftVoter`] with its fields and `AckWhenCommitted` true
/// (what v0 means).
impl PartialEq<RequestKind> for Request {
    fn eq(&self, other: &RequestKind) -> bool {
        match (self, other) {
            (Request::Kafka(k), other) => k == other,
            (Request::AddRaftVoter(v1), RequestKind::AddRaftVoter(r)) => {
                v1.ack_when_committed && v1.request == *r
            }
            _ => false,
        }
    }
}

impl From<RequestKind> for Request {
    fn from(kind: RequestKind) -> Self {
        Request::Kafka(kind)
    }
}

/// A response body as the server encodes it.
// The `Kafka` variant is almost every answer and was moved unboxed before
// this type existed; boxing it would add an allocation to each for the
// rare UnregisterController answer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// Any response `kafka-protocol` encodes (AddRaftVoter v1 included: its
    /// layout is v0's).
    Kafka(ResponseKind),
    /// UnregisterController (94).
    UnregisterController(UnregisterControllerResponse),
}

impl Response {
    /// The `kafka-protocol` body, `None` for an own one.
    pub fn kafka(&self) -> Option<&ResponseKind> {
        match self {
            Response::Kafka(k) => Some(k),
            Response::UnregisterController(_) => None,
        }
    }
}

impl From<ResponseKind> for Response {
    fn from(kind: ResponseKind) -> Self {
        Response::Kafka(kind)
    }
}

impl From<UnregisterControllerResponse> for Response {
    fn from(r: UnregisterControllerResponse) -> Self {
        Response::UnregisterController(r)
    }
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, Bytes, BytesMut};
    use kafka_protocol::{
        messages::{AddRaftVoterRequest, RequestHeader},
        protocol::Encodable,
    };

    use super::*;
    use crate::wire::{
        WireError, api_version_list, decode_request, encode_answer, own_messages,
        response_correlation_id,
    };

    /// A request frame payload: a v2 header of `key` v`version`
    /// (correlation id 7), then `body`.
    fn frame(key: i16, version: i16, body: &[u8]) -> Bytes {
        let mut buf = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(key)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .encode(&mut buf, 2)
            .expect("header");
        buf.put_slice(body);
        buf.freeze()
    }

    // KIP-1312: Kafka 4.4.0's controller lists UnregisterController (94)
    // v0 and AddRaftVoter v0-1 (KIP-1186) in its ApiVersions answer.
    #[test]
    fn api_versions_lists_unregister_controller_v0_and_add_raft_voter_v0_to_1() {
        let list = api_version_list();
        let row = |key: i16| {
            list.iter()
                .find(|a| a.api_key == key)
                .map(|a| (a.min_version, a.max_version))
        };
        assert_eq!(row(94), Some((0, 0)));
        assert_eq!(row(ApiKey::AddRaftVoter as i16), Some((0, 1)));
        assert_eq!(row(ApiKey::RemoveRaftVoter as i16), Some((0, 0)));
        assert!(list.windows(2).all(|w| w[0].api_key < w[1].api_key));
    }

    #[test]
    fn an_unregister_controller_request_decodes_and_its_answer_encodes_with_a_v1_header() {
        let decoded = decode_request(frame(94, 0, &[0, 0, 0x0b, 0xb8, 0])).expect("decodes");
        assert_eq!(decoded.api_key, Api::UnregisterController);
        assert_eq!(
            decoded.body,
            Request::UnregisterController(own_messages::UnregisterControllerRequest {
                controller_id: 3000
            })
        );
        let answer =
            Response::UnregisterController(own_messages::UnregisterControllerResponse::default());
        let bytes = encode_answer(7, Api::UnregisterController, 0, &answer).expect("encodes");
        // Correlation id, empty tagged fields (header v1), then the body.
        assert_eq!(&bytes[..], &[0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]);
        assert_eq!(response_correlation_id(&bytes).expect("id"), 7);
        assert!(encode_answer(7, Api::Kafka(ApiKey::Fetch), 0, &answer).is_err());
    }

    // KIP-1186: the v1 answer is v0's layout (Kafka 4.4.0's schema), after
    // a v1 response header; kafka-protocol itself has no v1.
    #[test]
    fn an_add_raft_voter_v1_answer_is_written_in_v0s_layout() {
        let answer = Response::Kafka(ResponseKind::AddRaftVoter(
            kafka_protocol::messages::AddRaftVoterResponse::default().with_error_message(None),
        ));
        let bytes =
            encode_answer(7, Api::Kafka(ApiKey::AddRaftVoter), 1, &answer).expect("encodes");
        assert_eq!(
            &bytes[..],
            &[
                0, 0, 0, 7, // correlation id
                0, // response header tagged fields
                0, 0, 0, 0, // ThrottleTimeMs
                0, 0, // ErrorCode
                0, // ErrorMessage null
                0, // tagged fields
            ][..]
        );
    }

    #[test]
    fn add_raft_voter_v1_decodes_with_its_ack_when_committed_flag() {
        let v0 = AddRaftVoterRequest::default()
            .with_cluster_id(Some("c".into()))
            .with_voter_id(4);
        for (version, ack) in [(0, true), (1, true), (1, false)] {
            let body = own_messages::AddRaftVoterRequestV1 {
                request: v0.clone(),
                ack_when_committed: ack,
            };
            let bytes = body.encode(version).expect("encodes");
            let decoded = decode_request(frame(80, version, &bytes)).expect("decodes");
            assert_eq!(decoded.body, Request::AddRaftVoter(body), "v{version}");
        }
    }

    /// A malformed body of either closes the connection: a truncated one,
    /// trailing bytes, or an AddRaftVoter v1 announcing more listeners
    /// than its bytes hold.
    #[test]
    fn malformed_unregister_controller_and_add_raft_voter_v1_bodies_are_refused() {
        for (key, version, body) in [
            (94, 0, &[0u8, 0, 0x0b][..]),
            (94, 0, &[0, 0, 0x0b, 0xb8, 0, 9][..]),
            (80, 1, &[0x02, b'c', 0, 0, 0, 0, 0, 0, 0, 4][..]),
            (
                80,
                1,
                &[
                    0x00, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    0, 0, 0xff, 0xff, 0xff, 0x0f,
                ][..],
            ),
        ] {
            match decode_request(frame(key, version, body)) {
                Err(WireError::MalformedBody { api_key, .. }) => {
                    assert_eq!(api_key.key(), key);
                }
                other => panic!("api {key} v{version} {body:?}: {other:?}"),
            }
        }
        // Versions outside the table are unsupported, not malformed.
        assert!(matches!(
            decode_request(frame(94, 1, &[0, 0, 0, 1, 0])),
            Err(WireError::Unsupported(_))
        ));
        assert!(matches!(
            decode_request(frame(80, 2, &[])),
            Err(WireError::Unsupported(_))
        ));
    }

    #[test]
    fn api_94_is_unregister_controller_and_every_kafka_protocol_key_maps_to_itself() {
        assert_eq!(Api::from_key(94), Some(Api::UnregisterController));
        assert_eq!(Api::UnregisterController.key(), 94);
        assert_eq!(
            Api::from_key(ApiKey::AddRaftVoter as i16),
            Some(Api::Kafka(ApiKey::AddRaftVoter))
        );
        assert_eq!(Api::from_key(ApiKey::Fetch as i16).map(Api::key), Some(1));
        assert_eq!(Api::from_key(-3), None);
        assert_eq!(Api::from_key(30_000), None);
        // Flexible from v0: request header v2, response header v1.
        assert_eq!(Api::UnregisterController.request_header_version(0), 2);
        assert_eq!(Api::UnregisterController.response_header_version(0), 1);
    }
}
