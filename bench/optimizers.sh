#!/usr/bin/env bash
# Our three optimizers, `llm_loop`, `gepa` and `skillopt`, at one budget of model calls, on
# the same skill-sensitive loopback mock, several seeds each.
#
#   bash bench/optimizers.sh
#
# The task is the ticket-classifier example (15 tickets; 20% held out as the test split,
# which no optimizer reads). The mock answers a ticket right with a probability that grows
# with the rules its optimizer has added to the skill (`--skill-sensitive`), and its
# optimizer answers every reflection prompt (a body, a component or an edit patch) with the
# text it was shown plus one rule, so a search that spends its calls well adds more useful
# rules. Every run has the same hard limit of model calls (`optimizer.budget.max_calls`, all
# roles together) and enough rounds and patience to reach it, so the comparison is score per
# model call. Each run uses --no-cache.
#
# For each optimizer it reports, over the seeds: the held-out test score of the best skill
# (mean and standard deviation), the validation score, model calls, metric calls (rollouts
# scored), tokens, wall time, and for `gepa` the children that passed the minibatch gate and
# then did not beat their parent on validation (false accepts). The table goes to stdout and
# to bench/results/optimizers.md.
#
# Environment (all optional):
#   MAX_CALLS=200    the model-call budget of every run
#   SEEDS="0 1 2 3 4"  optimizer seeds (the split seed stays fixed)
#   LATENCY_MS=5     the mock's delay before every answer
#   PROFILE=release  the cargo profile to build (debug skips a long release build; the wall
#                    times are then not comparable with release figures)
# Needs: cargo, python3.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
MAX_CALLS=${MAX_CALLS:-200}
SEEDS=${SEEDS:-"0 1 2 3 4"}
LATENCY_MS=${LATENCY_MS:-5}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sf-bench-optimizers.XXXXXX")
MOCK_PID=""
cleanup() {
    if [[ -n "$MOCK_PID" ]]; then
        kill "$MOCK_PID" 2>/dev/null || true
        wait "$MOCK_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*" >&2; }

step "building our binaries (${PROFILE:-release})"
bench_build
EXAMPLE=examples/ticket-classifier
step "starting sf-mock-server (skill-sensitive, latency ${LATENCY_MS} ms)"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS" --skill-sensitive --answers "$EXAMPLE/dataset.jsonl"
echo "mock at $BASE_URL" >&2

cp "$EXAMPLE/dataset.jsonl" "$EXAMPLE/seed_skill.md" "$WORK/"
for optimizer in llm_loop gepa skillopt; do
    for seed in $SEEDS; do
        dir="$WORK/$optimizer-$seed"
        mkdir -p "$dir"
        cat >"$dir/config.yaml" <<EOF
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
  max_edits_per_round: 2
  max_metric_calls: 100000
  budget: {max_calls: $MAX_CALLS}
harness: {max_workers: 4}
EOF
        start=$(date +%s.%N)
        "$OURS" optimize -c "$dir/config.yaml" -o "$dir/runs" --no-cache >"$dir/out.txt" 2>"$dir/err.txt" || {
            echo "$optimizer seed $seed failed:" >&2
            tail -n 20 "$dir/err.txt" >&2
            exit 1
        }
        end=$(date +%s.%N)
        python3 - "$dir/runs/latest/result.json" "$start" "$end" "$optimizer" "$seed" >>"$WORK/rows.jsonl" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
gate = result["metadata"].get("gate", {})
print(json.dumps({
    "optimizer": sys.argv[4],
    "seed": int(sys.argv[5]),
    "test": result["test"]["best_score"],
    "test_seed": result["test"]["seed_score"],
    "val": result["best_score"],
    "calls": result["usage"]["total"]["calls"],
    "tokens": result["usage"]["total"]["input_tokens"] + result["usage"]["total"]["output_tokens"],
    "metric_calls": result["metadata"].get("metric_calls"),
    "false_accepts": gate.get("false_accepts"),
    "seconds": float(sys.argv[3]) - float(sys.argv[2]),
    "stop": result["stop_reason"],
}))
PY
        echo "$optimizer seed $seed: $(tail -n 1 "$WORK/rows.jsonl")" >&2
    done
done

python3 - "$WORK/rows.jsonl" "$MAX_CALLS" "$SEEDS" "${PROFILE:-release}" <<'PY' | tee bench/results/optimizers.md
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("# Optimizers at one model-call budget\n")
print(f"Written by `bench/optimizers.sh` (MAX_CALLS={sys.argv[2]}, seeds {sys.argv[3]}, "
      f"{sys.argv[4]} build): the ticket-classifier example on the skill-sensitive mock, "
      "20% of the tickets held out as the test split.\n")
print("| optimizer | test (mean ± sd) | seed's test | val | model calls | metric calls | tokens | wall s | gate false accepts | stop |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in ["llm_loop", "gepa", "skillopt"]:
    mine = [r for r in rows if r["optimizer"] == name]
    if not mine:
        continue
    def col(key):
        return [r[key] for r in mine if r[key] is not None]
    def mean(key):
        values = col(key)
        return statistics.mean(values) if values else None
    test = col("test")
    sd = statistics.stdev(test) if len(test) > 1 else 0.0
    fa = mean("false_accepts")
    mc = mean("metric_calls")
    stops = ", ".join(sorted({r["stop"] for r in mine}))
    print(f"| {name} | {statistics.mean(test):.3f} ± {sd:.3f} | {mean('test_seed'):.3f} | "
          f"{mean('val'):.3f} | {mean('calls'):.1f} | {'-' if mc is None else f'{mc:.1f}'} | "
          f"{mean('tokens'):.0f} | {mean('seconds'):.2f} | {'-' if fa is None else f'{fa:.1f}'} | {stops} |")
print("\nPer run:\n")
print("| optimizer | seed | test | val | model calls | metric calls | wall s |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['optimizer']} | {r['seed']} | {r['test']:.3f} | {r['val']:.3f} | {r['calls']} | "
          f"{r['metric_calls'] if r['metric_calls'] is not None else '-'} | {r['seconds']:.2f} |")
PY
