//! Quorum-loss recovery in the reconcile pass (issue 26): keeps
//! `status.recovery` (each caught-up voter's claim uid, since when no leader
//! answered), asks [`planner::quorum_loss`] for the step, and carries it
//! out: the condition `QuorumLost` (nothing touched), or the recovery
//! (StatefulSet to 0, the recover Job on the survivor's claim, StatefulSet
//! back; the membership planner then re-adds the others as new voters),
//! each step recorded in status before it is taken and announced by an Event.
//!
//! The bookkeeping ([`note_observation`], [`loss_input`], [`held_replicas`],
//! [`job_state`]) is pure; [`run`] is the thin I/O around it. It must not
//! decide (the planner does) nor build objects (`build::recovery_job`), and
//! it never deletes a PersistentVolumeClaim.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::{
        batch::v1::Job,
        core::v1::{PersistentVolumeClaim, Pod},
    },
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PropagationPolicy},
    runtime::events::EventType,
};
use tracing::info;

use super::{
    BUSY_REQUEUE, Context, Error, STEADY_REQUEUE, apply,
    events::{EventSpec, publish},
    kube_err,
    status::{DEGRADED, Outcome},
};
use crate::{
    build::recovery_job::{build_recovery_job, claim_name, job_name},
    crd::{
        ANNOTATION_RECOVER_QUORUM_LOSS, KraftQuorum, KraftQuorumStatus, RecoveryPhase,
        RecoveryStatus, RetentionPolicy, VoterVolume,
    },
    planner::quorum_loss::{self, JobState, LossInput, Step, StepInput},
    quorum::QuorumClient,
    validate::ValidatedQuorum,
};

/// Condition and Event reason: a quorum loss the operator does not repair.
pub const QUORUM_LOST: &str = "QuorumLost";
/// Condition and Event reason: the operator's recovery is under way.
pub const RECOVERING: &str = "RecoveringFromQuorumLoss";
/// Condition and Event reason: the recover Job failed.
pub const RECOVERY_FAILED: &str = "QuorumLossRecoveryFailed";
/// Event reason: the recovered quorum has a leader again.
pub const RECOVERED: &str = "QuorumRecovered";

/// A voter as this pass sees it: `(node id, directory id, caught up)`.
pub type VoterView = (i32, String, bool);

/// The ordinals whose claim this pass must read: with a leader, each
/// caught-up voter not recorded with its current directory id yet; without
/// one, every voter once no leader answered for `after_ms` (detection);
/// otherwise none (a steady quorum costs no request).
pub fn claims_to_read(
    rec: &RecoveryStatus,
    leader: bool,
    voters: &[VoterView],
    no_leader_ms: Option<i64>,
    after_ms: i64,
) -> Vec<i32> {
    if leader {
        return voters
            .iter()
            .filter(|(id, dir, caught_up)| {
                *caught_up
                    && !rec
                        .volumes
                        .iter()
                        .any(|v| v.node_id == *id && &v.directory_id == dir)
            })
            .map(|(id, _, _)| *id)
            .collect();
    }
    if no_leader_ms.is_some_and(|ms| ms >= after_ms) {
        return voters.iter().map(|(id, _, _)| *id).collect();
    }
    Vec::new()
}

/// Updates the bookkeeping of `rec` from this pass: with a leader
/// (`leader`), forget `noLeaderSince`, drop the records of ids no longer
/// voters, and record the claim uid of each caught-up voter whose claim
/// was read (`claims`) with its directory id; without one, note `now` as
/// the start of the leaderless time unless already noted.
pub fn note_observation(
    rec: &mut RecoveryStatus,
    leader: bool,
    voters: &[VoterView],
    claims: &BTreeMap<i32, String>,
    now: Timestamp,
) {
    if !leader {
        rec.no_leader_since.get_or_insert_with(|| now.to_string());
        return;
    }
    rec.no_leader_since = None;
    rec.volumes
        .retain(|v| voters.iter().any(|(id, _, _)| *id == v.node_id));
    for (id, dir, caught_up) in voters {
        let Some(uid) = claims.get(id).filter(|_| *caught_up) else {
            continue;
        };
        let record = VoterVolume {
            node_id: *id,
            directory_id: dir.clone(),
            claim_uid: uid.clone(),
        };
        match rec.volumes.iter_mut().find(|v| v.node_id == *id) {
            Some(v) => *v = record,
            None => rec.volumes.push(record),
        }
    }
    rec.volumes.sort_by_key(|v| v.node_id);
}

