#!/usr/bin/env bash
# `skill-factory evaluate` under load: TASKS tasks (default 100,000) against the loopback chat
# mock with WORKERS (default 256) in flight, watched from outside while it runs.
#
#   nice -n 10 bash bench/load.sh            # 100,000 tasks, writes bench/results/load.md
#   TASKS=5000 bash bench/load.sh            # the small version CI runs (seconds once built)
#   OURS=target/release/skill-factory MOCK=target/release/sf-mock-server bash bench/load.sh
#
# 1. Writes TASKS ticket tasks and the mock's answers to them (an inline generator: a seeded mix
#    of exact JSON, fenced JSON, one wrong value, two missing keys and prose, each with a known
#    `json_equal` score), so the expected score is known before the run.
# 2. Starts `sf-mock-server --latency-ms LATENCY_MS --answers ...` and runs one `evaluate` of the
#    whole dataset (`provider.max_concurrency` and `harness.max_workers` both WORKERS, the cache
#    at its default place, `.skill-factory/cache.sqlite` beside the config), through
#    `/usr/bin/time` when it is installed (its maximum resident set size).
# 3. While it runs, every SAMPLE_S seconds: the mock's GET /stats (requests received, in flight,
#    peak in flight), VmRSS, VmHWM, CPU time and threads of the skill-factory process, VmRSS and
#    CPU time of the mock; every PROBE_S seconds, from second processes: `skill-factory cache
#    stats --path FILE` and a read-only python3 sqlite3 `SELECT count(*)` of the same file
#    (successes, failures, entries, latency).
# 4. Derives from the samples: wall time, time per 1,000 tasks over the first and the last 10%
#    of requests (and per tenth), RSS at 10%, 50% and 90% of the requests, the mock's peak in
#    flight; then (EXACT=1) reruns the same `evaluate --json`, fully from the cache, to compare
#    every task's score with the generator's.
# Exit 1 when the printed score is not the expected one (three decimals, and `over TASKS
# tasks`), when a task's score differs in the cached rerun, when a rollout failed, or when any
# second-process read of the cache failed.
#
# Environment (all optional):
#   TASKS=100000     tasks in the generated dataset (one model call each, no judge)
#   WORKERS=256      harness.max_workers and the provider's max_concurrency
#   LATENCY_MS=20    the mock's delay before every answer
#   SAMPLE_S=0.1     interval of the /stats and RSS samples (10% of a 5,000-task run lasts
#                    about one interval, so the small run's rates are marked coarse)
#   PROBE_S=2        interval of the second-process cache reads
#   EXACT=1          0 skips the cached `--json` rerun that checks every task's score
#   CACHE=1          0 runs `evaluate --no-cache` (no cache file, so no cache reads and no
#                    rerun): to tell the cache's share of the time and memory from the rest
#   OURS=... MOCK=...  the skill-factory and sf-mock-server binaries; when both are set nothing
#                    is built (otherwise bench_build: a release build, or PROFILE's)
#   NO_RESULTS=1     print the figures without writing bench/results/load.md
#   SAMPLES_OUT=DIR  also keep the raw samples, cache reads and the run's output in DIR
# Needs: python3 (standard library only), cargo unless OURS and MOCK are given; /usr/bin/time
# when present. bench/results/load.md records the figures of a run.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
TASKS=${TASKS:-100000}
WORKERS=${WORKERS:-256}
LATENCY_MS=${LATENCY_MS:-20}
SAMPLE_S=${SAMPLE_S:-0.1}
PROBE_S=${PROBE_S:-2}
EXACT=${EXACT:-1}
CACHE=${CACHE:-1}
NO_CACHE=()
if [[ "$CACHE" == 0 ]]; then
    NO_CACHE=(--no-cache)
    EXACT=0
fi
if ((TASKS < 100)); then
    echo "TASKS must be at least 100 (got $TASKS): 10% of the requests must be a window" >&2
    exit 2
fi

