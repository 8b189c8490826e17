//! The state machine above Raft: what committed metadata records mean.
//!
//! [`records`] holds the encoders and decoders of the few Kafka metadata
//! records this project writes or reads; [`image`] is the state machine over
//! the committed ones; [`bootstrap`] the records a new cluster's first leader
//! writes; [`registration`] KIP-919 controller registration (when to send,
//! what the active controller appends); [`view`] the image as JSON. It must
//! not make consensus decisions.

pub mod bootstrap;
pub mod image;
pub mod records;
pub mod registration;
pub mod snapshot;
pub mod version;
pub mod view;
