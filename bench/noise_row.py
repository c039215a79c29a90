"""Rows and tables of bench/noise.sh.

    python noise_row.py run RUN_DIR LABEL OPTIMIZER SEED TWIN_CONFIG OURS FLIPS
        one run's row (a JSON line): every edit it kept, each scored by the noise-free twin
    python noise_row.py landscape RESULT_JSON LABEL SEED
        a row of a run on the noise-free landscape (no twin needed)
    python noise_row.py package PACKAGE_JSON LABEL SEED
        a row of the gepa package on the noise-free landscape
    python noise_row.py table ROWS_JSONL FLIPS DECOYS REGRESSIONS BUDGET PROFILE
        the Markdown of bench/results/noise.md

A kept edit is a false accept when the noise-free twin scores it no higher on the validation
tasks than the best skill it replaced. A skill's expected score is what the noisy target gives
it on average, computed without noise: each validation task it answers right noise-free
counts 1 − FLIPS, each other one FLIPS (the chance a flip turns it right).
"""

import json
import os
import statistics
import subprocess
import sys


def noise_free(ours, twin, skill):
    """The noise-free twin's validation score of the SKILL.md at `skill`."""
    out = subprocess.run(
        [ours, "evaluate", "-c", twin, "--skill", skill, "--split", "val", "--json", "--no-cache"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["score"]


def kept(run):
    """The candidates the search kept, in order (events.jsonl's accepted decisions)."""
    ids = []
    with open(os.path.join(run, "events.jsonl")) as events:
        for line in events:
            event = json.loads(line)
            if event.get("event") == "decision" and event.get("accepted") and "candidate" in event:
                ids.append(event["candidate"])
    return ids


def run_row(run, label, optimizer, seed, twin, ours, flips):
    flips = float(flips)
    result = json.load(open(os.path.join(run, "result.json")))
    candidate = lambda c: os.path.join(run, "candidates", f"{c:03d}.md")
    scores = {0: noise_free(ours, twin, candidate(0))}
    best, false_accepts, accepted = 0, 0, kept(run)
    for c in accepted:
        scores[c] = noise_free(ours, twin, candidate(c))
        if scores[c] <= scores[best] + 1e-9:
            false_accepts += 1
        best = c
    accuracy = scores[best]
    expected = flips + accuracy * (1 - 2 * flips)
    headline = result.get("headline") or {}
    low, high = (headline.get("best") or {}).get("interval", [None, None])
    return {
        "label": label,
        "optimizer": optimizer,
        "seed": int(seed),
        "accepted": len(accepted),
        "false_accepts": false_accepts,
        "noise_free": accuracy,
        "expected": expected,
        "best_score": result["best_score"],
        "search_best": headline.get("search_best_score", result["best_score"]),
        "error": result["best_score"] - expected,
        "low": low,
        "high": high,
        "covered": low is not None and low <= expected <= high,
        "metric_calls": result["metadata"].get("metric_calls"),
        "target_calls": result["usage"]["target"]["calls"],
        "regime": (result.get("noise") or {}).get("regime"),
        "stop": result["stop_reason"],
    }


def landscape_row(path, label, seed):
    result = json.load(open(path))
    return {
        "label": label,
        "seed": int(seed),
        "val": result["best_score"],
        "metric_calls": result["metadata"].get("metric_calls"),
        "model_calls": result["usage"]["total"]["calls"],
        "stop": result["stop_reason"],
    }


def package_row(path, label, seed):
    # gepa logs its progress to stdout; the driver's JSON line is the last one.
    lines = [line for line in open(path) if line.strip()]
    if not lines or not lines[-1].startswith("{"):
        sys.exit(f"{path}: no result line from bench/gepa_package.py")
    row = json.loads(lines[-1])
    return {
        "label": label,
        "seed": int(seed),
        "val": row["val"],
        "metric_calls": row["calls_to_best"],
        "model_calls": None,
        "stop": "budget",
    }


def mean(values):
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def show(value, form):
    return "-" if value is None else format(value, form)


def table(path, flips, decoys, regressions, budget, profile):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    noisy = [r for r in rows if "false_accepts" in r]
    clean = [r for r in rows if "false_accepts" not in r]
    out = ["# Gates under noise, measured against a noise-free twin", ""]
    out.append(
        f"Written by `bench/noise.sh` (FLIPS={flips}, DECOYS={decoys}, REGRESSIONS={regressions}, "
        f"BUDGET={budget} metric calls a run, {profile} build) against `sf-mock-server --needs "
        f"--noise {flips} --decoys {decoys} --regressions {regressions}`: 160 tickets in 8 queues, "
        "a ticket answered right only when the skill holds its queue's rule, every answer's "
        f"outcome then flipped with probability {flips}, unseeded; a share {decoys} of the mock "
        "optimizer's replies reword the skill without adding a rule (decoys), and a share "
        f"{regressions} of the others drop a rule the skill holds (regressions, as a rewrite "
        "that loses an instruction). 64 validation tasks; the config says `temperature: 0.7`, "
        "as a Python-tool config does. *Comparison of means* is the same config with "
        "`noise: {regime: deterministic}`: the plain gate every run had before. Each kept edit "
        "and each best skill is scored again by the twin, the same mock without noise."
    )
    out.append("")
    out.append(
        "A *false accept* is a kept edit that the twin scores no higher than the best it replaced. "
        "The *expected score* of a skill is what the noisy target gives it on average, computed "
        f"from the twin: {flips} + (1 − 2 × {flips}) × its noise-free score. *Error* is "
        "`best_score` (the report's headline) minus the best skill's expected score; *covered* "
        "says whether the headline's 95% interval holds the expected score."
    )
    out.append("")
    out.append("| gate | optimizer | runs | kept edits | false accepts | best, noise-free (mean) | mean error of best_score | largest error | expected inside the 95% interval | metric calls (mean) |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    groups = []
    for r in noisy:
        key = (r["label"], r["optimizer"])
        if key not in groups:
            groups.append(key)
    summary = {}
    for label, optimizer in groups + [(label, "both") for label in dict.fromkeys(g[0] for g in groups)]:
        part = [r for r in noisy if r["label"] == label and (optimizer == "both" or r["optimizer"] == optimizer)]
        errors = [r["error"] for r in part]
        largest = max(errors, key=abs)
        summary[(label, optimizer)] = part
        out.append(
            f"| {label} | {optimizer} | {len(part)} | {sum(r['accepted'] for r in part)} | "
            f"{sum(r['false_accepts'] for r in part)} | {mean([r['noise_free'] for r in part]):.3f} | "
            f"{mean(errors):+.3f} | {largest:+.3f} | {sum(r['covered'] for r in part)} of {len(part)} | "
            f"{mean([r['metric_calls'] for r in part]):.0f} |"
        )
    out.append("")
    out.append(
        "Every kept edit of the paired gate has to show a gain the noise cannot explain, so a "
        "gain the budget cannot confirm is not kept: on this task a queue's rule buys only the "
        "handful of validation tickets of that queue, which the flips shrink further, and seeing "
        "so small a gain takes several samples of every task. The comparison of means keeps it at one look, with the "
        "decoys and regressions that happen to draw high; here a decoy changes nothing and a "
        "dropped rule is soon added again, so what it kept wrongly cost it little. *The search's "
        "own* score of the best is what its gates saw; `best_score` is measured afresh."
    )
    out.append("")
    out.append("## Per run")
    out.append("")
    out.append("| gate | optimizer | seed | kept | false accepts | best, noise-free | expected | best_score | 95% interval | the search's own | metric calls | target calls | stop |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in noisy:
        interval = "-" if r["low"] is None else f"{r['low']:.3f} – {r['high']:.3f}"
        out.append(
            f"| {r['label']} | {r['optimizer']} | {r['seed']} | {r['accepted']} | {r['false_accepts']} | "
            f"{r['noise_free']:.3f} | {r['expected']:.3f} | {r['best_score']:.3f} | {interval} | "
            f"{r['search_best']:.3f} | {r['metric_calls']} | {r['target_calls']} | {r['stop']} |"
        )
    if clean:
        out.append("")
        out.append("## The same task without noise")
        out.append("")
        out.append(
            "The twin alone (no flips, no decoys) at `temperature: 0`, which makes our runs "
            "deterministic: our `gepa` before and after the noise work take the same path, so "
            "*comparison of means* and *paired gate* are one row here. Metric calls are the "
            "rollouts scored until the best reached 1.000 on validation (ours stop there; for "
            "the gepa package, its `discovery_eval_counts` of its best candidate), the seed's "
            "validation included. *Paired gate, temperature 0.7* is the same target with the "
            "config saying 0.7: the run is noisy by its config, though nothing varies, and pays "
            "for the samples that show it."
        )
        out.append("")
        out.append("| run | seeds | val (mean) | metric calls (mean) | model calls (mean) | per seed (metric calls) | stops |")
        out.append("|---|---|---|---|---|---|---|")
        labels = list(dict.fromkeys(r["label"] for r in clean))
        for label in labels:
            part = [r for r in clean if r["label"] == label]
            out.append(
                f"| {label} | {len(part)} | {mean([r['val'] for r in part]):.3f} | "
                f"{mean([r['metric_calls'] for r in part]):.1f} | {show(mean([r['model_calls'] for r in part]), '.1f')} | "
                f"{', '.join(str(r['metric_calls']) for r in part)} | {', '.join(sorted(set(r['stop'] for r in part)))} |"
            )
    print("\n".join(out))


if __name__ == "__main__":
    kind, args = sys.argv[1], sys.argv[2:]
    if kind == "run":
        print(json.dumps(run_row(*args)))
    elif kind == "landscape":
        print(json.dumps(landscape_row(*args)))
    elif kind == "package":
        print(json.dumps(package_row(*args)))
    elif kind == "table":
        table(*args)
    else:
        sys.exit(f"unknown kind {kind}")
