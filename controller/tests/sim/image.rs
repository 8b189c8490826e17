//! What the quorum-controller simulations read back from a node: its
//! committed metadata image.

use kraft_controller::{
    log::ReplicatedLog,
    metadata::{image::MetadataImage, records::FramedRecord},
    record::{DecodedBatch, iter_batches},
};

use super::Sim;

/// Node `id`'s committed image: its log's metadata records below its high
/// watermark, in offset order.
pub fn committed_image(sim: &Sim, id: i32) -> MetadataImage {
    let engine = sim.engine(id).expect("node is up");
    let hwm = engine.high_watermark().unwrap_or(0);
    let log = engine.log();
    let info = log
        .read(log.start_offset(), usize::MAX)
        .expect("the log reads");
    let mut image = MetadataImage::default();
    for item in iter_batches(&info.records, false) {
        let (header, bytes) = item.expect("a batch");
        if header.is_control() || header.last_offset() >= hwm {
            continue;
        }
        let batch = DecodedBatch::decode(bytes).expect("decodes");
        for r in &batch.records {
            let Some(value) = r.value.as_deref() else {
                continue;
            };
            if FramedRecord::decode(value).is_ok() {
                image.apply_record(r.offset, value).expect("applies");
            }
        }
    }
    image
}
