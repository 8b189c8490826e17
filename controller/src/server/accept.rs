//! The accept loop of a controller listener (one loop per listener): takes
//! TCP connections, runs the TLS handshake on a listener mapped to SSL (bounded by
//! [`TLS_HANDSHAKE_TIMEOUT`]), and starts one [`connection`] task per
//! connection.
//!
//! It owns the socket-level decisions (TCP_NODELAY, the handshake, an accept
//! error that must not stop the listener); it must not look at requests:
//! that is the connection task's.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::net::TcpListener;

use super::{
    authz,
    connection::{self, ConnectionContext},
};
use crate::{config::principal::PrincipalMapper, wire::tls::TlsServer};

/// How long a client may take to finish its TLS handshake before the
/// connection is closed (a client that connects and says nothing must not
/// hold a task forever).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the accept loop needs to know.
#[derive(Debug, Clone)]
pub struct AcceptConfig {
    /// The TLS server of a listener mapped to SSL; `None`: PLAINTEXT.
    pub tls: Option<Arc<TlsServer>>,
    /// `ssl.principal.mapping.rules`: the principal of a client certificate.
    pub principal_mapper: Arc<PrincipalMapper>,
    /// The last connection id given, shared by the accept loops of every
    /// controller listener so that ids (in the logs) are unique per node.
    pub connection_ids: Arc<AtomicU64>,
}

/// The principal of a TLS connection: `User:` and the mapped subject of the
/// client certificate, [`authz::ANONYMOUS`] without one; `None` when no
/// mapping rule matches or the certificate does not parse (Kafka closes the
/// connection then).
fn tls_principal(
    connection: &rustls::ServerConnection,
    mapper: &PrincipalMapper,
) -> Option<String> {
    let Some(cert) = connection.peer_certificates().and_then(|c| c.first()) else {
        return Some(authz::ANONYMOUS.to_owned());
    };
    let dn = crate::wire::tls::subject_dn(cert).ok()?;
    mapper.map(&dn).map(|name| format!("User:{name}"))
}

/// Accepts connections until the task is aborted; every connection is served
/// by its own task that hands requests to the event loop, once it has a place
/// in the connection quota (`ctx.limiter`; over it the connection is closed at
/// once). A failed accept (EMFILE, ENFILE, …) is logged and retried after a
/// short pause: it never ends the loop.
pub async fn accept_loop(listener: TcpListener, config: AcceptConfig, ctx: ConnectionContext) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let connection_id = config.connection_ids.fetch_add(1, Ordering::Relaxed) + 1;
                // Over a limit: the stream is dropped (closed) at once.
                let permit = match ctx.limiter.try_acquire(peer.ip()) {
                    Ok(permit) => permit,
                    Err(reason) => {
                        tracing::debug!(%peer, ?reason, "connection refused: over a connection limit");
                        continue;
                    }
                };
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
                }
                let ctx = ctx.clone();
                let mapper = config.principal_mapper.clone();
                match config.tls.clone() {
                    None => {
                        tokio::spawn(connection::serve_connection(
                            connection_id,
                            stream,
                            peer,
                            authz::ANONYMOUS.to_owned(),
                            ctx,
                            permit,
                        ));
                    }
                    Some(tls) => {
                        tokio::spawn(async move {
                            let acceptor = tokio_rustls::TlsAcceptor::from(tls.current());
                            let stream = match tokio::time::timeout(
                                TLS_HANDSHAKE_TIMEOUT,
                                acceptor.accept(stream),
                            )
                            .await
                            {
                                Ok(Ok(stream)) => stream,
                                Ok(Err(e)) => {
                                    ctx.limiter.metrics().tls_handshake_failures.inc();
                                    tracing::info!(%peer, connection_id, error = %e, "closing connection: TLS handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    ctx.limiter.metrics().tls_handshake_failures.inc();
                                    tracing::info!(%peer, connection_id, "closing connection: TLS handshake timed out");
                                    return;
                                }
                            };
                            let Some(principal) = tls_principal(stream.get_ref().1, &mapper) else {
                                ctx.limiter.metrics().tls_handshake_failures.inc();
                                tracing::warn!(%peer, connection_id, "closing connection: no ssl.principal.mapping.rules rule matches the client certificate");
                                return;
                            };
                            tracing::debug!(%peer, connection_id, %principal, "TLS connection authenticated");
                            connection::serve_connection(
                                connection_id,
                                stream,
                                peer,
                                principal,
                                ctx,
                                permit,
                            )
                            .await;
                        });
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
