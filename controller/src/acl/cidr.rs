//! CIDR host patterns of ACLs (`10.0.0.0/8`, `fd00::/8`), allowed from
//! `metadata.version` 4.4-IV1 (32, `MetadataVersion.isCidrAclSupported`):
//! their syntax check (Kafka's `CidrUtils.validate`) and whether a client
//! address lies in one (`CidrUtils.isInRange`, network and broadcast
//! addresses included, as Kafka's `setInclusiveHostCount(true)` does).
//!
//! A pattern with `:` is IPv6, any other IPv4 (Kafka's `CidrUtils.isIpv6`).
//! What each accepts is what Kafka 4.4.0's shaded commons-net
//! `SubnetUtils` / `SubnetUtils6` accept, seen with its own classes
//! (`CidrUtils.validate` in jshell over the cases of this module's tests):
//! - IPv4: `d.d.d.d/p`, each octet 1 to 3 decimal digits (leading zeros are
//!   decimal: `010.0.0.0/8` is 10.0.0.0/8) up to 255, the prefix 1 or 2
//!   digits up to 32; nothing else, no spaces.
//! - IPv6: split at the first `/`; the prefix is Java's `Integer.parseInt`
//!   (a sign allowed, leading zeros allowed) in 0..=128; the address is
//!   `InetAddress` text: optionally in brackets, an embedded IPv4 tail
//!   allowed, a `%scope` that is a number or a network interface of this
//!   host; an IPv4-mapped address (`::ffff:0:0/96`) is refused, as Java
//!   turns it into an IPv4 address.
//!
//! Owns the parsing and the range test; it must not decide whether the
//! cluster's `metadata.version` allows CIDR hosts (`super::control` does).
//! Like Kafka's `CidrUtils.isInRange`, a pattern is parsed at each check;
//! there, a named scope is not looked up (no file is read per request).

use std::net::{IpAddr, Ipv6Addr};

/// Whether `host` is a CIDR pattern rather than one address or `*` (it
/// holds `/`; Kafka's `AclControlManager.validateHostPattern`).
pub fn is_cidr(host: &str) -> bool {
    host.contains('/')
}

/// A parsed CIDR block: the address bits (IPv4 in the low 32) and the prefix
/// length in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    v6: bool,
    bits: u128,
    prefix: u32,
}

/// How a named IPv6 scope (`%eth0`) is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamedScope {
    /// It must name a network interface of this host (Kafka's validation,
    /// when an ACL is created).
    MustExist,
    /// Any name: the authorizer's range check, on the request path, where a
    /// stored pattern was validated when it was created and the scope does
    /// not change which addresses are in the block.
    Any,
}

/// Parses a CIDR block by Kafka's rules (module doc).
///
/// Errors: a lower-case sentence naming the bad part, for Kafka's
/// `Invalid CIDR notation '<host>': <reason>` answer.
fn parse(cidr: &str, named_scope: NamedScope) -> Result<Block, String> {
    if cidr.contains(':') {
        parse_v6(cidr, named_scope)
    } else {
        parse_v4(cidr)
    }
}

/// `^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d{1,2})$`, each octet
/// in 0..=255 and the prefix in 0..=32 (commons-net `SubnetUtils`).
fn parse_v4(cidr: &str) -> Result<Block, String> {
    let digits = |s: &str, max_len: usize| {
        (1..=max_len).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    let (address, prefix) = cidr
        .split_once('/')
        .ok_or_else(|| format!("{cidr:?} has no '/<prefix length>'"))?;
    let octets: Vec<&str> = address.split('.').collect();
    if octets.len() != 4 || !octets.iter().all(|o| digits(o, 3)) {
        return Err(format!("{address:?} is not an IPv4 address"));
    }
    let mut bits: u128 = 0;
    for octet in octets {
        let value: u128 = octet.parse().unwrap_or(u128::MAX);
        if value > 255 {
            return Err(format!("octet {octet:?} of {address:?} is not in 0..=255"));
        }
        bits = (bits << 8) | value;
    }
    let prefix = Some(prefix)
        .filter(|p| digits(p, 2))
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|p| *p <= 32)
        .ok_or_else(|| format!("prefix length {prefix:?} is not in 0..=32"))?;
    Ok(Block {
        v6: false,
        bits,
        prefix,
    })
}

