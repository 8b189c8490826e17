//! Leader election and ISR changes of one partition: Kafka's
//! `PartitionChangeBuilder` without reassignments, with KIP-966 eligible
//! leader replicas (ELR) when `eligible.leader.replicas.version` is 1 or more.
//!
//! [`build`] takes a partition, the ISR it should get and which brokers may
//! lead, and returns the PartitionChangeRecord that gets it there, or `None`
//! when nothing changes (Kafka's `changeRecordIsNoOp`). The election keeps a
//! leader that is still valid, else takes the first valid replica in replica
//! order, else (UNCLEAN only) the first acceptable replica with the ISR
//! forced to it and the leader marked RECOVERING, else no leader (-1). A
//! valid leader is acceptable and in the target ISR, or, when that ISR is
//! empty, in the ELR. Below `metadata.version` 3.6-IV0 an ISR shrink also
//! bumps the leader epoch (KAFKA-15021), as Kafka does.
//!
//! ELR off: an empty target ISR is not written (the last ISR member stays in
//! the ISR of an offline partition so it can lead again when it comes back),
//! and the ELR fields stay empty. ELR on (Kafka's `maybePopulateTargetElr`,
//! `maybeUpdateRecordElr`, `maybeUpdateLastKnownLeader`): while the target
//! ISR is at least the topic's `min.insync.replicas` the ELR and last known
//! ELR are empty; below it, the replicas that leave the ISR join the ELR
//! (they hold every committed record: the high watermark does not advance
//! with an ISR below min ISR), except those whose broker came back from an
//! unclean shutdown; the ISR may become empty, and then the last known ELR
//! records the last leader. A replica elected from the ELR becomes the ISR.
//! An unclean election clears both ELR fields. With ISR and ELR both empty
//! (every replica left, the last ones after an unclean shutdown) the last
//! known leader leads again once it may, marked RECOVERING (Kafka's
//! "balanced recovery", `canElectLastKnownLeader`): after a whole cluster
//! crashed, every partition comes back led by its last leader.
//!
//! Owns these rules; it must not read the image or write to the log.

use uuid::Uuid;

use crate::metadata::{
    brokers::BrokerRegistration,
    records::{NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord},
    topics::{DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED, PartitionRegistration},
};

/// `metadata.version` 3.6-IV0: from here an ISR shrink needs no leader epoch
/// bump (`MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink`).
const IBP_3_6_IV0: i16 = 12;

/// Kafka's `PartitionChangeBuilder.Election`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    /// The preferred (first) replica if valid, else as [`Election::Online`].
    Preferred,
    /// Keep a valid leader, else the first valid replica.
    Online,
    /// As online, then any acceptable replica (data may be lost).
    Unclean,
}

/// What one partition should become.
pub struct Change<'a> {
    /// The partition now.
    pub partition: &'a PartitionRegistration,
    /// Its topic.
    pub topic_id: Uuid,
    /// Its id.
    pub partition_id: i32,
    /// The ISR it should have.
    pub target_isr: Vec<i32>,
    /// The leader recovery state it should have (the current one if unset).
    pub target_recovery_state: Option<i8>,
    /// The election.
    pub election: Election,
    /// Whether a broker may lead (Kafka's `LeaderAcceptor`).
    pub acceptable: &'a dyn Fn(i32) -> bool,
    /// `metadata.version` level.
    pub metadata_level: i16,
    /// KIP-966 on: `eligible.leader.replicas.version` >= 1 finalized.
    pub elr_enabled: bool,
    /// The topic's effective `min.insync.replicas`, at most its replication
    /// factor (Kafka's `getTopicEffectiveMinIsr`).
    pub min_isr: usize,
    /// Replicas whose broker registered again after an unclean shutdown:
    /// never eligible (Kafka's `uncleanShutdownReplicas`).
    pub unclean_shutdown_replicas: &'a [i32],
}

impl std::fmt::Debug for Change<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Change")
            .field("partition", self.partition)
            .field("topic_id", &self.topic_id)
            .field("partition_id", &self.partition_id)
            .field("target_isr", &self.target_isr)
            .field("election", &self.election)
            .finish_non_exhaustive()
    }
}

