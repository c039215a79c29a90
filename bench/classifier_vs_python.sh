#!/usr/bin/env bash
# Classifier mode: ours against the Python skill-factory 0.2.0 from PyPI, on the same files and
# the same loopback System One host (`sf-mock-server --systemone`: P(true) is a hash of the
# state and the question's text, so both tools get the same answer to the same question).
#
#   bash bench/classifier_vs_python.sh
#
# 1. PARITY, on a copy of examples/pr-mismatch (its config.yaml with `workspace: ws` and
#    System One pointed at the mock; `optimizer_provider` dropped: selection only). Each tool,
#    in its own copy:
#    - `optimize -c bench.yaml` twice: the second run must send nothing;
#    - the split ids: `lab ask --splits train`, then `--splits val`, in a fresh copy (the
#      examples whose states reached the cache), and for test `lab freeze` + `lab report
#      --splits test --ask` in a copy of the optimized workspace (the states it added);
#      `lab status` for the per-split counts;
#    - then the cross-reads: the other tool's answers.jsonl in a fresh workspace, `optimize`
#      must send nothing and pick the probe set the other tool picked (and its own
#      answers.jsonl likewise).
#    Compared: exit codes, requests sent, files written, split ids and counts, the `sha256` of
#    seed.json and probeset.json, the selected score expression and threshold, the printed
#    before -> after validation recall and false-positive rate, what was spent, the
#    before/after rows of report.md, result.json's scores, the cached answers, and the test
#    row of `lab report`.
# 2. SPEED, on files written by bench/classifier_data.py: 10,000 hash-only examples, a pool of
#    200 questions and an answer for every (example, question) (2,000,000 lines), timed with
#    `lab select` (the whole pool, train and val); and the same examples with an
#    answers.jsonl of 1,000,000 lines, timed with `lab status` (the cheapest command that
#    loads the whole cache). Both tools run on the same files; the mock must get no request.
#    The outputs are compared too (`cache: N answers`, the candidate `--out` writes).
#
# It prints a table of every check (ok / DIFFERENT) and the timings, writes
# bench/results/classifier.md with the figures of this run, and exits 1 when a check differs
# (2 when something could not be run at all).
#
# Environment (all optional):
#   EXAMPLE=examples/pr-mismatch   the classifier example to run (dataset, seed, pool, config)
#   RUNS=3                  timed runs of `lab status` per tool (the median is reported)
#   SELECT_RUNS=3           timed runs of `lab select` per tool (the Python tool takes about
#                           a minute a run)
#   EXAMPLES=10000 QUESTIONS=200 LOAD_ANSWERS=1000000   sizes of the speed files
#   ONLY=parity|speed       run one half only
#   PYTHON_ONLY=1           run the Python tool's side only (ours is not built or run; nothing
#                           is written to bench/results unless RESULTS is set)
#   RESULTS=FILE            where to write the figures (default bench/results/classifier.md)
#   OURS_BIN=...            our skill-factory binary (default: the workspace's release build)
#   MOCK_BIN=...            an sf-mock-server binary (default: the workspace's release build)
#   KEEP_WORK=1             keep the temporary directory (its path is printed)
#   PEER_VENV=...           where the Python tool's venv lives (see bench/lib.sh)
# Needs: cargo, python3 with venv, PyPI reachable the first time; hyperfine when present
# (installed with apt-get when missing and running as root), else plain timed runs.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
EXAMPLE=${EXAMPLE:-examples/pr-mismatch}
RUNS=${RUNS:-3}
SELECT_RUNS=${SELECT_RUNS:-3}
EXAMPLES=${EXAMPLES:-10000}
QUESTIONS=${QUESTIONS:-200}
LOAD_ANSWERS=${LOAD_ANSWERS:-1000000}
ONLY=${ONLY:-}
PYTHON_ONLY=${PYTHON_ONLY:-}
if [[ -n "$PYTHON_ONLY" ]]; then
    RESULTS=${RESULTS:-}
