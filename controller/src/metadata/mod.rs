//! The state machine above Raft: what committed metadata records mean.
//!
//! For now it holds only [`records`], the encoders of the few Kafka metadata
//! records `format` and `dump-log` need. It must not make consensus decisions.

pub mod records;
pub mod version;
