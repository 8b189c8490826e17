//! Building a [`Quorum`]: ports, each node's `server.properties`, and the
//! real `kraft-controller format` of its log dir; later, the observers and
//! replaced disks of a running test. Split from `mod.rs`, which owns the
//! processes.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use kraft_controller::admin::kafka_uuid_string;
use uuid::Uuid;

use super::{BIN, CLUSTER_ID, Mode, Node, Quorum, free_ports};

/// Builds a [`Quorum`]: `size` nodes, a [`Mode`], extra properties.
#[derive(Debug)]
pub struct QuorumBuilder {
    size: usize,
    mode: Mode,
    standalone: bool,
    properties: Vec<(String, String)>,
    listeners: Listeners,
    /// `format --release-version` (`None`: format's default).
    release_version: Option<String>,
}

/// The listeners every node of a [`Quorum`] gets besides `CONTROLLER`.
#[derive(Debug, Clone, Default)]
pub(super) struct Listeners {
    /// No `kraftwerk.http.listener` in the file: the controller's default.
    pub(super) default_http: bool,
    /// A second controller listener of this name, on [`Node::second_port`].
    pub(super) second: Option<String>,
}

/// The ports of one node (found free on 127.0.0.1).
#[derive(Debug, Clone, Copy)]
struct NodePorts {
    controller: u16,
    http: u16,
    second: u16,
}

impl NodePorts {
    /// `n` nodes' ports.
    fn allocate(n: usize) -> Vec<NodePorts> {
        free_ports(3 * n)
            .chunks(3)
            .map(|p| NodePorts {
                controller: p[0],
                http: p[1],
                second: p[2],
            })
            .collect()
    }
}

impl QuorumBuilder {
    /// A quorum of `size` voters in `mode`, with Kafka's default timings.
    pub fn new(size: usize, mode: Mode) -> Self {
        Self {
            size,
            mode,
            standalone: false,
            properties: Vec::new(),
            listeners: Listeners::default(),
            release_version: None,
        }
    }

    /// One node formatted with `format --standalone` (KIP-853: a dynamic
    /// quorum of itself, to grow with AddRaftVoter).
    pub fn standalone() -> Self {
        Self {
            standalone: true,
            ..Self::new(1, Mode::Dynamic)
        }
    }

    /// Formats every node, [`Quorum::add_observer`]'s too, with
    /// `--release-version VERSION` (e.g. `4.4-IV2`, whose format writes the
    /// KIP-1170 layout).
    pub fn release_version(mut self, version: &str) -> Self {
        self.release_version = Some(version.to_owned());
        self
    }

    /// Adds `key=value` to every node's properties (later keys win).
    pub fn property(mut self, key: &str, value: impl ToString) -> Self {
        self.properties.push((key.to_owned(), value.to_string()));
        self
    }

    /// An mTLS controller listener ([`super::pki::mtls_properties`] with
    /// `keystore` and `truststore`) and Kafka's StandardAuthorizer with
    /// `super_user` (`User:...`) its only super user.
    pub fn mtls_with_authorizer(
        mut self,
        keystore: &std::path::Path,
        truststore: &std::path::Path,
        super_user: &str,
    ) -> Self {
        self = self
            .property(
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            )
            .property("super.users", super_user);
        for (k, v) in super::pki::mtls_properties(keystore, truststore) {
            self = self.property(&k, v);
        }
        self
    }

    /// Writes no `kraftwerk.http.listener`: every node gets the controller's
    /// default HTTP endpoint, on a port the harness does not know
    /// ([`Node::http_port`] is 0, [`Node::http_get`] answers `None`).
    pub fn default_http_listener(mut self) -> Self {
        self.listeners.default_http = true;
        self
    }

    /// A second controller listener `name` on every node (`listeners` and
    /// `controller.listener.names` list it after `CONTROLLER`), on
    /// [`Node::second_port`]; its security comes from the properties.
    pub fn second_controller_listener(mut self, name: &str) -> Self {
        self.listeners.second = Some(name.to_owned());
        self
    }

