//! Process tests of several controller listeners (issue 27): every name in
//! `controller.listener.names` is bound and served, each with its own
//! security protocol from `listener.security.protocol.map` (Kafka's
//! `SocketServer` starts an acceptor per listener; a controller-only node's
//! listeners are its controller listeners). The first name stays the one
//! voters dial. A name without an entry in `listeners`, or two listeners on
//! one port, stops the node at start with one line naming the value
//! (Kafka's `KafkaConfig` and `CoreUtils.listenerListToEndPoints` checks).

mod support;

use std::{path::Path, time::Duration};

use kafka_protocol::messages::ResponseKind;
use kraft_controller::{admin::AdminClient, wire::client::ClientConfig};
use support::{Node, Quorum, QuorumBuilder, api_versions, pki, wait_for};

/// Long enough for a first election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(30);

/// How long a node may take to refuse its configuration and exit.
const REFUSAL: Duration = Duration::from_secs(20);

/// The name of the second controller listener of these tests.
const SECURE: &str = "SECURE";

/// `builder`'s nodes with the listeners `CONTROLLER` (PLAINTEXT, the
/// first: the one in the voter set, which the controllers dial) and
/// [`SECURE`] (SSL with mTLS, its settings under Kafka's
/// `listener.name.secure.` prefix).
fn plaintext_and_ssl(builder: QuorumBuilder, keystore: &Path, truststore: &Path) -> Quorum {
    let prefix = format!("listener.name.{}.", SECURE.to_ascii_lowercase());
    builder
        .second_controller_listener(SECURE)
        .property(
            "listener.security.protocol.map",
            format!("CONTROLLER:PLAINTEXT,{SECURE}:SSL"),
        )
        .property(&format!("{prefix}ssl.keystore.type"), "PEM")
        .property(
            &format!("{prefix}ssl.keystore.location"),
            keystore.display(),
        )
        .property(&format!("{prefix}ssl.truststore.type"), "PEM")
        .property(
            &format!("{prefix}ssl.truststore.location"),
            truststore.display(),
        )
        .property(&format!("{prefix}ssl.client.auth"), "required")
        .format()
}

#[test]
fn every_controller_listener_is_served_each_with_its_own_security_protocol() {
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "ca");
    let keystore = ca.issue("node", "/CN=controller");
    let mut quorum = plaintext_and_ssl(QuorumBuilder::standalone(), &keystore, &ca.cert);
    quorum.start_all();
    quorum.wait_for_leader(&[1], ELECTION);
    let node = quorum.node(1);
    let secure = node.second_address().expect("a second listener");

    // The first listener: PLAINTEXT, DescribeQuorum through the admin client.
    let described = quorum
        .describe_quorum(1)
        .expect("DescribeQuorum on CONTROLLER");
    assert_eq!(described.leader_id, 1);

    // The second: SSL with a client certificate of the CA, ApiVersions and
    // DescribeQuorum answered on its port.
    let tls = pki::client_config(Some(&keystore), &ca.cert);
    match api_versions(&secure, tls.clone()) {
        Ok(ResponseKind::ApiVersions(r)) => assert_eq!(r.error_code, 0),
        other => panic!("ApiVersions over TLS on {SECURE} {secure}: {other:?}"),
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let over_tls = runtime.block_on(async {
        let mut admin =
            AdminClient::connect_with_tls(&secure, Duration::from_secs(5), tls.tls.clone()).await?;
        let info = admin.describe_quorum().await?;
        Ok::<_, kraft_controller::admin::AdminError>((admin.connected_addr().to_owned(), info))
    });
    let (answered_by, info) = over_tls.expect("DescribeQuorum over TLS on the second listener");
    assert_eq!(answered_by, secure, "answered on the SSL port itself");
    assert_eq!(info.leader_id, 1);

    // Each keeps its own protocol: no Kafka answer in plaintext on the SSL
    // port, none over TLS on the PLAINTEXT one.
    let plain = ClientConfig {
        connect_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::default()
    };
    assert!(
        api_versions(&secure, plain).is_err(),
        "a plaintext request to the SSL listener got an answer"
    );
    assert!(
        api_versions(&node.address(), tls).is_err(),
        "a TLS handshake with the PLAINTEXT listener succeeded"
    );
    node.assert_alive();
}

