//! Snapshot files (KIP-630): `<20-digit end offset>-<10-digit epoch>.checkpoint`
//! in the partition directory, written as `.checkpoint.part` and renamed on
//! freeze (Kafka's `Snapshots`, `FileRawSnapshotWriter`, `FileRawSnapshotReader`).
//!
//! Owns the files and their names, and the framing Kafka's
//! `RecordsSnapshotWriter` gives a snapshot: a first control batch at offset 0
//! with SnapshotHeader (and, for kraft.version 1, KRaftVersion and Voters),
//! data batches, and a last control batch with SnapshotFooter; every batch
//! carries the snapshot's epoch. It must not interpret the metadata records.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};

use super::{
    OffsetAndEpoch, Result,
    fs::{Fs, LogFile, OpenMode, io_err, read_exact_at, real_fs, write_all_at},
};
use crate::record::{
    self, ControlRecord, KRaftVersionRecord, SnapshotFooterRecord, SnapshotHeaderRecord,
    VotersRecord,
};

/// Suffix of a frozen snapshot.
pub const SNAPSHOT_SUFFIX: &str = ".checkpoint";
/// Suffix of a snapshot being written.
pub const PARTIAL_SUFFIX: &str = ".checkpoint.part";
/// The id of the bootstrap snapshot `format` writes in dynamic mode (Kafka's
/// `Snapshots.BOOTSTRAP_SNAPSHOT_ID`).
pub const BOOTSTRAP_SNAPSHOT_ID: OffsetAndEpoch = OffsetAndEpoch::new(0, 0);

/// `%020d-%010d.checkpoint` for a snapshot id (end offset, epoch).
pub fn snapshot_file_name(id: OffsetAndEpoch) -> String {
    format!("{:020}-{:010}{SNAPSHOT_SUFFIX}", id.offset, id.epoch)
}

/// Parses a frozen snapshot's file name; `None` for anything else
/// (`.part` files included).
pub fn parse_snapshot_file_name(name: &str) -> Option<OffsetAndEpoch> {
    let stem = name.strip_suffix(SNAPSHOT_SUFFIX)?;
    let (offset, epoch) = stem.split_once('-')?;
    if offset.len() != 20 || epoch.len() != 10 {
        return None;
    }
    Some(OffsetAndEpoch::new(
        offset.parse().ok()?,
        epoch.parse().ok()?,
    ))
}

/// Ids of the frozen snapshots in `dir`, ascending.
///
/// Errors: [`super::LogError::Io`].
pub fn list_snapshots(dir: &Path) -> Result<Vec<OffsetAndEpoch>> {
    list_snapshots_on(&real_fs(), dir)
}

/// [`list_snapshots`] on `fs`.
///
/// Errors: [`super::LogError::Io`].
pub fn list_snapshots_on(fs: &Fs, dir: &Path) -> Result<Vec<OffsetAndEpoch>> {
    let mut ids = Vec::new();
    for path in fs.list_dir(dir).map_err(io_err("listing", dir))? {
        if let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(parse_snapshot_file_name)
        {
            ids.push(id);
        }
    }
    ids.sort();
    Ok(ids)
}

/// Removes `.checkpoint.part` files: snapshots whose writing a crash
/// interrupted (Kafka deletes them on start too). Call only when no writer is
/// open.
///
/// Errors: [`super::LogError::Io`].
pub fn delete_partial_snapshots(dir: &Path) -> Result<()> {
    delete_partial_snapshots_on(&real_fs(), dir)
}

/// [`delete_partial_snapshots`] on `fs`.
///
/// Errors: [`super::LogError::Io`].
pub fn delete_partial_snapshots_on(fs: &Fs, dir: &Path) -> Result<()> {
    for path in fs.list_dir(dir).map_err(io_err("listing", dir))? {
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(PARTIAL_SUFFIX))
        {
            tracing::warn!(file = %path.display(), "deleting a partial snapshot left by a crash");
            fs.remove_file(&path).map_err(io_err("deleting", &path))?;
        }
    }
    Ok(())
}

