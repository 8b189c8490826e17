//! The `quorum-state` file: the election state that must be on disk before a
//! vote is answered (Kafka's `FileQuorumStateStore` and `QuorumStateData`).
//!
//! The file is one JSON object on one line, no trailing newline, as Kafka's
//! generated `QuorumStateDataJsonConverter` writes it at data_version 1:
//!
//! ```text
//! {"leaderId":-1,"leaderEpoch":5,"votedId":2,"votedDirectoryId":"<22-char base64 uuid>","data_version":1}
//! ```
//!
//! "None" is `-1` for ids and `AAAAAAAAAAAAAAAAAAAAAA` (the zero uuid) for the
//! directory id. data_version 0 (Kafka 3.x, kraft.version 0) is read too; any
//! other version refuses to start.
//!
//! Owns the file format and its atomic replacement. It must not decide
//! transitions: the engine hands it the state to persist.

use std::path::{Path, PathBuf};

use kraft_common::kafka_uuid;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{
    LogError, Result,
    fs::{Fs, read_text, real_fs, write_atomically_on},
};

/// File name inside the partition directory.
pub const QUORUM_STATE_FILE: &str = "quorum-state";
/// The data_version this module writes.
pub const QUORUM_STATE_DATA_VERSION: i16 = 1;

/// The persisted election state (Kafka's `ElectionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ElectionState {
    /// The leader epoch (`leaderEpoch`).
    pub epoch: i32,
    /// The leader of `epoch`, if known (`leaderId`, -1 when none).
    pub leader_id: Option<i32>,
    /// The replica voted for in `epoch`: node id and, with kraft.version 1,
    /// its directory id (`votedId`, `votedDirectoryId`).
    pub voted_key: Option<(i32, Option<Uuid>)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct QuorumStateData {
    #[serde(rename = "leaderId")]
    leader_id: i32,
    #[serde(rename = "leaderEpoch")]
    leader_epoch: i32,
    #[serde(rename = "votedId")]
    voted_id: i32,
    #[serde(
        rename = "votedDirectoryId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    voted_directory_id: Option<String>,
    data_version: i16,
}

/// Reads and writes `<partition dir>/quorum-state`.
#[derive(Debug, Clone)]
pub struct QuorumStateStore {
    path: PathBuf,
    fs: Fs,
}

impl QuorumStateStore {
    /// A store for `<partition_dir>/quorum-state`.
    pub fn new(partition_dir: &Path) -> Self {
        Self::new_on(&real_fs(), partition_dir)
    }

    /// [`Self::new`] with the file on `fs`.
    pub fn new_on(fs: &Fs, partition_dir: &Path) -> Self {
        Self {
            path: partition_dir.join(QUORUM_STATE_FILE),
            fs: fs.clone(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the election state; `None` if the file does not exist (a node
    /// that never voted nor saw a leader).
    ///
    /// Errors: [`LogError::UnsupportedQuorumStateVersion`] for a
    /// data_version other than 0 or 1; [`LogError::Corrupt`] for text that is
    /// not the expected JSON; [`LogError::Io`].
    pub fn read(&self) -> Result<Option<ElectionState>> {
        let Some(text) = read_text(&self.fs, &self.path)? else {
            return Ok(None);
        };
        let corrupt = |reason: String| LogError::Corrupt {
            path: self.path.clone(),
            reason,
        };
        let line = text.lines().next().unwrap_or_default();
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| corrupt(format!("not a JSON object: {e}")))?;
        let version = value
            .get("data_version")
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| corrupt("no data_version field".into()))?;
        if !(0..=i64::from(QUORUM_STATE_DATA_VERSION)).contains(&version) {
            return Err(LogError::UnsupportedQuorumStateVersion {
                path: self.path.clone(),
                version,
            });
        }
        let data: QuorumStateData =
            serde_json::from_value(value).map_err(|e| corrupt(format!("bad field: {e}")))?;
        let directory_id = match data.voted_directory_id.as_deref() {
            None => None,
            Some(s) => {
                let id = kafka_uuid::parse(s)
                    .map_err(|_| corrupt(format!("votedDirectoryId {s:?} is not a uuid")))?;
                (!id.is_nil()).then_some(id)
            }
        };
        Ok(Some(ElectionState {
            epoch: data.leader_epoch,
            leader_id: (data.leader_id >= 0).then_some(data.leader_id),
            voted_key: (data.voted_id >= 0).then_some((data.voted_id, directory_id)),
        }))
    }

    /// The file's text for `state` at data_version 1.
    pub fn encode(state: &ElectionState) -> String {
        let data = QuorumStateData {
            leader_id: state.leader_id.unwrap_or(-1),
            leader_epoch: state.epoch,
            voted_id: state.voted_key.map_or(-1, |(id, _)| id),
            voted_directory_id: Some(kafka_uuid::to_string(
                state.voted_key.and_then(|(_, d)| d).unwrap_or(Uuid::nil()),
            )),
            data_version: QUORUM_STATE_DATA_VERSION,
        };
        serde_json::to_string(&data).expect("a struct of numbers and strings serializes")
    }

    /// Replaces the file with `state` (temp file, fsync, rename, directory
    /// fsync): durable when this returns.
    ///
    /// Errors: [`LogError::Io`].
    pub fn write(&self, state: &ElectionState) -> Result<()> {
        write_atomically_on(&self.fs, &self.path, Self::encode(state).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quorum_state_line_uses_kafkas_field_names_and_none_values() {
        let state = ElectionState {
            epoch: 5,
            leader_id: None,
            voted_key: Some((2, None)),
        };
        assert_eq!(
            QuorumStateStore::encode(&state),
            r#"{"leaderId":-1,"leaderEpoch":5,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}"#
        );
    }

    #[test]
    fn the_quorum_state_round_trips_through_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = QuorumStateStore::new(dir.path());
        assert_eq!(store.read().expect("read"), None);
        let state = ElectionState {
            epoch: 7,
            leader_id: Some(1),
            voted_key: Some((1, Some(Uuid::from_u128(0xabcdef)))),
        };
        store.write(&state).expect("write");
        assert_eq!(store.read().expect("read"), Some(state));
        assert!(!dir.path().join("quorum-state.tmp").exists());
    }

    #[test]
    fn a_data_version_zero_file_from_kafka_3_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(QUORUM_STATE_FILE),
            r#"{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}"#,
        )
        .expect("write");
        let state = QuorumStateStore::new(dir.path()).read().expect("read");
        assert_eq!(
            state,
            Some(ElectionState {
                epoch: 3,
                leader_id: Some(1),
                voted_key: None
            })
        );
    }

    #[test]
    fn an_unknown_data_version_refuses_to_start() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(QUORUM_STATE_FILE),
            r#"{"leaderId":1,"leaderEpoch":3,"votedId":-1,"data_version":2}"#,
        )
        .expect("write");
        let err = QuorumStateStore::new(dir.path())
            .read()
            .expect_err("version 2 is unknown");
        assert!(
            matches!(
                err,
                LogError::UnsupportedQuorumStateVersion { version: 2, .. }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("data_version 2"), "{err}");
    }
}
