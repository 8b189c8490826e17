//! The sim executing an engine's commands (sends, replies, persisted
//! election state, flushes, commits, role changes) and feeding it events
//! and proposals. Must not check invariants beyond what a command itself
//! breaks (one vote per epoch, persisted epochs never going down).
#![allow(clippy::wildcard_imports)]

use super::*;

impl Sim {
    // ---- executing commands -------------------------------------------------

    /// Executes `commands` that node `id`'s engine returned outside the
    /// sim's own calls (a listener's proposals through `RaftClient`).
    pub fn execute_commands(&mut self, id: i32, commands: Vec<Command>) {
        self.execute(id, commands);
        self.check(id);
    }

    pub(super) fn execute(&mut self, id: i32, commands: Vec<Command>) {
        let inc = self.nodes[&id].incarnation;
        let crash_at = if self.cfg.crash_mid_commands > 0.0
            && !commands.is_empty()
            && self.rng.random_bool(self.cfg.crash_mid_commands)
        {
            Some(self.rng.random_range(0..commands.len()))
        } else {
            None
        };
        for (i, command) in commands.into_iter().enumerate() {
            if crash_at == Some(i) {
                self.crash(id);
                return;
            }
            match command {
                Command::Send {
                    id: request_id,
                    destination,
                    request,
                    timeout_ms,
                } => {
                    let to = self.resolve(&destination);
                    self.schedule(
                        self.now + timeout_ms,
                        SimEvent::Timeout {
                            to: id,
                            to_inc: inc,
                            id: request_id,
                        },
                    );
                    if to < 0 || !self.can_talk(id, to) || self.dropped() {
                        continue;
                    }
                    let at = self.now + self.delay();
                    self.schedule(
                        at,
                        SimEvent::Deliver {
                            from: id,
                            from_inc: inc,
                            to,
                            id: request_id,
                            request,
                        },
                    );
                }
                Command::Reply { handle, response } => {
                    let Some((to, to_inc, request_id)) = self.handles.remove(&handle.0) else {
                        self.fail(format!("node {id} replied twice or to an unknown handle"));
                    };
                    if self.vote_handles.remove(&handle.0)
                        && let RaftResponse::Vote(r) = &response
                        && let Some(p) = r.topics.first().and_then(|t| t.partitions.first())
                        && p.vote_granted
                    {
                        // One vote per epoch, across restarts too.
                        let disk = self.nodes[&id].disk_generation;
                        if let Some(other) =
                            self.votes_granted.insert((id, disk, p.leader_epoch), to)
                            && other != to
                        {
                            self.fail(format!(
                                "node {id} voted for {other} and {to} in epoch {}",
                                p.leader_epoch
                            ));
                        }
                    }
                    if to == ADMIN {
                        let code = match &response {
                            RaftResponse::AddRaftVoter(r) => r.error_code,
                            RaftResponse::RemoveRaftVoter(r) => r.error_code,
                            RaftResponse::UpdateRaftVoter(r) => r.error_code,
                            _ => self.fail(format!("unexpected admin reply {response:?}")),
                        };
                        let n = self.admin_handles.remove(&handle.0).expect("admin request");
                        self.admin_replies.insert(n, code);
                        continue;
                    }
                    if !self.can_talk(id, to) || self.dropped() {
                        continue;
                    }
                    let at = self.now + self.delay();
                    self.schedule(
                        at,
                        SimEvent::Respond {
                            to,
                            to_inc,
                            id: request_id,
                            response,
                        },
                    );
                }
                Command::PersistElectionState(state) => {
                    let node = self.nodes.get_mut(&id).expect("node");
                    if state.epoch < node.max_persisted_epoch {
                        let max = node.max_persisted_epoch;
                        self.fail(format!(
                            "node {id} persisted epoch {} after {max}",
                            state.epoch
                        ));
                    }
                    node.max_persisted_epoch = state.epoch;
                    node.persisted = Some(state);
                }
                Command::Flush => {
                    let node = self.nodes.get_mut(&id).expect("node");
                    if !node.flush_scheduled {
                        node.flush_scheduled = true;
                        let at = self.now + self.rng.random_range(0..=self.cfg.max_flush_delay_ms);
                        self.schedule(at, SimEvent::Flush { node: id, inc });
                    }
                }
                Command::Committed { high_watermark } => {
                    // The leader of its epoch (it may have resigned in the same step,
                    // e.g. when its own removal committed).
                    let epoch = self.engine(id).map_or(-1, |e| e.epoch());
                    let is_leader = self.leaders_by_epoch.get(&epoch) == Some(&id);
                    if is_leader && high_watermark > self.committed_hw {
                        self.extend_committed(id, high_watermark);
                    }
                }
                Command::RoleChanged { role, epoch, .. } => {
                    if role == Role::Leader {
                        self.on_new_leader(id, epoch);
                    }
                }
                Command::SnapshotInstalled { snapshot_id } => {
                    *self.snapshots_installed.entry(id).or_default() += 1;
                    self.check_snapshot(id, snapshot_id, "installed");
                }
                Command::ShutdownComplete => {}
            }
        }
    }

