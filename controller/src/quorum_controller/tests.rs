//! Unit tests of the quorum controller's own rules (review B3, B1, B4):
//! activation, answers given only once their records commit, the
//! speculative state dropped with the leadership, broker sessions on the
//! monotonic clock, and kraft.version among the finalized features.
//!
//! Each test drives one node's [`RaftEngine`] over a [`MemoryLog`] by hand
//! (the other voters, 2 and 3, exist only as the fetches and votes fed to
//! it) and runs the commands a runtime would: flushes, commits (applied to a
//! [`MetadataImage`] then handed to [`QuorumController::on_commit`]) and
//! role changes ([`QuorumController::on_leader_change`]).

use kafka_protocol::{
    messages::{
        BeginQuorumEpochRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest, FetchRequest,
        FetchResponse, VoteResponse, begin_quorum_epoch_request,
        broker_registration_request::{Feature, Listener},
        fetch_request, fetch_response, vote_response,
    },
    protocol::StrBytes,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::{
    log::MemoryLog,
    metadata::records::FeatureLevelRecord,
    raft::{
        Command, Event, RaftConfig, RaftEngine, RaftRequest, RaftResponse, ReplicaKey, RequestId,
        Voter, VoterSet,
    },
};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";
const SESSION_MS: u64 = 9_000;

fn dir(id: i32) -> uuid::Uuid {
    uuid::Uuid::from_u128(id as u128)
}

/// One node (id 1 of voters {1, 2, 3}) with its engine, committed image and
/// quorum controller, and what the runtime saw.
struct Node {
    engine: RaftEngine<MemoryLog>,
    image: MetadataImage,
    qc: QuorumController,
    kraft_version: i16,
    /// Wall clock (ms) handed to the engine and `RaftClient::now_ms`.
    now: u64,
    /// Monotonic clock (ms) of `RaftClient::monotonic_ms`.
    mono: u64,
    replies: Vec<(ReplyHandle, Option<ResponseKind>)>,
    /// Requests the engine sent and nobody answered yet.
    sends: Vec<(RequestId, RaftRequest)>,
    next_handle: u64,
}

impl Node {
    fn new(kraft_version: i16) -> Self {
        let voters = if kraft_version >= 1 {
            VoterSet::new((1..=3).map(|id| {
                Voter::new(
                    ReplicaKey::with_directory(id, dir(id)),
                    Some(crate::raft::Endpoint::new(
                        "CONTROLLER",
                        format!("node{id}"),
                        9093,
                    )),
                )
            }))
        } else {
            VoterSet::from_ids([1, 2, 3])
        };
        let mut c = RaftConfig::new(1, voters);
        c.cluster_id = Some("test".into());
        c.kraft_version = kraft_version;
        // Every node has a directory id (meta.properties), static quorum or not.
        c.directory_id = Some(dir(1));
        let (engine, commands) = RaftEngine::new(
            c,
            MemoryLog::new(),
            None,
            Box::new(ChaCha8Rng::seed_from_u64(7)),
            0,
        )
        .expect("engine starts");
        let mut node = Self {
            engine,
            image: MetadataImage::default(),
            qc: QuorumController::new(QuorumControllerConfig {
                cluster_id: CLUSTER.into(),
                session_timeout_ms: SESSION_MS,
                replication: Default::default(),
                leader_imbalance_check_interval_ms: None,
            }),
            kraft_version,
            now: 0,
            mono: 1_000_000,
            replies: Vec::new(),
            sends: Vec::new(),
            next_handle: 100,
        };
        node.run(commands);
        node
    }

    /// Runs `f` with a client at the node's clocks, then the commands it
    /// left.
    fn with_client<T>(
        &mut self,
        f: impl FnOnce(&mut QuorumController, &mut RaftClient<'_, MemoryLog>, &MetadataImage) -> T,
    ) -> T {
        let mut client =
            RaftClient::new(&mut self.engine, self.now, false, 0).with_monotonic_ms(self.mono);
        let out = f(&mut self.qc, &mut client, &self.image);
        let (output, _) = client.finish();
        self.replies
            .extend(output.replies.into_iter().map(|(h, r)| {
                (
                    h,
                    r.map(|r| match r {
                        crate::wire::Response::Kafka(r) => r,
                        other => panic!("not a kafka-protocol answer: {other:?}"),
                    }),
                )
            }));
        self.run(output.commands);
        out
    }

    /// Executes engine commands as the runtime does.
    fn run(&mut self, commands: Vec<Command>) {
        let mut queue = std::collections::VecDeque::from(commands);
        while let Some(c) = queue.pop_front() {
            match c {
                Command::Flush => {
                    let more = self.engine.handle(Event::Flush, self.now).expect("flush");
                    queue.extend(more);
                }
                Command::Committed { high_watermark } => {
                    self.image
                        .apply_log(self.engine.log(), high_watermark)
                        .expect("image applies");
                    self.with_client(|qc, client, image| {
                        qc.on_commit(client, image, high_watermark)
                    });
                }
                Command::RoleChanged {
                    role,
                    epoch,
                    leader_id,
                } => {
                    let change = LeaderChange {
                        role,
                        epoch,
                        leader_id,
                    };
                    self.with_client(|qc, client, _| qc.on_leader_change(client, change));
                }
                Command::Send { id, request, .. } => self.sends.push((id, request)),
                _ => {}
            }
        }
    }

    fn handle(&mut self, event: Event) {
        let commands = self.engine.handle(event, self.now).expect("engine handles");
        self.run(commands);
    }

    /// Answers the first unanswered (pre-)vote request with a grant.
    fn grant_vote(&mut self) {
        let i = self
            .sends
            .iter()
            .position(|(_, r)| matches!(r, RaftRequest::Vote(_)))
            .expect("a vote request was sent");
        let (id, _) = self.sends.remove(i);
        let epoch = self.engine.epoch();
        self.handle(Event::Response {
            id,
            response: RaftResponse::Vote(VoteResponse::default().with_topics(vec![
                vote_response::TopicData::default().with_partitions(vec![
                    vote_response::PartitionData::default()
                        .with_leader_id((-1).into())
                        .with_leader_epoch(epoch)
                        .with_vote_granted(true),
                ]),
            ])),
        });
    }

    /// Ticks the engine (at its deadline) until it leads, granting votes.
    fn elect(&mut self) {
        for _ in 0..20 {
            if self.engine.role() == Role::Leader {
                return;
            }
            if self
                .sends
                .iter()
                .any(|(_, r)| matches!(r, RaftRequest::Vote(_)))
            {
                self.grant_vote();
                continue;
            }
            self.now = self.now.max(self.engine.next_deadline_ms());
            self.handle(Event::Tick);
        }
        panic!("node 1 was not elected: {:?}", self.engine.role());
    }

    /// Voter 2 fetches everything the leader has (and so commits what the
    /// leader flushed).
    fn follower_fetches_all(&mut self) {
        self.follower_fetches(self.engine.log().end_offset().offset);
    }

    /// Voter 2 fetches at `offset` (it has everything below; all of it of
    /// the current epoch).
    fn follower_fetches(&mut self, offset: i64) {
        let mut partition = fetch_request::FetchPartition::default()
            .with_current_leader_epoch(self.engine.epoch())
            .with_fetch_offset(offset)
            .with_last_fetched_epoch(self.engine.epoch())
            .with_partition_max_bytes(1 << 20);
        if self.kraft_version >= 1 {
            partition.replica_directory_id = dir(2);
        }
        let request = FetchRequest::default()
            .with_cluster_id(Some("test".into()))
            .with_replica_id(2.into())
            .with_topics(vec![
                fetch_request::FetchTopic::default().with_partitions(vec![partition]),
            ]);
        self.handle(Event::Request {
            handle: ReplyHandle(9),
            api_version: 17,
            request: RaftRequest::Fetch(request),
        });
    }

    /// Leader 1 flushes and voter 2 fetches: everything appended commits.
    fn commit_all(&mut self) {
        self.handle(Event::Flush);
        self.follower_fetches_all();
        assert_eq!(
            self.engine.high_watermark(),
            Some(self.engine.log().end_offset().offset),
            "all committed"
        );
    }

    /// An elected leader 1 that committed `metadata.version` 27 (4.1-IV1)
    /// and so became the active controller.
    fn active(kraft_version: i16) -> Self {
        let mut node = Self::new(kraft_version);
        node.elect();
        node.commit_all();
        assert_eq!(node.qc.active_epoch(), None, "no metadata.version yet");
        let mv = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        }
        .encode_framed();
        node.with_client(|_, client, _| client.propose(&[mv]).expect("proposes"))
            .expect("leader");
        node.commit_all();
        assert_eq!(node.qc.active_epoch(), Some(node.engine.epoch()));
        node
    }

    /// Sends `request` to the quorum controller; its reply handle.
    fn request(&mut self, request: RequestKind) -> ReplyHandle {
        let handle = ReplyHandle(self.next_handle);
        self.next_handle += 1;
        self.with_client(|qc, client, image| {
            qc.on_request(client, image, request, handle)
                .expect("no log failure")
        });
        handle
    }

    /// The answers given to `handle` so far.
    fn answers(&self, handle: ReplyHandle) -> Vec<&ResponseKind> {
        self.replies
            .iter()
            .filter(|(h, _)| *h == handle)
            .map(|(_, r)| r.as_ref().expect("an answer, not a closed connection"))
            .collect()
    }

    /// The one registration answer to `handle`: (error code, broker epoch).
    fn registration_answer(&self, handle: ReplyHandle) -> (i16, i64) {
        match self.answers(handle).as_slice() {
            [ResponseKind::BrokerRegistration(r)] => (r.error_code, r.broker_epoch),
            other => panic!("expected one registration answer, got {other:?}"),
        }
    }

    /// The one heartbeat answer to `handle`: (error code, is_fenced).
    fn heartbeat_answer(&self, handle: ReplyHandle) -> (i16, bool) {
        match self.answers(handle).as_slice() {
            [ResponseKind::BrokerHeartbeat(r)] => (r.error_code, r.is_fenced),
            other => panic!("expected one heartbeat answer, got {other:?}"),
        }
    }

    fn end_offset(&self) -> i64 {
        self.engine.log().end_offset().offset
    }
}

fn feature(name: &'static str, min: i16, max: i16) -> Feature {
    Feature::default()
        .with_name(StrBytes::from_static_str(name))
        .with_min_supported_version(min)
        .with_max_supported_version(max)
}

fn registration(id: i32, features: Vec<Feature>) -> RequestKind {
    RequestKind::BrokerRegistration(
        BrokerRegistrationRequest::default()
            .with_broker_id(id.into())
            .with_cluster_id(StrBytes::from_static_str(CLUSTER))
            .with_incarnation_id(uuid::Uuid::from_u128(id as u128))
            .with_listeners(vec![
                Listener::default()
                    .with_name(StrBytes::from_static_str("PLAINTEXT"))
                    .with_host(StrBytes::from_static_str("b-11"))
                    .with_port(9092),
            ])
            .with_features(features)
            .with_log_dirs(vec![uuid::Uuid::from_u128(0xd000 + id as u128)])
            .with_previous_broker_epoch(-1),
    )
}

/// A broker of 4.1 (metadata.version 7-27) that supports kraft.version 0-1.
fn broker(id: i32) -> RequestKind {
    registration(
        id,
        vec![
            feature(METADATA_VERSION_FEATURE, 7, 27),
            feature("kraft.version", 0, 1),
        ],
    )
}

fn heartbeat(id: i32, epoch: i64, offset: i64) -> RequestKind {
    RequestKind::BrokerHeartbeat(
        BrokerHeartbeatRequest::default()
            .with_broker_id(id.into())
            .with_broker_epoch(epoch)
            .with_current_metadata_offset(offset)
            .with_want_fence(false),
    )
}

fn not_controller_code() -> i16 {
    ResponseError::NotController.code()
}

#[test]
fn a_request_before_activation_gets_not_controller() {
    // A follower-to-be that has not been elected.
    let mut node = Node::new(0);
    let h = node.request(broker(11));
    assert_eq!(node.registration_answer(h), (not_controller_code(), -1));
    // Elected and committed, but no metadata.version in the image yet.
    node.elect();
    node.commit_all();
    let h = node.request(heartbeat(11, 5, 0));
    assert_eq!(node.heartbeat_answer(h), (not_controller_code(), true));
    assert_eq!(node.qc.active_epoch(), None);
    assert_eq!(
        node.end_offset(),
        1,
        "nothing appended for a refused request"
    );
}

#[test]
fn a_registration_is_answered_once_its_record_commits_with_its_offset_as_epoch() {
    let mut node = Node::active(0);
    let offset = node.end_offset();
    let h = node.request(broker(11));
    assert_eq!(node.end_offset(), offset + 1, "the record is appended");
    assert!(node.answers(h).is_empty(), "no answer before the commit");
    assert_eq!(node.qc.pending_answers(), 1);
    assert!(
        node.qc
            .cluster()
            .expect("active")
            .brokers()
            .contains_key(&11),
        "the speculative state sees the broker at once"
    );
    assert!(node.image.brokers().is_empty());
    // Flushed by the leader but not fetched by a follower: still not
    // committed, still no answer.
    node.handle(Event::Flush);
    assert!(node.answers(h).is_empty());
    node.follower_fetches_all();
    assert_eq!(node.registration_answer(h), (0, offset));
    assert_eq!(node.qc.pending_answers(), 0);
    assert_eq!(
        node.image.brokers().get(&11).map(|b| b.epoch),
        Some(offset),
        "the committed image has the broker at its record's offset"
    );
}

#[test]
fn a_commit_answers_only_the_requests_whose_records_it_covers() {
    let mut node = Node::active(0);
    let first = node.end_offset();
    let a = node.request(broker(11));
    let b = node.request(broker(12));
    assert_eq!(node.end_offset(), first + 2);
    assert_eq!(node.qc.pending_answers(), 2);
    node.handle(Event::Flush);
    // The high watermark reaches broker 12's record (exclusive): 11 is
    // committed, 12 is not.
    node.follower_fetches(first + 1);
    assert_eq!(node.engine.high_watermark(), Some(first + 1));
    assert_eq!(node.registration_answer(a), (0, first));
    assert!(node.answers(b).is_empty(), "its record is not committed");
    assert_eq!(node.qc.pending_answers(), 1);
    node.follower_fetches(first + 2);
    assert_eq!(node.registration_answer(b), (0, first + 1));
}

#[test]
fn a_heartbeat_without_records_waits_for_what_was_appended_before_it() {
    let mut node = Node::active(0);
    let offset = node.end_offset();
    let reg = node.request(broker(11));
    // The broker heartbeats at once (it heard of its epoch from elsewhere):
    // the answer appends nothing but must wait for the registration.
    let end = node.end_offset();
    let hb = node.request(heartbeat(11, offset, -1));
    assert_eq!(node.end_offset(), end, "a fenced, behind broker: no record");
    assert!(node.answers(hb).is_empty());
    node.commit_all();
    assert_eq!(node.registration_answer(reg), (0, offset));
    assert_eq!(node.heartbeat_answer(hb), (0, true));
}

#[test]
fn losing_leadership_answers_waiting_requests_not_controller_and_drops_the_speculative_state() {
    let mut node = Node::active(0);
    let epoch = node.engine.epoch();
    let offset = node.end_offset();
    let h = node.request(broker(11));
    node.handle(Event::Flush);
    assert!(node.answers(h).is_empty());
    // Voter 2 leads epoch 2: node 1 follows it, before its record commits.
    let begin = BeginQuorumEpochRequest::default()
        .with_cluster_id(Some("test".into()))
        .with_topics(vec![
            begin_quorum_epoch_request::TopicData::default().with_partitions(vec![
                begin_quorum_epoch_request::PartitionData::default()
                    .with_leader_id(2.into())
                    .with_leader_epoch(epoch + 1),
            ]),
        ]);
    node.handle(Event::Request {
        handle: ReplyHandle(8),
        api_version: 1,
        request: RaftRequest::BeginQuorumEpoch(begin),
    });
    assert_eq!(node.engine.role(), Role::Follower);
    assert_eq!(node.registration_answer(h), (not_controller_code(), -1));
    assert_eq!(node.qc.active_epoch(), None);
    assert!(node.qc.cluster().is_none(), "speculative state dropped");
    assert_eq!(node.qc.pending_answers(), 0);
    let again = node.request(heartbeat(11, offset, offset));
    assert_eq!(node.heartbeat_answer(again), (not_controller_code(), true));

    // Leader 2 never had the record: node 1 truncates it.
    let (id, _) = node
        .sends
        .iter()
        .rev()
        .find(|(_, r)| matches!(r, RaftRequest::Fetch(_)))
        .cloned()
        .expect("node 1 fetches from its new leader");
    node.sends.clear();
    let mut partition = fetch_response::PartitionData::default().with_high_watermark(offset);
    partition.diverging_epoch.epoch = epoch;
    partition.diverging_epoch.end_offset = offset;
    node.handle(Event::Response {
        id,
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![partition]),
        ])),
    });
    assert_eq!(
        node.end_offset(),
        offset,
        "the uncommitted registration is gone"
    );

    // Leader 2 goes silent; node 1 is elected again and activates from its
    // committed image: it does not know broker 11.
    node.sends.clear();
    node.elect();
    assert!(node.engine.epoch() > epoch + 1);
    node.commit_all();
    assert_eq!(node.qc.active_epoch(), Some(node.engine.epoch()));
    let cluster = node.qc.cluster().expect("active");
    assert!(cluster.brokers().is_empty(), "{:?}", cluster.brokers());
    assert!(node.image.brokers().is_empty());
    let next = node.end_offset();
    let h = node.request(heartbeat(11, offset, next));
    assert_eq!(
        node.heartbeat_answer(h).0,
        ResponseError::StaleBrokerEpoch.code(),
        "the broker must register again"
    );
}

