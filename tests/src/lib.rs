//! Helpers shared by the end-to-end tests (local cluster, Kafka interop).
