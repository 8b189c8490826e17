//! Controller activation and ControllerRegistration (KIP-919), as Kafka's
//! `QuorumController` and `ControllerRegistrationManager` do them around the
//! committed image.
//!
//! - Activation: the first leader whose caught-up image has no
//!   `metadata.version` appends the bootstrap records (`metadata::bootstrap`)
//!   once, in one batch, as Kafka's first active controller does.
//! - ControllerRegistration (API 70), active side: the leader validates the
//!   request, appends a RegisterControllerRecord and answers once it is
//!   committed; NOT_CONTROLLER when not the leader (or no longer the leader
//!   of the epoch it appended in).
//! - UnregisterController (api key 94, KIP-1312, Kafka 4.4), active side:
//!   the leader decides with `metadata::unregistration` over its view of
//!   the registrations (the image, plus the registrations it appended, minus
//!   the unregistrations it appended, as Kafka's timeline map), appends an
//!   UnregisterControllerRecord and answers once it is committed;
//!   NOT_CONTROLLER when not the leader (or no longer the leader of the
//!   epoch it appended in, or its image is behind the high watermark).
//! - ControllerRegistration, registering side: every node (the leader too)
//!   asks the active controller to register it, over its own connection (a
//!   Fetch long-poll on the Raft connection must never wait behind it, nor it
//!   behind a Fetch), as `metadata::registration` decides.
//!
//! It must not touch the engine except through [`RaftClient`], and must not
//! block the loop.

use std::{
    collections::BTreeSet,
    task::{Context, Poll},
};

use kafka_protocol::{
    error::ResponseError,
    messages::{
        ControllerRegistrationRequest, ControllerRegistrationResponse, RequestKind, ResponseKind,
    },
    protocol::StrBytes,
};
use tokio::sync::mpsc;

use super::MetadataConfig;
use crate::{
    log::FileLog,
    metadata::{
        bootstrap::{BootstrapMetadata, DEFAULT_MIN_INSYNC_REPLICAS},
        image::MetadataImage,
        records::METADATA_VERSION_FEATURE,
        registration::{RegistrationManager, Situation, validate_request},
        unregistration::{
            AppendedRegistration, UnregisterContext, registered_view, validate_unregister,
        },
    },
    raft::{
        RaftError, ReplyHandle, Role,
        listener::{LeaderChange, RaftClient},
    },
    wire::{
        client::{PeerManager, PeerResponse},
        own_messages::{UnregisterControllerRequest, UnregisterControllerResponse},
    },
};

/// A registration appended by this leader, answered once committed.
#[derive(Debug)]
struct PendingRegistration {
    last_offset: i64,
    epoch: i32,
    controller_id: i32,
    reply: ReplyHandle,
}

/// An UnregisterControllerRecord appended by this leader, answered once
/// committed.
#[derive(Debug)]
struct PendingUnregistration {
    last_offset: i64,
    epoch: i32,
    controller_id: i32,
    reply: ReplyHandle,
}

/// Activation and registration state.
#[derive(Debug)]
pub(super) struct Registration {
    /// This node's id (the active controller may not unregister itself).
    local_id: i32,
    manager: RegistrationManager,
    /// Epoch in which this node, as leader, last checked whether the log
    /// needs the bootstrap records.
    activated_epoch: Option<i32>,
    channel: PeerManager,
    responses: mpsc::UnboundedReceiver<PeerResponse>,
    pending: Vec<PendingRegistration>,
    unregistrations: Vec<PendingUnregistration>,
}

/// The UnregisterController answer: `error` and its message, or success.
fn unregister_response(error: Option<(ResponseError, String)>) -> UnregisterControllerResponse {
    let (error_code, error_message) = error.map_or((0, None), |(e, m)| (e.code(), Some(m)));
    UnregisterControllerResponse {
        throttle_time_ms: 0,
        error_code,
        error_message,
    }
}

fn registration_response(error: Option<(ResponseError, String)>) -> Option<ResponseKind> {
    let mut r = ControllerRegistrationResponse::default().with_throttle_time_ms(0);
    if let Some((error, message)) = error {
        r = r
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(message)));
    }
    Some(ResponseKind::ControllerRegistration(r))
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

impl Registration {
    pub(super) fn new(config: &MetadataConfig) -> Self {
        let (tx, responses) = mpsc::unbounded_channel();
        tracing::info!(
            incarnation_id = %crate::log::meta_properties::uuid_to_kafka_string(
                config.registration.incarnation_id),
            "controller registration incarnation"
        );
        Self {
            local_id: config.registration.controller_id,
            manager: RegistrationManager::new(config.registration.clone()),
            activated_epoch: None,
            channel: PeerManager::new(config.client.clone(), tx),
            responses,
            pending: Vec::new(),
            unregistrations: Vec::new(),
        }
    }