else
    RESULTS=${RESULTS:-bench/results/classifier.md}
fi
case "$ONLY" in "" | parity | speed) ;; *)
    echo "ONLY must be parity or speed (got $ONLY)" >&2
    exit 2
    ;;
esac
do_parity() { [[ "$ONLY" != speed ]]; }
do_speed() { [[ "$ONLY" != parity ]]; }

bench_workdir classifier
# The mock, then the work folder: removed, or kept (and said) when KEEP_WORK is set.
trap 'bench_stop_mock; bench_finish' EXIT
# A signal ends the script through `exit`, so the EXIT trap still stops the mock.
trap 'exit 130' INT
trap 'exit 143' TERM

TOOLS=(python)
[[ -z "$PYTHON_ONLY" ]] && TOOLS+=(ours)

if do_parity; then
    for file in dataset.jsonl config.yaml; do
        if [[ ! -f "$EXAMPLE/$file" ]]; then
            echo "$EXAMPLE/$file is missing (set EXAMPLE, or ONLY=speed)" >&2
            exit 2
        fi
    done
fi

if [[ -z "$PYTHON_ONLY" && -z "${OURS_BIN:-}" && -z "${MOCK_BIN:-}" ]]; then
    step "building our release binaries"
    bench_build
elif [[ -z "${MOCK_BIN:-}" ]]; then
    step "building sf-mock-server (release)"
    cargo build --release --quiet -p skill-factory-mock --bin sf-mock-server
    MOCK=${CARGO_TARGET_DIR:-$(pwd)/target}/release/sf-mock-server
fi
MOCK=${MOCK_BIN:-$MOCK}
OURS=${OURS_BIN:-${OURS:-}}
if [[ -z "$PYTHON_ONLY" && ! -x "$OURS" ]]; then
    if [[ -z "$OURS" ]]; then
        OURS=${CARGO_TARGET_DIR:-$(pwd)/target}/release/skill-factory
    fi
    [[ -x "$OURS" ]] || {
        echo "our binary $OURS is missing (set OURS_BIN, or PYTHON_ONLY=1)" >&2
        exit 2
    }
fi
step "the Python skill-factory 0.2.0 (a venv outside the repository)"
bench_peer
PEER_PY=$(dirname "$PYTHON_TOOL")/python
echo "$PYTHON_TOOL" >&2
[[ -n "$PYTHON_ONLY" ]] || echo "ours: $OURS" >&2

step "starting sf-mock-server --systemone"
bench_start_mock "$WORK" --systemone
SYSTEMONE_URL=$BASE_URL/v1/systemone
echo "System One at $SYSTEMONE_URL" >&2

# Nothing from the environment reaches the stub but what the config says.
unset SKILL_FACTORY_SYSTEMONE_KEY TYPESAFE_API_KEY OPENROUTER_API_KEY AI_GATEWAY_API_KEY
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
export PYTHONIOENCODING=utf-8

tool_bin() { if [[ $1 == python ]]; then echo "$PYTHON_TOOL"; else echo "$OURS"; fi; }
other() { if [[ $1 == python ]]; then echo ours; else echo python; fi; }

# run TOOL DIR LABEL ARGS...: runs the tool's command in DIR; keeps its stdout, stderr, exit code
# and the requests the mock received meanwhile in DIR/LABEL.{out,err,rc,req}. Never fails.
run() {
    local tool=$1 dir=$2 label=$3 before after rc=0
    shift 3
    before=$(bench_requests)
    (cd "$dir" && "$(tool_bin "$tool")" "$@") >"$dir/$label.out" 2>"$dir/$label.err" || rc=$?
    after=$(bench_requests)
    echo "$rc" >"$dir/$label.rc"
    echo $((after - before)) >"$dir/$label.req"
    echo "$tool $label: exit $rc, $((after - before)) requests" >&2
    if [[ $rc != 0 ]]; then sed -n 1,5p "$dir/$label.err" >&2; fi
}

