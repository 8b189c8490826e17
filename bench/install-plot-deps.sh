#!/usr/bin/env bash
# Installs matplotlib (PyPI), which only bench/plot.py needs, into its own venv
# under $KRAFTWERK_CACHE (default ~/.cache/kraftwerk), idempotently, the way
# charts/hack/install-tools.sh installs kubernetes-validate: a versioned
# directory, built as *.tmp and renamed into place, so an interrupted install
# never leaves a half-made venv. Prints the venv's python on stdout.
#
# Only the package registry (PyPI, through pip) is used. The benchmark runner
# itself (bench/bench.py) needs nothing but Python 3.11's standard library.
set -euo pipefail

MATPLOTLIB_VERSION=3.11.2
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
venv="$cache/tools/matplotlib-$MATPLOTLIB_VERSION"
log() { printf '[bench-plot-deps] %s\n' "$*" >&2; }

if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  log "apt-get install python3-venv"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  log "installing matplotlib==$MATPLOTLIB_VERSION from PyPI into $venv"
  mkdir -p "$cache/tools"
  rm -rf "$venv.tmp"
  python3 -m venv "$venv.tmp"
  "$venv.tmp/bin/python" -m pip install --quiet --disable-pip-version-check \
    "matplotlib==$MATPLOTLIB_VERSION"
  rm -rf "$venv"
  mv "$venv.tmp" "$venv"
fi
echo "$venv/bin/python"
