//! Message bodies that `kafka-protocol` 0.18 lacks, encoded here from Kafka
//! 4.4.0's JSON schemas (`common/message/*.json` in `kafka-clients-4.4.0.jar`)
//! and checked against the bytes Kafka's own generated classes write
//! (`controller/tests/golden/unregister-controller-golden.jsh`):
//!
//! - UnregisterController (api key 94, v0, flexible; KIP-1312, Kafka 4.4;
//!   listeners `broker` and `controller`, forwardable): request
//!   `ControllerId` int32; response `ThrottleTimeMs` int32, `ErrorCode`
//!   int16, `ErrorMessage` nullable compact string. Request header v2,
//!   response header v1. (The issue called it api 93; in Kafka 4.4.0, 93 is
//!   StreamsGroupTopologyDescriptionUpdate and UnregisterController is 94.)
//! - AddRaftVoter v1 (api key 80; KIP-1186, Kafka 4.2): v0's fields, then
//!   `AckWhenCommitted` bool (default true) before the tagged fields. The
//!   response v1 is v0's layout, so `kafka-protocol`'s v0 response codec
//!   serves it.
//!
//! Owns these byte layouts; it must not decide what to answer (the metadata
//! listener and the raft engine do).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::{
    messages::AddRaftVoterRequest,
    protocol::{Decodable, Encodable},
};

/// Api key of UnregisterController in Kafka 4.4.0 (`ApiKeys.UNREGISTER_CONTROLLER`).
pub const UNREGISTER_CONTROLLER_API_KEY: i16 = 94;
/// Highest UnregisterController version Kafka 4.4.0 has (it has only v0).
pub const UNREGISTER_CONTROLLER_MAX_VERSION: i16 = 0;
/// Highest AddRaftVoter version Kafka 4.4.0 has (v1 adds `AckWhenCommitted`).
pub const ADD_RAFT_VOTER_MAX_VERSION: i16 = 1;

/// Errors decoding or encoding a body of this module.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OwnMessageError {
    /// Fewer bytes than a field needs.
    #[error("message ends early at byte {position}")]
    Truncated {
        /// Byte position where more was needed.
        position: usize,
    },
    /// Bytes left after the message.
    #[error("{0} bytes left over after the message")]
    TrailingBytes(usize),
    /// An unsigned varint whose fifth byte still has its continuation bit
    /// (Kafka's `ByteUtils.readUnsignedVarint`: "Varint is too long").
    #[error("varint at byte {position} is longer than 5 bytes")]
    VarintTooLong {
        /// Byte position where the varint starts.
        position: usize,
    },
    /// A version this module has no layout for.
    #[error("{what} has no version {version}")]
    Version {
        /// The message.
        what: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// `kafka-protocol` refused the v0 part of an AddRaftVoter request.
    #[error("add raft voter request: {0}")]
    AddRaftVoter(String),
}

/// Result alias of this module.
pub type Result<T, E = OwnMessageError> = std::result::Result<T, E>;

