//! KIP-1312 controller unregistration (Kafka 4.4), the active controller's
//! side, without I/O: whether an UnregisterController request (api key 94)
//! may remove a controller's registration, and the UnregisterControllerRecord
//! (metadata record 29) to append if so. The image applies that record
//! (`metadata::image`): the registration is gone, and so from every later
//! snapshot.
//!
//! Why it exists: a controller removed from the voters keeps its
//! RegisterControllerRecord, whose supported `metadata.version` range then
//! blocks later upgrades (Kafka's `FeatureControlManager` checks every
//! registered controller).
//!
//! Owns the checks, in Kafka 4.4.0's order (`QuorumController
//! .unregisterController`, then `ClusterControlManager.unregisterController`),
//! followed by KAFKA-20865's voter check; it must not append, answer or read
//! the log (the caller passes the finalized level, the registrations and the
//! latest voter set in).

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;

use super::records::UnregisterControllerRecord;

/// Lowest `metadata.version` feature level at which a controller may be
/// unregistered: 4.4-IV2 (33), Kafka's
/// `MetadataVersion.isControllerUnregistrationSupported`.
pub const CONTROLLER_UNREGISTRATION_MIN_LEVEL: i16 = 33;

/// Kafka's `Errors.CONTROLLER_ID_NOT_REGISTERED` (code 136, new in 4.4;
/// `kafka-protocol` 0.18 has no name for it): "The given controller ID was
/// not registered."
pub const CONTROLLER_ID_NOT_REGISTERED: ResponseError = ResponseError::Unknown(136);

/// A refusal: the error code to answer and its message.
pub type Refusal = (ResponseError, String);

/// What the active controller knows when it decides.
#[derive(Debug, Clone, Copy)]
pub struct UnregisterContext<'a> {
    /// This node's id (the active controller).
    pub local_id: i32,
    /// The finalized `metadata.version` level, `None` if none is finalized.
    pub metadata_version: Option<i16>,
    /// Ids with a registration in the controller's view (committed records
    /// and the ones it appended since it became active).
    pub registered: &'a BTreeSet<i32>,
    /// Ids of the latest voter set: the uncommitted one if a voter change is
    /// pending, otherwise the committed one (KAFKA-20865: the
    /// UnregisterControllerRecord is appended after it, so that is the set
    /// it commits under).
    pub voters: &'a BTreeSet<i32>,
}

/// A record this leader appended in its epoch that changes the
/// registrations: RegisterControllerRecord (`registered` true) or
/// UnregisterControllerRecord (false) for `controller_id`, at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedRegistration {
    /// Offset of the record in the metadata log.
    pub offset: i64,
    /// The controller the record names.
    pub controller_id: i32,
    /// Whether the record registers (true) or unregisters (false) it.
    pub registered: bool,
}

/// The active controller's view of the registrations, as Kafka's timeline
/// map holds it: the ids the image holds (`committed`, applied up to
/// `image_next_offset`), then this leader's appends at or past that offset
/// applied in log order, so that the later of a registration and an
/// unregistration of one id wins. Appends below `image_next_offset` are
/// already in `committed` and are skipped.
pub fn registered_view(
    committed: impl IntoIterator<Item = i32>,
    image_next_offset: i64,
    appended: impl IntoIterator<Item = AppendedRegistration>,
) -> BTreeSet<i32> {
    let mut view: BTreeSet<i32> = committed.into_iter().collect();
    let mut appended: Vec<AppendedRegistration> = appended
        .into_iter()
        .filter(|a| a.offset >= image_next_offset)
        .collect();
    appended.sort_by_key(|a| a.offset);
    for a in appended {
        if a.registered {
            view.insert(a.controller_id);
        } else {
            view.remove(&a.controller_id);
        }
    }
    view
}

