//! The driver with a test listener: a single-voter quorum on a temp-dir
//! [`FileLog`], real tokio timers, and a listener that reports every call
//! on a channel; the tests wait for the calls they expect, with a timeout.

use std::{
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use kafka_protocol::{
    messages::{
        ApiKey, CreateTopicsRequest, DescribeClusterRequest, DescribeClusterResponse,
        RequestHeader, RequestKind, ResponseKind,
    },
    protocol::StrBytes,
};
use prometheus_client::registry::Registry;
use rand::SeedableRng;
use tokio::sync::{mpsc, oneshot, watch};

use super::{LoopContext, LoopError, run};
use crate::{
    log::{
        FileLog, FileLogConfig, OffsetAndEpoch, QuorumStateStore, ReplicatedLog,
        fault_fs::{Errno, Fault, FsOp, MemoryFs, SyncHold},
    },
    raft::{
        Endpoint, RaftConfig, RaftEngine, ReplicaKey, ReplyHandle, Role, Voter, VoterSet,
        listener::{LeaderChange, Listener, RaftClient, SnapshotSource},
    },
    server::{connection::InboundRequest, http::Readiness, metrics::RaftMetrics},
    wire::{
        DecodedRequest,
        client::{ClientConfig, PeerManager},
    },
};

/// One call of the driver into the listener.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    LoadSnapshot(OffsetAndEpoch, SnapshotSource),
    Commit(i64),
    LeaderChange(LeaderChange),
    Request(Option<ApiKey>),
    /// The listener's own proposal (as leader), at this last offset.
    Proposed(i64),
    /// The first poll after the loop started its graceful shutdown.
    ShuttingDown,
}

/// Reports every call; proposes one record when it becomes leader; answers
/// DescribeCluster with an empty response.
#[derive(Debug)]
struct Recorder {
    calls: mpsc::UnboundedSender<Call>,
    propose_on_leadership: bool,
    /// Proposes one record at every poll while leader (a workload always
    /// behind its schedule).
    propose_on_every_poll: bool,
    /// Proposes one record at every commit while the high watermark is
    /// below this (a listener that answers a commit with a record, as the
    /// registration code does).
    propose_on_commit_below: i64,
    /// [`Call::ShuttingDown`] was reported.
    reported_shutdown: bool,
}

impl Recorder {
    fn report(&self, call: Call) {
        let _ = self.calls.send(call);
    }
}

#[derive(Debug, thiserror::Error)]
#[error("test listener: {0}")]
struct RecorderError(#[from] crate::raft::RaftError);

impl Listener<FileLog> for Recorder {
    type Error = RecorderError;
    type Input = ();

    fn handle_commit(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        high_watermark: i64,
    ) -> Result<(), RecorderError> {
        self.report(Call::Commit(high_watermark));
        if high_watermark < self.propose_on_commit_below && client.role() == Role::Leader {
            client.propose(&[Bytes::from_static(b"answer to a commit")])?;
        }
        Ok(())
    }

    fn handle_load_snapshot(
        &mut self,
        _client: &mut RaftClient<'_, FileLog>,
        snapshot_id: OffsetAndEpoch,
        source: SnapshotSource,
    ) -> Result<(), RecorderError> {
        self.report(Call::LoadSnapshot(snapshot_id, source));
        Ok(())
    }

    fn handle_leader_change(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        change: LeaderChange,
    ) -> Result<(), RecorderError> {
        self.report(Call::LeaderChange(change));
        if change.role == Role::Leader
            && self.propose_on_leadership
            && let Some(p) = client.propose(&[Bytes::from_static(b"listener record")])?
        {
            self.report(Call::Proposed(p.last_offset));
        }
        Ok(())
    }

    fn api_keys(&self) -> &'static [crate::wire::Api] {
        &[crate::wire::Api::Kafka(ApiKey::DescribeCluster)]
    }

    fn handle_request(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        handle: ReplyHandle,
        _api_version: i16,
        _listener_name: &str,
        request: crate::wire::Request,
    ) -> Result<(), RecorderError> {
        self.report(Call::Request(
            request.api().and_then(crate::wire::Api::kafka),
        ));
        let body = DescribeClusterResponse::default()
            .with_cluster_id(StrBytes::from_static_str("recorder"))
            .with_controller_id(client.leader_id().unwrap_or(-1).into());
        client.reply(handle, Some(ResponseKind::DescribeCluster(body)));
        Ok(())
    }

    fn next_deadline_ms(&self, _client: &RaftClient<'_, FileLog>) -> Option<u64> {
        None
    }

    fn handle_wakeup(
        &mut self,
        _client: &mut RaftClient<'_, FileLog>,
    ) -> Result<(), RecorderError> {
        Ok(())
    }

    fn poll_input(&mut self, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }

    fn poll(&mut self, client: &mut RaftClient<'_, FileLog>) -> Result<(), RecorderError> {
        if client.shutting_down() && !self.reported_shutdown {
            self.reported_shutdown = true;
            self.report(Call::ShuttingDown);
        }
        if self.propose_on_every_poll && client.role() == Role::Leader {
            client.propose(&[Bytes::from_static(b"busy record")])?;
        }
        Ok(())
    }
}

