//! Pod networking: one network namespace per pod, joined to the host bridge by
//! a veth pair, with one IPv4 address of the pod range.
//!
//! The bridge (`kw0`, host address `10.244.0.1/24`) is made by `dev/cluster.sh`
//! before the API server starts, since the API server listens on it. This
//! module owns pod IP allocation and the `ip` commands that create and remove
//! a pod's namespace. It must not route anything off this host: pods get a
//! default route to the bridge address only, and no forwarding or NAT is set up.

use std::{
    collections::BTreeSet,
    net::Ipv4Addr,
    sync::{Arc, Mutex},
};

use tokio::process::Command;

/// Errors of pod networking.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("the pod range {0} is full: delete pods or widen --pod-cidr")]
    Exhausted(String),
    #[error("could not run `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("bridge {0} is missing: run `make cluster-up`, which creates it")]
    NoBridge(String),
}

/// The network of one pod, as set up by [`Network::setup`].
#[derive(Debug, Clone)]
pub struct PodNetwork {
    /// Name of the network namespace (`kw-` and 8 characters of the pod uid);
    /// `ip netns exec` runs a command inside it.
    pub netns: String,
    /// The pod's IP on the bridge.
    pub ip: Ipv4Addr,
    host_veth: String,
}

/// The host side: bridge, address range, allocations.
#[derive(Debug, Clone)]
pub struct Network {
    bridge: String,
    host_ip: Ipv4Addr,
    /// The /24 the pod IPs come from (first three octets of `host_ip`'s range).
    cidr: String,
    base: [u8; 3],
    in_use: Arc<Mutex<Allocations>>,
}

/// The addresses in use (last octet) and the last one handed out.
/// Allocation is next-fit, as the `host-local` IPAM plugin's: a released
/// address is handed out again only after every other free one. A recreated
/// pod (a rolling restart) therefore gets a new address; reusing the old one
/// at once left the host's neighbour cache pointing at the deleted pod's MAC,
/// so the host could not reach the new pod for about 30 s (until the entry
/// went stale), long enough to make a restarted single voter look down.
#[derive(Debug, Default)]
struct Allocations {
    in_use: BTreeSet<u8>,
    last: u8,
}

/// Prefix of every network namespace and host veth this agent creates, so that
/// `dev/cluster.sh down` can find what is left.
pub const NETNS_PREFIX: &str = "kw-";

impl Network {
    /// `cidr` must be a /24 (`10.244.0.0/24`); `host_ip` is the bridge's address in it.
    pub fn new(bridge: &str, host_ip: Ipv4Addr, cidr: &str) -> Self {
        let o = host_ip.octets();
        let mut in_use = BTreeSet::new();
        in_use.insert(o[3]);
        Self {
            bridge: bridge.to_owned(),
            host_ip,
            cidr: cidr.to_owned(),
            base: [o[0], o[1], o[2]],
            in_use: Arc::new(Mutex::new(Allocations { in_use, last: 1 })),
        }
    }

    /// The bridge's address: the pods' gateway and the API server's address.
    pub fn host_ip(&self) -> Ipv4Addr {
        self.host_ip
    }

    /// Fails unless the bridge exists.
    pub async fn check_bridge(&self) -> Result<(), NetError> {
        ip(&["link", "show", &self.bridge])
            .await
            .map_err(|_| NetError::NoBridge(self.bridge.clone()))
    }

