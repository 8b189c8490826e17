//! FetchSnapshot (KIP-630), both sides, and reading the voter set from a
//! snapshot.
//!
//! Leader: serves a chunk of a frozen snapshot by id and byte position
//! (Kafka's `handleFetchSnapshotRequest`). Follower or observer: after a
//! Fetch response names a snapshot id (its fetch offset is below the leader's
//! log start), it asks for that snapshot chunk by chunk instead of Fetch
//! (`maybeSendFetchOrFetchSnapshot`), writes the chunks through the log
//! (`.checkpoint.part`), and once the last byte arrived installs it: the
//! snapshot is frozen, the log is truncated fully and restarts at the
//! snapshot's end offset, the voter set is read from the snapshot's
//! KRaftVersion and Voters records, the runtime is told
//! ([`Command::SnapshotInstalled`]) and the high watermark moves to the
//! snapshot's end (`handleFetchSnapshotResponse`). Then Fetch resumes.
//!
//! The fetch timeout covers snapshot fetches as it covers Fetch: every
//! answer from the leader pushes it back. Must not decide what a snapshot
//! means to the state machine above (the runtime reloads it), nor serve the
//! bootstrap `0-0` checkpoint (the first leader copied it into the log).

use kafka_protocol::{
    ResponseError,
    messages::{
        FetchSnapshotRequest, FetchSnapshotResponse, fetch_snapshot_request,
        fetch_snapshot_response,
    },
};

use super::{
    Command, METADATA_PARTITION, METADATA_TOPIC, RaftResponse, ReplyHandle, RequestId, Result,
    Role,
    engine::{EpochState, Inflight, RaftEngine, error_code},
    voters::{Endpoint, ReplicaKey, VoterSet},
};
use crate::{
    log::{LogError, OffsetAndEpoch, ReplicatedLog, snapshot::BOOTSTRAP_SNAPSHOT_ID},
    record::{ControlRecord, DecodedBatch, iter_batches},
};

impl<L: ReplicatedLog> RaftEngine<L> {
    /// A FetchSnapshot request for the next chunk of `id`: from the size
    /// received so far, at most `max_fetch_snapshot_bytes` (Kafka's
    /// `buildFetchSnapshotRequest`).
    pub(crate) fn build_fetch_snapshot_request(&self, id: OffsetAndEpoch) -> FetchSnapshotRequest {
        let position = self
            .log
            .fetched_snapshot()
            .filter(|(fetching, _)| *fetching == id)
            .map_or(0, |(_, size)| size);
        FetchSnapshotRequest::default()
            .with_cluster_id(self.cluster_id_wire())
            .with_replica_id(self.local.id.into())
            .with_max_bytes(i32::try_from(self.config.max_fetch_snapshot_bytes).unwrap_or(i32::MAX))
            .with_topics(vec![
                fetch_snapshot_request::TopicSnapshot::default()
                    .with_name(Self::topic_name())
                    .with_partitions(vec![
                        fetch_snapshot_request::PartitionSnapshot::default()
                            .with_partition(METADATA_PARTITION)
                            .with_current_leader_epoch(self.epoch())
                            .with_snapshot_id(
                                fetch_snapshot_request::SnapshotId::default()
                                    .with_end_offset(id.offset)
                                    .with_epoch(id.epoch),
                            )
                            .with_position(i64::try_from(position).unwrap_or(i64::MAX))
                            .with_replica_directory_id(self.local.directory_id_or_nil()),
                    ]),
            ])
    }

