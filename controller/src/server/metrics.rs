//! Prometheus metrics of the controller, named after Kafka's `raft-metrics`
//! group (`kafka.server:type=raft-metrics`, Kafka's `KafkaRaftMetrics`) the way
//! the Prometheus JMX exporter names them: `kafka_server_raft_metrics_<name>`
//! with dashes turned into underscores.
//!
//! Kafka reports averages, maxima and rates over a 30 s sampled window; the
//! same gauges are kept here over the same window, next to Prometheus-style
//! counters and histograms from which any window can be computed.

use std::{
    collections::VecDeque,
    sync::{Mutex, atomic::AtomicU64},
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

/// Length of the window Kafka's sampled stats cover (`metrics.sample.window.ms`
/// 30000 × 1 sample… Kafka keeps 2 samples of 30 s; one 30 s window here).
pub const WINDOW_MS: u64 = 30_000;

/// Kafka's controller broker gauges (`ControllerMetadataMetrics`), named
/// as the JMX exporter names `kafka.controller:type=KafkaController,name=X`:
/// `kafka_controller_kafkacontroller_activebrokercount` (registered brokers
/// not fenced) and `kafka_controller_kafkacontroller_fencedbrokercount`,
/// from the node's committed metadata image. Clones share the values.
#[derive(Debug, Clone, Default)]
pub struct BrokerGauges {
    active: Gauge,
    fenced: Gauge,
    topics: Gauge,
    partitions: Gauge,
    offline: Gauge,
    imbalance: Gauge,
}

impl BrokerGauges {
    /// Creates the gauges and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let g = Self::default();
        let r = registry.sub_registry_with_prefix("kafka_controller_kafkacontroller");
        r.register(
            "activebrokercount",
            "Registered brokers that are not fenced (Kafka's ActiveBrokerCount)",
            g.active.clone(),
        );
        r.register(
            "fencedbrokercount",
            "Registered brokers that are fenced (Kafka's FencedBrokerCount)",
            g.fenced.clone(),
        );
        for (name, help, gauge) in [
            (
                "globaltopiccount",
                "Topics (Kafka's GlobalTopicCount)",
                &g.topics,
            ),
            (
                "globalpartitioncount",
                "Partitions (Kafka's GlobalPartitionCount)",
                &g.partitions,
            ),
            (
                "offlinepartitionscount",
                "Partitions without a leader (Kafka's OfflinePartitionsCount)",
                &g.offline,
            ),
            (
                "preferredreplicaimbalancecount",
                "Partitions not led by their preferred replica (Kafka's PreferredReplicaImbalanceCount)",
                &g.imbalance,
            ),
        ] {
            r.register(name, help, gauge.clone());
        }
        g
    }

    /// Sets the topic gauges: topics, partitions, offline partitions and
    /// partitions not led by their preferred replica.
    pub fn set_topics(&self, topics: usize, partitions: usize, offline: usize, imbalance: usize) {
        for (gauge, value) in [
            (&self.topics, topics),
            (&self.partitions, partitions),
            (&self.offline, offline),
            (&self.imbalance, imbalance),
        ] {
            gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
        }
    }

    /// Sets the counts of unfenced and fenced brokers.
    pub fn set(&self, active: usize, fenced: usize) {
        self.active.set(i64::try_from(active).unwrap_or(i64::MAX));
        self.fenced.set(i64::try_from(fenced).unwrap_or(i64::MAX));
    }
}

/// Label of `current_state`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// The Raft role: `leader`, `follower`, `candidate`, `prospective`,
    /// `unattached`, `resigned`, `observer`.
    pub state: String,
}

/// Samples of one quantity over the last [`WINDOW_MS`], with their sum and
/// their maximum kept as samples come and go, so that recording one and
/// reading the average, maximum and rate cost O(1) amortized (issue 23: a
/// leader at 20,000 records/s holds ~100,000 samples in the window, and
/// summing them at every record took a fifth of its CPU).
#[derive(Debug, Default)]
struct Window {
    samples: VecDeque<(u64, f64)>,
    sum: f64,
    /// The samples that are the largest of every later sample: values
    /// strictly decreasing from the front, whose front is the maximum.
    maxima: VecDeque<(u64, f64)>,
}

