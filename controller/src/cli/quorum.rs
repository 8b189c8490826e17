//! `kraft-controller quorum`: describe the metadata quorum and change its
//! voters, in the manner of Kafka's `kafka-metadata-quorum` (its
//! `MetadataQuorumCommand` output format), on top of [`crate::admin`].
//!
//! Owns argument parsing, output formatting and exit codes: 0 success, 1 an
//! error, 3 a retriable error (the message then says "retriable"); errors are
//! one line on stderr. It must not speak the protocol itself.

use std::{collections::HashMap, path::PathBuf, process::ExitCode, time::Duration};

use clap::{ArgGroup, Args, Subcommand};
use kraft_common::{Endpoint, kafka_uuid};
use uuid::Uuid;

use crate::admin::{AdminClient, AdminError, QuorumInfo, ReplicaInfo, parse_kafka_uuid};

/// Exit code of a retriable failure (try again later).
pub const EXIT_RETRIABLE: u8 = 3;

/// `kraft-controller quorum`.
#[derive(Debug, Args)]
pub struct QuorumArgs {
    /// The controllers to start from, HOST:PORT or a comma-separated list
    /// of them tried in order (Kafka's `--bootstrap-controller`); requests
    /// that need the active controller are sent on to it.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]")]
    bootstrap_controller: String,
    /// Timeout of the connect and of each request, ms (Kafka admin's
    /// request.timeout.ms); also AddRaftVoter's timeout.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u32,
    /// A client properties file, as Kafka's tools take it:
    /// `security.protocol=SSL` with `ssl.truststore.*` and, for mTLS,
    /// `ssl.keystore.*` (PEM).
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
    #[command(subcommand)]
    command: QuorumCommand,
}

#[derive(Debug, Subcommand)]
enum QuorumCommand {
    /// Describe the metadata quorum: `--status` (summary) or `--replication`.
    #[command(group(ArgGroup::new("what").required(true).args(["status", "replication"])))]
    Describe {
        /// A short summary of the quorum status.
        #[arg(long)]
        status: bool,
        /// Detailed information about the status of replication.
        #[arg(long)]
        replication: bool,
        /// With --replication: timestamps as "N ms ago".
        #[arg(long, requires = "replication")]
        human_readable: bool,
    },
    /// Add a voter (AddRaftVoter, KIP-853); the node must already fetch as an
    /// observer and be caught up.
    #[command(group(ArgGroup::new("who").required(true).args(["node_id", "config"])))]
    AddVoter {
        /// Node id of the new voter.
        #[arg(long, requires_all = ["directory_id", "endpoint"])]
        node_id: Option<i32>,
        /// Its directory id (directory.id in its meta.properties).
        #[arg(long, value_name = "UUID")]
        directory_id: Option<String>,
        /// Its controller endpoint(s), NAME://HOST:PORT; repeat for several.
        #[arg(long, value_name = "NAME://HOST:PORT")]
        endpoint: Vec<String>,
        /// Instead of the three above: the joining node's server.properties
        /// (node.id, controller.listener.names, advertised.listeners or
        /// listeners, metadata.log.dir whose meta.properties has directory.id).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["node_id", "directory_id", "endpoint"])]
        config: Option<PathBuf>,
    },
    /// Remove a voter (RemoveRaftVoter, KIP-853).
    RemoveVoter {
        /// Node id of the voter.
        #[arg(long)]
        node_id: i32,
        /// Its directory id.
        #[arg(long, value_name = "UUID")]
        directory_id: String,
        /// Also unregister the controller once it is removed from the voters
        /// (UnregisterController, KIP-1312; Kafka 4.4's
        /// `kafka-metadata-quorum remove-controller --unregister`): its
        /// registration would otherwise block `metadata.version` upgrades.
        #[arg(long)]
        unregister: bool,
    },
    /// Unregister a controller (UnregisterController, KIP-1312, Kafka 4.4;
    /// the shape of `kafka-cluster unregister-controller`): removes the
    /// KIP-919 registration of a controller that is no longer a voter.
    UnregisterController {
        /// The ID of the controller to unregister.
        #[arg(long = "id", short = 'i')]
        id: i32,
    },
}

