//! The ConfigMap holding the controllers' shared `server.properties` and the
//! `format` init container's mode. Pure.
//!
//! The file holds only what is the same for every pod; `node.id` and
//! `advertised.listeners` differ per pod and are passed on the command line
//! from the pod's own name and ordinal (see [`super::statefulset`]). The
//! format mode ([`FORMAT_MODE_KEY`]) lives here rather than in the pod
//! template because it changes once, at bootstrap: as data it reaches pods
//! formatted from then on without making every running pod out of date.

use std::{collections::BTreeMap, fmt::Write as _};

use k8s_openapi::api::core::v1::ConfigMap;

use super::child_meta;
use crate::{
    crd::{
        CONTROLLER_HTTP_PORT, CONTROLLER_LISTENER_NAME, DATA_DIR, FORMAT_MODE_KEY,
        HTTP_LISTENER_KEY, SERVER_PROPERTIES_KEY, TLS_CA_KEY, TLS_DIR, TLS_KEYSTORE_KEY,
    },
    pki::{cn_scope, super_users},
    validate::{FormatMode, ValidatedQuorum},
};

/// The `server.properties` text: operator-owned keys first, then
/// `spec.config` in key order (validation has rejected reserved keys).
pub fn server_properties(q: &ValidatedQuorum) -> String {
    let mut s = String::from(
        "# Managed by kraft-operator. node.id and advertised.listeners are set per pod\n\
         # with --override on the kraft-controller command line.\n",
    );
    let owned = [
        ("process.roles", "controller".to_string()),
        (
            "listeners",
            format!("{CONTROLLER_LISTENER_NAME}://0.0.0.0:{}", q.listener_port),
        ),
        (
            "controller.listener.names",
            CONTROLLER_LISTENER_NAME.to_string(),
        ),
        (
            "listener.security.protocol.map",
            format!(
                "{CONTROLLER_LISTENER_NAME}:{}",
                if q.tls_enabled { "SSL" } else { "PLAINTEXT" }
            ),
        ),
        ("metadata.log.dir", DATA_DIR.to_string()),
        match q.static_voters() {
            // An adopted static quorum before its kraft.version upgrade.
            Some(voters) => ("controller.quorum.voters", voters),
            None => ("controller.quorum.bootstrap.servers", q.bootstrap_servers()),
        },
        // The kubelet's probes (/readyz, /livez) and Prometheus reach the pod
        // IP: every interface, on the port the container declares.
        (HTTP_LISTENER_KEY, format!("0.0.0.0:{CONTROLLER_HTTP_PORT}")),
    ];
    let mut owned = owned.to_vec();
    if q.tls_enabled {
        owned.extend(tls_properties(q));
    }
    for (k, v) in owned {
        // Writing to a String cannot fail.
        let _ = writeln!(s, "{k}={v}");
    }
    for (k, v) in &q.config {
        let _ = writeln!(s, "{k}={v}");
    }
    s
}

/// The TLS keys of a quorum with `spec.tls.enabled`: the mounted Secret as
/// PEM keystore (`keystore.pem` of the operator's CA, or cert-manager's
/// `tls-combined.pem` with `issuerRef`) and truststore, client certificates
/// required, and the
/// `StandardAuthorizer` with the controllers' and the operator's principals
/// as `super.users` (so a certificate of the CA that is not one of them, the
/// brokers' included, may do only what ACLs allow).
pub fn tls_properties(q: &ValidatedQuorum) -> Vec<(&'static str, String)> {
    let keystore = if q.issuer_ref.is_some() {
        super::certificate::COMBINED_PEM_KEY
    } else {
        TLS_KEYSTORE_KEY
    };
    vec![
        ("ssl.keystore.type", "PEM".to_string()),
        ("ssl.keystore.location", format!("{TLS_DIR}/{keystore}")),
        ("ssl.truststore.type", "PEM".to_string()),
        ("ssl.truststore.location", format!("{TLS_DIR}/{TLS_CA_KEY}")),
        ("ssl.client.auth", "required".to_string()),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer".to_string(),
        ),
        ("super.users", super_users(cn_scope(q))),
    ]
}

/// The one `kraft-controller format` argument that selects its mode
/// (DESIGN 2.4): `--initial-controllers=<id@host:port:dir,…>` while the quorum
/// was never bootstrapped, `--no-initial-controllers` after it
/// (`--initial-controllers-for=<ids>/<list>` while initial voters `<ids>`
/// were never seen formatted, docs/decisions.md D19);
/// `--expect-formatted` while an adopted static quorum migrates (issue 22). One
/// argument (clap takes `--flag=value`), because Kubernetes expands
/// `$(KRAFT_FORMAT_MODE)` into exactly one argument.
pub fn format_mode_arg(q: &ValidatedQuorum) -> String {
    match q.format_mode() {
        FormatMode::InitialControllers(list) => format!("--initial-controllers={list}"),
        FormatMode::InitialControllersFor(ids, list) => {
            let ids = ids.iter().map(i32::to_string).collect::<Vec<_>>().join("+");
            format!("--initial-controllers-for={ids}/{list}")
        }
        FormatMode::NoInitialControllers => "--no-initial-controllers".to_string(),
        FormatMode::ExpectFormatted => "--expect-formatted".to_string(),
    }
}

/// Builds the ConfigMap (same name as the KraftQuorum): `server.properties`
/// and [`FORMAT_MODE_KEY`].
pub fn build_configmap(q: &ValidatedQuorum) -> ConfigMap {
    ConfigMap {
        metadata: child_meta(q, &q.name),
        data: Some(BTreeMap::from([
            (SERVER_PROPERTIES_KEY.to_string(), server_properties(q)),
            (FORMAT_MODE_KEY.to_string(), format_mode_arg(q)),
        ])),
        ..ConfigMap::default()
    }
}
