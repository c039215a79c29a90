#!/usr/bin/env bash
# The JUnit XML schema CI systems read (Jenkins xunit's junit-10.xsd, as pytest's source
# distribution carries it for its own tests) and a Python with `xmlschema` to validate against
# it, in a venv outside the clone, where crates/skill-factory-cli/tests/it/ci_verdicts.rs looks:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/junit/bin/python
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/junit/junit-10.xsd
# Both from PyPI. Nothing to do when they are there. Prints the venv's python on stdout;
# everything else goes to stderr. JUNIT_VENV overrides the place.
set -euo pipefail

XMLSCHEMA=4.3.2
PYTEST=8.4.2
VENV="${JUNIT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/junit}"

"$(dirname "$0")/pip-venv.sh" "$VENV" xmlschema "$XMLSCHEMA" "xmlschema==$XMLSCHEMA"
if [ ! -s "$VENV/junit-10.xsd" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --dest "$work" "pytest==$PYTEST" >&2
  tar -xzf "$work/pytest-$PYTEST.tar.gz" -C "$work" "pytest-$PYTEST/testing/example_scripts/junit-10.xsd"
  cp "$work/pytest-$PYTEST/testing/example_scripts/junit-10.xsd" "$VENV/junit-10.xsd"
fi
echo "$VENV/bin/python"
