//! Follower: fetches from the leader of the current epoch (KIP-595 pull
//! replication), truncates a diverging tail, appends what it receives,
//! flushes, and only then fetches again, so every offset it reports to the
//! leader is durable. A voter whose fetches fail for the fetch timeout (plus
//! its jitter, decisions D20) becomes Prospective; an observer falls back to
//! the bootstrap servers.
//! When the leader answers a Fetch with a snapshot id (the fetch offset is
//! below its log start), the follower fetches that snapshot in chunks
//! instead (KIP-630, `fetch_snapshot.rs` extends this state), installs it,
//! then fetches again. Must not accept writes or grant votes in its epoch
//! (only pre-votes, once its leader has been silent for the fetch timeout,
//! without the jitter: decisions D20).
//!
//! Imports only the leaves (`core`, `output`); the engine performs the
//! transitions and learns the leader from each answer before this state
//! handles it.

use kafka_protocol::messages::{FetchRequest, FetchResponse, fetch_request, fetch_response};

use super::{
    Command, Destination, ElectionState, METADATA_PARTITION, RaftRequest, RequestId, Result,
    core::{Core, Next, metadata_topic_id, topic_name},
    output::{Output, RequestKind},
    voters::{Endpoint, ReplicaKey},
};
use crate::log::{LogError, OffsetAndEpoch, ReplicatedLog};

/// The first batch of `records` (a Fetch answer from the leader of
/// `leader_epoch`) whose partition leader epoch is above `leader_epoch`, as
/// a reason to refuse the answer: a leader writes batches of its own epoch
/// and copies older ones, never newer (Raft §5.3; the field sits outside the
/// batch CRC). Bytes that do not parse are left to the log's own checks.
fn epoch_above_leader(records: &[u8], leader_epoch: i32) -> Option<String> {
    crate::record::iter_batches(records, false)
        .map_while(std::result::Result::ok)
        .find(|(h, _)| h.partition_leader_epoch > leader_epoch)
        .map(|(h, _)| {
            format!(
                "fetched batch at offset {} has partition leader epoch {}, above the epoch {leader_epoch} of the leader that sent it",
                h.base_offset, h.partition_leader_epoch
            )
        })
}

/// A Fetch request for this node's current fetch position, with `epoch` as
/// its known leader epoch.
pub(crate) fn fetch_request<L: ReplicatedLog>(core: &Core<L>, epoch: i32) -> FetchRequest {
    use fetch_request::{FetchPartition, FetchTopic, ReplicaState};
    let end = core.log.end_offset();
    let max_bytes = i32::try_from(core.config.max_fetch_bytes).unwrap_or(i32::MAX);
    FetchRequest::default()
        .with_cluster_id(core.cluster_id_wire())
        .with_replica_id(core.local.id.into())
        .with_replica_state(
            ReplicaState::default()
                .with_replica_id(core.local.id.into())
                .with_replica_epoch(-1),
        )
        .with_max_wait_ms(i32::try_from(core.config.fetch_max_wait_ms).unwrap_or(i32::MAX))
        .with_min_bytes(0)
        .with_max_bytes(max_bytes)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(topic_name())
                .with_topic_id(metadata_topic_id())
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(METADATA_PARTITION)
                        .with_current_leader_epoch(epoch)
                        .with_fetch_offset(end.offset)
                        .with_last_fetched_epoch(end.epoch)
                        .with_log_start_offset(core.log.start_offset())
                        .with_partition_max_bytes(max_bytes)
                        .with_replica_directory_id(core.local.directory_id_or_nil())
                        .with_high_watermark(core.high_watermark.unwrap_or(-1)),
                ]),
        ])
}

/// The fetch loop of a follower (or of an observer asking bootstrap servers).
#[derive(Debug, Default)]
pub(crate) struct FetchLoop {
    /// The one Fetch in flight.
    pub(crate) inflight: Option<RequestId>,
    /// When the Fetch in flight was sent (engine ms): what its answer can
    /// prove about being caught up dates from then, not from when it was
    /// read (an answer buffered while the process was paused is old).
    pub(crate) sent_ms: u64,
    /// Earliest time of the next Fetch (after a backoff).
    pub(crate) next_fetch_ms: u64,
    /// Appended data awaits a flush before the next Fetch.
    pub(crate) awaiting_flush: bool,
}

impl FetchLoop {
    pub(crate) fn ready(&self, now_ms: u64) -> bool {
        self.inflight.is_none() && !self.awaiting_flush && now_ms >= self.next_fetch_ms
    }

