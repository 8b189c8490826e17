//! Sampling a KraftQuorum's pods and controllers while a case runs, and the
//! checks on the samples afterwards (the Rust port of tests/e2e/samples.py,
//! cases 3 and 6 of run.sh).
//!
//! [`Sampler`] records, every ~0.3 s: the pods (ordinal, uid, ready,
//! deleting, revision), each controller's own Raft view from its `/metrics`
//! (Kafka's raft-metrics: current leader, epoch, state, number of voters),
//! and the cluster id in each volume's `meta.properties` (the PVs are
//! hostPath directories of the local cluster, read from the host).
//! [`check_one_quorum`] and [`check_roll`] judge them. Must not change the
//! quorum.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kraft_operator::crd::{CONTROLLER_HTTP_PORT, LABEL_INSTANCE, LABEL_POD_INDEX};
use kube::{Api, Client, api::ListParams};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::Result;

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_millis(300);
/// Bounds one `/metrics` scrape (connect, request, answer).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);

/// A pod as one sample saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSample {
    /// `metadata.uid`.
    pub uid: String,
    /// Condition Ready True.
    pub ready: bool,
    /// Has a `deletionTimestamp`.
    pub deleting: bool,
    /// Label `controller-revision-hash`.
    pub revision: Option<String>,
}

/// One controller's own Raft view (`kafka_server_raft_metrics_*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// `current_leader` (-1: none).
    pub leader: i64,
    /// `current_epoch`.
    pub epoch: i64,
    /// The `current_state{state=…}` at 1 (`leader`, `follower`, …).
    pub state: Option<String>,
}

impl View {
    /// The leader this view names: itself when it leads, else its
    /// `current_leader` (-1: none).
    pub fn leader_for(&self, node: i64) -> i64 {
        if self.state.as_deref() == Some("leader") {
            node
        } else {
            self.leader
        }
    }
}

/// One sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Wall-clock time, s since the Unix epoch.
    pub t: f64,
    /// Pods by ordinal.
    pub pods: BTreeMap<i64, PodSample>,
    /// Views by ordinal (the pods that answered `/metrics`).
    pub views: BTreeMap<i64, View>,
    /// Cluster id in `meta.properties` by PVC name.
    pub volumes: BTreeMap<String, String>,
}

/// Parses Kafka's raft-metrics out of a Prometheus text page; `None`
/// without `current_epoch`.
pub fn parse_view(text: &str) -> Option<View> {
    let mut view = View::default();
    let mut epoch = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("kafka_server_raft_metrics_") else {
            continue;
        };
        let Some((name, value)) = rest.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        match name {
            "current_leader" => view.leader = value as i64,
            "current_epoch" => epoch = Some(value as i64),
            _ => {
                if let Some(state) = name
                    .strip_prefix("current_state{state=\"")
                    .and_then(|s| s.strip_suffix("\"}"))
                    && value == 1.0
                {
                    view.state = Some(state.to_owned());
                }
            }
        }
    }
    view.epoch = epoch?;
    Some(view)
}

/// `GET /metrics` of the controller at `ip` (HTTP/1.0); `None` when it does
/// not answer within [`SCRAPE_TIMEOUT`].
async fn scrape(ip: &str) -> Option<View> {
    let work = async {
        let mut s = TcpStream::connect((ip, CONTROLLER_HTTP_PORT as u16))
            .await
            .ok()?;
        s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {ip}\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut body = Vec::new();
        s.read_to_end(&mut body).await.ok()?;
        parse_view(&String::from_utf8_lossy(&body))
    };
    tokio::time::timeout(SCRAPE_TIMEOUT, work)
        .await
        .ok()
        .flatten()
}

/// The `cluster.id` of `<path>/data/meta.properties`.
fn meta_cluster_id(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("{path}/data/meta.properties")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("cluster.id="))
        .map(|s| s.trim().to_owned())
}

/// Takes one sample of the quorum `name` in `ns`; `pv_paths` caches the
/// host directory of each PV.
async fn sample(
    client: &Client,
    ns: &str,
    name: &str,
    pv_paths: &mut BTreeMap<String, String>,
) -> Option<Sample> {
    let lp = ListParams::default().labels(&format!("{LABEL_INSTANCE}={name}"));
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .ok()?;
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .ok()?;
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    let mut s = Sample {
        t,
        ..Sample::default()
    };
    for p in &pods.items {
        let labels = p.metadata.labels.clone().unwrap_or_default();
        let Some(ordinal) = labels.get(LABEL_POD_INDEX).and_then(|o| o.parse().ok()) else {
            continue;
        };
        let status = p.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let deleting = p.metadata.deletion_timestamp.is_some();
        s.pods.insert(
            ordinal,
            PodSample {
                uid: p.metadata.uid.clone().unwrap_or_default(),
                ready,
                deleting,
                revision: labels.get("controller-revision-hash").cloned(),
            },
        );
        if let (Some(ip), false) = (status.pod_ip.as_deref(), deleting)
            && let Some(v) = scrape(ip).await
        {
            s.views.insert(ordinal, v);
        }
    }
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    for c in &claims.items {
        let Some(pv) = c.spec.as_ref().and_then(|s| s.volume_name.clone()) else {
            continue;
        };
        if !pv_paths.contains_key(&pv)
            && let Some(path) = pvs
                .get_opt(&pv)
                .await
                .ok()
                .flatten()
                .and_then(|v| v.spec?.host_path)
                .map(|h| h.path)
        {
            pv_paths.insert(pv.clone(), path);
        }
        if let Some(cid) = pv_paths.get(&pv).and_then(|p| meta_cluster_id(p)) {
            s.volumes
                .insert(c.metadata.name.clone().unwrap_or_default(), cid);
        }
    }
    Some(s)
}

