//! What objects do during a window of time, for cases that must show that
//! nothing changes (a paused quorum): every state a watch delivers over the
//! window, rendered by the test (`kubectl get --watch` under `timeout` in
//! the bash security.sh). The window is the assertion's own length, not a
//! wait for something to happen (see [`crate::wait`] for those). Read only.

use std::{fmt::Debug, time::Duration};

use futures::StreamExt;
use kube::{
    Api, Resource,
    runtime::{WatchStreamExt, watcher},
};
use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// Watches `api` (the objects `config` selects) for `window` and returns
/// `render` of every object state it delivered, in order: the objects as
/// first listed, each change, and each deletion (the deleted state). The
/// watch starts before this returns its first item, so nothing that
/// happens in the window is missed.
///
/// Errors: [`Error::Invalid`] when the watch fails (a window that could not
/// be watched proves nothing).
pub async fn seen_during<K>(
    api: &Api<K>,
    config: watcher::Config,
    window: Duration,
    render: impl Fn(&K) -> String,
) -> Result<Vec<String>>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let deadline = tokio::time::Instant::now() + window;
    let stream = watcher(api.clone(), config);
    let mut stream = std::pin::pin!(stream.touched_objects());
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return Ok(seen),
            Ok(None) => {
                return Err(Error::Invalid(format!(
                    "the watch ended after {} items, before its window",
                    seen.len()
                )));
            }
            Ok(Some(Err(e))) => return Err(Error::Invalid(format!("watch: {e}"))),
            Ok(Some(Ok(k))) => seen.push(render(&k)),
        }
    }
}
