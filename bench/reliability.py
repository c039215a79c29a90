"""Writes the figures of docs/reliability.md from the results the hardening benchmarks wrote.

    python3 bench/reliability.py

Reads bench/results/fuzz.md, chaos.md, kills.md and load.md (each written by its script in
bench/) and replaces what stands between the `<!-- figures:begin -->` and `<!-- figures:end -->`
lines of docs/reliability.md with a table of their headline figures, each cell taken from its
results file as written there, with a link to it. A results file not written yet shows as
"not measured yet". The scripts call this when they write their results, so the page never
quotes a figure by hand.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"


def rows(name):
    """Every Markdown table row of a results file, as lists of cells; None when absent."""
    path = RESULTS / name
    if not path.exists():
        return None
    table = []
    for line in path.read_text().splitlines():
        if line.startswith("|") and not re.match(r"^\|[-:| ]+\|$", line):
            table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return table


def cell(table, label, column=1):
    """The cell of the first row whose first cell starts with `label`."""
    for row in table or []:
        if row and row[0].startswith(label) and len(row) > column:
            return row[column]
    return "?"


def fuzz_lines():
    table = rows("fuzz.md")
    if table is None:
        return ["| fuzzing | not measured yet | |"]
    targets = [r for r in table if r and r[0].startswith("`")]
    executions = sum(int(r[2]) for r in targets if r[2].isdigit())
    crashed = [r[0] for r in targets if r[1] != "ok"]
    return [
        f"| fuzz targets (`bench/fuzz.sh`) | {len(targets)} targets, {executions:,} executions, "
        f"{'crashes in ' + ', '.join(crashed) if crashed else 'no crash'} "
        f"| [fuzz.md](../bench/results/fuzz.md) |",
    ]


def chaos_lines():
    table = rows("chaos.md")
    if table is None:
        return ["| chaos runs (`bench/chaos.sh`) | not measured yet | |"]
    link = "[chaos.md](../bench/results/chaos.md)"
    runs = [r for r in table if len(r) > 8 and (r[0].startswith(("evaluate", "optimize",
                                                                    "classifier")))]
    accounted = [r[4] for r in runs]
    whole = all(re.fullmatch(r"(\d+) of \1", a) for a in accounted)
    total = next((r for r in table if r and r[0] == "**total**"), None)
    if total is None:
        return [f"| chaos runs (`bench/chaos.sh`) | no total row | {link} |"]
    strip = lambda text: text.replace("**", "")
    return [
        f"| chaos runs (`bench/chaos.sh`): {len(runs)} runs (evaluate, every optimizer, the lab) "
        f"| {strip(total[1])} requests, {strip(total[2])} faults injected, {strip(total[3])} "
        f"survived by a retry, the rest reported as {strip(total[5])} failed rollouts with their "
        f"reasons; checks: {strip(total[8])} | {link} |",
        f"| chaos runs: rollouts accounted for | "
        f"{'every one, in every run' if whole else 'NOT all: ' + ', '.join(accounted)} | {link} |",
    ]


def kills_lines():
    table = rows("kills.md")
    if table is None:
        return ["| SIGKILL trials (`bench/kills.sh`) | not measured yet | |"]
    lines = []
    for column, what in [(1, "skill `optimize`"), (2, "classifier lab `optimize`")]:
        lines.append(
            f"| SIGKILL (`bench/kills.sh`), {what} | "
            f"{cell(table, 'kills that landed while the process was alive', column)} kills landed; "
            f"identical reruns {cell(table, 'identical reruns', column)}; caches intact "
            f"{cell(table, 'caches intact', column).split(' ')[0]}; torn last lines "
            f"{cell(table, 'torn last lines seen', column)}; failed checks "
            f"{cell(table, 'trials that failed a check', column)} "
            f"| [kills.md](../bench/results/kills.md) |"
        )
    return lines


def load_lines():
    table = rows("load.md")
    if table is None:
        return ["| load (`bench/load.sh`) | not measured yet | |"]
    link = "[load.md](../bench/results/load.md)"
    strip = lambda text: text.replace("**", "")
    return [
        f"| load (`bench/load.sh`): 100,000 tasks at 256 in flight | wall "
        f"{strip(cell(table, 'wall time'))}; peak RSS "
        f"{strip(cell(table, 'skill-factory peak RSS')).split(' /')[0]} | {link} |",
        f"| load: time per 1,000 tasks, first and last 10% | "
        f"{strip(cell(table, 'time per 1,000 tasks, first 10%')).split(' (')[0]} and "
        f"{strip(cell(table, 'time per 1,000 tasks, last 10%')).split(' (')[0]}; RSS at 10% / 50% / "
        f"90%: {cell(table, 'skill-factory RSS at 10%')} | {link} |",
        f"| load: the cache read by second processes during the run | "
        f"{cell(table, 'cache reads by second processes')} | {link} |",
    ]


def main():
    figures = ["| what | figure | written by |", "|---|---|---|"]
    for part in (fuzz_lines, chaos_lines, kills_lines, load_lines):
        figures.extend(part())
    page = PAGE.read_text()
    if BEGIN not in page or END not in page:
        sys.exit(f"{PAGE}: the {BEGIN} and {END} lines are missing")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    PAGE.write_text(head + BEGIN + "\n" + "\n".join(figures) + "\n" + END + tail)


if __name__ == "__main__":
    main()
