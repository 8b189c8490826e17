//! Fetch (1) served, as Kafka's `handleFetchRequest`: validate the cluster
//! id and the epoch, then the offset against the log (a diverging epoch, or
//! the snapshot to fetch instead), record the replica's progress, and answer
//! with records or park the request (an empty fetch whose high watermark is
//! below the leader's is answered at once with linger 0, KIP-1166, and
//! within the linger otherwise, decisions D22). A [`FetchHandler`]
//! borrows the core, the output, the epoch's view and, on a leader, the
//! leader state; any other role answers NOT_LEADER_OR_FOLLOWER. Imports the
//! leaves and the leader state only. Must not append or truncate the log.

use kafka_protocol::{ResponseError, messages::FetchRequest};

use super::{
    RaftResponse, ReplyHandle, Result,
    core::{Core, EpochView},
    leader::{LeaderState, ParkedFetch, fetch_response, parked_wait},
    output::Output,
    voters::ReplicaKey,
};
use crate::log::{OffsetAndEpoch, ReplicatedLog};

/// One Fetch request being served (see the module doc).
pub(crate) struct FetchHandler<'a, L: ReplicatedLog> {
    pub(crate) core: &'a mut Core<L>,
    pub(crate) out: &'a mut Output,
    pub(crate) view: &'a EpochView,
    pub(crate) leader: Option<&'a mut LeaderState>,
}

impl<L: ReplicatedLog> FetchHandler<'_, L> {
    fn reply(
        &mut self,
        handle: ReplyHandle,
        top_error: Option<ResponseError>,
        partition_error: Option<ResponseError>,
        diverging: Option<OffsetAndEpoch>,
        snapshot: Option<OffsetAndEpoch>,
    ) {
        let resp = fetch_response(
            self.core,
            self.view,
            top_error,
            partition_error,
            None,
            diverging,
            snapshot,
        );
        self.out.reply(handle, RaftResponse::Fetch(resp));
    }

    /// Serves `r` (see the module doc).
    pub(crate) fn handle(
        mut self,
        handle: ReplyHandle,
        r: FetchRequest,
        now_ms: u64,
    ) -> Result<()> {
        if !self.core.cluster_id_matches(r.cluster_id.as_ref()) {
            self.reply(
                handle,
                Some(ResponseError::InconsistentClusterId),
                None,
                None,
                None,
            );
            return Ok(());
        }
        let Some(p) = r.topics.first().and_then(|t| t.partitions.first()).cloned() else {
            self.reply(
                handle,
                Some(ResponseError::InvalidRequest),
                None,
                None,
                None,
            );
            return Ok(());
        };
        let epoch = self.view.epoch;
        let epoch_error = if p.current_leader_epoch < epoch {
            Some(ResponseError::FencedLeaderEpoch)
        } else if p.current_leader_epoch > epoch {
            Some(ResponseError::UnknownLeaderEpoch)
        } else if self.leader.is_none() {
            Some(ResponseError::NotLeaderOrFollower)
        } else if p.fetch_offset < 0
            || p.last_fetched_epoch < 0
            || p.last_fetched_epoch > p.current_leader_epoch
        {
            Some(ResponseError::InvalidRequest)
        } else {
            None
        };
        if let Some(e) = epoch_error {
            self.reply(handle, None, Some(e), None, None);
            return Ok(());
        }
        // Offset validation (Kafka's `ReplicatedLog.validateOffsetAndEpoch`):
        // the latest snapshot for a fetch below the log start, at the log
        // start with another epoch than the earliest snapshot's, or with a
        // last fetched epoch older than it (the fetcher's tail diverges
        // below the log start: no diverging epoch could name where). An
        // empty follower gets it at once too, as in Kafka's
        // `tryCompleteFetchRequest` (the bootstrap `0-0` checkpoint is never
        // fetched).
        let log = &self.core.log;
        let latest_snapshot = log.latest_snapshot_id().filter(|s| s.offset > 0);
        let start = log.start_offset();
        let below_earliest = log.earliest_snapshot_id().is_some_and(|e| {
            (p.fetch_offset == start && p.last_fetched_epoch != e.epoch)
                || p.last_fetched_epoch < e.epoch
        });
        if p.fetch_offset < start
            || (p.fetch_offset == 0 && latest_snapshot.is_some())
            || below_earliest
        {
            self.reply(handle, None, None, None, latest_snapshot);
            return Ok(());
        }
        let end_of_epoch = log.end_offset_for_epoch(p.last_fetched_epoch);
        if end_of_epoch.epoch != p.last_fetched_epoch || p.fetch_offset > end_of_epoch.offset {
            self.reply(handle, None, None, Some(end_of_epoch), None);
            return Ok(());
        }
        let Some(leader) = self.leader.as_deref_mut() else {
            return Ok(());
        };
        let replica_id = if r.replica_state.replica_id.0 >= 0 {
            r.replica_state.replica_id.0
        } else {
            r.replica_id.0
        };
        let key = ReplicaKey::from_wire(replica_id, p.replica_directory_id);
        leader.record_fetch(self.core, key, p.fetch_offset, now_ms);
        if leader.update_high_watermark(self.core, self.out) {
            leader.high_watermark_moved(self.core, self.out, now_ms)?;
        }
        // Kafka's leader ignores the partition's max bytes (its raft client
        // sends 0) and reads up to the request's `maxBytes`, capped by ours
        // (`KafkaRaftClient.tryCompleteFetchRequest`); a request max of 0 or
        // less reads at least one batch.
        let max_bytes = usize::try_from(r.max_bytes.max(1))
            .unwrap_or(usize::MAX)
            .min(self.core.config.max_fetch_bytes);
        let info = self.core.log.read(p.fetch_offset, max_bytes)?;
        let max_wait = u64::try_from(r.max_wait_ms.max(0))
            .unwrap_or(0)
            .min(self.core.config.fetch_max_wait_ms);
        // KIP-1166 (Kafka 4.1, Fetch v18): the request carries the high
        // watermark the fetcher knows, and Kafka's leader answers at once,
        // instead of parking, when it is below the leader's (Kafka's
        // `KafkaRaftClient.isHighWatermarkUpdated`: request HW < response HW),
        // so a follower whose high watermark is behind learns the new one
        // without waiting up to fetch max wait. Ours does with linger 0;
        // with a linger, within it or with the next append's data
        // (`leader::parked_wait`, decisions D22). The field's default,
        // `i64::MAX` ("not supported", what a v17 or older request decodes
        // to), never compares below and keeps the old parking; -1 (v18, "not
        // known") is below any high watermark the leader knows, as in Kafka.
        let leader_hw = self.core.high_watermark.unwrap_or(-1);
        let behind_high_watermark = p.high_watermark < leader_hw;
        let wait = parked_wait(
            self.core.config.append_linger_ms,
            max_wait,
            behind_high_watermark,
        );
        if info.records.is_empty() && wait > 0 {
            leader.park(
                ParkedFetch {
                    handle,
                    fetch_offset: p.fetch_offset,
                    max_bytes,
                    deadline_ms: now_ms + wait,
                },
                behind_high_watermark,
            );
            return Ok(());
        }
        let resp = fetch_response(
            self.core,
            self.view,
            None,
            None,
            Some(info.records),
            None,
            None,
        );
        self.out.reply(handle, RaftResponse::Fetch(resp));
        Ok(())
    }
}
