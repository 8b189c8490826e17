//! Identity (DESIGN 3.2 step 1): the cluster id and the initial voters'
//! directory ids, generated once and written to status before anything is
//! created, so an operator crash between two steps never changes who the
//! voters are. Pure: ids come from an injected generator.

use uuid::Uuid;

use crate::{
    crd::{InitialVoter, KraftQuorum, KraftQuorumStatus, MAX_REPLICAS},
    kafka_uuid,
};

/// The status to write when `kq` has no identity yet, or `None` when it has
/// one (or when the spec is too broken to size the initial voter set: the
/// validate step then reports it).
///
/// The cluster id is `spec.clusterId` when set (a user adopting existing
/// volumes), else fresh; `spec.replicas` initial voters get fresh directory
/// ids (Kafka's `Uuid.randomUuid` rules, see [`kafka_uuid::fresh`]).
pub fn missing_identity(
    kq: &KraftQuorum,
    new_uuid: &mut dyn FnMut() -> Uuid,
) -> Option<KraftQuorumStatus> {
    let status = kq.status.clone().unwrap_or_default();
    if status.cluster_id.is_some() {
        return None;
    }
    if !(1..=MAX_REPLICAS).contains(&kq.spec.replicas) {
        return None;
    }
    let cluster_id = match &kq.spec.cluster_id {
        Some(id) if kafka_uuid::parse(id).is_ok() => id.clone(),
        Some(_) => return None,
        None => kafka_uuid::to_string(kafka_uuid::fresh(new_uuid)),
    };
    let initial_voters = (0..kq.spec.replicas)
        .map(|node_id| InitialVoter {
            node_id,
            directory_id: kafka_uuid::to_string(kafka_uuid::fresh(new_uuid)),
        })
        .collect();
    Some(KraftQuorumStatus {
        cluster_id: Some(cluster_id),
        bootstrapped: false,
        initial_voters,
        ..status
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{KraftQuorumSpec, StorageSpec};

    fn kq(replicas: i32, cluster_id: Option<&str>) -> KraftQuorum {
        KraftQuorum::new(
            "kq",
            KraftQuorumSpec {
                replicas,
                image: "kraft:1".into(),
                cluster_id: cluster_id.map(str::to_string),
                storage: StorageSpec {
                    size: "1Gi".into(),
                    storage_class_name: None,
                    on_scale_down: Default::default(),
                    on_delete: Default::default(),
                },
                resources: None,
                listener_port: 9093,
                service_name: None,
                config: Default::default(),
                pod_template: Default::default(),
            },
        )
    }

    fn counter() -> impl FnMut() -> Uuid {
        let mut n = 0u128;
        move || {
            n += 1;
            Uuid::from_u128(n)
        }
    }

    #[test]
    fn a_new_quorum_gets_a_cluster_id_and_one_directory_id_per_initial_voter() {
        let st = missing_identity(&kq(3, None), &mut counter()).expect("identity");
        // Uuid(0, 1) is Kafka's metadata topic id and is skipped, as
        // Kafka's Uuid.randomUuid skips it.
        assert_eq!(st.cluster_id.as_deref(), Some("AAAAAAAAAAAAAAAAAAAAAg"));
        let dirs: Vec<_> = st
            .initial_voters
            .iter()
            .map(|v| (v.node_id, v.directory_id.as_str()))
            .collect();
        assert_eq!(
            dirs,
            vec![
                (0, "AAAAAAAAAAAAAAAAAAAAAw"),
                (1, "AAAAAAAAAAAAAAAAAAAABA"),
                (2, "AAAAAAAAAAAAAAAAAAAABQ")
            ]
        );
        assert!(!st.bootstrapped);
    }

    #[test]
    fn a_cluster_id_in_the_spec_is_adopted() {
        let st = missing_identity(&kq(1, Some("MkU3OEVBNTcwNTJENDM2Qg")), &mut counter())
            .expect("identity");
        assert_eq!(st.cluster_id.as_deref(), Some("MkU3OEVBNTcwNTJENDM2Qg"));
    }

    #[test]
    fn identity_is_never_generated_twice() {
        let mut q = kq(3, None);
        q.status = missing_identity(&q, &mut counter());
        assert_eq!(missing_identity(&q, &mut counter()), None);
    }

    #[test]
    fn a_broken_spec_gets_no_identity() {
        assert_eq!(missing_identity(&kq(0, None), &mut counter()), None);
        assert_eq!(missing_identity(&kq(3, Some("nope")), &mut counter()), None);
    }
}
