//! The `kraft.version` upgrade 0 → 1 (KIP-853's static → dynamic quorum,
//! KAFKA-16538, Kafka 4.1's `KafkaRaftClient.upgradeKRaftVersion`): the
//! leader appends one control batch holding a `KRaftVersion` record (1) and a
//! `Voters` record made of the static voters with the directory ids it
//! learned from their Fetch requests. Followers switch when they read that
//! batch (`Core::scan_control_records`). Owns the refusals (not the leader,
//! a downgrade, an unknown level, an upgrade still uncommitted, a voter
//! without a known directory id or without kraft.version 1 support); must not
//! speak the UpdateFeatures protocol (that is `quorum_controller::features`).

use super::{EpochState, RaftEngine};
use crate::{
    log::ReplicatedLog,
    raft::{
        Command, RaftError,
        voters::{ReplicaKey, Voter, VoterSet},
    },
    record::{ControlRecord, KRaftVersionRecord, encode_control_batch},
};

/// The highest `kraft.version` this engine implements (KIP-853).
pub const KRAFT_VERSION_MAX: i16 = 1;

/// Why a `kraft.version` update was refused. Kafka answers all but
/// [`KRaftUpgradeError::NotLeader`] and [`KRaftUpgradeError::Raft`] with
/// `INVALID_UPDATE_VERSION` (its `InvalidUpdateVersionException`).
#[derive(Debug, thiserror::Error)]
pub enum KRaftUpgradeError {
    /// This node does not lead the quorum (Kafka: `NOT_CONTROLLER` / `NOT_LEADER_OR_FOLLOWER`).
    #[error(
        "not the leader (epoch {epoch}, leader {leader_id:?}): send the update to the active controller"
    )]
    NotLeader {
        /// Current epoch.
        epoch: i32,
        /// Known leader, if any.
        leader_id: Option<i32>,
    },
    /// A lower level than the current one was asked.
    #[error("kraft.version cannot be downgraded from {from} to {to}")]
    Downgrade {
        /// The finalized level.
        from: i16,
        /// The level asked.
        to: i16,
    },
    /// A level above [`KRAFT_VERSION_MAX`] (or below 0) was asked.
    #[error(
        "kraft.version {level} is not supported: the supported range is 0 to {KRAFT_VERSION_MAX}"
    )]
    UnsupportedLevel {
        /// The level asked.
        level: i16,
    },
    /// The upgrade batch is appended but not committed yet.
    #[error(
        "a kraft.version upgrade to {level} is pending (appended at offset {offset}, not committed yet); retry"
    )]
    Pending {
        /// The level being committed.
        level: i16,
        /// Offset of its `Voters` record.
        offset: i64,
    },
    /// The leader has not heard a Fetch carrying this voter's directory id.
    #[error(
        "voter {voter_id} has no known directory id (it has not fetched from this leader with one); the voters record needs it"
    )]
    UnknownDirectoryId {
        /// The voter's node id.
        voter_id: i32,
    },
    /// A voter's kraft.version range does not include the level asked.
    #[error("voter {voter_id} supports kraft.version {min} to {max}, not {level}")]
    VoterUnsupported {
        /// The voter's node id.
        voter_id: i32,
        /// Its lowest supported level.
        min: i16,
        /// Its highest supported level.
        max: i16,
        /// The level asked.
        level: i16,
    },
    /// Building or appending the batch failed (fatal for the runtime).
    #[error(transparent)]
    Raft(#[from] RaftError),
}

/// What [`RaftEngine::upgrade_kraft_version`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KRaftUpgrade {
    /// `kraft.version` already is the level asked (and committed): nothing appended.
    Unchanged,
    /// `validate_only`: the upgrade would be accepted; nothing appended.
    Validated,
    /// The upgrade batch was appended; it is committed once the high
    /// watermark passes `last_offset` in `epoch`.
    Appended {
        /// Offset of the batch's last record (the `Voters` record).
        last_offset: i64,
        /// The leader epoch it was appended in.
        epoch: i32,
    },
}

