//! The tokio runtime of a controller: listeners, peer connections, the event
//! loop that feeds the Raft engine and executes its commands, timers, and the
//! HTTP endpoint (`/healthz`, `/readyz`, `/metrics`).
//!
//! It must not contain protocol logic that belongs to the engine (`raft`):
//! it moves bytes and time in, and carries commands out.

pub mod http;
pub mod metrics;
