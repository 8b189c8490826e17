//! Leadership rules, each able to fail: fencing moves leadership and
//! shrinks ISRs, unfencing elects, AlterPartition's checks in Kafka's
//! order, ElectLeaders and the preferred-leader balance.

use kafka_protocol::messages::{
    CreateTopicsRequest, TopicName,
    alter_partition_request::{self, BrokerState},
    create_topics_request::{CreatableReplicaAssignment, CreatableTopic},
    elect_leaders_request::TopicPartitions,
};

use super::*;
use crate::quorum_controller::replication_control::tests::{broker, control, three_brokers};

/// A controller with topic `t`: partition 0 on [1, 2, 3], partition 1 on
/// [2, 3, 1], all in sync, led by their first replica.
fn with_topic() -> (ReplicationControl, BTreeMap<i32, BrokerRegistration>, Uuid) {
    let mut rc = control();
    let brokers = three_brokers();
    let assign = |p: i32, ids: &[i32]| {
        CreatableReplicaAssignment::default()
            .with_partition_index(p)
            .with_broker_ids(ids.iter().map(|b| BrokerId(*b)).collect())
    };
    let topic = CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_static_str("t")))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
        .with_assignments(vec![assign(0, &[1, 2, 3]), assign(1, &[2, 3, 1])]);
    let d = rc.create_topics(
        &CreateTopicsRequest::default().with_topics(vec![topic]),
        &brokers,
        27,
    );
    assert_eq!(d.answer.topics[0].error_code, 0);
    let id = rc.topics().by_name("t").expect("t").id;
    (rc, brokers, id)
}

fn part(rc: &ReplicationControl, id: Uuid, p: i32) -> PartitionRegistration {
    rc.topics().get(&id).expect("topic").partitions[&p].clone()
}

#[test]
fn fencing_a_leader_moves_leadership_and_shrinks_isrs() {
    let (mut rc, mut brokers, id) = with_topic();
    let before = broker_states(&brokers);
    brokers.get_mut(&1).expect("1").fenced = true;
    let records = rc.broker_changes(&before, &brokers, 27, None);
    assert_eq!(records.len(), 2);
    let p0 = part(&rc, id, 0);
    assert_eq!(
        (p0.leader, p0.isr.clone(), p0.leader_epoch),
        (2, vec![2, 3], 1)
    );
    let p1 = part(&rc, id, 1);
    assert_eq!(
        (p1.leader, p1.isr.clone(), p1.leader_epoch),
        (2, vec![2, 3], 0)
    );
    assert!(!rc.is_leader_of_any(1));
    // No change, no records.
    assert!(
        rc.broker_changes(&broker_states(&brokers), &brokers, 27, None)
            .is_empty()
    );
}

/// Only the leader's AlterPartition adds a replica to an ISR (Kafka's
/// `ReplicationControlManager`): unfencing a follower changes no partition.
/// interop_kafka_topics' step 4 relies on it to read an ISR that grows back
/// as accepted AlterPartitions.
#[test]
fn unfencing_a_follower_adds_it_to_no_isr() {
    let (mut rc, mut brokers, id) = with_topic();
    let before = broker_states(&brokers);
    brokers.get_mut(&3).expect("3").fenced = true;
    assert_eq!(rc.broker_changes(&before, &brokers, 27, None).len(), 2);
    let fenced = [part(&rc, id, 0), part(&rc, id, 1)];
    assert!(
        fenced
            .iter()
            .all(|p| !p.isr.contains(&3) && p.isr.len() == 2)
    );
    let before = broker_states(&brokers);
    brokers.get_mut(&3).expect("3").fenced = false;
    assert!(rc.broker_changes(&before, &brokers, 27, None).is_empty());
    assert_eq!([part(&rc, id, 0), part(&rc, id, 1)], fenced);
}