/// Broker 11 registered, committed and unfenced on an active node 1.
fn unfenced_broker() -> (Node, i64) {
    let mut node = Node::active(0);
    let epoch = node.end_offset();
    node.request(broker(11));
    node.commit_all();
    let caught_up = node.end_offset();
    let h = node.request(heartbeat(11, epoch, caught_up));
    node.commit_all();
    assert_eq!(node.heartbeat_answer(h), (0, false), "unfenced");
    assert!(node.image.brokers().get(&11).is_some_and(|b| !b.fenced));
    (node, epoch)
}

#[test]
fn a_wall_clock_jump_fences_nobody_and_a_monotonic_advance_past_the_session_fences() {
    let (mut node, epoch) = unfenced_broker();
    // B1: the wall clock steps ten minutes forward (NTP); the monotonic
    // clock does not move. The session deadline is on the monotonic clock.
    let wall = node.now;
    node.now += 600_000;
    let end = node.end_offset();
    node.with_client(|qc, client, _| qc.on_wakeup(client).expect("no log failure"));
    assert_eq!(node.end_offset(), end, "no fence record appended");
    assert!(
        !node.qc.cluster().expect("active").brokers()[&11].fenced,
        "not fenced by a wall-clock step"
    );
    // The wall clock steps back to where it was (the engine, whose timers
    // also run on it, sees no time pass: this test is about sessions) and
    // stays there: a broker silent for longer than the session timeout on
    // the monotonic clock is fenced all the same.
    node.now = wall;
    let h = node.request(heartbeat(11, epoch, node.end_offset()));
    assert_eq!(node.heartbeat_answer(h), (0, false));
    let deadline = node.qc.deadline().expect("a session to expire");
    assert_eq!(deadline, node.mono + SESSION_MS + 1);
    node.mono += SESSION_MS;
    node.with_client(|qc, client, _| qc.on_wakeup(client).expect("no log failure"));
    assert_eq!(
        node.end_offset(),
        end,
        "still within the session at its edge"
    );
    node.mono = deadline;
    node.with_client(|qc, client, _| qc.on_wakeup(client).expect("no log failure"));
    assert_eq!(node.end_offset(), end + 1, "one fence record");
    assert!(node.qc.cluster().expect("active").brokers()[&11].fenced);
    node.commit_all();
    assert!(
        node.image.brokers()[&11].fenced,
        "the fence commits into the image"
    );
    assert_eq!(node.qc.deadline(), None, "no unfenced session left");
}

