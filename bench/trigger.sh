#!/usr/bin/env bash
# Trigger runs (kind: trigger): how far each optimizer takes a description, and what a trigger
# evaluation costs in the real agent CLIs.
#
#   bash bench/trigger.sh
#
# Part 1: examples/receipt-trigger's data (64 requests, 32 of them near misses; 16 held out as
# the test split, never shown to the search) routed by sf-mock-server's router (it loads the
# listed skill whose description shares the most words with the request, unless a "Not for"
# sentence names one of its words) and rewritten by its description optimizer. For each
# optimizer and optimizer seed: the held-out accuracy, precision, recall and false-trigger rate
# of the seed description and of the best, the rollouts scored and the wall time.
#
# Part 2, when the agent CLIs are installed (scripts/setup-agent-clis.sh, or CLAUDE=... and
# CODEX=... naming the binaries): `evaluate` of the seed on the 64 requests through the real
# Claude Code and Codex against the same mock, 4 requests in flight, each in a fresh working
# folder with the candidate and the distractor installed. The same router decides, among the
# skills each CLI lists to it: the candidate, the distractor, and the CLI's own built-in skills,
# which compete for some requests as they do in real use (the "loaded another" column counts the
# requests where some other skill was loaded). The wall time is what the CLIs add.
#
# Writes bench/results/trigger.md (RESULTS=path elsewhere, RESULTS= for stdout only).
# Environment: SEEDS="0 1 2", OPTIMIZERS="gepa llm_loop skillopt", PROFILE=release.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
SEEDS=${SEEDS:-0 1 2}
OPTIMIZERS=${OPTIMIZERS:-gepa llm_loop skillopt}
RESULTS=${RESULTS-bench/results/trigger.md}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/agents/node_modules/.bin
CLAUDE=${CLAUDE:-$cache/claude}
CODEX=${CODEX:-$cache/codex}

bench_binaries
bench_workdir trigger
cp -r examples/receipt-trigger/. "$WORK/ex"
rm -rf "$WORK/ex/runs"
bench_start_mock "$WORK"

# The example's data with the mock as router and optimizer; $1: the optimizer block, $2: the
# harness block.
config() {
    cat <<EOF
kind: trigger
skill: seed_skill.md
dataset: trigger_set.json
distractors: [distractors/expense-report]
val_fraction: 0.25
test_fraction: 0.25
seed: 3
provider: {name: openai-compatible, model: router, base_url: "$BASE_URL/v1", api_key: k}
optimizer: $1
harness: $2
cache: {mode: off}
EOF
}

out=$WORK/table.md
{
    echo "# Trigger runs"
    echo
    echo "Measured by \`bash bench/trigger.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, ${PROFILE:-release} build."
    echo
    echo "## Optimizing the description on the mock's router"
    echo
    echo "examples/receipt-trigger: 64 requests (32 near misses), 16 held out; the seed description both over- and under-triggers. Held-out figures of the seed → the best."
    echo
    echo "| optimizer | seed | accuracy | precision | recall | false-trigger rate | rollouts | wall time (s) |"
    echo "| :--- | ---: | :---: | :---: | :---: | :---: | ---: | ---: |"
} >"$out"
for optimizer in $OPTIMIZERS; do
    for seed in $SEEDS; do
        config "{name: $optimizer, seed: $seed, rounds: 6, max_metric_calls: 400, minibatch_size: 8}" \
            "{type: api}" >"$WORK/ex/$optimizer-$seed.yaml"
        started=$(date +%s.%N)
        "$OURS" optimize -c "$WORK/ex/$optimizer-$seed.yaml" -o "$WORK/runs/$optimizer-$seed" \
            >"$WORK/$optimizer-$seed.log" 2>&1
        ended=$(date +%s.%N)
        python3 - "$WORK/runs/$optimizer-$seed/latest/result.json" "$optimizer" "$seed" \
            "$started" "$ended" >>"$out" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
seed, best = result["trigger"]["seed"], result["trigger"]["best"]
rate = lambda v: "n/a" if v is None else f"{v:.3f}"
pair = lambda key: f"{rate(seed[key])} → {rate(best[key])}"
rollouts = sum(1 for _ in open(sys.argv[1].replace("result.json", "rollouts.jsonl")))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {pair('accuracy')} | {pair('precision')} | {pair('recall')} "
      f"| {pair('false_trigger_rate')} | {rollouts} | {float(sys.argv[5]) - float(sys.argv[4]):.2f} |")
PY
    done
done

# One evaluate of the seed through a harness; prints "accuracy seconds".
evaluate() {
    local name=$1 harness=$2
    config "{name: gepa}" "$harness" >"$WORK/ex/eval-$name.yaml"
    local started ended
    started=$(date +%s.%N)
    "$OURS" evaluate -c "$WORK/ex/eval-$name.yaml" --json >"$WORK/eval-$name.json" \
        2>"$WORK/eval-$name.err"
    ended=$(date +%s.%N)
    python3 - "$WORK/eval-$name.json" "$started" "$ended" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
other = sum(1 for item in report["items"]
            if item.get("loaded_skills") and "receipt-total" not in item["loaded_skills"])
print(report["score"], other, float(sys.argv[3]) - float(sys.argv[2]))
PY
}

{
    echo
    echo "## A trigger evaluation in the real agent CLIs"
    echo
    echo "The seed on all 64 requests, 4 in flight, the same mock router deciding among the skills each harness lists: the candidate and the distractor, and in the CLIs also their built-in skills, which win some requests (loaded another)."
    echo
    echo "| harness | accuracy | loaded another | wall time (s) | per request (s) |"
    echo "| :--- | ---: | ---: | ---: | ---: |"
} >>"$out"
row() {
    read -r accuracy other seconds < <(evaluate "$1" "$2")
    printf '| %s | %.3f | %s | %.1f | %.2f |\n' "$1" "$accuracy" "$other" "$seconds" \
        "$(python3 -c "print($seconds / 64)")" >>"$out"
}
row api "{type: api, max_workers: 4}"
if [[ -x "$CLAUDE" ]]; then
    mkdir -p "$WORK/claude-home"
    row "claude_code ($("$CLAUDE" --version | head -n 1))" "{type: claude_code, executable: \"$CLAUDE\", max_workers: 4, timeout: 120, env: {ANTHROPIC_BASE_URL: \"$BASE_URL\", ANTHROPIC_API_KEY: k, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', HOME: \"$WORK/claude-home\"}}"
else
    echo "| claude_code | not installed (scripts/setup-agent-clis.sh) | | | |" >>"$out"
fi
if [[ -x "$CODEX" ]]; then
    mkdir -p "$WORK/codex-home"
    cat >"$WORK/codex-home/config.toml" <<EOF
model = "router"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "$BASE_URL/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
EOF
    row "codex ($("$CODEX" --version | head -n 1))" "{type: codex, executable: \"$CODEX\", max_workers: 4, timeout: 120, env: {CODEX_HOME: \"$WORK/codex-home\", HOME: \"$WORK/codex-home\", OPENAI_API_KEY: k}}"
else
    echo "| codex | not installed (scripts/setup-agent-clis.sh) | | | |" >>"$out"
fi
{
    echo
    echo "No peer measures this: the Python skill-factory 0.2.0, the gepa package and SkillOpt score what a skill does once loaded, never whether an agent loads it."
} >>"$out"

cat "$out"
if [[ -n "$RESULTS" ]]; then
    cp "$out" "$RESULTS"
    echo "written to $RESULTS" >&2
fi