bench_workdir load
SF_PID=""
LAUNCH_PID=""
HELPER_PIDS=()
# shellcheck disable=SC2329 # run by the EXIT trap below
load_cleanup() {
    # Only the processes this script started, by their ids; then reaped, so that none is left
    # to a PID 1 that may not reap (skill-factory is reaped by /usr/bin/time, its parent).
    local pid
    for pid in "${HELPER_PIDS[@]}" $SF_PID; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${HELPER_PIDS[@]}" $LAUNCH_PID; do
        wait "$pid" 2>/dev/null || true
    done
    bench_cleanup
}
trap load_cleanup EXIT
# A signal ends the script through `exit`, so the EXIT trap still stops what it started.
trap 'exit 130' INT
trap 'exit 143' TERM

bench_binaries || exit 2
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)

step "writing $TASKS tasks and the mock's answers into $WORK"
python3 - "$WORK" "$TASKS" <<'EOF' >&2
# Ticket tasks whose expected answer is a JSON object, and one mock answer per task drawn from
# a seeded mix whose `json_equal` score is known exactly:
#   exact         the object, compact, keys shuffled                       1
#   fenced        the object pretty-printed in a ```json fence             1
#   wrong_value   every key, `priority` wrong: key-F1 of 3/4 and 3/4       3/4
#   missing_keys  only `ticket` and `queue`, both right: P 1, R 1/2        2/3
#   prose         a sentence without a bracket                             0
import json, random, sys
from fractions import Fraction
from pathlib import Path

out, tasks = Path(sys.argv[1]), int(sys.argv[2])
rng = random.Random(7)
QUEUES = ["billing", "shipping", "returns", "account", "technical", "sales"]
MIX = [("exact", 0.50), ("fenced", 0.15), ("wrong_value", 0.15), ("missing_keys", 0.10), ("prose", 0.10)]
SCORE = {"exact": Fraction(1), "fenced": Fraction(1), "wrong_value": Fraction(3, 4),
         "missing_keys": Fraction(2, 3), "prose": Fraction(0)}
counts = dict.fromkeys(SCORE, 0)
total = Fraction(0)
with open(out / "dataset.jsonl", "w") as dataset, open(out / "answers.jsonl", "w") as answers, \
        open(out / "expected.tsv", "w") as expected_scores:
    for index in range(tasks):
        task_id = f"load-{index:06d}"
        queue, priority, items = rng.choice(QUEUES), rng.randint(1, 5), rng.randint(1, 99)
        expected = {"ticket": task_id, "queue": queue, "priority": priority, "items": items}
        text = (f"Ticket {task_id}\nFrom: customer{rng.randrange(10**6):06d}@example.com\n"
                f"A {queue} question about {items} items, urgency {priority} of 5.")
        kind = rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0]
        if kind == "exact":
            pairs = list(expected.items())
            rng.shuffle(pairs)
            answer = json.dumps(dict(pairs))
        elif kind == "fenced":
            answer = "```json\n" + json.dumps(expected, indent=2) + "\n```"
        elif kind == "wrong_value":
            answer = json.dumps({**expected, "priority": priority % 5 + 1})
        elif kind == "missing_keys":
            answer = json.dumps({"ticket": task_id, "queue": queue})
        else:
            answer = f"Ticket {task_id} is a {queue} question."
        counts[kind] += 1
        total += SCORE[kind]
        dataset.write(json.dumps({"id": task_id, "input": text, "expected": expected}) + "\n")
        answers.write(json.dumps({"input": text, "output": answer}) + "\n")
        expected_scores.write(f"{task_id}\t{float(SCORE[kind])!r}\n")
mean = total / tasks
(out / "expected.json").write_text(json.dumps({"mean": float(mean), "fraction": str(mean), "counts": counts}))
print(" ".join(f"{k}={v}" for k, v in counts.items()), f"expected score {float(mean):.6f}")
EOF
cat >"$WORK/skill.md" <<'EOF'
---
name: ticket-triage
description: Read a support ticket and return its id, queue, priority and item count as JSON. Use when a ticket needs routing.
---

# Ticket triage

Return the ticket id, its queue, its priority (1 to 5) and the number of items it is about as
one JSON object with the keys ticket, queue, priority and items, and nothing else.
EOF

step "starting sf-mock-server (latency ${LATENCY_MS} ms)"
bench_start_mock "$WORK" --latency-ms "$LATENCY_MS" --answers "$WORK/answers.jsonl"
echo "mock at $BASE_URL (pid $MOCK_PID)" >&2

