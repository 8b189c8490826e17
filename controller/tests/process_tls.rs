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
//! - with Kafka's StandardAuthorizer, a client certificate that maps to a
//!   principal that is not a super user gets CLUSTER_AUTHORIZATION_FAILED
//!   for RemoveRaftVoter, AddRaftVoter, UpdateRaftVoter, Fetch and
//!   DescribeQuorum, and the quorum is unchanged; the controllers (super
//!   users by their certificate's subject, Kafka's DEFAULT mapping) keep
//!   committing;
//! - `kraft-controller quorum --command-config` (Kafka's client keys)
//!   describes the mTLS quorum; without it the same command fails;
//! - `CONTROLLER:SASL_SSL` refuses to start with one line naming the key;
//! - a keystore replaced on disk is served to new connections within a
//!   minute without a restart; a replacement that does not load logs one
//!   error line and the last good certificate stays in use.

mod support;

use std::{path::Path, time::Duration};

use kafka_protocol::{
    messages::{
        AddRaftVoterRequest, DescribeQuorumRequest, FetchRequest, RemoveRaftVoterRequest,
        RequestKind, ResponseKind, UpdateRaftVoterRequest, fetch_request::ReplicaState,
    },
    protocol::StrBytes,
};
use kraft_controller::{
    admin::{AdminClient, parse_kafka_uuid},
    config::security::{ClientAuth, KeyMaterial, SslSettings, TlsVersion, TrustMaterial},
    wire::{
        client::{ClientConfig, ClientError, Connection},
        tls::TlsClient,
    },
};
use support::{Mode, Quorum, QuorumBuilder, api_versions, pki, wait_for};

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

/// Sends each `(version, request)` over one connection with `config`;
/// the answers in order.
fn call_all(
    address: &str,
    config: ClientConfig,
    requests: Vec<(i16, RequestKind)>,
) -> Vec<Result<ResponseKind, ClientError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection = Connection::connect(address, config)
            .await
            .expect("a TLS connection");
        let mut answers = Vec::new();
        for (version, body) in requests {
            answers.push(connection.call(version, body).await);
        }
        answers
    })
}

