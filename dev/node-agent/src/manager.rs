//! The pod manager: watches the pods bound to this node and keeps one
//! [`pod::run`](crate::pod::run) worker per pod uid, feeding it the latest object.
//!
//! It must not run containers itself; a worker ends when its pod is deleted,
//! and the manager then forgets it.

use std::{collections::HashMap, sync::Arc};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    runtime::{WatchStreamExt, watcher},
};
use tokio::{sync::watch, task::JoinSet};
use tracing::{info, warn};

use crate::pod::{self, Shared};

/// Watches pods with `spec.nodeName=<node>` until the watch stream ends.
pub async fn run(shared: Arc<Shared>, node: String) -> anyhow::Result<()> {
    let api: Api<Pod> = Api::all(shared.client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let mut stream = watcher(api, config).default_backoff().boxed();
    let mut workers: HashMap<String, watch::Sender<Option<Pod>>> = HashMap::new();
    let mut tasks: JoinSet<String> = JoinSet::new();
    // uids seen during a re-list, to notice pods deleted while the watch was down.
    let mut relisted: Option<Vec<String>> = None;
    loop {
        tokio::select! {
            event = stream.next() => {
                let Some(event) = event else { anyhow::bail!("the pod watch ended") };
                let event = match event {
                    Ok(e) => e,
                    Err(e) => {
                        warn!(error = %e, "pod watch error (retrying)");
                        continue;
                    }
                };
                match event {
                    watcher::Event::Init => relisted = Some(Vec::new()),
                    watcher::Event::InitApply(pod) | watcher::Event::Apply(pod) => {
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        if let Some(seen) = relisted.as_mut() {
                            seen.push(uid.clone());
                        }
                        match workers.get(&uid) {
                            Some(tx) => {
                                let _ = tx.send(Some(pod));
                            }
                            None => {
                                let (tx, rx) = watch::channel(Some(pod));
                                workers.insert(uid.clone(), tx);
                                let shared = shared.clone();
                                tasks.spawn(async move {
                                    pod::run(shared, rx).await;
                                    uid
                                });
                            }
                        }
                    }
                    watcher::Event::Delete(pod) => {
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        if let Some(tx) = workers.get(&uid) {
                            let _ = tx.send(None);
                        }
                    }
                    watcher::Event::InitDone => {
                        if let Some(seen) = relisted.take() {
                            for (uid, tx) in &workers {
                                if !seen.contains(uid) {
                                    let _ = tx.send(None);
                                }
                            }
                        }
                    }
                }
            }
            Some(done) = tasks.join_next() => {
                match done {
                    Ok(uid) => {
                        info!(%uid, "pod worker finished");
                        workers.remove(&uid);
                    }
                    Err(e) => warn!(error = %e, "a pod worker panicked"),
                }
            }
        }
    }
}
