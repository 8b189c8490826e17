//! The event loop's metadata layer: what Kafka's `QuorumController` and
//! `ControllerRegistrationManager` do around the committed image.
//!
//! - Activation: the first leader whose caught-up image has no
//!   `metadata.version` appends the bootstrap records (`metadata::bootstrap`)
//!   once, in one batch, as Kafka's first active controller does.
//! - ControllerRegistration (API 70), active side: the leader validates the
//!   request, appends a RegisterControllerRecord and answers once it is
//!   committed; NOT_CONTROLLER when not the leader (or no longer the leader
//!   of the epoch it appended in).
//! - ControllerRegistration, registering side: every node (the leader too)
//!   asks the active controller to register it, over its own connection (a
//!   Fetch long-poll on the Raft connection must never wait behind it, nor it
//!   behind a Fetch), as `metadata::registration` decides.
//! - The image for readers: finalized features for ApiVersions, registered
//!   controllers for DescribeCluster, and [`ImageView`] on `GET /metadata`.
//!
//! It must not touch the engine's state except by proposing records as the
//! leader, and must not block the loop.

use kafka_protocol::{
    error::ResponseError,
    messages::{
        ControllerRegistrationRequest, ControllerRegistrationResponse, RequestKind, ResponseKind,
        describe_cluster_response::DescribeClusterBroker,
    },
    protocol::StrBytes,
};
use tokio::sync::{mpsc, oneshot, watch};

use super::{Loop, LoopError, now_ms};
use crate::{
    log::FileLog,
    metadata::{
        bootstrap::{BootstrapMetadata, DEFAULT_MIN_INSYNC_REPLICAS},
        records::{METADATA_VERSION_FEATURE, RegisterControllerRecord},
        registration::{RegistrationManager, Situation, validate_request},
        view::ImageView,
    },
    raft::{RaftEngine, Role},
    wire::{
        FinalizedFeatures,
        client::{ClientConfig, PeerManager, PeerResponse},
    },
};

/// What the metadata layer needs from the server.
#[derive(Debug)]
pub struct MetadataConfig {
    /// This node's registration: id, incarnation id (random per process
    /// start), advertised controller listeners, supported features.
    pub registration: RegisterControllerRecord,
    /// Name of the controller listener requests arrive on: DescribeCluster
    /// lists each controller's endpoint of this name (Kafka's
    /// `describeClusterControllers(listenerName)`).
    pub listener_name: String,
    /// What the first leader of an empty log appends.
    pub bootstrap: BootstrapMetadata,
    /// The client settings of the registration channel.
    pub client: ClientConfig,
    /// Where the image view is published for `GET /metadata`.
    pub view: watch::Sender<ImageView>,
}

/// A registration appended by this leader, answered once committed.
struct PendingRegistration {
    last_offset: i64,
    epoch: i32,
    controller_id: i32,
    reply: oneshot::Sender<Option<ResponseKind>>,
}

/// The layer's state, owned by the loop.
pub(super) struct MetadataLayer {
    manager: RegistrationManager,
    /// Epoch in which this node, as leader, last checked whether the log
    /// needs the bootstrap records.
    activated_epoch: Option<i32>,
    channel: PeerManager,
    pub(super) responses: mpsc::UnboundedReceiver<PeerResponse>,
    pending: Vec<PendingRegistration>,
}

impl MetadataLayer {
    pub(super) fn new(config: &MetadataConfig) -> Self {
        let (tx, responses) = mpsc::unbounded_channel();
        tracing::info!(
            incarnation_id = %crate::log::meta_properties::uuid_to_kafka_string(
                config.registration.incarnation_id),
            "controller registration incarnation"
        );
        Self {
            manager: RegistrationManager::new(config.registration.clone()),
            activated_epoch: None,
            channel: PeerManager::new(config.client.clone(), tx),
            responses,
            pending: Vec::new(),
        }
    }
}

fn registration_response(error: Option<(ResponseError, String)>) -> ResponseKind {
    let mut r = ControllerRegistrationResponse::default().with_throttle_time_ms(0);
    if let Some((error, message)) = error {
        r = r
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(message)));
    }
    ResponseKind::ControllerRegistration(r)
}

fn not_controller(leader: Option<i32>) -> Option<(ResponseError, String)> {
    Some((
        ResponseError::NotController,
        match leader {
            Some(l) => format!("this node is not the active controller; node {l} is"),
            None => "this node is not the active controller; none is known".into(),
        },
    ))
}

