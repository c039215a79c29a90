#!/usr/bin/env bash
# Chaos: every command that talks to a model, against a mock that spoils about 30% of its
# requests in every way it knows, ends with every rollout accounted for, says why each failed
# one failed, and (where nothing was lost) ends as a calm run does.
#
#   bash bench/chaos.sh                  # the full version, writes bench/results/chaos.md
#   SCALE=small bash bench/chaos.sh      # the short version CI runs (well under a minute)
#   OURS=target/release/skill-factory MOCK=target/release/sf-mock-server bash bench/chaos.sh
#
# The storm (STORM, the mix of crates/skill-factory-cli/tests/it/common/chaos.rs): 429 with
# Retry-After 8%, 429 without 6%, 500 5%, hang 1.5%, broken JSON 2%, reset 3%, body cut
# halfway 3%, slowloris 1.5%; providers at `timeout: 2, max_retries: 3` (System One:
# `timeout: 2, max_retries: 4`). Each run has its own folder, its own storm mock (seed SEED + k)
# and a calm twin (the same mock without faults):
#  evaluate    `skill-factory evaluate --json` of TASKS labelled tasks (task t{i} expects
#              label{i}; the mock answers every third one wrong), golden exact, provider
#              openai, `max_concurrency` and `max_workers` WORKERS. Checks: every task in the
#              report once, scored or failed with a reason and score 0; `failed` and `tasks`
#              count them; exit 0 (3 only when every rollout failed); the CLI's HTTP request
#              count is the mock's and requests not spoiled = calls answered; every scored task
#              has the calm run's score and output; then the same command again from the cache:
#              only the failed rollouts asked (at most `max_retries` requests each), everything
#              scored before kept, and what it scores anew as in the calm run.
#  optimize    `skill-factory optimize -c config.yaml -o runs` of examples/ticket-classifier
#              with each of OPTIMIZERS (the config of tests/it/chaos.rs `write_config`: provider
#              openai-compatible at `sf-mock-server --answers <its dataset> --skill-sensitive`,
#              3 rounds, minibatch 3, 2 edits a round, patience 3, 8 workers, seed 3,
#              val_fraction 0.3). Checks: exit 0, result.json parses and names the optimizer,
#              tests/it/common/chaos.rs `assert_accounted` (ported: every evaluation_started has
#              an evaluation_finished with complete: true and the same task count, rollouts.jsonl
#              exactly that many rollouts per (round, candidate, split), every failed rollout a
#              reason and score 0, result.json failed_rollouts their count), the request
#              identities above; and when no call was lost, the calm run's result.json (without
#              ids, times and spending).
#  classifier  `skill-factory optimize -c bench.yaml` (CLASSIFIER_RUNS storms) of a copy of
#              examples/pr-mismatch (config.offline.yaml, `workspace: ws`, System One at `sf-mock-server
#              --systemone`, the scripted proposer kept). The storm run may exit 3 when System
#              One requests failed after every retry: it must then say "run the same command
#              again", and rerunning (at most MAX_RERUNS times) must reach exit 0 with the calm
#              run's probeset.json, the calm run's answers.jsonl lines (the set of (s, q, p))
#              and its baseline and best score.
# Every command is killed after COMMAND_TIMEOUT seconds and then counted as a hang.
# bench/chaos_check.py runs the commands, checks them and writes the Markdown; exit 1 when a
# check failed (each failure is printed; the temporary folder is then kept), 2 when a run could
# not be set up.
#
# Environment (all optional):
#   SCALE=full            small: TASKS=200, CLASSIFIER_RUNS=1, PARALLEL=1, COMMAND_TIMEOUT=120
#   TASKS=2000            evaluate's tasks
#   WORKERS=32            evaluate's provider max_concurrency and harness max_workers
#   RUNS="evaluate optimize classifier"
#   OPTIMIZERS="llm_loop gepa skillopt"
#   CLASSIFIER_RUNS=3     classifier storms, each with its own seed and calm twin: a System One
#                         request fails all 4 attempts about once in 120, so about 2 storms of
#                         its 64 requests in 5 exit 3 and are rerun
#   SEED=1                the storm mocks' seeds are SEED, SEED+1, ... in the order of the runs
#   LATENCY_MS=10         every mock's delay before an answer
#   RETRY_AFTER=1         seconds in the Retry-After of a 429 that has one
#   STORM="--fail-429 0.08 --fail-429-bare 0.06 --fail-500 0.05 --hang 0.015 --malformed 0.02 --reset 0.03 --cut-body 0.03 --slowloris 0.015"
#   TIMEOUT=2 MAX_RETRIES=3                      the chat providers'
#   SYSTEMONE_TIMEOUT=2 SYSTEMONE_MAX_RETRIES=4  System One's
#   MAX_RERUNS=3          reruns of a classifier storm run that exited 3
#   COMMAND_TIMEOUT=600   seconds before a command is killed (and counted as a hang)
#   PARALLEL=0            1 runs the runs side by side (their wall times then share the cores)
#   OURS=... MOCK=...     our skill-factory and sf-mock-server; with both set nothing is built
#   RESULTS=bench/results/chaos.md   where the figures go (empty: nowhere)
#   KEEP_WORK=1           keep the temporary folder (its path is printed)
# Needs: cargo (unless OURS and MOCK are given) and python3 (standard library only).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
SCALE=${SCALE:-full}
case "$SCALE" in
full) ;;
small)
    TASKS=${TASKS:-200}
    CLASSIFIER_RUNS=${CLASSIFIER_RUNS:-1}
    PARALLEL=${PARALLEL:-1}
    COMMAND_TIMEOUT=${COMMAND_TIMEOUT:-120}
    ;;