cat >"$WORK/config.yaml" <<EOF
skill: skill.md
dataset: dataset.jsonl
seed: 7
provider: {name: openai, model: mock-target, base_url: "$BASE_URL/v1", api_key: bench, max_concurrency: $WORKERS}
metric:
  golden: {mode: json_equal, weight: 1.0}
harness: {temperature: 0.0, max_tokens: 256, max_workers: $WORKERS}
EOF
CACHE_FILE=$WORK/.skill-factory/cache.sqlite
unset OPENAI_API_KEY OPENAI_BASE_URL SKILL_FACTORY_RECORD SKILL_FACTORY_REPLAY \
    SKILL_FACTORY_TARGET_MODEL SKILL_FACTORY_JUDGE_MODEL

# Samples every SAMPLE_S s from before the launch until the process is gone: time, the mock's
# /stats, VmRSS and VmHWM of skill-factory (its pid is read from PIDFILE once written), VmRSS of
# the mock (kB), one JSON object a line.
cat >"$WORK/sampler.py" <<'EOF'
import json, os, sys, time, urllib.request
base, pidfile, mock_pid, interval, out = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
pid = None

def memory(pid):
    values = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "Threads"):
                    values[key] = int(value.split()[0])
    except OSError:
        pass
    return values  # empty once the process is gone (a zombie has no VmRSS)