/// A cursor over a message body.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let out = self
            .bytes
            .get(self.position..self.position.saturating_add(n))
            .ok_or(OwnMessageError::Truncated {
                position: self.position,
            })?;
        self.position += n;
        Ok(out)
    }
    /// An unsigned varint of at most 5 bytes (Kafka's
    /// `ByteUtils.readUnsignedVarint`; bits past the 32nd are dropped, as
    /// there).
    fn uvarint(&mut self) -> Result<u32> {
        let start = self.position;
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(OwnMessageError::VarintTooLong { position: start })
    }
    fn i16(&mut self) -> Result<i16> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Skips a compact (nullable) string or bytes field: length + 1 first.
    fn skip_compact(&mut self) -> Result<()> {
        let n = self.uvarint()?;
        self.take(n.saturating_sub(1) as usize).map(|_| ())
    }
    fn nullable_compact_string(&mut self) -> Result<Option<String>> {
        match self.uvarint()? {
            0 => Ok(None),
            n => Ok(Some(
                String::from_utf8_lossy(self.take(n as usize - 1)?).into_owned(),
            )),
        }
    }
    fn skip_tagged_fields(&mut self) -> Result<()> {
        for _ in 0..self.uvarint()? {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
    fn finish(self) -> Result<()> {
        match self.bytes.len() - self.position {
            0 => Ok(()),
            n => Err(OwnMessageError::TrailingBytes(n)),
        }
    }
}

fn put_uvarint(buf: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

fn check_version(what: &'static str, version: i16, max: i16) -> Result<()> {
    if (0..=max).contains(&version) {
        Ok(())
    } else {
        Err(OwnMessageError::Version { what, version })
    }
}

/// UnregisterControllerRequest (api key 94), Kafka 4.4.0's
/// `UnregisterControllerRequestData`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnregisterControllerRequest {
    /// The id of the controller to unregister.
    pub controller_id: i32,
}

impl UnregisterControllerRequest {
    /// The body at `version` (only 0): `ControllerId`, no tagged fields.
    ///
    /// Errors: [`OwnMessageError::Version`].
    pub fn encode(&self, version: i16) -> Result<Bytes> {
        check_version(
            "UnregisterControllerRequest",
            version,
            UNREGISTER_CONTROLLER_MAX_VERSION,
        )?;
        let mut buf = BytesMut::with_capacity(5);
        buf.put_i32(self.controller_id);
        put_uvarint(&mut buf, 0);
        Ok(buf.freeze())
    }

    /// Decodes a whole body at `version`; tagged fields are skipped.
    ///
    /// Errors: [`OwnMessageError::Version`], [`OwnMessageError::Truncated`],
    /// [`OwnMessageError::TrailingBytes`], [`OwnMessageError::VarintTooLong`].
    pub fn decode(body: &[u8], version: i16) -> Result<Self> {
        check_version(
            "UnregisterControllerRequest",
            version,
            UNREGISTER_CONTROLLER_MAX_VERSION,
        )?;
        let mut r = Reader {
            bytes: body,
            position: 0,
        };
        let controller_id = r.i32()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self { controller_id })
    }
}

/// UnregisterControllerResponse (api key 94), Kafka 4.4.0's
/// `UnregisterControllerResponseData`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnregisterControllerResponse {
    /// Throttle time, ms (always 0 here: no quotas on this api).
    pub throttle_time_ms: i32,
    /// Kafka's error code, 0 for none.
    pub error_code: i16,
    /// The error's message, `None` without an error.
    pub error_message: Option<String>,
}

impl UnregisterControllerResponse {
    /// The body at `version` (only 0).
    ///
    /// Errors: [`OwnMessageError::Version`].
    pub fn encode(&self, version: i16) -> Result<Bytes> {
        check_version(
            "UnregisterControllerResponse",
            version,
            UNREGISTER_CONTROLLER_MAX_VERSION,
        )?;
        let mut buf = BytesMut::new();
        buf.put_i32(self.throttle_time_ms);
        buf.put_i16(self.error_code);
        match &self.error_message {
            None => put_uvarint(&mut buf, 0),
            Some(m) => {
                put_uvarint(&mut buf, m.len() as u32 + 1);
                buf.put_slice(m.as_bytes());
            }
        }
        put_uvarint(&mut buf, 0);
        Ok(buf.freeze())
    }

    /// Decodes a whole body at `version`; tagged fields are skipped, a
    /// message that is not UTF-8 is kept lossily.
    ///
    /// Errors: [`OwnMessageError::Version`], [`OwnMessageError::Truncated`],
    /// [`OwnMessageError::TrailingBytes`], [`OwnMessageError::VarintTooLong`].
    pub fn decode(body: &[u8], version: i16) -> Result<Self> {
        check_version(
            "UnregisterControllerResponse",
            version,
            UNREGISTER_CONTROLLER_MAX_VERSION,
        )?;
        let mut r = Reader {
            bytes: body,
            position: 0,
        };
        let throttle_time_ms = r.i32()?;
        let error_code = r.i16()?;
        let error_message = r.nullable_compact_string()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            error_message,
        })
    }
}

