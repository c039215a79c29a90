"""The trials of bench/kills.sh: start a command, SIGKILL it after a seeded random delay, check
what it left on disk, rerun it to completion in the same folder and compare with a reference.

    python3 kills_trials.py run --kind skill|classifier --template DIR --work DIR --ours BIN \
        --mock NAME=URL [--mock NAME=URL] --kills N --seed S [--max-delay SECONDS] --out JSON
    python3 kills_trials.py report --out MD --setting TEXT JSON...

`run` makes its folders under --work: ref1/ and ref2/ (two uninterrupted runs on empty folders:
the reference, and a check that the command is deterministic), a rerun of ref1 in place (what a
second run of a finished folder does), then trial-NNN/ for every kill, each a fresh copy of
--template. The command runs in <folder>/tickets for `skill` (`optimize -c config.yaml -o runs`)
and in <folder> for `classifier` (`optimize -c bench.yaml`, workspace `ws`). It writes every
figure into --out (JSON) and prints one line per trial on stderr. `report` turns those files into
the Markdown of bench/results/kills.md and exits 1 when a trial failed a check.
"""

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

# result.json fields that differ between two equal skill runs (ids, times, spending: a replayed
# call is counted as cached, not as paid). crates/skill-factory-cli/tests/it/optimize_cache.rs
# drops the same ones.
SKILL_VOLATILE = ["run_id", "started_at", "finished_at", "elapsed_seconds", "usage", "cost_usd",
                  "unpriced_models"]
# A classifier workspace's result.json and history.json: times and spending.
CLASSIFIER_VOLATILE = ["started_at", "finished_at"]
SPENDING = ["usd", "input_tokens"]


# ---------------------------------------------------------------- the command and its folders

class Command:
    def __init__(self, kind, ours):
        self.kind = kind
        self.ours = ours

    def cwd(self, folder):
        return folder / "tickets" if self.kind == "skill" else folder

    def argv(self):
        if self.kind == "skill":
            return [self.ours, "optimize", "-c", "config.yaml", "-o", "runs"]
        return [self.ours, "optimize", "-c", "bench.yaml"]

    def outputs(self, folder):
        """The folders the command writes (run folders, caches, workspace)."""
        cwd = self.cwd(folder)
        if self.kind == "skill":
            return [cwd / "runs", cwd / ".skill-factory"]
        return [cwd / "ws"]

    def shown(self):
        return " ".join(["skill-factory"] + self.argv()[1:])