    /// The next answer of the active controller to this node, if one came.
    pub(super) fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<Option<PeerResponse>> {
        self.responses.poll_recv(cx)
    }

    /// Handles ControllerRegistration (API 70): as the leader with a known
    /// high watermark, validates it and appends a RegisterControllerRecord,
    /// answered once committed ([`Self::answer_committed`]); otherwise
    /// NOT_CONTROLLER at once.
    ///
    /// Errors: [`RaftError`] when the append failed (fatal).
    pub(super) fn on_request(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        image: &MetadataImage,
        request: ControllerRegistrationRequest,
        reply: ReplyHandle,
    ) -> Result<(), RaftError> {
        let leader = client.leader_id();
        if client.role() != Role::Leader
            || client.high_watermark().is_none()
            || client.shutting_down()
        {
            client.reply(reply, registration_response(not_controller(leader)));
            return Ok(());
        }
        let record = match validate_request(&request, image.feature_level(METADATA_VERSION_FEATURE))
        {
            Ok(record) => record,
            Err(error) => {
                tracing::info!(controller_id = request.controller_id, error = %error.1,
                    "controller registration refused");
                client.reply(reply, registration_response(Some(error)));
                return Ok(());
            }
        };
        let epoch = client.epoch();
        match client.propose(&[record.encode_framed()])? {
            Some(proposed) => self.pending.push(PendingRegistration {
                last_offset: proposed.last_offset,
                epoch,
                controller_id: record.controller_id,
                reply,
            }),
            None => client.reply(reply, registration_response(not_controller(leader))),
        }
        Ok(())
    }

    /// Handles UnregisterController (api key 94, KIP-1312) as Kafka 4.4.0's
    /// `QuorumController.unregisterController`: NOT_CONTROLLER unless this
    /// node leads with a known high watermark and an image that has applied
    /// everything below it; then `metadata::unregistration`'s refusals, at
    /// once; otherwise an UnregisterControllerRecord appended and answered
    /// once committed ([`Self::answer_committed`]).
    ///
    /// Errors: [`RaftError`] when the append failed (fatal).
    pub(super) fn on_unregister(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        image: &MetadataImage,
        request: UnregisterControllerRequest,
        reply: ReplyHandle,
    ) -> Result<(), RaftError> {
        let leader = client.leader_id();
        let caught_up = client
            .high_watermark()
            .is_some_and(|hw| image.next_offset() >= hw);
        if client.role() != Role::Leader || !caught_up || client.shutting_down() {
            client.reply(reply, Some(unregister_response(not_controller(leader))));
            return Ok(());
        }
        let epoch = client.epoch();
        // The controller's view of the registrations: what is committed,
        // with what this leader appended since (Kafka's timeline map).
        let appended = self
            .pending
            .iter()
            .filter(|p| p.epoch == epoch)
            .map(|p| AppendedRegistration {
                offset: p.last_offset,
                controller_id: p.controller_id,
                registered: true,
            })
            .chain(
                self.unregistrations
                    .iter()
                    .filter(|p| p.epoch == epoch)
                    .map(|p| AppendedRegistration {
                        offset: p.last_offset,
                        controller_id: p.controller_id,
                        registered: false,
                    }),
            );
        let registered = registered_view(
            image.controllers().keys().copied(),
            image.next_offset(),
            appended,
        );
        let voters: BTreeSet<i32> = client.voters().ids().collect();
        let context = UnregisterContext {
            local_id: self.local_id,
            metadata_version: image.feature_level(METADATA_VERSION_FEATURE),
            registered: &registered,
            voters: &voters,
        };
        let record = match validate_unregister(&context, request.controller_id) {
            Ok(record) => record,
            Err(refusal) => {
                tracing::info!(controller_id = request.controller_id, error = ?refusal.0,
                    message = %refusal.1, "controller unregistration refused");
                client.reply(reply, Some(unregister_response(Some(refusal))));
                return Ok(());
            }
        };
        match client.propose(&[record.encode_framed()])? {
            Some(proposed) => {
                tracing::info!(
                    controller_id = record.controller_id,
                    offset = proposed.last_offset,
                    "controller unregistration appended"
                );
                self.unregistrations.push(PendingUnregistration {
                    last_offset: proposed.last_offset,
                    epoch,
                    controller_id: record.controller_id,
                    reply,
                });
            }
            None => client.reply(reply, Some(unregister_response(not_controller(leader)))),
        }
        Ok(())
    }

