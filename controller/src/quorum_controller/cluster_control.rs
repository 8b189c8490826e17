//! The active controller's broker decisions (Kafka's `ClusterControlManager`
//! and the broker half of `ReplicationControlManager`) over the speculative
//! cluster state: the committed brokers plus every broker record this
//! controller appended since it became active, committed or not (Kafka's
//! timeline snapshots give the same view).
//!
//! Each decision either refuses (Kafka's error and message; nothing
//! changes) or returns the records to append and the answer to give once
//! they commit; the records are applied to the speculative state at the
//! offsets they will take (`next_offset` onwards), so the next decision
//! sees them. Owns the checks; it must not touch the log (the caller
//! appends) and is dropped whole when leadership is lost.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest},
};

use super::heartbeat::{BrokerControlState, BrokerHeartbeatManager, HeartbeatAsk};
use crate::metadata::{
    brokers::{BrokerRegistration, apply_broker_record},
    image::MetadataImage,
    records::{
        BrokerEndpoint, BrokerEpochRecord, BrokerFeature, BrokerRegistrationChangeRecord,
        FramedRecord, METADATA_VERSION_FEATURE, RegisterBrokerRecord,
        UNREGISTER_BROKER_RECORD_API_KEY, directory_assignment_supported, fencing_change,
        register_broker_record_version,
    },
};

/// Most log directories one broker may register: Kafka sets no bound, but a
/// registration must fit one metadata batch; 10,000 is refused.
pub const MAX_LOG_DIRS: usize = 1_000;
/// Most bytes of one RegisterBrokerRecord (listeners, features, rack and log
/// dirs together); a larger registration is refused.
pub const MAX_REGISTRATION_BYTES: usize = 64 * 1024;

/// A refusal: Kafka's error and message.
pub type Refusal = (ResponseError, String);

/// What a decision appends and answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision<T> {
    /// Framed records to append in one batch (may be empty).
    pub records: Vec<Bytes>,
    /// The answer, given once the records (and all before) are committed.
    pub answer: T,
}

/// The answer to a heartbeat (BrokerHeartbeatResponse's fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    /// The broker's metadata reached its registration.
    pub is_caught_up: bool,
    /// The broker is fenced.
    pub is_fenced: bool,
    /// The broker must shut down now.
    pub should_shut_down: bool,
}

/// The speculative broker state of an active controller (see the module doc).
#[derive(Debug, Clone)]
pub struct ClusterControl {
    cluster_id: String,
    brokers: BTreeMap<i32, BrokerRegistration>,
    heartbeats: BrokerHeartbeatManager,
    /// The broker whose last registration decision found an unclean
    /// shutdown (its `previousBrokerEpoch` is not its last epoch), until
    /// [`Self::take_unclean_shutdown`].
    unclean_shutdown: Option<i32>,
}

fn refuse<T>(error: ResponseError, message: String) -> Result<T, Refusal> {
    Err((error, message))
}

/// Kafka's `DirectoryId.reserved`: the ids with all-zero high bits and low
/// bits below 100 (UNASSIGNED, LOST, MIGRATING and spares).
fn reserved_directory(id: &uuid::Uuid) -> bool {
    id.as_u128() < 100
}

/// The control state a registration is in (Kafka's `currentBrokerState`).
fn current_state(b: &BrokerRegistration) -> BrokerControlState {
    if b.fenced {
        BrokerControlState::Fenced
    } else if b.in_controlled_shutdown {
        BrokerControlState::ControlledShutdown
    } else {
        BrokerControlState::Unfenced
    }
}