def members(group):
    """Processes in process group `group` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[2]) == group:
            found.append(int(entry))
    return found


# ---------------------------------------------------------------- the mocks' counters

def stats(url):
    with urllib.request.urlopen(url + "/stats", timeout=10) as response:
        return json.load(response)


def counters(mocks):
    """Every mock's counters once they stop moving: a killed client's last requests may still be
    on their way into the mock, and its in-flight ones are still being answered."""
    last = None
    deadline = time.monotonic() + 5
    while True:
        now = {name: stats(url) for name, url in mocks.items()}
        quiet = all(s.get("in_flight", 0) == 0 for s in now.values())
        if (quiet and now == last) or time.monotonic() > deadline:
            break
        last = now
        time.sleep(0.05)
    flat = {}
    for name, s in now.items():
        flat[name] = s["requests"]
        if "questions" in s:
            flat[name + "_questions"] = s["questions"]
    return flat


def minus(after, before):
    return {key: after[key] - before[key] for key in after}


# ---------------------------------------------------------------- what a run left on disk

def jsonl_lines(path):
    """(lines that parse, index of a torn last line or None, indexes of other bad lines)."""
    data = path.read_bytes()
    pieces = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    if ends_with_newline or data == b"":
        pieces = pieces[:-1]
    good, torn, bad = [], None, []
    for index, piece in enumerate(pieces):
        try:
            json.loads(piece.decode("utf-8"))
            good.append(piece.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            if index == len(pieces) - 1 and not ends_with_newline:
                torn = index
            else:
                bad.append(index + 1)
    return good, torn, bad


def sqlite_check(path, scratch, ours):
    """PRAGMA integrity_check (python's sqlite3) and `cache stats --path` on two copies of the
    file with its -wal and -shm, so that neither check touches the file the rerun opens."""
    out = {"file": str(path), "integrity": None, "entries": None, "stats_rc": None,
           "beside": [path.name + suffix for suffix in ("-wal", "-shm", "-journal")
                      if Path(str(path) + suffix).exists()]}
    copies = {}
    for use in ("py", "cli"):
        folder = scratch / use
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for suffix in ("", "-wal", "-shm", "-journal"):
            source = Path(str(path) + suffix)
            if source.exists():
                shutil.copy2(source, folder / (path.name + suffix))
        copies[use] = folder / path.name
    try:
        connection = sqlite3.connect(copies["py"])
        rows = connection.execute("PRAGMA integrity_check").fetchall()
        out["integrity"] = "; ".join(str(row[0]) for row in rows)
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "responses" in tables:
            out["entries"] = connection.execute("SELECT count(*) FROM responses").fetchone()[0]
        connection.close()
    except sqlite3.Error as error:
        out["integrity"] = f"error: {error}"
    stats_run = subprocess.run([ours, "cache", "stats", "--path", str(copies["cli"])],
                               capture_output=True, text=True)
    out["stats_rc"] = stats_run.returncode
    if stats_run.returncode != 0:
        out["stats_err"] = stats_run.stderr.strip()[-500:]
    return out


def walk(root):
    """Every path below `root`, sorted, without following symbolic links."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            found.append(Path(folder) / name)
    return sorted(found)


def inspect(command, folder, scratch, strict, roots=None):
    """Everything the command left under `folder` (or under `roots`): caches, JSON files,
    JSON-lines logs (a torn last line is allowed unless `strict`), `latest` links, temporary
    files."""
    report = {"sqlite": [], "torn": [], "problems": [], "tmp": [], "answers": None}
    base = command.cwd(folder)
    roots = [r for r in (roots or command.outputs(folder)) if r.exists()]
    for root in roots:
        for path in walk(root):
            relative = str(path.relative_to(base))
            name = path.name
            if ".tmp" in name:
                report["tmp"].append(relative)
                if not name.startswith("."):
                    report["problems"].append(f"{relative}: a temporary file a reader may take "
                                              "for a real one")
                continue
            if path.is_symlink():
                if name == "latest" and not path.resolve().is_dir():
                    report["problems"].append(f"{relative} points at {os.readlink(path)}, "
                                              "which is not a folder")
                continue
            if not path.is_file():
                continue
            if name.endswith(".sqlite"):
                check = sqlite_check(path, scratch, command.ours)
                report["sqlite"].append(check)
                if check["integrity"] != "ok":
                    report["problems"].append(f"{relative}: integrity_check says "
                                              f"{check['integrity']}")
                if check["stats_rc"] != 0:
                    beside = ", ".join(check["beside"]) or "nothing"
                    report["problems"].append(
                        f"{relative} (beside it: {beside}): `cache stats --path` on a copy "
                        f"exited {check['stats_rc']}: {check.get('stats_err', '')}")
            elif name.endswith((".sqlite-wal", ".sqlite-shm", ".sqlite-journal")):
                continue
            elif name.endswith(".jsonl"):
                good, torn, bad = jsonl_lines(path)
                if torn is not None:
                    report["torn"].append(relative)
                    if strict:
                        report["problems"].append(f"{relative}: the last line is cut off")
                for line in bad:
                    report["problems"].append(f"{relative}: line {line} does not parse")
                if name == "answers.jsonl":
                    report["answers"] = good
            elif name.endswith(".json"):
                try:
                    json.loads(path.read_text(encoding="utf-8"))
                except (UnicodeDecodeError, ValueError) as error:
                    report["problems"].append(f"{relative}: does not parse ({error})")
            else:
                try:
                    path.read_text(encoding="utf-8")
                except UnicodeDecodeError as error:
                    report["problems"].append(f"{relative}: not UTF-8 ({error})")
    return report


def kept(command, report):
    """What the killed run had stored and the rerun must not pay for again."""
    entries = {}
    for check in report["sqlite"]:
        entries[Path(check["file"]).name] = check["entries"] or 0
    if command.kind == "skill":
        return {"chat": entries.get("cache.sqlite", 0)}
    answers = report["answers"] or []
    return {"systemone_questions": len(set(answers)),
            "proposer": entries.get("proposals.sqlite", 0)}


# ---------------------------------------------------------------- the result to compare

def drop(value, keys):
    if isinstance(value, dict):
        return {k: drop(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [drop(v, keys) for v in value]
    return value


def outcome(command, folder):
    """What two equal runs have in common (None for a part that is missing or unreadable)."""
    cwd = command.cwd(folder)

    def load(path):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    if command.kind == "skill":
        result = load(cwd / "runs/latest/result.json")
        if isinstance(result, dict):
            for key in SKILL_VOLATILE:
                result.pop(key, None)
        return {"result.json": result}
    ws = cwd / "ws"
    result = load(ws / "result.json")
    history = load(ws / "history.json")
    probeset = (ws / "probeset.json").read_text(encoding="utf-8") \
        if (ws / "probeset.json").exists() else None
    answers = None
    if (ws / "answers.jsonl").exists():
        answers = sorted(set(ws.joinpath("answers.jsonl").read_text(encoding="utf-8")
                             .splitlines()))
    scores = None
    if isinstance(result, dict):
        scores = {k: result.get(k) for k in ("baseline_score", "best_score")}
        for key in CLASSIFIER_VOLATILE:
            result.pop(key, None)
        result = drop(result, SPENDING)
    return {
        "probeset.json": probeset,
        "best and baseline score": scores,
        "answers.jsonl lines": answers,
        "result.json": result,
        "history.json": drop(history, SPENDING) if history is not None else None,
    }


def differences(got, want):
    """The parts of `got` that differ from `want`, each with a hint of where."""
    out = []
    for part, expected in want.items():
        actual = got.get(part)
        if actual == expected:
            continue
        hint = ""
        if isinstance(actual, dict) and isinstance(expected, dict):
            keys = sorted(k for k in set(actual) | set(expected)
                          if actual.get(k) != expected.get(k))
            hint = f" (keys {', '.join(keys)})"
        elif isinstance(actual, list) and isinstance(expected, list) and part.endswith("lines"):
            hint = (f" ({len(set(actual) - set(expected))} lines not in the reference, "
                    f"{len(set(expected) - set(actual))} missing)")
        elif actual is None:
            hint = " (missing or unreadable)"
        out.append(part + hint)
    return out


# ---------------------------------------------------------------- running

def fresh(template, folder):
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(template, folder, symlinks=True)


def run_to_end(command, folder, log):
    """Runs the command to its end; its output goes to LOG.out and LOG.err."""
    started = time.monotonic()
    with open(f"{log}.out", "wb") as out, open(f"{log}.err", "wb") as err:
        process = subprocess.Popen(command.argv(), cwd=command.cwd(folder), stdout=out,
                                   stderr=err, start_new_session=True)
        rc = process.wait(timeout=600)
    return rc, time.monotonic() - started


def tail(path, lines=5):
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def reference(command, template, work, mocks):
    refs = {}
    for name in ("ref1", "ref2"):
        folder = work / name
        fresh(template, folder)
        before = counters(mocks)
        rc, seconds = run_to_end(command, folder, work / name)
        if rc != 0:
            sys.exit(f"the uninterrupted run in {folder} exited {rc}:\n"
                     f"{tail(work / f'{name}.err')}")
        refs[name] = {"seconds": seconds, "requests": minus(counters(mocks), before),
                      "outcome": outcome(command, folder)}
        report = inspect(command, folder, work / "scratch", strict=True)
        if report["problems"]:
            sys.exit(f"the uninterrupted run left problems in {folder}: {report['problems']}")
        print(f"{command.kind} {name}: {seconds:.3f} s, requests {refs[name]['requests']}",
              file=sys.stderr)
    if refs["ref1"]["outcome"] != refs["ref2"]["outcome"] or \
            refs["ref1"]["requests"] != refs["ref2"]["requests"]:
        sys.exit(f"two uninterrupted runs on empty folders differ "
                 f"({differences(refs['ref2']['outcome'], refs['ref1']['outcome'])}, requests "
                 f"{refs['ref1']['requests']} and {refs['ref2']['requests']}): the command is "
                 f"not deterministic, so a rerun cannot be compared with a reference; see "
                 f"{work}/ref1 and {work}/ref2")
    # A second run of the finished ref1, in place.
    time.sleep(1.05)  # a new run folder of its own second
    before = counters(mocks)
    rc, seconds = run_to_end(command, work / "ref1", work / "again")
    if rc != 0:
        sys.exit(f"the second run of {work}/ref1 exited {rc}")
    again = {"seconds": seconds, "requests": minus(counters(mocks), before),
             "outcome": outcome(command, work / "ref1")}
    again["identical"] = again["outcome"] == refs["ref1"]["outcome"]
    again["differences"] = differences(again["outcome"], refs["ref1"]["outcome"])
    print(f"{command.kind} a second run of ref1: {seconds:.3f} s, requests {again['requests']}, "
          f"{'identical' if again['identical'] else 'differs: ' + ', '.join(again['differences'])}",
          file=sys.stderr)
    if command.kind == "skill" and not again["identical"]:
        sys.exit(f"a second run of a finished skill run differs from the first "
                 f"({again['differences']}): see {work}/ref1")
    return refs["ref1"], refs["ref2"], again


def trial(command, template, work, mocks, index, delay, ref, again):
    folder = work / f"trial-{index:03d}"
    fresh(template, folder)
    record = {"trial": index, "delay": round(delay, 4), "folder": str(folder), "failures": []}
    fail = record["failures"].append
    before = counters(mocks)
    log = work / f"trial-{index:03d}"
    with open(str(log) + ".killed.out", "wb") as out, \
            open(str(log) + ".killed.err", "wb") as err:
        process = subprocess.Popen(command.argv(), cwd=command.cwd(folder), stdout=out,
                                   stderr=err, start_new_session=True)
        started = time.monotonic()
        time.sleep(max(0.0, delay - (time.monotonic() - started)))
        group = members(process.pid)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        rc = process.wait()
        record["killed_at"] = round(time.monotonic() - started, 4)
    record["landed"] = rc == -signal.SIGKILL
    record["exit"] = rc
    record["group"] = len(group)
    if not record["landed"] and rc != 0:
        fail(f"the run exited {rc} by itself before the kill: {tail(Path(str(log) + '.killed.err'))}")
    killed_counts = counters(mocks)
    record["killed_requests"] = minus(killed_counts, before)

    # (a) and (b): the caches and the files the killed run left.
    report = inspect(command, folder, work / "scratch", strict=False)
    record["torn"] = report["torn"]
    record["tmp"] = report["tmp"]
    record["sqlite"] = [{k: v for k, v in check.items() if k != "file"} | {
        "name": Path(check["file"]).name} for check in report["sqlite"]]
    # The caches: SQLite files, and the lab's answers.jsonl.
    is_cache = lambda problem: ".sqlite" in problem or "answers.jsonl" in problem  # noqa: E731
    record["cache_problems"] = [p for p in report["problems"] if is_cache(p)]
    record["folder_problems"] = [p for p in report["problems"] if not is_cache(p)]
    for problem in report["problems"]:
        fail(problem)
    record["kept"] = kept(command, report)
    # The files the killed run left: its run folders' (skill), its workspace's (classifier).
    cwd = command.cwd(folder)
    if command.kind == "skill":
        record["left"] = sorted(str(p.relative_to(cwd / "runs")) for p in walk(cwd / "runs")
                                if p.is_file() and not p.is_symlink()) \
            if (cwd / "runs").exists() else []
    else:
        record["left"] = sorted(p.name for p in (cwd / "ws").iterdir()) \
            if (cwd / "ws").exists() else []
    # A classifier run writes its outcome in the order seed.json, probeset.json, policy.json,
    # history.json, result.json and last pool.json (then report.md and splits.svg). Killed
    # after pool.json, it left a finished workspace: rerunning one continues from it (pool.json
    # holds the proposed questions), as the second run of ref1 did, so that run is the
    # reference. Killed before pool.json, it left half an outcome: the rerun must still end as
    # the uninterrupted run did.
    record["continues"] = command.kind == "classifier" and "pool.json" in record["left"]
    record["half_outcome"] = command.kind == "classifier" and "seed.json" in record["left"] \
        and "pool.json" not in record["left"]

    # (c) and (d): the rerun.
    before = killed_counts
    rc, seconds = run_to_end(command, folder, f"{log}.rerun")
    record["rerun_seconds"] = round(seconds, 3)
    record["rerun_requests"] = minus(counters(mocks), before)
    if rc != 0:
        fail(f"the rerun exited {rc}: {tail(Path(str(log) + '.rerun.err'))}")
    want = again if record["continues"] else ref
    got = outcome(command, folder)
    diff = differences(got, want["outcome"])
    record["identical"] = not diff
    if diff:
        fail("the rerun's result differs from the "
             f"{'second run of the reference' if record['continues'] else 'reference'}: "
             + "; ".join(diff))
    if record["continues"]:
        expected = dict(again["requests"])
    else:
        expected = dict(ref["requests"])
        for key, count in record["kept"].items():
            if key in expected:
                expected[key] = expected[key] - count
    # System One answers are batched per example, so its requests follow no formula; its
    # questions do.
    expected.pop("systemone", None)
    record["expected_requests"] = expected
    record["paid_only_missing"] = True
    for key, count in expected.items():
        actual = record["rerun_requests"][key]
        if actual != count:
            record["paid_only_missing"] = False
            fail(f"the rerun sent {actual} {key.replace('_', ' ')} where {count} were missing "
                 f"(uninterrupted: {ref['requests'][key]}, kept by the killed run: "
                 f"{record['kept'].get(key, 0)})")
    # The rerun's files must be whole (the killed run's own run folder keeps what it had).
    roots = None
    if command.kind == "skill":
        runs = command.cwd(folder) / "runs"
        roots = [command.cwd(folder) / ".skill-factory", runs / "latest"]
        if (runs / "latest").is_symlink():
            roots[1] = runs / os.readlink(runs / "latest")
        else:
            fail("after the rerun: runs/latest is missing")
    after = inspect(command, folder, work / "scratch", strict=True, roots=roots)
    for problem in after["problems"]:
        fail("after the rerun: " + problem)
    return record


def run(args):
    command = Command(args.kind, args.ours)
    template = Path(args.template)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    mocks = dict(item.split("=", 1) for item in args.mock)
    started = time.monotonic()
    ref, ref2, again = reference(command, template, work, mocks)
    max_delay = float(args.max_delay) if args.max_delay else \
        statistics.mean([ref["seconds"], ref2["seconds"]])
    rng = random.Random(f"{args.seed}:{args.kind}")
    min_delay = float(args.min_delay or 0)
    # Trials go on until `kills` of them killed a live process (a delay past the run's end
    # kills nothing), with at most twice as many trials.
    trials = []
    index = 0
    while sum(t["landed"] for t in trials) < args.kills and index < 2 * args.kills:
        index += 1
        delay = rng.uniform(min_delay, max_delay)
        record = trial(command, template, work, mocks, index, delay, ref, again)
        trials.append(record)
        state = "killed" if record["landed"] else "had exited"
        if record["continues"]:
            state += " (after its outcome was written)"
        elif record["half_outcome"]:
            state += " (halfway through writing its outcome: " + ", ".join(record["left"]) + ")"
        print(f"{args.kind} {index:3d} ({sum(t['landed'] for t in trials)}/{args.kills} kills): delay {delay:.3f} s, {state}; kept "
              f"{record['kept']}; torn {record['torn'] or '-'}; rerun {record['rerun_requests']} "
              f"(missing {record['expected_requests']}); "
              f"{'identical' if record['identical'] else 'DIFFERS'}"
              f"{'; FAILED: ' + ' | '.join(record['failures']) if record['failures'] else ''}",
              file=sys.stderr)
        if not record["failures"] and not args.keep:
            shutil.rmtree(record["folder"], ignore_errors=True)
    json.dump({
        "kind": args.kind, "command": command.shown(), "mock_line": args.mock_line,
        "max_delay": max_delay, "min_delay": min_delay, "reference": {k: v for k, v in ref.items() if k != "outcome"},
        "reference2": {k: v for k, v in ref2.items() if k != "outcome"},
        "again": {k: v for k, v in again.items() if k != "outcome"},
        "trials": trials, "seconds": time.monotonic() - started,
    }, open(args.out, "w"), indent=1)


# ---------------------------------------------------------------- the Markdown

ASKED = {"chat": "request", "systemone": "System One request",
         "systemone_questions": "question", "proposer": "proposer request"}
KEPT = {"chat": "cache entr|y|ies", "systemone_questions": "answer", "proposer": "proposal"}


def fmt_requests(counts, names=None):
    """`{"chat": 3}` as "3 requests" (KEPT names: what a killed run had stored)."""
    out = []
    for key, value in counts.items():
        name = (names or ASKED).get(key, key)
        stem, one, many = (name.split("|") + ["", "s"])[:3] if "|" in name else (name, "", "s")
        out.append(f"{value:g} {stem}{one if value == 1 else many}")
    return ", ".join(out)


def mean_requests(trials, field):
    keys = trials[0][field].keys() if trials else []
    return {key: statistics.mean(t[field][key] for t in trials) for key in keys}


def report(args):
    runs = [json.load(open(path)) for path in args.files]
    titles = {"skill": "A: skill `optimize` (chat mock)",
              "classifier": "B: classifier lab `optimize` (System One mock)"}
    rows = []

    def row(label, values):
        rows.append(f"| {label} | " + " | ".join(values) + " |")

    def each(function):
        return [function(r) for r in runs]

    def count(r, predicate):
        return sum(1 for t in r["trials"] if predicate(t))

    row("command", each(lambda r: f"`{r['command']}`"))
    row("mock", each(lambda r: r["mock_line"]))
    row("uninterrupted run (twice, on empty folders: identical)",
        each(lambda r: f"{r['reference']['seconds']:.2f} s and {r['reference2']['seconds']:.2f} s; "
                       f"{fmt_requests(r['reference']['requests'])}"))
    row("a second run of the finished folder",
        each(lambda r: f"{r['again']['seconds']:.2f} s; {fmt_requests(r['again']['requests'])}; "
                       + ("identical" if r["again"]["identical"] else
                          "differs in " + ", ".join(r["again"]["differences"]))))
    row("trials (kill delay drawn uniformly in [min, max])",
        each(lambda r: f"{len(r['trials'])} ([{r['min_delay']:.3f}, {r['max_delay']:.3f}] s)"))
    row("kills that landed while the process was alive",
        each(lambda r: str(count(r, lambda t: t["landed"]))))
    row("kills after the process had exited (not counted as kills)",
        each(lambda r: str(count(r, lambda t: not t["landed"]))))
    row("processes in the killed process group (most)",
        each(lambda r: str(max((t["group"] for t in r["trials"]), default=0))))
    row("caches intact (`PRAGMA integrity_check` ok, `cache stats --path` exit 0)",
        each(lambda r: f"{count(r, lambda t: not t['cache_problems'])}/{len(r['trials'])} "
                       f"({count(r, lambda t: not t['sqlite'])} with no SQLite file yet; "
                       f"{sum(len(t['sqlite']) for t in r['trials'])} files checked)"))
    row("run folders / workspace readable",
        each(lambda r: f"{count(r, lambda t: not t['folder_problems'])}/{len(r['trials'])}"))
    row("torn last lines seen",
        each(lambda r: torn_summary(r["trials"])))
    row("leftover temporary files",
        each(lambda r: tmp_summary(r["trials"])))
    row("kills that landed after the outcome was written (rerun compared with the second run)",
        each(lambda r: str(count(r, lambda t: t["continues"] and t["landed"]))
             if r["kind"] == "classifier" else "-"))
    row("kills that landed halfway through writing the outcome (seed.json, no pool.json)",
        each(lambda r: str(count(r, lambda t: t["half_outcome"]))
             if r["kind"] == "classifier" else "-"))
    row("identical reruns (classifier: to the second run when the outcome had been written)",
        each(lambda r: f"{count(r, lambda t: t['identical'])}/{len(r['trials'])}"))
    row("reruns that asked exactly what the cache lacked",
        each(lambda r: f"{count(r, lambda t: t['paid_only_missing'])}/{len(r['trials'])}"))
    row("mean requests of a killed run",
        each(lambda r: fmt_requests({k: round(v, 1) for k, v in
                                     mean_requests(r["trials"], "killed_requests").items()})))
    row("mean requests of a rerun (uninterrupted run in brackets)",
        each(lambda r: fmt_requests({k: round(v, 1) for k, v in
                                     mean_requests(r["trials"], "rerun_requests").items()})
             + f" ({fmt_requests(r['reference']['requests'])})"))
    row("trials that failed a check",
        each(lambda r: str(count(r, lambda t: t["failures"]))))
    row("total time", each(lambda r: f"{r['seconds']:.0f} s"))

    failures = [(r, t) for r in runs for t in r["trials"] if t["failures"]]
    out = ["# SIGKILL survival", "",
           f"Written by `bash bench/kills.sh` {args.setting}", "",
           "Each trial starts the command in a fresh folder, sends SIGKILL to its process group "
           "after a seeded random delay, then checks (a) every SQLite file it left (a copy of it "
           "with its -wal and -shm: `PRAGMA integrity_check` through python3's sqlite3, and "
           "`skill-factory cache stats --path`), (b) every JSON file parses, every line of every "
           "JSON-lines file parses but a torn last line (counted), `latest` points at a folder, "
           "temporary files are listed, (c) reruns the command to completion in the same folder "
           "and compares its result with an uninterrupted run's (skill: `runs/latest/result.json` "
           "without ids, times and spending; classifier: `probeset.json`, best and baseline "
           "score, the set of `answers.jsonl` lines, `result.json` and `history.json` without "
           "times and spending), (d) counts what the rerun asked the mocks against what the "
           "killed run had already stored (cache entries; answers and proposals). A classifier "
           "run writes its outcome in the order `seed.json`, `probeset.json`, `policy.json`, "
           "`history.json`, `result.json` and last `pool.json` (then `report.md` and "
           "`splits.svg`). Killed after `pool.json`, it left a finished workspace, and a rerun "
           "of a finished workspace continues from it (`pool.json` keeps the proposed "
           "questions), so its rerun is compared with the second run of the finished reference "
           "workspace instead. Kills halfway through that sequence are compared with the "
           "uninterrupted run.", "",
           "| | " + " | ".join(titles[r["kind"]] for r in runs) + " |",
           "|---|" + "---|" * len(runs)]
    out += rows
    out += ["", "## Failures", ""]
    if failures:
        for r, t in failures:
            out.append(f"- {r['kind']} trial {t['trial']} (delay {t['delay']} s, "
                       f"{'killed' if t['landed'] else 'had exited'}): "
                       + " | ".join(t["failures"]))
    else:
        out.append("None.")
    out += ["", "<details><summary>Every trial</summary>", ""]
    for r in runs:
        out += [f"### {titles[r['kind']]}", "",
                "| trial | delay s | killed at s | alive | kept | torn last lines | rerun asked |"
                " identical | failures |",
                "|---:|---:|---:|---|---|---|---|---|---|"]
        for t in r["trials"]:
            out.append(f"| {t['trial']} | {t['delay']:.3f} | {t['killed_at']:.3f} | "
                       f"{'yes' if t['landed'] else 'no'} | {fmt_requests(t['kept'], KEPT)} | "
                       f"{', '.join(t['torn']) or '-'} | {fmt_requests(t['rerun_requests'])} | "
                       f"{'yes' if t['identical'] else 'NO'} | {len(t['failures']) or '-'} |")
        out.append("")
    out.append("</details>")
    Path(args.out).write_text("\n".join(out) + "\n", encoding="utf-8")
    for r, t in failures:
        print(f"FAILED {r['kind']} trial {t['trial']} ({t['folder']}): "
              + " | ".join(t["failures"]), file=sys.stderr)
    return 1 if failures else 0


def torn_summary(trials):
    files = {}
    for t in trials:
        for path in t["torn"]:
            name = Path(path).name
            files[name] = files.get(name, 0) + 1
    total = sum(files.values())
    if not total:
        return "0"
    return f"{total} (" + ", ".join(f"{name} {n}" for name, n in sorted(files.items())) + ")"


def tmp_summary(trials):
    found = [path for t in trials for path in t["tmp"]]
    if not found:
        return "0"
    shapes = {}
    for path in found:
        name = Path(path).name
        # .NAME.PID.N.tmp / .latest.PID.tmp: the process id and counter vary.
        shape = ".".join(p if not p.isdigit() else "N" for p in name.split("."))
        shapes[shape] = shapes.get(shape, 0) + 1
    hidden = all(Path(path).name.startswith(".") for path in found)
    return f"{len(found)} in {sum(1 for t in trials if t['tmp'])} trials (" + \
        ", ".join(f"`{s}` {n}" for s, n in sorted(shapes.items())) + \
        ("; every one a hidden dot file, left in the killed run's own folder)" if hidden else ")")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=["skill", "classifier"], required=True)
    r.add_argument("--template", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--ours", required=True)
    r.add_argument("--mock", action="append", required=True)
    r.add_argument("--mock-line", default="")
    r.add_argument("--kills", type=int, required=True)
    r.add_argument("--seed", default="1")
    r.add_argument("--max-delay", default="")
    r.add_argument("--min-delay", default="")
    r.add_argument("--keep", action="store_true")
    r.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--setting", default="")
    p.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.what == "run":
        run(args)
        return 0
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
