//! Follower: fetches from the leader of the current epoch (KIP-595 pull
//! replication), truncates a diverging tail, appends what it receives,
//! flushes, and only then fetches again, so every offset it reports to the
//! leader is durable. A voter whose fetches fail for the fetch timeout
//! becomes Prospective; an observer falls back to the bootstrap servers.
//! When the leader answers a Fetch with a snapshot id (the fetch offset is
//! below its log start), the follower fetches that snapshot in chunks
//! instead (KIP-630, `fetch_snapshot.rs`), installs it, then fetches again.
//! Must not accept writes or grant votes in its epoch (only pre-votes, once
//! its leader has been silent for the fetch timeout).

use kafka_protocol::messages::FetchResponse;

use super::{
    Command, RaftRequest, RequestId, Result,
    engine::{EpochState, Inflight, RaftEngine, RequestKind},
    voters::{Endpoint, ReplicaKey},
};
use crate::log::{LogError, OffsetAndEpoch, ReplicatedLog};

/// The fetch loop of a follower (or of an observer asking bootstrap servers).
#[derive(Debug, Default)]
pub(crate) struct FetchLoop {
    /// The one Fetch in flight.
    pub(crate) inflight: Option<RequestId>,
    /// Earliest time of the next Fetch (after a backoff).
    pub(crate) next_fetch_ms: u64,
    /// Appended data awaits a flush before the next Fetch.
    pub(crate) awaiting_flush: bool,
}

impl FetchLoop {
    pub(crate) fn ready(&self, now_ms: u64) -> bool {
        self.inflight.is_none() && !self.awaiting_flush && now_ms >= self.next_fetch_ms
    }

    pub(crate) fn next_deadline(&self) -> u64 {
        if self.inflight.is_none() && !self.awaiting_flush {
            self.next_fetch_ms
        } else {
            u64::MAX
        }
    }
}

/// State of a follower.
#[derive(Debug)]
pub(crate) struct FollowerState {
    pub(crate) epoch: i32,
    pub(crate) leader_id: i32,
    pub(crate) leader_endpoint: Option<Endpoint>,
    pub(crate) voted_key: Option<ReplicaKey>,
    /// When the fetch timeout expires (pushed back by each successful fetch;
    /// pulled in by EndQuorumEpoch).
    pub(crate) fetch_deadline_ms: u64,
    pub(crate) last_fetch_ok_ms: Option<u64>,
    pub(crate) fetch: FetchLoop,
    /// Observer only: the leader went silent, ask the bootstrap servers.
    pub(crate) use_bootstrap: bool,
    /// The snapshot being fetched from the leader (KIP-630): FetchSnapshot
    /// requests replace Fetch until it is installed or dropped.
    pub(crate) fetching_snapshot: Option<OffsetAndEpoch>,
}

impl FollowerState {
    pub(crate) fn next_deadline(&self) -> u64 {
        self.fetch_deadline_ms.min(self.fetch.next_deadline())
    }

    /// Whether the leader answered a fetch within the fetch timeout (a
    /// follower in that case rejects pre-votes, KIP-996).
    pub(crate) fn has_fetched_recently(&self, now_ms: u64, fetch_timeout_ms: u64) -> bool {
        self.last_fetch_ok_ms
            .is_some_and(|t| now_ms < t.saturating_add(fetch_timeout_ms))
    }
}

impl<L: ReplicatedLog> RaftEngine<L> {
    pub(crate) fn new_follower(
        &mut self,
        epoch: i32,
        leader_id: i32,
        endpoint_hint: Option<Endpoint>,
        voted_key: Option<ReplicaKey>,
        now_ms: u64,
    ) -> FollowerState {
        let leader_endpoint = self
            .voters
            .get(leader_id)
            .and_then(|v| v.endpoints.first().cloned())
            .or(endpoint_hint);
        FollowerState {
            epoch,
            leader_id,
            leader_endpoint,
            voted_key,
            fetch_deadline_ms: now_ms + self.config.fetch_timeout_ms,
            last_fetch_ok_ms: None,
            fetch: FetchLoop {
                next_fetch_ms: now_ms,
                ..Default::default()
            },
            use_bootstrap: false,
            fetching_snapshot: None,
        }
    }

