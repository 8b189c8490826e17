//! `meta.properties` (Kafka's `MetaProperties`, version 1). Kafka's text
//! form of a uuid lives in `kraft_common::kafka_uuid`.
//!
//! The file is a Java properties file as `Properties.store(writer, "")`
//! writes it: an empty comment line, a comment with the date
//! (`EEE MMM dd HH:mm:ss zzz yyyy`), then `key=value` lines. We write the
//! keys sorted, so the bytes depend on the values and the date only:
//!
//! ```text
//! #
//! #Mon Nov 30 00:00:00 UTC 2026
//! cluster.id=MkU3OEVBNTcwNTJENDM2Qg
//! directory.id=AAAAAAAAAAAAAAAAAAAAAw
//! node.id=1
//! version=1
//! ```
//!
//! Owns the format and the atomic replacement of the file; it must not decide
//! whether a directory may be (re)formatted: `format` does.

use std::{collections::BTreeMap, path::Path};

use kraft_common::kafka_uuid;
/// Kafka's uuid text form, defined once in `kraft_common::kafka_uuid`
/// (re-exported here under the names the log and the CLI have used).
pub use kraft_common::kafka_uuid::{
    is_reserved_directory_id, random as random_kafka_uuid, to_string as uuid_to_kafka_string,
};
use uuid::Uuid;

use super::{LogError, Result, fs::io_err, fs::write_atomically};

/// File name in the root of `metadata.log.dir`.
pub const META_PROPERTIES_FILE: &str = "meta.properties";

/// Kafka's `Uuid.fromString` as Java's URL decoder reads it
/// ([`kafka_uuid::parse`]); `None` if Kafka would refuse the text.
pub fn parse_kafka_uuid(text: &str) -> Option<Uuid> {
    kafka_uuid::parse(text).ok()
}

/// Validates a cluster id as Kafka does (it must parse with
/// [`parse_kafka_uuid`]) and returns it unchanged: Kafka keeps the exact text
/// given to `kafka-storage format` in `meta.properties` and sends that text
/// in every ClusterId field, so two spellings of one uuid are two different
/// clusters. `None` if Kafka would refuse it.
pub fn validate_cluster_id(text: &str) -> Option<String> {
    parse_kafka_uuid(text).map(|_| text.to_owned())
}

/// The keys of a version 1 file (Kafka's `MetaProperties`).
const KNOWN_KEYS: [&str; 4] = ["version", "cluster.id", "node.id", "directory.id"];

/// The identity of a formatted log directory (version 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    /// `cluster.id`, exactly as given to `format` (Kafka uuid text, checked
    /// by [`validate_cluster_id`], never re-encoded).
    pub cluster_id: String,
    /// `node.id`.
    pub node_id: i32,
    /// `directory.id` (KIP-858, KIP-853).
    pub directory_id: Uuid,
}

impl MetaProperties {
    /// The file's bytes, with `date` as the second comment line (Java's
    /// `Date.toString` form; see [`java_date_string`]).
    pub fn encode(&self, date: &str) -> String {
        format!(
            "#\n#{date}\ncluster.id={}\ndirectory.id={}\nnode.id={}\nversion=1\n",
            self.cluster_id,
            uuid_to_kafka_string(self.directory_id),
            self.node_id
        )
    }

    /// Parses the file's text.
    ///
    /// Errors: [`LogError::Corrupt`] naming the missing or bad property
    /// (a version other than 1 included).
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let props = parse_properties(text);
        let bad = |reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        // A missing key says what the file holds instead: a damaged key
        // reads as an unknown one, an emptied file as nothing at all.
        let found = if text.trim().is_empty() {
            format!(" (the file is empty: {} bytes)", text.len())
        } else {
            match props.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
                Some(unknown) => format!(
                    " (it has an unknown line starting {:?}: the file is damaged)",
                    unknown.chars().take(40).collect::<String>()
                ),
                None => String::new(),
            }
        };
        let get = |key: &str| {
            props
                .get(key)
                .map(String::as_str)
                .ok_or_else(|| bad(format!("no {key} property{found}")))
        };
        let version = get("version")?;
        if version != "1" {
            return Err(bad(format!(
                "version={version}, only version=1 is supported"
            )));
        }
        let cluster = get("cluster.id")?;
        let cluster_id = validate_cluster_id(cluster)
            .ok_or_else(|| bad(format!("cluster.id={cluster} is not a uuid")))?;
        let node = get("node.id")?;
        let node_id = node
            .parse()
            .map_err(|_| bad(format!("node.id={node} is not an integer")))?;
        let dir = get("directory.id")?;
        let directory_id = parse_kafka_uuid(dir)
            .ok_or_else(|| bad(format!("directory.id={dir} is not a uuid")))?;
        Ok(Self {
            cluster_id,
            node_id,
            directory_id,
        })
    }

    /// Reads `<log_dir>/meta.properties`; `None` if absent.
    ///
    /// Errors: [`LogError::Corrupt`] (bytes that are not UTF-8 text are
    /// named by position), [`LogError::Io`].
    pub fn read(log_dir: &Path) -> Result<Option<Self>> {
        let path = log_dir.join(META_PROPERTIES_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("reading", &path)(e)),
        };
        let text = String::from_utf8(bytes).map_err(|e| LogError::Corrupt {
            path: path.clone(),
            reason: format!(
                "byte {} is not UTF-8 text: the file is damaged",
                e.utf8_error().valid_up_to()
            ),
        })?;
        Self::parse(&path, &text).map(Some)
    }

    /// Replaces `<log_dir>/meta.properties` atomically, dated now.
    ///
    /// Errors: [`LogError::Io`].
    pub fn write(&self, log_dir: &Path) -> Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        write_atomically(
            &log_dir.join(META_PROPERTIES_FILE),
            self.encode(&java_date_string(now)).as_bytes(),
        )
    }
}

