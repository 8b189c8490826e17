//! Regenerates the seed inputs of the fuzz targets in `fuzz/seeds/<target>/`
//! from real encoded objects (the encoders the controller itself writes
//! with), so that each fuzzer starts from valid bytes and mutates from there.
//!
//! Run from the repository root: `cargo run -p kraft-controller --example
//! fuzz_seeds -- fuzz/seeds`. The layout of each target's input is in the
//! target's doc (`fuzz/fuzz_targets/<target>.rs`); this file must follow it.
//! `decode_request` seeds are not written here (they are the captured
//! requests already in `fuzz/seeds/decode_request/`).

use std::path::{Path, PathBuf};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::{
    messages::{
        ApiKey, ResponseKind,
        fetch_response::{FetchResponse, FetchableTopicResponse, PartitionData},
        vote_response::{PartitionData as VotePartition, TopicData as VoteTopic, VoteResponse},
    },
    protocol::StrBytes,
};
use kraft_controller::{
    log::{
        ElectionState, METADATA_TOPIC_ID, MetaProperties, QuorumStateStore,
        encode_partition_metadata,
        epoch_cache::{EpochEntry, LeaderEpochCache},
        snapshot::encode_bootstrap_snapshot,
    },
    metadata::{
        image::MetadataImage,
        records::{
            ConfigRecord, ControllerEndpoint, ControllerFeature, FeatureLevelRecord,
            RegisterControllerRecord, UnregisterControllerRecord, begin_transaction_record,
            end_transaction_record, no_op_record,
        },
        snapshot::encode_image_snapshot,
    },
    raft::{Endpoint, ReplicaKey, Voter, VoterSet},
    record::{
        ControlRecord, KRaftVersionRecord, LeaderChangeMessage, SnapshotFooterRecord,
        SnapshotHeaderRecord, encode_control_batch, encode_data_batch,
    },
    wire::{SUPPORTED_APIS, encode_response},
};
use uuid::Uuid;

type Error = Box<dyn std::error::Error>;

fn write(root: &Path, target: &str, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), bytes)?;
    Ok(())
}

fn voters() -> VoterSet {
    VoterSet::new((1..=3).map(|id| {
        Voter::new(
            ReplicaKey {
                id,
                directory_id: Some(Uuid::from_u128(0x1000 + id as u128)),
            },
            Some(Endpoint::new("CONTROLLER", "localhost", 9092 + id as u16)),
        )
    }))
}

fn control_records() -> Vec<(&'static str, ControlRecord)> {
    let leader_change = LeaderChangeMessage::default()
        .with_version(0)
        .with_leader_id(kafka_protocol::messages::BrokerId(2))
        .with_voters(vec![
            kafka_protocol::messages::leader_change_message::Voter::default().with_voter_id(1),
            kafka_protocol::messages::leader_change_message::Voter::default().with_voter_id(2),
        ]);
    vec![
        ("leader-change", ControlRecord::LeaderChange(leader_change)),
        (
            "snapshot-header",
            ControlRecord::SnapshotHeader(
                SnapshotHeaderRecord::default()
                    .with_version(0)
                    .with_last_contained_log_timestamp(1_764_600_000_000),
            ),
        ),
        (
            "snapshot-footer",
            ControlRecord::SnapshotFooter(SnapshotFooterRecord::default().with_version(0)),
        ),
        (
            "kraft-version",
            ControlRecord::KRaftVersion(
                KRaftVersionRecord::default()
                    .with_version(0)
                    .with_k_raft_version(1),
            ),
        ),
        ("voters", ControlRecord::Voters(voters().to_record())),
    ]
}

/// Seeds of `own_messages`: the first byte picks the message (0 the
/// UnregisterController request, 1 its response, 2 AddRaftVoter v0, 3 v1).
fn own_message_seeds(root: &Path) -> Result<(), Error> {
    use kafka_protocol::{messages::add_raft_voter_request::Listener, protocol::StrBytes};
    use kraft_controller::wire::own_messages::{
        AddRaftVoterRequestV1, UnregisterControllerRequest, UnregisterControllerResponse,
    };
    let seed = |which: u8, body: &[u8]| [&[which][..], body].concat();
    let request = UnregisterControllerRequest { controller_id: 3 }.encode(0)?;
    write(
        root,
        "own_messages",
        "unregister-request",
        &seed(0, &request),
    )?;
    let response = UnregisterControllerResponse {
        throttle_time_ms: 0,
        error_code: 136,
        error_message: Some("not registered".into()),
    }
    .encode(0)?;
    write(
        root,
        "own_messages",
        "unregister-response",
        &seed(1, &response),
    )?;
    let add = AddRaftVoterRequestV1 {
        request: kafka_protocol::messages::AddRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("AAECAwQFBgcICQoLDA0ODw")))
            .with_timeout_ms(30_000)
            .with_voter_id(4)
            .with_voter_directory_id(Uuid::from_u128(0x44))
            .with_listeners(vec![
                Listener::default()
                    .with_name(StrBytes::from_static_str("CONTROLLER"))
                    .with_host(StrBytes::from_static_str("localhost"))
                    .with_port(9093),
            ]),
        ack_when_committed: false,
    };
    write(
        root,
        "own_messages",
        "add-voter-v1",
        &seed(3, &add.encode(1)?),
    )?;
    let add_v0 = AddRaftVoterRequestV1 {
        ack_when_committed: true,
        ..add
    };
    write(
        root,
        "own_messages",
        "add-voter-v0",
        &seed(2, &add_v0.encode(0)?),
    )?;
    Ok(())
}

