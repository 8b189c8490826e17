//! An initial voter whose pod is created only after the first leader
//! (docs/decisions.md D19; seen on the real node, where pods start at
//! different speeds): it must format with the initial voter list and join
//! with its initial directory id, not be replaced as a lost disk.

use k8s_openapi::api::{
    apps::v1::StatefulSet,
    core::v1::{ConfigMap, Pod, ResourceQuota},
};
use kraft_e2e::{Error, Must};
use kube::api::{Patch, PatchParams, PostParams};

use super::*;

/// How long the held-back pod's absence is checked for, and how long the
/// StatefulSet gets to create it once allowed.
const POD_TIMEOUT: Duration = Duration::from_secs(120);

/// A ResourceQuota of two pods holds one initial voter's pod back (the
/// StatefulSet controller cannot create it) while the other two elect the
/// first leader; then the quota is lifted. The held-back pod must format
/// with `--initial-controllers-for=<its id>/…`, and the quorum must become
/// Ready with that voter's initial directory id and no voter change at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initial_voter_created_after_the_first_leader_joins_with_its_initial_directory_id() {
    let (_client, ns, _operator) = setup("e2e-rs-late-voter").await;
    let quotas = ns.api::<ResourceQuota>();
    let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "two-pods"},
        "spec": {"hard": {"pods": "2"}},
    }))
    .map_err(|e| Error::Invalid(e.to_string()))
    .must("the quota");
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .map_err(Error::kube("create quota two-pods"))
        .must("create the two-pod quota");
    // The quota controller must have counted the namespace before the
    // admission plugin enforces it (status.hard set).
    wait::until(
        &quotas,
        "two-pods",
        "the quota counted",
        POD_TIMEOUT,
        |q: Option<&ResourceQuota>| {
            q.and_then(|q| q.status.as_ref()?.hard.as_ref())
                .is_some_and(|h| h.contains_key("pods"))
        },
        |q| format!("{:?}", q.status),
    )
    .await
    .must("the quota counted");

    quorum::create_minimal(&ns, Q, 3)
        .await
        .must("create KraftQuorum q");
    wait::poll(
        "the first leader (status.bootstrapped)",
        READY_TIMEOUT,
        || async {
            let status = quorum::status(&ns, Q).await?;
            Ok(status.bootstrapped.then_some(()))
        },
    )
    .await
    .must("two of the three initial voters elect the first leader");
    // The StatefulSet controller creates q-0 first, then q-1 and q-2 at
    // once: the quota refuses one of those two.
    let pods = ns.api::<Pod>();
    let mut held = Vec::new();
    for ordinal in 0..3 {
        let name = format!("q-{ordinal}");
        let pod = pods
            .get_opt(&name)
            .await
            .map_err(Error::kube(format!("get pod {name}")))
            .must("read the pods");
        if pod.is_none() {
            held.push(ordinal);
        }
    }
    let [held] = held[..] else {
        panic!("the quota should have held back exactly one pod, not {held:?}");
    };
    let held_pod = format!("q-{held}");
    // The ConfigMap now gives the held-back node alone the initial list (the
    // operator records it unformatted in the bootstrap pass and applies the
    // mode in the next one).
    let configmaps = ns.api::<ConfigMap>();
    let mode = wait::poll(
        "the format mode for the held-back node",
        POD_TIMEOUT,
        || async {
            let mode = format_mode(&configmaps).await?;
            Ok(mode
                .starts_with("--initial-controllers-for=")
                .then_some(mode))
        },
    )
    .await
    .must("the format mode names the held-back node");
    assert!(
        mode.starts_with(&format!("--initial-controllers-for={held}/0@")),
        "format mode {mode}, held back {held_pod}"
    );

    quotas
        .delete("two-pods", &Default::default())
        .await
        .map_err(Error::kube("delete quota two-pods"))
        .must("lift the quota");
    // The StatefulSet controller retries with a growing back-off; a change to
    // the StatefulSet makes it sync now (any user's `kubectl annotate`).
    let nudge =
        serde_json::json!({"metadata": {"annotations": {"kraftwerk.test/quota-lifted": "true"}}});
    ns.api::<StatefulSet>()
        .patch(Q, &PatchParams::default(), &Patch::Merge(&nudge))
        .await
        .map_err(Error::kube("annotate statefulset q"))
        .must("annotate the StatefulSet");
    wait::until(
        &pods,
        &held_pod,
        "the held-back pod created",
        POD_TIMEOUT,
        |p: Option<&Pod>| p.is_some(),
        |p| format!("{:?}", p.status),
    )
    .await
    .must("the held-back pod created");

    wait::ready(&ns, Q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    voters_match(&ns, 3).await;
    let kq = quorum::get(&ns, Q).await.must("read q");
    let Some(status) = kq.status.as_ref() else {
        panic!("q has no status");
    };
    let initial = status
        .initial_voters
        .iter()
        .find(|v| v.node_id == held)
        .map(|v| v.directory_id.clone());
    assert_eq!(
        quorum::voter_dir(&kq, held),
        initial,
        "voter {held} joined with its initial directory id"
    );
    assert_eq!(
        voter_events(&ns, "VoterRemoved").await,
        [0; 0],
        "no voter removed"
    );
    assert_eq!(
        voter_events(&ns, "VoterAdded").await,
        [0; 0],
        "no voter added"
    );
    // Once the held-back pod has formatted, nobody gets the initial list.
    wait::poll(
        "the format mode back to --no-initial-controllers",
        POD_TIMEOUT,
        || async {
            let mode = format_mode(&configmaps).await?;
            Ok((mode == "--no-initial-controllers").then_some(()))
        },
    )
    .await
    .must("the format mode back to --no-initial-controllers");
}

/// The `format-mode` of q's ConfigMap (`""` when it has none).
async fn format_mode(configmaps: &kube::Api<ConfigMap>) -> kraft_e2e::Result<String> {
    let cm = configmaps
        .get(Q)
        .await
        .map_err(Error::kube("get configmap q"))?;
    Ok(cm
        .data
        .and_then(|d| d.get("format-mode").cloned())
        .unwrap_or_default())
}
