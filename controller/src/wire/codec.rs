//! Request and response headers and bodies on top of a frame payload: the
//! server side (decode a request, encode a response) and the client side
//! (encode a request, decode a response). Header versions come from
//! `kafka-protocol` per api and version; the bodies are `kafka-protocol`'s,
//! except on the server side AddRaftVoter (v0-1) and UnregisterController
//! (94), read and written by [`super::own_messages`] ([`super::api`]).

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::{
    messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind},
    protocol::{Decodable, Encodable, StrBytes},
};

use super::{
    WireError,
    api::{Api, Request, Response},
    guard,
    own_messages::{AddRaftVoterRequestV1, UnregisterControllerRequest},
    versions::{api_versions_fallback_response, is_supported},
};

/// The version at which `kafka-protocol` 0.18 reads and writes the body of
/// `api_key` at `api_version`: the same, except BrokerHeartbeat v2 (Kafka
/// 4.4, KIP-1066), which the crate does not know. Its request is v1's plus
/// the tagged field 1 `CordonedLogDirs` (flexible from v0, so at v1 the
/// crate keeps that tag in `unknown_tagged_fields`, bytes intact) and its
/// response is v1's (Kafka 4.4.0's `BrokerHeartbeat{Request,Response}.json`).
/// A Kafka 4.4 broker at `metadata.version` 4.3-IV0 or later fills the
/// field and cannot send v1 at all.
pub fn body_version(api_key: ApiKey, api_version: i16) -> i16 {
    match (api_key, api_version) {
        (ApiKey::BrokerHeartbeat, 2) => 1,
        _ => api_version,
    }
}

/// [`body_version`] for a response body, and AddRaftVoter v1's response
/// (KIP-1186) at v0: its layout is v0's (Kafka 4.4.0's
/// `AddRaftVoterResponse.json`: "Version 1 is the same as version 0"). Its
/// request is not (`AckWhenCommitted`): [`super::own_messages`] reads and
/// writes it, never `kafka-protocol` at v1.
pub fn response_body_version(api_key: ApiKey, api_version: i16) -> i16 {
    match (api_key, api_version) {
        (ApiKey::AddRaftVoter, 1) => 0,
        _ => body_version(api_key, api_version),
    }
}

/// A request decoded from one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedRequest {
    /// The request header (v1 or v2 as the api/version requires).
    pub header: RequestHeader,
    /// The api of the request (94 included).
    pub api_key: Api,
    /// The version of the request body, inside our supported range.
    pub api_version: i16,
    /// The request body.
    pub body: Request,
}

impl DecodedRequest {
    /// The correlation id to echo in the response header.
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }
}

/// A request we do not answer: an api key we do not know or serve, or a
/// version outside our table ([`super::SUPPORTED_APIS`]). Carries what the
/// server needs to answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedRequest {
    /// Correlation id from the header, to echo.
    pub correlation_id: i32,
    /// Api key as sent (may be unknown to us).
    pub api_key: i16,
    /// Version as sent.
    pub api_version: i16,
}

impl UnsupportedRequest {
    /// The response frame payload the server sends for this request, or
    /// `None` when no answer can be encoded that the client could read.
    ///
    /// - ApiVersions at a version we do not support: a v0 response with
    ///   UNSUPPORTED_VERSION and the ApiVersions row (Kafka's
    ///   `ApiVersionsRequest.getErrorResponse`, KIP-511); the client retries
    ///   with the highest version listed.
    /// - Anything else: `None`. The response body layout depends on the api
    ///   and version, and every api we serve already has its full
    ///   `kafka-protocol` version range in our table, so a version outside it
    ///   has no schema we could write. The server logs the request and closes
    ///   the connection, as Kafka's SocketServer does for a request it cannot
    ///   parse. Well-behaved Kafka clients never get here: they pick versions
    ///   from our ApiVersions answer.
    pub fn response(&self) -> Option<Bytes> {
        if self.api_key == ApiKey::ApiVersions as i16 {
            let body = ResponseKind::ApiVersions(api_versions_fallback_response());
            encode_response(self.correlation_id, ApiKey::ApiVersions, 0, &body).ok()
        } else {
            None
        }
    }
}

