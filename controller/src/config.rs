//! The controller's configuration: a Kafka-style `server.properties` file.
//!
//! Owns parsing and validating the keys Apache Kafka defines for a KRaft
//! controller (`node.id`, `listeners`, `controller.quorum.*`, `metadata.log.*`,
//! …) and the few of our own (`kraftwerk.*`). Unknown keys are kept and
//! reported so the caller can warn about them; a bad value is an error naming
//! the key and the value. It must not open sockets or files other than the
//! properties file itself.
//!
//! Defaults are Kafka 4.1's (`QuorumConfig`, `KRaftConfigs`, `SocketServerConfigs`).

pub mod limits;
mod listeners;
pub mod principal;
pub mod security;

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::{Path, PathBuf},
};

/// Errors loading or validating a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The properties file could not be read or parsed.
    #[error("reading {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A required key is absent.
    #[error("missing required property {key}")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A key has a value that cannot be used.
    #[error("invalid value {value:?} for {key}: {reason}")]
    Invalid {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// Why it is refused.
        reason: String,
    },
}

/// Result alias of this module.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// A named endpoint, as in `listeners` and `advertised.listeners`
/// (`NAME://HOST:PORT`), and in KIP-853 Voters records.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// Listener name, e.g. `CONTROLLER`.
    pub name: String,
    /// Host name or IP; empty means all interfaces for a listener.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.name, self.host, self.port)
        }
    }
}

impl Endpoint {
    /// Parses `NAME://HOST:PORT` (IPv6 hosts in brackets).
    ///
    /// Errors: a message naming what is missing; the caller adds the key.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        let (name, rest) = s
            .split_once("://")
            .ok_or_else(|| format!("{s:?} is not NAME://HOST:PORT"))?;
        if name.is_empty() {
            return Err(format!("{s:?} has an empty listener name"));
        }
        let (host, port) = parse_host_port(rest)?;
        Ok(Self {
            name: name.to_owned(),
            host,
            port,
        })
    }

    /// `HOST:PORT` of this endpoint, suitable to connect to.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Parses `HOST:PORT` (IPv6 in brackets); the host may be empty.
pub fn parse_host_port(s: &str) -> std::result::Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, port) = rest
            .split_once("]:")
            .ok_or_else(|| format!("{s:?} is not [HOST]:PORT"))?;
        (host, port)
    } else {
        s.rsplit_once(':')
            .ok_or_else(|| format!("{s:?} is not HOST:PORT"))?
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{s:?} has an invalid port {port:?}"))?;
    Ok((host.to_owned(), port))
}

/// One entry of the static `controller.quorum.voters` (`ID@HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticVoter {
    /// The voter's node id.
    pub id: i32,
    /// Host to reach it at.
    pub host: String,
    /// Port to reach it at.
    pub port: u16,
}

/// Raft timings (Kafka's `QuorumConfig`), all in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumTimings {
    /// `controller.quorum.election.timeout.ms` (1000): randomised in [T, 2T).
    pub election_timeout_ms: u64,
    /// `controller.quorum.election.backoff.max.ms` (1000).
    pub election_backoff_max_ms: u64,
    /// `controller.quorum.fetch.timeout.ms` (2000).
    pub fetch_timeout_ms: u64,
    /// `controller.quorum.request.timeout.ms` (2000).
    pub request_timeout_ms: u64,
    /// `controller.quorum.retry.backoff.ms` (20).
    pub retry_backoff_ms: u64,
    /// `controller.quorum.append.linger.ms` (25).
    pub append_linger_ms: u64,
}

