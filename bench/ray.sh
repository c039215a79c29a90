#!/usr/bin/env bash
# The Ray executor against the local one: what running a rollout as a job on a Ray cluster
# costs per rollout, and how many rollouts a second it finishes at 2, 8 and 32 jobs in flight.
#
#   bash bench/ray.sh                 # writes bench/results/ray.md (about 3 minutes)
#   TASKS=16 RESULTS= bash bench/ray.sh   # a quick look, nothing written
#   RAY_ADDRESS=http://127.0.0.1:8265 bash bench/ray.sh   # an existing cluster instead
#
# 1. Unless RAY_ADDRESS names a cluster, starts a Ray head on this machine (scripts/setup-ray.sh
#    installs Ray in a venv outside the clone; the head listens on 127.0.0.1 and is stopped
#    when the script exits).
# 2. The workload: TASKS tasks of a `subprocess` harness running `sh -c 'echo <input>'`, scored
#    by `golden: exact` (no model: the time is the executor's alone), run by
#    `skill-factory evaluate --json`.
# 3. Per-rollout overhead: one rollout at a time (max_workers 1), locally and on Ray; the
#    overhead is the difference of their wall times per rollout, and the median of the
#    rollouts' own latency_ms is given beside it.
# 4. Throughput: TASKS rollouts at 2, 8 and 32 in flight (harness.max_workers and
#    executor.max_workers both; executor.num_cpus 0, so Ray runs as many as asked on the
#    cores it has rather than one per core), locally and on Ray.
# Exit 1 when a run's score is not 1.000 (a rollout failed or gave the wrong output).
#
# Environment (all optional):
#   TASKS=64          rollouts per throughput run (SERIAL of them for the overhead runs)
#   SERIAL=16         rollouts of the one-at-a-time runs
#   RAY_ADDRESS=...   an existing cluster's dashboard (nothing is started or stopped)
#   RESULTS=bench/results/ray.md   where the results go; empty writes none
#   OURS=... MOCK=... the binaries; when both are set nothing is built
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

TASKS=${TASKS:-64}
SERIAL=${SERIAL:-16}
RESULTS=${RESULTS-bench/results/ray.md}

bench_binaries
bench_workdir ray
RAY=$(scripts/setup-ray.sh)
RAY_VERSION=$("$(dirname "$RAY")/python" -c "import ray; print(ray.__version__)")

if [[ -z "${RAY_ADDRESS:-}" ]]; then
  step "starting a Ray head on 127.0.0.1"
  gcs_port=$((20000 + RANDOM % 20000))
  dashboard_port=$((gcs_port + 1))
  export RAY_USAGE_STATS_ENABLED=0
  "$RAY" start --head --node-ip-address 127.0.0.1 --port "$gcs_port" \
    --dashboard-host 127.0.0.1 --dashboard-port "$dashboard_port" \
    --disable-usage-stats >"$WORK/ray-start.log" 2>&1 || { cat "$WORK/ray-start.log" >&2; exit 2; }
  trap '"$RAY" stop --force >/dev/null 2>&1 || true; bench_finish' EXIT
  RAY_ADDRESS="http://127.0.0.1:$dashboard_port"
fi
echo "Ray $RAY_VERSION at $RAY_ADDRESS" >&2

printf -- '---\nname: echo\ndescription: Echo the input.\n---\nEcho it.\n' >"$WORK/skill.md"
python3 - "$WORK/data.jsonl" "$TASKS" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": f"t{i}", "input": f"word{i}", "expected": f"word{i}"}) + "\n")
PY
head -n "$SERIAL" "$WORK/data.jsonl" >"$WORK/serial.jsonl"

