//! Fuzz target: any bytes, as the key and value of a KRaft control record
//! (LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion, Voters) in a
//! control batch from a leader or a snapshot, must decode or fail, never
//! panic; a decoded record encodes and decodes to the same value, and a
//! Voters record becomes a voter set (what the engine does with it).
//! Layout: the first byte is the key length (at most 8), then the key, then
//! the value.

#![no_main]

use kraft_controller::{
    raft::VoterSet,
    record::{ControlRecord, DecodedBatch, encode_control_batch},
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [key_len, rest @ ..] = data else {
        return;
    };
    let key_len = usize::from(*key_len % 9).min(rest.len());
    let (key, value) = rest.split_at(key_len);
    let _ = ControlRecord::decode_type(Some(key), 0);
    let Ok(record) = ControlRecord::decode(Some(key), Some(value), 0) else {
        return;
    };
    if let ControlRecord::Voters(v) = &record {
        let _ = VoterSet::from_record(v);
    }
    let encoded_value = record
        .encode_value()
        .expect("a decoded control record encodes");
    let again = ControlRecord::decode(Some(&record.encode_key()), Some(&encoded_value), 0)
        .expect("an encoded control record decodes");
    assert_eq!(again, record);
    // And inside a control batch, as a leader writes it.
    let batch = encode_control_batch(7, 3, 0, std::slice::from_ref(&record))
        .expect("a decoded control record goes into a batch");
    let decoded = DecodedBatch::decode(&batch).expect("our own batch decodes");
    assert_eq!(
        decoded.control_records().expect("control records"),
        vec![record]
    );
});
