//! The ACL half of the quorum controller: CreateAcls and DeleteAcls on the
//! active controller, answered once their records commit (Kafka's
//! `QuorumController.createAcls`/`deleteAcls` write events), and
//! DescribeAcls from the committed image on any controller (Kafka's
//! controller answers it from its `StandardAuthorizer`'s data).
//!
//! Active as `crate::quorum_controller` is: leading the current epoch, not
//! shutting down, and the image holding everything committed; it then keeps
//! a speculative copy of the ACLs ([`AclControl`]) that sees its own
//! appends, and drops it (answering what waits NOT_CONTROLLER) when it
//! stops leading that epoch. Without an authorizer every ACL request is
//! SECURITY_DISABLED, as Kafka's `AclApis`. It must not touch the engine
//! except through [`RaftClient`].

use kafka_protocol::{
    ResponseError,
    messages::{RequestKind, ResponseKind},
};

use super::control::{self, AclControl};
use crate::{
    log::ReplicatedLog,
    metadata::{image::MetadataImage, records::METADATA_VERSION_FEATURE, version::MetadataVersion},
    raft::{
        RaftError, ReplyHandle, Role,
        listener::{LeaderChange, RaftClient},
    },
};

/// An answer waiting for its records to commit.
#[derive(Debug)]
struct Pending {
    last_offset: i64,
    reply: ReplyHandle,
    answer: ResponseKind,
    /// The answer if this controller loses its epoch first.
    not_controller: Option<ResponseKind>,
}

/// See the module doc.
#[derive(Debug)]
pub struct AclRequests {
    authorizer_enabled: bool,
    active: Option<(i32, AclControl)>,
    pending: Vec<Pending>,
}

impl AclRequests {
    /// `authorizer_enabled`: whether `authorizer.class.name` is set.
    pub fn new(authorizer_enabled: bool) -> Self {
        Self {
            authorizer_enabled,
            active: None,
            pending: Vec::new(),
        }
    }

    fn deactivate<L: ReplicatedLog>(&mut self, client: &mut RaftClient<'_, L>) {
        self.active = None;
        for p in std::mem::take(&mut self.pending) {
            client.reply(p.reply, p.not_controller);
        }
    }

    /// The speculative ACLs, activating first if this node may.
    fn control<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        image: &MetadataImage,
    ) -> Option<&mut AclControl> {
        let epoch = client.epoch();
        let leading = client.role() == Role::Leader && !client.shutting_down();
        if self
            .active
            .as_ref()
            .is_some_and(|(e, _)| !leading || *e != epoch)
        {
            self.deactivate(client);
        }
        if self.active.is_none() && leading {
            let caught_up = client
                .high_watermark()
                .is_some_and(|hwm| image.next_offset() >= hwm);
            if caught_up {
                self.active = Some((epoch, AclControl::new(image.acls())));
            }
        }
        self.active.as_mut().map(|(_, c)| c)
    }

    /// Handles CreateAcls, DeleteAcls and DescribeAcls (anything else is
    /// not answered: the connection closes).
    ///
    /// Errors: [`RaftError`] when the append failed (fatal).
    pub fn on_request<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        image: &MetadataImage,
        request: RequestKind,
        reply: ReplyHandle,
    ) -> Result<(), RaftError> {
        if !self.authorizer_enabled {
            let message = "No Authorizer is configured.";
            client.reply(
                reply,
                control::refuse_all(&request, ResponseError::SecurityDisabled.code(), message),
            );
            return Ok(());
        }
        if let RequestKind::DescribeAcls(r) = &request {
            let answer = control::describe(image.acls(), r);
            client.reply(reply, Some(ResponseKind::DescribeAcls(answer)));
            return Ok(());
        }
        let not_controller = control::refuse_all(
            &request,
            ResponseError::NotController.code(),
            "this node is not the active controller",
        );
        let Some(acls) = self.control(client, image) else {
            client.reply(reply, not_controller);
            return Ok(());
        };
        let (records, answer) = match &request {
            RequestKind::CreateAcls(r) => {
                let (records, answer) = acls.create(r, metadata_version(image), new_acl_id);
                (records, ResponseKind::CreateAcls(answer))
            }
            RequestKind::DeleteAcls(r) => {
                let (records, answer) = acls.delete(r);
                (records, ResponseKind::DeleteAcls(answer))
            }
            _ => {
                client.reply(reply, None::<ResponseKind>);
                return Ok(());
            }
        };
        let last_offset = if records.is_empty() {
            client.log().end_offset().offset - 1
        } else {
            match client.propose(&records) {
                Ok(Some(p)) => p.last_offset,
                Ok(None) => {
                    self.deactivate(client);
                    client.reply(reply, not_controller);
                    return Ok(());
                }
                // Too large for one batch: this request fails, the node
                // does not (the speculative ACLs saw it: start over).
                Err(RaftError::InvalidProposal { .. }) => {
                    self.deactivate(client);
                    let code = ResponseError::PolicyViolation.code();
                    client.reply(
                        reply,
                        control::refuse_all(&request, code, control::TOO_LARGE_MESSAGE),
                    );
                    return Ok(());
                }
                Err(e) => return Err(e),
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

    /// After a commit to `high_watermark`: the answers now committed.
    pub fn on_commit<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        high_watermark: i64,
    ) {
        for p in std::mem::take(&mut self.pending) {
            if p.last_offset < high_watermark {
                client.reply(p.reply, Some(p.answer));
            } else {
                self.pending.push(p);
            }
        }
    }

    /// A leadership change: the speculative ACLs of another epoch go.
    pub fn on_leader_change<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        change: LeaderChange,
    ) {
        let keep = change.role == Role::Leader
            && self
                .active
                .as_ref()
                .is_some_and(|(e, _)| *e == change.epoch);
        if !keep {
            self.deactivate(client);
        }
    }
}

/// A random ACL id, never Kafka's reserved ZERO or ONE uuids.
fn new_acl_id() -> uuid::Uuid {
    loop {
        let id = uuid::Uuid::new_v4();
        if id.as_u128() > 1 {
            return id;
        }
    }
}

/// The cluster's `metadata.version` as the image holds it; the oldest
/// (3.3-IV3) while none is known.
fn metadata_version(image: &MetadataImage) -> MetadataVersion {
    image
        .feature_level(METADATA_VERSION_FEATURE)
        .and_then(MetadataVersion::from_feature_level)
        .unwrap_or(MetadataVersion::MINIMUM)
}
