//! Simulation of the replication half's speculative state (issue 17,
//! docs/quorum-controller.md): a leader that appends a CreateTopics' records
//! (TopicRecord + PartitionRecords) and loses leadership before they commit
//! leaves no topic in any node's image; the next active controller, rebuilt
//! from its committed image, does not know the topic and creates it again
//! (no TOPIC_ALREADY_EXISTS), with another id. The lost leader's own
//! speculative topics saw the topic at once.
//!
//! Images are built from each node's log up to its high watermark, as in
//! `simulation_quorum_controller.rs`; the harness's own values are skipped.

mod sim;

use std::collections::BTreeMap;

use kafka_protocol::{
    messages::{CreateTopicsRequest, TopicName, create_topics_request::CreatableTopic},
    protocol::StrBytes,
};
use kraft_controller::{
    log::ReplicatedLog,
    metadata::{
        brokers::BrokerRegistration,
        records::{FeatureLevelRecord, METADATA_VERSION_FEATURE},
    },
    quorum_controller::replication_control::{ReplicationConfig, ReplicationControl},
    raft::Role,
};
use sim::{Sim, SimConfig, image::committed_image};

/// Three unfenced brokers (placement reads only ids, racks and fencing).
fn brokers() -> BTreeMap<i32, BrokerRegistration> {
    (100..103)
        .map(|id| {
            (
                id,
                BrokerRegistration {
                    incarnation_id: uuid::Uuid::from_u128(id as u128),
                    epoch: 5,
                    endpoints: vec![],
                    supported_features: vec![],
                    rack: None,
                    fenced: false,
                    in_controlled_shutdown: false,
                    is_migrating_zk_broker: false,
                    log_dirs: vec![],
                    cordoned_log_dirs: None,
                    record_offset: 0,
                },
            )
        })
        .collect()
}

fn create_orders() -> CreateTopicsRequest {
    CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("orders")))
            .with_num_partitions(6)
            .with_replication_factor(3),
    ])
}

#[test]
fn a_topic_appended_by_a_leader_that_loses_leadership_before_commit_is_in_no_image() {
    for seed in 0..5 {
        let mut cfg = SimConfig::new(seed, 3, 0);
        cfg.snapshot_every = None;
        let mut sim = Sim::new(cfg);
        let leader = sim.elect_and_commit(20_000).expect("a leader");
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

        // Active over its committed image, cut off, the leader appends the
        // topic; its speculative topics have it at once.
        let image = committed_image(&sim, leader);
        let mut active =
            ReplicationControl::activate_seeded(&image, ReplicationConfig::default(), seed);
        sim.isolate(leader);
        let base = sim.engine(leader).expect("up").log().end_offset().offset;
        let decision = active.create_topics(&create_orders(), &brokers(), 27);
        let lost_id = decision.answer.topics[0].topic_id;
        assert_eq!(decision.answer.topics[0].error_code, 0);
        assert_eq!(
            decision.records.len(),
            7,
            "TopicRecord + 6 PartitionRecords"
        );
        sim.propose_records(leader, &decision.records)
            .expect("still the leader when it appends");
        // The new leader's own records take these offsets: committing past
        // `base` means the lost ones are gone.
        let last = base;
        assert!(active.topics().by_name("orders").is_some());
        assert!(committed_image(&sim, leader).topics().is_empty());

        // The majority elects another leader, which commits in its epoch.
        let others: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
        assert!(
            sim.run_until_cond(30_000, |s| others.iter().any(|id| s
                .engine(*id)
                .is_some_and(
                    |e| e.role() == Role::Leader && e.high_watermark().is_some_and(|h| h > last)
                ))),
            "seed {seed}: no new leader committed past the lost append"
        );
        let new_leader = others
            .iter()
            .copied()
            .find(|id| sim.engine(*id).is_some_and(|e| e.role() == Role::Leader))
            .expect("a new leader");
        sim.heal();
        let new_epoch = sim.engine(new_leader).expect("up").epoch();
        assert!(
            sim.run_until_cond(30_000, |s| s.engine(leader).is_some_and(|e| {
                e.epoch() >= new_epoch && e.high_watermark().is_some_and(|h| h > last)
            })),
            "seed {seed}: the old leader did not catch up"
        );
        for id in [1, 2, 3] {
            let image = committed_image(&sim, id);
            assert!(
                image.topics().is_empty(),
                "seed {seed}: node {id} has topics {:?}",
                image
                    .topics()
                    .by_id()
                    .values()
                    .map(|t| &t.name)
                    .collect::<Vec<_>>()
            );
            assert_eq!(image.topics().partition_count(), 0);
        }

        // The next active controller does not know the topic: it creates it
        // again, with another id.
        let mut rebuilt = ReplicationControl::activate_seeded(
            &committed_image(&sim, new_leader),
            ReplicationConfig::default(),
            seed + 100,
        );
        let again = rebuilt.create_topics(&create_orders(), &brokers(), 27);
        assert_eq!(again.answer.topics[0].error_code, 0, "seed {seed}");
        assert_ne!(again.answer.topics[0].topic_id, lost_id);
    }
}
