//! The security part of the configuration: which security protocol each
//! listener speaks (`listener.security.protocol.map`) and the `ssl.*` keys of
//! a listener mapped to SSL, with Kafka's names, defaults and per-listener
//! prefix (`listener.name.<name>.ssl.…`, the name lower-cased, wins over the
//! bare key).
//!
//! It fails closed: a listener without a protocol when the map is set, an
//! unknown protocol, SASL (not implemented), a JKS or PKCS12 keystore, an
//! enabled protocol other than TLSv1.2/TLSv1.3, or a value it cannot use is an
//! error naming the listener and the key, so that a node never starts in
//! plaintext when TLS was asked for. It only parses: it must not read the
//! certificate files (that is `wire::tls`, at start).

use std::{collections::BTreeMap, path::PathBuf};

use super::{ConfigError, Endpoint, Result, invalid, list};

/// `listener.security.protocol.map`.
pub const PROTOCOL_MAP_KEY: &str = "listener.security.protocol.map";

/// A listener's security protocol (Kafka's `SecurityProtocol`, with its ids
/// as written in RegisterControllerRecord).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// `PLAINTEXT` (id 0): no encryption, no authentication.
    Plaintext,
    /// `SSL` (id 1): TLS, the principal from the client certificate.
    Ssl,
}

impl SecurityProtocol {
    /// Kafka's id of the protocol (`SecurityProtocol.id`).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
        }
    }

    /// Kafka's name, `PLAINTEXT` or `SSL`.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
        }
    }

    /// Parses a protocol name as written in the map or in `security.protocol`.
    ///
    /// Errors: a message saying why the name is refused (SASL is not
    /// implemented; anything else is unknown); the caller adds the key.
    pub fn parse(name: &str) -> std::result::Result<Self, String> {
        match name.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Ok(SecurityProtocol::Plaintext),
            "SSL" => Ok(SecurityProtocol::Ssl),
            p @ ("SASL_SSL" | "SASL_PLAINTEXT") => Err(format!(
                "security protocol {p} is not supported (this controller has no SASL): use SSL (mTLS) or PLAINTEXT"
            )),
            other => Err(format!(
                "unknown security protocol {other:?}: expected PLAINTEXT or SSL"
            )),
        }
    }
}

/// `ssl.client.auth`: whether a TLS server asks for a client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `none` (Kafka's default): no client certificate asked for.
    None,
    /// `requested`: asked for; a client without one is `User:ANONYMOUS`.
    Requested,
    /// `required`: a client without a certificate from the truststore is refused.
    Required,
}

/// A TLS protocol version of `ssl.enabled.protocols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// `TLSv1.2`.
    Tls12,
    /// `TLSv1.3`.
    Tls13,
}

/// Where a keystore's certificate chain and private key come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyMaterial {
    /// `ssl.keystore.location` of a PEM keystore: one file holding the
    /// private key and the certificate chain (KIP-651).
    File(PathBuf),
    /// `ssl.keystore.certificate.chain` and `ssl.keystore.key`: PEM text in
    /// the configuration itself (KIP-651).
    Inline {
        /// The certificate chain, PEM.
        chain: String,
        /// The private key, PEM (unencrypted PKCS#8, PKCS#1 or SEC1).
        key: String,
    },
}

/// Where trusted certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustMaterial {
    /// `ssl.truststore.location` of a PEM truststore (`ssl.truststore.type=PEM`).
    File(PathBuf),
    /// `ssl.truststore.certificates`: PEM text in the configuration.
    Inline(String),
}

/// The `ssl.*` settings of one listener or client (Kafka's `SslConfigs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslSettings {
    /// The keystore (`ssl.keystore.*`): required on a server, optional on a
    /// client (then no client certificate is offered).
    pub key: Option<KeyMaterial>,
    /// The truststore (`ssl.truststore.*`); `None`: the system's roots.
    pub trust: Option<TrustMaterial>,
    /// `ssl.client.auth` (`none`).
    pub client_auth: ClientAuth,
    /// `ssl.enabled.protocols` (`TLSv1.2,TLSv1.3`).
    pub enabled_protocols: Vec<TlsVersion>,
    /// `ssl.cipher.suites` (empty: rustls's defaults), IANA names as Java
    /// writes them (`TLS_AES_128_GCM_SHA256`,
    /// `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`, …).
    pub cipher_suites: Vec<String>,
    /// `ssl.endpoint.identification.algorithm` (`https`): whether an outgoing
    /// connection checks the server's certificate against the host name
    /// dialled; an empty value turns the check off (the chain is still
    /// verified).
    pub endpoint_identification: bool,
}

