//! One pod's life on this node: the pod worker.
//!
//! A worker is started for each pod bound to this node and owns it until the
//! pod is gone: it sets up the network namespace and the hosts entry, prepares
//! the volumes (waiting for PVCs to be bound), runs the init containers one
//! after the other, then every container, each in its own task that restarts
//! it per `restartPolicy` (with a doubling back-off, 1 s to 30 s) and runs its
//! probes. It writes the pod status back whenever it changes: phase, pod IP,
//! conditions (PodScheduled, PodReadyToStartContainers, Initialized,
//! ContainersReady, Ready) and container statuses with state, last state,
//! restart count and readiness.
//!
//! When the pod gets a `deletionTimestamp`, the worker stops every container
//! (SIGTERM, SIGKILL after the grace period), removes the network namespace and
//! the pod's directory, and deletes the pod with grace 0, as a kubelet does.
//! A pod that is already Succeeded, Failed or deleting when first seen is not
//! run again.
//! This module must not bind pods or touch other pods.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{
        Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
        ContainerStateWaiting, ContainerStatus, Pod, PodCondition,
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
};
use serde_json::json;
use tokio::{sync::watch, task::JoinSet, time::Instant};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{
    env::{PodContext, container_env, expand, hostname},
    hosts::{HostEntry, Hosts},
    images::ImageMap,
    mounts::{image_mounts, volume_mounts},
    net::{Network, PodNetwork},
    probes::{Prober, resolve_named_ports},
    process::{self, Launch, exit_code, spawn, stop},
    volumes::Volumes,
};

/// What every pod worker shares.
pub struct Shared {
    /// API client (an administrator's).
    pub client: Client,
    /// Image → program map.
    pub images: ImageMap,
    /// Bridge and pod IPs.
    pub network: Network,
    /// The hosts files.
    pub hosts: Hosts,
    /// Volume directories.
    pub volumes: Volumes,
    /// Where container logs go: `<logs>/<namespace>/<pod>/<container>.log`.
    pub logs_dir: PathBuf,
    /// The API server's port (its host is the bridge address).
    pub api_port: u16,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("network", &self.network)
            .field("logs_dir", &self.logs_dir)
            .finish_non_exhaustive()
    }
}

/// Shortest and longest wait before restarting a container.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A container that ran this long gets its back-off reset.
const BACKOFF_RESET: Duration = Duration::from_secs(60);
/// How often volumes (ConfigMaps, tokens) are refreshed.
const VOLUME_REFRESH: Duration = Duration::from_secs(30);

/// The part of the pod status that container tasks update.
#[derive(Debug, Default)]
struct State {
    pod_ip: Option<String>,
    start_time: Option<Time>,
    /// Why the pod cannot start yet (network, volumes), shown on waiting containers.
    setup_error: Option<String>,
    sandbox_ready: bool,
    initialized: bool,
    /// An init container failed under restartPolicy Never.
    init_failed: bool,
    init: Vec<ContainerStatus>,
    main: Vec<ContainerStatus>,
}

fn now() -> Time {
    Time(Timestamp::now())
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            message,
        }),
        ..ContainerState::default()
    }
}

fn initial_status(c: &Container) -> ContainerStatus {
    ContainerStatus {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        image_id: c.image.clone().unwrap_or_default(),
        ready: false,
        started: Some(false),
        restart_count: 0,
        state: Some(waiting("PodInitializing", None)),
        ..ContainerStatus::default()
    }
}