#[test]
fn the_last_isr_member_fenced_leaves_the_partition_offline_and_unfencing_elects_it() {
    let (mut rc, mut brokers, id) = with_topic();
    for b in [2, 3, 1] {
        let before = broker_states(&brokers);
        brokers.get_mut(&b).expect("b").fenced = true;
        rc.broker_changes(&before, &brokers, 27, None);
    }
    let p0 = part(&rc, id, 0);
    assert_eq!((p0.leader, p0.isr.clone()), (NO_LEADER, vec![1]));
    assert_eq!(rc.topics().offline_partition_count(), 2);
    // Broker 3 comes back: not in any ISR, so still offline.
    let before = broker_states(&brokers);
    brokers.get_mut(&3).expect("3").fenced = false;
    assert!(rc.broker_changes(&before, &brokers, 27, None).is_empty());
    let before = broker_states(&brokers);
    brokers.get_mut(&1).expect("1").fenced = false;
    let records = rc.broker_changes(&before, &brokers, 27, None);
    assert_eq!(records.len(), 2);
    assert_eq!(part(&rc, id, 0).leader, 1);
    assert_eq!(part(&rc, id, 1).leader, 1);
    assert_eq!(rc.topics().offline_partition_count(), 0);
}

#[test]
fn controlled_shutdown_and_unregistration_move_leadership_too() {
    let (mut rc, mut brokers, id) = with_topic();
    let before = broker_states(&brokers);
    brokers.get_mut(&2).expect("2").in_controlled_shutdown = true;
    rc.broker_changes(&before, &brokers, 27, None);
    assert!(!rc.is_leader_of_any(2));
    assert_eq!(part(&rc, id, 1).leader, 3);
    let before = broker_states(&brokers);
    brokers.remove(&3);
    rc.broker_changes(&before, &brokers, 27, None);
    assert_eq!(part(&rc, id, 1).leader, 1);
    assert_eq!(part(&rc, id, 1).isr, vec![1]);
}

fn alter(
    leader: i32,
    epoch: i64,
    topic: Uuid,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: &[(i32, i64)],
) -> AlterPartitionRequest {
    AlterPartitionRequest::default()
        .with_broker_id(BrokerId(leader))
        .with_broker_epoch(epoch)
        .with_topics(vec![
            alter_partition_request::TopicData::default()
                .with_topic_id(topic)
                .with_partitions(vec![
                    alter_partition_request::PartitionData::default()
                        .with_partition_index(0)
                        .with_leader_epoch(leader_epoch)
                        .with_partition_epoch(partition_epoch)
                        .with_new_isr_with_epochs(
                            isr.iter()
                                .map(|(b, e)| {
                                    BrokerState::default()
                                        .with_broker_id(BrokerId(*b))
                                        .with_broker_epoch(*e)
                                })
                                .collect(),
                        ),
                ]),
        ])
}

