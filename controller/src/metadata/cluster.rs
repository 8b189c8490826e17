//! The answers a controller gives from its committed state, as pure
//! functions: DescribeCluster (KIP-919, endpoint type controller) and the
//! finalized features of ApiVersions, and the idle no-op record of Kafka's
//! `QuorumController` (`metadata.max.idle.interval.ms`).
//!
//! Shared by the listeners above Raft (the metadata listener and the
//! benchmark workload, which answers them with an empty image). It owns no
//! state and must not read the log.

use kafka_protocol::{
    error::ResponseError,
    messages::{
        ApiVersionsResponse, DescribeClusterRequest, DescribeClusterResponse,
        describe_cluster_response::DescribeClusterBroker,
    },
    protocol::StrBytes,
};

use super::image::MetadataImage;
use crate::{
    log::ReplicatedLog,
    raft::{RaftError, Role, VoterSet, listener::RaftClient},
    wire::{self, FinalizedFeatures},
};

/// DescribeCluster's endpoint type for controllers (KIP-919).
pub const ENDPOINT_TYPE_CONTROLLER: i8 = 2;
/// DescribeCluster's endpoint type for brokers (the default of v0-v1).
pub const ENDPOINT_TYPE_BROKER: i8 = 1;

/// DescribeCluster as the metadata listener answers it: for endpoint type
/// broker, the brokers registered in `image` ([`describe_cluster_brokers`])
/// and the active controller's id; otherwise [`describe_cluster`].
pub fn describe_cluster_with_brokers(
    request: &DescribeClusterRequest,
    cluster_id: &str,
    leader_id: Option<i32>,
    controllers: Vec<DescribeClusterBroker>,
    image: &MetadataImage,
) -> DescribeClusterResponse {
    if request.endpoint_type != ENDPOINT_TYPE_BROKER {
        return describe_cluster(request, cluster_id, leader_id, controllers);
    }
    DescribeClusterResponse::default()
        .with_endpoint_type(ENDPOINT_TYPE_BROKER)
        .with_cluster_id(StrBytes::from_string(cluster_id.to_owned()))
        .with_cluster_authorized_operations(i32::MIN)
        .with_controller_id(leader_id.unwrap_or(-1).into())
        .with_brokers(describe_cluster_brokers(
            image,
            request.include_fenced_brokers,
        ))
}

/// The brokers of a broker-type DescribeCluster: every registered broker
/// that is not fenced (all of them, flagged, with `include_fenced`, KIP-1073),
/// by id, with its first listener and its rack, as the committed `image`
/// has them.
pub fn describe_cluster_brokers(
    image: &MetadataImage,
    include_fenced: bool,
) -> Vec<DescribeClusterBroker> {
    image
        .brokers()
        .iter()
        .filter(|(_, b)| include_fenced || !b.fenced)
        .filter_map(|(id, b)| {
            let e = b.endpoints.first()?;
            Some(
                DescribeClusterBroker::default()
                    .with_broker_id((*id).into())
                    .with_host(StrBytes::from_string(e.host.clone()))
                    .with_port(i32::from(e.port))
                    .with_rack(b.rack.clone().map(StrBytes::from_string))
                    .with_is_fenced(b.fenced),
            )
        })
        .collect()
}

/// DescribeCluster for `bootstrap.controllers` clients (KIP-919): the
/// `controllers` and the active one (`leader_id`, -1 when unknown);
/// UNSUPPORTED_ENDPOINT_TYPE for any endpoint type but controller.
pub fn describe_cluster(
    request: &DescribeClusterRequest,
    cluster_id: &str,
    leader_id: Option<i32>,
    controllers: Vec<DescribeClusterBroker>,
) -> DescribeClusterResponse {
    let response = DescribeClusterResponse::default()
        .with_endpoint_type(ENDPOINT_TYPE_CONTROLLER)
        .with_cluster_id(StrBytes::from_string(cluster_id.to_owned()))
        .with_cluster_authorized_operations(i32::MIN);
    if request.endpoint_type != ENDPOINT_TYPE_CONTROLLER {
        return response
            .with_error_code(ResponseError::UnsupportedEndpointType.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "a controller answers DescribeCluster only for endpoint type 2 (controller)",
            )));
    }
    response
        .with_controller_id(leader_id.unwrap_or(-1).into())
        .with_brokers(controllers)
}

