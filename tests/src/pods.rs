//! A quorum's pods and StatefulSet during a change: a pod's identity (its
//! uid), the leader's pod deleted, waiting for a deleted pod's replacement to be Ready, and waiting for a rolling
//! restart to reach every pod. Must not change anything.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod};

use kraft_operator::crd::KraftQuorum;

use crate::{Error, Result, TestNamespace, describe, quorum, wait};

/// The pod label a StatefulSet sets to the revision a pod runs.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The uid of pod `name`.
///
/// Errors: [`Error::Kube`] (404 included), [`Error::Invalid`] when it has
/// no uid.
pub async fn uid(ns: &TestNamespace, name: &str) -> Result<String> {
    ns.api::<Pod>()
        .get(name)
        .await
        .map_err(Error::kube(format!("get pod {}/{name}", ns.name())))?
        .metadata
        .uid
        .ok_or_else(|| Error::Invalid(format!("pod {}/{name} has no uid", ns.name())))
}

/// Whether the pod's condition Ready is True.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Waits up to `timeout` until pod `name` exists with a uid other than
/// `old_uid` and is Ready: its replacement has started and passed its
/// readiness probe (for a controller: `/readyz`, it follows a leader).
///
/// Errors: as [`wait::until`].
pub async fn wait_replaced_and_ready(
    ns: &TestNamespace,
    name: &str,
    old_uid: &str,
    timeout: Duration,
) -> Result<()> {
    let old = old_uid.to_owned();
    wait::until(
        &ns.api::<Pod>(),
        name,
        &format!("pod {name} replaced and Ready"),
        timeout,
        move |p: Option<&Pod>| {
            p.is_some_and(|p| p.metadata.uid.as_deref() != Some(&old) && is_ready(p))
        },
        |p| format!("uid {:?} ready {}", p.metadata.uid, is_ready(p)),
    )
    .await
    .map(drop)
}

/// The StatefulSet `name`'s `status.updateRevision`, if it has one.
///
/// Errors: [`Error::Kube`].
pub async fn update_revision(ns: &TestNamespace, name: &str) -> Result<Option<String>> {
    Ok(ns
        .api::<StatefulSet>()
        .get(name)
        .await
        .map_err(Error::kube(format!("get statefulset {}/{name}", ns.name())))?
        .status
        .and_then(|s| s.update_revision))
}

/// Waits up to `timeout` until a change to the KraftQuorum `name` is rolled
/// out (run.sh's `rolled`): its StatefulSet's update revision is no longer
/// `old_revision`, all `n` pods carry the new one in [`REVISION_LABEL`]
/// and are Ready, and the quorum is Ready with `n` voters. Returns the new revision.
///
/// Errors: [`Error::Timeout`] with the revisions last seen, as
/// [`wait::ready`].
pub async fn wait_rolled(
    ns: &TestNamespace,
    name: &str,
    old_revision: &str,
    n: usize,
    timeout: Duration,
) -> Result<String> {
    let started = tokio::time::Instant::now();
    let what = format!("the change to {}/{name} rolled out to {n} pods", ns.name());
    let revision = wait::poll(&what, timeout, || async {
        let want = update_revision(ns, name)
            .await?
            .filter(|r| r != old_revision)
            .ok_or_else(|| Error::Invalid(format!("update revision still {old_revision}")))?;
        let have: Vec<(String, bool)> = quorum::pods(ns, name)
            .await?
            .iter()
            .map(|p| {
                let revision = p
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(REVISION_LABEL));
                (revision.cloned().unwrap_or_default(), is_ready(p))
            })
            .collect();
        if have.len() == n && have.iter().all(|(r, ready)| *r == want && *ready) {
            Ok(Some(want))
        } else {
            Err(Error::Invalid(format!(
                "pods (revision, ready) {have:?}, want {n} Ready on {want}"
            )))
        }
    })
    .await?;
    // The quorum gets at least half a minute to report it after the last pod.
    let rest = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_secs(30));
    wait::ready(ns, name, n, rest).await?;
    Ok(revision)
}

/// What [`delete_leader`] saw.
#[derive(Debug)]
pub struct LeaderDeleted {
    /// The node id whose pod was deleted.
    pub leader: i32,
    /// The leader epoch before.
    pub epoch: i32,
    /// The status' voters' directory ids before, in status order.
    pub directory_ids: Vec<String>,
    /// The KraftQuorum once Ready again after the election.
    pub after: KraftQuorum,
}

/// Deletes the pod of the leader of the KraftQuorum `name` of `voters`
/// voters and waits, each step up to `timeout`, until its replacement is
/// Ready and the quorum Ready again after a new election
/// ([`wait::ready_after_election`]). The leader and epoch are
/// DescribeQuorum's once it agrees with the status
/// ([`describe::wait_voters_match`]), so a status that lags a change just
/// made cannot name a follower.
///
/// Errors: as [`describe::wait_voters_match`], [`uid`],
/// [`wait_replaced_and_ready`] and [`wait::ready_after_election`];
/// [`Error::Kube`] when the pod cannot be deleted.
pub async fn delete_leader(
    ns: &TestNamespace,
    name: &str,
    voters: usize,
    timeout: Duration,
) -> Result<LeaderDeleted> {
    let described = describe::wait_voters_match(ns, name, voters, timeout).await?;
    let (leader, epoch) = (described.leader_id, described.leader_epoch);
    let directory_ids = quorum::directory_ids(&quorum::get(ns, name).await?);
    let pod = format!("{name}-{leader}");
    let old = uid(ns, &pod).await?;
    ns.api::<Pod>()
        .delete(&pod, &Default::default())
        .await
        .map_err(Error::kube(format!("delete pod {}/{pod}", ns.name())))?;
    wait_replaced_and_ready(ns, &pod, &old, timeout).await?;
    let after = wait::ready_after_election(ns, name, voters, epoch, timeout).await?;
    Ok(LeaderDeleted {
        leader,
        epoch,
        directory_ids,
        after,
    })
}
