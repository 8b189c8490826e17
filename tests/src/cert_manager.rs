//! A stand-in for cert-manager (`spec.tls.issuerRef`, issue 20), as
//! the bash security.sh had it: cert-manager itself cannot be installed
//! from this machine's registries (it is published as container images and
//! a chart pointing at them, and the local cluster runs no containers), so a
//! test installs minimal CRDs for its `Certificate` and `Issuer`
//! ([`install_crds`], [`remove_crds`]) and plays its CA issuer: a CA made
//! with rcgen ([`StandinCa`]) signs what every `Certificate` of a namespace
//! asks for into the Secret it names ([`issue_all`]).
//!
//! Owns those CRDs (cluster-wide: only the cert-manager case may use them),
//! the Issuer and the Secrets it writes; must not touch the operator's own
//! objects.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    ByteString, api::core::v1::Secret,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch,
        PatchParams, PostParams,
    },
};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::json;
use time::OffsetDateTime;

use crate::{Error, Result, TestNamespace, manifest::FIELD_MANAGER, wait};

/// cert-manager's API group.
pub const GROUP: &str = "cert-manager.io";
/// The kinds the stand-in CRDs define.
pub const KINDS: [&str; 2] = ["Certificate", "Issuer"];
/// What [`issue_all`] writes in each Secret, as cert-manager does with the
/// `CombinedPEM` output format: the CA, the certificate, its key (PKCS#8)
/// and the key followed by the certificate.
pub const SECRET_KEYS: [&str; 4] = ["ca.crt", "tls.crt", "tls.key", "tls-combined.pem"];
/// Lifetime of a leaf [`StandinCa::issue`] signs (security.sh: `-days 90`).
pub const LEAF_LIFETIME: time::Duration = time::Duration::days(90);
/// Lifetime of the stand-in CA (security.sh: `-days 30`).
pub const CA_LIFETIME: time::Duration = time::Duration::days(30);

/// The `ApiResource` of cert-manager's `kind` (`cert-manager.io/v1`).
pub fn resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1", kind))
}

/// The `Certificate`s of `ns`.
pub fn certificates(ns: &TestNamespace) -> Api<DynamicObject> {
    Api::namespaced_with(ns.client().clone(), ns.name(), &resource("Certificate"))
}

/// The plural of `kind` in lower case (`certificates`).
fn plural(kind: &str) -> String {
    format!("{}s", kind.to_lowercase())
}

/// The stand-in CRD of `kind`: served and stored as `v1`, namespaced, any
/// content accepted (`x-kubernetes-preserve-unknown-fields`).
///
/// Errors: [`Error::Invalid`] if the manifest does not deserialize (it does).
pub fn crd(kind: &str) -> Result<CustomResourceDefinition> {
    let singular = kind.to_lowercase();
    let plural = plural(kind);
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": singular},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
    .map_err(|e| Error::Invalid(format!("the stand-in CRD of {kind}: {e}")))
}

/// Applies the stand-in CRDs of [`KINDS`] and waits up to `timeout` for
/// each to be `Established` (served).
///
/// Errors: [`Error::Kube`], [`Error::Timeout`].
pub async fn install_crds(client: &Client, timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for kind in KINDS {
        let crd = crd(kind)?;
        let name = format!("{}.{GROUP}", plural(kind));
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(Error::kube(format!("apply CRD {name}")))?;
        wait::until(
            &api,
            &name,
            &format!("CRD {name} established"),
            timeout,
            |c: Option<&CustomResourceDefinition>| {
                c.and_then(|c| c.status.as_ref()?.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            },
            |c| format!("{:?}", c.status),
        )
        .await?;
    }
    Ok(())
}

/// Deletes the stand-in CRDs of [`KINDS`] (absent ones are fine) and waits
/// up to `timeout` for each to be gone (their objects with them).
///
/// Errors: [`Error::Kube`], [`Error::Timeout`].
pub async fn remove_crds(client: &Client, timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for kind in KINDS {
        let name = format!("{}.{GROUP}", plural(kind));
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => continue,
            Err(e) => return Err(Error::kube(format!("delete CRD {name}"))(e)),
        }
        wait::until(
            &api,
            &name,
            &format!("CRD {name} deleted"),
            timeout,
            |c: Option<&CustomResourceDefinition>| c.is_none(),
            |c| format!("{:?}", c.status),
        )
        .await?;
    }
    Ok(())
}

/// Creates the cert-manager CA `Issuer` `name` of `ns` signing with the
/// Secret `secret` (`spec.ca.secretName`).
///
/// Errors: [`Error::Kube`].
pub async fn create_ca_issuer(ns: &TestNamespace, name: &str, secret: &str) -> Result<()> {
    let res = resource("Issuer");
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client().clone(), ns.name(), &res);
    let issuer =
        DynamicObject::new(name, &res).data(json!({"spec": {"ca": {"secretName": secret}}}));
    api.create(&PostParams::default(), &issuer)
        .await
        .map_err(Error::kube(format!("create Issuer {}/{name}", ns.name())))?;
    Ok(())
}

