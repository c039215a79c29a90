#!/usr/bin/env bash
# SIGKILL survival: `optimize` killed at a random moment leaves caches and folders that every
# reader can open, and a rerun in the same folder finishes with the uninterrupted run's result,
# paying only for what the killed run had not stored.
#
#   bash bench/kills.sh                  # 50 kills per command, writes bench/results/kills.md
#   KILLS=3 bash bench/kills.sh          # the short version CI runs (well under a minute)
#   OURS=target/release/skill-factory MOCK=target/release/sf-mock-server bash bench/kills.sh
#
# Two commands, each against loopback mocks:
#  skill       `skill-factory optimize -c config.yaml -o runs` of examples/ticket-classifier
#              (the config of crates/skill-factory-cli/tests/it/optimize_cache.rs: provider
#              openai-compatible at `sf-mock-server --answers <its dataset> --skill-sensitive
#              --latency-ms LATENCY_MS`, 3 rounds, minibatch 3, 2 edits a round, patience 3,
#              2 workers, seed 3, val_fraction 0.3); cache `.skill-factory/cache.sqlite`.
#  classifier  `skill-factory optimize -c bench.yaml` of a copy of examples/pr-mismatch
#              (config.offline.yaml with `workspace: ws` and System One at `sf-mock-server
#              --systemone --latency-ms SYSTEMONE_LATENCY_MS`); the proposer of its
#              reflective round is PROPOSER: `mock` (default) a second chat mock that answers
#              the round's prompt with the reply of the example's fake_proposer.yaml (found by
#              a first run), so that `ws/proposals.sqlite` is written too; `fake` the example's
#              scripted proposer (no proposals.sqlite); `none` selection only.
# For each: two uninterrupted runs on empty folders (the reference; they must agree), a second
# run of the finished reference folder, then trials until KILLS kills landed, each in a fresh
# folder: start the command, SIGKILL its process group after a delay drawn uniformly in
# [MIN_DELAY, MAX_DELAY] (python's random seeded with SEED), check the caches (`PRAGMA
# integrity_check`, `cache stats --path`) and every file left (JSON parses, JSON lines parse but
# a torn last line, `latest` resolves, temporaries listed), rerun to completion in the same
# folder, compare with the reference and count what the rerun asked the mocks (/stats) against
# what the killed run had stored.
# bench/kills_trials.py runs the trials and writes the Markdown. Exit 1 when a trial failed a
# check (each failure is printed; the temporary folder is then kept), 2 when the references
# could not be made.
#
# Environment (all optional):
#   KILLS=50                  kills per command that land while it runs (at most twice as many trials)
#   SEED=1                    seed of the kill delays (same SEED, same delays)
#   COMMANDS="skill classifier"
#   LATENCY_MS=20             the chat mock's delay before every answer (skill; proposer)
#   SYSTEMONE_LATENCY_MS=100  the System One mock's delay before every answer
#   PROPOSER=mock             mock | fake | none (see above)
#   MAX_DELAY=                seconds; default: the mean wall time of the two uninterrupted runs
#   MIN_DELAY=0               seconds (e.g. close to MAX_DELAY to aim the kills at a run's end)
#   OURS=... MOCK=...         our skill-factory and sf-mock-server; with both set nothing is built
#   RESULTS=bench/results/kills.md   where the figures go (empty: nowhere)
#   KEEP_WORK=1               keep the temporary folder (its path is printed)
# Needs: cargo (unless OURS and MOCK are given) and python3. Run it under `nice` on a busy
# machine: the kill moments shift with the load, the checks do not.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
KILLS=${KILLS:-50}
SEED=${SEED:-1}
COMMANDS=${COMMANDS:-skill classifier}
LATENCY_MS=${LATENCY_MS:-20}
SYSTEMONE_LATENCY_MS=${SYSTEMONE_LATENCY_MS:-100}
PROPOSER=${PROPOSER:-mock}
MAX_DELAY=${MAX_DELAY:-}
MIN_DELAY=${MIN_DELAY:-}
RESULTS=${RESULTS-bench/results/kills.md}
KEEP_WORK=${KEEP_WORK:-}
for command in $COMMANDS; do
    case "$command" in skill | classifier) ;; *)
        echo "COMMANDS: unknown command $command (skill, classifier)" >&2
        exit 2
        ;;
    esac
