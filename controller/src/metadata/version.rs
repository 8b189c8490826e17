//! Kafka's `metadata.version` feature levels (Kafka 4.4's `MetadataVersion`
//! enum, from 3.3-IV3, the oldest KRaft version Kafka 4.x accepts, to
//! 4.4-IV2, Kafka 4.4.0's latest production version), and the level-gated
//! behaviours of a controller (`MetadataVersion.is*Supported`).
//!
//! Owns the mapping between release strings (`--release-version`) and
//! feature levels; it must not decide which features a cluster enables.

/// `(release, IV name, feature level)`, oldest first.
const VERSIONS: &[(&str, &str, i16)] = &[
    ("3.3", "IV3", 7),
    ("3.4", "IV0", 8),
    ("3.5", "IV0", 9),
    ("3.5", "IV1", 10),
    ("3.5", "IV2", 11),
    ("3.6", "IV0", 12),
    ("3.6", "IV1", 13),
    ("3.6", "IV2", 14),
    ("3.7", "IV0", 15),
    ("3.7", "IV1", 16),
    ("3.7", "IV2", 17),
    ("3.7", "IV3", 18),
    ("3.7", "IV4", 19),
    ("3.8", "IV0", 20),
    ("3.9", "IV0", 21),
    ("4.0", "IV0", 22),
    ("4.0", "IV1", 23),
    ("4.0", "IV2", 24),
    ("4.0", "IV3", 25),
    ("4.1", "IV0", 26),
    ("4.1", "IV1", 27),
    ("4.2", "IV0", 28),
    ("4.2", "IV1", 29),
    ("4.3", "IV0", 30),
    ("4.4", "IV0", 31),
    ("4.4", "IV1", 32),
    ("4.4", "IV2", 33),
];

/// A `metadata.version` (Kafka's `MetadataVersion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MetadataVersion {
    level: i16,
}

impl MetadataVersion {
    /// `MetadataVersion.MINIMUM_VERSION` (3.3-IV3, level 7).
    pub const MINIMUM: Self = Self { level: 7 };
    /// `MetadataVersion.LATEST_PRODUCTION` of Kafka 4.1 (4.1-IV1, level 27):
    /// `format`'s default, the highest level both Kafka 4.1.2 and 4.4.0
    /// brokers run (docs/decisions.md D14).
    pub const LATEST_PRODUCTION: Self = Self { level: 27 };
    /// `MetadataVersion.LATEST_PRODUCTION` of Kafka 4.4.0 (4.4-IV2, level
    /// 33): the highest level this controller implements and registers.
    pub const LATEST_IMPLEMENTED: Self = Self { level: 33 };
    /// 4.2-IV0 (level 28): the first release version of a Kafka release
    /// whose `kafka-storage format` writes the bootstrap records into the
    /// 0-0 checkpoint (KIP-1170); from here our `format` does too
    /// (docs/decisions.md D18).
    pub const IBP_4_2_IV0: Self = Self { level: 28 };
    /// 4.3-IV0 (level 30): cordoned log directories (KIP-1066,
    /// `MetadataVersion.isCordonedLogDirsSupported`): RegisterBrokerRecord v4
    /// and the `cordoned.log.dirs` broker config.
    pub const IBP_4_3_IV0: Self = Self { level: 30 };
    /// 4.4-IV1 (level 32): CIDR ACL host patterns
    /// (`MetadataVersion.isCidrAclSupported`, Kafka's `AclControlManager`).
    pub const IBP_4_4_IV1: Self = Self { level: 32 };
    /// 4.4-IV2 (level 33): UnregisterControllerRecord (KIP-1312,
    /// `MetadataVersion.isControllerUnregistrationSupported`).
    pub const IBP_4_4_IV2: Self = Self { level: 33 };
    /// 3.9-IV0 (level 21): the first version with kraft.version 1 (KIP-853),
    /// needed by `--standalone` and `--initial-controllers`.
    pub const IBP_3_9_IV0: Self = Self { level: 21 };

    /// Parses a release version as Kafka's `MetadataVersion.fromVersionString`
    /// does: `4.1-IV0` (exact), `4.1` or `4.1.0` (the latest IV of 4.1).
    /// `None` for anything outside 3.3-IV3..=4.4-IV2.
    pub fn parse(text: &str) -> Option<Self> {
        let (release, iv) = match text.split_once('-') {
            Some((r, iv)) => (r, Some(iv)),
            None => (text, None),
        };
        let mut parts = release.split('.');
        let (major, minor) = (parts.next()?, parts.next()?);
        if parts.clone().count() > 1 || parts.any(|p| p.parse::<u32>().is_err()) {
            return None;
        }
        let release = format!("{major}.{minor}");
        VERSIONS
            .iter()
            .filter(|(r, v, _)| *r == release && iv.is_none_or(|iv| iv == *v))
            .map(|(_, _, level)| Self { level: *level })
            .next_back()
    }

