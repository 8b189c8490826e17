//! Observe (DESIGN 3.2 step 3): find the leader among the pods by asking
//! each for DescribeQuorum, and map the pods and the answer into the
//! planner's [`Input`](crate::planner::Input).
//!
//! [`describe`] is the only I/O here (through the pass's
//! [`QuorumSession`]); the mappings are pure. Nothing here decides what to do.

use std::net::{IpAddr, SocketAddr};

use k8s_openapi::api::{
    apps::v1::StatefulSet,
    core::v1::{ContainerStatus, Pod, PodCondition},
};
use tracing::debug;
use uuid::Uuid;

use crate::{
    build::statefulset::{CONTROLLER_CONTAINER, FORMAT_CONTAINER},
    crd::{ANNOTATION_CA_HASH, KraftQuorumStatus, LABEL_POD_INDEX},
    kafka_uuid,
    planner::{Input, Member, Observed, Pending, PodState},
    quorum::{QuorumDescription, QuorumSession, ReplicaState},
};

/// A pod's ordinal: the `apps.kubernetes.io/pod-index` label, else the
/// suffix of `<statefulset>-<ordinal>`.
pub fn ordinal(pod: &Pod) -> Option<i32> {
    let meta = &pod.metadata;
    if let Some(i) = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_POD_INDEX))
        .and_then(|v| v.parse().ok())
    {
        return Some(i);
    }
    meta.name.as_ref()?.rsplit_once('-')?.1.parse().ok()
}

/// The pod's condition of type `type_` (`Ready`, `PodScheduled`, …), if
/// its status has one.
fn pod_condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod_condition(pod, "Ready").is_some_and(|c| c.status == "True")
}

/// The pod's IP, if it has one and is not being deleted.
pub fn pod_ip(pod: &Pod) -> Option<&str> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    pod.status.as_ref()?.pod_ip.as_deref()
}

/// The planner's view of the pods: ordinal, readiness, and whether the pod
/// runs the StatefulSet's update revision (OnDelete leaves old pods alone
/// until the operator deletes them). Without a revision to compare (a new
/// StatefulSet), pods count as current.
pub fn pod_states(pods: &[Pod], sts: Option<&StatefulSet>) -> Vec<PodState> {
    let update_revision = sts
        .and_then(|s| s.status.as_ref())
        .and_then(|s| s.update_revision.as_deref());
    let mut out: Vec<PodState> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            let ordinal = ordinal(p)?;
            let revision = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("controller-revision-hash"))
                .map(String::as_str);
            let up_to_date = match (update_revision, revision) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            };
            Some(PodState {
                ordinal,
                ready: is_ready(p),
                up_to_date,
            })
        })
        .collect();
    out.sort_by_key(|p| p.ordinal);
    out
}

/// How far the StatefulSet's template has rolled out, for the CA rotation
/// (`pki::rotation`): the template's `ca-hash`, and whether the rollout
/// is settled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rollout {
    /// The pod template's [`ANNOTATION_CA_HASH`] value.
    pub template_ca_hash: Option<String>,
    /// The StatefulSet controller has seen the StatefulSet's latest
    /// generation, and each of its `spec.replicas` pods runs the update
    /// revision and is ready.
    pub settled: bool,
}

/// The [`Rollout`] of `sts` (none yet: not settled) with its `pods`.
pub fn rollout(sts: Option<&StatefulSet>, pods: &[Pod]) -> Rollout {
    let Some(sts) = sts else {
        return Rollout::default();
    };
    let spec = sts.spec.as_ref();
    let template_ca_hash = spec
        .and_then(|s| s.template.metadata.as_ref()?.annotations.as_ref())
        .and_then(|a| a.get(ANNOTATION_CA_HASH))
        .cloned();
    let want = spec.and_then(|s| s.replicas).unwrap_or(1);
    let status = sts.status.as_ref();
    let observed = match (
        status.and_then(|s| s.observed_generation),
        sts.metadata.generation,
    ) {
        (Some(seen), Some(generation)) => seen >= generation,
        _ => false,
    };
    let has_revision = status.and_then(|s| s.update_revision.as_ref()).is_some();
    let states = pod_states(pods, Some(sts));
    let settled = observed
        && has_revision
        && usize::try_from(want).is_ok_and(|n| states.len() == n)
        && states.iter().all(|p| p.ready && p.up_to_date);
    Rollout {
        template_ca_hash,
        settled,
    }
}

