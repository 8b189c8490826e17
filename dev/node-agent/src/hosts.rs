//! Pod DNS without a DNS server: an `/etc/hosts` per pod namespace.
//!
//! `ip netns exec NS` bind-mounts `/etc/netns/NS/hosts` over `/etc/hosts`, so
//! every pod reads the file of its own namespace. This module owns those files:
//! each lists every running pod of the cluster under the names a cluster DNS
//! gives it (`<hostname>.<subdomain>.<namespace>.svc.cluster.local` and the
//! shorter forms, for pods with `spec.subdomain`, as StatefulSet pods have),
//! the API server as `kubernetes.default.svc…`, and the pod's own hostname.
//! Files are rewritten in place (never renamed), since a bind mount holds the
//! inode. The host's own view (every pod's cluster names, for tools run on
//! the host such as Kafka's admin client, which follows the names the
//! controllers advertise) goes to one more file, replaced by rename, when
//! [`Hosts::with_host_file`] names it (`$KRAFTWERK_CACHE/cluster/hosts`; Java
//! reads it with `-Djdk.net.hosts.file`). It must not touch anything outside
//! `/etc/netns/<kw-…>/` and that file.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    net::Ipv4Addr,
    path::PathBuf,
    sync::{Arc, Mutex},
};

/// Cluster DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// What one pod contributes to the hosts files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// The pod's network namespace (whose hosts file this pod reads).
    pub netns: String,
    /// The pod's IP.
    pub ip: Ipv4Addr,
    /// `spec.hostname`, or the pod name.
    pub hostname: String,
    /// `spec.subdomain`, when set.
    pub subdomain: Option<String>,
    /// The pod's namespace.
    pub namespace: String,
}

impl HostEntry {
    /// The names other pods know this pod by, longest first.
    fn cluster_names(&self) -> Vec<String> {
        let Some(sub) = &self.subdomain else {
            return Vec::new();
        };
        let base = format!("{}.{}.{}", self.hostname, sub, self.namespace);
        vec![
            format!("{base}.svc.{CLUSTER_DOMAIN}"),
            format!("{base}.svc"),
            base,
            format!("{}.{}", self.hostname, sub),
        ]
    }
}

/// All entries, keyed by pod uid; every change rewrites every file.
#[derive(Debug, Clone)]
pub struct Hosts {
    api_ip: Ipv4Addr,
    root: PathBuf,
    host_file: Option<PathBuf>,
    entries: Arc<Mutex<BTreeMap<String, HostEntry>>>,
}

impl Hosts {
    /// `api_ip` is the API server's address; `root` is `/etc/netns` (a temp dir in tests).
    pub fn new(api_ip: Ipv4Addr, root: PathBuf) -> Self {
        Self {
            api_ip,
            root,
            host_file: None,
            entries: Arc::default(),
        }
    }

    /// Also keeps `path` up to date with the host's view: localhost, the API
    /// server and every pod under its cluster names (written at once, empty
    /// of pods, so it exists from the start).
    pub fn with_host_file(mut self, path: PathBuf) -> std::io::Result<Self> {
        self.host_file = Some(path);
        self.write_all(&BTreeMap::new())?;
        Ok(self)
    }

    /// Adds or replaces the entry of pod `uid` and rewrites every file.
    pub fn set(&self, uid: &str, entry: HostEntry) -> std::io::Result<()> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.insert(uid.to_owned(), entry);
        self.write_all(&entries)
    }

    /// Removes the entry of pod `uid` and rewrites the other files.
    pub fn remove(&self, uid: &str) -> std::io::Result<()> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.remove(uid).is_some() {
            self.write_all(&entries)
        } else {
            Ok(())
        }
    }

    fn write_all(&self, entries: &BTreeMap<String, HostEntry>) -> std::io::Result<()> {
        for own in entries.values() {
            let dir = self.root.join(&own.netns);
            std::fs::create_dir_all(&dir)?;
            // In place: truncate and write, so the bind mount sees the change.
            std::fs::write(
                dir.join("hosts"),
                render(self.api_ip, own, entries.values()),
            )?;
        }
        if let Some(path) = &self.host_file {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, render_host(self.api_ip, entries.values()))?;
            std::fs::rename(&tmp, path)?;
        }
        Ok(())
    }
}

/// The host's file: as a pod's, without an own entry.
fn render_host<'a>(api_ip: Ipv4Addr, all: impl Iterator<Item = &'a HostEntry>) -> String {
    let mut out = String::from("# Written by kraft-node-agent: the pods of the local cluster.\n");
    out.push_str("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    let _ = writeln!(
        out,
        "{api_ip}\tkubernetes.default.svc.{CLUSTER_DOMAIN} kubernetes.default.svc kubernetes.default kubernetes"
    );
    for entry in all {
        let names = entry.cluster_names();
        if !names.is_empty() {
            let _ = writeln!(out, "{}\t{}", entry.ip, names.join(" "));
        }
    }
    out
}

