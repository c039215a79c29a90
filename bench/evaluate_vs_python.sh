#!/usr/bin/env bash
# `skill-factory evaluate`: ours against the Python skill-factory 0.2.0 from PyPI, on the same
# config, the same 240 tasks and the same loopback mock model (50 ms a call, OpenAI wire format).
#
#   bash bench/evaluate_vs_python.sh
#
# It builds our release binaries, makes (or reuses) a venv with the Python tool outside the
# repository, writes the tasks and the mock's answers into a temporary directory, starts
# `sf-mock-server` on a free port, and times three runs of one config:
#   python  the Python tool, harness.max_workers 8
#   ours    our binary, harness.max_workers 8
#   ours    our binary, harness.max_workers 64 (a copy of the config differing only there)
# It prints a table (median wall time, score line, speed-up over Python) and exits 1 when the
# three `Score:` values are not equal to three decimals.
#
# Environment (all optional):
#   TASKS=240          tasks in the generated dataset
#   LATENCY_MS=50      the mock's delay before every answer
#   RUNS=5             timed runs per tool (the median is reported; at least 3)
#   PEER_VENV=...      where the Python tool's venv lives
#                      (default ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/peer, made by scripts/setup-peer.sh)
#   OURS_BIN=...       time this skill-factory binary instead of the workspace's release build
#                      (to compare two builds against the same Python baseline)
# Needs: cargo, python3 with venv, PyPI reachable the first time; hyperfine when present
# (installed with apt-get when missing and running as root), else plain timed runs.
# bench/results/evaluate.md records the figures of a run.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
TASKS=${TASKS:-240}
LATENCY_MS=${LATENCY_MS:-50}
RUNS=${RUNS:-5}
if ((RUNS < 3)); then
    echo "RUNS must be at least 3 (got $RUNS)" >&2
    exit 2
fi

bench_workdir evaluate
# A signal ends the script through `exit`, so the EXIT trap still stops the mock.
trap 'exit 130' INT
trap 'exit 143' TERM

step "building our release binaries"
bench_build
OURS=${OURS_BIN:-$OURS}

step "the Python skill-factory 0.2.0 (a venv outside the repository)"
bench_peer

step "writing $TASKS tasks and the mock's answers into $WORK"
python3 bench/evaluate_data.py examples/invoice-extractor/dataset.jsonl "$WORK" --tasks "$TASKS" >&2
cp examples/invoice-extractor/seed_skill.md "$WORK/seed_skill.md"

step "starting sf-mock-server (latency ${LATENCY_MS} ms)"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS" --answers "$WORK/answers.jsonl"
echo "mock at $BASE_URL" >&2

# One config for both tools. The judge block names its provider because the Python tool gives
# every role `anthropic` unless told otherwise.
write_config() { # $1 = max_workers
    cat <<EOF
$(bench_invoice_files)

provider: {name: openai, model: mock-target, base_url: "$BASE_URL/v1"}
judge_provider: {name: openai, model: mock-judge, base_url: "$BASE_URL/v1"}

$(bench_invoice_metric "Are vendor, date, total and currency all correct and normalized?" "Is the output one JSON object with no prose, markdown or code fences?")

harness:
  temperature: 0.0
  max_tokens: 512
  max_workers: $1
EOF
}
write_config 8 >"$WORK/config.yaml"
write_config 64 >"$WORK/config.w64.yaml"

# Both tools read the key from the environment; the mock accepts any.
export OPENAI_API_KEY=bench-not-a-secret
unset OPENAI_BASE_URL SKILL_FACTORY_TARGET_MODEL SKILL_FACTORY_JUDGE_MODEL

# The Python tool has no response cache: ours must not replay answers from its own either.
NO_CACHE=""
if "$OURS" evaluate --help | grep -q -- '--no-cache'; then
    NO_CACHE="--no-cache"
fi

LABELS=("python" "ours" "ours")
IN_FLIGHT=(8 8 64)
COMMANDS=(
    "'$PYTHON_TOOL' evaluate -c '$WORK/config.yaml'"
    "'$OURS' evaluate $NO_CACHE -c '$WORK/config.yaml'"
    "'$OURS' evaluate $NO_CACHE -c '$WORK/config.w64.yaml'"
)

# Prints the mock's "requests max_in_flight": requests received so far and the peak in flight
# since the last reset. $1 is `stats`, or `stats/reset` to start a new peak.
mock_stats() {
    python3 -c '
import json, sys, urllib.request
url = sys.argv[1]
request = urllib.request.Request(url, data=b"" if url.endswith("/reset") else None)
stats = json.load(urllib.request.urlopen(request))
print(stats["requests"], stats["max_in_flight"])' "$BASE_URL/$1"
}

