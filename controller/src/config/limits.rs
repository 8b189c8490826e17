//! Connection limits of the controller listener (Kafka's `SocketServerConfigs`
//! and `ConnectionQuotas` names where Kafka has the setting, `kraftwerk.*`
//! where it does not): how many connections, from one address, for how long
//! idle, how long a request may take to arrive, how large a frame may be
//! before the connection has sent its first authorized request, and how many
//! request bytes may wait across all connections. It only
//! parses; the limits are enforced by `server::limits` and the connection task.

use std::{collections::BTreeMap, net::IpAddr};

use super::{Result, invalid, list};

/// The limits, with Kafka's defaults (ours where Kafka has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `max.connections` (Kafka: 2147483647): connections at once on the
    /// listener; further ones are closed at accept. The node also keeps the
    /// total below its open-file limit less [`FD_RESERVE`].
    pub max_connections: usize,
    /// `max.connections.per.ip` (Kafka: 2147483647).
    pub max_connections_per_ip: usize,
    /// `max.connections.per.ip.overrides` (`IP:N,IP:N`; Kafka also takes host
    /// names, here only IP addresses).
    pub per_ip_overrides: BTreeMap<IpAddr, usize>,
    /// `connections.max.idle.ms` (600000): a connection with no request in
    /// progress for this long is closed.
    pub idle_ms: u64,
    /// `kraftwerk.request.read.timeout.ms` (10000): once the first byte of a
    /// request has arrived, the whole request must arrive within this time
    /// (slow-loris).
    pub request_read_timeout_ms: u64,
    /// `kraftwerk.unauthenticated.max.frame.bytes` (524288, Kafka's
    /// `sasl.server.max.receive.size`): the largest frame a connection may
    /// send before its first request that passed authorization.
    pub unauthenticated_max_frame_bytes: usize,
    /// `queued.max.request.bytes` (Kafka: -1, unbounded): bytes of requests
    /// read and not yet answered, across all connections of the listener;
    /// `None` for a value <= 0, as Kafka. A connection whose next request
    /// does not fit stops being read until it does (a single request larger
    /// than the cap waits for the whole cap).
    pub queued_max_request_bytes: Option<u64>,
}

/// File descriptors kept free for the log, snapshots, peers and `/metrics`
/// when the open-file limit bounds the connections.
pub const FD_RESERVE: usize = 128;

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: i32::MAX as usize,
            max_connections_per_ip: i32::MAX as usize,
            per_ip_overrides: BTreeMap::new(),
            idle_ms: 600_000,
            request_read_timeout_ms: 10_000,
            unauthenticated_max_frame_bytes: 524_288,
            queued_max_request_bytes: None,
        }
    }
}

fn number(map: &mut BTreeMap<String, String>, key: &str, default: u64) -> Result<u64> {
    match map.remove(key).map(|v| v.trim().to_owned()) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| invalid(key, &v, "expected a positive integer")),
    }
}

/// Parses the limits, removing their keys from `map`.
///
/// Errors: [`super::ConfigError::Invalid`] naming the key for a value that
/// is not a positive integer, or an override that is not `IP:N`.
pub fn parse_limits(map: &mut BTreeMap<String, String>) -> Result<ConnectionLimits> {
    let d = ConnectionLimits::default();
    let to_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let mut per_ip_overrides = BTreeMap::new();
    if let Some(raw) = map.remove("max.connections.per.ip.overrides") {
        for entry in list(&raw) {
            let parsed = entry.rsplit_once(':').and_then(|(ip, n)| {
                let ip = ip.trim().trim_start_matches('[').trim_end_matches(']');
                Some((ip.parse::<IpAddr>().ok()?, n.trim().parse::<usize>().ok()?))
            });
            let (ip, n) = parsed.ok_or_else(|| {
                invalid(
                    "max.connections.per.ip.overrides",
                    &raw,
                    format!("{entry:?} is not IP:N"),
                )
            })?;
            per_ip_overrides.insert(ip, n);
        }
    }
    let queued_max_request_bytes = match map
        .remove("queued.max.request.bytes")
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(v) => {
            let n = v.parse::<i64>().map_err(|_| {
                invalid(
                    "queued.max.request.bytes",
                    &v,
                    "expected an integer (-1: unbounded)",
                )
            })?;
            u64::try_from(n).ok().filter(|n| *n > 0)
        }
    };
    Ok(ConnectionLimits {
        queued_max_request_bytes,
        max_connections: to_usize(number(map, "max.connections", d.max_connections as u64)?),
        max_connections_per_ip: to_usize(number(
            map,
            "max.connections.per.ip",
            d.max_connections_per_ip as u64,
        )?),
        per_ip_overrides,
        idle_ms: number(map, "connections.max.idle.ms", d.idle_ms)?,
        request_read_timeout_ms: number(
            map,
            "kraftwerk.request.read.timeout.ms",
            d.request_read_timeout_ms,
        )?,
        unauthenticated_max_frame_bytes: to_usize(number(
            map,
            "kraftwerk.unauthenticated.max.frame.bytes",
            d.unauthenticated_max_frame_bytes as u64,
        )?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_have_kafka_defaults_and_parse_overrides() {
        let mut m = BTreeMap::new();
        assert_eq!(
            parse_limits(&mut m).expect("valid"),
            ConnectionLimits::default()
        );
        let mut m: BTreeMap<String, String> = [
            ("max.connections", "10"),
            ("max.connections.per.ip.overrides", "127.0.0.1:3,[::1]:4"),
            ("connections.max.idle.ms", "1000"),
            ("queued.max.request.bytes", "1048576"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let l = parse_limits(&mut m).expect("valid");
        assert_eq!(l.max_connections, 10);
        assert_eq!(l.idle_ms, 1000);
        assert_eq!(l.per_ip_overrides.len(), 2);
        assert_eq!(l.queued_max_request_bytes, Some(1_048_576));
        let mut m: BTreeMap<String, String> =
            [("queued.max.request.bytes".to_owned(), "-1".to_owned())].into();
        assert_eq!(
            parse_limits(&mut m)
                .expect("Kafka's default")
                .queued_max_request_bytes,
            None
        );
        assert!(m.is_empty());
    }

    #[test]
    fn a_zero_or_a_bad_override_is_refused_naming_the_key() {
        let mut m: BTreeMap<String, String> =
            [("max.connections".to_owned(), "0".to_owned())].into();
        assert!(
            parse_limits(&mut m)
                .expect_err("refused")
                .to_string()
                .contains("max.connections")
        );
        let mut m: BTreeMap<String, String> = [(
            "max.connections.per.ip.overrides".to_owned(),
            "somehost".to_owned(),
        )]
        .into();
        assert!(
            parse_limits(&mut m)
                .expect_err("refused")
                .to_string()
                .contains("max.connections.per.ip.overrides")
        );
    }
}
