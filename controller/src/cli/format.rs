//! `kraft-controller format`: prepares a metadata log directory for a new
//! controller (DESIGN 2.4; Kafka's `StorageTool format` and `Formatter`).
//!
//! Writes what Kafka's `kafka-storage format` of the same `--release-version`
//! writes (docs/decisions.md D18, [`crate::log::bootstrap::BootstrapLayout`]):
//! `meta.properties`, and up to 4.1-IV1 (as Kafka 4.1.2) `bootstrap.checkpoint`
//! plus, with `--standalone` or `--initial-controllers`, the
//! `00000000000000000000-0000000000.checkpoint` holding KRaftVersion(1) and
//! the initial Voters; from 4.2-IV0 (KIP-1170, as Kafka 4.4.0) no
//! `bootstrap.checkpoint`, and the 0-0 checkpoint in every mode with the
//! bootstrap records as its data batch. Everything is validated
//! before the first write; `meta.properties` is written last, so a crash in
//! the middle leaves a directory that the next run formats again. An already
//! formatted directory with the same cluster id and node id is left alone.
//!
//! Owns the flags, the config file keys it reads and the order of writes; the
//! file formats belong to [`crate::log`].

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::ExitCode,
};

use bytes::Bytes;
use kafka_protocol::{
    messages::{
        BrokerId,
        voters_record::{Endpoint, KRaftVersionFeature, Voter},
    },
    protocol::StrBytes,
};
use kraft_common::kafka_uuid::{self, is_reserved_directory_id};
use uuid::Uuid;

use crate::{
    log::{
        LogError, MetaProperties,
        bootstrap::{
            BOOTSTRAP_CHECKPOINT_FILE, BootstrapLayout, bootstrap_feature_records,
            encode_bootstrap_checkpoint, write_bootstrap_checkpoint,
        },
        meta_properties::{parse_properties, validate_cluster_id},
        partition_dir,
        snapshot::{
            BOOTSTRAP_SNAPSHOT_ID, SnapshotWriter, encode_bootstrap_snapshot, snapshot_file_name,
        },
    },
    metadata::{bootstrap::BootstrapMetadata, version::MetadataVersion},
    record::VotersRecord,
};

/// Flags of `format`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FormatArgs {
    /// Kafka-style properties file: node.id, metadata.log.dir,
    /// controller.listener.names, listeners, advertised.listeners.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The metadata log directory to format (overrides nothing: must agree
    /// with metadata.log.dir if both are given).
    #[arg(long, value_name = "DIR")]
    pub metadata_log_dir: Option<PathBuf>,
    /// This controller's node id (must agree with node.id if both are given).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub node_id: Option<i64>,
    /// The cluster id: 22 characters of URL-safe base64 (Kafka's uuid text).
    /// Use `--cluster-id=ID` for an id that starts with `-`.
    #[arg(long, short = 't', value_name = "ID", allow_hyphen_values = true)]
    pub cluster_id: Option<String>,
    /// This directory's id (Kafka uuid text); a fresh one if absent.
    #[arg(long, value_name = "UUID", allow_hyphen_values = true)]
    pub directory_id: Option<String>,
    /// Bootstrap a quorum of this controller alone (KIP-853).
    #[arg(long)]
    pub standalone: bool,
    /// Bootstrap a quorum of these voters: `id@host:port:directory-id,…`.
    #[arg(long, value_name = "VOTERS")]
    pub initial_controllers: Option<String>,
    /// Join an existing quorum later through AddRaftVoter (KIP-853).
    #[arg(long)]
    pub no_initial_controllers: bool,
    /// `<ids>/<voters>`: `--initial-controllers=<voters>` when this node's id
    /// is one of `<ids>` (`+`-separated, e.g. `2` or `1+2`), else
    /// `--no-initial-controllers`. Not a Kafka flag: the operator gives it,
    /// after the first leader, to the initial voters it has not yet seen
    /// formatted, so a pod that starts late still formats with its initial
    /// directory id instead of being replaced (docs/decisions.md D19). One
    /// argument, because Kubernetes expands the operator's ConfigMap value
    /// into exactly one.
    #[arg(long, value_name = "IDS/VOTERS")]
    pub initial_controllers_for: Option<String>,
    /// Write nothing: only check that the directory is already formatted
    /// for this cluster id and node id (and directory id, if given), and
    /// fail if it holds no `meta.properties`. For a volume of an existing
    /// quorum taken over as it is (the operator's `spec.adopt`, issue 22),
    /// where an empty volume must stop the pod rather than start a voter
    /// without its log.
    #[arg(long)]
    pub expect_formatted: bool,
    /// The metadata.version to start with, e.g. 4.1-IV1 or 4.1 (default:
    /// Kafka 4.1's latest production version, 4.1-IV1).
    #[arg(long, value_name = "VERSION")]
    pub release_version: Option<String>,
    /// Start the new cluster with the metadata of this snapshot file (from
    /// `snapshot export`): its records become the bootstrap records that
    /// the first leader writes (issue 26). Its metadata.version is used.
    #[arg(long, value_name = "FILE", conflicts_with = "release_version")]
    pub from_snapshot: Option<PathBuf>,
}

