//! Certificates of a quorum with `spec.tls.enabled` and the operator's own CA
//! (DESIGN 3.2, before the children): the CA Secret `<name>-ca`, the
//! controllers' Secret `<name>-tls` (mounted by every pod), the operator's
//! admin client Secret `<name>-operator-tls` and the brokers' client Secret
//! `<name>-client-tls`. A leaf is reissued in place when it is two thirds
//! through its life, when what it must say changed (service name, domain) or
//! when its CA or trust bundle changed; the controllers reload a replaced
//! file without a restart (`wire::tls::Reloading`). The CA is made only when
//! its Secret does not exist, and replaced only by a rotation
//! (`pki::rotation`) recorded on the CA Secret before any leaf changes: a
//! CA Secret that does not load is an error, never replaced (that would cut
//! the quorum off from its own certificates).
//!
//! Owns reading and writing those Secrets and the operator's admin TLS
//! client; it never logs key material (errors name the Secret, not its data).

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kraft_controller::{
    config::security::{ClientAuth, KeyMaterial, SslSettings, TlsVersion, TrustMaterial},
    wire::tls::TlsClient,
};
use kube::{Api, Client};

use super::{Error, apply::apply_object, kube_err, observe::Rollout};
use crate::{
    build::child_meta,
    crd::{
        CLIENT_TLS_DIR, TLS_CA_KEY, TLS_CERT_KEY, TLS_CLIENT_PROPERTIES_KEY, TLS_KEYSTORE_KEY,
        TLS_PRIVATE_KEY,
    },
    pki::{
        self, BROKER_CN, CA_LIFETIME_SECS, Issued, Leaf, OPERATOR_CN,
        rotation::{self, CaRecord, Phase},
    },
    validate::ValidatedQuorum,
};

/// Secret annotation: `notBefore` of the certificate, unix seconds.
pub const ANNOTATION_NOT_BEFORE: &str = "kraft.krabka.io/not-before";
/// Secret annotation: `notAfter` of the certificate, unix seconds.
pub const ANNOTATION_NOT_AFTER: &str = "kraft.krabka.io/not-after";
/// Secret annotation: when the operator reissues the certificate, unix seconds.
pub const ANNOTATION_RENEW_AFTER: &str = "kraft.krabka.io/renew-after";
/// Secret annotation: fingerprint of what the leaf says ([`Leaf::fingerprint`]).
pub const ANNOTATION_LEAF: &str = "kraft.krabka.io/leaf";
/// Secret annotation: fingerprint of the CA that signed the leaf.
pub const ANNOTATION_SIGNED_BY: &str = "kraft.krabka.io/signed-by";
/// KraftQuorum annotation, for tests only: the lifetime of leaf
/// certificates in seconds instead of 90 days (renewal is then seen in minutes).
pub const ANNOTATION_TEST_LEAF_LIFETIME: &str = "kraft.krabka.io/test-leaf-lifetime-seconds";
/// CA Secret key: the CA's private key.
pub const CA_PRIVATE_KEY: &str = "ca.key";
/// CA Secret key: the next CA's certificate during a rotation's `trust` phase.
pub const NEXT_CA_CERT: &str = "next-ca.crt";
/// CA Secret key: the next CA's private key during a rotation's `trust` phase.
pub const NEXT_CA_KEY: &str = "next-ca.key";
/// CA Secret key: the previous CA's certificate during a rotation's
/// `reissue` phase (still trusted, signs nothing).
pub const PREVIOUS_CA_CERT: &str = "previous-ca.crt";
/// CA Secret annotation: the phase of a CA rotation (`trust`, `reissue`),
/// absent when none runs ([`Phase`]).
pub const ANNOTATION_CA_ROTATION: &str = "kraft.krabka.io/ca-rotation";
/// CA Secret annotation: the `kraft.krabka.io/rotate-ca` value the last
/// requested rotation was started for.
pub const ANNOTATION_ROTATED_FOR: &str = "kraft.krabka.io/rotated-for";
/// CA Secret annotation prefix of the next CA's validity (`next-not-before`…).
const NEXT_PREFIX: &str = "next-";

