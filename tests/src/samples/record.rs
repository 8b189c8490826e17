//! The recorder: [`Sampler`] takes a [`Sample`] of one quorum every
//! [`INTERVAL`] in a background task, from the API server (pods, PVCs, PVs),
//! each controller's `/metrics` (scraped from the host at the pod IP) and
//! the volumes' `meta.properties` (the host directories of the local
//! cluster's hostPath PVs). A sample that cannot be taken (the API server
//! does not answer) is skipped; a controller that does not answer within
//! [`SCRAPE_TIMEOUT`] has no view in it. Must not change anything.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
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

use super::{PodSample, Sample, View};
use crate::{Error, Result};

/// Time between the end of one sample and the start of the next.
pub const INTERVAL: Duration = Duration::from_millis(300);
/// Bounds one `/metrics` scrape (connect, request, answer).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);

/// Parses Kafka's raft-metrics (`kafka_server_raft_metrics_current_leader`,
/// `_current_epoch`, `_current_state{state="…"}`, `_number_of_voters`) out
/// of a Prometheus or OpenMetrics text page, HTTP headers before it
/// ignored; `None` without `current_epoch` (not a controller's page, or cut
/// short).
pub fn parse_view(text: &str) -> Option<View> {
    let mut view = View {
        leader: -1,
        epoch: 0,
        state: None,
        number_of_voters: None,
    };
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
            "number_of_voters" => view.number_of_voters = Some(value as i64),
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
            // A sample every INTERVAL; one that took longer delays the next.
            let mut ticks = tokio::time::interval(INTERVAL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Some(s) = sample(&client, &ns, &name, &mut pv_paths).await
                    && let Ok(mut v) = out.lock()
                {
                    v.push(s);
                }
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

/// Where a case keeps its recording: `<cache>/e2e-samples/<name>.jsonl`
/// (`$KRAFTWERK_CACHE`, as run.sh's `$samples_dir`; `name` is the
/// namespace, with what was recorded: `e2e-rs-roll-config`).
pub fn recording_path(name: &str) -> PathBuf {
    crate::cache_dir()
        .join("e2e-samples")
        .join(format!("{name}.jsonl"))
}

/// Writes `samples` to `path` as JSON lines, one sample a line, oldest
/// first (the format of samples.py's recordings: `t` in s, `pods` and
/// `views` by ordinal, `volumes` by PVC), replacing the file; creates its
/// directory.
///
/// Errors: [`Error::Io`] naming the path; [`Error::Invalid`] if a sample
/// does not serialize (it always does).
pub fn save(samples: &[Sample], path: &Path) -> Result<()> {
    let mut text = String::new();
    for s in samples {
        let line = serde_json::to_string(s)
            .map_err(|e| Error::Invalid(format!("serialize a sample: {e}")))?;
        text.push_str(&line);
        text.push('\n');
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(format!("create {}", dir.display())))?;
    }
    std::fs::write(path, text).map_err(Error::io(format!("write {}", path.display())))
}
