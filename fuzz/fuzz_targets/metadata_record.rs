//! Fuzz target: any bytes, as the value of a committed metadata record (what
//! `metadata::image` applies from the log or a snapshot: the frame, then
//! FeatureLevelRecord, RegisterControllerRecord, UnregisterControllerRecord (29),
//! ConfigRecord,
//! BeginTransactionRecord, NoOpRecord or any other type kept as unknown), must
//! apply or fail, never panic. A failed record leaves the image unchanged; a
//! decoded record encodes and decodes to the same value. The first 8 bytes
//! are the record's offset (big-endian), the rest its value.

#![no_main]

use kraft_controller::metadata::{
    image::MetadataImage,
    records::{
        BEGIN_TRANSACTION_RECORD_API_KEY, CONFIG_RECORD_API_KEY, ConfigRecord,
        FEATURE_LEVEL_RECORD_API_KEY, FeatureLevelRecord, FramedRecord,
        REGISTER_CONTROLLER_RECORD_API_KEY, RegisterControllerRecord,
        UNREGISTER_CONTROLLER_RECORD_API_KEY, UnregisterControllerRecord, begin_transaction_name,
    },
};
use libfuzzer_sys::fuzz_target;

fn framed_message(value: &[u8]) -> Vec<u8> {
    FramedRecord::decode(value)
        .expect("an encoded record has a frame")
        .message
        .to_vec()
}

fuzz_target!(|data: &[u8]| {
    let Some((offset, value)) = data.split_first_chunk::<8>() else {
        return;
    };
    let offset = i64::from_be_bytes(*offset);
    let mut image = MetadataImage::default();
    let before = format!("{image:?}");
    if image.apply_record(offset, value).is_err() {
        assert_eq!(
            format!("{image:?}"),
            before,
            "a failed record changed the image"
        );
    }
    let Ok(framed) = FramedRecord::decode(value) else {
        return;
    };
    assert_eq!(
        FramedRecord::decode(&framed.encode()).ok(),
        Some(framed.clone())
    );
    let message = &framed.message[..];
    match framed.api_key {
        FEATURE_LEVEL_RECORD_API_KEY => {
            if let Ok(r) = FeatureLevelRecord::decode_message(message) {
                let again = FeatureLevelRecord::decode_message(&framed_message(&r.encode_framed()));
                assert_eq!(again.ok(), Some(r));
            }
        }
        REGISTER_CONTROLLER_RECORD_API_KEY => {
            if let Ok(r) = RegisterControllerRecord::decode_message(message) {
                let again =
                    RegisterControllerRecord::decode_message(&framed_message(&r.encode_framed()));
                assert_eq!(again.ok(), Some(r));
            }
        }
        UNREGISTER_CONTROLLER_RECORD_API_KEY => {
            if let Ok(r) = UnregisterControllerRecord::decode_message(message) {
                let again =
                    UnregisterControllerRecord::decode_message(&framed_message(&r.encode_framed()));
                assert_eq!(again.ok(), Some(r));
            }
        }
        CONFIG_RECORD_API_KEY => {
            if let Ok(r) = ConfigRecord::decode_message(message) {
                let again = ConfigRecord::decode_message(&framed_message(&r.encode_framed()));
                assert_eq!(again.ok(), Some(r));
            }
        }
        BEGIN_TRANSACTION_RECORD_API_KEY => {
            let _ = begin_transaction_name(message);
        }
        _ => {}
    }
});
