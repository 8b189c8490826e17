//! The checks of UpdateFeatures (57), as Kafka 4.4's
//! `FeatureControlManager.updateFeatures` makes them: the upgrade type
//! (`FeatureUpdate.UpgradeType` UPGRADE 1, SAFE_DOWNGRADE 2,
//! UNSAFE_DOWNGRADE 3), the level against this controller's supported
//! range, every registered broker's and (from `metadata.version` 3.7-IV0)
//! every registered controller's (`QuorumFeatures.reasonNotSupported`;
//! KIP-1312: a stale ControllerRegistration blocks an upgrade), the
//! direction of the change, `metadata.version` downgrades that would lose
//! metadata (`MetadataVersion.checkIfMetadataChanged`), and the
//! dependencies between features (`Feature.validateVersion`).
//!
//! Owns deciding which FeatureLevelRecords a request appends; it must not
//! append them, nor change `kraft.version` (the Raft engine owns that: its
//! level is handed back in [`FeaturePlan::kraft_version`]). Checks run
//! against the committed image.

use crate::{
    metadata::{
        image::MetadataImage,
        records::{FeatureLevelRecord, METADATA_VERSION_FEATURE},
        version::MetadataVersion,
    },
    raft::membership::KRAFT_VERSION_FEATURE,
    wire::SupportedFeature,
};

/// `MetadataVersion.IBP_3_7_IV0` (15): from it controllers register and
/// their supported ranges are checked (`isControllerRegistrationSupported`).
const CONTROLLER_REGISTRATION_LEVEL: i16 = 15;

/// The `metadata.version` levels whose `didMetadataChange` is true in Kafka
/// 4.4.0's `MetadataVersion` (printed with jshell): a downgrade across one
/// of them might lose metadata and is refused.
const METADATA_CHANGED_LEVELS: &[i16] = &[7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33];

/// Kafka 4.4's dependencies between features (`FeatureVersion.dependencies`,
/// printed with jshell for every production feature and level):
/// `(feature, from level, depends on, at least level)`. Only
/// `eligible.leader.replicas.version` 1 has one: `metadata.version` 23
/// (4.0-IV1).
const DEPENDENCIES: &[(&str, i16, &str, i16)] = &[(
    "eligible.leader.replicas.version",
    1,
    METADATA_VERSION_FEATURE,
    23,
)];

/// Kafka's `FeatureUpdate.UpgradeType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeType {
    /// 1: raise the level (or keep it).
    Upgrade,
    /// 2: lower the level where no metadata is lost.
    SafeDowngrade,
    /// 3: lower the level even if metadata is lost (refused for
    /// `metadata.version`, as Kafka 4.4 refuses it).
    UnsafeDowngrade,
}

impl UpgradeType {
    /// The type of wire code `code` (UpdateFeatures v1+ `UpgradeType`).
    pub fn from_code(code: i8) -> Option<Self> {
        match code {
            1 => Some(Self::Upgrade),
            2 => Some(Self::SafeDowngrade),
            3 => Some(Self::UnsafeDowngrade),
            _ => None,
        }
    }
}

/// One requested change: feature name, level, upgrade type code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUpdate {
    /// Feature name, e.g. `metadata.version`.
    pub feature: String,
    /// The level asked for (`MaxVersionLevel`; 0 removes the feature).
    pub level: i16,
    /// The wire code of the upgrade type (v0's `AllowDowngrade` as 2).
    pub upgrade_type: i8,
}

/// What an accepted request does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeaturePlan {
    /// FeatureLevelRecords to append, in one batch, in request order.
    pub records: Vec<FeatureLevelRecord>,
    /// The `kraft.version` level to ask the Raft engine for, if any.
    pub kraft_version: Option<i16>,
}

