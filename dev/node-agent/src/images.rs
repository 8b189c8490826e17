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
//!   - repository: apache/kafka              # an image with files: "apache/kafka:4.4.0"
//!     root: /cache/images/apache-kafka-{tag}  #   its files are under .../apache-kafka-4.4.0
//!     paths: [/opt/kafka, /etc/kafka/docker]  #   bind-mounted read-only from the root
//!     writable: [/opt/kafka/config]           #   each container gets its own copy
//!     entrypoint: /etc/kafka/docker/run       #   a path inside the container
//! ```
//!
//! This module owns the matching, the argv that results from a container's
//! `command` and `args` (Kubernetes' rules: `command` replaces the image's
//! entrypoint, `args` its default arguments) and the image root a tag selects.
//! It must not start anything or touch the files (see `mounts`).

use std::path::{Component, Path, PathBuf};

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
    #[error(
        "image {image:?} is not built here: its root {root} does not exist (dev/kafka-image.sh builds the apache/kafka roots of mk/kafka.mk's KAFKA_VERSIONS)"
    )]
    NoRoot { image: String, root: String },
    #[error("image {image:?}: {path} is missing from its root {root}")]
    NoPath {
        image: String,
        root: String,
        path: String,
    },
    #[error(
        "image {image:?}: {path:?} in the image map's paths or writable is not an absolute path without `..`"
    )]
    BadPath { image: String, path: String },
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
    /// The host directory holding the image's files, `{tag}` replaced by the
    /// image's tag (`latest` when it has none), e.g.
    /// `/cache/images/apache-kafka-{tag}`; `None` for images that are only a
    /// program (their containers see the host's filesystem).
    #[serde(default)]
    pub root: Option<String>,
    /// Absolute paths of the image (`/opt/kafka`) bind-mounted read-only from
    /// the same path under `root` into the container.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Absolute paths of the image (`/opt/kafka/config`) that each container
    /// gets a writable copy of, taken from `root` at every start (a restarted
    /// container starts from the image again, as with a container runtime).
    #[serde(default)]
    pub writable: Vec<String>,
}

/// The files of an image with a `root`, for one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRoot {
    /// The root directory, tag substituted; it exists.
    pub dir: PathBuf,
    /// Read-only paths (absolute, inside the container; each exists under `dir`).
    pub paths: Vec<String>,
    /// Per-container writable paths (absolute; each exists under `dir`).
    pub writable: Vec<String>,
}

impl ImageRoot {
    /// Where an image path (`/opt/kafka`) is under the root directory.
    pub fn host_path(&self, path: &str) -> PathBuf {
        self.dir.join(path.trim_start_matches('/'))
    }
}

/// What runs a container: its argv and, for an image with files, its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Program and arguments, as [`ImageMap::argv`] gives them.
    pub argv: Vec<String>,
    /// The image's files, when its entry has a `root`.
    pub root: Option<ImageRoot>,
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
        let entry = self.entry(&image)?;
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

    /// The argv and the image root that run `container`. An entry with a
    /// `root` whose directory (for this tag) or one of whose paths does not
    /// exist is an error naming the image: an unbuilt version must not run
    /// on the host's filesystem instead.
    pub fn resolve(&self, container: &Container) -> Result<Resolved, ImageError> {
        let argv = self.argv(container)?;
        let image = container.image.clone().unwrap_or_default();
        let entry = self.entry(&image)?;
        let Some(template) = &entry.root else {
            return Ok(Resolved { argv, root: None });
        };
        let dir = PathBuf::from(template.replace("{tag}", tag(&image)));
        if !dir.is_dir() {
            return Err(ImageError::NoRoot {
                image,
                root: dir.display().to_string(),
            });
        }
        let root = ImageRoot {
            dir,
            paths: entry.paths.clone(),
            writable: entry.writable.clone(),
        };
        for path in root.paths.iter().chain(&root.writable) {
            let relative = Path::new(path).strip_prefix("/").ok();
            let inside = relative.is_some_and(|r| {
                r.components().next().is_some()
                    && r.components().all(|c| matches!(c, Component::Normal(_)))
            });
            if !inside {
                return Err(ImageError::BadPath {
                    image,
                    path: path.clone(),
                });
            }
            if !root.host_path(path).exists() {
                return Err(ImageError::NoPath {
                    image,
                    root: root.dir.display().to_string(),
                    path: path.clone(),
                });
            }
        }
        Ok(Resolved {
            argv,
            root: Some(root),
        })
    }

    /// The first entry matching `image`'s repository.
    fn entry(&self, image: &str) -> Result<&ImageEntry, ImageError> {
        let repo = repository(image);
        self.images
            .iter()
            .find(|e| repo == e.repository || repo.ends_with(&format!("/{}", e.repository)))
            .ok_or_else(|| ImageError::Unknown(image.to_owned()))
    }
}