    /// The feature level written in FeatureLevelRecord.
    pub fn feature_level(self) -> i16 {
        self.level
    }

    /// The version at `level`, if known.
    pub fn from_feature_level(level: i16) -> Option<Self> {
        VERSIONS
            .iter()
            .any(|(_, _, l)| *l == level)
            .then_some(Self { level })
    }

    /// Whether brokers may cordon log directories at this level (4.3-IV0,
    /// 30; `MetadataVersion.isCordonedLogDirsSupported`): Kafka's
    /// `ConfigurationControlManager` refuses the `cordoned.log.dirs` broker
    /// config below it.
    pub fn is_cordoned_log_dirs_supported(self) -> bool {
        self >= Self::IBP_4_3_IV0
    }

    /// Whether ACL hosts may be CIDR blocks (`10.0.0.0/8`) at this level
    /// (4.4-IV1, 32; `MetadataVersion.isCidrAclSupported`): Kafka's
    /// `AclControlManager` refuses a host holding `/` below it.
    pub fn is_cidr_acl_supported(self) -> bool {
        self >= Self::IBP_4_4_IV1
    }

    /// Whether UnregisterControllerRecord may be written at this level
    /// (4.4-IV2, 33; `MetadataVersion.isControllerUnregistrationSupported`,
    /// KIP-1312).
    pub fn is_controller_unregistration_supported(self) -> bool {
        self >= Self::IBP_4_4_IV2
    }
}

/// The `metadata.version` levels this controller implements, for messages:
/// `3.3-IV3 (7) to 4.4-IV2 (33)`. It registers this range (KIP-919) and
/// refuses to run a log, snapshot or bootstrap outside it (issue 22).
pub fn supported_range() -> String {
    let (first, last) = (VERSIONS[0], VERSIONS[VERSIONS.len() - 1]);
    format!(
        "{}-{} ({}) to {}-{} ({})",
        first.0, first.1, first.2, last.0, last.1, last.2
    )
}

impl std::fmt::Display for MetadataVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match VERSIONS.iter().find(|(_, _, l)| *l == self.level) {
            Some((release, iv, _)) => write!(f, "{release}-{iv}"),
            None => write!(f, "level {}", self.level),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_versions_map_to_kafkas_feature_levels() {
        let level = |s: &str| MetadataVersion::parse(s).map(MetadataVersion::feature_level);
        assert_eq!(level("4.1-IV1"), Some(27));
        assert_eq!(supported_range(), "3.3-IV3 (7) to 4.4-IV2 (33)");
        // Kafka 4.4.0's MetadataVersion.values(), printed with jshell.
        assert_eq!(level("4.2-IV0"), Some(28));
        assert_eq!(level("4.2-IV1"), Some(29));
        assert_eq!(level("4.2"), Some(29));
        assert_eq!(level("4.3"), Some(30));
        assert_eq!(level("4.4-IV0"), Some(31));
        assert_eq!(level("4.4-IV1"), Some(32));
        assert_eq!(level("4.4"), Some(33));
        assert_eq!(level("4.4.0"), Some(33));
        assert_eq!(level("4.5-IV0"), None);
        assert_eq!(MetadataVersion::LATEST_IMPLEMENTED.to_string(), "4.4-IV2");
        assert_eq!(level("4.1-IV0"), Some(26));
        assert_eq!(level("4.1"), Some(27));
        assert_eq!(level("4.1.0"), Some(27));
        assert_eq!(level("4.0"), Some(25));
        assert_eq!(level("3.9"), Some(21));
        assert_eq!(level("3.3-IV3"), Some(7));
        assert_eq!(level("3.3-IV0"), None);
        assert_eq!(level("4.1.0.1"), None);
        assert_eq!(level("banana"), None);
        assert_eq!(MetadataVersion::LATEST_PRODUCTION.to_string(), "4.1-IV1");
    }

    #[test]
    fn level_gated_behaviours_start_where_kafka_4_4_starts_them() {
        // Kafka 4.4.0's MetadataVersion.isCordonedLogDirsSupported,
        // isCidrAclSupported and isControllerUnregistrationSupported for
        // levels 27..33, printed with jshell.
        let at = |l: i16| MetadataVersion::from_feature_level(l).expect("known level");
        for l in 27..=33 {
            let v = at(l);
            assert_eq!(v.is_cordoned_log_dirs_supported(), l >= 30, "level {l}");
            assert_eq!(v.is_cidr_acl_supported(), l >= 32, "level {l}");
            assert_eq!(
                v.is_controller_unregistration_supported(),
                l >= 33,
                "level {l}"
            );
        }
        assert_eq!(MetadataVersion::from_feature_level(34), None);
    }
}
