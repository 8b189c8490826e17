//! Identity (DESIGN 3.2 step 1): the cluster id and the initial voters'
//! directory ids, generated once and written to status before anything is
//! created, so an operator crash between two steps never changes who the
//! voters are. The StatefulSet carries a copy (annotations, see
//! `build::statefulset::identity_annotations`): when status is lost (a
//! restore without it, `kubectl replace --subresource=status`) the copy is
//! read back, and new ids are made only when no child has any. Pure: ids
//! come from an injected generator.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::{
    crd::{
        ANNOTATION_BOOTSTRAPPED, ANNOTATION_CLUSTER_ID, ANNOTATION_INITIAL_VOTERS, InitialVoter,
        KraftQuorum, KraftQuorumStatus, MAX_REPLICAS,
    },
    kafka_uuid,
};

/// The identity recorded on a child (the StatefulSet's annotations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The cluster id.
    pub cluster_id: String,
    /// The initial voters.
    pub initial_voters: Vec<InitialVoter>,
    /// Whether the quorum was bootstrapped.
    pub bootstrapped: bool,
}

/// The identity in `annotations` (a StatefulSet's), or `None` when they
/// hold none or a malformed one (ids that are not Kafka uuids, node ids not
/// 0..n-1): a broken copy is never used.
pub fn recorded(annotations: &BTreeMap<String, String>) -> Option<Recorded> {
    let cluster_id = annotations.get(ANNOTATION_CLUSTER_ID)?;
    kafka_uuid::parse(cluster_id).ok()?;
    let mut initial_voters = Vec::new();
    for (i, entry) in annotations
        .get(ANNOTATION_INITIAL_VOTERS)?
        .split(',')
        .enumerate()
    {
        let (id, dir) = entry.split_once(':')?;
        let node_id: i32 = id.parse().ok()?;
        if usize::try_from(node_id).ok()? != i {
            return None;
        }
        kafka_uuid::parse(dir).ok()?;
        initial_voters.push(InitialVoter {
            node_id,
            directory_id: dir.to_string(),
        });
    }
    Some(Recorded {
        cluster_id: cluster_id.clone(),
        initial_voters,
        bootstrapped: annotations.get(ANNOTATION_BOOTSTRAPPED).map(String::as_str) == Some("true"),
    })
}

/// The status to write when `kq` has no identity yet, or `None` when it has
/// one (or when the spec is too broken to size the initial voter set: the
/// validate step then reports it).
///
/// When status has none but a child recorded one (`recorded`), that one is
/// restored: same cluster id, same initial voters, same bootstrapped flag.
/// The cluster id is `spec.clusterId` when set (a user adopting existing
/// volumes), else fresh; `spec.replicas` initial voters get fresh directory
/// ids (Kafka's `Uuid.randomUuid` rules, see [`kafka_uuid::fresh`]).
pub fn missing_identity(
    kq: &KraftQuorum,
    recorded: Option<&Recorded>,
    new_uuid: &mut dyn FnMut() -> Uuid,
) -> Option<KraftQuorumStatus> {
    let status = kq.status.clone().unwrap_or_default();
    if status.cluster_id.is_some() {
        return None;
    }
    if let Some(r) = recorded {
        return Some(KraftQuorumStatus {
            cluster_id: Some(r.cluster_id.clone()),
            bootstrapped: r.bootstrapped,
            initial_voters: r.initial_voters.clone(),
            ..status
        });
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
                tls: Default::default(),
                network_policy: Default::default(),
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
        let st = missing_identity(&kq(3, None), None, &mut counter()).expect("identity");
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
        let st = missing_identity(&kq(1, Some("MkU3OEVBNTcwNTJENDM2Qg")), None, &mut counter())
            .expect("identity");
        assert_eq!(st.cluster_id.as_deref(), Some("MkU3OEVBNTcwNTJENDM2Qg"));
    }

    #[test]
    fn identity_is_never_generated_twice() {
        let mut q = kq(3, None);
        q.status = missing_identity(&q, None, &mut counter());
        assert_eq!(missing_identity(&q, None, &mut counter()), None);
    }

    #[test]
    fn a_broken_spec_gets_no_identity() {
        assert_eq!(missing_identity(&kq(0, None), None, &mut counter()), None);
        assert_eq!(
            missing_identity(&kq(3, Some("nope")), None, &mut counter()),
            None
        );
    }

    #[test]
    fn a_lost_status_gets_back_the_identity_recorded_on_the_statefulset() {
        let mut q = kq(3, None);
        let first = missing_identity(&q, None, &mut counter()).expect("identity");
        let voters = first
            .initial_voters
            .iter()
            .map(|v| format!("{}:{}", v.node_id, v.directory_id))
            .collect::<Vec<_>>()
            .join(",");
        let annotations = BTreeMap::from([
            (
                ANNOTATION_CLUSTER_ID.to_string(),
                first.cluster_id.clone().unwrap_or_default(),
            ),
            (ANNOTATION_INITIAL_VOTERS.to_string(), voters),
            (ANNOTATION_BOOTSTRAPPED.to_string(), "true".to_string()),
        ]);
        let rec = recorded(&annotations).expect("recorded");
        // Status wiped: a generator that would give other ids is not used.
        q.status = None;
        let mut other = || Uuid::from_u128(99);
        let back = missing_identity(&q, Some(&rec), &mut other).expect("restored");
        assert_eq!(back.cluster_id, first.cluster_id);
        assert_eq!(back.initial_voters, first.initial_voters);
        assert!(back.bootstrapped);
        // A status that has its identity keeps it.
        q.status = Some(back);
        assert_eq!(missing_identity(&q, Some(&rec), &mut other), None);
    }

    #[test]
    fn a_malformed_record_is_not_used() {
        let bad = |c: &str, v: &str| {
            recorded(&BTreeMap::from([
                (ANNOTATION_CLUSTER_ID.to_string(), c.to_string()),
                (ANNOTATION_INITIAL_VOTERS.to_string(), v.to_string()),
            ]))
        };
        assert_eq!(bad("nope", "0:AAAAAAAAAAAAAAAAAAAAAw"), None);
        assert_eq!(
            bad("AAAAAAAAAAAAAAAAAAAAAg", "1:AAAAAAAAAAAAAAAAAAAAAw"),
            None
        );
        assert_eq!(bad("AAAAAAAAAAAAAAAAAAAAAg", "0:nope"), None);
        assert_eq!(recorded(&BTreeMap::new()), None);
        assert!(bad("AAAAAAAAAAAAAAAAAAAAAg", "0:AAAAAAAAAAAAAAAAAAAAAw").is_some());
    }
}
