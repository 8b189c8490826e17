//! The engine's shared state, whatever the role: the configuration, this
//! node's identity, the log, the voter-set history (and `voters()` read from
//! it), the high watermark and kraft.version, with the helpers every role
//! uses on them (election voters, destinations, the control records of the
//! log and of snapshots, truncation, log cleaning).
//!
//! A leaf: it imports no role and no engine. Must not hold anything that
//! belongs to one role (that is in the role's state), nor emit commands but
//! through the [`Output`] it is given.

use kafka_protocol::{ResponseError, messages::TopicName, protocol::StrBytes};
use rand::RngCore;

use super::{
    Command, Destination, METADATA_TOPIC, RaftConfig, RaftError, RaftRequest, RequestId, Result,
    output::{Output, RequestKind},
    voters::{Endpoint, ReplicaKey, VoterHistory, VoterSet},
};
use crate::{
    log::{OffsetAndEpoch, ReplicatedLog},
    record::{ControlRecord, DecodedBatch, iter_batches},
};

/// Kafka's `Uuid.METADATA_TOPIC_ID` (`AAAAAAAAAAAAAAAAAAAAAQ`).
pub(crate) fn metadata_topic_id() -> uuid::Uuid {
    uuid::Uuid::from_u128(1)
}

/// The metadata topic's name as Raft requests carry it.
pub(crate) fn topic_name() -> TopicName {
    TopicName(StrBytes::from_static_str(METADATA_TOPIC))
}

/// The wire code of `e`.
pub(crate) fn error_code(e: ResponseError) -> i16 {
    e.code()
}

/// What responses say about the current epoch: its number, its known
/// leader, and the leader's endpoint as this node knows it (for
/// `node_endpoints`). Computed by the engine from the role state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EpochView {
    pub(crate) epoch: i32,
    pub(crate) leader_id: Option<i32>,
    pub(crate) leader_endpoint: Option<(i32, Endpoint)>,
}

/// A transition a role asks for; the engine performs it (the role files
/// do not know each other's states).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Prospective in the current epoch: a (new) pre-vote round.
    Prospective,
    /// Candidate at epoch + 1: the pre-vote was won.
    Candidate,
    /// Leader of the candidate's epoch, with the voters that granted.
    Leader { granting: Vec<i32> },
    /// Leader -> Resigned in its epoch.
    Resign,
    /// Unattached at `epoch`, with no vote.
    Unattached { epoch: i32 },
}

/// The shared state of the engine (see the module doc).
pub(crate) struct Core<L: ReplicatedLog> {
    pub(crate) config: RaftConfig,
    pub(crate) local: ReplicaKey,
    pub(crate) log: L,
    rng: Box<dyn RngCore + Send>,
    voter_history: VoterHistory,
    pub(crate) high_watermark: Option<i64>,
    /// The highest high watermark told to the runtime ([`Command::Committed`]).
    committed_notified: i64,
    pub(crate) kraft_version: i16,
    /// Round robin over `bootstrap_servers`.
    next_bootstrap: usize,
}

impl<L: ReplicatedLog> Core<L> {
    pub(crate) fn new(config: RaftConfig, log: L, rng: Box<dyn RngCore + Send>) -> Self {
        let local = ReplicaKey {
            id: config.node_id,
            directory_id: config.directory_id,
        };
        let voter_history = VoterHistory::new(config.voters.clone());
        let kraft_version = config.kraft_version;
        Self {
            config,
            local,
            log,
            rng,
            voter_history,
            high_watermark: None,
            committed_notified: 0,
            kraft_version,
            next_bootstrap: 0,
        }
    }

    /// The current voter set: the newest in the history.
    pub(crate) fn voters(&self) -> &VoterSet {
        self.voter_history.latest()
    }

    pub(crate) fn voter_history(&self) -> &VoterHistory {
        &self.voter_history
    }

    /// Whether this node is in the current voter set.
    pub(crate) fn is_voter(&self) -> bool {
        self.voters().contains_key(&self.local)
    }

    /// Whether the newest `Voters` record is not known to be committed: it is
    /// at or above the high watermark (or the high watermark is unknown, as
    /// after a restart) and not below the end offset of the latest snapshot.
    /// A snapshot holds only committed data (KIP-630), so the voter set read
    /// from one, or a record one covers, is committed whatever this node's
    /// high watermark says; taking it for uncommitted would let a node that
    /// was removed campaign in the set before it (`previous()`, which after a
    /// snapshot is the bootstrap set, perhaps many changes older).
    pub(crate) fn uncommitted_voter_change(&self) -> bool {
        let snapshot_end = self.log.latest_snapshot_id().map_or(0, |s| s.offset);
        self.voter_history
            .latest_offset()
            .is_some_and(|o| o >= snapshot_end && self.high_watermark.is_none_or(|hw| o >= hw))
    }