def cpu(pid):
    """User + system CPU seconds of a process so far."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None

TICK = os.sysconf("SC_CLK_TCK")

with open(out, "w") as log:
    while True:
        began = time.time()
        if pid is None and os.path.exists(pidfile):
            pid = open(pidfile).read().strip() or None
        ours = memory(pid) if pid else {}
        if pid and "VmRSS" not in ours:
            # One last look at the counter, so that a run shorter than a few samples still has
            # a sample past its last request.
            try:
                stats = json.load(urllib.request.urlopen(base + "/stats", timeout=5))
                log.write(json.dumps({"t": time.time(), "exited": True, **stats}) + "\n")
            except Exception:
                pass
            break
        try:
            stats = json.load(urllib.request.urlopen(base + "/stats", timeout=5))
        except Exception as error:  # recorded, not fatal: the sample is kept without stats
            stats = {"error": str(error)}
        sample = {"t": (began + time.time()) / 2, "rss": ours.get("VmRSS"), "hwm": ours.get("VmHWM"),
                  "cpu": cpu(pid) if pid else None, "threads": ours.get("Threads"),
                  "mock_rss": memory(mock_pid).get("VmRSS"), "mock_cpu": cpu(mock_pid), **stats}
        log.write(json.dumps(sample) + "\n")
        log.flush()
        time.sleep(max(0.0, interval - (time.time() - began)))
EOF

# Every PROBE_S s until the process is gone (its pid from PIDFILE), from the moment the cache
# file exists: `skill-factory cache stats --path FILE` and a read-only sqlite3 count, each from
# its own process and connection.
cat >"$WORK/prober.py" <<'EOF'
import json, os, re, sqlite3, subprocess, sys, time
ours, path, pidfile, interval, out = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]

def alive():
    """True until skill-factory has been launched and has exited."""
    if not os.path.exists(pidfile):
        return True
    pid = open(pidfile).read().strip()
    if not pid:
        return True
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.startswith("VmRSS:") for line in status)
    except OSError:
        return False

with open(out, "w") as log:
    while alive():
        if not os.path.exists(path):
            time.sleep(0.05)
            continue
        began = time.time()
        probe = {"t": began}
        try:
            done = subprocess.run([ours, "cache", "stats", "--path", path], capture_output=True,
                                  text=True, timeout=60)
            found = re.search(r"^Entries: ([\d,]+)", done.stdout, re.M)
            probe["tool_ok"] = done.returncode == 0 and found is not None
            probe["tool_entries"] = int(found.group(1).replace(",", "")) if found else None
            if not probe["tool_ok"]:
                probe["tool_error"] = f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[:300]}"
        except Exception as error:
            probe["tool_ok"], probe["tool_entries"], probe["tool_error"] = False, None, repr(error)
        probe["tool_s"] = time.time() - began
        began_sql = time.time()
        try:
            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
            try:
                probe["sql_count"] = connection.execute("SELECT count(*) FROM responses").fetchone()[0]
            finally:
                connection.close()
            probe["sql_ok"] = True
        except Exception as error:
            probe["sql_ok"], probe["sql_count"], probe["sql_error"] = False, None, repr(error)
        probe["sql_s"] = time.time() - began_sql
        probe["during"] = alive()  # the run was still going when both reads had finished
        log.write(json.dumps(probe) + "\n")
        log.flush()
        time.sleep(max(0.0, interval - (time.time() - began)))
EOF

step "evaluate: $TASKS tasks, $WORKERS in flight, ${LATENCY_MS} ms a call"
# The watchers start first, so the first samples are taken before the first request.
PIDFILE=$WORK/skill-factory.pid
python3 "$WORK/sampler.py" "$BASE_URL" "$PIDFILE" "$MOCK_PID" "$SAMPLE_S" "$WORK/samples.jsonl" &
HELPER_PIDS+=("$!")
python3 "$WORK/prober.py" "$OURS" "$CACHE_FILE" "$PIDFILE" "$PROBE_S" "$WORK/probes.jsonl" &
HELPER_PIDS+=("$!")
for _ in $(seq 500); do
    [[ -s "$WORK/samples.jsonl" ]] && break
    sleep 0.01
done
TIME_BIN=""
[[ -x /usr/bin/time ]] && TIME_BIN=/usr/bin/time
LAUNCHED=$(date +%s.%N)
if [[ -n "$TIME_BIN" ]]; then
    "$TIME_BIN" -f '%M %e %U %S' -o "$WORK/time.out" \
        "$OURS" evaluate "${NO_CACHE[@]}" -c "$WORK/config.yaml" >"$WORK/run.out" 2>"$WORK/run.err" &
    LAUNCH_PID=$!
    # skill-factory is /usr/bin/time's only child.
    for _ in $(seq 500); do
        SF_PID=$(pgrep -P "$LAUNCH_PID" | head -n 1 || true)
        [[ -n "$SF_PID" ]] && break
        kill -0 "$LAUNCH_PID" 2>/dev/null || break
        sleep 0.01
    done
else
    "$OURS" evaluate "${NO_CACHE[@]}" -c "$WORK/config.yaml" >"$WORK/run.out" 2>"$WORK/run.err" &
    LAUNCH_PID=$!
    SF_PID=$LAUNCH_PID
fi
if [[ -z "$SF_PID" ]]; then
    echo "could not find the skill-factory process (it may have ended at once)" >&2
    cat "$WORK/run.err" >&2
    exit 2
fi
echo "$SF_PID" >"$PIDFILE.tmp"
mv "$PIDFILE.tmp" "$PIDFILE"
RUN_RC=0
wait "$LAUNCH_PID" || RUN_RC=$?
ENDED=$(date +%s.%N)
SF_PID=""
LAUNCH_PID=""
for pid in "${HELPER_PIDS[@]}"; do
    wait "$pid" || true
done
HELPER_PIDS=()
echo "exit $RUN_RC; $(head -n 1 "$WORK/run.out"); $(grep -m1 '^Model calls' "$WORK/run.err" || true)" >&2
if ((RUN_RC != 0)); then
    tail -n 20 "$WORK/run.err" >&2
fi
python3 -c '
import json, sys, urllib.request
print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1] + "/stats"))))' "$BASE_URL" >"$WORK/final_stats.json"

RERUN_RC=""
RERUN_WALL=""
if [[ "$EXACT" == 1 && "$RUN_RC" == 0 ]]; then
    step "the same evaluate with --json, from the cache (every task's score)"
    start=$(date +%s.%N)
    RERUN_RC=0
    if [[ -n "$TIME_BIN" ]]; then
        "$TIME_BIN" -f '%M %e %U %S' -o "$WORK/rerun.time" "$OURS" evaluate --json -c "$WORK/config.yaml" \
            >"$WORK/rerun.json" 2>"$WORK/rerun.err" || RERUN_RC=$?
    else
        "$OURS" evaluate --json -c "$WORK/config.yaml" >"$WORK/rerun.json" 2>"$WORK/rerun.err" || RERUN_RC=$?
    fi
    RERUN_WALL=$(python3 -c "print(f'{$(date +%s.%N) - $start:.3f}')")
    echo "exit $RERUN_RC in $RERUN_WALL s; $(grep -m1 '^Model calls' "$WORK/rerun.err" || true)" >&2
fi

step "results"
RESULT_RC=0
NICENESS=$(cut -d' ' -f19 /proc/$$/stat)
COMMAND="TASKS=$TASKS WORKERS=$WORKERS LATENCY_MS=$LATENCY_MS bash bench/load.sh"
if [[ "$CACHE" == 0 ]]; then
    COMMAND="CACHE=0 $COMMAND"
fi
if ((NICENESS != 0)); then
    COMMAND="nice -n $NICENESS env $COMMAND"
fi
export WORK TASKS WORKERS LATENCY_MS SAMPLE_S PROBE_S LAUNCHED ENDED RUN_RC RERUN_RC RERUN_WALL \
    TIME_BIN LOAD_AT_START COMMAND CACHE
python3 - <<'EOF' >"$WORK/load.md" || RESULT_RC=$?
import json, os, re, sys
from pathlib import Path

env = os.environ
work = Path(env["WORK"])
TASKS, WORKERS, LATENCY_MS = int(env["TASKS"]), int(env["WORKERS"]), int(env["LATENCY_MS"])
SAMPLE_S, PROBE_S = float(env["SAMPLE_S"]), float(env["PROBE_S"])
launched, ended, run_rc = float(env["LAUNCHED"]), float(env["ENDED"]), int(env["RUN_RC"])
rerun_rc, rerun_wall, time_bin = env["RERUN_RC"], env["RERUN_WALL"], env["TIME_BIN"]
load_at_start, command = env["LOAD_AT_START"], env["COMMAND"]

def lines(name):
    path = work / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []

def mib(kb):
    return "n/a" if kb is None else f"{kb / 1024:.1f} MiB"

def secs(value):
    return "n/a" if value is None else f"{value:.3f} s"

problems, notes = [], []
expected = json.loads((work / "expected.json").read_text())
samples = [s for s in lines("samples.jsonl") if "requests" in s]
probes = lines("probes.jsonl")
final = json.loads((work / "final_stats.json").read_text())
out = (work / "run.out").read_text()
err = (work / "run.err").read_text()
score_line = next((l for l in out.splitlines() if l.startswith("Score: ")), None)
calls_line = next((l for l in err.splitlines() if l.startswith("Model calls")), None)
failed_line = next((l for l in (out + err).splitlines() if l.startswith("Failed rollouts")), None)
wall = ended - launched

# --- when the request counter crossed k (linear between two samples) ---
def crossing(k):
    previous = None
    for s in samples:
        if s["requests"] >= k:
            if previous is None or s["requests"] == previous["requests"]:
                return s["t"]
            share = (k - previous["requests"]) / (s["requests"] - previous["requests"])
            return previous["t"] + share * (s["t"] - previous["t"])
        previous = s
    return None

def per_thousand(lo, hi):
    a, b = crossing(max(lo, 1)), crossing(hi)
    if a is None or b is None or hi <= max(lo, 1):
        return None, None
    return (b - a) / (hi - max(lo, 1)) * 1000, b - a

def window(span):
    if span is None:
        return "n/a"
    coarse = ", shorter than 3 sample intervals: coarse" if span < 3 * SAMPLE_S else ""
    return f"window {span:.3f} s{coarse}"

def at_progress(share):
    """The first sample of the live process at or past `share` of the requests."""
    return next((s for s in samples if s["requests"] >= share * TASKS and s.get("rss")), None)

first_req, last_req = crossing(1), crossing(TASKS)
start10, start10_span = per_thousand(0, TASKS // 10)
end10, end10_span = per_thousand(TASKS - TASKS // 10, TASKS)
ideal = 1000 * LATENCY_MS / 1000 / WORKERS

# --- memory ---
max_rss = max((s["rss"] for s in samples if s.get("rss")), default=None)
last_hwm = max((s["hwm"] for s in samples if s.get("hwm")), default=None)
def time_file(name):
    """/usr/bin/time's `%M %e %U %S` (its last line; a failed command adds one before it)."""
    path = work / name
    if not (time_bin and path.exists()):
        return None, None
    last = [f for f in path.read_text().splitlines() if re.match(r"^\d+ [\d.]+ [\d.]+ [\d.]+$", f)]
    if not last:
        return None, None
    rss, _, user, system = last[-1].split()
    return int(rss), float(user) + float(system)