    /// [`Self::ready`], and the log flushed to its end: a Fetch reports the
    /// log end offset as this replica's, so it must be durable (Kafka's
    /// follower flushes each fetched chunk before its next Fetch). Appends
    /// still unflushed (a flush running off the event loop that a change of
    /// epoch overtook, or a truncation it crossed) ask for a flush and wait
    /// for it ([`Self::awaiting_flush`]).
    pub(crate) fn ready_to_send<L: ReplicatedLog>(
        &mut self,
        log: &L,
        out: &mut Output,
        now_ms: u64,
    ) -> bool {
        if !self.ready(now_ms) {
            return false;
        }
        if log.flushed_end_offset() < log.end_offset().offset {
            self.awaiting_flush = true;
            out.push(Command::Flush);
            return false;
        }
        true
    }

    /// A flush ended: if the next Fetch waited for it, it goes at once (a
    /// flush that no Fetch waited for leaves a retry backoff as it is).
    pub(crate) fn flushed(&mut self, now_ms: u64) {
        if self.awaiting_flush {
            self.awaiting_flush = false;
            self.next_fetch_ms = now_ms;
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        if self.inflight.is_none() && !self.awaiting_flush {
            self.next_fetch_ms
        } else {
            u64::MAX
        }
    }

    /// The Fetch `id` was answered (or failed) without data to wait for:
    /// the next one goes at `next_fetch_ms`.
    pub(crate) fn done(&mut self, id: RequestId, next_fetch_ms: u64) {
        if self.inflight == Some(id) {
            self.inflight = None;
            self.next_fetch_ms = next_fetch_ms;
        }
    }
}

/// State of a follower.
#[derive(Debug)]
pub(crate) struct FollowerState {
    pub(crate) epoch: i32,
    pub(crate) leader_id: i32,
    pub(crate) leader_endpoint: Option<Endpoint>,
    pub(crate) voted_key: Option<ReplicaKey>,
    /// This state's fetch timeout (ms): F, plus a voter's jitter drawn once
    /// ([`Core::follower_fetch_timeout`]).
    pub(crate) fetch_timeout_ms: u64,
    /// When the fetch timeout expires (pushed back by each successful fetch;
    /// pulled in by EndQuorumEpoch).
    pub(crate) fetch_deadline_ms: u64,
    pub(crate) last_fetch_ok_ms: Option<u64>,
    /// The high watermark the leader sent in its last Fetch answer, as sent:
    /// not capped at this node's log end (the capped value is
    /// `Core::high_watermark`). `None` until the leader knows one.
    pub(crate) leader_high_watermark: Option<i64>,
    /// When a Fetch answer last showed this node caught up with the leader
    /// (engine time, ms): its log end reached the leader's high watermark, or
    /// the leader had nothing past the fetch offset (its log end). The
    /// follower's side of Kafka's `lastCaughtUpTimestamp`.
    pub(crate) last_caught_up_ms: Option<u64>,
    pub(crate) fetch: FetchLoop,
    /// Observer only: the leader went silent, ask the bootstrap servers.
    pub(crate) use_bootstrap: bool,
    /// The snapshot being fetched from the leader (KIP-630): FetchSnapshot
    /// requests replace Fetch until it is installed or dropped.
    pub(crate) fetching_snapshot: Option<OffsetAndEpoch>,
    /// Whether a refusal of fetched batches was logged at warn level in this
    /// state already (later ones go to debug: the leader sends the same
    /// bytes on every retry).
    pub(crate) refusal_logged: bool,
}

impl FollowerState {
    /// Follower of `leader_id` in `epoch`, keeping `voted_key`; the leader's
    /// endpoint from the voter set, else `endpoint_hint`.
    pub(crate) fn new<L: ReplicatedLog>(
        core: &mut Core<L>,
        epoch: i32,
        leader_id: i32,
        endpoint_hint: Option<Endpoint>,
        voted_key: Option<ReplicaKey>,
        now_ms: u64,
    ) -> Self {
        let fetch_timeout_ms = core.follower_fetch_timeout();
        let leader_endpoint = core
            .voters()
            .get(leader_id)
            .and_then(|v| v.endpoints.first().cloned())
            .or(endpoint_hint);
        Self {
            epoch,
            leader_id,
            leader_endpoint,
            voted_key,
            fetch_timeout_ms,
            fetch_deadline_ms: now_ms + fetch_timeout_ms,
            last_fetch_ok_ms: None,
            leader_high_watermark: None,
            last_caught_up_ms: None,
            fetch: FetchLoop {
                next_fetch_ms: now_ms,
                ..Default::default()
            },
            use_bootstrap: false,
            fetching_snapshot: None,
            refusal_logged: false,
        }
    }

    /// The election state this role implies.
    pub(crate) fn election_state(&self) -> ElectionState {
        ElectionState {
            epoch: self.epoch,
            leader_id: Some(self.leader_id),
            voted_key: self.voted_key,
        }
    }

    /// The leader, where this follower sends its fetches.
    fn leader_destination(&self) -> Destination {
        Destination {
            node_id: self.leader_id,
            endpoint: self.leader_endpoint.clone(),
        }
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        self.fetch_deadline_ms.min(self.fetch.next_deadline())
    }

