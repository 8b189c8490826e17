//! What a container sees of the filesystem: the bind mounts of its image's
//! files and of its volumes.
//!
//! An image with a root (`images::ImageRoot`) has its `paths` bind-mounted
//! read-only from the root, and its `writable` paths copied from the root into
//! the container's own directory `<pod dir>/containers/<name>/rootfs/<path>` at
//! every start (the old copy is removed first: a restarted container starts
//! from the image, as a container runtime's fresh writable layer does) and
//! bind-mounted read-write over them. Volume mounts follow, so a volume
//! mounted inside an image path covers it. The directory goes with the pod's.
//! This module must not start processes or decide about restarts.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use k8s_openapi::api::core::v1::Container;

use crate::{images::ImageRoot, process::Mount};

/// Errors while preparing a container's mounts.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("cannot copy the image's {path} from {from} to {to}: {source}")]
    Copy {
        path: String,
        from: String,
        to: String,
        source: std::io::Error,
    },
    #[error("volumeMount {0} names no volume of the pod")]
    NoVolume(String),
    #[error("cannot create subPath {path}: {source}")]
    SubPath {
        path: String,
        source: std::io::Error,
    },
}

/// The image's mounts for one start of a container whose own directory is
/// `container_dir`: read-only binds of `root.paths`, then read-write binds of
/// fresh copies of `root.writable`.
pub fn image_mounts(root: &ImageRoot, container_dir: &Path) -> Result<Vec<Mount>, MountError> {
    let rootfs = container_dir.join("rootfs");
    let mut mounts: Vec<Mount> = root
        .paths
        .iter()
        .map(|p| Mount {
            source: root.host_path(p),
            target: p.clone(),
            read_only: true,
        })
        .collect();
    for path in &root.writable {
        let from = root.host_path(path);
        let to = rootfs.join(path.trim_start_matches('/'));
        let copy_err = |source| MountError::Copy {
            path: path.clone(),
            from: from.display().to_string(),
            to: to.display().to_string(),
            source,
        };
        match std::fs::remove_dir_all(&to).or_else(|_| std::fs::remove_file(&to)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(copy_err(e)),
            _ => {}
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(copy_err)?;
        }
        copy_tree(&from, &to).map_err(copy_err)?;
        mounts.push(Mount {
            source: to,
            target: path.clone(),
            read_only: false,
        });
    }
    Ok(mounts)
}

/// Copies a file, symlink or directory tree (permissions kept, symlinks copied
/// as links).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else if meta.is_dir() {
        std::fs::create_dir(to)?;
        std::fs::set_permissions(to, meta.permissions())?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

/// The container's volume mounts: each `volumeMount` onto the directory of its
/// volume (`volumes`: volume name → host directory), or onto its `subPath`
/// below it, created when missing.
pub fn volume_mounts(
    c: &Container,
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<Vec<Mount>, MountError> {
    let mut mounts = Vec::new();
    for m in c.volume_mounts.iter().flatten() {
        let base = volumes
            .get(&m.name)
            .ok_or_else(|| MountError::NoVolume(m.name.clone()))?;
        let source = match m.sub_path.as_deref().filter(|p| !p.is_empty()) {
            Some(sub) => {
                let p = base.join(sub);
                if !p.exists() {
                    std::fs::create_dir_all(&p).map_err(|source| MountError::SubPath {
                        path: p.display().to_string(),
                        source,
                    })?;
                }
                p
            }
            None => base.clone(),
        };
        mounts.push(Mount {
            source,
            target: m.mount_path.clone(),
            read_only: m.read_only.unwrap_or(false),
        });
    }
    Ok(mounts)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::VolumeMount;

    use super::*;

    fn image(dir: &Path) -> ImageRoot {
        let root = dir.join("image");
        std::fs::create_dir_all(root.join("opt/kafka/config")).expect("mkdir");
        std::fs::create_dir_all(root.join("etc/kafka/docker")).expect("mkdir");
        std::fs::write(root.join("opt/kafka/config/server.properties"), "a=1\n").expect("write");
        std::os::unix::fs::symlink("server.properties", root.join("opt/kafka/config/link"))
            .expect("symlink");
        ImageRoot {
            dir: root,
            paths: vec!["/opt/kafka".into(), "/etc/kafka/docker".into()],
            writable: vec!["/opt/kafka/config".into()],
        }
    }

    #[test]
    fn image_paths_are_read_only_and_writable_paths_are_the_containers_own_copy() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = image(dir.path());
        let container_dir = dir.path().join("pod/containers/kafka");
        let mounts = image_mounts(&root, &container_dir).expect("mounts");
        let copy = container_dir.join("rootfs/opt/kafka/config");
        assert_eq!(
            mounts,
            vec![
                Mount {
                    source: root.dir.join("opt/kafka"),
                    target: "/opt/kafka".into(),
                    read_only: true
                },
                Mount {
                    source: root.dir.join("etc/kafka/docker"),
                    target: "/etc/kafka/docker".into(),
                    read_only: true
                },
                Mount {
                    source: copy.clone(),
                    target: "/opt/kafka/config".into(),
                    read_only: false
                },
            ]
        );
        assert_eq!(
            std::fs::read_to_string(copy.join("server.properties")).expect("copied"),
            "a=1\n"
        );
        assert_eq!(
            std::fs::read_link(copy.join("link")).expect("a link"),
            Path::new("server.properties")
        );
    }

    #[test]
    fn a_restarted_container_gets_a_fresh_copy_of_the_image() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = image(dir.path());
        let container_dir = dir.path().join("c");
        image_mounts(&root, &container_dir).expect("first start");
        let copy = container_dir.join("rootfs/opt/kafka/config");
        std::fs::write(copy.join("server.properties"), "written=by the container\n")
            .expect("write");
        std::fs::write(copy.join("extra"), "x").expect("write");
        image_mounts(&root, &container_dir).expect("second start");
        assert_eq!(
            std::fs::read_to_string(copy.join("server.properties")).expect("copied"),
            "a=1\n"
        );
        assert!(!copy.join("extra").exists());
        // The image itself was never written.
        assert_eq!(
            std::fs::read_to_string(root.dir.join("opt/kafka/config/server.properties"))
                .expect("image"),
            "a=1\n"
        );
    }

    #[test]
    fn volume_mounts_follow_sub_paths_and_name_a_missing_volume() {
        let dir = tempfile::tempdir().expect("temp dir");
        let volumes = BTreeMap::from([("data".to_string(), dir.path().to_path_buf())]);
        let mut c = Container {
            name: "c".into(),
            volume_mounts: Some(vec![VolumeMount {
                name: "data".into(),
                mount_path: "/var/lib/kafka/data".into(),
                sub_path: Some("broker".into()),
                read_only: Some(true),
                ..VolumeMount::default()
            }]),
            ..Container::default()
        };
        let mounts = volume_mounts(&c, &volumes).expect("mounts");
        assert_eq!(
            mounts,
            vec![Mount {
                source: dir.path().join("broker"),
                target: "/var/lib/kafka/data".into(),
                read_only: true
            }]
        );
        assert!(dir.path().join("broker").is_dir());
        c.volume_mounts = Some(vec![VolumeMount {
            name: "nope".into(),
            mount_path: "/x".into(),
            ..VolumeMount::default()
        }]);
        let err = volume_mounts(&c, &volumes).expect_err("no such volume");
        assert_eq!(
            err.to_string(),
            "volumeMount nope names no volume of the pod"
        );
    }
}
