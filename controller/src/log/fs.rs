//! Small durable-file helpers shared by the log's files: atomic replacement
//! (temp file, fsync, close, rename, directory fsync) and directory fsync.
//!
//! Owns nothing but the sequence of system calls; it must not know any file
//! format.

use std::{
    fs::{self, File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
};

use super::{LogError, Result};

/// Builds a [`LogError::Io`] naming the action and the file.
pub(crate) fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LogError {
    let path = path.to_path_buf();
    move |source| LogError::Io {
        action,
        path,
        source,
    }
}

/// Fsyncs a directory so that a rename or a new file in it survives a crash.
///
/// Errors: [`LogError::Io`] naming the directory.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let handle = File::open(dir).map_err(io_err("opening directory", dir))?;
    handle.sync_all().map_err(io_err("fsync of directory", dir))
}

/// Replaces `path` by a file holding `contents`, so that after a crash one
/// reads either the whole old file or the whole new one: writes
/// `<path>.tmp`, fsyncs and closes it, renames it over `path`, then fsyncs the
/// parent directory (as Kafka's `Utils.atomicMoveWithFallback` with the
/// fsyncs Kafka's callers add).
///
/// Errors: [`LogError::Io`] naming the file and the step that failed.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io_err("creating", &tmp))?;
        file.write_all(contents).map_err(io_err("writing", &tmp))?;
        file.sync_all().map_err(io_err("fsync of", &tmp))?;
    }
    fs::rename(&tmp, path).map_err(io_err("renaming into place", path))?;
    fsync_dir(parent_of(path))
}

/// `<path>.tmp`, the temporary name [`write_atomically`] writes first.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// The directory holding `path` (`.` for a bare file name).
pub fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}