time_rss, cpu = time_file("time.out")
rss_at = {p: at_progress(p / 100) for p in (10, 50, 90)}
growth = None
if rss_at[10] and rss_at[90] and rss_at[90]["requests"] > rss_at[10]["requests"]:
    growth = (rss_at[90]["rss"] - rss_at[10]["rss"]) * 1024 / (rss_at[90]["requests"] - rss_at[10]["requests"])

# --- score ---
want = f"Score: {expected['mean']:.3f} over {TASKS} tasks"
if score_line != want:
    problems.append(f"printed {score_line!r}, expected {want!r} (from the generated answers)")
if run_rc != 0:
    problems.append(f"evaluate exited {run_rc}: {err.strip().splitlines()[-1] if err.strip() else ''}")
if failed_line:
    problems.append(f"evaluate reported {failed_line!r}")
if final["requests"] != TASKS:
    notes.append(f"the mock received {final['requests']} requests for {TASKS} tasks (retries?)")

exact = "not run (EXACT=0)" if rerun_rc == "" else None
rerun_calls, rerun_rss = None, None
if rerun_rc != "":
    rerun_err = (work / "rerun.err").read_text()
    rerun_calls = next((l for l in rerun_err.splitlines() if l.startswith("Model calls")), None)
    rerun_rss, _ = time_file("rerun.time")
    if rerun_rc != "0":
        problems.append(f"the cached --json rerun exited {rerun_rc}: {rerun_err.strip()[-300:]}")
        exact = "rerun failed"
    else:
        result = json.loads((work / "rerun.json").read_text())
        want_scores = dict(line.split("\t") for line in (work / "expected.tsv").read_text().splitlines())
        items = result["items"]
        wrong = [i["id"] for i in items if abs(i["score"] - float(want_scores.get(i["id"], "nan"))) > 1e-9]
        errors = [i["id"] for i in items if i.get("error")]
        missing = len(want_scores) - len({i["id"] for i in items})
        if wrong or errors or missing or result.get("failed") or abs(result["score"] - expected["mean"]) > 1e-9:
            problems.append(f"cached rerun: {len(wrong)} task scores differ (first {wrong[:5]}), "
                            f"{len(errors)} errors, {missing} tasks missing, failed {result.get('failed')}, "
                            f"score {result['score']!r} against {expected['mean']!r}")
            exact = f"**{len(wrong)} of {len(items)} differ**, mean {result['score']!r}"
        else:
            exact = f"all {len(items)} equal; mean {result['score']!r} = {expected['fraction']}"
        if not rerun_calls or " 0 asked" not in rerun_calls:
            problems.append(f"the cached rerun asked the model: {rerun_calls!r}")