/// commons-net `SubnetUtils6`: the address as `InetAddress` reads IPv6 text,
/// the prefix as `Integer.parseInt` in 0..=128.
fn parse_v6(cidr: &str, named_scope: NamedScope) -> Result<Block, String> {
    let (address, prefix) = cidr
        .split_once('/')
        .ok_or_else(|| format!("{cidr:?} has no '/<prefix length>'"))?;
    // Rust's i32 parse takes what Java's Integer.parseInt takes: an
    // optional sign, then ASCII digits.
    let prefix = prefix
        .parse::<i32>()
        .ok()
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p <= 128)
        .ok_or_else(|| format!("prefix length {prefix:?} is not in 0..=128"))?;
    let not_v6 = || format!("{address:?} is not an IPv6 address");
    let unbracketed = match address.strip_prefix('[') {
        Some(rest) => rest.strip_suffix(']').ok_or_else(not_v6)?,
        None => address,
    };
    let text = match unbracketed.split_once('%') {
        Some((text, scope)) if is_scope(scope, named_scope) => text,
        Some(_) => {
            return Err(format!(
                "{address:?} has a scope that is neither a number nor an interface of this host"
            ));
        }
        None => unbracketed,
    };
    let parsed: Ipv6Addr = text.parse().map_err(|_| not_v6())?;
    if parsed.to_ipv4_mapped().is_some() {
        return Err(format!(
            "{address:?} is an IPv4-mapped address, not an IPv6 address"
        ));
    }
    Ok(Block {
        v6: true,
        bits: u128::from(parsed),
        prefix,
    })
}

/// A zone of an IPv6 address as Java's `Inet6Address` takes it: a number
/// that `Integer.parseInt` reads (so at most 2147483647: Kafka 4.4.0's
/// `CidrUtils.validate` refuses `fe80::1%2147483648/64`, jshell), or the
/// name of a network interface of this host (any name with
/// [`NamedScope::Any`]).
fn is_scope(scope: &str, named_scope: NamedScope) -> bool {
    if scope.is_empty() {
        return false;
    }
    if scope.bytes().all(|b| b.is_ascii_digit()) && scope.parse::<i32>().is_ok() {
        return true;
    }
    !scope.contains(['/', '.'])
        && (named_scope == NamedScope::Any
            || std::path::Path::new("/sys/class/net").join(scope).exists())
}

impl Block {
    fn contains(&self, address: IpAddr) -> bool {
        let (v6, bits, width) = match address {
            IpAddr::V4(a) => (false, u128::from(u32::from(a)), 32),
            IpAddr::V6(a) => (true, u128::from(a), 128),
        };
        if v6 != self.v6 {
            return false;
        }
        let host_bits = width - self.prefix;
        let mask = if host_bits >= 128 {
            0
        } else {
            u128::MAX << host_bits
        };
        (bits & mask) == (self.bits & mask)
    }
}

/// Checks a CIDR host pattern (Kafka's `CidrUtils.validate`).
///
/// Errors: why `cidr` is not a CIDR block, e.g. `prefix length "33" is not
/// in 0..=32`.
pub fn validate(cidr: &str) -> Result<(), String> {
    parse(cidr, NamedScope::MustExist).map(|_| ())
}