fn read_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn read_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// Decodes one request frame payload (without its size prefix).
///
/// Errors: [`WireError::Unsupported`] for an api or version outside our table
/// (answer it with [`UnsupportedRequest::response`]); the body of an
/// unsupported ApiVersions request is not parsed, as in Kafka.
/// [`WireError::MalformedHeader`] / [`WireError::MalformedBody`] for bytes that
/// do not parse, or trailing bytes after the body: close the connection.
pub fn decode_request(frame: Bytes) -> Result<DecodedRequest, WireError> {
    let (Some(raw_key), Some(api_version), Some(correlation_id)) = (
        read_i16(&frame, 0),
        read_i16(&frame, 2),
        read_i32(&frame, 4),
    ) else {
        return Err(WireError::MalformedHeader(format!(
            "frame of {} bytes is shorter than the 8 bytes of api key, version and correlation id",
            frame.len()
        )));
    };
    let unsupported = WireError::Unsupported(UnsupportedRequest {
        correlation_id,
        api_key: raw_key,
        api_version,
    });
    let Some(api) = Api::from_key(raw_key) else {
        return Err(unsupported);
    };
    if !is_supported(api, api_version) {
        return Err(unsupported);
    }
    let mut buf = frame;
    let header_version = api.request_header_version(api_version);
    let header = RequestHeader::decode(&mut buf, header_version).map_err(|e| {
        WireError::MalformedHeader(format!(
            "request header v{header_version} of {api:?} v{api_version}: {e}"
        ))
    })?;
    let malformed = |reason: String| WireError::MalformedBody {
        api_key: api,
        api_version,
        correlation_id,
        reason,
    };
    // The bodies `kafka-protocol` lacks: own decoders, which bound every
    // count by the bytes left and refuse trailing bytes themselves.
    let api_key = match api {
        Api::UnregisterController => {
            let body = UnregisterControllerRequest::decode(&buf, api_version)
                .map_err(|e| malformed(e.to_string()))?;
            return Ok(DecodedRequest {
                header,
                api_key: api,
                api_version,
                body: Request::UnregisterController(body),
            });
        }
        Api::Kafka(ApiKey::AddRaftVoter) => {
            let body = AddRaftVoterRequestV1::decode(&buf, api_version)
                .map_err(|e| malformed(e.to_string()))?;
            return Ok(DecodedRequest {
                header,
                api_key: api,
                api_version,
                body: Request::AddRaftVoter(body),
            });
        }
        Api::Kafka(key) => key,
    };
    // The guard walks the body at the version `kafka-protocol` decodes it
    // at: for BrokerHeartbeat v2 that is v1, where tag 1 is an unknown tag
    // the crate skips by its size. Walked at v2, tag 1 would be read as an
    // array of its own length while the crate skipped `size` bytes, and the
    // two would part ways over the bytes after it (a fuzz finding).
    let version = body_version(api_key, api_version);
    guard::check_request_body(api_key, version, &buf).map_err(malformed)?;
    let body =
        RequestKind::decode(api_key, &mut buf, version).map_err(|e| malformed(e.to_string()))?;
    if buf.has_remaining() {
        return Err(malformed(format!(
            "{} bytes left over after the body",
            buf.remaining()
        )));
    }
    Ok(DecodedRequest {
        header,
        api_key: api,
        api_version,
        body: Request::Kafka(body),
    })
}

/// Encodes the server's answer `body` to a request of `api` at
/// `api_version` (see [`encode_response`]): a `kafka-protocol` body as
/// there (AddRaftVoter v1 at v0's layout, which is v1's), an
/// UnregisterController body with [`super::own_messages`] after a v1
/// response header.
///
/// Errors: [`WireError::Encode`] when the body does not match `api` or
/// cannot be written at `api_version`.
pub fn encode_answer(
    correlation_id: i32,
    api: Api,
    api_version: i16,
    body: &Response,
) -> Result<Bytes, WireError> {
    let encode_err = |reason: String| WireError::Encode {
        what: format!("{api:?} v{api_version} response"),
        reason,
    };
    match (api, body) {
        (Api::Kafka(key), Response::Kafka(kind)) => {
            encode_response(correlation_id, key, api_version, kind)
        }
        (Api::UnregisterController, Response::UnregisterController(r)) => {
            let mut buf = BytesMut::new();
            ResponseHeader::default()
                .with_correlation_id(correlation_id)
                .encode(&mut buf, api.response_header_version(api_version))
                .map_err(|e| encode_err(e.to_string()))?;
            let body = r
                .encode(api_version)
                .map_err(|e| encode_err(e.to_string()))?;
            buf.extend_from_slice(&body);
            Ok(buf.freeze())
        }
        _ => Err(encode_err("the body is another api's response".to_owned())),
    }
}

