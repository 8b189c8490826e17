//! The Kafka wire layer: framing (4-byte big-endian size), request and
//! response headers, the table of APIs and versions we serve, ApiVersions
//! negotiation, and a pipelined client with a peer-connection manager.
//! Message bodies are `kafka-protocol`'s structs, except the few it lacks
//! ([`own_messages`]: UnregisterController, AddRaftVoter v1), hand-encoded
//! and checked against Kafka 4.4.0's bytes.
//!
//! It owns bytes and connections, and must not make protocol decisions: what
//! to answer to a request, and when to send one, is the server's and the raft
//! engine's business.
//!
//! How the server uses it:
//! - inbound: wrap an accepted `TcpStream` in
//!   `Framed::new(stream, KafkaFrameCodec::new(socket_request_max_bytes))`;
//!   for each frame call [`decode_request`]. `Ok(DecodedRequest)` goes to the
//!   handler, whose answer is written with [`encode_answer`] (same api key,
//!   version and correlation id). `Err(WireError::Unsupported(u))`: write
//!   `u.response()` when it is `Some` (the ApiVersions fallback), otherwise log
//!   and close. Any other error: log one line and close that connection only.
//!   ApiVersions itself is answered with [`api_versions_response`].
//! - outbound Raft RPCs: one [`client::PeerManager`] owned by the event loop;
//!   `send(node_id, request, version, tag)` never blocks, and the answer (or
//!   the failure) arrives later on the manager's channel as a
//!   [`client::PeerResponse`].

mod api;
pub mod client;
mod codec;
mod frame;
mod guard;
pub mod own_messages;
pub mod response_limit;
pub(crate) mod schema_guard;
pub mod tls;
mod versions;

pub use api::{Api, Request, Response};
pub use codec::{
    DecodedRequest, UnsupportedRequest, decode_request, decode_response, encode_answer,
    encode_request, encode_response, request_api_key, response_correlation_id,
};
pub use frame::{
    AnnouncingFrameCodec, DEFAULT_MAX_FRAME_BYTES, Incoming, KafkaFrameCodec, SIZE_PREFIX_BYTES,
};
pub use versions::{
    FinalizedFeatures, INVALID_REQUEST, METADATA_VERSION_MAX, METADATA_VERSION_MIN, OWN_APIS,
    OwnApi, SUPPORTED_APIS, SupportedApi, SupportedFeature, UNSUPPORTED_VERSION, api_version_list,
    api_versions_fallback_response, api_versions_response, is_supported, is_valid_client_software,
    negotiate, served_versions, supported_api, supported_features,
};

/// Errors of the wire layer. Every variant but [`WireError::Unsupported`]
/// means the connection can no longer be trusted and must be closed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The announced frame size exceeds `socket.request.max.bytes`.
    #[error("frame of {size} bytes exceeds the maximum of {max} bytes (socket.request.max.bytes)")]
    FrameTooLarge {
        /// Announced size, bytes.
        size: usize,
        /// Configured maximum, bytes.
        max: usize,
    },
    /// The announced frame size is negative.
    #[error("frame announces a negative size ({0})")]
    NegativeFrameSize(i32),
    /// Reading or writing the socket failed.
    #[error("connection i/o failed: {0}")]
    Io(#[from] std::io::Error),
    /// An api key or version we do not serve; answer with
    /// [`UnsupportedRequest::response`].
    #[error(
        "unsupported api key {} version {} (correlation id {})",
        .0.api_key, .0.api_version, .0.correlation_id
    )]
    Unsupported(UnsupportedRequest),
    /// The request header does not parse.
    #[error("malformed request header: {0}")]
    MalformedHeader(String),
    /// The request body does not parse at its version.
    #[error(
        "malformed {api_key:?} v{api_version} request (correlation id {correlation_id}): {reason}"
    )]
    MalformedBody {
        /// Api of the request.
        api_key: Api,
        /// Version of the request.
        api_version: i16,
        /// Correlation id from the header.
        correlation_id: i32,
        /// What did not parse.
        reason: String,
    },
    /// A response does not parse.
    #[error("malformed response: {0}")]
    MalformedResponse(String),
    /// A message could not be encoded at the requested version.
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// What was being encoded.
        what: String,
        /// Why it failed.
        reason: String,
    },
}

/// Result alias of the wire layer.
pub type Result<T, E = WireError> = std::result::Result<T, E>;