/// The security of one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSecurity {
    /// Its protocol.
    pub protocol: SecurityProtocol,
    /// Its TLS settings, when `protocol` is SSL.
    pub ssl: Option<SslSettings>,
}

/// Looks keys up with Kafka's per-listener prefix and removes what it reads,
/// so that the caller can report the rest as unknown.
struct Lookup<'a> {
    map: &'a mut BTreeMap<String, String>,
    prefix: String,
}

impl Lookup<'_> {
    /// The value of `key`: `<prefix>key` first, then `key`; empty counts as unset.
    fn get(&mut self, key: &str) -> Option<(String, String)> {
        let prefixed = format!("{}{key}", self.prefix);
        let found = if self.map.contains_key(&prefixed) {
            self.map
                .get(&prefixed)
                .map(|v| (prefixed, v.trim().to_owned()))
        } else {
            self.map
                .get(key)
                .map(|v| (key.to_owned(), v.trim().to_owned()))
        };
        found.filter(|(_, v)| !v.is_empty())
    }
}

/// Every `ssl.*` key this module reads (others under `ssl.` stay unknown).
const SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm",
];

/// Removes the keys [`parse_ssl`] reads (bare and with `prefix`) from `map`.
fn forget_ssl_keys(map: &mut BTreeMap<String, String>, prefix: &str) {
    for key in SSL_KEYS {
        map.remove(*key);
        map.remove(&format!("{prefix}{key}"));
    }
}

