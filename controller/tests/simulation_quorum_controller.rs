//! Simulation of the quorum controller's speculative state (issue 16,
//! docs/quorum-controller.md): a leader that appends a broker registration
//! and loses leadership before it commits leaves no broker registered in any
//! node's image, and the next active controller, rebuilt from its committed
//! image, does not know the broker (its heartbeat is STALE_BROKER_EPOCH).
//! The speculative state of the lost leader saw the broker at once.
//!
//! The nodes' "images" are built here from their logs up to their high
//! watermarks with the metadata image of the controller; the harness's own
//! values (`value-N`, from elections) are not metadata records and are
//! skipped.

mod sim;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        BrokerHeartbeatRequest, BrokerRegistrationRequest,
        broker_registration_request::{Feature, Listener},
    },
    protocol::StrBytes,
};
use kraft_controller::{
    log::ReplicatedLog,
    metadata::{
        image::MetadataImage,
        records::{FeatureLevelRecord, FramedRecord, METADATA_VERSION_FEATURE},
    },
    quorum_controller::cluster_control::ClusterControl,
    raft::Role,
    record::{DecodedBatch, iter_batches},
};
use sim::{Sim, SimConfig};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

/// Node `id`'s committed image: its log's metadata records below its high
/// watermark, in offset order.
fn committed_image(sim: &Sim, id: i32) -> MetadataImage {
    let engine = sim.engine(id).expect("node is up");
    let hwm = engine.high_watermark().unwrap_or(0);
    let log = engine.log();
    let info = log
        .read(log.start_offset(), usize::MAX)
        .expect("the log reads");
    let mut image = MetadataImage::default();
    for item in iter_batches(&info.records, false) {
        let (header, bytes) = item.expect("a batch");
        if header.is_control() || header.last_offset() >= hwm {
            continue;
        }
        let batch = DecodedBatch::decode(bytes).expect("decodes");
        for r in &batch.records {
            let Some(value) = r.value.as_deref() else {
                continue;
            };
            if FramedRecord::decode(value).is_ok() {
                image.apply_record(r.offset, value).expect("applies");
            }
        }
    }
    image
}

fn registration() -> BrokerRegistrationRequest {
    BrokerRegistrationRequest::default()
        .with_broker_id(11.into())
        .with_cluster_id(StrBytes::from_static_str(CLUSTER))
        .with_incarnation_id(uuid::Uuid::from_u128(11))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("b-11"))
                .with_port(9092),
        ])
        .with_features(vec![
            Feature::default()
                .with_name(StrBytes::from_static_str(METADATA_VERSION_FEATURE))
                .with_min_supported_version(7)
                .with_max_supported_version(27),
        ])
        .with_log_dirs(vec![uuid::Uuid::from_u128(0xd111)])
}

#[test]
fn a_registration_appended_by_a_leader_that_loses_leadership_before_commit_is_in_no_image() {
    for seed in 0..5 {
        let mut cfg = SimConfig::new(seed, 3, 0);
        cfg.snapshot_every = None;
        let mut sim = Sim::new(cfg);
        let leader = sim.elect_and_commit(20_000).expect("a leader");
        // metadata.version 4.1-IV1, committed everywhere.
        let mv = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        }
        .encode_framed();
        let offset = sim.propose_records(leader, &[mv]).expect("leader appends");
        assert!(
            sim.run_until_cond(10_000, |s| [1, 2, 3].iter().all(|id| s
                .engine(*id)
                .and_then(|e| e.high_watermark())
                .is_some_and(|h| h > offset))),
            "seed {seed}: metadata.version not committed everywhere"
        );

        // The leader becomes active: its speculative state starts from its
        // committed image. Cut off, it appends a registration that cannot
        // commit; its own speculative state sees the broker at once.
        let image = committed_image(&sim, leader);
        let mut active = ClusterControl::activate(CLUSTER, &image, 9_000, sim.now);
        sim.isolate(leader);
        let next_offset = sim.engine(leader).expect("up").log().end_offset().offset;
        let decision = active
            .register_broker(
                &registration(),
                &BTreeSet::from([1, 2, 3]),
                image.features(),
                next_offset,
                sim.now,
            )
            .expect("a valid registration");
        let records: Vec<Bytes> = decision.records.clone();
        let last = sim
            .propose_records(leader, &records)
            .expect("still the leader when it appends");
        assert_eq!(
            last, next_offset,
            "seed {seed}: the epoch is the record's offset"
        );
        assert_eq!(decision.answer, next_offset);
        assert!(
            active.brokers().contains_key(&11),
            "speculative state sees it"
        );
        assert!(committed_image(&sim, leader).brokers().is_empty());

        // The majority elects another leader, which commits in its epoch.
        let others: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
        let elected = sim.run_until_cond(30_000, |s| {
            others.iter().any(|id| {
                s.engine(*id).is_some_and(|e| {
                    e.role() == Role::Leader && e.high_watermark().is_some_and(|h| h > last)
                })
            })
        });
        assert!(
            elected,
            "seed {seed}: no new leader committed past the lost append"
        );
        let new_leader = others
            .iter()
            .copied()
            .find(|id| sim.engine(*id).is_some_and(|e| e.role() == Role::Leader))
            .expect("a new leader");
        // The old leader rejoins and truncates its uncommitted tail.
        sim.heal();
        let new_epoch = sim.engine(new_leader).expect("up").epoch();
        assert!(
            sim.run_until_cond(30_000, |s| s.engine(leader).is_some_and(|e| {
                e.epoch() >= new_epoch && e.high_watermark().is_some_and(|h| h > last)
            })),
            "seed {seed}: the old leader did not catch up"
        );
        // The lost leader's speculative state is dropped with its leadership
        // (QuorumController::on_leader_change); what it appended is in no
        // node's image.
        for id in [1, 2, 3] {
            let image = committed_image(&sim, id);
            assert!(
                image.brokers().is_empty(),
                "seed {seed}: node {id} has brokers {:?}",
                image.brokers().keys().collect::<Vec<_>>()
            );
            assert_eq!(image.feature_level(METADATA_VERSION_FEATURE), Some(27));
        }
        // The new active controller, rebuilt from its committed image, does
        // not know the broker: its heartbeat is STALE_BROKER_EPOCH, and the
        // broker must register again.
        let mut rebuilt =
            ClusterControl::activate(CLUSTER, &committed_image(&sim, new_leader), 9_000, sim.now);
        let heartbeat = BrokerHeartbeatRequest::default()
            .with_broker_id(11.into())
            .with_broker_epoch(decision.answer)
            .with_current_metadata_offset(last);
        let next = sim
            .engine(new_leader)
            .expect("up")
            .log()
            .end_offset()
            .offset;
        let (error, _) = rebuilt
            .heartbeat(&heartbeat, next, sim.now)
            .expect_err("unknown broker");
        assert_eq!(error, ResponseError::StaleBrokerEpoch);
        let finalized: BTreeMap<String, i16> = committed_image(&sim, new_leader).features().clone();
        let again = rebuilt
            .register_broker(
                &registration(),
                &BTreeSet::from([1, 2, 3]),
                &finalized,
                next,
                sim.now,
            )
            .expect("registers again");
        assert_eq!(again.answer, next);
    }
}
