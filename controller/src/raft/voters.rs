//! The voter set: who may vote and lead, with their endpoints (Kafka's
//! `VoterSet`, `ReplicaKey`, KIP-853).
//!
//! Owns membership arithmetic (majority size, lookup by id and key) and the
//! mapping to and from the `Voters` control record, and the voter-set history
//! over the log (`VoterHistory`, Kafka's `VoterSetHistory`, held by the
//! engine's core). It must not decide when the set changes: the engine does,
//! from the log.

use std::collections::BTreeMap;

use kafka_protocol::messages::voters_record;
use uuid::Uuid;

use crate::record::VotersRecord;

/// A replica's identity: its node id and, under kraft.version 1, the
/// directory id of its metadata log (`None` for static voters of
/// kraft.version 0). Kafka's `ReplicaKey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplicaKey {
    /// `node.id`.
    pub id: i32,
    /// `directory.id` from `meta.properties`, if known.
    pub directory_id: Option<Uuid>,
}

impl ReplicaKey {
    /// A key without a directory id (static `controller.quorum.voters`).
    pub const fn of(id: i32) -> Self {
        Self {
            id,
            directory_id: None,
        }
    }

    /// A key with a directory id.
    pub const fn with_directory(id: i32, directory_id: Uuid) -> Self {
        Self {
            id,
            directory_id: Some(directory_id),
        }
    }

    /// Kafka's wire form of the directory id: the nil UUID (`Uuid.ZERO_UUID`)
    /// for none.
    pub fn directory_id_or_nil(&self) -> Uuid {
        self.directory_id.unwrap_or(Uuid::nil())
    }

    /// Reads a wire directory id (nil means none).
    pub fn from_wire(id: i32, directory_id: Uuid) -> Self {
        Self {
            id,
            directory_id: (!directory_id.is_nil()).then_some(directory_id),
        }
    }

    /// Whether `other` names this replica: same id, and same directory id when
    /// both have one (Kafka's matching of keys from kraft.version 0 requests).
    pub fn matches(&self, other: &ReplicaKey) -> bool {
        self.id == other.id
            && match (self.directory_id, other.directory_id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl std::fmt::Display for ReplicaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.directory_id {
            Some(d) => write!(f, "{}({d})", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}

/// A listener endpoint: listener name (e.g. `CONTROLLER`), host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// Listener name.
    pub name: String,
    /// Host name or IP.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// Builds an endpoint.
    pub fn new(name: impl Into<String>, host: impl Into<String>, port: u16) -> Self {
        Self {
            name: name.into(),
            host: host.into(),
            port,
        }
    }
}

/// One voter: its key, its listener endpoints (first is the one peers dial)
/// and the kraft.version range it supports (`(0, 0)` when unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voter {
    /// Node id and directory id.
    pub key: ReplicaKey,
    /// Listener endpoints; empty when unknown.
    pub endpoints: Vec<Endpoint>,
    /// Supported kraft.version range `(min, max)`.
    pub kraft_version: (i16, i16),
}

impl Voter {
    /// A voter with one endpoint and kraft.version range `(0, 1)`.
    pub fn new(key: ReplicaKey, endpoint: Option<Endpoint>) -> Self {
        Self {
            key,
            endpoints: endpoint.into_iter().collect(),
            kraft_version: (0, 1),
        }
    }
}

/// The set of voters, keyed by node id (a node id appears at most once).
/// Kafka's `VoterSet`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VoterSet {
    voters: BTreeMap<i32, Voter>,
}

impl VoterSet {
    /// A set from voters; a later voter with the same id replaces an earlier one.
    pub fn new(voters: impl IntoIterator<Item = Voter>) -> Self {
        Self {
            voters: voters.into_iter().map(|v| (v.key.id, v)).collect(),
        }
    }

    /// Static voters by id, without directory ids or endpoints (tests).
    pub fn from_ids(ids: impl IntoIterator<Item = i32>) -> Self {
        Self::new(
            ids.into_iter()
                .map(|id| Voter::new(ReplicaKey::of(id), None)),
        )
    }

    /// Number of voters.
    pub fn len(&self) -> usize {
        self.voters.len()
    }

    /// Whether there is no voter.
    pub fn is_empty(&self) -> bool {
        self.voters.is_empty()
    }

    /// Votes needed for a majority: `len / 2 + 1`.
    pub fn majority(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    /// The voter with this id.
    pub fn get(&self, id: i32) -> Option<&Voter> {
        self.voters.get(&id)
    }

    /// Whether this id is a voter.
    pub fn contains_id(&self, id: i32) -> bool {
        self.voters.contains_key(&id)
    }

    /// Whether this key is a voter: the id is, and the directory ids match
    /// when both are known (Kafka's `VoterSet.isVoter`).
    pub fn contains_key(&self, key: &ReplicaKey) -> bool {
        self.voters.get(&key.id).is_some_and(|v| v.key.matches(key))
    }

    /// Voter ids in ascending order.
    pub fn ids(&self) -> impl Iterator<Item = i32> + '_ {
        self.voters.keys().copied()
    }

    /// Voters in ascending id order.
    pub fn iter(&self) -> impl Iterator<Item = &Voter> + '_ {
        self.voters.values()
    }

