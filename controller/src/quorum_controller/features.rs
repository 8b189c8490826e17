//! UpdateFeatures (57) on the controller, as Kafka 4.1's
//! `QuorumController.updateFeatures` and `FeatureControlManager`: only
//! `kraft.version` is updated here (0 → 1, KIP-853's static → dynamic
//! upgrade, KAFKA-16538), through the Raft leader
//! ([`RaftClient::upgrade_kraft_version`]); every other feature
//! (`metadata.version` included) is refused with INVALID_UPDATE_VERSION and
//! a message naming it, never ignored. One refused update fails the whole
//! request, as in Kafka. Must not append metadata records nor decide the
//! upgrade's checks (the engine owns those).

use kafka_protocol::{
    ResponseError,
    messages::{UpdateFeaturesRequest, UpdateFeaturesResponse, update_features_response},
    protocol::StrBytes,
};

use super::{Pending, QuorumController};
use crate::{
    log::ReplicatedLog,
    metadata::image::MetadataImage,
    raft::{
        KRaftUpgrade, KRaftUpgradeError, RaftError, ReplyHandle, listener::RaftClient,
        membership::KRAFT_VERSION_FEATURE,
    },
};

/// Kafka's `FeatureUpdate.UpgradeType.UPGRADE` (1), the only type of a
/// kraft.version update.
const UPGRADE: i8 = 1;

/// Kafka's message for a refused update
/// (`FeatureControlManager.invalidUpdateVersion`'s shape).
fn invalid(feature: &str, level: i16, reason: &str) -> (ResponseError, String) {
    (
        ResponseError::InvalidUpdateVersion,
        format!("invalid update version {level} for feature {feature}: {reason}"),
    )
}

/// The response of a request that failed with `error`: the top-level error
/// only, no per-feature result (Kafka's `QuorumController.updateFeatures`).
pub fn refused_response(error: ResponseError, message: &str) -> UpdateFeaturesResponse {
    UpdateFeaturesResponse::default()
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(format!(
            "the update failed for all features since the following feature had an error: {message}"
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

/// Checks one update before anything is done: its upgrade type (v0's
/// `allow_downgrade` counts as a downgrade) and its feature.
fn precheck(
    update: &kafka_protocol::messages::update_features_request::FeatureUpdateKey,
    api_version: i16,
) -> Result<i16, (ResponseError, String)> {
    let feature = update.feature.as_str();
    let level = update.max_version_level;
    let upgrade_type = if api_version == 0 {
        if update.allow_downgrade { 2 } else { UPGRADE }
    } else {
        update.upgrade_type
    };
    if feature != KRAFT_VERSION_FEATURE {
        return Err(invalid(
            feature,
            level,
            "this controller updates kraft.version only; other features (metadata.version included) are not implemented",
        ));
    }
    if upgrade_type != UPGRADE {
        return Err(invalid(
            feature,
            level,
            &format!(
                "upgrade type {upgrade_type} is not supported: kraft.version can only be upgraded"
            ),
        ));
    }
    Ok(level)
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
        // Every update passes the checks first; kraft.version is the only
        // feature left then, and as in Kafka's map of updates the last
        // level given for it wins (one request, one outcome).
        let mut level = None;
        for update in &request.feature_updates {
            match precheck(update, api_version) {
                Ok(l) => level = Some(l),
                Err(e) => {
                    refuse(client, e);
                    return Ok(());
                }
            }
        }
        let answer =
            kafka_protocol::messages::ResponseKind::UpdateFeatures(accepted_response(&request));
        let appended_at =
            match level.map(|l| (l, client.upgrade_kraft_version(l, request.validate_only))) {
                None => None,
                Some((_, Ok(KRaftUpgrade::Appended { last_offset, .. }))) => Some(last_offset),
                Some((_, Ok(_))) => None,
                Some((_, Err(KRaftUpgradeError::Raft(e)))) => return Err(e),
                Some((l, Err(e))) => {
                    refuse(client, engine_refusal(l, &e));
                    return Ok(());
                }
            };
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
