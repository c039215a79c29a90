#!/usr/bin/env bash
# Classifier mode's reflective rounds: ours against the Python skill-factory 0.2.0 from PyPI,
# live, on one loopback System One (`sf-mock-server --systemone`: P(true) is a hash of the
# state and the question) and one scripted proposer per tool (a loopback OpenAI-compatible
# server answering the same replies in the same order and logging every request).
#
#   bash bench/classifier_reflect_vs_python.sh
#
# The run is the reference fixture's (crates/skill-factory-lab/tests/fixtures/python/inputs/
# reflect): examples/pr-mismatch with a 1,500-character seed budget (so the digest has
# system-level causes), a cap of 2,400, four rounds and four scripted replies (a usable
# proposal with a new framing and a budget change, a reply with no JSON, one with comments
# and trailing commas, one with an unknown framing). Compared, check by check:
# - what each proposer received: every request's system and user message, temperature and
#   max_tokens (the failure digest is the user message's middle);
# - every round of history.json: change, candidate, score, accepted, reasons, new questions,
#   state budget;
# - the best probe set's content hash;
# - the verdicts of each tool's Python export of its best, on 2,000 seeded answer maps over
#   the probe set's questions (some answers missing), and their scores (bit for bit, and within
#   1e-12: our exports sum as the lab does, compensated; the Python tool's add plainly).
# Then the wall time of each tool's whole `optimize`. Writes bench/results/classifier-reflect.md
# and exits 1 when a check differs.
#
# Environment: PROFILE (default release), PEER_VENV (see bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

FIXTURE=crates/skill-factory-lab/tests/fixtures/python
bench_workdir reflect
LLM_PIDS=()
# shellcheck disable=SC2329 # run by the EXIT trap below
stop_all() {
    for pid in "${LLM_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    bench_cleanup
}
trap stop_all EXIT

step "building our binaries (${PROFILE:-release})"
bench_build
step "the Python skill-factory 0.2.0"
bench_peer
step "sf-mock-server --systemone"
bench_start_mock "$WORK" --systemone
SYSTEMONE_URL=$BASE_URL/v1/systemone

# A copy of the fixture's reflective run for one tool, with its own scripted proposer; prints
# the proposer's URL.
prepare() {
    local dir=$WORK/$1
    mkdir -p "$dir"
    cp examples/pr-mismatch/{dataset.jsonl,candidates.json} "$dir/"
    cp "$FIXTURE/inputs/reflect/seed_probeset.json" "$dir/"
    python3 "$FIXTURE/fake_llm.py" --replies "$FIXTURE/inputs/reflect/replies.json" \
        --log "$dir/prompts.jsonl" >"$dir/llm.out" 2>"$dir/llm.err" &
    LLM_PIDS+=($!)
    local url=""
    for _ in $(seq 100); do
        url=$(sed -n 's/^listening on //p' "$dir/llm.out")
        [[ -n "$url" ]] && break
        sleep 0.1
    done
    [[ -n "$url" ]] || { cat "$dir/llm.err" >&2; exit 2; }
    sed -e "s#@SYSTEMONE_URL@#$SYSTEMONE_URL#g" -e "s#@LLM_URL@#$url#g" \
        "$FIXTURE/inputs/reflect/config.yaml.in" >"$dir/config.yaml"
}

# Runs `$@` in the tool's folder, its seconds into $1/seconds.
timed() {
    local dir=$WORK/$1
    shift
    local started
    started=$(date +%s.%N)
    (cd "$dir" && env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u TYPESAFE_API_KEY \
        NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 "$@") >"$dir/optimize.out" 2>"$dir/optimize.err" \
        || { cat "$dir/optimize.err" >&2; exit 2; }
    python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" \
        "$started" "$(date +%s.%N)" >"$dir/seconds"
}

step "the Python tool's reflective run"
prepare theirs
timed theirs "$PYTHON_TOOL" optimize -c config.yaml
step "ours"
prepare ours
timed ours "$OURS" optimize -c config.yaml

step "exports of each tool's best"
"$PYTHON_TOOL" lab export --probeset "$WORK/theirs/ws/probeset.json" -o "$WORK/theirs/best.py" >/dev/null
"$OURS" lab export --probeset "$WORK/ours/ws/probeset.json" -o "$WORK/ours/best.py" >/dev/null