step "one checked run each (also warms caches)"
SCORES=()
PEAKS=()
for i in "${!COMMANDS[@]}"; do
    read -r before _ < <(mock_stats stats/reset)
    if ! bash -c "${COMMANDS[$i]}" >"$WORK/out.$i" 2>"$WORK/err.$i"; then
        echo "${LABELS[$i]} (${IN_FLIGHT[$i]} in flight) failed:" >&2
        tail -20 "$WORK/err.$i" >&2
        exit 1
    fi
    read -r after peak < <(mock_stats stats)
    SCORES+=("$(grep -m1 '^Score: ' "$WORK/out.$i" || echo 'no Score line')")
    PEAKS+=("$peak")
    echo "${LABELS[$i]} @ ${IN_FLIGHT[$i]}: ${SCORES[$i]}; the mock got $((after - before)) requests, at most $peak at once" >&2
done

if ! command -v hyperfine >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    step "installing hyperfine"
    apt-get install -y -qq hyperfine >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hyperfine >/dev/null 2>&1; } || true
fi

MEDIANS=()
if command -v hyperfine >/dev/null; then
    step "timing with hyperfine, $RUNS runs each"
    names=()
    for i in "${!COMMANDS[@]}"; do
        names+=(-n "${LABELS[$i]} @ ${IN_FLIGHT[$i]}" "${COMMANDS[$i]}")
    done
    hyperfine --style basic --runs "$RUNS" --export-json "$WORK/times.json" "${names[@]}" >&2
    mapfile -t MEDIANS < <(python3 -c '
import json, sys
for result in json.load(open(sys.argv[1]))["results"]:
    print("%.3f" % result["median"])' "$WORK/times.json")
else
    step "timing with $RUNS plain runs each (hyperfine not found)"
    for i in "${!COMMANDS[@]}"; do
        times=()
        for _ in $(seq "$RUNS"); do
            start=$(date +%s.%N)
            bash -c "${COMMANDS[$i]}" >/dev/null 2>&1
            end=$(date +%s.%N)
            times+=("$(python3 -c "print(f'{$end - $start:.3f}')")")
        done
        echo "${LABELS[$i]} @ ${IN_FLIGHT[$i]}: ${times[*]} s" >&2
        MEDIANS+=("$(printf '%s\n' "${times[@]}" | bench_median)")
    done
fi

step "results ($TASKS tasks, 2 model calls each, ${LATENCY_MS} ms a call)"
printf '| tool | max_workers | peak requests at the mock | median wall time | score line | vs Python |\n'
printf '|---|---|---|---|---|---|\n'
for i in "${!COMMANDS[@]}"; do
    ratio=$(python3 -c "print(f'{${MEDIANS[0]} / ${MEDIANS[$i]}:.1f}x')")
    printf '| %s | %s | %s | %s s | %s | %s |\n' "${LABELS[$i]}" "${IN_FLIGHT[$i]}" "${PEAKS[$i]}" \
        "${MEDIANS[$i]}" "${SCORES[$i]}" "$ratio"
done

# The targets of issue 2: at least 2.5x faster at equal max_workers, 10x with 64 in flight.
python3 - "${MEDIANS[@]}" <<'EOF' >&2
import sys
python, ours8, ours64 = (float(v) for v in sys.argv[1:])
for label, ratio, target in (("ours @ 8", python / ours8, 2.5), ("ours @ 64", python / ours64, 10.0)):
    verdict = "meets" if ratio >= target else "MISSES"
    print(f"{label}: {ratio:.1f}x faster than python @ 8, {verdict} the {target}x target")
EOF

# Not a target, but worth knowing: the whole report (score and worst tasks with their feedback).
for i in 1 2; do
    if cmp -s "$WORK/out.0" "$WORK/out.$i"; then
        echo "ours @ ${IN_FLIGHT[$i]}: stdout byte-identical to python's" >&2
    else
        echo "ours @ ${IN_FLIGHT[$i]}: stdout differs from python's beyond the score line:" >&2
        diff "$WORK/out.0" "$WORK/out.$i" | head -10 >&2 || true
    fi
done

if [[ "${SCORES[0]}" == "${SCORES[1]}" && "${SCORES[0]}" == "${SCORES[2]}" && "${SCORES[0]}" == Score:* ]]; then
    echo "scores agree: ${SCORES[0]}" >&2
else
    echo "SCORES DIFFER: python '${SCORES[0]}', ours@8 '${SCORES[1]}', ours@64 '${SCORES[2]}'" >&2
    exit 1
fi
