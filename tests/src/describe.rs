//! DescribeQuorum of a quorum from the host, with the operator's own admin
//! client (`kraft_operator::quorum::admin::AdminQuorumClient`) and its
//! identity, the Secret `<name>-operator-tls` (`ca.crt`, `keystore.pem`): a
//! super user of the quorum. The host dials pod IPs, which the controllers'
//! certificate does not name, so, as the operator and `client_config` of
//! lib.sh do, the host name check is off and the chain is verified against
//! the quorum's CA. Also the comparison with the status (`voters_match` of
//! run.sh). Must not change the quorum.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::Secret;
use kraft_operator::{
    controller::certs::admin_client,
    crd::{KraftQuorumStatus, TLS_CA_KEY, TLS_KEYSTORE_KEY},
    kafka_uuid,
    pki::Issued,
    quorum::{AdminTls, QuorumClient, QuorumDescription, QuorumSession, admin::AdminQuorumClient},
};

use crate::{Error, Result, TestNamespace, quorum};

/// Bounds connecting to a controller and each request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The name of the operator identity Secret of quorum `name`.
pub fn operator_secret(name: &str) -> String {
    format!("{name}-operator-tls")
}

/// The PEM text of `key` in `secret`.
fn pem(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// The `ca.crt` and `keystore.pem` (key then chain, KIP-651) of the
/// quorum's operator identity; `None` when the quorum has no such Secret
/// (`spec.tls.enabled: false`: PLAINTEXT).
///
/// Errors: [`Error::Kube`], [`Error::Invalid`] when a key is missing.
pub async fn operator_identity(ns: &TestNamespace, name: &str) -> Result<Option<(String, String)>> {
    let secret_name = operator_secret(name);
    let Some(secret) = ns
        .api::<Secret>()
        .get_opt(&secret_name)
        .await
        .map_err(Error::kube(format!(
            "get Secret {}/{secret_name}",
            ns.name()
        )))?
    else {
        return Ok(None);
    };
    let (Some(ca), Some(keystore)) = (pem(&secret, TLS_CA_KEY), pem(&secret, TLS_KEYSTORE_KEY))
    else {
        return Err(Error::Invalid(format!(
            "Secret {}/{secret_name} lacks {TLS_CA_KEY} or {TLS_KEYSTORE_KEY}",
            ns.name()
        )));
    };
    Ok(Some((ca, keystore)))
}

/// The operator's admin TLS client of quorum `name`, `None` for PLAINTEXT.
///
/// Errors: as [`operator_identity`]; [`Error::Invalid`] when the PEM does
/// not load.
pub async fn admin_tls(ns: &TestNamespace, name: &str) -> Result<Option<AdminTls>> {
    let Some((ca, keystore)) = operator_identity(ns, name).await? else {
        return Ok(None);
    };
    // keystore.pem holds the key and the chain; each loader picks its part.
    let issued = Issued {
        cert_pem: keystore.clone(),
        key_pem: keystore,
        not_before: 0,
        not_after: 0,
        renew_after: 0,
    };
    let tls = admin_client(&ca, &issued)
        .map_err(|e| Error::Invalid(format!("the operator identity of {name}: {e}")))?;
    Ok(Some(Arc::new(tls)))
}

/// The `ip:port` of the controller listener of every pod of the quorum
/// that has an IP (`status.podIP`, `spec.listenerPort`), in pod name order.
///
/// Errors: [`Error::Kube`], [`Error::Invalid`] for an unparsable address.
pub async fn controller_addresses(ns: &TestNamespace, name: &str) -> Result<Vec<SocketAddr>> {
    let port = quorum::get(ns, name).await?.spec.listener_port;
    let mut pods = quorum::pods(ns, name).await?;
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods.iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .map(|ip| {
            format!("{ip}:{port}")
                .parse()
                .map_err(|e| Error::Invalid(format!("pod address {ip}:{port}: {e}")))
        })
        .collect()
}

/// DescribeQuorum (55) answered by the leader, asked through the pods of
/// the quorum in turn.
///
/// Errors: [`Error::Quorum`] when no controller answers, and the errors of
/// [`controller_addresses`] and [`admin_tls`].
pub async fn describe(ns: &TestNamespace, name: &str) -> Result<QuorumDescription> {
    let bootstrap = controller_addresses(ns, name).await?;
    let tls = admin_tls(ns, name).await?;
    let mut session = AdminQuorumClient::new(REQUEST_TIMEOUT).session(bootstrap, tls);
    session
        .describe_quorum()
        .await
        .map_err(|source| Error::Quorum {
            action: format!("DescribeQuorum of {}/{name}", ns.name()),
            source,
        })
}

/// What is wrong between DescribeQuorum and the status, `None` when they
/// agree (`voters_match` of run.sh): the same `voters` voters (node ids
/// 0..voters, directory ids), leader and epoch.
pub fn mismatch(
    described: &QuorumDescription,
    status: &KraftQuorumStatus,
    voters: usize,
) -> Option<String> {
    let mut d: Vec<(i32, String)> = described
        .voters
        .iter()
        .map(|v| (v.node_id, kafka_uuid::to_string(v.directory_id)))
        .collect();
    d.sort();
    let mut s: Vec<(i32, String)> = status
        .voters
        .iter()
        .map(|v| (v.node_id, v.directory_id.clone()))
        .collect();
    s.sort();
    let ids: Vec<i32> = d.iter().map(|(i, _)| *i).collect();
    let want: Vec<i32> = (0..i32::try_from(voters).unwrap_or(i32::MAX)).collect();
    let ok = d == s
        && ids == want
        && Some(described.leader_id) == status.leader_id
        && Some(described.leader_epoch) == status.leader_epoch;
    (!ok).then(|| {
        format!(
            "describe voters {d:?} leader {} epoch {} vs status voters {s:?} leader {:?} epoch {:?}, want {voters} voters",
            described.leader_id, described.leader_epoch, status.leader_id, status.leader_epoch
        )
    })
}

/// Waits up to `timeout` until DescribeQuorum and the status agree on
/// `voters` voters ([`mismatch`]); returns the description.
///
/// Errors: [`Error::Timeout`] with the last mismatch or error.
pub async fn wait_voters_match(
    ns: &TestNamespace,
    name: &str,
    voters: usize,
    timeout: Duration,
) -> Result<QuorumDescription> {
    let what = format!(
        "DescribeQuorum of {}/{name} agrees with the status on {voters} voters",
        ns.name()
    );
    crate::wait::poll(&what, timeout, || async {
        let d = describe(ns, name).await?;
        let s = quorum::status(ns, name).await?;
        match mismatch(&d, &s, voters) {
            None => Ok(Some(d)),
            Some(m) => Err(Error::Invalid(m)),
        }
    })
    .await
}
