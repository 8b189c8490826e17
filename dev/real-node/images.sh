#!/usr/bin/env bash
# Builds the container images without a Docker daemon or an image registry
# (issue 24, `make images`), saves each as an OCI archive in
# $KRAFTWERK_CACHE/images/oci/<name>.tar, and imports them into the real
# node's containerd when it runs (dev/real-node/node.sh imports them at `up`).
#
#   localhost/kraftwerk/cc-debian12:nonroot  stand-in for distroless
#       cc-debian12:nonroot, FROM scratch: the shared libraries `ldd` lists for
#       the release binaries (this host is Debian 12, as that image is),
#       /etc/passwd and /etc/group with nonroot 65532, /tmp, /home/nonroot,
#       the CA bundle; no shell, no package manager
#   ghcr.io/kraftwerk/kraft-controller:<appVersion>
#   ghcr.io/kraftwerk/kraft-operator:<appVersion>
#       `buildah bud -f Containerfile.prebuilt`: the Dockerfile's final stages
#       from target/release (the Dockerfile's builder and base images cannot be
#       pulled here); with KRAFTWERK_IMAGES_PROFILE=debug (`make images
#       IMAGES_PROFILE=debug`, for tests) from target/debug instead, copies
#       stripped of their DWARF sections (`objcopy --strip-debug`, binutils;
#       the symbols stay, for backtraces), on the same base; the label
#       dev.kraftwerk.build-profile says which
#   registry.k8s.io/pause:3.10   the sandbox image: dev/real-node/pause.c, static
#   localhost/kraftwerk/busybox:static   static busybox, for test pods
#   docker.io/apache/kafka:<version>     Kafka's jars and dev/kafka-image's scripts on
#       this host's OpenJDK 17 (see build_kafka)
#
#   dev/real-node/images.sh          build all, save, import when containerd runs
#   dev/real-node/images.sh kafka    only the apache/kafka images (then import)
#   dev/real-node/images.sh import   only import the saved archives
#
# Needs the release binaries (`cargo build --release -p kraft-controller -p
# kraft-operator`; `make images` does it first), or the debug ones with
# KRAFTWERK_IMAGES_PROFILE=debug, and dev/real-node/install.sh.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

[[ $(id -u) -eq 0 ]] || rdie "must run as root (buildah's storage, containerd)"

# release (users' images, the default) or debug (test images: no release
# build, the binaries the tests build anyway).
PROFILE="${KRAFTWERK_IMAGES_PROFILE:-release}"
case "$PROFILE" in
  release) BIN_DIR="${KRAFTWERK_RELEASE_DIR:-${CARGO_TARGET_DIR:-$repo/target}/release}" ;;
  debug) BIN_DIR="${KRAFTWERK_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}/debug}" ;;
  *) rdie "KRAFTWERK_IMAGES_PROFILE must be release or debug, not '$PROFILE'" ;;
esac
[[ -n "$APP_VERSION" ]] || rdie "no appVersion in charts/kraft-operator/Chart.yaml"
BASE_IMAGE=localhost/kraftwerk/cc-debian12:nonroot
BUSYBOX_IMAGE=localhost/kraftwerk/busybox:static
NONROOT=65532

# buildah's own store, beside containerd's (not /var/lib/containers).
buildah_() { buildah --root "$rn/buildah" --runroot "$rn_state/buildah" "$@"; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# save IMAGE FILE: the image as an OCI archive, written to a temp name and
# renamed, so a half-written archive is never imported.
save() {
  local image="$1" file="$oci_dir/$2.tar"
  mkdir -p "$oci_dir"
  rm -f "$file.tmp"
  buildah_ push --quiet "$image" "oci-archive:$file.tmp:$image" >/dev/null
  mv "$file.tmp" "$file"
  rlog "saved $image as $file ($(du -h "$file" | cut -f1))"
}

# from_tar IMAGE TAR CONFIG...: an image FROM scratch holding TAR's files
# (owners as in the tar), then `buildah config CONFIG...`.
from_tar() {
  local image="$1" tarball="$2"
  shift 2
  local c
  c="$(buildah_ from --quiet scratch)"
  buildah_ add --quiet "$c" "$tarball" / >/dev/null
  buildah_ config "$@" "$c"
  buildah_ commit --quiet --rm "$c" "$image" >/dev/null
}

# The libraries the dynamic loader maps for BINARY, as absolute paths.
libs_of() {
  ldd "$1" | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}'
}

