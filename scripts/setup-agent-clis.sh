#!/usr/bin/env bash
# Installs the real agent CLIs that trigger runs (`kind: trigger`, harness claude_code or
# codex) watch: Claude Code (the npm package @anthropic-ai/claude-code) and Codex
# (@openai/codex), both pinned, outside the clone, where
# crates/skill-factory-cli/tests/it/agent_triggers.rs looks for them:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/agents/node_modules/.bin/claude
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/agents/node_modules/.bin/codex
# `claude` is a native binary; `codex` is a Node script that starts Codex's native binary.
# The test runs both against a loopback mock model server only. About 760 MB on disk.
# Nothing to do when those versions are there.
# Prints the two paths on stdout, claude then codex, one per line; everything else goes to
# stderr.
#
#   --install-node   install Node and npm with apt-get when npm is missing (CI machines)
# Without it, a machine without npm gets a note on stderr and exit 3, so callers can go on.
set -euo pipefail

CLAUDE_VERSION=2.1.328
CODEX_VERSION=0.169.0
PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/agents"
CLAUDE="$PREFIX/node_modules/.bin/claude"
CODEX="$PREFIX/node_modules/.bin/codex"

if ! command -v npm >/dev/null 2>&1; then
  if [ "${1:-}" = "--install-node" ]; then
    apt-get update >&2
    apt-get install -y nodejs npm >&2
  else
    echo "note: npm is not installed, so Claude Code and Codex were not set up; the test" \
      "crates/skill-factory-cli/tests/it/agent_triggers.rs needs them (install Node and npm," \
      "then run scripts/setup-agent-clis.sh)." >&2
    exit 3
  fi
fi

# The version a package's package.json states, or nothing when it is not installed.
installed() {
  grep -o '"version": *"[^"]*"' "$PREFIX/node_modules/$1/package.json" 2>/dev/null | head -n 1 || true
}

if [ "$(installed @anthropic-ai/claude-code)" != "\"version\": \"$CLAUDE_VERSION\"" ] ||
  [ "$(installed @openai/codex)" != "\"version\": \"$CODEX_VERSION\"" ] ||
  [ ! -x "$CLAUDE" ] || [ ! -x "$CODEX" ]; then
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
fi
echo "$CLAUDE"
echo "$CODEX"
