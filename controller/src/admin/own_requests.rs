//! The admin requests whose bodies `kafka-protocol` lacks
//! (`wire::own_messages`), sent with `Connection::call_raw`: AddRaftVoter v1
//! (KIP-1186, Kafka 4.2) and UnregisterController.
//!
//! UnregisterController (api key 94, KIP-1312, Kafka 4.4) for the admin
//! client, as Kafka 4.4's `Admin.unregisterController` sends it: to the
//! active controller (a NOT_CONTROLLER or NOT_LEADER_OR_FOLLOWER answer moves
//! the connection there and retries), only when that controller advertises
//! api 94 in ApiVersions (UNSUPPORTED_VERSION otherwise, nothing sent).
//! `kafka-protocol` lacks the api: the body is `wire::own_messages`'.
//! Owns the request and the reading of its answer; it must not decide whom
//! to unregister (the CLI and the operator do).

use std::time::Duration;

use kafka_protocol::{
    ResponseError,
    messages::{AddRaftVoterRequest, AddRaftVoterResponse, ApiKey},
    protocol::{Decodable, StrBytes},
};
use kraft_common::errors::{UNSUPPORTED_VERSION, error_name};

use super::{AdminClient, AdminError, MAX_REDIRECTS, NOT_LEADER_OR_FOLLOWER};
use crate::wire::own_messages::{
    ADD_RAFT_VOTER_MAX_VERSION, AddRaftVoterRequestV1, UNREGISTER_CONTROLLER_API_KEY,
    UNREGISTER_CONTROLLER_MAX_VERSION, UnregisterControllerRequest, UnregisterControllerResponse,
};

impl AdminClient {
    /// The AddRaftVoter version to send through `add_raft_voter_v1`:
    /// 1 when the controller advertises it (Kafka 4.2+), `None` otherwise
    /// (v0 then goes through `kafka-protocol`).
    pub fn add_raft_voter_v1_version(&self) -> Option<i16> {
        let row = self
            .api_versions()
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::AddRaftVoter as i16)?;
        let version = row.max_version.min(ADD_RAFT_VOTER_MAX_VERSION);
        (version >= 1 && version >= row.min_version).then_some(version)
    }

    /// AddRaftVoter at `version` (1) with `AckWhenCommitted` true, within
    /// `wait`; the answer's layout is v0's (Kafka 4.4.0's schema).
    ///
    /// Errors: [`AdminError::Protocol`] for a body that does not encode or
    /// an answer that does not decode; the connection's errors.
    pub(super) async fn add_raft_voter_v1(
        &mut self,
        request: AddRaftVoterRequest,
        version: i16,
        wait: Duration,
    ) -> Result<AddRaftVoterResponse, AdminError> {
        let body = AddRaftVoterRequestV1 {
            request,
            ack_when_committed: true,
        }
        .encode(version)
        .map_err(|e| AdminError::Protocol(e.to_string()))?;
        let mut answer = self
            .conn
            .call_raw(ApiKey::AddRaftVoter as i16, version, &body, wait)
            .await?;
        AddRaftVoterResponse::decode(&mut answer, 0)
            .map_err(|e| AdminError::Protocol(format!("AddRaftVoter v{version} answer: {e}")))
    }

    /// The UnregisterController version to send: the highest both this
    /// client (v0) and the controller (its ApiVersions row for api 94)
    /// speak, `None` when it does not serve api 94.
    pub fn unregister_controller_version(&self) -> Option<i16> {
        let row = self
            .api_versions()
            .api_keys
            .iter()
            .find(|k| k.api_key == UNREGISTER_CONTROLLER_API_KEY)?;
        let version = row.max_version.min(UNREGISTER_CONTROLLER_MAX_VERSION);
        (version >= row.min_version).then_some(version)
    }

    /// The `metadata.version` level the controller's ApiVersions answer
    /// reports as finalized, if any.
    pub fn finalized_metadata_version(&self) -> Option<i16> {
        self.api_versions()
            .finalized_features
            .iter()
            .find(|f| f.name.as_str() == crate::metadata::records::METADATA_VERSION_FEATURE)
            .map(|f| f.max_version_level)
    }

    /// UnregisterController (94): removes `controller_id`'s KIP-919
    /// registration (the active controller appends UnregisterControllerRecord
    /// and answers once it commits).
    ///
    /// Errors: [`AdminError`]; UNSUPPORTED_VERSION when the controller does
    /// not serve api 94 (before Kafka 4.4) or its `metadata.version` is below
    /// 4.4-IV2; CONTROLLER_ID_NOT_REGISTERED (136) for an id without a
    /// registration; INVALID_REQUEST for the active controller itself (and,
    /// after KAFKA-20865, a current voter); NOT_CONTROLLER when no active
    /// controller is found after `MAX_REDIRECTS` tries.
    pub async fn unregister_controller(&mut self, controller_id: i32) -> Result<(), AdminError> {
        let mut last = None;
        for _ in 0..=MAX_REDIRECTS {
            let Some(version) = self.unregister_controller_version() else {
                return Err(AdminError::Kafka {
                    code: UNSUPPORTED_VERSION,
                    name: error_name(UNSUPPORTED_VERSION),
                    message: Some(format!(
                        "controller at {} does not support UnregisterController (api {UNREGISTER_CONTROLLER_API_KEY}, Kafka 4.4)",
                        self.conn.addr()
                    )),
                });
            };
            let body = UnregisterControllerRequest { controller_id }
                .encode(version)
                .map_err(|e| AdminError::Protocol(e.to_string()))?;
            let answer = self
                .conn
                .call_raw(UNREGISTER_CONTROLLER_API_KEY, version, &body, self.timeout)
                .await?;
            let r = UnregisterControllerResponse::decode(&answer, version)
                .map_err(|e| AdminError::Protocol(format!("UnregisterController answer: {e}")))?;
            let message = r.error_message.map(StrBytes::from_string);
            match AdminError::from_code(r.error_code, message.as_ref()) {
                None => return Ok(()),
                Some(e)
                    if e.code() == Some(ResponseError::NotController.code())
                        || e.code() == Some(NOT_LEADER_OR_FOLLOWER) =>
                {
                    last = Some(e);
                    self.follow_active_controller().await?;
                }
                Some(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| AdminError::Protocol("no UnregisterController answer".into())))
    }
}
