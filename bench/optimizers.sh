#!/usr/bin/env bash
# Our three optimizers, `llm_loop`, `gepa` and `skillopt`, at one budget of model calls, on
# the same skill-sensitive loopback mock, several seeds each; then our `gepa` against the
# `gepa` package from PyPI at twice our metric calls.
#
#   bash bench/optimizers.sh
#
# The task is the ticket-classifier example (15 tickets; 20% held out as the test split,
# which no optimizer reads). The mock answers a ticket right with a probability that grows
# with the rules its optimizer has added to the skill (`--skill-sensitive`), and its
# optimizer answers every reflection prompt (a body, a component, an edit patch, or the gepa
# package's prompt) with the text it was shown plus one rule, so a search that spends its
# calls well adds more useful rules. Every run of the first part has the same hard limit of
# model calls (`optimizer.budget.max_calls`, all roles together) and enough rounds and
# patience to reach it, so the comparison is score per model call. Our runs use --no-cache.
#
# Then, unless PACKAGE=0, the `gepa` package from PyPI (0.1.4, `gepa.optimize` with its default
# adapter and merges on, in a venv outside the clone) runs on the same split, metric and mock
# with PACKAGE_CALLS metric calls (bench/gepa_package.py), against our `gepa` with half of
# them (`optimizer.max_metric_calls`) and one proposal a step as the package makes: the goal is at least the package's held-out score with
# at most half its metric calls.
#
# For each optimizer it reports, over the seeds: the held-out test score of the best skill
# (mean and standard deviation), the validation score, model calls, metric calls (rollouts
# scored), tokens, wall time, and for our `gepa` the children that passed the minibatch gate
# and then did not beat their parent on validation (false accepts). The table goes to stdout
# and to bench/results/optimizers.md.
#
# Environment (all optional):
#   MAX_CALLS=200      the model-call budget of every run of the first part
#   SEEDS="0 1 2 3 4"  optimizer seeds (the split seed stays fixed)
#   LATENCY_MS=5       the mock's delay before every answer
#   PACKAGE=1          0 skips the gepa package
#   PACKAGE_CALLS=120  the package's metric-call budget (ours gets half)
#   GEPA_VENV=...      the package's venv (default ~/.cache/skill-factory-ci/gepa-venv)
#   PROFILE=release    the cargo profile to build (debug skips a long release build; the wall
#                      times are then not comparable with release figures)
# Needs: cargo, python3 with venv; PyPI reachable the first time (the package's venv).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
MAX_CALLS=${MAX_CALLS:-200}
SEEDS=${SEEDS:-"0 1 2 3 4"}
LATENCY_MS=${LATENCY_MS:-5}
PACKAGE=${PACKAGE:-1}
PACKAGE_CALLS=${PACKAGE_CALLS:-120}
GEPA_VERSION=0.1.4
GEPA_VENV=${GEPA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/gepa-venv}

bench_workdir optimizers

step "building our binaries (${PROFILE:-release})"
bench_build
EXAMPLE=examples/ticket-classifier
step "starting sf-mock-server (skill-sensitive, latency ${LATENCY_MS} ms)"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS" --skill-sensitive --answers "$EXAMPLE/dataset.jsonl"
echo "mock at $BASE_URL" >&2
cp "$EXAMPLE/dataset.jsonl" "$EXAMPLE/seed_skill.md" "$WORK/"

# ours LABEL OPTIMIZER SEED EDITS LIMITS: one run of ours in $WORK/<label>-<seed>, with EDITS
# proposals a round and LIMITS (lines of the optimizer block); appends its row to
# $WORK/rows.jsonl and sets RUN to its folder.
ours() {
    local label=$1 optimizer=$2 seed=$3 edits=$4 limits=$5
    local dir
    dir="$WORK/$(echo "$label" | tr ' ' '-')-$seed"
    mkdir -p "$dir"
    cat >"$dir/config.yaml" <<CONFIG
skill: ../seed_skill.md
dataset: ../dataset.jsonl
val_fraction: 0.3
test_fraction: 0.2
seed: 3
provider: {name: openai-compatible, model: mock, base_url: "$BASE_URL/v1", api_key: k}
optimizer:
  name: $optimizer
  seed: $seed
  rounds: 50
  patience: 50
  minibatch_size: 3
  max_edits_per_round: $edits
  $limits
harness: {max_workers: 4}
CONFIG
    local start end
    start=$(date +%s.%N)
    "$OURS" optimize -c "$dir/config.yaml" -o "$dir/runs" --no-cache >"$dir/out.txt" 2>"$dir/err.txt" || {
        echo "$label seed $seed failed:" >&2
        tail -n 20 "$dir/err.txt" >&2
        exit 1
    }
    end=$(date +%s.%N)
    RUN="$dir/runs/latest"
    python3 bench/optimizers_row.py ours "$RUN/result.json" "$label" "$seed" \
        "$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end")" \
        >>"$WORK/rows.jsonl"
    echo "$label seed $seed: $(tail -n 1 "$WORK/rows.jsonl")" >&2
}

for optimizer in llm_loop gepa skillopt; do
    for seed in $SEEDS; do
        # No metric-call limit of its own: the model-call budget is the only one.
        ours "$optimizer" "$optimizer" "$seed" 2 "max_metric_calls: 1000000
  budget: {max_calls: $MAX_CALLS}"
    done
done

if [[ "$PACKAGE" == 1 ]]; then
    step "the gepa package $GEPA_VERSION from PyPI (venv $GEPA_VENV)"
    if [[ ! -x "$GEPA_VENV/bin/python" ]]; then
        python3 -m venv "$GEPA_VENV"
        "$GEPA_VENV/bin/pip" install -q "gepa==$GEPA_VERSION" "litellm>=1.83.0,<1.92"
    fi
    half=$((PACKAGE_CALLS / 2))
    for seed in $SEEDS; do
        # One proposal a step, as the package's default.
        ours "our gepa at $half metric calls" gepa "$seed" 1 "max_metric_calls: $half"
        "$GEPA_VENV/bin/python" bench/gepa_package.py "$BASE_URL" "$WORK/dataset.jsonl" "$RUN" \
            "$WORK/seed_skill.md" "$PACKAGE_CALLS" "$seed" >"$WORK/package-$seed.json" \
            2>"$WORK/package-$seed.err" || {
            echo "the gepa package failed on seed $seed:" >&2
            tail -n 20 "$WORK/package-$seed.err" >&2
            exit 1
        }
        tail -n 3 "$WORK/package-$seed.err" >&2
        python3 bench/optimizers_row.py package "$WORK/package-$seed.json" \
            "gepa package at $PACKAGE_CALLS metric calls" "$seed" >>"$WORK/rows.jsonl"
        echo "package seed $seed: $(tail -n 1 "$WORK/rows.jsonl")" >&2
    done
fi

python3 bench/optimizers_row.py table "$WORK/rows.jsonl" "$MAX_CALLS" "$SEEDS" "${PROFILE:-release}" |
    tee bench/results/optimizers.md