/// Runs the pod in `rx` until it is deleted. `rx` carries the latest pod
/// object, `None` once it has disappeared from the API.
pub async fn run(shared: Arc<Shared>, mut rx: watch::Receiver<Option<Pod>>) {
    let Some(pod) = rx.borrow_and_update().clone() else {
        return;
    };
    let key = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default();
    // A pod first seen finished, or already being deleted, is not (re)started.
    let terminal =
        phase == "Succeeded" || phase == "Failed" || pod.metadata.deletion_timestamp.is_some();
    let worker = Worker::new(shared.clone(), pod.clone());
    if terminal {
        info!(pod = %key, %phase, "pod already finished; waiting for its deletion");
    } else {
        info!(pod = %key, "starting pod");
    }
    let cancel = CancellationToken::new();
    let mut tasks = JoinSet::new();
    if !terminal {
        let w = worker.clone();
        let c = cancel.clone();
        tasks.spawn(async move { w.start(c).await });
    }
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut last_pushed = serde_json::Value::Null;
    let mut conditions = Conditions::default();
    let deletion = |p: &Pod| {
        let spec_grace = p
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds);
        let secs = p
            .metadata
            .deletion_grace_period_seconds
            .or(spec_grace)
            .unwrap_or(30);
        Duration::from_secs(u64::try_from(secs).unwrap_or(0))
    };
    let (grace, delete_from_api) = loop {
        if pod.metadata.deletion_timestamp.is_some() {
            break (deletion(&pod), true);
        }
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    break (Duration::from_secs(2), false);
                }
                let current = rx.borrow_and_update().clone();
                match current {
                    // Gone from the API (a forced deletion): stop quickly.
                    None => break (Duration::from_secs(2), false),
                    Some(p) if p.metadata.deletion_timestamp.is_some() => break (deletion(&p), true),
                    Some(_) => {}
                }
            }
            _ = tick.tick(), if !terminal => {
                let status = worker.status(&mut conditions);
                if status != last_pushed {
                    match worker.push(&status).await {
                        Ok(()) => last_pushed = status,
                        Err(e) => warn!(pod = %key, error = %e, "could not write pod status"),
                    }
                }
            }
        }
    };
    info!(pod = %key, grace_s = grace.as_secs(), "stopping pod");
    *worker.grace.lock().unwrap_or_else(|p| p.into_inner()) = grace;
    cancel.cancel();
    while tasks.join_next().await.is_some() {}
    worker.teardown().await;
    if delete_from_api {
        let api: Api<Pod> = Api::namespaced(
            shared.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api
            .delete(pod.metadata.name.as_deref().unwrap_or_default(), &params)
            .await
        {
            Ok(_) => info!(pod = %key, "pod deleted"),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => warn!(pod = %key, error = %e, "could not delete the pod"),
        }
    }
}

/// Condition types and when each last changed, kept across status writes.
#[derive(Debug, Default)]
struct Conditions {
    since: BTreeMap<&'static str, (bool, Time)>,
}

impl Conditions {
    fn condition(&mut self, kind: &'static str, status: bool) -> PodCondition {
        let entry = self.since.entry(kind).or_insert_with(|| (status, now()));
        if entry.0 != status {
            *entry = (status, now());
        }
        PodCondition {
            type_: kind.into(),
            status: if status { "True" } else { "False" }.into(),
            last_transition_time: Some(entry.1.clone()),
            ..PodCondition::default()
        }
    }
}

/// One pod's worker; clones share the state.
#[derive(Debug, Clone)]
struct Worker {
    shared: Arc<Shared>,
    pod: Arc<Pod>,
    key: String,
    state: Arc<Mutex<State>>,
    net: Arc<Mutex<Option<PodNetwork>>>,
    grace: Arc<Mutex<Duration>>,
}

impl Worker {
    fn new(shared: Arc<Shared>, pod: Pod) -> Self {
        let spec = pod.spec.clone().unwrap_or_default();
        let state = State {
            init: spec
                .init_containers
                .iter()
                .flatten()
                .map(initial_status)
                .collect(),
            main: spec.containers.iter().map(initial_status).collect(),
            ..State::default()
        };
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        Self {
            shared,
            pod: Arc::new(pod),
            key,
            state: Arc::new(Mutex::new(state)),
            net: Arc::default(),
            grace: Arc::new(Mutex::new(Duration::from_secs(30))),
        }
    }

    fn uid(&self) -> String {
        self.pod.metadata.uid.clone().unwrap_or_default()
    }

    fn restart_policy(&self) -> String {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.clone())
            .unwrap_or_else(|| "Always".into())
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn ctx(&self) -> PodContext {
        let host = self.shared.network.host_ip().to_string();
        PodContext {
            pod_ip: self.with_state(|s| s.pod_ip.clone()).unwrap_or_default(),
            host_ip: host.clone(),
            api_host: host,
            api_port: self.shared.api_port,
        }
    }

