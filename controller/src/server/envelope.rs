//! Envelope (58): admin requests a broker forwards to the active controller
//! on behalf of its clients (KIP-590), as Kafka's
//! `ControllerApis.handleEnvelopeRequest` and `EnvelopeUtils` unwrap them.
//!
//! The envelope's own principal (the broker) must have CLUSTER_ACTION on
//! CLUSTER; the connection layer checks that like any other api
//! ([`super::authz`]). This module then unwraps, in Kafka's order:
//! 1. the client's principal, Kafka's `DefaultKafkaPrincipalBuilder` serde
//!    (an INT16 version, 0, then `DefaultPrincipalData` v0):
//!    PRINCIPAL_DESERIALIZATION_FAILURE when it does not parse;
//! 2. the client's address (4 or 16 bytes): INVALID_REQUEST otherwise;
//! 3. the inner request header: UNSUPPORTED_VERSION when it does not parse;
//! 4. the inner api must be forwardable (Kafka 4.4 `ApiKeys.forwardable`; an
//!    Envelope is not, so envelopes do not nest): INVALID_REQUEST;
//! 5. the inner body, decoded by the wire layer exactly as a direct request
//!    (our version table, the array-count guard, no trailing bytes):
//!    UNSUPPORTED_VERSION when it does not parse or is not served.
//!
//! A refused envelope is answered with its error in
//! `EnvelopeResponse.errorCode` and no data; nothing is closed. The
//! unwrapped request is then authorized with the client's principal and
//! dispatched as a direct request (the connection layer does both); its
//! answer is encoded with the inner version and correlation id into
//! `responseData` ([`wrap_response`]). It owns the envelope's bytes; it must
//! not decide what the inner request does.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::{
    ResponseError,
    messages::{ApiKey, DefaultPrincipalData, EnvelopeRequest, EnvelopeResponse, ResponseKind},
    protocol::{Decodable, Encodable, StrBytes},
};

use crate::wire::{self, Api, DecodedRequest, INVALID_REQUEST, Response, UNSUPPORTED_VERSION};

/// Kafka's `PRINCIPAL_DESERIALIZATION_FAILURE` (97).
pub const PRINCIPAL_DESERIALIZATION_FAILURE: i16 = 97;

/// Whether a broker may forward `api` inside an Envelope: Kafka 4.4's
/// `ApiKeys` with `forwardable = true` (UnregisterController, api 94, is).
pub fn is_forwardable(api: impl Into<Api>) -> bool {
    let api = match api.into() {
        Api::Kafka(key) => key,
        Api::UnregisterController => return true,
    };
    matches!(
        api,
        ApiKey::CreateTopics
            | ApiKey::DeleteTopics
            | ApiKey::CreateAcls
            | ApiKey::DeleteAcls
            | ApiKey::AlterConfigs
            | ApiKey::CreatePartitions
            | ApiKey::CreateDelegationToken
            | ApiKey::RenewDelegationToken
            | ApiKey::ExpireDelegationToken
            | ApiKey::ElectLeaders
            | ApiKey::IncrementalAlterConfigs
            | ApiKey::AlterPartitionReassignments
            | ApiKey::ListPartitionReassignments
            | ApiKey::AlterClientQuotas
            | ApiKey::AlterUserScramCredentials
            | ApiKey::DescribeQuorum
            | ApiKey::UpdateFeatures
            | ApiKey::UnregisterBroker
            | ApiKey::AllocateProducerIds
            | ApiKey::AddRaftVoter
            | ApiKey::RemoveRaftVoter
    )
}

/// A request taken out of its envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Forwarded {
    /// The client's request, decoded as a direct one.
    pub request: DecodedRequest,
    /// The client's principal, `Type:name` (e.g. `User:alice`).
    pub principal: String,
    /// The client's address (for logs).
    pub client_address: IpAddr,
}