/// A running driver over node 1, the only voter, on `dir`.
struct Node {
    calls: mpsc::UnboundedReceiver<Call>,
    requests: mpsc::Sender<InboundRequest>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<RaftEngine<FileLog>, LoopError>>,
}

fn start(dir: &std::path::Path, propose_on_leadership: bool) -> Node {
    start_with(
        dir,
        Options {
            propose_on_leadership,
            ..Options::default()
        },
    )
}

/// How [`start_with`] sets the node up.
#[derive(Default)]
struct Options {
    /// The listener proposes one record when it becomes leader.
    propose_on_leadership: bool,
    /// The listener proposes one record at every poll while leader.
    propose_on_every_poll: bool,
    /// The listener proposes one record at every commit below this high
    /// watermark (0: never).
    propose_on_commit_below: i64,
    /// The append linger (ms), if not Kafka's default.
    append_linger_ms: Option<u64>,
    /// The log's file system, if not the real one (`dir` is then a path in it).
    fs: Option<MemoryFs>,
    /// [`LoopContext::flush_on_loop_below`], if not a server's.
    flush_on_loop_below: Option<Duration>,
}

/// [`start`], set up as `options` say.
fn start_with(dir: &std::path::Path, options: Options) -> Node {
    let Options {
        propose_on_leadership,
        propose_on_every_poll,
        propose_on_commit_below,
        append_linger_ms,
        fs,
        flush_on_loop_below,
    } = options;
    let voters = VoterSet::new([Voter::new(
        ReplicaKey::of(1),
        Some(Endpoint::new("CONTROLLER", "127.0.0.1", 1)),
    )]);
    let mut config = RaftConfig::new(1, voters);
    config.kraft_version = 0;
    config.election_timeout_ms = 20;
    if let Some(linger) = append_linger_ms {
        config.append_linger_ms = linger;
    }
    let log = match fs {
        Some(fs) => FileLog::open_on(Arc::new(fs), dir, FileLogConfig::default()),
        None => FileLog::open(dir, FileLogConfig::default()),
    }
    .expect("open the temp log");
    let quorum_state = QuorumStateStore::new(dir);
    let stored =
        quorum_state
            .read()
            .expect("read quorum-state")
            .map(|s| crate::raft::ElectionState {
                epoch: s.epoch,
                leader_id: s.leader_id,
                voted_key: s
                    .voted_key
                    .map(|(id, directory_id)| ReplicaKey { id, directory_id }),
            });
    let rng = Box::new(rand_chacha::ChaCha8Rng::seed_from_u64(5));
    let (engine, initial) =
        RaftEngine::new(config, log, stored, rng, super::now_ms()).expect("engine starts");
    let (peer_tx, peer_rx) = mpsc::unbounded_channel();
    let (request_tx, request_rx) = mpsc::channel(16);
    let (readiness, _) = watch::channel(Readiness::starting());
    let ctx = LoopContext {
        quorum_state,
        peers: PeerManager::new(ClientConfig::default(), peer_tx),
        peer_responses: peer_rx,
        requests: request_rx,
        readiness,
        metrics: Arc::new(RaftMetrics::new(&mut Registry::default())),
        stages: None,
        flush_on_loop_below: flush_on_loop_below.unwrap_or(super::FLUSH_ON_LOOP_BELOW),
    };
    let (calls_tx, calls) = mpsc::unbounded_channel();
    let listener = Recorder {
        calls: calls_tx,
        propose_on_leadership,
        propose_on_every_poll,
        propose_on_commit_below,
        reported_shutdown: false,
    };
    let (shutdown, shutdown_rx) = watch::channel(false);
    let task = tokio::spawn(run(engine, initial, ctx, listener, shutdown_rx));
    Node {
        calls,
        requests: request_tx,
        shutdown,
        task,
    }
}