    /// The leader answered a Fetch or FetchSnapshot at `now_ms`: the fetch
    /// timeout restarts (Kafka's `resetFetchTimeoutForSuccessfulFetch`).
    pub(crate) fn leader_answered(&mut self, now_ms: u64) {
        self.last_fetch_ok_ms = Some(now_ms);
        self.fetch_deadline_ms = now_ms + self.fetch_timeout_ms;
    }

    /// Whether the leader answered a fetch within the fetch timeout (a
    /// follower in that case rejects pre-votes, KIP-996).
    pub(crate) fn has_fetched_recently(&self, now_ms: u64, fetch_timeout_ms: u64) -> bool {
        self.last_fetch_ok_ms
            .is_some_and(|t| now_ms < t.saturating_add(fetch_timeout_ms))
    }

    /// A voter whose leader was silent for the fetch timeout and its jitter
    /// campaigns; an
    /// observer asks the bootstrap servers. Then the next Fetch (or
    /// FetchSnapshot) if none is in flight.
    pub(crate) fn poll<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        now_ms: u64,
    ) -> Option<Next> {
        if now_ms >= self.fetch_deadline_ms {
            if core.can_campaign() {
                return Some(Next::Prospective);
            }
            self.use_bootstrap = !core.config.bootstrap_servers.is_empty();
            self.fetch_deadline_ms = now_ms + self.fetch_timeout_ms;
        }
        if !self.fetch.ready_to_send(&core.log, out, now_ms) {
            return None;
        }
        if let Some(snapshot_id) = self.fetching_snapshot {
            // Kafka's `maybeSendFetchOrFetchSnapshot`: to the leader only.
            let request = self.fetch_snapshot_request(core, snapshot_id);
            let id = core.send_to(
                out,
                self.leader_destination(),
                RequestKind::FetchSnapshot,
                self.epoch,
                RaftRequest::FetchSnapshot(request),
            );
            self.fetch.inflight = Some(id);
            return None;
        }
        let destination = if self.use_bootstrap {
            let node_id = core.next_bootstrap_id();
            core.destination(node_id)
        } else {
            self.leader_destination()
        };
        let request = fetch_request(core, self.epoch);
        let id = core.send_to(
            out,
            destination,
            RequestKind::Fetch,
            self.epoch,
            RaftRequest::Fetch(request),
        );
        self.fetch.inflight = Some(id);
        self.fetch.sent_ms = now_ms;
        None
    }

    /// Whether a (pre-)vote is granted: pre-votes only (KIP-996), once the
    /// leader has been silent for the fetch timeout without its jitter. Kafka's
    /// `FollowerState` refuses them once it has fetched from the leader at
    /// all in the epoch; with the jitter that would hand the election to the
    /// last voter to time out, so ours lets the first win (decisions D20).
    pub(crate) fn grants_vote(
        &self,
        up_to_date: bool,
        pre_vote: bool,
        now_ms: u64,
        fetch_timeout_ms: u64,
    ) -> bool {
        pre_vote && !self.has_fetched_recently(now_ms, fetch_timeout_ms) && up_to_date
    }

    /// EndQuorumEpoch of this follower's leader: fetch timeout shortened to
    /// `now_ms + backoff_ms` (Kafka's `endEpochElectionBackoff`).
    pub(crate) fn on_end_quorum_epoch(
        &mut self,
        epoch: i32,
        leader_id: i32,
        local_id: i32,
        backoff_ms: u64,
        now_ms: u64,
    ) {
        if self.epoch == epoch && self.leader_id == leader_id && self.leader_id != local_id {
            self.fetch_deadline_ms = self.fetch_deadline_ms.min(now_ms + backoff_ms);
        }
    }

