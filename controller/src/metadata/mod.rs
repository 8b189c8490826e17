//! The state machine above Raft: what committed metadata records mean.
//!
//! [`records`] holds the encoders and decoders of the few Kafka metadata
//! records this project writes or reads; [`image`] is the state machine over
//! the committed ones ([`configs`] its dynamic configurations); [`bootstrap`] the records a new cluster's first leader
//! writes; [`registration`] KIP-919 controller registration (when to send,
//! what the active controller appends); [`unregistration`] KIP-1312 (when
//! the active controller may remove a registration); [`view`] the image as JSON and
//! [`http`] its `GET /metadata` route; [`cluster`] the answers built from
//! the image (DescribeCluster, ApiVersions' finalized features). [`listener`]
//! runs them above Raft: the [`Listener`](crate::raft::listener::Listener)
//! the server drives. It must not make consensus decisions.

pub mod bootstrap;
pub mod brokers;
pub mod cluster;
pub mod configs;
pub mod http;
pub mod image;
pub mod listener;
pub mod records;
pub mod registration;
pub mod snapshot;
pub mod topics;
pub mod unregistration;
pub mod version;
pub mod view;
pub mod voter_endpoints;
