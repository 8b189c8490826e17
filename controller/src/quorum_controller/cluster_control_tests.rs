//! Unit tests of the broker decisions: every check and error of
//! BrokerRegistration, BrokerHeartbeat, UnregisterBroker and session expiry,
//! and that a refused request changes nothing.

use kafka_protocol::{
    messages::{
        BrokerHeartbeatRequest, BrokerRegistrationRequest,
        broker_registration_request::{Feature, Listener},
    },
    protocol::StrBytes,
};

use super::*;
use crate::metadata::records::{FeatureLevelRecord, RecordsError};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn image(level: i16) -> MetadataImage {
    let mut image = MetadataImage::default();
    for (offset, (name, l)) in [(METADATA_VERSION_FEATURE, level), ("group.version", 1)]
        .into_iter()
        .enumerate()
    {
        let r = FeatureLevelRecord {
            name: name.into(),
            feature_level: l,
        };
        image
            .apply_record(offset as i64, &r.encode_framed())
            .expect("applies");
    }
    image
}

fn dir(n: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(0x1000 + n)
}

fn request(id: i32, incarnation: u128) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest::default()
        .with_broker_id(id.into())
        .with_cluster_id(StrBytes::from_static_str(CLUSTER))
        .with_incarnation_id(uuid::Uuid::from_u128(incarnation))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("b-1"))
                .with_port(9092),
        ])
        .with_features(vec![
            Feature::default()
                .with_name(StrBytes::from_static_str(METADATA_VERSION_FEATURE))
                .with_min_supported_version(7)
                .with_max_supported_version(33),
            Feature::default()
                .with_name(StrBytes::from_static_str("group.version"))
                .with_min_supported_version(0)
                .with_max_supported_version(1),
        ])
        .with_log_dirs(vec![dir(id as u128)])
        .with_previous_broker_epoch(-1)
}

fn heartbeat(id: i32, epoch: i64, offset: i64) -> BrokerHeartbeatRequest {
    BrokerHeartbeatRequest::default()
        .with_broker_id(id.into())
        .with_broker_epoch(epoch)
        .with_current_metadata_offset(offset)
        .with_want_fence(false)
}

struct Fixture {
    cluster: ClusterControl,
    finalized: BTreeMap<String, i16>,
    controllers: BTreeSet<i32>,
    next_offset: i64,
}

impl Fixture {
    fn new(level: i16) -> Self {
        let image = image(level);
        Self {
            cluster: ClusterControl::activate(CLUSTER, &image, 9_000, 0),
            finalized: image.features().clone(),
            controllers: [3000, 3001, 3002].into_iter().collect(),
            next_offset: 10,
        }
    }

    fn register(&mut self, r: &BrokerRegistrationRequest, now: u64) -> Result<i64, Refusal> {
        let d = self.cluster.register_broker(
            r,
            &self.controllers,
            &self.finalized,
            self.next_offset,
            now,
        )?;
        self.next_offset += d.records.len() as i64;
        Ok(d.answer)
    }

    fn beat(
        &mut self,
        r: &BrokerHeartbeatRequest,
        now: u64,
    ) -> Result<(HeartbeatAnswer, Vec<Bytes>), Refusal> {
        let d = self.cluster.heartbeat(r, self.next_offset, now, false)?;
        self.next_offset += d.records.len() as i64;
        Ok((d.answer, d.records))
    }

    /// Registers broker `id` and heartbeats it unfenced at `now`.
    fn running(&mut self, id: i32, now: u64) -> i64 {
        let epoch = self
            .register(&request(id, id as u128), now)
            .expect("registers");
        let (answer, _) = self.beat(&heartbeat(id, epoch, epoch), now).expect("beats");
        assert!(!answer.is_fenced);
        epoch
    }

    /// Asserts `r` is refused with `error` and changes nothing.
    fn refused(&mut self, r: &BrokerRegistrationRequest, now: u64, error: ResponseError) -> String {
        let before = self.cluster.brokers().clone();
        let sessions = format!("{:?}", self.cluster.heartbeats());
        let (e, message) = self.register(r, now).expect_err("refused");
        assert_eq!(e, error, "{message}");
        assert_eq!(self.cluster.brokers(), &before);
        assert_eq!(format!("{:?}", self.cluster.heartbeats()), sessions);
        message
    }
}

