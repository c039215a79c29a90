#!/usr/bin/env bash
# Installs the Python `skill-factory` 0.2.0 (with its OpenAI and Anthropic extras) in a venv
# outside the clone, where the compatibility test crates/skill-factory-cli/tests/it/python_reader.rs
# and the benchmarks in bench/ look for it:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/peer/bin/python
# Nothing to do when that version is there. Prints the venv's python on stdout; everything else
# goes to stderr. PEER_VENV overrides the place.
set -euo pipefail

VERSION=0.2.0
VENV="${PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/peer}"
PY="$VENV/bin/python"

"$(dirname "$0")/pip-venv.sh" "$VENV" skill-factory "$VERSION" "skill-factory[openai,anthropic]==$VERSION"
echo "$PY"
