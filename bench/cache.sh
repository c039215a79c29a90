#!/usr/bin/env bash
# The model cache: how fast a fully cached `evaluate` of 240 tasks runs, and how fast one
# lookup is in a cache of 1,000,000 answers.
#
#   bash bench/cache.sh
#
# 1. Builds the release binaries and the `cache_lookup` example.
# 2. Writes 240 invoice tasks and the mock's answers (bench/evaluate_data.py), starts
#    `sf-mock-server` (50 ms a call), and runs `evaluate` once with target + judge (480 model
#    calls) to fill a fresh cache.
# 3. Times RUNS more runs of the same command: every call is a cache hit (the script checks
#    that each run reports 0 calls asked and prints the same Score line as the first run).
# 4. Runs `cache_lookup`: LOOKUP_ENTRIES answers stored one transaction each, then 200,000
#    lookups of stored keys and 50,000 of unknown keys, timed one by one (p50/p90/p99).
#
# Environment (all optional):
#   TASKS=240              tasks in the generated dataset
#   RUNS=10                timed cached runs (the median and the slowest are reported)
#   LATENCY_MS=50          the mock's delay before every answer (only the first run pays it)
#   LOOKUP_ENTRIES=1000000 answers in the lookup benchmark's cache
# Needs: cargo and python3. bench/results/cache.md records the figures of a run.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
REPO=$(pwd)
TASKS=${TASKS:-240}
RUNS=${RUNS:-10}
LATENCY_MS=${LATENCY_MS:-50}
LOOKUP_ENTRIES=${LOOKUP_ENTRIES:-1000000}

bench_workdir cache

now() { date +%s.%N; }
seconds() { python3 -c "print(f'{$2 - $1:.3f}')"; }

step "building release binaries"
cargo build --release --quiet -p skill-factory-cli -p skill-factory-mock
cargo build --release --quiet -p skill-factory-llm --example cache_lookup
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
OURS=$TARGET_DIR/release/skill-factory
MOCK=$TARGET_DIR/release/sf-mock-server
LOOKUP=$TARGET_DIR/release/examples/cache_lookup

step "writing $TASKS tasks into $WORK and starting sf-mock-server (${LATENCY_MS} ms a call)"
python3 bench/evaluate_data.py examples/invoice-extractor/dataset.jsonl "$WORK" --tasks "$TASKS" >&2
cp examples/invoice-extractor/seed_skill.md "$WORK/seed_skill.md"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS" --answers "$WORK/answers.jsonl"

cat >"$WORK/config.yaml" <<EOF
$(bench_invoice_files)
provider: {name: openai, model: mock-target, base_url: "$BASE_URL/v1", api_key: bench}
judge_provider: {name: openai, model: mock-judge, base_url: "$BASE_URL/v1", api_key: bench}
$(bench_invoice_metric "Are vendor, date, total and currency all correct?" "Is the output one JSON object and nothing else?")
harness: {temperature: 0.0, max_tokens: 512, max_workers: 16}
EOF
unset OPENAI_API_KEY OPENAI_BASE_URL SKILL_FACTORY_RECORD SKILL_FACTORY_REPLAY

step "first run: every call asked (fills the cache)"
start=$(now)
"$OURS" evaluate -c "$WORK/config.yaml" >"$WORK/first.out" 2>"$WORK/first.err"
FIRST=$(seconds "$start" "$(now)")
FIRST_SCORE=$(grep -m1 '^Score: ' "$WORK/first.out")
echo "$FIRST s: $FIRST_SCORE; $(grep -m1 '^Model calls' "$WORK/first.err")" >&2

step "$RUNS fully cached runs"
TIMES=()
for i in $(seq "$RUNS"); do
    start=$(now)
    "$OURS" evaluate -c "$WORK/config.yaml" >"$WORK/run.out" 2>"$WORK/run.err"
    TIMES+=("$(seconds "$start" "$(now)")")
    if ! grep -q ' 0 asked (0 HTTP requests sent)' "$WORK/run.err"; then
        echo "run $i asked the model: $(grep -m1 '^Model calls' "$WORK/run.err")" >&2
        exit 1
    fi
    if [[ "$(grep -m1 '^Score: ' "$WORK/run.out")" != "$FIRST_SCORE" ]]; then
        echo "run $i printed another score: $(grep -m1 '^Score: ' "$WORK/run.out")" >&2
        exit 1
    fi
done
grep -m1 '^Model calls' "$WORK/run.err" >&2 || true
read -r MEDIAN SLOWEST < <(printf '%s\n' "${TIMES[@]}" | python3 -c '
import statistics, sys
times = [float(line) for line in sys.stdin]
print(f"{statistics.median(times):.3f} {max(times):.3f}")')

step "cache lookups with $LOOKUP_ENTRIES entries"
"$LOOKUP" "$LOOKUP_ENTRIES" 200000 "$WORK/lookup.sqlite" | tee "$WORK/lookup.out"

step "results"
printf '| what | figure |\n|---|---|\n'
printf '| evaluate, %s tasks, first run (%s ms a call, cache filled) | %s s |\n' "$TASKS" "$LATENCY_MS" "$FIRST"
printf '| evaluate, %s tasks, fully cached: median of %s runs | %s s |\n' "$TASKS" "$RUNS" "$MEDIAN"
printf '| evaluate, %s tasks, fully cached: slowest run | %s s |\n' "$TASKS" "$SLOWEST"
printf '\nLookups (%s entries):\n' "$LOOKUP_ENTRIES"
cat "$WORK/lookup.out"
python3 - "$MEDIAN" "$SLOWEST" "$WORK/lookup.out" <<'EOF' >&2
import re, sys
median, slowest, lookup = float(sys.argv[1]), float(sys.argv[2]), open(sys.argv[3]).read()
p99 = float(re.search(r"lookup \(hit\).*?p99 +([\d.]+) µs", lookup).group(1))
print(f"cached evaluate: median {median:.3f} s, slowest {slowest:.3f} s: "
      f"{'meets' if slowest < 0.5 else 'MISSES'} the 0.5 s target")
print(f"lookup p99 {p99:.1f} µs: {'meets' if p99 < 100 else 'MISSES'} the 100 µs target")
EOF
