//! [`MemoryFs`]: an in-memory [`LogFs`] with page-cache semantics and a fault
//! plan, for tests and the deterministic simulation. Production never uses it.
//!
//! # The model
//!
//! Every file has the bytes reads see (the page cache) and the bytes a crash
//! leaves (the disk). Writes, `set_len`, creations, renames and unlinks
//! change the cache only. A file's bytes reach the disk when a sync of it
//! returns `Ok`; a name created, renamed or removed reaches the disk when its
//! directory is fsynced. [`MemoryFs::crash`] (a power loss or kernel crash)
//! keeps only what reached the disk; [`MemoryFs::restart_process`] (the
//! process died, the kernel did not) keeps the cache.
//!
//! A failed sync is Linux's behaviour after an I/O error on write-back (the
//! PostgreSQL "fsyncgate" finding): the error is reported once, the dirty
//! pages are dropped from the disk's point of view, and every later sync of
//! that file reports success without making anything durable, until a crash.
//! So a log that retries a failed fsync, or reopens and fsyncs again, is
//! told its bytes are durable when they are not; only stopping is safe.
//!
//! Directories are durable as soon as they are created (the log creates its
//! partition directory once, before anything else).
//!
//! # The fault plan
//!
//! [`Fault`]s fail the nth operation of a kind ([`FsOp`]), optionally only on
//! paths containing a string, with EIO or ENOSPC ([`Errno`]), once or from
//! then on ([`Fault::sticky`]). [`MemoryFs::set_short_writes`] caps the bytes
//! each write accepts; [`MemoryFs::set_capacity`] makes writes past a total
//! size short, then ENOSPC. [`MemoryFs::hold_syncs`] makes syncs of files
//! wait (the threads that call them block) until its [`SyncHold`] is
//! dropped, so a test can act while an fsync is under way; the fault plan
//! applies at release. Only for syncs made on threads that may block (a
//! flush job's): a sync held on the thread of a current-thread runtime
//! would hold the runtime too. [`MemoryFs::watch_syncs_of`] records the
//! thread of every sync of some files and makes the first of them slow, so
//! a test can see where a node runs its fsyncs.
//!
//! Owns the model and the plan; it must not know any file format.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    io,
    path::{Path, PathBuf},
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread::ThreadId,
    time::Duration,
};

use super::fs::{LogFile, LogFs, OpenMode};

/// An operation a [`Fault`] can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsOp {
    /// [`LogFile::write_at`].
    Write,
    /// [`LogFile::sync_data`] and [`LogFile::sync_all`].
    Sync,
    /// [`LogFs::rename`].
    Rename,
    /// [`LogFile::read_at`] and [`LogFs::read`].
    Read,
    /// [`LogFs::remove_file`].
    Remove,
    /// [`LogFs::sync_dir`].
    SyncDir,
    /// [`LogFs::open`].
    Open,
    /// [`LogFile::set_len`].
    SetLen,
}

/// The error a [`Fault`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Errno {
    /// EIO (5): the device failed.
    Eio,
    /// ENOSPC (28): no space left on the device.
    Enospc,
}

impl Errno {
    /// The Linux errno value.
    pub fn raw(self) -> i32 {
        match self {
            Errno::Eio => 5,
            Errno::Enospc => 28,
        }
    }

    fn error(self) -> io::Error {
        io::Error::from_raw_os_error(self.raw())
    }
}

/// One fault of the plan: the `nth` (1-based) operation `op` on a path
/// containing `path_contains` (any path if `None`) fails with `errno`; and
/// every later matching one too if `sticky`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The kind of operation.
    pub op: FsOp,
    /// Only paths whose text contains this count (e.g. `".log"`,
    /// `"recovery-point"`).
    pub path_contains: Option<String>,
    /// Which matching operation fails, counting from 1 from when the fault
    /// was injected.
    pub nth: u64,
    /// The error returned.
    pub errno: Errno,
    /// Whether every matching operation after the nth fails too.
    pub sticky: bool,
}

impl Fault {
    /// The next `op` on any path fails once with `errno`.
    pub fn next(op: FsOp, errno: Errno) -> Self {
        Self {
            op,
            path_contains: None,
            nth: 1,
            errno,
            sticky: false,
        }
    }

    /// The same fault, only on paths containing `part`.
    pub fn on_path(mut self, part: &str) -> Self {
        self.path_contains = Some(part.to_owned());
        self
    }

    /// The same fault on the `nth` matching operation.
    pub fn nth(mut self, nth: u64) -> Self {
        self.nth = nth;
        self
    }

