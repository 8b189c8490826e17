//! Kafka's `QuorumController`: a state machine above Raft that registers
//! Kafka brokers, keeps their sessions, fences and unfences them, runs their
//! controlled shutdown, and keeps topics, partitions, leaders and ISRs.
//!
//! - [`cluster_control`] (Kafka's `ClusterControlManager`): the checks of
//!   BrokerRegistration (62), BrokerHeartbeat (63), UnregisterBroker (64)
//!   and session expiry, over the speculative cluster state.
//! - [`heartbeat`] (Kafka's `BrokerHeartbeatManager`): sessions in memory.
//! - [`producer_ids`] (Kafka's `ProducerIdControlManager`): AllocateProducerIds
//!   (67), blocks of producer ids.
//! - [`configs`] (Kafka's `ConfigurationControlManager`) and
//!   [`topic_config_defs`] (Kafka's `LogConfig` keys and checks):
//!   IncrementalAlterConfigs (44) and AlterConfigs (33); [`describe_configs`]:
//!   DescribeConfigs (32), answered by any controller from its image.
//! - [`dir_assignment`]: AssignReplicasToDirs (73).
//! - [`replication_control`] (Kafka's `ReplicationControlManager`):
//!   CreateTopics (19), DeleteTopics (20), CreatePartitions (37) over the
//!   speculative topics, with [`placement`] (`StripedReplicaPlacer`) and
//!   [`topic_names`] (`Topic.validate`); [`leadership`]: leaders and ISRs
//!   after broker changes, AlterPartition (56), ElectLeaders (43) and the
//!   automatic preferred-leader balance, built by [`partition_change`]
//!   (`PartitionChangeBuilder`); [`answers`] maps the requests.
//! - This file: activation, the speculative state's life, and answering
//!   each request only once the records it caused (and everything appended
//!   before) are committed, as Kafka's controller event queue does.
//!
//! Speculative state (Kafka keeps timeline snapshots for this): when this
//! node leads an epoch and its committed image has applied everything up to
//! the high watermark, it becomes active with a copy of the image's brokers
//! (sessions started afresh); every broker record it appends is applied to
//! that copy at once, so the next decision sees it. When the node stops
//! leading that epoch the copy is dropped, the waiting requests get
//! NOT_CONTROLLER, and a later activation starts again from the committed
//! image: what a lost leader appended but never committed is in no image.
//! See docs/quorum-controller.md.
//!
//! It must not touch the engine except through [`RaftClient`] and must not
//! block the loop.

pub mod answers;
pub mod cluster_control;
pub mod configs;
pub mod delete_topics;
pub mod describe_configs;
pub mod dir_assignment;
pub mod election_configs;
pub mod feature_control;
pub mod features;
pub mod heartbeat;
pub mod leadership;
pub mod partition_change;
pub mod placement;
pub mod producer_ids;
pub mod replication_control;
pub mod topic_config_defs;
pub mod topic_names;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        AllocateProducerIdsResponse, ApiKey, AssignReplicasToDirsResponse, BrokerHeartbeatResponse,
        BrokerRegistrationResponse, RequestKind, ResponseKind, UnregisterBrokerResponse,
    },
    protocol::StrBytes,
};

use self::{
    cluster_control::{ClusterControl, Decision, Refusal},
    configs::{ConfigurationControl, ResourceExistence},
    leadership::broker_states,
    producer_ids::ProducerIdControl,
    replication_control::{ReplicationConfig, ReplicationControl},
};
use crate::{
    log::ReplicatedLog,
    metadata::{image::MetadataImage, records::METADATA_VERSION_FEATURE},
    raft::{
        RaftError, ReplyHandle, Role,
        listener::{LeaderChange, RaftClient},
    },
};

/// `broker.session.timeout.ms` default (Kafka's `KRaftConfigs`): 9 s.
pub const DEFAULT_BROKER_SESSION_TIMEOUT_MS: u64 = 9_000;
/// `broker.heartbeat.interval.ms` default: 2 s (a broker setting; the
/// controller only reports it).
pub const DEFAULT_BROKER_HEARTBEAT_INTERVAL_MS: u64 = 2_000;