#[test]
fn on_kraft_version_1_a_broker_without_kraft_version_1_is_unsupported_and_nothing_is_appended() {
    let mut node = Node::active(1);
    assert_eq!(node.engine.status().kraft_version, 1);
    let end = node.end_offset();
    for features in [
        vec![
            feature(METADATA_VERSION_FEATURE, 7, 27),
            feature("kraft.version", 0, 0),
        ],
        // Not advertised: Kafka takes 0..=0.
        vec![feature(METADATA_VERSION_FEATURE, 7, 27)],
    ] {
        let h = node.request(registration(11, features));
        assert_eq!(
            node.registration_answer(h),
            (ResponseError::UnsupportedVersion.code(), -1)
        );
        assert_eq!(node.end_offset(), end, "nothing appended");
        assert!(node.qc.cluster().expect("active").brokers().is_empty());
        assert_eq!(node.qc.pending_answers(), 0);
    }
    // A broker that supports kraft.version 1 registers.
    let h = node.request(broker(11));
    node.commit_all();
    assert_eq!(node.registration_answer(h), (0, end));
}

fn create_topic(name: &'static str, partitions: i32) -> RequestKind {
    use kafka_protocol::messages::{
        CreateTopicsRequest, TopicName, create_topics_request::CreatableTopic,
    };
    RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(name)))
                .with_num_partitions(partitions)
                .with_replication_factor(1),
        ]))
}