done
case "$PROPOSER" in mock | fake | none) ;; *)
    echo "PROPOSER must be mock, fake or none (got $PROPOSER)" >&2
    exit 2
    ;;
esac

bench_binaries || exit 2
REPO=$(pwd)

bench_workdir kills
MOCK_PIDS=()
trap bench_finish EXIT
# A signal ends the script through `exit`, so the EXIT trap still stops the mocks.
trap 'exit 130' INT
trap 'exit 143' TERM
# stop_mock PID: stops one mock started by start_mock.
stop_mock() {
    local pid kept=()
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    for pid in "${MOCK_PIDS[@]}"; do [[ "$pid" == "$1" ]] || kept+=("$pid"); done
    MOCK_PIDS=("${kept[@]}")
}

# Nothing from the environment reaches the commands but what the configs say.
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY SKILL_FACTORY_RECORD SKILL_FACTORY_REPLAY
unset SKILL_FACTORY_SYSTEMONE_KEY TYPESAFE_API_KEY OPENROUTER_API_KEY AI_GATEWAY_API_KEY
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1

STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
JSONS=()
for command in $COMMANDS; do
    D=$WORK/$command
    mkdir -p "$D"
    case "$command" in
    skill)
        step "skill: sf-mock-server --skill-sensitive (${LATENCY_MS} ms a call)"
        start_mock "$D/mock" --answers examples/ticket-classifier/dataset.jsonl --skill-sensitive \
            --latency-ms "$LATENCY_MS"
        MOCKS=(--mock "chat=$BASE_URL")
        MOCK_LINE="\`sf-mock-server --answers examples/ticket-classifier/dataset.jsonl --skill-sensitive --latency-ms $LATENCY_MS\`"
        # The folder is named `tickets` in every trial: the run's name comes from it.
        mkdir -p "$D/template/tickets"
        cat >"$D/template/tickets/config.yaml" <<EOF
skill: "$REPO/examples/ticket-classifier/seed_skill.md"
dataset: "$REPO/examples/ticket-classifier/dataset.jsonl"
val_fraction: 0.3
seed: 3
provider: {name: openai-compatible, model: m, base_url: "$BASE_URL/v1", api_key: k}
optimizer: {rounds: 3, minibatch_size: 3, max_edits_per_round: 2, patience: 3}
harness: {max_workers: 2}
EOF
        ;;
    classifier)
        step "classifier: sf-mock-server --systemone (${SYSTEMONE_LATENCY_MS} ms a call), proposer: $PROPOSER"
        start_mock "$D/systemone" --systemone --latency-ms "$SYSTEMONE_LATENCY_MS"
        SYSTEMONE=$BASE_URL
        MOCKS=(--mock "systemone=$SYSTEMONE")
        MOCK_LINE="\`sf-mock-server --systemone --latency-ms $SYSTEMONE_LATENCY_MS\`"
        # classifier_config PROPOSER_URL: the example's offline config, its workspace in the
        # folder and System One at the mock; the proposer per PROPOSER (at PROPOSER_URL).
        classifier_config() {
            python3 - examples/pr-mismatch/config.offline.yaml "$SYSTEMONE/v1/systemone" \
                "$PROPOSER" "${1:-}" <<'EOF'
import json, sys
path, systemone, proposer, proposer_url = sys.argv[1:5]
lines = open(path, encoding="utf-8").read().splitlines()
keys = {"workspace:": "workspace: ws",
        "systemone:": "systemone: " + json.dumps(
            {"provider": "custom", "base_url": systemone, "model": "jev-latest"}),
        "optimizer_provider:": {
            "fake": None,
            "none": "",
            "mock": "optimizer_provider: " + json.dumps(
                {"name": "openai-compatible", "model": "proposer", "base_url": proposer_url + "/v1",
                 "api_key": "k"})}[proposer]}
out = []
for line in lines:
    key = next((k for k in keys if line.startswith(k)), None)
    if key is None:
        out.append(line)
        continue
    replacement = keys.pop(key)
    if replacement is None:
        out.append(line)
    elif replacement:
        out.append(replacement)
if keys:
    sys.exit(f"{path} has no line starting with {', '.join(keys)}: update bench/kills.sh")
print("\n".join(out))
EOF
        }
        mkdir -p "$D/template"
        cp -r examples/pr-mismatch/. "$D/template/"
        rm -rf "$D/template/ws"
        if [[ "$PROPOSER" == mock ]]; then
            # A first run against a proposer that knows no answer records the round's prompt
            # (history.json keeps it); the proposer mock then answers that prompt with the
            # example's scripted reply.
            start_mock "$D/prime-mock" --latency-ms "$LATENCY_MS"
            PRIME_PID=$MOCK_PID
            mkdir -p "$D/prime"
            cp -r "$D/template/." "$D/prime/"
            classifier_config "$BASE_URL" >"$D/prime/bench.yaml"
            (cd "$D/prime" && "$OURS" optimize -c bench.yaml) >"$D/prime.out" 2>"$D/prime.err" || {
                cat "$D/prime.err" >&2
                exit 2
            }
            stop_mock "$PRIME_PID"
            python3 - "$D/prime/ws/history.json" examples/pr-mismatch/fake_proposer.yaml \
                >"$D/proposer.jsonl" <<'EOF'
