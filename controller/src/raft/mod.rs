//! Placeholder: this layer is being built (see docs/architecture.md).
