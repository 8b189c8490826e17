//! The engine's outgoing side: the commands of the event being handled, in
//! execution order, and the requests in flight with their ids (to route a
//! response or a failure back to what sent it).
//!
//! A leaf: it imports no role, no engine and no [`super::core::Core`]. Must
//! not decide anything: roles decide what to send, this only records it.

use std::collections::HashMap;

use super::{Command, Destination, RaftRequest, RaftResponse, ReplyHandle, RequestId};

/// What an outbound request was, to route its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    Vote { pre_vote: bool },
    BeginQuorumEpoch,
    EndQuorumEpoch,
    Fetch,
    FetchSnapshot,
    ApiVersions,
}

/// A request in flight: what it was, to whom, in which epoch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inflight {
    pub(crate) kind: RequestKind,
    pub(crate) node_id: i32,
    pub(crate) epoch: i32,
}

/// Commands and inflight requests (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Output {
    commands: Vec<Command>,
    inflight: HashMap<RequestId, Inflight>,
    next_request_id: u64,
}

impl Output {
    /// Appends `command` to the commands of this event.
    pub(crate) fn push(&mut self, command: Command) {
        self.commands.push(command);
    }

    /// Answers an inbound request.
    pub(crate) fn reply(&mut self, handle: ReplyHandle, response: RaftResponse) {
        self.push(Command::Reply { handle, response });
    }

    /// Sends `request` of `kind` to `destination` in `epoch`, with a fresh
    /// id, remembered until its answer ([`Self::take_inflight`]).
    pub(crate) fn send(
        &mut self,
        destination: Destination,
        kind: RequestKind,
        epoch: i32,
        request: RaftRequest,
        timeout_ms: u64,
    ) -> RequestId {
        self.next_request_id += 1;
        let id = RequestId(self.next_request_id);
        self.inflight.insert(
            id,
            Inflight {
                kind,
                node_id: destination.node_id,
                epoch,
            },
        );
        self.push(Command::Send {
            id,
            destination,
            request,
            timeout_ms,
        });
        id
    }

    /// The request `id` was answered or failed: forget it; `None` if it is
    /// not in flight (answered already, or never sent).
    pub(crate) fn take_inflight(&mut self, id: RequestId) -> Option<Inflight> {
        self.inflight.remove(&id)
    }

    /// The commands of this event, in order; the list starts empty again.
    pub(crate) fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.commands)
    }
}
