//! The operator's own certificate authority (`spec.tls` without an
//! `issuerRef`): one CA per quorum, and the leaf certificates it signs for
//! the controllers (server and peer client), the operator (admin client) and
//! the brokers (one client identity they mount). ECDSA P-256 keys, rcgen.
//!
//! Lifetimes follow cert-manager's defaults for a `Certificate`: 90 days, renewed
//! when two thirds of the lifetime have passed (`renewBefore` = 1/3). The CA
//! lives [`CA_LIFETIME_SECS`] and is replaced by a rotation ([`rotation`]) once
//! two thirds of it have passed or when a user asks for one.
//!
//! Owns generating certificates and deciding when one is due; it must not
//! read or write the cluster (the reconciler's `controller::certs` does) and
//! never puts key material in an error, a log line or a `Debug` output.

use std::fmt;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use time::OffsetDateTime;

use crate::validate::ValidatedQuorum;

/// Lifetime of a leaf certificate, seconds (cert-manager's default `duration`, 90 days).
pub const LEAF_LIFETIME_SECS: i64 = 90 * 86_400;
/// Lifetime of the operator's CA, seconds (3 years).
pub const CA_LIFETIME_SECS: i64 = 3 * 365 * 86_400;
/// Leaf certificates are backdated by this much (clock skew between nodes), seconds.
pub const BACKDATE_SECS: i64 = 300;

/// Common name (and principal `User:CN=…`) of the controllers' certificate.
pub const CONTROLLER_CN: &str = "kraft-controller";
/// Common name (and principal) of the operator's admin client certificate.
pub const OPERATOR_CN: &str = "kraft-operator";
/// Common name (and principal) of the client certificate brokers mount.
pub const BROKER_CN: &str = "kraft-broker";

/// The quorum a certificate subject names, `(namespace, name)`, when the
/// certificates come from a cert-manager issuer (`spec.tls.issuerRef`): a
/// shared issuer signs for many quorums, so the common names carry the
/// quorum ([`common_name`]) and one quorum's certificates are nobody on
/// another. `None` with the operator's own CA, which is per quorum already.
pub fn cn_scope(q: &ValidatedQuorum) -> Option<(&str, &str)> {
    q.issuer_ref
        .as_ref()
        .map(|_| (q.namespace.as_str(), q.name.as_str()))
}

/// The common name of identity `base` ([`CONTROLLER_CN`], [`OPERATOR_CN`],
/// [`BROKER_CN`]): `base` itself, or `base.<namespace>.<name>` with a
/// [`cn_scope`].
pub fn common_name(base: &str, scope: Option<(&str, &str)>) -> String {
    match scope {
        Some((ns, name)) => format!("{base}.{ns}.{name}"),
        None => base.to_string(),
    }
}

/// The `super.users` of a quorum: the controllers (they send each other
/// Raft RPCs and CLUSTER_ACTION requests) and the operator (voter changes,
/// ALTER), as Kafka's `DEFAULT` principal mapping names them
/// (`User:CN=…`). Not the brokers' client identity: in Kafka a broker holds
/// CLUSTER_ACTION on the cluster, never ALTER, and a super user may add and
/// remove voters; brokers get their rights from ACLs (docs/operations.md).
pub fn super_users(scope: Option<(&str, &str)>) -> String {
    [CONTROLLER_CN, OPERATOR_CN]
        .iter()
        .map(|cn| format!("User:CN={}", common_name(cn, scope)))
        .collect::<Vec<_>>()
        .join(";")
}

/// Why a certificate could not be made. Carries rcgen's message only, never
/// key material.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// rcgen refused the parameters or the key.
    #[error("certificate generation failed: {0}")]
    Generate(String),
    /// The stored CA key or certificate does not load.
    #[error("the stored CA does not load: {0}")]
    BadCa(String),
}

fn gen_err(e: rcgen::Error) -> PkiError {
    PkiError::Generate(e.to_string())
}

/// A certificate and its private key, PEM, with its validity (unix seconds).
#[derive(Clone, PartialEq, Eq)]
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM. Never logged.
    pub key_pem: String,
    /// `notBefore`, unix seconds.
    pub not_before: i64,
    /// `notAfter`, unix seconds.
    pub not_after: i64,
    /// When it is due for renewal, unix seconds: two thirds of the lifetime
    /// after it was issued (the backdating of `notBefore` not counted).
    pub renew_after: i64,
}