    /// See [`super::RaftEngine::election_voters`].
    pub(crate) fn election_voters(&self) -> &VoterSet {
        let latest = self.voter_history.latest();
        if latest.contains_key(&self.local) {
            return latest;
        }
        let previous = self.voter_history.previous();
        if self.uncommitted_voter_change() && previous.contains_key(&self.local) {
            previous
        } else {
            latest
        }
    }

    /// Whether this node may become Prospective, Candidate or Leader.
    pub(crate) fn can_campaign(&self) -> bool {
        self.election_voters().contains_key(&self.local)
    }

    /// A fresh election timeout in `[T, 2T)` (ms).
    pub(crate) fn random_election_timeout(&mut self) -> u64 {
        let t = self.config.election_timeout_ms.max(1);
        t + self.rng.next_u64() % t
    }

    /// The fetch timeout of a new follower state (ms), drawn once for the
    /// state: a voter's is the configured F plus a jitter in `[0, F / 10)`,
    /// so that followers made or answered in the same step do not become
    /// Prospective in the same millisecond and split the vote (Kafka's
    /// `FollowerState` uses F alone; decisions D20); an observer's, which
    /// never campaigns, is F.
    pub(crate) fn follower_fetch_timeout(&mut self) -> u64 {
        let f = self.config.fetch_timeout_ms;
        if !self.can_campaign() {
            return f;
        }
        f + self.rng.next_u64() % (f / 10).max(1)
    }

    pub(crate) fn cluster_id_matches(&self, cluster_id: Option<&StrBytes>) -> bool {
        match (&self.config.cluster_id, cluster_id) {
            (Some(ours), Some(theirs)) => ours.as_str() == theirs.as_str(),
            _ => true,
        }
    }

    pub(crate) fn cluster_id_wire(&self) -> Option<StrBytes> {
        self.config.cluster_id.clone().map(StrBytes::from_string)
    }

    /// Where node `node_id` is: a bootstrap server for a negative id, else
    /// the voter's first endpoint.
    pub(crate) fn destination(&self, node_id: i32) -> Destination {
        if node_id < 0 {
            let index = usize::try_from(-(node_id + 1)).unwrap_or(usize::MAX);
            return Destination {
                node_id,
                endpoint: self.config.bootstrap_servers.get(index).cloned(),
            };
        }
        Destination {
            node_id,
            endpoint: self
                .voters()
                .get(node_id)
                .and_then(|v| v.endpoints.first().cloned()),
        }
    }

    /// Sends `request` to node `node_id` in `epoch` (see [`Output::send`]).
    pub(crate) fn send(
        &self,
        out: &mut Output,
        node_id: i32,
        kind: RequestKind,
        epoch: i32,
        request: RaftRequest,
    ) -> RequestId {
        self.send_to(out, self.destination(node_id), kind, epoch, request)
    }

    /// Sends `request` to `destination` in `epoch`, with the request timeout.
    pub(crate) fn send_to(
        &self,
        out: &mut Output,
        destination: Destination,
        kind: RequestKind,
        epoch: i32,
        request: RaftRequest,
    ) -> RequestId {
        out.send(
            destination,
            kind,
            epoch,
            request,
            self.config.request_timeout_ms,
        )
    }

    /// The next bootstrap server, round robin (its negative node id).
    pub(crate) fn next_bootstrap_id(&mut self) -> i32 {
        let n = self.config.bootstrap_servers.len().max(1);
        let index = self.next_bootstrap % n;
        self.next_bootstrap = self.next_bootstrap.wrapping_add(1);
        -(index as i32) - 1
    }

    /// The view of an epoch led by `leader_id` (`hint`: the leader's
    /// endpoint as a follower learned it).
    pub(crate) fn view(
        &self,
        epoch: i32,
        leader_id: Option<i32>,
        hint: Option<&Endpoint>,
    ) -> EpochView {
        let leader_endpoint = leader_id.and_then(|leader| {
            hint.cloned()
                .or_else(|| {
                    self.voters()
                        .get(leader)
                        .and_then(|v| v.endpoints.first().cloned())
                })
                .map(|e| (leader, e))
        });
        EpochView {
            epoch,
            leader_id,
            leader_endpoint,
        }
    }

    /// Sets the high watermark if it grows, and tells the layer above.
    pub(crate) fn advance_high_watermark(&mut self, hw: i64, out: &mut Output) {
        if self.high_watermark.is_none_or(|old| hw > old) {
            self.high_watermark = Some(hw);
            if hw > self.committed_notified {
                self.committed_notified = hw;
                out.push(Command::Committed { high_watermark: hw });
            }
        }
    }