    /// The same fault, failing every matching operation from the nth on.
    pub fn sticky(mut self) -> Self {
        self.sticky = true;
        self
    }
}

#[derive(Debug, Default)]
struct Inode {
    cached: Vec<u8>,
    durable: Vec<u8>,
    /// A sync failed: later syncs report success and persist nothing.
    sync_lies: bool,
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    generation: u64,
    faults: Vec<(Fault, u64)>,
    fired: Vec<String>,
    short_writes: Option<usize>,
    capacity: Option<u64>,
}

impl State {
    /// Counts `op` on `path` against the plan; the error of the fault that
    /// fires, if one does.
    fn check(&mut self, op: FsOp, path: &Path) -> io::Result<()> {
        let text = path.to_string_lossy();
        let mut fire = None;
        for (fault, seen) in &mut self.faults {
            let matches = fault.op == op
                && fault
                    .path_contains
                    .as_deref()
                    .is_none_or(|p| text.contains(p));
            if !matches {
                continue;
            }
            *seen += 1;
            let hit = *seen == fault.nth || (fault.sticky && *seen > fault.nth);
            if hit && fire.is_none() {
                fire = Some(fault.errno);
            }
        }
        match fire {
            Some(errno) => {
                self.fired
                    .push(format!("{op:?} {} -> {errno:?}", path.display()));
                Err(errno.error())
            }
            None => Ok(()),
        }
    }

    fn used_bytes(&self) -> u64 {
        let live: BTreeSet<u64> = self.names.values().copied().collect();
        live.iter()
            .filter_map(|i| self.inodes.get(i))
            .map(|i| i.cached.len() as u64)
            .sum()
    }

    fn new_inode(&mut self) -> u64 {
        self.next_inode += 1;
        self.inodes.insert(self.next_inode, Inode::default());
        self.next_inode
    }
}

/// The in-memory file system (see the module doc). Clones share the same
/// files.
#[derive(Debug, Clone, Default)]
pub struct MemoryFs {
    state: Arc<Mutex<State>>,
    gate: Arc<SyncGate>,
}

/// Holds syncs back while closed ([`MemoryFs::hold_syncs`]). Apart from the
/// state's lock, so that held syncs leave every other operation free.
#[derive(Debug, Default)]
struct SyncGate {
    state: Mutex<GateState>,
    /// Notified when the hold ends, when a sync starts waiting, and when a
    /// watched sync starts.
    opened: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    held: bool,
    /// With a hold: only syncs of files whose path ends with this wait.
    only_suffix: Option<String>,
    /// Syncs blocked now (of this generation).
    waiting: usize,
    /// Bumped by [`SyncHold::let_waiting_pass`] and by the hold's release:
    /// the syncs that waited before go on.
    generation: u64,
    /// Syncs watched ([`MemoryFs::watch_syncs_of`]).
    watch: Option<SyncWatch>,
}

/// The syncs of files whose path ends with `suffix`: the threads they ran
/// on, in order, and the delay still to add to the next one.
#[derive(Debug)]
struct SyncWatch {
    suffix: String,
    delay: Option<Duration>,
    threads: Vec<ThreadId>,
}

impl SyncGate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Blocks the calling thread while the gate is held (for `path`), and
    /// for the delay a watch adds.
    fn pass(&self, path: &Path) {
        let delay = self.watched(path);
        if let Some(delay) = delay {
            std::thread::sleep(delay);
        }
        let mut gate = self.lock();
        let applies = gate
            .only_suffix
            .as_ref()
            .is_none_or(|suffix| path.to_string_lossy().ends_with(suffix.as_str()));
        if !gate.held || !applies {
            return;
        }
        let generation = gate.generation;
        gate.waiting += 1;
        self.opened.notify_all();
        while gate.held && gate.generation == generation {
            gate = self
                .opened
                .wait(gate)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if gate.generation == generation {
            gate.waiting -= 1;
        }
    }

    /// Records the calling thread for a sync of `path` if a watch covers
    /// it; the delay to add to this sync, if any.
    fn watched(&self, path: &Path) -> Option<Duration> {
        let mut gate = self.lock();
        let watch = gate.watch.as_mut()?;
        if !path.to_string_lossy().ends_with(watch.suffix.as_str()) {
            return None;
        }
        watch.threads.push(std::thread::current().id());
        let delay = watch.delay.take();
        self.opened.notify_all();
        delay
    }

    /// Lets every waiting sync go and holds no later one. The generation
    /// moves too, so a hold taken again before the waiters wake does not
    /// catch them.
    fn release(&self) {
        let mut gate = self.lock();
        gate.held = false;
        gate.generation += 1;
        gate.waiting = 0;
        self.opened.notify_all();
    }
}

