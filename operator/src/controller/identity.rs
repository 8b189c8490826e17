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
        ANNOTATION_BOOTSTRAPPED, ANNOTATION_CLUSTER_ID, ANNOTATION_INITIAL_VOTERS,
        ANNOTATION_LISTENER_SECURITY, ANNOTATION_UNFORMATTED_INITIAL_VOTERS, AdoptionPhase,
        InitialVoter, KraftQuorum, KraftQuorumStatus, MAX_REPLICAS,
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

/// Whether `status` says not bootstrapped while the StatefulSet's copy
/// (`recorded`, same cluster id) says bootstrapped: the status write after
/// the first leader's mark failed. The quorum is then bootstrapped: it must
/// never give every pod the initial voter list again (DESIGN 2.4), nor
/// recompute the unformatted initial voters (docs/decisions.md D19: that set
/// only shrinks).
pub fn bootstrapped_on_record(
    status: Option<&KraftQuorumStatus>,
    recorded: Option<&Recorded>,
) -> bool {
    match (recorded, status) {
        (Some(r), Some(st)) => {
            r.bootstrapped
                && !st.bootstrapped
                && st.cluster_id.as_deref() == Some(r.cluster_id.as_str())
        }
        _ => false,
    }
}

/// The initial voters still unformatted, from a StatefulSet's
/// [`ANNOTATION_UNFORMATTED_INITIAL_VOTERS`] (ascending node ids). Only ids of
/// `initial_voters` count; an absent, empty or malformed value is no id at
/// all, the safe side (DESIGN 2.4: such a pod formats with
/// `--no-initial-controllers`, never with the initial list).
pub fn unformatted_initial_voters(
    annotations: &BTreeMap<String, String>,
    initial_voters: &[(i32, Uuid)],
) -> Vec<i32> {
    let Some(text) = annotations.get(ANNOTATION_UNFORMATTED_INITIAL_VOTERS) else {
        return Vec::new();
    };
    if text.is_empty() {
        return Vec::new();
    }
    let mut ids = Vec::new();
    for id in text.split(',') {
        match id.parse::<i32>() {
            Ok(id) if initial_voters.iter().any(|(v, _)| *v == id) => ids.push(id),
            _ => return Vec::new(),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Whether the quorum behind an existing StatefulSet runs TLS on its
/// controller listener: its [`ANNOTATION_LISTENER_SECURITY`] (`SSL` /
/// `PLAINTEXT`), else, for a StatefulSet written by an operator that did not
/// record it, whether its pod template mounts the TLS volume (operators
/// before TLS mounted none: PLAINTEXT). `None` for an unknown annotation
/// value (the spec then decides, as for a new quorum).
pub fn recorded_tls(
    annotations: &BTreeMap<String, String>,
    mounts_tls_volume: bool,
) -> Option<bool> {
    match annotations
        .get(ANNOTATION_LISTENER_SECURITY)
        .map(String::as_str)
    {
        Some("SSL") => Some(true),
        Some("PLAINTEXT") => Some(false),
        Some(_) => None,
        None => Some(mounts_tls_volume),
    }
}

/// Keeps the listener protocol a running quorum was created with: TLS on
/// by default only for new quorums (`recorded` is `None`). When the spec
/// asks for the other protocol, `tls_enabled` is set to the recorded one
/// and the returned message says why (for a Warning Event): switching a
/// running quorum would roll pods one at a time onto a protocol the others
/// do not speak, and it would lose its majority mid-roll.
pub fn keep_tls_mode(tls_enabled: &mut bool, recorded: Option<bool>) -> Option<String> {
    let recorded = recorded?;
    if *tls_enabled == recorded {
        return None;
    }
    let (runs, asked) = if recorded {
        ("SSL", "PLAINTEXT")
    } else {
        ("PLAINTEXT", "SSL")
    };
    *tls_enabled = recorded;
    Some(format!(
        "the quorum runs its controller listener {runs} and stays {runs}: the spec asks for \
         {asked}, but rolling a running quorum from one to the other would lose its majority \
         mid-roll (a listener speaks one protocol); create a new quorum for {asked}"
    ))
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
    // An adopted static quorum (issue 22) starts, or after a lost status
    // starts again, at StaticQuorum: safe, as no pod is restarted in that
    // phase and UpdateFeatures kraft.version=1 at level 1 already is a no-op.
    let adoption_phase = kq.spec.adopt.as_ref().map(|_| AdoptionPhase::StaticQuorum);
    if let Some(r) = recorded {
        return Some(KraftQuorumStatus {
            cluster_id: Some(r.cluster_id.clone()),
            bootstrapped: r.bootstrapped,
            initial_voters: r.initial_voters.clone(),
            adoption_phase,
            ..status
        });
    }
    if let Some(adopt) = &kq.spec.adopt {
        // The static quorum runs already: its voters are the initial voters,
        // and it is bootstrapped (never a bootstrap flag on its volumes).
        kafka_uuid::parse(&adopt.cluster_id).ok()?;
        let mut initial_voters: Vec<InitialVoter> = adopt
            .voters
            .iter()
            .map(|v| InitialVoter {
                node_id: v.node_id,
                directory_id: v.directory_id.clone(),
            })
            .collect();
        initial_voters.sort_by_key(|v| v.node_id);
        return Some(KraftQuorumStatus {
            cluster_id: Some(adopt.cluster_id.clone()),
            bootstrapped: true,
            initial_voters,
            adoption_phase,
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
                adopt: None,
                recovery: Default::default(),
                backup: None,
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

    // Issue 22: an adopted static quorum keeps its cluster id and voters and
    // is bootstrapped from the start, so no volume gets a bootstrap flag.
    #[test]
    fn an_adopted_quorum_takes_its_identity_from_spec_adopt_and_starts_bootstrapped_and_static() {
        let mut quorum = kq(3, Some("MkU3OEVBNTcwNTJENDM2Qk"));
        quorum.spec.adopt = Some(crate::crd::AdoptSpec {
            cluster_id: "MkU3OEVBNTcwNTJENDM2Qk".into(),
            voters: [2, 0, 1]
                .iter()
                .map(|id| crate::crd::AdoptVoter {
                    node_id: *id,
                    directory_id: kafka_uuid::to_string(Uuid::from_u128(100 + *id as u128)),
                })
                .collect(),
        });
        let st = missing_identity(&quorum, None, &mut counter()).expect("identity");
        assert_eq!(st.cluster_id.as_deref(), Some("MkU3OEVBNTcwNTJENDM2Qk"));
        assert!(st.bootstrapped);
        assert_eq!(st.adoption_phase, Some(AdoptionPhase::StaticQuorum));
        let voters: Vec<(i32, String)> = st
            .initial_voters
            .iter()
            .map(|v| (v.node_id, v.directory_id.clone()))
            .collect();
        let expected: Vec<(i32, String)> = (0..3)
            .map(|id| (id, kafka_uuid::to_string(Uuid::from_u128(100 + id as u128))))
            .collect();
        assert_eq!(voters, expected);
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
    fn a_plaintext_quorum_of_an_older_operator_is_not_rolled_to_tls() {
        // Created before TLS: no annotation, no TLS volume; the spec's
        // default (`tls.enabled: true`) does not switch it.
        let none = BTreeMap::new();
        let mut tls = true;
        let why = keep_tls_mode(&mut tls, recorded_tls(&none, false)).expect("kept");
        assert!(!tls);
        assert!(why.contains("stays PLAINTEXT"), "{why}");
        // Recorded PLAINTEXT: the same, whatever the template.
        let plain = BTreeMap::from([(
            ANNOTATION_LISTENER_SECURITY.to_string(),
            "PLAINTEXT".to_string(),
        )]);
        let mut tls = true;
        assert!(keep_tls_mode(&mut tls, recorded_tls(&plain, true)).is_some());
        assert!(!tls);
    }

    #[test]
    fn a_tls_quorum_stays_tls_and_a_new_quorum_follows_the_spec() {
        let ssl = BTreeMap::from([(ANNOTATION_LISTENER_SECURITY.to_string(), "SSL".to_string())]);
        let mut tls = false;
        let why = keep_tls_mode(&mut tls, recorded_tls(&ssl, true)).expect("kept");
        assert!(tls && why.contains("stays SSL"), "{why}");
        // A TLS StatefulSet of this branch before the annotation: the volume.
        let mut tls = true;
        assert_eq!(
            keep_tls_mode(&mut tls, recorded_tls(&BTreeMap::new(), true)),
            None
        );
        assert!(tls);
        // No StatefulSet yet: the spec decides, TLS by default.
        let mut tls = true;
        assert_eq!(keep_tls_mode(&mut tls, None), None);
        assert!(tls);
        let mut tls = false;
        assert_eq!(keep_tls_mode(&mut tls, None), None);
        assert!(!tls);
        // An unknown value is not trusted.
        let odd = BTreeMap::from([(ANNOTATION_LISTENER_SECURITY.to_string(), "SASL".to_string())]);
        assert_eq!(recorded_tls(&odd, true), None);
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