fn decode(record: &Bytes) -> FramedRecord {
    FramedRecord::decode(record).expect("frame")
}

#[test]
fn a_new_broker_gets_the_offset_of_its_record_as_epoch_and_starts_fenced() {
    let mut f = Fixture::new(27);
    let d = f
        .cluster
        .register_broker(&request(1, 1), &f.controllers, &f.finalized, 10, 0)
        .expect("registers");
    assert_eq!(d.answer, 10);
    let framed = decode(&d.records[0]);
    assert_eq!((framed.api_key, framed.version), (0, 3), "v3 at 4.1-IV1");
    let r = RegisterBrokerRecord::decode_message(&framed.message, 3).expect("decodes");
    assert_eq!((r.broker_id, r.broker_epoch, r.fenced), (1, 10, true));
    assert_eq!(r.log_dirs, vec![dir(1)]);
    let b = &f.cluster.brokers()[&1];
    assert_eq!((b.epoch, b.record_offset, b.fenced), (10, 10, true));
}

#[test]
fn a_registration_naming_another_cluster_is_inconsistent_cluster_id() {
    let mut f = Fixture::new(27);
    let r = request(1, 1).with_cluster_id(StrBytes::from_static_str("other"));
    let m = f.refused(&r, 0, ResponseError::InconsistentClusterId);
    assert_eq!(
        m,
        format!("Expected cluster ID {CLUSTER}, but got cluster ID other")
    );
}

#[test]
fn a_broker_id_that_is_a_controller_id_is_refused() {
    let mut f = Fixture::new(27);
    f.refused(&request(3001, 1), 0, ResponseError::InvalidRegistration);
}

#[test]
fn another_incarnation_is_refused_while_the_session_lives_and_accepted_after() {
    let mut f = Fixture::new(27);
    let epoch = f.running(1, 0);
    f.refused(
        &request(1, 99),
        9_000,
        ResponseError::DuplicateBrokerRegistration,
    );
    let new_epoch = f.register(&request(1, 99), 9_001).expect("session expired");
    assert!(new_epoch > epoch);
    let b = &f.cluster.brokers()[&1];
    assert!(b.fenced);
    assert_eq!(b.incarnation_id, uuid::Uuid::from_u128(99));
}

#[test]
fn another_incarnation_of_a_fenced_broker_registers_at_once_clean_or_not() {
    let mut f = Fixture::new(27);
    let epoch = f.register(&request(1, 1), 0).expect("registers");
    // Clean shutdown: the new incarnation names the old epoch.
    let clean = request(1, 2).with_previous_broker_epoch(epoch);
    let second = f.register(&clean, 1).expect("registers");
    assert_ne!(second, epoch);
    // Unclean: it names none.
    let third = f.register(&request(1, 3), 2).expect("registers");
    assert_ne!(third, second);
}

#[test]
fn the_same_incarnation_amends_its_registration_and_keeps_its_epoch_and_state() {
    let mut f = Fixture::new(27);
    let epoch = f.running(1, 0);
    let amended = request(1, 1).with_rack(Some(StrBytes::from_static_str("r2")));
    assert_eq!(f.register(&amended, 1), Ok(epoch));
    let b = &f.cluster.brokers()[&1];
    assert_eq!(
        (b.epoch, b.fenced, b.rack.as_deref()),
        (epoch, false, Some("r2"))
    );
}

#[test]
fn bad_log_dirs_are_invalid_registration() {
    let mut f = Fixture::new(27);
    f.running(1, 0);
    let cases: Vec<(Vec<uuid::Uuid>, &str)> = vec![
        (vec![], "No directories specified in request"),
        (
            vec![uuid::Uuid::from_u128(1)],
            "Reserved directory ID in request",
        ),
        (vec![dir(7), dir(7)], "Duplicate directory ID in request"),
        (
            (0..10_000).map(dir).collect(),
            "10000 directories in request",
        ),
        (
            vec![dir(1)],
            "Broker 1 is already registered with directory",
        ),
    ];
    for (dirs, message) in cases {
        let m = f.refused(
            &request(2, 2).with_log_dirs(dirs),
            1,
            ResponseError::InvalidRegistration,
        );
        assert!(m.starts_with(message), "{m}");
    }
    // Before 3.7-IV2 brokers send no log dirs and none are checked.
    let mut old = Fixture::new(16);
    let epoch = old
        .register(&request(2, 2).with_log_dirs(vec![]), 0)
        .expect("registers");
    assert_eq!(epoch, 10);
}