/// Kafka's `LeaderAcceptor` directory check: the replica's directory is
/// online on `broker` (unassigned and migrating directories count as
/// online, as does a broker that registered none).
pub fn has_online_dir(broker: &BrokerRegistration, dir: Uuid) -> bool {
    dir == DIRECTORY_UNASSIGNED
        || dir == DIRECTORY_MIGRATING
        || broker.log_dirs.is_empty()
        || broker.log_dirs.contains(&dir)
}

/// The election over `isr` and `elr` (the targets after ELR tracking):
/// the leader and whether the election was unclean.
fn elect(c: &Change<'_>, isr: &[i32], elr: &[i32]) -> (i32, bool) {
    let p = c.partition;
    let valid =
        |r: i32| (isr.contains(&r) || (isr.is_empty() && elr.contains(&r))) && (c.acceptable)(r);
    if c.election == Election::Preferred
        && let Some(first) = p.replicas.first().copied()
        && valid(first)
    {
        return (first, false);
    }
    if p.leader != NO_LEADER && valid(p.leader) {
        return (p.leader, false);
    }
    if let Some(r) = p.replicas.iter().copied().find(|r| valid(*r)) {
        return (r, false);
    }
    // Kafka's `canElectLastKnownLeader` ("balanced recovery"): with ISR and
    // ELR both empty, the last leader leads again, marked RECOVERING, once
    // it may lead (Kafka's code returns true even when it may not; its log
    // line says the intent: "last known leader is not alive").
    if c.elr_enabled
        && isr.is_empty()
        && elr.is_empty()
        && let [last] = p.last_known_elr[..]
        && (c.acceptable)(last)
    {
        return (last, true);
    }
    if c.election == Election::Unclean
        && let Some(r) = p.replicas.iter().copied().find(|r| (c.acceptable)(*r))
    {
        return (r, true);
    }
    (NO_LEADER, false)
}

