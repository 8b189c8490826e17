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
//!
//! The follower side extends [`FollowerState`]; the leader side is
//! [`FetchSnapshotHandler`], which borrows the core, the output and the
//! leader state. Imports the leaves and those two role states only.

use kafka_protocol::{
    ResponseError,
    messages::{
        FetchSnapshotRequest, FetchSnapshotResponse, fetch_snapshot_request,
        fetch_snapshot_response,
    },
};

use super::{
    Command, METADATA_PARTITION, METADATA_TOPIC, RaftResponse, ReplyHandle, RequestId, Result,
    core::{Core, EpochView, error_code, topic_name},
    follower::FollowerState,
    leader::LeaderState,
    output::Output,
    voters::{Endpoint, ReplicaKey},
};
use crate::log::{LogError, OffsetAndEpoch, ReplicatedLog, snapshot::BOOTSTRAP_SNAPSHOT_ID};

/// The leader a FetchSnapshot response names (leader id, epoch, endpoint
/// hint), if it has no top-level error.
pub(crate) fn response_leader(r: &FetchSnapshotResponse) -> Option<(i32, i32, Option<Endpoint>)> {
    if r.error_code != 0 {
        return None;
    }
    let p = r.topics.first().and_then(|t| t.partitions.first())?;
    let leader = p.current_leader.leader_id.0;
    let hint = r
        .node_endpoints
        .iter()
        .find(|e| e.node_id.0 == leader)
        .map(|e| Endpoint::new("", e.host.as_str(), e.port));
    Some((leader, p.current_leader.leader_epoch, hint))
}

impl FollowerState {
    /// A FetchSnapshot request for the next chunk of `id`: from the size
    /// received so far, at most `max_fetch_snapshot_bytes` (Kafka's
    /// `buildFetchSnapshotRequest`).
    pub(crate) fn fetch_snapshot_request<L: ReplicatedLog>(
        &self,
        core: &Core<L>,
        id: OffsetAndEpoch,
    ) -> FetchSnapshotRequest {
        let position = core
            .log
            .fetched_snapshot()
            .filter(|(fetching, _)| *fetching == id)
            .map_or(0, |(_, size)| size);
        FetchSnapshotRequest::default()
            .with_cluster_id(core.cluster_id_wire())
            .with_replica_id(core.local.id.into())
            .with_max_bytes(i32::try_from(core.config.max_fetch_snapshot_bytes).unwrap_or(i32::MAX))
            .with_topics(vec![
                fetch_snapshot_request::TopicSnapshot::default()
                    .with_name(topic_name())
                    .with_partitions(vec![
                        fetch_snapshot_request::PartitionSnapshot::default()
                            .with_partition(METADATA_PARTITION)
                            .with_current_leader_epoch(self.epoch)
                            .with_snapshot_id(
                                fetch_snapshot_request::SnapshotId::default()
                                    .with_end_offset(id.offset)
                                    .with_epoch(id.epoch),
                            )
                            .with_position(i64::try_from(position).unwrap_or(i64::MAX))
                            .with_replica_directory_id(core.local.directory_id_or_nil()),
                    ]),
            ])
    }