impl<L: ReplicatedLog> RaftEngine<L> {
    /// Finalizes `kraft.version` at `level` (UpdateFeatures on `kraft.version`,
    /// Kafka 4.1's `KafkaRaftClient.upgradeKRaftVersion`). On the leader of a
    /// kraft.version 0 quorum asked for 1, appends one control batch
    /// `[KRaftVersion(1), Voters(static voters with their directory ids)]`;
    /// the new voter set is in effect from then on. `validate_only` runs the
    /// checks and appends nothing. Returns the commands to execute.
    ///
    /// Errors: see [`KRaftUpgradeError`]; its `Raft` variant (a log failure)
    /// is fatal.
    pub fn upgrade_kraft_version(
        &mut self,
        level: i16,
        validate_only: bool,
        now_ms: u64,
    ) -> Result<(KRaftUpgrade, Vec<Command>), KRaftUpgradeError> {
        self.now_ms = self.now_ms.max(now_ms);
        let EpochState::Leader(leader) = &mut self.state else {
            return Err(KRaftUpgradeError::NotLeader {
                epoch: self.epoch(),
                leader_id: self.leader_id(),
            });
        };
        let core = &mut self.core;
        let current = core.kraft_version;
        if !(0..=KRAFT_VERSION_MAX).contains(&level) {
            return Err(KRaftUpgradeError::UnsupportedLevel { level });
        }
        if level < current {
            return Err(KRaftUpgradeError::Downgrade {
                from: current,
                to: level,
            });
        }
        if let Some(offset) = core.voter_history().latest_offset()
            && current >= 1
            && core.high_watermark.is_none_or(|hw| hw <= offset)
        {
            return Err(KRaftUpgradeError::Pending {
                level: current,
                offset,
            });
        }
        if level == current {
            return Ok((KRaftUpgrade::Unchanged, Vec::new()));
        }
        let mut next = Vec::new();
        for voter in core.voters().iter() {
            let id = voter.key.id;
            let directory_id = if id == core.local.id {
                core.local.directory_id
            } else {
                voter
                    .key
                    .directory_id
                    .or_else(|| leader.replicas.get(&id).and_then(|p| p.key.directory_id))
            };
            let Some(directory_id) = directory_id else {
                return Err(KRaftUpgradeError::UnknownDirectoryId { voter_id: id });
            };
            let (min, max) = voter.kraft_version;
            if !(min..=max).contains(&level) {
                return Err(KRaftUpgradeError::VoterUnsupported {
                    voter_id: id,
                    min,
                    max,
                    level,
                });
            }
            next.push(Voter {
                key: ReplicaKey::with_directory(id, directory_id),
                endpoints: voter.endpoints.clone(),
                kraft_version: voter.kraft_version,
            });
        }
        if validate_only {
            return Ok((KRaftUpgrade::Validated, Vec::new()));
        }
        let epoch = leader.epoch;
        let base = core.log.end_offset().offset;
        let records = [
            ControlRecord::KRaftVersion(
                KRaftVersionRecord::default()
                    .with_version(0)
                    .with_k_raft_version(level),
            ),
            ControlRecord::Voters(VoterSet::new(next).to_record()),
        ];
        let batch = encode_control_batch(
            base,
            epoch,
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            &records,
        )
        .map_err(RaftError::from)?;
        core.log
            .append_as_leader(batch, epoch)
            .map_err(RaftError::from)?;
        core.scan_control_records(base)?;
        tracing::info!(
            node = core.local.id,
            offset = base,
            level,
            "kraft.version upgrade appended"
        );
        leader.appended(core, &mut self.out, now_ms)?;
        self.poll(now_ms)?;
        self.report_role();
        Ok((
            KRaftUpgrade::Appended {
                last_offset: base + 1,
                epoch,
            },
            self.out.take_commands(),
        ))
    }
}
