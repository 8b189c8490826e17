//! `kraft-e2e`: the cluster tests' framework (issue 18), in the manner of
//! linkerd's `policy-test`: typed clients of the local Kubernetes cluster
//! (docs/local-cluster.md), one namespace per test ([`TestNamespace`]), waits
//! on kube-rs' `await_condition` under a timeout ([`wait`]), DescribeQuorum
//! from the host with the operator's own admin client ([`describe`]), the
//! Events of a KraftQuorum ([`events`]) and Kafka traffic with Apache Kafka's
//! own programs ([`kafka`]) through the brokers of the example manifest
//! ([`brokers`], [`manifest`]); for the security cases, TLS handshakes with a
//! controller and clients of weaker security ([`tls`]), a stand-in for
//! cert-manager ([`cert_manager`]), container logs ([`logs`]) and what a
//! watch sees over a window ([`watch`]).
//!
//! It owns how a test reaches the cluster and what it dumps when it fails;
//! it must not decide what a test expects (the tests in `tests/` do). It
//! replaces `tests/e2e/lib.sh` and the helpers of `tests/e2e/run.sh` case by
//! case.

pub mod brokers;
pub mod cert_manager;
pub mod cluster;
pub mod describe;
pub mod dump;
pub mod events;
pub mod kafka;
pub mod logs;
pub mod manifest;
pub mod namespace;
pub mod operator;
pub mod pods;
pub mod quorum;
pub mod samples;
pub mod tls;
pub mod wait;
pub mod watch;

pub use cluster::{cache_dir, client};
pub use namespace::TestNamespace;

use std::time::Duration;

/// What went wrong in a step of a cluster test; each variant names the
/// action that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A call to the Kubernetes API server failed.
    #[error("{action}: {source}")]
    Kube {
        /// What was being done (`create namespace e2e-rs-ready`).
        action: String,
        /// The kube-rs error.
        #[source]
        source: kube::Error,
    },
    /// A local file or process could not be read, written or run.
    #[error("{action}: {source}")]
    Io {
        /// What was being done (`read /root/.cache/kraftwerk/...`).
        action: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A condition did not hold within its timeout.
    #[error("timed out after {:.0} s waiting for {what}{}", after.as_secs_f64(), last.as_deref().map(|l| format!(" (last seen: {l})")).unwrap_or_default())]
    Timeout {
        /// The condition, as a phrase (`3 voters Ready`).
        what: String,
        /// How long it was waited for.
        after: Duration,
        /// What was seen last, when known.
        last: Option<String>,
    },
    /// A controller did not answer an admin request.
    #[error("{action}: {source}")]
    Quorum {
        /// What was being done (`DescribeQuorum of e2e-rs-ready/q`).
        action: String,
        /// The admin client's error.
        #[source]
        source: kraft_operator::quorum::QuorumError,
    },
    /// A Kafka tool exited with an error.
    #[error("{tool} failed ({status}): {output}")]
    Tool {
        /// The class run (`org.apache.kafka.tools.TopicCommand`).
        tool: String,
        /// Its exit status.
        status: String,
        /// The end of its output.
        output: String,
    },
    /// Something the cluster returned was not what it must be (a missing
    /// field, an unparsable value).
    #[error("{0}")]
    Invalid(String),
}

/// The result of a framework call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A [`Error::Kube`] builder for `map_err`.
    pub fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
        let action = action.into();
        move |source| Error::Kube { action, source }
    }

    /// A [`Error::Io`] builder for `map_err`.
    pub fn io(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let action = action.into();
        move |source| Error::Io { action, source }
    }
}

/// `expect` for the framework's results in tests: panics with `what` and the
/// error's message (its `Display`, which says what was seen last), not its
/// `Debug` form.
pub trait Must<T> {
    /// The value, or a panic `"{what}: {error}"`.
    fn must(self, what: &str) -> T;
}

impl<T> Must<T> for Result<T> {
    #[track_caller]
    fn must(self, what: &str) -> T {
        match self {
            Ok(t) => t,
            Err(e) => panic!("{what}: {e}"),
        }
    }
}
