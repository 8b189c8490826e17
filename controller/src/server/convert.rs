//! The conversions between the wire's enums (`kafka-protocol`'s
//! [`RequestKind`] / [`ResponseKind`], the peer client's [`PeerResponse`])
//! and the engine's ([`RaftRequest`], [`RaftResponse`], [`Event`]), in one
//! place, and the `host:port` form of an [`Endpoint`] the peer clients dial.
//!
//! It owns no state and must not decide anything: a message the engine does
//! not serve is handed back unchanged.

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::{
    raft::{Endpoint, Event, RaftRequest, RaftResponse, RequestFailure, RequestId},
    wire::{
        Request,
        client::{ClientError, PeerResponse},
    },
};

/// `host:port` of `endpoint`, with an IPv6 host in brackets (`[::1]:9093`).
pub(super) fn address(endpoint: &Endpoint) -> String {
    if endpoint.host.contains(':') {
        format!("[{}]:{}", endpoint.host, endpoint.port)
    } else {
        format!("{}:{}", endpoint.host, endpoint.port)
    }
}

/// A peer's answer (or failure) as the engine's event for request `tag`.
pub(super) fn peer_event(answer: PeerResponse) -> Event {
    let id = RequestId(answer.tag);
    match answer.result {
        Ok(body) => match raft_response(body) {
            Some(response) => Event::Response { id, response },
            None => Event::RequestFailed {
                id,
                failure: RequestFailure::Disconnected,
            },
        },
        Err(e) => {
            tracing::debug!(node = answer.node_id, api = ?answer.api_key, error = %e, "request failed");
            let failure = match e {
                ClientError::Timeout { .. } => RequestFailure::Timeout,
                _ => RequestFailure::Disconnected,
            };
            Event::RequestFailed { id, failure }
        }
    }
}

/// A peer's answer as the engine's response; `None` for an api the engine
/// never sends.
pub(super) fn raft_response(body: ResponseKind) -> Option<RaftResponse> {
    Some(match body {
        ResponseKind::Vote(r) => RaftResponse::Vote(r),
        ResponseKind::BeginQuorumEpoch(r) => RaftResponse::BeginQuorumEpoch(r),
        ResponseKind::EndQuorumEpoch(r) => RaftResponse::EndQuorumEpoch(r),
        ResponseKind::Fetch(r) => RaftResponse::Fetch(r),
        ResponseKind::FetchSnapshot(r) => RaftResponse::FetchSnapshot(r),
        ResponseKind::DescribeQuorum(r) => RaftResponse::DescribeQuorum(r),
        ResponseKind::AddRaftVoter(r) => RaftResponse::AddRaftVoter(r),
        ResponseKind::RemoveRaftVoter(r) => RaftResponse::RemoveRaftVoter(r),
        ResponseKind::UpdateRaftVoter(r) => RaftResponse::UpdateRaftVoter(r),
        ResponseKind::ApiVersions(r) => RaftResponse::ApiVersions(r),
        _ => return None,
    })
}

/// The engine's answer as the wire's response.
pub(super) fn response_kind(r: RaftResponse) -> ResponseKind {
    match r {
        RaftResponse::Vote(r) => ResponseKind::Vote(r),
        RaftResponse::BeginQuorumEpoch(r) => ResponseKind::BeginQuorumEpoch(r),
        RaftResponse::EndQuorumEpoch(r) => ResponseKind::EndQuorumEpoch(r),
        RaftResponse::Fetch(r) => ResponseKind::Fetch(r),
        RaftResponse::FetchSnapshot(r) => ResponseKind::FetchSnapshot(r),
        RaftResponse::DescribeQuorum(r) => ResponseKind::DescribeQuorum(r),
        RaftResponse::AddRaftVoter(r) => ResponseKind::AddRaftVoter(r),
        RaftResponse::RemoveRaftVoter(r) => ResponseKind::RemoveRaftVoter(r),
        RaftResponse::UpdateRaftVoter(r) => ResponseKind::UpdateRaftVoter(r),
        RaftResponse::ApiVersions(r) => ResponseKind::ApiVersions(r),
    }
}

/// The engine's request as the wire's request.
pub(super) fn request_kind(r: RaftRequest) -> RequestKind {
    match r {
        RaftRequest::Vote(r) => RequestKind::Vote(r),
        RaftRequest::BeginQuorumEpoch(r) => RequestKind::BeginQuorumEpoch(r),
        RaftRequest::EndQuorumEpoch(r) => RequestKind::EndQuorumEpoch(r),
        RaftRequest::Fetch(r) => RequestKind::Fetch(r),
        RaftRequest::FetchSnapshot(r) => RequestKind::FetchSnapshot(r),
        RaftRequest::DescribeQuorum(r) => RequestKind::DescribeQuorum(r),
        // The engine never sends AddRaftVoter; its v0 fields if it did.
        RaftRequest::AddRaftVoter(r) => RequestKind::AddRaftVoter(r.request),
        RaftRequest::RemoveRaftVoter(r) => RequestKind::RemoveRaftVoter(r),
        RaftRequest::UpdateRaftVoter(r) => RequestKind::UpdateRaftVoter(r),
        RaftRequest::ApiVersions(r) => RequestKind::ApiVersions(r),
    }
}

/// The request as the engine's [`RaftRequest`], or back, boxed (it is large),
/// when the engine does not serve it.
pub(super) fn raft_request(r: Request) -> Result<RaftRequest, Box<Request>> {
    let r = match r {
        Request::Kafka(r) => r,
        Request::AddRaftVoter(r) => return Ok(RaftRequest::AddRaftVoter(r)),
        other @ Request::UnregisterController(_) => return Err(Box::new(other)),
    };
    Ok(match r {
        RequestKind::Vote(r) => RaftRequest::Vote(r),
        RequestKind::BeginQuorumEpoch(r) => RaftRequest::BeginQuorumEpoch(r),
        RequestKind::EndQuorumEpoch(r) => RaftRequest::EndQuorumEpoch(r),
        RequestKind::Fetch(r) => RaftRequest::Fetch(r),
        RequestKind::FetchSnapshot(r) => RaftRequest::FetchSnapshot(r),
        RequestKind::DescribeQuorum(r) => RaftRequest::DescribeQuorum(r),
        RequestKind::RemoveRaftVoter(r) => RaftRequest::RemoveRaftVoter(r),
        RequestKind::UpdateRaftVoter(r) => RaftRequest::UpdateRaftVoter(r),
        other => return Err(Box::new(Request::Kafka(other))),
    })
}

/// The api key of a Raft request (to pick the version we send it at).
pub(super) fn api_key_of(r: &RaftRequest) -> ApiKey {
    match r {
        RaftRequest::Vote(_) => ApiKey::Vote,
        RaftRequest::BeginQuorumEpoch(_) => ApiKey::BeginQuorumEpoch,
        RaftRequest::EndQuorumEpoch(_) => ApiKey::EndQuorumEpoch,
        RaftRequest::Fetch(_) => ApiKey::Fetch,
        RaftRequest::FetchSnapshot(_) => ApiKey::FetchSnapshot,
        RaftRequest::DescribeQuorum(_) => ApiKey::DescribeQuorum,
        RaftRequest::AddRaftVoter(_) => ApiKey::AddRaftVoter,
        RaftRequest::RemoveRaftVoter(_) => ApiKey::RemoveRaftVoter,
        RaftRequest::UpdateRaftVoter(_) => ApiKey::UpdateRaftVoter,
        RaftRequest::ApiVersions(_) => ApiKey::ApiVersions,
    }
}
