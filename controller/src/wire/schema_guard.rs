//! A pre-check of response bodies and KRaft control record values that
//! rejects array counts no buffer could hold, before `kafka-protocol`
//! decodes them, driven by Kafka's own message schemas (the JSON files of
//! `clients/src/main/resources/common/message/`, copied into `wire/schemas/`:
//! Kafka 4.1.2 for the Raft and admin APIs, 4.4.0 (DESIGN.md's reference) for
//! BrokerRegistration, BrokerHeartbeat, UnregisterBroker,
//! AllocateProducerIds, AlterConfigs, IncrementalAlterConfigs,
//! DescribeConfigs, AssignReplicasToDirs and the topic APIs (CreateTopics,
//! DeleteTopics, CreatePartitions, AlterPartition, ElectLeaders), UpdateFeatures, Envelope and
//! the ACL apis, whose response
//! bodies are the same in both (4.4's ApiVersions response is 0-5, harmless
//! while we advertise 0-4).
//!
//! Why: `kafka-protocol` 0.18 calls `Vec::with_capacity(n)` with the element
//! count read from the bytes before it reads one element; a 12-byte response
//! or a control record value can ask for tens of GB, and a refused allocation
//! aborts the process (fuzz findings of `decode_response` and
//! `control_record`, docs/fuzzing.md). Every element takes at least one byte,
//! so a count larger than the bytes left is impossible: this walker follows
//! the schema (fields present at the version, compact or classic encodings by
//! `flexibleVersions`, tagged fields inside their own size) and refuses such
//! counts. It decides nothing else: what it accepts, `kafka-protocol` still
//! decodes and may still reject. `wire/guard.rs` does the same for requests
//! with hand-written tables.

use std::{collections::HashMap, sync::OnceLock};

use kafka_protocol::messages::ApiKey;
use serde_json::Value;

/// Kafka's schemas of the messages checked here, by their `name`.
const SCHEMAS: &[&str] = &[
    include_str!("schemas/AddRaftVoterResponse.json"),
    include_str!("schemas/AllocateProducerIdsResponse.json"),
    include_str!("schemas/AlterConfigsResponse.json"),
    include_str!("schemas/AssignReplicasToDirsResponse.json"),
    include_str!("schemas/DescribeConfigsResponse.json"),
    include_str!("schemas/IncrementalAlterConfigsResponse.json"),
    include_str!("schemas/ApiVersionsResponse.json"),
    include_str!("schemas/BeginQuorumEpochResponse.json"),
    include_str!("schemas/BrokerHeartbeatResponse.json"),
    include_str!("schemas/BrokerRegistrationResponse.json"),
    include_str!("schemas/ControllerRegistrationResponse.json"),
    include_str!("schemas/DescribeClusterResponse.json"),
    include_str!("schemas/DescribeQuorumResponse.json"),
    include_str!("schemas/EndQuorumEpochResponse.json"),
    include_str!("schemas/EnvelopeResponse.json"),
    include_str!("schemas/CreateAclsResponse.json"),
    include_str!("schemas/DeleteAclsResponse.json"),
    include_str!("schemas/DescribeAclsResponse.json"),
    include_str!("schemas/FetchResponse.json"),
    include_str!("schemas/FetchSnapshotResponse.json"),
    include_str!("schemas/RemoveRaftVoterResponse.json"),
    include_str!("schemas/UnregisterBrokerResponse.json"),
    include_str!("schemas/UpdateRaftVoterResponse.json"),
    include_str!("schemas/UpdateFeaturesResponse.json"),
    include_str!("schemas/VoteResponse.json"),
    include_str!("schemas/CreateTopicsResponse.json"),
    include_str!("schemas/DeleteTopicsResponse.json"),
    include_str!("schemas/CreatePartitionsResponse.json"),
    include_str!("schemas/AlterPartitionResponse.json"),
    include_str!("schemas/ElectLeadersResponse.json"),
    include_str!("schemas/KRaftVersionRecord.json"),
    include_str!("schemas/LeaderChangeMessage.json"),
    include_str!("schemas/SnapshotFooterRecord.json"),
    include_str!("schemas/SnapshotHeaderRecord.json"),
    include_str!("schemas/VotersRecord.json"),
];

/// An inclusive version range; empty when `lo > hi` (`"none"`).
#[derive(Debug, Clone, Copy)]
struct Versions {
    lo: i16,
    hi: i16,
}

impl Versions {
    fn contains(self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }

