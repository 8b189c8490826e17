//! `kraft-broker-load`: N simulated Kafka 4.4 brokers against a KRaft
//! controller quorum (ours or Apache Kafka's), for the broker-heartbeat
//! benchmark of issue 23 (`bench/brokers.py`, `make bench-brokers`).
//!
//! Each simulated broker registers (BrokerRegistration) with the active
//! controller and heartbeats (BrokerHeartbeat) as Kafka's
//! `BrokerLifecycleManager` does, every `broker.heartbeat.interval.ms` once
//! running; the tool records every request's latency, counts errors, and
//! prints one JSON line. It owns only the load and its figures: it must not
//! fetch the metadata log, serve clients or judge a system (the script does).
//! Messages are kafka-protocol's; connections are the controller's own
//! pipelined client (`wire::client`), discovery is its admin client.

mod requests;
mod stats;

use std::{
    net::SocketAddr,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use clap::Parser;
use kafka_protocol::{
    error::ResponseError,
    messages::{RequestKind, ResponseKind},
};
use kraft_controller::{
    admin::{AdminClient, error_name},
    wire::client::{ClientConfig, Connection},
};
use tokio::{sync::Mutex, time::Instant};

use crate::{
    requests::{HEARTBEAT_VERSION, Lifecycle, Phase, REGISTRATION_VERSION, registration},
    stats::Latencies,
};

/// Command line of `kraft-broker-load`.
#[derive(Debug, Parser)]
#[command(name = "kraft-broker-load", about)]
struct Args {
    /// `controller.quorum.bootstrap.servers`: controllers to ask for the
    /// active one, `host:port,...`.
    #[arg(long, value_delimiter = ',', required = true)]
    bootstrap_controller: Vec<SocketAddr>,
    /// The cluster id the quorum was formatted with.
    #[arg(long)]
    cluster_id: String,
    /// How many brokers to simulate (at least 1).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i32).range(1..))]
    brokers: i32,
    /// Id of the first simulated broker (0 or more); the others follow it,
    /// and the last must fit in an int32.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i32).range(0..))]
    first_broker_id: i32,
    /// How long to heartbeat, seconds, counted from the start.
    #[arg(long, default_value_t = 60)]
    duration_s: u64,
    /// `broker.heartbeat.interval.ms` (Kafka's default 2000).
    #[arg(long, default_value_t = 2000)]
    heartbeat_interval_ms: u64,
    /// How long one request may wait for its answer, ms.
    #[arg(long, default_value_t = 5000)]
    request_timeout_ms: u64,
    /// How often the tool reads the metadata log's high watermark
    /// (DescribeQuorum) to advance the brokers' `CurrentMetadataOffset`, ms.
    #[arg(long, default_value_t = 500)]
    offset_poll_ms: u64,
}

/// Errors of the load tool; each names the broker it happened to.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// No controller of the bootstrap list named an active controller.
    #[error("no active controller found through {bootstrap}: {reason}")]
    NoActiveController { bootstrap: String, reason: String },
    /// A request got no answer (connect failure, timeout, disconnect).
    #[error("broker {broker_id}: {api} to {addr} failed: {reason}")]
    Transport {
        broker_id: i32,
        api: &'static str,
        addr: String,
        reason: String,
    },
    /// The controller answered with an error code.
    #[error("broker {broker_id}: {api} answered {name} ({code}) by {addr}")]
    Answer {
        broker_id: i32,
        api: &'static str,
        addr: String,
        code: i16,
        name: &'static str,
    },
    /// The controller answered with another api's body.
    #[error("broker {broker_id}: {api} answered with another api's body by {addr}")]
    WrongBody {
        broker_id: i32,
        api: &'static str,
        addr: String,
    },
}

/// What every broker task shares: where the active controller is, the
/// metadata offset seen, the settings.
struct Shared {
    args: Args,
    /// The active controller's address and a generation that changes each
    /// time it is looked up again.
    active: Mutex<(String, u64)>,
    /// The highest committed metadata offset seen (DescribeQuorum's high
    /// watermark), -1 before the first.
    metadata_offset: AtomicI64,
    start: Instant,
    deadline: Instant,
}

