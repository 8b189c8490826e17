//! The `kraft-operator` binary.
fn main() {}
