//! The log's file operations behind a small trait ([`LogFs`], [`LogFile`]),
//! the production implementation on `std::fs` ([`RealFs`]), and the durable
//! file helpers built on them: atomic replacement (temp file, fsync, close,
//! rename, directory fsync) and directory fsync.
//!
//! Every file of the partition directory (segments and their indexes,
//! snapshots, `quorum-state`, `recovery-point-offset-checkpoint`,
//! `leader-epoch-checkpoint`) goes through a [`Fs`] handle, so that tests can
//! run the real [`super::FileLog`] on [`super::fault_fs::MemoryFs`], which
//! fails chosen operations with EIO or ENOSPC, returns short writes and loses
//! what was not fsynced on a simulated crash.
//!
//! Owns nothing but the sequence of system calls; it must not know any file
//! format, nor retry a failed call (a failed write or fsync stops the log:
//! see `docs/log.md`, "Disk faults").

use std::{
    fs::{self, File, OpenOptions},
    io,
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
    sync::{Arc, LazyLock},
};

use super::{LogError, Result};

/// How [`LogFs::open`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write; created empty if missing, kept as it is otherwise.
    ReadWrite,
    /// Read and write; created empty, or emptied if it exists.
    Truncate,
    /// Read and write; created, and an error if it exists already.
    CreateNew,
}

/// One open file. Positional reads and writes only (the log knows where
/// every byte goes). Implementations are `Send + Sync`: the handle may move
/// to the thread that writes a snapshot.
pub trait LogFile: std::fmt::Debug + Send + Sync {
    /// Writes up to `buf.len()` bytes at byte `offset`; returns how many were
    /// written, which may be fewer (a short write). Not durable until
    /// [`Self::sync_data`] or [`Self::sync_all`] returns `Ok`.
    ///
    /// Errors: the OS error (EIO, ENOSPC, ...).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;

    /// Reads up to `buf.len()` bytes from byte `offset`; returns how many
    /// were read (0 at the end of the file).
    ///
    /// Errors: the OS error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// `fdatasync(2)`: the file's bytes and size are durable when it returns
    /// `Ok`. After an error nothing written since the last good sync may be
    /// assumed durable, now or after a later sync that succeeds.
    ///
    /// Errors: the OS error.
    fn sync_data(&self) -> io::Result<()>;

    /// `fsync(2)`: as [`Self::sync_data`], with every metadata field.
    ///
    /// Errors: the OS error.
    fn sync_all(&self) -> io::Result<()>;

    /// `ftruncate(2)`: sets the size to `len` bytes (not durable until a
    /// sync).
    ///
    /// Errors: the OS error.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// The size in bytes, as reads see it.
    ///
    /// Errors: the OS error.
    fn size(&self) -> io::Result<u64>;
}

/// The file system the log runs on: [`RealFs`] in production.
pub trait LogFs: std::fmt::Debug + Send + Sync {
    /// Opens `path` as `mode` says.
    ///
    /// Errors: the OS error (NotFound for a missing file in
    /// [`OpenMode::Read`], AlreadyExists in [`OpenMode::CreateNew`]).
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn LogFile>>;

    /// The whole content of `path`.
    ///
    /// Errors: the OS error (NotFound included).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// `rename(2)`: atomic, durable once the directories are fsynced.
    ///
    /// Errors: the OS error.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// `unlink(2)`: durable once the directory is fsynced.
    ///
    /// Errors: the OS error (NotFound included).
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Fsyncs the directory `dir`: the names created, renamed or removed in
    /// it are durable when this returns `Ok`.
    ///
    /// Errors: the OS error.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// The paths of the entries of `dir` (any order).
    ///
    /// Errors: the OS error.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;

    /// `mkdir -p`.
    ///
    /// Errors: the OS error.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Whether `path` exists.
    ///
    /// Errors: the OS error (other than NotFound).
    fn exists(&self, path: &Path) -> io::Result<bool>;
}

/// A shared handle on the file system the log runs on.
pub type Fs = Arc<dyn LogFs>;

/// The production file system: `std::fs`, with no behaviour of its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