/// How long (ms) no leader answered at `now_ms` (Unix ms), from
/// `status.recovery.noLeaderSince`; `None` while a leader answers. A time
/// that does not parse counts from now.
pub fn no_leader_ms(status: &KraftQuorumStatus, now_ms: i64) -> Option<i64> {
    if status.leader_id.is_some() {
        return None;
    }
    let since = status.recovery.no_leader_since.as_deref()?;
    let since = since
        .parse::<Timestamp>()
        .map_or(now_ms, |t| t.as_millisecond());
    Some(now_ms.saturating_sub(since))
}

/// The detection input from `status`, the `claims` read and `now_ms`. A
/// volume recorded under a directory id the voter no longer has (the voter
/// was replaced and its new volume not recorded yet) is left out: it says
/// nothing about the new volume, which may hold committed records.
pub fn loss_input(
    status: &KraftQuorumStatus,
    after_ms: i64,
    claims: &BTreeMap<i32, String>,
    now_ms: i64,
) -> LossInput {
    LossInput {
        voters: status.voters.iter().map(|v| v.node_id).collect(),
        recorded: status
            .recovery
            .volumes
            .iter()
            .filter(|v| {
                status
                    .voters
                    .iter()
                    .any(|s| s.node_id == v.node_id && s.directory_id == v.directory_id)
            })
            .map(|v| (v.node_id, v.claim_uid.clone()))
            .collect(),
        claims: claims.clone(),
        no_leader_ms: no_leader_ms(status, now_ms),
        after_ms,
    }
}

/// Whether a detected quorum loss may be recovered: with
/// `spec.recovery.allowQuorumLossRecovery` (`allow`), or with an
/// [`ANNOTATION_RECOVER_QUORUM_LOSS`] value (`annotation`) no recovery has
/// started for yet (`rec.request`).
pub fn recovery_allowed(allow: bool, annotation: Option<&str>, rec: &RecoveryStatus) -> bool {
    allow || annotation.is_some_and(|a| rec.request.as_deref() != Some(a))
}

/// The StatefulSet size a recorded phase imposes on this pass's apply:
/// 0 while stopping and recovering, `spec.replicas` once starting; `None`
/// outside a recovery.
pub fn held_replicas(rec: &RecoveryStatus, spec_replicas: i32) -> Option<i32> {
    match rec.phase? {
        RecoveryPhase::Stopping | RecoveryPhase::Recovering => Some(0),
        RecoveryPhase::Starting => Some(spec_replicas),
    }
}

/// Holds `q`'s StatefulSet at `replicas` for a recovery, its claims
/// retained whatever `spec.storage.onScaleDown` says: under the
/// StatefulSet's `persistentVolumeClaimRetentionPolicy.whenScaled: Delete`
/// Kubernetes deletes the claim of every pod a scale-down removes, so the
/// scale to 0 would delete the survivor's claim with the others.
pub fn hold(q: &mut ValidatedQuorum, replicas: i32) {
    q.statefulset_replicas = replicas;
    q.storage.on_scale_down = RetentionPolicy::Retain;
}

/// The state of the recover Job `job` (none: [`JobState::Absent`]); a
/// failure's message is `pod_message` (its pod's termination message) when
/// known, else the Job's `Failed` condition message.
pub fn job_state(job: Option<&Job>, pod_message: Option<&str>) -> JobState {
    let Some(job) = job else {
        return JobState::Absent;
    };
    let status = job.status.as_ref();
    if status.and_then(|s| s.succeeded).unwrap_or(0) > 0 {
        return JobState::Succeeded;
    }
    if status.and_then(|s| s.failed).unwrap_or(0) > 0 {
        let condition = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Failed"))
            .and_then(|c| c.message.clone());
        let message = pod_message
            .map(str::to_string)
            .or(condition)
            .unwrap_or_else(|| "the recover pod failed".to_string());
        return JobState::Failed(message);
    }
    JobState::Running
}

