#!/usr/bin/env bash
# One skill on several targets: the transfer matrix, and optimizing for one target or several.
#
#   bash bench/transfer.sh
#
# The data: 30 receipt tasks in three kinds (tax, tip, discount; 8 held out as the test split,
# never shown to the search), answered by sf-mock-server's needs model under three model names,
# the three targets:
#   a  needs each kind's rule in the skill;
#   b  answers every kind without rules, but the tax and tip rules, written together, cancel
#      each other on it (a rule another model needs hurts this one);
#   c  needs the tax and tip rules, and answers discounts without one.
#
# Part 1, the matrix: 3 skills (the seed, one holding the tax and tip rules, no skill at all)
# × 3 targets on the test split, in one `evaluate`, against the Python skill-factory 0.2.0,
# which has one target per config: the same 9 cells are 9 runs of its `evaluate`, each with its
# own config. Both on the same mock in the same run; wall times and their ratio.
#
# Part 2, optimizing (gepa, seeds 0 1 2): for a alone (b and c measured, `optimize: false`), and
# for all three under `objective.aggregate: mean` and `min`. Each target's held-out score of the
# seed → the best, the edits kept, the rollouts scored and the wall time.
#
# Writes bench/results/transfer.md (RESULTS=path elsewhere, RESULTS= for stdout only).
# Environment: SEEDS="0 1 2", PROFILE=release.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
SEEDS=${SEEDS:-0 1 2}
RESULTS=${RESULTS-bench/results/transfer.md}

bench_binaries
bench_peer
bench_workdir transfer

# The tasks, the seed, and the rules of the mock's needs model (`(need <tag>)`, the tag the
# first three bytes of the kind's SHA-256).
python3 - "$WORK" <<'PY'
import hashlib, json, sys
work = sys.argv[1]
with open(f"{work}/data.jsonl", "w") as out:
    for n in range(10):
        for kind in ("tax", "tip", "discount"):
            out.write(json.dumps({
                "id": f"{kind}-{n}",
                "input": f"Receipt {n} for table {10 + n}: which adjustment does the {kind} line make?",
                "expected": kind,
            }) + "\n")
front = "---\nname: receipt-adjustments\ndescription: Names the adjustment a receipt line makes. Use when reading receipts.\n---\n\nSay the adjustment in one word.\n"
rule = lambda kind: (lambda tag: f"- Inputs of kind {tag} follow their own convention: apply it (need {tag}).")(
    hashlib.sha256(kind.encode()).hexdigest()[:6])
open(f"{work}/seed.md", "w").write(front)
open(f"{work}/ruled.md", "w").write(front + rule("tax") + "\n" + rule("tip") + "\n")
open(f"{work}/none.md", "w").write("---\nname: none\ndescription: No instructions.\n---\n")
PY

bench_start_mock "$WORK" --answers "$WORK/data.jsonl" --needs \
    --model-needs "b:free=tax+tip+discount:conflict=tax,tip" \
    --model-needs "c:free=discount"
export OPENAI_API_KEY=bench-not-a-secret
unset OPENAI_BASE_URL SKILL_FACTORY_TARGET_MODEL SKILL_FACTORY_JUDGE_MODEL

# Our config: $1 the targets list, $2 more lines.
ours_config() {
    cat <<EOF
skill: seed.md
dataset: data.jsonl
val_fraction: 0.34
test_fraction: 0.25
seed: 3
provider: {name: openai-compatible, model: a, base_url: "$BASE_URL/v1", api_key: k}
targets:
$1
metric: {golden: {mode: exact}}
harness: {max_workers: 8}
cache: {mode: off}
$2
EOF
}
all="  - {name: a, provider: {model: a}}
  - {name: b, provider: {model: b}}
  - {name: c, provider: {model: c}}"
ours_config "$all" "" >"$WORK/matrix.yaml"

out=$WORK/table.md
{
    echo "# Transfer: one skill on several targets"
    echo
    echo "Measured by \`bash bench/transfer.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, ${PROFILE:-release} build, against sf-mock-server's needs model under three model names: a needs each kind's rule; b answers every kind without rules, but the tax and tip rules written together cancel each other on it; c needs the tax and tip rules only. 30 receipt tasks in three kinds, 8 held out as the test split."
    echo
    echo "## The matrix: 3 skills × 3 targets"
    echo
} >"$out"

started=$(date +%s.%N)
"$OURS" evaluate -c "$WORK/matrix.yaml" --split test --skill "$WORK/ruled.md" --json \
    >"$WORK/matrix.json" 2>"$WORK/matrix.err"
ended=$(date +%s.%N)
ours_seconds=$(python3 -c "print(f'{$ended - $started:.2f}')")
"$OURS" evaluate -c "$WORK/matrix.yaml" --split test --skill "$WORK/ruled.md" \
    >"$WORK/matrix.txt" 2>/dev/null
{
    echo "\`skill-factory evaluate -c matrix.yaml --split test --skill ruled.md\`, one command, printed:"
    echo
    echo '```text'
    cat "$WORK/matrix.txt"
    echo '```'
    echo
} >>"$out"

# The Python tool: one config per target, and the skill of each row as its seed. Its test
# split is not ours (it has none), so each of its runs scores the whole dataset: 30 tasks.
peer_started=$(date +%s.%N)
peer_cells=()
for skill in seed ruled none; do
    for model in a b c; do
        cat >"$WORK/peer-$skill-$model.yaml" <<EOF
skill: $skill.md
dataset: data.jsonl
provider: {name: openai, model: $model, base_url: "$BASE_URL/v1"}
metric: {golden: {mode: exact}}
harness: {max_workers: 8}
EOF
        (cd "$WORK" && "$PYTHON_TOOL" evaluate -c "peer-$skill-$model.yaml") \
            >"$WORK/peer-$skill-$model.out" 2>&1
        peer_cells+=("$(grep -m1 -o 'Score: [0-9.]*' "$WORK/peer-$skill-$model.out" | cut -d' ' -f2)")
    done
