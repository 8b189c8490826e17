//! The epoch states of a replica and the legal transitions between them
//! (Kafka's `QuorumState` and `EpochState`), plus the election state that is
//! persisted in the `quorum-state` file.
//!
//! Owns which transition is legal; it must not do I/O: the engine emits a
//! [`super::Command::PersistElectionState`] whenever the persisted part changes.
//!
//! # Legal transitions (KIP-595 with KIP-996 pre-vote, as Kafka 4.1)
//!
//! `e` is the current epoch. "Voter" means: a member of the set elections
//! are held in (`RaftEngine::election_voters`: the current voter set, or the
//! one before an uncommitted change that removed this node).
//!
//! | from | to | when |
//! |---|---|---|
//! | Unattached(e) | Unattached(e' > e) | a request or response carries a higher epoch and no leader |
//! | Unattached(e) | Unattached(e) voted | this voter grants its one vote of epoch e |
//! | Unattached(e) | Prospective(e) | voter only: the election timeout expires |
//! | Unattached(e) | Follower(e' >= e) | a leader of epoch e' is discovered |
//! | Prospective(e) | Unattached(e' > e) | a higher epoch without a leader |
//! | Prospective(e) | Prospective(e) | the election timeout expires: a new pre-vote round |
//! | Prospective(e) | Candidate(e + 1) | a majority granted the pre-vote |
//! | Prospective(e) | Follower(e' >= e) | a leader of epoch e' is discovered |
//! | Candidate(e) | Unattached(e' > e) | a higher epoch without a leader |
//! | Candidate(e) | Prospective(e) | the election timeout expires (the election was lost or split) |
//! | Candidate(e) | Leader(e) | a majority granted the vote |
//! | Candidate(e) | Follower(e' >= e) | a leader of epoch e' is discovered |
//! | Follower(e) | Unattached(e' > e) | a higher epoch without a leader |
//! | Follower(e) | Prospective(e) | voter only: the fetch timeout expires |
//! | Follower(e) | Follower(e' > e) | a leader of a higher epoch is discovered |
//! | Leader(e) | Unattached(e' > e) | a higher epoch without a leader |
//! | Leader(e) | Resigned(e) | check-quorum fails, shutdown, or its own removal commits |
//! | Leader(e) | Follower(e' > e) | a leader of a higher epoch is discovered |
//! | Resigned(e) | Unattached(e' > e) | a higher epoch without a leader; or e + 1 when its election timeout expires |
//! | Resigned(e) | Prospective(e) | (allowed, unused: Kafka 4 goes through Unattached(e + 1)) |
//! | Resigned(e) | Follower(e' > e) | a leader of a higher epoch is discovered |
//!
//! Only voters may be Prospective, Candidate or Leader; an observer moves
//! between Unattached and Follower only. Anything else is a
//! [`TransitionError`]. A node whose `quorum-state` says it led epoch e starts
//! as Resigned(e), so it never leads e again (its unflushed batches of e may be
//! lost, and (offset, epoch) must name one record forever).

use super::voters::ReplicaKey;

/// The part of the state that survives a restart: Kafka's `ElectionState`,
/// stored as the `quorum-state` file (`leaderEpoch`, `leaderId`, `votedId`,
/// `votedDirectoryId`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ElectionState {
    /// The epoch (Kafka's `leaderEpoch`).
    pub epoch: i32,
    /// The known leader of `epoch`, if any.
    pub leader_id: Option<i32>,
    /// Whom this node voted for in `epoch`, if anyone (itself as candidate).
    pub voted_key: Option<ReplicaKey>,
}

/// The role of a replica, as reported by status and DescribeQuorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// No known leader in the current epoch (may have voted).
    Unattached,
    /// KIP-996: asking for pre-votes without raising the epoch.
    Prospective,
    /// Asking for votes in a new epoch.
    Candidate,
    /// Fetching from a known leader.
    Follower,
    /// The leader of the current epoch.
    Leader,
    /// A former leader of the current epoch that no longer accepts writes.
    Resigned,
}

