//! AllocateProducerIds (API 67) as Kafka's `ProducerIdControlManager`: the
//! active controller hands each asking broker the next block of 1,000
//! producer ids and writes a ProducerIdsRecord naming the block after it.
//!
//! The state is the speculative next producer id: the committed image's
//! (`MetadataImage::next_producer_id`, 0 when none was ever handed out, as
//! Kafka's `ProducerIdsBlock.EMPTY` starts at 0) moved past every block
//! this controller handed out since it became active, committed or not, so
//! two requests before a commit get different blocks. Owns the decision; it
//! must not touch the log (the caller appends) and is dropped with the rest
//! of the speculative state when leadership is lost.

use super::cluster_control::{ClusterControl, Decision, Refusal};
use crate::metadata::{image::MetadataImage, records::ProducerIdsRecord};

/// Producer ids in one block (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const PRODUCER_ID_BLOCK_SIZE: i32 = 1_000;

/// A block of producer ids handed to a broker: `start` to
/// `start + len - 1` inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdsBlock {
    /// First producer id of the block.
    pub start: i64,
    /// Number of ids in it ([`PRODUCER_ID_BLOCK_SIZE`]).
    pub len: i32,
}

/// The speculative producer-id state of an active controller (see the
/// module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerIdControl {
    next_producer_id: i64,
}

impl ProducerIdControl {
    /// The state of a controller becoming active over the committed `image`.
    pub fn activate(image: &MetadataImage) -> Self {
        Self {
            next_producer_id: image.next_producer_id().unwrap_or(0),
        }
    }

    /// The first id of the next block to hand out.
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }

    /// Kafka's `generateNextProducerId`: STALE_BROKER_EPOCH (Kafka's
    /// `checkBrokerEpoch` message) unless `broker_epoch` is broker
    /// `broker_id`'s current epoch in `cluster`; UNKNOWN_SERVER_ERROR when
    /// the block would pass `i64::MAX` (Kafka's message); otherwise the
    /// next block and the one ProducerIdsRecord (v0) that names the id
    /// after it. The state moves past the block at once.
    pub fn allocate(
        &mut self,
        cluster: &ClusterControl,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<Decision<ProducerIdsBlock>, Refusal> {
        cluster.check_broker_epoch(broker_id, broker_epoch)?;
        let start = self.next_producer_id;
        if start > i64::MAX - i64::from(PRODUCER_ID_BLOCK_SIZE) {
            return Err((
                kafka_protocol::error::ResponseError::UnknownServerError,
                "Exhausted all producerIds as the next block's end producerId has exceeded \
                 the int64 type limit"
                    .to_owned(),
            ));
        }
        let next = start + i64::from(PRODUCER_ID_BLOCK_SIZE);
        self.next_producer_id = next;
        Ok(Decision {
            records: vec![
                ProducerIdsRecord {
                    broker_id,
                    broker_epoch,
                    next_producer_id: next,
                }
                .encode_framed(),
            ],
            answer: ProducerIdsBlock {
                start,
                len: PRODUCER_ID_BLOCK_SIZE,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::error::ResponseError;

    use super::*;
    use crate::metadata::records::{BrokerEndpoint, FramedRecord, RegisterBrokerRecord};

    /// An image with broker 1 registered at epoch 7 and, if given, a
    /// committed next producer id.
    fn image(next: Option<i64>) -> MetadataImage {
        let mut image = MetadataImage::default();
        let register = RegisterBrokerRecord {
            broker_id: 1,
            is_migrating_zk_broker: false,
            incarnation_id: uuid::Uuid::from_u128(1),
            broker_epoch: 7,
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "b-1".into(),
                port: 9092,
                security_protocol: 0,
            }],
            features: vec![],
            rack: None,
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: vec![],
            cordoned_log_dirs: None,
        };
        image
            .apply_record(7, &register.encode_framed(3))
            .expect("applies");
        if let Some(next) = next {
            let record = ProducerIdsRecord {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: next,
            };
            image
                .apply_record(8, &record.encode_framed())
                .expect("applies");
        }
        image
    }

    fn cluster(image: &MetadataImage) -> ClusterControl {
        ClusterControl::activate("c", image, 9_000, 0)
    }

    fn decoded(bytes: &bytes::Bytes) -> ProducerIdsRecord {
        let framed = FramedRecord::decode(bytes).expect("frame");
        ProducerIdsRecord::decode_message(&framed.message).expect("decodes")
    }

    #[test]
    fn the_first_block_starts_at_zero_and_each_next_one_after_the_last_handed_out() {
        let image = image(None);
        let cluster = cluster(&image);
        let mut pids = ProducerIdControl::activate(&image);
        let first = pids.allocate(&cluster, 1, 7).expect("allocated");
        assert_eq!(
            first.answer,
            ProducerIdsBlock {
                start: 0,
                len: 1000
            }
        );
        assert_eq!(
            decoded(&first.records[0]),
            ProducerIdsRecord {
                broker_id: 1,
                broker_epoch: 7,
                next_producer_id: 1000
            }
        );
        // Not committed yet: the next request still gets another block.
        let second = pids.allocate(&cluster, 1, 7).expect("allocated");
        assert_eq!(second.answer.start, 1000);
        assert_eq!(decoded(&second.records[0]).next_producer_id, 2000);
    }

    #[test]
    fn a_controller_activated_over_a_committed_record_continues_after_it() {
        let image = image(Some(5000));
        let mut pids = ProducerIdControl::activate(&image);
        let block = pids.allocate(&cluster(&image), 1, 7).expect("allocated");
        assert_eq!(block.answer.start, 5000);
    }

    #[test]
    fn a_wrong_or_unknown_broker_epoch_is_stale_and_hands_out_nothing() {
        let image = image(None);
        let cluster = cluster(&image);
        let mut pids = ProducerIdControl::activate(&image);
        let (error, message) = pids.allocate(&cluster, 1, 6).expect_err("stale");
        assert_eq!(error, ResponseError::StaleBrokerEpoch);
        assert_eq!(message, "Expected broker epoch 7, but got broker epoch 6");
        let (error, message) = pids.allocate(&cluster, 2, 7).expect_err("unknown");
        assert_eq!(error, ResponseError::StaleBrokerEpoch);
        assert_eq!(message, "No broker registration found for broker id 2");
        assert_eq!(pids.next_producer_id(), 0);
    }

    #[test]
    fn a_block_past_the_int64_limit_is_an_unknown_server_error() {
        let last = i64::MAX - i64::from(PRODUCER_ID_BLOCK_SIZE);
        let image = image(Some(last));
        let cluster = cluster(&image);
        let mut pids = ProducerIdControl::activate(&image);
        let block = pids.allocate(&cluster, 1, 7).expect("the last block");
        assert_eq!(block.answer.start, last);
        let (error, message) = pids.allocate(&cluster, 1, 7).expect_err("exhausted");
        assert_eq!(error, ResponseError::UnknownServerError);
        assert!(
            message.starts_with("Exhausted all producerIds"),
            "{message}"
        );
        assert_eq!(pids.next_producer_id(), i64::MAX);
    }
}