/// Decides an UnregisterController request for `controller_id`.
///
/// Errors, in this order:
/// - INVALID_REQUEST "Controller cannot unregister itself while it is
///   active." when `controller_id` is this node (Kafka 4.4.0's
///   `QuorumController`);
/// - UNSUPPORTED_VERSION below 4.4-IV2 (Kafka's message);
/// - CONTROLLER_ID_NOT_REGISTERED (136) for an id without a registration
///   ("Controller ID N is not currently registered.", Kafka's
///   `ClusterControlManager`);
/// - INVALID_REQUEST for a member of the latest voter set (KAFKA-20865; Kafka
///   4.4.0 itself lacks this check: a voter that lost its registration would
///   register again, possibly after a `metadata.version` upgrade it cannot
///   follow; the error code is our choice, the same as for the active
///   controller itself).
pub fn validate_unregister(
    context: &UnregisterContext<'_>,
    controller_id: i32,
) -> Result<UnregisterControllerRecord, Refusal> {
    if controller_id == context.local_id {
        return Err((
            ResponseError::InvalidRequest,
            "Controller cannot unregister itself while it is active.".into(),
        ));
    }
    if context
        .metadata_version
        .is_none_or(|l| l < CONTROLLER_UNREGISTRATION_MIN_LEVEL)
    {
        return Err((
            ResponseError::UnsupportedVersion,
            "The current MetadataVersion is too old to support controller unregistration.".into(),
        ));
    }
    if !context.registered.contains(&controller_id) {
        return Err((
            CONTROLLER_ID_NOT_REGISTERED,
            format!("Controller ID {controller_id} is not currently registered."),
        ));
    }
    if context.voters.contains(&controller_id) {
        return Err((
            ResponseError::InvalidRequest,
            format!(
                "controller {controller_id} is a voter: remove it from the voters before unregistering it"
            ),
        ));
    }
    Ok(UnregisterControllerRecord { controller_id })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::{
        log::OffsetAndEpoch,
        metadata::{
            image::{ImageError, MetadataImage},
            records::{ControllerEndpoint, RegisterControllerRecord},
            snapshot::{encode_image_snapshot, image_snapshot_id, load_image_snapshot},
        },
    };

    /// The later of a registration and an unregistration of one id wins,
    /// whichever list it came from; appends the image already holds are
    /// not applied twice.
    #[test]
    fn the_registered_view_applies_this_leaders_appends_in_log_order() {
        let at = |offset, controller_id, registered| AppendedRegistration {
            offset,
            controller_id,
            registered,
        };
        // 4 unregistered at 10, then registered again at 11: registered.
        assert_eq!(
            registered_view([3, 4], 10, [at(11, 4, true), at(10, 4, false)]),
            ids(&[3, 4])
        );
        // registered at 10, then unregistered at 11: gone.
        assert_eq!(
            registered_view([3], 10, [at(11, 4, false), at(10, 4, true)]),
            ids(&[3])
        );
        // the image has applied up to 12 (4 unregistered at 11): the
        // registration at 9 is already in it and does not bring 4 back.
        assert_eq!(
            registered_view([3], 12, [at(9, 4, true), at(11, 4, false)]),
            ids(&[3])
        );
    }

    fn ids(v: &[i32]) -> BTreeSet<i32> {
        v.iter().copied().collect()
    }

    /// Table: (local id, level, registered, voters, id asked) -> the answer.
    #[test]
    fn unregistering_is_refused_in_kafkas_order_and_allowed_for_a_registered_non_voter() {
        let registered = ids(&[1, 2, 3]);
        let voters = ids(&[1, 2]);
        let unsupported = Err(ResponseError::UnsupportedVersion);
        let invalid = Err(ResponseError::InvalidRequest);
        let not_registered = Err(CONTROLLER_ID_NOT_REGISTERED);
        let cases: &[(i16, i32, Result<i32, ResponseError>)] = &[
            // The active controller itself: refused before anything else.
            (32, 1, invalid),
            (33, 1, invalid),
            // Below 4.4-IV2, whoever is asked.
            (27, 3, unsupported),
            (32, 3, unsupported),
            (32, 9, unsupported),
            // An id with no registration.
            (33, 9, not_registered),
            // A current voter other than this node (KAFKA-20865).
            (33, 2, invalid),
            // A registered controller that is no longer a voter.
            (33, 3, Ok(3)),
            (34, 3, Ok(3)),
        ];
        for &(level, asked, ref expected) in cases {
            let context = UnregisterContext {
                local_id: 1,
                metadata_version: Some(level),
                registered: &registered,
                voters: &voters,
            };
            let got = validate_unregister(&context, asked)
                .map(|r| r.controller_id)
                .map_err(|(e, _)| e);
            assert_eq!(&got, expected, "level {level}, unregistering {asked}");
        }
        let none = UnregisterContext {
            local_id: 1,
            metadata_version: None,
            registered: &registered,
            voters: &voters,
        };
        assert_eq!(
            validate_unregister(&none, 3).map_err(|(e, _)| e),
            Err(ResponseError::UnsupportedVersion)
        );
    }

    #[test]
    fn the_refusal_of_a_voter_names_the_controller() {
        let (registered, voters) = (ids(&[1, 2]), ids(&[1, 2]));
        let context = UnregisterContext {
            local_id: 1,
            metadata_version: Some(33),
            registered: &registered,
            voters: &voters,
        };
        let (code, message) = validate_unregister(&context, 2).expect_err("a voter");
        assert_eq!(code, ResponseError::InvalidRequest);
        assert!(message.contains("controller 2 is a voter"), "{message}");
        assert_eq!(code.code(), 42);
        assert_eq!(CONTROLLER_ID_NOT_REGISTERED.code(), 136);
    }

    fn registration(id: i32) -> Bytes {
        RegisterControllerRecord {
            controller_id: id,
            incarnation_id: uuid::Uuid::from_u128(id as u128),
            zk_migration_ready: false,
            endpoints: vec![ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: format!("c-{id}"),
                port: 9093,
                security_protocol: 0,
            }],
            features: vec![],
        }
        .encode_framed()
    }

    // KIP-1312: record 29 removes the registration from the image, and so
    // from its snapshots.
    #[test]
    fn an_unregister_controller_record_removes_the_registration_from_the_image_and_its_snapshots() {
        let mut image = MetadataImage::default();
        for (offset, value) in [registration(1), registration(2), registration(3)]
            .iter()
            .enumerate()
        {
            image.apply_record(offset as i64, value).expect("applies");
        }
        let record = UnregisterControllerRecord { controller_id: 3 }.encode_framed();
        image.apply_record(3, &record).expect("applies");
        assert_eq!(
            image.controllers().keys().copied().collect::<Vec<_>>(),
            [1, 2]
        );
        assert!(image.unknown_records().is_empty());
        image.set_position(4, 1);
        let id = image_snapshot_id(&image);
        assert_eq!(id, OffsetAndEpoch::new(4, 1));
        let bytes = encode_image_snapshot(&image, 0, Default::default(), 0).expect("encodes");
        let loaded = load_image_snapshot(id, &bytes).expect("loads");
        assert_eq!(
            loaded.controllers().keys().copied().collect::<Vec<_>>(),
            [1, 2]
        );
    }

    #[test]
    fn unregistering_a_controller_the_image_does_not_hold_stops_the_replay_and_changes_nothing() {
        let mut image = MetadataImage::default();
        image.apply_record(0, &registration(1)).expect("applies");
        let before = image.clone();
        let record = UnregisterControllerRecord { controller_id: 7 }.encode_framed();
        assert!(matches!(
            image.apply_record(1, &record),
            Err(ImageError::UnknownController {
                offset: 1,
                controller_id: 7
            })
        ));
        assert_eq!(image, before);
    }
}
