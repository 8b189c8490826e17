//! The broker half of the metadata image: registrations as the committed
//! broker records say (Kafka's `ClusterControlManager.replay` and
//! `BrokerRegistration`).
//!
//! | record | effect |
//! |---|---|
//! | RegisterBrokerRecord (0, v0-4) | replaces the registration of its broker id |
//! | UnregisterBrokerRecord (1) | removes it (the epoch must match) |
//! | FenceBrokerRecord (7) / UnfenceBrokerRecord (8) | fences / unfences (the epoch must match) |
//! | BrokerRegistrationChangeRecord (17, v0-3) | fencing, controlled shutdown, log dirs (the epoch must match) |
//!
//! A change naming a broker that is not registered, or another epoch, is an
//! error, as Kafka's replay throws: the log is not one a controller wrote.
//! Owns these rules; it must not decide what is committed nor write records.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::records::{
    BROKER_REGISTRATION_CHANGE_RECORD_API_KEY, BROKER_REGISTRATION_CHANGE_RECORD_MAX_VERSION,
    BrokerEndpoint, BrokerEpochRecord, BrokerFeature, BrokerRegistrationChangeRecord,
    FENCE_BROKER_RECORD_API_KEY, FramedRecord, REGISTER_BROKER_RECORD_API_KEY,
    REGISTER_BROKER_RECORD_MAX_VERSION, RecordsError, RegisterBrokerRecord,
    UNFENCE_BROKER_RECORD_API_KEY, UNREGISTER_BROKER_RECORD_API_KEY, fencing_change,
};

/// A registered broker, as its latest records say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistration {
    /// Random id of the registering process run.
    pub incarnation_id: Uuid,
    /// The broker epoch (the offset of the RegisterBrokerRecord that
    /// established this incarnation).
    pub epoch: i64,
    /// Listeners.
    pub endpoints: Vec<BrokerEndpoint>,
    /// Supported feature ranges.
    pub supported_features: Vec<BrokerFeature>,
    /// Rack, if any.
    pub rack: Option<String>,
    /// Fenced: not allowed to lead or be in an ISR.
    pub fenced: bool,
    /// In controlled shutdown.
    pub in_controlled_shutdown: bool,
    /// Always false here.
    pub is_migrating_zk_broker: bool,
    /// Online log directories.
    pub log_dirs: Vec<Uuid>,
    /// Cordoned log directories, if the broker sent them.
    pub cordoned_log_dirs: Option<Vec<Uuid>>,
    /// Offset of the RegisterBrokerRecord applied (for a snapshot, the
    /// snapshot's last contained offset): a broker is unfenced only once
    /// its metadata reached it (Kafka's `registerBrokerRecordOffsets`).
    pub record_offset: i64,
}

impl BrokerRegistration {
    /// Not fenced and not in controlled shutdown (Kafka's `isActive`).
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }

    /// The RegisterBrokerRecord that re-creates this registration of
    /// `broker_id` (what a snapshot holds; Kafka's `BrokerRegistration.toRecord`).
    pub fn to_record(&self, broker_id: i32) -> RegisterBrokerRecord {
        RegisterBrokerRecord {
            broker_id,
            is_migrating_zk_broker: self.is_migrating_zk_broker,
            incarnation_id: self.incarnation_id,
            broker_epoch: self.epoch,
            endpoints: self.endpoints.clone(),
            features: self.supported_features.clone(),
            rack: self.rack.clone(),
            fenced: self.fenced,
            in_controlled_shutdown: self.in_controlled_shutdown,
            log_dirs: self.log_dirs.clone(),
            cordoned_log_dirs: self.cordoned_log_dirs.clone(),
        }
    }
}

/// Why a broker record could not be applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BrokerRecordError {
    /// The record does not decode.
    #[error("{0}")]
    Decode(#[from] RecordsError),
    /// It names a broker that is not registered.
    #[error("no broker registration found for broker {0}")]
    NotRegistered(i32),
    /// It names another epoch than the registration's.
    #[error(
        "broker {broker_id} is registered with epoch {registered}, the record names epoch {named}"
    )]
    WrongEpoch {
        /// The broker.
        broker_id: i32,
        /// Its registered epoch.
        registered: i64,
        /// The epoch in the record.
        named: i64,
    },
    /// A `Fenced` or `InControlledShutdown` value Kafka does not define.
    #[error("broker {broker_id}: unknown value {value} for field {field}")]
    BadValue {
        /// The broker.
        broker_id: i32,
        /// The field.
        field: &'static str,
        /// The value.
        value: i8,
    },
}

