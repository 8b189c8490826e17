//! Kafka's text form of a UUID (`org.apache.kafka.common.Uuid`): the 16
//! bytes, big-endian, in URL-safe base64 without padding (22 characters),
//! read back as Java's `Base64.getUrlDecoder()` reads it. Used for cluster
//! ids and directory ids, as `kafka-storage random-uuid`, `meta.properties`
//! and `kafka-metadata-quorum` write them; and the rules for handing out a
//! fresh id (`Uuid.randomUuid`, `DirectoryId.random`).
//!
//! Pure: no I/O; randomness only in [`random`] (and injected in [`fresh`]).

use base64::{
    Engine, alphabet,
    engine::{
        DecodePaddingMode,
        general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD},
    },
};
use uuid::Uuid;

use crate::metadata_topic::METADATA_TOPIC_ID;

/// Errors of reading a Kafka uuid.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum UuidError {
    /// Not (at most 24 characters of) URL-safe base64 decoding to 16 bytes;
    /// carries the input.
    #[error("{0:?} is not a kafka uuid (22 characters of url-safe base64)")]
    Malformed(String),
}

/// Java's `Base64.getUrlDecoder()`: URL-safe alphabet, `=` padding optional,
/// and the unused low bits of the last character ignored (not required to be 0).
const JAVA_URL_DECODER: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Formats `id` as Kafka does (`Uuid.toString()`): 22 characters.
pub fn to_string(id: Uuid) -> String {
    URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Parses Kafka's notation as `Uuid.fromString` does: at most 24 characters
/// of URL-safe base64 (22 without padding) decoding to 16 bytes. Like Java's
/// URL decoder it accepts `=` padding and a last character whose unused low
/// bits are not zero, so `MkU3OEVBNTcwNTJENDM2Qk` (Kafka's documentation
/// example) reads as the same uuid as `MkU3OEVBNTcwNTJENDM2Qg`.
///
/// # Errors
/// [`UuidError::Malformed`] naming the input.
pub fn parse(s: &str) -> Result<Uuid, UuidError> {
    let malformed = || UuidError::Malformed(s.to_owned());
    if s.len() > 24 {
        return Err(malformed());
    }
    let bytes = JAVA_URL_DECODER.decode(s).map_err(|_| malformed())?;
    Uuid::from_slice(&bytes).map_err(|_| malformed())
}

/// [`parse`], or else the RFC 4122 form (`02020202-0202-…`), which
/// `kafka-metadata-quorum` does not take but a user may paste; for
/// command-line input only (files and the wire carry Kafka's form).
///
/// # Errors
/// [`UuidError::Malformed`] naming the input.
pub fn parse_or_rfc4122(s: &str) -> Result<Uuid, UuidError> {
    parse(s).or_else(|e| Uuid::parse_str(s).map_err(|_| e))
}

/// Whether `id` is one of Kafka's reserved directory ids (`DirectoryId`:
/// UNASSIGNED, LOST, MIGRATING and the rest of the first 100), which may not
/// name a real directory.
pub fn is_reserved_directory_id(id: Uuid) -> bool {
    id.as_u128() < 100
}

/// Whether `id` may be handed out as a fresh id: Kafka's `Uuid.randomUuid()`
/// rejects the zero UUID, the metadata topic id (`Uuid(0, 1)`) and ids whose
/// string starts with `-` (they read as command-line flags).
pub fn is_usable(id: Uuid) -> bool {
    id != Uuid::nil() && id != METADATA_TOPIC_ID && !to_string(id).starts_with('-')
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

/// A fresh random uuid as Kafka's `DirectoryId.random` makes them: never a
/// reserved id (so never one [`is_usable`] refuses either), never one whose
/// text starts with `-`.
pub fn random() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        if !is_reserved_directory_id(id) && !to_string(id).starts_with('-') {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // From log/meta_properties.rs.
    #[test]
    fn kafka_uuid_text_is_url_safe_base64_without_padding() {
        assert_eq!(to_string(Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(to_string(Uuid::from_u128(1)), "AAAAAAAAAAAAAAAAAAAAAQ");
        let id = parse("MkU3OEVBNTcwNTJENDM2Qg").expect("valid");
        assert_eq!(to_string(id), "MkU3OEVBNTcwNTJENDM2Qg");
        assert!(parse("MkU3OEVBNTcwNTJENDM2Q").is_err());
        assert!(parse("MkU3OEVBNTcwNTJENDM2Q+").is_err());
    }

    /// Interop (docs/interop.md, mismatch 1): Kafka's `Uuid.fromString` uses
    /// Java's URL decoder, which ignores the unused low bits of the last
    /// character and accepts `=` padding; `kafka-storage format` accepted the
    /// documentation's `MkU3OEVBNTcwNTJENDM2Qk` (last char `k` = 0b100100:
    /// the low 4 bits are unused and not zero) and wrote it as given.
    #[test]
    fn kafka_uuid_text_is_read_as_javas_url_decoder_reads_it() {
        let canonical = parse("MkU3OEVBNTcwNTJENDM2Qg").expect("canonical");
        assert_eq!(parse("MkU3OEVBNTcwNTJENDM2Qk"), Ok(canonical));
        assert_eq!(parse("MkU3OEVBNTcwNTJENDM2Qg=="), Ok(canonical));
        assert!(parse("MkU3OEVBNTcwNTJENDM2Qg===").is_err());
        assert!(parse("MkU3OEVBNTcwNTJENDM2").is_err());
    }

    // From operator/src/kafka_uuid.rs.
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

    /// The operator's copy refused `=` padding; Java's decoder (and so Kafka)
    /// takes it, so the one vocabulary does too (see
    /// `kafka_uuid_text_is_read_as_javas_url_decoder_reads_it`): what is
    /// refused is anything that is not 16 bytes of base64, named in the error.
    #[test]
    fn malformed_ids_are_rejected_with_their_value() {
        assert_eq!(parse("abc"), Err(UuidError::Malformed("abc".into())));
        assert_eq!(
            parse("JEXY6aqzQY-32P5TStzaFg=="),
            parse("JEXY6aqzQY-32P5TStzaFg"),
            "padding is read as Java reads it"
        );
        assert!(parse("JEXY6aqzQY-32P5TStzaFg===").is_err());
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

    // From controller/tests/wire_admin.rs (the admin module's copy).
    #[test]
    fn directory_ids_use_kafkas_base64_form() {
        let id = Uuid::from_bytes([2; 16]);
        assert_eq!(to_string(id), "AgICAgICAgICAgICAgICAg");
        assert_eq!(parse_or_rfc4122("AgICAgICAgICAgICAgICAg"), Ok(id));
        assert_eq!(
            parse_or_rfc4122("02020202-0202-0202-0202-020202020202"),
            Ok(id)
        );
        assert!(parse_or_rfc4122("not-a-uuid").is_err());
        assert!(parse("02020202-0202-0202-0202-020202020202").is_err());
    }

    #[test]
    fn the_metadata_topic_id_and_reserved_directory_ids_are_never_random() {
        assert!(!is_usable(METADATA_TOPIC_ID));
        assert!(!is_usable(Uuid::nil()));
        assert!(is_reserved_directory_id(Uuid::from_u128(99)));
        assert!(!is_reserved_directory_id(Uuid::from_u128(100)));
        for _ in 0..64 {
            let id = random();
            assert!(is_usable(id) && !is_reserved_directory_id(id));
        }
    }
}