    /// A Fetch response named snapshot `id`: start receiving it (Kafka's
    /// `createNewSnapshotUnchecked`: the id is beyond this log by nature).
    pub(crate) fn start_fetching_snapshot<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        id: OffsetAndEpoch,
        now_ms: u64,
    ) -> Result<()> {
        // Issue 21: the leader of this epoch cannot hold a snapshot of a
        // later one.
        if id.offset < 0 || id.epoch < 0 || id.epoch > self.epoch {
            tracing::warn!(node = core.local.id, snapshot = %id, epoch = self.epoch,
                "leader sent an invalid snapshot id (negative, or an epoch above its own); fetching again");
            self.fetch.next_fetch_ms = now_ms + core.config.retry_backoff_ms;
            return Ok(());
        }
        core.log.begin_fetched_snapshot(id)?;
        tracing::info!(
            node = core.local.id,
            snapshot = %id,
            log_end = %core.log.end_offset(),
            "fetch offset below the leader's log start; fetching its snapshot"
        );
        self.fetching_snapshot = Some(id);
        self.fetch.next_fetch_ms = now_ms;
        Ok(())
    }

    /// The answer to a FetchSnapshot, as Kafka's `handleFetchSnapshotResponse`
    /// (the engine learned the leader from it already): on
    /// SNAPSHOT_NOT_FOUND (the leader cleaned it away), POSITION_OUT_OF_RANGE
    /// or a chunk that does not continue what was received, drop the partial
    /// snapshot and Fetch again (Kafka treats the last two as fatal; starting
    /// over is as safe); on other errors back off; else append the chunk and
    /// install the snapshot once complete.
    pub(crate) fn on_fetch_snapshot_response<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        id: RequestId,
        r: FetchSnapshotResponse,
        now_ms: u64,
    ) -> Result<()> {
        let backoff = now_ms + core.config.retry_backoff_ms;
        let partition = r.topics.first().and_then(|t| t.partitions.first()).cloned();
        if self.fetch.inflight != Some(id) {
            return Ok(());
        }
        self.fetch.inflight = None;
        let (Some(p), 0) = (partition, r.error_code) else {
            self.fetch.next_fetch_ms = backoff;
            return Ok(());
        };
        let Some(expected) = self.fetching_snapshot else {
            self.fetch.next_fetch_ms = backoff;
            return Ok(());
        };
        let start_over = p.error_code == error_code(ResponseError::SnapshotNotFound)
            || p.error_code == error_code(ResponseError::PositionOutOfRange)
            || (p.error_code == 0
                && (p.snapshot_id.end_offset != expected.offset
                    || p.snapshot_id.epoch != expected.epoch));
        if p.error_code != 0 && !start_over {
            self.fetch.next_fetch_ms = backoff;
            return Ok(());
        }
        // The leader answered: the fetch timeout restarts, for a snapshot
        // fetch as for Fetch.
        self.leader_answered(now_ms);
        self.use_bootstrap = false;
        self.fetch.next_fetch_ms = now_ms;
        let received = core
            .log
            .fetched_snapshot()
            .filter(|(fetching, _)| *fetching == expected)
            .map(|(_, size)| size);
        let in_sequence = received.is_some_and(|size| i64::try_from(size).ok() == Some(p.position));
        if start_over || !in_sequence {
            tracing::info!(
                node = core.local.id,
                snapshot = %expected,
                error = p.error_code,
                position = p.position,
                ?received,
                "dropping the snapshot being fetched; fetching again"
            );
            core.log.abort_fetched_snapshot()?;
            self.fetching_snapshot = None;
            return Ok(());
        }
        let size = core.log.append_fetched_snapshot(&p.unaligned_records)?;
        let total = u64::try_from(p.size).unwrap_or(0);
        if size < total {
            return Ok(());
        }
        if size > total {
            tracing::warn!(node = core.local.id, snapshot = %expected, size, total, "snapshot larger than the leader said; fetching again");
            core.log.abort_fetched_snapshot()?;
            self.fetching_snapshot = None;
            return Ok(());
        }
        self.install_fetched_snapshot(core, out, size)
    }

    /// The last chunk arrived: freeze, truncate the log fully to the
    /// snapshot, read its voter set, tell the runtime, and move the high
    /// watermark to its end (everything in it is committed).
    fn install_fetched_snapshot<L: ReplicatedLog>(
        &mut self,
        core: &mut Core<L>,
        out: &mut Output,
        size: u64,
    ) -> Result<()> {
        let installed = core.log.install_fetched_snapshot();
        self.fetching_snapshot = None;
        let id = match installed {
            Ok(id) => id,
            // A damaged copy (the leader's file, or the wire) is dropped
            // before it replaces anything; the next Fetch names the snapshot
            // again and it is fetched from the start.
            Err(LogError::Corrupt { path, reason }) => {
                tracing::warn!(node = core.local.id, file = %path.display(), %reason,
                    "the snapshot fetched from the leader is damaged; dropped, the log is kept, fetching it again");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        core.load_snapshot_control_records(id)?;
        core.scan_control_records(id.offset)?;
        tracing::info!(
            node = core.local.id,
            snapshot = %id,
            bytes = size,
            voters = ?core.voters().ids().collect::<Vec<_>>(),
            "installed a snapshot from the leader; the log restarts at its end offset"
        );
        out.push(Command::SnapshotInstalled { snapshot_id: id });
        core.advance_high_watermark(id.offset, out);
        Ok(())
    }
}

/// FetchSnapshot (59) served, as Kafka's `handleFetchSnapshotRequest`: by
/// the leader (`leader` is `Some`), refused by any other role.
pub(crate) struct FetchSnapshotHandler<'a, L: ReplicatedLog> {
    pub(crate) core: &'a Core<L>,
    pub(crate) out: &'a mut Output,
    pub(crate) view: &'a EpochView,
    pub(crate) leader: Option<&'a mut LeaderState>,
}