impl Node {
    /// The calls up to and including the first that matches `done`, within
    /// 10 s.
    async fn calls_until(&mut self, what: &str, done: impl Fn(&Call) -> bool) -> Vec<Call> {
        let mut seen = Vec::new();
        let wait = async {
            while let Some(call) = self.calls.recv().await {
                let stop = done(&call);
                seen.push(call);
                if stop {
                    return;
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .is_err()
        {
            panic!("timed out waiting for {what}; calls so far: {seen:?}");
        }
        seen
    }

    /// A DescribeCluster request (an api key of the listener's) and its answer.
    async fn describe_cluster(&self) -> Option<ResponseKind> {
        self.request(
            RequestKind::DescribeCluster(DescribeClusterRequest::default()),
            ApiKey::DescribeCluster,
        )
        .await
    }

    async fn request(&self, body: RequestKind, api_key: ApiKey) -> Option<ResponseKind> {
        let (reply, answer) = oneshot::channel();
        let request = DecodedRequest {
            header: RequestHeader::default().with_request_api_key(api_key as i16),
            api_key: api_key.into(),
            api_version: 0,
            body: body.into(),
        };
        self.requests
            .send(InboundRequest {
                connection_id: 1,
                peer: "127.0.0.1:1".parse().expect("a socket address"),
                listener_name: "CONTROLLER".into(),
                request,
                reply,
            })
            .await
            .expect("the driver takes requests");
        tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .expect("an answer within 10 s")
            .expect("the driver answers or closes")
            .map(|r| match r {
                crate::wire::Response::Kafka(r) => r,
                other => panic!("not a kafka-protocol answer: {other:?}"),
            })
    }

    async fn stop(self) -> RaftEngine<FileLog> {
        let _ = self.shutdown.send(true);
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the driver stops within 10 s")
            .expect("the driver task does not panic")
            .expect("the driver stops without error")
    }
}

/// The high watermarks of the [`Call::Commit`]s among `calls`, in order.
fn high_watermarks(calls: &[Call]) -> Vec<i64> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::Commit(hw) => Some(*hw),
            _ => None,
        })
        .collect()
}

fn is_leader(call: &Call) -> bool {
    matches!(call, Call::LeaderChange(c) if c.role == Role::Leader && c.leader_id == Some(1))
}

#[tokio::test]
async fn the_listener_hears_leadership_then_the_commit_of_what_it_proposed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut node = start(dir.path(), true);
    let calls = node.calls_until("leadership", is_leader).await;
    assert!(
        !calls.iter().any(|c| matches!(c, Call::LoadSnapshot(..))),
        "an empty log has no snapshot to load: {calls:?}"
    );
    let proposed = node
        .calls_until("the listener's proposal", |c| {
            matches!(c, Call::Proposed(_))
        })
        .await;
    let Some(Call::Proposed(offset)) = proposed.last().cloned() else {
        panic!("the proposal is the last call: {proposed:?}");
    };
    let commits = node
        .calls_until(
            "the commit of the proposal",
            |c| matches!(c, Call::Commit(hw) if *hw > offset),
        )
        .await;
    // Kafka's handleCommit: the high watermark only moves forward.
    let hws = high_watermarks(&commits);
    assert!(
        hws.windows(2).all(|w| w[0] < w[1]),
        "commits in order: {hws:?}"
    );
    node.stop().await;
}