/// Parses the `ssl.*` keys, looked up first with `prefix` (empty for a
/// client's file), for `who` (a listener name or "the client", for errors).
///
/// Errors: [`ConfigError::Invalid`] naming the key: a JKS or PKCS12 store
/// (convert to PEM), a PEM keystore without a location or chain and key,
/// both a location and inline PEM, an unknown `ssl.client.auth`, an enabled
/// protocol other than TLSv1.2 or TLSv1.3; [`ConfigError::Missing`] for a
/// server (`server = true`) without a keystore.
pub fn parse_ssl(
    map: &mut BTreeMap<String, String>,
    prefix: &str,
    who: &str,
    server: bool,
) -> Result<SslSettings> {
    let mut l = Lookup {
        map,
        prefix: prefix.to_owned(),
    };
    let keystore_type = l.get("ssl.keystore.type");
    let location = l.get("ssl.keystore.location");
    let chain = l.get("ssl.keystore.certificate.chain");
    let key_pem = l.get("ssl.keystore.key");
    let key = if location.is_none() && chain.is_none() && key_pem.is_none() {
        None
    } else {
        // Kafka's default ssl.keystore.type is JKS; PEM text in the config
        // implies PEM.
        let (type_key, kind) = keystore_type
            .clone()
            .unwrap_or_else(|| ("ssl.keystore.type".to_owned(), default_store_type(&chain)));
        check_store_type(&type_key, &kind, who)?;
        match (location, chain, key_pem) {
            (Some((_, path)), None, None) => Some(KeyMaterial::File(PathBuf::from(path))),
            (None, Some((_, chain)), Some((_, key))) => Some(KeyMaterial::Inline { chain, key }),
            (Some((k, v)), _, _) => {
                return Err(invalid(
                    &k,
                    &v,
                    format!(
                        "listener {who}: set either ssl.keystore.location or ssl.keystore.certificate.chain with ssl.keystore.key, not both"
                    ),
                ));
            }
            (None, chain, key) => {
                let (k, v) = chain.or(key).unwrap_or_default();
                return Err(invalid(
                    &k,
                    &v,
                    format!(
                        "listener {who}: ssl.keystore.certificate.chain and ssl.keystore.key go together"
                    ),
                ));
            }
        }
    };
    if server && key.is_none() {
        return Err(ConfigError::Invalid {
            key: format!("{prefix}ssl.keystore.location"),
            value: String::new(),
            reason: format!(
                "listener {who} is SSL: set ssl.keystore.type=PEM with ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key"
            ),
        });
    }
    let trust_location = l.get("ssl.truststore.location");
    let trust_inline = l.get("ssl.truststore.certificates");
    let trust = match (trust_location, trust_inline) {
        (None, None) => None,
        (location, inline) => {
            let (type_key, kind) = l.get("ssl.truststore.type").unwrap_or_else(|| {
                (
                    "ssl.truststore.type".to_owned(),
                    default_store_type(&inline),
                )
            });
            check_store_type(&type_key, &kind, who)?;
            match (location, inline) {
                (Some((_, path)), None) => Some(TrustMaterial::File(PathBuf::from(path))),
                (None, Some((_, pem))) => Some(TrustMaterial::Inline(pem)),
                (Some((k, v)), Some(_)) => {
                    return Err(invalid(
                        &k,
                        &v,
                        format!(
                            "listener {who}: set either ssl.truststore.location or ssl.truststore.certificates, not both"
                        ),
                    ));
                }
                (None, None) => None,
            }
        }
    };
    let client_auth = match l.get("ssl.client.auth") {
        None => ClientAuth::None,
        Some((k, v)) => match v.to_ascii_lowercase().as_str() {
            "none" => ClientAuth::None,
            "requested" => ClientAuth::Requested,
            "required" => ClientAuth::Required,
            _ => {
                return Err(invalid(
                    &k,
                    &v,
                    format!("listener {who}: expected none, requested or required"),
                ));
            }
        },
    };
    if client_auth != ClientAuth::None && server && trust.is_none() {
        return Err(ConfigError::Invalid {
            key: format!("{prefix}ssl.truststore.location"),
            value: String::new(),
            reason: format!(
                "listener {who} has ssl.client.auth set: client certificates need a truststore (ssl.truststore.type=PEM with ssl.truststore.location)"
            ),
        });
    }
    let enabled_protocols = match l.get("ssl.enabled.protocols") {
        None => vec![TlsVersion::Tls12, TlsVersion::Tls13],
        Some((k, v)) => {
            let mut versions = Vec::new();
            for p in list(&v) {
                versions.push(match p {
                    "TLSv1.2" => TlsVersion::Tls12,
                    "TLSv1.3" => TlsVersion::Tls13,
                    other => {
                        return Err(invalid(
                            &k,
                            &v,
                            format!("listener {who}: protocol {other} is not supported (only TLSv1.2 and TLSv1.3)"),
                        ));
                    }
                });
            }
            if versions.is_empty() {
                return Err(invalid(&k, &v, format!("listener {who}: empty list")));
            }
            versions.sort();
            versions.dedup();
            versions
        }
    };
    let cipher_suites = l
        .get("ssl.cipher.suites")
        .map(|(_, v)| list(&v).map(str::to_owned).collect())
        .unwrap_or_default();
    let endpoint_identification = match l.get("ssl.endpoint.identification.algorithm") {
        None => {
            !l.map
                .contains_key(&format!("{prefix}ssl.endpoint.identification.algorithm"))
                && !l.map.contains_key("ssl.endpoint.identification.algorithm")
        }
        Some((_, v)) if v.eq_ignore_ascii_case("https") => true,
        Some((k, v)) => {
            return Err(invalid(
                &k,
                &v,
                format!("listener {who}: expected https or an empty value"),
            ));
        }
    };
    if let Some((k, _)) = l.get("ssl.key.password")
        && key.is_some()
    {
        return Err(invalid(
            &k,
            "(hidden)",
            format!(
                "listener {who}: encrypted private keys are not supported: decrypt it (openssl pkcs8 -nocrypt) and remove ssl.key.password"
            ),
        ));
    }
    forget_ssl_keys(l.map, prefix);
    Ok(SslSettings {
        key,
        trust,
        client_auth,
        enabled_protocols,
        cipher_suites,
        endpoint_identification,
    })
}

