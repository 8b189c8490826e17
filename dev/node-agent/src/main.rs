//! `kraft-node-agent`: the node of the local test cluster (see docs/local-cluster.md).
//!
//! This machine has no container runtime, so this agent stands in for the
//! kubelet, kube-scheduler and a volume provisioner of a one-node cluster whose
//! API server, etcd and controller manager are the real ones:
//!
//! - [`node`]: registers the Node and renews its Lease;
//! - [`scheduler`]: binds pending pods to this node;
//! - [`provisioner`]: the `local-dir` StorageClass, PVs as directories;
//! - [`manager`] and [`pod`]: run each pod's containers as local processes
//!   ([`process`]) in the pod's network namespace ([`net`], [`hosts`]), with
//!   volumes as directories ([`volumes`]), the environment a kubelet gives
//!   ([`env`]), probes ([`probes`]), and programs found by image ([`images`]).
//!
//! Test infrastructure only: it runs as root and trusts the cluster's admins.

use std::{net::Ipv4Addr, path::PathBuf, sync::Arc};

use anyhow::Context as _;
use clap::Parser;
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};
use tracing::{error, info};

mod env;
mod hosts;
mod images;
mod manager;
mod mounts;
mod net;
mod node;
mod pod;
mod probes;
mod process;
mod provisioner;
mod scheduler;
mod volumes;

/// Command line (all set by `dev/cluster.sh`).
#[derive(Debug, Parser)]
#[command(
    name = "kraft-node-agent",
    about = "Runs the pods of the local test cluster as processes"
)]
struct Args {
    /// Kubeconfig with administrator credentials.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Name of the Node to register.
    #[arg(long, default_value = "kraft-node")]
    node_name: String,
    /// The image map (YAML; see images.rs).
    #[arg(long)]
    images: PathBuf,
    /// State directory: pods/, volumes/ and logs/ go under it.
    #[arg(long)]
    state_dir: PathBuf,
    /// The bridge the pods attach to (made by dev/cluster.sh).
    #[arg(long, default_value = "kw0")]
    bridge: String,
    /// The bridge's address, where the API server listens.
    #[arg(long, default_value = "10.244.0.1")]
    host_ip: Ipv4Addr,
    /// The pods' /24.
    #[arg(long, default_value = "10.244.0.0/24")]
    pod_cidr: String,
    /// The API server's port.
    #[arg(long, default_value_t = 6443)]
    api_port: u16,
    /// The cluster CA (documentation only: pods get it from the kube-root-ca.crt ConfigMap).
    #[arg(long)]
    ca_file: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let args = Args::parse();
    let kubeconfig = Kubeconfig::read_from(&args.kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", args.kubeconfig.display()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("building the client config")?;
    let client = Client::try_from(config).context("building the client")?;
    let images = images::ImageMap::load(&args.images)?;
    let network = net::Network::new(&args.bridge, args.host_ip, &args.pod_cidr);
    network.check_bridge().await?;
    let stale = network.remove_stale().await;
    if !stale.is_empty() {
        info!(?stale, "removed pod namespaces of an earlier run");
    }
    let host_file = args.state_dir.join("hosts");
    let hosts = hosts::Hosts::new(args.host_ip, PathBuf::from("/etc/netns"))
        .with_host_file(host_file.clone())
        .with_context(|| format!("writing {}", host_file.display()))?;
    let volumes = volumes::Volumes::new(client.clone(), args.state_dir.join("pods"));
    let shared = Arc::new(pod::Shared {
        client: client.clone(),
        images,
        network,
        hosts,
        volumes,
        logs_dir: args.state_dir.join("logs"),
        api_port: args.api_port,
    });
    let info = node::NodeInfo {
        name: args.node_name.clone(),
        ip: args.host_ip.to_string(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        memory_kib: memory_kib().unwrap_or(8 * 1024 * 1024),
    };
    info!(node = %args.node_name, "kraft-node-agent starting");
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        () = node::run(client.clone(), info) => {}
        () = scheduler::run(client.clone(), args.node_name.clone()) => {}
        () = provisioner::run(client.clone(), args.state_dir.join("volumes")) => {}
        r = manager::run(shared, args.node_name.clone()) => {
            if let Err(e) = r {
                error!(error = %e, "pod manager stopped");
                return Err(e);
            }
        }
        _ = sigterm.recv() => info!("SIGTERM: exiting (pods keep running until `cluster.sh down` removes their namespaces)"),
        _ = tokio::signal::ctrl_c() => info!("interrupted"),
    }
    Ok(())
}

/// MemTotal from /proc/meminfo, in KiB.
fn memory_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