    /// A copy with `voter` added (or replacing the voter with its id).
    pub fn with_added(&self, voter: Voter) -> Self {
        let mut next = self.clone();
        next.voters.insert(voter.key.id, voter);
        next
    }

    /// A copy without `key`; `None` if `key` is not a voter.
    pub fn with_removed(&self, key: &ReplicaKey) -> Option<Self> {
        if !self.contains_key(key) {
            return None;
        }
        let mut next = self.clone();
        next.voters.remove(&key.id);
        Some(next)
    }

    /// The `Voters` control record (version 0) for this set.
    pub fn to_record(&self) -> VotersRecord {
        VotersRecord::default().with_version(0).with_voters(
            self.iter()
                .map(|v| {
                    voters_record::Voter::default()
                        .with_voter_id(v.key.id.into())
                        .with_voter_directory_id(v.key.directory_id_or_nil())
                        .with_endpoints(
                            v.endpoints
                                .iter()
                                .map(|e| {
                                    voters_record::Endpoint::default()
                                        .with_name(e.name.clone().into())
                                        .with_host(e.host.clone().into())
                                        .with_port(e.port)
                                })
                                .collect(),
                        )
                        .with_k_raft_version_feature(
                            voters_record::KRaftVersionFeature::default()
                                .with_min_supported_version(v.kraft_version.0)
                                .with_max_supported_version(v.kraft_version.1),
                        )
                })
                .collect(),
        )
    }

    /// The set a `Voters` control record describes.
    pub fn from_record(record: &VotersRecord) -> Self {
        Self::new(record.voters.iter().map(|v| {
            Voter {
                key: ReplicaKey::from_wire(v.voter_id.0, v.voter_directory_id),
                endpoints: v
                    .endpoints
                    .iter()
                    .map(|e| Endpoint::new(e.name.as_str(), e.host.as_str(), e.port))
                    .collect(),
                kraft_version: (
                    v.k_raft_version_feature.min_supported_version,
                    v.k_raft_version_feature.max_supported_version,
                ),
            }
        }))
    }
}

/// The voter sets in effect over the log: the bootstrap set, then the set of
/// each `Voters` record by its offset (Kafka's `VoterSetHistory`).
#[derive(Debug, Clone)]
pub(crate) struct VoterHistory {
    bootstrap: VoterSet,
    entries: Vec<(i64, VoterSet)>,
}

impl VoterHistory {
    pub(crate) fn new(bootstrap: VoterSet) -> Self {
        Self {
            bootstrap,
            entries: Vec::new(),
        }
    }

    pub(crate) fn latest(&self) -> &VoterSet {
        self.entries.last().map_or(&self.bootstrap, |(_, s)| s)
    }

    /// The set before the newest `Voters` record (the bootstrap set if there
    /// is one record or none).
    pub(crate) fn previous(&self) -> &VoterSet {
        match self.entries.len() {
            0 | 1 => &self.bootstrap,
            n => &self.entries[n - 2].1,
        }
    }

    /// The set in effect at `end_offset`: that of the newest `Voters` record
    /// below it, else the bootstrap set (what a snapshot ending there holds).
    pub(crate) fn at(&self, end_offset: i64) -> &VoterSet {
        self.entries
            .iter()
            .rev()
            .find(|(o, _)| *o < end_offset)
            .map_or(&self.bootstrap, |(_, s)| s)
    }

    /// Offset of the newest `Voters` record, if the log has one.
    pub(crate) fn latest_offset(&self) -> Option<i64> {
        self.entries.last().map(|(o, _)| *o)
    }

    pub(crate) fn push(&mut self, offset: i64, set: VoterSet) {
        if self.latest_offset().is_none_or(|o| offset > o) {
            self.entries.push((offset, set));
        }
    }

    /// The set a snapshot ending at `last_contained_offset + 1` holds: it
    /// replaces every entry from `last_contained_offset` on (a snapshot
    /// installed beyond the log, or loaded on start).
    pub(crate) fn reset_at(&mut self, last_contained_offset: i64, set: VoterSet) {
        self.entries.retain(|(o, _)| *o < last_contained_offset);
        self.entries.push((last_contained_offset, set));
    }

    pub(crate) fn truncate(&mut self, offset: i64) {
        self.entries.retain(|(o, _)| *o < offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_voter_set_round_trips_through_a_voters_record() {
        let dir = Uuid::from_u128(7);
        let set = VoterSet::new([
            Voter::new(
                ReplicaKey::with_directory(1, dir),
                Some(Endpoint::new("CONTROLLER", "a", 9093)),
            ),
            Voter::new(ReplicaKey::of(2), None),
        ]);
        assert_eq!(VoterSet::from_record(&set.to_record()), set);
    }

    #[test]
    fn a_key_without_directory_matches_any_directory_of_the_same_id() {
        let with = ReplicaKey::with_directory(3, Uuid::from_u128(1));
        assert!(ReplicaKey::of(3).matches(&with));
        assert!(!ReplicaKey::with_directory(3, Uuid::from_u128(2)).matches(&with));
        assert_eq!(VoterSet::from_ids([1, 2, 3, 4]).majority(), 3);
    }
}
