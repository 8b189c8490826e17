//! The exclusive lock on a metadata log directory: `<metadata.log.dir>/.lock`
//! held with `flock` (Kafka's `LogManager.LockFileName` and `FileLock`) by
//! `run` for its whole life, and tried by the offline tools (`recover`) so
//! that they refuse a directory a live controller uses.
//!
//! Owns the lock file only; it must not read or write anything else in the
//! directory. A lock only protects against processes that share the kernel
//! (the same machine or pod node); it says nothing about a controller on
//! another machine, nor about Kafka's JVM on the same one (Java's
//! `FileChannel.tryLock` takes an `fcntl` lock, which `flock` does not see).

use std::{
    fs::{File, OpenOptions, TryLockError},
    path::{Path, PathBuf},
};

/// Kafka's lock file name in each log directory.
pub const LOCK_FILE: &str = ".lock";

/// Errors taking the lock.
#[derive(Debug, thiserror::Error)]
pub enum DirLockError {
    /// Another process holds the lock: a controller is running on the directory.
    #[error(
        "another process holds the lock {0} (a controller runs on this directory); stop it first"
    )]
    Held(PathBuf),
    /// The lock file could not be opened or locked.
    #[error("locking {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Takes the exclusive lock of `log_dir` without waiting; the lock holds
/// until the returned file is dropped (or the process ends). `Ok(None)` when
/// the directory does not exist (nothing to protect yet).
///
/// Errors: [`DirLockError::Held`] if another process holds it;
/// [`DirLockError::Io`] otherwise.
pub fn try_lock(log_dir: &Path) -> Result<Option<File>, DirLockError> {
    if !log_dir.is_dir() {
        return Ok(None);
    }
    let path = log_dir.join(LOCK_FILE);
    let io = |source| DirLockError::Io {
        path: path.clone(),
        source,
    };
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Err(DirLockError::Held(path)),
        Err(TryLockError::Error(e)) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_held_directory_is_refused_and_granted_once_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let held = try_lock(dir.path()).expect("first lock").expect("a file");
        assert!(matches!(try_lock(dir.path()), Err(DirLockError::Held(_))));
        drop(held);
        assert!(try_lock(dir.path()).expect("lock again").is_some());
    }

    #[test]
    fn a_missing_directory_is_not_locked_nor_created() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("gone");
        assert!(try_lock(&missing).expect("no error").is_none());
        assert!(!missing.exists());
    }
}
