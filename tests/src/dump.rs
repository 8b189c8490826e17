//! Everything needed to debug a failed cluster test from its log alone (the
//! `dump` of tests/e2e/lib.sh): the KraftQuorums as YAML, the pods, PVCs,
//! StatefulSets and Services, the events in order, the operator's pods and
//! log, and the end of every container log of the namespace. Best effort:
//! it prints what it cannot read and never fails.

use std::{fmt::Write as _, path::Path};

use k8s_openapi::api::{
    apps::v1::StatefulSet,
    core::v1::{Event, PersistentVolumeClaim, Pod, Service},
};
use kraft_operator::crd::KraftQuorum;
use kube::{Api, Client, ResourceExt, api::ListParams};

use crate::cluster::{logs_dir, operator_namespace};

/// Lines of the operator's log printed (its end).
pub const OPERATOR_LOG_LINES: usize = 200;
/// Lines of each container log of the namespace printed (its end).
pub const CONTAINER_LOG_LINES: usize = 100;

/// Prints the dump of `ns` to stderr.
pub async fn namespace(client: &Client, ns: &str) {
    eprintln!("{}", render(client, ns).await);
}

/// The dump of `ns` as text.
pub async fn render(client: &Client, ns: &str) -> String {
    let mut out = format!("==== dump of namespace {ns}\n");
    let lp = ListParams::default();
    let kqs: Api<KraftQuorum> = Api::namespaced(client.clone(), ns);
    match kqs.list(&lp).await {
        Ok(list) => {
            for mut kq in list.items {
                kq.metadata.managed_fields = None;
                match serde_yaml::to_string(&kq) {
                    Ok(y) => {
                        let _ = writeln!(out, "---\n{y}");
                    }
                    Err(e) => {
                        let _ = writeln!(out, "(KraftQuorum {} as YAML: {e})", kq.name_any());
                    }
                }
            }
        }
        Err(e) => {
            let _ = writeln!(out, "(list KraftQuorums: {e})");
        }
    }
    pods(&mut out, client, ns).await;
    match Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
    {
        Ok(list) => {
            for c in list.items {
                let status = c.status.unwrap_or_default();
                let volume = c.spec.and_then(|s| s.volume_name).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "pvc/{} {} {volume}",
                    c.metadata.name.unwrap_or_default(),
                    status.phase.unwrap_or_default()
                );
            }
        }
        Err(e) => {
            let _ = writeln!(out, "(list PVCs: {e})");
        }
    }
    match Api::<StatefulSet>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
    {
        Ok(list) => {
            for s in list.items {
                let spec = s.spec.map(|s| s.replicas.unwrap_or(1)).unwrap_or_default();
                let st = s.status.unwrap_or_default();
                let _ = writeln!(
                    out,
                    "statefulset/{} replicas {spec} ready {} current {} updated {} revision {} -> {}",
                    s.metadata.name.unwrap_or_default(),
                    st.ready_replicas.unwrap_or(0),
                    st.current_replicas.unwrap_or(0),
                    st.updated_replicas.unwrap_or(0),
                    st.current_revision.unwrap_or_default(),
                    st.update_revision.unwrap_or_default()
                );
            }
        }
        Err(e) => {
            let _ = writeln!(out, "(list StatefulSets: {e})");
        }
    }
    match Api::<Service>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
    {
        Ok(list) => {
            for s in list.items {
                let _ = writeln!(out, "service/{}", s.metadata.name.unwrap_or_default());
            }
        }
        Err(e) => {
            let _ = writeln!(out, "(list Services: {e})");
        }
    }
    events(&mut out, client, ns).await;
    let operator_ns = operator_namespace();
    let _ = writeln!(out, "==== operator pods and log");
    pods(&mut out, client, &operator_ns).await;
    logs(&mut out, &logs_dir(&operator_ns), OPERATOR_LOG_LINES);
    logs(&mut out, &logs_dir(ns), CONTAINER_LOG_LINES);
    out
}

/// One line per pod: phase, IP, node, readiness and restarts per container.
async fn pods(out: &mut String, client: &Client, ns: &str) {
    let list = match Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
    {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(out, "(list pods of {ns}: {e})");
            return;
        }
    };
    for p in list.items {
        let status = p.status.clone().unwrap_or_default();
        let containers: Vec<String> = status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten())
            .map(|c| format!("{} ready={} restarts={}", c.name, c.ready, c.restart_count))
            .collect();
        let _ = writeln!(
            out,
            "pod/{} {} ip {} uid {}{} [{}]",
            p.name_any(),
            status.phase.unwrap_or_default(),
            status.pod_ip.unwrap_or_default(),
            p.uid().unwrap_or_default(),
            if p.metadata.deletion_timestamp.is_some() {
                " (terminating)"
            } else {
                ""
            },
            containers.join(", ")
        );
    }
}

/// The namespace's core/v1 events, oldest first.
async fn events(out: &mut String, client: &Client, ns: &str) {
    let mut list = match Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
    {
        Ok(l) => l.items,
        Err(e) => {
            let _ = writeln!(out, "(list events: {e})");
            return;
        }
    };
    let when = |e: &Event| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
            .unwrap_or_default()
    };
    list.sort_by_key(when);
    let _ = writeln!(out, "==== events of {ns}");
    for e in &list {
        let _ = writeln!(
            out,
            "{} {} {}/{} {}: {}",
            when(e),
            e.type_.as_deref().unwrap_or(""),
            e.involved_object.kind.as_deref().unwrap_or(""),
            e.involved_object.name.as_deref().unwrap_or(""),
            e.reason.as_deref().unwrap_or(""),
            e.message.as_deref().unwrap_or("")
        );
    }
}

/// The last `lines` lines of every `<dir>/*/*.log`.
fn logs(out: &mut String, dir: &Path, lines: usize) {
    let Ok(pods) = std::fs::read_dir(dir) else {
        let _ = writeln!(out, "(no logs under {})", dir.display());
        return;
    };
    let mut files: Vec<_> = pods
        .flatten()
        .filter_map(|pod| std::fs::read_dir(pod.path()).ok())
        .flat_map(|d| d.flatten().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    for f in files {
        match std::fs::read_to_string(&f) {
            Ok(text) => {
                let all: Vec<&str> = text.lines().collect();
                let from = all.len().saturating_sub(lines);
                let _ = writeln!(out, "---- {} (last {lines} lines)", f.display());
                for l in &all[from..] {
                    let _ = writeln!(out, "{l}");
                }
            }
            Err(e) => {
                let _ = writeln!(out, "---- {}: {e}", f.display());
            }
        }
    }
}