/// What the reconciler needs from the certificates once they exist.
#[derive(Clone)]
pub struct QuorumTls {
    /// Fingerprint of the CA certificate (the pod template's `ca-hash`).
    pub ca_hash: String,
    /// The operator's admin client: its certificate, the CA as truststore.
    pub admin: Arc<TlsClient>,
    /// The CA rotation step taken in this pass, for an Event: its action
    /// ([`rotation::Step::action`]) and note (`None`: none).
    pub rotation: Option<(&'static str, String)>,
}

impl std::fmt::Debug for QuorumTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumTls")
            .field("ca_hash", &self.ca_hash)
            .finish_non_exhaustive()
    }
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

fn annotation_i64(secret: &Secret, key: &str) -> Option<i64> {
    secret.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

/// The annotation key of the next CA's validity field `key`
/// (`kraft.krabka.io/next-not-after` for [`ANNOTATION_NOT_AFTER`]).
fn next_key(key: &str) -> String {
    key.replacen(
        "kraft.krabka.io/",
        &format!("kraft.krabka.io/{NEXT_PREFIX}"),
        1,
    )
}

/// The certificate and key stored in `secret` under `cert_key`/`key_key`,
/// with the validity its annotations record; `None` when anything is missing.
pub fn stored(secret: &Secret, cert_key: &str, key_key: &str) -> Option<Issued> {
    Some(Issued {
        cert_pem: text(secret, cert_key)?,
        key_pem: text(secret, key_key)?,
        not_before: annotation_i64(secret, ANNOTATION_NOT_BEFORE)?,
        not_after: annotation_i64(secret, ANNOTATION_NOT_AFTER)?,
        renew_after: annotation_i64(secret, ANNOTATION_RENEW_AFTER)?,
    })
}

/// The CA record of the CA Secret `secret` (`pki::rotation`), or `None`
/// when it lacks the signing CA, its validity, or what its rotation phase
/// needs (the next CA in `trust`, the previous one in `reissue`), or names
/// an unknown phase.
pub fn ca_record(secret: &Secret) -> Option<CaRecord> {
    let ann = secret.metadata.annotations.clone().unwrap_or_default();
    let phase = Phase::parse(
        ann.get(ANNOTATION_CA_ROTATION)
            .map(String::as_str)
            .unwrap_or(""),
    )?;
    let mut record = CaRecord::steady(stored(secret, TLS_CA_KEY, CA_PRIVATE_KEY)?);
    record.phase = phase;
    record.rotated_for = ann.get(ANNOTATION_ROTATED_FOR).cloned();
    match phase {
        Phase::Steady => {}
        Phase::Trust => {
            record.next = Some(Issued {
                cert_pem: text(secret, NEXT_CA_CERT)?,
                key_pem: text(secret, NEXT_CA_KEY)?,
                not_before: annotation_i64(secret, &next_key(ANNOTATION_NOT_BEFORE))?,
                not_after: annotation_i64(secret, &next_key(ANNOTATION_NOT_AFTER))?,
                renew_after: annotation_i64(secret, &next_key(ANNOTATION_RENEW_AFTER))?,
            });
        }
        Phase::Reissue => record.previous_pem = Some(text(secret, PREVIOUS_CA_CERT)?),
    }
    Some(record)
}

/// Whether the leaf Secret `secret` must be (re)issued at `now` (unix
/// seconds): missing or incomplete, due ([`ANNOTATION_RENEW_AFTER`] passed),
/// saying something else than `leaf`, signed by another CA than `ca_hash`,
/// or holding another trust bundle (`ca.crt`) than `trust_pem`.
pub fn due(secret: Option<&Secret>, leaf: &Leaf, ca_hash: &str, trust_pem: &str, now: i64) -> bool {
    let Some(s) = secret else { return true };
    if stored(s, TLS_CERT_KEY, TLS_PRIVATE_KEY).is_none()
        || text(s, TLS_CA_KEY).as_deref() != Some(trust_pem)
    {
        return true;
    }
    let ann = s.metadata.annotations.clone().unwrap_or_default();
    let renew_after = ann
        .get(ANNOTATION_RENEW_AFTER)
        .and_then(|v| v.parse::<i64>().ok());
    renew_after.is_none_or(|t| now >= t)
        || ann.get(ANNOTATION_LEAF).map(String::as_str) != Some(leaf.fingerprint().as_str())
        || ann.get(ANNOTATION_SIGNED_BY).map(String::as_str) != Some(ca_hash)
}

fn validity_annotations(issued: &Issued) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            ANNOTATION_NOT_BEFORE.to_string(),
            issued.not_before.to_string(),
        ),
        (
            ANNOTATION_NOT_AFTER.to_string(),
            issued.not_after.to_string(),
        ),
        (
            ANNOTATION_RENEW_AFTER.to_string(),
            issued.renew_after.to_string(),
        ),
    ])
}

