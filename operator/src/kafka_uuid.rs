//! Kafka's textual form of a UUID (`org.apache.kafka.common.Uuid`): the 16
//! bytes, big-endian, in URL-safe base64 without padding (22 characters).
//! Used for cluster ids and directory ids, as `kafka-storage random-uuid` and
//! `kafka-metadata-quorum` print them. Pure; no I/O.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use uuid::Uuid;

/// Errors of parsing a Kafka UUID string.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// Not 22 characters of URL-safe base64 encoding 16 bytes.
    #[error("{0:?} is not a kafka uuid (22 characters of url-safe base64)")]
    Malformed(String),
}

/// Formats `id` as Kafka does (`Uuid.toString()`).
pub fn to_string(id: Uuid) -> String {
    URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Parses Kafka's notation (`Uuid.fromString`).
///
/// # Errors
/// [`Error::Malformed`] naming the input.
pub fn parse(s: &str) -> Result<Uuid, Error> {
    let bytes = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| Error::Malformed(s.to_string()))?;
    let arr: [u8; 16] = bytes
        .try_into()
        .map_err(|_| Error::Malformed(s.to_string()))?;
    Ok(Uuid::from_bytes(arr))
}

/// Whether `id` may be handed out as a fresh id: Kafka's `Uuid.randomUuid()`
/// rejects the zero UUID, the metadata topic id (`Uuid(0, 1)`) and ids whose
/// string starts with `-` (they read as command-line flags).
pub fn is_usable(id: Uuid) -> bool {
    id != Uuid::nil() && id != Uuid::from_u64_pair(0, 1) && !to_string(id).starts_with('-')
}

/// Draws from `next` until it yields a usable id (see [`is_usable`]).
pub fn fresh(next: &mut dyn FnMut() -> Uuid) -> Uuid {
    loop {
        let id = next();
        if is_usable(id) {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_round_trips_through_kafkas_notation() {
        let id = Uuid::from_u128(0x2441_d8e9_aab3_418f_b6d8_fe53_4ed8_dac5);
        let s = to_string(id);
        assert_eq!(s.len(), 22);
        assert_eq!(parse(&s), Ok(id));
    }

    #[test]
    fn kafkas_documented_example_id_parses() {
        // kafka-storage.sh format --initial-controllers example in KIP-853.
        let id = parse("JEXY6aqzQY-32P5TStzaFg").expect("valid");
        assert_eq!(to_string(id), "JEXY6aqzQY-32P5TStzaFg");
    }

    #[test]
    fn malformed_ids_are_rejected_with_their_value() {
        assert_eq!(parse("abc"), Err(Error::Malformed("abc".into())));
        assert!(parse("JEXY6aqzQY-32P5TStzaFg==").is_err());
    }

    #[test]
    fn ids_starting_with_a_dash_are_never_handed_out() {
        let dash = Uuid::from_bytes([0xfb; 16]);
        assert!(to_string(dash).starts_with('-'));
        let mut seq = vec![Uuid::nil(), dash, Uuid::from_u128(7)].into_iter();
        assert_eq!(
            fresh(&mut || seq.next().expect("enough")),
            Uuid::from_u128(7)
        );
    }
}
