//! The Fetch requests a leader holds with nothing to return yet (Kafka's
//! fetch purgatory in `KafkaRaftClient`): when each is due, which are due,
//! and whether one is owed a high watermark it has not been sent (decisions
//! D22). Answering them is the leader's (`LeaderState::complete_parked`):
//! this module only keeps them. Imports nothing of the engine but the
//! reply handle.

use super::super::ReplyHandle;

/// A Fetch with nothing to return yet, answered when data arrives or its
/// deadline passes; when the high watermark moves, at once with linger 0,
/// else its deadline comes down to the linger (decisions D22).
#[derive(Debug, Clone)]
pub(crate) struct ParkedFetch {
    pub(crate) handle: ReplyHandle,
    pub(crate) fetch_offset: i64,
    pub(crate) max_bytes: usize,
    pub(crate) deadline_ms: u64,
}

/// How long a Fetch with nothing to return is parked (ms): its max wait
/// (already capped at `fetch_max_wait_ms`), or, when it is behind only in
/// the high watermark, at most the append linger `linger_ms` (decisions
/// D22; 0 answers it at once, as Kafka's KIP-1166 `isHighWatermarkUpdated`).
pub(crate) fn parked_wait(linger_ms: u64, max_wait_ms: u64, behind_high_watermark: bool) -> u64 {
    if behind_high_watermark {
        max_wait_ms.min(linger_ms)
    } else {
        max_wait_ms
    }
}

/// The parked fetches of one leader epoch.
#[derive(Debug, Default)]
pub(crate) struct ParkedFetches {
    fetches: Vec<ParkedFetch>,
    /// A parked fetch is owed a high watermark it has not been sent: one
    /// that moved, or that it was behind, within the linger. Cleared once
    /// none is parked.
    high_watermark_held: bool,
}

impl ParkedFetches {
    /// Parks `fetch`; `behind_high_watermark`: it is owed the leader's high
    /// watermark.
    pub(crate) fn park(&mut self, fetch: ParkedFetch, behind_high_watermark: bool) {
        self.fetches.push(fetch);
        self.high_watermark_held |= behind_high_watermark;
    }

    /// The earliest deadline (ms), `u64::MAX` when none is parked.
    pub(crate) fn next_deadline(&self) -> u64 {
        self.fetches
            .iter()
            .map(|p| p.deadline_ms)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The high watermark moved: every parked fetch is answered by `due_ms`
    /// at the latest, and is owed it until then.
    pub(crate) fn answer_by(&mut self, due_ms: u64) {
        for p in &mut self.fetches {
            p.deadline_ms = p.deadline_ms.min(due_ms);
        }
        self.high_watermark_held |= !self.fetches.is_empty();
    }

    /// Whether a parked fetch is owed a high watermark.
    pub(crate) fn holds_high_watermark(&self) -> bool {
        self.high_watermark_held
    }

    /// Takes every parked fetch (to be answered).
    pub(crate) fn take_all(&mut self) -> Vec<ParkedFetch> {
        self.high_watermark_held = false;
        std::mem::take(&mut self.fetches)
    }

    /// Takes the fetches whose deadline is at or before `now_ms`.
    pub(crate) fn take_expired(&mut self, now_ms: u64) -> Vec<ParkedFetch> {
        let (expired, kept) = self
            .fetches
            .drain(..)
            .partition(|p| p.deadline_ms <= now_ms);
        self.fetches = kept;
        self.high_watermark_held &= !self.fetches.is_empty();
        expired
    }
}