/// `items` without repeats, first occurrence kept (Kafka builds these sets
/// unordered; an order fixed by the inputs keeps records reproducible).
fn dedup(items: impl IntoIterator<Item = i32>) -> Vec<i32> {
    let mut out: Vec<i32> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Kafka's `maybePopulateTargetElr`: the ELR that goes with the target ISR
/// (the last known ELR holds the last known leader instead, written by
/// [`build`] as `maybeUpdateLastKnownLeader` does).
fn target_elr(c: &Change<'_>) -> Vec<i32> {
    let p = c.partition;
    if !c.elr_enabled {
        return p.elr.clone();
    }
    if c.target_isr.len() >= c.min_isr {
        return Vec::new();
    }
    dedup(p.elr.iter().chain(&p.isr).copied())
        .into_iter()
        .filter(|r| !c.target_isr.contains(r) && !c.unclean_shutdown_replicas.contains(r))
        .collect()
}

/// The PartitionChangeRecord for `change`, or `None` when it changes
/// nothing (Kafka's `PartitionChangeBuilder.build`).
pub fn build(change: &Change<'_>) -> Option<PartitionChangeRecord> {
    let p = change.partition;
    let mut record = PartitionChangeRecord::new(change.topic_id, change.partition_id);
    let mut target_isr = change.target_isr.clone();
    let mut elr = target_elr(change);
    let (leader, unclean) = elect(change, &target_isr, &elr);
    if leader != p.leader {
        if elr.contains(&leader) {
            target_isr = vec![leader];
            elr.retain(|r| *r != leader);
        }
        record.leader = leader;
        if unclean {
            record.isr = Some(vec![leader]);
            if p.leader_recovery_state != 1 {
                record.leader_recovery_state = 1;
            }
        }
    }
    // Kafka's `maybeUpdateRecordElr` (with the last known ELR holding the
    // last known leader, `maybeUpdateLastKnownLeader` below).
    if record.isr.is_some() || !change.elr_enabled {
        elr.clear();
    }
    if elr != p.elr {
        record.eligible_leader_replicas = Some(elr);
    }
    if record.isr.is_none() && (!target_isr.is_empty() || change.elr_enabled) && target_isr != p.isr
    {
        record.isr = Some(target_isr);
    }
    if change.metadata_level < IBP_3_6_IV0
        && record.leader == NO_LEADER_CHANGE
        && let Some(isr) = &record.isr
        && !p.isr.iter().all(|r| isr.contains(r))
    {
        record.leader = p.leader;
    }
    if change.elr_enabled {
        if record.isr.as_ref().is_some_and(Vec::is_empty)
            && (p.last_known_elr.len() != 1 || p.last_known_elr[0] != p.leader)
        {
            record.last_known_elr = Some(vec![p.leader]);
        } else if (record.leader >= 0 || (p.leader != NO_LEADER && record.leader != NO_LEADER))
            && !p.last_known_elr.is_empty()
        {
            record.last_known_elr = Some(Vec::new());
        }
    }
    if let Some(target) = change.target_recovery_state
        && target != p.leader_recovery_state
    {
        record.leader_recovery_state = target;
    }
    let no_op = record.isr.is_none()
        && record.leader == NO_LEADER_CHANGE
        && record.leader_recovery_state == -1
        && record.eligible_leader_replicas.is_none()
        && record.last_known_elr.is_none();
    (!no_op).then_some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(replicas: &[i32], isr: &[i32], leader: i32) -> PartitionRegistration {
        PartitionRegistration {
            replicas: replicas.to_vec(),
            directories: vec![DIRECTORY_MIGRATING; replicas.len()],
            isr: isr.to_vec(),
            leader,
            ..PartitionRegistration::default()
        }
    }

    fn change<'a>(
        p: &'a PartitionRegistration,
        target_isr: &[i32],
        election: Election,
        acceptable: &'a dyn Fn(i32) -> bool,
    ) -> Option<PartitionChangeRecord> {
        build(&Change {
            partition: p,
            topic_id: Uuid::from_u128(1),
            partition_id: 0,
            target_isr: target_isr.to_vec(),
            target_recovery_state: None,
            election,
            acceptable,
            metadata_level: 27,
            elr_enabled: false,
            min_isr: 1,
            unclean_shutdown_replicas: &[],
        })
    }

    /// A partition with ELR fields (replicas 1-4, leader `leader`).
    fn with_elr(
        isr: &[i32],
        elr: &[i32],
        last_known: &[i32],
        leader: i32,
    ) -> PartitionRegistration {
        PartitionRegistration {
            elr: elr.to_vec(),
            last_known_elr: last_known.to_vec(),
            ..partition(&[1, 2, 3, 4], isr, leader)
        }
    }

    /// `build` with ELR on, min ISR 3 (the settings of Kafka's
    /// `PartitionChangeBuilderTest` ELR cases), a PREFERRED election.
    fn elr_change(
        p: &PartitionRegistration,
        target_isr: &[i32],
        acceptable: &dyn Fn(i32) -> bool,
        unclean_shutdown: &[i32],
    ) -> Option<PartitionChangeRecord> {
        build(&Change {
            target_isr: target_isr.to_vec(),
            election: Election::Preferred,
            unclean_shutdown_replicas: unclean_shutdown,
            ..elr_settings(p, acceptable)
        })
    }

    /// Leader, ISR, ELR and last known ELR of a change.
    type Fields = (i32, Option<Vec<i32>>, Option<Vec<i32>>, Option<Vec<i32>>);

    fn fields(r: &PartitionChangeRecord) -> Fields {
        (
            r.leader,
            r.isr.clone(),
            r.eligible_leader_replicas.clone(),
            r.last_known_elr.clone(),
        )
    }

    // The ELR cases of Kafka's PartitionChangeBuilderTest, with the last
    // known ELR holding the last known leader (Kafka's default,
    // `useLastKnownLeaderInBalancedRecovery`).

    #[test]
    fn an_isr_shrinking_below_min_isr_puts_the_replicas_that_left_in_the_elr() {
        let p = with_elr(&[1, 2, 3, 4], &[], &[], 1);
        let r = elr_change(&p, &[1, 2], &|b| b != 3, &[]).expect("a change");
        assert_eq!(
            fields(&r),
            (NO_LEADER_CHANGE, Some(vec![1, 2]), Some(vec![3, 4]), None)
        );
        // With ELR off nothing of the ELR is written.
        let off = change(&p, &[1, 2], Election::Preferred, &|b| b != 3).expect("a change");
        assert_eq!(
            fields(&off),
            (NO_LEADER_CHANGE, Some(vec![1, 2]), None, None)
        );
    }

    #[test]
    fn an_isr_back_at_min_isr_clears_the_elr_and_the_last_known_elr() {
        let p = with_elr(&[1, 2], &[3], &[4], 1);
        let r = elr_change(&p, &[1, 2, 3], &|b| b != 3, &[]).expect("a change");
        assert_eq!(
            fields(&r),
            (
                NO_LEADER_CHANGE,
                Some(vec![1, 2, 3]),
                Some(vec![]),
                Some(vec![])
            )
        );
    }

    #[test]
    fn a_new_isr_member_not_in_the_elr_leaves_the_elr_as_it_is() {
        let p = with_elr(&[1], &[3], &[2], 1);
        let r = elr_change(&p, &[1, 4], &|b| b != 3, &[]).expect("a change");
        // The leader stays: the last known leader is cleared.
        assert_eq!(
            fields(&r),
            (NO_LEADER_CHANGE, Some(vec![1, 4]), None, Some(vec![]))
        );
    }

    #[test]
    fn a_replica_back_from_an_unclean_shutdown_leaves_the_elr() {
        let p = with_elr(&[1], &[2, 3], &[], 1);
        let r = elr_change(&p, &[1], &|b| b != 3, &[3]).expect("a change");
        assert_eq!(fields(&r), (NO_LEADER_CHANGE, None, Some(vec![2]), None));
    }

    #[test]
    fn an_elr_member_is_elected_when_the_isr_is_empty_and_becomes_the_isr() {
        let p = with_elr(&[1], &[3], &[], 1);
        let r = elr_change(&p, &[], &|b| b != 1, &[]).expect("a change");
        assert_eq!(fields(&r), (3, Some(vec![3]), Some(vec![1]), None));
        let merged = p.merge(&r);
        assert_eq!((merged.isr, merged.elr), (vec![3], vec![1]));
    }

    #[test]
    fn the_isr_may_shrink_to_empty_with_the_last_leader_remembered() {
        let p = with_elr(&[1, 2, 3, 4], &[], &[], 1);
        let r = elr_change(&p, &[], &|_| false, &[]).expect("a change");
        assert_eq!(
            fields(&r),
            (
                NO_LEADER,
                Some(vec![]),
                Some(vec![1, 2, 3, 4]),
                Some(vec![1])
            )
        );
        // Then broker 2 comes back from an unclean shutdown: it leaves the
        // ELR; the last known leader stays.
        let merged = p.merge(&r);
        let r = elr_change(&merged, &[], &|_| false, &[2]).expect("a change");
        assert_eq!(
            fields(&r),
            (NO_LEADER_CHANGE, None, Some(vec![1, 3, 4]), None)
        );
        // An unacceptable ELR member is not elected; nothing changes.
        let offline = with_elr(&[], &[3], &[1], NO_LEADER);
        assert_eq!(elr_change(&offline, &[], &|b| b != 3, &[]), None);
        // ISR and ELR empty: the last known leader leads again, RECOVERING
        // (Kafka's testEligibleLeaderReplicas_ElectLastKnownLeader), but not
        // while it may not lead.
        let lost = with_elr(&[], &[], &[1], NO_LEADER);
        assert_eq!(elr_change(&lost, &[], &|b| b != 1, &[]), None);
        let r = elr_change(&lost, &[], &|_| true, &[]).expect("a change");
        assert_eq!(fields(&r), (1, Some(vec![1]), None, Some(vec![])));
        assert_eq!(r.leader_recovery_state, 1);
    }

    #[test]
    fn an_unclean_election_clears_the_elr() {
        let p = with_elr(&[], &[3], &[1], NO_LEADER);
        let r = build(&Change {
            election: Election::Unclean,
            ..elr_settings(&p, &|b| b == 2)
        })
        .expect("a change");
        assert_eq!(
            (
                r.leader,
                r.isr.clone(),
                r.eligible_leader_replicas.clone(),
                r.leader_recovery_state
            ),
            (2, Some(vec![2]), Some(vec![]), 1)
        );
    }

    fn elr_settings<'a>(
        p: &'a PartitionRegistration,
        acceptable: &'a dyn Fn(i32) -> bool,
    ) -> Change<'a> {
        Change {
            partition: p,
            topic_id: Uuid::from_u128(1),
            partition_id: 0,
            target_isr: p.isr.clone(),
            target_recovery_state: None,
            election: Election::Online,
            acceptable,
            metadata_level: 27,
            elr_enabled: true,
            min_isr: 3,
            unclean_shutdown_replicas: &[],
        }
    }

    #[test]
    fn removing_the_leader_moves_leadership_to_the_next_isr_member() {
        let p = partition(&[1, 2, 3], &[1, 2, 3], 1);
        let r = change(&p, &[2, 3], Election::Online, &|b| b != 1).expect("a change");
        assert_eq!((r.leader, r.isr), (2, Some(vec![2, 3])));
    }

    #[test]
    fn removing_a_follower_only_shrinks_the_isr() {
        let p = partition(&[1, 2, 3], &[1, 2, 3], 1);
        let r = change(&p, &[1, 2], Election::Online, &|b| b != 3).expect("a change");
        assert_eq!((r.leader, r.isr), (NO_LEADER_CHANGE, Some(vec![1, 2])));
        // Below 3.6-IV0 the shrink bumps the leader epoch.
        let old = build(&Change {
            partition: &p,
            topic_id: Uuid::from_u128(1),
            partition_id: 0,
            target_isr: vec![1, 2],
            target_recovery_state: None,
            election: Election::Online,
            acceptable: &|b| b != 3,
            metadata_level: 11,
            elr_enabled: false,
            min_isr: 1,
            unclean_shutdown_replicas: &[],
        })
        .expect("a change");
        assert_eq!(old.leader, 1);
    }

    #[test]
    fn the_last_isr_member_leaving_makes_the_partition_offline_keeping_the_isr() {
        let p = partition(&[1, 2, 3], &[1], 1);
        let r = change(&p, &[], Election::Online, &|b| b != 1).expect("a change");
        assert_eq!((r.leader, r.isr), (NO_LEADER, None));
    }

    #[test]
    fn an_acceptable_isr_member_leads_an_offline_partition() {
        let p = partition(&[1, 2, 3], &[2], NO_LEADER);
        assert_eq!(change(&p, &[2], Election::Online, &|b| b == 3), None);
        let r = change(&p, &[2], Election::Online, &|b| b == 2).expect("a change");
        assert_eq!((r.leader, r.isr), (2, None));
    }

    #[test]
    fn unclean_election_takes_any_acceptable_replica_and_marks_it_recovering() {
        let p = partition(&[1, 2, 3], &[1], NO_LEADER);
        let r = change(&p, &[1], Election::Unclean, &|b| b == 3).expect("a change");
        assert_eq!(
            (r.leader, r.isr.clone(), r.leader_recovery_state),
            (3, Some(vec![3]), 1)
        );
    }

    #[test]
    fn preferred_election_moves_leadership_back_to_the_first_replica() {
        let p = partition(&[1, 2, 3], &[1, 2, 3], 2);
        let r = change(&p, &[1, 2, 3], Election::Preferred, &|_| true).expect("a change");
        assert_eq!(r.leader, 1);
        assert_eq!(change(&p, &[1, 2, 3], Election::Online, &|_| true), None);
        assert_eq!(
            change(&p, &[1, 2, 3], Election::Preferred, &|b| b != 1),
            None
        );
    }
}