impl fmt::Debug for Issued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issued")
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .field("renew_after", &self.renew_after)
            .field("key_pem", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl Issued {
    /// A PEM keystore (KIP-651's one file): the key, then the certificate.
    pub fn keystore_pem(&self) -> String {
        format!("{}{}", self.key_pem, self.cert_pem)
    }
}

/// Two thirds of the way from `issued` to `not_after` (cert-manager's
/// default `renewBefore` of one third of the duration), unix seconds.
pub fn renew_after(issued: i64, not_after: i64) -> i64 {
    issued + (not_after - issued) * 2 / 3
}

fn when(unix: i64) -> Result<OffsetDateTime, PkiError> {
    OffsetDateTime::from_unix_timestamp(unix).map_err(|e| PkiError::Generate(e.to_string()))
}

/// The CA's distinguished name for the quorum `namespace/name`; the same
/// every time, so a stored CA key can sign again.
fn ca_params(namespace: &str, name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CommonName,
        format!("kraft-operator CA {namespace}/{name}"),
    );
    dn.push(DnType::OrganizationName, "kraftwerk");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// A new self-signed CA for the quorum `namespace/name`, valid from `now`
/// for `lifetime` seconds.
///
/// # Errors
/// [`PkiError::Generate`] when rcgen fails (a bug or an out-of-range time).
pub fn new_ca(namespace: &str, name: &str, now: i64, lifetime: i64) -> Result<Issued, PkiError> {
    let key = KeyPair::generate().map_err(gen_err)?;
    let mut params = ca_params(namespace, name);
    params.not_before = when(now - BACKDATE_SECS)?;
    params.not_after = when(now + lifetime)?;
    let cert = params.self_signed(&key).map_err(gen_err)?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_before: now - BACKDATE_SECS,
        not_after: now + lifetime,
        renew_after: renew_after(now, now + lifetime),
    })
}

/// What a leaf certificate says: its common name and DNS names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Subject CN (the principal is `User:CN=<cn>`).
    pub common_name: String,
    /// Subject alternative names (DNS).
    pub dns_names: Vec<String>,
}

impl Leaf {
    /// A stable fingerprint of what the certificate must say, to tell when a
    /// stored one no longer fits (new pods, a renamed service).
    pub fn fingerprint(&self) -> String {
        let text = format!("{}|{}", self.common_name, self.dns_names.join(","));
        crate::build::fnv1a_hex(text.as_bytes())
    }
}

/// The controllers' certificate: CN [`CONTROLLER_CN`], and as DNS names every
/// pod the quorum can have (`<name>-<i>.<service>.<ns>.svc.<domain>` and
/// `<name>-<i>.<service>.<ns>.svc`, i < 9) and the headless Service's names.
/// One certificate for all pods: one Secret every pod of the StatefulSet mounts.
pub fn controller_leaf(q: &ValidatedQuorum) -> Leaf {
    let svc = &q.service_name;
    let ns = &q.namespace;
    let domain = &q.cluster_domain;
    let mut dns_names = Vec::new();
    for i in 0..crate::crd::MAX_REPLICAS {
        let pod = q.pod_name(i);
        dns_names.push(format!("{pod}.{svc}.{ns}.svc.{domain}"));
        dns_names.push(format!("{pod}.{svc}.{ns}.svc"));
    }
    dns_names.push(format!("{svc}.{ns}.svc.{domain}"));
    dns_names.push(format!("{svc}.{ns}.svc"));
    dns_names.push(format!("{svc}.{ns}"));
    dns_names.push(svc.clone());
    Leaf {
        common_name: common_name(CONTROLLER_CN, cn_scope(q)),
        dns_names,
    }
}

/// A client-only identity with common name `cn`.
pub fn client_leaf(cn: &str) -> Leaf {
    Leaf {
        common_name: cn.into(),
        dns_names: Vec::new(),
    }
}

/// Signs `leaf` with the quorum's CA `ca` (as made by [`new_ca`] for the
/// same `namespace/name`), valid from `now` for `lifetime` seconds, for
/// both server and client authentication (controllers dial each other with
/// their own certificate).
///
/// # Errors
/// [`PkiError::BadCa`] when the CA key does not load; [`PkiError::Generate`].
pub fn issue(
    ca: &Issued,
    namespace: &str,
    name: &str,
    leaf: &Leaf,
    now: i64,
    lifetime: i64,
) -> Result<Issued, PkiError> {
    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(|e| PkiError::BadCa(e.to_string()))?;
    let issuer = Issuer::new(ca_params(namespace, name), &ca_key);
    let key = KeyPair::generate().map_err(gen_err)?;
    let mut params = CertificateParams::new(leaf.dns_names.clone()).map_err(gen_err)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, leaf.common_name.clone());
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    let not_before = now - BACKDATE_SECS;
    // Never outlive the CA: a leaf past its CA does not verify.
    let not_after = (now + lifetime).min(ca.not_after);
    params.not_before = when(not_before)?;
    params.not_after = when(not_after)?;
    let cert = params.signed_by(&key, &issuer).map_err(gen_err)?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_before,
        not_after,
        renew_after: renew_after(now, not_after),
    })
}

pub mod rotation;

#[cfg(test)]
mod tests;