/// Kafka 4.4's `ClusterTool` line for a cluster without api 94.
const UNREGISTRATION_UNSUPPORTED: &str =
    "The target cluster does not support the controller unregistration API.";

/// Errors of the admin commands (`quorum`, `features`).
#[derive(Debug, thiserror::Error)]
pub(super) enum AdminCliError {
    /// The request failed or was refused.
    #[error("{0}")]
    Admin(#[from] AdminError),
    /// Bad flags or a bad `--command-config`.
    #[error("{0}")]
    Usage(String),
    /// The tokio runtime did not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// `unregister-controller` on a cluster without api 94 or below
    /// `metadata.version` 4.4-IV2 (Kafka 4.4's `ClusterTool` line, then the
    /// cause).
    #[error("{UNREGISTRATION_UNSUPPORTED} ({0})")]
    Unsupported(AdminError),
    /// `remove-voter --unregister`: the voter was removed, its
    /// unregistration failed (Kafka 4.4's `MetadataQuorumCommand` message).
    #[error(
        "Failed to unregister controller {id}: {source}. To unregister the controller from the cluster, run `kraft-controller quorum unregister-controller --id {id}`."
    )]
    Unregister {
        /// The controller id.
        id: i32,
        /// Why.
        source: AdminError,
    },
}

/// Runs `quorum` and maps the outcome to an exit code (0, 1, or
/// [`EXIT_RETRIABLE`]).
pub fn run(args: QuorumArgs) -> ExitCode {
    run_admin(execute(args))
}

