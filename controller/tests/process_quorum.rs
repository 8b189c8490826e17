//! Process tests of a quorum's life without failover (issue 4, "Process
//! tests"): real `kraft-controller run` processes on 127.0.0.1 form a quorum,
//! elect one leader that commits no-op records, agree on DescribeQuorum, stop
//! committing without a majority, and survive bad input on the controller port.
//!
//! Every test runs with Kafka 4.1's default `controller.quorum.*` timings
//! (see `support::kafka_defaults`).

mod support;

use std::{
    collections::BTreeSet,
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use support::{Mode, QuorumBuilder, kafka_defaults, wait_for};

/// Long enough for a first election on a loaded 2-core machine: start-up,
/// the fetch timeout of the bootstrap, pre-vote and vote, with room for a
/// split vote or two.
const ELECTION: Duration = Duration::from_secs(20);

#[test]
fn three_formatted_nodes_elect_one_leader_that_commits_and_every_node_describes_the_same_quorum() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, epoch) = quorum.wait_for_leader(&ids, ELECTION);
    for id in ids.iter().filter(|id| **id != leader) {
        quorum.wait_for_follower(*id, leader, ELECTION);
    }
    // One leader: nobody else says it leads, everybody names the same one.
    for node in &quorum.nodes {
        if node.id != leader {
            assert_eq!(
                node.ready_leader_epoch(),
                None,
                "node {} leads too",
                node.id
            );
        }
        assert_eq!(node.current_leader(), Some(leader), "node {}", node.id);
    }

    // The leader commits no-op records when idle (metadata.max.idle.interval.ms):
    // the high watermark moves on its own, and the followers follow.
    let start = quorum
        .node(leader)
        .high_watermark()
        .expect("the leader's metrics");
    assert!(
        start > 0,
        "a ready leader has a high watermark, got {start}"
    );
    let idle = Duration::from_millis(kafka_defaults::MAX_IDLE_INTERVAL_MS);
    for node in &quorum.nodes {
        wait_for(
            10 * idle,
            &format!("node {} to see the high watermark pass {start}", node.id),
            || node.high_watermark().filter(|hw| *hw >= start + 2),
        );
    }

    // DescribeQuorum bootstrapped at any node gives the same quorum.
    let answers: Vec<_> = ids
        .iter()
        .map(|id| {
            quorum
                .describe_quorum(*id)
                .unwrap_or_else(|e| panic!("DescribeQuorum via node {id}: {e}"))
        })
        .collect();
    for (id, info) in ids.iter().zip(&answers) {
        assert_eq!(info.leader_id, leader, "leader as described via node {id}");
        assert_eq!(info.leader_epoch, epoch, "epoch as described via node {id}");
        let voters: BTreeSet<i32> = info.voters.iter().map(|v| v.replica_id).collect();
        assert_eq!(
            voters,
            ids.iter().copied().collect(),
            "voters via node {id}"
        );
        assert!(
            info.voters.iter().all(|v| !v.directory_id.is_nil()),
            "KIP-853 voters carry their directory ids: {:?}",
            info.voters
        );
        assert!(info.observers.is_empty(), "observers via node {id}");
        assert!(info.high_watermark >= start, "high watermark via node {id}");
        let endpoints: BTreeSet<(i32, u16)> = info
            .nodes
            .iter()
            .flat_map(|n| n.endpoints.iter().map(move |e| (n.node_id, e.port)))
            .collect();
        let expected: BTreeSet<(i32, u16)> = quorum.nodes.iter().map(|n| (n.id, n.port)).collect();
        assert_eq!(endpoints, expected, "voter endpoints via node {id}");
    }
    let voter_keys = |i: usize| -> Vec<(i32, String)> {
        let mut keys: Vec<_> = answers[i]
            .voters
            .iter()
            .map(|v| (v.replica_id, v.directory_id.to_string()))
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(voter_keys(0), voter_keys(1));
    assert_eq!(voter_keys(0), voter_keys(2));

    // The operator's view: `quorum describe --status` names the same leader.
    let out = std::process::Command::new(support::BIN)
        .args([
            "quorum",
            "--bootstrap-controller",
            &quorum.node(ids[0]).address(),
            "describe",
            "--status",
        ])
        .output()
        .expect("run quorum describe");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["LeaderId:", &leader.to_string()]),
        "{text}"
    );
}

