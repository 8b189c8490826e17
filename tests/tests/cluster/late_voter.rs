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

/// A ResourceQuota of two pods holds q-2 back (the StatefulSet controller
/// cannot create it) while q-0 and q-1 elect the first leader; then the
/// quota is lifted. q-2 must format with `--initial-controllers-for=2/…`,
/// and the quorum must become Ready with voter 2's initial directory id and
/// no voter change at all.
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
    .must("q-0 and q-1 elect the first leader");
    let pods = ns.api::<Pod>();
    assert!(
        pods.get_opt("q-2")
            .await
            .map_err(Error::kube("get pod q-2"))
            .must("read pod q-2")
            .is_none(),
        "the quota should have held q-2 back"
    );
    // The ConfigMap now gives node 2 alone the initial list (the operator
    // records it unformatted in the bootstrap pass and applies the mode in
    // the next one).
    let configmaps = ns.api::<ConfigMap>();
    let mode = wait::poll("the format mode for node 2", POD_TIMEOUT, || async {
        let cm = configmaps
            .get(Q)
            .await
            .map_err(Error::kube("get configmap q"))?;
        let mode = cm
            .data
            .and_then(|d| d.get("format-mode").cloned())
            .unwrap_or_default();
        Ok(mode
            .starts_with("--initial-controllers-for=")
            .then_some(mode))
    })
    .await
    .must("the format mode names node 2");
    assert!(
        mode.starts_with("--initial-controllers-for=2/0@"),
        "format mode {mode}"
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
        "q-2",
        "pod q-2 created",
        POD_TIMEOUT,
        |p: Option<&Pod>| p.is_some(),
        |p| format!("{:?}", p.status),
    )
    .await
    .must("pod q-2 created");

    wait::ready(&ns, Q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    voters_match(&ns, 3).await;
    let kq = quorum::get(&ns, Q).await.must("read q");
    let Some(status) = kq.status.as_ref() else {
        panic!("q has no status");
    };
    let initial_2 = status
        .initial_voters
        .iter()
        .find(|v| v.node_id == 2)
        .map(|v| v.directory_id.clone());
    assert_eq!(
        quorum::voter_dir(&kq, 2),
        initial_2,
        "voter 2 joined with its initial directory id"
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
    // Once q-2 has formatted, nobody gets the initial list any more.
    wait::poll(
        "the format mode back to --no-initial-controllers",
        POD_TIMEOUT,
        || async {
            let cm = configmaps
                .get(Q)
                .await
                .map_err(Error::kube("get configmap q"))?;
            let mode = cm.data.and_then(|d| d.get("format-mode").cloned());
            Ok((mode.as_deref() == Some("--no-initial-controllers")).then_some(()))
        },
    )
    .await
    .must("the format mode back to --no-initial-controllers");
}