/// The api keys the quorum controller answers.
pub const API_KEYS: &[ApiKey] = &[
    ApiKey::BrokerRegistration,
    ApiKey::BrokerHeartbeat,
    ApiKey::UnregisterBroker,
    ApiKey::AllocateProducerIds,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::AlterConfigs,
    ApiKey::AssignReplicasToDirs,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::AlterPartition,
    ApiKey::ElectLeaders,
];

/// What the quorum controller needs from the node.
#[derive(Debug, Clone)]
pub struct QuorumControllerConfig {
    /// The cluster id (Kafka text form) registrations must name.
    pub cluster_id: String,
    /// `broker.session.timeout.ms`: a broker not heard from for this long
    /// is fenced.
    pub session_timeout_ms: u64,
    /// `num.partitions` and `default.replication.factor`.
    pub replication: ReplicationConfig,
    /// How often the active controller moves leadership back to preferred
    /// replicas (`leader.imbalance.check.interval.seconds`, ms); `None`
    /// when `auto.leader.rebalance.enable` is false.
    pub leader_imbalance_check_interval_ms: Option<u64>,
}

/// The active controller's state (see the module doc).
#[derive(Debug)]
struct Active {
    epoch: i32,
    cluster: ClusterControl,
    producer_ids: ProducerIdControl,
    configs: ConfigurationControl,
    replication: ReplicationControl,
    /// `metadata.version` level of the committed image.
    metadata_level: i16,
    /// When the next preferred-leader balance runs (monotonic ms).
    next_balance_ms: Option<u64>,
}

/// An answer waiting for its records to commit.
#[derive(Debug)]
struct Pending {
    /// Answered once the high watermark passes this offset.
    last_offset: i64,
    reply: ReplyHandle,
    answer: ResponseKind,
    /// The answer if the leadership is lost first.
    not_controller: ResponseKind,
}

/// The broker half of the quorum controller (see the module doc).
#[derive(Debug)]
pub struct QuorumController {
    config: QuorumControllerConfig,
    active: Option<Active>,
    pending: Vec<Pending>,
}

fn not_controller_refusal() -> Refusal {
    (
        ResponseError::NotController,
        "this node is not the active controller".into(),
    )
}

/// The NOT_CONTROLLER answer to a request of `api`.
fn not_controller(api: ApiKey) -> ResponseKind {
    refused(api, not_controller_refusal())
}

/// Topic names by id.
fn topic_names(topics: &crate::metadata::topics::TopicsImage) -> BTreeMap<uuid::Uuid, String> {
    topics
        .by_id()
        .iter()
        .map(|(id, t)| (*id, t.name.clone()))
        .collect()
}

/// What the config checks read: the speculative brokers, the controllers
/// (voters and registered ones) and the topics.
struct Existence<'a> {
    topics: &'a crate::metadata::topics::TopicsImage,
    cluster: &'a ClusterControl,
    controllers: BTreeSet<i32>,
}

impl ResourceExistence for Existence<'_> {
    fn topic_exists(&self, name: &str) -> bool {
        self.topics.by_name(name).is_some()
    }
    fn node_exists(&self, id: i32) -> bool {
        self.cluster.brokers().contains_key(&id) || self.controllers.contains(&id)
    }
}

/// The answer refusing a request of `api` with `error`.
fn refused(api: ApiKey, (error, message): Refusal) -> ResponseKind {
    let code = error.code();
    match api {
        ApiKey::BrokerRegistration => ResponseKind::BrokerRegistration(
            BrokerRegistrationResponse::default()
                .with_error_code(code)
                .with_broker_epoch(-1),
        ),
        ApiKey::BrokerHeartbeat => ResponseKind::BrokerHeartbeat(
            BrokerHeartbeatResponse::default()
                .with_error_code(code)
                .with_is_fenced(true),
        ),
        ApiKey::AllocateProducerIds => ResponseKind::AllocateProducerIds(
            AllocateProducerIdsResponse::default().with_error_code(code),
        ),
        ApiKey::AssignReplicasToDirs => ResponseKind::AssignReplicasToDirs(
            AssignReplicasToDirsResponse::default().with_error_code(code),
        ),
        _ => ResponseKind::UnregisterBroker(
            UnregisterBrokerResponse::default()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message))),
        ),
    }
}

