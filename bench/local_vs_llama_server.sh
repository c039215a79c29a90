#!/usr/bin/env bash
# Tokens per second of the in-process `local` provider against llama.cpp's llama-server, on
# the same GGUF, the same prompts and the same number of parallel sequences, measured in one
# run; writes bench/results/local.md.
#
# Workload: `skill-factory evaluate` of examples/receipt-total (24 receipts, the seed skill,
# which makes the model chat for the whole max_tokens budget), temperature 0, max_tokens 96,
# 8 requests in flight. The same command and harness run against
#   local-4  provider local, 4 sequences decoded together (the default)
#   server-4 provider openai-compatible -> llama-server -np 4 (4 slots, same context per slot)
#   local-1  provider local, 1 sequence at a time (to show what batching buys)
# in the order server, local, local-1, local, server, local, server, and the throughput of
# each is generated tokens / wall time of the whole command. That wall time includes, for
# local, starting the process and loading the model, which the server did before (it is also
# warmed); the fixed cost is measured apart (one task, one token) and the ratio is given both
# with it and without it.
#
#   bench/local_vs_llama_server.sh [MODEL.gguf]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

model="${1:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
[[ -f "$model" ]] || { echo "no model at $model: run skill-factory models fetch" >&2; exit 2; }
model="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
slots=4
max_tokens=96

./scripts/setup-tools.sh >&2
server="$(./scripts/build-llama-server.sh)"
cargo build -q -p skill-factory-cli --features local
sf="$root/target/debug/skill-factory"

work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
# --cache-ram 0: llama-server otherwise keeps every prompt's KV state in RAM (8 GiB by
# default) and restores it for a repeated prompt, so from the second run on it would answer
# the same 24 prompts without reading them; our engine starts each run (a new process) cold.
# Each server slot still reuses the prefix it holds, as each of our sequences does.
"$server" -m "$model" --alias smollm2 --host 127.0.0.1 --port "$port" \
    -c $((4096 * slots)) -np "$slots" -t "$(nproc)" --cache-ram 0 --no-webui >"$work/server.log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.5
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { tail -20 "$work/server.log" >&2; exit 1; }

cp examples/receipt-total/seed_skill.md examples/receipt-total/dataset.jsonl "$work/"
write_config() { # name provider-block
    cat >"$work/$1.yaml" <<EOF
skill: seed_skill.md
dataset: dataset.jsonl
provider: $2
metric:
  golden: {mode: numeric}
harness:
  temperature: 0.0
  max_tokens: $max_tokens
  max_workers: 8
EOF
}
write_config local-4 "{name: local, model: '$model', max_concurrency: $slots}"
write_config local-1 "{name: local, model: '$model', max_concurrency: 1}"
write_config server-4 "{name: openai-compatible, base_url: 'http://127.0.0.1:$port/v1', model: smollm2}"
head -n 1 "$work/dataset.jsonl" >"$work/one.jsonl"
sed -e 's/^dataset: .*/dataset: one.jsonl/' -e 's/max_tokens: .*/max_tokens: 1/' "$work/local-4.yaml" >"$work/startup.yaml"

# Warm the server (its first request allocates buffers).
"$sf" evaluate -c "$work/server-4.yaml" --no-cache --json >/dev/null

run() { # name -> appends "name seconds output_tokens" to results
    local start end
    start=$(date +%s.%N)
    "$sf" evaluate -c "$work/$1.yaml" --no-cache --json >"$work/$1.$2.json"
    end=$(date +%s.%N)
    python3 - "$1" "$start" "$end" "$work/$1.$2.json" >>"$work/results" <<'PY'
import json, sys
name, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
usage = json.load(open(path))["usage"]
print(name, round(end - start, 3), usage["output_tokens"], usage["input_tokens"])
PY
}
run server-4 a
run local-4 a
run local-1 a
run local-4 b
run server-4 b
run local-4 c
run server-4 c
for _ in 1 2 3; do
    start=$(date +%s.%N)
    "$sf" evaluate -c "$work/startup.yaml" --no-cache >/dev/null
    end=$(date +%s.%N)
    echo "$start $end" >>"$work/startup"
done

python3 - "$work" "$model" "$slots" "$max_tokens" <<'PY' | tee bench/results/local.md
import json, sys, os, statistics, platform, subprocess
work, model, slots, max_tokens = sys.argv[1:5]
rows = [line.split() for line in open(os.path.join(work, "results"))]
by = {}
for name, secs, out, inp in rows:
    by.setdefault(name, []).append((float(secs), int(out), int(inp)))
def rate(name):
    return [o / s for s, o, _ in by[name]]
local, server, single = rate("local-4"), rate("server-4"), rate("local-1")
ratio = statistics.mean(local) / statistics.mean(server)
startup = min(float(b) - float(a) for a, b in (l.split() for l in open(os.path.join(work, "startup"))))
warm = [o / (s - startup) for s, o, _ in by["local-4"]]
ratio_warm = statistics.mean(warm) / statistics.mean(server)
def outputs(path):
    return [i["output"] for i in json.load(open(path))["items"]]
same = sum(a == b for a, b in zip(outputs(f"{work}/local-4.a.json"), outputs(f"{work}/server-4.a.json")))
total = len(outputs(f"{work}/local-4.a.json"))
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
print("# Local provider vs llama-server\n")
print(f"Measured by `bench/local_vs_llama_server.sh` on {os.cpu_count()} cores ({cpu}).")
print(f"Model `{os.path.basename(model)}`; workload: `skill-factory evaluate` of examples/receipt-total")
print(f"(24 prompts, temperature 0, max_tokens {max_tokens}, 8 in flight); {slots} parallel sequences on both sides.\n")
print("| run | wall s | generated tokens | prompt tokens | generated tok/s |")
print("| :-- | --: | --: | --: | --: |")
for name, secs, out, inp in rows:
    print(f"| {name} | {float(secs):.2f} | {out} | {inp} | {int(out) / float(secs):.1f} |")
print()
print(f"**local / llama-server throughput ratio: {ratio:.2f}** "
      f"(mean of {len(local)} runs each: {statistics.mean(local):.1f} vs {statistics.mean(server):.1f} tok/s).")
print(f"Local start-up (process, model load, one token): {startup:.2f} s per run; without it the ratio is "
      f"**{ratio_warm:.2f}** ({statistics.mean(warm):.1f} tok/s).")
print(f"Batching: 4 sequences together give {statistics.mean(local) / statistics.mean(single):.2f}x the throughput of one at a time "
      f"({statistics.mean(single):.1f} tok/s).")
print(f"Same answer text from both engines (greedy decoding): {same} of {total} prompts.")
gen = {name: [o for _, o, _ in runs] for name, runs in by.items()}
print(f"Generated tokens per run: local-4 {gen['local-4']}, server-4 {gen['server-4']} "
      "(greedy decoding of a batch depends on which sequences share it, in both engines).")
PY
