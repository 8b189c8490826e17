//! What a TLS client sees of a controller listener (issue 20), in place of
//! the `openssl s_client` and `openssl x509` of the bash security.sh: the
//! handshake with a pod's IP under its DNS name as SNI, the chain verified
//! against a quorum's CA and the host name checked (`-verify_hostname`), with
//! rustls and tokio-rustls; the certificate served, read with x509-parser
//! (serial, DNS names, issuer). Also DescribeQuorum from clients of a weaker
//! security than the operator's (PLAINTEXT, TLS without a certificate), which
//! a quorum must not answer. Must not change the quorum.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::{Pod, Secret};
use kraft_controller::{
    config::security::{ClientAuth, SslSettings, TlsVersion, TrustMaterial},
    wire::tls::TlsClient,
};
use kraft_operator::quorum::{
    AdminTls, QuorumClient, QuorumDescription, QuorumSession, admin::AdminQuorumClient,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use x509_parser::{extensions::GeneralName, prelude::FromDer};

use crate::{Error, Result, TestNamespace, describe::REQUEST_TIMEOUT};

/// Bounds the TCP connect and the handshake of [`served_certificate`]
/// (security.sh: `timeout 10 openssl s_client`).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a controller's certificate says, as the fields `openssl x509` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedCertificate {
    /// The serial number, upper-case hex without separators (`openssl x509
    /// -serial` without its `serial=`).
    pub serial: String,
    /// The DNS names of its subjectAltName extension, in order.
    pub dns_names: Vec<String>,
    /// The issuer's common names (the CA's `CN`), in order.
    pub issuer_common_names: Vec<String>,
    /// The subject, RFC 4514 text as x509-parser writes it (`CN=…`).
    pub subject: String,
}

/// The `DNS` name of pod `pod` of the headless Service `service`:
/// `<pod>.<service>.<namespace>.svc.cluster.local`, what the controllers'
/// certificate names and what a client puts in SNI.
pub fn pod_dns_name(ns: &TestNamespace, pod: &str, service: &str) -> String {
    format!("{pod}.{service}.{}.svc.cluster.local", ns.name())
}

/// `<status.podIP>:<port>` of pod `pod` (lib.sh's `pod_ip`).
///
/// Errors: [`Error::Kube`] (404 included), [`Error::Invalid`] when the pod
/// has no IP yet.
pub async fn pod_address(ns: &TestNamespace, pod: &str, port: i32) -> Result<SocketAddr> {
    let p = ns
        .api::<Pod>()
        .get(pod)
        .await
        .map_err(Error::kube(format!("get pod {}/{pod}", ns.name())))?;
    let ip = p
        .status
        .and_then(|s| s.pod_ip)
        .ok_or_else(|| Error::Invalid(format!("pod {}/{pod} has no IP", ns.name())))?;
    format!("{ip}:{port}")
        .parse()
        .map_err(|e| Error::Invalid(format!("pod address {ip}:{port}: {e}")))
}

/// The UTF-8 text of `key` in the Secret `secret` of `ns`.
///
/// Errors: [`Error::Kube`] (404 included), [`Error::Invalid`] when the key
/// is missing or not UTF-8.
pub async fn secret_text(ns: &TestNamespace, secret: &str, key: &str) -> Result<String> {
    let s = ns
        .api::<Secret>()
        .get(secret)
        .await
        .map_err(Error::kube(format!("get Secret {}/{secret}", ns.name())))?;
    let bytes = s
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| Error::Invalid(format!("Secret {}/{secret} lacks {key}", ns.name())))?;
    String::from_utf8(bytes.0.clone())
        .map_err(|e| Error::Invalid(format!("{key} of Secret {}/{secret}: {e}", ns.name())))
}