static REAL_FS: LazyLock<Fs> = LazyLock::new(|| Arc::new(RealFs));

/// A handle on [`RealFs`] (one shared allocation).
pub fn real_fs() -> Fs {
    REAL_FS.clone()
}

#[derive(Debug)]
struct RealFile(File);

impl LogFile for RealFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.0.write_at(buf, offset)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

impl LogFs for RealFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn LogFile>> {
        let mut options = OpenOptions::new();
        match mode {
            OpenMode::Read => options.read(true),
            OpenMode::ReadWrite => options.read(true).write(true).create(true),
            OpenMode::Truncate => options.read(true).write(true).create(true).truncate(true),
            OpenMode::CreateNew => options.read(true).write(true).create_new(true),
        };
        Ok(Box::new(RealFile(options.open(path)?)))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        fs::read_dir(dir)?
            .map(|entry| entry.map(|e| e.path()))
            .collect()
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }
}

/// Writes all of `buf` at `offset`, going on after short writes (a write of
/// 0 bytes is an error: `WriteZero`).
///
/// Errors: the first OS error; bytes before it may have been written.
pub fn write_all_at(file: &dyn LogFile, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.write_at(buf, offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the file system wrote 0 bytes",
                ));
            }
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills `buf` from `offset`.
///
/// Errors: the OS error; `UnexpectedEof` if the file ends first.
pub fn read_exact_at(file: &dyn LogFile, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file ends before the bytes asked for",
                ));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Builds a [`LogError::Io`] naming the action and the file.
pub(crate) fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> LogError {
    let path = path.to_path_buf();
    move |source| LogError::Io {
        action,
        path,
        source,
    }
}

/// Opens `path` on `fs`, naming it in the error.
///
/// Errors: [`LogError::Io`] ("opening").
pub(crate) fn open(fs: &Fs, path: &Path, mode: OpenMode) -> Result<Box<dyn LogFile>> {
    fs.open(path, mode).map_err(io_err("opening", path))
}

/// The text of `path` on `fs`; `None` if it does not exist.
///
/// Errors: [`LogError::Io`] ("reading"), [`LogError::Corrupt`] if it is not
/// UTF-8.
pub(crate) fn read_text(fs: &Fs, path: &Path) -> Result<Option<String>> {
    match fs.read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| LogError::Corrupt {
                path: path.to_path_buf(),
                reason: "not UTF-8 text".into(),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("reading", path)(e)),
    }
}

/// Fsyncs a directory so that a rename or a new file in it survives a crash.
///
/// Errors: [`LogError::Io`] naming the directory.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    fsync_dir_on(&real_fs(), dir)
}

/// [`fsync_dir`] on `fs`.
///
/// Errors: [`LogError::Io`] naming the directory.
pub fn fsync_dir_on(fs: &Fs, dir: &Path) -> Result<()> {
    fs.sync_dir(dir).map_err(io_err("fsync of directory", dir))
}

/// Replaces `path` by a file holding `contents`, so that after a crash one
/// reads either the whole old file or the whole new one: writes
/// `<path>.tmp`, fsyncs and closes it, renames it over `path`, then fsyncs the
/// parent directory (as Kafka's `Utils.atomicMoveWithFallback` with the
/// fsyncs Kafka's callers add).
///
/// Errors: [`LogError::Io`] naming the file and the step that failed.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    write_atomically_on(&real_fs(), path, contents)
}

/// [`write_atomically`] on `fs`. If any step fails the old file is left in
/// place (the rename is the only step that touches it).
///
/// Errors: [`LogError::Io`] naming the file and the step that failed.
pub fn write_atomically_on(fs: &Fs, path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    {
        let file = fs
            .open(&tmp, OpenMode::Truncate)
            .map_err(io_err("creating", &tmp))?;
        write_all_at(file.as_ref(), contents, 0).map_err(io_err("writing", &tmp))?;
        file.sync_all().map_err(io_err("fsync of", &tmp))?;
    }
    fs.rename(&tmp, path)
        .map_err(io_err("renaming into place", path))?;
    fsync_dir_on(fs, parent_of(path))
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
