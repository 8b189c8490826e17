//! The accept loop of the controller listener: takes TCP connections, runs
//! the TLS handshake on a listener mapped to SSL (bounded by
//! [`TLS_HANDSHAKE_TIMEOUT`]), and starts one [`connection`] task per
//! connection.
//!
//! It owns the socket-level decisions (TCP_NODELAY, the handshake, an accept
//! error that must not stop the listener); it must not look at requests:
//! that is the connection task's.

use std::{sync::Arc, time::Duration};

use tokio::{net::TcpListener, sync::mpsc};

use super::connection::{self, InboundRequest};
use crate::wire::tls::TlsServer;

/// How long a client may take to finish its TLS handshake before the
/// connection is closed (a client that connects and says nothing must not
/// hold a task forever).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the accept loop needs to know.
#[derive(Debug, Clone)]
pub struct AcceptConfig {
    /// `socket.request.max.bytes`: largest request frame, bytes.
    pub max_frame_bytes: usize,
    /// The TLS server of a listener mapped to SSL; `None`: PLAINTEXT.
    pub tls: Option<Arc<TlsServer>>,
}

/// Accepts connections until the task is aborted; every connection is served
/// by its own task that hands requests to `requests`. A failed accept (e.g.
/// EMFILE) is logged and retried after a short pause: it never ends the loop.
pub async fn accept_loop(
    listener: TcpListener,
    config: AcceptConfig,
    requests: mpsc::Sender<InboundRequest>,
) {
    let mut next_id = 0u64;
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                next_id += 1;
                let connection_id = next_id;
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
                }
                let requests = requests.clone();
                let max_frame = config.max_frame_bytes;
                match config.tls.clone() {
                    None => {
                        tokio::spawn(connection::serve_connection(
                            connection_id,
                            stream,
                            peer,
                            max_frame,
                            requests,
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
                                    tracing::info!(%peer, connection_id, error = %e, "closing connection: TLS handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    tracing::info!(%peer, connection_id, "closing connection: TLS handshake timed out");
                                    return;
                                }
                            };
                            connection::serve_connection(
                                connection_id,
                                stream,
                                peer,
                                max_frame,
                                requests,
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
