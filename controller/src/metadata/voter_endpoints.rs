//! The endpoints an AddRaftVoter gives for a node, checked against what that
//! node registered itself (issue 27). Kafka's `AddVoterHandler` sends
//! ApiVersions to the first listener and stores whatever the request says,
//! so `quorum add-voter` of node 1 with node 2's endpoint left a voter set
//! pointing at the wrong node (KAFKA-20228 is the neighbouring bug). Every
//! controller sends a KIP-919 ControllerRegistration with its own listeners
//! (`advertised.listeners`) once it runs, so the active controller's image
//! knows where each node says it is.

use super::image::MetadataImage;
use crate::raft::Endpoint;

/// Whether `endpoints` (of an AddRaftVoter for `voter_id`) agree with node
/// `voter_id`'s controller registration in `image`: every listener named in
/// the request must be registered by that node under the same name, with
/// the same port and host (ASCII case and a trailing dot ignored, as DNS
/// does; a registered wildcard host, `0.0.0.0`, `::` or empty, matches any). A node that has not registered (not started yet, or started
/// before its registration committed) has nothing to disagree with and is
/// accepted, as Kafka accepts it.
///
/// Errors: one line naming the listener, the request's `host:port` and the
/// registered one (or the registered listener names).
pub fn vet(image: &MetadataImage, voter_id: i32, endpoints: &[Endpoint]) -> Result<(), String> {
    let Some(registered) = image.controllers().get(&voter_id) else {
        return Ok(());
    };
    for e in endpoints {
        let Some(r) = registered.endpoints.iter().find(|r| r.name == e.name) else {
            let names: Vec<&str> = registered
                .endpoints
                .iter()
                .map(|r| r.name.as_str())
                .collect();
            return Err(format!(
                "listener {} of node {voter_id} is {}:{} in the request, but node {voter_id} registered no listener {} (its listeners: {})",
                e.name,
                e.host,
                e.port,
                e.name,
                names.join(", ")
            ));
        };
        if r.port != e.port || !(is_wildcard(&r.host) || same_host(&r.host, &e.host)) {
            return Err(format!(
                "listener {} of node {voter_id} is {}:{} in the request, but node {voter_id} registered {}:{}",
                e.name, e.host, e.port, r.host, r.port
            ));
        }
    }
    Ok(())
}

/// A host a node registers when it listens on every interface and
/// advertises nothing else (`listeners=CONTROLLER://:9093` or `0.0.0.0`):
/// only its port can be compared.
fn is_wildcard(host: &str) -> bool {
    matches!(host, "" | "0.0.0.0" | "::" | "[::]")
}

fn same_host(a: &str, b: &str) -> bool {
    a.trim_end_matches('.')
        .eq_ignore_ascii_case(b.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::registration::{ControllerEndpoint, RegisterControllerRecord};

    fn image_with(id: i32, host: &str, port: u16) -> MetadataImage {
        let mut image = MetadataImage::default();
        let record = RegisterControllerRecord {
            controller_id: id,
            incarnation_id: uuid::Uuid::from_u128(7),
            zk_migration_ready: false,
            endpoints: vec![ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: host.into(),
                port,
                security_protocol: 0,
            }],
            features: Vec::new(),
        };
        image
            .apply_record(0, &record.encode_framed())
            .expect("applies");
        image
    }

    #[test]
    fn the_endpoint_the_node_registered_is_accepted_in_any_case_and_with_a_trailing_dot() {
        let image = image_with(1, "kq-1.kq.ns.svc", 9093);
        for host in ["kq-1.kq.ns.svc", "KQ-1.kq.ns.svc.", "kq-1.KQ.ns.svc"] {
            let e = Endpoint::new("CONTROLLER", host, 9093);
            assert_eq!(vet(&image, 1, &[e]), Ok(()), "{host}");
        }
    }

    #[test]
    fn another_nodes_endpoint_is_refused_naming_both() {
        let image = image_with(1, "kq-1", 9093);
        let err = vet(&image, 1, &[Endpoint::new("CONTROLLER", "kq-2", 9093)])
            .expect_err("node 2's host");
        assert_eq!(
            err,
            "listener CONTROLLER of node 1 is kq-2:9093 in the request, but node 1 registered kq-1:9093"
        );
        assert!(vet(&image, 1, &[Endpoint::new("CONTROLLER", "kq-1", 9094)]).is_err());
        let err = vet(&image, 1, &[Endpoint::new("OTHER", "kq-1", 9093)]).expect_err("no OTHER");
        assert!(
            err.contains("registered no listener OTHER (its listeners: CONTROLLER)"),
            "{err}"
        );
    }

    #[test]
    fn a_node_that_registered_a_wildcard_host_is_checked_by_its_port_only() {
        for host in ["", "0.0.0.0", "::"] {
            let image = image_with(1, host, 9093);
            assert_eq!(
                vet(&image, 1, &[Endpoint::new("CONTROLLER", "kq-1", 9093)]),
                Ok(())
            );
            assert!(vet(&image, 1, &[Endpoint::new("CONTROLLER", "kq-1", 9094)]).is_err());
        }
    }

    #[test]
    fn a_node_that_has_not_registered_is_accepted() {
        let image = image_with(1, "kq-1", 9093);
        assert_eq!(
            vet(&image, 4, &[Endpoint::new("CONTROLLER", "x", 1)]),
            Ok(())
        );
    }
}