#[test]
fn a_registration_too_large_for_one_record_is_refused() {
    let mut f = Fixture::new(27);
    let host = "h".repeat(MAX_REGISTRATION_BYTES);
    let r = request(1, 1).with_listeners(vec![
        Listener::default()
            .with_name(StrBytes::from_static_str("PLAINTEXT"))
            .with_host(StrBytes::from_string(host)),
    ]);
    f.refused(&r, 0, ResponseError::InvalidRegistration);
}

#[test]
fn finalized_features_outside_the_brokers_range_are_unsupported_version() {
    let mut f = Fixture::new(27);
    let narrow = request(1, 1).with_features(vec![
        Feature::default()
            .with_name(StrBytes::from_static_str(METADATA_VERSION_FEATURE))
            .with_min_supported_version(7)
            .with_max_supported_version(20),
        Feature::default()
            .with_name(StrBytes::from_static_str("group.version"))
            .with_max_supported_version(1),
    ]);
    let m = f.refused(&narrow, 0, ResponseError::UnsupportedVersion);
    assert!(
        m.contains("finalized version 27 of metadata.version"),
        "{m}"
    );
    // A finalized feature the broker does not name: it supports 0 only.
    let mut without_group = request(1, 1);
    without_group.features.truncate(1);
    let m = f.refused(&without_group, 0, ResponseError::UnsupportedVersion);
    assert!(m.contains("between 0 and 0"), "{m}");
    // No metadata.version range at all.
    let mut without_mv = request(1, 1);
    without_mv.features.remove(0);
    let m = f.refused(&without_mv, 0, ResponseError::InvalidRegistration);
    assert_eq!(m, "Request features do not contain 'metadata.version'");
    // ZooKeeper brokers.
    let zk = request(1, 1).with_is_migrating_zk_broker(true);
    f.refused(&zk, 0, ResponseError::BrokerIdNotRegistered);
}

#[test]
fn a_heartbeat_with_an_unknown_broker_or_a_wrong_epoch_is_stale_broker_epoch() {
    let mut f = Fixture::new(27);
    let epoch = f.register(&request(1, 1), 0).expect("registers");
    let before = f.cluster.brokers().clone();
    for hb in [heartbeat(2, epoch, 0), heartbeat(1, epoch + 1, 100)] {
        let (e, _) = f.beat(&hb, 1).expect_err("stale");
        assert_eq!(e, ResponseError::StaleBrokerEpoch);
    }
    assert_eq!(f.cluster.brokers(), &before);
    assert!(!f.cluster.heartbeats().has_valid_session(1, 1));
}

#[test]
fn a_broker_is_unfenced_once_caught_up_with_its_registration_even_before_it_commits() {
    let mut f = Fixture::new(27);
    let epoch = f.register(&request(1, 1), 0).expect("registers");
    // The registration is not committed; the speculative state knows it.
    let (answer, records) = f.beat(&heartbeat(1, epoch, epoch - 1), 1).expect("beats");
    assert_eq!(
        answer,
        HeartbeatAnswer {
            is_caught_up: false,
            is_fenced: true,
            should_shut_down: false
        }
    );
    assert!(records.is_empty());
    let (answer, records) = f.beat(&heartbeat(1, epoch, epoch), 2).expect("beats");
    assert!(answer.is_caught_up && !answer.is_fenced);
    let framed = decode(&records[0]);
    assert_eq!((framed.api_key, framed.version), (17, 0));
    let change =
        BrokerRegistrationChangeRecord::decode_message(&framed.message, 0).expect("decodes");
    assert_eq!(change.fenced, fencing_change::UNFENCE);
    assert!(!f.cluster.brokers()[&1].fenced);
    // A broker asking to stay fenced stays fenced.
    let epoch2 = f.register(&request(2, 2), 3).expect("registers");
    let (answer, _) = f
        .beat(&heartbeat(2, epoch2, epoch2).with_want_fence(true), 4)
        .expect("beats");
    assert!(answer.is_fenced);
}