/// Runs an admin command on a current-thread runtime: prints its output and
/// exits 0, or prints the error and exits [`EXIT_RETRIABLE`] when retrying
/// may succeed, 1 otherwise.
pub(super) fn run_admin(
    command: impl std::future::Future<Output = Result<String, AdminCliError>>,
) -> ExitCode {
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(AdminCliError::Runtime)
        .and_then(|rt| rt.block_on(command));
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(AdminCliError::Admin(e)) if e.is_retriable() => {
            eprintln!("error (retriable): {e}");
            ExitCode::from(EXIT_RETRIABLE)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(args: QuorumArgs) -> Result<String, AdminCliError> {
    let timeout = Duration::from_millis(u64::from(args.timeout_ms));
    let tls = match &args.command_config {
        Some(path) => super::command_config::load(path).map_err(AdminCliError::Usage)?,
        None => None,
    };
    match args.command {
        QuorumCommand::Describe {
            status,
            replication: _,
            human_readable,
        } => {
            let mut admin =
                AdminClient::connect_with_tls(&args.bootstrap_controller, timeout, tls.clone())
                    .await?;
            if status {
                let cluster = admin.describe_cluster().await?;
                let quorum = admin.describe_quorum().await?;
                Ok(format_status(&cluster.cluster_id, &quorum))
            } else {
                let quorum = admin.describe_quorum().await?;
                let now_ms = now_ms();
                Ok(format_replication(
                    &quorum,
                    human_readable.then_some(now_ms),
                ))
            }
        }
        QuorumCommand::AddVoter {
            node_id,
            directory_id,
            endpoint,
            config,
        } => {
            let (node_id, directory_id, endpoints) = match config {
                Some(path) => voter_from_config(&path)?,
                None => {
                    let node_id = node_id
                        .ok_or_else(|| AdminCliError::Usage("--node-id is required".into()))?;
                    let dir = directory_id
                        .ok_or_else(|| AdminCliError::Usage("--directory-id is required".into()))?;
                    let dir = parse_kafka_uuid(&dir).map_err(AdminCliError::Usage)?;
                    let endpoints = endpoint
                        .iter()
                        .map(|e| e.parse::<Endpoint>())
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| AdminCliError::Usage(e.to_string()))?;
                    (node_id, dir, endpoints)
                }
            };
            if node_id < 0 {
                return Err(AdminCliError::Usage(format!(
                    "invalid negative node id {node_id}"
                )));
            }
            if endpoints.is_empty() {
                return Err(AdminCliError::Usage(
                    "at least one --endpoint is required".into(),
                ));
            }
            let mut admin =
                AdminClient::connect_with_tls(&args.bootstrap_controller, timeout, tls.clone())
                    .await?;
            let timeout_ms = i32::try_from(args.timeout_ms).unwrap_or(i32::MAX);
            admin
                .add_raft_voter(node_id, directory_id, &endpoints, timeout_ms)
                .await?;
            let list: Vec<String> = endpoints.iter().map(ToString::to_string).collect();
            Ok(format!(
                "Added controller {node_id} with directory id {} and endpoints: {}\n",
                kafka_uuid::to_string(directory_id),
                list.join(", ")
            ))
        }
        QuorumCommand::RemoveVoter {
            node_id,
            directory_id,
            unregister,
        } => {
            if node_id < 0 {
                return Err(AdminCliError::Usage(format!(
                    "invalid negative --node-id {node_id}"
                )));
            }
            let dir = parse_kafka_uuid(&directory_id).map_err(AdminCliError::Usage)?;
            let mut admin =
                AdminClient::connect_with_tls(&args.bootstrap_controller, timeout, tls.clone())
                    .await?;
            admin.remove_raft_voter(node_id, dir).await?;
            let removed = format!(
                "Removed KRaft controller {node_id} with directory id {}\n",
                kafka_uuid::to_string(dir)
            );
            if !unregister {
                return Ok(removed);
            }
            print!("{removed}");
            admin
                .unregister_controller(node_id)
                .await
                .map_err(|source| AdminCliError::Unregister {
                    id: node_id,
                    source,
                })?;
            Ok(format!("Unregistered KRaft controller {node_id}\n"))
        }
        QuorumCommand::UnregisterController { id } => {
            let mut admin =
                AdminClient::connect_with_tls(&args.bootstrap_controller, timeout, tls.clone())
                    .await?;
            match admin.unregister_controller(id).await {
                Ok(()) => Ok(format!("Controller {id} is no longer registered.\n")),
                // Kafka's ClusterTool prints its line for any
                // UnsupportedVersionException (no api 94, or metadata.version
                // below 4.4-IV2); the cause follows it here.
                Err(e) if e.code() == Some(kraft_common::errors::UNSUPPORTED_VERSION) => {
                    Err(AdminCliError::Unsupported(e))
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The leader's replica state: from the voters, else the observers (a leader
/// being removed), else a stand-in at the high watermark.
fn leader_state(q: &QuorumInfo) -> ReplicaInfo {
    q.voters
        .iter()
        .chain(q.observers.iter())
        .find(|r| r.replica_id == q.leader_id)
        .cloned()
        .unwrap_or(ReplicaInfo {
            replica_id: q.leader_id,
            directory_id: Uuid::nil(),
            log_end_offset: q.high_watermark,
            last_fetch_timestamp_ms: None,
            last_caught_up_timestamp_ms: None,
        })
}

/// `describe --status`, as `MetadataQuorumCommand.handleDescribeStatus` prints it.
pub fn format_status(cluster_id: &str, q: &QuorumInfo) -> String {
    let leader = leader_state(q);
    // Kafka: the voter with the smallest log end offset, the first on ties.
    let max_lag = q
        .voters
        .iter()
        .fold(None::<&ReplicaInfo>, |min, v| match min {
            Some(m) if m.log_end_offset <= v.log_end_offset => Some(m),
            _ => Some(v),
        });
    let (max_follower_lag, max_follower_lag_time_ms) = match max_lag {
        None => (0, 0),
        Some(f) if f.replica_id == leader.replica_id => {
            (leader.log_end_offset - f.log_end_offset, 0)
        }
        Some(f) => {
            let time = match (
                leader.last_caught_up_timestamp_ms,
                f.last_caught_up_timestamp_ms,
            ) {
                (Some(l), Some(m)) => l - m,
                _ => -1,
            };
            (leader.log_end_offset - f.log_end_offset, time)
        }
    };
    format!(
        "ClusterId:              {cluster_id}\n\
         LeaderId:               {}\n\
         LeaderEpoch:            {}\n\
         HighWatermark:          {}\n\
         MaxFollowerLag:         {max_follower_lag}\n\
         MaxFollowerLagTimeMs:   {max_follower_lag_time_ms}\n\
         CurrentVoters:          {}\n\
         CurrentObservers:       {}\n",
        q.leader_id,
        q.leader_epoch,
        q.high_watermark,
        replica_list(q, &q.voters),
        replica_list(q, &q.observers),
    )
}

/// `[{"id": 0, "directoryId": "…", "endpoints": ["CONTROLLER://host:9093"]}, …]`;
/// a nil directory id and an empty endpoint list are left out, as Kafka does.
fn replica_list(q: &QuorumInfo, replicas: &[ReplicaInfo]) -> String {
    let items: Vec<String> = replicas
        .iter()
        .map(|r| {
            let mut s = format!("{{\"id\": {}", r.replica_id);
            if !r.directory_id.is_nil() {
                s.push_str(&format!(
                    ", \"directoryId\": \"{}\"",
                    kafka_uuid::to_string(r.directory_id)
                ));
            }
            let endpoints: Vec<String> = q
                .nodes
                .iter()
                .find(|n| n.node_id == r.replica_id)
                .map(|n| n.endpoints.iter().map(|e| format!("\"{e}\"")).collect())
                .unwrap_or_default();
            if !endpoints.is_empty() {
                s.push_str(&format!(", \"endpoints\": [{}]", endpoints.join(", ")));
            }
            s.push('}');
            s
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// `describe --replication`, as `MetadataQuorumCommand.handleDescribeReplication`
/// prints it (Kafka's `ToolsUtils.prettyPrintTable`: each cell left-aligned
/// to its column width and followed by a tab). `now_ms` set: timestamps as
/// "N ms ago" (`--human-readable`).
pub fn format_replication(q: &QuorumInfo, now_ms: Option<i64>) -> String {
    let leader = leader_state(q);
    let ts = |t: Option<i64>| match (t, now_ms) {
        (None, _) => "-1".to_owned(),
        (Some(t), None) => t.to_string(),
        (Some(t), Some(now)) => format!("{} ms ago", (now - t).max(0)),
    };
    let row = |r: &ReplicaInfo, status: &str| {
        vec![
            r.replica_id.to_string(),
            kafka_uuid::to_string(r.directory_id),
            r.log_end_offset.to_string(),
            (leader.log_end_offset - r.log_end_offset).to_string(),
            ts(r.last_fetch_timestamp_ms),
            ts(r.last_caught_up_timestamp_ms),
            status.to_owned(),
        ]
    };
    let mut rows = vec![row(&leader, "Leader")];
    rows.extend(
        q.voters
            .iter()
            .filter(|v| v.replica_id != q.leader_id)
            .map(|v| row(v, "Follower")),
    );
    rows.extend(q.observers.iter().map(|o| row(o, "Observer")));
    let headers: Vec<String> = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    .iter()
    .map(|h| (*h).to_owned())
    .collect();
    let mut widths: Vec<usize> = headers.iter().map(String::len).collect();
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&headers).chain(rows.iter()) {
        for (cell, w) in r.iter().zip(&widths) {
            out.push_str(&format!("{cell:<w$}\t"));
        }
        out.push('\n');
    }
    out
}

/// Reads a Java properties file (`key=value` or `key: value`, `#`/`!`
/// comments). Errors: the file cannot be read.
fn read_properties(path: &std::path::Path) -> Result<HashMap<String, String>, AdminCliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AdminCliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let at = l.find(['=', ':'])?;
            Some((l[..at].trim().to_owned(), l[at + 1..].trim().to_owned()))
        })
        .collect())
}

/// Node id, directory id and controller endpoints of a joining node, from its
/// server.properties, as Kafka's `add-controller --command-config` reads them.
fn voter_from_config(path: &std::path::Path) -> Result<(i32, Uuid, Vec<Endpoint>), AdminCliError> {
    let props = read_properties(path)?;
    let usage = |m: String| AdminCliError::Usage(m);
    let file = path.display();
    let node_id = props.get("node.id").ok_or_else(|| {
        usage(format!(
            "node.id not found in {file}; is this a controller configuration file?"
        ))
    })?;
    let node_id: i32 = node_id
        .parse()
        .map_err(|_| usage(format!("node.id '{node_id}' in {file} is not an integer")))?;
    if !props
        .get("process.roles")
        .is_some_and(|r| r.split(',').any(|r| r.trim() == "controller"))
    {
        return Err(usage(format!(
            "process.roles in {file} does not contain 'controller'; is this a controller configuration file?"
        )));
    }
    let dir = props
        .get("metadata.log.dir")
        .cloned()
        .or_else(|| {
            props
                .get("log.dirs")
                .and_then(|d| d.split(',').next().map(|d| d.trim().to_owned()))
        })
        .ok_or_else(|| {
            usage(format!(
                "neither metadata.log.dir nor log.dirs is set in {file}"
            ))
        })?;
    let meta_path = std::path::Path::new(&dir).join("meta.properties");
    let meta = read_properties(&meta_path)?;
    let directory_id = meta
        .get("directory.id")
        .ok_or_else(|| usage(format!("no directory.id in {}", meta_path.display())))?;
    let directory_id = parse_kafka_uuid(directory_id).map_err(usage)?;

    let mut listeners: HashMap<String, Endpoint> = HashMap::new();
    for key in ["listeners", "advertised.listeners"] {
        for item in props.get(key).map(String::as_str).unwrap_or("").split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            // Kafka: an empty host means localhost for a voter endpoint.
            let fixed = item.replacen("://:", "://localhost:", 1);
            let endpoint: Endpoint = fixed
                .parse()
                .map_err(|e| usage(format!("{key} in {file}: {e}")))?;
            listeners.insert(endpoint.name.to_ascii_uppercase(), endpoint);
        }
    }
    let names = props
        .get("controller.listener.names")
        .ok_or_else(|| usage(format!("controller.listener.names not found in {file}")))?;
    let endpoints = names
        .split(',')
        .map(|n| n.trim().to_ascii_uppercase())
        .filter(|n| !n.is_empty())
        .map(|n| {
            listeners.get(&n).cloned().ok_or_else(|| {
                usage(format!(
                    "no listener named {n} in listeners or advertised.listeners of {file}"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((node_id, directory_id, endpoints))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::NodeEndpoints;

    fn quorum() -> QuorumInfo {
        let dir = |b: u8| Uuid::from_bytes([b; 16]);
        QuorumInfo {
            leader_id: 1,
            leader_epoch: 7,
            high_watermark: 120,
            voters: vec![
                ReplicaInfo {
                    replica_id: 1,
                    directory_id: dir(1),
                    log_end_offset: 130,
                    last_fetch_timestamp_ms: Some(1_000),
                    last_caught_up_timestamp_ms: Some(1_000),
                },
                ReplicaInfo {
                    replica_id: 2,
                    directory_id: dir(2),
                    log_end_offset: 100,
                    last_fetch_timestamp_ms: Some(990),
                    last_caught_up_timestamp_ms: Some(900),
                },
            ],
            observers: vec![ReplicaInfo {
                replica_id: 3,
                directory_id: Uuid::nil(),
                log_end_offset: 90,
                last_fetch_timestamp_ms: None,
                last_caught_up_timestamp_ms: None,
            }],
            nodes: vec![NodeEndpoints {
                node_id: 1,
                endpoints: vec![Endpoint {
                    name: "CONTROLLER".into(),
                    host: "q-1".into(),
                    port: 9093,
                }],
            }],
        }
    }

    #[test]
    fn status_output_has_kafkas_fields_and_lag_against_the_slowest_voter() {
        let out = format_status("MkU3OEVBNTcwNTJENDM2Qg", &quorum());
        let expected = "ClusterId:              MkU3OEVBNTcwNTJENDM2Qg\n\
                        LeaderId:               1\n\
                        LeaderEpoch:            7\n\
                        HighWatermark:          120\n\
                        MaxFollowerLag:         30\n\
                        MaxFollowerLagTimeMs:   100\n\
                        CurrentVoters:          [{\"id\": 1, \"directoryId\": \"AQEBAQEBAQEBAQEBAQEBAQ\", \"endpoints\": [\"CONTROLLER://q-1:9093\"]}, {\"id\": 2, \"directoryId\": \"AgICAgICAgICAgICAgICAg\"}]\n\
                        CurrentObservers:       [{\"id\": 3}]\n";
        assert_eq!(out, expected);
    }

    #[test]
    fn replication_table_lists_leader_followers_then_observers_tab_separated() {
        let out = format_replication(&quorum(), None);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("NodeId\tDirectoryId           \tLogEndOffset\tLag\t"));
        let cells: Vec<&str> = lines[1].split('\t').map(str::trim).collect();
        assert_eq!(
            cells,
            [
                "1",
                "AQEBAQEBAQEBAQEBAQEBAQ",
                "130",
                "0",
                "1000",
                "1000",
                "Leader",
                ""
            ]
        );
        let cells: Vec<&str> = lines[2].split('\t').map(str::trim).collect();
        assert_eq!(
            cells,
            [
                "2",
                "AgICAgICAgICAgICAgICAg",
                "100",
                "30",
                "990",
                "900",
                "Follower",
                ""
            ]
        );
        let cells: Vec<&str> = lines[3].split('\t').map(str::trim).collect();
        assert_eq!(
            cells,
            [
                "3",
                "AAAAAAAAAAAAAAAAAAAAAA",
                "90",
                "40",
                "-1",
                "-1",
                "Observer",
                ""
            ]
        );
    }

    #[test]
    fn human_readable_replication_shows_ms_ago() {
        let out = format_replication(&quorum(), Some(1_500));
        assert!(
            out.lines()
                .nth(2)
                .is_some_and(|l| l.contains("510 ms ago") && l.contains("600 ms ago"))
        );
    }

    #[test]
    fn add_voter_reads_id_directory_and_advertised_endpoint_from_a_node_config() {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta_dir = dir.path().join("meta");
        std::fs::create_dir(&meta_dir).expect("mkdir");
        std::fs::write(
            meta_dir.join("meta.properties"),
            "version=1\nnode.id=4\ndirectory.id=AgICAgICAgICAgICAgICAg\ncluster.id=abc\n",
        )
        .expect("write meta");
        let config = dir.path().join("server.properties");
        std::fs::write(
            &config,
            format!(
                "# joining node\nnode.id=4\nprocess.roles=controller\nlisteners=CONTROLLER://:9093\n\
                 advertised.listeners=CONTROLLER://q-4.q:9093\ncontroller.listener.names=CONTROLLER\n\
                 metadata.log.dir={}\n",
                meta_dir.display()
            ),
        )
        .expect("write config");
        let (id, directory_id, endpoints) = voter_from_config(&config).expect("config parses");
        assert_eq!(id, 4);
        assert_eq!(directory_id, Uuid::from_bytes([2; 16]));
        assert_eq!(
            endpoints,
            vec![
                "CONTROLLER://q-4.q:9093"
                    .parse::<Endpoint>()
                    .expect("endpoint")
            ]
        );
    }

    #[test]
    fn a_config_without_the_controller_role_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("server.properties");
        std::fs::write(&config, "node.id=4\nprocess.roles=broker\n").expect("write");
        let err = voter_from_config(&config).expect_err("not a controller");
        assert!(err.to_string().contains("process.roles"), "{err}");
    }
}