/// A rustls client trusting only `ca_pem` (WebPKI chain and host name
/// checks), offering the key and chain of `keystore_pem` (one PEM holding
/// the key then the certificates, KIP-651's keystore or cert-manager's
/// `tls-combined.pem`) as client certificate when given.
///
/// Errors: [`Error::Invalid`] for PEM without a certificate or a key, or
/// one rustls refuses.
pub fn client_config(ca_pem: &str, keystore_pem: Option<&str>) -> Result<rustls::ClientConfig> {
    let invalid = |what: &str, e: &dyn std::fmt::Display| Error::Invalid(format!("{what}: {e}"));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert.map_err(|e| invalid("the CA PEM", &e))?;
        roots
            .add(cert)
            .map_err(|e| invalid("the CA certificate", &e))?;
    }
    if roots.is_empty() {
        return Err(Error::Invalid("the CA PEM holds no certificate".into()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("the TLS versions", &e))?
        .with_root_certificates(roots);
    match keystore_pem {
        None => Ok(builder.with_no_client_auth()),
        Some(pem) => {
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(pem.as_bytes())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| invalid("the keystore's certificates", &e))?;
            let key = PrivateKeyDer::from_pem_slice(pem.as_bytes())
                .map_err(|e| invalid("the keystore's key", &e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| invalid("the client certificate", &e))
        }
    }
}

/// The TLS handshake with the listener at `addr`, `server_name` in SNI, as
/// `openssl s_client -connect addr -servername server_name -CAfile ca
/// -verify_hostname server_name` does: the chain must verify against
/// `ca_pem` and the certificate must name `server_name`. `keystore_pem` is
/// offered as client certificate (see [`client_config`]) so that a listener
/// with `ssl.client.auth=required` completes the handshake. Returns the
/// leaf certificate served, parsed.
///
/// Errors: [`Error::Io`] when the TCP connection or the handshake fails
/// (the message says why: `invalid peer certificate: NotValidForName`…) or
/// takes longer than [`HANDSHAKE_TIMEOUT`]; [`Error::Invalid`] for a bad
/// `server_name` or PEM, or a served certificate that does not parse.
pub async fn served_certificate(
    addr: SocketAddr,
    server_name: &str,
    ca_pem: &str,
    keystore_pem: Option<&str>,
) -> Result<ServedCertificate> {
    let config = client_config(ca_pem, keystore_pem)?;
    let name = ServerName::try_from(server_name.to_owned())
        .map_err(|e| Error::Invalid(format!("server name {server_name}: {e}")))?;
    let what = format!("TLS handshake with {addr} as {server_name}");
    let handshake = async {
        let tcp = TcpStream::connect(addr).await?;
        TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
    };
    let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| Error::Timeout {
            what: what.clone(),
            after: HANDSHAKE_TIMEOUT,
            last: None,
        })?
        .map_err(Error::io(what.clone()))?;
    let (_, session) = stream.get_ref();
    let leaf = session
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or_else(|| Error::Invalid(format!("{what}: no certificate served")))?;
    parse(leaf.as_ref())
}

/// The fields of [`ServedCertificate`] from a DER certificate.
///
/// Errors: [`Error::Invalid`] when it does not parse.
pub fn parse(der: &[u8]) -> Result<ServedCertificate> {
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(der)
        .map_err(|e| Error::Invalid(format!("the served certificate does not parse: {e}")))?;
    let dns_names = match cert.subject_alternative_name() {
        Ok(Some(san)) => san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some((*d).to_owned()),
                _ => None,
            })
            .collect(),
        Ok(None) => Vec::new(),
        Err(e) => {
            return Err(Error::Invalid(format!(
                "the served certificate's subjectAltName: {e}"
            )));
        }
    };
    let issuer_common_names = cert
        .issuer()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_owned))
        .collect();
    Ok(ServedCertificate {
        serial: cert.raw_serial_as_string().replace(':', "").to_uppercase(),
        dns_names,
        issuer_common_names,
        subject: cert.subject().to_string(),
    })
}

/// A TLS admin client trusting `ca_pem` and offering no certificate (the
/// `no-cert.properties` of security.sh: `security.protocol=SSL`, a
/// truststore, no keystore, no host name check).
///
/// Errors: [`Error::Invalid`] when the PEM does not load.
pub fn client_without_certificate(ca_pem: &str) -> Result<AdminTls> {
    let settings = SslSettings {
        key: None,
        trust: Some(TrustMaterial::Inline(ca_pem.to_owned())),
        client_auth: ClientAuth::None,
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: false,
    };
    let tls = TlsClient::client(settings)
        .map_err(|e| Error::Invalid(format!("a TLS client without certificate: {e}")))?;
    Ok(Arc::new(tls))
}

/// DescribeQuorum (55) sent to the controller at `addr`, over `tls`
/// (`None`: PLAINTEXT), each step bounded by [`REQUEST_TIMEOUT`]; a
/// controller that is not the leader sends the client on to the leader's
/// advertised name (which the host may not resolve). What
/// `kraft-controller quorum --bootstrap-controller addr [--command-config
/// …] describe --status` does.
///
/// Errors: [`Error::Quorum`] when it is not answered (refused, closed, timed
/// out, or answered with an error code).
pub async fn describe_at(addr: SocketAddr, tls: Option<AdminTls>) -> Result<QuorumDescription> {
    let mut session = AdminQuorumClient::new(REQUEST_TIMEOUT).session(vec![addr], tls);
    session
        .describe_quorum()
        .await
        .map_err(|source| Error::Quorum {
            action: format!("DescribeQuorum of {addr}"),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate made here (rcgen) reads back with its serial, DNS
    /// names and issuer.
    #[test]
    fn a_certificate_reads_back_its_serial_names_and_issuer() {
        let key = rcgen::KeyPair::generate().expect("a P-256 key");
        let mut params =
            rcgen::CertificateParams::new(vec!["q-0.q.ns.svc.cluster.local".to_owned()])
                .expect("valid DNS names");
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x0a, 0xbc]));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test CA");
        let cert = params.self_signed(&key).expect("a self-signed certificate");
        let parsed = parse(cert.der()).expect("it parses");
        assert_eq!(parsed.serial, "0ABC");
        assert_eq!(parsed.dns_names, ["q-0.q.ns.svc.cluster.local"]);
        assert_eq!(parsed.issuer_common_names, ["test CA"]);
        assert_eq!(parsed.subject, "CN=test CA");
    }
}
