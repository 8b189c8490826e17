//! The event loop: one task owns the Raft engine, feeds it events with the
//! current time, and executes the commands it returns, in order.
//!
//! Inputs: inbound requests (from the connection tasks), answers of peers
//! (from the [`PeerManager`]), the engine's timer, flush requests, proposals
//! of the layer above (no-op records when idle), and the shutdown signal.
//!
//! Execution rules (the engine's contract, see `raft`):
//! - `PersistElectionState` is durable before the next command runs;
//! - `Flush` is answered first: the loop feeds `Event::Flush` before any
//!   other input, and the engine fsyncs the log while handling it. The
//!   engine already groups writes per fsync (the leader's append linger, one
//!   fsync per fetched chunk on a follower); a flush queued behind other
//!   inputs would be starved by a busy timer or a busy socket, and nothing
//!   commits until it runs;
//! - `Send` goes to the peer manager, whose answer comes back as an event;
//! - `Reply` goes back to the connection that asked.
//!
//! ApiVersions and DescribeCluster are answered here, from the engine's
//! status and the metadata image, without the engine; ControllerRegistration
//! by the metadata layer (`event_loop/metadata_layer.rs`); every other API
//! goes to the engine.

mod metadata_layer;

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        ApiKey, DescribeClusterRequest, DescribeClusterResponse, RequestKind, ResponseKind,
    },
    protocol::StrBytes,
};
use tokio::sync::{mpsc, watch};

pub use self::metadata_layer::MetadataConfig;
use super::{
    connection::InboundRequest,
    http::Readiness,
    metrics::{RaftGauges, RaftMetrics},
};
use crate::{
    log::{FileLog, OffsetAndEpoch, QuorumStateStore},
    metadata::{
        image::MetadataImage,
        records::METADATA_VERSION_FEATURE,
        snapshot::{SnapshotPolicy, encode_image_snapshot, image_snapshot_id, load_image_snapshot},
        version::MetadataVersion,
    },
    raft::{
        self, Command, Event, RaftEngine, RaftRequest, RaftResponse, ReplyHandle, RequestFailure,
        RequestId, Role,
    },
    wire::{
        self,
        client::{ClientError, PeerManager, PeerResponse},
    },
};

/// Longest wait for a leader's hand-over on shutdown (ms).
pub const SHUTDOWN_TIMEOUT_MS: u64 = 5_000;
/// DescribeCluster's endpoint type for controllers (KIP-919).
const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