    pub(super) fn on_new_leader(&mut self, id: i32, epoch: i32) {
        if let Some(other) = self.leaders_by_epoch.insert(epoch, id)
            && other != id
        {
            self.fail(format!("two leaders in epoch {epoch}: {other} and {id}"));
        }
        // Leader completeness: the new leader holds every committed batch,
        // in its log or (below its log start) in the snapshot at its log
        // start, whose digest was checked when it was written or installed.
        let engine = self.nodes[&id].engine.as_ref().expect("up");
        let epoch_start = engine.log().end_offset_for_epoch(epoch - 1).offset;
        let log_batches = batches_of(engine.log(), 0);
        let covered = covered_by_snapshot(engine.log());
        for sig in self.committed.values() {
            if sig.last_offset < covered {
                continue;
            }
            if !log_batches.contains(sig) {
                self.fail(format!(
                    "new leader {id} of epoch {epoch} lacks committed batch {sig:?} (its log: [{}, {}), snapshots {:?})",
                    engine.log().start_offset(),
                    engine.log().end_offset().offset,
                    engine.log().snapshot_ids()
                ));
            }
        }
        self.epoch_starts.insert(epoch, epoch_start);
    }

    pub(super) fn handle(&mut self, id: i32, event: Event) {
        let now = self.now;
        let Some(engine) = self.nodes.get_mut(&id).and_then(|n| n.engine.as_mut()) else {
            return;
        };
        let commands = match engine.handle(event, now) {
            Ok(c) => c,
            Err(_) if self.stop_if_disk_failed(id) => return,
            Err(e) => self.fail(format!("node {id} engine error: {e}")),
        };
        self.after_event(id, commands);
    }

    /// What follows every event node `id`'s engine handled: its commands
    /// executed, the invariants checked, a snapshot if one is due.
    fn after_event(&mut self, id: i32, commands: Vec<Command>) {
        self.execute(id, commands);
        self.events_processed += 1;
        self.check(id);
        self.maybe_snapshot(id);
    }

    /// Starts a flush job on node `id` (the engine's `start_flush`), runs
    /// its fsyncs now or at its end, and schedules its end.
    pub(super) fn start_flush_job(&mut self, id: i32, inc: u64) {
        let run_now = self.rng.random_bool(0.5);
        let Some(engine) = self.nodes.get_mut(&id).and_then(|n| n.engine.as_mut()) else {
            return;
        };
        let job = match engine.start_flush() {
            Ok(job) => job,
            Err(_) if self.stop_if_disk_failed(id) => return,
            Err(e) => self.fail(format!("node {id} could not start a flush: {e}")),
        };
        let pending = if run_now {
            PendingFlush::Ran(job.run())
        } else {
            PendingFlush::Job(job)
        };
        self.nodes.get_mut(&id).expect("node").flush_job = Some(pending);
        // A failed fsync stops the log from the job's thread at once (the
        // real node exits when the job's result reaches its loop): the node
        // is down from here, its disk what the failed fsync left.
        if self.stop_if_disk_failed(id) {
            return;
        }
        let at = self.now + self.rng.random_range(0..=self.cfg.max_flush_delay_ms);
        self.schedule(at, SimEvent::FlushEnd { node: id, inc });
    }

    /// Ends node `id`'s flush job (the engine's `finish_flush`).
    pub(super) fn end_flush_job(&mut self, id: i32) {
        let now = self.now;
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        let (Some(engine), Some(pending)) = (node.engine.as_mut(), node.flush_job.take()) else {
            return;
        };
        let done = match pending {
            PendingFlush::Job(job) => job.run(),
            PendingFlush::Ran(done) => done,
        };
        let commands = match engine.finish_flush(done, now) {
            Ok(c) => c,
            Err(_) if self.stop_if_disk_failed(id) => return,
            Err(e) => self.fail(format!("node {id} could not end a flush: {e}")),
        };
        self.after_event(id, commands);
    }

    /// Proposes one record on node `id` if it leads; returns its offset.
    pub fn propose(&mut self, id: i32) -> Option<i64> {
        let now = self.now;
        self.next_value += 1;
        let value = Bytes::from(format!("value-{}", self.next_value));
        let engine = self.nodes.get_mut(&id)?.engine.as_mut()?;
        match engine.propose(&[value], now) {
            Ok((proposed, commands)) => {
                self.execute(id, commands);
                self.check(id);
                Some(proposed.last_offset)
            }
            Err(RaftError::NotLeader { .. }) => None,
            Err(_) if self.stop_if_disk_failed(id) => None,
            Err(e) => self.fail(format!("propose on {id} failed: {e}")),
        }
    }

    /// Proposes `records` as one batch on node `id` if it leads; returns the
    /// last one's offset.
    pub fn propose_records(&mut self, id: i32, records: &[Bytes]) -> Option<i64> {
        let now = self.now;
        let engine = self.nodes.get_mut(&id)?.engine.as_mut()?;
        match engine.propose(records, now) {
            Ok((proposed, commands)) => {
                self.execute(id, commands);
                self.check(id);
                Some(proposed.last_offset)
            }
            Err(RaftError::NotLeader { .. }) => None,
            Err(_) if self.stop_if_disk_failed(id) => None,
            Err(e) => self.fail(format!("propose on {id} failed: {e}")),
        }
    }
}