impl QuorumTimings {
    /// Kafka's bounds for these `int` configs: every one at most
    /// `i32::MAX` ms, and the election and fetch timeouts above 0.
    ///
    /// Errors: [`ConfigError::Invalid`] naming the first key out of bounds.
    fn validate(&self) -> Result<()> {
        let timings = [
            (
                "controller.quorum.election.timeout.ms",
                self.election_timeout_ms,
                1,
            ),
            (
                "controller.quorum.election.backoff.max.ms",
                self.election_backoff_max_ms,
                0,
            ),
            (
                "controller.quorum.fetch.timeout.ms",
                self.fetch_timeout_ms,
                1,
            ),
            (
                "controller.quorum.request.timeout.ms",
                self.request_timeout_ms,
                0,
            ),
            (
                "controller.quorum.retry.backoff.ms",
                self.retry_backoff_ms,
                0,
            ),
            (
                "controller.quorum.append.linger.ms",
                self.append_linger_ms,
                0,
            ),
        ];
        let max = i32::MAX as u64;
        for (key, value, min) in timings {
            if value < min || value > max {
                return Err(invalid(
                    key,
                    &value.to_string(),
                    format!("expected {min} to {max} ms"),
                ));
            }
        }
        Ok(())
    }
}

impl Default for QuorumTimings {
    fn default() -> Self {
        Self {
            election_timeout_ms: 1000,
            election_backoff_max_ms: 1000,
            fetch_timeout_ms: 2000,
            request_timeout_ms: 2000,
            retry_backoff_ms: 20,
            append_linger_ms: 25,
        }
    }
}

