//! [`Connection::call_raw`]: requests of the apis `kafka-protocol` lacks
//! (`wire::own_messages`: UnregisterController, AddRaftVoter v1), framed
//! here with `kafka-protocol`'s headers (request v2, response v1: every such
//! api is flexible) and matched by correlation id like any other. Owns the
//! framing of those requests; it must not interpret their bodies.

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::{ClientError, Connection, Pending, Reply, SMALL_RESPONSE_MAX_BYTES};

impl Connection {
    /// Sends a request of an api `kafka-protocol` lacks
    /// ([`crate::wire::own_messages`]): request header v2 (flexible) with
    /// `api_key` and `api_version`, then `body` as encoded; returns the
    /// answer's body after its response header v1, within `timeout`. For
    /// flexible apis only (every api `own_messages` holds is). Answers are
    /// limited to [`SMALL_RESPONSE_MAX_BYTES`].
    ///
    /// Errors: [`ClientError::RawTimeout`] (the connection is then closed),
    /// [`ClientError::Disconnected`], [`ClientError::Wire`] (no answer
    /// header).
    pub async fn call_raw(
        &self,
        api_key: i16,
        api_version: i16,
        body: &[u8],
        timeout: Duration,
    ) -> Result<Bytes, ClientError> {
        use kafka_protocol::{
            messages::RequestHeader,
            protocol::{Encodable, StrBytes},
        };
        self.check_open()?;
        let correlation_id = self.next_correlation_id();
        let mut frame = bytes::BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(api_key)
            .with_request_api_version(api_version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.config.client_id.clone())))
            .encode(&mut frame, 2)
            .map_err(|e| ClientError::Wire(format!("request header of api {api_key}: {e}")))?;
        frame.extend_from_slice(body);
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            api_version,
            max_response_bytes: SMALL_RESPONSE_MAX_BYTES.min(self.config.max_frame_bytes),
            reply: Reply::Raw(tx),
        };
        self.enqueue(correlation_id, frame.freeze(), pending)?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ClientError::Disconnected {
                addr: self.shared.addr.clone(),
                reason: "connection task ended".to_owned(),
            }),
            Err(_) => {
                self.close("request timed out");
                Err(ClientError::RawTimeout {
                    api_key,
                    addr: self.shared.addr.clone(),
                    timeout_ms: timeout.as_millis(),
                })
            }
        }
    }
}

/// The body of a response frame after its header v1 (correlation id and
/// tagged fields).
pub(super) fn response_body(frame: Bytes) -> Result<Bytes, ClientError> {
    use kafka_protocol::{messages::ResponseHeader, protocol::Decodable};
    let mut buf = frame;
    ResponseHeader::decode(&mut buf, 1)
        .map_err(|e| ClientError::Wire(format!("response header v1: {e}")))?;
    Ok(buf)
}