import json, sys
history = json.load(open(sys.argv[1], encoding="utf-8"))
prompts = [r["prompt"] for r in history if r.get("change") == "proposal" and r.get("prompt")]
if len(prompts) != 1:
    sys.exit(f"{sys.argv[1]}: expected one proposal round with a prompt, found {len(prompts)}")
# fake_proposer.yaml: `responses:` then `  - |` and the reply indented by four spaces.
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
start = next(i for i, line in enumerate(lines) if line.strip() == "- |") + 1
reply = []
for line in lines[start:]:
    if line.strip() and not line.startswith("    "):
        break
    reply.append(line[4:])
print(json.dumps({"input": prompts[0], "output": "\n".join(reply).strip() + "\n"}))
EOF
            start_mock "$D/proposer" --latency-ms "$LATENCY_MS" --answers "$D/proposer.jsonl"
            MOCKS+=(--mock "proposer=$BASE_URL")
            MOCK_LINE="$MOCK_LINE; proposer \`sf-mock-server --latency-ms $LATENCY_MS --answers <the round's prompt → fake_proposer.yaml's reply>\`"
            classifier_config "$BASE_URL" >"$D/template/bench.yaml"
        else
            classifier_config "" >"$D/template/bench.yaml"
            MOCK_LINE="$MOCK_LINE; proposer: $PROPOSER"
        fi
        ;;
    esac
    step "$command: references, then $KILLS kills"
    python3 bench/kills_trials.py run --kind "$command" --template "$D/template" --work "$D" \
        --ours "$OURS" "${MOCKS[@]}" --mock-line "$MOCK_LINE" --kills "$KILLS" --seed "$SEED" \
        --max-delay "$MAX_DELAY" --min-delay "$MIN_DELAY" ${KEEP_WORK:+--keep} \
        --out "$D/figures.json" || {
        KEEP_WORK=1
        exit 2
    }
    JSONS+=("$D/figures.json")
done

step "results"
SETTING="on $STARTED ($(uname -sm), $(nproc) cores; KILLS=$KILLS, SEED=$SEED, PROPOSER=$PROPOSER${MIN_DELAY:+, MIN_DELAY=$MIN_DELAY}${MAX_DELAY:+, MAX_DELAY=$MAX_DELAY}; \`$("$OURS" --version)\`)."
status=0
python3 bench/kills_trials.py report --out "$WORK/kills.md" --setting "$SETTING" "${JSONS[@]}" || status=$?
if [[ -n "$RESULTS" ]]; then
    cp "$WORK/kills.md" "$RESULTS"
    [[ "$RESULTS" != bench/results/kills.md ]] || python3 bench/reliability.py
fi
cat "$WORK/kills.md"
if [[ $status != 0 ]]; then
    KEEP_WORK=1
    echo "a trial failed a check; its folder is kept under $WORK" >&2
fi
exit $status