build_base() {
  local root="$work/base" f
  mkdir -p "$root/etc" "$root/tmp" "$root/home/nonroot" "$root/etc/ssl/certs"
  for f in $( (libs_of "$BIN_DIR/kraft-controller"; libs_of "$BIN_DIR/kraft-operator") | sort -u); do
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
  done
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' \
    "$NONROOT" "$NONROOT" >"$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' "$NONROOT" >"$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  [[ -f /etc/ssl/certs/ca-certificates.crt ]] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  chmod 1777 "$root/tmp"
  chown "$NONROOT:$NONROOT" "$root/home/nonroot"
  tar -C "$root" --numeric-owner -cf "$work/base.tar" .
  from_tar "$BASE_IMAGE" "$work/base.tar" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --user "$NONROOT" --workingdir /home/nonroot
  rlog "built $BASE_IMAGE ($(tar -tf "$work/base.tar" | grep -c '\.so') shared libraries)"
}

build_pause() {
  local root="$work/pause"
  mkdir -p "$root"
  gcc -static -Os -s -Wall -Wextra -o "$root/pause" "$real_here/pause.c"
  tar -C "$root" --numeric-owner -cf "$work/pause.tar" .
  from_tar "$PAUSE_IMAGE" "$work/pause.tar" --entrypoint '["/pause"]' --user 65535:65535
  save "$PAUSE_IMAGE" pause
}

build_busybox() {
  local root="$work/busybox" a
  mkdir -p "$root/bin" "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for a in sh cat echo id ls mkdir rm sleep touch true false wget nc; do ln -s busybox "$root/bin/$a"; done
  chmod 1777 "$root/tmp"
  tar -C "$root" --numeric-owner -cf "$work/busybox.tar" .
  from_tar "$BUSYBOX_IMAGE" "$work/busybox.tar" --env PATH=/bin --cmd '["sh"]'
  save "$BUSYBOX_IMAGE" busybox
}

# The two images of our binaries, from Containerfile.prebuilt with the
# binaries alone as the build context. Debug binaries are copied, then the
# copies stripped of debug info (the files in target/ are left as cargo made
# them: they may be hard links shared with other checkouts).
build_ours() {
  local ctx="$work/context" target image f
  mkdir -p "$ctx"
  cp "$BIN_DIR/kraft-controller" "$BIN_DIR/kraft-operator" "$ctx/"
  if [[ "$PROFILE" == debug ]]; then
    for f in kraft-controller kraft-operator; do
      objcopy --strip-debug "$ctx/$f"
      rlog "$f: $(du -h "$BIN_DIR/$f" | cut -f1) in $BIN_DIR, $(du -h "$ctx/$f" | cut -f1) stripped of debug info"
    done
  fi
  for target in kraft-controller kraft-operator; do
    image="ghcr.io/kraftwerk/$target:$APP_VERSION"
    buildah_ bud --quiet --pull=never -f "$repo/Containerfile.prebuilt" --target "$target" \
      --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "dev.kraftwerk.build-profile=$PROFILE" \
      -t "$image" "$ctx" >/dev/null
    save "$image" "$target"
  done
}

# --- Apache Kafka's image (the broker tests, `make demo`) -------------------------
# docker.io/apache/kafka:<version> for each version of dev/kafka-image.sh's roots
# (Kafka's own jars and our entrypoint scripts, standing in for Kafka's
# published image), on a base with this host's OpenJDK 17 (headless: the X11, sound
# and accessibility libraries are left out), bash and the few commands the
# scripts use, and the libraries `ldd` lists for all of them. Like Kafka's
# image: user appuser 1000, CMD /etc/kafka/docker/run, /opt/kafka/config and
# /opt/kafka/logs writable by it. Cached: rebuilt only when the inputs' stamp
# changes (a cold build takes about a minute per version).
JAVA_HOME_HOST="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
KAFKA_UID=1000
kafka_commands=(/bin/bash /bin/cat /bin/mkdir /bin/grep /usr/bin/dirname /bin/ls /bin/rm)