/// The claim uid of each of `ids` that has a claim now.
async fn claims(
    api: &Api<PersistentVolumeClaim>,
    name: &str,
    ids: impl Iterator<Item = i32>,
) -> Result<BTreeMap<i32, String>, Error> {
    let mut out = BTreeMap::new();
    for id in ids {
        let claim = claim_name(name, id);
        let found = api
            .get_opt(&claim)
            .await
            .map_err(kube_err(format!("get persistentvolumeclaim {claim}")))?;
        if let Some(uid) = found.and_then(|c| c.metadata.uid) {
            out.insert(id, uid);
        }
    }
    Ok(out)
}

/// The last non-empty line of the termination message of the Job's pod.
async fn job_pod_message(pods: &Api<Pod>, job: &str) -> Result<Option<String>, Error> {
    let list = pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await
        .map_err(kube_err(format!("list pods of job {job}")))?;
    Ok(list.items.iter().find_map(|p| {
        let statuses = p.status.as_ref()?.container_statuses.as_ref()?;
        let terminated = statuses.first()?.state.as_ref()?.terminated.as_ref()?;
        let message = terminated.message.as_deref()?;
        message
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    }))
}

/// Whether `status` reports a quorum loss ([`QUORUM_LOST`]) or records a
/// recovery step: the voter set is about to be replaced, so no pod may format
/// with the initial voter list any more (docs/decisions.md D19).
pub fn quorum_lost_or_recovering(status: &KraftQuorumStatus) -> bool {
    status.recovery.phase.is_some() || has_condition(status, QUORUM_LOST)
}

fn has_condition(status: &KraftQuorumStatus, reason: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == DEGRADED && c.status == "True" && c.reason == reason)
}

