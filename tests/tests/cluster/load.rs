//! The cases with Apache Kafka brokers (examples/kafka-brokers.yaml) under a
//! steady `acks=all` idempotent load (issue 18). One quorum and one set of
//! brokers (three JVMs take minutes to start on a small machine) go through
//! the five changes in turn; each change runs under its own load into its
//! own topic (RF 3, `min.insync.replicas` 2) and asserts on its own: no
//! failed send and every acknowledged record read back. Each prints
//! `load CASE (S s): produced N acknowledged N consumed N failed N
//! longest-ack-gap-ms N`.

use std::{
    future::Future,
    time::{Duration, Instant},
};

use kraft_e2e::{Must, TestNamespace, brokers, events, kafka, operator, pods, quorum, wait};

use super::*;

/// The load during a change (records/s).
const LOAD_RATE: u32 = 200;
/// Brokers up: three JVMs starting at once on a small machine.
const BROKERS_TIMEOUT: Duration = Duration::from_secs(300);
/// A change under load: scale by two voters, roll three pods.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(300);

/// Waits until the load has `n` more acknowledgements than `from`.
async fn load_acknowledges(load: &kafka::Load, from: u64, n: u64, what: &str) {
    wait::poll(what, Duration::from_secs(120), move || async move {
        let now = load.acknowledged();
        if now >= from + n {
            Ok(Some(()))
        } else {
            Err(kraft_e2e::Error::Invalid(format!(
                "{} acknowledged, {} failed",
                now,
                load.failed()
            )))
        }
    })
    .await
    .must(what);
}

/// Creates `topic` (3 partitions, RF 3, min.insync.replicas 2), retrying
/// while the brokers are not all registered and unfenced.
async fn create_topic(bootstrap: &str, topic: &'static str) {
    wait::poll(
        &format!("topic {topic} created (3 partitions, RF 3, min.insync.replicas 2)"),
        Duration::from_secs(180),
        || {
            let b = bootstrap.to_owned();
            async move {
                tokio::task::spawn_blocking(move || kafka::create_topic(&b, topic, 3, 3, 2))
                    .await
                    .map_err(|e| kraft_e2e::Error::Invalid(format!("the TopicCommand task: {e}")))?
                    .map(Some)
            }
        },
    )
    .await
    .must("create the topic");
}

/// Runs `change` under a steady load into a new `topic`: the load flows
/// before it, still flows after it, and then every acknowledged record is
/// read back; fails the test (naming `case`) on a failed send or a record
/// acknowledged and not consumed. Prints the case's figures.
async fn under_load<F, Fut>(bootstrap: &str, case: &str, topic: &'static str, change: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    create_topic(bootstrap, topic).await;
    let mut load = kafka::Load::start(bootstrap, topic, LOAD_RATE).must("start the load");
    load_acknowledges(&load, 0, u64::from(LOAD_RATE), "the load flowing").await;
    let start = Instant::now();
    change().await;
    let took = start.elapsed();
    // Still acknowledged after the change: the producer did not stall.
    let acked = load.acknowledged();
    load_acknowledges(
        &load,
        acked,
        u64::from(LOAD_RATE),
        &format!("the load flowing after {case}"),
    )
    .await;
    assert!(
        !load.exited(),
        "{case}: the producer exited early: {}",
        load.stderr_tail()
    );
    let report = tokio::task::spawn_blocking(move || load.stop())
        .await
        .expect("the producer's stop task")
        .must("stop the load");
    let (b, sent) = (bootstrap.to_owned(), report.sent);
    // Until every record sent is read, or none came for 60 s.
    let consumed = tokio::task::spawn_blocking(move || {
        kafka::consume_all(&b, topic, sent, Duration::from_secs(60))
    })
    .await
    .expect("the consumer task")
    .must("consume the topic");
    let figures = kafka::figures(&report, &consumed);
    println!("load {case} ({:.1} s): {figures}", took.as_secs_f64());
    assert!(report.acknowledged > 0, "{case}: nothing acknowledged");
    if let Some(p) = kafka::problems(&report, &consumed) {
        panic!("{case}: {p} ({figures})");
    }
}

/// The VoterAdded and VoterRemoved events of `q` so far.
async fn membership_events(ns: &TestNamespace, q: &str) -> (Vec<i32>, Vec<i32>) {
    let added = events::voter_events(ns, q, "VoterAdded").await;
    let removed = events::voter_events(ns, q, "VoterRemoved").await;
    (
        added.must("VoterAdded events"),
        removed.must("VoterRemoved events"),
    )
}