# --- second-process cache reads ---
during = [p for p in probes if p.get("during")]
tool_fail = [p for p in probes if not p.get("tool_ok")]
sql_fail = [p for p in probes if not p.get("sql_ok")]
for p in tool_fail:
    problems.append(f"cache stats failed at +{p['t'] - launched:.1f} s: {p.get('tool_error')}")
for p in sql_fail:
    problems.append(f"sqlite3 read failed at +{p['t'] - launched:.1f} s: {p.get('sql_error')}")
counts = [p["sql_count"] for p in during if p.get("sql_ok")]
growing = all(b >= a for a, b in zip(counts, counts[1:]))
if env["CACHE"] == "0":
    notes.append("CACHE=0: the run used --no-cache, so the cache was neither written nor read")
elif not during:
    notes.append("no cache read finished while the run was going (too short a run for PROBE_S)")
if not growing:
    problems.append(f"the entry count went down during the run: {counts}")

# --- report ---
p = print
p(f"# Load: `evaluate` of {TASKS:,} tasks at {WORKERS} in flight")
p()
p(f"Written by `{command}` on {os.popen('date -u +%Y-%m-%d').read().strip()} "
  f"({os.cpu_count()} cores; load average at start {load_at_start}). One `evaluate` of the "
  f"whole dataset, one model call per task (no judge, golden `json_equal`), against "
  f"`sf-mock-server --latency-ms {LATENCY_MS}`; `provider.max_concurrency` and "
  f"`harness.max_workers` {WORKERS}, "
  + ("the cache off (`--no-cache`). " if env["CACHE"] == "0" else "the cache at its default place (empty at start). ")
  + f"Samples of the mock's `/stats` and of `/proc/PID/status` every {SAMPLE_S:g} s; "
  f"second-process reads of the cache every {PROBE_S:g} s. Mix of answers: "
  + ", ".join(f"{k} {v}" for k, v in expected["counts"].items()) + ".")