impl QuorumController {
    /// An inactive controller.
    pub fn new(config: QuorumControllerConfig) -> Self {
        Self {
            config,
            active: None,
            pending: Vec::new(),
        }
    }

    /// The speculative topics while active in the current epoch.
    pub fn replication(&self) -> Option<&ReplicationControl> {
        self.active.as_ref().map(|a| &a.replication)
    }

    /// The speculative cluster state while active in the current epoch.
    pub fn cluster(&self) -> Option<&ClusterControl> {
        self.active.as_ref().map(|a| &a.cluster)
    }

    /// Becomes active in the client's epoch if it leads it, is not shutting
    /// down, and `image` holds everything committed (and a
    /// `metadata.version`); drops a state of another epoch.
    fn maybe_activate<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        image: &MetadataImage,
    ) {
        let epoch = client.epoch();
        let leading = client.role() == Role::Leader && !client.shutting_down();
        if self
            .active
            .as_ref()
            .is_some_and(|a| !leading || a.epoch != epoch)
        {
            self.deactivate(client);
        }
        if self.active.is_some() || !leading {
            return;
        }
        let Some(hwm) = client.high_watermark() else {
            return;
        };
        if image.next_offset() < hwm || image.feature_level(METADATA_VERSION_FEATURE).is_none() {
            return;
        }
        tracing::info!(
            epoch,
            brokers = image.brokers().len(),
            "quorum controller active: broker state rebuilt from the committed image"
        );
        let now = client.monotonic_ms();
        self.active = Some(Active {
            epoch,
            cluster: ClusterControl::activate(
                &self.config.cluster_id,
                image,
                self.config.session_timeout_ms,
                now,
            ),
            producer_ids: ProducerIdControl::activate(image),
            configs: ConfigurationControl::activate(image),
            replication: ReplicationControl::activate(image, self.config.replication),
            metadata_level: image.feature_level(METADATA_VERSION_FEATURE).unwrap_or(0),
            next_balance_ms: self
                .config
                .leader_imbalance_check_interval_ms
                .map(|i| now.saturating_add(i)),
        });
    }

    /// Drops the speculative state and fails every waiting request with
    /// NOT_CONTROLLER.
    fn deactivate<L: ReplicatedLog>(&mut self, client: &mut RaftClient<'_, L>) {
        if let Some(a) = self.active.take() {
            tracing::info!(
                epoch = a.epoch,
                "quorum controller inactive: speculative broker state dropped"
            );
        }
        for p in std::mem::take(&mut self.pending) {
            client.reply(p.reply, Some(p.not_controller));
        }
    }

    /// After a commit to `high_watermark`: activation, then the answers
    /// whose records are now committed.
    pub fn on_commit<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        image: &MetadataImage,
        high_watermark: i64,
    ) {
        self.maybe_activate(client, image);
        if let (Some(a), Some(level)) = (
            self.active.as_mut(),
            image.feature_level(METADATA_VERSION_FEATURE),
        ) {
            a.metadata_level = level;
        }
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            if p.last_offset < high_watermark {
                client.reply(p.reply, Some(p.answer));
            } else {
                self.pending.push(p);
            }
        }
    }

    /// A leadership change: a state of another epoch (or of a lost one) is
    /// dropped.
    pub fn on_leader_change<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        change: LeaderChange,
    ) {
        let keep = change.role == Role::Leader
            && self
                .active
                .as_ref()
                .is_some_and(|a| a.epoch == change.epoch);
        if !keep {
            self.deactivate(client);
        }
    }

    /// Handles BrokerRegistration, BrokerHeartbeat, UnregisterBroker,
    /// AllocateProducerIds, the config requests, AssignReplicasToDirs and the
    /// topic requests of [`answers`]: NOT_CONTROLLER unless active;
    /// otherwise the decision's error at once, or its records (with the
    /// partition changes a broker change causes) appended and its answer
    /// given once they commit.
    ///
    /// Errors: [`RaftError`] when the append failed (fatal).
    pub fn on_request<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        image: &MetadataImage,
        request: RequestKind,
        reply: ReplyHandle,
    ) -> Result<(), RaftError> {
        let api = match &request {
            RequestKind::BrokerRegistration(_) => ApiKey::BrokerRegistration,
            RequestKind::BrokerHeartbeat(_) => ApiKey::BrokerHeartbeat,
            RequestKind::UnregisterBroker(_) => ApiKey::UnregisterBroker,
            RequestKind::AllocateProducerIds(_) => ApiKey::AllocateProducerIds,
            RequestKind::IncrementalAlterConfigs(_) => ApiKey::IncrementalAlterConfigs,
            RequestKind::AlterConfigs(_) => ApiKey::AlterConfigs,
            RequestKind::AssignReplicasToDirs(_) => ApiKey::AssignReplicasToDirs,
            other => match answers::topic_api(other) {
                Some(api) => api,
                None => {
                    client.reply(reply, None::<ResponseKind>);
                    return Ok(());
                }
            },
        };
        let not_controller_answer = answers::error_answer(&request, ResponseError::NotController)
            .unwrap_or_else(|| not_controller(api));
        self.maybe_activate(client, image);
        let Some(active) = self.active.as_mut() else {
            client.reply(reply, Some(not_controller_answer));
            return Ok(());
        };
        let next_offset = client.log().end_offset().offset;
        let now_ms = client.monotonic_ms();
        let level = active.metadata_level;
        // Kafka replays every record into every manager: the configs follow
        // the topics (CreateTopics' ConfigRecords, a deleted topic's configs
        // dropped), so they need the names of the topics before a delete.
        let names_before = matches!(request, RequestKind::DeleteTopics(_))
            .then(|| topic_names(active.replication.topics()));
        if let Some(d) = answers::decide(
            &mut active.replication,
            &request,
            active.cluster.brokers(),
            level,
        ) {
            if active.configs.replay(
                &d.records,
                names_before.as_ref().unwrap_or(&BTreeMap::new()),
            ) {
                active.replication.configs_changed(active.configs.configs());
            }
            return self.submit(
                client,
                d.records,
                next_offset,
                reply,
                d.answer,
                not_controller_answer,
            );
        }
        let before = broker_states(active.cluster.brokers());
        let heartbeat_broker = match &request {
            RequestKind::BrokerHeartbeat(r) => Some(r.broker_id.0),
            _ => None,
        };
        let controllers: BTreeSet<i32> = client
            .voters()
            .ids()
            .chain(image.controllers().keys().copied())
            .collect();
        let decision: Result<Decision<ResponseKind>, Refusal> = match request {
            RequestKind::BrokerRegistration(r) => {
                // Kafka's QuorumController.registerBroker adds the raft
                // layer's kraft.version to the image's finalized features.
                let mut finalized = image.features().clone();
                finalized.insert("kraft.version".to_owned(), client.status().kraft_version);
                active
                    .cluster
                    .register_broker(&r, &controllers, &finalized, next_offset, now_ms)
                    .map(|d| Decision {
                        records: d.records,
                        answer: ResponseKind::BrokerRegistration(
                            BrokerRegistrationResponse::default().with_broker_epoch(d.answer),
                        ),
                    })
            }
            RequestKind::BrokerHeartbeat(r) => {
                let leads = active.replication.is_leader_of_any(r.broker_id.0);
                active
                    .cluster
                    .heartbeat(&r, next_offset, now_ms, leads)
                    .map(|d| Decision {
                        records: d.records,
                        answer: ResponseKind::BrokerHeartbeat(
                            BrokerHeartbeatResponse::default()
                                .with_is_caught_up(d.answer.is_caught_up)
                                .with_is_fenced(d.answer.is_fenced)
                                .with_should_shut_down(d.answer.should_shut_down),
                        ),
                    })
            }
            RequestKind::UnregisterBroker(r) => active
                .cluster
                .unregister_broker(r.broker_id.0, next_offset)
                .map(|d| Decision {
                    records: d.records,
                    answer: ResponseKind::UnregisterBroker(UnregisterBrokerResponse::default()),
                }),
            RequestKind::AllocateProducerIds(r) => active
                .producer_ids
                .allocate(&active.cluster, r.broker_id.0, r.broker_epoch)
                .map(|d| Decision {
                    records: d.records,
                    answer: ResponseKind::AllocateProducerIds(
                        AllocateProducerIdsResponse::default()
                            .with_producer_id_start(d.answer.start.into())
                            .with_producer_id_len(d.answer.len),
                    ),
                }),
            RequestKind::IncrementalAlterConfigs(r) => {
                let exists = Existence {
                    topics: active.replication.topics(),
                    cluster: &active.cluster,
                    controllers,
                };
                let d = active.configs.incremental_alter(
                    configs::incremental_resources(&r),
                    r.validate_only,
                    &exists,
                );
                Ok(Decision {
                    records: d.records,
                    answer: configs::incremental_response(&d.results),
                })
            }
            RequestKind::AlterConfigs(r) => {
                let exists = Existence {
                    topics: active.replication.topics(),
                    cluster: &active.cluster,
                    controllers,
                };
                let d = active.configs.legacy_alter(
                    configs::legacy_resources(&r),
                    r.validate_only,
                    &exists,
                );
                Ok(Decision {
                    records: d.records,
                    answer: configs::legacy_response(&d.results),
                })
            }
            RequestKind::AssignReplicasToDirs(r) => dir_assignment::assign_replicas_to_dirs(
                &r,
                level,
                &active.cluster,
                &mut dir_assignment::ReplicationDirectories {
                    replication: &mut active.replication,
                    metadata_level: level,
                },
            )
            .map(|d| Decision {
                records: d.records,
                answer: ResponseKind::AssignReplicasToDirs(d.answer),
            }),
            _ => unreachable!("api keys matched above"),
        };
        match decision {
            Err(refusal) => {
                tracing::info!(api = ?api, error = ?refusal.0, message = %refusal.1, "broker request refused");
                client.reply(reply, Some(refused(api, refusal)));
                Ok(())
            }
            Ok(mut d) => {
                if matches!(api, ApiKey::IncrementalAlterConfigs | ApiKey::AlterConfigs)
                    && !d.records.is_empty()
                {
                    // The ClearElrRecords of a min.insync.replicas change.
                    active.replication.apply(&d.records);
                    active.replication.configs_changed(active.configs.configs());
                    let elected = active
                        .replication
                        .elect_unclean_leaders(active.cluster.brokers(), level);
                    d.records.extend(elected);
                }
                let unclean = active.cluster.take_unclean_shutdown();
                let changes = active.replication.broker_changes(
                    &before,
                    active.cluster.brokers(),
                    level,
                    unclean,
                );
                if !changes.is_empty() {
                    d.records.extend(changes);
                    // The shutdown offset is the end of the whole batch.
                    if let Some(id) = heartbeat_broker
                        && active
                            .cluster
                            .brokers()
                            .get(&id)
                            .is_some_and(|b| b.in_controlled_shutdown && !b.fenced)
                    {
                        let end = next_offset + d.records.len() as i64 - 1;
                        active.cluster.set_controlled_shutdown_offset(id, end);
                    }
                }
                self.submit(
                    client,
                    d.records,
                    next_offset,
                    reply,
                    d.answer,
                    not_controller_answer,
                )
            }
        }
    }

    /// Appends `records` (expected at `next_offset`) and queues `answer`
    /// until they, and everything before them, are committed.
    fn submit<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        records: Vec<Bytes>,
        next_offset: i64,
        reply: ReplyHandle,
        answer: ResponseKind,
        not_controller: ResponseKind,
    ) -> Result<(), RaftError> {
        let last_offset = if records.is_empty() {
            next_offset - 1
        } else {
            let proposed = propose_or_drop(client, &records)?;
            match proposed {
                Some(p) if p.last_offset == next_offset + records.len() as i64 - 1 => p.last_offset,
                Some(p) => {
                    // The records name offsets they did not get: drop the
                    // speculative state rather than answer from it.
                    tracing::error!(
                        expected = next_offset,
                        last_offset = p.last_offset,
                        "broker records appended at an unexpected offset"
                    );
                    self.deactivate(client);
                    client.reply(reply, Some(not_controller));
                    return Ok(());
                }
                None => {
                    self.deactivate(client);
                    client.reply(reply, Some(not_controller));
                    return Ok(());
                }
            }
        };
        if client.high_watermark().is_some_and(|hwm| last_offset < hwm) {
            client.reply(reply, Some(answer));
        } else {
            self.pending.push(Pending {
                last_offset,
                reply,
                answer,
                not_controller,
            });
        }
        Ok(())
    }

    /// When the next broker session expires or the next preferred-leader
    /// balance is due (ms on the monotonic clock of
    /// `RaftClient::monotonic_ms`), while active.
    pub fn deadline(&self) -> Option<u64> {
        self.active.as_ref().and_then(|a| {
            match (a.cluster.heartbeats().next_expiry_ms(), a.next_balance_ms) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            }
        })
    }

    /// Fences the brokers whose session expired, with the partition changes
    /// that follow (one batch), then, when due, the preferred-leader
    /// balance (another batch).
    ///
    /// Errors: [`RaftError`] when the append failed (fatal).
    pub fn on_wakeup<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
    ) -> Result<(), RaftError> {
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        if active.epoch != client.epoch() || client.role() != Role::Leader {
            self.deactivate(client);
            return Ok(());
        }
        let next_offset = client.log().end_offset().offset;
        let now = client.monotonic_ms();
        let level = active.metadata_level;
        // Brokers whose sessions expired are fenced one after the other,
        // each with the partition changes it causes (Kafka fences one per
        // event).
        let mut records = Vec::new();
        loop {
            let before = broker_states(active.cluster.brokers());
            let offset = next_offset + records.len() as i64;
            let Some(fence) = active.cluster.fence_one_stale_broker(now, offset) else {
                break;
            };
            records.push(fence);
            records.extend(active.replication.broker_changes(
                &before,
                active.cluster.brokers(),
                level,
                None,
            ));
        }
        // Controller-made records go in batches of at most 10,000 (Kafka's
        // non-atomic appends): a broker leading many partitions still fits.
        for chunk in records.chunks(replication_control::MAX_RECORDS_PER_USER_OP) {
            if propose_or_drop(client, chunk)?.is_none() {
                self.deactivate(client);
                return Ok(());
            }
        }
        if let Some(active) = self.active.as_mut()
            && let (Some(due), Some(interval)) = (
                active.next_balance_ms,
                self.config.leader_imbalance_check_interval_ms,
            )
            && now >= due
        {
            let (records, more) = active
                .replication
                .balance_partition_leaders(active.cluster.brokers(), level);
            // Kafka reschedules at once while imbalance remains past the
            // per-run limit.
            active.next_balance_ms = Some(if more {
                now
            } else {
                now.saturating_add(interval)
            });
            if !records.is_empty() {
                tracing::info!(
                    elections = records.len(),
                    "moving leadership back to preferred replicas"
                );
                if propose_or_drop(client, &records)?.is_none() {
                    self.deactivate(client);
                }
            }
        }
        Ok(())
    }

    /// How many waiting answers there are (for tests).
    pub fn pending_answers(&self) -> usize {
        self.pending.len()
    }

    /// Epoch of the active state, if any.
    pub fn active_epoch(&self) -> Option<i32> {
        self.active.as_ref().map(|a| a.epoch)
    }
}

/// Proposes `records`; `None` when not the leader or when they do not fit
/// one batch (logged; the caller drops its speculative state).
///
/// Errors: [`RaftError`] other than `InvalidProposal` (fatal).
fn propose_or_drop<L: ReplicatedLog>(
    client: &mut RaftClient<'_, L>,
    records: &[Bytes],
) -> Result<Option<crate::raft::Proposed>, RaftError> {
    match client.propose(records) {
        Err(RaftError::InvalidProposal {
            records,
            bytes,
            max,
        }) => {
            tracing::error!(
                records,
                bytes,
                max,
                "controller records do not fit one batch"
            );
            Ok(None)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