/// A 3-voter quorum with three Apache Kafka brokers on it, their clients
/// allowed on every topic; returns the brokers' bootstrap.
async fn quorum_with_brokers(ns: &TestNamespace, q: &str) -> String {
    let start = Instant::now();
    quorum::create_minimal(ns, q, 3)
        .await
        .must("create KraftQuorum quorum");
    wait::ready(ns, q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    figure("apply_to_ready_3", start.elapsed());
    let start = Instant::now();
    brokers::apply(ns)
        .await
        .must("apply examples/kafka-brokers.yaml");
    brokers::wait_ready(ns, 3, BROKERS_TIMEOUT)
        .await
        .must("3 brokers Ready");
    figure("brokers_ready_3", start.elapsed());
    brokers::allow_anonymous_topics(ns, q)
        .await
        .must("the ACL for the brokers' clients");
    brokers::bootstrap(ns).await.must("the brokers' bootstrap")
}

/// Through three Apache Kafka brokers on a 3-voter quorum, under a steady
/// `acks=all` idempotent load each time, no send fails and every
/// acknowledged record is read back while: the quorum is scaled 3 → 5 → 3;
/// a config change rolls its pods; its leader's pod is deleted; a voter's
/// volume is lost and the voter replaced; the operator is killed in the
/// middle of a scale-up 3 → 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_cluster_loses_nothing_while_its_quorum_changes() {
    use k8s_openapi::api::{
        apps::v1::StatefulSet,
        core::v1::{PersistentVolumeClaim, Pod},
    };
    let q = brokers::QUORUM;
    let (client, ns, share) = setup("e2e-rs-load").await;
    let bootstrap = quorum_with_brokers(&ns, q).await;
    // The changes borrow these: closures and their futures copy references.
    let (ns, client) = (&ns, &client);

    under_load(&bootstrap, "scale 3->5->3", "scale", move || async move {
        let start = Instant::now();
        quorum::scale(ns, q, 5).await.must("scale to 5");
        wait::ready(ns, q, 5, CHANGE_TIMEOUT)
            .await
            .must("5 voters Ready under load");
        figure("scale_3_to_5_under_load", start.elapsed());
        let start = Instant::now();
        quorum::scale(ns, q, 3).await.must("scale to 3");
        wait::ready(ns, q, 3, CHANGE_TIMEOUT)
            .await
            .must("3 voters Ready under load");
        figure("scale_5_to_3_under_load", start.elapsed());
        assert_eq!(
            membership_events(ns, q).await,
            (vec![3, 4], vec![4, 3]),
            "VoterAdded and VoterRemoved events"
        );
    })
    .await;

    let before = membership_events(ns, q).await;
    under_load(&bootstrap, "rolling restart", "roll", move || async move {
        let old = pods::update_revision(ns, q)
            .await
            .must("the StatefulSet's revision")
            .expect("a Ready quorum's StatefulSet has an update revision");
        quorum::patch_merge(
            ns,
            q,
            serde_json::json!({"spec": {"config": {"controller.quorum.append.linger.ms": "20"}}}),
        )
        .await
        .must("change a config value");
        pods::wait_rolled(ns, q, &old, 3, CHANGE_TIMEOUT)
            .await
            .must("the config change rolled out under load");
    })
    .await;
    assert_eq!(
        membership_events(ns, q).await,
        before,
        "a rolling restart changed the membership"
    );

    under_load(
        &bootstrap,
        "leader pod deleted",
        "leader",
        move || async move {
            let deleted = pods::delete_leader(ns, q, 3, CHANGE_TIMEOUT)
                .await
                .must("the leader's pod deleted, the quorum Ready again under load");
            let kq = deleted.after;
            let dirs = deleted.directory_ids;
            assert_eq!(
                quorum::directory_ids(&kq),
                dirs,
                "the directory ids changed"
            );
        },
    )
    .await;
    assert_eq!(
        membership_events(ns, q).await,
        before,
        "a deleted leader pod changed the membership"
    );

    under_load(
        &bootstrap,
        "voter volume lost",
        "volume",
        move || async move {
            let kq = quorum::get(ns, q).await.must("get the quorum");
            let old = quorum::voter_dir(&kq, 2).expect("voter 2 in the status of a Ready quorum");
            let (pvc, pod) = (format!("data-{q}-2"), format!("{q}-2"));
            ns.api::<PersistentVolumeClaim>()
                .delete(&pvc, &Default::default())
                .await
                .unwrap_or_else(|e| panic!("delete pvc {pvc}: {e}"));
            ns.api::<Pod>()
                .delete(&pod, &Default::default())
                .await
                .unwrap_or_else(|e| panic!("delete pod {pod}: {e}"));
            wait::quorum(
                ns,
                q,
                "voter 2 with a new directory id",
                CHANGE_TIMEOUT,
                move |kq| quorum::voter_dir(kq, 2).is_some_and(|d| !d.is_empty() && d != old),
            )
            .await
            .must("voter 2 with a new directory id under load");
            wait::ready(ns, q, 3, CHANGE_TIMEOUT)
                .await
                .must("3 voters Ready again under load");
        },
    )
    .await;

    // No other case may run while the operator is down.
    drop(share);
    let _operator = operator_exclusive().await;
    under_load(
        &bootstrap,
        "operator killed mid scale-up",
        "operator",
        move || async move {
            quorum::scale(ns, q, 5).await.must("scale to 5");
            wait::until(
                &ns.api::<StatefulSet>(),
                q,
                "the scale-up started (its StatefulSet at 5 replicas)",
                Duration::from_secs(60),
                |s: Option<&StatefulSet>| s.and_then(|s| s.spec.as_ref()?.replicas) == Some(5),
                |s| format!("spec {:?}", s.spec.as_ref().and_then(|s| s.replicas)),
            )
            .await
            .must("the scale-up started");
            operator::kill(client).await.must("kill the operator");
            wait::ready(ns, q, 5, CHANGE_TIMEOUT)
                .await
                .must("5 voters Ready under load");
            operator::wait_rolled_out(client, Duration::from_secs(120))
                .await
                .must("the operator's Deployment rolled out");
        },
    )
    .await;
}
