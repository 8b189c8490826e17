//! Leader election between operator replicas with a `coordination.k8s.io/v1`
//! Lease, as client-go's `leaderelection` does: the holder renews the lease
//! every few seconds; another replica takes it over only after it went
//! unrenewed for `leaseDurationSeconds`. Writes use the lease's
//! `resourceVersion` (optimistic concurrency), so two replicas never both
//! believe they won the same round.
//!
//! Owns the Lease object and the decision [`decide`] (pure). It must not
//! know what leading means: the `run` module starts the reconciler once
//! [`LeaderElector::acquire`] returns and stops it when [`LeaderElector::keep`]
//! reports the lease lost.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::{SignedDuration, Timestamp},
};
use kube::{Api, Client, api::PostParams};
use tracing::{info, warn};

/// Errors of a lease operation (other than losing a race, which is not an error).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API call failed.
    #[error("cannot {action} lease {namespace}/{name}: {source}")]
    Kube {
        action: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// What to do with the lease as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No lease exists: create it, held by us.
    Create,
    /// We hold it: renew it.
    Renew,
    /// Nobody holds it, or its holder stopped renewing: take it over.
    TakeOver,
    /// Another replica holds a live lease.
    HeldBy(String),
}

/// Decides from the lease's spec (if any), our identity and the time.
pub fn decide(spec: Option<&LeaseSpec>, me: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Create;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == me {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::TakeOver;
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(0));
    let expired = match &spec.renew_time {
        Some(MicroTime(t)) => *t + SignedDuration::from_secs(duration) < now,
        None => true,
    };
    if expired {
        Decision::TakeOver
    } else {
        Decision::HeldBy(holder.to_string())
    }
}

/// Leader election on one Lease.
#[derive(Clone, Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    namespace: String,
    identity: String,
    /// How long a lease stays ours without renewal.
    pub lease_duration: Duration,
    /// How often the holder renews, and others retry.
    pub retry_period: Duration,
}