    /// Truncates the log to `offset`, refusing to cut committed data.
    pub(crate) fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if let Some(hw) = self.high_watermark
            && offset < hw
        {
            return Err(RaftError::TruncateBelowHighWatermark {
                offset,
                high_watermark: hw,
            });
        }
        self.log.truncate_to(offset)?;
        self.voter_history.truncate(offset);
        if self.voter_history.latest_offset().is_none() {
            // A truncated kraft.version upgrade (its KRaftVersion and Voters
            // records share one batch): back to the configured level.
            self.kraft_version = self.config.kraft_version;
        }
        Ok(())
    }

    /// Kafka's `maybeClean` against the retention: deletes the oldest
    /// snapshots and the log below the next while the retention is exceeded.
    pub(crate) fn clean_log(&mut self, now_ms: u64) -> Result<()> {
        let retention = self.config.retention;
        if self.log.maybe_clean(&retention, now_ms)? {
            tracing::info!(
                node = self.local.id,
                log_start_offset = self.log.start_offset(),
                "metadata log cleaned"
            );
        }
        Ok(())
    }

    /// Whether the bootstrap voter set still has to be written to the log
    /// (kraft.version 1 and no `Voters` record yet): the first leader writes
    /// KRaftVersion and Voters in the batch of its LeaderChange.
    pub(crate) fn needs_bootstrap_records(&self) -> bool {
        self.kraft_version >= 1 && self.voter_history.latest_offset().is_none()
    }

    /// A `Voters` record with `set` was appended at `offset`: in effect now.
    pub(crate) fn push_voters(&mut self, offset: i64, set: VoterSet) {
        self.voter_history.push(offset, set);
    }

    /// Reads the control records of the log from `from_offset` on, and applies
    /// KRaftVersion and Voters records to the voter-set history.
    pub(crate) fn scan_control_records(&mut self, from_offset: i64) -> Result<()> {
        let start = from_offset.max(self.log.start_offset());
        let info = self.log.read(start, usize::MAX)?;
        self.apply_control_records(&info.records, start)
    }

    /// Applies the KRaftVersion and Voters records of `batches` (whole
    /// batches, as just appended to the log) at offsets from `start` on: what
    /// [`Self::scan_control_records`] does without reading back from the log
    /// what the caller holds in memory (a follower's fetched batches).
    pub(crate) fn apply_control_records(&mut self, batches: &[u8], start: i64) -> Result<()> {
        for item in iter_batches(batches, false) {
            let (header, bytes) = item?;
            if !header.is_control() || header.next_offset() <= start {
                continue;
            }
            let batch = DecodedBatch::decode(bytes)?;
            for (record, control) in batch.records.iter().zip(batch.control_records()?) {
                match control {
                    ControlRecord::KRaftVersion(v) => {
                        self.kraft_version = self.kraft_version.max(v.k_raft_version);
                    }
                    ControlRecord::Voters(v) => {
                        self.voter_history
                            .push(record.offset, VoterSet::from_record(&v));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Reads the voter set and kraft.version of the latest snapshot (if any
    /// beyond the bootstrap `0-0` checkpoint) into the voter-set history;
    /// returns the offset to scan the log from (the snapshot's end, else the
    /// log start).
    ///
    /// Errors: a log read failure; a snapshot whose control records do not
    /// decode.
    pub(crate) fn load_latest_snapshot_control_records(&mut self) -> Result<i64> {
        let start = self.log.start_offset();
        match self.log.latest_snapshot_id().filter(|id| id.offset > 0) {
            Some(id) if id.offset >= start => {
                self.load_snapshot_control_records(id)?;
                Ok(id.offset)
            }
            _ => Ok(start),
        }
    }

    /// Applies the KRaftVersion and Voters records of snapshot `id` (KIP-853:
    /// the voter set in effect at its end offset).
    pub(crate) fn load_snapshot_control_records(&mut self, id: OffsetAndEpoch) -> Result<()> {
        let Some(bytes) = self.log.read_snapshot(id)? else {
            return Ok(());
        };
        let damaged = |position: usize, e: &dyn std::fmt::Display| RaftError::DamagedSnapshot {
            file: crate::log::snapshot::snapshot_file_name(id),
            reason: format!("batch at byte {position}: {e}"),
        };
        let mut position = 0usize;
        for item in iter_batches(&bytes, true) {
            let (header, batch) = item.map_err(|e| damaged(position, &e))?;
            let at = position;
            position += header.size_in_bytes();
            if !header.is_control() {
                continue;
            }
            let controls = DecodedBatch::decode(batch)
                .and_then(|b| b.control_records())
                .map_err(|e| damaged(at, &e))?;
            for control in controls {
                match control {
                    ControlRecord::KRaftVersion(v) => {
                        self.kraft_version = self.kraft_version.max(v.k_raft_version);
                    }
                    ControlRecord::Voters(v) => {
                        self.voter_history
                            .reset_at(id.offset - 1, VoterSet::from_record(&v));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