/// The top-level error code of an answer.
fn error_code(answer: &ResponseKind) -> i16 {
    match answer {
        ResponseKind::RemoveRaftVoter(r) => r.error_code,
        ResponseKind::AddRaftVoter(r) => r.error_code,
        ResponseKind::UpdateRaftVoter(r) => r.error_code,
        ResponseKind::Fetch(r) => r.error_code,
        ResponseKind::DescribeQuorum(r) => r.error_code,
        other => panic!("unexpected answer {other:?}"),
    }
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
    let untrusted = api_versions(&address, pki::client_config(Some(&stranger), &ca.cert));
    assert!(untrusted.is_err(), "an untrusted client got {untrusted:?}");

    // No client certificate at all, with ssl.client.auth=required.
    let anonymous = api_versions(&address, pki::client_config(None, &ca.cert));
    assert!(
        anonymous.is_err(),
        "a client without a certificate got {anonymous:?}"
    );

    // The server's certificate checked against a CA that did not sign it.
    let wrong_trust = api_versions(
        &address,
        pki::client_config(Some(&keystore), &stranger_ca.cert),
    );
    assert!(
        matches!(wrong_trust, Err(ClientError::Tls { .. })),
        "a client that does not trust the server got {wrong_trust:?}"
    );

    // The control: a certificate from the truststore is served.
    let trusted = api_versions(&address, pki::client_config(Some(&keystore), &ca.cert));
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

#[test]
fn a_certificate_that_is_not_a_super_user_gets_cluster_authorization_failed_and_changes_nothing() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "test-ca");
    // OpenSSL writes the RDNs in this order; Kafka's DEFAULT principal is
    // the RFC 2253 form, last RDN first: "CN=controller,O=kraftwerk".
    let keystore = ca.issue("controller", "/O=kraftwerk/CN=controller");
    let intruder = ca.issue("intruder", "/O=kraftwerk/CN=intruder");
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .mtls_with_authorizer(&keystore, &ca.cert, "User:CN=controller,O=kraftwerk")
        .format();
    quorum.start_all();
    // The voters authorize each other as super users: they commit.
    let (leader, epoch) = quorum.wait_for_leader(&quorum.ids(), ELECTION);
    let hw = wait_for_commit_past(&quorum, leader, 0);
    let describe = |quorum: &Quorum| {
        let address = quorum.node(leader).address();
        let tls = pki::client_config(Some(&keystore), &ca.cert).tls;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime
            .block_on(async move {
                let mut admin =
                    AdminClient::connect_with_tls(&address, Duration::from_secs(5), tls).await?;
                admin.describe_quorum().await
            })
            .expect("a super user describes the quorum")
    };
    let before = describe(&quorum);
    assert_eq!(before.voters.len(), 3);

    let victim = quorum
        .ids()
        .into_iter()
        .find(|id| *id != leader)
        .expect("a follower");
    let victim_dir = parse_kafka_uuid(&quorum.node(victim).directory_id).expect("a uuid");
    let cluster_id = Some(StrBytes::from_static_str(support::CLUSTER_ID));
    let answers = call_all(
        &quorum.node(leader).address(),
        pki::client_config(Some(&intruder), &ca.cert),
        vec![
            (
                0,
                RequestKind::RemoveRaftVoter(
                    RemoveRaftVoterRequest::default()
                        .with_cluster_id(cluster_id.clone())
                        .with_voter_id(victim)
                        .with_voter_directory_id(victim_dir),
                ),
            ),
            (
                0,
                RequestKind::AddRaftVoter(
                    AddRaftVoterRequest::default()
                        .with_cluster_id(cluster_id.clone())
                        .with_timeout_ms(1_000)
                        .with_voter_id(99)
                        .with_voter_directory_id(victim_dir),
                ),
            ),
            (
                0,
                RequestKind::UpdateRaftVoter(
                    UpdateRaftVoterRequest::default()
                        .with_cluster_id(cluster_id.clone())
                        .with_current_leader_epoch(epoch)
                        .with_voter_id(victim)
                        .with_voter_directory_id(victim_dir),
                ),
            ),
            // A Fetch posing as the victim would move its progress and so
            // the high watermark.
            (
                17,
                RequestKind::Fetch(
                    FetchRequest::default()
                        .with_cluster_id(cluster_id)
                        .with_replica_state(ReplicaState::default().with_replica_id(victim.into())),
                ),
            ),
            (
                2,
                RequestKind::DescribeQuorum(DescribeQuorumRequest::default()),
            ),
        ],
    );
    for answer in &answers {
        let answer = answer.as_ref().expect("an answer, not a closed connection");
        assert_eq!(
            error_code(answer),
            31,
            "CLUSTER_AUTHORIZATION_FAILED: {answer:?}"
        );
    }
    let refusals = quorum
        .node(leader)
        .output_lines("CLUSTER_AUTHORIZATION_FAILED");
    assert_eq!(refusals.len(), 5, "{refusals:?}");
    assert!(
        refusals[0].contains("User:CN=intruder,O=kraftwerk"),
        "{}",
        refusals[0]
    );

    // Nothing changed: the same voters under the same leader and epoch, and
    // the quorum still commits.
    wait_for_commit_past(&quorum, leader, hw);
    let after = describe(&quorum);
    assert_eq!(
        (after.leader_id, after.leader_epoch),
        (before.leader_id, before.leader_epoch)
    );
    let ids = |q: &kraft_controller::admin::QuorumInfo| {
        let mut ids: Vec<i32> = q.voters.iter().map(|v| v.replica_id).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&after), ids(&before));
}

#[test]
fn the_quorum_cli_describes_an_mtls_quorum_with_a_command_config() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "test-ca");
    let keystore = ca.issue("controller", "/CN=controller");
    let mut quorum = mtls_quorum(1, &keystore, &ca.cert);
    quorum.start_all();
    quorum.wait_for_leader(&[1], ELECTION);
    let command_config = pki_dir.path().join("ssl.properties");
    std::fs::write(
        &command_config,
        format!(
            "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            keystore.display(),
            ca.cert.display()
        ),
    )
    .expect("write ssl.properties");
    let config = command_config.display().to_string();
    let out = quorum.quorum_cli(
        1,
        &[
            "--timeout-ms",
            "5000",
            "--command-config",
            &config,
            "describe",
            "--status",
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("LeaderId:"), "{out}");
    let plain = quorum.quorum_cli(1, &["--timeout-ms", "3000", "describe", "--status"]);
    assert_ne!(
        plain.code, 0,
        "a plaintext describe of a TLS listener: {plain}"
    );
}