/// Whether the client address `host` (as [`super::host_text`] writes it)
/// lies in the CIDR block `cidr`; false when either does not parse or the
/// families differ (Kafka's `CidrUtils.isInRange`). Reads no file: a named
/// scope is not looked up here, on the request path.
pub fn contains(cidr: &str, host: &str) -> bool {
    match (parse(cidr, NamedScope::Any), host.parse::<IpAddr>()) {
        (Ok(block), Ok(address)) => block.contains(address),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_ipv4_and_ipv6_blocks_are_accepted_and_others_named() {
        for ok in [
            "10.0.0.0/8",
            "10.1.2.3/32",
            "0.0.0.0/0",
            "fd00::/8",
            "::1/128",
            // Accepted by Kafka 4.4.0's CidrUtils too (jshell, module doc).
            "010.0.0.0/8",
            "01.2.3.4/32",
            "10.0.0.0/08",
            "FD00::/8",
            "fd00::/0128",
            "fd00::/+8",
            "fd00::/-0",
            "fd00::/00000000008",
            "[fd00::]/8",
            "fe80::1%1/64",
            "fe80::1%2147483647/64",
            "[fe80::1%1]/64",
            "fe80::1%lo/64",
            "fd00::1.2.3.4/120",
            "::1.2.3.4/120",
            "1:2:3:4:5:6:7:8/64",
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        for (bad, reason) in [
            ("10.0.0.0/33", "prefix length \"33\""),
            ("10.0.0/8", "\"10.0.0\" is not an IPv4 address"),
            ("10.0.0.0/x", "prefix length \"x\""),
            // Kafka 4.4.0's CidrUtils refuses a signed or empty prefix.
            ("10.0.0.0/+8", "prefix length \"+8\""),
            ("10.0.0.0/", "prefix length \"\""),
            ("fd00::/129", "prefix length \"129\""),
            ("fd00::zz/64", "is not an IPv6 address"),
            // Refused by Kafka 4.4.0's CidrUtils too.
            ("10.0.0.0/008", "prefix length \"008\""),
            ("0001.2.3.4/32", "is not an IPv4 address"),
            ("256.0.0.0/8", "octet \"256\""),
            ("1.2.3/8", "is not an IPv4 address"),
            (" 10.0.0.0/8", "is not an IPv4 address"),
            ("10.0.0.0/8 ", "prefix length"),
            ("10.0.0.0/8/9", "prefix length"),
            ("1.2.3.4/3a", "prefix length"),
            ("fd00::/", "prefix length"),
            ("fd00::/8/9", "prefix length"),
            ("fd00::/ 8", "prefix length"),
            ("fd00::/99999999999", "prefix length"),
            ("fd00:: /8", "is not an IPv6 address"),
            ("fd00:::/8", "is not an IPv6 address"),
            ("[fd00::/8", "is not an IPv6 address"),
            ("fd00::]/8", "is not an IPv6 address"),
            ("[[fd00::]]/8", "is not an IPv6 address"),
            ("[fd00::]%1/8", "is not an IPv6 address"),
            ("fe80::1%/64", "scope"),
            ("fe80::1%2147483648/64", "scope"),
            ("fe80::1%99999999999/64", "scope"),
            ("fe80::1%no-such-interface0/64", "scope"),
            ("::ffff:10.0.0.0/104", "IPv4-mapped"),
            ("::ffff:a00:0/104", "IPv4-mapped"),
            ("fd00::1.2.3/120", "is not an IPv6 address"),
            ("1:2:3:4:5:6:7:8:9/64", "is not an IPv6 address"),
            ("1.2.3.4:5/8", "is not an IPv6 address"),
        ] {
            let err = validate(bad).expect_err(bad);
            assert!(err.contains(reason), "{bad}: {err}");
        }
    }

    #[test]
    fn an_address_is_in_a_block_when_its_prefix_bits_match_network_and_broadcast_included() {
        assert!(contains("10.0.0.0/8", "10.255.255.255"));
        assert!(contains("10.0.0.0/8", "10.0.0.0"));
        assert!(!contains("10.0.0.0/8", "11.0.0.1"));
        assert!(contains("192.168.1.7/32", "192.168.1.7"));
        assert!(!contains("192.168.1.7/32", "192.168.1.8"));
        assert!(contains("0.0.0.0/0", "203.0.113.9"));
        // Java's getHostAddress writes IPv6 uncompressed.
        assert!(contains("fd00::/8", "fd12:0:0:0:0:0:0:1"));
        assert!(!contains("fd00::/8", "fe80:0:0:0:0:0:0:1"));
        assert!(contains("::/0", "0:0:0:0:0:0:0:1"));
        // Families never mix; garbage never matches.
        assert!(!contains("0.0.0.0/0", "0:0:0:0:0:0:0:1"));
        assert!(!contains("10.0.0.0/8", "not-an-address"));
        assert!(!contains("10.0.0.0/99", "10.0.0.1"));
        // Leading zeros are decimal; brackets and scopes name the same block.
        assert!(contains("010.0.0.0/8", "10.1.2.3"));
        assert!(contains("[fd00::]/8", "fd00:0:0:0:0:0:0:1"));
        assert!(contains("fe80::1%1/64", "fe80:0:0:0:0:0:0:1"));
        // A named scope is checked when the ACL is created, not per request.
        assert!(validate("fe80::1%no-such-interface0/64").is_err());
        assert!(contains(
            "fe80::1%no-such-interface0/64",
            "fe80:0:0:0:0:0:0:1"
        ));
    }
}
