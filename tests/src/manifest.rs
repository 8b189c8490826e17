//! Applying the repository's example manifests (`examples/*.yaml`) to a test
//! namespace with server-side apply, typed by kind: the kinds the examples
//! use (Service, StatefulSet, ConfigMap), anything else refused. Must not
//! edit what it applies.

use std::path::{Path, PathBuf};

use k8s_openapi::api::{
    apps::v1::StatefulSet,
    core::v1::{ConfigMap, Service},
};
use kube::api::{Patch, PatchParams};
use serde::Deserialize;

use crate::{Error, Result, TestNamespace};

/// The field manager of the tests' applies.
pub const FIELD_MANAGER: &str = "kraft-e2e";

/// `examples/<name>` of this checkout.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

/// Server-side applies every document of the YAML file `path` in `ns`;
/// returns `kind/name` of each.
///
/// Errors: [`Error::Io`] when unreadable, [`Error::Invalid`] for a document
/// that does not parse or of a kind not handled, [`Error::Kube`] when the
/// API server refuses one (Pod Security admission included).
pub async fn apply_file(ns: &TestNamespace, path: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).map_err(Error::io(format!("read {}", path.display())))?;
    let mut applied = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value = serde_yaml::Value::deserialize(doc)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        if value.is_null() {
            continue;
        }
        let kind = value
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_owned();
        let name = value
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_owned();
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        let what = format!("apply {kind}/{name} of {} in {}", path.display(), ns.name());
        let invalid = |e: serde_yaml::Error| Error::Invalid(format!("{what}: {e}"));
        match kind.as_str() {
            "Service" => {
                let o: Service = serde_yaml::from_value(value).map_err(invalid)?;
                ns.api::<Service>()
                    .patch(&name, &pp, &Patch::Apply(&o))
                    .await
                    .map_err(Error::kube(what))?;
            }
            "StatefulSet" => {
                let o: StatefulSet = serde_yaml::from_value(value).map_err(invalid)?;
                ns.api::<StatefulSet>()
                    .patch(&name, &pp, &Patch::Apply(&o))
                    .await
                    .map_err(Error::kube(what))?;
            }
            "ConfigMap" => {
                let o: ConfigMap = serde_yaml::from_value(value).map_err(invalid)?;
                ns.api::<ConfigMap>()
                    .patch(&name, &pp, &Patch::Apply(&o))
                    .await
                    .map_err(Error::kube(what))?;
            }
            other => {
                return Err(Error::Invalid(format!(
                    "{what}: kind {other:?} is not handled by kraft_e2e::manifest"
                )));
            }
        }
        applied.push(format!("{kind}/{name}"));
    }
    Ok(applied)
}