/// A certificate and its key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct Signed {
    /// The certificate.
    pub cert_pem: String,
    /// Its private key, PKCS#8.
    pub key_pem: String,
}

impl std::fmt::Debug for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signed")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// The stand-in's CA (security.sh's `openssl req -x509`): ECDSA P-256, the
/// subject `CN=<common name>`, valid [`CA_LIFETIME`] from now.
pub struct StandinCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
}

impl std::fmt::Debug for StandinCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandinCa")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

fn rcgen_err(what: &str) -> impl FnOnce(rcgen::Error) -> Error + '_ {
    move |e| Error::Invalid(format!("{what}: {e}"))
}

impl StandinCa {
    /// A new self-signed CA named `common_name`.
    ///
    /// Errors: [`Error::Invalid`] when rcgen fails.
    pub fn new(common_name: &str) -> Result<StandinCa> {
        let key = KeyPair::generate().map_err(rcgen_err("a CA key"))?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = OffsetDateTime::now_utc();
        params.not_before = now;
        params.not_after = now + CA_LIFETIME;
        let cert = params.self_signed(&key).map_err(rcgen_err("the CA"))?;
        Ok(StandinCa {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate, PEM (`ca.crt`).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A leaf for `common_name` and `dns_names` (none: no subjectAltName),
    /// with a new P-256 key, for `serverAuth` and `clientAuth`, valid
    /// [`LEAF_LIFETIME`] from now.
    ///
    /// Errors: [`Error::Invalid`] when rcgen refuses a name.
    pub fn issue(&self, common_name: &str, dns_names: &[String]) -> Result<Signed> {
        let key = KeyPair::generate().map_err(rcgen_err("a leaf key"))?;
        let mut params =
            CertificateParams::new(dns_names.to_vec()).map_err(rcgen_err("the DNS names"))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let now = OffsetDateTime::now_utc();
        params.not_before = now;
        params.not_after = now + LEAF_LIFETIME;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(rcgen_err("the leaf"))?;
        Ok(Signed {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// What a `Certificate` asks for: `(secretName, commonName, dnsNames)`.
///
/// Errors: [`Error::Invalid`] without a `spec.secretName`.
pub fn wanted(cert: &DynamicObject) -> Result<(String, String, Vec<String>)> {
    let spec = &cert.data["spec"];
    let secret = spec["secretName"].as_str().ok_or_else(|| {
        Error::Invalid(format!(
            "Certificate {:?} has no spec.secretName",
            cert.metadata.name
        ))
    })?;
    let cn = spec["commonName"].as_str().unwrap_or_default();
    let dns = spec["dnsNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|d| d.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok((secret.to_owned(), cn.to_owned(), dns))
}

/// Issues every `Certificate` of `ns` as cert-manager's CA issuer would
/// (security.sh's `play_cert_manager`): a Secret `spec.secretName` with
/// [`SECRET_KEYS`], the subject and DNS names the Certificate asks for.
/// Returns the Secrets' names.
///
/// Errors: [`Error::Kube`], [`Error::Invalid`] (see [`wanted`],
/// [`StandinCa::issue`]).
pub async fn issue_all(ns: &TestNamespace, ca: &StandinCa) -> Result<Vec<String>> {
    let list = certificates(ns)
        .list(&ListParams::default())
        .await
        .map_err(Error::kube(format!("list Certificates in {}", ns.name())))?;
    let mut written = Vec::new();
    for cert in &list.items {
        let (secret, cn, dns) = wanted(cert)?;
        let signed = ca.issue(&cn, &dns)?;
        let [ca_key, crt_key, key_key, combined_key] = SECRET_KEYS;
        let data = BTreeMap::from([
            (ca_key.to_owned(), ca.cert_pem().to_owned()),
            (crt_key.to_owned(), signed.cert_pem.clone()),
            (key_key.to_owned(), signed.key_pem.clone()),
            (
                combined_key.to_owned(),
                format!("{}{}", signed.key_pem, signed.cert_pem),
            ),
        ]);
        let s = Secret {
            metadata: ObjectMeta {
                name: Some(secret.clone()),
                ..ObjectMeta::default()
            },
            data: Some(
                data.into_iter()
                    .map(|(k, v)| (k, ByteString(v.into_bytes())))
                    .collect(),
            ),
            ..Secret::default()
        };
        ns.api::<Secret>()
            .create(&PostParams::default(), &s)
            .await
            .map_err(Error::kube(format!("create Secret {}/{secret}", ns.name())))?;
        written.push(secret);
    }
    Ok(written)
}