fn metadata_records() -> Vec<(&'static str, Bytes)> {
    let register = RegisterControllerRecord {
        controller_id: 1,
        incarnation_id: Uuid::from_u128(0xabcd),
        zk_migration_ready: false,
        endpoints: vec![ControllerEndpoint {
            name: "CONTROLLER".into(),
            host: "localhost".into(),
            port: 9093,
            security_protocol: 0,
        }],
        features: vec![ControllerFeature {
            name: "kraft.version".into(),
            min_supported_version: 0,
            max_supported_version: 1,
        }],
    };
    vec![
        (
            "feature-level",
            FeatureLevelRecord {
                name: "metadata.version".into(),
                feature_level: 27,
            }
            .encode_framed(),
        ),
        ("register-controller", register.encode_framed()),
        (
            "config",
            ConfigRecord {
                resource_type: 4,
                resource_name: String::new(),
                name: "min.insync.replicas".into(),
                value: Some("1".into()),
            }
            .encode_framed(),
        ),
        ("no-op", no_op_record()),
        (
            "begin-transaction",
            begin_transaction_record(Some("Bootstrap records")),
        ),
        ("end-transaction", end_transaction_record()),
    ]
}

/// A log as a leader writes it: a LeaderChange control batch, data batches
/// of metadata records, a second epoch.
fn log_batches(base_offset: i64) -> Result<Vec<Bytes>, Error> {
    let (_, leader_change) = control_records().swap_remove(0);
    let values: Vec<Bytes> = metadata_records().into_iter().map(|(_, v)| v).collect();
    let mut next = base_offset;
    let mut out = Vec::new();
    out.push(encode_control_batch(
        next,
        1,
        1_000,
        std::slice::from_ref(&leader_change),
    )?);
    next += 1;
    out.push(encode_data_batch(next, 1, 1_001, &values)?);
    next += values.len() as i64;
    out.push(encode_control_batch(next, 2, 1_002, &[leader_change])?);
    next += 1;
    out.push(encode_data_batch(next, 2, 1_003, &values[..2])?);
    Ok(out)
}

fn concat(batches: &[Bytes]) -> Vec<u8> {
    batches.iter().flat_map(|b| b.iter().copied()).collect()
}

fn response_seeds(root: &Path) -> Result<(), Error> {
    let batches = concat(&log_batches(0)?);
    for (index, api) in SUPPORTED_APIS.iter().enumerate() {
        let body = match api.key {
            ApiKey::Fetch => ResponseKind::Fetch(FetchResponse::default().with_responses(vec![
                FetchableTopicResponse::default()
                    .with_topic(kafka_protocol::messages::TopicName(StrBytes::from_static_str(
                        "__cluster_metadata",
                    )))
                    .with_topic_id(METADATA_TOPIC_ID)
                    .with_partitions(vec![
                        PartitionData::default()
                            .with_high_watermark(5)
                            .with_records(Some(Bytes::from(batches.clone()))),
                    ]),
            ])),
            ApiKey::Vote => ResponseKind::Vote(VoteResponse::default().with_topics(vec![
                VoteTopic::default()
                    .with_topic_name(kafka_protocol::messages::TopicName(
                        StrBytes::from_static_str("__cluster_metadata"),
                    ))
                    .with_partitions(vec![
                        VotePartition::default()
                            .with_leader_epoch(3)
                            .with_vote_granted(true),
                    ]),
            ])),
            key => default_response(key),
        };
        for version in [api.min_version, api.max_version] {
            let Ok(frame) = encode_response(42, api.key, version, &body) else {
                continue;
            };
            let mut input = vec![index as u8, (version - api.min_version) as u8];
            input.extend_from_slice(&frame);
            write(
                root,
                "decode_response",
                &format!("{:?}-v{version}", api.key).to_lowercase(),
                &input,
            )?;
        }
    }
    Ok(())
}