# fresh DIR: a copy of the example with the benchmark's config, no workspace yet.
fresh() {
    mkdir -p "$1"
    cp -r "$EXAMPLE/." "$1/"
    rm -rf "$1/ws"
    cp "$WORK/bench.yaml" "$1/bench.yaml"
}

if do_parity; then
    step "parity on $EXAMPLE"
    # The example's own config, with a local workspace and System One at the mock.
    "$PEER_PY" - "$EXAMPLE/config.yaml" "$SYSTEMONE_URL" >"$WORK/bench.yaml" <<'EOF'
import sys, yaml
config = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
config["kind"] = "classifier"
config["workspace"] = "ws"
systemone = {k: v for k, v in (config.get("systemone") or {}).items()
             if k in ("per_request", "concurrency", "usd_per_million_input_tokens", "max_usd",
                      "chars_per_token", "timeout", "max_retries")}
systemone.update(provider="custom", base_url=sys.argv[2],
                 model=(config.get("systemone") or {}).get("model", "jev-latest"))
config["systemone"] = systemone
if config.pop("optimizer_provider", None) is not None:
    print("note: optimizer_provider dropped (selection only)", file=sys.stderr)
yaml.safe_dump(config, sys.stdout, sort_keys=False, allow_unicode=True)
EOF
    sed 's/^/    /' "$WORK/bench.yaml" >&2
    for tool in "${TOOLS[@]}"; do
        T=$WORK/parity/$tool
        fresh "$T/run"
        run "$tool" "$T/run" optimize1 optimize -c bench.yaml
        run "$tool" "$T/run" optimize2 optimize -c bench.yaml
        run "$tool" "$T/run" status lab status -c bench.yaml
        # Split ids: which examples' states a lab ask of one split puts in the cache.
        fresh "$T/splits"
        run "$tool" "$T/splits" ask-train lab ask -c bench.yaml --splits train
        cp "$T/splits/ws/answers.jsonl" "$T/splits/answers-train.jsonl" 2>/dev/null || : >"$T/splits/answers-train.jsonl"
        run "$tool" "$T/splits" ask-val lab ask -c bench.yaml --splits val
        cp "$T/splits/ws/answers.jsonl" "$T/splits/answers-val.jsonl" 2>/dev/null || : >"$T/splits/answers-val.jsonl"
        # The test split: freeze the optimized result, then report test, asking what is missing.
        mkdir -p "$T/sealed"
        cp -r "$T/run/." "$T/sealed/"
        cp "$T/sealed/ws/answers.jsonl" "$T/sealed/answers-before.jsonl" 2>/dev/null || : >"$T/sealed/answers-before.jsonl"
        run "$tool" "$T/sealed" freeze lab freeze -c bench.yaml
        run "$tool" "$T/sealed" report lab report -c bench.yaml --splits test --ask
        # Its own answers in a fresh workspace: nothing to ask.
        fresh "$T/self"
        mkdir -p "$T/self/ws"
        cp "$T/run/ws/answers.jsonl" "$T/self/ws/" 2>/dev/null || true
        run "$tool" "$T/self" optimize optimize -c bench.yaml
    done
    if [[ -z "$PYTHON_ONLY" ]]; then
        for tool in "${TOOLS[@]}"; do
            T=$WORK/parity/$tool
            fresh "$T/cross"
            mkdir -p "$T/cross/ws"
            cp "$WORK/parity/$(other "$tool")/run/ws/answers.jsonl" "$T/cross/ws/" 2>/dev/null || true
            run "$tool" "$T/cross" optimize optimize -c bench.yaml
        done
    fi
fi

