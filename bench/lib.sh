# shellcheck shell=bash
# Helpers shared by the benchmark scripts (source it; it defines functions only).
#
#   bench_build                  a build (release unless PROFILE says) of our binary and the
#                                mock; sets OURS and MOCK
#   bench_binaries               OURS and MOCK as the caller's environment gives them (both
#                                set: nothing is built), else bench_build's; checked, absolute
#   bench_peer                   the Python skill-factory 0.2.0 in a venv outside the repository
#                                (made on first use); sets PYTHON_TOOL
#   bench_start_mock DIR ARGS..  starts sf-mock-server on a free port with ARGS, logging into
#                                DIR; sets MOCK_PID and BASE_URL (the caller kills MOCK_PID)
#   start_mock DIR ARGS..        bench_start_mock for a script that runs several mocks: each one
#                                is remembered in MOCK_PIDS for stop_mocks
#   stop_mocks                   stops every mock start_mock started
#   bench_finish                 stop_mocks, then the work folder removed, or kept (and said)
#                                when KEEP_WORK is set: an EXIT trap's ending
#   bench_requests               requests the mock has received so far (GET /stats: chat
#                                requests, or System One requests under --systemone)
#   bench_median                 the median of the numbers on stdin, 3 decimals
#   bench_workdir NAME           a fresh temporary folder in WORK, removed (and the mock
#                                stopped) when the script exits; defines `step`
#   bench_stop_mock              stops the mock bench_start_mock started (MOCK_PID), if any
#   bench_stop PID..             stops each process: kills it, then waits for it to end
#   bench_invoice_files          the invoice example's config lines naming its skill and dataset
#                                (copied into the work folder) with its split fraction and seed
#   bench_invoice_metric C F     the invoice example's metric block for a config (golden
#                                json_equal, two programmatic checks, a judge), its judge's
#                                correctness and format criteria described by C and F
#   bench_mock_task_config T O S B  the config of a run of optimizer O (seed S, B metric calls)
#                                on task folder T of bench/optimizers_data.py against the mock
#                                at BASE_URL
#
# Environment: PEER_VENV (default ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/peer, the
# venv scripts/setup-peer.sh makes, shared with the tests), CARGO_TARGET_DIR, PROFILE (the cargo
# profile bench_build builds, default release; `debug` for a quick look whose wall times are not
# comparable).

bench_build() {
    local profile=${PROFILE:-release} folder=${PROFILE:-release}
    # cargo's `dev` profile builds into target/debug.
    if [[ "$profile" == dev || "$profile" == debug ]]; then
        profile=dev
        folder=debug
    fi
    cargo build --profile "$profile" --quiet -p skill-factory-cli -p skill-factory-mock
    local target_dir=${CARGO_TARGET_DIR:-$(pwd)/target}
    OURS=$target_dir/$folder/skill-factory
    MOCK=$target_dir/$folder/sf-mock-server
}

bench_binaries() {
    if [[ -n "${OURS:-}" && -n "${MOCK:-}" ]]; then
        echo "using OURS=$OURS and MOCK=$MOCK (nothing built)" >&2
    else
        local given_ours=${OURS:-} given_mock=${MOCK:-}
        echo "building the binaries (${PROFILE:-release})" >&2
        bench_build
        OURS=${given_ours:-$OURS}
        MOCK=${given_mock:-$MOCK}
    fi
    local binary
    for binary in "$OURS" "$MOCK"; do
        if [[ ! -x "$binary" ]]; then
            echo "$binary is not an executable" >&2
            return 2
        fi
    done
    OURS=$(realpath "$OURS")
    MOCK=$(realpath "$MOCK")
}

bench_peer() {
    local python
    python=$(scripts/setup-peer.sh)
    # shellcheck disable=SC2034 # read by the scripts that call it
    PYTHON_TOOL=$(dirname "$python")/skill-factory
}

bench_start_mock() {
    local dir=$1
    shift
    "$MOCK" --port 0 "$@" >"$dir/mock.out" 2>"$dir/mock.err" &
    MOCK_PID=$!
    BASE_URL=""
    for _ in $(seq 100); do
        # The mock may not have opened mock.out yet: no file is "not listening yet", not an error
        # that `set -e` ends the caller on.
        BASE_URL=$(sed -n 's/^listening on //p' "$dir/mock.out" 2>/dev/null || true)
        [[ -n "$BASE_URL" ]] && return 0
        if ! kill -0 "$MOCK_PID" 2>/dev/null; then
            cat "$dir/mock.err" >&2
            return 2
        fi
        sleep 0.1
    done
    echo "sf-mock-server did not start within 10 s" >&2
    return 2
}

start_mock() {
    mkdir -p "$1"
    bench_start_mock "$@"
    MOCK_PIDS+=("$MOCK_PID")
}

stop_mocks() {
    bench_stop "${MOCK_PIDS[@]}"
    MOCK_PIDS=()
    MOCK_PID=""
}

bench_finish() {
    stop_mocks
    if [[ -n "${KEEP_WORK:-}" ]]; then
        echo "kept $WORK" >&2
    else
        bench_cleanup
    fi
}

bench_requests() {
    python3 -c '
import json, sys, urllib.request
print(json.load(urllib.request.urlopen(sys.argv[1] + "/stats"))["requests"])' "$BASE_URL"
}

bench_median() {
    python3 -c '
import statistics, sys
print(f"{statistics.median(float(line) for line in sys.stdin if line.strip()):.3f}")'
}

bench_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/sf-bench-$1.XXXXXX")
    MOCK_PID=""
    trap bench_cleanup EXIT
}

bench_cleanup() {
    bench_stop_mock
    rm -rf "$WORK"
}

bench_stop_mock() {
    if [[ -n "$MOCK_PID" ]]; then
        bench_stop "$MOCK_PID"
    fi
}

bench_stop() {
    local pid
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

bench_invoice_files() {
    printf 'skill: seed_skill.md\ndataset: dataset.jsonl\nval_fraction: 0.34\nseed: 7\n'
}

bench_invoice_metric() {
    cat <<EOF
metric:
  golden:
    mode: json_equal
    weight: 2.0
  programmatic:
    weight: 1.0
    checks:
      - is_valid_json
      - {json_has_keys: [vendor, date, total, currency]}
  judge:
    weight: 1.0
    criteria:
      - {name: correctness, description: "$1", weight: 3}
      - {name: format, description: "$2", weight: 2}
EOF
}

step() { printf '\n== %s\n' "$*" >&2; }

bench_mock_task_config() {
    cat <<CONFIG
skill: $1/seed_skill.md
dataset: $1/dataset.jsonl
val_fraction: 0.3
test_fraction: 0.2
seed: 3
provider: {name: openai-compatible, model: mock, base_url: "$BASE_URL/v1", api_key: k}
optimizer:
  name: $2
  seed: $3
  rounds: 500
  patience: 30
  minibatch_size: 3
  max_metric_calls: $4
harness: {max_workers: 4}
CONFIG
}
