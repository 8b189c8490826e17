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

use std::{net::SocketAddr, sync::Arc, time::Duration};

use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestKind};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot},
    time::Instant,
};
use tokio_util::codec::Framed;

use super::{
    authz::{self, Authorizer},
    envelope,
    limits::{ConnectionLimiter, ConnectionPermit, ListenerMetrics},
    resource_authz,
};
use crate::wire::{
    self, AnnouncingFrameCodec, DecodedRequest, Incoming, Request, Response, WireError,
};

/// What every connection of a listener shares.
#[derive(Debug, Clone)]
pub struct ConnectionContext {
    /// `socket.request.max.bytes`: largest request frame, bytes.
    pub max_frame_bytes: usize,
    /// Where decoded, authorized requests go.
    pub requests: mpsc::Sender<InboundRequest>,
    /// Who may send what ([`authz`]).
    pub authorizer: Arc<Authorizer>,
    /// The listener's connection limits and metrics.
    pub limiter: Arc<ConnectionLimiter>,
    /// `queued.max.request.bytes`, shared by every connection of the
    /// listener (`None`: unbounded, Kafka's -1).
    pub request_memory: Option<Arc<RequestMemory>>,
    /// The name of the listener these connections came in on (one of
    /// `controller.listener.names`), given to each request (Kafka's
    /// `RequestContext.listenerName`).
    pub listener_name: Arc<str>,
}

/// Where a connection's requests go: the event loop, each tagged with the
/// listener it came in on.
#[derive(Debug)]
struct RequestSink {
    requests: mpsc::Sender<InboundRequest>,
    listener_name: Arc<str>,
}

/// The pool of `queued.max.request.bytes`: one permit per byte of requests
/// read and not yet answered, in two parts so that connections nobody has
/// vouched for cannot stall Raft traffic (review S2): a connection that is
/// not yet trusted (its principal may not send Raft RPCs, and none of its
/// requests has passed authorization) takes its bytes from a small share of
/// `min(kraftwerk.unauthenticated.max.frame.bytes, a quarter of the pool)`;
/// trusted connections take theirs from the rest. The two never exceed
/// `queued.max.request.bytes` together.
#[derive(Debug)]
pub struct RequestMemory {
    trusted: Arc<Semaphore>,
    trusted_capacity: u32,
    untrusted: Arc<Semaphore>,
    untrusted_capacity: u32,
}

impl RequestMemory {
    /// A pool of `queued_max_request_bytes` (`None`: unbounded), capped at
    /// `u32::MAX` bytes, of which at most `unauthenticated_max_frame_bytes`
    /// (and at most a quarter, at least 1 byte of a non-empty pool) is the
    /// untrusted share.
    pub fn new(
        queued_max_request_bytes: Option<u64>,
        unauthenticated_max_frame_bytes: usize,
    ) -> Option<Arc<Self>> {
        queued_max_request_bytes.map(|n| {
            let capacity = u32::try_from(n).unwrap_or(u32::MAX);
            let share = (capacity / 4)
                .min(u32::try_from(unauthenticated_max_frame_bytes).unwrap_or(u32::MAX))
                .max(capacity.min(1));
            let trusted_capacity = capacity - share;
            Arc::new(Self {
                trusted: Arc::new(Semaphore::new(trusted_capacity as usize)),
                trusted_capacity,
                untrusted: Arc::new(Semaphore::new(share as usize)),
                untrusted_capacity: share,
            })
        })
    }

    /// Bytes free now, both parts.
    pub fn available(&self) -> usize {
        self.trusted.available_permits() + self.untrusted.available_permits()
    }

    /// Takes `size` bytes of the trusted part or of the untrusted share,
    /// waiting until they are free; a request larger than its part takes all
    /// of it (Kafka's pool also lets one through).
    async fn reserve(&self, size: usize, trusted: bool) -> Option<OwnedSemaphorePermit> {
        let (part, capacity) = if trusted {
            (&self.trusted, self.trusted_capacity)
        } else {
            (&self.untrusted, self.untrusted_capacity)
        };
        let n = u32::try_from(size).unwrap_or(u32::MAX).min(capacity);
        part.clone().acquire_many_owned(n).await.ok()
    }
}

/// How often a waiting connection looks at its deadlines.
const DEADLINE_CHECK: Duration = Duration::from_secs(1);