/// Syncs of files held back ([`MemoryFs::hold_syncs`]) until this is
/// dropped (also when a test panics, so that no thread stays blocked).
#[derive(Debug)]
#[must_use = "the syncs are released when the hold is dropped"]
pub struct SyncHold {
    gate: Arc<SyncGate>,
}

impl SyncHold {
    /// Blocks the calling thread until a sync waits behind this hold, or
    /// `timeout` passes; whether one does. Call it where blocking is
    /// allowed (`tokio::task::spawn_blocking` in an async test).
    pub fn wait_for_a_held_sync(&self, timeout: std::time::Duration) -> bool {
        let gate = self.gate.lock();
        let (gate, _) = self
            .gate
            .opened
            .wait_timeout_while(gate, timeout, |g| g.waiting == 0)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        gate.waiting > 0
    }

    /// Lets the syncs waiting now go on; the hold stays for later ones.
    pub fn let_waiting_pass(&self) {
        let mut gate = self.gate.lock();
        gate.generation += 1;
        gate.waiting = 0;
        self.gate.opened.notify_all();
    }
}

impl Drop for SyncHold {
    fn drop(&mut self) {
        self.gate.release();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl MemoryFs {
    /// An empty file system with no fault planned.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a fault to the plan.
    pub fn inject(&self, fault: Fault) {
        lock(&self.state).faults.push((fault, 0));
    }

    /// Removes every planned fault, short writes and the capacity.
    pub fn clear_faults(&self) {
        let mut state = lock(&self.state);
        state.faults.clear();
        state.short_writes = None;
        state.capacity = None;
    }

    /// Each write accepts at most `max_bytes` bytes (`None`: all).
    pub fn set_short_writes(&self, max_bytes: Option<usize>) {
        lock(&self.state).short_writes = max_bytes.map(|m| m.max(1));
    }

    /// The files may hold `bytes` in total (`None`: no limit); a write past
    /// it is short, and one that can write nothing fails with ENOSPC.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        lock(&self.state).capacity = bytes;
    }

    /// From now on every sync of a file blocks its thread until the
    /// returned hold is dropped; then the held syncs go on (each meeting the
    /// fault plan) and later ones run at once. One hold at a time: a second
    /// replaces the first's path filter, and dropping either releases both.
    pub fn hold_syncs(&self) -> SyncHold {
        self.hold(None)
    }

    /// [`Self::hold_syncs`] of the files whose path ends with `suffix`
    /// only (e.g. `.log`: the segments, not the checkpoints).
    pub fn hold_syncs_of(&self, suffix: &str) -> SyncHold {
        self.hold(Some(suffix.to_owned()))
    }

    /// From now on, records the thread of every sync of a file whose path
    /// ends with `suffix` ([`Self::wait_for_watched_syncs`]), and makes the
    /// first of them take `first_delay` longer (a slow disk). Replaces any
    /// earlier watch.
    pub fn watch_syncs_of(&self, suffix: &str, first_delay: Duration) {
        self.gate.lock().watch = Some(SyncWatch {
            suffix: suffix.to_owned(),
            delay: Some(first_delay),
            threads: Vec::new(),
        });
    }

    /// Blocks the calling thread until `count` watched syncs have started,
    /// or `timeout` passes; the threads they ran on, in the order they
    /// started (all of them so far), or `None` on timeout. Call it where
    /// blocking is allowed (`tokio::task::spawn_blocking` in an async test).
    pub fn wait_for_watched_syncs(&self, count: usize, timeout: Duration) -> Option<Vec<ThreadId>> {
        let started = |g: &GateState| g.watch.as_ref().map_or(0, |w| w.threads.len());
        let gate = self.gate.lock();
        let (gate, _) = self
            .gate
            .opened
            .wait_timeout_while(gate, timeout, |g| started(g) < count)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (started(&gate) >= count).then(|| {
            gate.watch
                .as_ref()
                .map_or_else(Vec::new, |w| w.threads.clone())
        })
    }

    fn hold(&self, only_suffix: Option<String>) -> SyncHold {
        let mut gate = self.gate.lock();
        gate.held = true;
        gate.only_suffix = only_suffix;
        SyncHold {
            gate: self.gate.clone(),
        }
    }

    /// The faults that fired so far, one line each (`Sync <path> -> Eio`).
    pub fn fired(&self) -> Vec<String> {
        lock(&self.state).fired.clone()
    }

    /// A power loss: only what reached the disk stays; every open handle
    /// fails from now on; a sync that lied is forgotten with the cache.
    pub fn crash(&self) {
        let mut state = lock(&self.state);
        state.generation += 1;
        state.names = state.durable_names.clone();
        for inode in state.inodes.values_mut() {
            inode.cached = inode.durable.clone();
            inode.sync_lies = false;
        }
    }

    /// The process died but the kernel did not: the cache stays, with bytes
    /// a failed sync never wrote; every open handle fails from now on.
    pub fn restart_process(&self) {
        lock(&self.state).generation += 1;
    }

    /// The bytes of `path` a crash now would leave; `None` if its name is
    /// not durable.
    pub fn durable_file(&self, path: &Path) -> Option<Vec<u8>> {
        let state = lock(&self.state);
        let inode = state.durable_names.get(path)?;
        state.inodes.get(inode).map(|i| i.durable.clone())
    }

    /// The bytes of `path` reads see now; `None` if it does not exist.
    pub fn cached_file(&self, path: &Path) -> Option<Vec<u8>> {
        let state = lock(&self.state);
        let inode = state.names.get(path)?;
        state.inodes.get(inode).map(|i| i.cached.clone())
    }

    /// Replaces the cached and durable bytes of an existing `path` (a test
    /// damaging a file as a disk would).
    ///
    /// Errors: NotFound.
    pub fn overwrite(&self, path: &Path, bytes: Vec<u8>) -> io::Result<()> {
        let mut state = lock(&self.state);
        let inode = *state.names.get(path).ok_or_else(|| not_found(path))?;
        let file = state.inodes.entry(inode).or_default();
        file.cached.clone_from(&bytes);
        file.durable = bytes;
        Ok(())
    }
}

#[derive(Debug)]
struct MemoryFile {
    state: Arc<Mutex<State>>,
    gate: Arc<SyncGate>,
    inode: u64,
    path: PathBuf,
    generation: u64,
    writable: bool,
}

impl MemoryFile {
    fn state(&self) -> io::Result<MutexGuard<'_, State>> {
        let state = lock(&self.state);
        if state.generation != self.generation {
            return Err(io::Error::other(format!(
                "{}: handle opened before a simulated crash",
                self.path.display()
            )));
        }
        Ok(state)
    }

