#!/usr/bin/env bash
# Installs the real `npx skills` installer (the npm package `skills`, pinned) outside the clone,
# where crates/skill-factory-cli/tests/it/npx_skills.rs looks for it:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/node/node_modules/.bin/skills
# 1.5.26 runs on Node 20 (1.7.x fails at import). Nothing to do when that version is there.
# Prints the installer's path on stdout; everything else goes to stderr.
#
#   --install-node   install Node and npm with apt-get when npm is missing (CI machines)
# Without it, a machine without npm gets a note on stderr and exit 3, so callers can go on.
set -euo pipefail

VERSION=1.5.26
PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/node"
CLI="$PREFIX/node_modules/.bin/skills"

if ! command -v npm >/dev/null 2>&1; then
  if [ "${1:-}" = "--install-node" ]; then
    apt-get update >&2
    apt-get install -y nodejs npm >&2
  else
    echo "note: npm is not installed, so the \`skills\` installer was not set up; the test" \
      "crates/skill-factory-cli/tests/it/npx_skills.rs needs it (install Node and npm, then run" \
      "scripts/setup-skills-cli.sh)." >&2
    exit 3
  fi
fi

installed="$(grep -o '"version": *"[^"]*"' "$PREFIX/node_modules/skills/package.json" 2>/dev/null || true)"
if [ "$installed" != "\"version\": \"$VERSION\"" ] || [ ! -x "$CLI" ]; then
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "skills@$VERSION" >&2
fi
echo "$CLI"
