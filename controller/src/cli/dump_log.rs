//! `kraft-controller dump-log PATH…`: prints the batches and records of log
//! segments (`*.log`) and snapshot files (`*.checkpoint`, `bootstrap.checkpoint`)
//! in a stable, readable form (in the spirit of Kafka's `kafka-dump-log
//! --cluster-metadata-decoder`); tests use its output as golden text.
//!
//! A directory argument prints, in order: `meta.properties`,
//! `bootstrap.checkpoint`, then the `__cluster_metadata-0` directory (its
//! segments, snapshots and small text files), whichever exist. Index files
//! are skipped.
//!
//! Owns the text format only; decoding is [`crate::record`]'s and
//! [`crate::metadata::records`]'s. It must never write.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::ExitCode,
};

use kraft_common::METADATA_PARTITION_DIR;

use crate::{
    log::{bootstrap::BOOTSTRAP_CHECKPOINT_FILE, meta_properties::META_PROPERTIES_FILE},
    metadata::records::{
        ACCESS_CONTROL_ENTRY_RECORD_API_KEY, AccessControlEntryRecord,
        BEGIN_TRANSACTION_RECORD_API_KEY, CONFIG_RECORD_API_KEY, ConfigRecord,
        END_TRANSACTION_RECORD_API_KEY, FeatureLevelRecord, FramedRecord,
        REGISTER_CONTROLLER_RECORD_API_KEY, REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY,
        RegisterControllerRecord, begin_transaction_name, decode_remove_access_control_entry,
        metadata_record_type_name,
    },
    record::{ControlRecord, DataRecord, DecodedBatch, iter_batches},
};

/// Arguments of `dump-log`.
#[derive(Debug, Clone, clap::Args)]
pub struct DumpLogArgs {
    /// Metadata log directories, partition directories, segment or snapshot files.
    #[arg(required = true, value_name = "DIR-or-FILE")]
    pub paths: Vec<PathBuf>,
}