#[test]
fn topics_are_answered_after_commit_and_fencing_and_shutdown_move_leadership_in_the_same_batch() {
    let (mut node, epoch) = unfenced_broker();
    let before = node.end_offset();
    let h = node.request(create_topic("t", 2));
    assert_eq!(
        node.end_offset(),
        before + 3,
        "TopicRecord + 2 PartitionRecords, one batch"
    );
    assert!(node.answers(h).is_empty(), "no answer before the commit");
    node.commit_all();
    match node.answers(h).as_slice() {
        [ResponseKind::CreateTopics(r)] => {
            assert_eq!((r.topics[0].error_code, r.topics[0].num_partitions), (0, 2));
        }
        other => panic!("not one CreateTopics answer: {other:?}"),
    }
    let leaders = |node: &Node| -> Vec<i32> {
        let t = node.image.topics().by_name("t").expect("t committed");
        t.partitions.values().map(|p| p.leader).collect()
    };
    assert_eq!(leaders(&node), vec![11, 11]);

    // Controlled shutdown: the broker leads, so it is not told to shut down
    // yet; its leaderships go (offline: it is the only replica) in the batch
    // of its shutdown record.
    let end = node.end_offset();
    let shut = RequestKind::BrokerHeartbeat(
        BrokerHeartbeatRequest::default()
            .with_broker_id(11.into())
            .with_broker_epoch(epoch)
            .with_current_metadata_offset(end)
            .with_want_shut_down(true),
    );
    let h = node.request(shut.clone());
    assert_eq!(
        node.end_offset(),
        end + 3,
        "shutdown record + 2 partition changes"
    );
    node.commit_all();
    match node.answers(h).as_slice() {
        [ResponseKind::BrokerHeartbeat(r)] => assert!(!r.should_shut_down, "{r:?}"),
        other => panic!("not one heartbeat answer: {other:?}"),
    }
    assert_eq!(leaders(&node), vec![-1, -1]);
    assert!(!node.qc.replication().expect("active").is_leader_of_any(11));
    // Caught up and leading nothing: now it may shut down (and is fenced).
    let h = node.request(shut);
    node.commit_all();
    match node.answers(h).as_slice() {
        [ResponseKind::BrokerHeartbeat(r)] => assert!(r.should_shut_down, "{r:?}"),
        other => panic!("not one heartbeat answer: {other:?}"),
    }
    assert_eq!(node.image.topics().offline_partition_count(), 2);
}