    fn sync(&self) -> io::Result<()> {
        self.gate.pass(&self.path);
        let mut state = self.state()?;
        let result = state.check(FsOp::Sync, &self.path);
        let inode = state.inodes.entry(self.inode).or_default();
        match result {
            Err(e) => {
                inode.sync_lies = true;
                Err(e)
            }
            Ok(()) if inode.sync_lies => Ok(()),
            Ok(()) => {
                inode.durable.clone_from(&inode.cached);
                Ok(())
            }
        }
    }
}

impl LogFile for MemoryFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        if !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "opened read-only",
            ));
        }
        let mut state = self.state()?;
        state.check(FsOp::Write, &self.path)?;
        let mut len = buf.len();
        if let Some(max) = state.short_writes {
            len = len.min(max);
        }
        let current = state.inodes.get(&self.inode).map_or(0, |i| i.cached.len());
        let end = offset as usize + len;
        if let Some(capacity) = state.capacity {
            let growth = end.saturating_sub(current) as u64;
            let free = capacity.saturating_sub(state.used_bytes());
            if growth > free {
                let allowed = (current as u64 + free).saturating_sub(offset) as usize;
                if allowed == 0 {
                    let path = self.path.clone();
                    state
                        .fired
                        .push(format!("Write {} -> Enospc", path.display()));
                    return Err(Errno::Enospc.error());
                }
                len = len.min(allowed);
            }
        }
        let inode = state.inodes.entry(self.inode).or_default();
        let end = offset as usize + len;
        if inode.cached.len() < end {
            inode.cached.resize(end, 0);
        }
        inode.cached[offset as usize..end].copy_from_slice(&buf[..len]);
        Ok(len)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut state = self.state()?;
        state.check(FsOp::Read, &self.path)?;
        let data = state
            .inodes
            .get(&self.inode)
            .map_or(&[][..], |i| &i.cached[..]);
        let start = (offset as usize).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.state()?;
        state.check(FsOp::SetLen, &self.path)?;
        state
            .inodes
            .entry(self.inode)
            .or_default()
            .cached
            .resize(len as usize, 0);
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        let state = self.state()?;
        Ok(state
            .inodes
            .get(&self.inode)
            .map_or(0, |i| i.cached.len() as u64))
    }
}