impl Shared {
    fn client_config(&self, broker_id: i32) -> ClientConfig {
        ClientConfig {
            request_timeout: Duration::from_millis(self.args.request_timeout_ms),
            client_id: format!("broker-{broker_id}"),
            ..ClientConfig::default()
        }
    }

    /// Asks the bootstrap controllers for the active one (DescribeQuorum,
    /// following NOT_LEADER_OR_FOLLOWER as Kafka's admin client does); a
    /// caller that saw generation `seen` gets the current address without a
    /// new look-up when someone else looked since.
    async fn rediscover(&self, seen: u64) -> Result<(String, u64), LoadError> {
        let mut active = self.active.lock().await;
        if active.1 != seen {
            return Ok(active.clone());
        }
        let (addr, hw) = discover(&self.args.bootstrap_controller).await?;
        self.metadata_offset.fetch_max(hw, Ordering::SeqCst);
        *active = (addr, seen + 1);
        Ok(active.clone())
    }
}

/// The active controller's address and the metadata log's high watermark.
async fn discover(bootstrap: &[SocketAddr]) -> Result<(String, i64), LoadError> {
    let fail = |reason: String| LoadError::NoActiveController {
        bootstrap: bootstrap
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(","),
        reason,
    };
    let mut admin = AdminClient::connect_any(bootstrap, Duration::from_secs(5))
        .await
        .map_err(|e| fail(e.to_string()))?;
    let quorum = admin
        .describe_quorum()
        .await
        .map_err(|e| fail(e.to_string()))?;
    Ok((admin.connected_addr().to_owned(), quorum.high_watermark))
}

/// What one broker task measured.
#[derive(Default)]
struct Outcome {
    registration: Latencies,
    heartbeat: Latencies,
    /// Heartbeats of brokers already unfenced (RUNNING): the steady state,
    /// without the start-up burst of registrations and catch-up.
    heartbeat_running: Latencies,
    registration_errors: u64,
    heartbeats_sent: u64,
    heartbeats_answered: u64,
    heartbeat_errors: u64,
    /// Time from the start of the run until its first unfenced answer, ms.
    unfenced_ms: Option<f64>,
}

/// The one request the broker has on its connection, timed; errors are
/// printed (one line) and returned.
async fn call(
    shared: &Shared,
    conn: &mut Option<(Connection, u64)>,
    broker_id: i32,
    version: i16,
    body: RequestKind,
    latency: &mut Latencies,
) -> Result<ResponseKind, LoadError> {
    let api = match body {
        RequestKind::BrokerRegistration(_) => "BrokerRegistration",
        _ => "BrokerHeartbeat",
    };
    if conn.as_ref().is_none_or(|(c, _)| c.is_closed()) {
        let (addr, generation) = shared.active.lock().await.clone();
        let connected = Connection::connect(&addr, shared.client_config(broker_id))
            .await
            .map_err(|e| LoadError::Transport {
                broker_id,
                api,
                addr: addr.clone(),
                reason: e.to_string(),
            })?;
        *conn = Some((connected, generation));
    }
    let Some((connection, _)) = conn.as_ref() else {
        return Err(LoadError::Transport {
            broker_id,
            api,
            addr: String::new(),
            reason: "no connection".to_owned(),
        });
    };
    let sent = Instant::now();
    let answer = connection.call(version, body).await;
    latency.record(sent.elapsed().as_secs_f64() * 1000.0);
    answer.map_err(|e| LoadError::Transport {
        broker_id,
        api,
        addr: connection.addr().to_owned(),
        reason: e.to_string(),
    })
}