/// The tag of an image reference (`4.4.0` of `apache/kafka:4.4.0@sha256:…`),
/// `latest` when it has none.
fn tag(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    let repo = repository(image);
    image
        .get(repo.len() + 1..)
        .filter(|t| !t.is_empty())
        .unwrap_or("latest")
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

    fn kafka_map(root: &Path) -> ImageMap {
        serde_yaml::from_str(&format!(
            "images:\n  - repository: apache/kafka\n    root: {}/apache-kafka-{{tag}}\n    paths: [/opt/kafka, /etc/kafka/docker]\n    writable: [/opt/kafka/config]\n    entrypoint: /etc/kafka/docker/run\n",
            root.display()
        ))
        .expect("valid test map")
    }

    #[test]
    fn an_image_with_a_root_resolves_the_root_of_its_tag() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("apache-kafka-4.4.0");
        for p in ["opt/kafka/config", "etc/kafka/docker"] {
            std::fs::create_dir_all(root.join(p)).expect("mkdir");
        }
        std::fs::create_dir_all(dir.path().join("apache-kafka-4.1.2")).expect("mkdir");
        let resolved = kafka_map(dir.path())
            .resolve(&container("docker.io/apache/kafka:4.4.0", &[], &[]))
            .expect("resolved");
        assert_eq!(resolved.argv, vec!["/etc/kafka/docker/run"]);
        let image_root = resolved.root.expect("a root");
        assert_eq!(image_root.dir, root);
        assert_eq!(image_root.paths, vec!["/opt/kafka", "/etc/kafka/docker"]);
        assert_eq!(image_root.writable, vec!["/opt/kafka/config"]);
        assert_eq!(
            image_root.host_path("/opt/kafka/config"),
            root.join("opt/kafka/config")
        );
    }

    #[test]
    fn an_image_tag_without_a_built_root_is_an_error_naming_the_image() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("apache-kafka-4.4.0")).expect("mkdir");
        let err = kafka_map(dir.path())
            .resolve(&container("apache/kafka:3.9.0", &[], &[]))
            .expect_err("no root for 3.9.0");
        assert!(matches!(err, ImageError::NoRoot { .. }), "{err:?}");
        assert!(err.to_string().contains("\"apache/kafka:3.9.0\""), "{err}");
        assert!(err.to_string().contains("apache-kafka-3.9.0"), "{err}");
        // The 4.4.0 root exists but lacks the image's paths.
        let err = kafka_map(dir.path())
            .resolve(&container("apache/kafka:4.4.0", &[], &[]))
            .expect_err("no /opt/kafka in the root");
        assert!(
            matches!(&err, ImageError::NoPath { path, .. } if path == "/opt/kafka"),
            "{err:?}"
        );
    }

    #[test]
    fn image_paths_must_be_absolute_and_stay_in_the_root() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("x-latest/opt")).expect("mkdir");
        for bad in ["opt", "/opt/../../etc", "/"] {
            let map: ImageMap = serde_yaml::from_str(&format!(
                "images:\n  - repository: x\n    root: {}/x-{{tag}}\n    paths: [{bad:?}]\n    entrypoint: /opt/run\n",
                dir.path().display()
            ))
            .expect("valid test map");
            let err = map
                .resolve(&container("x", &[], &[]))
                .expect_err("a bad path");
            assert!(
                matches!(&err, ImageError::BadPath { path, .. } if path == bad),
                "{err:?}"
            );
        }
    }

    #[test]
    fn an_image_without_root_resolves_to_its_argv_alone() {
        let resolved = map()
            .resolve(&container("kraft-controller:1", &[], &["run"]))
            .expect("resolved");
        assert_eq!(resolved.root, None);
        assert_eq!(resolved.argv, vec!["/t/kraft-controller", "run"]);
    }

    #[test]
    fn the_tag_is_the_part_after_the_repository_or_latest() {
        assert_eq!(tag("apache/kafka:4.4.0"), "4.4.0");
        assert_eq!(tag("localhost:5000/apache/kafka:4.1.2@sha256:ab"), "4.1.2");
        assert_eq!(tag("localhost:5000/apache/kafka"), "latest");
        assert_eq!(tag("apache/kafka@sha256:ab"), "latest");
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
