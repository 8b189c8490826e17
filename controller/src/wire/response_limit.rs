//! The largest response frame a client accepts, per request (review S1).
//!
//! `kafka-protocol` 0.18 allocates by the element counts of a body before it
//! reads the elements; `schema_guard` refuses counts the bytes cannot hold,
//! but an element of one byte on the wire may be 30-80 bytes in memory, so a
//! 100 MiB response frame could still cost GBs. A response is therefore
//! refused, and its connection closed, as soon as its size prefix and
//! correlation id are in, if it is larger than its request can need:
//!
//! - Fetch: the larger of the request's `max_bytes` and its partitions'
//!   `partition_max_bytes`, plus [`RESPONSE_OVERHEAD_BYTES`] (Kafka's
//!   `KafkaRaftClient` asks for `MAX_FETCH_SIZE_BYTES` = its batch limit, so
//!   a leader's batch fits as long as `max_batch_bytes` is the same on every
//!   voter, which is the default);
//! - FetchSnapshot: the request's `max_bytes` plus the overhead;
//! - everything else: [`SMALL_RESPONSE_MAX_BYTES`] (1 MiB: a DescribeQuorum
//!   answer of 10,000 observers fits).
//!
//! Never more than `ClientConfig::max_frame_bytes`.

use bytes::BytesMut;
use kafka_protocol::messages::RequestKind;
use tokio_util::codec::Decoder;

use super::{KafkaFrameCodec, WireError, frame::SIZE_PREFIX_BYTES};

/// Room for headers, topic/partition fields, aborted transactions and tagged
/// fields around the records of a Fetch/FetchSnapshot answer: 64 KiB.
pub const RESPONSE_OVERHEAD_BYTES: usize = 64 * 1024;

/// The largest answer to any request but Fetch and FetchSnapshot: 1 MiB.
pub const SMALL_RESPONSE_MAX_BYTES: usize = 1024 * 1024;

/// The largest response payload (bytes, without the size prefix) accepted for
/// `request`, at most `ceiling`.
pub fn max_response_bytes(request: &RequestKind, ceiling: usize) -> usize {
    let asked = |bytes: i32| usize::try_from(bytes.max(0)).unwrap_or(0);
    let limit = match request {
        RequestKind::Fetch(r) => {
            let partition = r
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .map(|p| asked(p.partition_max_bytes))
                .max()
                .unwrap_or(0);
            asked(r.max_bytes)
                .max(partition)
                .saturating_add(RESPONSE_OVERHEAD_BYTES)
        }
        RequestKind::FetchSnapshot(r) => asked(r.max_bytes).saturating_add(RESPONSE_OVERHEAD_BYTES),
        _ => SMALL_RESPONSE_MAX_BYTES,
    };
    limit.min(ceiling)
}

/// [`KafkaFrameCodec`] for the client's read side whose limit is the one of
/// the request a frame answers: once the size prefix and the correlation id
/// (the first 4 bytes of every response header) are in, `limit_of(id)` gives
/// that request's limit ([`max_response_bytes`]), or `None` for an id not in
/// flight, which gets `fallback` (the reader closes the connection on such a
/// frame anyway). Errors: [`WireError::FrameTooLarge`] above the limit, as
/// [`KafkaFrameCodec`].
pub struct ResponseFrameCodec<F> {
    inner: KafkaFrameCodec,
    limit_of: F,
    fallback: usize,
}

impl<F> std::fmt::Debug for ResponseFrameCodec<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFrameCodec")
            .field("fallback", &self.fallback)
            .finish_non_exhaustive()
    }
}

impl<F: FnMut(i32) -> Option<usize>> ResponseFrameCodec<F> {
    /// A codec that looks each frame's limit up with `limit_of`.
    pub fn new(limit_of: F, fallback: usize) -> Self {
        Self {
            inner: KafkaFrameCodec::new(fallback),
            limit_of,
            fallback,
        }
    }
}

impl<F: FnMut(i32) -> Option<usize>> Decoder for ResponseFrameCodec<F> {
    type Item = BytesMut;
    type Error = WireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, WireError> {
        if src.len() < SIZE_PREFIX_BYTES + 4 {
            // Up to 8 bytes buffered: nothing to refuse yet.
            return Ok(None);
        }
        let id = i32::from_be_bytes([src[4], src[5], src[6], src[7]]);
        let limit = (self.limit_of)(id).unwrap_or(self.fallback);
        self.inner.set_max_frame_bytes(limit);
        self.inner.decode(src)
    }
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;
    use kafka_protocol::messages::{
        ApiVersionsRequest, FetchRequest, FetchSnapshotRequest,
        fetch_request::{FetchPartition, FetchTopic},
    };

    use super::*;

    const CEILING: usize = 100 * 1024 * 1024;

