//! Starting and stopping one container process.
//!
//! A container is a host process started as
//! `ip netns exec <netns> unshare --mount --uts -- /bin/sh -c <script> <argv…>`:
//! in the pod's network namespace (whose `/etc/netns/<netns>/hosts` becomes
//! `/etc/hosts`), in a private mount namespace where the script sets the pod's
//! hostname, bind-mounts each volume directory onto its mount path, changes to
//! the working directory and `exec`s the container's argv, so the container's
//! pid is the one started here. The process leads its own process group; stop
//! sends SIGTERM to the group, then SIGKILL after the grace period. Output goes
//! to the container's log file, appended across restarts. This module must not
//! decide about restarts or status.

use std::{
    fmt::Write as _,
    fs::OpenOptions,
    io::Write as _,
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use tokio::{process::Child, time::timeout};

/// Errors while starting a container.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot open the log file {path}: {source}")]
    Log {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the container has an empty command")]
    EmptyArgv,
}

/// One bind mount inside the container's mount namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Host path (directory, or file for a `subPath` to a file).
    pub source: PathBuf,
    /// Path inside the container.
    pub target: String,
    /// Remount read-only after binding.
    pub read_only: bool,
}

/// Everything needed to start one container process.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments; the program is looked up on the env's `PATH`.
    pub argv: Vec<String>,
    /// The whole environment (nothing is inherited from the agent).
    pub env: Vec<(String, String)>,
    /// Bind mounts, applied parents first.
    pub mounts: Vec<Mount>,
    /// `workingDir`, if set.
    pub working_dir: Option<String>,
    /// The pod's hostname (UTS namespace).
    pub hostname: String,
    /// The pod's network namespace.
    pub netns: String,
    /// Log file, appended.
    pub log_path: PathBuf,
}

/// Single-quotes `s` for `/bin/sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `/bin/sh` script run in the new mount namespace before `exec`.
pub fn script(launch: &Launch) -> String {
    let mut mounts = launch.mounts.clone();
    mounts.sort_by_key(|m| m.target.matches('/').count());
    let mut s = String::from("set -e\n");
    let _ = writeln!(
        s,
        "echo {} > /proc/sys/kernel/hostname",
        quote(&launch.hostname)
    );
    for m in &mounts {
        let target = quote(&m.target);
        if m.source.is_dir() {
            let _ = writeln!(s, "mkdir -p {target}");
        } else {
            let parent = Path::new(&m.target)
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "/".into());
            let _ = writeln!(
                s,
                "mkdir -p {} && [ -e {target} ] || : > {target}",
                quote(&parent)
            );
        }
        let _ = writeln!(
            s,
            "mount --bind {} {target}",
            quote(&m.source.display().to_string())
        );
        if m.read_only {
            let _ = writeln!(s, "mount -o remount,bind,ro {target}");
        }
    }
    if let Some(dir) = &launch.working_dir {
        let _ = writeln!(s, "mkdir -p {0} && cd {0}", quote(dir));
    } else {
        s.push_str("cd /\n");
    }
    s.push_str("exec \"$0\" \"$@\"\n");
    s
}

/// Starts the container process in its own process group.
pub fn spawn(launch: &Launch) -> Result<Child, ProcessError> {
    if launch.argv.is_empty() {
        return Err(ProcessError::EmptyArgv);
    }
    if let Some(dir) = launch.log_path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| ProcessError::Log {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let log_err = |source| ProcessError::Log {
        path: launch.log_path.display().to_string(),
        source,
    };
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&launch.log_path)
        .map_err(log_err)?;
    let _ = writeln!(log, "==== kraft-node-agent: starting {:?}", launch.argv);
    let stderr = log.try_clone().map_err(log_err)?;
    let mut command = tokio::process::Command::new("ip");
    command
        .args([
            "netns",
            "exec",
            &launch.netns,
            "unshare",
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "--",
        ])
        .args(["/bin/sh", "-c", &script(launch)])
        .args(&launch.argv)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(false);
    command.spawn().map_err(|source| ProcessError::Spawn {
        program: launch.argv[0].clone(),
        source,
    })
}