/// Encodes a response frame payload: response header (v0 or v1 as the api and
/// version require; ApiVersions always v0) with `correlation_id`, then `body`
/// at `api_version`. Errors: [`WireError::Encode`] when the body has fields the
/// version cannot carry or does not match `api_key`.
pub fn encode_response(
    correlation_id: i32,
    api_key: ApiKey,
    api_version: i16,
    body: &ResponseKind,
) -> Result<Bytes, WireError> {
    let encode_err = |reason: String| WireError::Encode {
        what: format!("{api_key:?} v{api_version} response"),
        reason,
    };
    let header_version = api_key.response_header_version(api_version);
    let mut buf = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, header_version)
        .map_err(|e| encode_err(e.to_string()))?;
    if response_api_key(body) != api_key {
        return Err(encode_err(format!(
            "body is a {:?} response",
            response_api_key(body)
        )));
    }
    body.encode(&mut buf, response_body_version(api_key, api_version))
        .map_err(|e| encode_err(e.to_string()))?;
    Ok(buf.freeze())
}

/// Encodes a request frame payload: request header (v1 or v2 as the api and
/// version require) then `body` at `api_version`. Errors: [`WireError::Encode`].
pub fn encode_request(
    api_key: ApiKey,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    body: &RequestKind,
) -> Result<Bytes, WireError> {
    let encode_err = |reason: String| WireError::Encode {
        what: format!("{api_key:?} v{api_version} request"),
        reason,
    };
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(api_version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.map(|c| StrBytes::from_string(c.to_owned())));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api_key.request_header_version(api_version))
        .map_err(|e| encode_err(e.to_string()))?;
    body.encode(&mut buf, body_version(api_key, api_version))
        .map_err(|e| encode_err(e.to_string()))?;
    Ok(buf.freeze())
}

/// Reads the correlation id at the front of a response frame payload (it is
/// the first field of every response header version).
pub fn response_correlation_id(frame: &[u8]) -> Result<i32, WireError> {
    read_i32(frame, 0).ok_or_else(|| {
        WireError::MalformedResponse(format!(
            "response frame of {} bytes has no correlation id",
            frame.len()
        ))
    })
}

/// Decodes a response frame payload to a request of `api_key` at
/// `api_version`: the response header (whose correlation id is returned) and
/// the body. Errors: [`WireError::MalformedResponse`].
pub fn decode_response(
    api_key: ApiKey,
    api_version: i16,
    frame: Bytes,
) -> Result<(i32, ResponseKind), WireError> {
    let mut buf = frame;
    let header = ResponseHeader::decode(&mut buf, api_key.response_header_version(api_version))
        .map_err(|e| {
            WireError::MalformedResponse(format!("{api_key:?} v{api_version} header: {e}"))
        })?;
    // kafka-protocol reserves arrays by the count it reads: refuse counts
    // the bytes left cannot hold before it does (wire/schema_guard.rs),
    // walking the body at the version the crate decodes it at.
    let version = response_body_version(api_key, api_version);
    super::schema_guard::check_response_body(api_key, version, &buf).map_err(|e| {
        WireError::MalformedResponse(format!("{api_key:?} v{api_version} body: {e}"))
    })?;
    let body = ResponseKind::decode(api_key, &mut buf, version).map_err(|e| {
        WireError::MalformedResponse(format!("{api_key:?} v{api_version} body: {e}"))
    })?;
    Ok((header.correlation_id, body))
}