/// Kafka's default store type: PEM when the PEM text is inline, else JKS.
fn default_store_type(inline: &Option<(String, String)>) -> String {
    if inline.is_some() { "PEM" } else { "JKS" }.to_owned()
}

fn check_store_type(key: &str, kind: &str, who: &str) -> Result<()> {
    match kind.to_ascii_uppercase().as_str() {
        "PEM" => Ok(()),
        "JKS" => Err(invalid(
            key,
            kind,
            format!(
                "listener {who}: JKS stores are not supported: convert to PEM (keytool -importkeystore -deststoretype PKCS12, then openssl pkcs12 -nodes) and set {key}=PEM"
            ),
        )),
        "PKCS12" => Err(invalid(
            key,
            kind,
            format!(
                "listener {who}: PKCS12 stores are not supported yet: convert to PEM (openssl pkcs12 -in STORE -nodes -out store.pem) and set {key}=PEM"
            ),
        )),
        _ => Err(invalid(
            key,
            kind,
            format!("listener {who}: unknown store type, expected PEM"),
        )),
    }
}

/// Parses `listener.security.protocol.map` and the TLS settings of every
/// listener mapped to SSL, removing the keys read from `map`.
///
/// Without the map every listener is PLAINTEXT (Kafka's KRaft default for
/// controller listeners). With it, each listener must be in it.
///
/// Errors: [`ConfigError::Invalid`] naming the listener and the key: a
/// listener absent from the map, an unknown or SASL protocol, a malformed
/// entry, or any `ssl.*` problem of [`parse_ssl`].
pub fn parse_listener_security(
    map: &mut BTreeMap<String, String>,
    listeners: &[Endpoint],
) -> Result<BTreeMap<String, ListenerSecurity>> {
    let mut protocols = BTreeMap::new();
    if let Some(raw) = map.remove(PROTOCOL_MAP_KEY) {
        for entry in list(&raw) {
            let (name, protocol) = entry.split_once(':').ok_or_else(|| {
                invalid(
                    PROTOCOL_MAP_KEY,
                    &raw,
                    format!("{entry:?} is not NAME:PROTOCOL"),
                )
            })?;
            let protocol = SecurityProtocol::parse(protocol).map_err(|reason| {
                invalid(PROTOCOL_MAP_KEY, &raw, format!("listener {name}: {reason}"))
            })?;
            protocols.insert(name.trim().to_owned(), protocol);
        }
        for l in listeners {
            if !protocols.contains_key(&l.name) {
                return Err(invalid(
                    PROTOCOL_MAP_KEY,
                    &raw,
                    format!("listener {} has no security protocol in it", l.name),
                ));
            }
        }
    }
    let mut out = BTreeMap::new();
    // Every SSL listener reads the bare `ssl.*` keys as well as its own
    // prefixed ones, so each reads them from the map as it was; the keys
    // read are removed from `map` once all are parsed.
    let shared = map.clone();
    for l in listeners {
        let protocol = protocols
            .get(&l.name)
            .copied()
            .unwrap_or(SecurityProtocol::Plaintext);
        let prefix = format!("listener.name.{}.", l.name.to_ascii_lowercase());
        let ssl = match protocol {
            SecurityProtocol::Plaintext => None,
            SecurityProtocol::Ssl => {
                let settings = parse_ssl(&mut shared.clone(), &prefix, &l.name, true)?;
                forget_ssl_keys(map, &prefix);
                Some(settings)
            }
        };
        out.insert(l.name.clone(), ListenerSecurity { protocol, ssl });
    }
    Ok(out)
}

/// Kafka's `StandardAuthorizer` (KRaft), the one `authorizer.class.name` we accept.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Authorization settings (Kafka's `authorizer.class.name`, `super.users`,
/// `allow.everyone.if.no.acl.found`). ACLs stored in the metadata log are not
/// implemented yet: with the authorizer on, super users may do everything and
/// everyone else what the no-ACL rule says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthorizerSettings {
    /// Whether `authorizer.class.name` is [`STANDARD_AUTHORIZER`] (default
    /// empty: no authorization, everyone may do everything, as Kafka).
    pub enabled: bool,
    /// `super.users`: principals (`User:NAME`, separated by `;`) allowed everything.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found` (`false`): with no ACL stored, whether
    /// a principal that is not a super user is allowed.
    pub allow_everyone_if_no_acl_found: bool,
}

