#!/usr/bin/env bash
# Sets up what the dashboard's browser tests (crates/skill-factory-ui/browser/*.test.mjs) need:
# Debian's Chromium at /usr/bin/chromium, and the npm packages playwright-core and axe-core
# (pinned) outside the clone, where crates/skill-factory-ui/browser/harness.mjs finds them via
# SKILL_FACTORY_BROWSER_MODULES; and typescript (pinned), with which
# crates/skill-factory-cli/tests/it/classifier_exports.rs type-checks and runs the TypeScript
# exports of a probe set (Node 20 cannot run TypeScript by itself). All in:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/browser/node_modules
# playwright-core drives the system Chromium (it never downloads a browser of its own) and
# 1.64.1 runs on Node 20. Nothing to do when Chromium and those versions are there.
# Prints that node_modules path on stdout; everything else goes to stderr.
#
#   --install   install Chromium with apt-get when it is missing (CI machines, as root)
# Without it, a machine without Chromium gets a note on stderr and exit 3, so callers can go on.
set -euo pipefail

PLAYWRIGHT_VERSION=1.64.1
AXE_VERSION=4.14.1
TYPESCRIPT_VERSION=5.9.3
CHROMIUM=/usr/bin/chromium
PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/browser"
MODULES="$PREFIX/node_modules"

if [ ! -x "$CHROMIUM" ]; then
  if [ "${1:-}" = "--install" ]; then
    apt-get update >&2
    apt-get install -y chromium >&2
  else
    echo "note: $CHROMIUM is not installed, so the browser tests were not set up; the test" \
      "crates/skill-factory-cli/tests/it/ui_browser.rs (the dashboard in a browser)" \
      "need it (apt-get install chromium, or run scripts/setup-browser.sh --install)." >&2
    exit 3
  fi
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "note: npm is not installed, so playwright-core and axe-core were not set up; the test" \
    "crates/skill-factory-cli/tests/it/ui_browser.rs needs them (install Node and npm, then run" \
    "scripts/setup-browser.sh)." >&2
  exit 3
fi

version_of() {
  grep -o '"version": *"[^"]*"' "$MODULES/$1/package.json" 2>/dev/null | head -n 1 || true
}
if [ "$(version_of playwright-core)" != "\"version\": \"$PLAYWRIGHT_VERSION\"" ] \
  || [ "$(version_of axe-core)" != "\"version\": \"$AXE_VERSION\"" ] \
  || [ "$(version_of typescript)" != "\"version\": \"$TYPESCRIPT_VERSION\"" ]; then
  mkdir -p "$PREFIX"
  # playwright-core has no install script and downloads no browser; skip any script anyway.
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --ignore-scripts \
    --save-exact "playwright-core@$PLAYWRIGHT_VERSION" "axe-core@$AXE_VERSION" \
    "typescript@$TYPESCRIPT_VERSION" >&2
fi
echo "$MODULES"
