//! Fuzz target: any bytes, as RecordBatch v2 bytes a leader sends in a Fetch
//! response or a segment holds (`record`: header view, CRC check, batch
//! iteration, record decoding), must give batches or an error, never a panic.
//! What the iterator yields must hold: each batch lies inside the input, its
//! header parses again from its own bytes, and with the CRC checked it
//! decodes record by record to offsets inside the header's range.

#![no_main]

use kraft_controller::record::{BatchHeader, DecodedBatch, iter_batches};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = BatchHeader::parse(data) {
        let _ = header.verify_crc(data);
        let _ = header.last_offset();
        let _ = header.next_offset();
    }
    for verify_crc in [false, true] {
        let mut end = 0usize;
        for item in iter_batches(data, verify_crc) {
            let Ok((header, bytes)) = item else {
                break;
            };
            assert_eq!(bytes.len(), header.size_in_bytes());
            end += bytes.len();
            assert!(end <= data.len(), "a batch beyond the input");
            assert_eq!(BatchHeader::parse(bytes).ok(), Some(header));
            if !verify_crc {
                continue;
            }
            let Ok(decoded) = DecodedBatch::decode(bytes) else {
                continue;
            };
            assert_eq!(decoded.header, header);
            if decoded.header.is_control() {
                let _ = decoded.control_records();
            }
        }
    }
});