kafka_stamp() {
  local v="$1"
  {
    sha256sum "$0" "$cache/images/apache-kafka-$v/.stamp"
    "$JAVA_HOME_HOST/bin/java" -version 2>&1
  } | sha256sum | cut -d' ' -f1
}

build_jre_root() {
  local root="$1" f jdk="${JAVA_HOME_HOST#/}"
  mkdir -p "$root/$jdk" "$root/tmp" "$root/etc" "$root/home/appuser" "$root/usr/bin"
  (cd "$JAVA_HOME_HOST" && tar -chf - --exclude=./lib/src.zip --exclude=./jmods --exclude=./include \
    --exclude=./man --exclude=./docs --exclude=./demo --exclude='libawt_xawt.so' --exclude='libatk-wrapper.so' \
    --exclude='libsplashscreen.so' --exclude='libjsound.so' --exclude='libjawt.so' .) | tar -C "$root/$jdk" -xf -
  ln -s "/$jdk/bin/java" "$root/usr/bin/java"
  for f in "${kafka_commands[@]}"; do
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
  done
  ln -s bash "$root/bin/sh"
  for f in $( (for b in "${kafka_commands[@]}" "$JAVA_HOME_HOST/bin/java"; do libs_of "$b"; done
    find "$root/$jdk" -name '*.so' -exec sh -c 'ldd "$1" 2>/dev/null' _ {} \; | awk '/=> \//{print $3}') | sort -u); do
    [[ -e "$root$f" ]] && continue
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
  done
  printf 'root:x:0:0:root:/root:/sbin/nologin\nappuser:x:%s:%s::/home/appuser:/sbin/nologin\n' \
    "$KAFKA_UID" "$KAFKA_UID" >"$root/etc/passwd"
  printf 'root:x:0:\nappuser:x:%s:\n' "$KAFKA_UID" >"$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  chmod 1777 "$root/tmp"
  chown "$KAFKA_UID:$KAFKA_UID" "$root/home/appuser"
}

build_kafka() {
  local v src root image stamp
  "$dev_dir/kafka-image.sh"
  for src in "$cache"/images/apache-kafka-*/; do
    src="${src%/}"
    v="${src##*/apache-kafka-}"
    image="docker.io/apache/kafka:$v"
    stamp="$(kafka_stamp "$v")"
    if [[ -f "$oci_dir/apache-kafka-$v.tar" && "$(cat "$oci_dir/apache-kafka-$v.stamp" 2>/dev/null)" == "$stamp" ]]; then
      continue
    fi
    root="$work/kafka-$v"
    build_jre_root "$root"
    cp -a "$src/etc" "$src/opt" "$src/mnt" "$root/"
    rm -f "$root/opt/kafka/classpath" "$root/.stamp"
    mkdir -p "$root/opt/kafka/libs"
    tr ':' '\n' <"$src/opt/kafka/classpath" | while read -r f; do cp "$f" "$root/opt/kafka/libs/"; done
    # kafka-run-class.sh passes the file's content to -cp; java expands the wildcard.
    echo '/opt/kafka/libs/*' >"$root/opt/kafka/classpath"
    chown -R "$KAFKA_UID:$KAFKA_UID" "$root/opt/kafka/config" "$root/opt/kafka/logs" "$root/mnt/shared/config"
    tar -C "$root" --numeric-owner -cf "$work/kafka-$v.tar" .
    rm -rf "$root"
    from_tar "$image" "$work/kafka-$v.tar" \
      --env "PATH=$JAVA_HOME_HOST/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
      --env "JAVA_HOME=$JAVA_HOME_HOST" --user "$KAFKA_UID:$KAFKA_UID" --workingdir /home/appuser \
      --cmd '["/etc/kafka/docker/run"]' --port 9092
    rm -f "$work/kafka-$v.tar"
    save "$image" "apache-kafka-$v"
    echo "$stamp" >"$oci_dir/apache-kafka-$v.stamp"
  done
}