    /// Network, volumes, init containers, then the containers; returns when
    /// every container task has ended (cancelled, or finished for good).
    async fn start(&self, cancel: CancellationToken) {
        self.with_state(|s| s.start_time = Some(now()));
        // Network: retried until it works or the pod is stopped.
        let net = loop {
            match self.shared.network.setup(&self.uid()).await {
                Ok(net) => break net,
                Err(e) => {
                    warn!(pod = %self.key, error = %e, "pod network setup failed; retrying");
                    self.with_state(|s| s.setup_error = Some(e.to_string()));
                    if pause(&cancel, Duration::from_secs(2)).await {
                        return;
                    }
                }
            }
        };
        *self.net.lock().unwrap_or_else(|p| p.into_inner()) = Some(net.clone());
        let spec = self.pod.spec.clone().unwrap_or_default();
        let entry = HostEntry {
            netns: net.netns.clone(),
            ip: net.ip,
            hostname: hostname(&self.pod),
            subdomain: spec.subdomain.clone(),
            namespace: self.pod.metadata.namespace.clone().unwrap_or_default(),
        };
        if let Err(e) = self.shared.hosts.set(&self.uid(), entry) {
            warn!(pod = %self.key, error = %e, "could not write the hosts files");
        }
        self.with_state(|s| {
            s.pod_ip = Some(net.ip.to_string());
            s.sandbox_ready = true;
        });
        // Volumes: wait until all are ready (e.g. PVCs bound).
        let volumes = loop {
            match self.shared.volumes.prepare(&self.pod, &self.ctx()).await {
                Ok(v) => break v,
                Err(e) => {
                    self.with_state(|s| s.setup_error = Some(e.to_string()));
                    if pause(&cancel, Duration::from_secs(1)).await {
                        return;
                    }
                }
            }
        };
        self.with_state(|s| s.setup_error = None);
        let volumes = Arc::new(volumes);
        // Refresh ConfigMap, Secret and token contents while the pod lives.
        let refresher = {
            let w = self.clone();
            let c = cancel.clone();
            tokio::spawn(async move {
                while !pause(&c, VOLUME_REFRESH).await {
                    if let Err(e) = w.shared.volumes.prepare(&w.pod, &w.ctx()).await {
                        warn!(pod = %w.key, error = %e, "could not refresh volumes");
                    }
                }
            })
        };
        for (i, c) in spec.init_containers.iter().flatten().enumerate() {
            let ok = self
                .run_container(c.clone(), i, true, &net, &volumes, &cancel)
                .await;
            if !ok {
                refresher.abort();
                return;
            }
        }
        self.with_state(|s| s.initialized = true);
        let mut tasks = JoinSet::new();
        for (i, c) in spec.containers.iter().enumerate() {
            let w = self.clone();
            let (c, net, volumes, cancel) =
                (c.clone(), net.clone(), volumes.clone(), cancel.clone());
            tasks.spawn(async move { w.run_container(c, i, false, &net, &volumes, &cancel).await });
        }
        while tasks.join_next().await.is_some() {}
        refresher.abort();
        // Every container has finished for good (or the pod is stopping): the
        // namespace holds nothing that runs, so give back the IP now.
        if !cancel.is_cancelled() {
            self.release_network().await;
        }
    }

    fn set_container(&self, init: bool, index: usize, f: impl FnOnce(&mut ContainerStatus)) {
        self.with_state(|s| {
            let list = if init { &mut s.init } else { &mut s.main };
            if let Some(status) = list.get_mut(index) {
                f(status);
            }
        });
    }

    async fn launch(
        &self,
        c: &Container,
        net: &PodNetwork,
        volumes: &BTreeMap<String, PathBuf>,
    ) -> Result<Launch, String> {
        let env = container_env(&self.shared.client, &self.pod, c, &self.ctx())
            .await
            .map_err(|e| e.to_string())?;
        let image = self.shared.images.resolve(c).map_err(|e| e.to_string())?;
        let argv: Vec<String> = image.argv.iter().map(|a| expand(a, &env)).collect();
        let mut mounts = match &image.root {
            Some(root) => {
                let dir = self.shared.volumes.pod_dir(&self.uid());
                image_mounts(root, &dir.join("containers").join(&c.name))
                    .map_err(|e| e.to_string())?
            }
            None => Vec::new(),
        };
        mounts.extend(volume_mounts(c, volumes).map_err(|e| e.to_string())?);
        let namespace = self.pod.metadata.namespace.clone().unwrap_or_default();
        let name = self.pod.metadata.name.clone().unwrap_or_default();
        Ok(Launch {
            argv,
            env,
            mounts,
            working_dir: c.working_dir.clone(),
            hostname: hostname(&self.pod),
            netns: net.netns.clone(),
            log_path: self
                .shared
                .logs_dir
                .join(namespace)
                .join(name)
                .join(format!("{}.log", c.name)),
        })
    }

