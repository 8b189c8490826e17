//! `kraft-operator`: a Kubernetes operator for KRaft controller quorums.
//!
//! The reconciler runs in steps (STYLE, "Operator in steps"):
//! - [`crd`]: the `KraftQuorum` types and constants;
//! - [`validate`]: spec + status → [`validate::ValidatedQuorum`] (pure);
//! - [`build`]: one Kubernetes object per file from the validated value (pure);
//! - [`planner`]: the membership planner, DESIGN 3.3 (pure);
//! - [`quorum`]: the seam to the controllers' admin RPCs ([`quorum::QuorumClient`]);
//! - [`controller`]: fetch, apply, observe, act, status (I/O);
//! - [`lease`], [`metrics`]: leader election between operator replicas and
//!   Prometheus metrics.

pub mod build;
pub mod controller;
pub mod crd;
pub mod lease;
pub mod metrics;
pub mod pki;
pub mod planner;
pub mod quorum;
pub mod run;
pub mod validate;

/// Kafka's uuid text form, from the shared vocabulary crate (`kraft-common`).
pub use kraft_common::kafka_uuid;
