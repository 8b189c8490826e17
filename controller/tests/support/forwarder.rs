//! A TCP forwarder in front of one controller, standing for the address a
//! pod's DNS name leads to (issue 27): every connection it accepts is
//! forwarded to the controller's port, until [`Forwarder::vanish`] leaves the
//! open ones hanging — accepted, never answered, never closed — as a pod
//! deleted without its peers hearing a FIN or a reset leaves them. New
//! connections reach the controller (restarted on the same port: the pod
//! re-created under the same name) again.
//!
//! It owns its listener thread and the sockets; it must not look into what
//! it forwards.

use std::{
    io,
    net::{Shutdown, TcpListener, TcpStream},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    thread,
};

/// One forwarded connection: the side the peer dialled and the side to
/// the controller.
struct Link {
    client: TcpStream,
    upstream: TcpStream,
}

/// The forwarder; see the module doc. Dropping it stops accepting; the
/// sockets it holds close with the test process.
pub struct Forwarder {
    /// The port peers dial, on 127.0.0.1.
    pub port: u16,
    links: Arc<Mutex<Vec<Link>>>,
    /// Client sides of vanished connections, kept open on purpose.
    hanging: Arc<Mutex<Vec<TcpStream>>>,
    /// How many times [`Forwarder::vanish`] ran: a connection accepted in
    /// an earlier generation no longer passes an end on.
    generation: Arc<AtomicU64>,
}

impl Forwarder {
    /// Listens on a free port of 127.0.0.1 and forwards to
    /// `127.0.0.1:target_port`. A connection the controller refuses (it is
    /// down) is closed at once, as a dial to a pod not running yet.
    pub fn start(target_port: u16) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the forwarder");
        let port = listener.local_addr().expect("forwarder address").port();
        let links: Arc<Mutex<Vec<Link>>> = Arc::default();
        let generation: Arc<AtomicU64> = Arc::default();
        let (accepted, current) = (links.clone(), generation.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                let born = current.load(Ordering::SeqCst);
                let live = {
                    let current = current.clone();
                    move || current.load(Ordering::SeqCst) == born
                };
                pipe(client.try_clone(), upstream.try_clone(), live.clone());
                pipe(upstream.try_clone(), client.try_clone(), live);
                accepted
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Link { client, upstream });
            }
        });
        Forwarder {
            port,
            links,
            hanging: Arc::default(),
            generation,
        }
    }

    /// Leaves every connection open now hanging: the controller's side is
    /// shut, the dialler's side stays open and unread, so a request sent on
    /// it is never answered and the connection never closes.
    pub fn vanish(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let links = std::mem::take(&mut *self.links.lock().unwrap_or_else(PoisonError::into_inner));
        let mut hanging = self.hanging.lock().unwrap_or_else(PoisonError::into_inner);
        for link in links {
            let _ = link.upstream.shutdown(Shutdown::Both);
            hanging.push(link.client);
        }
    }
}

/// Copies `from` to `to` on a thread until either side fails or ends,
/// then, while `live()` (the connection has not vanished), passes the end
/// on by shutting `to`.
fn pipe(
    from: io::Result<TcpStream>,
    to: io::Result<TcpStream>,
    live: impl Fn() -> bool + Send + 'static,
) {
    let (Ok(mut from), Ok(mut to)) = (from, to) else {
        return;
    };
    thread::spawn(move || {
        let _ = io::copy(&mut from, &mut to);
        if live() {
            let _ = to.shutdown(Shutdown::Both);
        }
    });
}