# run NAME DATASET WORKERS EXECUTOR: one evaluate; prints "wall_seconds median_latency_ms"
run() {
  local name=$1 dataset=$2 workers=$3 executor=$4 config="$WORK/$1.yaml"
  {
    printf 'skill: skill.md\ndataset: %s\nmetric: {golden: {mode: exact}}\n' "$dataset"
    printf 'harness:\n  type: subprocess\n  command: [sh, -c, "echo {input}"]\n'
    printf '  timeout: 120\n  max_workers: %s\n' "$workers"
    if [[ "$executor" == ray ]]; then
      printf '  executor: {type: ray, address: "%s", max_workers: %s, num_cpus: 0}\n' \
        "$RAY_ADDRESS" "$workers"
    fi
  } >"$config"
  local started ended
  started=$(date +%s.%N)
  "$OURS" evaluate --json -c "$config" >"$WORK/$name.json" 2>"$WORK/$name.err"
  ended=$(date +%s.%N)
  python3 - "$WORK/$name.json" "$started" "$ended" <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
if report["score"] != 1.0:
    sys.exit(f"score {report['score']}: {[i['error'] for i in report['items'] if i['error']][:3]}")
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"{wall:.3f} {statistics.median(i['latency_ms'] for i in report['items']):.1f}")
PY
}

step "one rollout at a time, $SERIAL rollouts"
# A first job warms the cluster (its runtime-environment agent starts on first use).
run warm serial.jsonl 1 ray >/dev/null
read -r local_serial local_latency < <(run local-serial serial.jsonl 1 local)
read -r ray_serial ray_latency < <(run ray-serial serial.jsonl 1 ray)
overhead=$(python3 -c "print(f'{($ray_serial - $local_serial) / $SERIAL:.3f}')")
echo "local ${local_serial}s, Ray ${ray_serial}s: ${overhead}s of overhead per rollout" >&2

rows=()
for workers in 2 8 32; do
  step "$TASKS rollouts, $workers in flight"
  read -r local_wall _ < <(run "local-$workers" data.jsonl "$workers" local)
  read -r ray_wall ray_median < <(run "ray-$workers" data.jsonl "$workers" ray)
  row=$(python3 -c "
t = $TASKS
print(f'| $workers | {t / $local_wall:.1f} | {t / $ray_wall:.2f} | {$ray_wall:.1f} | {$ray_median / 1000:.2f} |')")
  echo "$row" >&2
  rows+=("$row")
done

[[ -n "$RESULTS" ]] || exit 0
{
  echo "# The Ray executor against the local one"
  echo
  echo "\`bash bench/ray.sh\` on $(nproc) cores, $(date -u +%Y-%m-%d), Ray $RAY_VERSION (a head on this"
  echo "machine, \`ray start --head\`), our release build. The rollout is \`sh -c 'echo <input>'\`"
  echo "scored by \`golden: exact\`, so every second is the executor's; every run scored 1.000."
  echo
  echo "## Per rollout, one at a time ($SERIAL rollouts)"
  echo
  echo "| executor | wall time | per rollout | median rollout latency |"
  echo "|---|---|---|---|"
  python3 -c "
n = $SERIAL
print(f'| local | {$local_serial:.2f} s | {$local_serial / n * 1000:.0f} ms | {$local_latency:.0f} ms |')
print(f'| Ray | {$ray_serial:.2f} s | {$ray_serial / n * 1000:.0f} ms | {$ray_latency:.0f} ms |')"
  echo
  echo "Overhead of a rollout on Ray: **${overhead} s** (upload of the working_dir package,"
  echo "job submission, the job's supervisor and runtime environment, polling, the log read)."
  echo
  echo "## Throughput ($TASKS rollouts)"
  echo
  echo "| in flight | local rollouts/s | Ray rollouts/s | Ray wall time (s) | Ray median rollout (s) |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Each Ray job starts a supervisor process and a Python interpreter on the node, so on one"
  echo "machine of $(nproc) cores more jobs in flight stop paying off once those processes fill"
  echo "the cores; a cluster adds cores. The executor pays off for rollouts that take minutes"
  echo "(an agent CLI), where a second of overhead is small and the cluster's cores are many."
} >"$RESULTS"
echo "wrote $RESULTS" >&2