/// Text files of the log directories printed verbatim (indented).
const TEXT_FILES: &[&str] = &[
    META_PROPERTIES_FILE,
    "partition.metadata",
    "leader-epoch-checkpoint",
    "quorum-state",
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn control_text(record: &ControlRecord) -> String {
    let name = record.record_type().name();
    match record {
        ControlRecord::LeaderChange(m) => {
            let ids = |voters: &[kafka_protocol::messages::leader_change_message::Voter]| {
                voters
                    .iter()
                    .map(|v| v.voter_id.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!(
                "{name} version={} leader_id={} voters=[{}] granting_voters=[{}]",
                m.version,
                m.leader_id.0,
                ids(&m.voters),
                ids(&m.granting_voters)
            )
        }
        ControlRecord::SnapshotHeader(m) => format!(
            "{name} version={} last_contained_log_timestamp={}",
            m.version, m.last_contained_log_timestamp
        ),
        ControlRecord::SnapshotFooter(m) => format!("{name} version={}", m.version),
        ControlRecord::KRaftVersion(m) => {
            format!(
                "{name} version={} kraft_version={}",
                m.version, m.k_raft_version
            )
        }
        ControlRecord::Voters(m) => {
            let voters: Vec<String> = m
                .voters
                .iter()
                .map(|v| {
                    let endpoints: Vec<String> = v
                        .endpoints
                        .iter()
                        .map(|e| format!("{}://{}:{}", &*e.name, &*e.host, e.port))
                        .collect();
                    format!(
                        "{{id={} directory_id={} endpoints=[{}] kraft_version={}..{}}}",
                        v.voter_id.0,
                        kraft_common::kafka_uuid::to_string(v.voter_directory_id),
                        endpoints.join(","),
                        v.k_raft_version_feature.min_supported_version,
                        v.k_raft_version_feature.max_supported_version
                    )
                })
                .collect();
            format!(
                "{name} version={} voters=[{}]",
                m.version,
                voters.join(", ")
            )
        }
    }
}

fn data_text(record: &DataRecord) -> String {
    let Some(value) = record.value.as_deref() else {
        return "value=null".into();
    };
    match FramedRecord::decode(value) {
        Ok(framed) => {
            let name = metadata_record_type_name(framed.api_key);
            match (framed.api_key, framed.version, name) {
                (12, 0, _) => match FeatureLevelRecord::decode_message(&framed.message) {
                    Ok(r) => format!(
                        "FEATURE_LEVEL_RECORD(12) version=0 name={} feature_level={}",
                        r.name, r.feature_level
                    ),
                    Err(e) => format!(
                        "FEATURE_LEVEL_RECORD(12) undecodable ({e}) bytes={}",
                        hex(&framed.message)
                    ),
                },
                (REGISTER_CONTROLLER_RECORD_API_KEY, 0, _) => {
                    match RegisterControllerRecord::decode_message(&framed.message) {
                        Ok(r) => format!(
                            "REGISTER_CONTROLLER_RECORD(27) version=0 controller_id={} incarnation_id={} zk_migration_ready={} endpoints=[{}] features=[{}]",
                            r.controller_id,
                            kraft_common::kafka_uuid::to_string(r.incarnation_id),
                            r.zk_migration_ready,
                            r.endpoints
                                .iter()
                                .map(|e| format!(
                                    "{}://{}:{} (security_protocol={})",
                                    e.name, e.host, e.port, e.security_protocol
                                ))
                                .collect::<Vec<_>>()
                                .join(", "),
                            r.features
                                .iter()
                                .map(|f| format!(
                                    "{}:{}-{}",
                                    f.name, f.min_supported_version, f.max_supported_version
                                ))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        Err(e) => format!(
                            "REGISTER_CONTROLLER_RECORD(27) undecodable ({e}) bytes={}",
                            hex(&framed.message)
                        ),
                    }
                }
                (CONFIG_RECORD_API_KEY, 0, _) => {
                    match ConfigRecord::decode_message(&framed.message) {
                        Ok(r) => format!(
                            "CONFIG_RECORD(4) version=0 resource_type={} resource_name={:?} name={} value={}",
                            r.resource_type,
                            r.resource_name,
                            r.name,
                            r.value.as_deref().unwrap_or("null")
                        ),
                        Err(e) => format!(
                            "CONFIG_RECORD(4) undecodable ({e}) bytes={}",
                            hex(&framed.message)
                        ),
                    }
                }
                (crate::metadata::records::PRODUCER_IDS_RECORD_API_KEY, 0, _) => {
                    match crate::metadata::records::ProducerIdsRecord::decode_message(
                        &framed.message,
                    ) {
                        Ok(r) => format!(
                            "PRODUCER_IDS_RECORD(15) version=0 broker_id={} broker_epoch={} next_producer_id={}",
                            r.broker_id, r.broker_epoch, r.next_producer_id
                        ),
                        Err(e) => format!(
                            "PRODUCER_IDS_RECORD(15) undecodable ({e}) bytes={}",
                            hex(&framed.message)
                        ),
                    }
                }
                (BEGIN_TRANSACTION_RECORD_API_KEY, 0, _) => {
                    match begin_transaction_name(&framed.message) {
                        Ok(n) => format!(
                            "BEGIN_TRANSACTION_RECORD(23) version=0 name={}",
                            n.as_deref().unwrap_or("null")
                        ),
                        Err(e) => format!(
                            "BEGIN_TRANSACTION_RECORD(23) undecodable ({e}) bytes={}",
                            hex(&framed.message)
                        ),
                    }
                }
                (key, version, Some(name))
                    if crate::metadata::brokers::is_broker_record(key, version) =>
                {
                    broker_text(name, key, version, &framed.message)
                }
                (ACCESS_CONTROL_ENTRY_RECORD_API_KEY, 0, _) => {
                    match AccessControlEntryRecord::decode_message(&framed.message) {
                        Ok(r) => format!(
                            "ACCESS_CONTROL_ENTRY_RECORD(18) version=0 id={} resource_type={} resource_name={:?} pattern_type={} principal={} host={} operation={} permission_type={}",
                            kraft_common::kafka_uuid::to_string(r.id),
                            r.resource_type,
                            r.resource_name,
                            r.pattern_type,
                            r.principal,
                            r.host,
                            r.operation,
                            r.permission_type
                        ),
                        Err(e) => format!(
                            "ACCESS_CONTROL_ENTRY_RECORD(18) undecodable ({e}) bytes={}",
                            hex(&framed.message)
                        ),
                    }
                }
                (REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY, 0, _) => {
                    match decode_remove_access_control_entry(&framed.message) {
                        Ok(id) => format!(
                            "REMOVE_ACCESS_CONTROL_ENTRY_RECORD(19) version=0 id={}",
                            kraft_common::kafka_uuid::to_string(id)
                        ),
                        Err(e) => format!(
                            "REMOVE_ACCESS_CONTROL_ENTRY_RECORD(19) undecodable ({e}) bytes={}",
                            hex(&framed.message)
                        ),
                    }
                }
                (key, version, Some(name))
                    if crate::metadata::topics::is_topic_record(key, version) =>
                {
                    super::dump_topics::topic_text(name, key, version, &framed.message)
                }
                (END_TRANSACTION_RECORD_API_KEY, 0, _) => {
                    "END_TRANSACTION_RECORD(24) version=0".to_owned()
                }
                (key, version, Some(name)) => {
                    format!(
                        "{name}({key}) version={version} bytes={}",
                        hex(&framed.message)
                    )
                }
                (key, version, None) => {
                    format!(
                        "api_key={key} version={version} bytes={}",
                        hex(&framed.message)
                    )
                }
            }
        }
        Err(_) => format!(
            "value_size={} value={}",
            value.len(),
            hex(&value[..value.len().min(16)]) + if value.len() > 16 { "…" } else { "" }
        ),
    }
}

/// A broker record (0, 1, 7, 8, 17) by field, or its bytes when it does
/// not decode.
fn broker_text(name: &str, key: u32, version: u32, message: &[u8]) -> String {
    use crate::metadata::records::{
        BROKER_REGISTRATION_CHANGE_RECORD_API_KEY, BrokerEpochRecord,
        BrokerRegistrationChangeRecord, REGISTER_BROKER_RECORD_API_KEY, RegisterBrokerRecord,
    };
    let uuids = |ids: &[uuid::Uuid]| {
        ids.iter()
            .map(|u| kraft_common::kafka_uuid::to_string(*u))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = match key {
        REGISTER_BROKER_RECORD_API_KEY => {
            RegisterBrokerRecord::decode_message(message, version).map(|r| {
                format!(
                    "broker_id={} incarnation_id={} broker_epoch={} endpoints=[{}] features=[{}] rack={} fenced={} in_controlled_shutdown={} log_dirs=[{}]",
                    r.broker_id,
                    kraft_common::kafka_uuid::to_string(r.incarnation_id),
                    r.broker_epoch,
                    r.endpoints
                        .iter()
                        .map(|e| format!(
                            "{}://{}:{} (security_protocol={})",
                            e.name, e.host, e.port, e.security_protocol
                        ))
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.features
                        .iter()
                        .map(|f| format!(
                            "{}:{}-{}",
                            f.name, f.min_supported_version, f.max_supported_version
                        ))
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.rack.as_deref().unwrap_or("null"),
                    r.fenced,
                    r.in_controlled_shutdown,
                    uuids(&r.log_dirs)
                )
            })
        }
        BROKER_REGISTRATION_CHANGE_RECORD_API_KEY => {
            BrokerRegistrationChangeRecord::decode_message(message, version).map(|r| {
                format!(
                    "broker_id={} broker_epoch={} fenced={} in_controlled_shutdown={} log_dirs=[{}]",
                    r.broker_id,
                    r.broker_epoch,
                    r.fenced,
                    r.in_controlled_shutdown,
                    uuids(&r.log_dirs)
                )
            })
        }
        _ => BrokerEpochRecord::decode_message(message)
            .map(|r| format!("broker_id={} broker_epoch={}", r.broker_id, r.broker_epoch)),
    };
    match text {
        Ok(t) => format!("{name}({key}) version={version} {t}"),
        Err(e) => format!("{name}({key}) undecodable ({e}) bytes={}", hex(message)),
    }
}

/// Renders the batches of one segment or snapshot file's bytes. Returns the
/// text and whether every byte was a valid batch.
pub fn dump_batches(bytes: &[u8]) -> (String, bool) {
    let mut out = String::new();
    let mut position = 0usize;
    let mut iter = iter_batches(bytes, true);
    loop {
        let Some(item) = iter.next() else {
            return (out, true);
        };
        let (header, batch) = match item {
            Ok(b) => b,
            Err(e) => {
                let _ = writeln!(out, "error at position {position}: {e}");
                return (out, false);
            }
        };
        let _ = writeln!(
            out,
            "batch base_offset={} last_offset={} count={} epoch={} control={} crc={:#010x} size={} position={} timestamp={}",
            header.base_offset,
            header.last_offset(),
            header.records_count,
            header.partition_leader_epoch,
            header.is_control(),
            header.crc,
            header.size_in_bytes(),
            position,
            header.max_timestamp
        );
        match DecodedBatch::decode(batch) {
            Ok(decoded) => {
                for record in &decoded.records {
                    let text = if header.is_control() {
                        match ControlRecord::decode(
                            record.key.as_deref(),
                            record.value.as_deref(),
                            record.offset,
                        ) {
                            Ok(c) => control_text(&c),
                            Err(e) => format!("undecodable control record: {e}"),
                        }
                    } else {
                        data_text(record)
                    };
                    let _ = writeln!(out, "  offset={} {text}", record.offset);
                }
            }
            Err(e) => {
                let _ = writeln!(out, "  undecodable records: {e}");
            }
        }
        position = iter.position();
    }
}

fn dump_file(path: &Path, out: &mut String) -> bool {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let _ = writeln!(out, "== {name}");
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(out, "error: reading {}: {e}", path.display());
            return false;
        }
    };
    if TEXT_FILES.contains(&name.as_str()) {
        for line in String::from_utf8_lossy(&bytes).lines() {
            let _ = writeln!(out, "  {line}");
        }
        return true;
    }
    let (text, ok) = dump_batches(&bytes);
    out.push_str(&text);
    ok
}

fn dump_dir(dir: &Path, out: &mut String) -> bool {
    let mut ok = true;
    for root_file in [META_PROPERTIES_FILE, BOOTSTRAP_CHECKPOINT_FILE] {
        let path = dir.join(root_file);
        if path.is_file() {
            ok &= dump_file(&path, out);
        }
    }
    let partition = dir.join(METADATA_PARTITION_DIR);
    let partition = if partition.is_dir() {
        partition
    } else {
        dir.to_path_buf()
    };
    let mut names: Vec<String> = match std::fs::read_dir(&partition) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.ends_with(".log")
                    || n.ends_with(".checkpoint")
                    || (TEXT_FILES.contains(&n.as_str()) && n != META_PROPERTIES_FILE)
            })
            .filter(|n| n != BOOTSTRAP_CHECKPOINT_FILE)
            .collect(),
        Err(e) => {
            let _ = writeln!(out, "error: listing {}: {e}", partition.display());
            return false;
        }
    };
    // Snapshots and segments in offset order, then the text files.
    names.sort_by_key(|n| (TEXT_FILES.contains(&n.as_str()), n.clone()));
    if partition != dir {
        let _ = writeln!(out, "== {METADATA_PARTITION_DIR}/");
    }
    for name in names {
        ok &= dump_file(&partition.join(name), out);
    }
    ok
}

