//! The cases of run.sh judged from samples (cases 3 and 6): a
//! [`Sampler`] records the quorum's pods, each controller's own Raft view
//! and the volumes' cluster ids throughout the change, and
//! [`samples::check_one_quorum`] or [`samples::check_roll`] judges the
//! recording afterwards, with run.sh's assertions besides.

use std::time::{Duration, Instant};

use kraft_e2e::{
    Must, TestNamespace, events, pods, quorum,
    samples::{self, Sample, Sampler},
    wait,
};
use kube::Client;

use super::*;

/// A rolling restart of 3 voters (run.sh: 300 s).
const ROLL_TIMEOUT: Duration = Duration::from_secs(300);

/// Keeps the recording in [`samples::recording_path`]`(name)`, then
/// passes with the check's summary printed, or fails with its reason and
/// the last 3 samples (as run.sh printed the last 3 lines of the
/// recording).
fn judge(name: &str, samples: &[Sample], verdict: std::result::Result<String, String>) {
    let path = samples::recording_path(name);
    samples::save(samples, &path).must("keep the recording");
    match verdict {
        Ok(summary) => println!("{name}: {summary} (recording: {})", path.display()),
        Err(reason) => {
            for s in &samples[samples.len().saturating_sub(3)..] {
                eprintln!("sample: {s:?}");
            }
            panic!(
                "{name}: {reason} ({} samples in {})",
                samples.len(),
                path.display()
            );
        }
    }
}

/// (3) scale 1 → 3 → 1, the single-voter edge: a 1-voter quorum becomes
/// Ready (it is not restarted after bootstrap), grows to 3 voters (1 and 2
/// added) and shrinks back to 1, and no second quorum is ever formed:
/// sampled throughout, every volume holds the quorum's cluster id, the 3
/// controllers agreed on one leader and epoch, and every controller's view
/// has one leader per epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_one_to_three_and_back_never_forms_a_second_quorum() {
    let (client, ns, _operator) = setup("e2e-rs-single").await;
    let sampler = Sampler::start(&client, ns.name(), Q)
        .await
        .must("the first sample of e2e-rs-single/q");
    ready_one(&ns).await;
    voters_match(&ns, 1).await;

    let start = Instant::now();
    quorum::scale(&ns, Q, 3).await.must("scale kq/q to 3");
    wait::ready(&ns, Q, 3, SCALE_TIMEOUT)
        .await
        .must("3 voters Ready");
    figure("add_voter_each", start.elapsed() / 2);
    voters_match(&ns, 3).await;
    assert_eq!(
        voter_events(&ns, "VoterAdded").await,
        [1, 2],
        "VoterAdded events"
    );

    let start = Instant::now();
    quorum::scale(&ns, Q, 1).await.must("scale kq/q to 1");
    wait::ready(&ns, Q, 1, SCALE_TIMEOUT)
        .await
        .must("1 voter Ready after scaling down");
    figure("remove_voter_each", start.elapsed() / 2);
    voters_match(&ns, 1).await;
    let mut removed = voter_events(&ns, "VoterRemoved").await;
    removed.sort_unstable();
    assert_eq!(
        removed,
        [1, 2],
        "VoterRemoved events for nodes (sorted), want 1 and 2 once each"
    );
    let restarts = events::count(&ns, Q, "SingleVoterRestart")
        .await
        .must("count the SingleVoterRestart events");
    assert_eq!(
        restarts, 0,
        "the single voter was restarted, but nothing changed its template"
    );

    let recording = sampler.stop();
    let cluster_id = quorum::status(&ns, Q)
        .await
        .must("the status")
        .cluster_id
        .expect("a Ready quorum has a cluster id in its status");
    judge(
        ns.name(),
        &recording,
        samples::check_one_quorum(&recording, &cluster_id, 3),
    );
}

/// `roll NS WHAT PATCH`: merge-patches the KraftQuorum q of 3 voters, waits
/// until the change is rolled out, and checks from the samples that it was
/// quorum-aware: one pod at a time, the leader last, a majority always
/// ready.
async fn roll(client: &Client, ns: &TestNamespace, what: &str, patch: serde_json::Value) {
    let rev = pods::update_revision(ns, Q)
        .await
        .must("the StatefulSet's revision")
        .expect("a Ready quorum's StatefulSet has an update revision");
    let sampler = Sampler::start(client, ns.name(), Q)
        .await
        .must("the first sample of q");
    let start = Instant::now();
    quorum::patch_merge(ns, Q, patch)
        .await
        .unwrap_or_else(|e| panic!("patch the {what}: {e}"));
    let rolled_out = format!("the {what} change rolled out to every pod");
    pods::wait_rolled(ns, Q, &rev, 3, ROLL_TIMEOUT)
        .await
        .must(&rolled_out);
    figure("rolling_restart_3", start.elapsed());
    let recording = sampler.stop();
    judge(
        &format!("{}-{what}", ns.name()),
        &recording,
        samples::check_roll(&recording, 3),
    );
}

/// (6) a config value changed, then the image tag: each is a quorum-aware
/// rolling restart (one pod at a time, leader last, never fewer than a
/// majority ready), sampled throughout. The local cluster has the
/// controller image under its next patch tag too, the same image
/// (dev/real-node/images.sh `import`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_or_image_change_rolls_one_pod_at_a_time_leader_last() {
    let (client, ns, _operator) = setup("e2e-rs-roll").await;
    ready_three(&ns).await;
    roll(
        &client,
        &ns,
        "config",
        serde_json::json!({"spec": {"config": {"controller.quorum.append.linger.ms": "20"}}}),
    )
    .await;
    let image = format!("{}:0.1.1", quorum::IMAGE_REPOSITORY);
    roll(
        &client,
        &ns,
        "image",
        serde_json::json!({"spec": {"image": image}}),
    )
    .await;
    let sts = ns
        .api::<k8s_openapi::api::apps::v1::StatefulSet>()
        .get(Q)
        .await;
    let sts = sts.unwrap_or_else(|e| panic!("get statefulset q: {e}"));
    let running = sts
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|p| p.containers.into_iter().next())
        .and_then(|c| c.image);
    assert_eq!(
        running.as_deref(),
        Some(image.as_str()),
        "the StatefulSet's first container image"
    );
}