/// Parses Java properties text: `key=value` or `key: value` lines; `#` and `!`
/// start comments. (Line continuations and escapes are not used by Kafka's
/// meta.properties and are not supported.)
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(['=', ':']).unwrap_or(line.len());
        let key = line[..split].trim();
        let value = line.get(split + 1..).unwrap_or("").trim();
        out.insert(key.to_string(), value.to_string());
    }
    out
}

/// Java's `Date.toString` in UTC for `secs` since the Unix epoch:
/// `Mon Nov 30 00:21:33 UTC 2026`.
pub fn java_date_string(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The uuid text tests moved with the code to `kraft_common::kafka_uuid`.

    /// Interop (docs/interop.md, mismatch 1): the cluster id is kept
    /// byte-for-byte, as Kafka's `MetaProperties` keeps the string.
    #[test]
    fn a_non_canonical_cluster_id_is_kept_byte_for_byte_in_meta_properties() {
        assert_eq!(
            validate_cluster_id("MkU3OEVBNTcwNTJENDM2Qk").as_deref(),
            Some("MkU3OEVBNTcwNTJENDM2Qk")
        );
        assert_eq!(validate_cluster_id("not a cluster id"), None);
        let props = MetaProperties {
            cluster_id: "MkU3OEVBNTcwNTJENDM2Qk".to_owned(),
            node_id: 1,
            directory_id: Uuid::from_u128(0x0102),
        };
        let text = props.encode("Mon Nov 30 00:21:33 UTC 2026");
        assert!(
            text.contains("\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"),
            "{text}"
        );
        let parsed = MetaProperties::parse(Path::new("meta.properties"), &text).expect("parses");
        assert_eq!(parsed.cluster_id, "MkU3OEVBNTcwNTJENDM2Qk");
    }

    /// Issue 21: any damage used to read "no directory.id property".
    #[test]
    fn a_damaged_meta_properties_is_refused_naming_what_the_file_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let props = MetaProperties {
            cluster_id: "MkU3OEVBNTcwNTJENDM2Qg".to_owned(),
            node_id: 1,
            directory_id: Uuid::from_u128(0x0102),
        };
        let good = props.encode("Mon Nov 30 00:21:33 UTC 2026");
        let path = dir.path().join(META_PROPERTIES_FILE);
        let error_for = |bytes: &[u8]| {
            std::fs::write(&path, bytes).expect("write");
            MetaProperties::read(dir.path())
                .expect_err("damaged")
                .to_string()
        };
        // One flipped bit in a key.
        let flipped = good.replace("directory.id", "directorx.id");
        assert!(
            error_for(flipped.as_bytes()).ends_with(
                "no directory.id property (it has an unknown line starting \"directorx.id\": the file is damaged)"
            ),
            "{}",
            error_for(flipped.as_bytes())
        );
        // Zero-filled, emptied, not text.
        assert!(
            error_for(&vec![0u8; good.len()]).contains("unknown line starting \"\\0\\0"),
            "{}",
            error_for(&vec![0u8; good.len()])
        );
        assert!(
            error_for(b"").ends_with("no version property (the file is empty: 0 bytes)"),
            "{}",
            error_for(b"")
        );
        let mut not_text = good.into_bytes();
        not_text[3] = 0xff;
        assert!(
            error_for(&not_text).ends_with("byte 3 is not UTF-8 text: the file is damaged"),
            "{}",
            error_for(&not_text)
        );
    }

    #[test]
    fn java_dates_are_formatted_as_date_to_string_in_utc() {
        assert_eq!(java_date_string(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(
            java_date_string(1_795_998_093),
            "Mon Nov 30 00:21:33 UTC 2026"
        );
    }

    /// Golden bytes of meta.properties, line by line.
    #[test]
    fn meta_properties_golden_bytes() {
        let props = MetaProperties {
            cluster_id: "MkU3OEVBNTcwNTJENDM2Qg".to_owned(),
            node_id: 1,
            directory_id: Uuid::from_u128(0x0102),
        };
        let text = props.encode("Mon Nov 30 00:21:33 UTC 2026");
        let expected = concat!(
            "#\n",                                   // Properties.store(_, ""): the empty comment
            "#Mon Nov 30 00:21:33 UTC 2026\n",       // the date comment Java always writes
            "cluster.id=MkU3OEVBNTcwNTJENDM2Qg\n",   // 22-char Kafka uuid text
            "directory.id=AAAAAAAAAAAAAAAAAAABAg\n", // uuid 0x...0102
            "node.id=1\n",                           // decimal int32
            "version=1\n",                           // MetaPropertiesVersion.V1 (KRaft)
        );
        assert_eq!(text, expected);
        assert_eq!(
            MetaProperties::parse(Path::new("meta.properties"), &text).expect("parses"),
            props
        );
    }
}
