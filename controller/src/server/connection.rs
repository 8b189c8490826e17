//! Inbound connections on the controller listener.
//!
//! One task per connection reads Kafka frames, decodes each request with the
//! wire layer and hands it to the event loop, then writes the answer. As in
//! Kafka's `SocketServer`, a connection has one request in progress at a
//! time (the channel is muted until the response is written), so responses
//! go back in request order, which Kafka clients rely on.
//!
//! Bad input closes this connection only: a frame over
//! `socket.request.max.bytes`, a header or body that does not parse, or an api
//! or version we do not serve (ApiVersions excepted: it gets the KIP-511
//! UNSUPPORTED_VERSION answer so the client can retry at a version we list).

use std::{net::SocketAddr, sync::Arc};

use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::ResponseKind;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{mpsc, oneshot},
};
use tokio_util::codec::Framed;

use super::authz::{self, Authorizer};
use crate::wire::{self, DecodedRequest, KafkaFrameCodec, WireError};

/// What every connection of a listener shares.
#[derive(Debug, Clone)]
pub struct ConnectionContext {
    /// `socket.request.max.bytes`: largest request frame, bytes.
    pub max_frame_bytes: usize,
    /// Where decoded, authorized requests go.
    pub requests: mpsc::Sender<InboundRequest>,
    /// Who may send what ([`authz`]).
    pub authorizer: Arc<Authorizer>,
}

/// A decoded request on its way to the event loop, with the way back.
#[derive(Debug)]
pub struct InboundRequest {
    /// The connection's id (for logs).
    pub connection_id: u64,
    /// The peer's address.
    pub peer: SocketAddr,
    /// The request.
    pub request: DecodedRequest,
    /// Where the event loop sends the response body (`None`: close the
    /// connection without answering).
    pub reply: oneshot::Sender<Option<ResponseKind>>,
}

/// Serves one connection (plain TCP, or TLS after its handshake) of
/// `principal` (`User:NAME`, [`authz::ANONYMOUS`] without a client
/// certificate) until the peer closes it, it sends bad input, or the event
/// loop goes away. A request the authorizer refuses is answered
/// CLUSTER_AUTHORIZATION_FAILED here and never reaches the event loop.
/// Never panics on input.
pub async fn serve_connection<S>(
    connection_id: u64,
    stream: S,
    peer: SocketAddr,
    principal: String,
    ctx: ConnectionContext,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let requests = ctx.requests;
    let mut framed = Framed::new(stream, KafkaFrameCodec::new(ctx.max_frame_bytes));
    loop {
        let frame = match framed.next().await {
            None => return,
            Some(Ok(frame)) => frame.freeze(),
            Some(Err(e)) => {
                tracing::warn!(%peer, connection_id, error = %e, "closing connection: bad frame");
                return;
            }
        };
        let request = match wire::decode_request(frame) {
            Ok(request) => request,
            Err(WireError::Unsupported(unsupported)) => match unsupported.response() {
                Some(answer) => {
                    tracing::debug!(%peer, api_key = unsupported.api_key, version = unsupported.api_version,
                            "answering UNSUPPORTED_VERSION");
                    if framed.send(answer).await.is_err() {
                        return;
                    }
                    continue;
                }
                None => {
                    tracing::warn!(%peer, connection_id, api_key = unsupported.api_key,
                            version = unsupported.api_version, "closing connection: unsupported api or version");
                    return;
                }
            },
            Err(e) => {
                tracing::warn!(%peer, connection_id, error = %e, "closing connection: malformed request");
                return;
            }
        };
        let correlation_id = request.correlation_id();
        let api_key = request.api_key;
        let api_version = request.api_version;
        if !ctx.authorizer.allows(&principal, api_key) {
            let Some(body) = authz::denied_response(api_key, api_version, &principal) else {
                return;
            };
            tracing::warn!(%peer, connection_id, %principal, ?api_key,
                "request refused: CLUSTER_AUTHORIZATION_FAILED");
            let Ok(bytes) = wire::encode_response(correlation_id, api_key, api_version, &body)
            else {
                return;
            };
            if framed.send(bytes).await.is_err() {
                return;
            }
            continue;
        }
        let (reply, answer) = oneshot::channel();
        let inbound = InboundRequest {
            connection_id,
            peer,
            request,
            reply,
        };
        if requests.send(inbound).await.is_err() {
            return; // the event loop stopped: the server is shutting down
        }
        let Ok(Some(body)) = answer.await else {
            tracing::debug!(%peer, connection_id, ?api_key, "closing connection: request not answered");
            return;
        };
        match wire::encode_response(correlation_id, api_key, api_version, &body) {
            Ok(bytes) => {
                if let Err(e) = framed.send(bytes).await {
                    tracing::debug!(%peer, connection_id, error = %e, "connection closed while writing");
                    return;
                }
            }
            Err(e) => {
                tracing::error!(%peer, connection_id, error = %e, "closing connection: response not encodable");
                return;
            }
        }
    }
}