/// Why an envelope was refused: Kafka's error code, and a message for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("envelope refused ({code}): {reason}")]
pub struct Refused {
    /// The error code for `EnvelopeResponse.errorCode`.
    pub code: i16,
    /// What was wrong.
    pub reason: String,
}

fn refused(code: i16, reason: impl Into<String>) -> Refused {
    Refused {
        code,
        reason: reason.into(),
    }
}

/// Encodes `principal` (`Type:name`; without a `:`, type `User`) as Kafka's
/// `DefaultKafkaPrincipalBuilder.serialize`: INT16 version 0, then
/// `DefaultPrincipalData` v0 (`tokenAuthenticated` false).
///
/// Errors: [`Refused`] (UNKNOWN_SERVER_ERROR) only if kafka-protocol cannot
/// encode the strings.
pub fn encode_principal(principal: &str) -> Result<Bytes, Refused> {
    let (kind, name) = principal.split_once(':').unwrap_or(("User", principal));
    let data = DefaultPrincipalData::default()
        .with_type(StrBytes::from_string(kind.to_owned()))
        .with_name(StrBytes::from_string(name.to_owned()));
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&0i16.to_be_bytes());
    data.encode(&mut buf, 0).map_err(|e| {
        refused(
            ResponseError::UnknownServerError.code(),
            format!("encoding the principal: {e}"),
        )
    })?;
    Ok(buf.freeze())
}

/// Decodes a principal written by [`encode_principal`] (or Kafka's
/// `DefaultKafkaPrincipalBuilder.serialize`) into `Type:name`.
///
/// Errors: [`Refused`] with PRINCIPAL_DESERIALIZATION_FAILURE for missing
/// bytes, a version other than 0, or bytes that do not parse. Bytes after
/// the data are ignored, as Kafka's `DefaultKafkaPrincipalBuilder` does (a
/// newer writer may add fields).
pub fn decode_principal(bytes: Option<&Bytes>) -> Result<String, Refused> {
    let bad = |reason: String| {
        refused(
            PRINCIPAL_DESERIALIZATION_FAILURE,
            format!("failed to deserialize client principal from envelope: {reason}"),
        )
    };
    let Some(bytes) = bytes else {
        return Err(bad("no principal".to_owned()));
    };
    let mut buf = bytes.clone();
    if buf.remaining() < 2 {
        return Err(bad(format!("{} bytes, no version", buf.remaining())));
    }
    let version = buf.get_i16();
    if version != 0 {
        return Err(bad(format!("version {version}, expected 0")));
    }
    let data = DefaultPrincipalData::decode(&mut buf, 0).map_err(|e| bad(e.to_string()))?;
    Ok(format!("{}:{}", data._type.as_str(), data.name.as_str()))
}

/// Reads Kafka's `InetAddress.getByAddress` form: 4 bytes (IPv4) or 16 (IPv6).
fn client_address(bytes: &[u8]) -> Result<IpAddr, Refused> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        Ok(IpAddr::V4(Ipv4Addr::from(v4)))
    } else if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
        Ok(IpAddr::V6(Ipv6Addr::from(v6)))
    } else {
        Err(refused(
            INVALID_REQUEST,
            format!(
                "failed to parse client address from envelope: {} bytes",
                bytes.len()
            ),
        ))
    }
}

/// The envelope of a client's request (what a broker sends; our tests and
/// tools use it): `inner` is a whole request frame payload (header and
/// body, without the size prefix), `client_address` the client's.
///
/// Errors: [`Refused`] if the principal cannot be encoded.
pub fn wrap_request(
    inner: Bytes,
    principal: &str,
    client_address: IpAddr,
) -> Result<EnvelopeRequest, Refused> {
    let address = match client_address {
        IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
        IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
    };
    Ok(EnvelopeRequest::default()
        .with_request_data(inner)
        .with_request_principal(Some(encode_principal(principal)?))
        .with_client_host_address(address))
}