impl ClusterControl {
    /// The state of a controller becoming active at `now_ms` over the
    /// committed `image` (which must hold everything committed before this
    /// epoch): its brokers, each with a fresh session (Kafka's `activate`).
    pub fn activate(
        cluster_id: &str,
        image: &MetadataImage,
        session_timeout_ms: u64,
        now_ms: u64,
    ) -> Self {
        let mut heartbeats = BrokerHeartbeatManager::new(session_timeout_ms);
        for (id, b) in image.brokers() {
            heartbeats.touch(*id, b.fenced, -1, now_ms);
        }
        Self {
            cluster_id: cluster_id.to_owned(),
            brokers: image.brokers().clone(),
            heartbeats,
            unclean_shutdown: None,
        }
    }

    /// The broker the last registration found back from an unclean shutdown
    /// (KIP-966: its replicas leave every ISR and ELR), once.
    pub fn take_unclean_shutdown(&mut self) -> Option<i32> {
        self.unclean_shutdown.take()
    }

    /// The speculative registrations by broker id.
    pub fn brokers(&self) -> &BTreeMap<i32, BrokerRegistration> {
        &self.brokers
    }

    /// The sessions.
    pub fn heartbeats(&self) -> &BrokerHeartbeatManager {
        &self.heartbeats
    }

    /// Sets the controlled shutdown offset of `id` to `offset` (the end of
    /// the batch its shutdown record went in, once the partition changes
    /// that went with it are counted).
    pub fn set_controlled_shutdown_offset(&mut self, id: i32, offset: i64) {
        self.heartbeats.set_controlled_shutdown_offset(id, offset);
    }

