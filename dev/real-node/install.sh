#!/usr/bin/env bash
# Installs what the real node (issue 24) needs, idempotently, cached under
# $KRAFTWERK_CACHE (default ~/.cache/kraftwerk). A warm run takes seconds.
#
#   Debian packages  containerd (1.6), runc, buildah, busybox-static (the test
#                    pod's image), gcc (the pause program), binutils (objcopy:
#                    debug images, make images IMAGES_PROFILE=debug), bind9-dnsutils
#                    (dig: the smoke test reads CoreDNS's answer TTLs)
#   kubelet, kube-scheduler, kube-proxy
#                    built from k8s.io/kubernetes' Go modules, same version as the
#                    API server (dev/tools/kubernetes, KUBERNETES_VERSION)
#   CNI plugins      bridge, host-local, loopback, portmap from
#                    github.com/containernetworking/plugins (CNI_PLUGINS_VERSION)
#   crictl           from sigs.k8s.io/cri-tools (CRI_TOOLS_VERSION)
#   CoreDNS          github.com/coredns/coredns (COREDNS_VERSION) with only the
#                    Corefile's plugins (dev/tools/coredns), cluster DNS
#   local-path-provisioner  from github.com/rancher/local-path-provisioner
#                    (LOCAL_PATH_PROVISIONER_VERSION), PersistentVolumes
#
# Binaries go to $KRAFTWERK_CACHE/tools/<name>-<version>/bin, symlinked from
# $KRAFTWERK_CACHE/bin; builds go to a temp directory renamed into place.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=dev/kube-pki.sh
source "$dev_dir/kube-pki.sh"

mkdir -p "$bin" "$tools"

# --- Debian packages --------------------------------------------------------------
declare -A wanted=(
  [containerd]=containerd
  [ctr]=containerd
  [runc]=runc
  [buildah]=buildah
  [busybox]=busybox-static
  [gcc]=gcc
  [objcopy]=binutils
  [dig]=bind9-dnsutils
  [iptables]=iptables    # kube-proxy's mode, node.sh's cleanup (Priority optional: not on every Debian)
)
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${wanted[$cmd]}")
done
# busybox must be the static one: it is copied alone into a FROM-scratch image.
if command -v busybox >/dev/null 2>&1 && ldd "$(command -v busybox)" >/dev/null 2>&1; then
  missing+=(busybox-static)