/// Whether pod `ordinal` shows that its volume was formatted: its `format`
/// init container ended with exit code 0 (now or in its last state), or its
/// controller container ever started (Kubernetes starts it only after every
/// init container succeeded).
fn pod_shows_formatted(pods: &[Pod], ordinal_: i32) -> bool {
    let exited_ok = |s: &ContainerStatus| {
        [s.state.as_ref(), s.last_state.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|st| st.terminated.as_ref())
            .any(|t| t.exit_code == 0)
    };
    let started = |s: &ContainerStatus| {
        s.restart_count > 0
            || s.state
                .as_ref()
                .is_some_and(|st| st.running.is_some() || st.terminated.is_some())
            || s.last_state
                .as_ref()
                .is_some_and(|st| st.terminated.is_some())
    };
    pods.iter()
        .filter(|p| ordinal(p) == Some(ordinal_))
        .filter_map(|p| p.status.as_ref())
        .any(|status| {
            let init = status.init_container_statuses.iter().flatten();
            let main = status.container_statuses.iter().flatten();
            init.filter(|s| s.name == FORMAT_CONTAINER).any(exited_ok)
                || main.filter(|s| s.name == CONTROLLER_CONTAINER).any(started)
        })
}

/// The initial voters of `unformatted` (node ids) that still show no sign of
/// a formatted volume, the set shrunk by this pass's observations
/// (docs/decisions.md D19). An id leaves it when its pod shows a formatted
/// volume, when the leader (`described`) names it as leader or has seen it
/// fetch (a log end offset or a fetch time), or when the leader's voter set
/// no longer holds it with its initial directory id (it was removed or
/// replaced: its initial entry must never be formatted again). Without an
/// answer from the leader only the pods count. Never adds an id.
pub fn still_unformatted(
    unformatted: &[i32],
    initial_voters: &[(i32, Uuid)],
    pods: &[Pod],
    described: Option<&QuorumDescription>,
) -> Vec<i32> {
    unformatted
        .iter()
        .copied()
        .filter(|id| !pod_shows_formatted(pods, *id))
        .filter(|id| {
            let Some(d) = described else {
                return true;
            };
            let Some((_, initial_dir)) = initial_voters.iter().find(|(v, _)| v == id) else {
                return false;
            };
            d.leader_id != *id
                && d.voters.iter().any(|r| {
                    r.node_id == *id
                        && r.directory_id == *initial_dir
                        && r.log_end_offset < 0
                        && r.last_fetch_timestamp_ms.is_none()
                })
        })
        .collect()
}

/// The planner's view of a DescribeQuorum answer.
pub fn observed(d: &QuorumDescription) -> Observed {
    let member = |r: &ReplicaState| Member {
        node_id: r.node_id,
        directory_id: r.directory_id,
        caught_up: d.is_caught_up(r),
        fetching: d.is_fetching(r),
    };
    Observed {
        leader_id: d.leader_id,
        voters: d.voters.iter().map(member).collect(),
        observers: d.observers.iter().map(member).collect(),
    }
}

/// The recorded change in planner form, with its age at `now_ms` (Unix ms).
/// A record whose directory id or time cannot be read is treated as timed out.
pub fn pending(status: &KraftQuorumStatus, now_ms: i64) -> Option<Pending> {
    let p = status.pending_change.as_ref()?;
    let since = p
        .since
        .parse::<k8s_openapi::jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .unwrap_or(i64::MIN / 2);
    Some(Pending {
        kind: p.kind,
        node_id: p.node_id,
        directory_id: kafka_uuid::parse(&p.directory_id).unwrap_or_default(),
        age_ms: now_ms.saturating_sub(since),
    })
}

/// Builds the planner input.
pub fn planner_input(
    desired_replicas: i32,
    statefulset_replicas: i32,
    status: &KraftQuorumStatus,
    bootstrapped: bool,
    quorum: Option<&QuorumDescription>,
    pods: &[PodState],
    now_ms: i64,
) -> Input {
    Input {
        desired_replicas,
        statefulset_replicas,
        bootstrapped,
        pending: pending(status, now_ms),
        quorum: quorum.map(observed),
        pods: pods.to_vec(),
    }
}

