//! TLS for the Kafka wire (rustls, the `ring` provider): the server side of a
//! listener mapped to SSL and the client side of our outgoing connections
//! (peers, registration, the admin CLI), both built from the same
//! [`SslSettings`] (Kafka's `ssl.*` keys, PEM stores, KIP-651).
//!
//! It owns reading the PEM files and turning the settings into rustls
//! configurations, and re-reading them when the files change (Kubernetes
//! rotates Secrets in place): [`Reloading`] checks the files' modification
//! times and sizes at most once a second and serves the new configuration to
//! connections that start after the change; a change that does not load
//! keeps the last good configuration and logs why. It must not decide who
//! may do what (that is the server's authorizer).

use std::{
    fmt,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime},
};

use rustls::{
    DigitallySignedStruct, RootCertStore, SignatureScheme, SupportedProtocolVersion,
    client::{
        WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    },
    crypto::CryptoProvider,
    server::WebPkiClientVerifier,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject};

use crate::config::security::{ClientAuth, KeyMaterial, SslSettings, TlsVersion, TrustMaterial};

/// Errors loading TLS material or building a TLS configuration.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("reading {what} {path}: {reason}")]
    Read {
        /// `ssl.keystore.location` or `ssl.truststore.location`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The i/o error.
        reason: String,
    },
    /// The material or a setting cannot be used.
    #[error("{what}: {reason}")]
    Invalid {
        /// The key or material concerned.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

/// Result alias of this module.
pub type Result<T, E = TlsError> = std::result::Result<T, E>;

fn invalid(what: &'static str, reason: impl fmt::Display) -> TlsError {
    TlsError::Invalid {
        what,
        reason: reason.to_string(),
    }
}

/// The `ring` provider, with only the suites of `ssl.cipher.suites` when set.
fn provider(settings: &SslSettings) -> Result<Arc<CryptoProvider>> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !settings.cipher_suites.is_empty() {
        let mut chosen = Vec::new();
        for name in &settings.cipher_suites {
            let suite = provider
                .cipher_suites
                .iter()
                .find(|s| suite_name(s) == *name)
                .ok_or_else(|| {
                    let known: Vec<String> =
                        provider.cipher_suites.iter().map(suite_name).collect();
                    invalid(
                        "ssl.cipher.suites",
                        format!("{name} is not supported; supported: {}", known.join(",")),
                    )
                })?;
            chosen.push(*suite);
        }
        provider.cipher_suites = chosen;
    }
    Ok(Arc::new(provider))
}

/// The IANA name of a suite as Java writes it (`TLS_AES_128_GCM_SHA256`).
fn suite_name(suite: &rustls::SupportedCipherSuite) -> String {
    let cs = suite.suite();
    cs.as_str()
        .map(|s| s.replacen("TLS13_", "TLS_", 1))
        .unwrap_or_else(|| format!("{cs:?}"))
}

fn versions(settings: &SslSettings) -> Vec<&'static SupportedProtocolVersion> {
    settings
        .enabled_protocols
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect()
}

fn read(what: &'static str, path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        what,
        path: path.clone(),
        reason: e.to_string(),
    })
}