/// A validated controller configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    /// `node.id`.
    pub node_id: i32,
    /// `listeners`.
    pub listeners: Vec<Endpoint>,
    /// `advertised.listeners` (defaults to `listeners`).
    pub advertised_listeners: Vec<Endpoint>,
    /// `controller.listener.names`: every one is bound and served; the
    /// first is the Raft listener (the one voters dial and the voter set
    /// names), as Kafka's `KRaftConfigs`.
    pub controller_listener_names: Vec<String>,
    /// `controller.quorum.bootstrap.servers` (dynamic quorum, KIP-853).
    pub bootstrap_servers: Vec<(String, u16)>,
    /// `controller.quorum.voters` (static quorum).
    pub static_voters: Vec<StaticVoter>,
    /// `metadata.log.dir` (or the first of `log.dirs`).
    pub metadata_log_dir: PathBuf,
    /// `controller.quorum.*` timings.
    pub timings: QuorumTimings,
    /// `socket.request.max.bytes` (104857600): larger frames close the connection.
    pub socket_request_max_bytes: usize,
    /// `metadata.log.segment.bytes` (1073741824).
    pub segment_bytes: u64,
    /// `metadata.log.max.record.bytes.between.snapshots` (20971520).
    pub max_bytes_between_snapshots: u64,
    /// `metadata.log.max.snapshot.interval.ms` (3600000).
    pub max_snapshot_interval_ms: u64,
    /// `metadata.max.retention.bytes` (104857600).
    pub max_retention_bytes: u64,
    /// `metadata.max.retention.ms` (604800000).
    pub max_retention_ms: u64,
    /// `metadata.max.idle.interval.ms` (500): a no-op record when idle this long.
    pub max_idle_interval_ms: u64,
    /// `broker.session.timeout.ms` (9000): the active controller fences a
    /// broker it has not heard from for this long (Kafka's `KRaftConfigs`).
    pub broker_session_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms` (2000): how often brokers heartbeat (a
    /// broker setting in Kafka; kept here so that a shared file parses and
    /// the session timeout can be checked against it).
    pub broker_heartbeat_interval_ms: u64,
    /// `num.partitions` (1) and `default.replication.factor` (1): what a
    /// CreateTopics asking -1 gets.
    pub replication: crate::quorum_controller::replication_control::ReplicationConfig,
    /// `auto.leader.rebalance.enable` (true).
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (300), in ms.
    pub leader_imbalance_check_interval_ms: u64,
    /// `kraftwerk.http.listener` (`IP:PORT`, default [`DEFAULT_HTTP_LISTENER`]):
    /// where `/healthz`, `/readyz` and `/metrics` are served. Port 0: a free
    /// port the OS picks, written to the log at start.
    pub http_listener: SocketAddr,
    /// The security protocol and TLS settings of each listener, by name
    /// (`listener.security.protocol.map`, `ssl.*`; see [`security`]).
    pub security: BTreeMap<String, security::ListenerSecurity>,
    /// `authorizer.class.name`, `super.users`, `allow.everyone.if.no.acl.found`.
    pub authorizer: security::AuthorizerSettings,
    /// `ssl.principal.mapping.rules` (`DEFAULT`).
    pub principal_mapper: principal::PrincipalMapper,
    /// `max.connections*`, `connections.max.idle.ms`, … (see [`limits`]).
    pub limits: limits::ConnectionLimits,
    /// Keys this controller does not know, in file order; the caller warns.
    pub unknown_keys: Vec<String>,
}

/// The default of `kraftwerk.http.listener`: loopback only, on a port the
/// OS picks (logged at start). Several controllers with Kafka's usual
/// configuration (which knows no such key) then run on one host, and
/// nothing is exposed beyond it unless asked for; a pod sets
/// `0.0.0.0:9100` for its probes (docs/decisions.md).
pub const DEFAULT_HTTP_LISTENER: &str = "127.0.0.1:0";

const KNOWN_IGNORED: &[&str] = &[
    // Kafka keys that are valid in a controller's file but change nothing here.
    "log.dirs",
    "inter.broker.listener.name",
    "num.network.threads",
    "num.io.threads",
    "controller.quorum.auto.join.enable",
];

struct Props(BTreeMap<String, String>);

impl Props {
    fn take(&mut self, key: &'static str) -> Option<String> {
        self.0.remove(key).map(|v| v.trim().to_owned())
    }
    fn required(&mut self, key: &'static str) -> Result<String> {
        self.take(key)
            .filter(|v| !v.is_empty())
            .ok_or(ConfigError::Missing { key })
    }
    fn number<T: std::str::FromStr>(&mut self, key: &'static str, default: T) -> Result<T> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| invalid(key, &v, "not a valid number")),
        }
    }
}

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.into(),
    }
}

fn list(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl ControllerConfig {
    /// Reads and validates a properties file.
    ///
    /// Errors: [`ConfigError::Read`] when the file cannot be read or parsed,
    /// otherwise as [`Self::from_properties`].
    pub fn load(path: &Path) -> Result<Self> {
        Self::load_with_overrides(path, &[])
    }

    /// Reads a properties file, then applies `overrides` (`key=value`, as
    /// Kafka's `kafka-server-start --override`; later ones win), then
    /// validates.
    ///
    /// Errors: as [`Self::load`]; [`ConfigError::Invalid`] for an override
    /// without `=`.
    pub fn load_with_overrides(path: &Path, overrides: &[String]) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| ConfigError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let map = java_properties::read(std::io::BufReader::new(file)).map_err(|e| {
            ConfigError::Read {
                path: path.to_owned(),
                reason: e.to_string(),
            }
        })?;
        let mut map: BTreeMap<String, String> = map.into_iter().collect();
        for o in overrides {
            let (key, value) = o
                .split_once('=')
                .ok_or_else(|| invalid("--override", o, "expected key=value"))?;
            map.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        Self::from_properties(map)
    }

    /// Validates a map of properties.
    ///
    /// Errors: [`ConfigError::Missing`] for `node.id`, `listeners`,
    /// `controller.listener.names` or the log dir; [`ConfigError::Invalid`] for
    /// any unparsable value, `process.roles` other than `controller`, a
    /// controller listener name absent from `listeners`, a listener that is
    /// not a controller listener, two listeners on one port, or both
    /// `controller.quorum.voters` and `controller.quorum.bootstrap.servers`
    /// missing.
    pub fn from_properties(map: BTreeMap<String, String>) -> Result<Self> {
        let mut p = Props(map);
        let node_id_raw = p.required("node.id")?;
        let node_id: i32 = node_id_raw
            .parse()
            .ok()
            .filter(|id| *id >= 0)
            .ok_or_else(|| invalid("node.id", &node_id_raw, "expected a non-negative integer"))?;
        if let Some(roles) = p.take("process.roles")
            && roles != "controller"
        {
            return Err(invalid(
                "process.roles",
                &roles,
                "this program is a controller only: use process.roles=controller",
            ));
        }
        let endpoints = |key: &'static str, value: &str| -> Result<Vec<Endpoint>> {
            list(value)
                .map(|s| Endpoint::parse(s).map_err(|reason| invalid(key, value, reason)))
                .collect()
        };
        let listeners_raw = p.required("listeners")?;
        let listeners = endpoints("listeners", &listeners_raw)?;
        let security = security::parse_listener_security(&mut p.0, &listeners)?;
        let authorizer = security::parse_authorizer(&mut p.0)?;
        let limits = limits::parse_limits(&mut p.0)?;
        let principal_mapper = match p.take(principal::KEY) {
            Some(rules) if !rules.is_empty() => principal::PrincipalMapper::parse(&rules)?,
            _ => principal::PrincipalMapper::default(),
        };
        let advertised_listeners = match p.take("advertised.listeners") {
            Some(v) if !v.is_empty() => endpoints("advertised.listeners", &v)?,
            _ => listeners.clone(),
        };
        let names_raw = p.required("controller.listener.names")?;
        let controller_listener_names: Vec<String> = list(&names_raw).map(str::to_owned).collect();
        listeners::check(
            &listeners_raw,
            &listeners,
            &names_raw,
            &controller_listener_names,
        )?;
        let bootstrap_servers = match p.take("controller.quorum.bootstrap.servers") {
            Some(v) => list(&v)
                .map(|s| {
                    parse_host_port(s)
                        .map_err(|r| invalid("controller.quorum.bootstrap.servers", &v, r))
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        let static_voters = match p.take("controller.quorum.voters") {
            Some(v) => list(&v)
                .map(|s| {
                    parse_static_voter(s).map_err(|r| invalid("controller.quorum.voters", &v, r))
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        if bootstrap_servers.is_empty() && static_voters.is_empty() {
            return Err(invalid(
                "controller.quorum.bootstrap.servers",
                "",
                "set controller.quorum.bootstrap.servers (dynamic quorum) or controller.quorum.voters (static quorum)",
            ));
        }
        let log_dirs = p.0.get("log.dirs").cloned();
        let metadata_log_dir = match p.take("metadata.log.dir") {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => log_dirs
                .as_deref()
                .and_then(|v| list(v).next().map(PathBuf::from))
                .ok_or(ConfigError::Missing {
                    key: "metadata.log.dir",
                })?,
        };
        let d = QuorumTimings::default();
        let timings = QuorumTimings {
            election_timeout_ms: p.number(
                "controller.quorum.election.timeout.ms",
                d.election_timeout_ms,
            )?,
            election_backoff_max_ms: p.number(
                "controller.quorum.election.backoff.max.ms",
                d.election_backoff_max_ms,
            )?,
            fetch_timeout_ms: p.number("controller.quorum.fetch.timeout.ms", d.fetch_timeout_ms)?,
            request_timeout_ms: p
                .number("controller.quorum.request.timeout.ms", d.request_timeout_ms)?,
            retry_backoff_ms: p.number("controller.quorum.retry.backoff.ms", d.retry_backoff_ms)?,
            append_linger_ms: p.number("controller.quorum.append.linger.ms", d.append_linger_ms)?,
        };
        timings.validate()?;
        let http_raw = p
            .take("kraftwerk.http.listener")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_HTTP_LISTENER.to_owned());
        let http_listener = http_raw
            .parse()
            .map_err(|_| invalid("kraftwerk.http.listener", &http_raw, "expected IP:PORT"))?;
        let config = ControllerConfig {
            node_id,
            listeners,
            advertised_listeners,
            controller_listener_names,
            bootstrap_servers,
            static_voters,
            metadata_log_dir,
            timings,
            socket_request_max_bytes: p.number("socket.request.max.bytes", 104_857_600)?,
            segment_bytes: p.number("metadata.log.segment.bytes", 1_073_741_824)?,
            max_bytes_between_snapshots: p.number(
                "metadata.log.max.record.bytes.between.snapshots",
                20_971_520,
            )?,
            max_snapshot_interval_ms: p
                .number("metadata.log.max.snapshot.interval.ms", 3_600_000)?,
            max_retention_bytes: p.number("metadata.max.retention.bytes", 104_857_600)?,
            max_retention_ms: p.number("metadata.max.retention.ms", 604_800_000)?,
            max_idle_interval_ms: p.number("metadata.max.idle.interval.ms", 500)?,
            broker_session_timeout_ms: p.number("broker.session.timeout.ms", 9_000)?,
            broker_heartbeat_interval_ms: p.number("broker.heartbeat.interval.ms", 2_000)?,
            replication: crate::quorum_controller::replication_control::ReplicationConfig {
                default_num_partitions: p.number("num.partitions", 1)?,
                default_replication_factor: p.number("default.replication.factor", 1)?,
            },
            auto_leader_rebalance_enable: p.number("auto.leader.rebalance.enable", true)?,
            leader_imbalance_check_interval_ms: p
                .number::<u64>("leader.imbalance.check.interval.seconds", 300)?
                .saturating_mul(1_000),
            http_listener,
            security,
            authorizer,
            principal_mapper,
            limits,
            unknown_keys: p
                .0
                .into_keys()
                .filter(|k| !KNOWN_IGNORED.contains(&k.as_str()))
                .collect(),
        };
        Ok(config)
    }

    /// The Raft listener (the first controller listener name): the one
    /// voters dial, whose security the peer connections use.
    pub fn controller_listener(&self) -> &Endpoint {
        self.controller_listeners()[0]
    }

    /// Every controller listener, in `controller.listener.names` order (the
    /// Raft listener first); each is bound and served, as Kafka's
    /// `SocketServer` starts an acceptor per listener.
    pub fn controller_listeners(&self) -> Vec<&Endpoint> {
        self.controller_listener_names
            .iter()
            .map(|name| {
                self.listeners
                    .iter()
                    .find(|l| &l.name == name)
                    .expect("validated: every controller listener name is in listeners")
            })
            .collect()
    }

    /// The security of listener `name` (PLAINTEXT when not mapped).
    pub fn listener_security(&self, name: &str) -> &security::ListenerSecurity {
        self.security
            .get(name)
            .expect("validated: every listener has its security")
    }

    /// The security of the Raft listener (PLAINTEXT when not mapped).
    pub fn controller_security(&self) -> &security::ListenerSecurity {
        self.listener_security(&self.controller_listener().name)
    }

    /// The endpoints other nodes reach this node at: the advertised listeners
    /// of the controller listener names, in that order.
    pub fn advertised_controller_endpoints(&self) -> Vec<Endpoint> {
        self.controller_listener_names
            .iter()
            .filter_map(|name| {
                self.advertised_listeners
                    .iter()
                    .find(|l| &l.name == name)
                    .or_else(|| self.listeners.iter().find(|l| &l.name == name))
                    .cloned()
            })
            .collect()
    }
}

/// Parses one `ID@HOST:PORT` entry of `controller.quorum.voters`.
pub fn parse_static_voter(s: &str) -> std::result::Result<StaticVoter, String> {
    let (id, address) = s
        .split_once('@')
        .ok_or_else(|| format!("{s:?} is not ID@HOST:PORT"))?;
    let id: i32 = id
        .parse()
        .ok()
        .filter(|id| *id >= 0)
        .ok_or_else(|| format!("{s:?} has an invalid node id {id:?}"))?;
    let (host, port) = parse_host_port(address)?;
    Ok(StaticVoter { id, host, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> BTreeMap<String, String> {
        java_properties::read(text.as_bytes())
            .expect("test properties parse")
            .into_iter()
            .collect()
    }

    const MINIMAL: &str = "node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://0.0.0.0:9093\n\
        advertised.listeners=CONTROLLER://kq-1.kq:9093\ncontroller.listener.names=CONTROLLER\n\
        controller.quorum.bootstrap.servers=kq-0.kq:9093,kq-1.kq:9093\nmetadata.log.dir=/var/lib/kraft\n";

    #[test]
    fn a_minimal_dynamic_quorum_config_gets_kafka_defaults() {
        let c = ControllerConfig::from_properties(props(MINIMAL)).expect("valid");
        assert_eq!(c.node_id, 1);
        assert_eq!(c.timings, QuorumTimings::default());
        assert_eq!(
            c.bootstrap_servers,
            vec![("kq-0.kq".into(), 9093), ("kq-1.kq".into(), 9093)]
        );
        assert_eq!(c.controller_listener().port, 9093);
        assert_eq!(
            c.advertised_controller_endpoints()[0].address(),
            "kq-1.kq:9093"
        );
        assert_eq!(c.socket_request_max_bytes, 104_857_600);
        assert!(c.unknown_keys.is_empty());
    }

    #[test]
    fn broker_session_keys_have_kafkas_names_and_defaults() {
        let c = ControllerConfig::from_properties(props(MINIMAL)).expect("valid");
        assert_eq!(
            (c.broker_session_timeout_ms, c.broker_heartbeat_interval_ms),
            (9_000, 2_000)
        );
        let c = ControllerConfig::from_properties(props(&format!(
            "{MINIMAL}broker.session.timeout.ms=18000\nbroker.heartbeat.interval.ms=3000\n"
        )))
        .expect("valid");
        assert_eq!(
            (c.broker_session_timeout_ms, c.broker_heartbeat_interval_ms),
            (18_000, 3_000)
        );
        assert!(c.unknown_keys.is_empty(), "{:?}", c.unknown_keys);
    }

    #[test]
    fn unknown_keys_are_reported_not_fatal() {
        let c = ControllerConfig::from_properties(props(&format!("{MINIMAL}foo.bar=1\n")))
            .expect("valid");
        assert_eq!(c.unknown_keys, vec!["foo.bar".to_owned()]);
    }

    #[test]
    fn a_bad_value_names_the_key_and_the_value() {
        let err = ControllerConfig::from_properties(props(&format!(
            "{MINIMAL}controller.quorum.fetch.timeout.ms=soon\n"
        )))
        .expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "invalid value \"soon\" for controller.quorum.fetch.timeout.ms: not a valid number"
        );
    }

    #[test]
    fn a_quorum_timing_out_of_kafkas_int_range_names_its_own_key() {
        for (line, expected) in [
            (
                "controller.quorum.fetch.timeout.ms=0",
                "invalid value \"0\" for controller.quorum.fetch.timeout.ms: expected 1 to 2147483647 ms",
            ),
            (
                "controller.quorum.fetch.timeout.ms=2147483648",
                "invalid value \"2147483648\" for controller.quorum.fetch.timeout.ms: expected 1 to 2147483647 ms",
            ),
            (
                "controller.quorum.election.timeout.ms=0",
                "invalid value \"0\" for controller.quorum.election.timeout.ms: expected 1 to 2147483647 ms",
            ),
            (
                "controller.quorum.append.linger.ms=99999999999",
                "invalid value \"99999999999\" for controller.quorum.append.linger.ms: expected 0 to 2147483647 ms",
            ),
        ] {
            let err = ControllerConfig::from_properties(props(&format!("{MINIMAL}{line}\n")))
                .expect_err(line);
            assert_eq!(err.to_string(), expected);
        }
        let c = ControllerConfig::from_properties(props(&format!(
            "{MINIMAL}controller.quorum.fetch.timeout.ms=2147483647\n"
        )))
        .expect("Kafka's largest int is valid");
        assert_eq!(c.timings.fetch_timeout_ms, 2_147_483_647);
    }

    #[test]
    fn a_broker_role_is_refused() {
        let err = ControllerConfig::from_properties(props(&MINIMAL.replace(
            "process.roles=controller",
            "process.roles=broker,controller",
        )))
        .expect_err("invalid");
        assert!(err.to_string().contains("process.roles"), "{err}");
    }

    #[test]
    fn static_voters_parse_ids_and_addresses() {
        let text = MINIMAL.replace(
            "controller.quorum.bootstrap.servers=kq-0.kq:9093,kq-1.kq:9093",
            "controller.quorum.voters=0@a:9093,1@[::1]:9094",
        );
        let c = ControllerConfig::from_properties(props(&text)).expect("valid");
        assert_eq!(
            c.static_voters,
            vec![
                StaticVoter {
                    id: 0,
                    host: "a".into(),
                    port: 9093
                },
                StaticVoter {
                    id: 1,
                    host: "::1".into(),
                    port: 9094
                }
            ]
        );
    }

    #[test]
    fn a_controller_listener_missing_from_listeners_is_refused() {
        let err = ControllerConfig::from_properties(props(&MINIMAL.replace(
            "controller.listener.names=CONTROLLER",
            "controller.listener.names=OTHER",
        )))
        .expect_err("invalid");
        assert!(err.to_string().contains("OTHER"), "{err}");
    }

    #[test]
    fn the_http_endpoint_defaults_to_loopback_on_a_port_the_os_picks() {
        let c = ControllerConfig::from_properties(props(MINIMAL)).expect("valid");
        assert_eq!(c.http_listener, "127.0.0.1:0".parse().expect("an address"));
        assert!(!c.http_listener.ip().is_unspecified());
        let c = ControllerConfig::from_properties(props(&format!(
            "{MINIMAL}kraftwerk.http.listener=0.0.0.0:9100\n"
        )))
        .expect("valid");
        assert_eq!(c.http_listener, "0.0.0.0:9100".parse().expect("an address"));
        let err = ControllerConfig::from_properties(props(&format!(
            "{MINIMAL}kraftwerk.http.listener=localhost:9100\n"
        )))
        .expect_err("not an IP");
        assert_eq!(
            err.to_string(),
            "invalid value \"localhost:9100\" for kraftwerk.http.listener: expected IP:PORT"
        );
    }

    #[test]
    fn every_controller_listener_is_listed_the_first_being_the_raft_listener() {
        let c = ControllerConfig::from_properties(props(
            &MINIMAL
                .replace(
                    "listeners=CONTROLLER://0.0.0.0:9093\n",
                    "listeners=CONTROLLER://0.0.0.0:9093,SECURE://0.0.0.0:9094\n\
                     listener.security.protocol.map=CONTROLLER:PLAINTEXT,SECURE:PLAINTEXT\n",
                )
                .replace(
                    "controller.listener.names=CONTROLLER",
                    "controller.listener.names=CONTROLLER,SECURE",
                ),
        ))
        .expect("valid");
        let ports: Vec<u16> = c.controller_listeners().iter().map(|l| l.port).collect();
        assert_eq!(ports, vec![9093, 9094]);
        assert_eq!(c.controller_listener().name, "CONTROLLER");
    }

    #[test]
    fn overrides_replace_file_values_and_must_be_key_value() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("server.properties");
        std::fs::write(&path, MINIMAL).expect("write");
        let c = ControllerConfig::load_with_overrides(&path, &["node.id=7".into()]).expect("valid");
        assert_eq!(c.node_id, 7);
        let err =
            ControllerConfig::load_with_overrides(&path, &["node.id".into()]).expect_err("invalid");
        assert!(err.to_string().contains("--override"), "{err}");
    }
}
