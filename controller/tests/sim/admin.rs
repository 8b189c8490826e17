//! KIP-853 admin requests sent to the simulated cluster (AddRaftVoter,
//! RemoveRaftVoter) and lost disks replaced by new ones. Must not check
//! invariants.
#![allow(clippy::wildcard_imports)]

use super::*;

impl Sim {
    /// Sends an admin request (AddRaftVoter, RemoveRaftVoter, …) to node
    /// `to` as a client would; returns its number for `admin_replies`.
    pub fn admin(&mut self, to: i32, request: RaftRequest) -> u64 {
        self.next_admin += 1;
        let n = self.next_admin;
        if !self.is_up(to) {
            return n;
        }
        self.next_handle += 1;
        let handle = self.next_handle;
        self.handles.insert(handle, (ADMIN, 0, RequestId(0)));
        self.admin_handles.insert(handle, n);
        self.handle(
            to,
            Event::Request {
                handle: ReplyHandle(handle),
                api_version: 0,
                request,
            },
        );
        n
    }

    /// Sends an admin request to the leader and waits for its answer.
    pub fn admin_wait(&mut self, request: RaftRequest, within_ms: u64) -> Option<i16> {
        let leader = self.leader()?;
        let n = self.admin(leader, request);
        self.run_until_cond(within_ms, |s| s.admin_replies.contains_key(&n));
        self.admin_replies.get(&n).copied()
    }

    /// Retries an admin request on the leader until it answers NONE (0), or
    /// a non-retriable error, or `within_ms` passes.
    pub fn admin_until_done(
        &mut self,
        make: impl Fn() -> RaftRequest,
        within_ms: u64,
    ) -> Option<i16> {
        let deadline = self.now + within_ms;
        let mut last = None;
        while self.now < deadline {
            last = self.admin_wait(make(), 5_000);
            match last {
                Some(0) => return last,
                // REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER: retry later.
                Some(7) | Some(6) | None => self.run_for(200),
                Some(_) => return last,
            }
        }
        last
    }
}

pub fn add_voter(id: i32) -> RaftRequest {
    use kafka_protocol::messages::{AddRaftVoterRequest, add_raft_voter_request::Listener};
    RaftRequest::AddRaftVoter(
        AddRaftVoterRequest::default()
            .with_cluster_id(Some("sim-cluster".into()))
            .with_timeout_ms(5_000)
            .with_voter_id(id)
            .with_voter_directory_id(directory_id(id))
            .with_listeners(vec![
                Listener::default()
                    .with_name("CONTROLLER".into())
                    .with_host(format!("node{id}").into())
                    .with_port(9093),
            ])
            .into(),
    )
}

pub fn remove_voter(id: i32, directory: uuid::Uuid) -> RaftRequest {
    use kafka_protocol::messages::RemoveRaftVoterRequest;
    RaftRequest::RemoveRaftVoter(
        RemoveRaftVoterRequest::default()
            .with_cluster_id(Some("sim-cluster".into()))
            .with_voter_id(id)
            .with_voter_directory_id(directory),
    )
}

impl Sim {
    /// The directory id of node `id`'s current disk.
    pub fn directory_of(&self, id: i32) -> uuid::Uuid {
        disk_directory_id(id, self.nodes[&id].disk_generation)
    }

    /// Loses node `id`'s disk: it restarts empty, formatted
    /// `--no-initial-controllers` with a new directory id (an observer until
    /// it is added again).
    pub fn replace_disk(&mut self, id: i32) {
        self.crash(id);
        let node = self.nodes.get_mut(&id).expect("node");
        node.disk = Some(SimLog::new(self.cfg.disk));
        node.persisted = None;
        node.max_persisted_epoch = 0;
        node.disk_generation += 1;
        self.restart(id);
    }
}

pub fn add_voter_with(id: i32, directory: uuid::Uuid) -> RaftRequest {
    let RaftRequest::AddRaftVoter(r) = add_voter(id) else {
        unreachable!("add_voter builds AddRaftVoter")
    };
    RaftRequest::AddRaftVoter(r.request.with_voter_directory_id(directory).into())
}
