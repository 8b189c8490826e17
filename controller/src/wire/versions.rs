//! The APIs and versions this controller speaks, and the ApiVersions answer
//! built from them (KIP-35, KIP-511, KIP-584 features). Pure data: which
//! feature levels are finalized is the metadata layer's to say; this module
//! only shapes the response.

use kafka_protocol::{
    messages::{
        ApiKey, ApiVersionsResponse,
        api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey},
    },
    protocol::StrBytes,
};

use super::{
    api::Api,
    own_messages::{ADD_RAFT_VOTER_MAX_VERSION, UNREGISTER_CONTROLLER_MAX_VERSION},
};

/// Kafka's `UNSUPPORTED_VERSION` error code.
pub const UNSUPPORTED_VERSION: i16 = 35;
/// Kafka's `INVALID_REQUEST` error code.
pub const INVALID_REQUEST: i16 = 42;

/// One row of the supported-API table: api key and the inclusive version range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedApi {
    /// The api.
    pub key: ApiKey,
    /// Lowest version we decode and answer.
    pub min_version: i16,
    /// Highest version we decode and answer.
    pub max_version: i16,
}

const fn api(key: ApiKey, min_version: i16, max_version: i16) -> SupportedApi {
    SupportedApi {
        key,
        min_version,
        max_version,
    }
}

/// Every API this controller answers whose bodies `kafka-protocol` reads and
/// writes, with the versions it does so at (DESIGN 2.2; Kafka 4.1 `ApiKeys`
/// for the controller listener, restricted to what KRaft needs). Fetch
/// starts at v4 because that is the lowest version `kafka-protocol` has.
/// [`OWN_APIS`] adds the apis and versions whose bodies are
/// [`super::own_messages`]'; [`is_supported`] and [`api_version_list`] read
/// both. (This table keeps its rows and order: the fuzz targets and their
/// seeds pick an api by its index.)
pub const SUPPORTED_APIS: &[SupportedApi] = &[
    api(ApiKey::Fetch, 4, 18),
    api(ApiKey::ApiVersions, 0, 4),
    api(ApiKey::Vote, 0, 2),
    api(ApiKey::BeginQuorumEpoch, 0, 1),
    api(ApiKey::EndQuorumEpoch, 0, 1),
    api(ApiKey::DescribeQuorum, 0, 2),
    api(ApiKey::FetchSnapshot, 0, 1),
    api(ApiKey::DescribeCluster, 0, 2),
    api(ApiKey::AddRaftVoter, 0, 0),
    api(ApiKey::RemoveRaftVoter, 0, 0),
    api(ApiKey::UpdateRaftVoter, 0, 0),
    // KIP-919: a controller registers with the active controller.
    api(ApiKey::ControllerRegistration, 0, 0),
    // Brokers register and heartbeat (Kafka's ControllerApis). BrokerHeartbeat
    // v2 (Kafka 4.4, KIP-1066: tagged CordonedLogDirs) is read through v1's
    // codec (`codec::body_version`): a Kafka 4.4 broker at metadata.version
    // 4.3-IV0 or later cannot heartbeat at v1. The cordoned directories are
    // not recorded (docs/quorum-controller.md).
    api(ApiKey::BrokerRegistration, 0, 4),
    api(ApiKey::BrokerHeartbeat, 0, 2),
    api(ApiKey::UnregisterBroker, 0, 0),
    // KIP-590: brokers forward their clients' admin requests.
    api(ApiKey::Envelope, 0, 0),
    // ACLs stored in the metadata log (Kafka's ControllerApis via AclApis;
    // Kafka 4 serves v1-3).
    api(ApiKey::DescribeAcls, 1, 3),
    api(ApiKey::CreateAcls, 1, 3),
    api(ApiKey::DeleteAcls, 1, 3),
    // Brokers ask for blocks of producer ids (Kafka's ProducerIdControlManager).
    api(ApiKey::AllocateProducerIds, 0, 0),
    // Dynamic configs of topics and brokers (Kafka's ConfigurationControlManager).
    api(ApiKey::IncrementalAlterConfigs, 0, 1),
    api(ApiKey::AlterConfigs, 0, 2),
    api(ApiKey::DescribeConfigs, 1, 4),
    // Brokers say which log directory holds each replica (KIP-858).
    api(ApiKey::AssignReplicasToDirs, 0, 0),
    // Topics, partitions, leaders and ISRs (issue 17): Kafka 4.4's ranges.
    api(ApiKey::CreateTopics, 2, 7),
    api(ApiKey::DeleteTopics, 1, 6),
    api(ApiKey::CreatePartitions, 0, 3),
    api(ApiKey::ElectLeaders, 0, 2),
    api(ApiKey::AlterPartition, 2, 3),
    // kraft.version 0 -> 1 (KAFKA-16538); v2 drops the per-feature results.
    api(ApiKey::UpdateFeatures, 0, 1),
];