impl LeaderElector {
    /// An elector for lease `namespace/name` as `identity` (the pod name).
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        lease_duration: Duration,
    ) -> Self {
        LeaderElector {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            namespace: namespace.to_string(),
            identity: identity.to_string(),
            lease_duration,
            retry_period: lease_duration / 3,
        }
    }

    fn err(&self, action: &'static str) -> impl FnOnce(kube::Error) -> Error + '_ {
        move |source| Error::Kube {
            action,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    fn spec(&self, now: Timestamp, previous: Option<&LeaseSpec>, take_over: bool) -> LeaseSpec {
        let transitions = previous.and_then(|s| s.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: if take_over || previous.is_none() {
                Some(MicroTime(now))
            } else {
                previous.and_then(|s| s.acquire_time.clone())
            },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(if take_over {
                transitions + 1
            } else {
                transitions
            }),
            ..LeaseSpec::default()
        }
    }

    /// One round: returns whether we hold the lease afterwards. A lost race
    /// (409 Conflict) is `Ok(false)`.
    ///
    /// # Errors
    /// [`Error::Kube`] when the API server cannot be reached or refuses.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, Error> {
        let now = Timestamp::now();
        let current = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(self.err("read"))?;
        let decision = decide(
            current.as_ref().and_then(|l| l.spec.as_ref()),
            &self.identity,
            now,
        );
        let result = match (&decision, current) {
            (Decision::HeldBy(_), _) => return Ok(false),
            (Decision::Create, _) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(now, None, false)),
                };
                self.api
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(|_| ())
            }
            (Decision::Renew | Decision::TakeOver, Some(mut lease)) => {
                let take_over = decision == Decision::TakeOver;
                lease.spec = Some(self.spec(now, lease.spec.as_ref(), take_over));
                // `replace` carries metadata.resourceVersion: a concurrent
                // writer makes this fail with 409 instead of both winning.
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
                    .map(|_| ())
            }
            (Decision::Renew | Decision::TakeOver, None) => return Ok(false),
        };
        match result {
            Ok(()) => {
                if decision != Decision::Renew {
                    info!(lease = %self.name, identity = %self.identity, "acquired leadership");
                }
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(self.err("write")(e)),
        }
    }

    /// Waits until this replica holds the lease.
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => warn!(error = %e, "leader election attempt failed"),
            }
            tokio::time::sleep(self.retry_period).await;
        }
    }

    /// Renews the lease every retry period; returns when it is lost: another
    /// replica holds it, or renewals failed for two thirds of the lease
    /// duration (so we stop acting before anyone may take over).
    pub async fn keep(&self) {
        let deadline = self.lease_duration * 2 / 3;
        let mut last_renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.retry_period).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => last_renewed = tokio::time::Instant::now(),
                Ok(false) => {
                    warn!(lease = %self.name, "leadership lost to another replica");
                    return;
                }
                Err(e) => {
                    warn!(error = %e, "lease renewal failed");
                    if last_renewed.elapsed() >= deadline {
                        warn!(lease = %self.name, "leadership lost: renewals failed past the deadline");
                        return;
                    }
                }
            }
        }
    }

    /// Gives the lease up on shutdown so a standby takes over at once
    /// (client-go's `ReleaseOnCancel`): clears the holder if it is still us.
    ///
    /// # Errors
    /// [`Error::Kube`] when the lease cannot be read or written.
    pub async fn release(&self) -> Result<(), Error> {
        let Some(mut lease) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(self.err("read"))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
            .map_err(self.err("release"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    fn held(holder: Option<&str>, renewed: &str) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(t(renewed))),
            ..LeaseSpec::default()
        }
    }

    /// Scripted API server: answers `(method, path, status, body)` in order
    /// (`Value::Null` body = echo the request) and returns what it was sent.
    async fn scripted(
        steps: Vec<(&'static str, &'static str, u16, serde_json::Value)>,
        run: impl AsyncFnOnce(LeaderElector) -> Result<bool, Error>,
    ) -> (Result<bool, Error>, Vec<(String, serde_json::Value)>) {
        use http::{Request, Response};
        use kube::client::Body;
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let n = steps.len();
        let server = tokio::spawn(async move {
            let mut seen = vec![];
            for (method, path, status, reply) in steps {
                let Some((req, send)) = handle.next_request().await else {
                    break;
                };
                let got = format!("{} {}", req.method(), req.uri().path());
                assert_eq!(got, format!("{method} {path}"));
                let bytes = req.into_body().collect_bytes().await.expect("body");
                let body: serde_json::Value =
                    serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                let out = if reply.is_null() { body.clone() } else { reply };
                seen.push((got, body));
                send.send_response(
                    Response::builder()
                        .status(status)
                        .body(Body::from(serde_json::to_vec(&out).expect("json")))
                        .expect("response"),
                );
            }
            seen
        });
        let client = Client::new(service, "ns");
        let elector =
            LeaderElector::new(client, "ns", "kraft-operator", "a", Duration::from_secs(15));
        let result = run(elector).await;
        let seen = server.await.expect("server");
        assert_eq!(seen.len(), n, "scripted calls not made: {seen:?}");
        (result, seen)
    }

    const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/kraft-operator";
    const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";

    fn not_found() -> serde_json::Value {
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "NotFound", "code": 404})
    }

    fn lease(holder: &str, renewed: Timestamp) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kraft-operator", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                     "renewTime": MicroTime(renewed), "leaseTransitions": 2},
        })
    }

    #[tokio::test]
    async fn the_first_replica_creates_the_lease_and_leads() {
        let (result, seen) = scripted(
            vec![
                ("GET", LEASE, 404, not_found()),
                ("POST", LEASES, 201, serde_json::Value::Null),
            ],
            async |e| e.try_acquire_or_renew().await,
        )
        .await;
        assert!(result.expect("no error"));
        assert_eq!(seen[1].1["spec"]["holderIdentity"], "a");
    }

    #[tokio::test]
    async fn a_live_lease_of_another_replica_is_not_written() {
        let (result, _) = scripted(
            vec![("GET", LEASE, 200, lease("b", Timestamp::now()))],
            async |e| e.try_acquire_or_renew().await,
        )
        .await;
        assert!(!result.expect("no error"));
    }

    #[tokio::test]
    async fn an_expired_lease_is_taken_over_with_its_resource_version() {
        let old = Timestamp::now() - SignedDuration::from_secs(60);
        let (result, seen) = scripted(
            vec![
                ("GET", LEASE, 200, lease("b", old)),
                ("PUT", LEASE, 200, serde_json::Value::Null),
            ],
            async |e| e.try_acquire_or_renew().await,
        )
        .await;
        assert!(result.expect("no error"));
        let body = &seen[1].1;
        assert_eq!(body["metadata"]["resourceVersion"], "7");
        assert_eq!(body["spec"]["holderIdentity"], "a");
        assert_eq!(body["spec"]["leaseTransitions"], 3);
    }

    #[tokio::test]
    async fn losing_the_write_race_is_not_leading() {
        let old = Timestamp::now() - SignedDuration::from_secs(60);
        let conflict = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Conflict", "code": 409});
        let (result, _) = scripted(
            vec![
                ("GET", LEASE, 200, lease("b", old)),
                ("PUT", LEASE, 409, conflict),
            ],
            async |e| e.try_acquire_or_renew().await,
        )
        .await;
        assert!(!result.expect("a lost race is not an error"));
    }

    #[tokio::test]
    async fn release_clears_the_holder_when_it_is_us() {
        let (result, seen) = scripted(
            vec![
                ("GET", LEASE, 200, lease("a", Timestamp::now())),
                ("PUT", LEASE, 200, serde_json::Value::Null),
            ],
            async |e| e.release().await.map(|()| true),
        )
        .await;
        assert!(result.expect("released"));
        assert!(
            seen[1].1["spec"].get("holderIdentity").is_none(),
            "{}",
            seen[1].1
        );
    }

    #[test]
    fn a_missing_lease_is_created() {
        assert_eq!(
            decide(None, "a", t("2026-01-01T00:00:00Z")),
            Decision::Create
        );
    }

    #[test]
    fn the_holder_renews_its_own_lease() {
        let spec = held(Some("a"), "2026-01-01T00:00:00Z");
        assert_eq!(
            decide(Some(&spec), "a", t("2026-01-01T00:10:00Z")),
            Decision::Renew
        );
    }

    #[test]
    fn a_live_lease_of_another_replica_is_left_alone() {
        let spec = held(Some("b"), "2026-01-01T00:00:00Z");
        assert_eq!(
            decide(Some(&spec), "a", t("2026-01-01T00:00:15Z")),
            Decision::HeldBy("b".into())
        );
    }

    #[test]
    fn an_expired_or_released_lease_is_taken_over() {
        let spec = held(Some("b"), "2026-01-01T00:00:00Z");
        assert_eq!(
            decide(Some(&spec), "a", t("2026-01-01T00:00:16Z")),
            Decision::TakeOver
        );
        let released = held(None, "2026-01-01T00:00:00Z");
        assert_eq!(
            decide(Some(&released), "a", t("2026-01-01T00:00:01Z")),
            Decision::TakeOver
        );
    }
}
