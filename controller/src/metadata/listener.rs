//! The metadata listener: the [`Listener`] above Raft that gives the
//! committed metadata records their meaning, as Kafka's `QuorumController`
//! (its `QuorumMetaLogListener`) and `ControllerRegistrationManager` do.
//!
//! - `handleCommit`: applies the committed records to the [`MetadataImage`],
//!   writes a snapshot of it when the policy says so (`snapshots.rs`),
//!   answers the registrations now committed, activates an empty log (the
//!   bootstrap records) and publishes the image view (`GET /metadata`).
//! - `handleLoadSnapshot`: the image restarts from the snapshot (the local
//!   one at start, or one installed from the leader, KIP-630).
//! - `handleLeaderChange`: fails the registrations of an epoch this node no
//!   longer leads.
//! - Requests: ApiVersions (finalized features), DescribeCluster (KIP-919),
//!   ControllerRegistration (API 70) and UnregisterController (API 94,
//!   KIP-1312), both in `registration.rs`; BrokerRegistration,
//!   BrokerHeartbeat and UnregisterBroker go to the quorum controller
//!   (`crate::quorum_controller`), which also answers after commits, drops
//!   its speculative state on leader changes and fences expired sessions
//!   at its deadline. DescribeAcls, CreateAcls and DeleteAcls go to
//!   `crate::acl::requests`; the committed ACLs are published for the
//!   authorizer with the image view.
//! - Deadlines: the idle no-op record (`metadata.max.idle.interval.ms`) and
//!   the registration backoff.
//!
//! It must not make consensus decisions nor touch the engine except through
//! [`RaftClient`], and must not block the loop (snapshots are written by a
//! blocking task).

mod registration;
mod snapshots;

use std::task::{Context, Poll};

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::wire::{Api, Request, Response};
use tokio::sync::watch;

use self::{registration::Registration, snapshots::Snapshots};
use super::{
    bootstrap::BootstrapMetadata,
    cluster,
    image::{ImageError, MetadataImage},
    records::{METADATA_VERSION_FEATURE, RegisterControllerRecord},
    snapshot::{SnapshotPolicy, load_image_snapshot},
    version::MetadataVersion,
    view::ImageView,
};
use crate::{
    log::{FileLog, LogError, OffsetAndEpoch},
    quorum_controller::{QuorumController, QuorumControllerConfig},
    raft::{
        RaftError, ReplyHandle,
        listener::{LeaderChange, Listener, RaftClient, SnapshotSource},
    },
    wire::client::{ClientConfig, PeerResponse},
};

