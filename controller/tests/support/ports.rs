//! TCP ports for the servers that tests start, distinct across every test
//! thread and test process on the machine that takes its ports here (the
//! controller's process and interop tests).
//!
//! Binding port 0 and closing the socket, what the tests did before, hands
//! out a port that the kernel may give again, to the next bind of port 0 (in
//! this process or another) or to an outgoing connection, before the server
//! meant to have it binds it. A CI run saw it: one controller's HTTP
//! endpoint got the port of another controller's listener in the same
//! quorum, and a Kafka broker read HTTP as a Kafka response size and ran out
//! of heap. `make test-interop` now runs two test processes at once
//! (`dev/interop-tests.sh`), and test binaries run two test threads.
//!
//! So ports come from 20000-29999: below Linux's ephemeral range (32768 and
//! up by default: no bind of port 0 nor outgoing connection takes them), and
//! below Kubernetes' NodePort range, and above the local cluster's own
//! (2379, 6443, 10248-10259). They are handed out one after another from a
//! counter in `/tmp/kraftwerk-test-ports` (not `$TMPDIR`: every test process
//! must share it) under an exclusive `flock`; a port that cannot be bound
//! now is skipped. A daemon that binds a port of the range later is not
//! seen. The counter wraps after 10,000 ports, far more than one run uses.

#![allow(dead_code)]

use std::{
    fs::OpenOptions,
    io::{Read, Seek, Write},
    net::TcpListener,
};

const FIRST: u16 = 20_000;
const LAST: u16 = 29_999;

/// `n` ports on 127.0.0.1 that were free when asked and that no other test
/// on this machine is given until the counter wraps. Panics (one line) when
/// the counter file cannot be used or no port of the range is free.
pub fn free_ports(n: usize) -> Vec<u16> {
    let path = std::path::Path::new("/tmp/kraftwerk-test-ports");
    let fail = |what: &str, e: std::io::Error| -> ! {
        panic!("test ports: cannot {what} {}: {e}", path.display())
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap_or_else(|e| fail("open", e));
    file.lock().unwrap_or_else(|e| fail("lock", e));
    let mut text = String::new();
    file.read_to_string(&mut text)
        .unwrap_or_else(|e| fail("read", e));
    let mut next = text
        .trim()
        .parse()
        .ok()
        .filter(|p| (FIRST..=LAST).contains(p))
        .unwrap_or(FIRST);
    let mut ports = Vec::with_capacity(n);
    let mut tried = 0;
    while ports.len() < n {
        assert!(
            tried <= usize::from(LAST - FIRST),
            "test ports: no port of {FIRST}-{LAST} can be bound on 127.0.0.1"
        );
        let port = next;
        next = if next == LAST { FIRST } else { next + 1 };
        tried += 1;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports.push(port);
        }
    }
    file.set_len(0).unwrap_or_else(|e| fail("truncate", e));
    file.rewind().unwrap_or_else(|e| fail("rewind", e));
    write!(file, "{next}").unwrap_or_else(|e| fail("write", e));
    ports
}

/// One port of [`free_ports`].
pub fn free_port() -> u16 {
    free_ports(1)[0]
}