/// Parses the authorizer keys, removing them from `map`.
///
/// Errors: [`ConfigError::Invalid`] for an `authorizer.class.name` other
/// than [`STANDARD_AUTHORIZER`] (fail closed: an authorizer we do not have
/// must not mean "allow all"), a `super.users` entry without `User:`, or a
/// non-boolean `allow.everyone.if.no.acl.found`.
pub fn parse_authorizer(map: &mut BTreeMap<String, String>) -> Result<AuthorizerSettings> {
    let take = |map: &mut BTreeMap<String, String>, key: &str| {
        map.remove(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let enabled = match take(map, "authorizer.class.name") {
        None => false,
        Some(v) if v == STANDARD_AUTHORIZER => true,
        Some(v) => {
            return Err(invalid(
                "authorizer.class.name",
                &v,
                format!("only {STANDARD_AUTHORIZER} is supported"),
            ));
        }
    };
    let mut super_users = Vec::new();
    if let Some(v) = take(map, "super.users") {
        for user in v.split(';').map(str::trim).filter(|u| !u.is_empty()) {
            if !user.starts_with("User:") {
                return Err(invalid(
                    "super.users",
                    &v,
                    format!("{user:?} is not User:NAME"),
                ));
            }
            super_users.push(user.to_owned());
        }
    }
    let allow_everyone_if_no_acl_found = match take(map, "allow.everyone.if.no.acl.found") {
        None => false,
        Some(v) => v.parse().map_err(|_| {
            invalid(
                "allow.everyone.if.no.acl.found",
                &v,
                "expected true or false",
            )
        })?,
    };
    Ok(AuthorizerSettings {
        enabled,
        super_users,
        allow_everyone_if_no_acl_found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn controller() -> Vec<Endpoint> {
        vec![Endpoint {
            name: "CONTROLLER".into(),
            host: String::new(),
            port: 9093,
        }]
    }

    #[test]
    fn two_ssl_listeners_both_read_the_bare_ssl_keys_and_their_own_prefixed_ones() {
        let both = vec![
            controller()[0].clone(),
            Endpoint {
                name: "SECURE".into(),
                host: String::new(),
                port: 9094,
            },
        ];
        let mut m = map(&[
            (PROTOCOL_MAP_KEY, "CONTROLLER:SSL,SECURE:SSL"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/tls/node.pem"),
            (
                "listener.name.secure.ssl.keystore.location",
                "/tls/secure.pem",
            ),
        ]);
        let s = parse_listener_security(&mut m, &both).expect("valid");
        let key = |name: &str| s[name].ssl.as_ref().and_then(|ssl| ssl.key.clone());
        assert_eq!(
            key("CONTROLLER"),
            Some(KeyMaterial::File("/tls/node.pem".into()))
        );
        assert_eq!(
            key("SECURE"),
            Some(KeyMaterial::File("/tls/secure.pem".into()))
        );
        assert!(m.is_empty(), "keys read are removed: {m:?}");
    }

    #[test]
    fn without_the_map_every_listener_is_plaintext() {
        let s = parse_listener_security(&mut map(&[]), &controller()).expect("valid");
        assert_eq!(s["CONTROLLER"].protocol, SecurityProtocol::Plaintext);
    }

    #[test]
    fn sasl_is_refused_naming_the_listener_and_the_key() {
        let err = parse_listener_security(
            &mut map(&[(PROTOCOL_MAP_KEY, "CONTROLLER:SASL_SSL")]),
            &controller(),
        )
        .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains(PROTOCOL_MAP_KEY), "{text}");
        assert!(text.contains("listener CONTROLLER"), "{text}");
        assert!(text.contains("SASL_SSL"), "{text}");
    }

    #[test]
    fn an_unknown_protocol_or_an_unmapped_listener_is_refused() {
        let err = parse_listener_security(
            &mut map(&[(PROTOCOL_MAP_KEY, "CONTROLLER:TLS")]),
            &controller(),
        )
        .expect_err("refused");
        assert!(
            err.to_string().contains("unknown security protocol"),
            "{err}"
        );
        let err =
            parse_listener_security(&mut map(&[(PROTOCOL_MAP_KEY, "OTHER:SSL")]), &controller())
                .expect_err("refused");
        assert!(err.to_string().contains("listener CONTROLLER"), "{err}");
    }

    #[test]
    fn ssl_without_a_keystore_is_refused() {
        let err = parse_listener_security(
            &mut map(&[(PROTOCOL_MAP_KEY, "CONTROLLER:SSL")]),
            &controller(),
        )
        .expect_err("refused");
        assert!(
            err.to_string()
                .contains("listener.name.controller.ssl.keystore.location"),
            "{err}"
        );
    }

    #[test]
    fn jks_and_pkcs12_are_refused_with_a_way_to_convert() {
        for (kind, needle) in [("JKS", "keytool"), ("PKCS12", "openssl pkcs12")] {
            let err = parse_listener_security(
                &mut map(&[
                    (PROTOCOL_MAP_KEY, "CONTROLLER:SSL"),
                    ("ssl.keystore.type", kind),
                    ("ssl.keystore.location", "/k"),
                ]),
                &controller(),
            )
            .expect_err("refused");
            assert!(err.to_string().contains(needle), "{err}");
        }
        // Kafka's default store type is JKS.
        let err = parse_listener_security(
            &mut map(&[
                (PROTOCOL_MAP_KEY, "CONTROLLER:SSL"),
                ("ssl.keystore.location", "/k"),
            ]),
            &controller(),
        )
        .expect_err("refused");
        assert!(err.to_string().contains("JKS"), "{err}");
    }

    #[test]
    fn a_pem_listener_takes_prefixed_keys_first_and_consumes_them() {
        let mut m = map(&[
            (PROTOCOL_MAP_KEY, "CONTROLLER:SSL"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/bare"),
            (
                "listener.name.controller.ssl.keystore.location",
                "/prefixed",
            ),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/ca"),
            ("ssl.client.auth", "required"),
            ("ssl.enabled.protocols", "TLSv1.3"),
            ("ssl.endpoint.identification.algorithm", ""),
            ("something.else", "1"),
        ]);
        let s = parse_listener_security(&mut m, &controller()).expect("valid");
        let ssl = s["CONTROLLER"].ssl.clone().expect("ssl");
        assert_eq!(ssl.key, Some(KeyMaterial::File("/prefixed".into())));
        assert_eq!(ssl.trust, Some(TrustMaterial::File("/ca".into())));
        assert_eq!(ssl.client_auth, ClientAuth::Required);
        assert_eq!(ssl.enabled_protocols, vec![TlsVersion::Tls13]);
        assert!(!ssl.endpoint_identification);
        assert_eq!(m.keys().collect::<Vec<_>>(), vec!["something.else"]);
    }

    #[test]
    fn an_unknown_authorizer_fails_closed_and_super_users_split_on_semicolons() {
        let err = parse_authorizer(&mut map(&[(
            "authorizer.class.name",
            "kafka.security.authorizer.AclAuthorizer",
        )]))
        .expect_err("refused");
        assert!(err.to_string().contains("authorizer.class.name"), "{err}");
        let a = parse_authorizer(&mut map(&[
            ("authorizer.class.name", STANDARD_AUTHORIZER),
            ("super.users", "User:CN=admin,O=x;User:ops"),
        ]))
        .expect("valid");
        assert!(a.enabled);
        assert_eq!(a.super_users, vec!["User:CN=admin,O=x", "User:ops"]);
        assert!(!a.allow_everyone_if_no_acl_found);
    }

    #[test]
    fn old_tls_versions_are_refused() {
        let err = parse_listener_security(
            &mut map(&[
                (PROTOCOL_MAP_KEY, "CONTROLLER:SSL"),
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", "/k"),
                ("ssl.enabled.protocols", "TLSv1.1,TLSv1.2"),
            ]),
            &controller(),
        )
        .expect_err("refused");
        assert!(err.to_string().contains("TLSv1.1"), "{err}");
    }
}