/// Renders every path; returns the text and whether all of it was readable.
pub fn dump(paths: &[PathBuf]) -> (String, bool) {
    let mut out = String::new();
    let mut ok = true;
    for path in paths {
        ok &= if path.is_dir() {
            dump_dir(path, &mut out)
        } else {
            dump_file(path, &mut out)
        };
    }
    (out, ok)
}

/// Runs `dump-log`: exit 0 if every file was read whole, 1 otherwise (the
/// text up to the damage is still printed).
pub fn run(args: &DumpLogArgs) -> ExitCode {
    let (text, ok) = dump(&args.paths);
    print!("{text}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod broker_record_tests {
    use super::*;
    use crate::metadata::records::{BrokerRegistrationChangeRecord, FramedRecord};

    #[test]
    fn broker_records_are_decoded_by_name() {
        let value = BrokerRegistrationChangeRecord {
            broker_id: 4,
            broker_epoch: 17,
            fenced: -1,
            ..Default::default()
        }
        .encode_framed(0);
        let framed = FramedRecord::decode(&value).expect("frame");
        assert_eq!(
            broker_text("BROKER_REGISTRATION_CHANGE_RECORD", 17, 0, &framed.message),
            "BROKER_REGISTRATION_CHANGE_RECORD(17) version=0 broker_id=4 broker_epoch=17 \
             fenced=-1 in_controlled_shutdown=0 log_dirs=[]"
        );
        assert!(broker_text("FENCE_BROKER_RECORD", 7, 0, &[0, 0]).contains("undecodable"));
    }

    #[test]
    fn producer_ids_records_are_decoded_by_name() {
        let value = crate::metadata::records::ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 42,
            next_producer_id: 2000,
        }
        .encode_framed();
        let record = DataRecord {
            offset: 0,
            timestamp: 0,
            key: None,
            value: Some(value),
        };
        assert_eq!(
            data_text(&record),
            "PRODUCER_IDS_RECORD(15) version=0 broker_id=1 broker_epoch=42 next_producer_id=2000"
        );
    }
}