    /// Applies `records`, to be appended from `next_offset`, to the
    /// speculative brokers. A record that does not apply (a bug) is logged
    /// and skipped.
    fn apply(&mut self, next_offset: i64, records: &[Bytes]) {
        for (i, value) in records.iter().enumerate() {
            let offset = next_offset + i as i64;
            let applied = FramedRecord::decode(value)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    apply_broker_record(&mut self.brokers, offset, &f).map_err(|e| e.to_string())
                });
            if let Err(e) = applied {
                tracing::error!(offset, error = %e, "a broker record this controller built does not apply");
            }
        }
    }

    /// BrokerRegistration (API 62), Kafka's `registerBroker` checks in
    /// Kafka's order: INCONSISTENT_CLUSTER_ID; INVALID_REGISTRATION for a
    /// broker id that is one of `controller_ids`; DUPLICATE_BROKER_REGISTRATION
    /// for another incarnation while the registered one holds a session;
    /// BROKER_ID_NOT_REGISTERED for a ZooKeeper broker; INVALID_REGISTRATION
    /// for no, reserved, duplicate, too many or another broker's log dirs
    /// (from `metadata.version` 3.7-IV2) or a record over
    /// [`MAX_REGISTRATION_BYTES`]; UNSUPPORTED_VERSION for a finalized
    /// feature outside the broker's range; INVALID_REGISTRATION without a
    /// `metadata.version` range. The same incarnation amends its
    /// registration and keeps its epoch, fencing and controlled shutdown;
    /// another gets epoch `next_offset` (the record's offset) and starts
    /// fenced. Answers the broker epoch.
    pub fn register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        controller_ids: &BTreeSet<i32>,
        finalized: &BTreeMap<String, i16>,
        next_offset: i64,
        now_ms: u64,
    ) -> Result<Decision<i64>, Refusal> {
        use ResponseError::*;
        let id = request.broker_id.0;
        if request.cluster_id.as_str() != self.cluster_id {
            return refuse(
                InconsistentClusterId,
                format!(
                    "Expected cluster ID {}, but got cluster ID {}",
                    self.cluster_id,
                    request.cluster_id.as_str()
                ),
            );
        }
        if controller_ids.contains(&id) {
            return refuse(
                InvalidRegistration,
                format!("Broker id {id} is the node id of a controller of this quorum"),
            );
        }
        let existing = self.brokers.get(&id);
        let same_incarnation = existing.is_some_and(|b| b.incarnation_id == request.incarnation_id);
        if existing.is_some() && !same_incarnation && self.heartbeats.has_valid_session(id, now_ms)
        {
            return refuse(
                DuplicateBrokerRegistration,
                "Another broker is registered with that broker id. If the broker was recently \
                 restarted this should self-resolve once the heartbeat manager expires the \
                 broker's session."
                    .into(),
            );
        }
        if request.is_migrating_zk_broker {
            return refuse(
                BrokerIdNotRegistered,
                "Controller does not support registering ZK brokers.".into(),
            );
        }
        let level = finalized
            .get(METADATA_VERSION_FEATURE)
            .copied()
            .unwrap_or(0);
        if directory_assignment_supported(level) {
            self.check_log_dirs(id, &request.log_dirs)?;
        }
        let mut features = Vec::new();
        for f in &request.features {
            check_feature(
                finalized,
                f.name.as_str(),
                f.min_supported_version,
                f.max_supported_version,
            )?;
            features.push(BrokerFeature {
                name: f.name.to_string(),
                min_supported_version: f.min_supported_version,
                max_supported_version: f.max_supported_version,
            });
        }
        if !request
            .features
            .iter()
            .any(|f| f.name.as_str() == METADATA_VERSION_FEATURE)
        {
            return refuse(
                InvalidRegistration,
                "Request features do not contain 'metadata.version'".into(),
            );
        }
        for name in finalized.keys() {
            if !request.features.iter().any(|f| f.name.as_str() == name) {
                check_feature(finalized, name, 0, 0)?;
            }
        }
        let mut record = RegisterBrokerRecord {
            broker_id: id,
            is_migrating_zk_broker: false,
            incarnation_id: request.incarnation_id,
            broker_epoch: next_offset,
            endpoints: request
                .listeners
                .iter()
                .map(|l| BrokerEndpoint {
                    name: l.name.to_string(),
                    host: l.host.to_string(),
                    port: l.port,
                    security_protocol: l.security_protocol,
                })
                .collect(),
            features,
            rack: request.rack.as_ref().map(|r| r.to_string()),
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: if directory_assignment_supported(level) {
                request.log_dirs.clone()
            } else {
                Vec::new()
            },
            cordoned_log_dirs: None,
        };
        let previous = existing.map(|b| b.epoch);
        if let Some(b) = existing.filter(|_| same_incarnation) {
            record.fenced = b.fenced;
            record.in_controlled_shutdown = b.in_controlled_shutdown;
            record.broker_epoch = b.epoch;
            record.cordoned_log_dirs = b.cordoned_log_dirs.clone();
        }
        let bytes = record.encode_framed(register_broker_record_version(level));
        if bytes.len() > MAX_REGISTRATION_BYTES {
            return refuse(
                InvalidRegistration,
                format!(
                    "The registration of broker {id} takes {} bytes, more than the {MAX_REGISTRATION_BYTES} allowed",
                    bytes.len()
                ),
            );
        }
        match previous {
            Some(epoch) if same_incarnation => {
                tracing::info!(
                    broker = id,
                    epoch,
                    "amending registration of broker; its epoch remains"
                );
            }
            Some(epoch) => {
                let clean = epoch == request.previous_broker_epoch;
                tracing::info!(
                    broker = id,
                    previous_epoch = epoch,
                    new_epoch = next_offset,
                    clean_shutdown = clean,
                    "registering a new incarnation of broker"
                );
                if !clean {
                    self.unclean_shutdown = Some(id);
                }
                self.heartbeats.remove(id);
            }
            None => {
                tracing::info!(
                    broker = id,
                    new_epoch = next_offset,
                    "no previous registration found for broker"
                );
            }
        }
        self.heartbeats.register(id, record.fenced, now_ms);
        let records = vec![bytes];
        self.apply(next_offset, &records);
        Ok(Decision {
            records,
            answer: record.broker_epoch,
        })
    }

    fn check_log_dirs(&self, id: i32, dirs: &[uuid::Uuid]) -> Result<(), Refusal> {
        use ResponseError::InvalidRegistration;
        if dirs.is_empty() {
            return refuse(
                InvalidRegistration,
                "No directories specified in request".into(),
            );
        }
        if dirs.len() > MAX_LOG_DIRS {
            return refuse(
                InvalidRegistration,
                format!(
                    "{} directories in request, more than the {MAX_LOG_DIRS} allowed",
                    dirs.len()
                ),
            );
        }
        if dirs.iter().any(reserved_directory) {
            return refuse(
                InvalidRegistration,
                "Reserved directory ID in request".into(),
            );
        }
        if dirs.iter().collect::<HashSet<_>>().len() != dirs.len() {
            return refuse(
                InvalidRegistration,
                "Duplicate directory ID in request".into(),
            );
        }
        for dir in dirs {
            if let Some((other, _)) = self
                .brokers
                .iter()
                .find(|(other, b)| **other != id && b.log_dirs.contains(dir))
            {
                return refuse(
                    InvalidRegistration,
                    format!(
                        "Broker {other} is already registered with directory {}",
                        crate::log::meta_properties::uuid_to_kafka_string(*dir)
                    ),
                );
            }
        }
        Ok(())
    }

    /// Kafka's `ClusterControlManager.checkBrokerEpoch`: the registration of
    /// broker `id` when `epoch` is its current epoch; otherwise
    /// STALE_BROKER_EPOCH with Kafka's message.
    pub fn check_broker_epoch(&self, id: i32, epoch: i64) -> Result<&BrokerRegistration, Refusal> {
        let Some(b) = self.brokers.get(&id) else {
            return refuse(
                ResponseError::StaleBrokerEpoch,
                format!("No broker registration found for broker id {id}"),
            );
        };
        if b.epoch != epoch {
            return refuse(
                ResponseError::StaleBrokerEpoch,
                format!(
                    "Expected broker epoch {}, but got broker epoch {epoch}",
                    b.epoch
                ),
            );
        }
        Ok(b)
    }

    /// BrokerHeartbeat (API 63), Kafka's `processBrokerHeartbeat`:
    /// STALE_BROKER_EPOCH for an unknown broker or another epoch; otherwise
    /// the next control state ([`BrokerHeartbeatManager::next_state`];
    /// `has_leaderships` keeps a broker in controlled shutdown while it
    /// still leads partitions), the record that moves the
    /// broker there (BrokerRegistrationChangeRecord v0 to fence or unfence,
    /// v1 for controlled shutdown, as Kafka 4.4 writes them), a renewed
    /// session, and `isCaughtUp` = its metadata offset reached its
    /// registration.
    pub fn heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        next_offset: i64,
        now_ms: u64,
        has_leaderships: bool,
    ) -> Result<Decision<HeartbeatAnswer>, Refusal> {
        let id = request.broker_id.0;
        let b = self.check_broker_epoch(id, request.broker_epoch)?;
        let (epoch, register_offset, current) = (b.epoch, b.record_offset, current_state(b));
        let ask = HeartbeatAsk {
            want_fence: request.want_fence,
            want_shut_down: request.want_shut_down,
            current_metadata_offset: request.current_metadata_offset,
        };
        if current == BrokerControlState::ControlledShutdown {
            // After a failover the session has no shutdown offset yet.
            self.heartbeats
                .maybe_update_controlled_shutdown_offset(id, next_offset - 1);
        }
        let next = self
            .heartbeats
            .next_state(id, current, ask, register_offset, has_leaderships);
        let change = |fenced: i8, in_controlled_shutdown: i8| BrokerRegistrationChangeRecord {
            broker_id: id,
            broker_epoch: epoch,
            fenced,
            in_controlled_shutdown,
            ..Default::default()
        };
        let mut records = Vec::new();
        if next != current {
            match next {
                BrokerControlState::Fenced | BrokerControlState::ShutdownNow
                    if !current.fenced() =>
                {
                    records.push(change(fencing_change::FENCE, 0).encode_framed(0));
                }
                BrokerControlState::Unfenced => {
                    records.push(change(fencing_change::UNFENCE, 0).encode_framed(0));
                }
                BrokerControlState::ControlledShutdown => {
                    records.push(change(fencing_change::NONE, 1).encode_framed(1));
                }
                _ => {}
            }
        }
        self.heartbeats
            .touch(id, next.fenced(), request.current_metadata_offset, now_ms);
        self.apply(next_offset, &records);
        if next == BrokerControlState::ControlledShutdown {
            let end = next_offset + records.len() as i64 - 1;
            self.heartbeats
                .maybe_update_controlled_shutdown_offset(id, end);
        }
        Ok(Decision {
            records,
            answer: HeartbeatAnswer {
                is_caught_up: request.current_metadata_offset >= register_offset,
                is_fenced: next.fenced(),
                should_shut_down: next.should_shut_down(),
            },
        })
    }

    /// UnregisterBroker (API 64): BROKER_ID_NOT_REGISTERED for an unknown
    /// broker; otherwise an UnregisterBrokerRecord and the session dropped.
    pub fn unregister_broker(
        &mut self,
        id: i32,
        next_offset: i64,
    ) -> Result<Decision<()>, Refusal> {
        let Some(b) = self.brokers.get(&id) else {
            return refuse(
                ResponseError::BrokerIdNotRegistered,
                format!("Broker ID {id} is not currently registered"),
            );
        };
        let records = vec![
            BrokerEpochRecord {
                broker_id: id,
                broker_epoch: b.epoch,
            }
            .encode_framed(UNREGISTER_BROKER_RECORD_API_KEY),
        ];
        self.heartbeats.remove(id);
        self.apply(next_offset, &records);
        Ok(Decision {
            records,
            answer: (),
        })
    }

    /// Fences the first unfenced broker whose session expired at `now_ms`
    /// (Kafka's `maybeFenceOneStaleBroker`): its BrokerRegistrationChangeRecord
    /// v0, applied; `None` when none expired. One at a time, so that the
    /// leaderships the fenced broker loses are decided with the brokers not
    /// fenced yet still counted (brokers whose sessions expire together
    /// hand leadership down the line, and the last one is the partition's
    /// last known leader, KIP-966), as Kafka fences one per event.
    pub fn fence_one_stale_broker(&mut self, now_ms: u64, next_offset: i64) -> Option<Bytes> {
        for id in self.heartbeats.stale_brokers(now_ms) {
            self.heartbeats.fence(id);
            let Some(b) = self.brokers.get(&id).filter(|b| !b.fenced) else {
                continue;
            };
            tracing::info!(
                broker = id,
                epoch = b.epoch,
                "fencing broker because its session has timed out"
            );
            let record = BrokerRegistrationChangeRecord {
                broker_id: id,
                broker_epoch: b.epoch,
                fenced: fencing_change::FENCE,
                ..Default::default()
            }
            .encode_framed(0);
            self.apply(next_offset, std::slice::from_ref(&record));
            return Some(record);
        }
        None
    }
}

/// Kafka's `processRegistrationFeature`: UNSUPPORTED_VERSION when `name` is
/// finalized at a level other than 0 that `min..=max` does not hold.
fn check_feature(
    finalized: &BTreeMap<String, i16>,
    name: &str,
    min: i16,
    max: i16,
) -> Result<(), Refusal> {
    match finalized.get(name) {
        Some(&level) if level != 0 && !(min..=max).contains(&level) => refuse(
            ResponseError::UnsupportedVersion,
            format!(
                "Unable to register because the broker does not support finalized version {level} \
                 of {name}. The broker wants a version between {min} and {max}, inclusive."
            ),
        ),
        Some(_) => Ok(()),
        None => {
            tracing::debug!(
                feature = name,
                "broker registered with a feature this controller does not know"
            );
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "cluster_control_tests.rs"]
mod tests;
