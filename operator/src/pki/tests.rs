//! The operator's CA: chains that Kafka-style TLS settings load, the SANs,
//! the principals and the lifetimes (cert-manager's defaults).

use kraft_controller::{
    config::security::{ClientAuth, KeyMaterial, SslSettings, TlsVersion, TrustMaterial},
    wire::tls::{server_config, subject_dn},
};
use rustls_pki_types::{CertificateDer, pem::PemObject};

use super::*;
use crate::{crd::KraftQuorum, validate::validate};

const NOW: i64 = 1_800_000_000;

fn quorum() -> ValidatedQuorum {
    let yaml = "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: kq\n  namespace: ns\n  uid: 7e5b6f5e-0000-4000-8000-000000000001\nspec:\n  replicas: 3\n  image: kraft:1\n  storage:\n    size: 1Gi\nstatus:\n  clusterId: MkU3OEVBNTcwNTJENDM2Qg\n  initialVoters:\n  - nodeId: 0\n    directoryId: AAAAAAAAAAAAAAAAAAAAAQ\n";
    let kq: KraftQuorum = serde_yaml::from_str(yaml).expect("yaml");
    validate(&kq, None, "cluster.local").expect("valid")
}

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("pem")
}

#[test]
fn leaves_are_90_days_renewed_at_two_thirds_and_never_outlive_the_ca() {
    let ca = new_ca("ns", "kq", NOW, CA_LIFETIME_SECS).expect("ca");
    let q = quorum();
    let leaf = issue(
        &ca,
        "ns",
        "kq",
        &controller_leaf(&q),
        NOW,
        LEAF_LIFETIME_SECS,
    )
    .expect("leaf");
    assert_eq!(leaf.not_after - NOW, 90 * 86_400);
    // Renewed 60 days after issue (cert-manager's renewBefore = 1/3).
    assert_eq!(leaf.renew_after, NOW + 60 * 86_400);
    let short_ca = new_ca("ns", "kq", NOW, 3600).expect("ca");
    let leaf = issue(
        &short_ca,
        "ns",
        "kq",
        &client_leaf(OPERATOR_CN),
        NOW,
        LEAF_LIFETIME_SECS,
    )
    .expect("leaf");
    assert_eq!(leaf.not_after, short_ca.not_after);
}

#[test]
fn the_controller_certificate_names_every_pod_and_the_service_and_loads_as_a_server() {
    let q = quorum();
    let leaf = controller_leaf(&q);
    assert!(
        leaf.dns_names
            .contains(&"kq-0.kq.ns.svc.cluster.local".to_string())
    );
    assert!(
        leaf.dns_names
            .contains(&"kq-8.kq.ns.svc.cluster.local".to_string())
    );
    assert!(leaf.dns_names.contains(&"kq.ns.svc".to_string()));
    let ca = new_ca("ns", "kq", NOW, CA_LIFETIME_SECS).expect("ca");
    let issued = issue(&ca, "ns", "kq", &leaf, NOW, LEAF_LIFETIME_SECS).expect("leaf");
    // The controller's own TLS code accepts it: key + chain, CA as truststore.
    let settings = SslSettings {
        key: Some(KeyMaterial::Inline {
            chain: issued.cert_pem.clone(),
            key: issued.key_pem.clone(),
        }),
        trust: Some(TrustMaterial::Inline(ca.cert_pem.clone())),
        client_auth: ClientAuth::Required,
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: true,
    };
    server_config(&settings).expect("the controller loads the operator's certificate");
    assert_eq!(
        subject_dn(&der(&issued.cert_pem)).expect("dn"),
        "CN=kraft-controller"
    );
    assert!(!format!("{issued:?}").contains("BEGIN"));
}

#[test]
fn the_controllers_and_the_operator_are_the_super_users_not_the_brokers() {
    let ca = new_ca("ns", "kq", NOW, CA_LIFETIME_SECS).expect("ca");
    let principal = |cn: &str| {
        let issued = issue(&ca, "ns", "kq", &client_leaf(cn), NOW, 3600).expect("leaf");
        format!("User:{}", subject_dn(&der(&issued.cert_pem)).expect("dn"))
    };
    for cn in [CONTROLLER_CN, OPERATOR_CN] {
        let p = principal(cn);
        assert!(super_users(None).split(';').any(|u| u == p), "{p}");
    }
    // A broker's certificate may not ALTER the voter set.
    let broker = principal(BROKER_CN);
    assert!(
        !super_users(None).split(';').any(|u| u == broker),
        "{broker}"
    );
    assert_eq!(
        super_users(None),
        "User:CN=kraft-controller;User:CN=kraft-operator"
    );
}

#[test]
fn a_shared_issuer_gets_common_names_of_the_quorum() {
    let scope = Some(("ns", "kq"));
    assert_eq!(common_name(OPERATOR_CN, scope), "kraft-operator.ns.kq");
    assert_eq!(
        super_users(scope),
        "User:CN=kraft-controller.ns.kq;User:CN=kraft-operator.ns.kq"
    );
    // Another quorum of the same issuer: none of these is its super user.
    let other = super_users(Some(("ns", "other")));
    for u in super_users(scope).split(';') {
        assert!(!other.split(';').any(|o| o == u), "{u} in {other}");
    }
    assert_eq!(common_name(BROKER_CN, None), "kraft-broker");
}