    /// Kafka's syntax: `"none"`, `"N"`, `"N+"`, `"N-M"`.
    fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let num = |t: &str| {
            t.trim()
                .parse::<i16>()
                .map_err(|_| format!("bad version range {s:?}"))
        };
        Ok(if s == "none" {
            Versions { lo: 1, hi: 0 }
        } else if let Some(lo) = s.strip_suffix('+') {
            Versions {
                lo: num(lo)?,
                hi: i16::MAX,
            }
        } else if let Some((lo, hi)) = s.split_once('-') {
            Versions {
                lo: num(lo)?,
                hi: num(hi)?,
            }
        } else {
            let v = num(s)?;
            Versions { lo: v, hi: v }
        })
    }
}

#[derive(Debug)]
enum Kind {
    /// A fixed-size value of this many bytes.
    Fixed(usize),
    /// A string (nullable or not).
    Str,
    /// Bytes or records (nullable or not).
    Bytes,
    /// An array of these.
    Array(Box<Kind>),
    /// A struct.
    Struct(Vec<FieldDef>),
}

#[derive(Debug)]
struct FieldDef {
    kind: Kind,
    versions: Versions,
    /// The tag and the versions in which the field is tagged.
    tag: Option<(u32, Versions)>,
}

#[derive(Debug)]
struct Message {
    flexible: Versions,
    fields: Vec<FieldDef>,
}

/// Kafka's JSON has `//` comment lines (the licence, notes on versions).
fn strip_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn fields_of(
    list: Option<&Value>,
    common: &HashMap<String, &Value>,
) -> Result<Vec<FieldDef>, String> {
    let Some(list) = list else {
        return Ok(Vec::new());
    };
    let list = list.as_array().ok_or("fields is not an array")?;
    list.iter().map(|f| field(f, common)).collect()
}

fn kind(ty: &str, field: &Value, common: &HashMap<String, &Value>) -> Result<Kind, String> {
    Ok(match ty {
        "int8" | "bool" => Kind::Fixed(1),
        "int16" | "uint16" => Kind::Fixed(2),
        "int32" | "uint32" | "float32" => Kind::Fixed(4),
        "int64" | "float64" => Kind::Fixed(8),
        "uuid" => Kind::Fixed(16),
        "string" => Kind::Str,
        "bytes" | "records" => Kind::Bytes,
        _ => {
            if let Some(element) = ty.strip_prefix("[]") {
                return Ok(Kind::Array(Box::new(kind(element, field, common)?)));
            }
            let fields = match field.get("fields") {
                Some(inline) => fields_of(Some(inline), common)?,
                None => {
                    let shared = common
                        .get(ty)
                        .ok_or_else(|| format!("unknown type {ty:?}"))?;
                    fields_of(shared.get("fields"), common)?
                }
            };
            Kind::Struct(fields)
        }
    })
}

fn field(f: &Value, common: &HashMap<String, &Value>) -> Result<FieldDef, String> {
    let ty = str_of(f, "type").ok_or("a field without a type")?;
    let versions = Versions::parse(str_of(f, "versions").ok_or("a field without versions")?)?;
    let tag = match (
        f.get("tag").and_then(Value::as_u64),
        str_of(f, "taggedVersions"),
    ) {
        (Some(tag), Some(tv)) => Some((
            u32::try_from(tag).map_err(|_| "tag out of range")?,
            Versions::parse(tv)?,
        )),
        _ => None,
    };
    Ok(FieldDef {
        kind: kind(ty, f, common)?,
        versions,
        tag,
    })
}

fn message(text: &str) -> Result<(String, Message), String> {
    let json: Value = serde_json::from_str(&strip_comments(text)).map_err(|e| e.to_string())?;
    let name = str_of(&json, "name").ok_or("a schema without a name")?;
    let common: HashMap<String, &Value> = json
        .get("commonStructs")
        .and_then(Value::as_array)
        .map(|structs| {
            structs
                .iter()
                .filter_map(|s| Some((str_of(s, "name")?.to_owned(), s)))
                .collect()
        })
        .unwrap_or_default();
    let flexible = Versions::parse(str_of(&json, "flexibleVersions").unwrap_or("none"))?;
    let fields = fields_of(json.get("fields"), &common).map_err(|e| format!("{name}: {e}"))?;
    Ok((name.to_owned(), Message { flexible, fields }))
}

fn schemas() -> &'static Result<HashMap<String, Message>, String> {
    static PARSED: OnceLock<Result<HashMap<String, Message>, String>> = OnceLock::new();
    PARSED.get_or_init(|| SCHEMAS.iter().map(|text| message(text)).collect())
}

struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
    version: i16,
    flexible: bool,
}

type Check = Result<(), String>;