/// The certificate chain and private key of a keystore.
fn load_key(
    material: &KeyMaterial,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let (chain_pem, key_pem) = match material {
        KeyMaterial::File(path) => {
            let bytes = read("ssl.keystore.location", path)?;
            (bytes.clone(), bytes)
        }
        KeyMaterial::Inline { chain, key } => (chain.as_bytes().to_vec(), key.as_bytes().to_vec()),
    };
    let chain = CertificateDer::pem_slice_iter(&chain_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| invalid("ssl.keystore", format!("certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("ssl.keystore", "no CERTIFICATE in the keystore"));
    }
    if String::from_utf8_lossy(&key_pem).contains("ENCRYPTED PRIVATE KEY") {
        return Err(invalid(
            "ssl.keystore",
            "the private key is encrypted: decrypt it (openssl pkcs8 -nocrypt) and remove ssl.key.password",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| invalid("ssl.keystore", format!("private key: {e}")))?;
    Ok((chain, key))
}

/// The trusted roots: the truststore, or the system's when there is none.
fn roots(settings: &SslSettings) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = match &settings.trust {
        Some(trust) => {
            let pem = match trust {
                TrustMaterial::File(path) => read("ssl.truststore.location", path)?,
                TrustMaterial::Inline(text) => text.as_bytes().to_vec(),
            };
            CertificateDer::pem_slice_iter(&pem)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| invalid("ssl.truststore", e))?
        }
        None => rustls_native_certs::load_native_certs().certs,
    };
    for cert in certs {
        store
            .add(cert)
            .map_err(|e| invalid("ssl.truststore", format!("a certificate: {e}")))?;
    }
    if store.is_empty() {
        return Err(invalid("ssl.truststore", "no CERTIFICATE to trust"));
    }
    Ok(store)
}

/// The rustls server configuration of a listener mapped to SSL.
///
/// Errors: [`TlsError`] for unreadable files, PEM without a certificate or
/// key, an encrypted key, an unknown cipher suite, or settings rustls refuses.
pub fn server_config(settings: &SslSettings) -> Result<Arc<rustls::ServerConfig>> {
    let provider = provider(settings)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings))
        .map_err(|e| invalid("ssl.enabled.protocols", e))?;
    let builder = match settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots(settings)?), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier.build().map_err(|e| invalid("ssl.truststore", e))?,
            )
        }
    };
    let key = settings
        .key
        .as_ref()
        .ok_or_else(|| invalid("ssl.keystore.location", "a TLS listener needs a keystore"))?;
    let (chain, key) = load_key(key)?;
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| invalid("ssl.keystore", e))?;
    Ok(Arc::new(config))
}

/// The rustls client configuration of outgoing connections: the truststore
/// (or the system's roots), the keystore as client certificate when there is
/// one, and no host name check when `ssl.endpoint.identification.algorithm`
/// is empty.
///
/// Errors: as [`server_config`].
pub fn client_config(settings: &SslSettings) -> Result<Arc<rustls::ClientConfig>> {
    let provider = provider(settings)?;
    let roots = Arc::new(roots(settings)?);
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings))
        .map_err(|e| invalid("ssl.enabled.protocols", e))?;
    let builder = if settings.endpoint_identification {
        builder.with_root_certificates(roots)
    } else {
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| invalid("ssl.truststore", e))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoHostNameCheck(inner)))
    };
    let config = match &settings.key {
        Some(material) => {
            let (chain, key) = load_key(material)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| invalid("ssl.keystore", e))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Verifies the chain as WebPKI does but accepts any host name (Kafka's
/// empty `ssl.endpoint.identification.algorithm`).
#[derive(Debug)]
struct NoHostNameCheck(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for NoHostNameCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// How often [`Reloading`] looks at the files at most.
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// (modification time, size) of each file the settings name.
type Stamps = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

fn stamps(settings: &SslSettings) -> Stamps {
    let mut paths = Vec::new();
    if let Some(KeyMaterial::File(p)) = &settings.key {
        paths.push(p.clone());
    }
    if let Some(TrustMaterial::File(p)) = &settings.trust {
        paths.push(p.clone());
    }
    paths
        .into_iter()
        .map(|p| {
            let stamp = std::fs::metadata(&p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())));
            (p, stamp)
        })
        .collect()
}

struct State<T> {
    current: Arc<T>,
    stamps: Stamps,
    checked_at: Instant,
}

/// A rustls configuration (server or client) built from [`SslSettings`] and
/// rebuilt when its PEM files change on disk. Cheap to share (`Arc`).
pub struct Reloading<T> {
    settings: SslSettings,
    build: fn(&SslSettings) -> Result<Arc<T>>,
    state: Mutex<State<T>>,
}

impl<T> fmt::Debug for Reloading<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloading")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The server side of a TLS listener.
pub type TlsServer = Reloading<rustls::ServerConfig>;
/// The client side of outgoing TLS connections.
pub type TlsClient = Reloading<rustls::ClientConfig>;

impl TlsServer {
    /// Loads the server configuration once (at start: an error stops the node).
    ///
    /// Errors: as [`server_config`].
    pub fn server(settings: SslSettings) -> Result<Self> {
        Reloading::new(settings, server_config)
    }
}

impl TlsClient {
    /// Loads the client configuration once.
    ///
    /// Errors: as [`client_config`].
    pub fn client(settings: SslSettings) -> Result<Self> {
        Reloading::new(settings, client_config)
    }
}

impl<T> Reloading<T> {
    fn new(settings: SslSettings, build: fn(&SslSettings) -> Result<Arc<T>>) -> Result<Self> {
        let stamps = stamps(&settings);
        let current = build(&settings)?;
        Ok(Self {
            settings,
            build,
            state: Mutex::new(State {
                current,
                stamps,
                checked_at: Instant::now(),
            }),
        })
    }

    /// The settings this was built from.
    pub fn settings(&self) -> &SslSettings {
        &self.settings
    }

    /// The configuration for a connection starting now: rebuilt first when
    /// the files changed since the last look (at most once per
    /// [`RELOAD_CHECK_INTERVAL`]); the last good one when the new files do
    /// not load.
    pub fn current(&self) -> Arc<T> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.checked_at.elapsed() >= RELOAD_CHECK_INTERVAL {
            state.checked_at = Instant::now();
            let now = stamps(&self.settings);
            if now != state.stamps {
                // A half-written change is retried on its next change.
                state.stamps = now;
                match (self.build)(&self.settings) {
                    Ok(config) => {
                        tracing::info!("TLS certificates changed on disk: reloaded");
                        state.current = config;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "TLS certificates changed on disk but do not load; keeping the previous ones");
                    }
                }
            }
        }
        state.current.clone()
    }
}