/// The hosts file of pod `own`.
fn render<'a>(
    api_ip: Ipv4Addr,
    own: &HostEntry,
    all: impl Iterator<Item = &'a HostEntry>,
) -> String {
    let mut out = String::from("# Written by kraft-node-agent: the pods of the local cluster.\n");
    out.push_str("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    let mut own_names = own.cluster_names();
    own_names.push(own.hostname.clone());
    let _ = writeln!(out, "{}\t{}", own.ip, own_names.join(" "));
    let _ = writeln!(
        out,
        "{api_ip}\tkubernetes.default.svc.{CLUSTER_DOMAIN} kubernetes.default.svc kubernetes.default kubernetes"
    );
    for entry in all {
        let names = entry.cluster_names();
        if entry.netns != own.netns && !names.is_empty() {
            let _ = writeln!(out, "{}\t{}", entry.ip, names.join(" "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(netns: &str, last: u8, host: &str, sub: Option<&str>) -> HostEntry {
        HostEntry {
            netns: netns.into(),
            ip: Ipv4Addr::new(10, 244, 0, last),
            hostname: host.into(),
            subdomain: sub.map(str::to_owned),
            namespace: "ns".into(),
        }
    }

    #[test]
    fn every_pod_file_lists_the_stateful_pods_under_their_dns_names() {
        let dir = tempfile::tempdir().expect("temp dir");
        let hosts = Hosts::new(Ipv4Addr::new(10, 244, 0, 1), dir.path().to_path_buf());
        hosts
            .set("a", entry("kw-a", 2, "q-0", Some("q")))
            .expect("write");
        hosts
            .set("b", entry("kw-b", 3, "q-1", Some("q")))
            .expect("write");
        hosts
            .set("c", entry("kw-c", 4, "plain", None))
            .expect("write");
        let a = std::fs::read_to_string(dir.path().join("kw-a/hosts")).expect("file a");
        assert!(
            a.contains("10.244.0.2\tq-0.q.ns.svc.cluster.local q-0.q.ns.svc q-0.q.ns q-0.q q-0\n"),
            "{a}"
        );
        assert!(
            a.contains("10.244.0.3\tq-1.q.ns.svc.cluster.local q-1.q.ns.svc q-1.q.ns q-1.q\n"),
            "{a}"
        );
        assert!(
            a.contains("10.244.0.1\tkubernetes.default.svc.cluster.local"),
            "{a}"
        );
        assert!(!a.contains("plain"), "{a}");
        let c = std::fs::read_to_string(dir.path().join("kw-c/hosts")).expect("file c");
        assert!(c.contains("10.244.0.4\tplain\n"), "{c}");
        assert!(c.contains("q-1.q.ns.svc.cluster.local"), "{c}");
    }

    #[test]
    fn the_host_file_lists_every_stateful_pod_and_follows_removals() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("host-hosts");
        let hosts = Hosts::new(Ipv4Addr::new(10, 244, 0, 1), dir.path().join("netns"))
            .with_host_file(file.clone())
            .expect("the host file");
        let empty = std::fs::read_to_string(&file).expect("written at once");
        assert!(empty.contains("127.0.0.1\tlocalhost\n"), "{empty}");
        hosts
            .set("a", entry("kw-a", 2, "q-0", Some("q")))
            .expect("write");
        hosts
            .set("b", entry("kw-b", 3, "plain", None))
            .expect("write");
        let text = std::fs::read_to_string(&file).expect("host file");
        assert!(
            text.contains("10.244.0.2\tq-0.q.ns.svc.cluster.local q-0.q.ns.svc q-0.q.ns q-0.q\n"),
            "{text}"
        );
        assert!(!text.contains("plain"), "{text}");
        hosts.remove("a").expect("write");
        let text = std::fs::read_to_string(&file).expect("host file");
        assert!(!text.contains("q-0"), "{text}");
    }

    #[test]
    fn a_removed_pod_disappears_from_the_other_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let hosts = Hosts::new(Ipv4Addr::new(10, 244, 0, 1), dir.path().to_path_buf());
        hosts
            .set("a", entry("kw-a", 2, "q-0", Some("q")))
            .expect("write");
        hosts
            .set("b", entry("kw-b", 3, "q-1", Some("q")))
            .expect("write");
        hosts.remove("b").expect("write");
        let a = std::fs::read_to_string(dir.path().join("kw-a/hosts")).expect("file a");
        assert!(!a.contains("q-1"), "{a}");
    }
}