#[tokio::test]
async fn requests_of_the_listeners_api_keys_go_to_it_and_others_close_the_connection() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut node = start(dir.path(), false);
    node.calls_until("leadership", is_leader).await;
    let answer = node.describe_cluster().await;
    let Some(ResponseKind::DescribeCluster(r)) = answer else {
        panic!("DescribeCluster answered by the listener, got {answer:?}");
    };
    assert_eq!(r.cluster_id.as_str(), "recorder");
    assert_eq!(i32::from(r.controller_id), 1);
    node.calls_until("the request call", |c| {
        *c == Call::Request(Some(ApiKey::DescribeCluster))
    })
    .await;
    let closed = node
        .request(
            RequestKind::CreateTopics(CreateTopicsRequest::default()),
            ApiKey::CreateTopics,
        )
        .await;
    assert_eq!(closed, None, "an api nobody serves closes the connection");
    node.stop().await;
}

#[tokio::test]
async fn a_snapshot_in_the_log_is_loaded_before_anything_else_at_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut node = start(dir.path(), true);
    node.calls_until("leadership", is_leader).await;
    let calls = node
        .calls_until(
            "a commit past the proposal",
            |c| matches!(c, Call::Commit(hw) if *hw >= 2),
        )
        .await;
    let Some(Call::Commit(hw)) = calls.last().cloned() else {
        panic!("a commit is the last call: {calls:?}");
    };
    let mut engine = node.stop().await;
    let id = OffsetAndEpoch::new(hw, engine.epoch());
    // A snapshot of opaque state (the driver never reads it; the listener
    // does): the header and footer control batches around one record.
    let bytes = crate::log::snapshot::encode_snapshot(
        id.epoch,
        0,
        0,
        &[],
        &[Bytes::from_static(b"listener state")],
    )
    .expect("encode a snapshot");
    engine
        .write_snapshot(id, &bytes)
        .expect("write the snapshot");
    let mut log = engine.into_log();
    crate::log::ReplicatedLog::flush(&mut log).expect("flush");
    drop(log);

    let mut node = start(dir.path(), false);
    let calls = node.calls_until("leadership again", is_leader).await;
    assert_eq!(
        calls.first(),
        Some(&Call::LoadSnapshot(id, SnapshotSource::Local)),
        "the snapshot is the first call: {calls:?}"
    );
    node.stop().await;
}

#[test]
fn a_leader_that_always_has_a_flush_pending_still_answers_requests() {
    // Issue 23: with linger 0 and records due at every turn, each flush left
    // another flush pending, and a flush always went first: the followers'
    // Fetch requests were never read and the quorum re-elected every 3 s.
    // Both placements of the fsyncs (decisions D5): on a blocking thread
    // (a leader with followers) and on the loop.
    for below in [Duration::ZERO, Duration::MAX] {
        answers_while_flushes_keep_coming(below);
    }
}