status=0
python3 - "$WORK" "${PROFILE:-release}" >bench/results/classifier-reflect.md <<'EOF' || status=$?
import importlib.util, json, math, random, sys
work, profile = sys.argv[1], sys.argv[2]
def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]
def sent(tool):
    out = []
    for r in lines(f"{work}/{tool}/prompts.jsonl"):
        b = r["body"]
        out.append({"system": b["messages"][0]["content"], "user": b["messages"][1]["content"],
                    "temperature": b.get("temperature"), "max_tokens": b.get("max_tokens")})
    return out
ours, theirs = sent("ours"), sent("theirs")
checks = []
def check(name, ok, detail=""):
    checks.append((name, ok, detail))
check("proposer requests", len(ours) == len(theirs), f"{len(ours)} vs {len(theirs)}")
for i, (o, t) in enumerate(zip(ours, theirs)):
    for key in ("system", "user", "temperature", "max_tokens"):
        check(f"request {i + 1}: {key}", o[key] == t[key])
hist = {tool: json.load(open(f"{work}/{tool}/ws/history.json")) for tool in ("ours", "theirs")}
check("rounds", len(hist["ours"]) == len(hist["theirs"]), f"{len(hist['ours'])} vs {len(hist['theirs'])}")
for o, t in zip(hist["ours"], hist["theirs"]):
    for key in ("change", "candidate", "score", "accepted", "reasons", "new_questions", "state_budget"):
        check(f"round {t['round']}: {key}", o[key] == t[key], f"{o[key]!r} vs {t[key]!r}" if o[key] != t[key] else "")
best = {tool: json.load(open(f"{work}/{tool}/ws/probeset.json")) for tool in ("ours", "theirs")}
check("best probe set (sha256)", best["ours"]["sha256"] == best["theirs"]["sha256"], best["ours"]["sha256"][:12])
def module(tool):
    spec = importlib.util.spec_from_file_location(tool, f"{work}/{tool}/best.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
mo, mt = module("ours"), module("theirs")
rng = random.Random(7)
qids = list(mo.QUESTIONS)
same_flags = same_bits = close = 0
N = 2000
for _ in range(N):
    answers = {q: round(rng.random(), 4) for q in qids if rng.random() > 0.05}
    so, st = mo.score(answers), mt.score(answers)
    same_flags += mo.flags(answers) == mt.flags(answers)
    both_nan = math.isnan(so) and math.isnan(st)
    same_bits += both_nan or so == st
    close += both_nan or abs(so - st) <= 1e-12
check(f"export verdicts on {N} answer maps", same_flags == N, f"{same_flags}/{N} agree")
check(f"export scores within 1e-12", close == N, f"{close}/{N}")
seconds = {tool: float(open(f"{work}/{tool}/seconds").read()) for tool in ("ours", "theirs")}
failed = [c for c in checks if not c[1]]
print("# Reflective rounds: ours and the Python tool, side by side\n")
print(f"Written by `bash bench/classifier_reflect_vs_python.sh` ({profile} build), on one loopback System One "
      "(`sf-mock-server --systemone`) and one scripted proposer per tool replaying the reference fixture's four replies.\n")
print(f"**{len(checks) - len(failed)} of {len(checks)} checks agree.**\n")
print("| check | result | detail |\n|---|---|---|")
for name, ok, detail in checks:
    print(f"| {name} | {'ok' if ok else 'DIFFERENT'} | {detail} |")
print(f"\nScores bit for bit the same on {same_bits} of {N} answer maps (the rest within 1e-12: our exports sum "
      "with the lab's compensated summation, the Python tool's add plainly).\n")
print("| `optimize` wall time | ours | Python tool | ratio |\n|---|---:|---:|---:|")
print(f"| reflective run (seed, selection, 4 proposals, asks) | {seconds['ours']:.2f} s | {seconds['theirs']:.2f} s | "
      f"{seconds['theirs'] / seconds['ours']:.1f}x |")
sys.exit(1 if failed else 0)
EOF
cat bench/results/classifier-reflect.md
exit $status
