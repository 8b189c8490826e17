//! The image map: which local program runs a container image.
//!
//! This machine has no container runtime, so an image name is only a key into
//! a YAML file written by `dev/cluster.sh` (`$KRAFTWERK_CACHE/cluster/images.yaml`):
//!
//! ```yaml
//! images:
//!   - repository: kraft-controller          # matches ".../kraft-controller:any-tag"
//!     entrypoint: /repo/target/debug/kraft-controller
//!   - repository: busybox                   # no entrypoint: `command` runs host programs
//! ```
//!
//! This module owns the matching and the argv that results from a container's
//! `command` and `args` (Kubernetes' rules: `command` replaces the image's
//! entrypoint, `args` its default arguments). It must not start anything.

use std::path::Path;

use k8s_openapi::api::core::v1::Container;
use serde::Deserialize;

/// Errors of the image map.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read the image map {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the image map {path} is not valid YAML of the expected shape: {source}")]
    Parse {
        path: String,
        source: serde_yaml::Error,
    },
    #[error("no local program for image {0:?}: add its repository to the image map (images.yaml)")]
    Unknown(String),
    #[error(
        "image {0:?} has no entrypoint in the image map, so the container must set `command` or `args`"
    )]
    NoEntrypoint(String),
}

/// One entry of the image map.
#[derive(Debug, Clone, Deserialize)]
pub struct ImageEntry {
    /// Matches an image whose repository (the name without tag or digest) is
    /// this, or ends with `/` followed by this.
    pub repository: String,
    /// The image's entrypoint as a whitespace-separated argv (program first);
    /// `None` for images such as busybox whose containers always set `command`.
    #[serde(default)]
    pub entrypoint: Option<String>,
}

/// The whole image map, in file order (the first matching entry wins).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ImageMap {
    /// The entries.
    pub images: Vec<ImageEntry>,
}

impl ImageMap {
    /// Reads the map from a YAML file.
    pub fn load(path: &Path) -> Result<Self, ImageError> {
        let text = std::fs::read_to_string(path).map_err(|source| ImageError::Read {
            path: path.display().to_string(),
            source,
        })?;
        serde_yaml::from_str(&text).map_err(|source| ImageError::Parse {
            path: path.display().to_string(),
            source,
        })
    }

    /// The argv (program first) that runs `container`: `command` (its first
    /// element mapped to the image's entrypoint program when it names it, e.g.
    /// `kraft-controller` or `/usr/local/bin/kraft-controller`) or else the
    /// image's entrypoint, followed by `args`. `$(VAR)` references are not
    /// expanded here (see `env::expand`).
    pub fn argv(&self, container: &Container) -> Result<Vec<String>, ImageError> {
        let image = container.image.clone().unwrap_or_default();
        let repo = repository(&image);
        let entry = self
            .images
            .iter()
            .find(|e| repo == e.repository || repo.ends_with(&format!("/{}", e.repository)))
            .ok_or_else(|| ImageError::Unknown(image.clone()))?;
        let entrypoint: Vec<String> = entry
            .entrypoint
            .as_deref()
            .map(|e| e.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let command = container.command.clone().unwrap_or_default();
        let args = container.args.clone().unwrap_or_default();
        let mut argv = if !command.is_empty() {
            let mut command = command;
            if let Some(program) = entrypoint.first()
                && base_name(&command[0]) == base_name(program)
            {
                command[0] = program.clone();
            }
            command
        } else if !entrypoint.is_empty() {
            entrypoint
        } else if !args.is_empty() {
            // No entrypoint (busybox): the arguments are the command, as
            // `kubectl run --image=busybox -- sleep 60` expects.
            return Ok(args);
        } else {
            return Err(ImageError::NoEntrypoint(image));
        };
        argv.extend(args);
        Ok(argv)
    }
}

/// The repository part of an image reference: without `@digest` and `:tag`.
fn repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    match image.rfind(':') {
        Some(colon) if !image[colon..].contains('/') => &image[..colon],
        _ => image,
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> ImageMap {
        serde_yaml::from_str(
            "images:\n  - repository: kraft-controller\n    entrypoint: /t/kraft-controller\n  - repository: busybox\n  - repository: pause\n    entrypoint: /bin/sleep infinity\n",
        )
        .expect("valid test map")
    }

    fn container(image: &str, command: &[&str], args: &[&str]) -> Container {
        let strings =
            |v: &[&str]| (!v.is_empty()).then(|| v.iter().map(|s| s.to_string()).collect());
        Container {
            name: "c".into(),
            image: Some(image.into()),
            command: strings(command),
            args: strings(args),
            ..Container::default()
        }
    }

    #[test]
    fn an_image_without_command_runs_its_entrypoint_with_args() {
        let argv = map().argv(&container("ghcr.io/x/kraft-controller:0.1", &[], &["run"]));
        assert_eq!(argv.expect("mapped"), vec!["/t/kraft-controller", "run"]);
    }

    #[test]
    fn a_command_naming_the_entrypoint_program_is_mapped_to_the_local_binary() {
        let c = container(
            "kraft-controller@sha256:ab",
            &["/usr/local/bin/kraft-controller", "format"],
            &["--x"],
        );
        assert_eq!(
            map().argv(&c).expect("mapped"),
            vec!["/t/kraft-controller", "format", "--x"]
        );
    }

    #[test]
    fn a_busybox_command_runs_the_host_program() {
        let c = container("docker.io/library/busybox:1.36", &["sleep"], &["3600"]);
        assert_eq!(map().argv(&c).expect("mapped"), vec!["sleep", "3600"]);
    }

    #[test]
    fn args_alone_are_the_command_of_an_image_without_entrypoint() {
        let c = container("busybox", &[], &["sleep", "300"]);
        assert_eq!(map().argv(&c).expect("mapped"), vec!["sleep", "300"]);
    }

    #[test]
    fn an_entrypoint_with_arguments_is_split_on_whitespace() {
        let c = container("registry.k8s.io/pause:3.10", &[], &[]);
        assert_eq!(
            map().argv(&c).expect("mapped"),
            vec!["/bin/sleep", "infinity"]
        );
    }

    #[test]
    fn an_unknown_image_and_a_missing_command_are_errors() {
        assert!(matches!(
            map().argv(&container("nginx", &[], &[])),
            Err(ImageError::Unknown(_))
        ));
        assert!(matches!(
            map().argv(&container("busybox", &[], &[])),
            Err(ImageError::NoEntrypoint(_))
        ));
    }

    #[test]
    fn a_registry_port_is_not_taken_for_a_tag() {
        assert_eq!(
            repository("localhost:5000/kraft-operator"),
            "localhost:5000/kraft-operator"
        );
        assert_eq!(
            repository("localhost:5000/kraft-operator:dev"),
            "localhost:5000/kraft-operator"
        );
    }
}