/// Errors of the metadata listener; each stops the node.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// The engine failed while the listener proposed or registered a
    /// snapshot (the log failed).
    #[error("raft engine: {0}")]
    Raft(#[from] RaftError),
    /// A committed metadata record could not be applied to the image (the
    /// log holds a malformed record of a known type): the node must stop
    /// rather than serve a wrong image.
    #[error("applying committed metadata: {0}")]
    Image(#[from] ImageError),
    /// The engine reported a snapshot the log does not hold.
    #[error("loading snapshot {0}: the log holds no such snapshot")]
    SnapshotMissing(OffsetAndEpoch),
}

/// What the metadata listener needs from the node.
#[derive(Debug)]
pub struct MetadataConfig {
    /// The node's cluster id (Kafka text form), for DescribeCluster.
    pub cluster_id: String,
    /// This node's registration: id, incarnation id (random per process
    /// start), advertised controller listeners, supported features.
    pub registration: RegisterControllerRecord,
    /// Name of the Raft listener (the first of `controller.listener.names`):
    /// the registration channel dials the active controller's endpoint of
    /// this name. DescribeCluster uses the listener each request came in on.
    pub listener_name: String,
    /// What the first leader of an empty log appends.
    pub bootstrap: BootstrapMetadata,
    /// The client settings of the registration channel.
    pub client: ClientConfig,
    /// Where the image view is published for `GET /metadata`.
    pub view: watch::Sender<ImageView>,
    /// `metadata.max.idle.interval.ms`: a leader with nothing to write for
    /// this long appends a NoOpRecord (Kafka's `QuorumController`).
    pub max_idle_interval_ms: u64,
    /// When to write a snapshot of the image
    /// (`metadata.log.max.record.bytes.between.snapshots`,
    /// `metadata.log.max.snapshot.interval.ms`).
    pub snapshot_policy: SnapshotPolicy,
    /// `broker.session.timeout.ms` (9000): brokers not heard from for this
    /// long are fenced.
    pub broker_session_timeout_ms: u64,
    /// `num.partitions`, `default.replication.factor`.
    pub replication: crate::quorum_controller::replication_control::ReplicationConfig,
    /// `leader.imbalance.check.interval.seconds` in ms when
    /// `auto.leader.rebalance.enable` is true, else `None`.
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// Kafka's ActiveBrokerCount and FencedBrokerCount, set from the image.
    pub broker_gauges: crate::server::metrics::BrokerGauges,
    /// Where the committed ACLs are published for the authorizer.
    pub acls: crate::acl::AclsConfig,
}

/// What the listener's background work hands back to it.
#[derive(Debug)]
pub enum MetadataInput {
    /// The active controller's answer to this node's registration.
    RegistrationAnswer(PeerResponse),
    /// A snapshot written off the loop: its id, or why not.
    SnapshotWritten(OffsetAndEpoch, Result<(), LogError>),
}

/// The metadata state machine above Raft (see the module doc).
#[derive(Debug)]
pub struct MetadataListener {
    config: MetadataConfig,
    /// The state machine over the committed records; starts empty at the log
    /// start and replays the log as the high watermark becomes known.
    image: MetadataImage,
    snapshots: Snapshots,
    registration: Registration,
    quorum: QuorumController,
    acls: crate::acl::requests::AclRequests,
}

/// The apis the metadata listener answers.
const API_KEYS: &[Api] = &[
    Api::Kafka(ApiKey::ApiVersions),
    Api::Kafka(ApiKey::DescribeCluster),
    Api::Kafka(ApiKey::ControllerRegistration),
    Api::UnregisterController,
    Api::Kafka(ApiKey::BrokerRegistration),
    Api::Kafka(ApiKey::BrokerHeartbeat),
    Api::Kafka(ApiKey::UnregisterBroker),
    Api::Kafka(ApiKey::DescribeAcls),
    Api::Kafka(ApiKey::CreateAcls),
    Api::Kafka(ApiKey::DeleteAcls),
    Api::Kafka(ApiKey::AllocateProducerIds),
    Api::Kafka(ApiKey::IncrementalAlterConfigs),
    Api::Kafka(ApiKey::AlterConfigs),
    Api::Kafka(ApiKey::DescribeConfigs),
    Api::Kafka(ApiKey::AssignReplicasToDirs),
    Api::Kafka(ApiKey::CreateTopics),
    Api::Kafka(ApiKey::DeleteTopics),
    Api::Kafka(ApiKey::CreatePartitions),
    Api::Kafka(ApiKey::AlterPartition),
    Api::Kafka(ApiKey::ElectLeaders),
    Api::Kafka(ApiKey::UpdateFeatures),
];

impl MetadataListener {
    /// A listener whose image starts empty at `log_start_offset` (the log's
    /// start when the node starts).
    pub fn new(config: MetadataConfig, log_start_offset: i64, now_ms: u64) -> Self {
        Self {
            registration: Registration::new(&config),
            quorum: QuorumController::new(QuorumControllerConfig {
                cluster_id: config.cluster_id.clone(),
                session_timeout_ms: config.broker_session_timeout_ms,
                replication: config.replication,
                leader_imbalance_check_interval_ms: config.leader_imbalance_check_interval_ms,
            }),
            snapshots: Snapshots::new(now_ms),
            acls: crate::acl::requests::AclRequests::new(config.acls.authorizer_enabled),
            image: MetadataImage::starting_at(log_start_offset),
            config,
        }
    }

    /// Reads snapshot `id` whole into an image positioned at its end.
    fn load(
        client: &RaftClient<'_, FileLog>,
        id: OffsetAndEpoch,
    ) -> Result<MetadataImage, MetadataError> {
        let bytes = client
            .read_snapshot(id)?
            .ok_or(MetadataError::SnapshotMissing(id))?;
        Ok(load_image_snapshot(id, &bytes)?)
    }

    /// Applies the newly committed records to the image.
    fn apply_committed(
        &mut self,
        client: &RaftClient<'_, FileLog>,
        high_watermark: i64,
    ) -> Result<(), MetadataError> {
        let before = self.image.feature_level(METADATA_VERSION_FEATURE);
        let applied = self.image.apply_log(client.log(), high_watermark)?;
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
        Ok(())
    }

    /// Publishes the image view for `GET /metadata` and the broker gauges.
    fn publish_view(&self, client: &RaftClient<'_, FileLog>) {
        let fenced = self.image.brokers().values().filter(|b| b.fenced).count();
        self.config
            .broker_gauges
            .set(self.image.brokers().len() - fenced, fenced);
        let topics = self.image.topics();
        self.config.broker_gauges.set_topics(
            topics.len(),
            topics.partition_count(),
            topics.offline_partition_count(),
            topics.preferred_replica_imbalance_count(),
        );
        let view = ImageView::of(
            &self.image,
            &[("kraft.version", client.status().kraft_version)],
        );
        self.config.acls.shared.publish(self.image.acls());
        self.config.view.send_if_modified(|v| {
            let changed = *v != view;
            *v = view;
            changed
        });
    }
}

/// One line naming what the image holds (finalized feature levels,
/// registered controllers, records of unknown types), for the log: equal
/// lines mean equal images.
fn image_summary(image: &MetadataImage) -> String {
    format!(
        "features={:?} controllers={:?} brokers={:?} unknown_records={}",
        image.features(),
        image.controllers().keys().collect::<Vec<_>>(),
        image.brokers().keys().collect::<Vec<_>>(),
        image.unknown_records().len()
    )
}

impl Listener<FileLog> for MetadataListener {
    type Error = MetadataError;
    type Input = MetadataInput;

    fn handle_commit(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        high_watermark: i64,
    ) -> Result<(), MetadataError> {
        self.apply_committed(client, high_watermark)?;
        self.snapshots
            .maybe_snapshot(client, &self.image, &self.config.snapshot_policy);
        self.registration.answer_committed(client, high_watermark);
        self.registration.maybe_activate(
            client,
            &self.image,
            &self.config.bootstrap,
            high_watermark,
        )?;
        self.quorum.on_commit(client, &self.image, high_watermark);
        self.acls.on_commit(client, high_watermark);
        self.publish_view(client);
        self.registration.drive(client, &self.image, &self.config);
        Ok(())
    }

    fn handle_load_snapshot(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        snapshot_id: OffsetAndEpoch,
        source: SnapshotSource,
    ) -> Result<(), MetadataError> {
        self.image = Self::load(client, snapshot_id)?;
        self.config.acls.shared.publish(self.image.acls());
        match source {
            SnapshotSource::Local => {
                self.snapshots.loaded_at_start(snapshot_id);
                tracing::info!(snapshot = %snapshot_id, image = %image_summary(&self.image), "metadata image loaded from the latest snapshot");
            }
            SnapshotSource::Leader => {
                self.snapshots
                    .installed(snapshot_id, &self.image, client.now_ms());
                tracing::info!(snapshot = %snapshot_id, image = %image_summary(&self.image), "metadata image loaded from a snapshot fetched from the leader");
            }
        }
        Ok(())
    }

    fn vet_voter_endpoints(
        &self,
        voter_id: i32,
        endpoints: &[crate::raft::Endpoint],
    ) -> Result<(), String> {
        super::voter_endpoints::vet(&self.image, voter_id, endpoints)
    }

    fn handle_leader_change(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        change: LeaderChange,
    ) -> Result<(), MetadataError> {
        self.registration.on_leader_change(client, change);
        self.quorum.on_leader_change(client, change);
        self.acls.on_leader_change(client, change);
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
        listener_name: &str,
        request: Request,
    ) -> Result<(), MetadataError> {
        let request = match request {
            Request::Kafka(request) => request,
            Request::UnregisterController(request) => {
                self.registration
                    .on_unregister(client, &self.image, request, handle)?;
                return Ok(());
            }
            Request::AddRaftVoter(_) => {
                // The engine's; never handed to a listener.
                client.reply(handle, None::<Response>);
                return Ok(());
            }
        };
        match request {
            RequestKind::ApiVersions(_) => {
                let body =
                    cluster::api_versions(api_version, &self.image, client.status().kraft_version);
                client.reply(handle, Some(ResponseKind::ApiVersions(body)));
            }
            RequestKind::DescribeCluster(request) => {
                // Kafka's `describeClusterControllers(request.context.listenerName)`:
                // a client follows the active controller on the listener,
                // and so the protocol, it came in on.
                let controllers = cluster::describe_cluster_controllers(
                    &self.image,
                    client.voters(),
                    listener_name,
                );
                let body = cluster::describe_cluster_with_brokers(
                    &request,
                    &self.config.cluster_id,
                    client.leader_id(),
                    controllers,
                    &self.image,
                );
                client.reply(handle, Some(ResponseKind::DescribeCluster(body)));
            }
            RequestKind::DescribeConfigs(request) => {
                let image = &self.image;
                let body = crate::quorum_controller::describe_configs::describe_configs(
                    &request,
                    image.configs(),
                    self.config.registration.controller_id,
                    &|name| image.topics().by_name(name).is_some(),
                );
                client.reply(handle, Some(ResponseKind::DescribeConfigs(body)));
            }
            RequestKind::ControllerRegistration(request) => {
                self.registration
                    .on_request(client, &self.image, request, handle)?;
            }
            request @ (RequestKind::BrokerRegistration(_)
            | RequestKind::BrokerHeartbeat(_)
            | RequestKind::UnregisterBroker(_)
            | RequestKind::AllocateProducerIds(_)
            | RequestKind::IncrementalAlterConfigs(_)
            | RequestKind::AlterConfigs(_)
            | RequestKind::AssignReplicasToDirs(_)
            | RequestKind::CreateTopics(_)
            | RequestKind::DeleteTopics(_)
            | RequestKind::CreatePartitions(_)
            | RequestKind::AlterPartition(_)
            | RequestKind::ElectLeaders(_)) => {
                self.quorum
                    .on_request(client, &self.image, request, handle)?;
            }
            RequestKind::UpdateFeatures(request) => {
                self.quorum
                    .update_features(client, &self.image, request, api_version, handle)?;
            }
            request @ (RequestKind::DescribeAcls(_)
            | RequestKind::CreateAcls(_)
            | RequestKind::DeleteAcls(_)) => {
                self.acls.on_request(client, &self.image, request, handle)?;
            }
            _ => client.reply(handle, None::<Response>),
        }
        Ok(())
    }

    fn next_deadline_ms(&self, client: &RaftClient<'_, FileLog>) -> Option<u64> {
        let idle = cluster::idle_deadline_ms(client, self.config.max_idle_interval_ms);
        let backoff = self.registration.deadline(client.now_ms());
        [
            idle,
            backoff,
            // Broker sessions run on the monotonic clock; the runtime wants
            // the deadline on `now_ms`'s.
            self.quorum.deadline().map(|at| {
                client
                    .now_ms()
                    .saturating_add(at.saturating_sub(client.monotonic_ms()))
            }),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn handle_wakeup(&mut self, client: &mut RaftClient<'_, FileLog>) -> Result<(), MetadataError> {
        cluster::maybe_propose_no_op(client, self.config.max_idle_interval_ms)?;
        self.quorum.on_wakeup(client)?;
        self.registration.drive(client, &self.image, &self.config);
        Ok(())
    }

    /// Retries a due snapshot after every input, not only at a commit: on a
    /// leader whose followers flush and fetch before its own flush (the
    /// append linger), every commit arrives while the committed end is still
    /// above the leader's flushed end, which a snapshot may not pass; the
    /// flush that follows moves no high watermark, so without this retry the
    /// leader could go without snapshots for as long as that race holds.
    fn poll(&mut self, client: &mut RaftClient<'_, FileLog>) -> Result<(), MetadataError> {
        self.snapshots
            .maybe_snapshot(client, &self.image, &self.config.snapshot_policy);
        Ok(())
    }

    fn poll_input(&mut self, cx: &mut Context<'_>) -> Poll<MetadataInput> {
        if let Poll::Ready(Some(answer)) = self.registration.poll_answer(cx) {
            return Poll::Ready(MetadataInput::RegistrationAnswer(answer));
        }
        if let Poll::Ready(Some((id, outcome))) = self.snapshots.poll_written(cx) {
            return Poll::Ready(MetadataInput::SnapshotWritten(id, outcome));
        }
        Poll::Pending
    }

    fn handle_input(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        input: MetadataInput,
    ) -> Result<(), MetadataError> {
        match input {
            MetadataInput::RegistrationAnswer(answer) => {
                self.registration.on_answer(answer, client.now_ms());
                self.registration.drive(client, &self.image, &self.config);
            }
            MetadataInput::SnapshotWritten(id, outcome) => {
                self.snapshots.on_written(client, id, outcome)?;
            }
        }
        Ok(())
    }
}