/// A recording in the background of one quorum (`samples.py record`).
#[derive(Debug)]
pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `ns`/`name`; returns once the first sample is taken
    /// (up to 60 s).
    ///
    /// Errors: [`crate::Error::Timeout`] when no sample could be taken.
    pub async fn start(client: &Client, ns: &str, name: &str) -> Result<Sampler> {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (client, ns, name, out) = (
            client.clone(),
            ns.to_owned(),
            name.to_owned(),
            samples.clone(),
        );
        let task = tokio::spawn(async move {
            let mut pv_paths = BTreeMap::new();
            loop {
                if let Some(s) = sample(&client, &ns, &name, &mut pv_paths).await
                    && let Ok(mut v) = out.lock()
                {
                    v.push(s);
                }
                tokio::time::sleep(INTERVAL).await;
            }
        });
        let sampler = Sampler { samples, task };
        crate::wait::poll("the first sample", Duration::from_secs(60), || async {
            Ok((!sampler.is_empty()).then_some(()))
        })
        .await?;
        Ok(sampler)
    }

    /// Samples so far.
    pub fn len(&self) -> usize {
        self.samples.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// Whether none was taken yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops sampling and returns every sample, oldest first.
    pub fn stop(self) -> Vec<Sample> {
        self.task.abort();
        self.samples.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// No second quorum was ever formed (`check-one-quorum`): at least 10
/// samples saw a controller; every volume holds `cluster_id` and at least
/// `min_nodes` volumes were read; at least `min_nodes` nodes answered; one
/// sample had `min_nodes` controllers agreeing on one leader and epoch; and
/// across every view (counted once the same node reported it twice, since
/// a scrape may pair a new epoch with the old leader) one leader per epoch.
/// `Ok` with a summary, `Err` with the reason.
pub fn check_one_quorum(
    samples: &[Sample],
    cluster_id: &str,
    min_nodes: usize,
) -> std::result::Result<String, String> {
    let viewed = samples.iter().filter(|s| !s.views.is_empty()).count();
    if viewed < 10 {
        return Err(format!(
            "only {viewed} samples saw a controller; nothing was observed"
        ));
    }
    let mut ids: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in samples {
        for (pvc, cid) in &s.volumes {
            ids.entry(cid.as_str()).or_default().insert(pvc.as_str());
        }
    }
    if ids.keys().copied().collect::<Vec<_>>() != [cluster_id] {
        return Err(format!(
            "volumes hold cluster ids {ids:?}, want only {cluster_id}"
        ));
    }
    let volumes = &ids[cluster_id];
    if volumes.len() < min_nodes {
        return Err(format!(
            "only volumes {volumes:?} were read, want {min_nodes}"
        ));
    }
    let mut seen: BTreeMap<(i64, i64, i64), Vec<f64>> = BTreeMap::new();
    let mut nodes = BTreeSet::new();
    let mut agreed = false;
    for s in samples {
        let mut pairs = BTreeSet::new();
        for (node, v) in &s.views {
            nodes.insert(*node);
            let leader = v.leader_for(*node);
            if leader >= 0 {
                seen.entry((*node, v.epoch, leader)).or_default().push(s.t);
                pairs.insert((v.epoch, leader));
            }
        }
        if s.views.len() >= min_nodes && pairs.len() == 1 && s.views.values().all(|v| v.leader >= 0)
        {
            agreed = true;
        }
    }
    if nodes.len() < min_nodes {
        return Err(format!(
            "only nodes {nodes:?} answered /metrics, want {min_nodes}"
        ));
    }
    if !agreed {
        return Err(format!(
            "no sample where {min_nodes} controllers agreed on one leader and epoch"
        ));
    }
    let mut leaders: BTreeMap<i64, BTreeMap<i64, Vec<(i64, f64)>>> = BTreeMap::new();
    for ((node, epoch, leader), times) in &seen {
        if times.len() >= 2 {
            leaders
                .entry(*epoch)
                .or_default()
                .entry(*leader)
                .or_default()
                .push((*node, times[0]));
        }
    }
    for (epoch, by_leader) in &leaders {
        if by_leader.len() > 1 {
            return Err(format!(
                "epoch {epoch} has leaders {by_leader:?} (seen by node, at time)"
            ));
        }
    }
    let per_epoch: Vec<String> = leaders
        .iter()
        .filter_map(|(e, b)| Some(format!("{e}:{}", b.keys().next()?)))
        .collect();
    Ok(format!(
        "{} samples, nodes {nodes:?}, volumes {volumes:?} all of cluster {cluster_id}; leader per epoch: {}",
        samples.len(),
        per_epoch.join(", ")
    ))
}