    /// After a commit to `high_watermark`: answers the registrations and
    /// unregistrations now committed; NOT_CONTROLLER for those of an epoch
    /// this node no longer leads.
    pub(super) fn answer_committed(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        high_watermark: i64,
    ) {
        let (role, epoch) = (client.role(), client.epoch());
        for p in std::mem::take(&mut self.unregistrations) {
            if p.epoch != epoch || role != Role::Leader {
                let refusal = not_controller(client.leader_id());
                client.reply(p.reply, Some(unregister_response(refusal)));
            } else if p.last_offset < high_watermark {
                tracing::info!(
                    controller_id = p.controller_id,
                    offset = p.last_offset,
                    "controller unregistration committed"
                );
                client.reply(p.reply, Some(unregister_response(None)));
            } else {
                self.unregistrations.push(p);
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            if p.epoch != epoch || role != Role::Leader {
                client.reply(
                    p.reply,
                    registration_response(not_controller(client.leader_id())),
                );
            } else if p.last_offset < high_watermark {
                tracing::info!(
                    controller_id = p.controller_id,
                    offset = p.last_offset,
                    "controller registration committed"
                );
                client.reply(p.reply, registration_response(None));
            } else {
                self.pending.push(p);
            }
        }
    }

    /// Kafka's controller activation on an empty log: once per epoch, as the
    /// leader whose image has applied everything committed, append the
    /// bootstrap records if the image has no `metadata.version`.
    ///
    /// Errors: [`RaftError`] when the append failed (fatal).
    pub(super) fn maybe_activate(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        image: &MetadataImage,
        bootstrap: &BootstrapMetadata,
        high_watermark: i64,
    ) -> Result<(), RaftError> {
        let epoch = client.epoch();
        if client.role() != Role::Leader
            || client.shutting_down()
            || self.activated_epoch == Some(epoch)
            || image.next_offset() < high_watermark
        {
            return Ok(());
        }
        self.activated_epoch = Some(epoch);
        if image.feature_level(METADATA_VERSION_FEATURE).is_some() {
            return Ok(());
        }
        let records = bootstrap.activation_records(DEFAULT_MIN_INSYNC_REPLICAS);
        tracing::info!(
            records = records.len(),
            metadata_version = %bootstrap.metadata_version(),
            source = bootstrap.source(),
            "performing controller activation: the metadata log has no metadata.version; appending the bootstrap records"
        );
        client.propose(&records)?;
        Ok(())
    }

    /// Fails the registrations and unregistrations appended in an epoch this
    /// node no longer leads (NOT_CONTROLLER, as Kafka's controller does on
    /// resigning).
    pub(super) fn on_leader_change(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        change: LeaderChange,
    ) {
        for p in std::mem::take(&mut self.unregistrations) {
            if change.role == Role::Leader && p.epoch == change.epoch {
                self.unregistrations.push(p);
            } else {
                let refusal = not_controller(change.leader_id);
                client.reply(p.reply, Some(unregister_response(refusal)));
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            if change.role == Role::Leader && p.epoch == change.epoch {
                self.pending.push(p);
            } else {
                client.reply(
                    p.reply,
                    registration_response(not_controller(change.leader_id)),
                );
            }
        }
    }

    /// Sends this node's registration to the active controller when the
    /// manager says so (after commits, answers and wake-ups).
    pub(super) fn drive(
        &mut self,
        client: &RaftClient<'_, FileLog>,
        image: &MetadataImage,
        config: &MetadataConfig,
    ) {
        if client.shutting_down() {
            return;
        }
        let now = client.now_ms();
        let situation = Situation {
            leader: client.leader_id().map(|l| (l, client.epoch())),
            caught_up: client
                .high_watermark()
                .is_some_and(|hw| image.next_offset() >= hw),
        };
        let Some(out) = self.manager.poll(now, situation, image) else {
            return;
        };
        let address = client
            .voters()
            .iter()
            .find(|v| v.key.id == out.leader_id)
            .and_then(|v| {
                v.endpoints
                    .iter()
                    .find(|e| e.name == config.listener_name)
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
                self.channel.set_peer(out.leader_id, &address);
                tracing::info!(active_controller = out.leader_id, %address,
                    "sending controller registration");
                self.channel
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
                .manager
                .on_response(out.tag, Err(reason.clone()), now, jitter());
            tracing::info!(reason = %reason, retry_ms = ?retry, "cannot send controller registration");
        }
    }

    /// Takes the active controller's answer to this node's registration.
    pub(super) fn on_answer(&mut self, answer: PeerResponse, now_ms: u64) {
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
            .manager
            .on_response(answer.tag, outcome, now_ms, jitter());
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
    pub(super) fn deadline(&self, now_ms: u64) -> Option<u64> {
        self.manager.next_deadline_ms(now_ms)
    }
}

/// A uniform jitter in [-1, 1] for the retry backoff.
fn jitter() -> f64 {
    rand::random::<f64>() * 2.0 - 1.0
}
