//! Process tests of the connection limits (issue 19): real processes on
//! loopback.
//!
//! - connections beyond `max.connections` are closed at accept, counted on
//!   `/metrics`, while the quorum keeps committing over the connections it
//!   already has;
//! - slow-loris connections (a frame announced, then a byte now and then)
//!   are closed once `kraftwerk.request.read.timeout.ms` has passed;
//! - 5,000 connections opened to the leader and held, five times
//!   `max.connections`: the excess is refused, the quorum keeps committing,
//!   and the leader's resident memory stays bounded (the figures are printed).

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
    let slow: Vec<TcpStream> = (0..200)
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

/// The resident set size of process `pid`, KiB (`VmRSS` of /proc).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the process's status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

/// Whether the server has closed `stream` already (a read that does not block).
fn closed_now(mut stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).expect("non-blocking");
    let mut buf = [0u8; 16];
    let closed = match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    stream.set_nonblocking(false).expect("blocking");
    closed
}

#[test]
fn five_thousand_held_connections_are_refused_beyond_max_connections_with_bounded_memory() {
    const MAX: usize = 1_000;
    const OPENED: usize = 5_000;
    // The test itself holds every connection.
    rlimit::increase_nofile_limit(OPENED as u64 + 1_000).expect("raise the open-file limit");
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .property("max.connections", MAX)
        .format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    let hw = wait_for_commit_past(&quorum, leader, 0);
    let pid = quorum.node(leader).pid().expect("the leader runs");
    let address = quorum.node(leader).address();
    let before = rss_kib(pid);
    let started = Instant::now();
    let held: Vec<TcpStream> = (0..OPENED)
        .map(|_| TcpStream::connect(&address).expect("the TCP connect itself succeeds"))
        .collect();
    let opened_in = started.elapsed();
    // Every connection over the limit is closed at accept.
    let refused = wait_for(Duration::from_secs(60), "the excess to be refused", || {
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
        (n >= (OPENED - MAX) as f64).then_some(n)
    });
    let closed = held.iter().filter(|s| closed_now(s)).count();
    let open = OPENED - closed;
    assert!(
        open <= MAX && closed >= OPENED - MAX,
        "{open} of {OPENED} connections open with max.connections={MAX}"
    );
    // The quorum keeps committing while they are held.
    wait_for_commit_past(&quorum, leader, hw + 5);
    let after = rss_kib(pid);
    eprintln!(
        "{OPENED} connections opened in {opened_in:?}: {open} held open, {closed} closed \
         ({refused} refusals counted); leader RSS {before} KiB before, {after} KiB held \
         (+{} KiB, {} B per open connection)",
        after.saturating_sub(before),
        after.saturating_sub(before) * 1024 / open.max(1) as u64
    );
    // Bounded: the accepted connections' buffers (at most max.connections of
    // them), not one allocation per connection attempt.
    assert!(
        after < before + 128 * 1024,
        "leader RSS grew from {before} KiB to {after} KiB"
    );
    quorum.node(leader).assert_alive();
    drop(held);
}