/// After an error: on NOT_CONTROLLER (or a lost connection) look up the
/// active controller again and reconnect on the next request.
async fn after_error(shared: &Shared, conn: &mut Option<(Connection, u64)>, error: &LoadError) {
    eprintln!("{error}");
    let not_controller = ResponseError::NotController.code();
    let follow = match error {
        LoadError::Answer { code, .. } => *code == not_controller,
        LoadError::Transport { .. } => true,
        _ => false,
    };
    if follow {
        let seen = conn.take().map(|(_, g)| g).unwrap_or_default();
        if let Err(e) = shared.rediscover(seen).await {
            eprintln!("{e}");
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// One simulated broker: registers until it succeeds, then heartbeats until
/// the deadline.
async fn run_broker(shared: Arc<Shared>, broker_id: i32) -> Outcome {
    let mut out = Outcome::default();
    let mut conn: Option<(Connection, u64)> = None;
    let interval = Duration::from_millis(shared.args.heartbeat_interval_ms);
    'register: while Instant::now() < shared.deadline {
        let body =
            RequestKind::BrokerRegistration(registration(&shared.args.cluster_id, broker_id));
        let answer = call(
            &shared,
            &mut conn,
            broker_id,
            REGISTRATION_VERSION,
            body,
            &mut out.registration,
        )
        .await;
        let epoch = match answer {
            Ok(ResponseKind::BrokerRegistration(r)) if r.error_code == 0 => r.broker_epoch,
            other => {
                let e = as_error(other, broker_id, "BrokerRegistration", &conn);
                out.registration_errors += 1;
                after_error(&shared, &mut conn, &e).await;
                continue;
            }
        };
        let mut broker = Lifecycle::registered(broker_id, epoch);
        while Instant::now() < shared.deadline {
            let offset = shared.metadata_offset.load(Ordering::SeqCst);
            let body = RequestKind::BrokerHeartbeat(broker.heartbeat(offset));
            out.heartbeats_sent += 1;
            let running = broker.phase == Phase::Running;
            let mut sample = Latencies::default();
            let answer = call(
                &shared,
                &mut conn,
                broker_id,
                HEARTBEAT_VERSION,
                body,
                &mut sample,
            )
            .await;
            out.heartbeat.merge(&sample);
            if running {
                out.heartbeat_running.merge(&sample);
            }
            if matches!(answer, Ok(ResponseKind::BrokerHeartbeat(_))) {
                out.heartbeats_answered += 1;
            }
            let pause = match answer {
                Ok(ResponseKind::BrokerHeartbeat(r)) if r.error_code == 0 => {
                    let (pause, unfenced) = broker.answered(&r, interval);
                    if unfenced && out.unfenced_ms.is_none() {
                        out.unfenced_ms = Some(shared.start.elapsed().as_secs_f64() * 1000.0);
                    }
                    pause
                }
                other => {
                    let e = as_error(other, broker_id, "BrokerHeartbeat", &conn);
                    out.heartbeat_errors += 1;
                    after_error(&shared, &mut conn, &e).await;
                    let stale = [
                        ResponseError::StaleBrokerEpoch.code(),
                        ResponseError::BrokerIdNotRegistered.code(),
                    ];
                    if matches!(e, LoadError::Answer { code, .. } if stale.contains(&code)) {
                        continue 'register;
                    }
                    if broker.phase == Phase::Running {
                        interval
                    } else {
                        requests::CATCH_UP_PAUSE
                    }
                }
            };
            tokio::time::sleep_until((Instant::now() + pause).min(shared.deadline)).await;
        }
        break;
    }
    out
}

/// The error an answer stands for (`Ok` with an error code, a wrong body,
/// or a transport error).
fn as_error(
    answer: Result<ResponseKind, LoadError>,
    broker_id: i32,
    api: &'static str,
    conn: &Option<(Connection, u64)>,
) -> LoadError {
    let addr = conn
        .as_ref()
        .map(|(c, _)| c.addr().to_owned())
        .unwrap_or_default();
    let code = match &answer {
        Ok(ResponseKind::BrokerRegistration(r)) => r.error_code,
        Ok(ResponseKind::BrokerHeartbeat(r)) => r.error_code,
        Ok(_) => {
            return LoadError::WrongBody {
                broker_id,
                api,
                addr,
            };
        }
        Err(_) => 0,
    };
    match answer {
        Err(e) => e,
        Ok(_) => LoadError::Answer {
            broker_id,
            api,
            addr,
            code,
            name: error_name(code),
        },
    }
}

/// Reads the high watermark every `offset_poll_ms` until the deadline, on
/// one admin connection (opened again after an error).
async fn poll_offsets(shared: Arc<Shared>) {
    let period = Duration::from_millis(shared.args.offset_poll_ms);
    let mut admin: Option<AdminClient> = None;
    while Instant::now() < shared.deadline {
        if admin.is_none() {
            match AdminClient::connect_any(
                &shared.args.bootstrap_controller,
                Duration::from_secs(5),
            )
            .await
            {
                Ok(a) => admin = Some(a),
                Err(e) => eprintln!("offset poll: cannot connect: {e}"),
            }
        }
        if let Some(a) = admin.as_mut() {
            match a.describe_quorum().await {
                Ok(quorum) => {
                    shared
                        .metadata_offset
                        .fetch_max(quorum.high_watermark, Ordering::SeqCst);
                }
                Err(e) => {
                    eprintln!("offset poll: DescribeQuorum failed: {e}");
                    admin = None;
                }
            }
        }
        tokio::time::sleep(period).await;
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.first_broker_id.checked_add(args.brokers - 1).is_none() {
        eprintln!(
            "--first-broker-id {} with --brokers {}: the last broker id is past 2147483647",
            args.first_broker_id, args.brokers
        );
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the load and returns the JSON line.
async fn run(args: Args) -> Result<serde_json::Value, LoadError> {
    let (addr, hw) = discover(&args.bootstrap_controller).await?;
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.duration_s);
    let (brokers, first) = (args.brokers, args.first_broker_id);
    let shared = Arc::new(Shared {
        args,
        active: Mutex::new((addr, 0)),
        metadata_offset: AtomicI64::new(hw),
        start,
        deadline,
    });
    let poller = tokio::spawn(poll_offsets(shared.clone()));
    // main checked that the last id fits in an int32.
    let tasks: Vec<_> = (first..=first + (brokers - 1))
        .map(|id| tokio::spawn(run_broker(shared.clone(), id)))
        .collect();
    let mut total = Outcome::default();
    let mut unfenced = Vec::new();
    for task in tasks {
        let Ok(o) = task.await else { continue };
        total.registration.merge(&o.registration);
        total.heartbeat.merge(&o.heartbeat);
        total.heartbeat_running.merge(&o.heartbeat_running);
        total.registration_errors += o.registration_errors;
        total.heartbeats_sent += o.heartbeats_sent;
        total.heartbeats_answered += o.heartbeats_answered;
        total.heartbeat_errors += o.heartbeat_errors;
        unfenced.extend(o.unfenced_ms);
    }
    poller.abort();
    let all_unfenced_ms =
        (unfenced.len() == brokers as usize).then(|| unfenced.iter().copied().fold(0.0, f64::max));
    Ok(serde_json::json!({
        "brokers": brokers,
        "duration_s": shared.args.duration_s,
        "heartbeat_interval_ms": shared.args.heartbeat_interval_ms,
        "registrations": total.registration.len(),
        "registration_errors": total.registration_errors,
        "registration_p50_ms": total.registration.percentile(50.0),
        "registration_p99_ms": total.registration.percentile(99.0),
        "heartbeats_sent": total.heartbeats_sent,
        "heartbeats_answered": total.heartbeats_answered,
        "heartbeat_errors": total.heartbeat_errors,
        "heartbeat_p50_ms": total.heartbeat.percentile(50.0),
        "heartbeat_p99_ms": total.heartbeat.percentile(99.0),
        "heartbeat_p999_ms": total.heartbeat.percentile(99.9),
        "heartbeats_running": total.heartbeat_running.len(),
        "heartbeat_running_p50_ms": total.heartbeat_running.percentile(50.0),
        "heartbeat_running_p99_ms": total.heartbeat_running.percentile(99.0),
        "heartbeat_running_p999_ms": total.heartbeat_running.percentile(99.9),
        "unfenced_brokers": unfenced.len(),
        "all_unfenced_ms": all_unfenced_ms,
        "metadata_offset_seen": shared.metadata_offset.load(Ordering::SeqCst),
    }))
}
