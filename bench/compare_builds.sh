#!/usr/bin/env bash
# Two builds of ours, one after the other on this machine, each against the same Python tool
# and the same mock: the checkout as it is, and REV (a commit, built in a temporary git
# worktree outside the repository). For a change that must not change speed, such as a
# refactoring: "unchanged within noise" is then a pair of tables measured in one session.
#
#   bash bench/compare_builds.sh REV [OUT]
#
# Runs, for REV first and then for the checkout, each tree's own `evaluate_vs_python.sh`,
# `optimize_vs_python.sh` and `cache.sh` (each builds its tree's release binaries), and writes
# what they printed, under a heading per tree, to OUT (default bench/results/compare.md).
# A script that fails stops the comparison with its exit code.
#
# Environment: what the three scripts read (RUNS, LATENCY_MS, TASKS, PEER_VENV, ...), passed on
# unchanged; BASE_WORKTREE=DIR to reuse a worktree (and its release build) of REV.
set -euo pipefail

cd "$(dirname "$0")/.."
if (($# < 1)); then
    echo "usage: bash bench/compare_builds.sh REV [OUT]" >&2
    exit 2
fi
REV=$(git rev-parse --verify "$1^{commit}")
OUT=${2:-bench/results/compare.md}
HEAD_REV=$(git rev-parse HEAD)
BASE=${BASE_WORKTREE:-$(mktemp -d "${TMPDIR:-/tmp}/sf-bench-base.XXXXXX")}
made_worktree=""
cleanup() {
    if [[ -n "$made_worktree" ]]; then
        git worktree remove --force "$BASE" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
if [[ ! -d "$BASE/.git" && ! -f "$BASE/.git" ]]; then
    rmdir "$BASE" 2>/dev/null || true
    git worktree add --detach "$BASE" "$REV" >&2
    made_worktree=1
    # The build tools of the embedded model engine are per checkout (see scripts/setup-tools.sh).
    (cd "$BASE" && ./scripts/setup-tools.sh >&2)
fi

tmp=$(mktemp "${TMPDIR:-/tmp}/sf-compare.XXXXXX")
# shellcheck disable=SC2016 # the backticks are Markdown's
{
    printf '# Two builds of ours, measured one after the other\n\n'
    printf 'Written by `bash bench/compare_builds.sh %s` on %s (%s cores): the build of\n' \
        "$(git rev-parse --short "$REV")" "$(date -u +%Y-%m-%d)" "$(nproc)"
    printf '`%s` (before) and of `%s` (after, the checkout%s), each\n' \
        "$(git rev-parse --short "$REV")" "$(git rev-parse --short "$HEAD_REV")" \
        "$(git diff --quiet HEAD -- . && echo '' || echo ' with uncommitted changes')"
    printf 'through its own benchmark scripts, against the same Python tool and mock.\n'
} >"$tmp"

run_tree() {
    local label=$1 tree=$2
    printf '\n## %s: %s\n' "$label" "$(git -C "$tree" rev-parse --short HEAD)" >>"$tmp"
    for script in evaluate_vs_python.sh optimize_vs_python.sh cache.sh; do
        # shellcheck disable=SC2016 # the backticks are Markdown's
        printf '\n### `%s`\n\n' "$script" >>"$tmp"
        echo "== $label: $script" >&2
        bash "$tree/bench/$script" | tee -a "$tmp"
    done
}
run_tree before "$BASE"
run_tree after "$PWD"
mv "$tmp" "$OUT"
echo "wrote $OUT" >&2