p()
p("| what | figure |")
p("|---|---|")
p(f"| wall time (launch to exit) | **{wall:.3f} s** ({TASKS / wall:,.0f} tasks/s) |")
# Bounds from the samples on either side of the first and of the last request.
def bounds(is_before):
    before = [s["t"] for s in samples if is_before(s)]
    after = [s["t"] for s in samples if not is_before(s)]
    return (max(before) if before else None), (min(after) if after else None)

zero, started = bounds(lambda s: s["requests"] == 0)
short, full = bounds(lambda s: s["requests"] < TASKS)
startup = f"{max(0.0, zero - launched):.3f} to {started - launched:.3f} s" if zero and started else "n/a"
tail = f"{max(0.0, ended - full):.3f} to {ended - short:.3f} s" if short and full else "n/a"
p(f"| start-up (launch to the first request) / tail (the last request to exit), between samples | "
  f"{startup} / {tail} |")
p(f"| time per 1,000 tasks, first 10% of requests | **{secs(start10)}** ({window(start10_span)}) |")
p(f"| time per 1,000 tasks, last 10% of requests | **{secs(end10)}** ({window(end10_span)}) |")
if start10 and end10:
    p(f"| last 10% against first 10% | {end10 / start10:.2f}x the time per task |")
p(f"| bound set by the latency ({LATENCY_MS} ms x 1,000 / {WORKERS}) | {ideal:.3f} s per 1,000 tasks |")
p(f"| mock: requests received / peak in flight (`max_in_flight`) | {final['requests']:,} / **{final['max_in_flight']}** |")
p(f"| skill-factory peak RSS: /usr/bin/time / last VmHWM sampled / max VmRSS sampled | "
  f"**{mib(time_rss)}** / {mib(last_hwm)} / {mib(max_rss)} |")
max_threads = max((s["threads"] for s in samples if s.get("threads")), default=None)
low = [s for s in samples if 0.01 * TASKS < s["requests"] < 0.99 * TASKS]
starved = sum(1 for s in low if s.get("in_flight", WORKERS) < WORKERS / 2)
p(f"| samples between 1% and 99% of the requests with under {WORKERS // 2} in flight at the mock | "
  f"{starved} of {len(low)} |")
p(f"| skill-factory threads, most sampled | {max_threads if max_threads else 'n/a'} |")
p(f"| skill-factory CPU time (user + system) | {secs(cpu)}"
  + (f" ({cpu / TASKS * 1000:.3f} s per 1,000 tasks)" if cpu else "") + " |")
first_seen = next((s for s in samples if s["requests"] > 0 and s.get("rss")), None)
p(f"| skill-factory RSS at the first sample with a request | "
  + (f"{mib(first_seen['rss'])} ({first_seen['requests']:,} requests by then)" if first_seen else "n/a") + " |")
p(f"| skill-factory RSS at 10% / 50% / 90% of the requests | "
  + " / ".join(mib(rss_at[k]["rss"]) if rss_at[k] else "n/a" for k in (10, 50, 90)) + " |")
p(f"| RSS growth from 10% to 90% | {'n/a' if growth is None else f'{growth:,.0f} bytes per task'} |")
first_mock = next((s["mock_rss"] for s in samples if s.get("mock_rss")), None)
last_mock = next((s["mock_rss"] for s in reversed(samples) if s.get("mock_rss")), None)
p(f"| mock RSS, first and last sample (it keeps every request it received) | {mib(first_mock)} / {mib(last_mock)} |")
p(f"| cache reads by second processes during the run (`cache stats` + sqlite3 read-only) | "
  f"{len(during)} rounds; failures: `cache stats` {len(tool_fail)}, sqlite3 {len(sql_fail)} |")
