//! Leader election and ISR changes of one partition: Kafka's
//! `PartitionChangeBuilder` without reassignments and without KIP-966 ELR
//! (this controller writes no ELR: the ELR fields stay empty, and an ISR is
//! never emptied, as Kafka does with ELR off).
//!
//! [`build`] takes a partition, the ISR it should get and which brokers may
//! lead, and returns the PartitionChangeRecord that gets it there, or `None`
//! when nothing changes (Kafka's `changeRecordIsNoOp`). The election keeps a
//! leader that is still valid (in the target ISR and acceptable), else takes
//! the first valid replica in replica order, else (UNCLEAN only) the first
//! acceptable replica with the ISR forced to it and the leader marked
//! RECOVERING, else no leader (-1). An empty target ISR is not written: the
//! last ISR member stays in the ISR of an offline partition so it can lead
//! again when it comes back. Below `metadata.version` 3.6-IV0 an ISR shrink
//! also bumps the leader epoch (KAFKA-15021), as Kafka does.
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

fn elect(c: &Change<'_>) -> (i32, bool) {
    let p = c.partition;
    let valid = |r: i32| c.target_isr.contains(&r) && (c.acceptable)(r);
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
    if c.election == Election::Unclean
        && let Some(r) = p.replicas.iter().copied().find(|r| (c.acceptable)(*r))
    {
        return (r, true);
    }
    (NO_LEADER, false)
}

/// The PartitionChangeRecord for `change`, or `None` when it changes
/// nothing (Kafka's `PartitionChangeBuilder.build`).
pub fn build(change: &Change<'_>) -> Option<PartitionChangeRecord> {
    let p = change.partition;
    let mut record = PartitionChangeRecord::new(change.topic_id, change.partition_id);
    let (leader, unclean) = elect(change);
    if leader != p.leader {
        record.leader = leader;
        if unclean {
            record.isr = Some(vec![leader]);
            if p.leader_recovery_state != 1 {
                record.leader_recovery_state = 1;
            }
        }
    }
    if record.isr.is_none() && !change.target_isr.is_empty() && change.target_isr != p.isr {
        record.isr = Some(change.target_isr.clone());
    }
    if change.metadata_level < IBP_3_6_IV0
        && record.leader == NO_LEADER_CHANGE
        && let Some(isr) = &record.isr
        && !p.isr.iter().all(|r| isr.contains(r))
    {
        record.leader = p.leader;
    }
    if let Some(target) = change.target_recovery_state
        && target != p.leader_recovery_state
    {
        record.leader_recovery_state = target;
    }
    let no_op = record.isr.is_none()
        && record.leader == NO_LEADER_CHANGE
        && record.leader_recovery_state == -1;
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
        })
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
