//! The operator's [`AdminQuorumClient`] against a real quorum (issue 7,
//! "Tests", last bullet): three `kraft-controller` processes on 127.0.0.1
//! formatted with `--initial-controllers`, and a fourth formatted
//! `--no-initial-controllers` that the client adds as a voter and removes
//! again, through the same calls the reconciler makes. No Kubernetes.
//!
//! The harness is kept small on purpose (the controller's process harness
//! lives in its own crate's tests and cannot be imported): it runs the real
//! `kraft-controller` binary, built by `cargo build` from this test so that it
//! is never stale, kills every process it started when dropped (also on a
//! panic, then printing each node's output), and polls with deadlines.

use std::{
    fs::File,
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use kraft_common::{Endpoint, kafka_uuid::to_string as kafka_uuid_string};
use kraft_operator::quorum::{
    QuorumClient, QuorumDescription, QuorumError, QuorumSession, admin::AdminQuorumClient,
};
use uuid::Uuid;

const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";
/// Long enough for a first election or a catch-up on a loaded 2-core machine
/// with Kafka's default `controller.quorum.*` timings.
const PATIENCE: Duration = Duration::from_secs(30);

/// Builds `kraft-controller` (a no-op when fresh) and returns its path, next
/// to this test's `deps/` directory.
fn controller_binary() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "kraft-controller",
            "--bin",
            "kraft-controller",
        ])
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build of kraft-controller failed");
    let exe = std::env::current_exe().expect("the test's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let bin = profile_dir.join("kraft-controller");
    assert!(bin.exists(), "no controller binary at {}", bin.display());
    bin
}

struct Node {
    id: i32,
    port: u16,
    directory_id: Uuid,
    config: PathBuf,
    output: PathBuf,
    child: Option<Child>,
}

/// Controllers formatted in one temporary directory; killed on drop.
struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    nodes: Vec<Node>,
}