impl Loop {
    /// The finalized features ApiVersions reports: the image's feature
    /// levels and `kraft.version` from the Raft layer; the epoch is the
    /// offset of the image's last record (Kafka's `FinalizedFeatures` epoch),
    /// -1 before any.
    pub(super) fn finalized_features(&self, engine: &RaftEngine<FileLog>) -> FinalizedFeatures {
        let mut levels: Vec<(String, i16)> = self
            .image
            .features()
            .iter()
            .map(|(n, l)| (n.clone(), *l))
            .collect();
        levels.push(("kraft.version".to_owned(), engine.status().kraft_version));
        FinalizedFeatures {
            levels,
            epoch: self.image.next_offset() - 1,
        }
    }

    /// DescribeCluster's controllers (KIP-919): every registered controller
    /// with an endpoint of our listener name, by id, as Kafka lists them;
    /// then the voters not registered yet, with their voter endpoint, so that
    /// `bootstrap.controllers` clients find the quorum before registrations
    /// land (Kafka lists registrations only).
    pub(super) fn describe_cluster_controllers(
        &self,
        engine: &RaftEngine<FileLog>,
    ) -> Vec<DescribeClusterBroker> {
        let broker = |id: i32, host: &str, port: u16| {
            DescribeClusterBroker::default()
                .with_broker_id(id.into())
                .with_host(StrBytes::from_string(host.to_owned()))
                .with_port(i32::from(port))
        };
        let mut out: Vec<DescribeClusterBroker> = self
            .image
            .controllers()
            .iter()
            .filter_map(|(id, r)| {
                let e = r
                    .endpoints
                    .iter()
                    .find(|e| e.name == self.ctx.metadata.listener_name)?;
                Some(broker(*id, &e.host, e.port))
            })
            .collect();
        for v in engine.voters().iter() {
            if self.image.controllers().contains_key(&v.key.id) {
                continue;
            }
            if let Some(e) = v.endpoints.first() {
                out.push(broker(v.key.id, &e.host, e.port));
            }
        }
        out
    }

    /// Handles ControllerRegistration (API 70): as the leader with a known
    /// high watermark, validates it and appends a RegisterControllerRecord,
    /// answered once committed ([`Self::after_commit`]); otherwise
    /// NOT_CONTROLLER at once.
    pub(super) fn on_controller_registration(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        request: ControllerRegistrationRequest,
        reply: oneshot::Sender<Option<ResponseKind>>,
    ) -> Result<(), LoopError> {
        let leader = engine.leader_id();
        if engine.role() != Role::Leader
            || engine.high_watermark().is_none()
            || self.shutdown_started
        {
            let _ = reply.send(Some(registration_response(not_controller(leader))));
            return Ok(());
        }
        let record =
            match validate_request(&request, self.image.feature_level(METADATA_VERSION_FEATURE)) {
                Ok(record) => record,
                Err(error) => {
                    tracing::info!(controller_id = request.controller_id, error = %error.1,
                        "controller registration refused");
                    let _ = reply.send(Some(registration_response(Some(error))));
                    return Ok(());
                }
            };
        let epoch = engine.epoch();
        match self.propose(engine, &[record.encode_framed()], now_ms())? {
            Some(last_offset) => self.meta.pending.push(PendingRegistration {
                last_offset,
                epoch,
                controller_id: record.controller_id,
                reply,
            }),
            None => {
                let _ = reply.send(Some(registration_response(not_controller(leader))));
            }
        }
        Ok(())
    }

    /// After each commit (the image is applied to `high_watermark`): answers
    /// the registrations now committed, appends the bootstrap records if this
    /// leader's log has no `metadata.version`, publishes the view and lets
    /// this node register.
    pub(super) fn after_commit(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        high_watermark: i64,
    ) -> Result<(), LoopError> {
        let (role, epoch) = (engine.role(), engine.epoch());
        let pending = std::mem::take(&mut self.meta.pending);
        for p in pending {
            if p.epoch != epoch || role != Role::Leader {
                let _ = p.reply.send(Some(registration_response(not_controller(
                    engine.leader_id(),
                ))));
            } else if p.last_offset < high_watermark {
                tracing::info!(
                    controller_id = p.controller_id,
                    offset = p.last_offset,
                    "controller registration committed"
                );
                let _ = p.reply.send(Some(registration_response(None)));
            } else {
                self.meta.pending.push(p);
            }
        }
        self.maybe_activate(engine, high_watermark)?;
        let view = ImageView::of(
            &self.image,
            &[("kraft.version", engine.status().kraft_version)],
        );
        self.ctx.metadata.view.send_if_modified(|v| {
            let changed = *v != view;
            *v = view;
            changed
        });
        self.drive_registration(engine);
        Ok(())
    }