/// An AddRaftVoter request at any version Kafka 4.4.0 has: `kafka-protocol`'s
/// v0 message and KIP-1186's `AckWhenCommitted` (true at v0, and by default).
#[derive(Debug, Clone, PartialEq)]
pub struct AddRaftVoterRequestV1 {
    /// The v0 fields (cluster id, timeout ms, voter id and directory id,
    /// listeners, tagged fields).
    pub request: AddRaftVoterRequest,
    /// Answer once the new voter set is committed (true) or once it is
    /// appended to the leader's log (false).
    pub ack_when_committed: bool,
}

/// A v0 request: `AckWhenCommitted` true, as v0 means.
impl From<AddRaftVoterRequest> for AddRaftVoterRequestV1 {
    fn from(request: AddRaftVoterRequest) -> Self {
        Self {
            request,
            ack_when_committed: true,
        }
    }
}

impl AddRaftVoterRequestV1 {
    /// Decodes a whole AddRaftVoter body at `version` 0 or 1.
    ///
    /// Errors: [`OwnMessageError::Version`], [`OwnMessageError::Truncated`],
    /// [`OwnMessageError::TrailingBytes`], [`OwnMessageError::VarintTooLong`],
    /// [`OwnMessageError::AddRaftVoter`].
    pub fn decode(body: &[u8], version: i16) -> Result<Self> {
        check_version("AddRaftVoterRequest", version, ADD_RAFT_VOTER_MAX_VERSION)?;
        // Walk v0's fields first: a listener count the bytes cannot hold is
        // refused here, before kafka-protocol reserves room for it (the
        // out-of-memory that wire/schema_guard.rs prevents elsewhere; found
        // by the own_messages fuzz target). At v1 the walk also finds the
        // AckWhenCommitted byte, and kafka-protocol decodes the body without
        // it (v0's layout).
        let mut r = Reader {
            bytes: body,
            position: 0,
        };
        r.skip_compact()?; // ClusterId
        r.take(4 + 4 + 16)?; // TimeoutMs, VoterId, VoterDirectoryId
        for _ in 0..r.uvarint()?.saturating_sub(1) {
            r.skip_compact()?; // Name
            r.skip_compact()?; // Host
            r.take(2)?; // Port
            r.skip_tagged_fields()?;
        }
        let (v0, ack_when_committed) = if version == 0 {
            (Bytes::copy_from_slice(body), true)
        } else {
            let at = r.position;
            let ack = r.take(1)?[0] != 0;
            let mut v0 = BytesMut::with_capacity(body.len() - 1);
            v0.put_slice(&body[..at]);
            v0.put_slice(&body[at + 1..]);
            (v0.freeze(), ack)
        };
        let mut buf = v0;
        let request = AddRaftVoterRequest::decode(&mut buf, 0)
            .map_err(|e| OwnMessageError::AddRaftVoter(e.to_string()))?;
        match buf.len() {
            0 => Ok(Self {
                request,
                ack_when_committed,
            }),
            n => Err(OwnMessageError::TrailingBytes(n)),
        }
    }