/// One row of [`OWN_APIS`]: an api (94 included) and the inclusive version
/// range the server decodes with [`super::own_messages`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnApi {
    /// The api.
    pub api: Api,
    /// Lowest version we decode and answer.
    pub min_version: i16,
    /// Highest version we decode and answer.
    pub max_version: i16,
}

/// The apis whose request bodies `kafka-protocol` 0.18 cannot read at every
/// version we serve, decoded by [`super::own_messages`] instead; each row
/// replaces the api's [`SUPPORTED_APIS`] row. The ranges are Kafka 4.4.0's
/// controller's (its ApiVersions answer, `ApiKeys` of the controller
/// listener): AddRaftVoter 0-1 (v1: KIP-1186 `AckWhenCommitted`) and
/// UnregisterController (94) 0-0 (KIP-1312).
pub const OWN_APIS: &[OwnApi] = &[
    OwnApi {
        api: Api::Kafka(ApiKey::AddRaftVoter),
        min_version: 0,
        max_version: ADD_RAFT_VOTER_MAX_VERSION,
    },
    OwnApi {
        api: Api::UnregisterController,
        min_version: 0,
        max_version: UNREGISTER_CONTROLLER_MAX_VERSION,
    },
];

/// The row of `key` in [`SUPPORTED_APIS`] (the versions `kafka-protocol`
/// reads and writes for us, what our clients send at), or `None` when we do
/// not answer that api through `kafka-protocol`.
pub fn supported_api(key: ApiKey) -> Option<SupportedApi> {
    SUPPORTED_APIS.iter().copied().find(|a| a.key == key)
}

/// The versions the server answers `api` at (inclusive): its [`OWN_APIS`]
/// row, else its [`SUPPORTED_APIS`] row; `None` when it does not serve it.
pub fn served_versions(api: impl Into<Api>) -> Option<(i16, i16)> {
    let api = api.into();
    if let Some(own) = OWN_APIS.iter().find(|o| o.api == api) {
        return Some((own.min_version, own.max_version));
    }
    supported_api(api.kafka()?).map(|a| (a.min_version, a.max_version))
}

/// Whether we answer `api` at `version`.
pub fn is_supported(api: impl Into<Api>, version: i16) -> bool {
    served_versions(api).is_some_and(|(min, max)| (min..=max).contains(&version))
}

/// The highest version of `key` that both we and a peer whose ApiVersions
/// answer listed `peer` support; `None` when the ranges do not meet.
pub fn negotiate(key: ApiKey, peer: &[ApiVersion]) -> Option<i16> {
    let ours = supported_api(key)?;
    let theirs = peer.iter().find(|a| a.api_key == key as i16)?;
    let max = ours.max_version.min(theirs.max_version);
    let min = ours.min_version.max(theirs.min_version);
    (min <= max).then_some(max)
}

/// A supported feature range (KIP-584 `SupportedFeatureKey`), levels inclusive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportedFeature {
    /// Feature name, e.g. `kraft.version`.
    pub name: &'static str,
    /// Lowest level supported.
    pub min_version: i16,
    /// Highest level supported.
    pub max_version: i16,
}

/// `metadata.version` feature levels this controller implements: 3.3-IV3
/// (7, Kafka's `MetadataVersion.MINIMUM_VERSION`) to 4.4-IV2 (33, Kafka
/// 4.4.0's `LATEST_PRODUCTION`).
pub const METADATA_VERSION_MIN: i16 = 7;
/// See [`METADATA_VERSION_MIN`].
pub const METADATA_VERSION_MAX: i16 = 33;

/// What this controller registers (ControllerRegistration, KIP-919) and
/// advertises (ApiVersions) as supported, the ranges a Kafka 4.4.0
/// controller advertises (`BrokerFeatures.defaultSupportedFeatures(false)`,
/// printed with jshell): `metadata.version` 7-33 and every production
/// feature whose latest production level is above 0: `kraft.version` 0-1
/// (KIP-853), `transaction.version` 0-2, `group.version` 0-1,
/// `eligible.leader.replicas.version` 0-1, `share.version` 0-2 (KIP-932) and
/// `streams.version` 0-1 (KIP-1071). The last two gate broker-side groups
/// only: a controller stores their levels and does nothing else with them.
pub fn supported_features() -> Vec<SupportedFeature> {
    [
        (
            "metadata.version",
            METADATA_VERSION_MIN,
            METADATA_VERSION_MAX,
        ),
        ("kraft.version", 0, 1),
        ("transaction.version", 0, 2),
        ("group.version", 0, 1),
        ("eligible.leader.replicas.version", 0, 1),
        ("share.version", 0, 2),
        ("streams.version", 0, 1),
    ]
    .into_iter()
    .map(|(name, min_version, max_version)| SupportedFeature {
        name,
        min_version,
        max_version,
    })
    .collect()
}