#[test]
fn want_shut_down_without_leaderships_fences_and_answers_should_shut_down() {
    let mut f = Fixture::new(27);
    let epoch = f.running(1, 0);
    let (answer, records) = f
        .beat(&heartbeat(1, epoch, epoch).with_want_shut_down(true), 1)
        .expect("beats");
    assert!(answer.should_shut_down && answer.is_fenced);
    let change = BrokerRegistrationChangeRecord::decode_message(&decode(&records[0]).message, 0)
        .expect("decodes");
    assert_eq!(change.fenced, fencing_change::FENCE);
    assert!(f.cluster.brokers()[&1].fenced);
}

#[test]
fn a_broker_in_controlled_shutdown_is_told_to_shut_down_once_others_passed_its_offset() {
    // Without partitions a broker never enters controlled shutdown through a
    // heartbeat; one already in it (a record of another controller) leaves
    // it once the lowest active offset passes its shutdown offset.
    let mut f = Fixture::new(27);
    let epoch = f.running(1, 0);
    let ics = BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: epoch,
        in_controlled_shutdown: 1,
        ..Default::default()
    }
    .encode_framed(1);
    f.cluster.apply(f.next_offset, &[ics]);
    f.next_offset += 1;
    let (answer, records) = f
        .beat(&heartbeat(1, epoch, 100).with_want_shut_down(true), 1)
        .expect("beats");
    assert!(answer.should_shut_down, "no other active broker lags");
    assert_eq!(records.len(), 1, "fenced on the way out");
}

#[test]
fn an_expired_session_fences_the_broker_once() {
    let mut f = Fixture::new(27);
    let epoch = f.running(1, 0);
    assert!(f.cluster.fence_one_stale_broker(9_000, 20).is_none());
    let record = f.cluster.fence_one_stale_broker(9_001, 20).expect("fenced");
    let change = BrokerRegistrationChangeRecord::decode_message(&decode(&record).message, 0)
        .expect("decodes");
    assert_eq!((change.broker_epoch, change.fenced), (epoch, 1));
    assert!(f.cluster.brokers()[&1].fenced);
    assert!(f.cluster.fence_one_stale_broker(20_000, 21).is_none());
    // Heartbeats renew the session.
    let epoch2 = f.running(2, 10_000);
    f.beat(&heartbeat(2, epoch2, epoch2), 18_000)
        .expect("beats");
    assert!(f.cluster.fence_one_stale_broker(19_001, 30).is_none());
}

#[test]
fn brokers_whose_sessions_expired_together_are_fenced_one_at_a_time() {
    let mut f = Fixture::new(27);
    f.running(1, 0);
    f.running(2, 0);
    let first = f
        .cluster
        .fence_one_stale_broker(9_001, 20)
        .expect("one fenced");
    assert!(f.cluster.brokers()[&1].fenced && !f.cluster.brokers()[&2].fenced);
    let second = f
        .cluster
        .fence_one_stale_broker(9_001, 21)
        .expect("the other");
    assert_ne!(first, second);
    assert!(f.cluster.brokers()[&2].fenced);
    assert!(f.cluster.fence_one_stale_broker(9_001, 22).is_none());
}

#[test]
fn unregistering_an_unknown_broker_is_broker_id_not_registered() {
    let mut f = Fixture::new(27);
    let (e, m) = f.cluster.unregister_broker(5, 10).expect_err("unknown");
    assert_eq!(e, ResponseError::BrokerIdNotRegistered);
    assert_eq!(m, "Broker ID 5 is not currently registered");
    let epoch = f.running(1, 0);
    let d = f.cluster.unregister_broker(1, 30).expect("unregisters");
    let framed = decode(&d.records[0]);
    assert_eq!(framed.api_key, 1);
    assert_eq!(
        BrokerEpochRecord::decode_message(&framed.message),
        Ok::<_, RecordsError>(BrokerEpochRecord {
            broker_id: 1,
            broker_epoch: epoch
        })
    );
    assert!(f.cluster.brokers().is_empty());
}