    /// Removes every pod namespace left by an earlier run of the agent (with
    /// what still runs in them): this agent restarts every pod it is given, so
    /// nothing of the earlier run is adopted. Returns the names removed.
    pub async fn remove_stale(&self) -> Vec<String> {
        let Ok(out) = Command::new("ip").args(["netns", "list"]).output().await else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line.split_whitespace().next()
                && name.starts_with(NETNS_PREFIX)
            {
                remove_netns(name).await;
                let host_veth = format!("kwv{}", &name[NETNS_PREFIX.len()..]);
                let _ = ip(&["link", "delete", &host_veth]).await;
                removed.push(name.to_owned());
            }
        }
        removed
    }

    fn allocate(&self) -> Result<Ipv4Addr, NetError> {
        let mut a = self.in_use.lock().unwrap_or_else(|p| p.into_inner());
        // Next-fit over 2..=254: after the last one handed out, wrapping.
        let after = a.last.max(1);
        let next = (after + 1..=254u8)
            .chain(2..=after)
            .find(|n| !a.in_use.contains(n))
            .ok_or_else(|| NetError::Exhausted(self.cidr.clone()))?;
        a.in_use.insert(next);
        a.last = next;
        Ok(Ipv4Addr::new(
            self.base[0],
            self.base[1],
            self.base[2],
            next,
        ))
    }

    fn release(&self, ip: Ipv4Addr) {
        let mut a = self.in_use.lock().unwrap_or_else(|p| p.into_inner());
        a.in_use.remove(&ip.octets()[3]);
    }

    /// Creates the pod's namespace with `lo` up, `eth0` holding a fresh IP and
    /// a default route via the bridge. A namespace left by an earlier run of the
    /// agent for the same pod is removed first (with whatever still runs in it).
    pub async fn setup(&self, pod_uid: &str) -> Result<PodNetwork, NetError> {
        let id: String = pod_uid.chars().filter(|c| *c != '-').take(8).collect();
        let netns = format!("{NETNS_PREFIX}{id}");
        let host_veth = format!("kwv{id}");
        remove_netns(&netns).await;
        let ip_addr = self.allocate()?;
        let pod = PodNetwork {
            netns: netns.clone(),
            ip: ip_addr,
            host_veth: host_veth.clone(),
        };
        let result = async {
            ip(&["netns", "add", &netns]).await?;
            ip(&[
                "link", "add", &host_veth, "type", "veth", "peer", "name", "eth0", "netns", &netns,
            ])
            .await?;
            ip(&["link", "set", &host_veth, "master", &self.bridge, "up"]).await?;
            let cidr = format!("{ip_addr}/24");
            ip(&["-n", &netns, "addr", "add", &cidr, "dev", "eth0"]).await?;
            ip(&["-n", &netns, "link", "set", "lo", "up"]).await?;
            ip(&["-n", &netns, "link", "set", "eth0", "up"]).await?;
            ip(&[
                "-n",
                &netns,
                "route",
                "add",
                "default",
                "via",
                &self.host_ip.to_string(),
            ])
            .await
        }
        .await;
        match result {
            Ok(()) => Ok(pod),
            Err(e) => {
                self.teardown(&pod).await;
                Err(e)
            }
        }
    }

    /// Kills what still runs in the pod's namespace, deletes it (which deletes
    /// the veth pair) and its `/etc/netns` files, and frees the IP. Never fails:
    /// what is already gone is fine.
    pub async fn teardown(&self, pod: &PodNetwork) {
        remove_netns(&pod.netns).await;
        let _ = ip(&["link", "delete", &pod.host_veth]).await;
        // The host's neighbour entry names the deleted veth's MAC; forget it
        // so that a later pod with this address is resolved afresh.
        let _ = ip(&[
            "neigh",
            "flush",
            "to",
            &pod.ip.to_string(),
            "dev",
            &self.bridge,
        ])
        .await;
        self.release(pod.ip);
    }
}

async fn remove_netns(netns: &str) {
    if let Ok(out) = Command::new("ip")
        .args(["netns", "pids", netns])
        .output()
        .await
    {
        let pids = String::from_utf8_lossy(&out.stdout);
        for pid in pids.split_whitespace() {
            let _ = Command::new("kill")
                .args(["-s", "KILL", pid])
                .status()
                .await;
        }
    }
    let _ = ip(&["netns", "delete", netns]).await;
    let _ = tokio::fs::remove_dir_all(format!("/etc/netns/{netns}")).await;
}

/// Runs `ip ARGS`, failing with its stderr.
async fn ip(args: &[&str]) -> Result<(), NetError> {
    let command = format!("ip {}", args.join(" "));
    let out = Command::new("ip")
        .args(args)
        .output()
        .await
        .map_err(|source| NetError::Spawn {
            command: command.clone(),
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError::Failed {
            command,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_unique_skip_the_host_and_are_reused_only_after_every_other() {
        let net = Network::new("kw0", Ipv4Addr::new(10, 244, 0, 1), "10.244.0.0/24");
        let a = net.allocate().expect("free address");
        let b = net.allocate().expect("free address");
        assert_eq!(a, Ipv4Addr::new(10, 244, 0, 2));
        assert_eq!(b, Ipv4Addr::new(10, 244, 0, 3));
        net.release(a);
        // A recreated pod gets a new address, not the one just released.
        assert_eq!(
            net.allocate().expect("free address"),
            Ipv4Addr::new(10, 244, 0, 4)
        );
        for _ in 5..=254 {
            net.allocate().expect("free address");
        }
        // Wrapped around: the only free address is the released one.
        assert_eq!(net.allocate().expect("free address"), a);
    }

    #[test]
    fn the_range_runs_out_after_253_pods() {
        let net = Network::new("kw0", Ipv4Addr::new(10, 244, 0, 1), "10.244.0.0/24");
        for _ in 0..253 {
            net.allocate().expect("free address");
        }
        assert!(matches!(net.allocate(), Err(NetError::Exhausted(_))));
    }
}