impl Cluster {
    /// Formats `voters` nodes with `--initial-controllers` and `observers`
    /// more with `--no-initial-controllers` (bootstrapping from the voters).
    fn format(voters: usize, observers: usize) -> Cluster {
        let bin = controller_binary();
        let unique = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "kraftwerk-admin-real-quorum-{}-{unique}",
            std::process::id()
        ));
        let total = voters + observers;
        let listeners: Vec<TcpListener> = (0..2 * total)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind port 0"))
            .collect();
        let ports: Vec<u16> = listeners
            .iter()
            .map(|l| l.local_addr().expect("local addr").port())
            .collect();
        drop(listeners);
        let mut cluster = Cluster {
            bin,
            dir,
            nodes: Vec::new(),
        };
        let ids: Vec<i32> = (1..=total as i32).collect();
        let directory_ids: Vec<Uuid> = ids
            .iter()
            .map(|id| Uuid::from_u128(0x0be7_0000_0000_0000_0000_0000_0000_0000 + *id as u128))
            .collect();
        let bootstrap = (0..voters)
            .map(|i| format!("127.0.0.1:{}", ports[2 * i]))
            .collect::<Vec<_>>()
            .join(",");
        let initial = (0..voters)
            .map(|i| {
                format!(
                    "{}@127.0.0.1:{}:{}",
                    ids[i],
                    ports[2 * i],
                    kafka_uuid_string(directory_ids[i])
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        for (i, id) in ids.iter().enumerate() {
            let node_dir = cluster.dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&node_dir).expect("node dir");
            let config = node_dir.join("server.properties");
            std::fs::write(
                &config,
                format!(
                    "node.id={id}\nprocess.roles=controller\n\
                     listeners=CONTROLLER://127.0.0.1:{port}\n\
                     controller.listener.names=CONTROLLER\n\
                     metadata.log.dir={log_dir}\n\
                     kraftwerk.http.listener=127.0.0.1:{http}\n\
                     controller.quorum.bootstrap.servers={bootstrap}\n",
                    port = ports[2 * i],
                    http = ports[2 * i + 1],
                    log_dir = node_dir.join("metadata").display(),
                ),
            )
            .expect("write server.properties");
            let voter_flags = if i < voters {
                vec!["--initial-controllers", initial.as_str()]
            } else {
                vec!["--no-initial-controllers"]
            };
            let out = Command::new(&cluster.bin)
                .arg("format")
                .arg("--config")
                .arg(&config)
                .arg(format!("--cluster-id={CLUSTER_ID}"))
                .args(["--node-id", &id.to_string()])
                .args(["--directory-id", &kafka_uuid_string(directory_ids[i])])
                .args(&voter_flags)
                .output()
                .expect("run kraft-controller format");
            assert!(
                out.status.success(),
                "format of node {id}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            cluster.nodes.push(Node {
                id: *id,
                port: ports[2 * i],
                directory_id: directory_ids[i],
                config,
                output: node_dir.join("output.log"),
                child: None,
            });
        }
        cluster
    }

    fn node(&self, id: i32) -> &Node {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    fn address(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.node(id).port)
    }

    fn socket_addr(&self, id: i32) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.node(id).port))
    }

    /// Node `id`'s `CONTROLLER` listener, as AddRaftVoter carries it.
    fn endpoint(&self, id: i32) -> Endpoint {
        Endpoint::new("CONTROLLER", "127.0.0.1", self.node(id).port)
    }

    fn start(&mut self, id: i32) {
        let bin = self.bin.clone();
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"));
        let out = File::create(&node.output).expect("create the output file");
        let err = out.try_clone().expect("clone the output file");
        let child = Command::new(bin)
            .args(["run", "--config"])
            .arg(&node.config)
            .args(["--cluster-id", CLUSTER_ID])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("spawn kraft-controller run");
        node.child = Some(child);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        if std::thread::panicking() {
            for node in &self.nodes {
                let text = std::fs::read_to_string(&node.output).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                eprintln!(
                    "---- node {} (port {}): last lines\n{}\n",
                    node.id,
                    node.port,
                    lines[lines.len().saturating_sub(40)..].join("\n")
                );
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Polls `check` every 50 ms until it returns `Some`, for at most
/// [`PATIENCE`]; panics naming `what` otherwise.
async fn wait_for<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn voter_ids(d: &QuorumDescription) -> Vec<(i32, Uuid)> {
    let mut v: Vec<_> = d
        .voters
        .iter()
        .map(|r| (r.node_id, r.directory_id))
        .collect();
    v.sort();
    v
}

#[test]
fn the_admin_quorum_client_adds_and_removes_a_voter_of_a_real_quorum() {
    let mut cluster = Cluster::format(3, 1);
    for id in 1..=4 {
        cluster.start(id);
    }
    let client = AdminQuorumClient::new(Duration::from_secs(5));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        // The bootstrap controllers of every session: node 1 first (as a
        // reconcile pass lists the pods), then the others.
        let via: Vec<_> = (1..=3).map(|id| cluster.socket_addr(id)).collect();
        let joiner = cluster.node(4);
        let joiner_endpoint = cluster.address(4);
        let joiner_listener = cluster.endpoint(4);
        let initial: Vec<(i32, Uuid)> = (1..=3)
            .map(|id| (id, cluster.node(id).directory_id))
            .collect();

        // The leader reports the fourth node as a caught-up observer.
        let described = wait_for("node 4 to be a caught-up observer", || async {
            let d = client
                .session(via.clone(), None)
                .describe_quorum()
                .await
                .ok()?;
            let o = d.observers.iter().find(|o| o.node_id == 4)?;
            (o.directory_id == joiner.directory_id && d.is_caught_up(o)).then_some(d)
        })
        .await;
        assert_eq!(voter_ids(&described), initial);
        let endpoints: Vec<(i32, String)> = described.endpoints.clone().into_iter().collect();
        assert_eq!(
            endpoints,
            (1..=3)
                .map(|id| (id, cluster.address(id)))
                .collect::<Vec<_>>()
        );

        // One session for the rest, as one reconcile pass has: one
        // connection that follows the leader.
        let mut session = client.session(via.clone(), None);

        // A wrong directory id is refused for good, not retried.
        let wrong = Uuid::from_u128(0xbad);
        match session.add_voter(4, wrong, &joiner_listener).await {
            Err(QuorumError::Retriable { name, .. }) => assert_eq!(name, "REQUEST_TIMED_OUT"),
            other => panic!("add_voter of an unknown key: {other:?}"),
        }
        match session.remove_voter(2, wrong).await {
            Err(QuorumError::Rejected { name, .. }) => assert_eq!(name, "VOTER_NOT_FOUND"),
            other => panic!("remove_voter with a wrong directory id: {other:?}"),
        }

        // Add: answered once committed, so the next description has it.
        session
            .add_voter(4, joiner.directory_id, &joiner_listener)
            .await
            .expect("add_voter of a caught-up observer");
        let d = session.describe_quorum().await.expect("describe");
        let mut with_joiner = initial.clone();
        with_joiner.push((4, joiner.directory_id));
        assert_eq!(voter_ids(&d), with_joiner);
        assert_eq!(d.endpoints.get(&4), Some(&joiner_endpoint));
        match session
            .add_voter(4, joiner.directory_id, &joiner_listener)
            .await
        {
            Err(QuorumError::Rejected { name, .. }) => assert_eq!(name, "DUPLICATE_VOTER"),
            other => panic!("a second add_voter of node 4: {other:?}"),
        }

        // Remove it again: back to the initial three.
        session
            .remove_voter(4, joiner.directory_id)
            .await
            .expect("remove_voter of node 4");
        let d = session.describe_quorum().await.expect("describe");
        assert_eq!(voter_ids(&d), initial);
        assert!(!d.endpoints.contains_key(&4), "{:?}", d.endpoints);
    });
}
