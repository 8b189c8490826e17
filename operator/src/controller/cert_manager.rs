//! `spec.tls.issuerRef`: the quorum's certificates from cert-manager. The
//! operator checks that cert-manager's `Certificate` API and the issuer
//! exist (and says which is missing when not), applies the three
//! `Certificate`s (`build::certificate`), and waits for cert-manager to fill
//! their Secrets before the pods are built. cert-manager renews them in place
//! (the controllers reload the files); the operator reads its own admin
//! certificate from `<name>-operator-tls` on every pass.
//!
//! Owns those API calls only, through `DynamicObject`s: the operator neither
//! depends on cert-manager's types nor needs its CRDs to start.

use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams},
};

use super::{
    Error,
    certs::{QuorumTls, admin_client},
    kube_err,
};
use crate::{
    build::{certificate::build_certificates, fnv1a_hex},
    crd::{FIELD_MANAGER, TLS_CA_KEY, TLS_CERT_KEY, TLS_PRIVATE_KEY},
    pki::Issued,
    validate::ValidatedQuorum,
};

/// What cert-manager gave a quorum this pass.
#[derive(Debug)]
pub enum Outcome {
    /// The Secrets are filled: the CA fingerprint and the admin client.
    Ready(QuorumTls),
    /// Not usable yet; the reason and message go to the `Degraded` condition
    /// (`CertManagerMissing`, `IssuerNotFound`) or `Progressing`
    /// (`WaitingForCertificates`).
    NotReady {
        /// Condition reason.
        reason: &'static str,
        /// What is missing, for the user.
        message: String,
        /// Whether it is the user's to fix (Degraded) or a wait (Progressing).
        degraded: bool,
    },
}

fn resource(group: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, "v1", kind))
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// Makes sure cert-manager issues the certificates of `q` (which has an
/// `issuerRef`); see [`Outcome`].
///
/// # Errors
/// [`Error::Kube`] for API failures other than "not there".
pub async fn ensure(client: &Client, q: &ValidatedQuorum) -> Result<Outcome, Error> {
    let Some(r) = &q.issuer_ref else {
        return Ok(Outcome::NotReady {
            reason: "InvalidSpec",
            message: "no spec.tls.issuerRef".into(),
            degraded: true,
        });
    };
    let ns = &q.namespace;
    // 1. cert-manager's Certificate API.
    let certs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns,
        &resource("cert-manager.io", "Certificate"),
    );
    if let Err(e) = certs.list(&ListParams::default().limit(1)).await {
        if not_found(&e) {
            return Ok(Outcome::NotReady {
                reason: "CertManagerMissing",
                message: "spec.tls.issuerRef is set but cert-manager is not installed: the API certificates.cert-manager.io/v1 does not exist (install cert-manager, or remove issuerRef to use the operator's own CA)".into(),
                degraded: true,
            });
        }
        return Err(kube_err(format!("list certificates in {ns}"))(e));
    }
    // 2. The issuer.
    let issuer_res = resource(&r.group, &r.kind);
    let issuers: Api<DynamicObject> = if r.kind == "ClusterIssuer" {
        Api::all_with(client.clone(), &issuer_res)
    } else {
        Api::namespaced_with(client.clone(), ns, &issuer_res)
    };
    match issuers.get_opt(&r.name).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Ok(Outcome::NotReady {
                reason: "IssuerNotFound",
                message: format!(
                    "cert-manager is installed but the {} {:?} does not exist{}",
                    r.kind,
                    r.name,
                    if r.kind == "ClusterIssuer" {
                        String::new()
                    } else {
                        format!(" in namespace {ns}")
                    }
                ),
                degraded: true,
            });
        }
        Err(e) if not_found(&e) => {
            return Ok(Outcome::NotReady {
                reason: "IssuerNotFound",
                message: format!(
                    "the issuer kind {}.{} does not exist in this cluster",
                    r.kind, r.group
                ),
                degraded: true,
            });
        }
        Err(e) => return Err(kube_err(format!("get {} {}", r.kind, r.name))(e)),
    }
    // 3. The Certificates.
    for cert in build_certificates(q) {
        let name = cert["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        certs
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&cert),
            )
            .await
            .map_err(kube_err(format!("apply certificate {ns}/{name}")))?;
    }
    // 4. Their Secrets, filled by cert-manager.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let mut filled = Vec::new();
    for name in [q.server_secret(), q.operator_secret(), q.client_secret()] {
        let s = secrets
            .get_opt(&name)
            .await
            .map_err(kube_err(format!("get secret {ns}/{name}")))?;
        let parts = s.as_ref().and_then(|s| {
            Some((
                text(s, TLS_CA_KEY)?,
                text(s, TLS_CERT_KEY)?,
                text(s, TLS_PRIVATE_KEY)?,
            ))
        });
        match parts {
            Some(p) if !p.0.is_empty() => filled.push(p),
            _ => {
                return Ok(Outcome::NotReady {
                    reason: "WaitingForCertificates",
                    message: format!(
                        "waiting for cert-manager to issue secret {name} (with ca.crt, tls.crt, tls.key)"
                    ),
                    degraded: false,
                });
            }
        }
    }
    let (ca, _, _) = &filled[0];
    let (op_ca, op_cert, op_key) = &filled[1];
    let operator = Issued {
        cert_pem: op_cert.clone(),
        key_pem: op_key.clone(),
        not_before: 0,
        not_after: 0,
        renew_after: 0,
    };
    let admin = admin_client(op_ca, &operator).map_err(|message| Error::Tls {
        quorum: format!("{ns}/{}", q.name),
        message,
    })?;
    Ok(Outcome::Ready(QuorumTls {
        ca_hash: fnv1a_hex(ca.as_bytes()),
        admin: std::sync::Arc::new(admin),
        rotation: None,
    }))
}