#[test]
fn a_stored_ca_key_signs_again_and_a_broken_one_is_an_error_without_the_key() {
    let ca = new_ca("ns", "kq", NOW, CA_LIFETIME_SECS).expect("ca");
    let again = issue(&ca, "ns", "kq", &client_leaf(BROKER_CN), NOW + 10, 3600);
    assert!(again.is_ok());
    let broken = Issued {
        key_pem: "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".into(),
        ..ca
    };
    let err = issue(&broken, "ns", "kq", &client_leaf(BROKER_CN), NOW, 3600)
        .expect_err("broken key")
        .to_string();
    assert!(!err.contains("not a key"), "{err}");
}

fn settings(leaf: &Issued, ca: &Issued, server: bool) -> SslSettings {
    SslSettings {
        key: Some(KeyMaterial::Inline {
            chain: leaf.cert_pem.clone(),
            key: leaf.key_pem.clone(),
        }),
        trust: Some(TrustMaterial::Inline(ca.cert_pem.clone())),
        client_auth: if server {
            ClientAuth::Required
        } else {
            ClientAuth::None
        },
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: true,
    }
}

/// A full mTLS handshake, the controller's server config against a client
/// config with the operator's certificate, dialling the pod's DNS name.
async fn handshake(client_leaf: &Issued, client_ca: &Issued, server: &Issued, ca: &Issued) -> bool {
    use kraft_controller::wire::tls::client_config;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server_cfg = server_config(&settings(server, ca, true)).expect("server config");
    let client_cfg =
        client_config(&settings(client_leaf, client_ca, false)).expect("client config");
    let (a, b) = tokio::io::duplex(64 * 1024);
    let acceptor = tokio_rustls::TlsAcceptor::from(server_cfg);
    let connector = tokio_rustls::TlsConnector::from(client_cfg);
    let name =
        rustls_pki_types::ServerName::try_from("kq-1.kq.ns.svc.cluster.local").expect("name");
    let srv = tokio::spawn(async move {
        let mut s = acceptor.accept(b).await.ok()?;
        let mut buf = [0u8; 2];
        s.read_exact(&mut buf).await.ok()?;
        Some(buf)
    });
    let cli = async move {
        let mut c = connector.connect(name, a).await.ok()?;
        c.write_all(b"ok").await.ok()?;
        c.flush().await.ok()?;
        Some(c)
    };
    // The client's stream lives until the server is done with it.
    let (c, s) = tokio::join!(cli, srv);
    c.is_some() && matches!(s, Ok(Some(b)) if &b == b"ok")
}

#[tokio::test]
async fn the_operator_and_a_controller_complete_an_mtls_handshake_and_a_stranger_does_not() {
    let q = quorum();
    let ca = new_ca("ns", "kq", now_real(), CA_LIFETIME_SECS).expect("ca");
    let now = now_real();
    let server = issue(
        &ca,
        "ns",
        "kq",
        &controller_leaf(&q),
        now,
        LEAF_LIFETIME_SECS,
    )
    .expect("server");
    let operator = issue(
        &ca,
        "ns",
        "kq",
        &client_leaf(OPERATOR_CN),
        now,
        LEAF_LIFETIME_SECS,
    )
    .expect("op");
    assert!(handshake(&operator, &ca, &server, &ca).await);
    // A client certificate of another quorum's CA is refused.
    let other = new_ca("ns", "other", now, CA_LIFETIME_SECS).expect("ca");
    let stranger =
        issue(&other, "ns", "other", &client_leaf(OPERATOR_CN), now, 3600).expect("leaf");
    assert!(!handshake(&stranger, &ca, &server, &ca).await);
}

#[test]
fn a_quorum_that_never_rotated_keeps_its_ca_crt_and_ca_hash() {
    // Leaf Secrets and pod templates written before rotation existed hold
    // the CA's PEM and its fingerprint: nothing is reissued or restarted.
    let ca = new_ca("ns", "kq", now_real(), CA_LIFETIME_SECS).expect("ca");
    let record = rotation::CaRecord::steady(ca.clone());
    assert_eq!(record.trust_bundle(), ca.cert_pem);
    assert_eq!(
        record.template_hash(),
        crate::build::fnv1a_hex(ca.cert_pem.as_bytes())
    );
}

#[tokio::test]
async fn during_a_ca_rotation_controllers_on_either_ca_complete_an_mtls_handshake() {
    // pki::rotation's trust and reissue phases: every party trusts the
    // bundle of both CAs (same subject), leaves of either CA are served.
    let q = quorum();
    let now = now_real();
    let a = new_ca("ns", "kq", now, CA_LIFETIME_SECS).expect("ca a");
    let b = new_ca("ns", "kq", now, CA_LIFETIME_SECS).expect("ca b");
    let mut record = rotation::CaRecord::steady(a.clone());
    record.next = Some(b.clone());
    record.phase = rotation::Phase::Trust;
    let bundle = Issued {
        cert_pem: record.trust_bundle(),
        ..a.clone()
    };
    let leaf = |ca: &Issued, l: &Leaf| issue(ca, "ns", "kq", l, now, 3600).expect("leaf");
    let controller = controller_leaf(&q);
    let (server_a, server_b) = (leaf(&a, &controller), leaf(&b, &controller));
    let peer_a = leaf(&a, &controller);
    let peer_b = leaf(&b, &controller);
    // A peer with B's leaf dials one still on A's, and the other way round.
    assert!(handshake(&peer_b, &bundle, &server_a, &bundle).await);
    assert!(handshake(&peer_a, &bundle, &server_b, &bundle).await);
    // Without the bundle, a controller trusting A alone refuses B's leaf.
    assert!(!handshake(&peer_b, &bundle, &server_a, &a).await);
}

fn now_real() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default(),
    )
    .unwrap_or_default()
}