/// Errors of `format`: each a one-line message naming the bad value.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Bad or missing input.
    #[error("{0}")]
    Invalid(String),
    /// The directory belongs to another cluster or node.
    #[error("{0}; nothing was written")]
    Mismatch(String),
    /// Reading the config or writing the files failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A log file could not be read or written.
    #[error(transparent)]
    Log(#[from] LogError),
}

fn invalid(message: String) -> FormatError {
    FormatError::Invalid(message)
}

/// One initial voter: `id@host:port:directory-id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialVoter {
    /// Node id.
    pub id: i32,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Directory id.
    pub directory_id: Uuid,
}

/// Parses `--initial-controllers` (Kafka's `DynamicVoters.parse`):
/// comma-separated `id@host:port:directory-id`, IPv6 hosts in brackets.
///
/// Errors: [`FormatError::Invalid`] naming the bad entry.
pub fn parse_initial_controllers(text: &str) -> Result<Vec<InitialVoter>, FormatError> {
    let mut voters: Vec<InitialVoter> = Vec::new();
    for entry in text.split(',') {
        let bad = |why: &str| {
            invalid(format!(
                "invalid --initial-controllers entry {entry:?}: {why} (expected id@host:port:directory-id)"
            ))
        };
        let (id, rest) = entry.split_once('@').ok_or_else(|| bad("no '@'"))?;
        let id: i32 = id
            .parse()
            .map_err(|_| bad("the node id is not an integer"))?;
        if id < 0 {
            return Err(bad("the node id is negative"));
        }
        let (host_port, dir) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("no directory id"))?;
        let (host, port) = host_port.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad("the port is not in 1..65535"))?;
        let directory_id = kafka_uuid::parse(dir)
            .ok()
            .ok_or_else(|| bad("the directory id is not a 22-character uuid"))?;
        if is_reserved_directory_id(directory_id) {
            return Err(bad("the directory id is a reserved id"));
        }
        if voters.iter().any(|v| v.id == id) {
            return Err(bad("the node id appears twice"));
        }
        voters.push(InitialVoter {
            id,
            host: host.to_string(),
            port,
            directory_id,
        });
    }
    Ok(voters)
}

/// Resolves `--initial-controllers-for=<ids>/<voters>` for node `node_id`:
/// a copy of `args` with `--initial-controllers=<voters>` when `node_id` is
/// one of `<ids>`, else with `--no-initial-controllers` (and without
/// `--initial-controllers-for`).
///
/// Errors: [`FormatError::Invalid`] naming the bad value: no `/`, an id that
/// is not a non-negative integer, an id listed twice, an id not in
/// `<voters>`, or a bad `<voters>` entry (as [`parse_initial_controllers`]).
fn pick_initial_controllers(
    args: &FormatArgs,
    text: &str,
    node_id: i32,
) -> Result<FormatArgs, FormatError> {
    let bad = |why: String| {
        invalid(format!(
            "invalid --initial-controllers-for {text:?}: {why} (expected ids/id@host:port:directory-id,...)"
        ))
    };
    let (ids, voters_text) = text
        .split_once('/')
        .ok_or_else(|| bad("no '/' after the node ids".into()))?;
    let voters = parse_initial_controllers(voters_text)
        .map_err(|e| invalid(format!("invalid --initial-controllers-for {text:?}: {e}")))?;
    let mut listed: Vec<i32> = Vec::new();
    for id in ids.split('+') {
        let id: i32 = id
            .parse()
            .ok()
            .filter(|id| *id >= 0)
            .ok_or_else(|| bad(format!("node id {id:?} is not a non-negative integer")))?;
        if !voters.iter().any(|v| v.id == id) {
            return Err(bad(format!("node id {id} is not one of the voters")));
        }
        if listed.contains(&id) {
            return Err(bad(format!("node id {id} is listed twice")));
        }
        listed.push(id);
    }
    let chosen = listed.contains(&node_id);
    Ok(FormatArgs {
        initial_controllers_for: None,
        initial_controllers: chosen.then(|| voters_text.to_string()),
        no_initial_controllers: !chosen,
        ..args.clone()
    })
}