/// The path of snapshot `id`'s `.checkpoint.part` file in `dir`.
pub fn partial_snapshot_path(dir: &Path, id: OffsetAndEpoch) -> PathBuf {
    let final_name = snapshot_file_name(id);
    dir.join(format!(
        "{}{PARTIAL_SUFFIX}",
        final_name.trim_end_matches(SNAPSHOT_SUFFIX)
    ))
}

/// Deletes the snapshot `id` from `dir` (and fsyncs the directory).
///
/// Errors: [`super::LogError::Io`] (a missing file included).
pub fn delete_snapshot(dir: &Path, id: OffsetAndEpoch) -> Result<()> {
    delete_snapshot_on(&real_fs(), dir, id)
}

/// [`delete_snapshot`] on `fs`.
///
/// Errors: [`super::LogError::Io`] (a missing file included).
pub fn delete_snapshot_on(fs: &Fs, dir: &Path, id: OffsetAndEpoch) -> Result<()> {
    let path = dir.join(snapshot_file_name(id));
    fs.remove_file(&path).map_err(io_err("deleting", &path))?;
    super::fs::fsync_dir_on(fs, dir)
}

/// Writes one snapshot: bytes go to `<id>.checkpoint.part`; [`Self::freeze`]
/// makes it the durable `<id>.checkpoint`. Dropping it without freezing
/// leaves a `.part` file that [`delete_partial_snapshots`] removes on the next open.
#[derive(Debug)]
pub struct SnapshotWriter {
    id: OffsetAndEpoch,
    part_path: PathBuf,
    final_path: PathBuf,
    fs: Fs,
    file: Box<dyn LogFile>,
    size: u64,
}

impl SnapshotWriter {
    /// Starts a snapshot `id` in `dir`.
    ///
    /// Errors: [`super::LogError::Io`], including when the `.part` file
    /// already exists (another writer).
    pub fn create(dir: &Path, id: OffsetAndEpoch) -> Result<Self> {
        Self::create_on(&real_fs(), dir, id)
    }

    /// [`Self::create`] on `fs`.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn create_on(fs: &Fs, dir: &Path, id: OffsetAndEpoch) -> Result<Self> {
        let final_name = snapshot_file_name(id);
        let part_path = partial_snapshot_path(dir, id);
        let file = fs
            .open(&part_path, OpenMode::CreateNew)
            .map_err(io_err("creating", &part_path))?;
        Ok(Self {
            id,
            part_path,
            final_path: dir.join(final_name),
            fs: fs.clone(),
            file,
            size: 0,
        })
    }

    /// The snapshot id.
    pub fn id(&self) -> OffsetAndEpoch {
        self.id
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends bytes (whole batches, or a FetchSnapshot chunk as received).
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        write_all_at(self.file.as_ref(), bytes, self.size)
            .map_err(io_err("writing", &self.part_path))?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Reads the `.part` file back and checks that it is whole record batches
    /// with valid CRCs (a snapshot fetched from a leader is checked before it
    /// replaces the log: a damaged copy must not cost the follower its own
    /// log).
    ///
    /// Errors: [`super::LogError::Corrupt`] naming the `.part` file and the
    /// first bad batch; I/O errors.
    pub fn verify(&self) -> Result<()> {
        let bytes = self
            .fs
            .read(&self.part_path)
            .map_err(io_err("reading", &self.part_path))?;
        verify_batches(&bytes).map_err(|reason| super::LogError::Corrupt {
            path: self.part_path.clone(),
            reason,
        })
    }

    /// Abandons the snapshot: closes and deletes the `.part` file.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn abort(self) -> Result<()> {
        drop(self.file);
        match self.fs.remove_file(&self.part_path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err("deleting", &self.part_path)(e)),
        }
    }

    /// Fsyncs the `.part` file, renames it to `.checkpoint` and fsyncs the
    /// directory: when this returns the snapshot survives a crash.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn freeze(self) -> Result<PathBuf> {
        self.file
            .sync_all()
            .map_err(io_err("fsync of", &self.part_path))?;
        drop(self.file);
        self.fs
            .rename(&self.part_path, &self.final_path)
            .map_err(io_err("renaming into place", &self.final_path))?;
        super::fs::fsync_dir_on(&self.fs, super::fs::parent_of(&self.final_path))?;
        Ok(self.final_path)
    }
}

