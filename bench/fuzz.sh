#!/usr/bin/env bash
# Fuzzes every parser a user or a model feeds (fuzz/fuzz_targets/: SKILL.md, dataset JSONL,
# config YAML, the metrics' JSON extraction, both providers' response bodies, edit patches,
# probe sets and score expressions, policies, proposer replies, answers.jsonl, trigger sets,
# agent CLIs' event streams and routing replies, and the run folder files the dashboard reads
# back) with libFuzzer, each for a bounded time, starting from
# the seeds in fuzz/corpus/<target>/ (copied: the committed corpus only changes by hand).
#
#   bash bench/fuzz.sh                    # 60 s per target, writes bench/results/fuzz.md
#   SECONDS_PER_TARGET=10 bash bench/fuzz.sh   # the short version CI runs
#   TARGETS="skill_md policy" bash bench/fuzz.sh
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). A crash
# stops the script with exit 1 and leaves its input in fuzz/artifacts/<target>/: turn it into a
# regression test of the crate that failed, then fix the parser.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-60}
ALL=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^skill-factory-fuzz$')
TARGETS=${TARGETS:-$ALL}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sf-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "== building the fuzz targets (nightly, release, sanitizers)" >&2
cargo +nightly fuzz build -O >&2

rows=()
failed=0
for target in $TARGETS; do
    echo "== $target for $SECONDS_PER_TARGET s" >&2
    # A target whose input is several strings (arbitrary's encoding) has no hand-made seeds.
    mkdir -p "$WORK/$target"
    if [[ -d "fuzz/corpus/$target" ]]; then
        cp -r "fuzz/corpus/$target/." "$WORK/$target/"
    fi
    status=0
    cargo +nightly fuzz run -O "$target" "$WORK/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 >"$WORK/$target.log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$target.log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$WORK/$target.log" | tail -n 1 | sed 's/cov: //')
    seeds=0
    if [[ -d "fuzz/corpus/$target" ]]; then
        seeds=$(find "fuzz/corpus/$target" -type f | wc -l)
    fi
    found=$(find "$WORK/$target" -type f | wc -l)
    if [[ $status -ne 0 ]]; then
        failed=1
        tail -n 40 "$WORK/$target.log" >&2
        rows+=("| \`$target\` | CRASH (exit $status) | ${runs:-?} | ${cov:-?} | $seeds | $found |")
    else
        rows+=("| \`$target\` | ok | ${runs:-?} | ${cov:-?} | $seeds | $found |")
    fi
done

{
    echo "# Fuzzing"
    echo
    echo "Written by \`bash bench/fuzz.sh\` (libFuzzer through cargo-fuzz, nightly, release with"
    echo "debug assertions off, $SECONDS_PER_TARGET s per target on one core of this machine)."
    echo
    echo "| target | outcome | executions | coverage (edges) | seed inputs | corpus after |"
    echo "|---|---|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} >"$WORK/fuzz.md"
if [[ -z "${NO_RESULTS:-}" ]]; then
    cp "$WORK/fuzz.md" bench/results/fuzz.md
    python3 bench/reliability.py
fi
cat "$WORK/fuzz.md"
exit $failed