if do_speed; then
    step "writing the speed files ($EXAMPLES examples, $QUESTIONS questions)"
    S=$WORK/speed
    python3 bench/classifier_data.py "$S" --examples "$EXAMPLES" --questions "$QUESTIONS" \
        --load-answers "$LOAD_ANSWERS" --base-url "$SYSTEMONE_URL" >&2
    (cd "$S" && find . -type f | sort) >"$WORK/speed-files-before"
    SPEED_BEFORE=$(bench_requests)
    for tool in "${TOOLS[@]}"; do
        run "$tool" "$S" "status-$tool" lab status -c load.yaml
        run "$tool" "$S" "select-$tool" lab select -c select.yaml --out "$S/select-$tool.json"
    done

    if ! command -v hyperfine >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        step "installing hyperfine"
        apt-get install -y -qq hyperfine >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hyperfine >/dev/null 2>&1; } || true
    fi
    # time_command NAME RUNS WARMUP: times `lab NAME` for every tool whose checked run exited 0;
    # writes $S/times-NAME.json as {tool: [seconds, ...]}.
    time_command() {
        local name=$1 runs=$2 warmup=$3 tool args
        local -a names=()
        for tool in "${TOOLS[@]}"; do
            if [[ $(cat "$S/$name-$tool.rc") != 0 ]]; then
                echo "$tool lab $name failed: not timed" >&2
                continue
            fi
            if [[ $name == status ]]; then
                args="lab status -c load.yaml"
            else
                args="lab select -c select.yaml --out select-$tool.json"
            fi
            names+=("$tool" "cd '$S' && '$(tool_bin "$tool")' $args >/dev/null 2>&1")
        done
        if ((${#names[@]} == 0)); then
            echo '{}' >"$S/times-$name.json"
            return
        fi
        if command -v hyperfine >/dev/null; then
            local -a hf=()
            local i
            for ((i = 0; i < ${#names[@]}; i += 2)); do hf+=(-n "${names[i]}" "${names[i + 1]}"); done
            hyperfine --style basic --runs "$runs" --warmup "$warmup" --export-json "$S/hf-$name.json" "${hf[@]}" >&2
            python3 -c '
import json, sys
print(json.dumps({r["command"]: r["times"] for r in json.load(open(sys.argv[1]))["results"]}))' \
                "$S/hf-$name.json" >"$S/times-$name.json"
        else
            local i start end
            echo '{}' >"$S/times-$name.json"
            for ((i = 0; i < ${#names[@]}; i += 2)); do
                local -a times=()
                for _ in $(seq "$runs"); do
                    start=$(date +%s.%N)
                    bash -c "${names[i + 1]}"
                    end=$(date +%s.%N)
                    times+=("$(python3 -c "print($end - $start)")")
                done
                echo "${names[i]} lab $name: ${times[*]} s" >&2
                python3 -c '
import json, sys
path, tool = sys.argv[1], sys.argv[2]
data = json.load(open(path))
data[tool] = [float(t) for t in sys.argv[3:]]
json.dump(data, open(path, "w"))' "$S/times-$name.json" "${names[i]}" "${times[@]}"
            done
        fi
    }
    step "timing lab status ($LOAD_ANSWERS answers), $RUNS runs each"
    time_command status "$RUNS" 1
    step "timing lab select ($QUESTIONS questions, $EXAMPLES examples), $SELECT_RUNS runs each"
    time_command select "$SELECT_RUNS" 0
    echo $(($(bench_requests) - SPEED_BEFORE)) >"$WORK/speed-requests"
    (cd "$S" && find . -type f | sort) >"$WORK/speed-files-after"
fi

step "comparing"
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine=$(uname -sm), $(nproc) cores, $(sed -n 's/^PRETTY_NAME="\(.*\)"$/\1/p' /etc/os-release 2>/dev/null || true)"
    echo "python_tool=$("$PYTHON_TOOL" --version 2>&1)"
    echo "ours=$(if [[ -n "$PYTHON_ONLY" ]]; then echo "not run (PYTHON_ONLY)"; else "$OURS" --version 2>&1 | head -1; fi)"
    echo "timer=$(command -v hyperfine >/dev/null && hyperfine --version || echo 'date +%s.%N')"
    echo "example=$EXAMPLE"
    echo "examples=$EXAMPLES"
    echo "questions=$QUESTIONS"
    echo "load_answers=$LOAD_ANSWERS"
    echo "runs=$RUNS status, $SELECT_RUNS select"
} >"$WORK/meta"
rc=0
python3 - "$WORK" "$RESULTS" "${TOOLS[@]}" <<'EOF' || rc=$?
import hashlib, json, os, re, statistics, sys

work, results_path, tools = sys.argv[1], sys.argv[2], sys.argv[3:]
both = len(tools) == 2
meta = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(work, "meta")))
P = os.path.join(work, "parity")
S = os.path.join(work, "speed")


def read(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    text = read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return "not JSON"


def sha24(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def state_hashes(path):
    hashes = set()
    for line in (read(path) or "").splitlines():
        line = line.strip()
        if line:
            try:
                hashes.add(json.loads(line)["s"])
            except (ValueError, KeyError, TypeError):
                pass
    return hashes


def answers(path):
    """Every cached answer as (s, q, m, r, p, v), parsed (float formatting may differ)."""
    rows = set()
    for line in (read(path) or "").splitlines():
        if line.strip():
            a = json.loads(line)
            rows.add((a["s"], a["q"], a["m"], a.get("r", 0), float(a["p"]), a.get("v")))
    return rows


def ids_by_hash(dataset):
    """state hash -> sorted ids, the way both tools hash states (sha24 of the text)."""
    out = {}
    for line in (read(dataset) or "").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        state = record.get("state", record.get("input"))
        if state is not None and not isinstance(state, str):
            state = json.dumps(state, indent=2, ensure_ascii=False)
        h = record.get("state_hash") or (sha24(state) if state is not None else None)
        if h:
            out.setdefault(h, []).append(str(record["id"]))
    return out


def ids(hashes, index):
    return sorted(i for h in hashes for i in index.get(h, ["?" + h]))


def out_lines(path):
    return (read(path) or "").splitlines()


def stripped(value):
    return value.strip() if isinstance(value, str) else value


def parity_facts(tool):
    T = os.path.join(P, tool)
    run, ws = os.path.join(T, "run"), os.path.join(T, "run", "ws")
    index = ids_by_hash(os.path.join(run, "dataset.jsonl"))
    f = {}
    f["optimize exit code"] = stripped(read(os.path.join(run, "optimize1.rc")))
    f["requests sent by optimize"] = stripped(read(os.path.join(run, "optimize1.req")))
    f["requests sent by a second optimize"] = stripped(read(os.path.join(run, "optimize2.req")))
    out = read(os.path.join(run, "optimize1.out"), "")
    f["stdout says 'classifier mode' and 'sealed'"] = "classifier mode" in out and "sealed" in out
    f["files in the workspace"] = sorted(os.listdir(ws)) if os.path.isdir(ws) else None
    status = out_lines(os.path.join(run, "status.out"))
    f["lab status splits line"] = next((l for l in status if l.startswith("splits:")), None)
    f["lab status cache line"] = next((l.split(";")[0] for l in status if l.startswith("cache:")), None)
    splits = os.path.join(T, "splits")
    train = state_hashes(os.path.join(splits, "answers-train.jsonl"))
    val = state_hashes(os.path.join(splits, "answers-val.jsonl")) - train
    sealed = os.path.join(T, "sealed")
    test = state_hashes(os.path.join(sealed, "ws", "answers.jsonl")) - state_hashes(
        os.path.join(sealed, "answers-before.jsonl"))
    f["train ids (lab ask --splits train)"] = ids(train, index)
    f["val ids (lab ask --splits val)"] = ids(val, index)
    f["test ids (lab freeze, lab report --splits test --ask)"] = ids(test, index)
    for name in ("seed.json", "probeset.json"):
        doc = load_json(os.path.join(ws, name))
        doc = doc if isinstance(doc, dict) else {}
        f[f"{name} sha256"] = doc.get("sha256")
        f[f"{name} threshold"] = doc.get("threshold")
        if name == "probeset.json":
            f["probeset.json score"] = json.dumps(doc.get("score"), sort_keys=True)
            f["probeset.json questions"] = list(doc.get("questions", {}))
    # What optimize printed: the objective line, and val recall@FPR of the seed and of the last
    # kept round.
    objective = next((l for l in out.splitlines() if " recall at " in l and " false positives: " in l), None)
    m = objective and re.match(r"^(\S+) recall at ([\d.]+%) false positives: ([\d.]+%) \S+ ([\d.]+%)(?:; spent (\S+))?", objective)
    f["printed val recall before -> after"] = f"{m[1]} @ {m[2]}: {m[3]} -> {m[4]}" if m else objective
    f["printed spent"] = m[5] if m else None
    seed_val = after_val = None
    for l in out.splitlines():
        v = re.search(r"\bval ([\d.]+%@[\d.]+%)", l)
        if l.startswith("seed:") and v:
            seed_val = after_val = v[1]
        elif l.startswith("round ") and v and l.rstrip().endswith("kept"):
            after_val = v[1]
    f["printed val recall@FPR before -> after"] = f"{seed_val} -> {after_val}"
    report = out_lines(os.path.join(ws, "report.md"))
    # Our cells add the counts behind each rate ("40.0% (2/5)"); the rates and AUCs are what
    # must agree.
    counts = lambda row: row and re.sub(r" \(\d+/\d+\)", "", row)
    f["report.md before/after rows"] = [counts(l) for l in report if l.startswith(("| training (", "| validation ("))]
    result = load_json(os.path.join(ws, "result.json"))
    result = result if isinstance(result, dict) else {}
    f["result.json baseline -> best"] = f"{result.get('baseline_score')} -> {result.get('best_score')}"
    cached = answers(os.path.join(ws, "answers.jsonl")) if os.path.exists(os.path.join(ws, "answers.jsonl")) else set()
    f["answers.jsonl entries"] = sorted(map(list, cached))
    f["lab freeze exit code"] = stripped(read(os.path.join(sealed, "freeze.rc")))
    f["lab report --splits test exit code"] = stripped(read(os.path.join(sealed, "report.rc")))
    f["lab report test row"] = counts(next((l for l in out_lines(os.path.join(sealed, "report.out")) if l.startswith("| test (")), None))
    self_dir = os.path.join(T, "self")
    f["own answers.jsonl in a fresh workspace: requests"] = stripped(read(os.path.join(self_dir, "optimize.req")))
    cross = os.path.join(T, "cross")
    if os.path.isdir(cross):
        f["other tool's answers.jsonl: optimize exit code"] = stripped(read(os.path.join(cross, "optimize.rc")))
        f["other tool's answers.jsonl: requests"] = stripped(read(os.path.join(cross, "optimize.req")))
        doc = load_json(os.path.join(cross, "ws", "probeset.json"))
        f["other tool's answers.jsonl: probeset.json sha256"] = doc.get("sha256") if isinstance(doc, dict) else None
    return f


def speed_facts(tool):
    f = {}
    status = out_lines(os.path.join(S, f"status-{tool}.out"))
    f["speed: lab status exit code"] = stripped(read(os.path.join(S, f"status-{tool}.rc")))
    f["speed: lab status cache line"] = next((l.split(";")[0] for l in status if l.startswith("cache:")), None)
    f["speed: lab status splits line"] = next((l for l in status if l.startswith("splits:")), None)
    select = out_lines(os.path.join(S, f"select-{tool}.out"))
    f["speed: lab select exit code"] = stripped(read(os.path.join(S, f"select-{tool}.rc")))
    f["speed: lab select first line"] = select[0] if select else None
    doc = load_json(os.path.join(S, f"select-{tool}.json"))
    doc = doc if isinstance(doc, dict) else {}
    f["speed: lab select --out score, threshold"] = f"{json.dumps(doc.get('score'), sort_keys=True)} >= {doc.get('threshold')}"
    f["speed: lab select --out sha256"] = doc.get("sha256")
    return f


# (name, kind, expected): "same" = equal across the tools; "expect" = each tool must show
# `expected`; "cross" = ours' value must equal python's `expected`-named fact and vice versa.
CHECKS = [
    ("optimize exit code", "expect", "0"),
    ("stdout says 'classifier mode' and 'sealed'", "expect", True),
    ("requests sent by optimize", "same", None),
    ("requests sent by a second optimize", "expect", "0"),
    ("files in the workspace", "same", None),
    ("lab status splits line", "same", None),
    ("lab status cache line", "same", None),
    ("train ids (lab ask --splits train)", "same", None),
    ("val ids (lab ask --splits val)", "same", None),
    ("test ids (lab freeze, lab report --splits test --ask)", "same", None),
    ("seed.json sha256", "same", None),
    ("seed.json threshold", "same", None),
    ("probeset.json sha256", "same", None),
    ("probeset.json score", "same", None),
    ("probeset.json threshold", "same", None),
    ("probeset.json questions", "same", None),
    ("printed val recall before -> after", "same", None),
    ("printed val recall@FPR before -> after", "same", None),
    ("printed spent", "same", None),
    ("report.md before/after rows", "same", None),
    ("result.json baseline -> best", "same", None),
    ("answers.jsonl entries", "same", None),
    ("lab freeze exit code", "expect", "0"),
    ("lab report --splits test exit code", "expect", "0"),
    ("lab report test row", "same", None),
    ("own answers.jsonl in a fresh workspace: requests", "expect", "0"),
    ("other tool's answers.jsonl: optimize exit code", "expect", "0"),
    ("other tool's answers.jsonl: requests", "expect", "0"),
    ("other tool's answers.jsonl: probeset.json sha256", "cross", "probeset.json sha256"),
    ("speed: lab status exit code", "expect", "0"),
    ("speed: lab status cache line", "same", None),
    ("speed: lab status splits line", "same", None),
    ("speed: lab select exit code", "expect", "0"),
    ("speed: lab select first line", "same", None),
    ("speed: lab select --out score, threshold", "same", None),
    ("speed: lab select --out sha256", "same", None),
]

facts = {t: {} for t in tools}
for t in tools:
    if os.path.isdir(os.path.join(P, t)):
        facts[t].update(parity_facts(t))
    if os.path.exists(os.path.join(S, f"status-{t}.rc")):
        facts[t].update(speed_facts(t))


def show(value):
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value) and len(", ".join(value)) <= 60:
            return ", ".join(value)
        digest = hashlib.sha256(json.dumps(value).encode()).hexdigest()[:8]
        return f"{len(value)} items (sha {digest})"
    text = "-" if value is None else str(value)
    text = text.replace("|", "\\|")
    return text if len(text) <= 90 else text[:87] + "..."


rows, details, failed = [], [], 0
for name, kind, expected in CHECKS:
    present = [t for t in tools if name in facts[t]]
    if not present:
        continue
    values = {t: facts[t].get(name) for t in tools}
    if kind == "expect":
        good = all(values[t] == expected for t in present)
        verdict = "ok" if good else f"DIFFERENT (want {expected})"
    elif kind == "cross":
        good = all(values[t] == facts[other].get(expected)
                   for t in present for other in tools if other != t)
        verdict = "ok" if good else "DIFFERENT"
    elif not both:
        good, verdict = True, "(python only)"
    else:
        good = values["python"] == values["ours"]
        verdict = "ok" if good else "DIFFERENT"
    if not good:
        failed += 1
        detail = [f"{name}:"]
        for t in tools:
            v = values[t]
            if isinstance(v, list) and both and kind == "same":
                mine = set(map(json.dumps, v or []))
                theirs = set(map(json.dumps, values["ours" if t == "python" else "python"] or []))
                detail.append(f"  only in {t} ({len(mine - theirs)}): " + ", ".join(sorted(mine - theirs)[:10]))
            else:
                detail.append(f"  {t}: {v!r}")
        details.append("\n".join(detail))
    rows.append(f"| {name} | {show(values.get('python'))} | {show(values.get('ours')) if both else '-'} | {verdict} |")

table = ["| check | python | ours | result |", "|---|---|---|---|"] + rows
print("\n".join(table))
for d in details:
    print(d, file=sys.stderr)

# Timings.
speed_lines = []
requests_during_speed = read(os.path.join(work, "speed-requests"))
if requests_during_speed is not None:
    speed_lines = ["| command | python | ours | python / ours |", "|---|---:|---:|---:|"]
    n = lambda key: f"{int(meta[key]):,}"
    for name, what in (("status", f"`lab status`: loads an answers.jsonl of {n('load_answers')} answers"),
                       ("select", f"`lab select`: pool of {n('questions')} questions, {n('examples')} examples, every answer cached")):
        times = load_json(os.path.join(S, f"times-{name}.json")) or {}
        med = {t: statistics.median(times[t]) for t in tools if times.get(t)}
        cells = [f"{med[t]:.3f} s (median of {len(times[t])})" if t in med else "not timed" for t in ("python", "ours")]
        ratio = f"{med['python'] / med['ours']:.1f}x" if "python" in med and "ours" in med and med["ours"] > 0 else "-"
        speed_lines.append(f"| {what} | {cells[0]} | {cells[1]} | {ratio} |")
    requests_during_speed = requests_during_speed.strip()
    verdict = "ok" if requests_during_speed == "0" else "DIFFERENT (want 0)"
    if requests_during_speed != "0":
        failed += 1
    new_files = sorted(set(out_lines(os.path.join(work, "speed-files-after"))) - set(out_lines(os.path.join(work, "speed-files-before"))))
    new_files = [f for f in new_files if not re.search(r"/(status|select)-(python|ours)\.(out|err|rc|req|json)$|/(hf|times)-\w+\.json$", f)]
    speed_lines += ["", f"System One requests during the speed runs: {requests_during_speed} ({verdict})."]
    if new_files:
        speed_lines.append("Files the commands added to the speed workspace: " + ", ".join(new_files) + ".")
    print()
    print("\n".join(speed_lines))

summary = f"{failed} check(s) DIFFERENT" if failed else "every check ok"
print(f"\n{summary}", file=sys.stderr)

if results_path:
    md = [
        "# Classifier mode: figures",
        "",
        f"Written by `bash bench/classifier_vs_python.sh` on {meta['date']} ({meta['machine']}).",
        f"Python tool: {meta['python_tool']}; ours: {meta['ours']}; timer: {meta['timer']}.",
        "System One: `sf-mock-server --systemone` on loopback (P(true) from a hash of state and question).",
        "",
    ]
    if any(n in facts[tools[0]] for n, _, _ in CHECKS if not n.startswith("speed:")):
        md += [f"## Parity on `{meta['example']}`", "",
               "Each tool in its own copy of the example (config pointed at the mock, workspace `ws`).", ""]
        md += [r for r in table[:2]] + [r for r in rows if not r.startswith("| speed:")] + [""]
    if speed_lines:
        md += ["## Speed", "",
               f"Files from `bench/classifier_data.py`: {n('examples')} hash-only examples, a pool of "
               f"{n('questions')} questions, {int(meta['examples']) * int(meta['questions']):,} cached answers "
               f"for `lab select` and {n('load_answers')} for `lab status`; timed runs per tool: {meta['runs']}.", ""]
        md += speed_lines + [""]
        md += ["Agreement on the speed files:", ""] + table[:2] + [r for r in rows if r.startswith("| speed:")] + [""]
    md += [f"Result: {summary}.", ""]
    with open(results_path, "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    print(f"wrote {results_path}", file=sys.stderr)
sys.exit(1 if failed else 0)
EOF
exit "$rc"