#[test]
fn a_client_on_a_followers_ssl_listener_follows_the_active_controller_on_the_ssl_listener() {
    // Kafka's ControllerApis answers DescribeCluster with the controllers'
    // endpoints on the listener the request came in on, so an Admin client
    // bootstrapped on the SSL listener stays on it when it follows the
    // active controller.
    let pki_dir = tempfile::tempdir().expect("a pki dir");
    let ca = pki::Ca::new(pki_dir.path(), "ca");
    let keystore = ca.issue("node", "/CN=controller");
    let mut quorum = plaintext_and_ssl(
        QuorumBuilder::new(3, support::Mode::Dynamic),
        &keystore,
        &ca.cert,
    );
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let follower = *ids.iter().find(|id| **id != leader).expect("a follower");
    let follower_secure = quorum.node(follower).second_address().expect("SECURE");
    let leader_secure = quorum.node(leader).second_address().expect("SECURE");
    let tls = pki::client_config(Some(&keystore), &ca.cert).tls;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // Until the leader's registration (with both endpoints) is committed
    // DescribeCluster may only know its voter endpoint: wait for it.
    let (answered_by, info) = wait_for(
        ELECTION,
        "DescribeQuorum over TLS via a follower's SSL listener",
        || {
            runtime
                .block_on(async {
                    let mut admin = AdminClient::connect_with_tls(
                        &follower_secure,
                        Duration::from_secs(5),
                        tls.clone(),
                    )
                    .await?;
                    let info = admin.describe_quorum().await?;
                    Ok::<_, kraft_controller::admin::AdminError>((
                        admin.connected_addr().to_owned(),
                        info,
                    ))
                })
                .ok()
        },
    );
    assert_eq!(info.leader_id, leader);
    assert_eq!(
        answered_by, leader_secure,
        "followed to the leader's SSL listener"
    );
}

/// Rewrites `node`'s properties file with `edit` (the node must not run).
fn edit_config(node: &Node, edit: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(&node.config).expect("read server.properties");
    std::fs::write(&node.config, edit(text)).expect("write server.properties");
}

/// Starts node 1 and waits until it exits on its own; its output's last
/// line (the one-line error of `kraft-controller run`).
fn refused_start(quorum: &mut Quorum, what: &str) -> String {
    quorum.start(1);
    wait_for(
        REFUSAL,
        &format!("node 1 to refuse {what} and exit"),
        || quorum.node(1).has_exited().then_some(()),
    );
    let status = quorum.wait_exit(1, REFUSAL);
    assert!(!status.success(), "{status:?}");
    quorum
        .node(1)
        .output_tail(1)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_controller_listener_name_without_a_listener_is_refused_at_start_naming_it() {
    let mut quorum = QuorumBuilder::standalone().format();
    edit_config(quorum.node(1), |text| {
        text.replace(
            "controller.listener.names=CONTROLLER\n",
            "controller.listener.names=CONTROLLER,MISSING\n",
        )
    });
    let line = refused_start(&mut quorum, "controller.listener.names=CONTROLLER,MISSING");
    assert!(
        line.contains("controller.listener.names")
            && line.contains("\"CONTROLLER,MISSING\"")
            && line.contains("listener MISSING is not in listeners="),
        "{line}"
    );
}

#[test]
fn two_listeners_on_one_port_are_refused_at_start_naming_the_port() {
    let mut quorum = QuorumBuilder::standalone()
        .second_controller_listener(SECURE)
        .format();
    let node = quorum.node(1);
    let (port, second) = (node.port, node.second_port.expect("a second listener"));
    edit_config(node, |text| {
        text.replace(
            &format!("{SECURE}://127.0.0.1:{second}"),
            &format!("{SECURE}://127.0.0.1:{port}"),
        )
    });
    let line = refused_start(&mut quorum, "two listeners on one port");
    assert!(
        line.contains("invalid value")
            && line.contains("for listeners")
            && line.contains(&format!("port {port} is used by CONTROLLER and {SECURE}")),
        "{line}"
    );
}