#[test]
fn alter_partition_checks_in_kafkas_order_then_changes_the_isr() {
    let (mut rc, mut brokers, id) = with_topic();
    let e = |b: i32| 10 + i64::from(b);
    let code = |d: &Decision<AlterPartitionResponse>| {
        (
            d.answer.error_code,
            d.answer.topics.first().map(|t| t.partitions[0].error_code),
        )
    };
    use ResponseError::*;
    let d = rc.alter_partition(&alter(1, 99, id, 0, 0, &[(1, e(1))]), &brokers, 27);
    assert_eq!(code(&d), (StaleBrokerEpoch.code(), None));
    let d = rc.alter_partition(
        &alter(1, e(1), Uuid::from_u128(5), 0, 0, &[(1, e(1))]),
        &brokers,
        27,
    );
    assert_eq!(code(&d), (0, Some(UnknownTopicId.code())));
    let d = rc.alter_partition(&alter(1, e(1), id, 1, 0, &[(1, e(1))]), &brokers, 27);
    assert_eq!(code(&d), (0, Some(NotController.code())));
    let d = rc.alter_partition(&alter(2, e(2), id, 0, 0, &[(1, e(1))]), &brokers, 27);
    assert_eq!(code(&d), (0, Some(InvalidRequest.code())));
    let d = rc.alter_partition(&alter(1, e(1), id, 0, 0, &[(2, e(2))]), &brokers, 27);
    assert_eq!(
        code(&d),
        (0, Some(InvalidRequest.code())),
        "ISR without the leader"
    );
    let d = rc.alter_partition(
        &alter(1, e(1), id, 0, 0, &[(1, e(1)), (2, 3)]),
        &brokers,
        27,
    );
    assert_eq!(code(&d), (0, Some(IneligibleReplica.code())), "stale epoch");
    brokers.get_mut(&3).expect("3").fenced = true;
    let d = rc.alter_partition(
        &alter(1, e(1), id, 0, 0, &[(1, e(1)), (3, e(3))]),
        &brokers,
        27,
    );
    assert_eq!(code(&d), (0, Some(IneligibleReplica.code())), "fenced");
    assert!(d.records.is_empty());
    // Shrink to [1, 2]: partition epoch 1, leader epoch unchanged.
    let d = rc.alter_partition(
        &alter(1, e(1), id, 0, 0, &[(1, e(1)), (2, e(2))]),
        &brokers,
        27,
    );
    let p = &d.answer.topics[0].partitions[0];
    assert_eq!(
        (
            p.error_code,
            p.leader_id.0,
            p.leader_epoch,
            p.partition_epoch
        ),
        (0, 1, 0, 1)
    );
    assert_eq!(p.isr, vec![BrokerId(1), BrokerId(2)]);
    assert_eq!(d.records.len(), 1);
    // The old partition epoch is now stale; a lower leader epoch is fenced.
    let d = rc.alter_partition(&alter(1, e(1), id, 0, 0, &[(1, e(1))]), &brokers, 27);
    assert_eq!(code(&d), (0, Some(InvalidUpdateVersion.code())));
    assert_eq!(part(&rc, id, 0).isr, vec![1, 2]);
}

#[test]
fn elect_leaders_and_the_balance_move_leadership_to_the_preferred_replica() {
    let (mut rc, mut brokers, id) = with_topic();
    let before = broker_states(&brokers);
    brokers.get_mut(&1).expect("1").fenced = true;
    rc.broker_changes(&before, &brokers, 27, None);
    let before = broker_states(&brokers);
    brokers.get_mut(&1).expect("1").fenced = false;
    rc.broker_changes(&before, &brokers, 27, None);
    // Broker 1 is back but out of the ISR: no preferred election possible.
    let request = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_topic_partitions(Some(vec![
            TopicPartitions::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![0, 1, 7]),
        ]));
    let d = rc.elect_leaders(&request, &brokers, 27);
    let codes: Vec<i16> = d.answer.replica_election_results[0]
        .partition_result
        .iter()
        .map(|p| p.error_code)
        .collect();
    use ResponseError::*;
    assert_eq!(
        codes,
        vec![
            PreferredLeaderNotAvailable.code(),
            ElectionNotNeeded.code(),
            UnknownTopicOrPartition.code()
        ]
    );
    assert!(rc.balance_partition_leaders(&brokers, 27).0.is_empty());
    // Back in the ISR (as AlterPartition would do): the balance elects it.
    let d = rc.alter_partition(
        &alter(2, 12, id, 1, 1, &[(2, 12), (3, 13), (1, 11)]),
        &brokers,
        27,
    );
    assert_eq!(d.answer.topics[0].partitions[0].error_code, 0);
    assert_eq!(rc.topics().preferred_replica_imbalance_count(), 1);
    let (records, more) = rc.balance_partition_leaders(&brokers, 27);
    assert_eq!((records.len(), more), (1, false));
    assert_eq!(part(&rc, id, 0).leader, 1);
    assert_eq!(rc.topics().preferred_replica_imbalance_count(), 0);
    let all = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_topic_partitions(None);
    let d = rc.elect_leaders(&all, &brokers, 27);
    assert!(
        d.answer.replica_election_results[0]
            .partition_result
            .is_empty()
    );
    let _ = broker(9, None, false);
}