/// Takes the client's request out of `envelope` (steps 1-5 of the module
/// doc). Never panics on input.
///
/// Errors: [`Refused`] with the code Kafka answers.
pub fn unwrap_request(envelope: &EnvelopeRequest) -> Result<Forwarded, Refused> {
    let principal = decode_principal(envelope.request_principal.as_ref())?;
    let client_address = client_address(&envelope.client_host_address)?;
    let data = &envelope.request_data;
    let (Some(key), Some(version)) = (data.get(0..2), data.get(2..4)) else {
        return Err(refused(
            UNSUPPORTED_VERSION,
            "failed to parse request header from envelope: too short",
        ));
    };
    let raw_key = i16::from_be_bytes([key[0], key[1]]);
    let api_version = i16::from_be_bytes([version[0], version[1]]);
    let api = Api::from_key(raw_key).ok_or_else(|| {
        refused(
            UNSUPPORTED_VERSION,
            format!("failed to parse request header from envelope: unknown api key {raw_key}"),
        )
    })?;
    if !is_forwardable(api) {
        return Err(refused(
            INVALID_REQUEST,
            format!("API {api:?} is not enabled or is not eligible for forwarding"),
        ));
    }
    let request = wire::decode_request(data.clone()).map_err(|e| {
        refused(
            UNSUPPORTED_VERSION,
            format!("failed to parse forwarded {api:?} v{api_version} request: {e}"),
        )
    })?;
    Ok(Forwarded {
        request,
        principal,
        client_address,
    })
}

/// An envelope's refusal: `error_code`, no data.
pub fn refused_response(code: i16) -> ResponseKind {
    ResponseKind::Envelope(
        EnvelopeResponse::default()
            .with_error_code(code)
            .with_response_data(None),
    )
}

/// Whether the inner answer says this node is not the active controller:
/// NOT_CONTROLLER anywhere in it (NOT_LEADER_OR_FOLLOWER for DescribeQuorum),
/// as Kafka's `RequestChannel.Request.shouldReturnNotController` counts a
/// response's errors. Such an answer goes back as an envelope error instead
/// of wrapped: the broker's `NodeToControllerRequestThread` looks for
/// NOT_CONTROLLER only in the envelope's own error, and only then finds the
/// new active controller; wrapped, it kept forwarding to the old one.
fn names_another_controller(body: &Response) -> bool {
    let not_controller = ResponseError::NotController.code();
    let any = |codes: Vec<i16>| codes.contains(&not_controller);
    let body = match body {
        Response::Kafka(body) => body,
        Response::UnregisterController(r) => return r.error_code == not_controller,
    };
    match body {
        ResponseKind::CreateTopics(r) => any(r.topics.iter().map(|t| t.error_code).collect()),
        ResponseKind::DeleteTopics(r) => any(r.responses.iter().map(|t| t.error_code).collect()),
        ResponseKind::CreatePartitions(r) => any(r.results.iter().map(|t| t.error_code).collect()),
        ResponseKind::IncrementalAlterConfigs(r) => {
            any(r.responses.iter().map(|t| t.error_code).collect())
        }
        ResponseKind::AlterConfigs(r) => any(r.responses.iter().map(|t| t.error_code).collect()),
        ResponseKind::CreateAcls(r) => any(r.results.iter().map(|t| t.error_code).collect()),
        ResponseKind::DeleteAcls(r) => any(r.filter_results.iter().map(|t| t.error_code).collect()),
        ResponseKind::ElectLeaders(r) => {
            r.error_code == not_controller
                || any(r
                    .replica_election_results
                    .iter()
                    .flat_map(|t| t.partition_result.iter().map(|p| p.error_code))
                    .collect())
        }
        ResponseKind::UpdateFeatures(r) => r.error_code == not_controller,
        ResponseKind::DescribeQuorum(r) => {
            let not_leader = ResponseError::NotLeaderOrFollower.code();
            r.error_code == not_leader
                || r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter())
                    .any(|p| p.error_code == not_leader)
        }
        _ => false,
    }
}