    /// Kafka's controller activation on an empty log: once per epoch, as the
    /// leader whose image has applied everything committed, append the
    /// bootstrap records if the image has no `metadata.version`.
    fn maybe_activate(
        &mut self,
        engine: &mut RaftEngine<FileLog>,
        high_watermark: i64,
    ) -> Result<(), LoopError> {
        let epoch = engine.epoch();
        if engine.role() != Role::Leader
            || self.shutdown_started
            || self.meta.activated_epoch == Some(epoch)
            || self.image.next_offset() < high_watermark
        {
            return Ok(());
        }
        self.meta.activated_epoch = Some(epoch);
        if self.image.feature_level(METADATA_VERSION_FEATURE).is_some() {
            return Ok(());
        }
        let bootstrap = &self.ctx.metadata.bootstrap;
        let records = bootstrap.activation_records(DEFAULT_MIN_INSYNC_REPLICAS);
        tracing::info!(
            records = records.len(),
            metadata_version = %bootstrap.metadata_version(),
            source = bootstrap.source(),
            "performing controller activation: the metadata log has no metadata.version; appending the bootstrap records"
        );
        self.propose(engine, &records, now_ms())?;
        Ok(())
    }

    /// Fails the registrations appended in an epoch this node no longer
    /// leads (NOT_CONTROLLER, as Kafka's controller does on resigning).
    pub(super) fn metadata_on_role_changed(&mut self, role: Role, epoch: i32, leader: Option<i32>) {
        let pending = std::mem::take(&mut self.meta.pending);
        for p in pending {
            if role == Role::Leader && p.epoch == epoch {
                self.meta.pending.push(p);
            } else {
                let _ = p
                    .reply
                    .send(Some(registration_response(not_controller(leader))));
            }
        }
    }

    /// Sends this node's registration to the active controller when the
    /// manager says so (after commits and on ticks).
    pub(super) fn drive_registration(&mut self, engine: &RaftEngine<FileLog>) {
        if self.shutdown_started {
            return;
        }
        let now = now_ms();
        let situation = Situation {
            leader: engine.leader_id().map(|l| (l, engine.epoch())),
            caught_up: engine
                .high_watermark()
                .is_some_and(|hw| self.image.next_offset() >= hw),
        };
        let Some(out) = self.meta.manager.poll(now, situation, &self.image) else {
            return;
        };
        let address = engine
            .voters()
            .iter()
            .find(|v| v.key.id == out.leader_id)
            .and_then(|v| {
                v.endpoints
                    .iter()
                    .find(|e| e.name == self.ctx.metadata.listener_name)
                    .or_else(|| v.endpoints.first())
            })
            .map(|e| {
                if e.host.contains(':') {
                    format!("[{}]:{}", e.host, e.port)
                } else {
                    format!("{}:{}", e.host, e.port)
                }
            });
        let sent = match address {
            None => Err(format!(
                "no endpoint known for the active controller {}",
                out.leader_id
            )),
            Some(address) => {
                self.meta.channel.set_peer(out.leader_id, &address);
                tracing::info!(active_controller = out.leader_id, %address,
                    "sending controller registration");
                self.meta
                    .channel
                    .send(
                        out.leader_id,
                        0,
                        RequestKind::ControllerRegistration(out.request),
                        out.tag,
                    )
                    .map_err(|e| e.to_string())
            }
        };
        if let Err(reason) = sent {
            let retry = self
                .meta
                .manager
                .on_response(out.tag, Err(reason.clone()), now, jitter());
            tracing::info!(reason = %reason, retry_ms = ?retry, "cannot send controller registration");
        }
    }

    /// Takes the active controller's answer to this node's registration.
    pub(super) fn on_registration_response(&mut self, answer: PeerResponse) {
        let outcome = match answer.result {
            Ok(ResponseKind::ControllerRegistration(r)) => {
                match ResponseError::try_from_code(r.error_code) {
                    None => Ok(()),
                    Some(error) => Err(format!(
                        "{error:?}: {}",
                        r.error_message.as_deref().unwrap_or("no message")
                    )),
                }
            }
            Ok(_) => Err("answer of another api".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        let ok = outcome.is_ok();
        let reason = outcome.as_ref().err().cloned();
        let retry = self
            .meta
            .manager
            .on_response(answer.tag, outcome, now_ms(), jitter());
        if ok {
            tracing::info!(
                active_controller = answer.node_id,
                "controller registration acknowledged by the active controller"
            );
        } else if retry.is_some() {
            tracing::info!(active_controller = answer.node_id, reason = ?reason,
                retry_ms = ?retry, "controller registration failed; retrying after the backoff");
        }
    }

    /// When the registration backoff running at `now` ends, if one runs (ms).
    pub(super) fn registration_deadline(&self, now: u64) -> Option<u64> {
        self.meta.manager.next_deadline_ms(now)
    }
}

/// A uniform jitter in [-1, 1] for the retry backoff.
fn jitter() -> f64 {
    rand::random::<f64>() * 2.0 - 1.0
}
