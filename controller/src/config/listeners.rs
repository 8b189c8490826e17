//! The checks of `listeners` against `controller.listener.names` that a
//! controller-only node needs before it binds anything, as Kafka's
//! `KafkaConfig` (process.roles=controller) and
//! `CoreUtils.listenerListToEndPoints` make them. Pure: it only compares
//! parsed values.

use std::net::IpAddr;

use super::{Endpoint, Result, invalid};

/// Checks the listeners of a controller-only node:
///
/// - each name in `controller.listener.names` has an entry in `listeners`
///   and is named once;
/// - `listeners` names each listener once and holds only controller
///   listeners (Kafka: "The listeners config must only contain KRaft
///   controller listeners from controller.listener.names when
///   process.roles=controller");
/// - no two listeners share a port, except port 0 and, as Kafka allows,
///   one IPv4 and one IPv6 address on the same port.
///
/// Errors: [`super::ConfigError::Invalid`] naming the key, its value and
/// the listener or port at fault.
pub(super) fn check(
    listeners_raw: &str,
    listeners: &[Endpoint],
    names_raw: &str,
    names: &[String],
) -> Result<()> {
    const NAMES: &str = "controller.listener.names";
    if names.is_empty() {
        return Err(invalid(NAMES, names_raw, "empty list"));
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(invalid(
                NAMES,
                names_raw,
                format!("listener {name} is named twice"),
            ));
        }
        if !listeners.iter().any(|l| &l.name == name) {
            return Err(invalid(
                NAMES,
                names_raw,
                format!("listener {name} is not in listeners={listeners_raw}"),
            ));
        }
    }
    for (i, l) in listeners.iter().enumerate() {
        if listeners[..i].iter().any(|o| o.name == l.name) {
            return Err(invalid(
                "listeners",
                listeners_raw,
                format!("listener {} is named twice", l.name),
            ));
        }
        if !names.contains(&l.name) {
            return Err(invalid(
                "listeners",
                listeners_raw,
                format!(
                    "listener {} is not in {NAMES}={names_raw}: a controller (process.roles=controller) has only controller listeners",
                    l.name
                ),
            ));
        }
        if let Some(other) = listeners[..i]
            .iter()
            .find(|o| o.port == l.port && l.port != 0 && !one_v4_one_v6(o, l))
        {
            return Err(invalid(
                "listeners",
                listeners_raw,
                format!(
                    "port {} is used by {} and {}: each listener needs a port of its own",
                    l.port, other.name, l.name
                ),
            ));
        }
    }
    Ok(())
}

/// Whether one host is an IPv4 literal and the other an IPv6 literal, the
/// one case Kafka allows two listeners on a port.
fn one_v4_one_v6(a: &Endpoint, b: &Endpoint) -> bool {
    match (a.host.parse::<IpAddr>(), b.host.parse::<IpAddr>()) {
        (Ok(x), Ok(y)) => x.is_ipv4() != y.is_ipv4(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(raw: &str) -> Vec<Endpoint> {
        raw.split(',')
            .map(|s| Endpoint::parse(s).expect("a listener"))
            .collect()
    }

    fn check_of(listeners: &str, names: &str) -> Result<()> {
        let names: Vec<String> = names.split(',').map(str::to_owned).collect();
        check(listeners, &endpoints(listeners), &names.join(","), &names)
    }

    #[test]
    fn several_controller_listeners_on_ports_of_their_own_pass() {
        check_of("A://:9093,B://127.0.0.1:9094", "A,B").expect("valid");
        check_of("A://0.0.0.0:9093,B://[::]:9093", "A,B").expect("one IPv4, one IPv6");
        check_of("A://:0,B://:0", "A,B").expect("port 0 twice");
    }

    #[test]
    fn a_controller_listener_name_without_a_listener_is_named() {
        let err = check_of("A://:9093", "A,MISSING").expect_err("refused");
        assert_eq!(
            err.to_string(),
            "invalid value \"A,MISSING\" for controller.listener.names: listener MISSING is not in listeners=A://:9093"
        );
    }

    #[test]
    fn two_listeners_on_one_port_are_named_with_the_port() {
        let err = check_of("A://:9093,B://127.0.0.1:9093", "A,B").expect_err("refused");
        assert_eq!(
            err.to_string(),
            "invalid value \"A://:9093,B://127.0.0.1:9093\" for listeners: port 9093 is used by A and B: each listener needs a port of its own"
        );
        assert!(check_of("A://10.0.0.1:9093,B://10.0.0.2:9093", "A,B").is_err());
    }

    #[test]
    fn names_given_twice_and_listeners_that_are_not_controller_listeners_are_refused() {
        let twice = check_of("A://:9093", "A,A").expect_err("refused");
        assert!(
            twice.to_string().contains("listener A is named twice"),
            "{twice}"
        );
        let same = check_of("A://:9093,A://:9094", "A").expect_err("refused");
        assert!(
            same.to_string()
                .contains("for listeners: listener A is named twice"),
            "{same}"
        );
        let other = check_of("A://:9093,PLAINTEXT://:9092", "A").expect_err("refused");
        assert!(
            other
                .to_string()
                .contains("listener PLAINTEXT is not in controller.listener.names=A"),
            "{other}"
        );
    }
}