    /// A Fetch response from this epoch's leader (the engine learned the
    /// leader from it already): truncate, append or back off.
    pub(crate) fn on_fetch_response<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        id: RequestId,
        r: &FetchResponse,
        partition: Option<fetch_response::PartitionData>,
        now_ms: u64,
    ) -> Result<()> {
        if self.fetch.inflight != Some(id) {
            return Ok(());
        }
        let backoff = now_ms + core.config.retry_backoff_ms;
        self.fetch.inflight = None;
        let Some(p) = partition
            .as_ref()
            .filter(|p| r.error_code == 0 && p.error_code == 0)
        else {
            self.fetch.next_fetch_ms = backoff;
            self.switch_to_leader(core, r, partition.as_ref(), now_ms);
            return Ok(());
        };
        self.use_bootstrap = false;
        self.leader_answered(now_ms);
        if p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0 {
            // The leader's log diverges from ours: truncate to where the
            // epochs agree (Kafka's `truncateToEndOffset`) and fetch again.
            let local = core.log.end_offset_for_epoch(p.diverging_epoch.epoch);
            let target = local.offset.min(p.diverging_epoch.end_offset);
            return core.truncate_to(target);
        }
        if p.snapshot_id.epoch >= 0 || p.snapshot_id.end_offset >= 0 {
            let snapshot_id = OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch);
            return self.start_fetching_snapshot(core, snapshot_id, now_ms);
        }
        let records = p.records.clone().unwrap_or_default();
        let leader_had_more = !records.is_empty();
        let mut appended = true;
        if let Some(reason) = epoch_above_leader(&records, self.epoch) {
            // Issue 21: the leader of this epoch cannot have written it.
            self.refuse(core.local.id, &reason);
            self.fetch.next_fetch_ms = backoff;
            appended = false;
        } else if leader_had_more {
            match core.log.append_as_follower(records.clone()) {
                Ok(info) => {
                    // The appended batches are `records`, all of them (a
                    // fetch with a partial batch fails validation and
                    // appends nothing): scan them in memory.
                    core.apply_control_records(&records, info.first_offset)?;
                    self.fetch.awaiting_flush = true;
                    out.push(Command::Flush);
                }
                Err(
                    e @ (LogError::NonContiguous { .. }
                    | LogError::EpochRegression { .. }
                    | LogError::Record(_)),
                ) => {
                    self.refuse(core.local.id, &e.to_string());
                    self.fetch.next_fetch_ms = backoff;
                    appended = false;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let end = core.log.end_offset().offset;
        self.leader_high_watermark = (p.high_watermark >= 0).then_some(p.high_watermark);
        let caught_up = match self.leader_high_watermark {
            Some(hw) => end >= hw,
            None => !leader_had_more,
        };
        if appended && caught_up {
            self.last_caught_up_ms = Some(self.fetch.sent_ms.min(now_ms));
        }
        if let Some(hw) = self.leader_high_watermark {
            core.advance_high_watermark(hw.min(end), out);
        }
        Ok(())
    }

    /// Logs a refusal of fetched batches: once at warn level in this state,
    /// then at debug level.
    fn refuse(&mut self, node: i32, reason: &str) {
        if self.refusal_logged {
            tracing::debug!(node, leader = self.leader_id, epoch = self.epoch, %reason,
                "refused fetched batches again; fetching again");
        } else {
            self.refusal_logged = true;
            tracing::warn!(node, leader = self.leader_id, epoch = self.epoch, %reason,
                "refused fetched batches (not appended); fetching again");
        }
    }

    /// Whether this node is caught up with its leader, as Kafka's leader
    /// counts it for DescribeQuorum's `lastCaughtUpTimestamp`: a Fetch
    /// answered within `controller.quorum.fetch.timeout.ms` showed it at the
    /// leader's high watermark (or log end), and its flushed log holds it.
    pub(crate) fn is_caught_up<L: ReplicatedLog>(&self, core: &Core<L>, now_ms: u64) -> bool {
        let recent = self
            .last_caught_up_ms
            .is_some_and(|t| now_ms < t.saturating_add(core.config.fetch_timeout_ms));
        recent
            && self
                .leader_high_watermark
                .is_none_or(|hw| core.log.flushed_end_offset() >= hw)
    }

    /// An observer fetching from a bootstrap server whose answer names this
    /// epoch's leader fetches from that leader next, at once (KAFKA-19354:
    /// it stayed on the bootstrap server). The leader's endpoint comes from
    /// the answer when the voter set does not have it.
    fn switch_to_leader<L: ReplicatedLog>(
        &mut self,
        core: &Core<L>,
        r: &FetchResponse,
        partition: Option<&fetch_response::PartitionData>,
        now_ms: u64,
    ) {
        let names_leader = partition.is_some_and(|p| {
            p.current_leader.leader_id.0 == self.leader_id
                && p.current_leader.leader_epoch == self.epoch
        });
        if !self.use_bootstrap || !names_leader || self.leader_id == core.local.id {
            return;
        }
        if self.leader_endpoint.is_none() {
            self.leader_endpoint = endpoint_in(r, self.leader_id);
        }
        if self.leader_endpoint.is_some() {
            self.use_bootstrap = false;
            self.fetch_deadline_ms = now_ms + self.fetch_timeout_ms;
            self.fetch.next_fetch_ms = now_ms;
        }
    }
}

/// The endpoint a Fetch answer gives for `node_id` (its `NodeEndpoints`,
/// KIP-853), if any and with a valid port.
pub(crate) fn endpoint_in(r: &FetchResponse, node_id: i32) -> Option<Endpoint> {
    r.node_endpoints
        .iter()
        .find(|e| e.node_id.0 == node_id)
        .and_then(|e| {
            u16::try_from(e.port)
                .ok()
                .map(|port| Endpoint::new("", e.host.as_str(), port))
        })
}
