#!/usr/bin/env bash
# Installs MLflow (its tracking server) in a venv outside the clone, for the tracking test
# (crates/skill-factory-cli/tests/it/mlflow.rs) and its benchmark (bench/mlflow.sh):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/mlflow/bin/mlflow
# Nothing to do when that version is there. Prints the `mlflow` command on stdout; everything
# else goes to stderr. MLFLOW_VENV overrides the place.
#
# A server on this machine, its runs in a SQLite file, its artifacts in a folder:
#   "$(scripts/setup-mlflow.sh)" server --host 127.0.0.1 --port 5000 \
#     --backend-store-uri sqlite:///$PWD/mlflow.db --artifacts-destination $PWD/mlartifacts
set -euo pipefail

VERSION=3.17.2
VENV="${MLFLOW_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/mlflow}"

"$(dirname "$0")/pip-venv.sh" "$VENV" mlflow "$VERSION" "mlflow==$VERSION"
echo "$VENV/bin/mlflow"