impl LogFs for MemoryFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn LogFile>> {
        let mut state = lock(&self.state);
        state.check(FsOp::Open, path)?;
        let existing = state.names.get(path).copied();
        let inode = match (mode, existing) {
            (OpenMode::Read, None) => return Err(not_found(path)),
            (OpenMode::CreateNew, Some(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: exists", path.display()),
                ));
            }
            (OpenMode::Truncate, Some(inode)) => {
                state.inodes.entry(inode).or_default().cached.clear();
                inode
            }
            (_, Some(inode)) => inode,
            (_, None) => {
                let parent = super::fs::parent_of(path).to_path_buf();
                if !state.dirs.contains(&parent) {
                    return Err(not_found(&parent));
                }
                let inode = state.new_inode();
                state.names.insert(path.to_path_buf(), inode);
                inode
            }
        };
        Ok(Box::new(MemoryFile {
            state: self.state.clone(),
            gate: self.gate.clone(),
            inode,
            path: path.to_path_buf(),
            generation: state.generation,
            writable: mode != OpenMode::Read,
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut state = lock(&self.state);
        state.check(FsOp::Read, path)?;
        let inode = state.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(state
            .inodes
            .get(inode)
            .map(|i| i.cached.clone())
            .unwrap_or_default())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.check(FsOp::Rename, to)?;
        let inode = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.check(FsOp::Remove, path)?;
        state
            .names
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.check(FsOp::SyncDir, dir)?;
        let in_dir = |p: &Path| super::fs::parent_of(p) == dir;
        state.durable_names.retain(|p, _| !in_dir(p));
        let now: Vec<(PathBuf, u64)> = state
            .names
            .iter()
            .filter(|(p, _)| in_dir(p))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        state.durable_names.extend(now);
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let state = lock(&self.state);
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let files = state.names.keys();
        let dirs = state.dirs.iter();
        Ok(files
            .chain(dirs)
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = lock(&self.state);
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() {
                state.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = lock(&self.state);
        Ok(state.names.contains_key(path) || state.dirs.contains(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &MemoryFs, path: &Path, bytes: &[u8]) -> Box<dyn LogFile> {
        let file = fs.open(path, OpenMode::ReadWrite).expect("open");
        super::super::fs::write_all_at(file.as_ref(), bytes, 0).expect("write");
        file
    }

    #[test]
    fn a_crash_keeps_only_fsynced_bytes_under_fsynced_names() {
        let fs = MemoryFs::new();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).expect("mkdir");
        let synced = write(&fs, &dir.join("a"), b"durable");
        synced.sync_data().expect("sync");
        fs.sync_dir(dir).expect("sync dir");
        write(&fs, &dir.join("a"), b"DURABLE-and-more");
        let unnamed = write(&fs, &dir.join("b"), b"never named durably");
        unnamed.sync_data().expect("sync");

        fs.crash();
        assert_eq!(fs.read(&dir.join("a")).expect("a"), b"durable");
        assert!(!fs.exists(&dir.join("b")).expect("exists"));
        assert!(synced.sync_data().is_err(), "handles die with the crash");
    }

    #[test]
    fn after_a_failed_fsync_later_fsyncs_succeed_and_persist_nothing() {
        let fs = MemoryFs::new();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).expect("mkdir");
        let file = write(&fs, &dir.join("a"), b"old");
        file.sync_data().expect("sync");
        fs.sync_dir(dir).expect("sync dir");
        super::super::fs::write_all_at(file.as_ref(), b"new", 0).expect("write");
        fs.inject(Fault::next(FsOp::Sync, Errno::Eio));

        let err = file.sync_data().expect_err("fails once");
        assert_eq!(err.raw_os_error(), Some(5));
        file.sync_data().expect("the retry reports success");
        assert_eq!(fs.read(&dir.join("a")).expect("cache"), b"new");
        assert_eq!(fs.durable_file(&dir.join("a")).expect("durable"), b"old");
        assert_eq!(fs.fired().len(), 1);
    }

    #[test]
    fn writes_past_the_capacity_are_short_then_fail_with_enospc() {
        let fs = MemoryFs::new();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).expect("mkdir");
        fs.set_capacity(Some(10));
        let file = fs.open(&dir.join("a"), OpenMode::ReadWrite).expect("open");
        assert_eq!(file.write_at(&[1; 8], 0).expect("fits"), 8);
        assert_eq!(file.write_at(&[2; 8], 8).expect("short"), 2);
        let err = file.write_at(&[3; 8], 10).expect_err("full");
        assert_eq!(err.raw_os_error(), Some(28));
    }
}