if during:
    p(f"| entries seen by those reads, first to last | {counts[0] if counts else 'n/a'} ... {counts[-1] if counts else 'n/a'} "
      f"(slowest read: `cache stats` {max(x['tool_s'] for x in during):.3f} s, sqlite3 {max(x['sql_s'] for x in during):.3f} s) |")
p(f"| score printed / expected from the answers | `{score_line}` / {expected['mean']:.6f} |")
p(f"| model calls (stderr) | {calls_line} |")
p(f"| every task's score, cached `--json` rerun | {exact} |")
if rerun_rc == "0":
    p(f"| cached rerun: wall time / peak RSS / model calls | {rerun_wall} s / {mib(rerun_rss)} / {rerun_calls} |")
p()
p("Per tenth of the requests (time per 1,000 tasks within the tenth; RSS of the first sample at "
  "or past its end):")
p()
p("| requests | elapsed at end | s per 1,000 tasks | skill-factory CPU s per 1,000 | mock CPU s per 1,000 | skill-factory RSS | mock RSS |")
p("|---|---:|---:|---:|---:|---:|---:|")

def cpu_per_thousand(key, a, b):
    """CPU seconds of `key` per 1,000 requests between the samples a and b."""
    if not a or not b or a.get(key) is None or b.get(key) is None or b["requests"] <= a["requests"]:
        return "n/a"
    return f"{(b[key] - a[key]) / (b['requests'] - a['requests']) * 1000:.3f}"

previous = next((s for s in samples if s["requests"] > 0 and s.get("cpu") is not None), None)
for d in range(10):
    lo, hi = d * TASKS // 10, (d + 1) * TASKS // 10
    rate, _ = per_thousand(lo, hi)
    end_t = crossing(hi)
    s = at_progress((d + 1) / 10)
    p(f"| {lo:,} to {hi:,} | {secs(end_t - launched if end_t else None)} | {secs(rate)} | "
      f"{cpu_per_thousand('cpu', previous, s)} | {cpu_per_thousand('mock_cpu', previous, s)} | "
      f"{mib(s['rss']) if s else 'n/a'} | {mib(s.get('mock_rss')) if s else 'n/a'} |")
    previous = s
p()
p("Cache reads from second processes (time since launch, entries by `cache stats` and by sqlite3):")
p()
p("| at | `cache stats` | sqlite3 read-only | during the run |")
p("|---:|---|---|---|")
step = max(1, len(probes) // 40)
for i, x in enumerate(probes):
    if i % step and i != len(probes) - 1 and x.get("tool_ok") and x.get("sql_ok"):
        continue
    tool = f"{x['tool_entries']} ({x['tool_s']:.2f} s)" if x.get("tool_ok") else f"FAILED: {x.get('tool_error')}"
    sql = f"{x['sql_count']} ({x['sql_s']:.3f} s)" if x.get("sql_ok") else f"FAILED: {x.get('sql_error')}"
    p(f"| {x['t'] - launched:.1f} s | {tool} | {sql} | {'yes' if x.get('during') else 'no'} |")
if step > 1:
    p(f"\n(every {step}th read shown, and every failed one)")
p()
if problems:
    p("**Problems:**")
    p()
    for x in problems:
        p(f"- {x}")
else:
    p("Checks: the printed score is the expected one, every task scored as generated, no rollout "
      "failed, and every second-process read of the cache succeeded.")
for x in notes:
    p(f"\nNote: {x}")
for x in problems:
    print("PROBLEM: " + x, file=sys.stderr)
for x in notes:
    print("note: " + x, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
cat "$WORK/load.md"
if [[ -n "${SAMPLES_OUT:-}" ]]; then
    mkdir -p "$SAMPLES_OUT"
    cp "$WORK/samples.jsonl" "$WORK/probes.jsonl" "$WORK/run.out" "$WORK/run.err" "$SAMPLES_OUT/"
fi
if [[ -z "${NO_RESULTS:-}" ]]; then
    cp "$WORK/load.md" bench/results/load.md
    python3 bench/reliability.py
    echo "written to bench/results/load.md" >&2
fi
exit "$RESULT_RC"
