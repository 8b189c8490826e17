//! One log segment: a `%020d.log` file of whole RecordBatch v2 batches and its
//! sparse `%020d.index` (Kafka's `LogSegment` and `OffsetIndex`).
//!
//! Index entries are 8 bytes, big-endian: the relative offset (int32, last
//! offset of a batch minus the segment's base offset) and the byte position
//! (int32) of that batch in the `.log` file; one entry each time more than
//! `index.interval.bytes` were appended since the last one, as Kafka writes
//! them. The index is a lookup aid only: recovery rebuilds it from the segment.
//!
//! Owns the bytes of one segment; it must not decide what to append or
//! truncate, nor know about epochs beyond reporting each batch it scans.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use bytes::{Bytes, BytesMut};

use super::{
    Result,
    flush::SyncTarget,
    fs::{Fs, LogFile, OpenMode, io_err, read_exact_at, write_all_at},
};
use crate::record::{BATCH_OVERHEAD_BYTES, BatchHeader, RecordError};

const INDEX_ENTRY_BYTES: usize = 8;

/// Bytes of batch headers [`Segment::position_of`] reads at once: twice
/// Kafka's default `index.interval.bytes` (4096), so that the walk from an
/// index entry to the batch sought is one read.
const SCAN_WINDOW_BYTES: usize = 8 * 1024;

/// `%020d.log`, Kafka's segment file name for a base offset.
pub fn log_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.log")
}

/// `%020d.index`, Kafka's offset index file name for a base offset.
pub fn index_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.index")
}

/// Why a scan stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte position of the first unusable byte.
    pub position: u64,
    /// The offset the next batch should have started at.
    pub offset: i64,
    /// What was found there.
    pub reason: String,
}

/// A segment open for reads and appends.
#[derive(Debug)]
pub struct Segment {
    base_offset: i64,
    log_path: PathBuf,
    index_path: PathBuf,
    fs: Fs,
    /// Shared with a [`super::FlushJob`] that fsyncs it off the event loop.
    file: Arc<dyn LogFile>,
    index_file: Arc<dyn LogFile>,
    size: u64,
    next_offset: i64,
    index: Vec<(i32, u32)>,
    bytes_since_index: u64,
    /// The `.log` file has writes not yet fsynced.
    dirty: bool,
    /// The `.index` file has writes not yet fsynced.
    index_dirty: bool,
}

fn open_rw(fs: &Fs, path: &Path, truncate: bool) -> Result<Arc<dyn LogFile>> {
    let mode = if truncate {
        OpenMode::Truncate
    } else {
        OpenMode::ReadWrite
    };
    super::fs::open(fs, path, mode).map(Arc::from)
}

impl Segment {
    /// Creates an empty segment at `base_offset` (replacing any leftover files).
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn create(fs: &Fs, dir: &Path, base_offset: i64) -> Result<Self> {
        let log_path = dir.join(log_file_name(base_offset));
        let index_path = dir.join(index_file_name(base_offset));
        let file = open_rw(fs, &log_path, true)?;
        let index_file = open_rw(fs, &index_path, true)?;
        Ok(Self {
            base_offset,
            log_path,
            index_path,
            fs: fs.clone(),
            file,
            index_file,
            size: 0,
            next_offset: base_offset,
            index: Vec::new(),
            bytes_since_index: 0,
            dirty: true,
            index_dirty: true,
        })
    }