fn bytes(s: &str) -> ByteString {
    ByteString(s.as_bytes().to_vec())
}

/// The CA Secret of `q` holding `record`: the signing CA (`ca.crt`,
/// `ca.key`, its validity), and during a rotation its phase with the next
/// CA ([`NEXT_CA_CERT`], [`NEXT_CA_KEY`], `next-` validity) or the previous
/// CA's certificate ([`PREVIOUS_CA_CERT`]). Applied whole: what a phase no
/// longer needs goes (server-side apply drops the fields it stopped naming).
pub fn ca_secret(q: &ValidatedQuorum, record: &CaRecord) -> Secret {
    let mut metadata = child_meta(q, &q.ca_secret());
    let mut ann = validity_annotations(&record.signer);
    let mut data = BTreeMap::from([
        (TLS_CA_KEY.to_string(), bytes(&record.signer.cert_pem)),
        (CA_PRIVATE_KEY.to_string(), bytes(&record.signer.key_pem)),
    ]);
    if record.phase != Phase::Steady {
        ann.insert(
            ANNOTATION_CA_ROTATION.to_string(),
            record.phase.as_str().to_string(),
        );
    }
    if let Some(r) = &record.rotated_for {
        ann.insert(ANNOTATION_ROTATED_FOR.to_string(), r.clone());
    }
    if let Some(next) = &record.next {
        for (k, v) in validity_annotations(next) {
            ann.insert(next_key(&k), v);
        }
        data.insert(NEXT_CA_CERT.to_string(), bytes(&next.cert_pem));
        data.insert(NEXT_CA_KEY.to_string(), bytes(&next.key_pem));
    }
    if let Some(previous) = &record.previous_pem {
        data.insert(PREVIOUS_CA_CERT.to_string(), bytes(previous));
    }
    metadata.annotations = Some(ann);
    Secret {
        metadata,
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Secret::default()
    }
}

/// A leaf Secret `name` of `q`: `ca.crt`, `tls.crt`, `tls.key`,
/// `keystore.pem` (key and certificate, KIP-651's PEM keystore) and any
/// `extra` keys, annotated with its validity, what it says and its CA.
pub fn leaf_secret(
    q: &ValidatedQuorum,
    name: &str,
    issued: &Issued,
    ca_pem: &str,
    leaf: &Leaf,
    ca_hash: &str,
    extra: BTreeMap<String, String>,
) -> Secret {
    let mut metadata = child_meta(q, name);
    let mut ann = validity_annotations(issued);
    ann.insert(ANNOTATION_LEAF.to_string(), leaf.fingerprint());
    ann.insert(ANNOTATION_SIGNED_BY.to_string(), ca_hash.to_string());
    metadata.annotations = Some(ann);
    let mut data = BTreeMap::from([
        (TLS_CA_KEY.to_string(), bytes(ca_pem)),
        (TLS_CERT_KEY.to_string(), bytes(&issued.cert_pem)),
        (TLS_PRIVATE_KEY.to_string(), bytes(&issued.key_pem)),
        (TLS_KEYSTORE_KEY.to_string(), bytes(&issued.keystore_pem())),
    ]);
    for (k, v) in extra {
        data.insert(k, bytes(&v));
    }
    Secret {
        metadata,
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Secret::default()
    }
}

