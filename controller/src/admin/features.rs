//! UpdateFeatures (57) for the admin client, as Kafka's
//! `Admin.updateFeatures` sends it to a controller quorum: one request with
//! every update, sent to the active controller (a NOT_CONTROLLER or
//! NOT_LEADER_OR_FOLLOWER answer moves the connection there and retries).
//! Owns building the request and reading its answer; must not decide which
//! levels to ask for (the `features` CLI does).

use kafka_protocol::{
    ResponseError,
    messages::{ApiKey, RequestKind, ResponseKind, UpdateFeaturesRequest, update_features_request},
    protocol::StrBytes,
};

use super::{AdminClient, AdminError, MAX_REDIRECTS, NOT_LEADER_OR_FOLLOWER};

/// Kafka's `FeatureUpdate.UpgradeType.UPGRADE` (1).
pub const UPGRADE_TYPE_UPGRADE: i8 = 1;
/// Kafka's `FeatureUpdate.UpgradeType.SAFE_DOWNGRADE` (2).
pub const UPGRADE_TYPE_SAFE_DOWNGRADE: i8 = 2;
/// Kafka's `FeatureUpdate.UpgradeType.UNSAFE_DOWNGRADE` (3).
pub const UPGRADE_TYPE_UNSAFE_DOWNGRADE: i8 = 3;

impl AdminClient {
    /// UpdateFeatures (57): finalizes each `(feature, level)` of `updates`
    /// with `upgrade_type` (one of the `UPGRADE_TYPE_*` codes; at v0 a
    /// downgrade type is sent as `AllowDowngrade`, and UNSAFE_DOWNGRADE is
    /// not distinguished, as in Kafka's admin client); `validate_only` asks
    /// the controller to check without
    /// changing anything (`--dry-run`). `timeout_ms` bounds the controller's
    /// wait. Errors: [`AdminError`]; INVALID_UPDATE_VERSION (95) with the
    /// controller's reason for a refused update, NOT_CONTROLLER when no
    /// active controller is found after [`MAX_REDIRECTS`] tries.
    pub async fn update_features(
        &mut self,
        updates: &[(String, i16)],
        upgrade_type: i8,
        validate_only: bool,
        timeout_ms: i32,
    ) -> Result<(), AdminError> {
        let mut last = None;
        for _ in 0..=MAX_REDIRECTS {
            let version = self.version(ApiKey::UpdateFeatures)?;
            let request = UpdateFeaturesRequest::default()
                .with_timeout_ms(timeout_ms)
                .with_validate_only(validate_only)
                .with_feature_updates(
                    updates
                        .iter()
                        .map(|(name, level)| {
                            let key = update_features_request::FeatureUpdateKey::default()
                                .with_feature(StrBytes::from_string(name.clone()))
                                .with_max_version_level(*level);
                            if version == 0 {
                                key.with_allow_downgrade(upgrade_type != UPGRADE_TYPE_UPGRADE)
                            } else {
                                key.with_upgrade_type(upgrade_type)
                            }
                        })
                        .collect(),
                );
            let ResponseKind::UpdateFeatures(r) = self
                .conn
                .call(version, RequestKind::UpdateFeatures(request))
                .await?
            else {
                return Err(AdminError::Protocol(
                    "UpdateFeatures answered with another api".into(),
                ));
            };
            let error =
                AdminError::from_code(r.error_code, r.error_message.as_ref()).or_else(|| {
                    r.results
                        .iter()
                        .find_map(|f| AdminError::from_code(f.error_code, f.error_message.as_ref()))
                });
            match error {
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
        Err(last.unwrap_or_else(|| AdminError::Protocol("no UpdateFeatures answer".into())))
    }
}
