//! `kraft-controller`: a KRaft controller (Apache Kafka's KIP-500 metadata quorum)
//! written in Rust.
//!
//! Layers, each owning one concern (see `docs/architecture.md`):
//! - [`record`]: RecordBatch v2 and the KRaft control records (through the
//!   `kafka-protocol` crate);
//! - [`config`]: the Kafka-style `server.properties`;
//! - [`log`]: the metadata log on disk in Kafka's layout;
//! - [`raft`]: the sans-IO KIP-595 consensus engine;
//! - [`metadata`]: the state machine over committed records;
//! - [`acl`]: Kafka's ACLs and the StandardAuthorizer's decision;
//! - [`quorum_controller`]: the broker half of Kafka's `QuorumController`
//!   (broker registration, heartbeats, fencing) above the image;
//! - [`wire`]: Kafka framing, headers and API version negotiation;
//! - [`admin`]: a small Kafka admin client (DescribeQuorum, AddRaftVoter, …),
//!   shared by the CLI and the operator;
//! - [`server`]: the tokio runtime that drives the engine;
//! - [`cli`]: the `kraft-controller` command line.

pub mod acl;
pub mod admin;
pub mod cli;
pub mod config;
pub mod log;
pub mod metadata;
pub mod quorum_controller;
pub mod raft;
pub mod record;
pub mod server;
pub mod wire;
pub mod workload;