/// Finalized feature levels as the metadata image knows them (KIP-584).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalizedFeatures {
    /// (name, level); levels of 0 are left out of the response, as Kafka does.
    pub levels: Vec<(String, i16)>,
    /// Offset of the record that last changed a feature level, or -1 when
    /// none is known yet (`finalized_features_epoch`).
    pub epoch: i64,
}

impl Default for FinalizedFeatures {
    fn default() -> Self {
        Self {
            levels: Vec::new(),
            epoch: -1,
        }
    }
}

/// The ApiVersions response list: one [`ApiVersion`] per api we serve
/// ([`served_versions`] of every row of [`SUPPORTED_APIS`] and
/// [`OWN_APIS`]), in api key order.
pub fn api_version_list() -> Vec<ApiVersion> {
    let mut keys: Vec<Api> = SUPPORTED_APIS.iter().map(|a| Api::Kafka(a.key)).collect();
    keys.extend(OWN_APIS.iter().map(|o| o.api));
    keys.sort_by_key(|a| a.key());
    keys.dedup();
    keys.into_iter()
        .filter_map(|api| {
            let (min, max) = served_versions(api)?;
            Some(
                ApiVersion::default()
                    .with_api_key(api.key())
                    .with_min_version(min)
                    .with_max_version(max),
            )
        })
        .collect()
}

/// The ApiVersions answer to a request of `request_version`, as Kafka's
/// `SimpleApiVersionManager.apiVersionResponse` builds it for a controller:
/// error 0, our api list, throttle 0, the supported features (for request
/// versions below 4, features whose minimum level is 0 are left out:
/// KAFKA-17492), the finalized levels that are not 0, their epoch, and
/// `zk_migration_ready` false.
pub fn api_versions_response(
    request_version: i16,
    supported: &[SupportedFeature],
    finalized: &FinalizedFeatures,
) -> ApiVersionsResponse {
    let alter_feature_level_0 = request_version < 4;
    let supported_features = supported
        .iter()
        .filter(|f| !(alter_feature_level_0 && f.min_version == 0))
        .map(|f| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version(f.min_version)
                .with_max_version(f.max_version)
        })
        .collect();
    let finalized_features = finalized
        .levels
        .iter()
        .filter(|(_, level)| *level != 0)
        .map(|(name, level)| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_string(name.clone()))
                .with_min_version_level(*level)
                .with_max_version_level(*level)
        })
        .collect();
    let response = ApiVersionsResponse::default()
        .with_error_code(0)
        .with_api_keys(api_version_list())
        .with_throttle_time_ms(0);
    if request_version < 3 {
        // Features are tagged fields of v3+; older versions cannot carry them.
        return response;
    }
    response
        .with_supported_features(supported_features)
        .with_finalized_features_epoch(finalized.epoch)
        .with_finalized_features(finalized_features)
        .with_zk_migration_ready(false)
}

/// The answer to an ApiVersions request whose version we do not support
/// (Kafka's `ApiVersionsRequest.getErrorResponse`, KIP-511): encoded at v0,
/// error UNSUPPORTED_VERSION, and only the ApiVersions row in the api list, so
/// that the client retries with the highest version we listed.
pub fn api_versions_fallback_response() -> ApiVersionsResponse {
    let row = supported_api(ApiKey::ApiVersions).expect("ApiVersions is in SUPPORTED_APIS");
    ApiVersionsResponse::default()
        .with_error_code(UNSUPPORTED_VERSION)
        .with_api_keys(vec![
            ApiVersion::default()
                .with_api_key(ApiKey::ApiVersions as i16)
                .with_min_version(row.min_version)
                .with_max_version(row.max_version),
        ])
}

/// Kafka's check of ApiVersions v3+ client software name and version
/// (`ApiVersionsRequest.isValid`): `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
/// The server answers INVALID_REQUEST when this is false.
pub fn is_valid_client_software(value: &str) -> bool {
    let bytes = value.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}