    /// The body at `version` 0 or 1 (v0 has no `AckWhenCommitted`: a false
    /// one cannot be sent at v0 and is an error). Unknown tagged fields (of
    /// the request or a listener) are never written: a message carrying
    /// some is an error (kafka-protocol does not write every tag it reads
    /// back as it was; the own_messages fuzz target found one).
    ///
    /// Errors: [`OwnMessageError::Version`], [`OwnMessageError::AddRaftVoter`].
    pub fn encode(&self, version: i16) -> Result<Bytes> {
        check_version("AddRaftVoterRequest", version, ADD_RAFT_VOTER_MAX_VERSION)?;
        if !self.request.unknown_tagged_fields.is_empty()
            || self
                .request
                .listeners
                .iter()
                .any(|l| !l.unknown_tagged_fields.is_empty())
        {
            return Err(OwnMessageError::AddRaftVoter(
                "unknown tagged fields cannot be re-encoded".into(),
            ));
        }
        let mut v0 = BytesMut::new();
        self.request
            .encode(&mut v0, 0)
            .map_err(|e| OwnMessageError::AddRaftVoter(e.to_string()))?;
        if version == 0 {
            if !self.ack_when_committed {
                return Err(OwnMessageError::AddRaftVoter(
                    "AckWhenCommitted false needs version 1".into(),
                ));
            }
            return Ok(v0.freeze());
        }
        // v0 ends with its tagged fields (none, checked above); the bool
        // goes just before them.
        let mut tagged = BytesMut::new();
        put_uvarint(&mut tagged, 0);
        let fields_end = v0.len() - tagged.len();
        let mut out = BytesMut::with_capacity(v0.len() + 1);
        out.put_slice(&v0[..fields_end]);
        out.put_u8(u8::from(self.ack_when_committed));
        out.put_slice(&tagged);
        Ok(out.freeze())
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::{
        messages::{AddRaftVoterResponse, add_raft_voter_request::Listener},
        protocol::StrBytes,
    };

    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// Kafka 4.4.0's `UnregisterControllerRequestData` v0 with
    /// ControllerId 3000 (golden script line `REQUEST_V0 00000bb800`).
    #[test]
    fn an_unregister_controller_request_is_kafka_4_4s_bytes() {
        let expected = [
            0x00, 0x00, 0x0b, 0xb8, // ControllerId int32 = 3000
            0x00, // no tagged fields
        ];
        assert_eq!(hex("00000bb800"), expected);
        let request = UnregisterControllerRequest {
            controller_id: 3000,
        };
        assert_eq!(&request.encode(0).expect("v0")[..], &expected[..]);
        assert_eq!(
            UnregisterControllerRequest::decode(&expected, 0),
            Ok(request)
        );
        assert!(matches!(
            UnregisterControllerRequest::decode(&expected, 1),
            Err(OwnMessageError::Version { version: 1, .. })
        ));
        assert_eq!(
            UnregisterControllerRequest::decode(&expected[..3], 0),
            Err(OwnMessageError::Truncated { position: 0 })
        );
        assert_eq!(
            UnregisterControllerRequest::decode(&[0, 0, 0, 1, 0, 7], 0),
            Err(OwnMessageError::TrailingBytes(1))
        );
    }

    /// Kafka 4.4.0's `UnregisterControllerResponseData` v0, without an error
    /// (`RESPONSE_V0_OK`) and with CONTROLLER_ID_NOT_REGISTERED, throttle 7,
    /// message "no" (`RESPONSE_V0_ERR`).
    #[test]
    fn unregister_controller_responses_are_kafka_4_4s_bytes() {
        let ok = [
            0x00, 0x00, 0x00, 0x00, // ThrottleTimeMs 0
            0x00, 0x00, // ErrorCode 0
            0x00, // ErrorMessage null
            0x00, // no tagged fields
        ];
        assert_eq!(hex("0000000000000000"), ok);
        let err = [
            0x00, 0x00, 0x00, 0x07, // ThrottleTimeMs 7
            0x00, 0x88, // ErrorCode 136 CONTROLLER_ID_NOT_REGISTERED
            0x03, b'n', b'o', // ErrorMessage "no": compact string, 2 + 1
            0x00, // no tagged fields
        ];
        assert_eq!(hex("000000070088036e6f00"), err);
        for (bytes, response) in [
            (&ok[..], UnregisterControllerResponse::default()),
            (
                &err[..],
                UnregisterControllerResponse {
                    throttle_time_ms: 7,
                    error_code: 136,
                    error_message: Some("no".into()),
                },
            ),
        ] {
            assert_eq!(&response.encode(0).expect("v0")[..], bytes);
            assert_eq!(UnregisterControllerResponse::decode(bytes, 0), Ok(response));
        }
        assert_eq!(
            UnregisterControllerResponse::decode(&err[..8], 0),
            Err(OwnMessageError::Truncated { position: 7 })
        );
    }

    fn add_voter() -> AddRaftVoterRequest {
        AddRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("AAECAwQFBgcICQoLDA0ODw")))
            .with_timeout_ms(30_000)
            .with_voter_id(4)
            .with_voter_directory_id(uuid::Uuid::from_u128(
                0x1111_1111_1111_1111_2222_2222_2222_2222,
            ))
            .with_listeners(vec![
                Listener::default()
                    .with_name(StrBytes::from_static_str("CONTROLLER"))
                    .with_host(StrBytes::from_static_str("c-4"))
                    .with_port(9093),
            ])
    }

    /// Kafka 4.4.0's `AddRaftVoterRequestData` at v0 and at v1 with
    /// AckWhenCommitted true and false (`ADD_VOTER_V*` lines of the golden
    /// script): v1 is v0 with one bool before the tagged fields.
    #[test]
    fn add_raft_voter_requests_of_both_versions_are_kafka_4_4s_bytes() {
        let v0 = "1741414543417751464267634943516f4c4441304f4477000075300000000411111111111111112222222222222222020b434f4e54524f4c4c455204632d3423850000";
        let mut expected_v0 = vec![0x17]; // ClusterId: compact string, 22 + 1
        expected_v0.extend_from_slice(b"AAECAwQFBgcICQoLDA0ODw");
        expected_v0.extend_from_slice(&[0x00, 0x00, 0x75, 0x30]); // TimeoutMs 30000
        expected_v0.extend_from_slice(&[0x00, 0x00, 0x00, 0x04]); // VoterId 4
        expected_v0.extend_from_slice(&[0x11; 8]); // VoterDirectoryId, high
        expected_v0.extend_from_slice(&[0x22; 8]); // VoterDirectoryId, low
        expected_v0.push(0x02); // Listeners: compact array of 1
        expected_v0.push(0x0b); // Name: compact string, 10 + 1
        expected_v0.extend_from_slice(b"CONTROLLER");
        expected_v0.push(0x04); // Host: compact string, 3 + 1
        expected_v0.extend_from_slice(b"c-4");
        expected_v0.extend_from_slice(&[0x23, 0x85]); // Port uint16 9093
        expected_v0.push(0x00); // listener: no tagged fields
        expected_v0.push(0x00); // request: no tagged fields
        assert_eq!(hex(v0), expected_v0);
        let mut v1_true = expected_v0[..expected_v0.len() - 1].to_vec();
        v1_true.extend_from_slice(&[0x01, 0x00]); // AckWhenCommitted true; no tagged fields
        assert_eq!(hex(&format!("{}0100", &v0[..v0.len() - 2])), v1_true);
        let mut v1_false = expected_v0[..expected_v0.len() - 1].to_vec();
        v1_false.extend_from_slice(&[0x00, 0x00]); // AckWhenCommitted false; no tagged fields
        assert_eq!(hex(&format!("{}0000", &v0[..v0.len() - 2])), v1_false);

        for (version, ack, bytes) in [
            (0, true, &expected_v0),
            (1, true, &v1_true),
            (1, false, &v1_false),
        ] {
            let message = AddRaftVoterRequestV1 {
                request: add_voter(),
                ack_when_committed: ack,
            };
            assert_eq!(&message.encode(version).expect("encodes")[..], &bytes[..]);
            assert_eq!(
                AddRaftVoterRequestV1::decode(bytes, version).as_ref(),
                Ok(&message),
                "v{version} ack {ack}"
            );
        }
        let no_ack = AddRaftVoterRequestV1 {
            request: add_voter(),
            ack_when_committed: false,
        };
        assert!(no_ack.encode(0).is_err());
        assert!(matches!(
            AddRaftVoterRequestV1::decode(&v1_true[..v1_true.len() - 2], 1),
            Err(OwnMessageError::Truncated { .. })
        ));
    }

    /// The own_messages fuzz target's finding: an AddRaftVoter v0 body whose
    /// listener count (0x14 = 19) the bytes cannot hold made kafka-protocol
    /// reserve ~280 GB; it is refused as truncated before that.
    #[test]
    fn an_add_raft_voter_request_with_more_listeners_than_bytes_is_refused_not_reserved() {
        let crash =
            hex("00000000162f0000000044ffffffff1445520a011763616c68eaeaeaeaea6f737423850000");
        // Its listener count is a varint of more than 5 bytes (Kafka's
        // "Varint is too long").
        assert_eq!(
            AddRaftVoterRequestV1::decode(&crash, 0),
            Err(OwnMessageError::VarintTooLong { position: 25 })
        );
        // A count of 19 listeners (0x14) in a body that ends within the first.
        let mut short = vec![0u8; 25];
        short.extend_from_slice(&hex("14016161"));
        assert!(matches!(
            AddRaftVoterRequestV1::decode(&short, 0),
            Err(OwnMessageError::Truncated { .. })
        ));
    }

    /// The own_messages fuzz target's second finding: a body with unknown
    /// tagged fields (a tag above i32::MAX among them) decodes, but
    /// kafka-protocol does not write it back as read; it is not encoded.
    #[test]
    fn an_add_raft_voter_request_with_unknown_tagged_fields_is_not_re_encoded() {
        let crash = hex(
            "1741414543417751464267634943516f4c4441304f4477000075300000000400000000000000000000000000002044020b434f4e54524f4c4c45520a6c6f63616c686f7306060606fd0606060606060606060606060606060606060606eb06faf9f9f9f9f9fa01060606060606060606ffffff01060606060606060606060606060606060606060606060606060606060606060606060606060606060606060206067423850000",
        );
        // That input also holds a varint of more than 5 bytes, refused now.
        assert!(matches!(
            AddRaftVoterRequestV1::decode(&crash, 0),
            Err(OwnMessageError::VarintTooLong { .. })
        ));
        // A request whose last tagged-fields section holds tag 0xffffffff
        // (a 5-byte varint, above i32::MAX) of size 0.
        let mut body = AddRaftVoterRequestV1 {
            request: add_voter(),
            ack_when_committed: true,
        }
        .encode(0)
        .expect("v0")
        .to_vec();
        assert_eq!(body.pop(), Some(0x00), "no tagged fields");
        body.extend_from_slice(&hex("01ffffffff0f00"));
        let decoded = AddRaftVoterRequestV1::decode(&body, 0).expect("decodes");
        assert!(matches!(
            decoded.encode(0),
            Err(OwnMessageError::AddRaftVoter(_))
        ));
    }

    /// Kafka's `ByteUtils.readUnsignedVarint` reads at most 5 bytes; a
    /// fifth byte with its continuation bit is "Varint is too long".
    #[test]
    fn a_varint_longer_than_five_bytes_is_refused() {
        // ControllerId 7, then a tagged-field count of six bytes
        let body = hex("0000000780808080800000");
        assert_eq!(
            UnregisterControllerRequest::decode(&body, 0),
            Err(OwnMessageError::VarintTooLong { position: 4 })
        );
    }

    /// AddRaftVoterResponse v1 "is the same as version 0" (Kafka 4.4.0's
    /// schema): `kafka-protocol`'s v0 decoder reads Kafka's v1 bytes
    /// (`ADD_VOTER_RESPONSE_V1 0000000000000000`: throttle 0, error 0, null
    /// message, no tagged fields), and what it writes at v0 is a v1 body.
    #[test]
    fn an_add_raft_voter_response_v1_is_the_v0_layout() {
        let mut kafka_v1 = Bytes::from(hex("0000000000000000"));
        let decoded = AddRaftVoterResponse::decode(&mut kafka_v1, 0).expect("v0 layout");
        assert_eq!((decoded.throttle_time_ms, decoded.error_code), (0, 0));
        assert!(kafka_v1.is_empty());
        let mut ours = BytesMut::new();
        decoded.encode(&mut ours, 0).expect("v0");
        let again = AddRaftVoterResponse::decode(&mut ours.freeze(), 0).expect("v0");
        assert_eq!(again.error_code, 0);
    }
}