/// What `format` will write, fully validated.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatPlan {
    /// `metadata.log.dir`.
    pub log_dir: PathBuf,
    /// The identity for `meta.properties`.
    pub meta: MetaProperties,
    /// Whether the directory id was given (flag or this node's
    /// `--initial-controllers` entry) rather than generated.
    pub directory_id_given: bool,
    /// metadata.version of the bootstrap records; it also picks the layout.
    pub metadata_version: MetadataVersion,
    /// The initial voters for the 0-0 checkpoint, in dynamic bootstrap modes.
    pub voters: Option<VotersRecord>,
    /// The bootstrap records when taken from a snapshot
    /// (`--from-snapshot`); `None`: the feature levels of `metadata_version`.
    pub bootstrap_records: Option<Vec<Bytes>>,
    /// The kraft.version written in the 0-0 checkpoint: 0 when the config
    /// sets `controller.quorum.voters` (a static quorum: Kafka's
    /// `Formatter.effectiveKRaftFeatureLevel`), 1 otherwise (KIP-853).
    pub kraft_version: i16,
    /// `--expect-formatted`: check only, never write.
    pub expect_formatted: bool,
}

/// What `format` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatOutcome {
    /// The files were written.
    Formatted,
    /// The directory already had this cluster id and node id: left alone.
    AlreadyFormatted,
}

struct Config {
    path: PathBuf,
    props: BTreeMap<String, String>,
}