    /// Allocates ports, writes each node's properties and formats its log dir
    /// with the real `kraft-controller format`. Starts nothing.
    pub fn format(self) -> Quorum {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ports = NodePorts::allocate(self.size);
        let ids: Vec<i32> = (1..=self.size as i32).collect();
        let directory_ids: Vec<String> = ids
            .iter()
            .map(|id| {
                kafka_uuid_string(Uuid::from_u128(
                    0x5eed_0000_0000_0000_0000_0000_0000_0000 + *id as u128,
                ))
            })
            .collect();
        let controller_port = |i: usize| ports[i].controller;
        let bootstrap = (0..self.size)
            .map(|i| format!("127.0.0.1:{}", controller_port(i)))
            .collect::<Vec<_>>()
            .join(",");
        let static_voters = (0..self.size)
            .map(|i| format!("{}@127.0.0.1:{}", ids[i], controller_port(i)))
            .collect::<Vec<_>>()
            .join(",");
        let initial_controllers = (0..self.size)
            .map(|i| {
                format!(
                    "{}@127.0.0.1:{}:{}",
                    ids[i],
                    controller_port(i),
                    directory_ids[i]
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        let mut quorum = Quorum {
            nodes: Vec::new(),
            dir,
            mode: self.mode,
            properties: self.properties,
            listeners: self.listeners,
            formats: 0,
            release_version: self.release_version,
        };
        for (i, id) in ids.iter().enumerate() {
            let config = quorum.write_config(*id, ports[i], &bootstrap, &static_voters);
            let bootstrap_flag = if self.standalone {
                vec!["--standalone".to_owned()]
            } else {
                match self.mode {
                    Mode::Dynamic => {
                        vec![
                            "--initial-controllers".to_owned(),
                            initial_controllers.clone(),
                        ]
                    }
                    Mode::Static => vec!["--no-initial-controllers".to_owned()],
                }
            };
            let flags = quorum.with_release_version(bootstrap_flag);
            format_node(*id, &config, &directory_ids[i], &flags);
            let node = quorum.new_node(*id, config, ports[i], directory_ids[i].clone());
            quorum.nodes.push(node);
        }
        quorum
    }
}

/// Runs `kraft-controller format` of node `id` with `directory_id` and the
/// bootstrap flag(s) (`--standalone`, `--initial-controllers …` or
/// `--no-initial-controllers`); panics with its output when it fails.
fn format_node(id: i32, config: &Path, directory_id: &str, bootstrap: &[String]) {
    let out = Command::new(BIN)
        .arg("format")
        .arg("--config")
        .arg(config)
        .arg(format!("--cluster-id={CLUSTER_ID}"))
        .args(["--node-id", &id.to_string()])
        .args(["--directory-id", directory_id])
        .args(bootstrap)
        .output()
        .expect("run kraft-controller format");
    assert!(
        out.status.success(),
        "format of node {id} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Quorum {
    /// Writes node `id`'s directory and `server.properties` (the builder's
    /// mode, listeners and extra properties); returns the file's path.
    fn write_config(
        &self,
        id: i32,
        ports: NodePorts,
        bootstrap: &str,
        static_voters: &str,
    ) -> PathBuf {
        self.write_config_as(id, ports, bootstrap, static_voters, self.mode)
    }

    /// [`Quorum::write_config`] in `mode` rather than the quorum's.
    fn write_config_as(
        &self,
        id: i32,
        ports: NodePorts,
        bootstrap: &str,
        static_voters: &str,
        mode: Mode,
    ) -> PathBuf {
        let node_dir = self.dir.path().join(format!("node-{id}"));
        std::fs::create_dir_all(&node_dir).expect("node dir");
        let log_dir = node_dir.join("metadata");
        let config = node_dir.join("server.properties");
        let (mut listeners, mut names) = (
            format!("CONTROLLER://127.0.0.1:{}", ports.controller),
            "CONTROLLER".to_owned(),
        );
        if let Some(second) = &self.listeners.second {
            listeners.push_str(&format!(",{second}://127.0.0.1:{}", ports.second));
            names.push_str(&format!(",{second}"));
        }
        let mut text = format!(
            "node.id={id}\nprocess.roles=controller\n\
             listeners={listeners}\n\
             controller.listener.names={names}\n\
             metadata.log.dir={log_dir}\n",
            log_dir = log_dir.display(),
        );
        if !self.listeners.default_http {
            text.push_str(&format!(
                "kraftwerk.http.listener=127.0.0.1:{}\n",
                ports.http
            ));
        }
        match mode {
            Mode::Dynamic => text.push_str(&format!(
                "controller.quorum.bootstrap.servers={bootstrap}\n"
            )),
            Mode::Static => text.push_str(&format!("controller.quorum.voters={static_voters}\n")),
        }
        for (k, v) in &self.properties {
            text.push_str(&format!("{k}={v}\n"));
        }
        std::fs::write(&config, text).expect("write server.properties");
        config
    }

    /// The [`Node`] of a formatted `config` (not running).
    fn new_node(&self, id: i32, config: PathBuf, ports: NodePorts, directory_id: String) -> Node {
        let node_dir = config.parent().expect("node dir").to_owned();
        Node {
            id,
            log_dir: node_dir.join("metadata"),
            output: node_dir.join("output.log"),
            config,
            port: ports.controller,
            http_port: if self.listeners.default_http {
                0
            } else {
                ports.http
            },
            second_port: self.listeners.second.as_ref().map(|_| ports.second),
            directory_id,
            child: None,
        }
    }

    /// `flags` and, if the builder set one, `--release-version`.
    fn with_release_version(&self, mut flags: Vec<String>) -> Vec<String> {
        if let Some(version) = &self.release_version {
            flags.extend(["--release-version".to_owned(), version.clone()]);
        }
        flags
    }

    /// A directory id no format of this quorum has used yet.
    fn fresh_directory_id(&mut self, id: i32) -> String {
        self.formats += 1;
        kafka_uuid_string(Uuid::from_u128(
            0x5eed_0000_0000_0000_0000_0000_0000_0000 + (self.formats << 32) + id as u128,
        ))
    }

    /// Formats a new node (the next id) with `--no-initial-controllers`
    /// and a fresh directory id, its `controller.quorum.bootstrap.servers`
    /// naming every node so far (KIP-853: it fetches as an observer until a
    /// voter change adds it). Starts nothing; returns its id. In a static
    /// quorum (upgraded to kraft.version 1 first) the new node is configured
    /// with bootstrap servers too, as Kafka's docs say for the upgrade.
    pub fn add_observer(&mut self) -> i32 {
        let id = self.nodes.iter().map(|n| n.id).max().unwrap_or(0) + 1;
        let ports = NodePorts::allocate(1)[0];
        let bootstrap = self
            .nodes
            .iter()
            .map(Node::address)
            .collect::<Vec<_>>()
            .join(",");
        let config = self.write_config_as(id, ports, &bootstrap, "", Mode::Dynamic);
        let directory_id = self.fresh_directory_id(id);
        let flags = self.with_release_version(vec!["--no-initial-controllers".to_owned()]);
        format_node(id, &config, &directory_id, &flags);
        let node = self.new_node(id, config, ports, directory_id);
        self.nodes.push(node);
        id
    }

    /// Replaces stopped node `id`'s disk: deletes its metadata log dir and
    /// formats it again with `--no-initial-controllers` and a fresh
    /// directory id (same config, ports and output file); returns the new
    /// directory id.
    pub fn replace_disk(&mut self, id: i32) -> String {
        assert!(!self.node(id).is_running(), "stop node {id} first");
        let directory_id = self.fresh_directory_id(id);
        let flags = self.with_release_version(vec!["--no-initial-controllers".to_owned()]);
        let node = self.node(id);
        std::fs::remove_dir_all(&node.log_dir).expect("wipe the metadata log dir");
        format_node(id, &node.config, &directory_id, &flags);
        self.node_mut(id).directory_id = directory_id.clone();
        directory_id
    }
}