#[test]
fn the_first_leader_of_a_dynamic_quorum_commits_its_leader_change_and_keeps_running() {
    // KIP-853: voters formatted with --initial-controllers carry directory
    // ids. The LeaderChange record is Kafka 4.1's LeaderChangeMessage v0,
    // whose voters are ids only; a leader must still be able to write it.
    let mut quorum = QuorumBuilder::new(1, Mode::Dynamic).format();
    quorum.start_all();
    let (leader, epoch) = quorum.wait_for_leader(&[1], ELECTION);
    let node = quorum.node(leader);
    let committed = node.high_watermark().expect("leader metrics");
    wait_for(ELECTION, "a no-op record to commit", || {
        node.high_watermark().filter(|hw| *hw > committed)
    });
    assert!(
        node.output_lines("ERROR").is_empty(),
        "{}",
        node.output_tail(20)
    );
    quorum.kill_all();
    let dump = quorum.dump_log(leader);
    assert!(
        dump.lines()
            .any(|l| l.contains(&format!("epoch={epoch} control=true")))
            && dump
                .lines()
                .any(|l| l.contains("LEADER_CHANGE version=0 leader_id=1 voters=[1]")),
        "{dump}"
    );
}

#[test]
fn a_static_quorum_from_controller_quorum_voters_elects_a_leader() {
    let mut quorum = QuorumBuilder::new(3, Mode::Static).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, epoch) = quorum.wait_for_leader(&ids, ELECTION);
    let info = quorum
        .describe_quorum(ids[0])
        .expect("DescribeQuorum of a static quorum");
    assert_eq!((info.leader_id, info.leader_epoch), (leader, epoch));
    let voters: BTreeSet<i32> = info.voters.iter().map(|v| v.replica_id).collect();
    assert_eq!(voters, ids.iter().copied().collect());
}

#[test]
fn with_two_of_three_stopped_nothing_commits_until_one_comes_back() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let followers: Vec<i32> = ids.iter().copied().filter(|id| *id != leader).collect();
    let (survivor, returner) = (followers[0], followers[1]);
    quorum.wait_for_follower(survivor, leader, ELECTION);
    quorum.kill(leader);
    quorum.kill(returner);

    // The survivor notices (fetch timeout) and is not ready any more. /readyz
    // is judged against the clock when asked, so it can say "expired" a few
    // ms before the event loop handles the fetch timeout and forgets the
    // leader: wait for both.
    let node = quorum.node(survivor);
    let fetch_timeout = Duration::from_millis(kafka_defaults::FETCH_TIMEOUT_MS);
    wait_for(
        5 * fetch_timeout,
        "the survivor to be not ready and to know no leader",
        || {
            node.readyz()
                .filter(|(ready, _)| !ready)
                .filter(|_| node.current_leader() == Some(-1))
        },
    );
    let high_watermark = node.high_watermark().expect("the survivor's metrics");

    // Nothing commits: over several election timeouts the high watermark
    // stays, no leader is known and /readyz stays 503.
    let window = Duration::from_millis(3 * kafka_defaults::ELECTION_TIMEOUT_MS);
    let until = Instant::now() + window;
    let mut observations = 0;
    while Instant::now() < until {
        let (ready, reason) = node.readyz().expect("the survivor answers /readyz");
        assert!(!ready, "a lone survivor must not be ready: {reason}");
        assert_eq!(node.high_watermark(), Some(high_watermark), "{reason}");
        assert_eq!(node.current_leader(), Some(-1), "{reason}");
        observations += 1;
        std::thread::sleep(support::POLL * 5);
    }
    assert!(observations >= 10, "only {observations} observations");

    // One node back: a majority again, so a leader again, and commits resume.
    quorum.start(returner);
    let (leader, _) = quorum.wait_for_leader(&[survivor, returner], ELECTION);
    wait_for(ELECTION, "the high watermark to move again", || {
        quorum
            .node(leader)
            .high_watermark()
            .filter(|hw| *hw > high_watermark)
    });
}

/// A request frame: 4-byte size, then `body`.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A request header v1 (api key, version, correlation id, client id "t").
fn header_v1(api_key: i16, api_version: i16, correlation_id: i32) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&api_key.to_be_bytes());
    out.extend_from_slice(&api_version.to_be_bytes());
    out.extend_from_slice(&correlation_id.to_be_bytes());
    out.extend_from_slice(&1i16.to_be_bytes());
    out.push(b't');
    out
}

