//! The one line a controller leaves when it stops on an error: on stderr, and
//! in `/dev/termination-log` when that file exists (Kubernetes'
//! `terminationMessagePath`, which the kubelet shows in the pod's
//! `lastState.terminated.message` and the operator can surface).
//!
//! A volume that ran out of space (ENOSPC) gets a line of its own naming the
//! metadata log dir and its free space (`statvfs`), so that a full volume is
//! told apart from a broken one (issue 21).
//!
//! Owns the wording of that line and the best-effort write of the file; it
//! must not decide whether the node stops (the error already did) nor retry
//! anything.

use std::{io, path::Path};

/// Where Kubernetes reads a container's termination message by default.
pub const TERMINATION_LOG: &str = "/dev/termination-log";

/// The line for `error`, the error a controller stopped on, with
/// `metadata.log.dir` `log_dir`: `error` itself, or for ENOSPC anywhere in
/// its source chain, the directory, its free and total space in bytes and
/// the way out first, then `error`.
pub fn fatal_line(log_dir: &Path, error: &(dyn std::error::Error + 'static)) -> String {
    let text = error.to_string();
    if !is_no_space(error) {
        return one_line(&text);
    }
    let space = match free_space(log_dir) {
        Ok(FreeSpace {
            available_bytes,
            total_bytes,
        }) => format!("{available_bytes} bytes free of {total_bytes}"),
        Err(e) => format!("free space unknown (statvfs: {e})"),
    };
    one_line(&format!(
        "no space left on metadata.log.dir {}: {space}; stopping: free space or grow the volume, then start the node again (it catches up from the leader; docs/operations.md, \"A full metadata log volume\"): {text}",
        log_dir.display()
    ))
}

/// Whether ENOSPC is `error` or one of its sources.
pub fn is_no_space(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<io::Error>()
            && (io.kind() == io::ErrorKind::StorageFull
                || io.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error()))
        {
            return true;
        }
        next = e.source();
    }
    // Some layers keep only the text of the OS error (a boxed message).
    error.to_string().contains("(os error 28)")
}

/// Space of the file system holding a directory, from `statvfs(3)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSpace {
    /// Bytes an unprivileged writer can still use (`f_bavail × f_frsize`).
    pub available_bytes: u64,
    /// Size of the file system in bytes (`f_blocks × f_frsize`).
    pub total_bytes: u64,
}

/// `statvfs(3)` of `dir`.
///
/// Errors: the OS error of `statvfs`.
pub fn free_space(dir: &Path) -> io::Result<FreeSpace> {
    let s = rustix::fs::statvfs(dir).map_err(io::Error::from)?;
    Ok(FreeSpace {
        available_bytes: s.f_bavail.saturating_mul(s.f_frsize),
        total_bytes: s.f_blocks.saturating_mul(s.f_frsize),
    })
}

/// Writes `line` to [`TERMINATION_LOG`] if that file exists (in a pod);
/// best effort: a failure is only logged.
pub fn write_termination_log(line: &str) {
    write_termination_message(Path::new(TERMINATION_LOG), line);
}

/// Writes `line` to `path` if it exists, replacing what is there.
fn write_termination_message(path: &Path, line: &str) {
    if !path.exists() {
        return;
    }
    if let Err(e) = std::fs::write(path, format!("{line}\n")) {
        tracing::warn!(file = %path.display(), error = %e, "writing the termination message failed");
    }
}

/// `text` on one line (newlines inside an error's text become spaces).
fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::LogError;

    #[test]
    fn enospc_under_a_log_error_names_the_directory_and_its_free_space() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = LogError::Io {
            action: "writing",
            path: dir.path().join("00000000000000000000.log"),
            source: io::Error::from_raw_os_error(28),
        };
        let line = fatal_line(dir.path(), &error);
        let space = free_space(dir.path()).expect("statvfs");
        assert!(space.total_bytes > 0, "{space:?}");
        assert!(
            line.starts_with(&format!(
                "no space left on metadata.log.dir {}: ",
                dir.path().display()
            )) && line.contains(" bytes free of ")
                && line
                    .ends_with("00000000000000000000.log: No space left on device (os error 28)"),
            "{line}"
        );
    }

    #[test]
    fn other_errors_keep_their_own_text_on_one_line() {
        let error = LogError::Io {
            action: "writing",
            path: "/x/quorum-state".into(),
            source: io::Error::from_raw_os_error(5),
        };
        let line = fatal_line(Path::new("/x"), &error);
        assert_eq!(
            line,
            "writing /x/quorum-state: Input/output error (os error 5)"
        );
    }

    #[test]
    fn the_termination_message_is_written_only_where_the_file_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let absent = dir.path().join("absent");
        write_termination_message(&absent, "stopped");
        assert!(!absent.exists());
        let present = dir.path().join("termination-log");
        std::fs::write(&present, "").expect("create");
        write_termination_message(&present, "stopped");
        assert_eq!(
            std::fs::read_to_string(&present).expect("read"),
            "stopped\n"
        );
    }
}
