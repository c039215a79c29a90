#!/usr/bin/env bash
# What tracking a run in MLflow costs: the offline invoice example optimized untracked, tracked
# by a real MLflow server on this machine, and tracked by a server that is down (a closed
# port), RUNS times each, and `track push` of a run the down server missed.
#
#   bash bench/mlflow.sh                  # writes bench/results/mlflow.md (about 2 minutes)
#   RUNS=3 RESULTS= bash bench/mlflow.sh  # a quick look, nothing written
#
# 1. Starts `mlflow server` on 127.0.0.1 (scripts/setup-mlflow.sh installs MLflow in a venv
#    outside the clone), its runs in a SQLite file and its artifacts in a folder of the work
#    folder, in a process group of its own that is killed when the script exits.
# 2. The workload: examples/invoice-extractor/config.offline.yaml (scripted models, no
#    network), copied into the work folder; a run is `skill-factory optimize` from start to
#    exit, its wall time measured around the process.
# 3. Untracked, tracked (a `tracking: {mlflow: ...}` block naming the server), and tracked by
#    a server that is down: RUNS runs each, interleaved so that the machine's drift hits all
#    three alike; the median of each and the differences.
# 4. Every tracked run is checked through MLflow's REST API (one MLflow run per run, FINISHED,
#    its val_score history); every run of the down server must exit 0 and leave its calls in
#    mlflow.jsonl, and one of them is pushed to the live server with `track push`, timed.
# 5. The peer (PEER=1): the `gepa` package from PyPI (0.1.4, its `use_mlflow`, with the MLflow
#    client of the server's version) beside our gepa, both optimizing bench/optimizers.sh's
#    labels task on sf-mock-server with the same budget of metric calls, untracked and tracked
#    by the same server, PEER_RUNS runs each interleaved; then one run of each with the server
#    down. Ours is timed around the process, the package inside `gepa.optimize` (without its
#    imports), so what tracking adds is compared, not the searches.
# Exit 1 when a check fails.
#
# Environment (all optional):
#   RUNS=15           runs of each kind
#   PEER=1            0 skips the peer
#   PEER_RUNS=5       the peer section's runs of each kind
#   GEPA_VENV=...     the package's venv (default ~/.cache/skill-factory-ci/gepa-venv)
#   RESULTS=bench/results/mlflow.md   where the results go; empty writes none
#   OURS=... MOCK=... the binaries; when both are set nothing is built
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

RUNS=${RUNS:-15}
RESULTS=${RESULTS-bench/results/mlflow.md}
PEER=${PEER:-1}
PEER_RUNS=${PEER_RUNS:-5}
GEPA_VERSION=0.1.4
GEPA_VENV=${GEPA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/gepa-venv}

bench_binaries
bench_workdir mlflow
MLFLOW=$(scripts/setup-mlflow.sh)
MLFLOW_VERSION=$("$MLFLOW" --version | awk '{print $NF}')

step "starting mlflow server on 127.0.0.1"
port=$((20000 + RANDOM % 20000))
down_port=$((port + 1))
mkdir -p "$WORK/store"
# Its own process group (it starts about fifteen processes), killed whole on exit. The inner
# shell writes its own $$, so the quotes are single.
# shellcheck disable=SC2016
MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false \
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$WORK/server.pgid" \
  "$MLFLOW" server --host 127.0.0.1 --port "$port" --workers 1 \
  --backend-store-uri "sqlite:///$WORK/store/mlflow.db" \
  --artifacts-destination "$WORK/store/artifacts" >"$WORK/server.log" 2>&1 </dev/null &
disown  # killed by its group below, without bash reporting it
trap '[[ -s "$WORK/server.pgid" ]] && kill -KILL -- "-$(cat "$WORK/server.pgid")" 2>/dev/null; bench_finish' EXIT
started=$SECONDS
until [[ "$(curl -s "http://127.0.0.1:$port/health" || true)" == OK ]]; do
  if ((SECONDS - started > 240)); then
    tail -n 30 "$WORK/server.log" >&2
    exit 2
  fi
  sleep 0.25
done
echo "MLflow $MLFLOW_VERSION ready on 127.0.0.1:$port after $((SECONDS - started)) s" >&2

cp -r examples/invoice-extractor "$WORK/example"
rm -rf "$WORK/example/runs"
base="$WORK/example/config.offline.yaml"

# uri_of KIND: the server a run of KIND (untracked, tracked, down) reports to; none untracked
uri_of() {
  case $1 in
    tracked) echo "http://127.0.0.1:$port" ;;
    down) echo "http://127.0.0.1:$down_port" ;;
  esac
}
# tracking KIND EXPERIMENT: a config's tracking block for a run of KIND; none untracked
tracking() {
  local uri
  uri=$(uri_of "$1")
  [[ -z "$uri" ]] || printf '\ntracking: {mlflow: {uri: "%s", experiment: %s}}\n' "$uri" "$2"
}
# config KIND: the example's config for one kind of run
config() {
  local path="$WORK/example/config.$1.yaml"
  { cat "$base"; tracking "$1" "$1"; } >"$path"
  echo "$path"
}
declare -A CONFIGS=([untracked]=$(config untracked) [tracked]=$(config tracked) [down]=$(config down))