/// A `format` init container that stopped because its volume belongs to
/// another cluster (DESIGN 2.3: never reformatted): the pod name and message.
pub fn cluster_id_mismatch(pods: &[Pod]) -> Option<(String, String)> {
    pods.iter().find_map(|p| {
        let statuses = p.status.as_ref()?.init_container_statuses.as_ref()?;
        statuses.iter().find_map(|s| {
            let terminated = s
                .state
                .as_ref()
                .and_then(|st| st.terminated.as_ref())
                .or_else(|| s.last_state.as_ref().and_then(|st| st.terminated.as_ref()))?;
            let message = terminated.message.as_deref()?;
            (terminated.exit_code != 0 && message.to_lowercase().contains("cluster id")).then(
                || {
                    (
                        p.metadata.name.clone().unwrap_or_default(),
                        message.trim().to_string(),
                    )
                },
            )
        })
    })
}

/// Longest termination message kept for status and Events (bytes).
pub const MAX_TERMINATION_MESSAGE_BYTES: usize = 512;

/// Controller containers that are not running because their last run ended
/// in an error: `(ordinal, last non-empty line of the termination message)`,
/// by ordinal. The controller writes its one stop line to
/// `/dev/termination-log` (issue 21: a full volume, a disk refused at start),
/// and with `FallbackToLogsOnError` the log's tail stands in for it. A
/// container that runs again (even after a failed run) is not listed.
pub fn stopped_controllers(pods: &[Pod]) -> Vec<(i32, String)> {
    let mut out: Vec<(i32, String)> = pods
        .iter()
        .filter_map(|p| {
            let ordinal = ordinal(p)?;
            let statuses = p.status.as_ref()?.container_statuses.as_ref()?;
            let s = statuses.iter().find(|s| s.name == CONTROLLER_CONTAINER)?;
            let state = s.state.as_ref();
            if state.is_some_and(|st| st.running.is_some()) {
                return None;
            }
            let terminated = state
                .and_then(|st| st.terminated.as_ref())
                .or_else(|| s.last_state.as_ref().and_then(|st| st.terminated.as_ref()))?;
            if terminated.exit_code == 0 {
                return None;
            }
            let line = terminated
                .message
                .as_deref()?
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())?;
            Some((ordinal, truncate(line, MAX_TERMINATION_MESSAGE_BYTES)))
        })
        .collect();
    out.sort_by_key(|(ordinal, _)| *ordinal);
    out
}

/// Pods the scheduler has not placed: their `PodScheduled` condition is
/// `False`, with the kube-scheduler's reason (e.g. `Unschedulable`) and
/// message (e.g. "0/1 nodes are available: pod has unbound immediate
/// PersistentVolumeClaims."), its last verdict, which can lag what has
/// changed since. `(pod name, "reason: message")` by ordinal (pods without
/// one last); a condition without a reason reads `NotScheduled` (ours, not
/// the scheduler's). The whole string is cut at a character boundary to
/// [`MAX_TERMINATION_MESSAGE_BYTES`], the bound kept for every message
/// the operator copies from a pod into status. Pods being deleted are left
/// out. A wait on a node that has no pod running says why with this,
/// rather than only that the node is not caught up.
pub fn unscheduled_pods(pods: &[Pod]) -> Vec<(String, String)> {
    let mut out: Vec<(i32, String, String)> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            let c = pod_condition(p, "PodScheduled").filter(|c| c.status == "False")?;
            let reason = c.reason.as_deref().unwrap_or("NotScheduled");
            let why = match c.message.as_deref().map(str::trim) {
                Some(m) if !m.is_empty() => format!("{reason}: {m}"),
                _ => reason.to_string(),
            };
            Some((
                ordinal(p).unwrap_or(i32::MAX),
                p.metadata.name.clone().unwrap_or_default(),
                truncate(&why, MAX_TERMINATION_MESSAGE_BYTES),
            ))
        })
        .collect();
    out.sort_by_key(|(ordinal, _, _)| *ordinal);
    out.into_iter().map(|(_, name, why)| (name, why)).collect()
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The pods' controller addresses `ip:port` as bootstrap controllers, in
/// the order to try them: the last known leader first, then ready pods, then
/// the rest (by ordinal). Pods without an IP (or being deleted, or whose IP
/// does not parse) are left out.
pub fn bootstrap_controllers(pods: &[Pod], port: u16, last_leader: Option<i32>) -> Vec<SocketAddr> {
    let mut order: Vec<(&Pod, i32, IpAddr)> = pods
        .iter()
        .filter_map(|p| Some((p, ordinal(p)?, pod_ip(p)?.parse().ok()?)))
        .collect();
    order.sort_by_key(|(p, o, _)| (Some(*o) != last_leader, !is_ready(p), *o));
    order
        .into_iter()
        .map(|(_, _, ip)| SocketAddr::new(ip, port))
        .collect()
}