/// Proposes at every turn with linger 0 and flushes placed by `below`;
/// asserts that a request is answered within 20 s. A loop stuck that way
/// never yields, so the wait is on a thread of its own, and a runtime stuck
/// that way is leaked rather than dropped.
fn answers_while_flushes_keep_coming(below: Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (answered, answer) = std::sync::mpsc::channel();
    let path = dir.path().to_owned();
    let test = runtime.spawn(async move {
        let mut node = start_with(
            &path,
            Options {
                propose_on_every_poll: true,
                append_linger_ms: Some(0),
                flush_on_loop_below: Some(below),
                ..Options::default()
            },
        );
        node.calls_until("leadership", is_leader).await;
        let answer = node.describe_cluster().await;
        let _ = answered.send(answer);
        node.stop().await;
    });
    match answer.recv_timeout(Duration::from_secs(20)) {
        Ok(answer) => assert!(
            matches!(answer, Some(ResponseKind::DescribeCluster(_))),
            "answered between flushes, got {answer:?}"
        ),
        Err(e) => {
            std::mem::forget(runtime);
            panic!(
                "a request was not answered within 20 s while flushes kept coming \
                 (flush on the loop below {below:?}): {e}"
            );
        }
    }
    runtime
        .block_on(test)
        .expect("the node stops without panicking");
}