/// Checks that `bytes` are whole record batches with valid CRCs; the error
/// names the first bad one by its byte position.
pub(crate) fn verify_batches(bytes: &[u8]) -> std::result::Result<(), String> {
    let mut position = 0usize;
    for item in record::iter_batches(bytes, true) {
        let (header, _) = item.map_err(|e| format!("batch at byte {position}: {e}"))?;
        position += header.size_in_bytes();
    }
    if position != bytes.len() {
        return Err(format!(
            "{} bytes after the last whole batch at byte {position}",
            bytes.len() - position
        ));
    }
    Ok(())
}

/// A frozen snapshot open for reading by position (FetchSnapshot chunks).
#[derive(Debug)]
pub struct SnapshotReader {
    id: OffsetAndEpoch,
    path: PathBuf,
    file: Box<dyn LogFile>,
    size: u64,
}

impl SnapshotReader {
    /// Opens snapshot `id` in `dir`.
    ///
    /// Errors: [`super::LogError::Io`] (a missing snapshot included).
    pub fn open(dir: &Path, id: OffsetAndEpoch) -> Result<Self> {
        Self::open_on(&real_fs(), dir, id)
    }

    /// [`Self::open`] on `fs`.
    ///
    /// Errors: [`super::LogError::Io`] (a missing snapshot included).
    pub fn open_on(fs: &Fs, dir: &Path, id: OffsetAndEpoch) -> Result<Self> {
        let path = dir.join(snapshot_file_name(id));
        let file = super::fs::open(fs, &path, OpenMode::Read)?;
        let size = file.size().map_err(io_err("reading the size of", &path))?;
        Ok(Self {
            id,
            path,
            file,
            size,
        })
    }

    /// The snapshot id.
    pub fn id(&self) -> OffsetAndEpoch {
        self.id
    }

    /// Size of the file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Up to `max_bytes` bytes from byte `position` (fewer at the end; empty
    /// at or past the end). Chunks need not end on a batch boundary, as in
    /// Kafka's FetchSnapshot.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn read(&self, position: u64, max_bytes: usize) -> Result<Bytes> {
        let end = self.size.min(position.saturating_add(max_bytes as u64));
        if position >= end {
            return Ok(Bytes::new());
        }
        let mut out = BytesMut::zeroed((end - position) as usize);
        read_exact_at(self.file.as_ref(), &mut out, position)
            .map_err(io_err("reading", &self.path))?;
        Ok(out.freeze())
    }
}

/// Builds the bytes of a whole snapshot in `RecordsSnapshotWriter`'s framing:
/// a control batch at offset 0 with SnapshotHeader (version 0,
/// `last_contained_log_timestamp`) followed by `header_extras` (KRaftVersion,
/// Voters), one data batch of `records` if any, and a control batch with
/// SnapshotFooter (version 0). Every batch has leader epoch `epoch` and
/// timestamp `timestamp_ms`.
///
/// Errors: [`super::LogError::Record`] from encoding.
pub fn encode_snapshot(
    epoch: i32,
    timestamp_ms: i64,
    last_contained_log_timestamp: i64,
    header_extras: &[ControlRecord],
    records: &[Bytes],
) -> Result<Bytes> {
    let mut header = vec![ControlRecord::SnapshotHeader(
        SnapshotHeaderRecord::default()
            .with_version(0)
            .with_last_contained_log_timestamp(last_contained_log_timestamp),
    )];
    header.extend_from_slice(header_extras);
    let mut out = BytesMut::new();
    out.extend_from_slice(&record::encode_control_batch(
        0,
        epoch,
        timestamp_ms,
        &header,
    )?);
    let mut next = header.len() as i64;
    if !records.is_empty() {
        out.extend_from_slice(&record::encode_data_batch(
            next,
            epoch,
            timestamp_ms,
            records,
        )?);
        next += records.len() as i64;
    }
    out.extend_from_slice(&record::encode_control_batch(
        next,
        epoch,
        timestamp_ms,
        &[ControlRecord::SnapshotFooter(
            SnapshotFooterRecord::default().with_version(0),
        )],
    )?);
    Ok(out.freeze())
}