    /// Runs one container, restarting it per policy. Returns true when it
    /// finished in a way that lets the pod go on (init container exit 0).
    async fn run_container(
        &self,
        c: Container,
        index: usize,
        init: bool,
        net: &PodNetwork,
        volumes: &BTreeMap<String, PathBuf>,
        cancel: &CancellationToken,
    ) -> bool {
        let policy = self.restart_policy();
        let ip = net.ip.to_string();
        let mut backoff = BACKOFF_MIN;
        loop {
            if cancel.is_cancelled() {
                return false;
            }
            let launch = match self.launch(&c, net, volumes).await {
                Ok(l) => l,
                Err(e) => {
                    warn!(pod = %self.key, container = %c.name, error = %e, "cannot create container");
                    self.set_container(init, index, |s| {
                        s.state = Some(waiting("CreateContainerConfigError", Some(e)))
                    });
                    if pause(cancel, backoff).await {
                        return false;
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
            };
            let log_start = process::log_offset(&launch.log_path);
            let mut child = match spawn(&launch) {
                Ok(child) => child,
                Err(e) => {
                    warn!(pod = %self.key, container = %c.name, error = %e, "cannot start container");
                    self.set_container(init, index, |s| {
                        s.state = Some(waiting("RunContainerError", Some(e.to_string())))
                    });
                    if pause(cancel, backoff).await {
                        return false;
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
            };
            let started_at = now();
            let started = Instant::now();
            let restart = self.with_state(|s| {
                let list = if init { &s.init } else { &s.main };
                list.get(index).map(|x| x.restart_count).unwrap_or(0)
            });
            info!(pod = %self.key, container = %c.name, pid = ?child.id(), restart, argv = ?launch.argv, "container started");
            let mut startup = (!init)
                .then(|| c.startup_probe.clone())
                .flatten()
                .map(|p| resolve_named_ports(p, c.ports.as_deref().unwrap_or_default()))
                .map(|p| Prober::new(p, started, false));
            let mut readiness = (!init)
                .then(|| c.readiness_probe.clone())
                .flatten()
                .map(|p| resolve_named_ports(p, c.ports.as_deref().unwrap_or_default()))
                .map(|p| Prober::new(p, started, false));
            let mut liveness = (!init)
                .then(|| c.liveness_probe.clone())
                .flatten()
                .map(|p| resolve_named_ports(p, c.ports.as_deref().unwrap_or_default()))
                .map(|p| Prober::new(p, started, true));
            let uid = self.uid();
            let update = |ready: bool, started_ok: bool| {
                self.set_container(init, index, |s| {
                    s.state = Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(started_at.clone()),
                        }),
                        ..ContainerState::default()
                    });
                    s.container_id =
                        Some(format!("kraftwerk://{uid}/{}/{}", c.name, s.restart_count));
                    s.ready = ready;
                    s.started = Some(started_ok);
                })
            };
            update(
                !init && startup.is_none() && readiness.is_none(),
                startup.is_none(),
            );
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            let mut unhealthy = false;
            let status = loop {
                tokio::select! {
                    status = child.wait() => break status.ok(),
                    _ = cancel.cancelled() => {
                        let grace = *self.grace.lock().unwrap_or_else(|p| p.into_inner());
                        break stop(&mut child, grace).await;
                    }
                    _ = tick.tick() => {
                        let now_i = Instant::now();
                        if let Some(p) = startup.as_mut().filter(|p| !p.ok) {
                            if p.due(now_i) {
                                p.check(&ip, &net.netns).await;
                                if p.failed() {
                                    warn!(pod = %self.key, container = %c.name, "startup probe failed; restarting");
                                    unhealthy = true;
                                    break stop(&mut child, self.pod_grace()).await;
                                }
                            }
                            continue;
                        }
                        if let Some(p) = liveness.as_mut().filter(|p| p.due(now_i)) {
                            p.check(&ip, &net.netns).await;
                            if p.failed() {
                                warn!(pod = %self.key, container = %c.name, "liveness probe failed; restarting");
                                unhealthy = true;
                                break stop(&mut child, self.pod_grace()).await;
                            }
                        }
                        if let Some(p) = readiness.as_mut().filter(|p| p.due(now_i)) {
                            p.check(&ip, &net.netns).await;
                        }
                        update(!init && readiness.as_ref().is_none_or(|p| p.ok), true);
                    }
                }
            };
            let code = status.as_ref().map(exit_code).unwrap_or(-1);
            let reason = if unhealthy {
                "Error"
            } else if cancel.is_cancelled() && code != 0 {
                "Killed"
            } else if code == 0 {
                "Completed"
            } else {
                "Error"
            };
            info!(pod = %self.key, container = %c.name, code, reason, "container exited");
            // FallbackToLogsOnError: a failed container's log tail becomes
            // its termination message, as the kubelet does.
            let message = (code != 0
                && c.termination_message_policy.as_deref() == Some("FallbackToLogsOnError"))
            .then(|| process::termination_message(&launch.log_path, log_start))
            .flatten();
            let terminated = ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    reason: Some(reason.into()),
                    message,
                    started_at: Some(started_at.clone()),
                    finished_at: Some(now()),
                    container_id: Some(format!("kraftwerk://{uid}/{}", c.name)),
                    ..ContainerStateTerminated::default()
                }),
                ..ContainerState::default()
            };
            self.set_container(init, index, |s| {
                s.state = Some(terminated.clone());
                s.ready = false;
                s.started = Some(false);
            });
            if cancel.is_cancelled() {
                return false;
            }
            let again = match (init, policy.as_str()) {
                (true, _) if code == 0 => return true,
                (true, "Never") => {
                    self.with_state(|s| s.init_failed = true);
                    return false;
                }
                (true, _) => true,
                (false, "Always") => true,
                (false, "OnFailure") => code != 0,
                _ => false,
            };
            if !again {
                return code == 0;
            }
            if started.elapsed() >= BACKOFF_RESET {
                backoff = BACKOFF_MIN;
            }
            self.set_container(init, index, |s| {
                s.restart_count += 1;
                s.last_state = Some(terminated);
                s.state = Some(waiting(
                    "CrashLoopBackOff",
                    Some(format!(
                        "back-off {}s restarting failed container {}",
                        backoff.as_secs(),
                        c.name
                    )),
                ));
            });
            if pause(cancel, backoff).await {
                return false;
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    fn pod_grace(&self) -> Duration {
        let secs = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(30);
        Duration::from_secs(u64::try_from(secs).unwrap_or(0))
    }

    async fn release_network(&self) {
        let net = self.net.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(net) = net {
            let _ = self.shared.hosts.remove(&self.uid());
            self.shared.network.teardown(&net).await;
        }
    }

    async fn teardown(&self) {
        self.release_network().await;
        self.shared.volumes.cleanup(&self.uid());
    }

    /// The pod status as JSON (for a merge patch of the status subresource).
    fn status(&self, conditions: &mut Conditions) -> serde_json::Value {
        let policy = self.restart_policy();
        self.with_state(|s| {
            let mut init = s.init.clone();
            let mut main = s.main.clone();
            if let Some(err) = &s.setup_error {
                let reason = if s.sandbox_ready {
                    "ContainerCreating"
                } else {
                    "PodInitializing"
                };
                for c in init.iter_mut().chain(main.iter_mut()) {
                    if c.state.as_ref().and_then(|x| x.waiting.as_ref()).is_some() {
                        c.state = Some(waiting(reason, Some(err.clone())));
                    }
                }
            }
            let phase = phase(s, &policy);
            let containers_ready = s.initialized && main.iter().all(|c| c.ready);
            let conds = vec![
                conditions.condition("PodReadyToStartContainers", s.sandbox_ready),
                conditions.condition("Initialized", s.initialized),
                conditions.condition("ContainersReady", containers_ready),
                conditions.condition("Ready", containers_ready && phase == "Running"),
                conditions.condition("PodScheduled", true),
            ];
            let host = self.shared.network.host_ip().to_string();
            json!({
                "status": {
                    "phase": phase,
                    "hostIP": host,
                    "hostIPs": [{"ip": host}],
                    "podIP": s.pod_ip,
                    "podIPs": s.pod_ip.as_ref().map(|ip| vec![json!({"ip": ip})]),
                    "startTime": s.start_time,
                    "conditions": conds,
                    "initContainerStatuses": if init.is_empty() { None } else { Some(init) },
                    "containerStatuses": main,
                }
            })
        })
    }

    async fn push(&self, status: &serde_json::Value) -> Result<(), kube::Error> {
        let api: Api<Pod> = Api::namespaced(
            self.shared.client.clone(),
            self.pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = self.pod.metadata.name.as_deref().unwrap_or_default();
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The pod phase from the containers' states and the restart policy.
fn phase(s: &State, policy: &str) -> &'static str {
    if s.init_failed {
        return "Failed";
    }
    if !s.initialized {
        return "Pending";
    }
    let never_started = |c: &ContainerStatus| {
        c.restart_count == 0 && c.state.as_ref().is_some_and(|x| x.waiting.is_some())
    };
    if s.main.iter().any(never_started) {
        return "Pending";
    }
    let exit = |c: &ContainerStatus| {
        c.state
            .as_ref()
            .and_then(|x| x.terminated.as_ref())
            .map(|t| t.exit_code)
    };
    let done = |c: &ContainerStatus| {
        matches!(
            (exit(c), policy),
            (Some(_), "Never") | (Some(0), "OnFailure")
        )
    };
    if !s.main.is_empty() && s.main.iter().all(done) {
        if s.main.iter().all(|c| exit(c) == Some(0)) {
            "Succeeded"
        } else {
            "Failed"
        }
    } else {
        "Running"
    }
}

/// Sleeps `d` unless cancelled first; returns true when cancelled.
async fn pause(cancel: &CancellationToken, d: Duration) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: ContainerState, restarts: i32) -> ContainerStatus {
        ContainerStatus {
            name: "c".into(),
            state: Some(state),
            restart_count: restarts,
            ..ContainerStatus::default()
        }
    }

    fn terminated(code: i32) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        }
    }

    fn running() -> ContainerState {
        ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..ContainerState::default()
        }
    }

    fn state(main: Vec<ContainerStatus>) -> State {
        State {
            initialized: true,
            main,
            ..State::default()
        }
    }

    #[test]
    fn a_pod_is_pending_until_init_is_done_and_every_container_started() {
        let mut s = state(vec![
            status(running(), 0),
            status(waiting("PodInitializing", None), 0),
        ]);
        assert_eq!(phase(&s, "Always"), "Pending");
        s.main[1] = status(running(), 0);
        assert_eq!(phase(&s, "Always"), "Running");
        s.initialized = false;
        assert_eq!(phase(&s, "Always"), "Pending");
    }

    #[test]
    fn exits_end_the_pod_only_when_the_policy_does_not_restart() {
        let ok = state(vec![status(terminated(0), 0)]);
        let failed = state(vec![status(terminated(1), 0)]);
        assert_eq!(phase(&ok, "Always"), "Running");
        assert_eq!(phase(&ok, "OnFailure"), "Succeeded");
        assert_eq!(phase(&failed, "OnFailure"), "Running");
        assert_eq!(phase(&failed, "Never"), "Failed");
        assert_eq!(phase(&ok, "Never"), "Succeeded");
    }

    #[test]
    fn a_crash_looping_container_keeps_the_pod_running() {
        let s = state(vec![status(waiting("CrashLoopBackOff", None), 3)]);
        assert_eq!(phase(&s, "Always"), "Running");
    }

    #[test]
    fn a_failed_init_container_under_never_fails_the_pod() {
        let s = State {
            init_failed: true,
            ..State::default()
        };
        assert_eq!(phase(&s, "Never"), "Failed");
    }
}