/// Reads one response frame (size-prefixed) from `stream`.
fn read_frame(stream: &mut TcpStream) -> Vec<u8> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).expect("a response size");
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).expect("a response body");
    body
}

/// Whether the server closed `stream` (EOF or reset) within the read timeout.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

fn connect(address: &str) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connect to the controller port");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("set a read timeout");
    stream
}

/// ApiVersions v0 on `stream`; returns the error code of the answer.
fn api_versions_v0(stream: &mut TcpStream, correlation_id: i32) -> i16 {
    stream
        .write_all(&frame(&header_v1(18, 0, correlation_id)))
        .expect("send ApiVersions");
    let answer = read_frame(stream);
    assert_eq!(
        &answer[0..4],
        &correlation_id.to_be_bytes(),
        "correlation id"
    );
    i16::from_be_bytes([answer[4], answer[5]])
}

#[test]
fn bad_input_closes_only_its_connection_and_the_node_keeps_serving() {
    let mut quorum = QuorumBuilder::new(1, Mode::Dynamic).format();
    quorum.start_all();
    let (leader, epoch) = quorum.wait_for_leader(&[1], ELECTION);
    let address = quorum.node(leader).address();
    // A client connected before the bad input, which must keep working.
    let mut bystander = connect(&address);
    assert_eq!(api_versions_v0(&mut bystander, 1), 0);

    // A frame larger than socket.request.max.bytes (Kafka's default,
    // 104857600): the size alone closes the connection, no body is awaited.
    let mut oversized = connect(&address);
    oversized
        .write_all(&(104_857_600i32 + 1).to_be_bytes())
        .expect("send a size");
    assert!(
        closed_by_server(&mut oversized),
        "an oversized frame must close its connection"
    );

    // A header that cannot be parsed (cut in the middle of the correlation id).
    let mut garbage = connect(&address);
    garbage
        .write_all(&frame(&[0x00, 0x12, 0x00, 0x03, 0xde, 0xad]))
        .expect("send garbage");
    assert!(
        closed_by_server(&mut garbage),
        "a garbage header must close its connection"
    );

    // An api key nobody defines.
    let mut unknown = connect(&address);
    unknown
        .write_all(&frame(&header_v1(0x7ead, 0, 7)))
        .expect("send an unknown api key");
    assert!(
        closed_by_server(&mut unknown),
        "an unknown api key must close its connection"
    );

    // ApiVersions at a version we do not speak: KIP-511's answer, an
    // UNSUPPORTED_VERSION (35) error in a v0 body that lists what we speak.
    let mut future = connect(&address);
    let mut request = header_v1(18, 99, 42);
    request.push(0); // header v2's empty tagged fields
    future
        .write_all(&frame(&request))
        .expect("send ApiVersions v99");
    let answer = read_frame(&mut future);
    assert_eq!(&answer[0..4], &42i32.to_be_bytes(), "correlation id");
    assert_eq!(
        i16::from_be_bytes([answer[4], answer[5]]),
        35,
        "UNSUPPORTED_VERSION"
    );
    let count = i32::from_be_bytes([answer[6], answer[7], answer[8], answer[9]]);
    let listed = (0..count as usize).find_map(|i| {
        let at = 10 + 6 * i;
        let key = i16::from_be_bytes([answer[at], answer[at + 1]]);
        (key == 18).then(|| i16::from_be_bytes([answer[at + 4], answer[at + 5]]))
    });
    assert_eq!(listed, Some(4), "ApiVersions v0-4 listed");
    // The same connection can go on at a version we list.
    assert_eq!(api_versions_v0(&mut future, 43), 0);

    // The node keeps serving: the bystander's connection and a new client.
    assert_eq!(api_versions_v0(&mut bystander, 2), 0);
    let info = quorum
        .describe_quorum(leader)
        .expect("DescribeQuorum after bad input");
    assert_eq!((info.leader_id, info.leader_epoch), (leader, epoch));
    assert!(quorum.node(leader).is_running());
    assert_eq!(quorum.ready_leader(&[leader]), Some((leader, epoch)));
}