fn default_response(key: ApiKey) -> ResponseKind {
    use kafka_protocol::messages::*;
    match key {
        ApiKey::ApiVersions => ResponseKind::ApiVersions(ApiVersionsResponse::default()),
        ApiKey::BeginQuorumEpoch => {
            ResponseKind::BeginQuorumEpoch(BeginQuorumEpochResponse::default())
        }
        ApiKey::EndQuorumEpoch => ResponseKind::EndQuorumEpoch(EndQuorumEpochResponse::default()),
        ApiKey::DescribeQuorum => ResponseKind::DescribeQuorum(DescribeQuorumResponse::default()),
        ApiKey::FetchSnapshot => ResponseKind::FetchSnapshot(FetchSnapshotResponse::default()),
        ApiKey::DescribeCluster => {
            ResponseKind::DescribeCluster(DescribeClusterResponse::default())
        }
        ApiKey::AddRaftVoter => ResponseKind::AddRaftVoter(AddRaftVoterResponse::default()),
        ApiKey::RemoveRaftVoter => {
            ResponseKind::RemoveRaftVoter(RemoveRaftVoterResponse::default())
        }
        ApiKey::UpdateRaftVoter => {
            ResponseKind::UpdateRaftVoter(UpdateRaftVoterResponse::default())
        }
        ApiKey::ControllerRegistration => {
            ResponseKind::ControllerRegistration(ControllerRegistrationResponse::default())
        }
        _ => ResponseKind::ApiVersions(ApiVersionsResponse::default()),
    }
}

fn main() -> Result<(), Error> {
    let root: PathBuf = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("fuzz/seeds"), PathBuf::from);

    response_seeds(&root)?;

    let batches = log_batches(0)?;
    for (i, batch) in batches.iter().enumerate() {
        write(&root, "record_batch", &format!("batch-{i}"), batch)?;
    }
    write(&root, "record_batch", "log", &concat(&batches))?;

    for (name, record) in control_records() {
        let key = record.encode_key();
        let mut input = vec![key.len() as u8];
        input.extend_from_slice(&key);
        input.extend_from_slice(&record.encode_value()?);
        write(&root, "control_record", name, &input)?;
    }

    let mut image = MetadataImage::default();
    for (i, (name, value)) in metadata_records().into_iter().enumerate() {
        let mut input = (i as i64).to_be_bytes().to_vec();
        input.extend_from_slice(&value);
        write(&root, "metadata_record", name, &input)?;
        image.apply_record(i as i64, &value)?;
    }
    // Not applied to the seed image: it would remove the registration the
    // snapshot seeds carry.
    let mut input = 99i64.to_be_bytes().to_vec();
    input.extend_from_slice(&UnregisterControllerRecord { controller_id: 1 }.encode_framed());
    write(&root, "metadata_record", "unregister-controller", &input)?;

    own_message_seeds(&root)?;

    write(
        &root,
        "snapshot",
        "image",
        &encode_image_snapshot(&image, 1, voters().to_record(), 1_000)?,
    )?;
    write(
        &root,
        "snapshot",
        "image-kraft-version-0",
        &encode_image_snapshot(&image, 0, voters().to_record(), 1_000)?,
    )?;
    write(
        &root,
        "snapshot",
        "bootstrap",
        &encode_bootstrap_snapshot(1_000, 1, Some(voters().to_record()), &[])?,
    )?;

    let states = [
        ("unattached", ElectionState::default()),
        (
            "leader",
            ElectionState {
                epoch: 7,
                leader_id: Some(2),
                voted_key: None,
            },
        ),
        (
            "voted",
            ElectionState {
                epoch: 8,
                leader_id: None,
                voted_key: Some((3, Some(Uuid::from_u128(0x1003)))),
            },
        ),
    ];
    for (name, state) in states {
        write(
            &root,
            "quorum_state",
            name,
            QuorumStateStore::encode(&state).as_bytes(),
        )?;
    }
    // Kafka 3.x's data_version 0 file, as it writes it.
    write(
        &root,
        "quorum_state",
        "kafka-v0",
        br#"{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}"#,
    )?;

    let props = MetaProperties {
        cluster_id: "MkU3OEVBNTcwNTJENDM2Qk".into(),
        node_id: 1,
        directory_id: Uuid::from_u128(0x1001),
    };
    write(
        &root,
        "meta_properties",
        "meta.properties",
        props.encode("Tue Dec 01 21:00:00 UTC 2026").as_bytes(),
    )?;

    let cache = LeaderEpochCache::new(
        Path::new("."),
        vec![
            EpochEntry {
                epoch: 1,
                start_offset: 0,
            },
            EpochEntry {
                epoch: 2,
                start_offset: 8,
            },
        ],
    );
    write(
        &root,
        "leader_epoch_checkpoint",
        "leader-epoch-checkpoint",
        cache.encode().as_bytes(),
    )?;

    write(
        &root,
        "partition_metadata",
        "partition.metadata",
        encode_partition_metadata(METADATA_TOPIC_ID).as_bytes(),
    )?;

    // file_log: [u32 LE n][segment of n bytes][batches fetched after it].
    let segment = concat(&batches);
    let next = 1 + 6 + 1 + 2;
    let fetched = concat(&log_batches(next)?);
    let mut input = BytesMut::new();
    input.put_u32_le(segment.len() as u32);
    input.put_slice(&segment);
    input.put_slice(&fetched);
    write(&root, "file_log", "segment-and-fetch", &input)?;
    let mut torn = BytesMut::new();
    torn.put_u32_le(segment.len() as u32 - 7);
    torn.put_slice(&segment[..segment.len() - 7]);
    write(&root, "file_log", "torn-tail", &torn)?;
    Ok(())
}