/// The `client.properties` of the client Secret: a `--command-config` for
/// `kraft-controller quorum` and the `ssl.*` keys a broker's controller
/// client needs, with the Secret mounted at [`CLIENT_TLS_DIR`].
pub fn client_properties() -> String {
    format!(
        "# Managed by kraft-operator: mount this Secret at {CLIENT_TLS_DIR}.\n\
         security.protocol=SSL\n\
         ssl.keystore.type=PEM\n\
         ssl.keystore.location={CLIENT_TLS_DIR}/{TLS_KEYSTORE_KEY}\n\
         ssl.truststore.type=PEM\n\
         ssl.truststore.location={CLIENT_TLS_DIR}/{TLS_CA_KEY}\n"
    )
}

/// The operator's admin TLS client from its stored certificate: the CA as
/// the only trusted root, no host name check (the operator dials pod IPs; the
/// per-quorum CA is what pins the controllers).
///
/// # Errors
/// A message naming what did not load (never the key).
pub fn admin_client(ca_pem: &str, operator: &Issued) -> Result<TlsClient, String> {
    let settings = SslSettings {
        key: Some(KeyMaterial::Inline {
            chain: operator.cert_pem.clone(),
            key: operator.key_pem.clone(),
        }),
        trust: Some(TrustMaterial::Inline(ca_pem.to_string())),
        client_auth: ClientAuth::None,
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: false,
    };
    TlsClient::client(settings).map_err(|e| e.to_string())
}

fn tls_err(q: &ValidatedQuorum, message: impl Into<String>) -> Error {
    Error::Tls {
        quorum: format!("{}/{}", q.namespace, q.name),
        message: message.into(),
    }
}