#[test]
fn an_unknown_leader_recovery_state_is_refused_and_writes_nothing() {
    let (mut rc, brokers, id) = with_topic();
    let mut request = alter(1, 11, id, 0, 0, &[(1, 11), (2, 12), (3, 13)]);
    request.topics[0].partitions[0].leader_recovery_state = 2;
    let d = rc.alter_partition(&request, &brokers, 27);
    assert_eq!(
        d.answer.topics[0].partitions[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    assert!(d.records.is_empty());
    assert_eq!(part(&rc, id, 0).partition_epoch, 0);
}

#[test]
fn the_balance_stops_at_its_limit_without_changing_more_and_says_so() {
    let mut rc = control();
    let brokers = three_brokers();
    let topic = CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_static_str("many")))
        .with_num_partitions(3 * (MAX_ELECTIONS_PER_IMBALANCE as i32 + 1))
        .with_replication_factor(3);
    let d = rc.create_topics(
        &CreateTopicsRequest::default().with_topics(vec![topic]),
        &brokers,
        27,
    );
    assert_eq!(d.answer.topics[0].error_code, 0);
    // Broker 1, preferred leader of a third of the partitions (1001), is
    // fenced, then brought back in sync by hand.
    let before = broker_states(&brokers);
    let mut fenced = brokers.clone();
    fenced.get_mut(&1).expect("1").fenced = true;
    rc.broker_changes(&before, &fenced, 27, None);
    let led_by_1_before: usize = rc
        .topics()
        .partitions()
        .filter(|(_, _, p)| p.replicas[0] == 1)
        .count();
    // Broker 1 back in every ISR (as its AlterPartition expansions would do).
    let mut restored = rc.topics().clone();
    let ids: Vec<(Uuid, i32)> = restored.partitions().map(|(t, p, _)| (t.id, p)).collect();
    for (t, p) in ids {
        let mut change = crate::metadata::records::PartitionChangeRecord::new(t, p);
        let isr = &restored.get(&t).expect("t").partitions[&p].isr;
        let mut isr = isr.clone();
        if !isr.contains(&1) {
            isr.push(1);
        }
        change.isr = Some(isr);
        let framed = crate::metadata::records::FramedRecord::decode(&change.encode_framed(2))
            .expect("frame");
        restored.apply(&framed).expect("applies");
    }
    rc.topics = restored;
    let imbalanced = rc.topics().preferred_replica_imbalance_count();
    assert_eq!(imbalanced, led_by_1_before);
    assert!(imbalanced > MAX_ELECTIONS_PER_IMBALANCE, "{imbalanced}");
    let (records, more) = rc.balance_partition_leaders(&brokers, 27);
    assert_eq!((records.len(), more), (MAX_ELECTIONS_PER_IMBALANCE, true));
    assert_eq!(
        rc.topics().preferred_replica_imbalance_count(),
        imbalanced - MAX_ELECTIONS_PER_IMBALANCE
    );
    let (records, more) = rc.balance_partition_leaders(&brokers, 27);
    assert!(!more && records.len() <= MAX_ELECTIONS_PER_IMBALANCE);
    assert_eq!(rc.topics().preferred_replica_imbalance_count(), 0);
}