*)
    echo "SCALE must be full or small (got $SCALE)" >&2
    exit 2
    ;;
esac
TASKS=${TASKS:-2000}
WORKERS=${WORKERS:-32}
RUNS=${RUNS:-evaluate optimize classifier}
OPTIMIZERS=${OPTIMIZERS:-llm_loop gepa skillopt}
CLASSIFIER_RUNS=${CLASSIFIER_RUNS:-3}
SEED=${SEED:-1}
LATENCY_MS=${LATENCY_MS:-10}
RETRY_AFTER=${RETRY_AFTER:-1}
STORM=${STORM:---fail-429 0.08 --fail-429-bare 0.06 --fail-500 0.05 --hang 0.015 --malformed 0.02 --reset 0.03 --cut-body 0.03 --slowloris 0.015}
TIMEOUT=${TIMEOUT:-2}
MAX_RETRIES=${MAX_RETRIES:-3}
SYSTEMONE_TIMEOUT=${SYSTEMONE_TIMEOUT:-2}
SYSTEMONE_MAX_RETRIES=${SYSTEMONE_MAX_RETRIES:-4}
MAX_RERUNS=${MAX_RERUNS:-3}
COMMAND_TIMEOUT=${COMMAND_TIMEOUT:-600}
PARALLEL=${PARALLEL:-0}
RESULTS=${RESULTS-bench/results/chaos.md}
KEEP_WORK=${KEEP_WORK:-}
for run in $RUNS; do
    case "$run" in evaluate | optimize | classifier) ;; *)
        echo "RUNS: unknown run $run (evaluate, optimize, classifier)" >&2
        exit 2
        ;;
    esac
done
for optimizer in $OPTIMIZERS; do
    case "$optimizer" in llm_loop | gepa | skillopt) ;; *)
        echo "OPTIMIZERS: unknown optimizer $optimizer (llm_loop, gepa, skillopt)" >&2
        exit 2
        ;;
    esac
done
read -r -a STORM_FLAGS <<<"$STORM"
STORM_FLAGS+=(--retry-after "$RETRY_AFTER")

bench_binaries || exit 2
REPO=$(pwd)

bench_workdir chaos
MOCK_PIDS=()
JOB_PIDS=()
# shellcheck disable=SC2329 # run by the EXIT trap below
stop_all() {
    # The drivers first (each kills the command it waits for), then the mocks.
    bench_stop "${JOB_PIDS[@]}"
    bench_finish
}
trap stop_all EXIT
# A signal ends the script through `exit`, so the EXIT trap still stops what it started.
trap 'exit 130' INT
trap 'exit 143' TERM

# Nothing from the environment reaches the commands but what the configs say.
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY SKILL_FACTORY_RECORD SKILL_FACTORY_REPLAY
unset SKILL_FACTORY_TARGET_MODEL SKILL_FACTORY_JUDGE_MODEL SKILL_FACTORY_SYSTEMONE_KEY
unset TYPESAFE_API_KEY OPENROUTER_API_KEY AI_GATEWAY_API_KEY CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1

STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
NEXT_SEED=$SEED
# Every run as the arguments of `chaos_check.py run`, set up first (mocks, folders, configs),
# run afterwards one after the other or side by side.
PLANS=()
JSONS=()
# plan NAME ARGS...: one run of chaos_check.py, its figures in WORK/NAME.json.
plan() {
    local name=$1
    shift
    PLANS+=("$name")
    printf '%s\0' run --name "$name" --ours "$OURS" --logs "$WORK/logs" --out "$WORK/$name.json" \
        --command-timeout "$COMMAND_TIMEOUT" "$@" >"$WORK/$name.args"
    JSONS+=("$WORK/$name.json")
}
mkdir -p "$WORK/logs"
STORM_LINE="\`${STORM_FLAGS[*]}\`"

for run in $RUNS; do
    case "$run" in
    evaluate)
        D=$WORK/evaluate
        step "evaluate: $TASKS tasks, storm seed $NEXT_SEED"
        for twin in storm calm; do
            python3 bench/chaos_check.py tasks "$D/$twin" --tasks "$TASKS"
        done
        start_mock "$D/storm-mock" --latency-ms "$LATENCY_MS" --answers "$D/storm/answers.jsonl" \
            "${STORM_FLAGS[@]}" --seed "$NEXT_SEED"
        STORM_URL=$BASE_URL
        start_mock "$D/calm-mock" --latency-ms "$LATENCY_MS" --answers "$D/calm/answers.jsonl"
        CALM_URL=$BASE_URL
        for twin in storm calm; do
            url=$STORM_URL
            if [[ "$twin" == calm ]]; then url=$CALM_URL; fi
            cat >"$D/$twin/config.yaml" <<EOF
skill: skill.md
dataset: data.jsonl
seed: 7
provider: {name: openai, model: m, base_url: "$url/v1", api_key: k, timeout: $TIMEOUT, max_retries: $MAX_RETRIES, max_concurrency: $WORKERS}
metric:
  golden: {mode: exact}
harness: {temperature: 0.0, max_tokens: 64, max_workers: $WORKERS}
EOF
        done
        plan evaluate --kind evaluate --title "evaluate ($TASKS tasks)" \
            --storm-dir "$D/storm" --storm-url "$STORM_URL" --calm-dir "$D/calm" --calm-url "$CALM_URL" \
            --attempts "$MAX_RETRIES" \
            --mock-line "\`sf-mock-server --latency-ms $LATENCY_MS --answers answers.jsonl --seed $NEXT_SEED\` $STORM_LINE"
        NEXT_SEED=$((NEXT_SEED + 1))
        ;;
    optimize)
        for optimizer in $OPTIMIZERS; do
            D=$WORK/optimize-$optimizer
            step "optimize $optimizer: examples/ticket-classifier, storm seed $NEXT_SEED"
            start_mock "$D/storm-mock" --latency-ms "$LATENCY_MS" \
                --answers examples/ticket-classifier/dataset.jsonl --skill-sensitive \
                "${STORM_FLAGS[@]}" --seed "$NEXT_SEED"
            STORM_URL=$BASE_URL
            start_mock "$D/calm-mock" --latency-ms "$LATENCY_MS" \
                --answers examples/ticket-classifier/dataset.jsonl --skill-sensitive
            CALM_URL=$BASE_URL
            for twin in storm calm; do
                url=$STORM_URL
                if [[ "$twin" == calm ]]; then url=$CALM_URL; fi
                # The folder is `tickets` in both twins: the run's name comes from it.
                mkdir -p "$D/$twin/tickets"
                cat >"$D/$twin/tickets/config.yaml" <<EOF