/// The envelope of the answer `body` to the inner request (`api_key` v
/// `api_version`, `correlation_id`): the inner response header and body at
/// the inner version in `responseData`, error code 0.
///
/// Errors: [`Refused`] (UNKNOWN_SERVER_ERROR) when the body cannot be
/// encoded at the inner version; answer it with [`refused_response`].
pub fn wrap_response(
    correlation_id: i32,
    api_key: Api,
    api_version: i16,
    body: &Response,
) -> Result<ResponseKind, Refused> {
    if names_another_controller(body) {
        return Ok(refused_response(ResponseError::NotController.code()));
    }
    let bytes = wire::encode_answer(correlation_id, api_key, api_version, body)
        .map_err(|e| refused(ResponseError::UnknownServerError.code(), e.to_string()))?;
    Ok(ResponseKind::Envelope(
        EnvelopeResponse::default()
            .with_error_code(0)
            .with_response_data(Some(bytes)),
    ))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{
        ApiVersionsRequest, DescribeClusterRequest, DescribeQuorumRequest, DescribeQuorumResponse,
        RequestHeader, RequestKind,
    };

    use super::*;

    fn hex(s: &str) -> Bytes {
        Bytes::from(
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect::<Vec<_>>(),
        )
    }

    fn envelope_of(inner: Bytes) -> EnvelopeRequest {
        wrap_request(inner, "User:alice", [10, 0, 0, 7].into()).expect("wraps")
    }

    fn describe_quorum(correlation_id: i32) -> Bytes {
        wire::encode_request(
            ApiKey::DescribeQuorum,
            2,
            correlation_id,
            Some("adminclient-1"),
            &RequestKind::DescribeQuorum(DescribeQuorumRequest::default()),
        )
        .expect("encodes")
    }

    // Golden bytes from Kafka 4.4.0's DefaultKafkaPrincipalBuilder.serialize
    // (jshell): new KafkaPrincipal("User", "CN=broker-0").
    #[test]
    fn the_principal_is_kafkas_default_principal_serde() {
        let golden = hex(concat!(
            "0000",                   // INT16 version 0
            "05",                     // type: compact string, length 4 + 1
            "55736572",               // "User"
            "0c",                     // name: compact string, length 11 + 1
            "434e3d62726f6b65722d30", // "CN=broker-0"
            "00",                     // tokenAuthenticated: false
            "00",                     // no tagged fields
        ));
        assert_eq!(
            encode_principal("User:CN=broker-0").expect("encodes"),
            golden
        );
        assert_eq!(
            decode_principal(Some(&golden)).expect("decodes"),
            "User:CN=broker-0"
        );
        // A token-authenticated ANONYMOUS, also from Kafka.
        let token = hex("000005557365720a414e4f4e594d4f55530100");
        assert_eq!(
            decode_principal(Some(&token)).expect("decodes"),
            "User:ANONYMOUS"
        );
    }

    #[test]
    fn a_bad_principal_is_a_principal_deserialization_failure() {
        for bytes in [None, Some(hex("")), Some(hex("0001")), Some(hex("0000ff"))] {
            let err = decode_principal(bytes.as_ref()).expect_err("refused");
            assert_eq!(err.code, PRINCIPAL_DESERIALIZATION_FAILURE, "{bytes:?}");
        }
        // Kafka ignores what follows the data.
        let mut golden = encode_principal("User:a").expect("encodes").to_vec();
        golden.push(0);
        assert_eq!(
            decode_principal(Some(&Bytes::from(golden))).expect("decodes"),
            "User:a"
        );
    }

    // KIP-1312: UnregisterController (94) is forwardable (Kafka 4.4.0's
    // ApiKeys); its answer is wrapped, and a NOT_CONTROLLER one becomes the
    // envelope's own error so the broker finds the active controller.
    #[test]
    fn a_forwarded_unregister_controller_unwraps_and_its_answer_is_wrapped() {
        use crate::wire::own_messages::{
            UnregisterControllerRequest, UnregisterControllerResponse,
        };
        let mut inner = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(94)
            .with_request_api_version(0)
            .with_correlation_id(5)
            .encode(&mut inner, 2)
            .expect("header");
        inner.extend_from_slice(
            &UnregisterControllerRequest { controller_id: 3 }
                .encode(0)
                .expect("body"),
        );
        let forwarded = unwrap_request(&envelope_of(inner.freeze())).expect("unwraps");
        assert_eq!(forwarded.request.api_key, Api::UnregisterController);
        assert_eq!(
            forwarded.request.body,
            crate::wire::Request::UnregisterController(UnregisterControllerRequest {
                controller_id: 3
            })
        );
        let ok = Response::UnregisterController(UnregisterControllerResponse::default());
        let Ok(ResponseKind::Envelope(r)) = wrap_response(5, Api::UnregisterController, 0, &ok)
        else {
            panic!("an envelope response");
        };
        assert_eq!(r.error_code, 0);
        let data = r.response_data.expect("data");
        assert_eq!(&data[..4], &[0, 0, 0, 5], "the inner correlation id");
        let moved = Response::UnregisterController(UnregisterControllerResponse {
            error_code: ResponseError::NotController.code(),
            ..Default::default()
        });
        let Ok(ResponseKind::Envelope(r)) = wrap_response(5, Api::UnregisterController, 0, &moved)
        else {
            panic!("an envelope response");
        };
        assert_eq!(r.error_code, ResponseError::NotController.code());
        assert!(r.response_data.is_none());
    }

    #[test]
    fn an_envelope_unwraps_into_the_clients_request_principal_and_address() {
        let forwarded = unwrap_request(&envelope_of(describe_quorum(41))).expect("unwraps");
        assert_eq!(forwarded.principal, "User:alice");
        assert_eq!(forwarded.client_address, IpAddr::from([10, 0, 0, 7]));
        assert_eq!(forwarded.request.api_key, ApiKey::DescribeQuorum);
        assert_eq!(forwarded.request.api_version, 2);
        assert_eq!(forwarded.request.correlation_id(), 41);
        assert_eq!(
            forwarded.request.header.client_id.as_deref(),
            Some("adminclient-1")
        );
        let v6 =
            wrap_request(describe_quorum(1), "User:b", "::1".parse().expect("ip")).expect("wraps");
        assert_eq!(
            unwrap_request(&v6).expect("unwraps").client_address,
            "::1".parse::<IpAddr>().expect("ip")
        );
    }

    #[test]
    fn the_answer_is_wrapped_with_the_inner_version_and_correlation_id() {
        let forwarded = unwrap_request(&envelope_of(describe_quorum(41))).expect("unwraps");
        let body = ResponseKind::DescribeQuorum(DescribeQuorumResponse::default());
        let inner = &forwarded.request;
        let Ok(ResponseKind::Envelope(r)) = wrap_response(
            inner.correlation_id(),
            inner.api_key,
            inner.api_version,
            &body.clone().into(),
        ) else {
            panic!("an envelope response");
        };
        assert_eq!(r.error_code, 0);
        let data = r.response_data.expect("data");
        let (correlation_id, decoded) =
            wire::decode_response(ApiKey::DescribeQuorum, 2, data).expect("decodes");
        assert_eq!(correlation_id, 41);
        assert_eq!(decoded, body);
    }

    #[test]
    fn an_answer_naming_another_controller_is_a_not_controller_envelope() {
        use kafka_protocol::messages::{CreateTopicsResponse, create_topics_response};
        let topic =
            |code| create_topics_response::CreatableTopicResult::default().with_error_code(code);
        let refused = ResponseKind::CreateTopics(
            CreateTopicsResponse::default()
                .with_topics(vec![topic(0), topic(ResponseError::NotController.code())]),
        );
        let Ok(ResponseKind::Envelope(r)) =
            wrap_response(7, ApiKey::CreateTopics.into(), 7, &refused.into())
        else {
            panic!("not an envelope");
        };
        assert_eq!(r.error_code, ResponseError::NotController.code());
        assert!(r.response_data.is_none());
        let served = ResponseKind::CreateTopics(
            CreateTopicsResponse::default().with_topics(vec![topic(0), topic(36)]),
        );
        let Ok(ResponseKind::Envelope(r)) =
            wrap_response(7, ApiKey::CreateTopics.into(), 7, &served.into())
        else {
            panic!("not an envelope");
        };
        assert_eq!(r.error_code, 0);
        assert!(r.response_data.is_some());
    }

    #[test]
    fn nested_and_non_forwardable_requests_are_invalid_requests() {
        let inner = wire::encode_request(
            ApiKey::DescribeCluster,
            1,
            1,
            None,
            &RequestKind::DescribeCluster(DescribeClusterRequest::default()),
        )
        .expect("encodes");
        let err = unwrap_request(&envelope_of(inner)).expect_err("not forwardable");
        assert_eq!(err.code, INVALID_REQUEST);
        let nested = envelope_of(describe_quorum(1));
        let nested =
            wire::encode_request(ApiKey::Envelope, 0, 2, None, &RequestKind::Envelope(nested))
                .expect("encodes");
        let err = unwrap_request(&envelope_of(nested)).expect_err("nested");
        assert_eq!(err.code, INVALID_REQUEST);
        let versions = wire::encode_request(
            ApiKey::ApiVersions,
            3,
            1,
            None,
            &RequestKind::ApiVersions(ApiVersionsRequest::default()),
        )
        .expect("encodes");
        assert_eq!(
            unwrap_request(&envelope_of(versions)).map_err(|e| e.code),
            Err(INVALID_REQUEST)
        );
    }

    #[test]
    fn garbage_inside_is_unsupported_version_and_a_bad_address_invalid_request() {
        for inner in [
            hex(""),
            hex("00"),
            hex("7fff0000"),                 // unknown api key
            hex("0037000200000001ffff"),     // DescribeQuorum v2, truncated header
            hex("003700630000000100000000"), // DescribeQuorum v99
        ] {
            let err = unwrap_request(&envelope_of(inner.clone())).expect_err("garbage");
            assert_eq!(err.code, UNSUPPORTED_VERSION, "{inner:?}");
        }
        let mut trailing = describe_quorum(1).to_vec();
        trailing.push(0);
        let err = unwrap_request(&envelope_of(Bytes::from(trailing))).expect_err("trailing");
        assert_eq!(err.code, UNSUPPORTED_VERSION);
        let mut envelope = envelope_of(describe_quorum(1));
        envelope.client_host_address = hex("0a0000");
        assert_eq!(
            unwrap_request(&envelope).map_err(|e| e.code),
            Err(INVALID_REQUEST)
        );
    }

    #[test]
    fn the_forwardable_apis_are_kafkas() {
        for api in [
            ApiKey::CreateTopics,
            ApiKey::DeleteTopics,
            ApiKey::CreatePartitions,
            ApiKey::IncrementalAlterConfigs,
            ApiKey::CreateAcls,
            ApiKey::DescribeQuorum,
        ] {
            assert!(is_forwardable(api), "{api:?}");
        }
        for api in [
            ApiKey::Envelope,
            ApiKey::ApiVersions,
            ApiKey::DescribeCluster,
            ApiKey::DescribeAcls,
            ApiKey::Fetch,
            ApiKey::BrokerHeartbeat,
        ] {
            assert!(!is_forwardable(api), "{api:?}");
        }
    }
}
