//! CIDR host patterns of ACLs (`10.0.0.0/8`, `fd00::/8`), allowed from
//! `metadata.version` 4.4-IV1 (32, `MetadataVersion.isCidrAclSupported`):
//! their syntax check (Kafka's `CidrUtils.validate`) and whether a client
//! address lies in one (`CidrUtils.isInRange`, network and broadcast
//! addresses included, as Kafka's `setInclusiveHostCount(true)` does).
//!
//! A pattern with `:` is IPv6, any other IPv4 (Kafka's `CidrUtils.isIpv6`).
//! Owns the parsing and the range test; it must not decide whether the
//! cluster's `metadata.version` allows CIDR hosts (`super::control` does).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// Parses `a.b.c.d/n` (n 0..=32) or `<IPv6>/n` (n 0..=128).
///
/// Errors: a lower-case sentence naming the bad part, for Kafka's
/// `Invalid CIDR notation '<host>': <reason>` answer.
fn parse(cidr: &str) -> Result<Block, String> {
    let (address, prefix) = cidr
        .split_once('/')
        .ok_or_else(|| format!("{cidr:?} has no '/<prefix length>'"))?;
    let v6 = cidr.contains(':');
    let (bits, width) = if v6 {
        let a: Ipv6Addr = address
            .parse()
            .map_err(|_| format!("{address:?} is not an IPv6 address"))?;
        (u128::from(a), 128)
    } else {
        let a: Ipv4Addr = address
            .parse()
            .map_err(|_| format!("{address:?} is not an IPv4 address"))?;
        (u128::from(u32::from(a)), 32)
    };
    // Digits only: Rust's integer parse also takes a leading '+', which
    // Kafka's CidrUtils refuses.
    let prefix: u32 = Some(prefix)
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse().ok())
        .filter(|p| *p <= width)
        .ok_or_else(|| format!("prefix length {prefix:?} is not in 0..={width}"))?;
    Ok(Block { v6, bits, prefix })
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
    parse(cidr).map(|_| ())
}

/// Whether the client address `host` (as [`super::host_text`] writes it)
/// lies in the CIDR block `cidr`; false when either does not parse or the
/// families differ (Kafka's `CidrUtils.isInRange`).
pub fn contains(cidr: &str, host: &str) -> bool {
    match (parse(cidr), host.parse::<IpAddr>()) {
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
    }
}