/// Whether this module interprets records of `api_key` at `version`.
pub fn is_broker_record(api_key: u32, version: u32) -> bool {
    match api_key {
        REGISTER_BROKER_RECORD_API_KEY => version <= REGISTER_BROKER_RECORD_MAX_VERSION,
        UNREGISTER_BROKER_RECORD_API_KEY
        | FENCE_BROKER_RECORD_API_KEY
        | UNFENCE_BROKER_RECORD_API_KEY => version == 0,
        BROKER_REGISTRATION_CHANGE_RECORD_API_KEY => {
            version <= BROKER_REGISTRATION_CHANGE_RECORD_MAX_VERSION
        }
        _ => false,
    }
}

fn registered(
    brokers: &mut BTreeMap<i32, BrokerRegistration>,
    broker_id: i32,
    epoch: i64,
) -> Result<&mut BrokerRegistration, BrokerRecordError> {
    let b = brokers
        .get_mut(&broker_id)
        .ok_or(BrokerRecordError::NotRegistered(broker_id))?;
    if b.epoch != epoch {
        return Err(BrokerRecordError::WrongEpoch {
            broker_id,
            registered: b.epoch,
            named: epoch,
        });
    }
    Ok(b)
}

/// Applies one broker record (for which [`is_broker_record`] holds),
/// committed at `offset`, to `brokers`. On error `brokers` is unchanged.
///
/// Errors: [`BrokerRecordError`].
pub fn apply_broker_record(
    brokers: &mut BTreeMap<i32, BrokerRegistration>,
    offset: i64,
    framed: &FramedRecord,
) -> Result<(), BrokerRecordError> {
    match framed.api_key {
        REGISTER_BROKER_RECORD_API_KEY => {
            let r = RegisterBrokerRecord::decode_message(&framed.message, framed.version)?;
            brokers.insert(
                r.broker_id,
                BrokerRegistration {
                    incarnation_id: r.incarnation_id,
                    epoch: r.broker_epoch,
                    endpoints: r.endpoints,
                    supported_features: r.features,
                    rack: r.rack,
                    fenced: r.fenced,
                    in_controlled_shutdown: r.in_controlled_shutdown,
                    is_migrating_zk_broker: r.is_migrating_zk_broker,
                    log_dirs: r.log_dirs,
                    cordoned_log_dirs: r.cordoned_log_dirs,
                    record_offset: offset,
                },
            );
        }
        UNREGISTER_BROKER_RECORD_API_KEY => {
            let r = BrokerEpochRecord::decode_message(&framed.message)?;
            registered(brokers, r.broker_id, r.broker_epoch)?;
            brokers.remove(&r.broker_id);
        }
        FENCE_BROKER_RECORD_API_KEY | UNFENCE_BROKER_RECORD_API_KEY => {
            let r = BrokerEpochRecord::decode_message(&framed.message)?;
            registered(brokers, r.broker_id, r.broker_epoch)?.fenced =
                framed.api_key == FENCE_BROKER_RECORD_API_KEY;
        }
        BROKER_REGISTRATION_CHANGE_RECORD_API_KEY => {
            let r =
                BrokerRegistrationChangeRecord::decode_message(&framed.message, framed.version)?;
            let bad = |field, value| BrokerRecordError::BadValue {
                broker_id: r.broker_id,
                field,
                value,
            };
            let fenced = match r.fenced {
                fencing_change::UNFENCE => Some(false),
                fencing_change::NONE => None,
                fencing_change::FENCE => Some(true),
                v => return Err(bad("fenced", v)),
            };
            let in_controlled_shutdown = match r.in_controlled_shutdown {
                0 => None,
                1 => Some(true),
                v => return Err(bad("inControlledShutdown", v)),
            };
            let b = registered(brokers, r.broker_id, r.broker_epoch)?;
            if let Some(f) = fenced {
                b.fenced = f;
            }
            if let Some(s) = in_controlled_shutdown {
                b.in_controlled_shutdown = s;
            }
            if !r.log_dirs.is_empty() {
                b.log_dirs = r.log_dirs;
            }
            if r.cordoned_log_dirs.is_some() {
                b.cordoned_log_dirs = r.cordoned_log_dirs;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn register(id: i32, epoch: i64, fenced: bool) -> FramedRecord {
        let bytes = RegisterBrokerRecord {
            broker_id: id,
            is_migrating_zk_broker: false,
            incarnation_id: Uuid::from_u128(id as u128),
            broker_epoch: epoch,
            endpoints: vec![],
            features: vec![],
            rack: None,
            fenced,
            in_controlled_shutdown: false,
            log_dirs: vec![Uuid::from_u128(99)],
            cordoned_log_dirs: None,
        }
        .encode_framed(3);
        FramedRecord::decode(&bytes).expect("frame")
    }

    fn change(id: i32, epoch: i64, fenced: i8, ics: i8) -> FramedRecord {
        let bytes = BrokerRegistrationChangeRecord {
            broker_id: id,
            broker_epoch: epoch,
            fenced,
            in_controlled_shutdown: ics,
            ..Default::default()
        }
        .encode_framed(1);
        FramedRecord::decode(&bytes).expect("frame")
    }

    fn epoch_record(key: u32, id: i32, epoch: i64) -> FramedRecord {
        let bytes = BrokerEpochRecord {
            broker_id: id,
            broker_epoch: epoch,
        }
        .encode_framed(key);
        FramedRecord::decode(&bytes).expect("frame")
    }

    #[test]
    fn register_fence_unfence_shut_down_and_unregister() {
        let mut brokers = BTreeMap::new();
        apply_broker_record(&mut brokers, 10, &register(1, 10, true)).expect("register");
        assert!(brokers[&1].fenced);
        assert_eq!(brokers[&1].record_offset, 10);
        apply_broker_record(&mut brokers, 11, &change(1, 10, -1, 0)).expect("unfence");
        assert!(brokers[&1].is_active());
        apply_broker_record(&mut brokers, 12, &change(1, 10, 0, 1)).expect("ics");
        assert!(brokers[&1].in_controlled_shutdown && !brokers[&1].fenced);
        apply_broker_record(&mut brokers, 13, &epoch_record(7, 1, 10)).expect("fence");
        assert!(brokers[&1].fenced);
        apply_broker_record(&mut brokers, 14, &epoch_record(8, 1, 10)).expect("unfence");
        assert!(!brokers[&1].fenced);
        apply_broker_record(&mut brokers, 15, &epoch_record(1, 1, 10)).expect("unregister");
        assert!(brokers.is_empty());
    }

    #[test]
    fn changes_to_an_unknown_broker_or_epoch_or_with_bad_values_are_errors_and_change_nothing() {
        let mut brokers = BTreeMap::new();
        apply_broker_record(&mut brokers, 10, &register(1, 10, true)).expect("register");
        let before = brokers.clone();
        assert_eq!(
            apply_broker_record(&mut brokers, 11, &change(2, 10, 1, 0)),
            Err(BrokerRecordError::NotRegistered(2))
        );
        assert!(matches!(
            apply_broker_record(&mut brokers, 11, &epoch_record(1, 1, 9)),
            Err(BrokerRecordError::WrongEpoch { .. })
        ));
        assert!(matches!(
            apply_broker_record(&mut brokers, 11, &change(1, 10, 5, 0)),
            Err(BrokerRecordError::BadValue { .. })
        ));
        assert!(matches!(
            apply_broker_record(&mut brokers, 11, &change(1, 10, 0, 2)),
            Err(BrokerRecordError::BadValue { .. })
        ));
        assert_eq!(brokers, before);
    }

    #[test]
    fn only_kafka_4_4s_versions_are_interpreted() {
        assert!(is_broker_record(0, 4) && !is_broker_record(0, 5));
        assert!(is_broker_record(17, 3) && !is_broker_record(17, 4));
        assert!(is_broker_record(1, 0) && !is_broker_record(7, 1));
        assert!(!is_broker_record(27, 0));
    }
}