    pub(crate) fn follower_poll(&mut self, now_ms: u64) -> Result<()> {
        let is_voter = self.can_campaign();
        let fetch_timeout = self.config.fetch_timeout_ms;
        let EpochState::Follower(s) = &mut self.state else {
            return Ok(());
        };
        if now_ms >= s.fetch_deadline_ms {
            if is_voter {
                return self.become_prospective(now_ms);
            }
            s.use_bootstrap = !self.config.bootstrap_servers.is_empty();
            s.fetch_deadline_ms = now_ms + fetch_timeout;
        }
        if !s.fetch.ready(now_ms) {
            return Ok(());
        }
        if let Some(snapshot_id) = s.fetching_snapshot {
            // Kafka's `maybeSendFetchOrFetchSnapshot`: to the leader only.
            let destination = super::Destination {
                node_id: s.leader_id,
                endpoint: s.leader_endpoint.clone(),
            };
            let request = self.build_fetch_snapshot_request(snapshot_id);
            let id = self.send_to(
                destination,
                RequestKind::FetchSnapshot,
                RaftRequest::FetchSnapshot(request),
            );
            if let EpochState::Follower(s) = &mut self.state {
                s.fetch.inflight = Some(id);
            }
            return Ok(());
        }
        let destination = if s.use_bootstrap {
            let n = self.config.bootstrap_servers.len().max(1);
            let index = self.next_bootstrap % n;
            self.next_bootstrap = self.next_bootstrap.wrapping_add(1);
            self.destination(-(index as i32) - 1)
        } else {
            super::Destination {
                node_id: s.leader_id,
                endpoint: s.leader_endpoint.clone(),
            }
        };
        let request = self.build_fetch_request();
        let id = self.send_to(destination, RequestKind::Fetch, RaftRequest::Fetch(request));
        if let EpochState::Follower(s) = &mut self.state {
            s.fetch.inflight = Some(id);
        }
        Ok(())
    }

    pub(crate) fn follower_on_flush(&mut self, now_ms: u64) {
        if let EpochState::Follower(s) = &mut self.state {
            s.fetch.awaiting_flush = false;
            s.fetch.next_fetch_ms = now_ms;
        }
    }

    /// A Fetch response: learn the leader from it, then (as the follower of
    /// that leader) truncate, append or back off.
    pub(crate) fn handle_fetch_response(
        &mut self,
        id: RequestId,
        inflight: Inflight,
        r: FetchResponse,
        now_ms: u64,
    ) -> Result<()> {
        let partition = r
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .cloned();
        if let Some(p) = &partition {
            let leader = p.current_leader.leader_id.0;
            let hint = r
                .node_endpoints
                .iter()
                .find(|e| e.node_id.0 == leader)
                .and_then(|e| {
                    u16::try_from(e.port)
                        .ok()
                        .map(|port| Endpoint::new("", e.host.as_str(), port))
                });
            let from_leader = inflight.node_id == leader;
            if self.maybe_transition_from(
                Some(leader),
                p.current_leader.leader_epoch,
                hint,
                from_leader,
                now_ms,
            )? {
                return Ok(());
            }
        }
        let backoff = now_ms + self.config.retry_backoff_ms;
        match &mut self.state {
            EpochState::Unattached(s) if s.fetch.inflight == Some(id) => {
                s.fetch.inflight = None;
                s.fetch.next_fetch_ms = backoff;
                Ok(())
            }
            EpochState::Follower(s) if s.fetch.inflight == Some(id) => {
                s.fetch.inflight = None;
                let Some(p) = partition.filter(|p| r.error_code == 0 && p.error_code == 0) else {
                    s.fetch.next_fetch_ms = backoff;
                    return Ok(());
                };
                s.use_bootstrap = false;
                s.last_fetch_ok_ms = Some(now_ms);
                s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms;
                if p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0 {
                    // The leader's log diverges from ours: truncate to where the
                    // epochs agree (Kafka's `truncateToEndOffset`) and fetch again.
                    let local = self.log.end_offset_for_epoch(p.diverging_epoch.epoch);
                    let target = local.offset.min(p.diverging_epoch.end_offset);
                    self.truncate_to(target)?;
                    return Ok(());
                }
                if p.snapshot_id.epoch >= 0 || p.snapshot_id.end_offset >= 0 {
                    let snapshot_id =
                        OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch);
                    return self.start_fetching_snapshot(snapshot_id, now_ms);
                }
                let records = p.records.clone().unwrap_or_default();
                if !records.is_empty() {
                    match self.log.append_as_follower(records) {
                        Ok(info) => {
                            self.scan_control_records(info.first_offset)?;
                            if let EpochState::Follower(s) = &mut self.state {
                                s.fetch.awaiting_flush = true;
                            }
                            self.out.push(Command::Flush);
                        }
                        Err(
                            e @ (LogError::NonContiguous { .. }
                            | LogError::EpochRegression { .. }
                            | LogError::Record(_)),
                        ) => {
                            tracing::warn!(node = self.local.id, error = %e, "rejected fetched batches; fetching again");
                            if let EpochState::Follower(s) = &mut self.state {
                                s.fetch.next_fetch_ms = backoff;
                            }
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                if p.high_watermark >= 0 {
                    let hw = p.high_watermark.min(self.log.end_offset().offset);
                    self.advance_high_watermark(hw);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
