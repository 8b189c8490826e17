//! Cases with Apache Kafka brokers (examples/kafka-brokers.yaml) under a
//! steady `acks=all` idempotent load (issue 18): each asserts no failed
//! send and every acknowledged record read back, and prints the figures.

use std::time::{Duration, Instant};

use kraft_e2e::{Must, events, quorum, wait};

use super::*;

/// The load during a change (records/s).
const LOAD_RATE: u32 = 200;
/// Brokers up: three JVMs starting at once on a small machine.
const BROKERS_TIMEOUT: Duration = Duration::from_secs(300);

/// Waits until the load has `n` more acknowledgements than `from`.
async fn load_acknowledges(load: &kraft_e2e::kafka::Load, from: u64, n: u64, what: &str) {
    wait::poll(what, Duration::from_secs(120), || async {
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

/// Scale 3 → 5 → 3 under a steady `acks=all` idempotent load through three
/// Apache Kafka brokers (examples/kafka-brokers.yaml): no send fails and
/// every acknowledged record is read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_three_five_three_under_an_acks_all_load_loses_nothing() {
    use kraft_e2e::{brokers, kafka};
    let q = brokers::QUORUM;
    let (_client, ns) = setup("e2e-rs-load").await;
    let start = Instant::now();
    quorum::create_minimal(&ns, q, 3)
        .await
        .must("create KraftQuorum quorum");
    wait::ready(&ns, q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    figure("apply_to_ready_3", start.elapsed());
    let start = Instant::now();
    brokers::apply(&ns)
        .await
        .must("apply examples/kafka-brokers.yaml");
    brokers::wait_ready(&ns, 3, BROKERS_TIMEOUT)
        .await
        .must("3 brokers Ready");
    figure("brokers_ready_3", start.elapsed());
    brokers::allow_anonymous_topics(&ns, q)
        .await
        .must("the ACL for the brokers' clients");
    let bootstrap = brokers::bootstrap(&ns).await.must("the brokers' bootstrap");
    let topic = "load";
    // RF 3 needs all three brokers registered and unfenced: retry until then.
    wait::poll(
        "topic load created (3 partitions, RF 3, min.insync.replicas 2)",
        Duration::from_secs(180),
        || {
            let b = bootstrap.clone();
            async move {
                tokio::task::spawn_blocking(move || kafka::create_topic(&b, topic, 3, 3, 2))
                    .await
                    .map_err(|e| kraft_e2e::Error::Invalid(format!("the TopicCommand task: {e}")))?
                    .map(Some)
            }
        },
    )
    .await
    .must("create topic load");

    let mut load = kafka::Load::start(&bootstrap, topic, LOAD_RATE).must("start the load");
    load_acknowledges(&load, 0, u64::from(LOAD_RATE), "the load flowing").await;
    let change = Instant::now();
    quorum::scale(&ns, q, 5).await.must("scale to 5");
    wait::ready(&ns, q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready under load");
    figure("scale_3_to_5_under_load", change.elapsed());
    let mid = Instant::now();
    quorum::scale(&ns, q, 3).await.must("scale to 3");
    wait::ready(&ns, q, 3, SCALE_TIMEOUT)
        .await
        .must("3 voters Ready under load");
    figure("scale_5_to_3_under_load", mid.elapsed());
    assert_eq!(
        events::voter_events(&ns, q, "VoterAdded")
            .await
            .must("VoterAdded events"),
        [3, 4],
        "VoterAdded events"
    );
    assert_eq!(
        events::voter_events(&ns, q, "VoterRemoved")
            .await
            .must("VoterRemoved events"),
        [4, 3],
        "VoterRemoved events"
    );
    // Still acknowledged after the change: the producer did not stall.
    let acked = load.acknowledged();
    load_acknowledges(
        &load,
        acked,
        u64::from(LOAD_RATE),
        "the load flowing after the change",
    )
    .await;
    assert!(
        !load.exited(),
        "the producer exited early: {}",
        load.stderr_tail()
    );
    let took = change.elapsed();
    let report = tokio::task::spawn_blocking(move || load.stop())
        .await
        .expect("the producer's stop task")
        .must("stop the load");
    let b = bootstrap.clone();
    let consumed =
        tokio::task::spawn_blocking(move || kafka::consume_all(&b, topic, Duration::from_secs(15)))
            .await
            .expect("the consumer task")
            .must("consume topic load");
    println!(
        "load scale 3->5->3 ({:.1} s): {}",
        took.as_secs_f64(),
        kafka::figures(&report, &consumed)
    );
    assert!(report.acknowledged > 0, "nothing acknowledged");
    kafka::assert_all_consumed(&report, &consumed);
}