# Imports every saved archive into containerd's k8s.io namespace (where the
# kubelet's CRI looks), when containerd runs.
import() {
  if ! ctr_ version >/dev/null 2>&1; then
    rlog "containerd is not running: the archives are imported at dev/real-node/node.sh up"
    return 0
  fi
  local f
  compgen -G "$oci_dir/*.tar" >/dev/null || rdie "no image archives in $oci_dir: run make cluster-images (or make images)"
  for f in "$oci_dir"/*.tar; do
    ctr_ -n k8s.io images import "$f" >/dev/null
  done
  # The cluster tests roll a quorum to the next patch tag of the controller
  # image (tests/tests/cluster/sampled.rs, an image change); with no registry
  # to pull from, containerd must have that tag: the same image under it.
  local next="${APP_VERSION%.*}.$((${APP_VERSION##*.} + 1))"
  ctr_ -n k8s.io images tag --force "ghcr.io/kraftwerk/kraft-controller:$APP_VERSION" \
    "ghcr.io/kraftwerk/kraft-controller:$next" >/dev/null
  rlog "imported into containerd: $(ctr_ -n k8s.io images ls -q | grep -v '^sha256:' | xargs)"
}

# The inputs of the base, pause, busybox and our two images: when their
# stamp is that of the saved archives, `all` does not build them again
# (`make cluster-images` runs before each of make demo, test-cluster and
# test-e2e, mostly on unchanged binaries).
ours_stamp() {
  {
    echo "$PROFILE $APP_VERSION $(command -v busybox)"
    gcc -dumpfullversion
    # shellcheck disable=SC2046  # the libraries' paths have no spaces
    sha256sum "$0" "$real_here/common.sh" "$real_here/pause.c" "$repo/Containerfile.prebuilt" \
      "$BIN_DIR/kraft-controller" "$BIN_DIR/kraft-operator" "$(command -v busybox)" \
      $( (libs_of "$BIN_DIR/kraft-controller"; libs_of "$BIN_DIR/kraft-operator") | sort -u) \
      $(ls /etc/ssl/certs/ca-certificates.crt 2>/dev/null)
  } | sha256sum | cut -d' ' -f1
}

# The images a build replaced stay in buildah's store untagged (4.6 GB after
# a day of builds); the saved archives are what containerd imports.
prune_store() {
  buildah_ rmi --prune >/dev/null || rlog "warning: buildah rmi --prune failed (above); buildah's store keeps old images"
}

# One build or import at a time on this machine: the archives, their stamps
# and containerd's tags are shared by every checkout (a second checkout waits
# here, then sees a stamp that is not its own and builds again).
mkdir -p "$oci_dir"
exec 9>"$oci_dir/.lock"
flock 9

case "${1:-all}" in
  all)
    for f in kraft-controller kraft-operator; do
      [[ -x "$BIN_DIR/$f" ]] ||
        rdie "no $BIN_DIR/$f: run make images (IMAGES_PROFILE=$PROFILE), which builds it first"
    done
    stamp="$(ours_stamp)"
    if [[ "$(cat "$oci_dir/ours.stamp" 2>/dev/null)" == "$stamp" ]] &&
      [[ -f $oci_dir/pause.tar && -f $oci_dir/busybox.tar && -f $oci_dir/kraft-controller.tar && -f $oci_dir/kraft-operator.tar ]]; then
      rlog "kraft-controller, kraft-operator, pause and busybox: unchanged since their archives were saved ($PROFILE)"
    else
      rm -f "$oci_dir/ours.stamp"
      build_base
      build_pause
      build_busybox
      build_ours
      echo "$stamp" >"$oci_dir/ours.stamp"
    fi
    build_kafka
    prune_store
    import
    ;;
  kafka)
    build_kafka
    prune_store
    import
    ;;
  import) import ;;
  *) rdie "usage: $0 [all|kafka|import]" ;;
esac