/// The subject of a DER certificate as Java's `X500Principal.getName()`
/// writes it (RFC 2253), which Kafka's `DEFAULT` principal mapping uses:
/// the relative names last to first, separated by `,` without spaces,
/// multi-valued ones joined by `+`; `CN`, `C`, `L`, `ST`, `O`, `OU`,
/// `STREET`, `DC` and `UID` by keyword, any other attribute as its OID with
/// `#` and the hex of its DER value; `, + " \ < > ;` escaped with `\`, and a
/// leading `#` or space and a trailing space too.
///
/// Errors: [`TlsError::Invalid`] when the certificate does not parse.
pub fn subject_dn(cert: &CertificateDer<'_>) -> Result<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| invalid("client certificate", e))?;
    let mut rdns = Vec::new();
    for rdn in parsed.subject().iter() {
        let avas: Vec<String> = rdn
            .iter()
            .map(|ava| {
                let oid = ava.attr_type().to_id_string();
                let keyword = match oid.as_str() {
                    "2.5.4.3" => Some("CN"),
                    "2.5.4.6" => Some("C"),
                    "2.5.4.7" => Some("L"),
                    "2.5.4.8" => Some("ST"),
                    "2.5.4.9" => Some("STREET"),
                    "2.5.4.10" => Some("O"),
                    "2.5.4.11" => Some("OU"),
                    "0.9.2342.19200300.100.1.25" => Some("DC"),
                    "0.9.2342.19200300.100.1.1" => Some("UID"),
                    _ => None,
                };
                match (keyword, ava.as_str()) {
                    (Some(k), Ok(value)) => format!("{k}={}", escape_rfc2253(value)),
                    _ => format!("{oid}=#{}", der_hex(ava.attr_value())),
                }
            })
            .collect();
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Hex of the DER encoding (tag, length, content) of a universal value.
fn der_hex(value: &x509_parser::der_parser::asn1_rs::Any<'_>) -> String {
    let data = value.data;
    let mut der = vec![u8::try_from(value.tag().0).unwrap_or(0x04)];
    let len = data.len();
    if len < 0x80 {
        der.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        der.push(0x80 | bytes.len() as u8);
        der.extend(bytes);
    }
    der.extend_from_slice(data);
    der.iter().map(|b| format!("{b:02x}")).collect()
}