impl<L: ReplicatedLog> FetchSnapshotHandler<'_, L> {
    fn response(
        &self,
        top_error: Option<ResponseError>,
        partition: Option<fetch_snapshot_response::PartitionSnapshot>,
    ) -> FetchSnapshotResponse {
        let view = self.view;
        let topics = partition
            .map(|p| {
                vec![
                    fetch_snapshot_response::TopicSnapshot::default()
                        .with_name(topic_name())
                        .with_partitions(vec![
                            p.with_index(METADATA_PARTITION).with_current_leader(
                                fetch_snapshot_response::LeaderIdAndEpoch::default()
                                    .with_leader_id(view.leader_id.unwrap_or(-1).into())
                                    .with_leader_epoch(view.epoch),
                            ),
                        ]),
                ]
            })
            .unwrap_or_default();
        let endpoints = view
            .leader_endpoint
            .clone()
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

    fn reply(&mut self, handle: ReplyHandle, response: FetchSnapshotResponse) {
        self.out
            .reply(handle, RaftResponse::FetchSnapshot(response));
    }

    fn reply_error(&mut self, handle: ReplyHandle, error: ResponseError) {
        let partition = fetch_snapshot_response::PartitionSnapshot::default()
            .with_error_code(error_code(error));
        let response = self.response(None, Some(partition));
        self.reply(handle, response);
    }

    /// INCONSISTENT_CLUSTER_ID and INVALID_REQUEST at the top level;
    /// UNKNOWN_TOPIC_OR_PARTITION; FENCED_LEADER_EPOCH (older epoch),
    /// UNKNOWN_LEADER_EPOCH (newer), NOT_LEADER_OR_FOLLOWER; SNAPSHOT_NOT_FOUND
    /// (no such snapshot, or the bootstrap `0-0` checkpoint);
    /// POSITION_OUT_OF_RANGE (outside `[0, size)`); else the bytes from the
    /// position, at most the request's and this node's chunk bound, with the
    /// snapshot's size. A voter's request counts for check-quorum.
    pub(crate) fn handle(
        mut self,
        handle: ReplyHandle,
        r: FetchSnapshotRequest,
        now_ms: u64,
    ) -> Result<()> {
        let core = self.core;
        if !core.cluster_id_matches(r.cluster_id.as_ref()) {
            let response = self.response(Some(ResponseError::InconsistentClusterId), None);
            self.reply(handle, response);
            return Ok(());
        }
        let Some((ours, p)) = r.topics.first().and_then(|t| {
            t.partitions
                .first()
                .map(|p| (t.name.0.as_str() == METADATA_TOPIC, p.clone()))
        }) else {
            let response = self.response(Some(ResponseError::InvalidRequest), None);
            self.reply(handle, response);
            return Ok(());
        };
        if !ours || p.partition != METADATA_PARTITION {
            self.reply_error(handle, ResponseError::UnknownTopicOrPartition);
            return Ok(());
        }
        let epoch = self.view.epoch;
        let epoch_error = if p.current_leader_epoch < epoch {
            Some(ResponseError::FencedLeaderEpoch)
        } else if p.current_leader_epoch > epoch {
            Some(ResponseError::UnknownLeaderEpoch)
        } else if self.leader.is_none() {
            Some(ResponseError::NotLeaderOrFollower)
        } else {
            None
        };
        if let Some(e) = epoch_error {
            self.reply_error(handle, e);
            return Ok(());
        }
        let id = OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch);
        let probe = if id == BOOTSTRAP_SNAPSHOT_ID {
            None
        } else {
            core.log.read_snapshot_chunk(id, 0, 0)?
        };
        let Some(probe) = probe else {
            self.reply_error(handle, ResponseError::SnapshotNotFound);
            return Ok(());
        };
        let size = probe.size;
        let position = match u64::try_from(p.position) {
            Ok(position) if position < size => position,
            _ => {
                self.reply_error(handle, ResponseError::PositionOutOfRange);
                return Ok(());
            }
        };
        let max_bytes = usize::try_from(r.max_bytes.max(1))
            .unwrap_or(usize::MAX)
            .min(core.config.max_fetch_snapshot_bytes.max(1));
        let Some(chunk) = core.log.read_snapshot_chunk(id, position, max_bytes)? else {
            // Deleted by cleaning in between: the follower starts over.
            self.reply_error(handle, ResponseError::SnapshotNotFound);
            return Ok(());
        };
        if let Some(leader) = self.leader.as_deref_mut() {
            leader.note_voter_fetch(
                core,
                ReplicaKey::from_wire(r.replica_id.0, p.replica_directory_id),
                now_ms,
            );
        }
        let partition = fetch_snapshot_response::PartitionSnapshot::default()
            .with_snapshot_id(
                fetch_snapshot_response::SnapshotId::default()
                    .with_end_offset(id.offset)
                    .with_epoch(id.epoch),
            )
            .with_size(i64::try_from(chunk.size).unwrap_or(i64::MAX))
            .with_position(p.position)
            .with_unaligned_records(chunk.bytes);
        let response = self.response(None, Some(partition));
        self.reply(handle, response);
        Ok(())
    }
}
