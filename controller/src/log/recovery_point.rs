//! The recovery point and its `recovery-point-offset-checkpoint` file (Kafka's
//! `LogManager` recovery point checkpoint, in `OffsetCheckpointFile`'s format).
//!
//! The recovery point is an offset below which every batch was fsynced
//! before the file was written: recovery on open may truncate a damaged tail
//! at or above it (a crash can leave one there), but damage below it is
//! flushed data lost by the disk, and the log refuses to open
//! ([`super::LogError::DamagedBelowRecoveryPoint`]).
//!
//! The file's text, as Kafka writes it (version 0, the number of entries,
//! then `topic partition offset` lines):
//!
//! ```text
//! 0
//! 1
//! __cluster_metadata 0 1234
//! ```
//!
//! Kafka keeps one such file per log directory for all its partitions; the
//! metadata log directory holds one partition, and [`super::FileLog`] owns
//! only the partition directory, so the file sits in
//! `__cluster_metadata-0/` beside `leader-epoch-checkpoint`.
//!
//! Owns the file's format and its atomic replacement; it must not decide
//! when the point moves: [`super::FileLog`] does.

use std::path::{Path, PathBuf};

use super::{LogError, Result, fs};

/// File name of the checkpoint inside the partition directory.
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// The topic name written on the checkpoint's line.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
const CHECKPOINT_VERSION: i32 = 0;

/// The checkpoint file of one partition directory.
#[derive(Debug, Clone)]
pub struct RecoveryPointFile {
    path: PathBuf,
    fs: fs::Fs,
}

impl RecoveryPointFile {
    /// The file `<dir>/recovery-point-offset-checkpoint`.
    pub fn new(dir: &Path) -> Self {
        Self::new_on(&fs::real_fs(), dir)
    }

    /// [`Self::new`] on `fs`.
    pub fn new_on(fs: &fs::Fs, dir: &Path) -> Self {
        Self {
            path: dir.join(RECOVERY_POINT_CHECKPOINT_FILE),
            fs: fs.clone(),
        }
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text of the file for `offset`.
    pub fn encode(offset: i64) -> String {
        format!("{CHECKPOINT_VERSION}\n1\n{METADATA_TOPIC} 0 {offset}\n")
    }

    /// Parses the file's text; `Ok(None)` when it has no entry for
    /// `__cluster_metadata` partition 0.
    ///
    /// Errors: [`LogError::Corrupt`] naming `path` and what does not parse.
    pub fn decode(path: &Path, text: &str) -> Result<Option<i64>> {
        let corrupt = |reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let mut lines = text.lines();
        let version = lines.next().unwrap_or_default().trim();
        if version != CHECKPOINT_VERSION.to_string() {
            return Err(corrupt(format!(
                "version {version:?}, expected {CHECKPOINT_VERSION}"
            )));
        }
        let count: usize = lines
            .next()
            .unwrap_or_default()
            .trim()
            .parse()
            .map_err(|_| corrupt("the entry count does not parse".into()))?;
        let mut found = None;
        for _ in 0..count {
            let line = lines
                .next()
                .ok_or_else(|| corrupt(format!("{count} entries announced, fewer found")))?;
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [topic, partition, offset] = fields[..] else {
                return Err(corrupt(format!(
                    "line {line:?} is not `topic partition offset`"
                )));
            };
            let partition: i32 = partition
                .parse()
                .map_err(|_| corrupt(format!("partition in {line:?} does not parse")))?;
            let offset: i64 = offset
                .parse()
                .ok()
                .filter(|o| *o >= 0)
                .ok_or_else(|| corrupt(format!("offset in {line:?} is not an offset")))?;
            if topic == METADATA_TOPIC && partition == 0 {
                found = Some(offset);
            }
        }
        if lines.any(|l| !l.trim().is_empty()) {
            return Err(corrupt(format!("more than the {count} entries announced")));
        }
        Ok(found)
    }

    /// The recovery point on disk; `None` when the file does not exist (a log
    /// written before the file existed: everything is scanned as a tail).
    ///
    /// Errors: [`LogError::Corrupt`], [`LogError::Io`].
    pub fn read(&self) -> Result<Option<i64>> {
        match fs::read_text(&self.fs, &self.path)? {
            Some(text) => Self::decode(&self.path, &text),
            None => Ok(None),
        }
    }

    /// Replaces the file atomically (temp file, fsync, rename, directory
    /// fsync) with `offset`. The caller guarantees that every batch below
    /// `offset` is fsynced already.
    ///
    /// Errors: [`LogError::Io`].
    pub fn write(&self, offset: i64) -> Result<()> {
        fs::write_atomically_on(&self.fs, &self.path, Self::encode(offset).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_kafkas_offset_checkpoint_format_and_round_trips() {
        let text = RecoveryPointFile::encode(1234);
        assert_eq!(text, "0\n1\n__cluster_metadata 0 1234\n");
        let path = Path::new("x");
        assert_eq!(
            RecoveryPointFile::decode(path, &text).expect("parses"),
            Some(1234)
        );
        assert_eq!(
            RecoveryPointFile::decode(path, "0\n0\n").expect("parses"),
            None
        );
    }

    #[test]
    fn damaged_text_is_refused_naming_the_file() {
        let path = Path::new("/d/recovery-point-offset-checkpoint");
        for text in [
            "",
            "1\n1\n__cluster_metadata 0 5\n",
            "0\nx\n",
            "0\n2\n__cluster_metadata 0 5\n",
            "0\n1\n__cluster_metadata 0\n",
            "0\n1\n__cluster_metadata 0 -3\n",
            "0\n1\n__cluster_metadata 0 5\nextra 0 1\n",
        ] {
            let err = RecoveryPointFile::decode(path, text).expect_err(text);
            assert!(err.to_string().contains("/d/recovery-point"), "{err}");
        }
    }
}