impl Window {
    fn record(&mut self, now_ms: u64, value: f64) {
        self.samples.push_back((now_ms, value));
        self.sum += value;
        while self.maxima.back().is_some_and(|(_, v)| *v <= value) {
            self.maxima.pop_back();
        }
        self.maxima.push_back((now_ms, value));
        self.expire(now_ms);
    }
    fn expire(&mut self, now_ms: u64) {
        let expired = |t: &u64| now_ms.saturating_sub(*t) > WINDOW_MS;
        while let Some((t, v)) = self.samples.front().copied()
            && expired(&t)
        {
            self.samples.pop_front();
            self.sum -= v;
        }
        while self.maxima.front().is_some_and(|(t, _)| expired(t)) {
            self.maxima.pop_front();
        }
        if self.samples.is_empty() {
            // No rounding left behind by the subtractions.
            self.sum = 0.0;
            self.maxima.clear();
        }
    }
    fn avg(&self) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        self.sum / self.samples.len() as f64
    }
    fn max(&self) -> f64 {
        self.maxima.front().map_or(0.0, |(_, v)| v.max(0.0))
    }
    fn rate_per_s(&self) -> f64 {
        self.sum / (WINDOW_MS as f64 / 1000.0)
    }
}

/// The controller's raft metrics. Cheap to update from the event loop.
#[derive(Debug)]
pub struct RaftMetrics {
    current_leader: Gauge,
    current_epoch: Gauge,
    current_vote: Gauge,
    current_state: Family<StateLabel, Gauge>,
    high_watermark: Gauge,
    log_end_offset: Gauge,
    log_end_epoch: Gauge,
    number_of_voters: Gauge,
    number_of_observers: Gauge,
    uncommitted_voter_change: Gauge,
    caught_up: Gauge,
    leader_high_watermark: Gauge,
    commit_latency_avg: Gauge<f64, AtomicU64>,
    commit_latency_max: Gauge<f64, AtomicU64>,
    election_latency_avg: Gauge<f64, AtomicU64>,
    election_latency_max: Gauge<f64, AtomicU64>,
    append_records_rate: Gauge<f64, AtomicU64>,
    fetch_records_rate: Gauge<f64, AtomicU64>,
    append_records_total: Counter,
    fetch_records_total: Counter,
    windows: Mutex<Windows>,
    last_state: Mutex<Option<String>>,
}

#[derive(Debug, Default)]
struct Windows {
    commit_latency: Window,
    election_latency: Window,
    append_records: Window,
    fetch_records: Window,
}

/// What the event loop reports after each turn (a view of the engine's status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftGauges {
    /// Leader id, -1 when unknown.
    pub leader_id: i32,
    /// Current epoch.
    pub epoch: i32,
    /// Voted-for id in this epoch, -1 when none.
    pub voted_id: i32,
    /// Role name (see [`StateLabel`]).
    pub state: &'static str,
    /// High watermark, -1 when unknown.
    pub high_watermark: i64,
    /// Log end offset.
    pub log_end_offset: i64,
    /// Epoch of the last batch in the log.
    pub log_end_epoch: i32,
    /// Voters in the current voter set.
    pub voters: usize,
    /// Observers the leader tracks (0 on other nodes).
    pub observers: usize,
    /// Whether a voter change is appended but not committed.
    pub uncommitted_voter_change: bool,
    /// Whether this node is caught up with its leader (the definition
    /// `/readyz` uses: [`crate::raft::RaftStatus::caught_up`]).
    pub caught_up: bool,
    /// Follower or observer: the high watermark its leader last sent, not
    /// capped at the local log end; -1 elsewhere or when unknown.
    pub leader_high_watermark: i64,
}

