//! UpdateFeatures (57) on the controller, as Kafka 4.4's
//! `QuorumController.updateFeatures`: the checks of
//! [`feature_control`](super::feature_control) (Kafka's
//! `FeatureControlManager`), then `kraft.version` 0 → 1 (KIP-853's static
//! → dynamic upgrade, KAFKA-16538) through the Raft leader
//! ([`RaftClient::upgrade_kraft_version`]) and every other feature
//! (`metadata.version`, `transaction.version`, `group.version`,
//! `eligible.leader.replicas.version`, `share.version`, `streams.version`)
//! as FeatureLevelRecords in one batch, answered once committed. One refused
//! update fails the whole request, as in Kafka. Must not decide the checks
//! (`feature_control` and the engine own those).

use kafka_protocol::{
    ResponseError,
    messages::{UpdateFeaturesRequest, UpdateFeaturesResponse, update_features_response},
    protocol::StrBytes,
};

use super::{
    Pending, QuorumController,
    feature_control::{FeatureUpdate, plan_updates},
};
use crate::{
    log::ReplicatedLog,
    metadata::image::MetadataImage,
    raft::{
        KRaftUpgrade, KRaftUpgradeError, RaftError, ReplyHandle, listener::RaftClient,
        membership::KRAFT_VERSION_FEATURE,
    },
    wire::supported_features,
};

/// Kafka's message for a refusal of the Raft engine
/// (`FeatureControlManager.invalidUpdateVersion`'s shape).
fn invalid(feature: &str, level: i16, reason: &str) -> (ResponseError, String) {
    (
        ResponseError::InvalidUpdateVersion,
        format!("invalid update version {level} for feature {feature}: {reason}"),
    )
}

/// The response of a request that failed with `error`: the top-level error
/// only, no per-feature result, the message behind Kafka 4.4's own prefix
/// (`QuorumController.updateFeatures`, read from kafka-metadata-4.4.0.jar:
/// Kafka's tools print it, so it keeps Kafka's capital).
pub fn refused_response(error: ResponseError, message: &str) -> UpdateFeaturesResponse {
    UpdateFeaturesResponse::default()
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(format!(
            "The update failed for all features since the following feature had an error: {message}"
        ))))
}

/// The response of a successful request: one result per feature (v0-v1).
fn accepted_response(request: &UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    UpdateFeaturesResponse::default()
        .with_error_message(None)
        .with_results(
            request
                .feature_updates
                .iter()
                .map(|u| {
                    update_features_response::UpdatableFeatureResult::default()
                        .with_feature(u.feature.clone())
                })
                .collect(),
        )
}

/// The updates of `request` at `api_version`: v0's `AllowDowngrade` counts
/// as SAFE_DOWNGRADE (2), its absence as UPGRADE (1).
fn updates_of(request: &UpdateFeaturesRequest, api_version: i16) -> Vec<FeatureUpdate> {
    request
        .feature_updates
        .iter()
        .map(|u| FeatureUpdate {
            feature: u.feature.to_string(),
            level: u.max_version_level,
            upgrade_type: match (api_version, u.allow_downgrade) {
                (0, true) => 2,
                (0, false) => 1,
                _ => u.upgrade_type,
            },
        })
        .collect()
}

/// The answer to a refusal of the engine.
fn engine_refusal(level: i16, e: &KRaftUpgradeError) -> (ResponseError, String) {
    match e {
        KRaftUpgradeError::NotLeader { .. } => (ResponseError::NotController, e.to_string()),
        _ => invalid(KRAFT_VERSION_FEATURE, level, &e.to_string()),
    }
}

impl QuorumController {
    /// UpdateFeatures (57) at `api_version` (0-1): validates every update,
    /// then upgrades kraft.version; answers once the upgrade batch is
    /// committed (at once for `validate_only` or an unchanged level).
    ///
    /// Errors: a log failure while appending (fatal).
    pub fn update_features<L: ReplicatedLog>(
        &mut self,
        client: &mut RaftClient<'_, L>,
        image: &MetadataImage,
        request: UpdateFeaturesRequest,
        api_version: i16,
        reply: ReplyHandle,
    ) -> Result<(), RaftError> {
        let refuse = |client: &mut RaftClient<'_, L>, (error, message): (ResponseError, String)| {
            tracing::warn!(%message, "UpdateFeatures refused");
            client.reply(
                reply,
                Some(kafka_protocol::messages::ResponseKind::UpdateFeatures(
                    refused_response(error, &message),
                )),
            );
        };
        let not_controller = (
            ResponseError::NotController,
            "this node is not the active controller".to_owned(),
        );
        self.maybe_activate(client, image);
        if self.active.is_none() {
            refuse(client, not_controller);
            return Ok(());
        }
        // Every update passes Kafka's checks first (one refusal refuses the
        // whole request); then kraft.version goes to the Raft engine and the
        // other features' records are appended in one batch.
        let status = client.status();
        let plan = match plan_updates(
            image,
            status.node_id,
            &supported_features(),
            status.kraft_version,
            &updates_of(&request, api_version),
        ) {
            Ok(plan) => plan,
            Err(e) => {
                refuse(client, (ResponseError::InvalidUpdateVersion, e.to_string()));
                return Ok(());
            }
        };
        let answer =
            kafka_protocol::messages::ResponseKind::UpdateFeatures(accepted_response(&request));
        let mut appended_at = None;
        if let Some(level) = plan.kraft_version {
            match client.upgrade_kraft_version(level, request.validate_only) {
                Ok(KRaftUpgrade::Appended { last_offset, .. }) => appended_at = Some(last_offset),
                Ok(_) => {}
                Err(KRaftUpgradeError::Raft(e)) => return Err(e),
                Err(e) => {
                    refuse(client, engine_refusal(level, &e));
                    return Ok(());
                }
            }
        }
        if !request.validate_only && !plan.records.is_empty() {
            let records: Vec<_> = plan.records.iter().map(|r| r.encode_framed()).collect();
            match super::propose_or_drop(client, &records)? {
                Some(p) => appended_at = Some(p.last_offset),
                None => {
                    self.deactivate(client);
                    refuse(client, not_controller);
                    return Ok(());
                }
            }
        }
        match appended_at {
            Some(last_offset) if client.high_watermark().is_none_or(|hw| hw <= last_offset) => {
                self.pending.push(Pending {
                    last_offset,
                    reply,
                    answer,
                    not_controller: kafka_protocol::messages::ResponseKind::UpdateFeatures(
                        refused_response(not_controller.0, &not_controller.1),
                    ),
                });
            }
            _ => client.reply(reply, Some(answer)),
        }
        Ok(())
    }
}
