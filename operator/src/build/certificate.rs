//! cert-manager `Certificate` objects (`cert-manager.io/v1`) of a quorum with
//! `spec.tls.issuerRef`: the same three identities as the operator's own CA
//! makes (controllers, operator, brokers) in the same Secrets, their common
//! names carrying the quorum (`kraft-operator.<namespace>.<name>`, see
//! `pki::cn_scope`: a shared issuer does not make one quorum's certificates
//! super users of another), with
//! cert-manager's default lifetimes (90 days, renewed at 2/3) written out.
//! Pure: JSON objects, applied as `DynamicObject`s (the operator does not
//! depend on cert-manager's types, and works without its CRDs installed).

use serde_json::{Value, json};

use crate::{
    crd::{FIELD_MANAGER, IssuerRef},
    pki::{self, BROKER_CN, OPERATOR_CN},
    validate::ValidatedQuorum,
};

/// cert-manager's API group/version of `Certificate`.
pub const CERT_MANAGER_API_VERSION: &str = "cert-manager.io/v1";
/// The Secret key of cert-manager's `CombinedPEM` output format (key and
/// chain in one file, the controller's PEM keystore).
pub const COMBINED_PEM_KEY: &str = "tls-combined.pem";

fn issuer(r: &IssuerRef) -> Value {
    json!({"name": r.name, "kind": r.kind, "group": r.group})
}

/// The Certificate `secret_name` for `common_name` with `dns_names`.
pub fn certificate(
    q: &ValidatedQuorum,
    r: &IssuerRef,
    secret_name: &str,
    common_name: &str,
    dns_names: &[String],
    usages: &[&str],
) -> Value {
    let owner = serde_json::to_value(&q.owner).unwrap_or(Value::Null);
    let mut spec = json!({
        "secretName": secret_name,
        "commonName": common_name,
        "subject": {},
        "duration": "2160h",
        "renewBefore": "720h",
        "privateKey": {"algorithm": "ECDSA", "size": 256, "encoding": "PKCS8", "rotationPolicy": "Always"},
        "usages": usages,
        "issuerRef": issuer(r),
        "additionalOutputFormats": [{"type": "CombinedPEM"}],
        "secretTemplate": {"labels": q.labels()},
    });
    if !dns_names.is_empty() {
        spec["dnsNames"] = json!(dns_names);
    }
    json!({
        "apiVersion": CERT_MANAGER_API_VERSION,
        "kind": "Certificate",
        "metadata": {
            "name": secret_name,
            "namespace": q.namespace,
            "labels": q.labels(),
            "ownerReferences": [owner],
            "annotations": {"kraft.krabka.io/managed-by": FIELD_MANAGER},
        },
        "spec": spec,
    })
}

/// The three Certificates of `q` (controllers, operator, brokers), or none
/// without an `issuerRef`.
pub fn build_certificates(q: &ValidatedQuorum) -> Vec<Value> {
    let Some(r) = &q.issuer_ref else {
        return Vec::new();
    };
    let server = pki::controller_leaf(q);
    vec![
        certificate(
            q,
            r,
            &q.server_secret(),
            &server.common_name,
            &server.dns_names,
            &[
                "server auth",
                "client auth",
                "digital signature",
                "key encipherment",
            ],
        ),
        certificate(
            q,
            r,
            &q.operator_secret(),
            &pki::common_name(OPERATOR_CN, pki::cn_scope(q)),
            &[],
            &["client auth", "digital signature", "key encipherment"],
        ),
        certificate(
            q,
            r,
            &q.client_secret(),
            &pki::common_name(BROKER_CN, pki::cn_scope(q)),
            &[],
            &["client auth", "digital signature", "key encipherment"],
        ),
    ]
}