#[tokio::test]
async fn a_failed_fsync_of_a_flush_stops_the_loop_with_nothing_past_it_committed() {
    // Issue 23 (decisions D5): a flush's fsyncs run on a blocking thread (a
    // leader with followers) or on the loop (other nodes while the disk is
    // fast). One that fails either way stops the node; the high watermark
    // never covers its bytes.
    for below in [Duration::ZERO, Duration::MAX] {
        let dir = tempfile::tempdir().expect("temp dir");
        let fs = MemoryFs::new();
        fs.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path(".log").nth(3));
        let node = start_committing_on_with(dir.path(), &fs, below);
        stopped_on_the_failed_fsync(node, Vec::new(), fs, dir.path()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_slow_fsync_the_next_flush_leaves_the_loop_free_to_answer() {
    // Decisions D5: a node that is not a leader with followers (here a
    // leader alone) runs a flush on its loop only after a flush whose
    // fsyncs took under 1 ms; after a slower one its fsyncs run on a
    // blocking thread and requests are answered while they wait. Code that
    // kept every flush on the loop stays blocked in the held fsync of step
    // 2 and never answers (two runtime threads: the test goes on while the
    // loop's is blocked).
    let dir = tempfile::tempdir().expect("temp dir");
    let fs = MemoryFs::new();
    let mut node = start_committing_on(dir.path(), &fs);
    node.calls_until(
        "a first commit",
        |c| matches!(c, Call::Commit(hw) if *hw > 0),
    )
    .await;
    // 1. One segment fsync made slow: held 20 ms once it waits, then let go
    //    while later ones stay held.
    let hold = Arc::new(fs.hold_syncs_of(".log"));
    wait_for_a_held_sync(&hold, "a segment fsync").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    hold.let_waiting_pass();
    // 2. The next flush's segment fsync, held until the loop has answered.
    wait_for_a_held_sync(&hold, "a second segment fsync").await;
    let answer = tokio::time::timeout(Duration::from_secs(10), node.describe_cluster()).await;
    drop(hold);
    assert!(
        matches!(answer, Ok(Some(ResponseKind::DescribeCluster(_)))),
        "answered while the fsync after a slow one waits: {answer:?}"
    );
    node.stop().await;
}

#[tokio::test]
async fn after_a_slow_flush_the_flushes_return_to_the_loop_once_one_is_fast() {
    // Decisions D5: after a flush whose fsyncs took 1 ms or more, the next
    // runs on a blocking thread; once one there took under 1 ms (syncs of
    // the in-memory file system take microseconds), the flushes run on the
    // loop again. The runtime has one thread, this test's: the loop runs
    // on it, the blocking threads do not. Code that stayed on the blocking
    // threads after one slow flush would keep every later sync off it.
    let loop_thread = std::thread::current().id();
    let dir = tempfile::tempdir().expect("temp dir");
    let fs = MemoryFs::new();
    // One record proposed at each commit: a flush follows every commit.
    let mut node = start_with(
        dir.path(),
        Options {
            propose_on_leadership: true,
            propose_on_commit_below: 10_000,
            append_linger_ms: Some(0),
            fs: Some(fs.clone()),
            ..Options::default()
        },
    );
    node.calls_until(
        "a first commit",
        |c| matches!(c, Call::Commit(hw) if *hw > 0),
    )
    .await;
    // The next segment fsync takes 20 ms more; 40 from it on are recorded.
    const WATCHED: usize = 40;
    fs.watch_syncs_of(".log", Duration::from_millis(20));
    let watched = fs.clone();
    let threads = tokio::task::spawn_blocking(move || {
        watched.wait_for_watched_syncs(WATCHED, Duration::from_secs(10))
    })
    .await
    .expect("the wait does not panic")
    .expect("40 segment fsyncs within 10 s");
    node.stop().await;
    let on_loop: Vec<bool> = threads.iter().map(|t| *t == loop_thread).collect();
    // The first watched fsync took 20 ms wherever it ran (on the loop,
    // unless a busy machine made the flush before it slow too).
    assert!(
        !on_loop[1],
        "the flush after the slow one runs on a blocking thread: {on_loop:?}"
    );
    // A later flush may leave the loop again when a busy machine delays
    // its fsync past 1 ms; most do not.
    let back = on_loop[2..WATCHED].iter().filter(|on| **on).count();
    assert!(
        back * 2 > WATCHED - 2,
        "after a fast flush on a blocking thread, most later flushes run on \
         the loop ({back} of {}): {on_loop:?}",
        WATCHED - 2
    );
}

#[tokio::test]
async fn a_flush_job_running_at_shutdown_is_awaited_and_its_failed_fsync_reported() {
    // Issue 23 (decisions D5): the loop may finish its shutdown while a
    // flush job's fsync runs on a blocking thread. It must wait for the job
    // and hand its result to the engine: a fsync that fails then is the
    // node's error, not lost with a dropped job.
    let dir = tempfile::tempdir().expect("temp dir");
    let fs = MemoryFs::new();
    let mut node = start_committing_on_with(dir.path(), &fs, Duration::ZERO);
    let mut calls = node
        .calls_until(
            "a first commit",
            |c| matches!(c, Call::Commit(hw) if *hw > 0),
        )
        .await;
    let hold = Arc::new(fs.hold_syncs());
    wait_for_a_held_sync(&hold, "a flush job's fsync").await;
    fs.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path(".log"));
    let _ = node.shutdown.send(true);
    calls.extend(
        node.calls_until("the loop's shutdown", |c| *c == Call::ShuttingDown)
            .await,
    );
    drop(hold);
    stopped_on_the_failed_fsync(node, calls, fs, dir.path()).await;
}

/// Waits (on a blocking thread) up to 10 s until a sync waits behind
/// `hold`; panics naming `what` if none does.
async fn wait_for_a_held_sync(hold: &Arc<SyncHold>, what: &str) {
    let held = hold.clone();
    let waiting =
        tokio::task::spawn_blocking(move || held.wait_for_a_held_sync(Duration::from_secs(10)))
            .await
            .expect("the wait does not panic");
    assert!(waiting, "{what} starts within 10 s");
}

/// Waits up to 10 s for `node`'s loop to stop with the error of a failed
/// fsync (EIO), then checks that a crash of `fs` now leaves every offset the
/// listener was told was committed (`seen`: the calls already taken from
/// the node).
async fn stopped_on_the_failed_fsync(
    mut node: Node,
    mut seen: Vec<Call>,
    fs: MemoryFs,
    dir: &std::path::Path,
) {
    let result = tokio::time::timeout(Duration::from_secs(10), &mut node.task)
        .await
        .expect("the loop stops within 10 s")
        .expect("the loop does not panic");
    let err = result.expect_err("the loop stops with an error");
    assert!(
        err.to_string().contains("fsync of") && err.to_string().contains("os error 5"),
        "the error names the failed fsync: {err}"
    );
    while let Ok(call) = node.calls.try_recv() {
        seen.push(call);
    }
    let committed = high_watermarks(&seen);
    let highest = *committed.last().expect("commits before the failed fsync");
    fs.crash();
    let log = FileLog::open_on(Arc::new(fs), dir, FileLogConfig::default())
        .expect("the log reopens after the crash");
    let durable = log.end_offset().offset;
    assert!(
        highest <= durable,
        "committed up to {highest}, durable only to {durable} (commits {committed:?})"
    );
}

/// [`start_with`] on `fs`, its listener proposing at every poll with an
/// append linger of 0: a flush job after nearly every proposal.
fn start_committing_on(dir: &std::path::Path, fs: &MemoryFs) -> Node {
    start_committing_on_with(dir, fs, super::FLUSH_ON_LOOP_BELOW)
}

/// [`start_committing_on`] with [`LoopContext::flush_on_loop_below`] set to
/// `below` (`Duration::ZERO`: every flush on a blocking thread;
/// `Duration::MAX`: every flush on the loop).
fn start_committing_on_with(dir: &std::path::Path, fs: &MemoryFs, below: Duration) -> Node {
    start_with(
        dir,
        Options {
            propose_on_every_poll: true,
            append_linger_ms: Some(0),
            fs: Some(fs.clone()),
            flush_on_loop_below: Some(below),
            ..Options::default()
        },
    )
}

#[test]
fn a_leader_with_followers_never_flushes_on_the_loop_and_others_only_while_the_disk_is_fast() {
    use super::{FLUSH_ON_LOOP_BELOW, flush_on_loop};
    use crate::raft::Role;
    let fast = Duration::from_micros(300);
    let slow = Duration::from_millis(4);
    // A leader of three: its followers' Fetch requests must not wait.
    assert!(!flush_on_loop(
        Role::Leader,
        3,
        Duration::ZERO,
        FLUSH_ON_LOOP_BELOW
    ));
    assert!(!flush_on_loop(Role::Leader, 3, fast, FLUSH_ON_LOOP_BELOW));
    // A leader alone, a follower, a candidate: on the loop while fast.
    for (role, voters) in [
        (Role::Leader, 1),
        (Role::Follower, 3),
        (Role::Candidate, 3),
        (Role::Unattached, 3),
    ] {
        assert!(
            flush_on_loop(role, voters, fast, FLUSH_ON_LOOP_BELOW),
            "{role:?} of {voters}"
        );
        assert!(
            !flush_on_loop(role, voters, slow, FLUSH_ON_LOOP_BELOW),
            "{role:?} of {voters} after a slow flush"
        );
        assert!(
            !flush_on_loop(role, voters, FLUSH_ON_LOOP_BELOW, FLUSH_ON_LOOP_BELOW),
            "{role:?} of {voters} at the bound"
        );
        assert!(
            !flush_on_loop(role, voters, Duration::ZERO, Duration::ZERO),
            "{role:?}: a bound of zero keeps every flush off the loop"
        );
    }
}

#[tokio::test]
async fn a_record_proposed_at_a_commit_is_flushed_without_waiting_for_another_input() {
    // Review of decisions D5: a flush on the loop hands its result to the
    // engine at the top of a turn; a record the listener proposes on the
    // commit that follows asks for one more flush, which must start at
    // once, not at the next timer (up to 1 s) or request. 40 records
    // proposed one per commit commit within 10 s; with each waiting for
    // the 1 s wake-up they would take about 40 s. Both placements; an
    // in-memory file system, so that a busy disk's fsyncs do not count.
    for below in [Duration::MAX, Duration::ZERO] {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut node = start_with(
            dir.path(),
            Options {
                propose_on_leadership: true,
                propose_on_commit_below: 40,
                append_linger_ms: Some(0),
                fs: Some(MemoryFs::new()),
                flush_on_loop_below: Some(below),
                ..Options::default()
            },
        );
        // `calls_until` gives up after 10 s.
        node.calls_until(
            &format!("a high watermark of 40 (flush on the loop below {below:?})"),
            |c| matches!(c, Call::Commit(hw) if *hw >= 40),
        )
        .await;
        node.stop().await;
    }
}
