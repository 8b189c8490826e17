//! The sim's virtual clock: the next event or engine timer, in time
//! order, and running until a time or a condition. Must not decide faults.
#![allow(clippy::wildcard_imports)]

use super::*;

impl Sim {
    // ---- the clock ------------------------------------------------------------

    /// Processes the next event or timer; returns false if none is due by `limit`.
    pub fn step(&mut self, limit: u64) -> bool {
        let next_event = self
            .queue
            .peek()
            .map(|Reverse((t, _))| *t)
            .unwrap_or(u64::MAX);
        let (tick_node, next_tick) = self
            .nodes
            .values()
            .filter_map(|n| n.engine.as_ref().map(|e| (n.id, e.next_deadline_ms())))
            .min_by_key(|(_, t)| *t)
            .unwrap_or((-1, u64::MAX));
        let t = next_event.min(next_tick);
        if t > limit {
            self.now = self.now.max(limit);
            return false;
        }
        self.now = self.now.max(t);
        if next_tick <= next_event {
            let node = self.nodes.get_mut(&tick_node).expect("node");
            if node.last_tick_at == self.now {
                node.busy_ticks += 1;
                if node.busy_ticks > 1000 {
                    self.fail(format!(
                        "node {tick_node} keeps asking for a tick at {}",
                        self.now
                    ));
                }
            } else {
                node.busy_ticks = 0;
                node.last_tick_at = self.now;
            }
            self.handle(tick_node, Event::Tick);
            return true;
        }
        let Some(Reverse((_, seq))) = self.queue.pop() else {
            return false;
        };
        let Some(event) = self.events.remove(&seq) else {
            return true;
        };
        match event {
            SimEvent::Deliver {
                from,
                from_inc,
                to,
                id,
                request,
            } => {
                if !self.is_up(to) || !self.can_talk(from, to) {
                    return true;
                }
                if matches!(request, RaftRequest::ApiVersions(_)) {
                    // The runtime answers ApiVersions, advertising kraft.version 0-1.
                    use kafka_protocol::messages::{
                        ApiVersionsResponse, api_versions_response::SupportedFeatureKey,
                    };
                    let response = RaftResponse::ApiVersions(
                        ApiVersionsResponse::default().with_supported_features(vec![
                            SupportedFeatureKey::default()
                                .with_name("kraft.version".into())
                                .with_min_version(0)
                                .with_max_version(1),
                        ]),
                    );
                    let at = self.now + self.delay();
                    self.schedule(
                        at,
                        SimEvent::Respond {
                            to: from,
                            to_inc: from_inc,
                            id,
                            response,
                        },
                    );
                    return true;
                }
                self.next_handle += 1;
                let handle = self.next_handle;
                self.handles.insert(handle, (from, from_inc, id));
                if let RaftRequest::Vote(v) = &request
                    && v.topics
                        .first()
                        .and_then(|t| t.partitions.first())
                        .is_some_and(|p| !p.pre_vote)
                {
                    self.vote_handles.insert(handle);
                }
                self.handle(
                    to,
                    Event::Request {
                        handle: ReplyHandle(handle),
                        api_version: 2,
                        request,
                    },
                );
            }
            SimEvent::Respond {
                to,
                to_inc,
                id,
                response,
            } => {
                if self.nodes[&to].incarnation != to_inc || !self.is_up(to) {
                    return true;
                }
                if !self.answered.insert((to, to_inc, id)) {
                    return true;
                }
                self.handle(to, Event::Response { id, response });
            }
            SimEvent::Timeout { to, to_inc, id } => {
                if self.nodes[&to].incarnation != to_inc || !self.is_up(to) {
                    return true;
                }
                if !self.answered.insert((to, to_inc, id)) {
                    return true;
                }
                self.handle(
                    to,
                    Event::RequestFailed {
                        id,
                        failure: RequestFailure::Timeout,
                    },
                );
            }
            SimEvent::Flush { node, inc } => {
                if self.nodes[&node].incarnation != inc || !self.is_up(node) {
                    return true;
                }
                if self.nodes[&node].flush_job.is_some() {
                    // One job at a time: the next flush starts after it.
                    let at = self.now + 1 + self.rng.random_range(0..=self.cfg.max_flush_delay_ms);
                    self.schedule(at, SimEvent::Flush { node, inc });
                    return true;
                }
                self.nodes.get_mut(&node).expect("node").flush_scheduled = false;
                // As the tests drive the engine (inline), or as the event
                // loop does (a job whose fsyncs run off the loop).
                if self.rng.random_bool(0.5) {
                    self.handle(node, Event::Flush);
                } else {
                    self.start_flush_job(node, inc);
                }
            }
            SimEvent::FlushEnd { node, inc } => {
                if self.nodes[&node].incarnation != inc || !self.is_up(node) {
                    return true;
                }
                self.end_flush_job(node);
            }
        }
        true
    }

    /// Runs until virtual time `until` (ms).
    pub fn run_until(&mut self, until: u64) {
        while self.step(until) {}
    }

    /// Runs for `ms` more.
    pub fn run_for(&mut self, ms: u64) {
        let until = self.now + ms;
        self.run_until(until);
    }

    /// Runs until `cond` holds or `ms` pass; returns whether it held.
    pub fn run_until_cond(&mut self, ms: u64, mut cond: impl FnMut(&Sim) -> bool) -> bool {
        let until = self.now + ms;
        loop {
            if cond(self) {
                return true;
            }
            if !self.step(until) {
                return cond(self);
            }
        }
    }
}
