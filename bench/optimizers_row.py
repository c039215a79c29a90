"""Rows and the table of bench/optimizers.sh.

    python optimizers_row.py ours RESULT_JSON LABEL SEED SECONDS    one row from our result.json
    python optimizers_row.py package PACKAGE_JSON LABEL SEED        one row from gepa_package.py
    python optimizers_row.py table ROWS_JSONL MAX_CALLS SEEDS PROFILE    the Markdown table
"""

import json
import statistics
import sys


def ours(path, label, seed, seconds):
    result = json.load(open(path))
    gate = result["metadata"].get("gate", {})
    total = result["usage"]["total"]
    return {
        "optimizer": label,
        "seed": int(seed),
        "test": result["test"]["best_score"],
        "test_seed": result["test"]["seed_score"],
        "val": result["best_score"],
        "calls": total["calls"],
        "tokens": total["input_tokens"] + total["output_tokens"],
        "metric_calls": result["metadata"].get("metric_calls"),
        "false_accepts": gate.get("false_accepts"),
        "seconds": float(seconds),
        "stop": result["stop_reason"],
    }


def package(path, label, seed):
    # gepa logs its progress to stdout; the driver's JSON line is the last one.
    lines = [line for line in open(path) if line.strip()]
    if not lines or not lines[-1].startswith("{"):
        sys.exit(f"{path}: no result line from bench/gepa_package.py")
    row = json.loads(lines[-1])
    return {
        "optimizer": label,
        "seed": int(seed),
        "test": row["test"],
        "test_seed": None,
        "val": row["val"],
        "calls": None,
        "tokens": None,
        "metric_calls": row["metric_calls"],
        "false_accepts": None,
        "seconds": row["seconds"],
        "stop": "budget",
    }


def show(value, form):
    return "-" if value is None else format(value, form)


def table(path, max_calls, seeds, profile):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("# Optimizers at one budget\n")
    print(
        f"Written by `bench/optimizers.sh` (MAX_CALLS={max_calls}, seeds {seeds}, {profile} build): "
        "the ticket-classifier example on the skill-sensitive mock, 20% of the tickets held out "
        "as the test split. The package's wall time is the time inside `gepa.optimize` (not the "
        "Python start); its model calls are not counted.\n"
    )
    print(
        "| optimizer | test (mean ± sd) | seed's test | val | model calls | metric calls | tokens "
        "| wall s | gate false accepts | stop |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["optimizer"] for r in rows):
        mine = [r for r in rows if r["optimizer"] == name]

        def mean(key):
            values = [r[key] for r in mine if r[key] is not None]
            return statistics.mean(values) if values else None

        test = [r["test"] for r in mine]
        sd = statistics.stdev(test) if len(test) > 1 else 0.0
        stops = ", ".join(sorted({r["stop"] for r in mine}))
        print(
            f"| {name} | {statistics.mean(test):.3f} ± {sd:.3f} | {show(mean('test_seed'), '.3f')} "
            f"| {mean('val'):.3f} | {show(mean('calls'), '.1f')} | {show(mean('metric_calls'), '.1f')} "
            f"| {show(mean('tokens'), '.0f')} | {mean('seconds'):.2f} "
            f"| {show(mean('false_accepts'), '.1f')} | {stops} |"
        )
    print("\nPer run:\n")
    print("| optimizer | seed | test | val | model calls | metric calls | wall s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['optimizer']} | {r['seed']} | {r['test']:.3f} | {r['val']:.3f} "
            f"| {show(r['calls'], 'd')} | {show(r['metric_calls'], 'd')} | {r['seconds']:.2f} |"
        )


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "table":
        table(*args)
    else:
        print(json.dumps({"ours": ours, "package": package}[command](*args)))