/// The api key of a request body.
pub fn request_api_key(body: &RequestKind) -> Option<ApiKey> {
    Some(match body {
        RequestKind::Fetch(_) => ApiKey::Fetch,
        RequestKind::ApiVersions(_) => ApiKey::ApiVersions,
        RequestKind::Vote(_) => ApiKey::Vote,
        RequestKind::BeginQuorumEpoch(_) => ApiKey::BeginQuorumEpoch,
        RequestKind::EndQuorumEpoch(_) => ApiKey::EndQuorumEpoch,
        RequestKind::DescribeQuorum(_) => ApiKey::DescribeQuorum,
        RequestKind::FetchSnapshot(_) => ApiKey::FetchSnapshot,
        RequestKind::DescribeCluster(_) => ApiKey::DescribeCluster,
        RequestKind::AddRaftVoter(_) => ApiKey::AddRaftVoter,
        RequestKind::RemoveRaftVoter(_) => ApiKey::RemoveRaftVoter,
        RequestKind::UpdateRaftVoter(_) => ApiKey::UpdateRaftVoter,
        RequestKind::ControllerRegistration(_) => ApiKey::ControllerRegistration,
        RequestKind::BrokerRegistration(_) => ApiKey::BrokerRegistration,
        RequestKind::BrokerHeartbeat(_) => ApiKey::BrokerHeartbeat,
        RequestKind::UnregisterBroker(_) => ApiKey::UnregisterBroker,
        RequestKind::Envelope(_) => ApiKey::Envelope,
        RequestKind::DescribeAcls(_) => ApiKey::DescribeAcls,
        RequestKind::CreateAcls(_) => ApiKey::CreateAcls,
        RequestKind::DeleteAcls(_) => ApiKey::DeleteAcls,
        RequestKind::AllocateProducerIds(_) => ApiKey::AllocateProducerIds,
        RequestKind::IncrementalAlterConfigs(_) => ApiKey::IncrementalAlterConfigs,
        RequestKind::AlterConfigs(_) => ApiKey::AlterConfigs,
        RequestKind::DescribeConfigs(_) => ApiKey::DescribeConfigs,
        RequestKind::AssignReplicasToDirs(_) => ApiKey::AssignReplicasToDirs,
        RequestKind::CreateTopics(_) => ApiKey::CreateTopics,
        RequestKind::DeleteTopics(_) => ApiKey::DeleteTopics,
        RequestKind::CreatePartitions(_) => ApiKey::CreatePartitions,
        RequestKind::AlterPartition(_) => ApiKey::AlterPartition,
        RequestKind::ElectLeaders(_) => ApiKey::ElectLeaders,
        RequestKind::UpdateFeatures(_) => ApiKey::UpdateFeatures,
        _ => return None,
    })
}

/// The api key of a response body; `ApiKey::Produce` for apis we never serve
/// (never equal to the key of a request we decoded).
fn response_api_key(body: &ResponseKind) -> ApiKey {
    match body {
        ResponseKind::Fetch(_) => ApiKey::Fetch,
        ResponseKind::ApiVersions(_) => ApiKey::ApiVersions,
        ResponseKind::Vote(_) => ApiKey::Vote,
        ResponseKind::BeginQuorumEpoch(_) => ApiKey::BeginQuorumEpoch,
        ResponseKind::EndQuorumEpoch(_) => ApiKey::EndQuorumEpoch,
        ResponseKind::DescribeQuorum(_) => ApiKey::DescribeQuorum,
        ResponseKind::FetchSnapshot(_) => ApiKey::FetchSnapshot,
        ResponseKind::DescribeCluster(_) => ApiKey::DescribeCluster,
        ResponseKind::AddRaftVoter(_) => ApiKey::AddRaftVoter,
        ResponseKind::RemoveRaftVoter(_) => ApiKey::RemoveRaftVoter,
        ResponseKind::UpdateRaftVoter(_) => ApiKey::UpdateRaftVoter,
        ResponseKind::ControllerRegistration(_) => ApiKey::ControllerRegistration,
        ResponseKind::BrokerRegistration(_) => ApiKey::BrokerRegistration,
        ResponseKind::BrokerHeartbeat(_) => ApiKey::BrokerHeartbeat,
        ResponseKind::UnregisterBroker(_) => ApiKey::UnregisterBroker,
        ResponseKind::Envelope(_) => ApiKey::Envelope,
        ResponseKind::DescribeAcls(_) => ApiKey::DescribeAcls,
        ResponseKind::CreateAcls(_) => ApiKey::CreateAcls,
        ResponseKind::DeleteAcls(_) => ApiKey::DeleteAcls,
        ResponseKind::AllocateProducerIds(_) => ApiKey::AllocateProducerIds,
        ResponseKind::IncrementalAlterConfigs(_) => ApiKey::IncrementalAlterConfigs,
        ResponseKind::AlterConfigs(_) => ApiKey::AlterConfigs,
        ResponseKind::DescribeConfigs(_) => ApiKey::DescribeConfigs,
        ResponseKind::AssignReplicasToDirs(_) => ApiKey::AssignReplicasToDirs,
        ResponseKind::CreateTopics(_) => ApiKey::CreateTopics,
        ResponseKind::DeleteTopics(_) => ApiKey::DeleteTopics,
        ResponseKind::CreatePartitions(_) => ApiKey::CreatePartitions,
        ResponseKind::AlterPartition(_) => ApiKey::AlterPartition,
        ResponseKind::ElectLeaders(_) => ApiKey::ElectLeaders,
        ResponseKind::UpdateFeatures(_) => ApiKey::UpdateFeatures,
        _ => ApiKey::Produce,
    }
}
