//! A listener endpoint as Kafka names one (`NAME://HOST:PORT`, Kafka's
//! `Endpoint` and `RaftVoterEndpoint`), the `HOST:PORT` form it is dialled
//! at (IPv6 hosts in brackets), and DescribeCluster's endpoint types
//! (KIP-919). Pure parsing and formatting; no name resolution.

use std::{fmt, str::FromStr};

/// Errors of reading an endpoint.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum EndpointError {
    /// Not of the form `NAME://HOST:PORT` (or `HOST:PORT`); carries the input.
    #[error("endpoint '{0}' is not of the form NAME://HOST:PORT")]
    Shape(String),
    /// The port is not a number in 0..=65535; carries the input and the port.
    #[error("endpoint '{0}' has a bad port '{1}'")]
    Port(String, String),
}

/// One listener of a node (Kafka's `Endpoint`; in KIP-853 Voters records
/// and AddRaftVoter/DescribeQuorum v2 `Listener`s, `RaftVoterEndpoint`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// Listener name, e.g. `CONTROLLER` (`controller.listener.names`).
    pub name: String,
    /// Host name or IP address (IPv6 without brackets); empty in a
    /// `listeners` entry means every interface.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// Builds an endpoint.
    pub fn new(name: impl Into<String>, host: impl Into<String>, port: u16) -> Self {
        Endpoint {
            name: name.into(),
            host: host.into(),
            port,
        }
    }

    /// `HOST:PORT` to connect to, IPv6 hosts in brackets (`[::1]:9093`).
    pub fn address(&self) -> String {
        host_port(&self.host, self.port)
    }

    /// Parses `NAME://HOST:PORT` where the host may be empty, as a
    /// `listeners` entry may be (`CONTROLLER://:9093`: every interface).
    ///
    /// # Errors
    /// [`EndpointError`] naming the input.
    pub fn parse_listener(s: &str) -> Result<Self, EndpointError> {
        let (name, rest) = s
            .split_once("://")
            .ok_or_else(|| EndpointError::Shape(s.to_owned()))?;
        if name.is_empty() {
            return Err(EndpointError::Shape(s.to_owned()));
        }
        let (host, port) = parse_host_port(rest).map_err(|e| match e {
            EndpointError::Port(_, port) => EndpointError::Port(s.to_owned(), port),
            EndpointError::Shape(_) => EndpointError::Shape(s.to_owned()),
        })?;
        Ok(Endpoint::new(name, host, port))
    }
}

/// `host:port`, IPv6 hosts (any host with a `:`) in brackets.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Parses `HOST:PORT` (`[v6addr]:PORT` for IPv6); the host may be empty.
///
/// # Errors
/// [`EndpointError`] naming the input.
pub fn parse_host_port(s: &str) -> Result<(String, u16), EndpointError> {
    let shape = || EndpointError::Shape(s.to_owned());
    let (host, port) = match s.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").ok_or_else(shape)?,
        None => s.rsplit_once(':').ok_or_else(shape)?,
    };
    let port = port
        .parse::<u16>()
        .map_err(|_| EndpointError::Port(s.to_owned(), port.to_owned()))?;
    Ok((host.to_owned(), port))
}

impl fmt::Display for Endpoint {
    /// `NAME://host:port`, IPv6 hosts in brackets, as Kafka prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.name, self.address())
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    /// Parses `NAME://HOST:PORT` (`[v6addr]` for IPv6 hosts) with a
    /// non-empty host, as `--controller-endpoint` and Voters records carry it.
    fn from_str(s: &str) -> Result<Self, EndpointError> {
        let e = Endpoint::parse_listener(s)?;
        if e.host.is_empty() {
            return Err(EndpointError::Shape(s.to_owned()));
        }
        Ok(e)
    }
}

/// DescribeCluster's `EndpointType` (KIP-919, Kafka's `EndpointType`): which
/// listeners a DescribeCluster answer lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum EndpointType {
    /// Brokers' listeners (the default, and all v0 knows).
    Broker = 1,
    /// Controllers' listeners: what an Admin client with
    /// `bootstrap.controllers` asks for.
    Controller = 2,
}

impl EndpointType {
    /// The wire value.
    pub const fn code(self) -> i8 {
        self as i8
    }

    /// The type of a wire value; `None` for unknown (Kafka answers
    /// UNSUPPORTED_ENDPOINT_TYPE).
    pub const fn from_code(code: i8) -> Option<Self> {
        match code {
            1 => Some(EndpointType::Broker),
            2 => Some(EndpointType::Controller),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // From controller/tests/wire_admin.rs (the admin module's copy).
    #[test]
    fn endpoints_parse_and_print_like_kafkas_raft_voter_endpoint() {
        let e: Endpoint = "CONTROLLER://[::1]:9093".parse().expect("v6");
        assert_eq!(e.host, "::1");
        assert_eq!(e.to_string(), "CONTROLLER://[::1]:9093");
        assert!("CONTROLLER://host".parse::<Endpoint>().is_err());
        assert!("host:9093".parse::<Endpoint>().is_err());
        assert!("C://h:70000".parse::<Endpoint>().is_err());
    }

    #[test]
    fn a_listener_may_bind_every_interface_but_a_voter_endpoint_needs_a_host() {
        let e = Endpoint::parse_listener("CONTROLLER://:9093").expect("listener");
        assert_eq!((e.host.as_str(), e.port), ("", 9093));
        assert!("CONTROLLER://:9093".parse::<Endpoint>().is_err());
        assert!(Endpoint::parse_listener("://h:1").is_err());
    }

    #[test]
    fn addresses_put_ipv6_hosts_in_brackets() {
        assert_eq!(Endpoint::new("C", "::1", 9093).address(), "[::1]:9093");
        assert_eq!(Endpoint::new("C", "q-0.q", 9093).address(), "q-0.q:9093");
        assert_eq!(
            parse_host_port("[fe80::1]:9093"),
            Ok(("fe80::1".into(), 9093))
        );
        assert_eq!(parse_host_port("q-0.q:9093"), Ok(("q-0.q".into(), 9093)));
        assert_eq!(
            parse_host_port("q:x"),
            Err(EndpointError::Port("q:x".into(), "x".into()))
        );
        assert!(parse_host_port("no-port").is_err());
    }

    #[test]
    fn endpoint_types_are_kip_919s_codes() {
        assert_eq!(EndpointType::Controller.code(), 2);
        assert_eq!(EndpointType::from_code(1), Some(EndpointType::Broker));
        assert_eq!(EndpointType::from_code(3), None);
    }
}
