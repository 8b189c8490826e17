//! The brokers' ACLs (issue 20's open point): with TLS, the brokers' client
//! identity (`<name>-client-tls`, `User:CN=kraft-broker`, scoped by the
//! quorum with a cert-manager issuer) is deliberately no super user, so a
//! Kafka broker could not register, heartbeat, forward requests or create
//! its internal topics. Once the quorum is bootstrapped, every pass makes
//! sure the ACLs of `kraft_controller::admin::broker_acls` exist (`ALLOW
//! <broker principal>` CLUSTER_ACTION on the cluster, CREATE on
//! `__consumer_offsets`, `__transaction_state` and `__share_group_state`;
//! DescribeAcls, CreateAcls only for a missing one, so each is written
//! once); ALTER (voter changes) and DESCRIBE stay the super users'.
//!
//! A failure does not fail the pass (the quorum may be changing leaders):
//! it is logged and the next pass tries again. Owns only that decision; the
//! RPCs are the [`QuorumSession`]'s.

use tracing::{info, warn};

use crate::{
    pki::{BROKER_CN, cn_scope, common_name},
    quorum::QuorumSession,
    validate::ValidatedQuorum,
};

/// The brokers' principal of quorum `q` (Kafka's DEFAULT mapping of a
/// certificate whose subject is only its common name).
pub fn broker_principal(q: &ValidatedQuorum) -> String {
    format!("User:CN={}", common_name(BROKER_CN, cn_scope(q)))
}

/// Ensures the brokers' ACLs when `q` has TLS and the quorum is
/// `bootstrapped`; `Some(n)` with the number this pass created, `None` when
/// nothing was asked or the call failed.
pub async fn ensure<S: QuorumSession>(
    session: &mut S,
    q: &ValidatedQuorum,
    bootstrapped: bool,
) -> Option<usize> {
    if !q.tls_enabled || !bootstrapped {
        return None;
    }
    let principal = broker_principal(q);
    match session.ensure_broker_acls(&principal).await {
        Ok(created) => {
            if created > 0 {
                info!(%principal, created, "created the brokers' ACLs: CLUSTER_ACTION on the cluster, CREATE on the internal topics");
            }
            Some(created)
        }
        Err(e) => {
            warn!(%principal, error = %e, "could not ensure the brokers' ACLs; retrying next pass");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{
        crd::KraftQuorum,
        quorum::{QuorumClient, QuorumDescription, fake::FakeQuorum},
        validate::validate,
    };

    fn quorum(tls: bool, issuer: bool) -> ValidatedQuorum {
        let mut yaml = "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: kq\n  namespace: ns\n  uid: 7e5b6f5e-0000-4000-8000-000000000001\nspec:\n  replicas: 3\n  image: kraft:1\n  storage:\n    size: 1Gi\n".to_owned();
        yaml.push_str(&format!("  tls:\n    enabled: {tls}\n"));
        if issuer {
            yaml.push_str("    issuerRef:\n      name: shared\n      kind: ClusterIssuer\n");
        }
        yaml.push_str("status:\n  clusterId: MkU3OEVBNTcwNTJENDM2Qg\n  initialVoters:\n  - nodeId: 0\n    directoryId: AAAAAAAAAAAAAAAAAAAAAQ\n");
        let kq: KraftQuorum = serde_yaml::from_str(&yaml).expect("yaml");
        validate(&kq, None, "cluster.local").expect("valid")
    }

    fn fake() -> Arc<FakeQuorum> {
        Arc::new(FakeQuorum {
            leader_addr: "10.0.0.10:9093".into(),
            description: Some(QuorumDescription {
                leader_id: 0,
                leader_epoch: 1,
                high_watermark: 10,
                voters: vec![],
                observers: vec![],
                endpoints: Default::default(),
            }),
            change_result: Ok(()),
            calls: Mutex::new(vec![]),
            broker_acls: Mutex::new(vec![]),
            unregistration: None,
        })
    }

    #[tokio::test]
    async fn after_bootstrap_the_brokers_acls_are_created_once_and_only_with_tls() {
        let fake = fake();
        let addr = "10.0.0.10:9093".parse().expect("address");
        let q = quorum(true, false);
        let mut session = fake.session(vec![addr], None);
        session.describe_quorum().await.expect("the leader answers");
        assert_eq!(
            ensure(&mut session, &q, false).await,
            None,
            "not bootstrapped"
        );
        assert_eq!(ensure(&mut session, &q, true).await, Some(4));
        assert_eq!(ensure(&mut session, &q, true).await, Some(0));
        assert_eq!(
            *fake.broker_acls.lock().expect("lock"),
            [
                "User:CN=kraft-broker 4:kafka-cluster op 9",
                "User:CN=kraft-broker 2:__consumer_offsets op 5",
                "User:CN=kraft-broker 2:__transaction_state op 5",
                "User:CN=kraft-broker 2:__share_group_state op 5",
            ]
        );
        let plain = quorum(false, false);
        assert_eq!(ensure(&mut session, &plain, true).await, None);
        let calls = fake.calls.lock().expect("lock").clone();
        assert_eq!(
            calls
                .iter()
                .filter(|c| c.starts_with("ensure_broker_acls"))
                .count(),
            2
        );
    }

    #[test]
    fn with_a_shared_issuer_the_principal_names_the_quorum() {
        assert_eq!(
            broker_principal(&quorum(true, true)),
            "User:CN=kraft-broker.ns.kq"
        );
    }
}