/// Sends `signal` (`TERM`, `KILL`) to the process group led by `pid`.
async fn signal_group(pid: u32, signal: &str) {
    let _ = tokio::process::Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// SIGTERM to the container's process group, SIGKILL after `grace`; returns the
/// exit status (None if it could not be reaped).
pub async fn stop(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    let Some(pid) = child.id() else {
        return child.wait().await.ok();
    };
    if !grace.is_zero() {
        signal_group(pid, "TERM").await;
        if let Ok(status) = timeout(grace, child.wait()).await {
            signal_group(pid, "KILL").await; // what is left of the group
            return status.ok();
        }
    }
    signal_group(pid, "KILL").await;
    child.wait().await.ok()
}

/// The most lines of log a termination message takes (the kubelet's
/// `MaxContainerTerminationMessageLogLines`).
pub const TERMINATION_LOG_LINES: usize = 80;
/// The most bytes of log a termination message takes (the kubelet's
/// `MaxContainerTerminationMessageLogLength`, 2 KiB).
pub const TERMINATION_LOG_BYTES: usize = 2048;

/// The log file's length (bytes) before a container starts: where its own
/// output will begin (the file is appended across restarts).
pub fn log_offset(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The termination message `terminationMessagePolicy: FallbackToLogsOnError`
/// gives a container that failed: the tail of what this run wrote to its log
/// from `offset` on (the last [`TERMINATION_LOG_LINES`] lines, at most the last
/// [`TERMINATION_LOG_BYTES`] bytes), without this agent's own start banner.
/// `None` when the run wrote nothing or the log cannot be read. The file named
/// by `terminationMessagePath` is not supported (nothing maps it into the
/// container here), so the log is the only source, as when that file is empty.
pub fn termination_message(path: &Path, offset: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    // Enough to hold 80 long lines; older output cannot be in the message.
    let from = offset.max(len.saturating_sub(64 * 1024));
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    tail_message(&bytes)
}

/// The message part of [`termination_message`], over the run's log bytes.
fn tail_message(log: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(log);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("==== kraft-node-agent:"))
        .collect();
    let tail = lines[lines.len().saturating_sub(TERMINATION_LOG_LINES)..].join("\n");
    let mut start = tail.len().saturating_sub(TERMINATION_LOG_BYTES);
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    let message = tail[start..].trim();
    (!message.is_empty()).then(|| message.to_string())
}

/// Kubernetes' exit code: the process's code, or 128 + signal.
pub fn exit_code(status: &ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_mounts_parents_first_quotes_paths_and_execs_the_argv() {
        let dir = tempfile::tempdir().expect("temp dir");
        let launch = Launch {
            argv: vec!["sleep".into(), "1".into()],
            env: vec![],
            mounts: vec![
                Mount {
                    source: dir.path().to_path_buf(),
                    target: "/data/it's/sub".into(),
                    read_only: true,
                },
                Mount {
                    source: dir.path().to_path_buf(),
                    target: "/data".into(),
                    read_only: false,
                },
            ],
            working_dir: Some("/data".into()),
            hostname: "q-0".into(),
            netns: "kw-x".into(),
            log_path: dir.path().join("c.log"),
        };
        let s = script(&launch);
        let data = s.find("mount --bind").expect("a bind mount");
        assert!(
            s[data..].starts_with(&format!("mount --bind '{}' '/data'", dir.path().display())),
            "{s}"
        );
        assert!(s.contains(r"'/data/it'\''s/sub'"), "{s}");
        assert!(
            s.contains("mount -o remount,bind,ro '/data/it'\\''s/sub'"),
            "{s}"
        );
        assert!(s.contains("echo 'q-0' > /proc/sys/kernel/hostname"), "{s}");
        assert!(s.ends_with("cd '/data'\nexec \"$0\" \"$@\"\n"), "{s}");
    }

    #[test]
    fn the_termination_message_is_the_tail_of_this_runs_log() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("format.log");
        std::fs::write(
            &path,
            "==== kraft-node-agent: starting [\"a\"]\nold run failed\n",
        )
        .expect("write");
        let offset = log_offset(&path);
        let mut run = String::from("==== kraft-node-agent: starting [\"a\"]\n");
        for i in 0..100 {
            run.push_str(&format!("line {i}\n"));
        }
        run.push_str("error: /var/lib/kraft/data is formatted for cluster id A, not B\n");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(run.as_bytes()))
            .expect("append");
        let message = termination_message(&path, offset).expect("a message");
        assert!(!message.contains("old run"), "{message}");
        assert!(!message.contains("kraft-node-agent"), "{message}");
        assert!(
            message.ends_with("formatted for cluster id A, not B"),
            "{message}"
        );
        assert_eq!(message.lines().count(), TERMINATION_LOG_LINES);
        assert!(message.starts_with("line 21"), "{message}");
    }

    #[test]
    fn a_termination_message_is_at_most_two_kib_and_none_without_output() {
        let long = "x".repeat(5000) + "\nthe end";
        let message = tail_message(long.as_bytes()).expect("a message");
        assert_eq!(message.len(), TERMINATION_LOG_BYTES);
        assert!(message.ends_with("the end"));
        assert_eq!(
            tail_message(b"==== kraft-node-agent: starting []\n\n"),
            None
        );
    }

    #[test]
    fn a_signal_death_maps_to_128_plus_the_signal() {
        assert_eq!(exit_code(&ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(&ExitStatus::from_raw(3 << 8)), 3);
    }
}
