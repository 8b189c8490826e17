//! The controllers an [`super::AdminClient`] starts from: a
//! `--bootstrap-controller` value (Kafka's `bootstrap.controllers`), one
//! `HOST:PORT` or a comma-separated list of them, as Kafka's
//! `ClientUtils.parseAndValidateAddresses` reads it: entries trimmed, each
//! `HOST:PORT` (`[v6addr]:PORT` for IPv6), tried in the given order.
//!
//! Stricter than Kafka in one way: an empty entry (`a:1,,b:2`, a trailing
//! comma) is refused rather than skipped, since it is most often a typo for
//! an address left out. Pure parsing and error text; no I/O.

use kraft_common::endpoint::{EndpointError, parse_host_port};

use super::AdminError;

/// Parses a bootstrap list into its `HOST:PORT` entries, in order.
///
/// Errors: [`AdminError::InvalidBootstrap`] naming the first bad entry and
/// the whole value: an empty list or entry, no `:PORT`, a port that is not
/// in 1..=65535, an empty host, or a host with characters no host name or
/// IP address has (Kafka's `Utils.getHost` accepts `[0-9a-zA-Z\-%._:]`).
pub fn parse_bootstrap_list(value: &str) -> Result<Vec<String>, AdminError> {
    let bad = |entry: &str, reason: String| AdminError::InvalidBootstrap {
        value: value.to_owned(),
        entry: entry.to_owned(),
        reason,
    };
    if value.trim().is_empty() {
        return Err(bad(value, "no address given".into()));
    }
    value
        .split(',')
        .map(str::trim)
        .map(|entry| {
            if entry.is_empty() {
                return Err(bad(entry, "empty entry".into()));
            }
            let (host, port) = parse_host_port(entry).map_err(|e| match e {
                EndpointError::Shape(_) => bad(entry, "expected HOST:PORT".into()),
                EndpointError::Port(_, port) => bad(entry, format!("bad port {port:?}")),
            })?;
            if host.is_empty() {
                return Err(bad(entry, "empty host".into()));
            }
            if let Some(c) = host
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || "-%._:".contains(*c)))
            {
                return Err(bad(entry, format!("{c:?} is not allowed in a host")));
            }
            if port == 0 {
                return Err(bad(entry, "port 0".into()));
            }
            Ok(entry.to_owned())
        })
        .collect()
}

/// The error of a bootstrap list none of whose controllers answered: the
/// error itself for a single address, otherwise
/// [`AdminError::NoBootstrapAnswered`] with every address and its error,
/// retriable when one of them is.
pub(super) fn none_answered(mut tried: Vec<(String, AdminError)>) -> AdminError {
    // A list of one: its error as it is, so callers may match on it.
    if tried.len() == 1
        && let Some((_, e)) = tried.pop()
    {
        return e;
    }
    AdminError::NoBootstrapAnswered {
        retriable: tried.iter().any(|(_, e)| e.is_retriable()),
        tried: tried
            .into_iter()
            .map(|(addr, e)| format!("{addr} ({e})"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(value: &str) -> String {
        parse_bootstrap_list(value)
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn a_list_is_split_on_commas_and_trimmed_in_order() {
        assert_eq!(
            parse_bootstrap_list(" 127.0.0.1:1 , kq-0.kq:9093,[::1]:9094 ").expect("valid"),
            vec!["127.0.0.1:1", "kq-0.kq:9093", "[::1]:9094"]
        );
        assert_eq!(
            parse_bootstrap_list("localhost:9093").expect("valid"),
            vec!["localhost:9093"]
        );
    }

    #[test]
    fn an_empty_entry_is_refused_naming_the_value() {
        assert_eq!(
            error_of("a:1,,b:2"),
            "invalid bootstrap controller \"\" in \"a:1,,b:2\": empty entry"
        );
        assert!(error_of("a:1,").contains("empty entry"));
        assert_eq!(
            error_of(" , "),
            "invalid bootstrap controller \"\" in \" , \": empty entry"
        );
        assert_eq!(
            error_of(""),
            "invalid bootstrap controller \"\" in \"\": no address given"
        );
    }

    #[test]
    fn a_bad_host_or_port_is_refused_naming_the_entry() {
        assert_eq!(
            error_of("127.0.0.1:9093,localhost"),
            "invalid bootstrap controller \"localhost\" in \"127.0.0.1:9093,localhost\": expected HOST:PORT"
        );
        assert_eq!(
            error_of("a:x"),
            "invalid bootstrap controller \"a:x\" in \"a:x\": bad port \"x\""
        );
        assert!(error_of("a:70000").contains("bad port \"70000\""));
        assert!(error_of("a:0").contains("port 0"));
        assert!(error_of(":9093").contains("empty host"));
        assert!(error_of("a b:9093").contains("' ' is not allowed in a host"));
        assert!(error_of("a;b:1").contains("';' is not allowed"));
    }

    #[test]
    fn when_no_controller_answers_every_address_and_its_error_is_named() {
        let io = |addr: &str| AdminError::Io {
            addr: addr.to_owned(),
            reason: "connection refused".into(),
        };
        let one = none_answered(vec![("a:1".into(), io("a:1"))]);
        assert_eq!(one, io("a:1"));
        let both = none_answered(vec![("a:1".into(), io("a:1")), ("b:2".into(), io("b:2"))]);
        assert_eq!(
            both.to_string(),
            "no bootstrap controller answered: a:1 (i/o with a:1 failed: connection refused), \
             b:2 (i/o with b:2 failed: connection refused)"
        );
        assert!(both.is_retriable());
    }
}