/// A refused update; the messages are Kafka's own (`ApiError` messages of
/// `FeatureControlManager`), sent with INVALID_UPDATE_VERSION (95).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureControlError {
    /// `FeatureControlManager.invalidUpdateVersion`.
    #[error("Invalid update version {level} for feature {feature}. {reason}")]
    InvalidUpdateVersion {
        /// Feature name.
        feature: String,
        /// Level asked for.
        level: i16,
        /// Kafka's reason.
        reason: String,
    },
    /// `FeatureControlManager.unsupportedMetadataDowngrade`.
    #[error("Unsupported metadata.version downgrade from {from} to {to}. {reason}")]
    UnsupportedMetadataDowngrade {
        /// The finalized version.
        from: MetadataVersion,
        /// The version asked for.
        to: MetadataVersion,
        /// Kafka's reason.
        reason: &'static str,
    },
}

fn invalid(feature: &str, level: i16, reason: impl Into<String>) -> FeatureControlError {
    FeatureControlError::InvalidUpdateVersion {
        feature: feature.to_owned(),
        level,
        reason: reason.into(),
    }
}

/// `QuorumFeatures.reasonNotSupported`: why `who` (e.g. `Broker 4`) cannot
/// run `level` given its range (`(0, 0)` when it lists no such feature).
fn reason_not_supported(level: i16, who: &str, (min, max): (i16, i16)) -> Option<String> {
    if (min..=max).contains(&level) {
        None
    } else if max == 0 {
        Some(format!("{who} does not support this feature."))
    } else {
        Some(format!("{who} only supports versions {min}-{max}"))
    }
}

/// `FeatureControlManager.reasonNotSupported`: this controller, then every
/// registered broker (fenced or not, as Kafka's `brokerRegistrations`),
/// then every other registered controller from 3.7-IV0.
fn support_refusal(
    image: &MetadataImage,
    node_id: i32,
    local: &[SupportedFeature],
    metadata_level: i16,
    feature: &str,
    level: i16,
) -> Option<String> {
    let local_range = local
        .iter()
        .find(|f| f.name == feature)
        .map_or((0, 0), |f| (f.min_version, f.max_version));
    if let Some(r) =
        reason_not_supported(level, &format!("Local controller {node_id}"), local_range)
    {
        return Some(r);
    }
    for (id, broker) in image.brokers() {
        let range = broker
            .supported_features
            .iter()
            .find(|f| f.name == feature)
            .map_or((0, 0), |f| {
                (f.min_supported_version, f.max_supported_version)
            });
        if let Some(r) = reason_not_supported(level, &format!("Broker {id}"), range) {
            return Some(r);
        }
    }
    if metadata_level >= CONTROLLER_REGISTRATION_LEVEL {
        for (id, controller) in image.controllers() {
            if *id == node_id {
                continue;
            }
            let range = controller
                .supported_features
                .iter()
                .find(|f| f.name == feature)
                .map_or((0, 0), |f| {
                    (f.min_supported_version, f.max_supported_version)
                });
            if let Some(r) = reason_not_supported(level, &format!("Controller {id}"), range) {
                return Some(r);
            }
        }
    }
    None
}

/// `MetadataVersion.checkIfMetadataChanged`: whether a level in
/// `(low, high]` changed the metadata.
fn metadata_changed(low: i16, high: i16) -> bool {
    METADATA_CHANGED_LEVELS
        .iter()
        .any(|l| *l > low && *l <= high)
}