/// What waiting for the next frame gave.
enum Next {
    /// A frame, with its share of `queued.max.request.bytes` (held until it
    /// is answered).
    Frame(bytes::BytesMut, Option<OwnedSemaphorePermit>),
    Closed,
    Bad(WireError),
    /// No request for `connections.max.idle.ms`.
    Idle,
    /// A request started to arrive and did not finish in time.
    Slow,
}

/// Waits for the next frame: at most `connections.max.idle.ms` while nothing
/// arrives, and at most `kraftwerk.request.read.timeout.ms` from the first
/// byte of a request to its last. `Framed::next` is cancel-safe (the bytes
/// read so far stay in its buffer), so the wait can be cut into slices.
/// Once a frame's size is known its bytes are taken from `pool` (its trusted
/// part if `trusted`, else the untrusted share): while they are not free the
/// connection is not read, and a wait that outlasts the read deadline
/// (counted from the first byte of the request) closes the connection as
/// slow, freeing its place; once the bytes are taken, the rest of the frame
/// gets a fresh read deadline.
async fn next_frame<S>(
    framed: &mut Framed<S, AnnouncingFrameCodec>,
    idle: Duration,
    read: Duration,
    pool: Option<&Arc<RequestMemory>>,
    trusted: bool,
) -> Next
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let idle_deadline = Instant::now() + idle;
    let mut read_deadline: Option<Instant> = None;
    let mut memory = None;
    loop {
        if read_deadline.is_none() && !framed.read_buffer().is_empty() {
            read_deadline = Some(Instant::now() + read);
        }
        let deadline = read_deadline.unwrap_or(idle_deadline);
        let wake = deadline.min(Instant::now() + DEADLINE_CHECK);
        match tokio::time::timeout_at(wake, framed.next()).await {
            Ok(None) => return Next::Closed,
            Ok(Some(Ok(Incoming::Announced(size)))) => {
                if let Some(pool) = pool {
                    let until = *read_deadline.get_or_insert_with(|| Instant::now() + read);
                    match tokio::time::timeout_at(until, pool.reserve(size, trusted)).await {
                        Ok(taken) => memory = taken,
                        Err(_) => return Next::Slow,
                    }
                    read_deadline = Some(Instant::now() + read);
                }
            }
            Ok(Some(Ok(Incoming::Frame(frame)))) => return Next::Frame(frame, memory),
            // A TLS peer that closes without close_notify between requests
            // (Kafka's Java clients, our operator, probes) has only closed.
            Ok(Some(Err(WireError::Io(e))))
                if e.kind() == std::io::ErrorKind::UnexpectedEof
                    && framed.read_buffer().is_empty() =>
            {
                return Next::Closed;
            }
            Ok(Some(Err(e))) => return Next::Bad(e),
            Err(_) => {
                let now = Instant::now();
                match read_deadline {
                    Some(d) if now >= d => return Next::Slow,
                    None if now >= idle_deadline && framed.read_buffer().is_empty() => {
                        return Next::Idle;
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A decoded request on its way to the event loop, with the way back.
#[derive(Debug)]
pub struct InboundRequest {
    /// The connection's id (for logs).
    pub connection_id: u64,
    /// The peer's address.
    pub peer: SocketAddr,
    /// The listener it came in on (Kafka's `RequestContext.listenerName`):
    /// DescribeCluster answers with the controllers' endpoints on it.
    pub listener_name: Arc<str>,
    /// The request.
    pub request: DecodedRequest,
    /// Where the event loop sends the response body (`None`: close the
    /// connection without answering).
    pub reply: oneshot::Sender<Option<Response>>,
}

/// Serves one connection (plain TCP, or TLS after its handshake) of
/// `principal` (`User:NAME`, [`authz::ANONYMOUS`] without a client
/// certificate) until the peer closes it, it sends bad input, or the event
/// loop goes away. A request the authorizer refuses is answered
/// CLUSTER_AUTHORIZATION_FAILED here and never reaches the event loop.
/// Never panics on input.
///
/// Limits: `permit` is its place in the listener's quota (given back when
/// this returns); frames are at most
/// `kraftwerk.unauthenticated.max.frame.bytes` until a request passed
/// authorization, `socket.request.max.bytes` after; idle and slow
/// connections are closed (see [`crate::config::limits`]).
pub async fn serve_connection<S>(
    connection_id: u64,
    stream: S,
    peer: SocketAddr,
    principal: String,
    ctx: ConnectionContext,
    permit: ConnectionPermit,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _permit = permit;
    let requests = RequestSink {
        requests: ctx.requests,
        listener_name: ctx.listener_name,
    };
    let limits = ctx.limiter.limits().clone();
    let metrics = ctx.limiter.metrics().clone();
    let idle = Duration::from_millis(limits.idle_ms);
    let read = Duration::from_millis(limits.request_read_timeout_ms);
    let mut authorized_once = false;
    // Whether this connection's requests take `queued.max.request.bytes`
    // from the trusted part: its principal may send Raft RPCs (a voter's
    // certificate, or no authorizer at all), or one of its requests passed.
    let host = crate::acl::host_text(peer.ip());
    let mut trusted = ctx.authorizer.allows(&principal, &host, ApiKey::Fetch);
    let mut framed = Framed::new(
        stream,
        AnnouncingFrameCodec::new(
            ctx.max_frame_bytes
                .min(limits.unauthenticated_max_frame_bytes),
        ),
    );
    loop {
        // `_memory`: this request's bytes of `queued.max.request.bytes`,
        // given back once it is answered (the end of this iteration).
        let (frame, _memory) = match next_frame(
            &mut framed,
            idle,
            read,
            ctx.request_memory.as_ref(),
            trusted,
        )
        .await
        {
            Next::Closed => return,
            Next::Frame(frame, memory) => (frame.freeze(), memory),
            Next::Bad(e) => {
                if matches!(e, WireError::FrameTooLarge { .. }) {
                    metrics.refuse("frame_too_large");
                }
                tracing::warn!(%peer, connection_id, error = %e, "closing connection: bad frame");
                return;
            }
            Next::Idle => {
                metrics.refuse("idle");
                tracing::debug!(%peer, connection_id, "closing connection: idle for connections.max.idle.ms");
                return;
            }
            Next::Slow => {
                metrics.refuse("request_read_timeout");
                tracing::info!(%peer, connection_id, "closing connection: a request did not arrive within kraftwerk.request.read.timeout.ms");
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
        let cluster_ok = ctx.authorizer.allows(&principal, &host, api_key);
        if !cluster_ok && !resource_authz::is_per_resource(api_key) {
            let Some(body) = authz::denied_answer(&request, &principal) else {
                return;
            };
            metrics.authorization_failures.inc();
            tracing::warn!(%peer, connection_id, %principal, ?api_key,
                "request refused: CLUSTER_AUTHORIZATION_FAILED");
            let Ok(bytes) = wire::encode_answer(correlation_id, api_key, api_version, &body) else {
                return;
            };
            if framed.send(bytes).await.is_err() {
                return;
            }
            continue;
        }
        let (answer, passed) = if api_key == ApiKey::Envelope {
            let answer = serve_envelope(
                &ctx.authorizer,
                &metrics,
                &requests,
                connection_id,
                peer,
                request,
            )
            .await;
            (answer, true)
        } else {
            let who = Requester {
                principal: &principal,
                host: &host,
            };
            authorized_dispatch(
                &ctx.authorizer,
                &metrics,
                &requests,
                connection_id,
                peer,
                &who,
                request,
            )
            .await
        };
        // Only a request that needed an operation and passed (in part, for
        // the per-resource apis) raises the frame limit: ApiVersions needs
        // none, so anyone may send it, and it must not lift the
        // pre-authentication limit.
        if !authorized_once
            && authz::required_operation(api_key).is_some()
            && (passed || cluster_ok)
        {
            authorized_once = true;
            trusted = true;
            framed.codec_mut().set_max_frame_bytes(ctx.max_frame_bytes);
        }
        let Some(body) = answer else {
            tracing::debug!(%peer, connection_id, ?api_key, "closing connection: request not answered");
            return;
        };
        match wire::encode_answer(correlation_id, api_key, api_version, &body) {
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

/// Hands `request` to the event loop and waits for its answer; `None` when
/// the loop went away or chose to close the connection.
async fn dispatch(
    sink: &RequestSink,
    connection_id: u64,
    peer: SocketAddr,
    request: DecodedRequest,
) -> Option<Response> {
    let (reply, answer) = oneshot::channel();
    let inbound = InboundRequest {
        connection_id,
        peer,
        listener_name: sink.listener_name.clone(),
        request,
        reply,
    };
    sink.requests.send(inbound).await.ok()?;
    answer.await.ok().flatten()
}

/// Who sent a request: the principal (`User:NAME`) and the client's
/// address as text (the forwarded client's, for an Envelope).
struct Requester<'a> {
    principal: &'a str,
    host: &'a str,
}

/// Dispatches a request that passed the connection's check: the
/// per-resource apis are split first ([`resource_authz::vet`]), only their
/// allowed items reach the event loop and the refused ones are added to its
/// answer. Returns the answer (`None`: close the connection) and whether
/// the authorizer allowed the requester anything in it
/// ([`resource_authz::Refused::granted`]; always for other apis, which
/// passed the connection's cluster check).
async fn authorized_dispatch(
    authorizer: &Authorizer,
    metrics: &ListenerMetrics,
    requests: &RequestSink,
    connection_id: u64,
    peer: SocketAddr,
    who: &Requester<'_>,
    request: DecodedRequest,
) -> (Option<Response>, bool) {
    let api_key = request.api_key;
    let (request, refused) = match resource_authz::vet(authorizer, who.principal, who.host, request)
    {
        resource_authz::Vetting::Untouched(request) => {
            return (dispatch(requests, connection_id, peer, request).await, true);
        }
        resource_authz::Vetting::Split(request, refused) => (request, refused),
    };
    if refused.count() > 0 {
        metrics.authorization_failures.inc();
        tracing::warn!(%peer, connection_id, principal = %who.principal, ?api_key,
            refused = refused.count(), "request items refused: not authorized on their resources");
    }
    let granted = refused.granted();
    let Some(request) = request else {
        return (Some(refused.answer(None).into()), granted);
    };
    match dispatch(requests, connection_id, peer, request).await {
        Some(Response::Kafka(answer)) => (Some(refused.answer(Some(answer)).into()), granted),
        // The per-resource apis are all kafka-protocol's.
        Some(other) => (Some(other), granted),
        None => (None, granted),
    }
}

/// Answers an Envelope whose sender passed CLUSTER_ACTION ([`envelope`]):
/// a refused envelope gets its error code; the inner request is authorized
/// with the client's principal (a refusal is its own
/// CLUSTER_AUTHORIZATION_FAILED answer, wrapped) and otherwise dispatched as
/// a direct request. `None`: close the connection (the event loop did not
/// answer the inner request, as for a direct one).
async fn serve_envelope(
    authorizer: &Authorizer,
    metrics: &ListenerMetrics,
    requests: &RequestSink,
    connection_id: u64,
    peer: SocketAddr,
    request: DecodedRequest,
) -> Option<Response> {
    let Request::Kafka(RequestKind::Envelope(outer)) = &request.body else {
        return Some(envelope::refused_response(wire::INVALID_REQUEST).into());
    };
    let forwarded = match envelope::unwrap_request(outer) {
        Ok(forwarded) => forwarded,
        Err(refused) => {
            tracing::warn!(%peer, connection_id, code = refused.code, reason = %refused.reason,
                "envelope refused");
            return Some(envelope::refused_response(refused.code).into());
        }
    };
    let inner = forwarded.request;
    let (correlation_id, api_key, api_version) =
        (inner.correlation_id(), inner.api_key, inner.api_version);
    let principal = forwarded.principal;
    let client = forwarded.client_address;
    let host = crate::acl::host_text(client);
    let body = if authorizer.allows(&principal, &host, api_key)
        || resource_authz::is_per_resource(api_key)
    {
        tracing::debug!(%peer, connection_id, %principal, %client, ?api_key, api_version,
            "forwarded request");
        let who = Requester {
            principal: &principal,
            host: &host,
        };
        authorized_dispatch(
            authorizer,
            metrics,
            requests,
            connection_id,
            peer,
            &who,
            inner,
        )
        .await
        .0?
    } else {
        metrics.authorization_failures.inc();
        tracing::warn!(%peer, connection_id, %principal, %client, ?api_key,
            "forwarded request refused: CLUSTER_AUTHORIZATION_FAILED");
        match authz::denied_answer(&inner, &principal) {
            Some(body) => body,
            None => {
                return Some(
                    envelope::refused_response(authz::CLUSTER_AUTHORIZATION_FAILED).into(),
                );
            }
        }
    };
    Some(
        envelope::wrap_response(correlation_id, api_key, api_version, &body)
            .unwrap_or_else(|refused| {
                tracing::error!(%peer, connection_id, reason = %refused.reason,
                    "forwarded answer not encodable");
                envelope::refused_response(refused.code)
            })
            .into(),
    )
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
