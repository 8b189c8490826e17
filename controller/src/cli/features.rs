//! `kraft-controller features`: describe the finalized features of the
//! metadata quorum and upgrade or downgrade them, in the shape of Kafka's
//! `kafka-features --bootstrap-controller` (its `FeatureCommand` output),
//! on top of [`crate::admin`].
//!
//! Owns argument parsing, output formatting and exit codes: 0 success, 1 an
//! error, 3 a retriable error (see [`super::quorum::EXIT_RETRIABLE`]);
//! errors are one line on stderr. It must not speak the protocol itself.

use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::{Args, Subcommand};

use super::quorum::{AdminCliError, run_admin};
use crate::{
    admin::{
        AdminClient, UPGRADE_TYPE_SAFE_DOWNGRADE, UPGRADE_TYPE_UNSAFE_DOWNGRADE,
        UPGRADE_TYPE_UPGRADE,
    },
    metadata::version::MetadataVersion,
};

/// `kraft-controller features`.
#[derive(Debug, Args)]
pub struct FeaturesArgs {
    /// The controllers to start from, HOST:PORT or a comma-separated list
    /// (Kafka's `--bootstrap-controller`); updates go to the active one.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]")]
    bootstrap_controller: String,
    /// Timeout of the connect and of each request, ms (Kafka admin's
    /// request.timeout.ms); also UpdateFeatures' `timeout_ms`.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u32,
    /// A client properties file, as Kafka's tools take it (see `quorum`).
    #[arg(long, value_name = "FILE")]
    command_config: Option<PathBuf>,
    #[command(subcommand)]
    command: FeaturesCommand,
}

#[derive(Debug, Subcommand)]
enum FeaturesCommand {
    /// The supported and finalized level of every feature (ApiVersions).
    Describe,
    /// Upgrade features (UpdateFeatures, UPGRADE), e.g. `kraft.version=1`
    /// (the static -> dynamic quorum upgrade, KIP-853) or `--metadata 4.4`.
    Upgrade {
        #[command(flatten)]
        updates: Updates,
    },
    /// Downgrade features (UpdateFeatures, SAFE_DOWNGRADE; UNSAFE_DOWNGRADE
    /// with `--unsafe`).
    Downgrade {
        #[command(flatten)]
        updates: Updates,
        /// Downgrade even where metadata may be lost (Kafka 4.4's controller
        /// refuses it for metadata.version).
        #[arg(long = "unsafe")]
        unsafe_downgrade: bool,
    },
}

/// The levels asked for, as `kafka-features upgrade|downgrade` takes them.
#[derive(Debug, Args)]
struct Updates {
    /// FEATURE=LEVEL, e.g. `kraft.version=1`; repeat for several.
    #[arg(long, value_name = "FEATURE=LEVEL")]
    feature: Vec<String>,
    /// metadata.version as a release version, e.g. `4.1-IV1` or `4.1`.
    #[arg(long, value_name = "RELEASE")]
    metadata: Option<String>,
    /// Validate only (UpdateFeatures' `validate_only`): nothing changes.
    #[arg(long)]
    dry_run: bool,
}

impl Updates {
    /// Every `(feature, level)`; errors (one line) for a malformed
    /// `--feature`, an unknown `--metadata` release, or neither given.
    fn parse(&self) -> Result<Vec<(String, i16)>, String> {
        let mut updates = self
            .feature
            .iter()
            .map(|s| parse_feature(s))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(release) = &self.metadata {
            let version = MetadataVersion::parse(release).ok_or_else(|| {
                format!(
                    "unknown --metadata {release:?}: expected a release version in {}",
                    crate::metadata::version::supported_range()
                )
            })?;
            updates.push(("metadata.version".to_owned(), version.feature_level()));
        }
        if updates.is_empty() {
            return Err("give --feature FEATURE=LEVEL or --metadata RELEASE".to_owned());
        }
        Ok(updates)
    }
}

/// Runs `features` and maps the outcome to an exit code (0, 1, or
/// [`super::quorum::EXIT_RETRIABLE`]).
pub fn run(args: FeaturesArgs) -> ExitCode {
    run_admin(execute(args))
}

/// Parses `FEATURE=LEVEL` (Kafka's `--feature` syntax).
fn parse_feature(s: &str) -> Result<(String, i16), String> {
    let (name, level) = s
        .split_once('=')
        .ok_or_else(|| format!("invalid --feature {s:?}: expected FEATURE=LEVEL"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("invalid --feature {s:?}: empty feature name"));
    }
    let level = level
        .trim()
        .parse::<i16>()
        .map_err(|e| format!("invalid --feature {s:?}: level {level:?}: {e}"))?;
    Ok((name.to_owned(), level))
}

/// A level as `kafka-features` prints it: metadata.version by its release
/// name (e.g. `4.1-IV1`), others as numbers.
fn level_name(feature: &str, level: i16) -> String {
    if feature == "metadata.version" {
        MetadataVersion::from_feature_level(level)
            .map_or_else(|| level.to_string(), |v| v.to_string())
    } else {
        level.to_string()
    }
}

