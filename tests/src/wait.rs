//! Waiting for conditions with a timeout, never for a fixed time (STYLE,
//! "Tests"): [`until`] on a watch (kube-rs `await_condition` under
//! `tokio::time::timeout`) for anything an object's own state tells, and
//! [`poll`] for what only a call can tell (DescribeQuorum, a process). On a
//! timeout the error says what was waited for and what was seen last.

use std::{fmt::Debug, future::Future, time::Duration};

use kraft_operator::crd::{KraftQuorum, KraftQuorumStatus};
use kube::{
    Api, Resource,
    runtime::wait::{Condition, await_condition},
};
use serde::de::DeserializeOwned;

use crate::{Error, Result, TestNamespace};

/// How often [`poll`] asks again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Waits until `cond` holds for the object `name` of `api`, up to `timeout`;
/// returns the object as it was when it held (`None`: it held for an
/// absent object, as `is_deleted` does).
///
/// Errors: [`Error::Timeout`] (`what`, and the object's last state as
/// `describe` renders it), [`Error::Invalid`] when the watch fails.
pub async fn until<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    cond: impl Condition<K>,
    describe: impl Fn(&K) -> String,
) -> Result<Option<K>>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(k)) => Ok(k),
        Ok(Err(e)) => Err(Error::Invalid(format!("watch {name} for {what}: {e}"))),
        Err(_) => {
            let last = match api.get_opt(name).await {
                Ok(Some(k)) => describe(&k),
                Ok(None) => "absent".into(),
                Err(e) => format!("unreadable: {e}"),
            };
            Err(Error::Timeout {
                what: what.into(),
                after: timeout,
                last: Some(last),
            })
        }
    }
}

/// Calls `check` every [`POLL_INTERVAL`] until it returns `Ok(Some(t))`, up
/// to `timeout`. `Ok(None)` and errors mean "not yet"; the last error or
/// the last `Ok(None)` note is reported on a timeout.
///
/// Errors: [`Error::Timeout`] naming `what` and the last error seen.
pub async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = None;
    loop {
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(remaining, check()).await {
            Ok(Ok(Some(t))) => return Ok(t),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => last = Some(e.to_string()),
            Err(_) => {}
        }
        if tokio::time::Instant::now() + POLL_INTERVAL > deadline {
            return Err(Error::Timeout {
                what: what.into(),
                after: timeout,
                last,
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// The status condition `type_`'s status (`True`, `False`, `Unknown`), if
/// the KraftQuorum has it.
pub fn condition<'a>(status: &'a KraftQuorumStatus, type_: &str) -> Option<&'a str> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.as_str())
}

/// Whether `kq`'s condition Degraded is True with `reason`
/// (`degraded_because` of run.sh).
pub fn degraded_because(kq: &KraftQuorum, reason: &str) -> bool {
    kq.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == "Degraded" && c.status == "True" && c.reason == reason)
    })
}

/// Whether `kq` is Ready with `voters` voters: condition Ready True,
/// `status.voters` of that many entries, `status.readyReplicas` equal to
/// it and no `status.pendingChange` (`is_ready NS NAME N` of lib.sh).
pub fn is_ready_with(kq: &KraftQuorum, voters: usize) -> bool {
    let Some(s) = kq.status.as_ref() else {
        return false;
    };
    condition(s, "Ready") == Some("True")
        && s.voters.len() == voters
        && usize::try_from(s.ready_replicas).is_ok_and(|r| r == voters)
        && s.pending_change.is_none()
}

/// A one-line summary of a KraftQuorum's status for timeout messages.
pub fn summary(kq: &KraftQuorum) -> String {
    let Some(s) = kq.status.as_ref() else {
        return "no status".into();
    };
    let conditions: Vec<String> = s
        .conditions
        .iter()
        .map(|c| format!("{}={}({})", c.type_, c.status, c.reason))
        .collect();
    let voters: Vec<String> = s.voters.iter().map(|v| v.node_id.to_string()).collect();
    format!(
        "spec.replicas {} readyReplicas {} voters [{}] leader {:?} epoch {:?} pendingChange {:?} {}",
        kq.spec.replicas,
        s.ready_replicas,
        voters.join(","),
        s.leader_id,
        s.leader_epoch,
        s.pending_change,
        conditions.join(" ")
    )
}

/// Waits up to `timeout` until the KraftQuorum `name` is Ready with
/// `voters` voters ([`is_ready_with`]); returns it as it was then.
///
/// Errors: as [`until`].
pub async fn ready(
    ns: &TestNamespace,
    name: &str,
    voters: usize,
    timeout: Duration,
) -> Result<KraftQuorum> {
    let what = format!("{}/{name} Ready with {voters} voters", ns.name());
    let kq = until(
        &ns.api::<KraftQuorum>(),
        name,
        &what,
        timeout,
        move |k: Option<&KraftQuorum>| k.is_some_and(|k| is_ready_with(k, voters)),
        summary,
    )
    .await?;
    kq.ok_or_else(|| Error::Invalid(format!("{what}: the KraftQuorum is gone")))
}

/// Waits up to `timeout` until the KraftQuorum `name` satisfies `cond`.
///
/// Errors: as [`until`], also when the KraftQuorum is gone.
pub async fn quorum(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    timeout: Duration,
    cond: impl Fn(&KraftQuorum) -> bool + Send + 'static,
) -> Result<KraftQuorum> {
    let kq = until(
        &ns.api::<KraftQuorum>(),
        name,
        what,
        timeout,
        move |k: Option<&KraftQuorum>| k.is_some_and(&cond),
        summary,
    )
    .await?;
    kq.ok_or_else(|| Error::Invalid(format!("{what}: the KraftQuorum is gone")))
}

/// Waits up to `timeout` until the KraftQuorum `name` is Ready with
/// `voters` voters under a leader epoch greater than `epoch`: a change
/// that took its leader away is over only after a new election (before
/// it, the status may still say Ready from before the change).
///
/// Errors: as [`quorum`].
pub async fn ready_after_election(
    ns: &TestNamespace,
    name: &str,
    voters: usize,
    epoch: i32,
    timeout: Duration,
) -> Result<KraftQuorum> {
    quorum(
        ns,
        name,
        &format!("{voters} voters Ready under a leader epoch past {epoch}"),
        timeout,
        move |kq| {
            is_ready_with(kq, voters)
                && kq.status.as_ref().and_then(|s| s.leader_epoch) > Some(epoch)
        },
    )
    .await
}