# timed_optimize LOG CONFIG ARGS..: one `optimize -c CONFIG ARGS..`, its output in LOG.out and
# LOG.err; prints its wall time in seconds, or the end of LOG.err and exits when it fails
timed_optimize() {
  local log=$1 config=$2 t0 t1
  shift 2
  t0=$(date +%s.%N)
  "$OURS" optimize -c "$config" "$@" >"$log.out" 2>"$log.err" ||
    { echo "$(basename "$log") failed:" >&2; tail -n 20 "$log.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}

# run KIND N: one optimize of the example; prints its wall time in seconds
run() {
  timed_optimize "$WORK/$1-$2" "${CONFIGS[$1]}" -o "$WORK/runs/$1/$2"
}

step "$RUNS runs of each kind, interleaved"
declare -A TIMES=([untracked]="" [tracked]="" [down]="")
for n in $(seq "$RUNS"); do
  for kind in untracked tracked down; do
    TIMES[$kind]+="$(run "$kind" "$n") "
  done
done
for kind in untracked tracked down; do
  echo "$kind: ${TIMES[$kind]}" >&2
done
median() { tr ' ' '\n' <<<"$1" | grep . | bench_median; }
untracked=$(median "${TIMES[untracked]}")
tracked=$(median "${TIMES[tracked]}")
down=$(median "${TIMES[down]}")

# mlflow_runs EXPERIMENT: the runs of EXPERIMENT on the live server, as MLflow's REST API's
# runs/search gives them (a JSON list)
mlflow_runs() {
  python3 - "$port" "$1" <<'PY'
import json, sys, urllib.request
api = f"http://127.0.0.1:{sys.argv[1]}/api/2.0/mlflow"
with urllib.request.urlopen(f"{api}/experiments/get-by-name?experiment_name={sys.argv[2]}") as answer:
    experiment = json.load(answer)["experiment"]["experiment_id"]
request = urllib.request.Request(f"{api}/runs/search", json.dumps({"experiment_ids": [experiment], "max_results": 1000}).encode(), {"Content-Type": "application/json"})
print(json.dumps(json.load(urllib.request.urlopen(request)).get("runs", [])))
PY
}

step "checking every tracked run in MLflow, and every run the down server missed"
mlflow_runs tracked >"$WORK/tracked-runs.json"
python3 - "$WORK" "$port" "$RUNS" <<'PY'
import glob, json, os, sys, urllib.request
work, port, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
api = f"http://127.0.0.1:{port}/api/2.0/mlflow"
def get(route):
    with urllib.request.urlopen(f"{api}/{route}") as answer:
        return json.load(answer)
found = json.load(open(f"{work}/tracked-runs.json"))
if len(found) != runs:
    sys.exit(f"{len(found)} MLflow runs for {runs} tracked runs")
for run in found:
    if run["info"]["status"] != "FINISHED":
        sys.exit(f"run {run['info']['run_id']} is {run['info']['status']}")
    history = get(f"metrics/get-history?run_id={run['info']['run_id']}&metric_key=val_score")["metrics"]
    if len(history) != 5:
        sys.exit(f"run {run['info']['run_id']} has {len(history)} val_score points, not 5")
for folder in glob.glob(f"{work}/runs/down/*/*/"):
    if os.path.islink(folder.rstrip("/")):
        continue
    lines = [json.loads(l) for l in open(os.path.join(folder, "mlflow.jsonl"))]
    if any(l["line"] == "delivered" for l in lines) or not any(l["line"] == "call" for l in lines):
        sys.exit(f"{folder}: the journal should hold every call and no delivery")
PY

step "track push of a run the down server missed"
missed=$(realpath "$WORK/runs/down/1/latest")
calls=$(grep -c '"line":"call"' "$missed/mlflow.jsonl")
t0=$(date +%s.%N)
"$OURS" track push "$missed" --uri "http://127.0.0.1:$port" --experiment pushed >"$WORK/push.out"
t1=$(date +%s.%N)
push=$(python3 -c "print(f'{$t1 - $t0:.3f}')")
cat "$WORK/push.out" >&2
"$OURS" track push "$missed" --uri "http://127.0.0.1:$port" | grep -q '^Nothing to push' ||
  { echo "a second push sent something" >&2; exit 1; }

# finished EXPERIMENT: "<runs> <runs FINISHED>" of the experiment on the live server
finished() {
  mlflow_runs "$1" | python3 -c 'import json, sys; r = json.load(sys.stdin); print(len(r), sum(x["info"]["status"] == "FINISHED" for x in r))'
}

if [[ "$PEER" == 1 ]]; then
  step "the peer: our gepa and the gepa package $GEPA_VERSION, untracked and tracked"
  if [[ ! -x "$GEPA_VENV/bin/python" ]]; then
    python3 -m venv "$GEPA_VENV"
    "$GEPA_VENV/bin/pip" install -q "gepa==$GEPA_VERSION" "litellm>=1.83.0,<1.92"
  fi
  # The package tracks through MLflow's Python client: the server's own version of it.
  "$GEPA_VENV/bin/python" -c "import mlflow" 2>/dev/null ||
    "$GEPA_VENV/bin/pip" install -q "mlflow-skinny==$MLFLOW_VERSION"
  python3 bench/optimizers_data.py "$WORK/tasks"
  conflicts=()
  while read -r pair; do conflicts+=(--conflict "$pair"); done <"$WORK/tasks/conflicts.txt"
  bench_start_mock "$WORK" --latency-ms 5 --needs --answers "$WORK/tasks/answers.jsonl" "${conflicts[@]}"
  task=$WORK/tasks/labels
  mkdir -p "$WORK/peer"
  # peer_config KIND: our gepa on the labels task, tracked as KIND says; prints its path
  peer_config() {
    local path="$WORK/peer/config.$1.yaml"
    { bench_mock_task_config "$task" gepa 0 80; tracking "$1" ours-gepa; } >"$path"
    echo "$path"
  }
  # ours_gepa KIND N: one run of our gepa; prints its wall time in seconds
  ours_gepa() {
    timed_optimize "$WORK/peer/$1-$2" "$(peer_config "$1")" -o "$WORK/peer/runs/$1-$2" --no-cache
  }
  # package KIND N: one run of the package on our first untracked run's split; prints its JSON line
  package() {
    GEPA_MLFLOW_URI=$(uri_of "$1") GEPA_MLFLOW_EXPERIMENT=package-gepa "$GEPA_VENV/bin/python" bench/gepa_package.py \
      "$BASE_URL" "$task/dataset.jsonl" "$WORK/peer/runs/untracked-1/latest" "$task/seed_skill.md" 80 0 \
      >"$WORK/peer/package-$1-$2.json" 2>"$WORK/peer/package-$1-$2.err" ||
      { echo "the gepa package ($1 $2) failed:" >&2; tail -n 20 "$WORK/peer/package-$1-$2.err" >&2; exit 1; }
    tail -n 1 "$WORK/peer/package-$1-$2.json"
  }
  seconds() { python3 -c 'import json, sys; print("%.3f" % json.load(sys.stdin)["seconds"])'; }
  declare -A PEER_TIMES=([ours-untracked]="" [ours-tracked]="" [package-untracked]="" [package-tracked]="")
  for n in $(seq "$PEER_RUNS"); do
    for kind in untracked tracked; do
      PEER_TIMES[ours-$kind]+="$(ours_gepa "$kind" "$n") "
      PEER_TIMES[package-$kind]+="$(package "$kind" "$n" | seconds) "
    done
  done
  for key in "${!PEER_TIMES[@]}"; do echo "$key: ${PEER_TIMES[$key]}" >&2; done
  read -r ours_count ours_finished <<<"$(finished ours-gepa)"
  read -r package_count package_finished <<<"$(finished package-gepa)"
  [[ "$ours_count $ours_finished" == "$PEER_RUNS $PEER_RUNS" ]] ||
    { echo "our tracked gepa runs in MLflow: $ours_count, $ours_finished finished, of $PEER_RUNS" >&2; exit 1; }
  echo "the package's tracked runs in MLflow: $package_count, $package_finished finished" >&2

  step "the server down: one run of each (the package's MLflow client retries for minutes)"
  ours_down=$(ours_gepa down 1)
  [[ -s "$WORK/peer/runs/down-1/latest/result.json" ]] ||
    { echo "our gepa run with the server down wrote no result.json" >&2; exit 1; }
  package_down=$(package down 1)
  echo "ours: $ours_down s; the package: $package_down" >&2
fi

summary=$(python3 -c "
u, t, d = $untracked, $tracked, $down
print(f'untracked {u:.3f} s, tracked {t:.3f} s (+{(t - u) * 1000:.0f} ms), server down {d:.3f} s (+{(d - u) * 1000:.0f} ms)')")
echo "$summary" >&2

[[ -n "$RESULTS" ]] || exit 0
{
  echo "# Tracking in MLflow: what it costs a run"
  echo
  echo "\`bash bench/mlflow.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), MLflow $MLFLOW_VERSION (\`mlflow server\`"
  echo "on 127.0.0.1, one worker, runs in SQLite, artifacts through its proxy), our release build."
  echo "The run is \`skill-factory optimize\` of the offline invoice example (scripted models: the"
  echo "search itself takes milliseconds, so what tracking adds shows whole), timed from start to"
  echo "exit, $RUNS runs of each kind interleaved; medians."
  echo
  echo "| run | median wall time | added |"
  echo "|---|---|---|"
  python3 -c "
u, t, d = $untracked, $tracked, $down
print(f'| untracked | {u:.3f} s | |')
print(f'| tracked, server up | {t:.3f} s | {(t - u) * 1000:+.0f} ms |')
print(f'| tracked, server down (closed port) | {d:.3f} s | {(d - u) * 1000:+.0f} ms |')"
  echo
  echo "Every tracked run was one FINISHED MLflow run with its 5 validation scores; every run"
  echo "of the down server exited 0 with its calls in \`mlflow.jsonl\`. A tracked run's calls go"
  echo "to the server from a thread of their own while the search runs, merged into few"
  echo "requests; what a tracked run adds is the wait, once it ended, for the last of them (the"
  echo "usage metrics, three artifacts, the run's end), at most 10 s while the server answers."
  echo "With the server down, the run stops waiting as soon as an attempt fails (its retries go"
  echo "on in the background until the process exits), so the last row is the cost of starting"
  echo "the tracker and writing the journal."
  echo
  echo "\`track push\` of one of those runs ($calls calls) to the live server: **${push} s**, and"
  echo "a second push sent nothing."
  if [[ "$PEER" == 1 ]]; then
    echo
    echo "## Beside the gepa package's \`use_mlflow\`"
    echo
    echo "Our gepa and the \`gepa\` package $GEPA_VERSION from PyPI (its \`use_mlflow\`, through MLflow's"
    echo "Python client $MLFLOW_VERSION), tracked by the same server in the same run: both optimize"
    echo "bench/optimizers.sh's labels task (48 tickets; the package on our run's split) on"
    echo "sf-mock-server at 5 ms a call with 80 metric calls, $PEER_RUNS runs of each kind"
    echo "interleaved; medians. Ours is timed around the process, the package inside"
    echo "\`gepa.optimize\` (its imports left out): the figure to compare is what tracking adds."
    echo
    echo "| tool | untracked | tracked | added by tracking | tracked runs in MLflow (finished) | server down |"
    echo "|---|---|---|---|---|---|"
    python3 - "$PEER_RUNS" "$ours_count" "$ours_finished" "$package_count" "$package_finished" \
      "$ours_down" "$package_down" "$GEPA_VERSION" "${PEER_TIMES[ours-untracked]}" \
      "${PEER_TIMES[ours-tracked]}" "${PEER_TIMES[package-untracked]}" "${PEER_TIMES[package-tracked]}" <<'PY'
import json, statistics, sys
runs, oc, of, pc, pf, ours_down, package_down, version = sys.argv[1:9]
ou, ot, pu, pt = (statistics.median(float(x) for x in a.split()) for a in sys.argv[9:13])
down = json.loads(package_down)
if "failed" in down:
    said = f"no result: the run raised after {down['seconds']:.0f} s ({down['failed'].split(':')[0]})"
else:
    said = f"{down['seconds']:.3f} s, finished"
print(f"| ours (gepa) | {ou:.3f} s | {ot:.3f} s | {(ot - ou) * 1000:+.0f} ms | {oc} ({of}) of {runs} | {float(ours_down):.3f} s, finished |")
print(f"| gepa {version} package | {pu:.3f} s | {pt:.3f} s | {(pt - pu) * 1000:+.0f} ms | {pc} ({pf}) of {runs} | {said} |")
if ot > ou:
    print(f"\nTracking added {(pt - pu) / (ot - ou):.1f}× as much time to the package's run as to ours.")
PY
  fi
} >"$RESULTS"
echo "wrote $RESULTS" >&2
