#!/usr/bin/env bash
# Gates under noise, against a noise-free twin: our `llm_loop` and `gepa`, three seeds each,
# with the paired, sequential gate a noisy run gets and with the plain comparison of means it
# had before, on one loopback mock whose answers flip right/wrong and whose optimizer often
# only rewords the skill; then the same task without noise, where our `gepa` is compared with
# the gepa package from PyPI.
#
#   bash bench/noise.sh
#
# The task (bench/noise_data.py): 160 tickets in 8 queues; the mock runs with `--needs` (a
# ticket is answered right only when the skill holds its queue's rule, and its optimizer adds
# the rules that the failures it is shown need), `--noise FLIPS` (each answer's outcome flips
# with that probability, unseeded), `--decoys DECOYS` (that share of optimizer replies add a
# rewording that changes no outcome) and `--regressions REGRESSIONS` (that share of the others
# drop a rule the skill holds, as a rewrite that loses an instruction does). 64 validation tasks, 32 test, 64 train; every run has
# `optimizer.max_metric_calls: BUDGET` and the config says `temperature: 0.7`, as a
# Python-tool config does, so the run is noisy unless `noise: {regime: deterministic}` says
# otherwise (the *comparison of means* rows: the gate every run had before).
#
# A second mock with the same answers and no noise is the twin: every edit a run kept, and the
# best skill it ended with, is scored there on the validation tasks (`evaluate --split val`).
# The tables go to stdout and to bench/results/noise.md (bench/noise_row.py says what each
# column is).
#
# Environment (all optional):
#   FLIPS=0.15  DECOYS=0.5  REGRESSIONS=0.1  BUDGET=1500  SEEDS="0 1 2"
#   OPTIMIZERS="llm_loop gepa"
#   LATENCY_MS=2     the mocks' delay before every answer
#   PAIRED="{}"      noise keys for the paired-gate runs, as a YAML flow mapping (to try other
#                    settings than the defaults: PAIRED="{confidence: 0.99, max_samples: 8}")
#   PACKAGE=1        0 skips the gepa package on the noise-free task
#   GEPA_VENV=...    the package's venv (default ~/.cache/skill-factory-ci/gepa-venv)
#   PROFILE=release  the cargo profile to build
# Needs: cargo, python3 (with venv, for the package); PyPI reachable the first time.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
FLIPS=${FLIPS:-0.15}
DECOYS=${DECOYS:-0.5}
REGRESSIONS=${REGRESSIONS:-0.1}
BUDGET=${BUDGET:-1500}
SEEDS=${SEEDS:-"0 1 2"}
OPTIMIZERS=${OPTIMIZERS:-"llm_loop gepa"}
LATENCY_MS=${LATENCY_MS:-2}
PAIRED=${PAIRED:-"{}"}
PACKAGE=${PACKAGE:-1}
GEPA_VERSION=0.1.4
GEPA_VENV=${GEPA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/gepa-venv}

bench_workdir noise
trap bench_finish EXIT
MOCK_PIDS=()

step "building our binaries (${PROFILE:-release})"
bench_build
python3 bench/noise_data.py "$WORK/task"
answers=(--needs --answers "$WORK/task/dataset.jsonl" --latency-ms "$LATENCY_MS")
step "starting the noisy mock (--noise $FLIPS --decoys $DECOYS --regressions $REGRESSIONS) and its noise-free twin"
start_mock "$WORK/noisy" "${answers[@]}" --noise "$FLIPS" --decoys "$DECOYS" --regressions "$REGRESSIONS"
NOISY_URL=$BASE_URL
start_mock "$WORK/twin" "${answers[@]}"
TWIN_URL=$BASE_URL

