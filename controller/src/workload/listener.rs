//! The workload as a [`Listener`]: Kafka's `TestRaftServer` runs its
//! `RaftWorkloadGenerator` as the `RaftClient.Listener` of the metadata
//! partition, and so does this one.
//!
//! - `handleLeaderChange`: claims the epoch when this node becomes leader
//!   (pacing and measurement afresh), stops appending otherwise.
//! - `handleCommit`: measures the append-to-commit latency of the records
//!   below the high watermark. The records are opaque bytes, not metadata
//!   records: there is no image, so no snapshots and no registration.
//! - [`Listener::poll`]: appends the due records as the leader.
//! - Requests: ApiVersions and DescribeCluster, answered as by a controller
//!   with an empty image (the voters, `kraft.version`), so the admin tools
//!   work against a benchmark quorum.
//! - Deadlines: the next record, and the idle no-op record.
//!
//! It must not touch the engine except through [`RaftClient`].

use std::time::Instant;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::{SharedWorkload, Workload};
use crate::{
    log::{FileLog, OffsetAndEpoch},
    metadata::{cluster, image::MetadataImage},
    raft::{
        RaftError, ReplyHandle, Role,
        listener::{LeaderChange, Listener, RaftClient, SnapshotSource},
    },
    wire::{Api, Request, Response},
};

/// Largest batch the workload appends at once (bytes of record values):
/// 1 MiB, well inside a fetch response and `socket.request.max.bytes`.
const WORKLOAD_MAX_BATCH_BYTES: usize = 1024 * 1024;

/// The api keys the workload listener answers.
const API_KEYS: &[Api] = &[
    Api::Kafka(ApiKey::ApiVersions),
    Api::Kafka(ApiKey::DescribeCluster),
];

/// What the workload listener needs from the node.
#[derive(Debug, Clone)]
pub struct WorkloadListenerConfig {
    /// The node's cluster id (Kafka text form), for DescribeCluster.
    pub cluster_id: String,
    /// Name of the controller listener, for DescribeCluster.
    pub listener_name: String,
    /// `metadata.max.idle.interval.ms`: the idle no-op record's interval.
    pub max_idle_interval_ms: u64,
}

/// The benchmark workload above Raft (see the module doc).
#[derive(Debug)]
pub struct WorkloadListener {
    workload: SharedWorkload,
    config: WorkloadListenerConfig,
    /// An empty image at the log start of the node's start, for the
    /// ApiVersions and DescribeCluster answers.
    empty: MetadataImage,
}

impl WorkloadListener {
    /// A listener driving `workload` (shared with `GET /workload`), on a
    /// log that started at `log_start_offset`.
    pub fn new(
        workload: SharedWorkload,
        config: WorkloadListenerConfig,
        log_start_offset: i64,
    ) -> Self {
        Self {
            workload,
            config,
            empty: MetadataImage::starting_at(log_start_offset),
        }
    }

    /// Milliseconds until the workload's next record is due, if it runs.
    fn next_due_in_ms(&self) -> Option<u64> {
        let due = lock(&self.workload).next_due()?;
        let wait = due.saturating_duration_since(Instant::now());
        Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX))
    }
}

impl Listener<FileLog> for WorkloadListener {
    type Error = RaftError;
    type Input = ();

    fn handle_commit(
        &mut self,
        _client: &mut RaftClient<'_, FileLog>,
        high_watermark: i64,
    ) -> Result<(), RaftError> {
        lock(&self.workload).committed(high_watermark, Instant::now());
        Ok(())
    }

    fn handle_load_snapshot(
        &mut self,
        _client: &mut RaftClient<'_, FileLog>,
        _snapshot_id: OffsetAndEpoch,
        _source: SnapshotSource,
    ) -> Result<(), RaftError> {
        // No state machine: nothing to load (TestRaftServer's likewise).
        Ok(())
    }

    fn handle_leader_change(
        &mut self,
        _client: &mut RaftClient<'_, FileLog>,
        change: LeaderChange,
    ) -> Result<(), RaftError> {
        let mut w = lock(&self.workload);
        if change.role == Role::Leader {
            w.claim(change.epoch, Instant::now());
        } else {
            w.resign();
        }
        Ok(())
    }

    fn api_keys(&self) -> &'static [Api] {
        API_KEYS
    }

    fn handle_request(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        handle: ReplyHandle,
        api_version: i16,
        _listener_name: &str,
        request: Request,
    ) -> Result<(), RaftError> {
        let Request::Kafka(request) = request else {
            client.reply(handle, None::<Response>);
            return Ok(());
        };
        let body =
            match request {
                RequestKind::ApiVersions(_) => Some(ResponseKind::ApiVersions(
                    cluster::api_versions(api_version, &self.empty, client.status().kraft_version),
                )),
                RequestKind::DescribeCluster(request) => {
                    let controllers = cluster::describe_cluster_controllers(
                        &self.empty,
                        client.voters(),
                        &self.config.listener_name,
                    );
                    Some(ResponseKind::DescribeCluster(cluster::describe_cluster(
                        &request,
                        &self.config.cluster_id,
                        client.leader_id(),
                        controllers,
                    )))
                }
                _ => None,
            };
        client.reply(handle, body);
        Ok(())
    }

    fn next_deadline_ms(&self, client: &RaftClient<'_, FileLog>) -> Option<u64> {
        let idle = cluster::idle_deadline_ms(client, self.config.max_idle_interval_ms);
        let next = self.next_due_in_ms().map(|due| client.now_ms() + due);
        match (idle, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_wakeup(&mut self, client: &mut RaftClient<'_, FileLog>) -> Result<(), RaftError> {
        cluster::maybe_propose_no_op(client, self.config.max_idle_interval_ms)
    }

    /// Appends the workload's due records while this node leads and is not
    /// shutting down. Records due at the same moment go into one batch of at
    /// most [`WORKLOAD_MAX_BATCH_BYTES`], as TestRaftServer's one-record
    /// `scheduleAppend` calls are grouped by Kafka's `BatchAccumulator` into
    /// one batch per append linger: a batch per record would cost a batch
    /// header, a log write and a fetch response per record, and at 20 000
    /// records/s the leader spent its time appending instead of answering
    /// fetches (followers timed out, the quorum re-elected in a loop).
    fn poll(&mut self, client: &mut RaftClient<'_, FileLog>) -> Result<(), RaftError> {
        if client.role() != Role::Leader || client.shutting_down() {
            return Ok(());
        }
        let (mut due, payload) = {
            let w = lock(&self.workload);
            (w.due(Instant::now()), w.payload())
        };
        let per_batch = (WORKLOAD_MAX_BATCH_BYTES / payload.len().max(1)).max(1) as u64;
        while due > 0 {
            let n = due.min(per_batch);
            let records = vec![payload.clone(); n as usize];
            let Some(proposed) = client.propose(&records)? else {
                break;
            };
            let last = proposed.last_offset;
            let appended_at = Instant::now();
            let mut w = lock(&self.workload);
            for i in 0..n {
                w.appended(last - (n - 1 - i) as i64, appended_at);
            }
            due -= n;
        }
        Ok(())
    }
}

/// Locks the workload; a panic elsewhere while holding it leaves plain
/// counters behind, still worth reading.
fn lock(w: &SharedWorkload) -> std::sync::MutexGuard<'_, Workload> {
    w.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
