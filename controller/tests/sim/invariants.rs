//! The invariants checked after every event: one leader per epoch, the high
//! watermark never going back, committed data identical on every replica,
//! a majority holding each newly committed batch, and liveness after
//! healing ([`Sim::assert_recovers`]). Must not change the cluster but to
//! record the committed history.
#![allow(clippy::wildcard_imports)]

use super::*;

impl Sim {
    // ---- invariants ------------------------------------------------------------

    /// Checks the invariants that involve node `id` after it handled an event.
    pub fn check(&mut self, id: i32) {
        if self.stop_if_disk_failed(id) {
            return;
        }
        let Some(engine) = self.engine(id) else {
            return;
        };
        let role = engine.role();
        let epoch = engine.epoch();
        // At most one leader per epoch.
        if role == Role::Leader {
            match self.leaders_by_epoch.get(&epoch) {
                Some(l) if *l != id => {
                    self.fail(format!("two leaders in epoch {epoch}: {l} and {id}"))
                }
                _ => {}
            }
        }
        // Only voters lead, vote for themselves or campaign.
        let observer = if self.cfg.initial_voters.is_some() {
            !engine.can_campaign() && matches!(role, Role::Prospective | Role::Candidate)
        } else {
            !self.nodes[&id].is_voter
                && matches!(role, Role::Prospective | Role::Candidate | Role::Leader)
        };
        if observer {
            self.fail(format!("observer {id} became {role}"));
        }
        if self.cfg.initial_voters.is_some() {
            let key = set_key(engine.voters());
            if role == Role::Leader {
                let uncommitted = voters_records_from(engine.log(), self.committed_hw);
                self.known_voter_sets.insert(key);
                if uncommitted > 1 {
                    self.fail(format!(
                        "leader {id} holds {uncommitted} uncommitted Voters records above {}",
                        self.committed_hw
                    ));
                }
            } else if !self.known_voter_sets.contains(&key) {
                self.fail(format!(
                    "node {id} has voter set {key:?} that no leader ever held"
                ));
            }
        }
        let Some(engine) = self.engine(id) else {
            return;
        };
        // KIP-630: a log that starts above 0 starts at its earliest snapshot.
        let start = engine.log().start_offset();
        if start > 0 && engine.log().earliest_snapshot_id().map(|s| s.offset) != Some(start) {
            self.fail(format!(
                "node {id} log starts at {start} but its earliest snapshot is {:?}",
                engine.log().earliest_snapshot_id()
            ));
        }
        let hw = engine.high_watermark().unwrap_or(0);
        if role == Role::Leader
            && let Some(leader_hw) = engine.high_watermark()
        {
            // No high watermark before a batch of the leader's own epoch commits.
            let epoch_start = self
                .epoch_starts
                .get(&epoch)
                .copied()
                .unwrap_or_else(|| engine.log().end_offset_for_epoch(epoch - 1).offset);
            if leader_hw <= epoch_start {
                self.fail(format!(
                    "leader {id} of epoch {epoch} exposes high watermark {leader_hw} at or below its epoch start {epoch_start}"
                ));
            }
        }
        if role == Role::Leader && hw > self.committed_hw {
            self.extend_committed(id, hw);
        }
        // Committed data is identical everywhere: this node's log below its
        // high watermark matches the committed history.
        let verified_to = self.nodes[&id].verified_to;
        if hw > verified_to {
            if hw > self.committed_hw {
                self.fail(format!(
                    "node {id} has high watermark {hw} above the committed {}",
                    self.committed_hw
                ));
            }
            let engine = self.engine(id).expect("up");
            for sig in batches_of(engine.log(), verified_to) {
                if sig.base_offset >= hw {
                    break;
                }
                if self.committed.get(&sig.base_offset) != Some(&sig) {
                    self.fail(format!(
                        "node {id} holds {sig:?} below its high watermark {hw}, committed is {:?}",
                        self.committed.get(&sig.base_offset)
                    ));
                }
            }
            self.nodes.get_mut(&id).expect("node").verified_to = hw;
        }
    }

    pub(super) fn extend_committed(&mut self, leader: i32, hw: i64) {
        let engine = self.engine(leader).expect("up");
        let from = self.committed_hw;
        let mut next = self.committed_hw;
        let mut added = Vec::new();
        for sig in batches_of(engine.log(), self.committed_hw) {
            if sig.base_offset >= hw {
                break;
            }
            if sig.base_offset != next {
                self.fail(format!("committed history has a hole at {next}: {sig:?}"));
            }
            next = sig.last_offset + 1;
            added.push(sig);
        }
        if next != hw {
            self.fail(format!(
                "leader {leader} high watermark {hw} is not on a batch boundary ({next})"
            ));
        }
        for sig in added {
            self.committed.insert(sig.base_offset, sig);
        }
        self.committed_hw = hw;
        // A majority of voters hold (flushed) every newly committed batch.
        let new_sigs: Vec<BatchSig> = self.committed.range(from..).map(|(_, s)| *s).collect();
        let mut holders = 0;
        let leader_voters = self.engine(leader).expect("up").voters().clone();
        for node in self
            .nodes
            .values()
            .filter(|n| leader_voters.contains_id(n.id))
        {
            let log = match (&node.engine, &node.disk) {
                (Some(e), _) => e.log(),
                (None, Some(d)) => d,
                (None, None) => continue,
            };
            if log.flushed_end_offset() < hw {
                continue;
            }
            let sigs = batches_of(log, from);
            let covered = covered_by_snapshot(log);
            if new_sigs
                .iter()
                .all(|c| c.last_offset < covered || sigs.contains(c))
            {
                holders += 1;
            }
        }
        let majority = self.engine(leader).expect("up").voters().majority();
        if holders < majority {
            self.fail(format!(
                "high watermark {hw} on leader {leader} but only {holders} voters hold it flushed"
            ));
        }
    }

    /// Ends a run: heals the network, restarts every node, stops dropping,
    /// and requires a leader that commits a new record within `within_ms`.
    pub fn assert_recovers(&mut self, within_ms: u64) -> i32 {
        self.heal();
        self.cfg.drop_rate = 0.0;
        self.cfg.crash_mid_commands = 0.0;
        let ids: Vec<i32> = self.nodes.keys().copied().collect();
        for id in ids {
            self.restart(id);
        }
        match self.elect_and_commit(within_ms) {
            Some(l) => l,
            None => self.fail(format!(
                "no leader committed within {within_ms} ms after healing: {:?}",
                self.nodes
                    .values()
                    .map(|n| (
                        n.id,
                        n.engine.as_ref().map(|e| (
                            e.role(),
                            e.epoch(),
                            e.voters().ids().collect::<Vec<_>>(),
                            e.log().end_offset(),
                            e.high_watermark()
                        ))
                    ))
                    .collect::<Vec<_>>()
            )),
        }
    }
}

/// Number of `Voters` control records in `log` at or above `from`.
pub(super) fn voters_records_from(log: &SimLog, from: i64) -> usize {
    use kraft_controller::record::{ControlRecord, DecodedBatch};
    let records = read_to_end(log, from);
    let mut n = 0;
    for item in iter_batches(&records, false) {
        let (header, bytes) = item.expect("stored batches parse");
        if !header.is_control() {
            continue;
        }
        let batch = DecodedBatch::decode(bytes).expect("decodes");
        for (record, control) in batch
            .records
            .iter()
            .zip(batch.control_records().expect("control records"))
        {
            if record.offset >= from && matches!(control, ControlRecord::Voters(_)) {
                n += 1;
            }
        }
    }
    n
}