impl Config {
    fn get(&self, key: &str) -> Option<&str> {
        self.props
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

fn read_config(path: &Path) -> Result<Config, FormatError> {
    let text = std::fs::read_to_string(path).map_err(|source| FormatError::Io {
        action: "reading config file",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Config {
        path: path.to_path_buf(),
        props: parse_properties(&text),
    })
}

/// Finds `NAME://host:port` for `listener` in a Kafka listeners list.
fn find_listener(list: &str, listener: &str) -> Option<(String, u16)> {
    list.split(',').find_map(|entry| {
        let (name, address) = entry.trim().split_once("://")?;
        if !name.eq_ignore_ascii_case(listener) {
            return None;
        }
        let (host, port) = address.rsplit_once(':')?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        Some((host.to_string(), port.parse().ok()?))
    })
}

/// The Voters record (KIP-853) of `voters` on listener `listener`, each
/// with the kraft.version range this controller supports (0 to 1): what
/// `format` writes in the 0-0 checkpoint and `recover` appends.
pub(super) fn voter_record(listener: &str, voters: &[InitialVoter]) -> VotersRecord {
    VotersRecord::default().with_version(0).with_voters(
        voters
            .iter()
            .map(|v| {
                Voter::default()
                    .with_voter_id(BrokerId(v.id))
                    .with_voter_directory_id(v.directory_id)
                    .with_endpoints(vec![
                        Endpoint::default()
                            .with_name(StrBytes::from_string(listener.to_string()))
                            .with_host(StrBytes::from_string(v.host.clone()))
                            .with_port(v.port),
                    ])
                    // The kraft.version range this controller supports.
                    .with_k_raft_version_feature(
                        KRaftVersionFeature::default()
                            .with_min_supported_version(0)
                            .with_max_supported_version(1),
                    )
            })
            .collect(),
    )
}

/// Validates the flags and the config file into a [`FormatPlan`]; reads
/// nothing in the metadata log directory.
///
/// Errors: [`FormatError::Invalid`] with a one-line message naming the bad
/// value; [`FormatError::Io`] for an unreadable config file.
pub fn plan(args: &FormatArgs) -> Result<FormatPlan, FormatError> {
    let config = args.config.as_deref().map(read_config).transpose()?;
    let from_config = |key: &str| config.as_ref().and_then(|c| c.get(key).map(str::to_string));
    let config_name = || {
        config
            .as_ref()
            .map_or_else(String::new, |c| c.path.display().to_string())
    };

    let modes = [
        (args.standalone, "--standalone"),
        (args.initial_controllers.is_some(), "--initial-controllers"),
        (args.no_initial_controllers, "--no-initial-controllers"),
        (
            args.initial_controllers_for.is_some(),
            "--initial-controllers-for",
        ),
        (args.expect_formatted, "--expect-formatted"),
    ];
    let chosen: Vec<&str> = modes
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
    match chosen.len() {
        0 => {
            return Err(invalid(
                "give exactly one of --standalone, --initial-controllers, --no-initial-controllers, --initial-controllers-for, --expect-formatted"
                    .into(),
            ));
        }
        1 => {}
        _ => {
            return Err(invalid(format!(
                "{} cannot be used together: give exactly one",
                chosen.join(" and ")
            )));
        }
    }
    let node_id = match (args.node_id, from_config("node.id")) {
        (Some(flag), Some(conf)) if conf != flag.to_string() => {
            return Err(invalid(format!(
                "--node-id {flag} differs from node.id={conf} in {}",
                config_name()
            )));
        }
        (Some(flag), _) => flag,
        (None, Some(conf)) => conf.parse().map_err(|_| {
            invalid(format!(
                "node.id={conf} in {} is not an integer",
                config_name()
            ))
        })?,
        (None, None) => {
            return Err(invalid(
                "no node id: give --node-id or node.id in --config".into(),
            ));
        }
    };
    let node_id = i32::try_from(node_id)
        .ok()
        .filter(|id| *id >= 0)
        .ok_or_else(|| invalid(format!("node id {node_id} must be in 0..={}", i32::MAX)))?;

    // --initial-controllers-for is one of the two Kafka modes, picked by
    // this node's id; from here on the plan sees only that mode.
    let picked;
    let args = match &args.initial_controllers_for {
        Some(text) => {
            picked = pick_initial_controllers(args, text, node_id)?;
            &picked
        }
        None => args,
    };
    let dynamic = args.standalone || args.initial_controllers.is_some();
    if dynamic && let Some(voters) = from_config("controller.quorum.voters") {
        return Err(invalid(format!(
            "{} sets controller.quorum.voters={voters}, which conflicts with {}: remove one of the two sources of voters",
            config_name(),
            chosen[0]
        )));
    }

    let log_dir = match (&args.metadata_log_dir, from_config("metadata.log.dir")) {
        (Some(flag), Some(conf)) if *flag != Path::new(&conf) => {
            return Err(invalid(format!(
                "--metadata-log-dir {} differs from metadata.log.dir={conf} in {}",
                flag.display(),
                config_name()
            )));
        }
        (Some(flag), _) => flag.clone(),
        (None, Some(conf)) => PathBuf::from(conf),
        (None, None) => {
            return Err(invalid(
                "no metadata log directory: give --metadata-log-dir or metadata.log.dir in --config"
                    .into(),
            ));
        }
    };

    let cluster_text = args.cluster_id.as_deref().ok_or_else(|| {
        invalid("no cluster id: give --cluster-id (22 characters of URL-safe base64)".into())
    })?;
    // Kept exactly as given, as Kafka's StorageTool does (docs/interop.md).
    let cluster_id = validate_cluster_id(cluster_text).ok_or_else(|| {
        invalid(format!(
            "malformed cluster id {cluster_text:?}: expected 22 characters of URL-safe base64 encoding 16 bytes"
        ))
    })?;

    let bootstrap_records = args
        .from_snapshot
        .as_deref()
        .map(|path| {
            super::snapshot::read_snapshot_records(path)
                .map_err(|e| invalid(format!("--from-snapshot: {e}")))
        })
        .transpose()?;
    let snapshot_version = bootstrap_records
        .as_ref()
        .map(|records| {
            BootstrapMetadata::from_records(records.clone(), "the --from-snapshot file")
                .map(|b| b.metadata_version())
                .map_err(|e| invalid(format!("--from-snapshot: {e}")))
        })
        .transpose()?;
    let metadata_version = match args.release_version.as_deref() {
        None if snapshot_version.is_some() => {
            snapshot_version.unwrap_or(MetadataVersion::LATEST_PRODUCTION)
        }
        None => MetadataVersion::LATEST_PRODUCTION,
        Some(text) => MetadataVersion::parse(text).ok_or_else(|| {
            invalid(format!(
                "unknown release version {text:?}: expected one of 3.3-IV3 .. {} (e.g. 4.1 or 4.4-IV2)",
                MetadataVersion::LATEST_IMPLEMENTED
            ))
        })?,
    };
    if dynamic && metadata_version < MetadataVersion::IBP_3_9_IV0 {
        return Err(invalid(format!(
            "release version {metadata_version} does not support {} (kraft.version 1 needs 3.9-IV0 or later)",
            chosen[0]
        )));
    }

    let flag_directory_id = args
        .directory_id
        .as_deref()
        .map(|text| {
            kafka_uuid::parse(text).ok()
                .filter(|id| !is_reserved_directory_id(*id))
                .ok_or_else(|| {
                    invalid(format!(
                        "malformed directory id {text:?}: expected 22 characters of URL-safe base64, not a reserved id"
                    ))
                })
        })
        .transpose()?;

    let listener = match from_config("controller.listener.names") {
        Some(names) => names
            .split(',')
            .next()
            .unwrap_or("CONTROLLER")
            .trim()
            .to_string(),
        None => "CONTROLLER".to_string(),
    };

    let (directory_id, directory_id_given, voters) = if let Some(text) = &args.initial_controllers {
        let voters = parse_initial_controllers(text)?;
        let own = voters.iter().find(|v| v.id == node_id).ok_or_else(|| {
            invalid(format!(
                "node id {node_id} is not in --initial-controllers {text}"
            ))
        })?;
        if let Some(flag) = flag_directory_id
            && flag != own.directory_id
        {
            return Err(invalid(format!(
                "--directory-id {} differs from {} in node {node_id}'s --initial-controllers entry",
                kafka_uuid::to_string(flag),
                kafka_uuid::to_string(own.directory_id)
            )));
        }
        (
            own.directory_id,
            true,
            Some(voter_record(&listener, &voters)),
        )
    } else {
        let (directory_id, given) = match flag_directory_id {
            Some(id) => (id, true),
            None => (kafka_uuid::random(), false),
        };
        let voters = if args.standalone {
            let config = config.as_ref().ok_or_else(|| {
                invalid("--standalone needs --config with listeners (or advertised.listeners) naming this controller's endpoint".into())
            })?;
            let (host, port) = ["advertised.listeners", "listeners"]
                .iter()
                .filter_map(|key| config.get(key))
                .find_map(|list| find_listener(list, &listener))
                .filter(|(host, _)| !host.is_empty())
                .ok_or_else(|| {
                    invalid(format!(
                        "--standalone: {} has no {listener}://host:port in advertised.listeners or listeners",
                        config.path.display()
                    ))
                })?;
            Some(voter_record(
                &listener,
                &[InitialVoter {
                    id: node_id,
                    host,
                    port,
                    directory_id,
                }],
            ))
        } else {
            None
        };
        (directory_id, given, voters)
    };

    Ok(FormatPlan {
        log_dir,
        meta: MetaProperties {
            cluster_id,
            node_id,
            directory_id,
        },
        directory_id_given,
        metadata_version,
        voters,
        bootstrap_records,
        kraft_version: if from_config("controller.quorum.voters").is_some() {
            0
        } else {
            1
        },
        expect_formatted: args.expect_formatted,
    })
}

/// Removes `path` if it exists and fsyncs its directory.
fn remove_durably(path: &Path) -> Result<(), FormatError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(crate::log::fs::fsync_dir(crate::log::fs::parent_of(path))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("deleting", path)(e)),
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> FormatError {
    let path = path.to_path_buf();
    move |source| FormatError::Io {
        action,
        path,
        source,
    }
}

/// Checks the directory and writes the plan's files, stamped `now_ms`
/// (ms since the epoch).
///
/// Errors: [`FormatError::Mismatch`] if `meta.properties` names another
/// cluster, node or directory id, or the directory holds a log but no
/// `meta.properties`, or with `--expect-formatted` holds no
/// `meta.properties`; nothing is written then. I/O errors.
pub fn execute(plan: &FormatPlan, now_ms: i64) -> Result<FormatOutcome, FormatError> {
    let dir = &plan.log_dir;
    if let Some(existing) = MetaProperties::read(dir)? {
        let want = &plan.meta;
        if existing.cluster_id != want.cluster_id {
            return Err(FormatError::Mismatch(format!(
                "{} is formatted for cluster id {}, not {}",
                dir.display(),
                existing.cluster_id,
                want.cluster_id
            )));
        }
        if existing.node_id != want.node_id {
            return Err(FormatError::Mismatch(format!(
                "{} is formatted for node id {}, not {}",
                dir.display(),
                existing.node_id,
                want.node_id
            )));
        }
        if plan.directory_id_given && existing.directory_id != want.directory_id {
            return Err(FormatError::Mismatch(format!(
                "{} has directory id {}, not {}",
                dir.display(),
                kafka_uuid::to_string(existing.directory_id),
                kafka_uuid::to_string(want.directory_id)
            )));
        }
        return Ok(FormatOutcome::AlreadyFormatted);
    }
    if plan.expect_formatted {
        return Err(FormatError::Mismatch(format!(
            "{} holds no meta.properties, and --expect-formatted never formats",
            dir.display()
        )));
    }
    // No meta.properties: only what an interrupted format leaves may be here.
    let partition = partition_dir(dir);
    let bootstrap_name = snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID);
    if partition.is_dir() {
        for entry in std::fs::read_dir(&partition).map_err(io("listing", &partition))? {
            let name = entry.map_err(io("listing", &partition))?.file_name();
            let name = name.to_string_lossy();
            if name != bootstrap_name && name != format!("{bootstrap_name}.part") {
                return Err(FormatError::Mismatch(format!(
                    "{} holds {name} but no meta.properties: refusing to format over an existing log",
                    partition.display()
                )));
            }
        }
    }

    // Encode everything before the first write.
    let records = plan
        .bootstrap_records
        .clone()
        .unwrap_or_else(|| bootstrap_feature_records(plan.metadata_version));
    let layout = BootstrapLayout::for_version(plan.metadata_version);
    let (bootstrap, zero_checkpoint) = match layout {
        BootstrapLayout::BootstrapCheckpoint => (
            Some(encode_bootstrap_checkpoint(&records, now_ms)?),
            plan.voters
                .clone()
                .map(|voters| encode_bootstrap_snapshot(now_ms, 1, Some(voters), &[]))
                .transpose()?,
        ),
        BootstrapLayout::ZeroCheckpoint => (
            None,
            Some(encode_bootstrap_snapshot(
                now_ms,
                plan.kraft_version,
                plan.voters.clone(),
                &records,
            )?),
        ),
    };

    std::fs::create_dir_all(dir).map_err(io("creating directory", dir))?;
    // What an interrupted format of another layout or mode left must not
    // outlive this one: a stale bootstrap.checkpoint would win over the 0-0
    // checkpoint when read, a stale 0-0 checkpoint would carry its voters.
    let stale_bootstrap = dir.join(BOOTSTRAP_CHECKPOINT_FILE);
    match &bootstrap {
        Some(bytes) => write_bootstrap_checkpoint(dir, bytes)?,
        None => remove_durably(&stale_bootstrap)?,
    }
    match zero_checkpoint {
        Some(bytes) => {
            std::fs::create_dir_all(&partition).map_err(io("creating directory", &partition))?;
            crate::log::fs::fsync_dir(dir)?;
            crate::log::snapshot::delete_partial_snapshots(&partition)?;
            let mut writer = SnapshotWriter::create(&partition, BOOTSTRAP_SNAPSHOT_ID)?;
            writer.append(&bytes)?;
            writer.freeze()?;
        }
        None => remove_durably(&partition.join(&bootstrap_name))?,
    }
    let date = crate::log::meta_properties::java_date_string(now_ms.div_euclid(1000));
    crate::log::fs::write_atomically(
        &dir.join(crate::log::meta_properties::META_PROPERTIES_FILE),
        plan.meta.encode(&date).as_bytes(),
    )?;
    Ok(FormatOutcome::Formatted)
}

/// Runs `format`: prints one line saying what was done, or one error line.
pub fn run(args: &FormatArgs) -> ExitCode {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let result = plan(args).and_then(|plan| Ok((execute(&plan, now_ms)?, plan)));
    match result {
        Ok((FormatOutcome::Formatted, plan)) => {
            println!(
                "formatted {} for cluster id {}, node id {}, directory id {}, metadata.version {}{}",
                plan.log_dir.display(),
                plan.meta.cluster_id,
                plan.meta.node_id,
                kafka_uuid::to_string(plan.meta.directory_id),
                plan.metadata_version,
                match &plan.voters {
                    Some(v) => format!(", {} initial voter(s)", v.voters.len()),
                    None => ", no initial voters".into(),
                }
            );
            ExitCode::SUCCESS
        }
        Ok((FormatOutcome::AlreadyFormatted, plan)) => {
            println!(
                "{} is already formatted for cluster id {} and node id {}: left it alone",
                plan.log_dir.display(),
                plan.meta.cluster_id,
                plan.meta.node_id
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
