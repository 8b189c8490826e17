//! FeatureLevelRecord (api key 12): a finalized feature level, as the
//! bootstrap records and `metadata.version` changes write it.
//!
//! Owns its byte layout; it must not interpret the levels.

use bytes::{BufMut, Bytes, BytesMut};

use super::{FEATURE_LEVEL_RECORD_API_KEY, FRAME_VERSION, Reader, RecordsError, put_uvarint};

/// FeatureLevelRecord (api key 12, version 0): a finalized feature level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureLevelRecord {
    /// Feature name, e.g. `metadata.version`.
    pub name: String,
    /// Finalized level.
    pub feature_level: i16,
}

impl FeatureLevelRecord {
    /// The record value as stored in a batch: frame version 1, api key 12,
    /// version 0, then the message.
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, FEATURE_LEVEL_RECORD_API_KEY);
        put_uvarint(&mut buf, 0);
        // Compact string: length + 1 as unsigned varint, then UTF-8 bytes.
        put_uvarint(&mut buf, self.name.len() as u32 + 1);
        buf.put_slice(self.name.as_bytes());
        buf.put_i16(self.feature_level);
        // Tagged fields: none.
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part (after the frame) at version 0; tagged
    /// fields are skipped.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = Reader {
            bytes: message,
            position: 0,
        };
        let name = r.compact_string()?;
        let feature_level = r.i16()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self {
            name,
            feature_level,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::*;

    /// Golden bytes of a framed FeatureLevelRecord, field by field.
    #[test]
    fn a_feature_level_record_is_framed_as_kafka_frames_it() {
        let record = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        };
        let mut expected = vec![
            0x01, // frame version 1 (uvarint)
            0x0c, // api key 12: FEATURE_LEVEL_RECORD (uvarint)
            0x00, // record version 0 (uvarint)
            0x11, // Name: compact string, length 16 + 1 (uvarint)
        ];
        expected.extend_from_slice(b"metadata.version"); // Name bytes
        expected.extend_from_slice(&[0x00, 0x1b]); // FeatureLevel int16 = 27 (4.1-IV1)
        expected.push(0x00); // no tagged fields
        let bytes = record.encode_framed();
        assert_eq!(&bytes[..], &expected[..]);
        let framed = FramedRecord::decode(&bytes).expect("frame");
        assert_eq!((framed.api_key, framed.version), (12, 0));
        assert_eq!(
            FeatureLevelRecord::decode_message(&framed.message).expect("message"),
            record
        );
    }
}
