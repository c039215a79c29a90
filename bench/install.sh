#!/usr/bin/env bash
# From nothing to a first result with the wheel: how long a new user waits.
#
#   bash bench/install.sh
#
# Builds the wheel (scripts/build-wheel.sh; PROFILE=dev for the debug build's, whose run is
# slower), then RUNS times, each in a new folder: (a) `python3 -m venv`, (b) `pip install` of the
# wheel into it (the local file, no index: a download is not timed), (c) the first `skill-factory
# optimize -c config.offline.yaml` of examples/invoice-extractor (scripted models, so the time
# is the program's own) in a fresh copy of the example, with a PATH of the venv and the system
# only (no cargo, no target/). Checks that every run printed `Best score` and exited 0.
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

step "building the wheel ($profile)"
wheel=$(scripts/build-wheel.sh)
bench_workdir install

# Seconds since $1 (a `date +%s.%N`), 2 decimals.
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(date +%s.%N)"; }

venvs=() pips=() firsts=() totals=()
load=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq "$RUNS"); do
    step "run $run of $RUNS"
    dir=$WORK/run-$run
    mkdir -p "$dir"
    started=$(date +%s.%N)
    "$PYTHON" -m venv "$dir/venv"
    venvs+=("$(since "$started")")
    started=$(date +%s.%N)
    "$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir --no-index "$wheel"
    pips+=("$(since "$started")")

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
    totals+=("$(python3 -c "print(f'{${venvs[-1]} + ${pips[-1]} + ${firsts[-1]}:.2f}')")")
    version=$(PATH="$dir/venv/bin:/usr/bin:/bin" skill-factory --version)
    best=$(sed -n 's/^- \*\*Best score:\*\* //p' "$dir/optimize.log")
done

median() { printf '%.2f' "$(printf '%s\n' "$@" | bench_median)"; }
list() { local IFS=,; local joined="$*"; echo "${joined//,/, }"; }
size=$(python3 -c "import os, sys; print(f'{os.path.getsize(sys.argv[1]) / 1e6:.1f}')" "$wheel")
installed=$(du -sm "$WORK/run-1/venv" | cut -f1)

out=$WORK/install.md
{
    echo "# Install: from the wheel to a first result"
    echo
    echo "Measured by \`bash bench/install.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores (load average $load at the start), $("$PYTHON" --version), $RUNS runs."
    echo "The wheel: \`$(basename "$wheel")\` ($size MB, a $profile build: $version), built by \`scripts/build-wheel.sh\` before the runs and not timed."
    if [[ "$profile" != release ]]; then
        echo "A $profile build's binary is unoptimized: its run is slower than a release wheel's, its install about the same."
    fi
    echo
    echo "| step | runs (s) | median (s) |"
    echo "| :--- | :--- | ---: |"
    echo "| (a) \`python3 -m venv\`, in a new folder | $(list "${venvs[@]}") | $(median "${venvs[@]}") |"
    echo "| (b) \`pip install --no-index\` of the wheel into it | $(list "${pips[@]}") | $(median "${pips[@]}") |"
    echo "| (c) the first \`skill-factory optimize -c examples/invoice-extractor/config.offline.yaml\`, in a fresh copy of the example | $(list "${firsts[@]}") | $(median "${firsts[@]}") |"
    echo "| (a) + (b) + (c): from nothing to a first result | $(list "${totals[@]}") | $(median "${totals[@]}") |"
    echo
    echo "Every run printed \`Best score\` ($best) and exited 0, with a PATH of the venv's \`bin/\` and \`/usr/bin:/bin\` only (no cargo, no target folder). The venv holds ${installed} MB once installed. The wheel came from the disk: a download from an index adds its transfer time."
} >"$out"
cat "$out"
if [[ -n "$RESULTS" ]]; then
    cp "$out" "$RESULTS"
    echo "wrote $RESULTS" >&2
fi