fi
[[ -f /usr/lib/x86_64-linux-gnu/libc.a ]] || missing+=(libc6-dev)
if ((${#missing[@]})); then
  rlog "apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | xargs)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2046
  apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
fi

# --- Go ---------------------------------------------------------------------------
go_bin="$(command -v go || true)"
[[ -z "$go_bin" && -x /usr/local/go/bin/go ]] && go_bin=/usr/local/go/bin/go
[[ -n "$go_bin" ]] || rdie "a Go toolchain (>= 1.26, dev/tools/*/go.mod) is needed to build the kubelet; none found on PATH"

# go_install OUT_DIR LDFLAGS PKG@VERSION...: `go install` into a temp GOBIN
# renamed into place (for modules without replace directives).
go_install() {
  local out="$1" ldflags="$2"
  shift 2
  local tmp="$out.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  (cd /tmp && GOBIN="$tmp" CGO_ENABLED=0 "$go_bin" install -trimpath -ldflags "$ldflags" "$@")
  rm -rf "$out"
  mv "$tmp" "$out"
}

# --- kubelet, kube-scheduler, kube-proxy -------------------------------------------
# Each from the API server's wrapper module (same version), in its own cached
# directory. With the same flags as dev/install-tools.sh's kube-apiserver and
# kube-controller-manager and the same Go build cache, most packages are
# already compiled: measured on 2 cores, the kubelet took 26 s after them
# (7 min with an empty cache), kube-scheduler and kube-proxy 6 s and 8 s.
# Building all five in one `go build` saved only about 5% of the CPU time.
kube_command() {
  local name="$1" dir="$tools/$1-$KUBERNETES_VERSION/bin"
  if [[ ! -x "$dir/$name" ]]; then
    rlog "building $name $KUBERNETES_VERSION from Go modules"
    local tmp="$dir.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    (cd "$dev_dir/tools/kubernetes" && GOFLAGS=-mod=mod CGO_ENABLED=0 "$go_bin" build -trimpath \
      -ldflags "$(kube_ldflags)" -o "$tmp/" "k8s.io/kubernetes/cmd/$name")
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
  ln -sfn "$dir/$name" "$bin/$name"
}
kube_command kubelet
kube_command kube-scheduler
kube_command kube-proxy

# --- CNI plugins ------------------------------------------------------------------
if [[ ! -x "$CNI_BIN/bridge" || ! -x "$CNI_BIN/portmap" ]]; then
  rlog "building CNI plugins $CNI_PLUGINS_VERSION from Go modules"
  m=github.com/containernetworking/plugins/plugins
  go_install "$CNI_BIN" "-s -w" "$m/main/bridge@$CNI_PLUGINS_VERSION" \
    "$m/ipam/host-local@$CNI_PLUGINS_VERSION" "$m/main/loopback@$CNI_PLUGINS_VERSION" \
    "$m/meta/portmap@$CNI_PLUGINS_VERSION"
fi

# --- crictl -----------------------------------------------------------------------
crictl_dir="$tools/cri-tools-$CRI_TOOLS_VERSION/bin"
if [[ ! -x "$crictl_dir/crictl" ]]; then
  rlog "building crictl $CRI_TOOLS_VERSION from Go modules"
  go_install "$crictl_dir" "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" \
    "sigs.k8s.io/cri-tools/cmd/crictl@$CRI_TOOLS_VERSION"
fi
ln -sfn "$crictl_dir/crictl" "$bin/crictl"
# crictl reads crictl.yaml beside its binary when /etc/crictl.yaml is absent.
printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\n' "$CONTAINERD_SOCK" "$CONTAINERD_SOCK" \
  >"$crictl_dir/crictl.yaml"

# --- CoreDNS, local-path-provisioner -----------------------------------------------
# Cluster DNS and dynamic PersistentVolumes for the real node, run as host
# processes by dev/real-node/node.sh (their modules need no replaces).
# CoreDNS from our own main package (dev/tools/coredns): coremain and only the
# plugins the Corefile of addons.sh uses, not CoreDNS's main package with all
# its plugins and their cloud SDKs (a cold build of 3 times the packages). The
# cache directory is named after the module's files, so a change rebuilds it.
coredns_mod="$dev_dir/tools/coredns"
grep -q "^require github.com/coredns/coredns $COREDNS_VERSION\$" "$coredns_mod/go.mod" ||
  rdie "dev/tools/coredns/go.mod does not require github.com/coredns/coredns $COREDNS_VERSION (COREDNS_VERSION)"
coredns_key="$(cat "$coredns_mod/go.mod" "$coredns_mod/go.sum" "$coredns_mod/main.go" | sha256sum | cut -c1-12)"
coredns_dir="$tools/coredns-$COREDNS_VERSION-$coredns_key/bin"
if [[ ! -x "$coredns_dir/coredns" ]]; then
  rlog "building CoreDNS $COREDNS_VERSION (the Corefile's plugins only) from Go modules"
  tmp="$coredns_dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  (cd "$coredns_mod" && CGO_ENABLED=0 "$go_bin" build -buildvcs=false -trimpath -ldflags "-s -w" -o "$tmp/coredns" .)
  rm -rf "$coredns_dir"
  mv "$tmp" "$coredns_dir"
fi
ln -sfn "$coredns_dir/coredns" "$bin/coredns"
lpp_dir="$tools/local-path-provisioner-$LOCAL_PATH_PROVISIONER_VERSION/bin"
if [[ ! -x "$lpp_dir/local-path-provisioner" ]]; then
  rlog "building local-path-provisioner $LOCAL_PATH_PROVISIONER_VERSION from Go modules"
  go_install "$lpp_dir" "-s -w" "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION"
fi
ln -sfn "$lpp_dir/local-path-provisioner" "$bin/local-path-provisioner"

rlog "real-node tools ready: kubelet, kube-scheduler, kube-proxy, crictl, coredns, local-path-provisioner in $bin; CNI plugins in $CNI_BIN"