/// DescribeQuorum through the pass's session (which tries its bootstrap
/// controllers in order until the leader answers); `None` when none did.
pub async fn describe<S: QuorumSession>(session: &mut S) -> Option<QuorumDescription> {
    match session.describe_quorum().await {
        Ok(d) => Some(d),
        Err(e) => {
            debug!(error = %e, "describe quorum failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_yaml::from_str(yaml).expect("pod yaml")
    }

    #[test]
    fn unscheduled_pods_are_named_with_the_schedulers_reason_and_message() {
        let pods = [
            pod(
                "metadata: {name: q-4}\nstatus: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable, message: '0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. '}]}",
            ),
            pod(
                "metadata: {name: q-3}\nstatus: {phase: Pending, conditions: [{type: PodScheduled, status: 'False'}]}",
            ),
            pod(
                "metadata: {name: q-2}\nstatus: {phase: Running, conditions: [{type: PodScheduled, status: 'True'}, {type: Ready, status: 'False'}]}",
            ),
            pod(
                "metadata: {name: q-1, deletionTimestamp: '2026-12-07T06:53:11Z'}\nstatus: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable}]}",
            ),
            pod("metadata: {name: q-0}\nstatus: {phase: Pending}"),
        ];
        assert_eq!(
            unscheduled_pods(&pods),
            vec![
                ("q-3".to_string(), "NotScheduled".to_string()),
                (
                    "q-4".to_string(),
                    "Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
                        .to_string()
                ),
            ]
        );
        let long = pod(&format!(
            "metadata: {{name: q-5}}\nstatus: {{conditions: [{{type: PodScheduled, status: 'False', reason: Unschedulable, message: '{}'}}]}}",
            "é".repeat(400)
        ));
        // "Unschedulable: " (15 bytes) and 248 two-byte "é" fill 511 of the
        // 512 bytes; the 249th would not fit whole.
        let (_, why) = &unscheduled_pods(&[long])[0];
        assert_eq!(why.len(), 511);
        assert!(why.starts_with("Unschedulable: é") && why.ends_with('é'));
    }

    #[test]
    fn pods_are_current_when_they_run_the_update_revision() {
        let sts: StatefulSet = serde_yaml::from_str(
            "metadata: {name: kq}\nstatus: {replicas: 2, updateRevision: kq-new}",
        )
        .expect("sts");
        let pods = [
            pod(
                "metadata: {name: kq-1, labels: {controller-revision-hash: kq-old}}\nstatus: {conditions: [{type: Ready, status: 'True'}]}",
            ),
            pod(
                "metadata: {name: kq-0, labels: {controller-revision-hash: kq-new, apps.kubernetes.io/pod-index: '0'}}\nstatus: {conditions: [{type: Ready, status: 'False'}]}",
            ),
        ];
        assert_eq!(
            pod_states(&pods, Some(&sts)),
            vec![
                PodState {
                    ordinal: 0,
                    ready: false,
                    up_to_date: true
                },
                PodState {
                    ordinal: 1,
                    ready: true,
                    up_to_date: false
                },
            ]
        );
    }

    #[test]
    fn a_rollout_is_settled_once_the_latest_template_runs_on_every_ready_pod() {
        let sts = |generation: i64, seen: i64, replicas: i32| -> StatefulSet {
            serde_yaml::from_str(&format!(
                "metadata: {{name: kq, generation: {generation}}}\nspec:\n  replicas: {replicas}\n  selector: {{}}\n  serviceName: kq\n  template:\n    metadata: {{annotations: {{kraft.krabka.io/ca-hash: h1}}}}\nstatus: {{replicas: {replicas}, observedGeneration: {seen}, updateRevision: kq-new}}"
            ))
            .expect("sts")
        };
        let p = |i: i32, rev: &str, ready: bool| {
            pod(&format!(
                "metadata: {{name: kq-{i}, labels: {{controller-revision-hash: {rev}}}}}\nstatus: {{conditions: [{{type: Ready, status: '{}'}}]}}",
                if ready { "True" } else { "False" }
            ))
        };
        let current = [p(0, "kq-new", true), p(1, "kq-new", true)];
        // (statefulset, pods) -> settled
        let table = [
            (Some(sts(2, 2, 2)), current.to_vec(), true),
            // The StatefulSet controller has not seen the new template yet.
            (Some(sts(3, 2, 2)), current.to_vec(), false),
            // A pod on the old revision, a pod not ready, a pod missing.
            (
                Some(sts(2, 2, 2)),
                vec![p(0, "kq-new", true), p(1, "kq-old", true)],
                false,
            ),
            (
                Some(sts(2, 2, 2)),
                vec![p(0, "kq-new", true), p(1, "kq-new", false)],
                false,
            ),
            (Some(sts(2, 2, 2)), vec![p(0, "kq-new", true)], false),
            (None, current.to_vec(), false),
        ];
        for (i, (s, pods, want)) in table.into_iter().enumerate() {
            let r = rollout(s.as_ref(), &pods);
            assert_eq!(r.settled, want, "row {i}");
            if s.is_some() {
                assert_eq!(r.template_ca_hash.as_deref(), Some("h1"), "row {i}");
            }
        }
    }

    #[test]
    fn bootstrap_controllers_start_at_the_last_leader_then_ready_pods() {
        let pods = [
            pod(
                "metadata: {name: kq-0}\nstatus: {podIP: 10.0.0.10, conditions: [{type: Ready, status: 'False'}]}",
            ),
            pod(
                "metadata: {name: kq-1}\nstatus: {podIP: 10.0.0.11, conditions: [{type: Ready, status: 'True'}]}",
            ),
            pod(
                "metadata: {name: kq-2}\nstatus: {podIP: 'fd00::12', conditions: [{type: Ready, status: 'True'}]}",
            ),
            pod("metadata: {name: kq-3}\nstatus: {conditions: [{type: Ready, status: 'True'}]}"),
        ];
        let addrs: Vec<String> = bootstrap_controllers(&pods, 9093, Some(2))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            addrs,
            ["[fd00::12]:9093", "10.0.0.11:9093", "10.0.0.10:9093"]
        );
    }

    #[test]
    fn a_controller_that_stopped_on_a_full_volume_is_reported_with_its_stop_line() {
        // Issue 21: the controller's stop line, in its termination message.
        let crashing = pod(
            "metadata: {name: kq-2}\nstatus:\n  containerStatuses:\n  - name: controller\n    image: x\n    imageID: ''\n    ready: false\n    restartCount: 4\n    state: {waiting: {reason: CrashLoopBackOff}}\n    lastState: {terminated: {exitCode: 1, message: \"starting\\nkraft-controller run: /data: 0 bytes free of 1048576; stopping\\n\"}}",
        );
        let recovered = pod(
            "metadata: {name: kq-1}\nstatus:\n  containerStatuses:\n  - name: controller\n    image: x\n    imageID: ''\n    ready: true\n    restartCount: 1\n    state: {running: {}}\n    lastState: {terminated: {exitCode: 1, message: 'kraft-controller run: old'}}",
        );
        let clean_exit = pod(
            "metadata: {name: kq-0}\nstatus:\n  containerStatuses:\n  - name: controller\n    image: x\n    imageID: ''\n    ready: false\n    restartCount: 0\n    state: {terminated: {exitCode: 0, message: 'bye'}}",
        );
        assert_eq!(
            stopped_controllers(&[crashing, recovered, clean_exit]),
            vec![(
                2,
                "kraft-controller run: /data: 0 bytes free of 1048576; stopping".to_string()
            )]
        );
    }

    #[test]
    fn a_long_termination_message_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_TERMINATION_MESSAGE_BYTES);
        let cut = truncate(&long, MAX_TERMINATION_MESSAGE_BYTES - 1);
        assert!(cut.len() < MAX_TERMINATION_MESSAGE_BYTES);
        assert!(cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn a_format_that_found_another_cluster_is_reported() {
        let pods = [pod(
            "metadata: {name: kq-2}\nstatus:\n  initContainerStatuses:\n  - name: format\n    image: x\n    imageID: ''\n    ready: false\n    restartCount: 3\n    state: {terminated: {exitCode: 1, message: 'cluster id in meta.properties is AAA, expected BBB'}}",
        )];
        let (name, message) = cluster_id_mismatch(&pods).expect("mismatch");
        assert_eq!(name, "kq-2");
        assert!(message.contains("expected BBB"));
    }
}
