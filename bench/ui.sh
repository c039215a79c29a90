#!/usr/bin/env bash
# The dashboard at scale: a runs list of 1,000 run folders and a run of 10,000 rollouts, timed
# over HTTP and in headless Chromium (time from navigation until the page shows the data),
# against the Python skill-factory 0.2.0's dashboard on the same 1,000 folders.
#
#   bash bench/ui.sh
#
# The folders come from bench/ui_data.py (copies of a real result.json of ours, with their
# own ids, dates and scores; the big run in the shape `optimize` writes: events, rollouts,
# tasks, candidates). Measured (medians): GET /api/runs; the list page until its counter says
# "1000 of 1000 runs" (theirs: until its list has 1,000 items); the start of our server (its
# first walk of the folders, every result.json parsed); the big run's /api/run the first time
# (files parsed) and later (kept in memory until its files change), a page of its per-task
# table, its heatmap; its run page until chart, lineage and diff are drawn; its Tasks tab
# until the first 50 rows are there. The peer has no per-task view, so the big run is ours
# alone. Writes bench/results/ui.md.
#
# Environment: RUNS=1000, CANDIDATES=100, TASKS=100, REPEATS=5 (page loads per figure),
# PROFILE=release, PEER=1 (0 skips the Python tool).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

RUNS=${RUNS:-1000}
CANDIDATES=${CANDIDATES:-100}
TASKS=${TASKS:-100}
REPEATS=${REPEATS:-5}
PEER=${PEER:-1}

bench_workdir ui
SERVERS=()
stop_servers() {
    for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    bench_cleanup
}
trap stop_servers EXIT

step "building our binary (${PROFILE:-release})"
bench_build
export SKILL_FACTORY_BROWSER_MODULES
SKILL_FACTORY_BROWSER_MODULES=$(scripts/setup-browser.sh)

step "generating $RUNS run folders and a run of $((CANDIDATES * TASKS)) rollouts"
python3 bench/ui_data.py "$WORK" gallery/receipt-total/result.json "$RUNS" "$CANDIDATES" "$TASKS" >&2

# Starts `$@` (a dashboard on port 0 or PORT), waits for its address line; sets URL and the
# seconds it took to START_S.
start_server() {
    local log=$1
    shift
    local started
    started=$(date +%s.%N)
    "$@" >"$log" 2>&1 &
    SERVERS+=($!)
    URL=""
    for _ in $(seq 600); do
        URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -n 1 || true)
        [[ -n "$URL" ]] && break
        sleep 0.05
    done
    [[ -n "$URL" ]] || { cat "$log" >&2; exit 2; }
    START_S=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$started" "$(date +%s.%N)")
}

step "our dashboard on the list and on the big run"
start_server "$WORK/ours-list.log" "$OURS" ui --runs "$WORK/list" --port 0
OURS_LIST=$URL
OURS_START_S=$START_S
start_server "$WORK/ours-big.log" "$OURS" ui --runs "$WORK/big" --port 0
OURS_BIG=$URL

PEER_URL=-
PEER_VERSION=-
if [[ "$PEER" == 1 ]]; then
    step "the Python tool's dashboard on the list"
    bench_peer
    PEER_VERSION=$("$(dirname "$PYTHON_TOOL")/python" -c "import importlib.metadata as m; print(m.version('skill-factory'))")
    port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    start_server "$WORK/peer.log" "$PYTHON_TOOL" ui --runs "$WORK/list" --port "$port"
    PEER_URL=$URL
fi

step "timing ($REPEATS page loads per figure)"
RESULT=$(node bench/ui_bench.mjs "$OURS_LIST" "$PEER_URL" "$RUNS" "$OURS_BIG|20261202-120000" "$REPEATS")
echo "$RESULT" >&2

python3 - "$RESULT" "$OURS_START_S" "$PEER_VERSION" "${PROFILE:-release}" >bench/results/ui.md <<'EOF'
import json, sys
r = json.loads(sys.argv[1]); start = sys.argv[2]; peer = sys.argv[3]; profile = sys.argv[4]
def ratio(a, b):
    return f"{r[b] / r[a]:.1f}x" if a in r and b in r and r[a] else "-"
print("# Dashboard at scale\n")
print(f"Written by `bash bench/ui.sh` ({profile} build; medians; Chromium headless on this machine; "
      f"the Python skill-factory {peer} on the same folders). Times in milliseconds.\n")
print(f"## Runs list of {r['runs']} run folders\n")
print("| measure | ours | Python tool | ours faster by |")
print("|---|---|---|---|")
print(f"| GET /api/runs | {r['ours_api_runs_ms']} | {r.get('peer_api_runs_ms', '-')} | {ratio('ours_api_runs_ms', 'peer_api_runs_ms')} |")
print(f"| list page, navigation until drawn (ours: counter and the rows in view; theirs: all {r['runs']} items) | {r['ours_list_rendered_ms']} | {r.get('peer_list_rendered_ms', '-')} | {ratio('ours_list_rendered_ms', 'peer_list_rendered_ms')} |")
print(f"| list page, scroll to the end until the last run is drawn | {r['ours_list_scroll_to_end_ms']} | - | - |")
print(f"| server start (first walk, every result.json parsed) | {float(start) * 1000:.0f} | - | - |")
print(f"\nGoal: the list of 1,000 runs drawn in under 300 ms: {'met' if r['ours_list_rendered_ms'] < 300 else 'NOT met'} "
      f"({r['ours_list_rendered_ms']} ms, from navigation until the counter says {r['runs']} of {r['runs']} with the rows in view drawn: "
      "the page keeps only the rows near the view, about 90, and slides them as it scrolls; the Python tool draws "
      "all of its items at once). After the start, requests never read the folders: a background walk "
      "every 0.5 s rereads only the result.json files whose size or time changed.\n")
print(f"## One run of {r['big_rollouts']} rollouts ({r['big_candidates']} candidates)\n")
print("| measure | ours |")
print("|---|---|")
for key, label in [
    ("big_api_run_cold_ms", "GET /api/run, first read (files parsed)"),
    ("big_api_run_warm_ms", "GET /api/run, later reads (kept until the files change)"),
    ("big_api_tasks_page_ms", "GET /api/run/tasks, one page of failures"),
    ("big_api_heatmap_ms", "GET /api/run/heatmap (every task x candidate)"),
    ("big_run_page_rendered_ms", "run page, navigation to chart, lineage and diff drawn"),
    ("big_tasks_tab_rendered_ms", "run page, navigation to the Tasks tab's first 50 rows"),
]:
    print(f"| {label} | {r[key]} |")
print(f"\nGoal: a run of 10,000 rollouts opens in under a second: "
      f"{'met' if r['big_run_page_rendered_ms'] < 1000 and r['big_tasks_tab_rendered_ms'] < 1000 else 'NOT met'}. "
      "The Python tool has no per-task view to compare with.")
EOF
cat bench/results/ui.md