/// One pass of quorum-loss handling. `pods` is how many controller pods
/// exist (any state). Updates `status` (written by the caller), and
/// returns the outcome and requeue when it took the pass over, `None` when
/// the membership planner runs as usual.
///
/// # Errors
/// [`Error::Kube`] of a read or write; the recorded step makes the next
/// pass take it again.
#[allow(clippy::too_many_arguments)]
pub async fn run<Q: QuorumClient>(
    ctx: &Context<Q>,
    kq: &KraftQuorum,
    q: &ValidatedQuorum,
    status: &mut KraftQuorumStatus,
    pods: usize,
    now: Timestamp,
) -> Result<Option<(Outcome, Duration)>, Error> {
    if !status.bootstrapped {
        return Ok(None);
    }
    let client = &ctx.client;
    let ns = &q.namespace;
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let voters: Vec<VoterView> = status
        .voters
        .iter()
        .map(|v| (v.node_id, v.directory_id.clone(), v.caught_up))
        .collect();
    let leader = status.leader_id;
    let now_ms = now.as_millisecond();
    let after_ms = kq
        .spec
        .recovery
        .quorum_loss_after_seconds
        .saturating_mul(1000);
    note_observation(
        &mut status.recovery,
        leader.is_some(),
        &voters,
        &BTreeMap::new(),
        now,
    );
    let to_read = claims_to_read(
        &status.recovery,
        leader.is_some(),
        &voters,
        no_leader_ms(status, now_ms),
        after_ms,
    );
    let found = claims(&claims_api, &q.name, to_read.into_iter()).await?;
    note_observation(&mut status.recovery, leader.is_some(), &voters, &found, now);
    let loss = quorum_loss::detect(&loss_input(status, after_ms, &found, now_ms));
    let rec = &status.recovery;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let job = match rec.survivor {
        Some(s) if rec.phase == Some(RecoveryPhase::Recovering) => {
            let name = job_name(&q.name, s);
            let found = jobs
                .get_opt(&name)
                .await
                .map_err(kube_err(format!("get job {ns}/{name}")))?;
            let message = if found.is_some() {
                job_pod_message(&pods_api, &name).await?
            } else {
                None
            };
            job_state(found.as_ref(), message.as_deref())
        }
        _ => JobState::Absent,
    };
    let request = kq
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_RECOVER_QUORUM_LOSS))
        .cloned();
    let allowed = recovery_allowed(
        kq.spec.recovery.allow_quorum_loss_recovery,
        request.as_deref(),
        rec,
    );
    let step = quorum_loss::next_step(&StepInput {
        loss,
        allowed,
        phase: rec.phase,
        survivor: rec.survivor,
        pods,
        job,
        leader,
    });
    if step != Step::None {
        info!(quorum = %format!("{ns}/{}", q.name), ?step, "quorum loss");
    }
    let survivor = rec.survivor.unwrap_or(-1);
    let progressing = |message: String| Outcome::Progressing {
        reason: RECOVERING.into(),
        message,
    };
    let event = |type_, reason: &str, action, note: String| {
        publish(
            &ctx.recorder,
            kq,
            EventSpec::new(type_, reason, action, note),
        )
    };
    let out = match step {
        Step::None => return Ok(None),
        Step::Done => {
            let note = format!(
                "node {survivor} leads the recovered quorum (leader {}); the others are re-added as new voters one at a time",
                leader.unwrap_or(-1)
            );
            status.recovery.phase = None;
            status.recovery.survivor = None;
            event(EventType::Normal, RECOVERED, "Recover", note).await;
            return Ok(None);
        }
        Step::Report { message } => {
            if !has_condition(status, QUORUM_LOST) {
                event(EventType::Warning, QUORUM_LOST, "Observe", message.clone()).await;
            }
            let outcome = Outcome::Degraded {
                reason: QUORUM_LOST.into(),
                message,
            };
            (outcome, STEADY_REQUEUE)
        }
        Step::Begin { survivor } => {
            status.recovery.phase = Some(RecoveryPhase::Stopping);
            status.recovery.survivor = Some(survivor);
            if !kq.spec.recovery.allow_quorum_loss_recovery {
                status.recovery.request.clone_from(&request);
            }
            apply::write_status(client, kq, status).await?;
            let mut held = q.clone();
            hold(&mut held, 0);
            apply::scale_statefulset(client, &held, 0).await?;
            let note = format!(
                "quorum lost: no leader and a majority of voters' volumes gone; recovering from node {survivor}'s volume (spec.recovery.allowQuorumLossRecovery or {ANNOTATION_RECOVER_QUORUM_LOSS}): statefulset {} scaled to 0",
                q.name
            );
            event(EventType::Warning, RECOVERING, "Stop", note.clone()).await;
            (progressing(note), BUSY_REQUEUE)
        }
        Step::WaitStopped => (
            progressing(format!("waiting for {pods} controller pods to stop")),
            BUSY_REQUEUE,
        ),
        Step::RunRecover => {
            if status.recovery.phase != Some(RecoveryPhase::Recovering) {
                status.recovery.phase = Some(RecoveryPhase::Recovering);
                apply::write_status(client, kq, status).await?;
            }
            let job = build_recovery_job(q, survivor);
            apply::apply_object(client, ns, &job).await?;
            let note = format!(
                "job {} runs kraft-controller recover on claim {}",
                job_name(&q.name, survivor),
                claim_name(&q.name, survivor)
            );
            event(EventType::Normal, RECOVERING, "Recover", note.clone()).await;
            (progressing(note), BUSY_REQUEUE)
        }
        Step::WaitRecover => (
            progressing(format!(
                "job {} is running kraft-controller recover",
                job_name(&q.name, survivor)
            )),
            BUSY_REQUEUE,
        ),
        Step::RecoverFailed { message } => {
            let message = format!(
                "job {} failed: {message}; the statefulset stays at 0 (docs/operations.md, \"Quorum loss\")",
                job_name(&q.name, survivor)
            );
            if !has_condition(status, RECOVERY_FAILED) {
                event(
                    EventType::Warning,
                    RECOVERY_FAILED,
                    "Recover",
                    message.clone(),
                )
                .await;
            }
            let outcome = Outcome::Degraded {
                reason: RECOVERY_FAILED.into(),
                message,
            };
            (outcome, STEADY_REQUEUE)
        }
        Step::Start => {
            status.recovery.phase = Some(RecoveryPhase::Starting);
            apply::write_status(client, kq, status).await?;
            apply::scale_statefulset(client, q, q.replicas).await?;
            let name = job_name(&q.name, survivor);
            let background = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..DeleteParams::default()
            };
            match jobs.delete(&name, &background).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(kube_err(format!("delete job {ns}/{name}"))(e)),
            }
            let note = format!(
                "recover done on node {survivor}'s volume; statefulset {} back to {} pods: node {survivor} elects itself, the others start on new volumes as observers",
                q.name, q.replicas
            );
            event(EventType::Normal, RECOVERING, "Start", note.clone()).await;
            (progressing(note), BUSY_REQUEUE)
        }
        Step::WaitLeader => (
            progressing(format!("waiting for node {survivor} to lead")),
            BUSY_REQUEUE,
        ),
    };
    Ok(Some(out))
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