/// Makes sure the CA and the three leaf Secrets of `q` exist and are not
/// due at `now` (unix seconds), issuing what is missing, and moves a CA
/// rotation on (`pki::rotation`: started by expiry or by `rotate_ca`, the
/// KraftQuorum's [`ANNOTATION_ROTATE_CA`](crate::crd::ANNOTATION_ROTATE_CA)
/// value; a phase ends once `rollout` shows its template rolled out).
/// The CA Secret is written before any leaf, so a crash resumes the
/// rotation. Returns the pod template's `ca-hash` and the operator's admin
/// client (trusting the bundle). `leaf_lifetime` is the lifetime of new
/// leaves, seconds.
///
/// # Errors
/// [`Error::Kube`] for API calls; [`Error::Tls`] for a CA Secret that does
/// not load or a certificate that cannot be made.
pub async fn ensure(
    client: &Client,
    q: &ValidatedQuorum,
    now: i64,
    leaf_lifetime: i64,
    rotate_ca: Option<&str>,
    rollout: &Rollout,
) -> Result<QuorumTls, Error> {
    let ns = &q.namespace;
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let get = |name: String| {
        let api = api.clone();
        async move {
            api.get_opt(&name)
                .await
                .map_err(kube_err(format!("get secret {ns}/{name}")))
        }
    };
    let new_ca = || pki::new_ca(ns, &q.name, now, CA_LIFETIME_SECS);
    let mut rotation = None;
    let record = match get(q.ca_secret()).await? {
        Some(s) => {
            let record = ca_record(&s).ok_or_else(|| {
                tls_err(
                    q,
                    format!(
                        "secret {} lacks {TLS_CA_KEY}, {CA_PRIVATE_KEY}, its validity annotations or what its {ANNOTATION_CA_ROTATION} phase needs; restore it (a new CA would need every certificate replaced)",
                        q.ca_secret()
                    ),
                )
            })?;
            let rolled = rollout.settled
                && rollout.template_ca_hash.as_deref() == Some(record.template_hash().as_str());
            let step = rotation::step(&record, now, rotate_ca, rolled);
            match rotation::advance(&record, &step, new_ca)
                .map_err(|e| tls_err(q, e.to_string()))?
            {
                Some(next) => {
                    // Recorded before any leaf changes.
                    apply_object(client, ns, &ca_secret(q, &next)).await?;
                    let note = format!("secret {}: {}", q.ca_secret(), step.note());
                    tracing::info!(message = %note, "CA rotation");
                    rotation = Some((step.action(), note));
                    next
                }
                None => record,
            }
        }
        None => {
            let record = CaRecord::steady(new_ca().map_err(|e| tls_err(q, e.to_string()))?);
            apply_object(client, ns, &ca_secret(q, &record)).await?;
            tracing::info!(secret = %q.ca_secret(), "created the quorum's CA");
            record
        }
    };
    let signer_hash = record.signer_hash();
    let trust = record.trust_bundle();
    let leaves = [
        (q.server_secret(), pki::controller_leaf(q), BTreeMap::new()),
        (
            q.operator_secret(),
            pki::client_leaf(OPERATOR_CN),
            BTreeMap::from([(TLS_CLIENT_PROPERTIES_KEY.to_string(), client_properties())]),
        ),
        (
            q.client_secret(),
            pki::client_leaf(BROKER_CN),
            BTreeMap::from([(TLS_CLIENT_PROPERTIES_KEY.to_string(), client_properties())]),
        ),
    ];
    let mut operator = None;
    for (name, leaf, extra) in leaves {
        let existing = get(name.clone()).await?;
        let issued = if due(existing.as_ref(), &leaf, &signer_hash, &trust, now) {
            let issued = pki::issue(&record.signer, ns, &q.name, &leaf, now, leaf_lifetime)
                .map_err(|e| tls_err(q, e.to_string()))?;
            let secret = leaf_secret(q, &name, &issued, &trust, &leaf, &signer_hash, extra);
            apply_object(client, ns, &secret).await?;
            tracing::info!(secret = %name, not_after = issued.not_after, "issued certificate");
            issued
        } else {
            existing
                .as_ref()
                .and_then(|s| stored(s, TLS_CERT_KEY, TLS_PRIVATE_KEY))
                .ok_or_else(|| tls_err(q, format!("secret {name} does not load")))?
        };
        if name == q.operator_secret() {
            operator = Some(issued);
        }
    }
    let operator = operator.ok_or_else(|| tls_err(q, "no operator certificate"))?;
    let admin = admin_client(&trust, &operator).map_err(|e| tls_err(q, e))?;
    Ok(QuorumTls {
        ca_hash: record.template_hash(),
        admin: Arc::new(admin),
        rotation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued_secret(leaf: &Leaf, ca_hash: &str, renew_after: i64) -> Secret {
        let mut s = Secret {
            data: Some(BTreeMap::from([
                (TLS_CA_KEY.to_string(), bytes("ca")),
                (TLS_CERT_KEY.to_string(), bytes("cert")),
                (TLS_PRIVATE_KEY.to_string(), bytes("key")),
            ])),
            ..Secret::default()
        };
        s.metadata.annotations = Some(BTreeMap::from([
            (ANNOTATION_NOT_BEFORE.to_string(), "0".to_string()),
            (ANNOTATION_NOT_AFTER.to_string(), "300".to_string()),
            (ANNOTATION_RENEW_AFTER.to_string(), renew_after.to_string()),
            (ANNOTATION_LEAF.to_string(), leaf.fingerprint()),
            (ANNOTATION_SIGNED_BY.to_string(), ca_hash.to_string()),
        ]));
        s
    }

    #[test]
    fn a_leaf_is_reissued_when_missing_due_changed_or_signed_by_another_ca() {
        let leaf = pki::client_leaf("kraft-broker");
        let s = issued_secret(&leaf, "ca1", 200);
        assert!(due(None, &leaf, "ca1", "ca", 0));
        assert!(!due(Some(&s), &leaf, "ca1", "ca", 199));
        assert!(due(Some(&s), &leaf, "ca1", "ca", 200));
        assert!(due(Some(&s), &leaf, "ca2", "ca", 0));
        assert!(due(Some(&s), &pki::client_leaf("other"), "ca1", "ca", 0));
        let mut broken = s.clone();
        broken.data.as_mut().map(|d| d.remove(TLS_PRIVATE_KEY));
        assert!(due(Some(&broken), &leaf, "ca1", "ca", 0));
    }

    #[test]
    fn a_leaf_is_reissued_when_the_trust_bundle_changes() {
        // A CA rotation's first phase: same signer, a bundle of two CAs.
        let leaf = pki::client_leaf("kraft-broker");
        let s = issued_secret(&leaf, "ca1", 200);
        assert!(due(Some(&s), &leaf, "ca1", "ca\nnext", 0));
    }

    fn validated() -> ValidatedQuorum {
        let yaml = "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: kq\n  namespace: ns\n  uid: 7e5b6f5e-0000-4000-8000-000000000001\nspec:\n  replicas: 3\n  image: kraft:1\n  storage:\n    size: 1Gi\nstatus:\n  clusterId: MkU3OEVBNTcwNTJENDM2Qg\n  initialVoters:\n  - nodeId: 0\n    directoryId: AAAAAAAAAAAAAAAAAAAAAQ\n";
        let kq: crate::crd::KraftQuorum = serde_yaml::from_str(yaml).expect("yaml");
        crate::validate::validate(&kq, None, "cluster.local").expect("valid")
    }

    #[test]
    fn every_phase_of_a_rotation_reads_back_from_the_ca_secret() {
        // The CA Secret is the record of a rotation: what an operator
        // restarted mid-rotation reads is what it wrote.
        let q = validated();
        let a = pki::new_ca("ns", "kq", 1_800_000_000, 3600).expect("ca a");
        let b = pki::new_ca("ns", "kq", 1_800_000_100, 3600).expect("ca b");
        let steady = CaRecord::steady(a);
        let start = rotation::Step::Start(rotation::Trigger::Requested("r1".into()));
        let trust = rotation::advance(&steady, &start, || Ok::<_, ()>(b))
            .expect("made")
            .expect("applies");
        let reissue = rotation::advance(&trust, &rotation::Step::Reissue, || Err(()))
            .expect("made")
            .expect("applies");
        let done = rotation::advance(&reissue, &rotation::Step::Finish, || Err(()))
            .expect("made")
            .expect("applies");
        for record in [&steady, &trust, &reissue, &done] {
            let secret = ca_secret(&q, record);
            assert_eq!(
                ca_record(&secret).as_ref(),
                Some(record),
                "{:?}",
                record.phase
            );
        }
        let keys = |r: &CaRecord| -> Vec<String> {
            ca_secret(&q, r)
                .data
                .unwrap_or_default()
                .into_keys()
                .collect()
        };
        assert_eq!(
            keys(&trust),
            ["ca.crt", "ca.key", "next-ca.crt", "next-ca.key"]
        );
        assert_eq!(keys(&reissue), ["ca.crt", "ca.key", "previous-ca.crt"]);
        assert_eq!(keys(&done), ["ca.crt", "ca.key"]);
        // A phase without what it needs, or an unknown one, does not load.
        let mut broken = ca_secret(&q, &trust);
        broken.data.as_mut().map(|d| d.remove(NEXT_CA_KEY));
        assert_eq!(ca_record(&broken), None);
        let mut odd = ca_secret(&q, &steady);
        odd.metadata
            .annotations
            .as_mut()
            .map(|a| a.insert(ANNOTATION_CA_ROTATION.to_string(), "later".to_string()));
        assert_eq!(ca_record(&odd), None);
    }

    #[test]
    fn client_properties_name_the_mounted_pem_files() {
        let p = client_properties();
        assert!(p.contains("security.protocol=SSL\n"));
        assert!(p.contains("ssl.keystore.location=/etc/kraft-client/keystore.pem\n"));
        assert!(p.contains("ssl.truststore.location=/etc/kraft-client/ca.crt\n"));
    }

    #[test]
    fn the_debug_output_never_shows_the_key() {
        let ca = pki::new_ca("ns", "q", 1_800_000_000, 3600).expect("ca");
        assert!(!format!("{ca:?}").contains("PRIVATE KEY"));
    }
}