/// KIP-966 on (`eligible.leader.replicas.version` 1, cluster-wide
/// `min.insync.replicas` 2): fencing the ISR one by one moves the replicas
/// that leave it into the ELR and empties the ISR; an ELR member that comes
/// back leads and becomes the ISR; one back from an unclean shutdown leaves
/// the ELR and cannot lead.
#[test]
fn with_elr_replicas_leaving_an_isr_below_min_isr_stay_eligible_unless_they_shut_down_uncleanly() {
    let (mut rc, mut brokers, id) = with_topic();
    let mut configs = crate::metadata::configs::ConfigsImage::default();
    configs.apply(&crate::metadata::records::ConfigRecord {
        resource_type: 4,
        resource_name: String::new(),
        name: "min.insync.replicas".into(),
        value: Some("2".into()),
    });
    rc.elections = super::super::election_configs::ElectionConfigs::new(true, &configs);
    assert_eq!(rc.elections.min_isr("t", 3), 2);
    for b in [1, 2, 3] {
        let before = broker_states(&brokers);
        brokers.get_mut(&b).expect("broker").fenced = true;
        rc.broker_changes(&before, &brokers, 27, None);
    }
    let p0 = part(&rc, id, 0);
    assert_eq!(
        (
            p0.leader,
            p0.isr.clone(),
            p0.elr.clone(),
            p0.last_known_elr.clone()
        ),
        (NO_LEADER, vec![], vec![2, 3], vec![3])
    );
    // Broker 2 comes back from an unclean shutdown: out of the ELR.
    let before = broker_states(&brokers);
    rc.broker_changes(&before, &brokers, 27, Some(2));
    assert_eq!(part(&rc, id, 0).elr, vec![3]);
    // Broker 2 unfenced: not eligible, the partition stays offline.
    let before = broker_states(&brokers);
    brokers.get_mut(&2).expect("2").fenced = false;
    rc.broker_changes(&before, &brokers, 27, None);
    assert_eq!(part(&rc, id, 0).leader, NO_LEADER);
    // Broker 3 (clean) unfenced: it leads from the ELR and is the ISR.
    let before = broker_states(&brokers);
    brokers.get_mut(&3).expect("3").fenced = false;
    rc.broker_changes(&before, &brokers, 27, None);
    let p0 = part(&rc, id, 0);
    assert_eq!(
        (
            p0.leader,
            p0.isr.clone(),
            p0.elr.clone(),
            p0.last_known_elr.clone()
        ),
        (3, vec![3], vec![], vec![])
    );
}

/// `unclean.leader.election.enable` (Kafka's
/// `uncleanLeaderElectionEnabledForTopic` in generateLeaderAndIsrUpdates):
/// off, a partition whose ISR is down stays offline when another replica
/// comes back; on (the topic's value, over the cluster default), that
/// replica leads at once, and turning it on for an offline partition elects
/// one in the batch of the config change.
#[test]
fn unclean_leader_election_enable_lets_any_live_replica_lead_an_offline_partition() {
    use crate::metadata::{configs::ConfigsImage, records::ConfigRecord};
    let unclean = |resource_type: i8, name: &str, value: &str| ConfigRecord {
        resource_type,
        resource_name: name.into(),
        name: "unclean.leader.election.enable".into(),
        value: Some(value.into()),
    };
    let (mut rc, mut brokers, id) = with_topic();
    for b in [1, 2, 3] {
        let before = broker_states(&brokers);
        brokers.get_mut(&b).expect("broker").fenced = true;
        rc.broker_changes(&before, &brokers, 27, None);
    }
    let p0 = part(&rc, id, 0);
    assert_eq!((p0.leader, p0.isr.clone()), (NO_LEADER, vec![3]));
    // Broker 1 back: not in the ISR, and unclean election is off.
    let before = broker_states(&brokers);
    brokers.get_mut(&1).expect("1").fenced = false;
    rc.broker_changes(&before, &brokers, 27, None);
    assert_eq!(part(&rc, id, 0).leader, NO_LEADER);
    assert!(rc.elect_unclean_leaders(&brokers, 27).is_empty());
    // The cluster default on, the topic's own value off: still offline.
    let mut configs = ConfigsImage::default();
    configs.apply(&unclean(4, "", "true"));
    configs.apply(&unclean(2, "t", "false"));
    rc.configs_changed(&configs);
    assert!(rc.elect_unclean_leaders(&brokers, 27).is_empty());
    // The topic's value on: broker 1 leads both partitions, alone in the ISR.
    configs.apply(&unclean(2, "t", "true"));
    rc.configs_changed(&configs);
    assert_eq!(rc.elect_unclean_leaders(&brokers, 27).len(), 2);
    let p0 = part(&rc, id, 0);
    assert_eq!((p0.leader, p0.isr.clone()), (1, vec![1]));
    // And on a broker change: broker 1 fenced, broker 2 back: it leads.
    for (b, fenced) in [(1, true), (2, false)] {
        let before = broker_states(&brokers);
        brokers.get_mut(&b).expect("broker").fenced = fenced;
        rc.broker_changes(&before, &brokers, 27, None);
    }
    let p0 = part(&rc, id, 0);
    assert_eq!((p0.leader, p0.isr.clone()), (2, vec![2]));
}