#[test]
fn a_broker_fenced_by_session_expiry_loses_leadership_in_the_fence_batch_and_regains_it_unfenced() {
    let (mut node, epoch) = unfenced_broker();
    node.request(create_topic("t", 3));
    node.commit_all();
    let end = node.end_offset();
    node.mono += SESSION_MS + 1;
    node.with_client(|qc, client, _| qc.on_wakeup(client).expect("no log failure"));
    assert_eq!(node.end_offset(), end + 4, "fence + 3 partition changes");
    node.commit_all();
    let t = node.image.topics().by_name("t").expect("t").clone();
    assert!(
        t.partitions
            .values()
            .all(|p| p.leader == -1 && p.isr == vec![11])
    );
    // It heartbeats again, caught up: unfenced and leader again.
    let h = node.request(heartbeat(11, epoch, node.end_offset()));
    node.commit_all();
    assert_eq!(node.heartbeat_answer(h), (0, false));
    let t = node.image.topics().by_name("t").expect("t");
    assert!(
        t.partitions
            .values()
            .all(|p| p.leader == 11 && p.leader_epoch == 2)
    );
}

/// AllocateProducerIds and the configs over the same [`Node`] harness.
#[path = "tests_pids.rs"]
mod pids;

/// UpdateFeatures (kraft.version 0 -> 1) over the same [`Node`] harness.
#[path = "tests_features.rs"]
mod features;
