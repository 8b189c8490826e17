//! The state machine above Raft: what committed metadata records mean.
//!
//! [`records`] holds the encoders and decoders of the few Kafka metadata
//! records this project writes or reads; [`image`] is the state machine over
//! the committed ones. It must not make consensus decisions.

pub mod image;
pub mod records;
pub mod snapshot;
pub mod version;