impl RaftMetrics {
    /// Creates the metrics and registers them in `registry` under
    /// `kafka_server_raft_metrics`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self {
            current_leader: Gauge::default(),
            current_epoch: Gauge::default(),
            current_vote: Gauge::default(),
            current_state: Family::default(),
            high_watermark: Gauge::default(),
            log_end_offset: Gauge::default(),
            log_end_epoch: Gauge::default(),
            number_of_voters: Gauge::default(),
            number_of_observers: Gauge::default(),
            uncommitted_voter_change: Gauge::default(),
            caught_up: Gauge::default(),
            leader_high_watermark: Gauge::default(),
            commit_latency_avg: Gauge::default(),
            commit_latency_max: Gauge::default(),
            election_latency_avg: Gauge::default(),
            election_latency_max: Gauge::default(),
            append_records_rate: Gauge::default(),
            fetch_records_rate: Gauge::default(),
            append_records_total: Counter::default(),
            fetch_records_total: Counter::default(),
            windows: Mutex::default(),
            last_state: Mutex::default(),
        };
        registry.register(
            "kraftwerk_raft_caught_up",
            "1 when this node is caught up with its leader (as /readyz judges it: the leader's own fetch answers, within controller.quorum.fetch.timeout.ms, showed it at the leader's high watermark), else 0",
            m.caught_up.clone(),
        );
        registry.register(
            "kraftwerk_raft_leader_high_watermark",
            "Follower or observer: the high watermark its leader last sent, not capped at the local log end; -1 elsewhere",
            m.leader_high_watermark.clone(),
        );
        let r = registry.sub_registry_with_prefix("kafka_server_raft_metrics");
        r.register(
            "current_leader",
            "The current quorum leader's id; -1 indicates unknown",
            m.current_leader.clone(),
        );
        r.register(
            "current_epoch",
            "The current quorum epoch",
            m.current_epoch.clone(),
        );
        r.register(
            "current_vote",
            "The current voted leader's id; -1 indicates not voted for anyone",
            m.current_vote.clone(),
        );
        r.register(
            "current_state",
            "The current state of this member (1 for the current one)",
            m.current_state.clone(),
        );
        r.register(
            "high_watermark",
            "The high watermark maintained on this member; -1 if it is unknown",
            m.high_watermark.clone(),
        );
        r.register(
            "log_end_offset",
            "The current raft log end offset",
            m.log_end_offset.clone(),
        );
        r.register(
            "log_end_epoch",
            "The current raft log end epoch",
            m.log_end_epoch.clone(),
        );
        r.register(
            "number_of_voters",
            "Number of voters for the KRaft topic partition",
            m.number_of_voters.clone(),
        );
        r.register(
            "number_of_observers",
            "Number of observers being tracked by the leader",
            m.number_of_observers.clone(),
        );
        r.register(
            "uncommitted_voter_change",
            "1 if there is a voter change that has not been committed",
            m.uncommitted_voter_change.clone(),
        );
        r.register(
            "commit_latency_avg",
            "Average time in ms from append to commit, last 30 s",
            m.commit_latency_avg.clone(),
        );
        r.register(
            "commit_latency_max",
            "Maximum time in ms from append to commit, last 30 s",
            m.commit_latency_max.clone(),
        );
        r.register(
            "election_latency_avg",
            "Average time in ms to elect a new leader, last 30 s",
            m.election_latency_avg.clone(),
        );
        r.register(
            "election_latency_max",
            "Maximum time in ms to elect a new leader, last 30 s",
            m.election_latency_max.clone(),
        );
        r.register(
            "append_records_rate",
            "Records appended per second by the leader, last 30 s",
            m.append_records_rate.clone(),
        );
        r.register(
            "fetch_records_rate",
            "Records fetched per second from the leader, last 30 s",
            m.fetch_records_rate.clone(),
        );
        r.register(
            "append_records",
            "Records appended by this node as leader",
            m.append_records_total.clone(),
        );
        r.register(
            "fetch_records",
            "Records fetched from the leader by this node",
            m.fetch_records_total.clone(),
        );
        m
    }

    /// Sets the gauges that mirror the engine's state.
    pub fn set(&self, g: &RaftGauges) {
        self.current_leader.set(i64::from(g.leader_id));
        self.current_epoch.set(i64::from(g.epoch));
        self.current_vote.set(i64::from(g.voted_id));
        self.high_watermark.set(g.high_watermark);
        self.log_end_offset.set(g.log_end_offset);
        self.log_end_epoch.set(i64::from(g.log_end_epoch));
        self.number_of_voters.set(g.voters as i64);
        self.number_of_observers.set(g.observers as i64);
        self.uncommitted_voter_change
            .set(i64::from(g.uncommitted_voter_change));
        self.caught_up.set(i64::from(g.caught_up));
        self.leader_high_watermark.set(g.leader_high_watermark);
        let mut last = self.last_state.lock().unwrap_or_else(|p| p.into_inner());
        if last.as_deref() != Some(g.state) {
            if let Some(old) = last.take() {
                self.current_state
                    .get_or_create(&StateLabel { state: old })
                    .set(0);
            }
            self.current_state
                .get_or_create(&StateLabel {
                    state: g.state.to_owned(),
                })
                .set(1);
            *last = Some(g.state.to_owned());
        }
    }

    /// Records one append-to-commit latency (ms).
    pub fn record_commit_latency(&self, now_ms: u64, latency_ms: f64) {
        self.with_windows(now_ms, |w| w.commit_latency.record(now_ms, latency_ms));
    }

    /// Records the time (ms) from losing a leader to knowing a new one.
    pub fn record_election_latency(&self, now_ms: u64, latency_ms: f64) {
        self.with_windows(now_ms, |w| w.election_latency.record(now_ms, latency_ms));
    }

    /// Counts records appended as leader.
    pub fn record_appended(&self, now_ms: u64, records: u64) {
        self.append_records_total.inc_by(records);
        self.with_windows(now_ms, |w| w.append_records.record(now_ms, records as f64));
    }

    /// Counts records fetched from the leader.
    pub fn record_fetched(&self, now_ms: u64, records: u64) {
        self.fetch_records_total.inc_by(records);
        self.with_windows(now_ms, |w| w.fetch_records.record(now_ms, records as f64));
    }

    /// Drops samples older than the window and refreshes the windowed gauges.
    pub fn tick(&self, now_ms: u64) {
        self.with_windows(now_ms, |_| {});
    }

    fn with_windows(&self, now_ms: u64, f: impl FnOnce(&mut Windows)) {
        let mut guard = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let w = &mut *guard;
        f(w);
        for window in [
            &mut w.commit_latency,
            &mut w.election_latency,
            &mut w.append_records,
            &mut w.fetch_records,
        ] {
            window.expire(now_ms);
        }
        self.commit_latency_avg.set(w.commit_latency.avg());
        self.commit_latency_max.set(w.commit_latency.max());
        self.election_latency_avg.set(w.election_latency.avg());
        self.election_latency_max.set(w.election_latency.max());
        self.append_records_rate.set(w.append_records.rate_per_s());
        self.fetch_records_rate.set(w.fetch_records.rate_per_s());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).expect("encodes");
        out
    }

    #[test]
    fn the_window_average_maximum_and_rate_follow_samples_in_and_out_of_the_window() {
        let mut w = Window::default();
        w.record(0, 5.0);
        w.record(1_000, 9.0);
        w.record(2_000, 1.0);
        w.record(3_000, 3.0);
        assert_eq!((w.avg(), w.max(), w.rate_per_s()), (4.5, 9.0, 18.0 / 30.0));
        // 0 and 1000 ms leave the window: the maximum falls to the largest
        // of what is left, not to the newest.
        w.expire(1_000 + WINDOW_MS + 1);
        assert_eq!((w.avg(), w.max()), (2.0, 3.0));
        w.record(3_000 + WINDOW_MS, 2.0);
        assert_eq!(
            (w.avg(), w.max()),
            (2.5, 3.0),
            "3000 ms is still in the window"
        );
        w.expire(3_000 + WINDOW_MS + 1);
        assert_eq!((w.avg(), w.max()), (2.0, 2.0));
        w.expire(10 * WINDOW_MS);
        assert_eq!((w.avg(), w.max(), w.rate_per_s()), (0.0, 0.0, 0.0));
    }

    #[test]
    fn gauges_use_kafkas_raft_metric_names() {
        let mut registry = Registry::default();
        let m = RaftMetrics::new(&mut registry);
        m.set(&RaftGauges {
            leader_id: 2,
            epoch: 7,
            voted_id: -1,
            state: "follower",
            high_watermark: 41,
            log_end_offset: 42,
            log_end_epoch: 7,
            voters: 3,
            observers: 0,
            uncommitted_voter_change: false,
            caught_up: true,
            leader_high_watermark: 45,
        });
        let text = render(&registry);
        for line in [
            "kafka_server_raft_metrics_current_leader 2",
            "kafka_server_raft_metrics_current_epoch 7",
            "kafka_server_raft_metrics_high_watermark 41",
            "kafka_server_raft_metrics_log_end_offset 42",
            "kafka_server_raft_metrics_number_of_voters 3",
            "kafka_server_raft_metrics_current_state{state=\"follower\"} 1",
            "kraftwerk_raft_caught_up 1",
            "kraftwerk_raft_leader_high_watermark 45",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn a_role_change_clears_the_old_state_label() {
        let mut registry = Registry::default();
        let m = RaftMetrics::new(&mut registry);
        let mut g = RaftGauges {
            leader_id: -1,
            epoch: 1,
            voted_id: -1,
            state: "candidate",
            high_watermark: -1,
            log_end_offset: 0,
            log_end_epoch: 0,
            voters: 3,
            observers: 0,
            uncommitted_voter_change: false,
            caught_up: false,
            leader_high_watermark: -1,
        };
        m.set(&g);
        g.state = "leader";
        m.set(&g);
        let text = render(&registry);
        assert!(
            text.contains("current_state{state=\"candidate\"} 0"),
            "{text}"
        );
        assert!(text.contains("current_state{state=\"leader\"} 1"), "{text}");
    }

    #[test]
    fn windowed_stats_forget_samples_older_than_the_window() {
        let mut registry = Registry::default();
        let m = RaftMetrics::new(&mut registry);
        m.record_commit_latency(1_000, 10.0);
        m.record_commit_latency(2_000, 30.0);
        assert_eq!(m.commit_latency_avg.get(), 20.0);
        assert_eq!(m.commit_latency_max.get(), 30.0);
        m.tick(2_000 + WINDOW_MS + 1);
        assert_eq!(m.commit_latency_max.get(), 0.0);
    }
}
