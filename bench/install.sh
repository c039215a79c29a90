#!/usr/bin/env bash
# From nothing to a first result with the wheel: how long a new user waits, ours beside the
# Python skill-factory 0.2.0's, in one run on this machine.
#
#   bash bench/install.sh
#
# Builds the wheel (scripts/build-wheel.sh; PROFILE=dev for the debug build's, whose run is
# slower) and the mock model server, and downloads the Python tool's wheels from PyPI into a
# wheelhouse once (none of that timed). Then RUNS times, each in a new folder, for each tool:
# (a) `python3 -m venv`, (b) `pip install --no-index` into it (from local files: a download is not
# timed), (c) a first `skill-factory evaluate` of examples/ticket-classifier on the mock model,
# which knows the dataset's answers (the same config, one model server, a PATH of the venv and the system only: no cargo, no
# target/); ours also (d) the first `optimize -c config.offline.yaml` of
# examples/invoice-extractor (scripted models: the time is the program's own), which the Python
# tool cannot run (it has no scripted provider). Checks that every run printed its score and
# exited 0.
#
# Writes bench/results/install.md (RESULTS=path elsewhere, RESULTS= for stdout only).
# Environment: RUNS=5, PROFILE=release, PYTHON=python3.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
RUNS=${RUNS:-5}
RESULTS=${RESULTS-bench/results/install.md}
PYTHON=${PYTHON:-python3}
profile=${PROFILE:-release}
PEER="skill-factory[openai,anthropic]==0.2.0"

step "building the wheel ($profile)"
wheel=$(scripts/build-wheel.sh)
bench_binaries
bench_workdir install
step "downloading the Python tool's wheels ($PEER) into a wheelhouse"
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-cache-dir \
    --dest "$WORK/wheelhouse" "$PEER"
# The mock knows the dataset's answers, so a first score means the whole way worked.
bench_start_mock "$WORK" --answers examples/ticket-classifier/dataset.jsonl

# Seconds since $1 (a `date +%s.%N`), 2 decimals.
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(date +%s.%N)"; }
sum() { python3 -c "import sys; print(f'{sum(map(float, sys.argv[1:])):.2f}')" "$@"; }

# The ticket classifier on the mock, as both tools read it.
cp -r examples/ticket-classifier "$WORK/tickets"
rm -rf "$WORK/tickets/runs" "$WORK/tickets/.skill-factory"
cat >"$WORK/tickets/config.mock.yaml" <<YAML
skill: seed_skill.md
dataset: dataset.jsonl
provider: {name: openai, model: m, base_url: "$BASE_URL/v1", api_key: k}
metric: {golden: {mode: exact}}
YAML

# Each run installs and evaluates with ours, then with the Python tool, so both meet the same
# load.
venvs=() pips=() evals=() firsts=() totals=() peer_venvs=() peer_pips=() peer_evals=() peer_totals=()
load=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq "$RUNS"); do
    for tool in ours peer; do
        step "run $run of $RUNS: $tool"
        dir=$WORK/$tool-$run
        mkdir -p "$dir"
        started=$(date +%s.%N)
        "$PYTHON" -m venv "$dir/venv"
        venv=$(since "$started")
        started=$(date +%s.%N)
        if [[ "$tool" == ours ]]; then
            "$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir --no-index "$wheel"
        else
            "$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir --no-index \
                --find-links "$WORK/wheelhouse" "$PEER"
        fi
        pip=$(since "$started")
        cp -r "$WORK/tickets" "$dir/tickets"
        started=$(date +%s.%N)
        if ! (cd "$dir/tickets" && PATH="$dir/venv/bin:/usr/bin:/bin" skill-factory evaluate \
            -c config.mock.yaml >"$dir/evaluate.log" 2>&1); then
            cat "$dir/evaluate.log" >&2
            echo "run $run: $tool's evaluate failed" >&2
            exit 1
        fi
        evaluated=$(since "$started")
        score=$(grep -m1 -o 'Score: [0-9.]*' "$dir/evaluate.log" | cut -d' ' -f2)
        [[ -n "$score" ]] || {
            cat "$dir/evaluate.log" >&2
            echo "run $run: no 'Score:' in $tool's evaluate" >&2
            exit 1
        }
        if [[ "$tool" == ours ]]; then
            venvs+=("$venv") pips+=("$pip") evals+=("$evaluated") totals+=("$(sum "$venv" "$pip" "$evaluated")")
            ours_score=$score
            cp -r examples/invoice-extractor "$dir/example"
            rm -rf "$dir/example/runs" "$dir/example/.skill-factory"
            started=$(date +%s.%N)
            if ! PATH="$dir/venv/bin:/usr/bin:/bin" skill-factory optimize \
                -c "$dir/example/config.offline.yaml" -o "$dir/runs" >"$dir/optimize.log" 2>&1; then
                cat "$dir/optimize.log" >&2
                echo "run $run: optimize failed" >&2
                exit 1
            fi
            firsts+=("$(since "$started")")
            grep -q 'Best score' "$dir/optimize.log" || {
                cat "$dir/optimize.log" >&2
                echo "run $run: no 'Best score' in the output" >&2
                exit 1
            }
            version=$(PATH="$dir/venv/bin:/usr/bin:/bin" skill-factory --version)
            best=$(sed -n 's/^- \*\*Best score:\*\* //p' "$dir/optimize.log")
        else
            peer_venvs+=("$venv") peer_pips+=("$pip") peer_evals+=("$evaluated") peer_totals+=("$(sum "$venv" "$pip" "$evaluated")")
            peer_score=$score
        fi
    done