impl<'a> Walker<'a> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn skip(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "{what} needs {n} bytes but {} are left",
                self.remaining()
            ));
        }
        let start = self.pos;
        self.pos += n;
        Ok(&self.buf[start..start + n])
    }

    fn int<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.skip(N, what)?);
        Ok(out)
    }

    /// UNSIGNED_VARINT as `kafka-protocol` reads it: at most 5 bytes.
    fn uvarint(&mut self, what: &str) -> Result<u32, String> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let [b] = self.int::<1>(what)?;
            value |= (u32::from(b) & 0x7F).wrapping_shl(i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// A length or count: compact (UNSIGNED_VARINT + 1, 0 for null) in
    /// flexible versions, else INT16 (strings) or INT32 (negative: null).
    fn length(&mut self, classic_i16: bool, what: &str) -> Result<usize, String> {
        Ok(if self.flexible {
            (self.uvarint(what)? as usize).saturating_sub(1)
        } else if classic_i16 {
            usize::try_from(i16::from_be_bytes(self.int::<2>(what)?)).unwrap_or(0)
        } else {
            usize::try_from(i32::from_be_bytes(self.int::<4>(what)?)).unwrap_or(0)
        })
    }

    fn value(&mut self, kind: &Kind) -> Check {
        match kind {
            Kind::Fixed(n) => self.skip(*n, "fixed-size field").map(|_| ()),
            Kind::Str => {
                let n = self.length(true, "string length")?;
                self.skip(n, "string").map(|_| ())
            }
            Kind::Bytes => {
                let n = self.length(false, "bytes length")?;
                self.skip(n, "bytes").map(|_| ())
            }
            Kind::Array(element) => {
                let count = self.length(false, "array length")?;
                let min = match **element {
                    Kind::Fixed(n) => n,
                    _ => 1,
                };
                let left = self.remaining();
                if count.saturating_mul(min) > left {
                    return Err(format!(
                        "array of {count} elements cannot fit in the {left} bytes left"
                    ));
                }
                (0..count).try_for_each(|_| self.value(element))
            }
            Kind::Struct(fields) => self.structure(fields),
        }
    }

    fn structure(&mut self, fields: &[FieldDef]) -> Check {
        let v = self.version;
        let tagged_now =
            |f: &FieldDef| self.flexible && f.tag.is_some_and(|(_, tv)| tv.contains(v));
        let plain: Vec<&FieldDef> = fields
            .iter()
            .filter(|f| f.versions.contains(v) && !tagged_now(f))
            .collect();
        for f in plain {
            self.value(&f.kind)?;
        }
        if !self.flexible {
            return Ok(());
        }
        let tags = self.uvarint("tagged field count")?;
        for _ in 0..tags {
            let tag = self.uvarint("tag")?;
            // Kafka's tags are int32: `kafka-protocol` reads 0xffffffff as
            // -1 and then leaves that field out when it encodes.
            if i32::try_from(tag).is_err() {
                return Err(format!("tag {tag} is not a valid int32"));
            }
            let size = self.uvarint("tagged field size")? as usize;
            let known = fields.iter().find(|f| {
                f.tag
                    .is_some_and(|(t, tv)| t == tag && tv.contains(v) && f.versions.contains(v))
            });
            match known {
                // `kafka-protocol` decodes a tag it knows from the bytes that
                // follow, whatever size the field announces: walk it the same
                // way, and refuse a size that disagrees (Kafka would read
                // `size` bytes, so both readings agree on what is accepted).
                Some(known) => {
                    let start = self.pos;
                    self.value(&known.kind)?;
                    if self.pos - start != size {
                        return Err(format!(
                            "tagged field {tag} announces {size} bytes but holds {}",
                            self.pos - start
                        ));
                    }
                }
                None => {
                    self.skip(size, "tagged field")?;
                }
            }
        }
        Ok(())
    }
}

/// Checks that no array in `body`, the message `name` (Kafka's schema name,
/// e.g. `VotersRecord`, `FetchResponse`) at `version`, announces more
/// elements than the bytes left could hold. Errors: a lower-case reason; a
/// name without a schema here is refused (its decoder is unchecked).
pub fn check_message(name: &str, version: i16, body: &[u8]) -> Result<(), String> {
    let schemas = schemas().as_ref().map_err(|e| format!("schemas: {e}"))?;
    let message = schemas
        .get(name)
        .ok_or_else(|| format!("no schema for {name}"))?;
    let mut walker = Walker {
        buf: body,
        pos: 0,
        version,
        flexible: message.flexible.contains(version),
    };
    walker.structure(&message.fields)
}