/// Decides what `updates` do on a cluster whose committed state is `image`,
/// on controller `node_id` supporting `local` (`wire::supported_features`),
/// with `kraft.version` at `kraft_version`. A feature named twice counts
/// once, its last update winning (Kafka's map of updates).
///
/// Errors: the first refused update ([`FeatureControlError`]); one refusal
/// refuses the whole request.
pub fn plan_updates(
    image: &MetadataImage,
    node_id: i32,
    local: &[SupportedFeature],
    kraft_version: i16,
    updates: &[FeatureUpdate],
) -> Result<FeaturePlan, FeatureControlError> {
    let mut unique: Vec<&FeatureUpdate> = Vec::new();
    for u in updates {
        match unique.iter_mut().find(|x| x.feature == u.feature) {
            Some(x) => *x = u,
            None => unique.push(u),
        }
    }
    let metadata_level = image
        .feature_level(METADATA_VERSION_FEATURE)
        .ok_or_else(|| {
            invalid(
                METADATA_VERSION_FEATURE,
                0,
                "metadata.version is not known yet.",
            )
        })?;
    // Kafka's proposed versions: the finalized ones, metadata.version, and
    // every update of the request.
    let mut proposed = image.features().clone();
    proposed.insert(METADATA_VERSION_FEATURE.to_owned(), metadata_level);
    for u in &unique {
        proposed.insert(u.feature.clone(), u.level);
    }
    let mut plan = FeaturePlan::default();
    for u in unique {
        let (feature, level) = (u.feature.as_str(), u.level);
        let Some(upgrade_type) = UpgradeType::from_code(u.upgrade_type) else {
            return Err(invalid(
                feature,
                level,
                "The controller does not support the given upgrade type.",
            ));
        };
        let current = match feature {
            METADATA_VERSION_FEATURE => metadata_level,
            KRAFT_VERSION_FEATURE => kraft_version,
            _ => image.feature_level(feature).unwrap_or(0),
        };
        if level < 0 {
            return Err(invalid(
                feature,
                level,
                "A feature version cannot be less than 0.",
            ));
        }
        if let Some(reason) = support_refusal(image, node_id, local, metadata_level, feature, level)
        {
            return Err(invalid(feature, level, reason));
        }
        if level < current && upgrade_type == UpgradeType::Upgrade {
            return Err(invalid(
                feature,
                level,
                "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
            ));
        }
        if level > current && upgrade_type != UpgradeType::Upgrade {
            return Err(invalid(
                feature,
                level,
                "Can't downgrade to a newer version.",
            ));
        }
        match feature {
            METADATA_VERSION_FEATURE => {
                plan_metadata_version(metadata_level, level, upgrade_type)?;
            }
            KRAFT_VERSION_FEATURE => {
                if upgrade_type == UpgradeType::Upgrade {
                    plan.kraft_version = Some(level);
                } else if level != current {
                    return Err(invalid(
                        feature,
                        level,
                        "Can't downgrade the version of this feature.",
                    ));
                }
                continue;
            }
            _ => {
                for (name, from, dependency, at_least) in DEPENDENCIES {
                    if *name == feature
                        && level >= *from
                        && proposed.get(*dependency).is_none_or(|l| l < at_least)
                    {
                        return Err(invalid(
                            feature,
                            level,
                            format!(
                                "{feature} could not be set to {level} because it depends on {dependency} level {at_least}"
                            ),
                        ));
                    }
                }
            }
        }
        plan.records.push(FeatureLevelRecord {
            name: feature.to_owned(),
            feature_level: level,
        });
    }
    Ok(plan)
}

/// `FeatureControlManager.updateMetadataVersion`: a downgrade across a
/// level that changed the metadata is refused (an unsafe one too, as Kafka
/// 4.4 does not implement them).
fn plan_metadata_version(
    current: i16,
    level: i16,
    upgrade_type: UpgradeType,
) -> Result<(), FeatureControlError> {
    let (Some(from), Some(to)) = (
        MetadataVersion::from_feature_level(current),
        MetadataVersion::from_feature_level(level),
    ) else {
        return Err(invalid(
            METADATA_VERSION_FEATURE,
            level,
            "Unknown metadata.version.",
        ));
    };
    if level < current && metadata_changed(level, current) {
        let reason = if upgrade_type == UpgradeType::UnsafeDowngrade {
            "Unsafe metadata downgrade is not supported in this version."
        } else {
            "Refusing to perform the requested downgrade because it might delete metadata information."
        };
        return Err(FeatureControlError::UnsupportedMetadataDowngrade { from, to, reason });
    }
    Ok(())
}
