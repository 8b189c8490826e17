//! The Events (events.k8s.io/v1) the operator publishes on a KraftQuorum,
//! by reason, in the order they were emitted (`voter_events` and
//! `event_count` of run.sh). Read only.

use k8s_openapi::api::events::v1::Event;
use kube::api::ListParams;

use crate::{Error, Result, TestNamespace};

/// The `reason` Events of the KraftQuorum `name`, oldest first (by
/// `eventTime`), as `(eventTime, note)`.
///
/// Errors: [`Error::Kube`].
pub async fn of_reason(ns: &TestNamespace, name: &str, reason: &str) -> Result<Vec<Event>> {
    let mut items: Vec<Event> = ns
        .api::<Event>()
        .list(&ListParams::default())
        .await
        .map_err(Error::kube(format!("list the events of {}", ns.name())))?
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("KraftQuorum") && r.name.as_deref() == Some(name)
            }) && e.reason.as_deref() == Some(reason)
        })
        .collect();
    items.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    Ok(items)
}

/// The node id each `reason` Event of `name` names (`node N` in its note),
/// in the order they were emitted (`voter_events NS NAME REASON`).
///
/// Errors: [`Error::Kube`]; [`Error::Invalid`] for an Event whose note names
/// no node.
pub async fn voter_events(ns: &TestNamespace, name: &str, reason: &str) -> Result<Vec<i32>> {
    of_reason(ns, name, reason)
        .await?
        .iter()
        .map(|e| {
            let note = e.note.as_deref().unwrap_or("");
            node_in(note).ok_or_else(|| {
                Error::Invalid(format!(
                    "{reason} event without 'node N' in its note: {note}"
                ))
            })
        })
        .collect()
}

/// How many `reason` Events the KraftQuorum `name` has (`event_count`).
///
/// Errors: [`Error::Kube`].
pub async fn count(ns: &TestNamespace, name: &str, reason: &str) -> Result<usize> {
    Ok(of_reason(ns, name, reason).await?.len())
}

/// The `N` of the first `node N` in `note`.
fn node_in(note: &str) -> Option<i32> {
    let at = note.find("node ")?;
    let digits: String = note[at + 5..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::node_in;

    #[test]
    fn the_node_of_a_note_is_the_number_after_node() {
        assert_eq!(node_in("added node 3 (directory x) as a voter"), Some(3));
        assert_eq!(node_in("nothing here"), None);
    }
}
