#!/usr/bin/env bash
# Makes sure the venv VENV holds DIST at VERSION, installing REQUIREMENT from PyPI with pip
# when it does not (the venv is created first when needed). Output goes to stderr. The
# scripts that install Python tools outside the clone (setup-peer.sh, setup-ray.sh) share it.
#   usage: scripts/pip-venv.sh VENV DIST VERSION REQUIREMENT
set -euo pipefail

VENV=$1 DIST=$2 VERSION=$3 REQUIREMENT=$4

if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$DIST') != '$VERSION')" 2>/dev/null; then
  python3 -m venv "$VENV" >&2 || {
    echo "error: python3 -m venv failed; install Python's venv module (Debian: apt-get install python3-venv)" >&2
    exit 2
  }
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$REQUIREMENT" >&2
fi
