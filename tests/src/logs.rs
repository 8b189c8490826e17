//! Container logs as the local cluster keeps them (it has no `kubectl
//! logs`: docs/local-cluster.md): every second, dev/real-node/pod-logs.sh
//! copies each container's output from the kubelet's podLogsDir,
//! restarts in order and without the CRI prefix, to
//! `<cache>/cluster/logs/<ns>/<pod>/<container>.log`.
//! Reading a pod's logs and the operator's, and waiting for a line in them.
//! Read only.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use crate::{
    Error, Result,
    cluster::{logs_dir, operator_namespace},
    wait,
};

/// The entries of `dir` (none when it does not exist), sorted.
///
/// Errors: [`Error::Io`] when it cannot be read.
fn entries(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let read = || Error::io(format!("read {}", dir.display()));
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(read())? {
        out.push(e.map_err(read())?.path());
    }
    out.sort();
    Ok(out)
}

/// Every `*.log` of the pod directories `dirs`, concatenated in order.
///
/// Errors: [`Error::Io`] when a directory or a file cannot be read.
fn read_logs(dirs: &[PathBuf]) -> Result<String> {
    let mut out = String::new();
    for d in dirs {
        for f in entries(d)? {
            if f.extension().is_some_and(|x| x == "log") {
                let bytes =
                    std::fs::read(&f).map_err(Error::io(format!("read {}", f.display())))?;
                out.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    Ok(out)
}

/// The output of every container of pod `pod` in namespace `ns`, so far
/// (`cat <logs>/<ns>/<pod>/*.log`); empty when it has none yet.
///
/// Errors: [`Error::Io`].
pub fn pod(ns: &str, pod: &str) -> Result<String> {
    read_logs(&[logs_dir(ns).join(pod)])
}

/// The output of every operator pod there has been, so far (`cat
/// <logs>/<operator namespace>/*/*.log`).
///
/// Errors: [`Error::Io`].
pub fn operator() -> Result<String> {
    let pods: Vec<PathBuf> = entries(&logs_dir(&operator_namespace()))?
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    read_logs(&pods)
}

/// Waits up to `timeout` until `read` returns a text with a line holding
/// every one of `needles`; returns that line.
///
/// Errors: [`Error::Timeout`] naming `what` (and the last read error).
pub async fn wait_line(
    what: &str,
    timeout: Duration,
    read: impl Fn() -> Result<String>,
    needles: &[&str],
) -> Result<String> {
    wait::poll(what, timeout, || {
        let found = read().map(|text| {
            text.lines()
                .find(|l| needles.iter().all(|n| l.contains(n)))
                .map(str::to_owned)
        });
        async move { found }
    })
    .await
}
