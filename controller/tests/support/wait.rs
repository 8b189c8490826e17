//! Waiting for a condition with a timeout, shared by the process tests
//! (`support`) and the Kafka interop tests (`interop`): tests poll, they do
//! not sleep and hope.

use std::time::{Duration, Instant};

/// How often conditions are polled.
pub const POLL: Duration = Duration::from_millis(20);

/// Polls `check` every [`POLL`] until it returns `Some`, for at most
/// `timeout`; panics naming `what` otherwise.
pub fn wait_for<T>(timeout: Duration, what: &str, check: impl FnMut() -> Option<T>) -> T {
    match poll_until(timeout, check) {
        Some(v) => v,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Polls `check` every [`POLL`] until it returns `Some`, for at most
/// `timeout`; `None` when the time ran out (for callers that act on a
/// timeout themselves, e.g. kill a process that did not exit).
pub fn poll_until<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}
