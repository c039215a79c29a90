#!/usr/bin/env bash
# Installs Ray (`ray[default]`, which carries the dashboard and its Job Submission API) in a
# venv outside the clone, for the Ray executor's end-to-end test
# (crates/skill-factory-cli/tests/it/e2e_ray.rs) and its benchmark (bench/ray.sh):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/ray/bin/ray
# Nothing to do when that version is there. Prints the `ray` command on stdout; everything
# else goes to stderr. RAY_VENV overrides the place.
#
# A head on this machine, its dashboard on 127.0.0.1:8265, then `ray stop --force` to end it:
#   RAY_USAGE_STATS_ENABLED=0 "$(scripts/setup-ray.sh)" start --head --node-ip-address 127.0.0.1 \
#     --dashboard-host 127.0.0.1 --dashboard-port 8265 --disable-usage-stats
set -euo pipefail

VERSION=2.60.0
VENV="${RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/ray}"

"$(dirname "$0")/pip-venv.sh" "$VENV" ray "$VERSION" "ray[default]==$VERSION"
echo "$VENV/bin/ray"
