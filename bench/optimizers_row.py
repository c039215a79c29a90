"""Rows and the tables of bench/optimizers.sh.

    python optimizers_row.py ours RESULT_JSON TASK OPTIMIZER SEED SECONDS   a row from our result.json
    python optimizers_row.py package PACKAGE_JSON TASK LABEL SEED REQUESTS a row from gepa_package.py
    python optimizers_row.py table ROWS_JSONL BUDGETS SEEDS PROFILE        the Markdown tables
"""

import json
import statistics
import sys


def ours(path, task, optimizer, seed, seconds):
    result = json.load(open(path))
    gate = result["metadata"].get("gate", {})
    total = result["usage"]["total"]
    return {
        "task": task,
        "optimizer": optimizer,
        "seed": int(seed),
        "test": result["test"]["best_score"],
        "test_seed": result["test"]["seed_score"],
        "val": result["best_score"],
        "calls": total["calls"],
        "tokens": total["input_tokens"] + total["output_tokens"],
        "metric_calls": result["metadata"].get("metric_calls"),
        "calls_to_best": None,
        "false_accepts": gate.get("false_accepts"),
        "seconds": float(seconds),
        "stop": result["stop_reason"],
    }


def package(path, task, label, seed, requests):
    # gepa logs its progress to stdout; the driver's JSON line is the last one.
    lines = [line for line in open(path) if line.strip()]
    if not lines or not lines[-1].startswith("{"):
        sys.exit(f"{path}: no result line from bench/gepa_package.py")
    row = json.loads(lines[-1])
    return {
        "task": task,
        "optimizer": label,
        "seed": int(seed),
        "test": row["test"],
        "test_seed": None,
        "val": row["val"],
        # The mock's requests during the run include the driver's test scoring.
        "calls": int(requests) - row["sizes"]["test"],
        "tokens": None,
        "metric_calls": row["metric_calls"],
        "calls_to_best": row["calls_to_best"],
        "false_accepts": None,
        "seconds": row["seconds"],
        "stop": "budget",
    }


def show(value, form):
    return "-" if value is None else format(value, form)


def summary(rows):
    """One line per optimizer of one task: means over its seeds."""

    def mean(key):
        values = [r[key] for r in rows if r[key] is not None]
        return statistics.mean(values) if values else None

    test = [r["test"] for r in rows]
    sd = statistics.stdev(test) if len(test) > 1 else 0.0
    stops = ", ".join(sorted({r["stop"] for r in rows}))
    return (
        f"| {rows[0]['optimizer']} | {statistics.mean(test):.3f} ± {sd:.3f} "
        f"| {show(mean('test_seed'), '.3f')} | {mean('val'):.3f} | {show(mean('calls'), '.1f')} "
        f"| {show(mean('metric_calls'), '.1f')} | {show(mean('calls_to_best'), '.1f')} "
        f"| {show(mean('tokens'), '.0f')} "
        f"| {mean('seconds'):.2f} | {show(mean('false_accepts'), '.1f')} | {stops} |"
    )


def table(path, budgets, seeds, profile):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("# Optimizers at one budget of metric calls\n")
    print(
        f"Written by `bench/optimizers.sh` (BUDGETS=\"{budgets}\": each budget of metric calls, in "
        "brackets, for each of our runs, and twice that for the gepa package; "
        f"seeds {seeds}; {profile} build) against "
        "`sf-mock-server --needs`, whose model answers a task right only when the skill holds "
        "the rule of the task's group and whose optimizer adds the rules that the failures it "
        "is shown need. 20% of every task is held out as the test split. The package's wall "
        "time is the time inside `gepa.optimize` (not the Python start); its model calls are the "
        "requests the mock received during its run, its tokens are not counted. Our runs stop "
        "once the best scores 1.000 on validation, so their metric calls are those they "
        "needed; the package spends its whole budget, so its column of "
        "metric calls when its best was found (`discovery_eval_counts`) is the fairer figure.\n"
    )
    head = (
        "| optimizer | test (mean ± sd) | seed's test | val | model calls | metric calls "
        "| metric calls when the best was found | tokens | wall s | gate false accepts | stop |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for task in dict.fromkeys(r["task"] for r in rows):
        print(f"## {task}\n")
        print(head)
        mine = [r for r in rows if r["task"] == task]
        for name in dict.fromkeys(r["optimizer"] for r in mine):
            print(summary([r for r in mine if r["optimizer"] == name]))
        print()
    print("## Per run\n")
    print("| task | optimizer | seed | test | val | model calls | metric calls | wall s | stop |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['task']} | {r['optimizer']} | {r['seed']} | {r['test']:.3f} | {r['val']:.3f} "
            f"| {show(r['calls'], 'd')} | {show(r['metric_calls'], 'd')} | {r['seconds']:.2f} "
            f"| {r['stop']} |"
        )


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "table":
        table(*args)
    else:
        print(json.dumps({"ours": ours, "package": package}[command](*args)))
