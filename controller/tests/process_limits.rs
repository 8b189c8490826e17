//! Process tests of the connection limits (issue 19): real processes on
//! loopback.
//!
//! - connections beyond `max.connections` are closed at accept, counted on
//!   `/metrics`, while the quorum keeps committing over the connections it
//!   already has;
//! - slow-loris connections (a frame announced, then a byte now and then)
//!   are closed once `kraftwerk.request.read.timeout.ms` has passed.

mod support;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use support::{Mode, Quorum, QuorumBuilder, wait_for};

const ELECTION: Duration = Duration::from_secs(30);

/// Whether the server closed `stream` (EOF or reset) within `timeout`.
fn closed_within(mut stream: &TcpStream, timeout: Duration) -> bool {
    stream
        .set_read_timeout(Some(timeout))
        .expect("set a read timeout");
    let mut buf = [0u8; 16];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

fn wait_for_commit_past(quorum: &Quorum, id: i32, above: i64) -> i64 {
    wait_for(
        ELECTION,
        &format!("node {id}'s high watermark past {above}"),
        || quorum.node(id).high_watermark().filter(|hw| *hw > above),
    )
}

#[test]
fn connections_over_max_connections_are_refused_while_the_quorum_keeps_committing() {
    const MAX: usize = 16;
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .property("max.connections", MAX)
        .format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    let hw = wait_for_commit_past(&quorum, leader, 0);
    let address = quorum.node(leader).address();
    // The leader already holds its peers' connections; fill the rest and more.
    let held: Vec<TcpStream> = (0..MAX * 4)
        .map(|_| TcpStream::connect(&address).expect("the TCP connect itself succeeds"))
        .collect();
    let refused = held
        .iter()
        .filter(|s| closed_within(s, Duration::from_millis(300)))
        .count();
    assert!(
        refused >= MAX * 3 - 4,
        "{refused} of {} connections over max.connections={MAX} were closed",
        MAX * 4
    );
    let counted = wait_for(ELECTION, "refusals on /metrics", || {
        let (_, body) = quorum.node(leader).http_get("/metrics")?;
        let n: f64 = body
            .lines()
            .find(|l| {
                l.starts_with("kraftwerk_connections_refused_total{reason=\"max_connections\"}")
            })?
            .rsplit(' ')
            .next()?
            .parse()
            .ok()?;
        (n >= refused as f64).then_some(n)
    });
    assert!(counted >= 1.0);
    // The quorum keeps committing while the connections are held.
    wait_for_commit_past(&quorum, leader, hw + 5);
    quorum.node(leader).assert_alive();
    drop(held);
}

#[test]
fn slow_loris_connections_are_closed_after_the_request_read_timeout() {
    let mut quorum = QuorumBuilder::new(1, Mode::Dynamic)
        .property("kraftwerk.request.read.timeout.ms", 1_000)
        .format();
    quorum.start_all();
    quorum.wait_for_leader(&[1], ELECTION);
    let address = quorum.node(1).address();
    let started = Instant::now();
    let slow: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = TcpStream::connect(&address).expect("connect");
            // A 100 KiB request (under the unauthenticated limit), of which
            // only the size and one byte ever arrive.
            s.write_all(&(100 * 1024i32).to_be_bytes())
                .expect("write the size");
            s.write_all(&[0]).expect("write a byte");
            s
        })
        .collect();
    for (i, s) in slow.iter().enumerate() {
        assert!(
            closed_within(s, Duration::from_secs(15)),
            "slow connection {i} still open after {:?}",
            started.elapsed()
        );
    }
    // Closed by the deadline, not at once.
    assert!(started.elapsed() >= Duration::from_millis(900));
    quorum.node(1).assert_alive();
}
