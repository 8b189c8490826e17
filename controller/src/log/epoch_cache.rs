//! The leader epoch cache and its `leader-epoch-checkpoint` file (Kafka's
//! `LeaderEpochFileCache` and `LeaderEpochCheckpointFile`).
//!
//! Owns the list of `(epoch, start offset)` entries, one per epoch present in
//! the log, and the file's text format:
//!
//! ```text
//! 0            version
//! 2            number of entries
//! 1 0          epoch, start offset of that epoch
//! 3 17
//! ```
//!
//! It must not read segments: [`super::FileLog`] rebuilds the entries from the
//! batches it scans on open and tells the cache about each append and
//! truncation.

use std::path::{Path, PathBuf};

use super::{LogError, OffsetAndEpoch, Result, fs};

/// File name of the checkpoint inside the partition directory.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
const CHECKPOINT_VERSION: i32 = 0;

/// One entry: the first offset written in `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// Leader epoch.
    pub epoch: i32,
    /// First offset of that epoch.
    pub start_offset: i64,
}

/// The in-memory cache and the file it is checkpointed to.
#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    fs: fs::Fs,
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// A cache with `entries` (epochs strictly increasing), checkpointed at
    /// `<dir>/leader-epoch-checkpoint`. Nothing is written until
    /// [`Self::write_if_changed`] or a change.
    pub fn new(dir: &Path, entries: Vec<EpochEntry>) -> Self {
        Self::new_on(&fs::real_fs(), dir, entries)
    }

    /// [`Self::new`] with the file on `fs`.
    pub fn new_on(fs: &fs::Fs, dir: &Path, entries: Vec<EpochEntry>) -> Self {
        Self {
            path: dir.join(LEADER_EPOCH_CHECKPOINT_FILE),
            fs: fs.clone(),
            entries,
        }
    }

    /// The entries, epochs increasing.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// The last epoch, if any.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset` if it is newer than the
    /// latest epoch; returns whether the cache changed.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if self.latest_epoch().is_some_and(|latest| epoch <= latest) {
            return false;
        }
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    /// Drops every entry starting at or above `end_offset` (Kafka's
    /// `truncateFromEndAsyncFlush`); returns whether the cache changed.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        before != self.entries.len()
    }

    /// Kafka's `LeaderEpochFileCache.endOffsetFor`: the largest epoch `<=
    /// epoch` and the offset where it ends (the next epoch's start offset, or
    /// `log_end_offset` for the latest); `None` if every epoch is above
    /// `epoch`.
    pub fn end_offset_for(&self, epoch: i32, log_end_offset: i64) -> Option<OffsetAndEpoch> {
        let index = self.entries.iter().rposition(|e| e.epoch <= epoch)?;
        let end = self
            .entries
            .get(index + 1)
            .map_or(log_end_offset, |next| next.start_offset);
        Some(OffsetAndEpoch::new(end, self.entries[index].epoch))
    }

    /// The file's text for the current entries.
    pub fn encode(&self) -> String {
        let mut text = format!("{CHECKPOINT_VERSION}\n{}\n", self.entries.len());
        for e in &self.entries {
            text.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        text
    }

    /// Replaces the checkpoint file atomically with the current entries.
    ///
    /// Errors: [`LogError::Io`].
    pub fn write(&self) -> Result<()> {
        fs::write_atomically_on(&self.fs, &self.path, self.encode().as_bytes())
    }

    /// Writes the file unless it already holds exactly the current entries
    /// (used on open, after the entries were rebuilt from the segments).
    ///
    /// Errors: [`LogError::Io`].
    pub fn write_if_changed(&self) -> Result<()> {
        match self.fs.read(&self.path) {
            Ok(bytes) if bytes == self.encode().as_bytes() => Ok(()),
            _ => self.write(),
        }
    }

    /// Parses a checkpoint file's text.
    ///
    /// Errors: [`LogError::Corrupt`] naming the file and the bad line.
    pub fn parse(path: &Path, text: &str) -> Result<Vec<EpochEntry>> {
        let bad = |reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let mut lines = text.lines();
        let version = lines.next().ok_or_else(|| bad("empty file".into()))?;
        if version.trim() != CHECKPOINT_VERSION.to_string() {
            return Err(bad(format!("unknown version {version:?}, expected 0")));
        }
        let count: usize = lines
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| bad("missing or bad entry count".into()))?;
        // The count is the file's word: never reserve more than its lines.
        let mut entries = Vec::with_capacity(count.min(text.len() / 4));
        for line in lines.by_ref().take(count) {
            let mut parts = line.split_whitespace();
            let (Some(epoch), Some(offset), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad(format!("bad entry line {line:?}")));
            };
            let (Ok(epoch), Ok(start_offset)) = (epoch.parse(), offset.parse()) else {
                return Err(bad(format!("bad entry line {line:?}")));
            };
            entries.push(EpochEntry {
                epoch,
                start_offset,
            });
        }
        if entries.len() != count {
            return Err(bad(format!(
                "{} entries, the header says {count}",
                entries.len()
            )));
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_text_is_version_count_then_epoch_and_offset_lines() {
        let mut cache = LeaderEpochCache::new(Path::new("/nonexistent"), Vec::new());
        assert!(cache.assign(1, 0));
        assert!(!cache.assign(1, 5), "same epoch is not a new entry");
        assert!(cache.assign(3, 17));
        assert_eq!(cache.encode(), "0\n2\n1 0\n3 17\n");
        let parsed = LeaderEpochCache::parse(Path::new("x"), &cache.encode()).expect("parses");
        assert_eq!(parsed, cache.entries());
    }

    #[test]
    fn end_offset_for_an_epoch_is_where_the_next_epoch_starts() {
        let mut cache = LeaderEpochCache::new(Path::new("/nonexistent"), Vec::new());
        cache.assign(1, 0);
        cache.assign(3, 17);
        assert_eq!(cache.end_offset_for(0, 30), None);
        assert_eq!(
            cache.end_offset_for(1, 30),
            Some(OffsetAndEpoch::new(17, 1))
        );
        assert_eq!(
            cache.end_offset_for(2, 30),
            Some(OffsetAndEpoch::new(17, 1))
        );
        assert_eq!(
            cache.end_offset_for(3, 30),
            Some(OffsetAndEpoch::new(30, 3))
        );
        assert_eq!(
            cache.end_offset_for(9, 30),
            Some(OffsetAndEpoch::new(30, 3))
        );
        assert!(cache.truncate_from_end(17));
        assert_eq!(cache.encode(), "0\n1\n1 0\n");
    }

    #[test]
    fn a_huge_entry_count_is_refused_without_reserving_memory_for_it() {
        let err = LeaderEpochCache::parse(Path::new("x"), "0\n18446744073709551615\n1 0\n")
            .expect_err("one entry where the header says 2^64 - 1");
        assert!(err.to_string().contains("the header says"), "{err}");
    }
}