/// DescribeCluster's controllers (KIP-919): every controller registered in
/// `image` with an endpoint named `listener_name`, by id, as Kafka lists
/// them; then the `voters` not registered yet, with their voter endpoint
/// named `listener_name` (else their first), so
/// that `bootstrap.controllers` clients find the quorum before registrations
/// land (Kafka lists registrations only).
pub fn describe_cluster_controllers(
    image: &MetadataImage,
    voters: &VoterSet,
    listener_name: &str,
) -> Vec<DescribeClusterBroker> {
    let broker = |id: i32, host: &str, port: u16| {
        DescribeClusterBroker::default()
            .with_broker_id(id.into())
            .with_host(StrBytes::from_string(host.to_owned()))
            .with_port(i32::from(port))
    };
    let mut out: Vec<DescribeClusterBroker> = image
        .controllers()
        .iter()
        .filter_map(|(id, r)| {
            let e = r.endpoints.iter().find(|e| e.name == listener_name)?;
            Some(broker(*id, &e.host, e.port))
        })
        .collect();
    for v in voters.iter() {
        if image.controllers().contains_key(&v.key.id) {
            continue;
        }
        let named = v.endpoints.iter().find(|e| e.name == listener_name);
        if let Some(e) = named.or_else(|| v.endpoints.first()) {
            out.push(broker(v.key.id, &e.host, e.port));
        }
    }
    out
}

/// ApiVersions (18) at `api_version` with the finalized features: the
/// image's feature levels and `kraft.version` from the Raft layer; the epoch
/// is the offset of the image's last record (Kafka's `FinalizedFeatures`
/// epoch), -1 before any.
pub fn api_versions(
    api_version: i16,
    image: &MetadataImage,
    kraft_version: i16,
) -> ApiVersionsResponse {
    let mut levels: Vec<(String, i16)> = image
        .features()
        .iter()
        .map(|(n, l)| (n.clone(), *l))
        .collect();
    levels.push(("kraft.version".to_owned(), kraft_version));
    let finalized = FinalizedFeatures {
        levels,
        epoch: image.next_offset() - 1,
    };
    wire::api_versions_response(api_version, &wire::supported_features(), &finalized)
}

/// When the idle no-op record is due (ms): `max_idle_interval_ms` after the
/// last proposal, while this node leads and is not shutting down.
pub fn idle_deadline_ms<L: ReplicatedLog>(
    client: &RaftClient<'_, L>,
    max_idle_interval_ms: u64,
) -> Option<u64> {
    (client.role() == Role::Leader && !client.shutting_down())
        .then(|| client.last_append_ms() + max_idle_interval_ms)
}

/// Kafka's `QuorumController` idle write (`metadata.max.idle.interval.ms`):
/// a leader with nothing to write for this long appends a NoOpRecord, so
/// followers see the high watermark move and staleness is bounded.
///
/// Errors: [`RaftError`] when the log failed (fatal).
pub fn maybe_propose_no_op<L: ReplicatedLog>(
    client: &mut RaftClient<'_, L>,
    max_idle_interval_ms: u64,
) -> Result<(), RaftError> {
    if idle_deadline_ms(client, max_idle_interval_ms).is_some_and(|at| client.now_ms() >= at) {
        client.propose(&[super::records::no_op_record()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::{BrokerEndpoint, RegisterBrokerRecord};

    #[test]
    fn a_broker_type_describe_cluster_lists_the_unfenced_brokers() {
        let mut image = MetadataImage::default();
        for (offset, (id, fenced)) in [(1, false), (2, true)].into_iter().enumerate() {
            let r = RegisterBrokerRecord {
                broker_id: id,
                is_migrating_zk_broker: false,
                incarnation_id: uuid::Uuid::from_u128(id as u128),
                broker_epoch: offset as i64,
                endpoints: vec![BrokerEndpoint {
                    name: "PLAINTEXT".into(),
                    host: format!("b-{id}"),
                    port: 9092,
                    security_protocol: 0,
                }],
                features: vec![],
                rack: None,
                fenced,
                in_controlled_shutdown: false,
                log_dirs: vec![],
                cordoned_log_dirs: None,
            };
            image
                .apply_record(offset as i64, &r.encode_framed(3))
                .expect("applies");
        }
        let request = DescribeClusterRequest::default().with_endpoint_type(ENDPOINT_TYPE_BROKER);
        let r = describe_cluster_with_brokers(&request, "c", Some(7), vec![], &image);
        assert_eq!(
            (r.error_code, r.endpoint_type, r.controller_id.0),
            (0, 1, 7)
        );
        let ids: Vec<i32> = r.brokers.iter().map(|b| b.broker_id.0).collect();
        assert_eq!(ids, [1]);
        assert_eq!(r.brokers[0].host.as_str(), "b-1");
        let all = describe_cluster_with_brokers(
            &request.with_include_fenced_brokers(true),
            "c",
            None,
            vec![],
            &image,
        );
        assert_eq!(all.brokers.len(), 2);
        assert!(all.brokers[1].is_fenced);
        // Endpoint type controller is answered as before; others refused.
        let other = DescribeClusterRequest::default().with_endpoint_type(3);
        let r = describe_cluster_with_brokers(&other, "c", None, vec![], &image);
        assert_eq!(r.error_code, ResponseError::UnsupportedEndpointType.code());
    }
}