skill: "$REPO/examples/ticket-classifier/seed_skill.md"
dataset: "$REPO/examples/ticket-classifier/dataset.jsonl"
val_fraction: 0.3
seed: 3
provider: {name: openai-compatible, model: m, base_url: "$url/v1", api_key: k, timeout: $TIMEOUT, max_retries: $MAX_RETRIES}
optimizer: {name: $optimizer, rounds: 3, minibatch_size: 3, max_edits_per_round: 2, patience: 3}
harness: {max_workers: 8}
EOF
            done
            plan "optimize-$optimizer" --kind optimize --optimizer "$optimizer" \
                --title "optimize $optimizer" --attempts "$MAX_RETRIES" \
                --storm-dir "$D/storm/tickets" --storm-url "$STORM_URL" \
                --calm-dir "$D/calm/tickets" --calm-url "$CALM_URL" \
                --mock-line "\`sf-mock-server --latency-ms $LATENCY_MS --answers examples/ticket-classifier/dataset.jsonl --skill-sensitive --seed $NEXT_SEED\` $STORM_LINE"
            NEXT_SEED=$((NEXT_SEED + 1))
        done
        ;;
    classifier)
        for trial in $(seq "$CLASSIFIER_RUNS"); do
            D=$WORK/classifier-$trial
            step "classifier $trial/$CLASSIFIER_RUNS: examples/pr-mismatch against sf-mock-server --systemone, storm seed $NEXT_SEED"
            start_mock "$D/storm-mock" --systemone --latency-ms "$LATENCY_MS" "${STORM_FLAGS[@]}" \
                --seed "$NEXT_SEED"
            STORM_URL=$BASE_URL
            start_mock "$D/calm-mock" --systemone --latency-ms "$LATENCY_MS"
            CALM_URL=$BASE_URL
            for twin in storm calm; do
                url=$STORM_URL
                if [[ "$twin" == calm ]]; then url=$CALM_URL; fi
                mkdir -p "$D/$twin"
                cp -r examples/pr-mismatch/. "$D/$twin/"
                rm -rf "$D/$twin/ws"
                python3 bench/chaos_check.py classifier-config examples/pr-mismatch/config.offline.yaml \
                    "$url/v1/systemone" "$SYSTEMONE_TIMEOUT" "$SYSTEMONE_MAX_RETRIES" >"$D/$twin/bench.yaml"
            done
            plan "classifier-$trial" --kind classifier --title "classifier lab optimize (storm seed $NEXT_SEED)" \
                --attempts "$SYSTEMONE_MAX_RETRIES" --max-reruns "$MAX_RERUNS" \
                --storm-dir "$D/storm" --storm-url "$STORM_URL" --calm-dir "$D/calm" --calm-url "$CALM_URL" \
                --mock-line "\`sf-mock-server --systemone --latency-ms $LATENCY_MS --seed $NEXT_SEED\` $STORM_LINE"
            NEXT_SEED=$((NEXT_SEED + 1))
        done
        ;;
    esac
done

# drive NAME: chaos_check.py run with the arguments planned for NAME, in the background (the
# job is python itself, so the cleanup reaches it and it stops the command it waits for).
drive() {
    local args=()
    mapfile -d '' -t args <"$WORK/$1.args"
    python3 bench/chaos_check.py "${args[@]}" &
    JOB_PIDS+=("$!")
}
status=0
for name in "${PLANS[@]}"; do
    if [[ "$PARALLEL" == 1 ]]; then
        step "$name (side by side with the others)"
        drive "$name"
    else
        step "$name"
        drive "$name"
        # `wait` (unlike a command in the foreground) lets a signal's trap run at once.
        wait "${JOB_PIDS[-1]}" || status=2
        JOB_PIDS=()
    fi
done
for pid in "${JOB_PIDS[@]}"; do
    wait "$pid" || status=2
done
JOB_PIDS=()
if [[ $status != 0 ]]; then
    KEEP_WORK=1
    echo "a run could not be driven to its end (see above)" >&2
    exit 2
fi

step "results"
COMMAND="SCALE=$SCALE TASKS=$TASKS bash bench/chaos.sh"
NICENESS=$(cut -d' ' -f19 /proc/$$/stat)
if ((NICENESS != 0)); then COMMAND="nice -n $NICENESS env $COMMAND"; fi
SETTING="on $STARTED ($(uname -sm), $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); SCALE=$SCALE, TASKS=$TASKS, WORKERS=$WORKERS, SEED=$SEED, LATENCY_MS=$LATENCY_MS, providers \`timeout: $TIMEOUT, max_retries: $MAX_RETRIES\`, System One \`timeout: $SYSTEMONE_TIMEOUT, max_retries: $SYSTEMONE_MAX_RETRIES\`, PARALLEL=$PARALLEL; \`$("$OURS" --version)\`)."
status=0
python3 bench/chaos_check.py report --out "$WORK/chaos.md" --setting "$SETTING" --command "$COMMAND" \
    --storm "${STORM_FLAGS[*]}" "${JSONS[@]}" || status=$?
if [[ -n "$RESULTS" ]]; then
    cp "$WORK/chaos.md" "$RESULTS"
    [[ "$RESULTS" != bench/results/chaos.md ]] || python3 bench/reliability.py
    echo "written to $RESULTS" >&2
fi
cat "$WORK/chaos.md"
if [[ $status != 0 ]]; then
    KEEP_WORK=1
    echo "a check failed; the folders are kept under $WORK" >&2
fi
exit $status