done
peer_ended=$(date +%s.%N)
peer_seconds=$(python3 -c "print(f'{$peer_ended - $peer_started:.2f}')")
# Ours on the whole dataset too, for the same cells.
"$OURS" evaluate -c "$WORK/matrix.yaml" --split all --skill "$WORK/ruled.md" --json \
    >"$WORK/matrix-all.json" 2>/dev/null
python3 - "$WORK/matrix-all.json" "${peer_cells[@]}" >>"$out" <<'PY'
import json, sys
matrix = json.load(open(sys.argv[1]))
peer = sys.argv[2:]
print("The same 9 cells on all 30 tasks, ours (one `evaluate`) and the Python skill-factory 0.2.0's (9 `evaluate` runs, a config each):")
print()
print("| skill | " + " | ".join(f"{t} (ours / Python tool)" for t in matrix["targets"]) + " |")
print("| :--- |" + " ---: |" * len(matrix["targets"]))
for r, row in enumerate(matrix["rows"]):
    cells = [f'{row["targets"][t]["score"]:.3f} / {float(peer[r * 3 + c]):.3f}' for c, t in enumerate(matrix["targets"])]
    print(f'| {row["skill"]} | ' + " | ".join(cells) + " |")
print()
PY
{
    echo "| tool | commands | wall time (s) |"
    echo "| :--- | ---: | ---: |"
    echo "| ours, the test split's 3 × 3 matrix | 1 | $ours_seconds |"
    echo "| Python skill-factory 0.2.0, 3 × 3 on all 30 tasks | 9 | $peer_seconds |"
    echo
} >>"$out"
ours_all_started=$(date +%s.%N)
"$OURS" evaluate -c "$WORK/matrix.yaml" --split all --skill "$WORK/ruled.md" >/dev/null 2>&1
ours_all_ended=$(date +%s.%N)
python3 - "$ours_all_started" "$ours_all_ended" "$peer_seconds" >>"$out" <<'PY'
import sys
ours = float(sys.argv[2]) - float(sys.argv[1])
peer = float(sys.argv[3])
print(f"On the same 30 tasks ours takes {ours:.2f} s for the 9 cells, the Python tool {peer:.2f} s: {peer / ours:.1f}× (the Python tool has no notion of targets: a matrix is a config and a run per cell, and it prints no interval).")
print()
PY

{
    echo "## Optimizing for one target, or for all three"
    echo
    echo "gepa, each target's held-out (test) score of the seed → the best; \"kept\" counts the edits kept, then rollouts scored and wall time."
    echo
    echo "| objective | seed | a | b | c | kept | rollouts | wall time (s) |"
    echo "| :--- | ---: | :---: | :---: | :---: | ---: | ---: | ---: |"
} >>"$out"
only_a="  - {name: a, provider: {model: a}}
  - {name: b, provider: {model: b}, optimize: false}
  - {name: c, provider: {model: c}, optimize: false}"
for objective in "a only" mean min; do
    for seed in $SEEDS; do
        name=${objective// /-}-$seed
        case $objective in
        "a only") ours_config "$only_a" "" ;;
        *) ours_config "$all" "objective: {aggregate: $objective}" ;;
        esac >"$WORK/$name.yaml"
        echo "optimizer: {name: gepa, seed: $seed, rounds: 12, max_metric_calls: 3000, minibatch_size: 2}" \
            >>"$WORK/$name.yaml"
        started=$(date +%s.%N)
        "$OURS" optimize -c "$WORK/$name.yaml" -o "$WORK/runs/$name" >"$WORK/$name.log" 2>&1
        ended=$(date +%s.%N)
        python3 - "$WORK/runs/$name/latest/result.json" "$objective" "$seed" "$started" "$ended" \
            >>"$out" <<'PY'
import json, sys
path = sys.argv[1]
result = json.load(open(path))
targets = result["targets"]
cell = lambda t: f'{targets[t]["seed"]["mean"]:.3f} → {targets[t]["best"]["mean"]:.3f}' + ("" if targets[t]["optimize"] else " (measured)")
rollouts = sum(1 for _ in open(path.replace("result.json", "rollouts.jsonl")))
kept = sum(1 for r in result["history"] if r.get("accepted")) - 1
print(f"| {sys.argv[2]} | {sys.argv[3]} | {cell('a')} | {cell('b')} | {cell('c')} | {kept} | {rollouts} | {float(sys.argv[5]) - float(sys.argv[4]):.2f} |")
PY
    done
done
python3 - "$WORK/runs" >>"$out" <<'PY'
import glob, json, sys
fell = {}
for path in glob.glob(f"{sys.argv[1]}/*/latest/result.json"):
    objective = path.split("/")[-3].rsplit("-", 1)[0].replace("-", " ")
    b = json.load(open(path))["targets"]["b"]
    runs, fallen = fell.get(objective, (0, 0))
    fell[objective] = (runs + 1, fallen + (b["best"]["mean"] < b["seed"]["mean"]))
say = lambda o: f"{fell[o][1]} of {fell[o][0]}"
print()
print(f"b fell in {say('a only')} runs optimized for a alone (where only its measured column shows it), "
      f"in {say('mean')} under `mean` (an edit whose gains on a and c outweigh its loss on b is kept), "
      f"and in {say('min')} under `min`, which keeps no edit that loses on any target.")
PY

cat "$out"
if [[ -n "$RESULTS" ]]; then
    cp "$out" "$RESULTS"
    echo "written to $RESULTS" >&2
fi