/// Errors that stop the event loop (and the node).
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The engine failed (the log failed): the node must stop.
    #[error("raft engine: {0}")]
    Engine(#[from] raft::RaftError),
    /// The quorum-state file could not be written.
    #[error("persisting the election state: {0}")]
    Persist(#[from] crate::log::LogError),
    /// A committed metadata record could not be applied to the image (the
    /// log holds a malformed record of a known type): the node must stop
    /// rather than serve a wrong image.
    #[error("applying committed metadata: {0}")]
    Image(#[from] crate::metadata::image::ImageError),
}

/// Wall-clock milliseconds, as Kafka's `Time.milliseconds()` that its raft
/// client runs on (DescribeQuorum reports these timestamps).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What the loop needs besides the engine.
#[derive(Debug)]
pub struct LoopContext {
    /// The node's cluster id (Kafka text form), for DescribeCluster.
    pub cluster_id: String,
    /// Where the election state is persisted.
    pub quorum_state: QuorumStateStore,
    /// Outbound connections to the other controllers.
    pub peers: PeerManager,
    /// Answers of the peers.
    pub peer_responses: mpsc::UnboundedReceiver<PeerResponse>,
    /// Requests from the connection tasks.
    pub requests: mpsc::Receiver<InboundRequest>,
    /// Readiness published to `/readyz`.
    pub readiness: watch::Sender<Readiness>,
    /// Metrics.
    pub metrics: std::sync::Arc<RaftMetrics>,
    /// `metadata.max.idle.interval.ms`: a leader with nothing to write for this
    /// long appends a NoOpRecord (Kafka's `QuorumController`), so followers
    /// see the high watermark move and staleness is bounded.
    pub max_idle_interval_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`, for readiness.
    pub fetch_timeout_ms: u64,
    /// The benchmark workload (TestRaftServer's), when enabled.
    pub workload: Option<super::workload::SharedWorkload>,
    /// When to write a snapshot of the metadata image
    /// (`metadata.log.max.record.bytes.between.snapshots`,
    /// `metadata.log.max.snapshot.interval.ms`).
    pub snapshot_policy: SnapshotPolicy,
    /// Bootstrap records, controller registration and the image view.
    pub metadata: MetadataConfig,
}

/// Largest batch the benchmark workload appends at once (bytes of record
/// values): 1 MiB, well inside a fetch response and `socket.request.max.bytes`.
const WORKLOAD_MAX_BATCH_BYTES: usize = 1024 * 1024;

/// The outcome of a snapshot written off the loop: its id, or why not.
type SnapshotOutcome = (OffsetAndEpoch, Result<(), crate::log::LogError>);

/// Snapshot generation state of the loop.
struct Snapshots {
    /// `applied_bytes` of the image when the last snapshot was taken.
    bytes_at_last: u64,
    /// When the last snapshot was taken (or the loop started), ms.
    last_ms: u64,
    /// End offset of the newest snapshot written or being written.
    last_offset: i64,
    /// A snapshot is being written by a blocking task.
    in_flight: bool,
    done_tx: mpsc::UnboundedSender<SnapshotOutcome>,
    done_rx: mpsc::UnboundedReceiver<SnapshotOutcome>,
}

struct PendingProposal {
    last_offset: i64,
    epoch: i32,
    proposed_at_ms: u64,
}

/// The loop's state besides the engine.
struct Loop {
    ctx: LoopContext,
    replies: HashMap<u64, (tokio::sync::oneshot::Sender<Option<ResponseKind>>, i16)>,
    next_handle: u64,
    flush_pending: bool,
    shutdown_started: bool,
    shutdown_complete: bool,
    last_proposal_ms: u64,
    proposals: VecDeque<PendingProposal>,
    election_started_ms: Option<u64>,
    last_role: Option<(Role, i32, Option<i32>)>,
    /// The state machine over the committed records; starts empty at the log
    /// start and replays the log as the high watermark becomes known.
    image: MetadataImage,
    snapshots: Snapshots,
    /// Activation, ControllerRegistration and the image's readers.
    meta: metadata_layer::MetadataLayer,
}

/// Runs the loop until the engine completes a graceful shutdown (after
/// `shutdown` fires) or fails. Returns the engine so the caller can close the
/// log cleanly.
///
/// Errors: [`LoopError`]; the node must stop.
pub async fn run(
    mut engine: RaftEngine<FileLog>,
    initial: Vec<Command>,
    ctx: LoopContext,
    mut shutdown: watch::Receiver<bool>,
) -> Result<RaftEngine<FileLog>, LoopError> {
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let mut lp = Loop {
        meta: metadata_layer::MetadataLayer::new(&ctx.metadata),
        ctx,
        replies: HashMap::new(),
        next_handle: 1,
        flush_pending: false,
        shutdown_started: false,
        shutdown_complete: false,
        last_proposal_ms: now_ms(),
        proposals: VecDeque::new(),
        election_started_ms: None,
        last_role: None,
        image: MetadataImage::starting_at(crate::log::ReplicatedLog::start_offset(engine.log())),
        snapshots: Snapshots {
            bytes_at_last: 0,
            last_ms: now_ms(),
            last_offset: 0,
            in_flight: false,
            done_tx,
            done_rx,
        },
    };
    if let Some(id) = crate::log::ReplicatedLog::latest_snapshot_id(engine.log()) {
        lp.image = load_snapshot(engine.log(), id)?;
        lp.snapshots.last_offset = id.offset;
        tracing::info!(snapshot = %id, image = %image_summary(&lp.image), "metadata image loaded from the latest snapshot");
    }
    lp.execute(&mut engine, initial)?;
    lp.publish(&engine);
    while !lp.shutdown_complete {
        let now = now_ms();
        let deadline = lp.next_wakeup(&engine, now);
        let sleep = tokio::time::sleep(Duration::from_millis(deadline.saturating_sub(now)));
        tokio::pin!(sleep);
        tokio::select! {
            biased;
            () = std::future::ready(()), if lp.flush_pending => {
                lp.flush_pending = false;
                let cmds = engine.handle(Event::Flush, now_ms())?;
                lp.execute(&mut engine, cmds)?;
            }
            changed = shutdown.changed(), if !lp.shutdown_started => {
                if changed.is_err() || *shutdown.borrow() {
                    tracing::info!("shutting down: handing over leadership if leader");
                    lp.shutdown_started = true;
                    let cmds = engine.handle(Event::Shutdown { timeout_ms: SHUTDOWN_TIMEOUT_MS }, now_ms())?;
                    lp.execute(&mut engine, cmds)?;
                }
            }
            Some(answer) = lp.ctx.peer_responses.recv() => {
                let event = peer_event(answer);
                let cmds = engine.handle(event, now_ms())?;
                lp.execute(&mut engine, cmds)?;
            }
            Some(inbound) = lp.ctx.requests.recv() => {
                lp.on_request(&mut engine, inbound)?;
            }
            Some(answer) = lp.meta.responses.recv() => {
                lp.on_registration_response(answer);
                lp.drive_registration(&engine);
            }
            () = &mut sleep => {
                let now = now_ms();
                let cmds = engine.handle(Event::Tick, now)?;
                lp.execute(&mut engine, cmds)?;
                lp.maybe_propose_no_op(&mut engine, now)?;
                lp.drive_registration(&engine);
                lp.ctx.metrics.tick(now);
            }
            Some((id, outcome)) = lp.snapshots.done_rx.recv() => {
                lp.on_snapshot_written(&mut engine, id, outcome)?;
            }
        }
        lp.drive_workload(&mut engine)?;
        lp.publish(&engine);
    }
    Ok(engine)
}

/// One line naming what the image holds (finalized feature levels,
/// registered controllers, records of unknown types), for the log: equal
/// lines mean equal images.
fn image_summary(image: &MetadataImage) -> String {
    format!(
        "features={:?} controllers={:?} unknown_records={}",
        image.features(),
        image.controllers().keys().collect::<Vec<_>>(),
        image.unknown_records().len()
    )
}

/// Reads snapshot `id` of `log` whole into an image positioned at its end.
///
/// Errors: [`LoopError::Persist`] if it cannot be read, [`LoopError::Image`]
/// if it does not decode.
fn load_snapshot(log: &FileLog, id: OffsetAndEpoch) -> Result<MetadataImage, LoopError> {
    let reader = log.read_snapshot(id)?;
    let bytes = reader.read(0, reader.size() as usize)?;
    Ok(load_image_snapshot(id, &bytes)?)
}

fn peer_event(answer: PeerResponse) -> Event {
    let id = RequestId(answer.tag);
    match answer.result {
        Ok(body) => match raft_response(body) {
            Some(response) => Event::Response { id, response },
            None => Event::RequestFailed {
                id,
                failure: RequestFailure::Disconnected,
            },
        },
        Err(e) => {
            tracing::debug!(node = answer.node_id, api = ?answer.api_key, error = %e, "request failed");
            let failure = match e {
                ClientError::Timeout { .. } => RequestFailure::Timeout,
                _ => RequestFailure::Disconnected,
            };
            Event::RequestFailed { id, failure }
        }
    }
}

fn raft_response(body: ResponseKind) -> Option<RaftResponse> {
    Some(match body {
        ResponseKind::Vote(r) => RaftResponse::Vote(r),
        ResponseKind::BeginQuorumEpoch(r) => RaftResponse::BeginQuorumEpoch(r),
        ResponseKind::EndQuorumEpoch(r) => RaftResponse::EndQuorumEpoch(r),
        ResponseKind::Fetch(r) => RaftResponse::Fetch(r),
        ResponseKind::FetchSnapshot(r) => RaftResponse::FetchSnapshot(r),
        ResponseKind::DescribeQuorum(r) => RaftResponse::DescribeQuorum(r),
        ResponseKind::AddRaftVoter(r) => RaftResponse::AddRaftVoter(r),
        ResponseKind::RemoveRaftVoter(r) => RaftResponse::RemoveRaftVoter(r),
        ResponseKind::UpdateRaftVoter(r) => RaftResponse::UpdateRaftVoter(r),
        ResponseKind::ApiVersions(r) => RaftResponse::ApiVersions(r),
        _ => return None,
    })
}

fn response_kind(r: RaftResponse) -> ResponseKind {
    match r {
        RaftResponse::Vote(r) => ResponseKind::Vote(r),
        RaftResponse::BeginQuorumEpoch(r) => ResponseKind::BeginQuorumEpoch(r),
        RaftResponse::EndQuorumEpoch(r) => ResponseKind::EndQuorumEpoch(r),
        RaftResponse::Fetch(r) => ResponseKind::Fetch(r),
        RaftResponse::FetchSnapshot(r) => ResponseKind::FetchSnapshot(r),
        RaftResponse::DescribeQuorum(r) => ResponseKind::DescribeQuorum(r),
        RaftResponse::AddRaftVoter(r) => ResponseKind::AddRaftVoter(r),
        RaftResponse::RemoveRaftVoter(r) => ResponseKind::RemoveRaftVoter(r),
        RaftResponse::UpdateRaftVoter(r) => ResponseKind::UpdateRaftVoter(r),
        RaftResponse::ApiVersions(r) => ResponseKind::ApiVersions(r),
    }
}

fn request_kind(r: RaftRequest) -> RequestKind {
    match r {
        RaftRequest::Vote(r) => RequestKind::Vote(r),
        RaftRequest::BeginQuorumEpoch(r) => RequestKind::BeginQuorumEpoch(r),
        RaftRequest::EndQuorumEpoch(r) => RequestKind::EndQuorumEpoch(r),
        RaftRequest::Fetch(r) => RequestKind::Fetch(r),
        RaftRequest::FetchSnapshot(r) => RequestKind::FetchSnapshot(r),
        RaftRequest::DescribeQuorum(r) => RequestKind::DescribeQuorum(r),
        RaftRequest::AddRaftVoter(r) => RequestKind::AddRaftVoter(r),
        RaftRequest::RemoveRaftVoter(r) => RequestKind::RemoveRaftVoter(r),
        RaftRequest::UpdateRaftVoter(r) => RequestKind::UpdateRaftVoter(r),
        RaftRequest::ApiVersions(r) => RequestKind::ApiVersions(r),
    }
}

/// The request as the engine's [`RaftRequest`], or back, boxed (it is large),
/// when the engine does not serve it.
fn raft_request(r: RequestKind) -> Result<RaftRequest, Box<RequestKind>> {
    Ok(match r {
        RequestKind::Vote(r) => RaftRequest::Vote(r),
        RequestKind::BeginQuorumEpoch(r) => RaftRequest::BeginQuorumEpoch(r),
        RequestKind::EndQuorumEpoch(r) => RaftRequest::EndQuorumEpoch(r),
        RequestKind::Fetch(r) => RaftRequest::Fetch(r),
        RequestKind::FetchSnapshot(r) => RaftRequest::FetchSnapshot(r),
        RequestKind::DescribeQuorum(r) => RaftRequest::DescribeQuorum(r),
        RequestKind::AddRaftVoter(r) => RaftRequest::AddRaftVoter(r),
        RequestKind::RemoveRaftVoter(r) => RaftRequest::RemoveRaftVoter(r),
        RequestKind::UpdateRaftVoter(r) => RaftRequest::UpdateRaftVoter(r),
        other => return Err(Box::new(other)),
    })
}

/// The api key of a Raft request (to pick the version we send it at).
fn api_key_of(r: &RaftRequest) -> ApiKey {
    match r {
        RaftRequest::Vote(_) => ApiKey::Vote,
        RaftRequest::BeginQuorumEpoch(_) => ApiKey::BeginQuorumEpoch,
        RaftRequest::EndQuorumEpoch(_) => ApiKey::EndQuorumEpoch,
        RaftRequest::Fetch(_) => ApiKey::Fetch,
        RaftRequest::FetchSnapshot(_) => ApiKey::FetchSnapshot,
        RaftRequest::DescribeQuorum(_) => ApiKey::DescribeQuorum,
        RaftRequest::AddRaftVoter(_) => ApiKey::AddRaftVoter,
        RaftRequest::RemoveRaftVoter(_) => ApiKey::RemoveRaftVoter,
        RaftRequest::UpdateRaftVoter(_) => ApiKey::UpdateRaftVoter,
        RaftRequest::ApiVersions(_) => ApiKey::ApiVersions,
    }
}

impl Loop {
    fn next_wakeup(&self, engine: &RaftEngine<FileLog>, now: u64) -> u64 {
        let mut deadline = engine.next_deadline_ms();
        if engine.role() == Role::Leader && !self.shutdown_started {
            deadline = deadline.min(self.last_proposal_ms + self.ctx.max_idle_interval_ms);
        }
        if let Some(due) = self.workload_next_due() {
            deadline = deadline.min(now + due);
        }
        if let Some(at) = self.registration_deadline(now) {
            deadline = deadline.min(at);
        }
        // Refresh windowed metrics at least once a second.
        deadline.min(now + 1_000)
    }

    fn on_request(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        inbound: InboundRequest,
    ) -> Result<(), LoopError> {
        let api_version = inbound.request.api_version;
        match raft_request(inbound.request.body) {
            Ok(request) => {
                let handle = self.next_handle;
                self.next_handle += 1;
                self.replies.insert(handle, (inbound.reply, api_version));
                let cmds = engine.handle(
                    Event::Request {
                        handle: ReplyHandle(handle),
                        api_version,
                        request,
                    },
                    now_ms(),
                )?;
                self.execute(engine, cmds)?;
            }
            Err(other) => match *other {
                RequestKind::ApiVersions(_) => {
                    let finalized = self.finalized_features(engine);
                    let body = wire::api_versions_response(
                        api_version,
                        &wire::kafka_4_1_supported_features(),
                        &finalized,
                    );
                    let _ = inbound.reply.send(Some(ResponseKind::ApiVersions(body)));
                }
                RequestKind::ControllerRegistration(request) => {
                    self.on_controller_registration(engine, request, inbound.reply)?;
                }
                RequestKind::DescribeCluster(request) => {
                    let body = self.describe_cluster(engine, &request);
                    let _ = inbound
                        .reply
                        .send(Some(ResponseKind::DescribeCluster(body)));
                }
                other => {
                    tracing::warn!(peer = %inbound.peer, api = ?wire::request_api_key(&other),
                        "closing connection: api not served by a controller");
                    let _ = inbound.reply.send(None);
                }
            },
        }
        Ok(())
    }

    /// DescribeCluster for `bootstrap.controllers` clients (KIP-919): the
    /// controllers (the voters with their endpoints) and the active one.
    fn describe_cluster(
        &self,
        engine: &RaftEngine<FileLog>,
        request: &DescribeClusterRequest,
    ) -> DescribeClusterResponse {
        let mut response = DescribeClusterResponse::default()
            .with_endpoint_type(ENDPOINT_TYPE_CONTROLLER)
            .with_cluster_id(StrBytes::from_string(self.ctx.cluster_id.clone()))
            .with_cluster_authorized_operations(i32::MIN);
        if request.endpoint_type != ENDPOINT_TYPE_CONTROLLER {
            return response
                .with_error_code(ResponseError::UnsupportedEndpointType.code())
                .with_error_message(Some(StrBytes::from_static_str(
                    "a controller answers DescribeCluster only for endpoint type 2 (controller)",
                )));
        }
        let brokers = self.describe_cluster_controllers(engine);
        response = response
            .with_controller_id(engine.leader_id().unwrap_or(-1).into())
            .with_brokers(brokers);
        response
    }

    fn execute(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        commands: Vec<Command>,
    ) -> Result<(), LoopError> {
        for command in commands {
            match command {
                Command::Send {
                    id,
                    destination,
                    request,
                    timeout_ms: _,
                } => {
                    let node_id = destination.node_id;
                    if let Some(endpoint) = &destination.endpoint {
                        let address = if endpoint.host.contains(':') {
                            format!("[{}]:{}", endpoint.host, endpoint.port)
                        } else {
                            format!("{}:{}", endpoint.host, endpoint.port)
                        };
                        self.ctx.peers.set_peer(node_id, &address);
                    }
                    let api_key = api_key_of(&request);
                    let version = wire::supported_api(api_key).map_or(0, |a| a.max_version);
                    let mut body = request_kind(request);
                    super::fit::fit_request(&mut body, version);
                    if let Err(e) = self.ctx.peers.send(node_id, version, body, id.0) {
                        tracing::debug!(node = node_id, error = %e, "cannot send");
                        let cmds = engine.handle(
                            Event::RequestFailed {
                                id,
                                failure: RequestFailure::Disconnected,
                            },
                            now_ms(),
                        )?;
                        self.execute(engine, cmds)?;
                    }
                }
                Command::Reply { handle, response } => {
                    if let Some((reply, version)) = self.replies.remove(&handle.0) {
                        let mut body = response_kind(response);
                        super::fit::fit_response(&mut body, version);
                        let _ = reply.send(Some(body));
                    }
                }
                Command::PersistElectionState(state) => {
                    self.ctx.quorum_state.write(&crate::log::ElectionState {
                        epoch: state.epoch,
                        leader_id: state.leader_id,
                        voted_key: state.voted_key.map(|k| (k.id, k.directory_id)),
                    })?;
                }
                Command::Flush => self.flush_pending = true,
                Command::Committed { high_watermark } => {
                    self.on_committed(high_watermark);
                    // The workload's records are opaque bytes, not metadata
                    // records: like Kafka's TestRaftServer, a node running it
                    // keeps no metadata image (and so writes no snapshots and
                    // registers nothing).
                    if self.ctx.workload.is_none() {
                        self.apply_committed(engine, high_watermark)?;
                        self.after_commit(engine, high_watermark)?;
                    }
                }
                Command::RoleChanged {
                    role,
                    epoch,
                    leader_id,
                } => {
                    self.on_role_changed(role, epoch, leader_id);
                    self.metadata_on_role_changed(role, epoch, leader_id);
                }
                Command::SnapshotInstalled { snapshot_id } => {
                    self.on_snapshot_installed(engine, snapshot_id)?;
                }
                Command::ShutdownComplete => self.shutdown_complete = true,
            }
        }
        Ok(())
    }

    fn on_committed(&mut self, high_watermark: i64) {
        if let Some(w) = &self.ctx.workload {
            lock(w).committed(high_watermark, Instant::now());
        }
        let now = now_ms();
        while let Some(p) = self.proposals.front() {
            if p.last_offset >= high_watermark {
                break;
            }
            self.ctx
                .metrics
                .record_commit_latency(now, now.saturating_sub(p.proposed_at_ms) as f64);
            self.proposals.pop_front();
        }
    }

    /// Applies the newly committed records to the metadata image.
    fn apply_committed(
        &mut self,
        engine: &RaftEngine<FileLog>,
        high_watermark: i64,
    ) -> Result<(), LoopError> {
        let before = self.image.feature_level(METADATA_VERSION_FEATURE);
        let applied = self.image.apply_log(engine.log(), high_watermark)?;
        let after = self.image.feature_level(METADATA_VERSION_FEATURE);
        if before != after {
            tracing::info!(
                metadata_version = ?after.map(|l| MetadataVersion::from_feature_level(l)
                    .map_or_else(|| format!("level {l}"), |v| v.to_string())),
                "metadata.version changed"
            );
        }
        if applied > 0 {
            tracing::trace!(
                applied,
                next_offset = self.image.next_offset(),
                "applied committed metadata records"
            );
        }
        self.maybe_snapshot(engine);
        Ok(())
    }

    /// Writes a snapshot of the image when the policy says so: encoded here
    /// (the image is small), written, fsynced and renamed into place by a
    /// blocking task so the loop keeps serving. One at a time.
    fn maybe_snapshot(&mut self, engine: &RaftEngine<FileLog>) {
        let s = &mut self.snapshots;
        let now = now_ms();
        let id = image_snapshot_id(&self.image);
        // Only what this node's log holds durably: a snapshot past the
        // flushed end would survive a crash that the records below it do not.
        if s.in_flight
            || id.offset <= s.last_offset
            || id.offset > crate::log::ReplicatedLog::flushed_end_offset(engine.log())
            || !self.ctx.snapshot_policy.due(
                self.image.applied_bytes() - s.bytes_at_last,
                now.saturating_sub(s.last_ms),
            )
        {
            return;
        }
        let bytes = match encode_image_snapshot(
            &self.image,
            engine.status().kraft_version,
            engine.voters_at(id.offset).to_record(),
            now as i64,
        ) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(snapshot = %id, error = %e, "encoding a snapshot failed");
                return;
            }
        };
        let mut writer = match engine.log().create_snapshot(id) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(snapshot = %id, error = %e, "creating a snapshot failed");
                return;
            }
        };
        s.in_flight = true;
        s.bytes_at_last = self.image.applied_bytes();
        s.last_ms = now;
        s.last_offset = id.offset;
        let done = s.done_tx.clone();
        tokio::task::spawn_blocking(move || {
            let outcome = writer
                .append(&bytes)
                .and_then(|()| writer.freeze().map(drop));
            let _ = done.send((id, outcome));
        });
    }

    /// A snapshot written off the loop is done: the log learns about it (it
    /// counts for cleaning and FetchSnapshot from now on, and the log may be
    /// cleaned at once).
    ///
    /// Errors: [`LoopError::Engine`] when registering or cleaning fails (the
    /// log failed, as any engine error). A failed write is only logged: the
    /// node keeps running on its log and the next trigger tries again.
    fn on_snapshot_written(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        id: OffsetAndEpoch,
        outcome: Result<(), crate::log::LogError>,
    ) -> Result<(), LoopError> {
        self.snapshots.in_flight = false;
        match outcome {
            Ok(()) => {
                engine.register_snapshot(id)?;
                tracing::info!(snapshot = %id, "snapshot written");
            }
            Err(e) => tracing::warn!(snapshot = %id, error = %e, "writing a snapshot failed"),
        }
        Ok(())
    }

    /// The engine installed a snapshot fetched from the leader (KIP-630):
    /// the image restarts from it, before the commit that follows.
    fn on_snapshot_installed(
        &mut self,
        engine: &RaftEngine<FileLog>,
        id: OffsetAndEpoch,
    ) -> Result<(), LoopError> {
        self.image = load_snapshot(engine.log(), id)?;
        let s = &mut self.snapshots;
        s.last_offset = id.offset;
        s.bytes_at_last = self.image.applied_bytes();
        s.last_ms = now_ms();
        tracing::info!(snapshot = %id, image = %image_summary(&self.image), "metadata image loaded from a snapshot fetched from the leader");
        Ok(())
    }

    fn on_role_changed(&mut self, role: Role, epoch: i32, leader_id: Option<i32>) {
        let now = now_ms();
        let leader = leader_id.map_or_else(|| "none".to_owned(), |l| l.to_string());
        tracing::info!(role = role.name(), epoch, leader = %leader, "role changed");
        match (leader_id, self.election_started_ms) {
            (None, None) => self.election_started_ms = Some(now),
            (Some(_), Some(started)) => {
                self.ctx
                    .metrics
                    .record_election_latency(now, now.saturating_sub(started) as f64);
                self.election_started_ms = None;
            }
            _ => {}
        }
        if role == Role::Leader {
            self.last_proposal_ms = now;
        }
        // Proposals of an older epoch will never commit as such.
        self.proposals.retain(|p| p.epoch == epoch);
        if let Some(w) = &self.ctx.workload {
            let mut w = lock(w);
            if role == Role::Leader {
                w.claim(epoch, Instant::now());
            } else {
                w.resign();
            }
        }
        self.last_role = Some((role, epoch, leader_id));
    }

    fn maybe_propose_no_op(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        now: u64,
    ) -> Result<(), LoopError> {
        if engine.role() != Role::Leader
            || self.shutdown_started
            || now < self.last_proposal_ms + self.ctx.max_idle_interval_ms
        {
            return Ok(());
        }
        let record = crate::metadata::records::no_op_record();
        self.propose(engine, &[record], now).map(|_| ())
    }

    /// Appends `records` as the leader (for the layer above and no-ops);
    /// returns the offset of the last one, `None` when not leader.
    fn propose(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        records: &[Bytes],
        now: u64,
    ) -> Result<Option<i64>, LoopError> {
        self.last_proposal_ms = now;
        match engine.propose(records, now) {
            Ok((proposed, cmds)) => {
                self.ctx.metrics.record_appended(now, records.len() as u64);
                self.proposals.push_back(PendingProposal {
                    last_offset: proposed.last_offset,
                    epoch: proposed.epoch,
                    proposed_at_ms: now,
                });
                self.execute(engine, cmds)?;
                Ok(Some(proposed.last_offset))
            }
            Err(raft::RaftError::NotLeader { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Milliseconds until the workload's next record is due, if it runs.
    fn workload_next_due(&self) -> Option<u64> {
        let due = lock(self.ctx.workload.as_ref()?).next_due()?;
        let wait = due.saturating_duration_since(Instant::now());
        Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX))
    }

    /// Appends the workload's due records while this node leads and is not
    /// shutting down. Records due at the same moment go into one batch of at
    /// most [`WORKLOAD_MAX_BATCH_BYTES`], as TestRaftServer's one-record
    /// `scheduleAppend` calls are grouped by Kafka's `BatchAccumulator` into
    /// one batch per append linger: a batch per record would cost a batch
    /// header, a log write and a fetch response per record, and at 20 000
    /// records/s the leader spent its time appending instead of answering
    /// fetches (followers timed out, the quorum re-elected in a loop).
    fn drive_workload(&mut self, engine: &mut RaftEngine<FileLog>) -> Result<(), LoopError> {
        let Some(shared) = self.ctx.workload.clone() else {
            return Ok(());
        };
        if engine.role() != Role::Leader || self.shutdown_started {
            return Ok(());
        }
        let (mut due, payload) = {
            let w = lock(&shared);
            (w.due(Instant::now()), w.payload())
        };
        let per_batch = (WORKLOAD_MAX_BATCH_BYTES / payload.len().max(1)).max(1) as u64;
        while due > 0 {
            let n = due.min(per_batch);
            let records = vec![payload.clone(); n as usize];
            let Some(last) = self.propose(engine, &records, now_ms())? else {
                break;
            };
            let appended_at = Instant::now();
            let mut w = lock(&shared);
            for i in 0..n {
                w.appended(last - (n - 1 - i) as i64, appended_at);
            }
            due -= n;
        }
        Ok(())
    }

    fn publish(&self, engine: &RaftEngine<FileLog>) {
        let status = engine.status();
        self.ctx.metrics.set(&RaftGauges {
            leader_id: status.leader_id.unwrap_or(-1),
            epoch: status.epoch,
            voted_id: status.voted_key.map_or(-1, |k| k.id),
            state: if status.is_voter || status.role == Role::Leader {
                status.role.name()
            } else {
                "observer"
            },
            high_watermark: status.high_watermark.unwrap_or(-1),
            log_end_offset: status.log_end_offset,
            log_end_epoch: crate::log::ReplicatedLog::end_offset(engine.log()).epoch,
            voters: status.voters.len(),
            observers: status.observers.len(),
            uncommitted_voter_change: status.uncommitted_voter_change,
        });
        let readiness = readiness(&status);
        self.ctx.readiness.send_if_modified(|r| {
            if *r == readiness {
                false
            } else {
                *r = readiness;
                true
            }
        });
    }
}

/// Ready: a leader is known and this node is caught up with it. A leader is
/// ready once its high watermark is known (a record of its epoch committed);
/// a follower while it is fetching from the leader (it leaves the Follower
/// role when its fetch times out) and its flushed log reaches the high
/// watermark; an observer likewise.
fn readiness(status: &raft::RaftStatus) -> Readiness {
    let epoch = status.epoch;
    match (status.role, status.leader_id, status.high_watermark) {
        (Role::Leader, _, Some(hw)) => Readiness {
            ready: true,
            reason: format!("leader in epoch {epoch}, high watermark {hw}"),
        },
        (Role::Leader, _, None) => Readiness {
            ready: false,
            reason: format!("leader in epoch {epoch}, waiting for its first commit"),
        },
        (Role::Follower, Some(leader), Some(hw)) if status.flushed_end_offset >= hw => Readiness {
            ready: true,
            reason: format!(
                "{} of {leader} in epoch {epoch}, caught up to high watermark {hw}",
                if status.is_voter {
                    "follower"
                } else {
                    "observer"
                }
            ),
        },
        (Role::Follower, Some(leader), hw) => Readiness {
            ready: false,
            reason: format!(
                "following {leader} in epoch {epoch}, log end {} behind high watermark {}",
                status.flushed_end_offset,
                hw.map_or_else(|| "unknown".to_owned(), |h| h.to_string())
            ),
        },
        (role, _, _) => Readiness {
            ready: false,
            reason: format!("{} in epoch {epoch}, no leader known", role.name()),
        },
    }
}

/// Locks the workload; a panic elsewhere while holding it leaves plain
/// counters behind, still worth reading.
fn lock(
    w: &super::workload::SharedWorkload,
) -> std::sync::MutexGuard<'_, super::workload::Workload> {
    w.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