    #[test]
    fn fetch_gets_what_it_asked_plus_overhead_others_one_mib() {
        let fetch = FetchRequest::default()
            .with_max_bytes(8 * 1024 * 1024)
            .with_topics(vec![FetchTopic::default().with_partitions(vec![
                FetchPartition::default().with_partition_max_bytes(1024),
            ])]);
        assert_eq!(
            max_response_bytes(&RequestKind::Fetch(fetch), CEILING),
            8 * 1024 * 1024 + RESPONSE_OVERHEAD_BYTES
        );
        let snapshot = FetchSnapshotRequest::default().with_max_bytes(i32::MAX);
        assert_eq!(
            max_response_bytes(&RequestKind::FetchSnapshot(snapshot), CEILING),
            CEILING
        );
        let negative = FetchSnapshotRequest::default().with_max_bytes(-5);
        assert_eq!(
            max_response_bytes(&RequestKind::FetchSnapshot(negative), CEILING),
            RESPONSE_OVERHEAD_BYTES
        );
        let other = RequestKind::ApiVersions(ApiVersionsRequest::default());
        assert_eq!(
            max_response_bytes(&other, CEILING),
            SMALL_RESPONSE_MAX_BYTES
        );
    }

    fn prefix(size: i32, id: i32) -> BytesMut {
        let mut buf = BytesMut::new();
        buf.put_i32(size);
        buf.put_i32(id);
        buf
    }

    #[test]
    fn a_100_mib_answer_to_a_small_request_is_refused_at_its_prefix() {
        // Correlation id 7 is an ApiVersions in flight (1 MiB), 8 a Fetch of
        // 8 MiB; the ceiling is the 100 MiB DEFAULT_MAX_FRAME_BYTES.
        let limit_of = |id| match id {
            7 => Some(SMALL_RESPONSE_MAX_BYTES),
            8 => Some(8 * 1024 * 1024 + RESPONSE_OVERHEAD_BYTES),
            _ => None,
        };
        let mut codec = ResponseFrameCodec::new(limit_of, SMALL_RESPONSE_MAX_BYTES);
        let mut small = prefix(100 * 1024 * 1024, 7);
        assert!(matches!(
            codec.decode(&mut small),
            Err(WireError::FrameTooLarge { max, .. }) if max == SMALL_RESPONSE_MAX_BYTES
        ));
        let mut fetch = prefix(8 * 1024 * 1024, 8);
        assert!(codec.decode(&mut fetch).expect("fits").is_none());
        let mut unknown = prefix(2 * 1024 * 1024, 99);
        assert!(codec.decode(&mut unknown).is_err());
    }

    #[test]
    fn a_whole_small_frame_decodes() {
        let mut codec = ResponseFrameCodec::new(|_| Some(16), 16);
        let mut buf = prefix(6, 3);
        buf.put_u16(0);
        let frame = codec.decode(&mut buf).expect("valid").expect("whole");
        assert_eq!(&frame[..], &[0, 0, 0, 3, 0, 0]);
        // Fewer than 8 bytes: wait.
        let mut short = BytesMut::from(&[0u8, 0, 0, 2][..]);
        assert!(codec.decode(&mut short).expect("valid").is_none());
    }

    /// Through a real [`Connection`]: a peer answering ApiVersions with a
    /// 2 MiB frame gets the connection closed before the body is read
    /// (before this limit the frame was read whole and only failed to decode).
    #[tokio::test]
    async fn a_connection_closes_on_an_oversized_answer() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        use crate::wire::client::{ClientConfig, ClientError, Connection};

        let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let conn = Connection::from_stream("peer:9093", ours, ClientConfig::default());
        let peer = tokio::spawn(async move {
            let mut size = [0u8; 4];
            theirs.read_exact(&mut size).await.expect("request size");
            let mut request = vec![0u8; u32::from_be_bytes(size) as usize];
            theirs.read_exact(&mut request).await.expect("request");
            // Request header v1/v2: api key, version, then correlation id.
            let id = &request[4..8];
            let mut answer = (2 * 1024 * 1024i32).to_be_bytes().to_vec();
            answer.extend_from_slice(id);
            theirs.write_all(&answer).await.expect("answer prefix");
            // Hold the stream open: the frame never completes.
            let mut rest = Vec::new();
            let _ = theirs.read_to_end(&mut rest).await;
        });
        let result = conn
            .call(3, RequestKind::ApiVersions(ApiVersionsRequest::default()))
            .await;
        match result {
            Err(ClientError::Disconnected { reason, .. }) => {
                assert!(reason.contains("1048576"), "{reason}")
            }
            other => panic!("expected a close for the frame size, got {other:?}"),
        }
        drop(conn);
        peer.abort();
    }
}