done

median() { printf '%.2f' "$(printf '%s\n' "$@" | bench_median)"; }
list() { local IFS=,; local joined="$*"; echo "${joined//,/, }"; }
size=$(python3 -c "import os, sys; print(f'{os.path.getsize(sys.argv[1]) / 1e6:.1f}')" "$wheel")
installed=$(du -sm "$WORK/ours-1/venv" | cut -f1)
peer_installed=$(du -sm "$WORK/peer-1/venv" | cut -f1)
peer_files=$(find "$WORK/wheelhouse" -name '*.whl' | wc -l)
ratio=$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.1f}')" "$(median "${totals[@]}")" "$(median "${peer_totals[@]}")")

out=$WORK/install.md
{
    echo "# Install: from the wheel to a first result"
    echo
    echo "Measured by \`bash bench/install.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores (load average $load at the start), $("$PYTHON" --version), $RUNS runs of each tool, taking turns."
    echo "Ours: \`$(basename "$wheel")\` ($size MB, a $profile build: $version), built by \`scripts/build-wheel.sh\` before the runs and not timed."
    if [[ "$profile" != release ]]; then
        echo "A $profile build's binary is unoptimized: its run is slower than a release wheel's, its install about the same."
    fi
    echo "The Python tool: \`pip install \"$PEER\"\` ($peer_files wheels, downloaded from PyPI into a wheelhouse before the runs and not timed)."
    echo "Both evaluate the same config: examples/ticket-classifier's seed skill and dataset on \`sf-mock-server --answers dataset.jsonl\` (OpenAI's wire format on 127.0.0.1, answering each task with its expected label), golden exact."
    echo
    echo "| step | ours: runs (s) | ours: median (s) | Python tool: runs (s) | Python tool: median (s) |"
    echo "| :--- | :--- | ---: | :--- | ---: |"
    echo "| (a) \`python3 -m venv\`, in a new folder | $(list "${venvs[@]}") | $(median "${venvs[@]}") | $(list "${peer_venvs[@]}") | $(median "${peer_venvs[@]}") |"
    echo "| (b) \`pip install --no-index\` into it | $(list "${pips[@]}") | $(median "${pips[@]}") | $(list "${peer_pips[@]}") | $(median "${peer_pips[@]}") |"
    echo "| (c) the first \`skill-factory evaluate -c config.mock.yaml\` | $(list "${evals[@]}") | $(median "${evals[@]}") | $(list "${peer_evals[@]}") | $(median "${peer_evals[@]}") |"
    echo "| (a) + (b) + (c): from nothing to a first result | $(list "${totals[@]}") | $(median "${totals[@]}") | $(list "${peer_totals[@]}") | $(median "${peer_totals[@]}") |"
    echo "| (d) ours only: the first \`skill-factory optimize -c examples/invoice-extractor/config.offline.yaml\` | $(list "${firsts[@]}") | $(median "${firsts[@]}") | the Python tool has no scripted provider | |"
    echo
    echo "From nothing to a first score: ours $(median "${totals[@]}") s, the Python tool's $(median "${peer_totals[@]}") s (${ratio}×, medians)."
    echo "Every run exited 0 and printed its score (ours \`Score: $ours_score\`, the Python tool's \`Score: $peer_score\`; ours' optimize \`Best score\` $best), with a PATH of the venv's \`bin/\` and \`/usr/bin:/bin\` only (no cargo, no target folder). Installed, our venv holds ${installed} MB, the Python tool's ${peer_installed} MB. The wheels came from the disk: a download from an index adds its transfer time to both."
} >"$out"
cat "$out"
if [[ -n "$RESULTS" ]]; then
    cp "$out" "$RESULTS"
    echo "wrote $RESULTS" >&2
fi