    /// Opens an existing segment and scans it batch by batch (headers, CRC,
    /// contiguous offsets from `base_offset`), calling `on_batch` for each
    /// good batch; `on_batch` may refuse one (returning why), which counts as
    /// damage there. Stops at the first damage and returns it: the caller
    /// decides to truncate there. The index is rebuilt from the scan and its
    /// file rewritten if it differs.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn open_and_scan(
        fs: &Fs,
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        mut on_batch: impl FnMut(&BatchHeader) -> Option<String>,
    ) -> Result<(Self, Option<Damage>)> {
        let log_path = dir.join(log_file_name(base_offset));
        let index_path = dir.join(index_file_name(base_offset));
        let file = open_rw(fs, &log_path, false)?;
        let file_len = file
            .size()
            .map_err(io_err("reading the size of", &log_path))?;
        let index_file = open_rw(fs, &index_path, false)?;
        let mut segment = Self {
            base_offset,
            log_path,
            index_path,
            fs: fs.clone(),
            file,
            index_file,
            size: 0,
            next_offset: base_offset,
            index: Vec::new(),
            bytes_since_index: 0,
            dirty: false,
            index_dirty: false,
        };
        let mut buf = Vec::new();
        let damage = loop {
            let position = segment.size;
            if position >= file_len {
                break None;
            }
            match segment.read_checked_batch(position, file_len, &mut buf)? {
                Ok(header) if header.base_offset != segment.next_offset => {
                    break Some(Damage {
                        position,
                        offset: segment.next_offset,
                        reason: format!(
                            "batch with base offset {} where {} was expected",
                            header.base_offset, segment.next_offset
                        ),
                    });
                }
                Ok(header) => {
                    if let Some(reason) = on_batch(&header) {
                        break Some(Damage {
                            position,
                            offset: segment.next_offset,
                            reason,
                        });
                    }
                    segment.note_appended(&header, position, index_interval_bytes);
                }
                Err(reason) => {
                    break Some(Damage {
                        position,
                        offset: segment.next_offset,
                        reason,
                    });
                }
            }
        };
        segment.write_index_if_changed()?;
        Ok((segment, damage))
    }

    /// Reads and checks the batch at `position`; the inner error says why the
    /// bytes there are not a good batch.
    fn read_checked_batch(
        &self,
        position: u64,
        file_len: u64,
        buf: &mut Vec<u8>,
    ) -> Result<std::result::Result<BatchHeader, String>> {
        let remaining = file_len - position;
        let head_len = remaining.min(BATCH_OVERHEAD_BYTES as u64) as usize;
        buf.resize(head_len, 0);
        read_exact_at(self.file.as_ref(), buf, position)
            .map_err(io_err("reading", &self.log_path))?;
        if buf.iter().all(|b| *b == 0) && self.is_zero_from(position, file_len)? {
            return Ok(Err(format!("{remaining} zero bytes")));
        }
        let header = match BatchHeader::parse(buf) {
            Ok(h) => h,
            Err(RecordError::Truncated { .. }) => {
                return Ok(Err(format!("torn batch header ({remaining} bytes left)")));
            }
            Err(e) => return Ok(Err(e.to_string())),
        };
        let size = header.size_in_bytes() as u64;
        if size > remaining {
            return Ok(Err(format!(
                "torn batch: {size} bytes long, {remaining} bytes left"
            )));
        }
        buf.resize(size as usize, 0);
        read_exact_at(self.file.as_ref(), buf, position)
            .map_err(io_err("reading", &self.log_path))?;
        Ok(header
            .verify_crc(buf)
            .map(|()| header)
            .map_err(|e| e.to_string()))
    }

    fn is_zero_from(&self, position: u64, file_len: u64) -> Result<bool> {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut at = position;
        while at < file_len {
            let n = ((file_len - at) as usize).min(chunk.len());
            read_exact_at(self.file.as_ref(), &mut chunk[..n], at)
                .map_err(io_err("reading", &self.log_path))?;
            if chunk[..n].iter().any(|b| *b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }

    fn note_appended(&mut self, header: &BatchHeader, position: u64, index_interval_bytes: u64) {
        if self.bytes_since_index > index_interval_bytes {
            let relative = (header.last_offset() - self.base_offset) as i32;
            self.index.push((relative, position as u32));
            self.bytes_since_index = 0;
        }
        let size = header.size_in_bytes() as u64;
        self.bytes_since_index += size;
        self.size = position + size;
        self.next_offset = header.next_offset();
    }

    fn encode_index(entries: &[(i32, u32)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(entries.len() * INDEX_ENTRY_BYTES);
        for (relative, position) in entries {
            out.extend_from_slice(&relative.to_be_bytes());
            out.extend_from_slice(&position.to_be_bytes());
        }
        out
    }

    fn write_index_if_changed(&mut self) -> Result<()> {
        let want = Self::encode_index(&self.index);
        let have = self
            .fs
            .read(&self.index_path)
            .map_err(io_err("reading", &self.index_path))?;
        if have != want {
            self.index_file
                .set_len(0)
                .map_err(io_err("truncating", &self.index_path))?;
            write_all_at(self.index_file.as_ref(), &want, 0)
                .map_err(io_err("writing", &self.index_path))?;
            self.index_file
                .sync_all()
                .map_err(io_err("fsync of", &self.index_path))?;
        }
        Ok(())
    }

    /// Base offset (the file name).
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes in the `.log` file.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The offset after the last batch (the base offset when empty).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Path of the `.log` file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Appends whole, already validated batches (`headers` describes them in
    /// order), adding index entries as they fall due. Not durable until
    /// [`Self::flush`].
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn append(
        &mut self,
        bytes: &[u8],
        headers: &[BatchHeader],
        index_interval_bytes: u64,
    ) -> Result<()> {
        write_all_at(self.file.as_ref(), bytes, self.size)
            .map_err(io_err("appending to", &self.log_path))?;
        let first_new_entry = self.index.len();
        let mut position = self.size;
        for header in headers {
            self.note_appended(header, position, index_interval_bytes);
            position += header.size_in_bytes() as u64;
        }
        if self.index.len() > first_new_entry {
            let bytes = Self::encode_index(&self.index[first_new_entry..]);
            let at = (first_new_entry * INDEX_ENTRY_BYTES) as u64;
            write_all_at(self.index_file.as_ref(), &bytes, at)
                .map_err(io_err("appending to", &self.index_path))?;
            self.index_dirty = true;
        }
        self.dirty = true;
        Ok(())
    }

    /// The header of the batch at byte `position`.
    ///
    /// Errors: [`super::LogError::Io`] or a header that does not parse.
    pub fn header_at(&self, position: u64) -> Result<BatchHeader> {
        let mut buf = [0u8; BATCH_OVERHEAD_BYTES];
        read_exact_at(self.file.as_ref(), &mut buf, position)
            .map_err(io_err("reading", &self.log_path))?;
        Ok(BatchHeader::parse(&buf)?)
    }

    /// Byte position of the batch holding `offset`, or of the first batch
    /// after it; `None` if every batch ends below `offset`. Starts from the
    /// index entry at or below `offset` (Kafka's `OffsetIndex.lookup`) and
    /// walks the batch headers from there, reading them
    /// [`SCAN_WINDOW_BYTES`] at a time rather than one read per header.
    ///
    /// Errors: [`super::LogError::Io`], or a header that no longer parses.
    pub fn position_of(&self, offset: i64) -> Result<Option<u64>> {
        let relative = offset - self.base_offset;
        let start = self
            .index
            .iter()
            .rev()
            .find(|(rel, _)| i64::from(*rel) <= relative)
            .map_or(0, |(_, pos)| u64::from(*pos));
        let mut position = start;
        while position < self.size {
            let window = self.read_window(position, SCAN_WINDOW_BYTES)?;
            if window.len() < BATCH_OVERHEAD_BYTES {
                // Less than a header left in the segment.
                return Err(RecordError::Truncated {
                    needed: BATCH_OVERHEAD_BYTES,
                    available: window.len(),
                }
                .into());
            }
            let mut at = 0;
            while at + BATCH_OVERHEAD_BYTES <= window.len() {
                let header = BatchHeader::parse(&window[at..])?;
                if header.last_offset() >= offset {
                    return Ok(Some(position + at as u64));
                }
                at += header.size_in_bytes();
            }
            position += at as u64;
        }
        Ok(None)
    }

    /// Whole batches from `position`, as many as fit in `max_bytes` but at
    /// least one: one read of up to `max_bytes`, cut at the last whole
    /// batch, and a second read only when the first batch alone is larger.
    ///
    /// Errors: [`super::LogError::Io`], or a header that does not parse.
    pub fn read(&self, position: u64, max_bytes: usize) -> Result<Bytes> {
        let mut out = self.read_window(position, max_bytes.max(BATCH_OVERHEAD_BYTES))?;
        let mut end = 0;
        while end + BATCH_OVERHEAD_BYTES <= out.len() {
            let size = BatchHeader::parse(&out[end..])?.size_in_bytes();
            if end + size > out.len() {
                break;
            }
            end += size;
        }
        if end == 0 && position < self.size {
            // The first batch does not fit in `max_bytes`: read it whole,
            // unless its header claims more than the segment holds.
            let size = BatchHeader::parse(&out)?.size_in_bytes();
            let available = self.size - position;
            if size as u64 > available {
                return Err(RecordError::Truncated {
                    needed: size,
                    available: available as usize,
                }
                .into());
            }
            return self.read_window(position, size).map(BytesMut::freeze);
        }
        out.truncate(end);
        Ok(out.freeze())
    }

    /// Up to `max_bytes` bytes from `position`, fewer at the end of the
    /// segment, in one read.
    ///
    /// Errors: [`super::LogError::Io`].
    fn read_window(&self, position: u64, max_bytes: usize) -> Result<BytesMut> {
        let len = self.size.saturating_sub(position).min(max_bytes as u64) as usize;
        let mut out = BytesMut::zeroed(len);
        read_exact_at(self.file.as_ref(), &mut out, position)
            .map_err(io_err("reading", &self.log_path))?;
        Ok(out)
    }

    /// Cuts the segment at byte `position` (a batch boundary) whose first
    /// offset is `next_offset`, drops index entries at or above it, and
    /// fsyncs both files.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn truncate_to(&mut self, position: u64, next_offset: i64) -> Result<()> {
        self.file
            .set_len(position)
            .map_err(io_err("truncating", &self.log_path))?;
        self.size = position;
        self.next_offset = next_offset;
        self.index.retain(|(_, pos)| u64::from(*pos) < position);
        self.index_file
            .set_len((self.index.len() * INDEX_ENTRY_BYTES) as u64)
            .map_err(io_err("truncating", &self.index_path))?;
        // Index entries are dense enough without recomputing the interval.
        self.bytes_since_index = 0;
        self.dirty = true;
        self.index_dirty = true;
        self.flush()
    }

    /// Fsyncs each of the `.log` and `.index` files written since it was
    /// last fsynced.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn flush(&mut self) -> Result<()> {
        if self.dirty {
            self.file
                .sync_data()
                .map_err(io_err("fsync of", &self.log_path))?;
            self.dirty = false;
        }
        // The index is only a lookup aid rebuilt on open, but Kafka's tools
        // read it too: a segment flushed here (rolled, closed, recovered) has
        // it as durable as its records.
        if self.index_dirty {
            self.index_file
                .sync_data()
                .map_err(io_err("fsync of", &self.index_path))?;
            self.index_dirty = false;
        }
        Ok(())
    }

    /// The `.log` file if it has writes not yet fsynced, for a
    /// [`super::FlushJob`]; nothing is marked synced.
    ///
    /// The `.index` file is not in it: the job's fsyncs are what a commit
    /// waits for, and the index is derived from the records. Our open
    /// rebuilds every segment's index from a scan of its records and
    /// rewrites the file when it differs ([`super::recovery`]); Kafka's
    /// `KafkaRaftLog` opens the metadata log with recovery point 0 as after
    /// an unclean shutdown, so its `LogLoader` recovers every segment and
    /// rebuilds its index too. Only the active segment can hold an index
    /// write not fsynced: a roll and a truncation flush a segment whole
    /// ([`Self::flush`]). An index fsync in every job was a second fsync,
    /// one after the other, in every flush that crossed
    /// `index.interval.bytes` (BENCHMARKS.md, issue 23: "The offset index
    /// out of the commit's fsync").
    pub fn unsynced_log_file(&self) -> Option<SyncTarget> {
        self.dirty.then(|| SyncTarget {
            file: Arc::clone(&self.file),
            path: self.log_path.clone(),
        })
    }

    /// A [`super::FlushJob`] fsynced this segment's `.log` file after its
    /// last write; its `.index` waits for [`Self::flush`].
    pub fn mark_log_synced(&mut self) {
        self.dirty = false;
    }

    /// Fsyncs both files whatever was written (used on open, where bytes
    /// from before a process crash may still sit in the page cache only).
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn flush_all(&mut self) -> Result<()> {
        self.dirty = true;
        self.index_dirty = true;
        self.flush()
    }

    /// Deletes both files of the segment.
    ///
    /// Errors: [`super::LogError::Io`].
    pub fn delete(self) -> Result<()> {
        self.fs
            .remove_file(&self.log_path)
            .map_err(io_err("deleting", &self.log_path))?;
        match self.fs.remove_file(&self.index_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_err("deleting", &self.index_path)(e))
            }
            _ => Ok(()),
        }
    }
}
