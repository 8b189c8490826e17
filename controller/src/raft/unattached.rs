//! Unattached: no known leader in the current epoch, perhaps with a vote
//! granted (Kafka's `UnattachedState`, which since 4.0 also covers "voted").
//!
//! A voter waits out its randomised election timeout and becomes Prospective;
//! an observer never does. Both fetch from the bootstrap servers meanwhile
//! (one at a time, round robin) to discover the leader (KIP-853): the answer
//! names it. Must not send votes or accept writes.
//!
//! Imports only the leaves (`core`, `output`) and the fetch loop of
//! `follower.rs`; the engine performs the transitions this state asks for.

use super::{
    ElectionState, RaftRequest, RequestId,
    core::{Core, Next},
    follower::{FetchLoop, fetch_request},
    output::{Output, RequestKind},
    voters::ReplicaKey,
};
use crate::log::ReplicatedLog;

/// State of an unattached replica.
#[derive(Debug)]
pub(crate) struct UnattachedState {
    pub(crate) epoch: i32,
    pub(crate) voted_key: Option<ReplicaKey>,
    /// `u64::MAX` for an observer.
    pub(crate) election_deadline_ms: u64,
    /// Fetches to bootstrap servers (observers), to learn the leader.
    pub(crate) fetch: FetchLoop,
}

impl UnattachedState {
    /// Unattached at `epoch` with `voted_key`: a voter waits for its election
    /// timeout; meanwhile voters and observers ask the bootstrap servers for
    /// the leader (KIP-853).
    pub(crate) fn new<L: ReplicatedLog>(
        core: &mut Core<L>,
        epoch: i32,
        voted_key: Option<ReplicaKey>,
        now_ms: u64,
    ) -> Self {
        let election_deadline_ms = if core.can_campaign() {
            now_ms + core.random_election_timeout()
        } else {
            u64::MAX
        };
        let next_fetch_ms = if core.config.bootstrap_servers.is_empty() {
            u64::MAX
        } else {
            now_ms
        };
        Self {
            epoch,
            voted_key,
            election_deadline_ms,
            fetch: FetchLoop {
                next_fetch_ms,
                ..Default::default()
            },
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        self.election_deadline_ms.min(self.fetch.next_deadline())
    }

    /// The election state this role implies.
    pub(crate) fn election_state(&self) -> ElectionState {
        ElectionState {
            epoch: self.epoch,
            leader_id: None,
            voted_key: self.voted_key,
        }
    }

    /// Campaigns once the election timeout passed; else asks the next
    /// bootstrap server for the leader.
    pub(crate) fn poll<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Option<Next> {
        if core.can_campaign() && now_ms >= self.election_deadline_ms {
            return Some(Next::Prospective);
        }
        if !core.config.bootstrap_servers.is_empty()
            && self.fetch.ready_to_send(&core.log, out, now_ms)
        {
            let node_id = core.next_bootstrap_id();
            let request = fetch_request(core, self.epoch);
            let id = core.send(
                out,
                node_id,
                RequestKind::Fetch,
                self.epoch,
                RaftRequest::Fetch(request),
            );
            self.fetch.inflight = Some(id);
        }
        None
    }

    /// Whether a (pre-)vote for `candidate` is granted: one vote per epoch.
    pub(crate) fn grants_vote(
        &self,
        candidate: ReplicaKey,
        up_to_date: bool,
        pre_vote: bool,
    ) -> bool {
        match self.voted_key {
            Some(voted) if !pre_vote => voted.matches(&candidate) && voted.id == candidate.id,
            _ => up_to_date,
        }
    }

    /// The answer (or failure) of the bootstrap Fetch `id`: it named no
    /// leader of a newer epoch, so ask again after the backoff.
    pub(crate) fn on_fetch_done(&mut self, id: RequestId, retry_at_ms: u64) {
        self.fetch.done(id, retry_at_ms);
    }
}
