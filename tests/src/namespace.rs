//! One namespace per test ([`TestNamespace`]): created with the restricted
//! Pod Security Standard enforced (the API server's PodSecurity admission),
//! deleted when the test drops it, and dumped first ([`crate::dump`]) when
//! the test fails (panics). Must not touch any other namespace.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ObjectMeta, PostParams},
    runtime::wait::{await_condition, conditions},
};

use crate::{Error, Result};

/// How long a leftover namespace of the same name (an earlier run's) may
/// take to go before [`TestNamespace::create`] gives up.
pub const LEFTOVER_TIMEOUT: Duration = Duration::from_secs(180);

/// Set (to anything) to keep the namespace of a failed test for a look.
pub const KEEP_ENV: &str = "E2E_KEEP_FAILED";

/// A namespace owned by one test. Drop deletes it (without waiting for it to
/// go); while the thread panics (the test failed) it first prints the dump of
/// [`crate::dump::namespace`] to stderr, and keeps the namespace when
/// [`KEEP_ENV`] is set (so a failed quorum does not load the machine for the
/// next tests otherwise).
pub struct TestNamespace {
    client: Client,
    name: String,
}

impl std::fmt::Debug for TestNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestNamespace")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl TestNamespace {
    /// Creates `name` (use the `e2e-rs-` prefix) with the labels
    /// `pod-security.kubernetes.io/enforce=restricted` and
    /// `enforce-version=latest`; a namespace of that name left by an earlier
    /// run is deleted first and waited for (up to [`LEFTOVER_TIMEOUT`]), and
    /// the container logs of an earlier run's pods in it removed
    /// ([`crate::cluster::logs_dir`]).
    ///
    /// Errors: [`Error::Kube`] from the API server, [`Error::Timeout`] when
    /// the leftover does not go, [`Error::Io`] when the old logs cannot be
    /// removed.
    pub async fn create(client: &Client, name: &str) -> Result<TestNamespace> {
        let api: Api<Namespace> = Api::all(client.clone());
        if let Some(old) = api
            .get_opt(name)
            .await
            .map_err(Error::kube(format!("get namespace {name}")))?
        {
            let uid = old.uid().unwrap_or_default();
            if old.metadata.deletion_timestamp.is_none() {
                api.delete(name, &DeleteParams::background())
                    .await
                    .map_err(Error::kube(format!("delete leftover namespace {name}")))?;
            }
            tokio::time::timeout(
                LEFTOVER_TIMEOUT,
                await_condition(api.clone(), name, conditions::is_deleted(&uid)),
            )
            .await
            .map_err(|_| Error::Timeout {
                what: format!("leftover namespace {name} deleted"),
                after: LEFTOVER_TIMEOUT,
                last: None,
            })?
            .map_err(|e| Error::Invalid(format!("watch namespace {name}: {e}")))?;
        }
        // dev/real-node/pod-logs.sh keeps a pod's log copies after the pod
        // goes (until the next fresh `dev/cluster.sh up`): an earlier run's
        // lines (its pods are gone with its namespace) must not answer this
        // run's log checks.
        let logs = crate::cluster::logs_dir(name);
        match std::fs::remove_dir_all(&logs) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("remove {}", logs.display()))(e)),
        }
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("app.kubernetes.io/created-by".into(), "kraft-e2e".into());
        labels.insert(
            "pod-security.kubernetes.io/enforce".into(),
            "restricted".into(),
        );
        labels.insert(
            "pod-security.kubernetes.io/enforce-version".into(),
            "latest".into(),
        );
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        api.create(&PostParams::default(), &ns)
            .await
            .map_err(Error::kube(format!("create namespace {name}")))?;
        Ok(TestNamespace {
            client: client.clone(),
            name: name.into(),
        })
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A client of the cluster.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// An [`Api`] of a namespaced kind in this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let name = self.name.clone();
        let failed = std::thread::panicking();
        // The test's runtime may be the one this thread is blocked in, so
        // the work runs on a thread of its own with a runtime and a client
        // of its own.
        let work = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                eprintln!("warning: no runtime to clean up namespace {name}");
                return;
            };
            rt.block_on(async move {
                let client = match crate::client().await {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("warning: cannot clean up namespace {name}: {e}");
                        return;
                    }
                };
                if failed {
                    crate::dump::namespace(&client, &name).await;
                    if std::env::var_os(KEEP_ENV).is_some() {
                        eprintln!("==== namespace {name} kept ({KEEP_ENV} is set)");
                        return;
                    }
                }
                let api: Api<Namespace> = Api::all(client);
                if let Err(e) = api.delete(&name, &DeleteParams::background()).await {
                    eprintln!("warning: delete namespace {name}: {e}");
                }
            });
        });
        if work.join().is_err() {
            eprintln!("warning: the clean-up of namespace {} panicked", self.name);
        }
    }
}