/// [`check_message`] for the response body of `api_key` v`api_version`
/// (without its header). Errors: as [`check_message`].
pub fn check_response_body(api_key: ApiKey, api_version: i16, body: &[u8]) -> Result<(), String> {
    check_message(&format!("{api_key:?}Response"), api_version, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SUPPORTED_APIS;

    #[test]
    fn every_schema_parses_and_every_supported_api_has_a_response_schema() {
        let schemas = schemas().as_ref().expect("schemas parse");
        assert_eq!(schemas.len(), SCHEMAS.len());
        for api in SUPPORTED_APIS {
            let name = format!("{:?}Response", api.key);
            assert!(schemas.contains_key(&name), "{name}");
        }
    }

    #[test]
    fn a_count_larger_than_the_bytes_left_is_refused() {
        // VotersRecord v0: version int16, then a compact array announcing
        // 0x7fffffff - 1 voters in three bytes.
        let body = [0u8, 0, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 0];
        let e = check_message("VotersRecord", 0, &body).expect_err("refused");
        assert!(e.contains("cannot fit"), "{e}");
        assert!(check_message("NoSuchRecord", 0, &[]).is_err());
    }

    /// Every captured response seed (`fuzz/seeds/decode_response/`: api
    /// index, version, frame) passes the check and still decodes.
    #[test]
    fn real_responses_pass() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/seeds/decode_response");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).expect("seeds") {
            let data = std::fs::read(entry.expect("entry").path()).expect("seed");
            let [api, version, frame @ ..] = data.as_slice() else {
                continue;
            };
            let api = &SUPPORTED_APIS[usize::from(*api) % SUPPORTED_APIS.len()];
            let span = (api.max_version - api.min_version + 1) as u8;
            let version = api.min_version + i16::from(*version % span);
            crate::wire::decode_response(api.key, version, bytes::Bytes::copy_from_slice(frame))
                .unwrap_or_else(|e| panic!("{:?} v{version}: {e}", api.key));
            seen += 1;
        }
        assert!(seen >= 10, "{seen} seeds");
    }

    /// The `decode_response` fuzz finding (docs/fuzzing.md): a 10-byte
    /// BeginQuorumEpoch v0 response (correlation id 42, error 0, a topics
    /// array of 0x2a2a0000 entries) made `kafka-protocol` reserve 56 GB and
    /// abort the process. It is refused.
    #[test]
    fn a_response_with_an_impossible_array_count_is_refused_not_allocated() {
        let frame = bytes::Bytes::from_static(&[0, 0, 0, 0x2a, 0, 0, 0x2a, 0x2a, 0, 0]);
        let e =
            crate::wire::decode_response(ApiKey::BeginQuorumEpoch, 0, frame).expect_err("refused");
        assert!(e.to_string().contains("cannot fit"), "{e}");
    }

    /// A `decode_response` finding once counts were checked: `kafka-protocol`
    /// decodes a tagged field it knows (here a Fetch v18 partition's
    /// CurrentLeader) from the bytes that follow, ignoring the size the field
    /// announces, so a size larger than the value made it read an
    /// AbortedTransactions count from bytes the check had skipped (a 10 GB
    /// allocation). A known tagged field whose size disagrees with its value
    /// is refused.
    #[test]
    fn a_known_tagged_field_whose_size_disagrees_with_its_value_is_refused() {
        let hex = concat!(
            "000e0000002a000000000000000000000002000000002a00000000030303030303030303",
            "030303030303030303030303030303030303030303030303030303030303030303030303",
            "030303030303030303030303030303030303030303030303030303032303030303030303",
            "00002a00690100007f00000001002a0701002a07ffffff0000040000002a5d007d000003",
            "0303030303030303030303030302010303030202022ab3ffffff0000040000002a5d007d",
            "000003030303030303030303030303030201030303020202022202020202020202020202",
            "020202020202020202020202020200000000000000020000000000000002000000002a00",
            "00000000000005005d0202020202020202020202696e743802020202020202fd0202007f",
            "0202025d020202020202020202020202930000100d2a0004000000080808080808380202",
            "02020202020200000000000000020000000000000002000000002a000000000000020202",
            "020200000100",
        );
        let data: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        // The fuzz target's layout: api index, version, frame.
        let api = &SUPPORTED_APIS[usize::from(data[0]) % SUPPORTED_APIS.len()];
        let span = (api.max_version - api.min_version + 1) as u8;
        let version = api.min_version + i16::from(data[1] % span);
        assert_eq!((api.key, version), (ApiKey::Fetch, 18));
        let frame = bytes::Bytes::copy_from_slice(&data[2..]);
        let e = crate::wire::decode_response(api.key, version, frame).expect_err("refused");
        assert!(e.to_string().contains("announces"), "{e}");
    }
}
