//! Process tests of the HTTP endpoint's default (`kraftwerk.http.listener`
//! unset, issue 27): several controllers configured as Kafka's docs
//! configure a local quorum (one host, one `listeners` port each, nothing
//! else) all start, and none listens on every interface. The default is
//! `127.0.0.1:0`: loopback, a port of the node's own, written to its log
//! (docs/decisions.md, "The HTTP endpoint's default").

mod support;

use std::{
    collections::BTreeSet,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    time::Duration,
};

use support::{Mode, Node, QuorumBuilder, http_get, wait_for};

/// Long enough for a first election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(30);

/// The TCP sockets process `pid` listens on, from `/proc/net/tcp{,6}` (state
/// `0A`, LISTEN) matched to the socket inodes of `/proc/PID/fd`.
fn listening_sockets(pid: u32) -> Vec<SocketAddr> {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|target| {
                    let t = target.to_string_lossy().into_owned();
                    Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            if *state != "0A" || !inodes.contains(*inode) {
                continue;
            }
            if let Some(addr) = parse_proc_address(local, v6) {
                out.push(addr);
            }
        }
    }
    out
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6), as the
/// kernel prints them: each 32-bit word in host (little-endian) order.
fn parse_proc_address(text: &str, v6: bool) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<u32> = (0..ip.len() / 8)
        .map(|i| u32::from_str_radix(&ip[8 * i..8 * i + 8], 16).map(u32::from_be))
        .collect::<Result<_, _>>()
        .ok()?;
    let ip = if v6 {
        let mut bytes = [0u8; 16];
        for (i, w) in words.iter().enumerate() {
            bytes[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        IpAddr::V6(Ipv6Addr::from(bytes))
    } else {
        IpAddr::V4(Ipv4Addr::from(words.first()?.to_be_bytes()))
    };
    Some(SocketAddr::new(ip, port))
}

/// The HTTP endpoint of `node`, run with the default: the one socket it
/// listens on besides its controller listener. Panics when it listens on
/// every interface or not on exactly one other socket.
fn default_http_endpoint(node: &Node) -> SocketAddr {
    let pid = node.pid().expect("the node runs");
    let sockets = wait_for(
        ELECTION,
        &format!(
            "node {} to listen on its controller port and one more",
            node.id
        ),
        || {
            node.assert_alive();
            let sockets = listening_sockets(pid);
            (sockets.len() >= 2 && sockets.iter().any(|s| s.port() == node.port)).then_some(sockets)
        },
    );
    for s in &sockets {
        assert!(
            !s.ip().is_unspecified(),
            "node {} listens on every interface: {s} (all: {sockets:?})",
            node.id
        );
    }
    let others: Vec<SocketAddr> = sockets
        .into_iter()
        .filter(|s| s.port() != node.port)
        .collect();
    assert_eq!(others.len(), 1, "node {}: {others:?}", node.id);
    others[0]
}

#[test]
fn three_controllers_on_one_host_with_kafkas_local_quorum_configuration_and_no_http_setting_all_come_up()
 {
    // Kafka's docs for a local quorum: three controllers on one host, each
    // with its own controller port and the same bootstrap servers; nothing
    // about an HTTP endpoint, which Kafka does not have.
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .default_http_listener()
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    let described = wait_for(ELECTION, "a leader described by all three", || {
        for node in &quorum.nodes {
            node.assert_alive();
        }
        let answers = ids
            .iter()
            .map(|id| quorum.describe_quorum(*id).ok())
            .collect::<Option<Vec<_>>>()?;
        let leader = answers[0].leader_id;
        (leader >= 0 && answers.iter().all(|a| a.leader_id == leader)).then_some(answers)
    });
    let voters: BTreeSet<i32> = described[0].voters.iter().map(|v| v.replica_id).collect();
    assert_eq!(voters, ids.iter().copied().collect());
    // Each serves its own endpoint, on loopback, on a port of its own.
    let endpoints: BTreeSet<SocketAddr> = quorum.nodes.iter().map(default_http_endpoint).collect();
    assert_eq!(endpoints.len(), 3, "{endpoints:?}");
    for node in &quorum.nodes {
        node.assert_alive();
    }
}

#[test]
fn the_default_http_endpoint_listens_on_loopback_on_a_port_of_its_own_and_logs_it() {
    let mut quorum = QuorumBuilder::standalone().default_http_listener().format();
    quorum.start_all();
    let node = quorum.node(1);
    let http = default_http_endpoint(node);
    assert_eq!(http.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST), "{http}");
    assert_ne!(http.port(), 0);
    // It is the endpoint: /healthz answers, /readyz once the node leads.
    assert_eq!(http_get(http, "/healthz").map(|(code, _)| code), Some(200));
    wait_for(ELECTION, "/readyz of the standalone leader", || {
        node.assert_alive();
        http_get(http, "/readyz").filter(|(code, _)| *code == 200)
    });
    // The log says where it is, for a user who did not choose.
    let lines = node.output_lines("http endpoint listening");
    assert!(
        lines.iter().any(|l| l.contains(&http.to_string())),
        "{lines:?}"
    );
}
