//! Connection quotas of the controller listener (Kafka's `ConnectionQuotas`):
//! a connection takes a [`ConnectionPermit`] at accept, refused when the
//! listener already holds `max.connections` (or the open-file budget), or its
//! address `max.connections.per.ip` (or its override); the permit is given
//! back when the connection task ends. Also the listener's metrics:
//! connections open, refused by reason, failed TLS handshakes, refused
//! requests.
//!
//! It owns counting; it must not read sockets.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::config::limits::{ConnectionLimits, FD_RESERVE};

/// Why a connection was refused at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `max.connections` (or the open-file budget) reached.
    MaxConnections,
    /// `max.connections.per.ip` (or its override) reached for the address.
    MaxConnectionsPerIp,
}

impl Refused {
    fn label(self) -> &'static str {
        match self {
            Refused::MaxConnections => "max_connections",
            Refused::MaxConnectionsPerIp => "max_connections_per_ip",
        }
    }
}

/// Label of `kraftwerk_connections_refused_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// `max_connections`, `max_connections_per_ip`, `request_read_timeout`,
    /// `idle`, `frame_too_large`.
    pub reason: String,
}

/// The listener's metrics on `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct ListenerMetrics {
    /// `kafka_server_socket_server_metrics_connection_count`: open connections.
    pub connections: Gauge,
    /// `kraftwerk_connections_refused_total{reason}`: connections refused at
    /// accept or closed by a limit.
    pub refused: Family<ReasonLabel, Counter>,
    /// `kafka_server_socket_server_metrics_failed_authentication_total`:
    /// failed or timed-out TLS handshakes.
    pub tls_handshake_failures: Counter,
    /// `kraftwerk_authorization_failures_total`: requests answered
    /// CLUSTER_AUTHORIZATION_FAILED.
    pub authorization_failures: Counter,
}

impl ListenerMetrics {
    /// Registers the metrics in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "kafka_server_socket_server_metrics_connection_count",
            "Connections open on the controller listener",
            m.connections.clone(),
        );
        registry.register(
            "kraftwerk_connections_refused",
            "Connections refused or closed by a limit, by reason",
            m.refused.clone(),
        );
        registry.register(
            "kafka_server_socket_server_metrics_failed_authentication",
            "TLS handshakes that failed or timed out",
            m.tls_handshake_failures.clone(),
        );
        registry.register(
            "kraftwerk_authorization_failures",
            "Requests answered CLUSTER_AUTHORIZATION_FAILED",
            m.authorization_failures.clone(),
        );
        m
    }

    /// Counts a connection refused or closed for `reason`.
    pub fn refuse(&self, reason: &str) {
        self.refused
            .get_or_create(&ReasonLabel {
                reason: reason.to_owned(),
            })
            .inc();
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Counts the listener's connections against its limits.
#[derive(Debug)]
pub struct ConnectionLimiter {
    limits: ConnectionLimits,
    /// `max.connections`, lowered to the open-file budget.
    max_total: usize,
    counts: Mutex<Counts>,
    metrics: ListenerMetrics,
}

impl ConnectionLimiter {
    /// A limiter; `open_files` is the soft open-file limit (`None`:
    /// unknown), of which [`FD_RESERVE`] stay for everything else.
    pub fn new(
        limits: ConnectionLimits,
        open_files: Option<u64>,
        metrics: ListenerMetrics,
    ) -> Self {
        let budget = open_files
            .map(|n| {
                usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(FD_RESERVE)
                    .max(1)
            })
            .unwrap_or(usize::MAX);
        Self {
            max_total: limits.max_connections.min(budget),
            limits,
            counts: Mutex::new(Counts::default()),
            metrics,
        }
    }

    /// The effective maximum of connections at once.
    pub fn max_total(&self) -> usize {
        self.max_total
    }

    /// The limits.
    pub fn limits(&self) -> &ConnectionLimits {
        &self.limits
    }

    /// The metrics.
    pub fn metrics(&self) -> &ListenerMetrics {
        &self.metrics
    }

    /// A permit for a new connection from `ip`, or why not (counted in the metrics).
    pub fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionPermit, Refused> {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let per_ip_max = self
            .limits
            .per_ip_overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.limits.max_connections_per_ip);
        let from_ip = counts.per_ip.get(&ip).copied().unwrap_or(0);
        let refused = if counts.total >= self.max_total {
            Some(Refused::MaxConnections)
        } else if from_ip >= per_ip_max {
            Some(Refused::MaxConnectionsPerIp)
        } else {
            None
        };
        if let Some(reason) = refused {
            self.metrics.refuse(reason.label());
            return Err(reason);
        }
        counts.total += 1;
        *counts.per_ip.entry(ip).or_insert(0) += 1;
        self.metrics.connections.inc();
        Ok(ConnectionPermit {
            limiter: self.clone(),
            ip,
        })
    }

    fn release(&self, ip: IpAddr) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_ip.get_mut(&ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.per_ip.remove(&ip);
            }
        }
        self.metrics.connections.dec();
    }
}

/// One connection's place in the quota; given back on drop.
#[derive(Debug)]
pub struct ConnectionPermit {
    limiter: Arc<ConnectionLimiter>,
    ip: IpAddr,
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.limiter.release(self.ip);
    }
}

/// Raises the soft open-file limit (`RLIMIT_NOFILE`) to the hard one, as
/// Kafka's start scripts expect of the environment; returns the soft limit
/// now in force (`None` when it cannot be read).
pub fn raise_open_file_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => Some(n),
        Err(e) => {
            tracing::warn!(error = %e, "could not raise the open-file limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE)
                .ok()
                .map(|(soft, _)| soft)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(limits: ConnectionLimits, open_files: Option<u64>) -> Arc<ConnectionLimiter> {
        Arc::new(ConnectionLimiter::new(
            limits,
            open_files,
            ListenerMetrics::default(),
        ))
    }

    #[test]
    fn connections_over_the_limits_are_refused_and_permits_come_back() {
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let l = limiter(
            ConnectionLimits {
                max_connections: 3,
                max_connections_per_ip: 2,
                per_ip_overrides: [(b, 1)].into(),
                ..ConnectionLimits::default()
            },
            None,
        );
        let p1 = l.try_acquire(a).expect("first");
        let _p2 = l.try_acquire(a).expect("second");
        assert_eq!(l.try_acquire(a).err(), Some(Refused::MaxConnectionsPerIp));
        let _p3 = l.try_acquire(b).expect("b's one");
        assert_eq!(l.try_acquire(b).err(), Some(Refused::MaxConnections));
        drop(p1);
        let _p4 = l.try_acquire(a).expect("a's place came back");
        assert_eq!(l.metrics().connections.get(), 3);
        assert_eq!(
            l.metrics()
                .refused
                .get_or_create(&ReasonLabel {
                    reason: "max_connections".into()
                })
                .get(),
            1
        );
    }

    #[test]
    fn the_open_file_limit_bounds_the_connections() {
        let l = limiter(ConnectionLimits::default(), Some(1024));
        assert_eq!(l.max_total(), 1024 - FD_RESERVE);
    }
}
