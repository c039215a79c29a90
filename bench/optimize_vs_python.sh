#!/usr/bin/env bash
# `skill-factory optimize`: ours against the Python skill-factory 0.2.0 from PyPI, on the same
# config and the same loopback mock model (50 ms a call, OpenAI wire format).
#
#   bash bench/optimize_vs_python.sh
#
# The config is the Python tool's invoice-extractor example config (metric with golden +
# programmatic + LLM judge, 8 rounds of 2 proposals on minibatches of 4) on our
# examples/invoice-extractor dataset (16 tasks: 5 validation, 11 train), with every provider
# pointed at the mock and `patience` raised to `rounds`, so that both tools run all 8 rounds
# whatever the mock's scores and their call counts compare like for like. By default the file
# sets no `optimizer.max_workers`, as the Python tool's examples do, so the Python tool runs
# its evaluations one rollout at a time (its default, 1) and ours with its default of 16 in
# flight.
#
# The mock answers targets with canned lines, judges with hashed scores and optimizer prompts
# with the current body plus one rule that depends on the temperature, so every proposal is
# new and both tools score every one of them. For each tool the script counts the chat
# requests the mock received (its /stats counter) and times RUNS runs. Ours runs with
# --no-cache: a cached rerun would make no calls at all, which is not the comparison here.
#
# It prints a table and exits 1 unless ours made no more calls than Python and was at least
# 5x faster (median wall time).
#
# Environment (all optional):
#   OPT_WORKERS=     when set, the config sets optimizer.max_workers to it (the Python tool
#                    then runs that many rollouts of one evaluation at once; ours keeps 16
#                    in flight, or OPT_WORKERS when larger)
#   LATENCY_MS=50    the mock's delay before every answer
#   RUNS=3           timed runs per tool (the median is reported)
#   PEER_VENV=...    where the Python tool's venv lives (see bench/lib.sh)
# Needs: cargo, python3 with venv, PyPI reachable the first time.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
LATENCY_MS=${LATENCY_MS:-50}
RUNS=${RUNS:-3}

bench_workdir optimize

step "building our release binaries"
bench_build
step "Python skill-factory 0.2.0"
bench_peer
echo "$PYTHON_TOOL" >&2

step "starting sf-mock-server (latency ${LATENCY_MS} ms)"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS"
echo "mock at $BASE_URL" >&2

cp examples/invoice-extractor/dataset.jsonl examples/invoice-extractor/seed_skill.md "$WORK/"
cat >"$WORK/config.yaml" <<EOF
$(bench_invoice_files)

provider: {name: openai, model: mock-target, base_url: "$BASE_URL/v1"}
optimizer_provider: {name: openai, model: mock-optimizer, base_url: "$BASE_URL/v1"}
judge_provider: {name: openai, model: mock-judge, base_url: "$BASE_URL/v1"}

optimizer:
  name: llm_loop
  rounds: 8
  minibatch_size: 4
  max_edits_per_round: 2
  patience: 8${OPT_WORKERS:+
  max_workers: $OPT_WORKERS}
  goal: >
    Make the skill reliably output ONLY a JSON object with keys vendor, date (ISO 8601
    YYYY-MM-DD), total (number), and currency (ISO 4217), correctly normalizing localized
    dates, decimal separators, and currency symbols.

$(bench_invoice_metric "Are vendor, date, total and currency all correct?" "Is the output one JSON object and nothing else?")

harness:
  temperature: 0.0
  max_tokens: 1024
EOF

export OPENAI_API_KEY=bench-not-a-secret
unset OPENAI_BASE_URL SKILL_FACTORY_TARGET_MODEL SKILL_FACTORY_OPTIMIZER_MODEL SKILL_FACTORY_JUDGE_MODEL

LABELS=(python ours)
COMMANDS=(
    "'$PYTHON_TOOL' optimize -c '$WORK/config.yaml' -o '$WORK/out-python'"
    "'$OURS' optimize --no-cache -c '$WORK/config.yaml' -o '$WORK/out-ours'"
)
declare -a CALLS MEDIANS LINES
for i in "${!COMMANDS[@]}"; do
    step "${LABELS[$i]}: $RUNS runs"
    times=()
    calls=""
    for run in $(seq "$RUNS"); do
        before=$(bench_requests)
        start=$(date +%s.%N)
        if ! bash -c "${COMMANDS[$i]}" >"$WORK/out.$i" 2>"$WORK/err.$i"; then
            echo "${LABELS[$i]} failed:" >&2
            tail -20 "$WORK/err.$i" >&2
            exit 1
        fi
        end=$(date +%s.%N)
        after=$(bench_requests)
        made=$((after - before))
        elapsed=$(python3 -c "print(f'{$end - $start:.3f}')")
        times+=("$elapsed")
        echo "run $run: $elapsed s, $made model calls" >&2
        if [[ -n "$calls" && "$calls" != "$made" ]]; then
            echo "${LABELS[$i]}: call count changed between runs ($calls, then $made)" >&2
        fi
        calls=$made
    done
    CALLS[i]=$calls
    MEDIANS[i]=$(printf '%s\n' "${times[@]}" | bench_median)
    LINES[i]=$(grep -m1 '^Baseline ' "$WORK/out.$i" || echo 'no Baseline line')
done

step "results (8 rounds x 2 proposals, 16 tasks, target + judge + optimizer at ${LATENCY_MS} ms a call)"
printf '| tool | model calls | median wall time | summary line | speed-up |\n'
printf '|---|---:|---:|---|---:|\n'
for i in "${!COMMANDS[@]}"; do
    ratio=$(python3 -c "print(f'{${MEDIANS[0]} / ${MEDIANS[$i]}:.1f}x')")
    printf '| %s | %s | %s s | %s | %s |\n' "${LABELS[$i]}" "${CALLS[$i]}" "${MEDIANS[$i]}" "${LINES[$i]}" "$ratio"
done

python3 - "${CALLS[0]}" "${CALLS[1]}" "${MEDIANS[0]}" "${MEDIANS[1]}" <<'EOF' >&2
import sys
py_calls, our_calls, py_time, our_time = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
speedup = py_time / our_time
ok = our_calls <= py_calls and speedup >= 5.0
print(f"calls: ours {our_calls} vs python {py_calls} ({'no more' if our_calls <= py_calls else 'MORE'})")
print(f"speed: {speedup:.1f}x ({'meets' if speedup >= 5.0 else 'MISSES'} the 5x target)")
sys.exit(0 if ok else 1)
EOF