/// The subject (RFC 2253) of the certificate the listener at `address`
/// presents to a fresh TLS connection (a new client configuration each time,
/// so no session is resumed), with `keystore` as client certificate.
fn served_subject(address: &str, keystore: &Path, truststore: &Path) -> Result<String, String> {
    let settings = SslSettings {
        key: Some(KeyMaterial::File(keystore.to_owned())),
        trust: Some(TrustMaterial::File(truststore.to_owned())),
        client_auth: ClientAuth::None,
        enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        cipher_suites: Vec::new(),
        endpoint_identification: true,
    };
    let tls = TlsClient::client(settings).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let stream = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(address),
        )
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| e.to_string())?;
        let name =
            rustls_pki_types::ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?;
        let connector = tokio_rustls::TlsConnector::from(tls.current());
        let stream = tokio::time::timeout(Duration::from_secs(5), connector.connect(name, stream))
            .await
            .map_err(|_| "handshake timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        let cert = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .ok_or("no server certificate")?;
        kraft_controller::wire::tls::subject_dn(cert).map_err(|e| e.to_string())
    })
}

/// Replaces `path` as Kubernetes does with a Secret: the new content is
/// written beside it, then renamed over it.
fn replace_file(path: &Path, content: &[u8]) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, content).expect("write the new file");
    std::fs::rename(&tmp, path).expect("rename it in place");
}

#[test]
fn a_certificate_replaced_on_disk_is_served_to_new_connections_without_a_restart() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(&pki_dir.path().join("ca"), "test-ca");
    let first = ca.issue("first", "/CN=controller/O=first");
    let second = ca.issue("second", "/CN=controller/O=second");
    let client = ca.issue("client", "/CN=client");
    // The node reads its keystore from `live.pem`, which the test replaces.
    let live = pki_dir.path().join("live.pem");
    std::fs::copy(&first, &live).expect("the first keystore");
    let mut quorum = mtls_quorum(1, &live, &ca.cert);
    quorum.start_all();
    quorum.wait_for_leader(&[1], ELECTION);
    let address = quorum.node(1).address();
    let pid = quorum.node(1).pid();
    assert_eq!(
        served_subject(&address, &client, &ca.cert).expect("a TLS connection"),
        "O=first,CN=controller"
    );

    // A new certificate: new connections get it within a minute.
    replace_file(&live, &std::fs::read(&second).expect("the second keystore"));
    wait_for(
        Duration::from_secs(60),
        "new connections to get the replaced certificate",
        || {
            served_subject(&address, &client, &ca.cert)
                .ok()
                .filter(|s| s == "O=second,CN=controller")
        },
    );

    // A file that does not load: one error line, the last good certificate
    // stays in use.
    replace_file(&live, b"-----BEGIN CERTIFICATE-----\nnot base64\n");
    let error = "TLS certificates changed on disk but do not load";
    wait_for(
        Duration::from_secs(60),
        "the reload error in the log",
        || {
            let subject = served_subject(&address, &client, &ca.cert).expect("still served");
            assert_eq!(subject, "O=second,CN=controller");
            let lines = quorum.node(1).output_lines(error);
            (!lines.is_empty()).then_some(lines)
        },
    );
    for _ in 0..3 {
        assert_eq!(
            served_subject(&address, &client, &ca.cert).expect("still served"),
            "O=second,CN=controller"
        );
    }
    let lines = quorum.node(1).output_lines(error);
    assert_eq!(lines.len(), 1, "one error line per bad change: {lines:?}");
    assert!(lines[0].contains("ERROR"), "{}", lines[0]);
    // The same process all along.
    assert_eq!(quorum.node(1).pid(), pid);
    quorum.node(1).assert_alive();
}