impl Role {
    /// Kafka's lower-case name of the state (as in its logs and metrics).
    pub fn name(self) -> &'static str {
        match self {
            Self::Unattached => "unattached",
            Self::Prospective => "prospective",
            Self::Candidate => "candidate",
            Self::Follower => "follower",
            Self::Leader => "leader",
            Self::Resigned => "resigned",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A transition the table in the module doc does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "illegal transition from {from} at epoch {from_epoch} to {to} at epoch {to_epoch} \
     (voter: {is_voter}); see the table in raft/quorum_state.rs"
)]
pub struct TransitionError {
    /// Current role.
    pub from: Role,
    /// Current epoch.
    pub from_epoch: i32,
    /// Requested role.
    pub to: Role,
    /// Requested epoch.
    pub to_epoch: i32,
    /// Whether this node is in the current voter set.
    pub is_voter: bool,
}

/// Checks one transition against the table in the module doc.
///
/// `same_state_vote` marks Unattached(e) → Unattached(e) granting a vote.
///
/// Errors: [`TransitionError`] for anything not in the table.
pub fn check_transition(
    from: Role,
    from_epoch: i32,
    to: Role,
    to_epoch: i32,
    is_voter: bool,
    same_state_vote: bool,
) -> Result<(), TransitionError> {
    use Role::*;
    let err = || TransitionError {
        from,
        from_epoch,
        to,
        to_epoch,
        is_voter,
    };
    if matches!(to, Prospective | Candidate | Leader) && !is_voter {
        return Err(err());
    }
    let e = from_epoch;
    let ok = match (from, to) {
        (_, Unattached) if to_epoch > e => true,
        (Unattached, Unattached) => to_epoch == e && same_state_vote,
        (Unattached | Prospective | Candidate, Follower) => to_epoch >= e,
        (Follower | Leader | Resigned, Follower) => to_epoch > e,
        (Unattached | Prospective | Candidate | Follower | Resigned, Prospective) => to_epoch == e,
        (Prospective, Candidate) => to_epoch == e + 1,
        (Candidate, Leader) => to_epoch == e,
        (Leader, Resigned) => to_epoch == e,
        _ => false,
    };
    if ok { Ok(()) } else { Err(err()) }
}

#[cfg(test)]
mod tests {
    use super::{Role::*, *};

    #[test]
    fn an_observer_can_never_become_prospective_candidate_or_leader() {
        for from in [Unattached, Follower] {
            for to in [Prospective, Candidate, Leader] {
                for to_epoch in [3, 4] {
                    assert!(check_transition(from, 3, to, to_epoch, false, false).is_err());
                }
            }
        }
    }

    #[test]
    fn a_leader_cannot_become_a_follower_in_its_own_epoch() {
        let err = check_transition(Leader, 5, Follower, 5, true, false).expect_err("illegal");
        assert_eq!(err.to_epoch, 5);
        assert!(check_transition(Leader, 5, Follower, 6, true, false).is_ok());
    }

    #[test]
    fn a_candidate_only_comes_from_a_prospective_with_the_next_epoch() {
        assert!(check_transition(Prospective, 2, Candidate, 3, true, false).is_ok());
        assert!(check_transition(Prospective, 2, Candidate, 2, true, false).is_err());
        assert!(check_transition(Follower, 2, Candidate, 3, true, false).is_err());
        assert!(check_transition(Unattached, 2, Candidate, 3, true, false).is_err());
    }

    #[test]
    fn epochs_never_go_back() {
        for from in [
            Unattached,
            Prospective,
            Candidate,
            Follower,
            Leader,
            Resigned,
        ] {
            for to in [
                Unattached,
                Prospective,
                Candidate,
                Follower,
                Leader,
                Resigned,
            ] {
                assert!(check_transition(from, 4, to, 3, true, true).is_err());
            }
        }
    }
}