/// The bytes of the `00000000000000000000-0000000000.checkpoint` that
/// `format` writes (Kafka's `Formatter.writeBoostrapSnapshot` through
/// `RecordsSnapshotWriter`): one control batch with SnapshotHeader
/// (`lastContainedLogTimestamp` = `timestamp_ms`) and, for `kraft_version` 1
/// (KIP-853), KRaftVersion(1) and, when given, `voters` (for kraft.version 0,
/// a static quorum, neither, as Kafka's writer); then, when `records` is not empty, one data
/// batch of them (KIP-1170: the bootstrap records, framed); then a control
/// batch with SnapshotFooter. Epoch 0, producer id -1, no compression; every
/// batch stamped `timestamp_ms` (ms since the epoch), where Kafka reads its
/// clock once per batch.
///
/// Errors: [`super::LogError::Record`] from encoding.
pub fn encode_bootstrap_snapshot(
    timestamp_ms: i64,
    kraft_version: i16,
    voters: Option<VotersRecord>,
    records: &[Bytes],
) -> Result<Bytes> {
    let mut control = Vec::new();
    if kraft_version > 0 {
        control.push(ControlRecord::KRaftVersion(
            KRaftVersionRecord::default()
                .with_version(0)
                .with_k_raft_version(kraft_version),
        ));
        control.extend(voters.map(ControlRecord::Voters));
    }
    encode_snapshot(
        BOOTSTRAP_SNAPSHOT_ID.epoch,
        timestamp_ms,
        timestamp_ms,
        &control,
        records,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_file_names_are_twenty_and_ten_digits() {
        let id = OffsetAndEpoch::new(1234, 5);
        let name = snapshot_file_name(id);
        assert_eq!(name, "00000000000000001234-0000000005.checkpoint");
        assert_eq!(parse_snapshot_file_name(&name), Some(id));
        assert_eq!(
            parse_snapshot_file_name("00000000000000001234-0000000005.checkpoint.part"),
            None
        );
        assert_eq!(parse_snapshot_file_name("1234-5.checkpoint"), None);
    }

    #[test]
    fn a_snapshot_is_invisible_until_frozen_and_an_unfrozen_one_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = OffsetAndEpoch::new(10, 2);
        let mut writer = SnapshotWriter::create(dir.path(), id).expect("create");
        writer.append(b"abc").expect("append");
        assert_eq!(list_snapshots(dir.path()).expect("list"), vec![]);
        writer.freeze().expect("freeze");
        assert_eq!(list_snapshots(dir.path()).expect("list"), vec![id]);
        let reader = SnapshotReader::open(dir.path(), id).expect("open");
        assert_eq!(&reader.read(1, 10).expect("read")[..], b"bc");
        assert!(reader.read(3, 10).expect("read").is_empty());

        let mut abandoned =
            SnapshotWriter::create(dir.path(), OffsetAndEpoch::new(20, 2)).expect("create");
        abandoned.append(b"x").expect("append");
        drop(abandoned);
        assert_eq!(list_snapshots(dir.path()).expect("list"), vec![id]);
        delete_partial_snapshots(dir.path()).expect("cleanup");
        assert!(
            !dir.path()
                .join("00000000000000000020-0000000002.checkpoint.part")
                .exists()
        );
        delete_snapshot(dir.path(), id).expect("delete");
        assert_eq!(list_snapshots(dir.path()).expect("list"), vec![]);
    }
}