    /// A Fetch response named snapshot `id`: start receiving it (Kafka's
    /// `createNewSnapshotUnchecked`: the id is beyond this log by nature).
    pub(crate) fn start_fetching_snapshot(
        &mut self,
        id: OffsetAndEpoch,
        now_ms: u64,
    ) -> Result<()> {
        if id.offset < 0 || id.epoch < 0 {
            tracing::warn!(node = self.local.id, snapshot = %id, "leader sent an invalid snapshot id; fetching again");
            if let EpochState::Follower(s) = &mut self.state {
                s.fetch.next_fetch_ms = now_ms + self.config.retry_backoff_ms;
            }
            return Ok(());
        }
        self.log.begin_fetched_snapshot(id)?;
        tracing::info!(
            node = self.local.id,
            snapshot = %id,
            log_end = %self.log.end_offset(),
            "fetch offset below the leader's log start; fetching its snapshot"
        );
        if let EpochState::Follower(s) = &mut self.state {
            s.fetching_snapshot = Some(id);
            s.fetch.next_fetch_ms = now_ms;
        }
        Ok(())
    }

    fn fetch_snapshot_response(
        &self,
        top_error: Option<ResponseError>,
        partition: Option<fetch_snapshot_response::PartitionSnapshot>,
    ) -> FetchSnapshotResponse {
        let topics = partition
            .map(|p| {
                vec![
                    fetch_snapshot_response::TopicSnapshot::default()
                        .with_name(Self::topic_name())
                        .with_partitions(vec![
                            p.with_index(METADATA_PARTITION).with_current_leader(
                                fetch_snapshot_response::LeaderIdAndEpoch::default()
                                    .with_leader_id(self.leader_id().unwrap_or(-1).into())
                                    .with_leader_epoch(self.epoch()),
                            ),
                        ]),
                ]
            })
            .unwrap_or_default();
        let endpoints = self
            .leader_endpoint()
            .map(|(id, e)| {
                fetch_snapshot_response::NodeEndpoint::default()
                    .with_node_id(id.into())
                    .with_host(e.host.into())
                    .with_port(e.port)
            })
            .into_iter()
            .collect();
        FetchSnapshotResponse::default()
            .with_error_code(top_error.map_or(0, error_code))
            .with_topics(topics)
            .with_node_endpoints(endpoints)
    }

    fn reply_fetch_snapshot_error(&mut self, handle: ReplyHandle, error: ResponseError) {
        let partition = fetch_snapshot_response::PartitionSnapshot::default()
            .with_error_code(error_code(error));
        let response = self.fetch_snapshot_response(None, Some(partition));
        self.reply(handle, RaftResponse::FetchSnapshot(response));
    }

