//! Process tests of TLS on the controller listener (issue 19): real
//! `kraft-controller` processes on loopback with certificates made by
//! `openssl` for the test.
//!
//! - a 3-voter quorum over mTLS (`listener.security.protocol.map=CONTROLLER:SSL`,
//!   `ssl.client.auth=required`, its peer connections with the same
//!   settings) elects, commits, and survives kill -9 of its leader;
//! - a plaintext client to the TLS port gets no Kafka answer; a client
//!   certificate from another CA is refused; a client with a certificate from
//!   the truststore is served (the control that the two refusals are about
//!   the certificate);
//! - `CONTROLLER:SASL_SSL` refuses to start with one line naming the key.

mod support;

use std::{path::Path, sync::Arc, time::Duration};

use kafka_protocol::messages::{ApiVersionsRequest, RequestKind, ResponseKind};
use kraft_controller::{
    config::security::{ClientAuth, KeyMaterial, SslSettings, TlsVersion, TrustMaterial},
    wire::{
        client::{ClientConfig, ClientError, Connection},
        tls::TlsClient,
    },
};
use support::{Mode, Quorum, QuorumBuilder, pki, wait_for};

/// Long enough for a first election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(30);

/// A quorum of `size` voters whose controller listener is mTLS with the
/// node certificate `keystore` and the CA `truststore`.
fn mtls_quorum(size: usize, keystore: &Path, truststore: &Path) -> Quorum {
    let mut builder = QuorumBuilder::new(size, Mode::Dynamic);
    for (k, v) in pki::mtls_properties(keystore, truststore) {
        builder = builder.property(&k, v);
    }
    builder.format()
}

/// Client TLS settings with `keystore` (if any) and `truststore`.
fn client_tls(keystore: Option<&Path>, truststore: &Path) -> ClientConfig {
    let settings = SslSettings {
        key: keystore.map(|k| KeyMaterial::File(k.to_owned())),
        trust: Some(TrustMaterial::File(truststore.to_owned())),
        client_auth: ClientAuth::None,
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: true,
    };
    ClientConfig {
        connect_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        tls: Some(Arc::new(
            TlsClient::client(settings).expect("client TLS loads"),
        )),
        ..ClientConfig::default()
    }
}

/// ApiVersions over a fresh connection with `config`.
fn api_versions(address: &str, config: ClientConfig) -> Result<ResponseKind, ClientError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection = Connection::connect(address, config).await?;
        connection
            .call(3, RequestKind::ApiVersions(ApiVersionsRequest::default()))
            .await
    })
}

/// Waits until the high watermark seen by `id` passes `above`.
fn wait_for_commit_past(quorum: &Quorum, id: i32, above: i64) -> i64 {
    wait_for(
        ELECTION,
        &format!("node {id}'s high watermark past {above}"),
        || quorum.node(id).high_watermark().filter(|hw| *hw > above),
    )
}

#[test]
fn a_three_voter_mtls_quorum_elects_commits_and_survives_kill_9_of_its_leader() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "test-ca");
    let keystore = ca.issue("controller", "/CN=controller/O=kraftwerk");
    let mut quorum = mtls_quorum(3, &keystore, &ca.cert);
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    // Committing needs a majority: the followers' Fetch requests go over
    // mTLS, so a commit proves the peer connections speak TLS too.
    let hw = wait_for_commit_past(&quorum, leader, 0);
    for id in quorum.ids().into_iter().filter(|id| *id != leader) {
        quorum.wait_for_follower(id, leader, ELECTION);
    }
    quorum.kill(leader);
    let others: Vec<i32> = quorum
        .ids()
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    let (new_leader, _) = quorum.wait_for_leader(&others, ELECTION);
    assert_ne!(new_leader, leader);
    wait_for_commit_past(&quorum, new_leader, hw);
    // The killed node comes back and follows, over mTLS again.
    quorum.start(leader);
    quorum.wait_for_follower(leader, new_leader, ELECTION);
}

#[test]
fn plaintext_and_untrusted_clients_are_refused_and_a_trusted_one_is_served() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(&pki_dir.path().join("ca"), "test-ca");
    let keystore = ca.issue("controller", "/CN=controller/O=kraftwerk");
    let stranger_ca = pki::Ca::new(&pki_dir.path().join("stranger"), "stranger-ca");
    let stranger = stranger_ca.issue("stranger", "/CN=stranger");
    let mut quorum = mtls_quorum(1, &keystore, &ca.cert);
    quorum.start_all();
    quorum.wait_for_leader(&[1], ELECTION);
    let address = quorum.node(1).address();

    // PLAINTEXT to the TLS port: the bytes are not a TLS ClientHello.
    let plain = api_versions(
        &address,
        ClientConfig {
            request_timeout: Duration::from_secs(5),
            ..ClientConfig::default()
        },
    );
    assert!(
        matches!(
            plain,
            Err(ClientError::Disconnected { .. } | ClientError::Wire(_))
        ),
        "a plaintext client got {plain:?}"
    );

    // A client certificate from a CA the listener does not trust.
    let untrusted = api_versions(&address, client_tls(Some(&stranger), &ca.cert));
    assert!(untrusted.is_err(), "an untrusted client got {untrusted:?}");

    // No client certificate at all, with ssl.client.auth=required.
    let anonymous = api_versions(&address, client_tls(None, &ca.cert));
    assert!(
        anonymous.is_err(),
        "a client without a certificate got {anonymous:?}"
    );

    // The server's certificate checked against a CA that did not sign it.
    let wrong_trust = api_versions(&address, client_tls(Some(&keystore), &stranger_ca.cert));
    assert!(
        matches!(wrong_trust, Err(ClientError::Tls { .. })),
        "a client that does not trust the server got {wrong_trust:?}"
    );

    // The control: a certificate from the truststore is served.
    let trusted = api_versions(&address, client_tls(Some(&keystore), &ca.cert));
    assert!(
        matches!(trusted, Ok(ResponseKind::ApiVersions(_))),
        "a trusted client got {trusted:?}"
    );
    quorum.node(1).assert_alive();
}

#[test]
fn sasl_ssl_on_the_controller_listener_refuses_to_start_naming_the_key() {
    let mut quorum = QuorumBuilder::new(1, Mode::Dynamic).format();
    // After the format (which reads the same file and refuses it too).
    let config = quorum.node(1).config.clone();
    let mut text = std::fs::read_to_string(&config).expect("read server.properties");
    text.push_str("listener.security.protocol.map=CONTROLLER:SASL_SSL\n");
    std::fs::write(&config, text).expect("write server.properties");
    quorum.start(1);
    let status = quorum.wait_exit(1, Duration::from_secs(20));
    assert!(!status.success(), "a SASL_SSL listener started");
    let lines = quorum
        .node(1)
        .output_lines("listener.security.protocol.map");
    assert_eq!(lines.len(), 1, "one line naming the key: {lines:?}");
    assert!(
        lines[0].contains("listener CONTROLLER") && lines[0].contains("SASL_SSL"),
        "{}",
        lines[0]
    );
    assert!(
        quorum
            .node(1)
            .output_lines("controller listener bound")
            .is_empty(),
        "the listener was bound before the refusal"
    );
}