# config FILE URL TEMPERATURE OPTIMIZER SEED EXTRA: a run config of the task.
config() {
    local file=$1 url=$2 temperature=$3 optimizer=$4 seed=$5 extra=$6
    cat >"$file" <<CONFIG
skill: $WORK/task/seed_skill.md
dataset: $WORK/task/dataset.jsonl
val_fraction: 0.4
test_fraction: 0.2
seed: 3
provider: {name: openai-compatible, model: mock, base_url: "$url/v1", api_key: k}
optimizer:
  name: $optimizer
  seed: $seed
  rounds: 500
  patience: 100
  minibatch_size: 4
  max_metric_calls: $BUDGET
harness: {temperature: $temperature, max_workers: 8}
metric: {golden: {mode: exact}}
$extra
CONFIG
}

config "$WORK/twin.yaml" "$TWIN_URL" 0 llm_loop 0 ""

# run DIR: optimize DIR/config.yaml into DIR/runs; sets RUN.
run() {
    local dir=$1
    "$OURS" optimize -c "$dir/config.yaml" -o "$dir/runs" --no-cache >"$dir/out.txt" 2>"$dir/err.txt" || {
        echo "$dir failed:" >&2
        tail -n 20 "$dir/err.txt" >&2
        exit 1
    }
    RUN="$dir/runs/latest"
}

rows="$WORK/rows.jsonl"
for optimizer in $OPTIMIZERS; do
    for seed in $SEEDS; do
        for gate in "comparison of means" "paired gate"; do
            dir="$WORK/$optimizer-$seed-${gate// /-}"
            mkdir -p "$dir"
            extra="noise: $PAIRED"
            [[ "$gate" == "comparison of means" ]] && extra="noise: {regime: deterministic}"
            config "$dir/config.yaml" "$NOISY_URL" 0.7 "$optimizer" "$seed" "$extra"
            run "$dir"
            python3 bench/noise_row.py run "$RUN" "$gate" "$optimizer" "$seed" "$WORK/twin.yaml" \
                "$OURS" "$FLIPS" >>"$rows"
            echo "$optimizer seed $seed, $gate: $(tail -n 1 "$rows")" >&2
        done
    done
done

step "the same task without noise: our gepa (temperature 0, and 0.7), then the gepa package"
if [[ "$PACKAGE" == 1 && ! -x "$GEPA_VENV/bin/python" ]]; then
    python3 -m venv "$GEPA_VENV"
    "$GEPA_VENV/bin/pip" install -q "gepa==$GEPA_VERSION" "litellm>=1.83.0,<1.92"
fi
for seed in $SEEDS; do
    for temperature in 0 0.7; do
        dir="$WORK/clean-gepa-$seed-$temperature"
        mkdir -p "$dir"
        config "$dir/config.yaml" "$TWIN_URL" "$temperature" gepa "$seed" ""
        run "$dir"
        label="our gepa, temperature $temperature"
        [[ "$temperature" == 0 ]] && label="our gepa, temperature 0 (deterministic: unchanged)"
        [[ "$temperature" == 0.7 ]] && label="our gepa, paired gate, temperature 0.7"
        python3 bench/noise_row.py landscape "$RUN/result.json" "$label" "$seed" >>"$rows"
        echo "clean gepa seed $seed at $temperature: $(tail -n 1 "$rows")" >&2
        [[ "$temperature" == 0 && "$PACKAGE" == 1 ]] || continue
        out="$dir/package"
        "$GEPA_VENV/bin/python" bench/gepa_package.py "$TWIN_URL" "$WORK/task/dataset.jsonl" \
            "$RUN" "$WORK/task/seed_skill.md" "$BUDGET" "$seed" >"$out.json" 2>"$out.err" || {
            echo "the gepa package failed on seed $seed:" >&2
            tail -n 20 "$out.err" >&2
            exit 1
        }
        python3 bench/noise_row.py package "$out.json" "gepa package $GEPA_VERSION" "$seed" >>"$rows"
        echo "package seed $seed: $(tail -n 1 "$rows")" >&2
    done
done

python3 bench/noise_row.py table "$rows" "$FLIPS" "$DECOYS" "$REGRESSIONS" "$BUDGET" "${PROFILE:-release}" |
    tee bench/results/noise.md