    /// FetchSnapshot (59), as Kafka's `handleFetchSnapshotRequest`:
    /// INCONSISTENT_CLUSTER_ID and INVALID_REQUEST at the top level;
    /// UNKNOWN_TOPIC_OR_PARTITION; FENCED_LEADER_EPOCH (older epoch),
    /// UNKNOWN_LEADER_EPOCH (newer), NOT_LEADER_OR_FOLLOWER; SNAPSHOT_NOT_FOUND
    /// (no such snapshot, or the bootstrap `0-0` checkpoint);
    /// POSITION_OUT_OF_RANGE (outside `[0, size)`); else the bytes from the
    /// position, at most the request's and this node's chunk bound, with the
    /// snapshot's size. A voter's request counts for check-quorum.
    pub(crate) fn handle_fetch_snapshot_request(
        &mut self,
        handle: ReplyHandle,
        r: FetchSnapshotRequest,
        now_ms: u64,
    ) -> Result<()> {
        if !self.cluster_id_matches(r.cluster_id.as_ref()) {
            let response =
                self.fetch_snapshot_response(Some(ResponseError::InconsistentClusterId), None);
            self.reply(handle, RaftResponse::FetchSnapshot(response));
            return Ok(());
        }
        let Some((ours, p)) = r.topics.first().and_then(|t| {
            t.partitions
                .first()
                .map(|p| (t.name.0.as_str() == METADATA_TOPIC, p.clone()))
        }) else {
            let response = self.fetch_snapshot_response(Some(ResponseError::InvalidRequest), None);
            self.reply(handle, RaftResponse::FetchSnapshot(response));
            return Ok(());
        };
        if !ours || p.partition != METADATA_PARTITION {
            self.reply_fetch_snapshot_error(handle, ResponseError::UnknownTopicOrPartition);
            return Ok(());
        }
        let epoch_error = if p.current_leader_epoch < self.epoch() {
            Some(ResponseError::FencedLeaderEpoch)
        } else if p.current_leader_epoch > self.epoch() {
            Some(ResponseError::UnknownLeaderEpoch)
        } else if self.role() != Role::Leader {
            Some(ResponseError::NotLeaderOrFollower)
        } else {
            None
        };
        if let Some(e) = epoch_error {
            self.reply_fetch_snapshot_error(handle, e);
            return Ok(());
        }
        let id = OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch);
        let probe = if id == BOOTSTRAP_SNAPSHOT_ID {
            None
        } else {
            self.log.read_snapshot_chunk(id, 0, 0)?
        };
        let Some(probe) = probe else {
            self.reply_fetch_snapshot_error(handle, ResponseError::SnapshotNotFound);
            return Ok(());
        };
        let size = probe.size;
        let position = match u64::try_from(p.position) {
            Ok(position) if position < size => position,
            _ => {
                self.reply_fetch_snapshot_error(handle, ResponseError::PositionOutOfRange);
                return Ok(());
            }
        };
        let max_bytes = usize::try_from(r.max_bytes.max(1))
            .unwrap_or(usize::MAX)
            .min(self.config.max_fetch_snapshot_bytes.max(1));
        let Some(chunk) = self.log.read_snapshot_chunk(id, position, max_bytes)? else {
            // Deleted by cleaning in between: the follower starts over.
            self.reply_fetch_snapshot_error(handle, ResponseError::SnapshotNotFound);
            return Ok(());
        };
        let replica_id = r.replica_id.0;
        self.note_voter_fetch(
            ReplicaKey::from_wire(replica_id, p.replica_directory_id),
            now_ms,
        );
        let partition = fetch_snapshot_response::PartitionSnapshot::default()
            .with_snapshot_id(
                fetch_snapshot_response::SnapshotId::default()
                    .with_end_offset(id.offset)
                    .with_epoch(id.epoch),
            )
            .with_size(i64::try_from(chunk.size).unwrap_or(i64::MAX))
            .with_position(p.position)
            .with_unaligned_records(chunk.bytes);
        let response = self.fetch_snapshot_response(None, Some(partition));
        self.reply(handle, RaftResponse::FetchSnapshot(response));
        Ok(())
    }

    /// The answer to a FetchSnapshot, as Kafka's `handleFetchSnapshotResponse`:
    /// learn the leader from it; on SNAPSHOT_NOT_FOUND (the leader cleaned it
    /// away), POSITION_OUT_OF_RANGE or a chunk that does not continue what
    /// was received, drop the partial snapshot and Fetch again (Kafka treats
    /// the last two as fatal; starting over is as safe); on other errors back
    /// off; else append the chunk and install the snapshot once complete.
    pub(crate) fn handle_fetch_snapshot_response(
        &mut self,
        id: RequestId,
        inflight: Inflight,
        r: FetchSnapshotResponse,
        now_ms: u64,
    ) -> Result<()> {
        let backoff = now_ms + self.config.retry_backoff_ms;
        let partition = r.topics.first().and_then(|t| t.partitions.first()).cloned();
        if r.error_code == 0
            && let Some(p) = &partition
        {
            let leader = p.current_leader.leader_id.0;
            let hint = r
                .node_endpoints
                .iter()
                .find(|e| e.node_id.0 == leader)
                .map(|e| Endpoint::new("", e.host.as_str(), e.port));
            let from_leader = inflight.node_id == leader;
            if self.maybe_transition_from(
                Some(leader),
                p.current_leader.leader_epoch,
                hint,
                from_leader,
                now_ms,
            )? {
                return Ok(());
            }
        }
        let fetch_timeout = self.config.fetch_timeout_ms;
        let EpochState::Follower(s) = &mut self.state else {
            return Ok(());
        };
        if s.fetch.inflight != Some(id) {
            return Ok(());
        }
        s.fetch.inflight = None;
        let (Some(p), 0) = (partition, r.error_code) else {
            s.fetch.next_fetch_ms = backoff;
            return Ok(());
        };
        let Some(expected) = s.fetching_snapshot else {
            s.fetch.next_fetch_ms = backoff;
            return Ok(());
        };
        let start_over = p.error_code == error_code(ResponseError::SnapshotNotFound)
            || p.error_code == error_code(ResponseError::PositionOutOfRange)
            || (p.error_code == 0
                && (p.snapshot_id.end_offset != expected.offset
                    || p.snapshot_id.epoch != expected.epoch));
        if p.error_code != 0 && !start_over {
            s.fetch.next_fetch_ms = backoff;
            return Ok(());
        }
        // The leader answered: the fetch timeout restarts (Kafka's
        // `resetFetchTimeout`), for a snapshot fetch as for Fetch.
        s.last_fetch_ok_ms = Some(now_ms);
        s.fetch_deadline_ms = now_ms + fetch_timeout;
        s.use_bootstrap = false;
        s.fetch.next_fetch_ms = now_ms;
        let received = self
            .log
            .fetched_snapshot()
            .filter(|(fetching, _)| *fetching == expected)
            .map(|(_, size)| size);
        let in_sequence = received.is_some_and(|size| i64::try_from(size).ok() == Some(p.position));
        if start_over || !in_sequence {
            tracing::info!(
                node = self.local.id,
                snapshot = %expected,
                error = p.error_code,
                position = p.position,
                ?received,
                "dropping the snapshot being fetched; fetching again"
            );
            self.log.abort_fetched_snapshot()?;
            if let EpochState::Follower(s) = &mut self.state {
                s.fetching_snapshot = None;
            }
            return Ok(());
        }
        let size = self.log.append_fetched_snapshot(&p.unaligned_records)?;
        let total = u64::try_from(p.size).unwrap_or(0);
        if size < total {
            return Ok(());
        }
        if size > total {
            tracing::warn!(node = self.local.id, snapshot = %expected, size, total, "snapshot larger than the leader said; fetching again");
            self.log.abort_fetched_snapshot()?;
            if let EpochState::Follower(s) = &mut self.state {
                s.fetching_snapshot = None;
            }
            return Ok(());
        }
        self.install_fetched_snapshot(size)
    }

    /// The last chunk arrived: freeze, truncate the log fully to the
    /// snapshot, read its voter set, tell the runtime, and move the high
    /// watermark to its end (everything in it is committed).
    fn install_fetched_snapshot(&mut self, size: u64) -> Result<()> {
        let installed = self.log.install_fetched_snapshot();
        if let EpochState::Follower(s) = &mut self.state {
            s.fetching_snapshot = None;
        }
        let id = match installed {
            Ok(id) => id,
            // A damaged copy (the leader's file, or the wire) is dropped
            // before it replaces anything; the next Fetch names the snapshot
            // again and it is fetched from the start.
            Err(LogError::Corrupt { path, reason }) => {
                tracing::warn!(node = self.local.id, file = %path.display(), %reason,
                    "the snapshot fetched from the leader is damaged; dropped, the log is kept, fetching it again");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        self.load_snapshot_control_records(id)?;
        self.scan_control_records(id.offset)?;
        tracing::info!(
            node = self.local.id,
            snapshot = %id,
            bytes = size,
            voters = ?self.voters.ids().collect::<Vec<_>>(),
            "installed a snapshot from the leader; the log restarts at its end offset"
        );
        self.out
            .push(Command::SnapshotInstalled { snapshot_id: id });
        self.advance_high_watermark(id.offset);
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
    fn load_snapshot_control_records(&mut self, id: OffsetAndEpoch) -> Result<()> {
        let Some(bytes) = self.log.read_snapshot(id)? else {
            return Ok(());
        };
        let damaged =
            |position: usize, e: &dyn std::fmt::Display| super::RaftError::DamagedSnapshot {
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
        self.voters = self.voter_history.latest().clone();
        Ok(())
    }
}