/// `describe`'s lines, one per supported feature, sorted by name, in
/// Kafka 4.4.0's `FeatureCommand` columns (4.1 separated them with tabs).
fn format_describe(v: &kafka_protocol::messages::ApiVersionsResponse) -> String {
    let mut supported: Vec<_> = v.supported_features.iter().collect();
    supported.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    let mut out = String::new();
    for f in supported {
        let name = f.name.as_str();
        let finalized = v
            .finalized_features
            .iter()
            .find(|x| x.name.as_str() == name)
            .map_or(0, |x| x.max_version_level);
        out.push_str(&format!(
            "Feature: {name:<40}  SupportedMinVersion: {:<15}  SupportedMaxVersion: {:<15}  FinalizedVersionLevel: {:<15}  Epoch: {}\n",
            level_name(name, f.min_version),
            level_name(name, f.max_version),
            level_name(name, finalized),
            v.finalized_features_epoch,
        ));
    }
    out
}

async fn execute(args: FeaturesArgs) -> Result<String, AdminCliError> {
    let timeout = Duration::from_millis(u64::from(args.timeout_ms));
    let tls = match &args.command_config {
        Some(path) => super::command_config::load(path).map_err(AdminCliError::Usage)?,
        None => None,
    };
    match args.command {
        FeaturesCommand::Describe => {
            let admin =
                AdminClient::connect_with_tls(&args.bootstrap_controller, timeout, tls).await?;
            Ok(format_describe(admin.api_versions()))
        }
        FeaturesCommand::Upgrade { updates } => {
            update(
                &args.bootstrap_controller,
                timeout,
                tls,
                args.timeout_ms,
                &updates,
                UPGRADE_TYPE_UPGRADE,
            )
            .await
        }
        FeaturesCommand::Downgrade {
            updates,
            unsafe_downgrade,
        } => {
            let upgrade_type = if unsafe_downgrade {
                UPGRADE_TYPE_UNSAFE_DOWNGRADE
            } else {
                UPGRADE_TYPE_SAFE_DOWNGRADE
            };
            update(
                &args.bootstrap_controller,
                timeout,
                tls,
                args.timeout_ms,
                &updates,
                upgrade_type,
            )
            .await
        }
    }
}

/// Sends one UpdateFeatures of `updates` with `upgrade_type`; Kafka's
/// `FeatureCommand` lines (`kraft.version was upgraded to 1.`; levels as
/// numbers).
async fn update(
    bootstrap: &str,
    timeout: Duration,
    tls: Option<std::sync::Arc<crate::wire::tls::TlsClient>>,
    timeout_ms: u32,
    updates: &Updates,
    upgrade_type: i8,
) -> Result<String, AdminCliError> {
    let list = updates.parse().map_err(AdminCliError::Usage)?;
    let mut admin = AdminClient::connect_with_tls(bootstrap, timeout, tls).await?;
    let timeout_ms = i32::try_from(timeout_ms).unwrap_or(i32::MAX);
    admin
        .update_features(&list, upgrade_type, updates.dry_run, timeout_ms)
        .await?;
    let verb = match (upgrade_type == UPGRADE_TYPE_UPGRADE, updates.dry_run) {
        (true, false) => "was upgraded",
        (true, true) => "can be upgraded",
        (false, false) => "was downgraded",
        (false, true) => "can be downgraded",
    };
    Ok(list
        .iter()
        .map(|(name, level)| format!("{name} {verb} to {level}.\n"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feature_argument_is_name_equals_level() {
        assert_eq!(
            parse_feature("kraft.version=1"),
            Ok(("kraft.version".into(), 1))
        );
        assert!(parse_feature("kraft.version").is_err());
        assert!(parse_feature("=1").is_err());
        assert!(parse_feature("kraft.version=one").is_err_and(|e| e.contains("\"one\"")));
    }

    fn updates(feature: &[&str], metadata: Option<&str>) -> Updates {
        Updates {
            feature: feature.iter().map(|s| (*s).to_owned()).collect(),
            metadata: metadata.map(str::to_owned),
            dry_run: false,
        }
    }

    #[test]
    fn metadata_is_a_release_version_turned_into_its_feature_level() {
        assert_eq!(
            updates(&["group.version=1"], Some("4.1-IV1")).parse(),
            Ok(vec![
                ("group.version".into(), 1),
                ("metadata.version".into(), 27)
            ])
        );
        assert_eq!(
            updates(&[], Some("4.4")).parse(),
            Ok(vec![("metadata.version".into(), 33)])
        );
        assert!(
            updates(&[], Some("9.9"))
                .parse()
                .is_err_and(|e| e.contains("\"9.9\""))
        );
        assert!(updates(&[], None).parse().is_err());
    }
}
