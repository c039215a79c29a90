"""The runs and checks of bench/chaos.sh: every command that talks to a model, against a mock
that spoils about 30% of its requests, with every rollout accounted for.

    python3 chaos_check.py tasks OUT_DIR --tasks N
    python3 chaos_check.py classifier-config CONFIG SYSTEMONE_URL TIMEOUT MAX_RETRIES
    python3 chaos_check.py run --kind evaluate|optimize|classifier --name NAME --ours BIN \
        --storm-dir DIR --storm-url URL --calm-dir DIR --calm-url URL [options] --out JSON
    python3 chaos_check.py report --out MD --setting TEXT JSON...

`tasks` writes labelled tasks (tests/it/common/mod.rs `labelled_tasks`: task t{i} expects
label{i}, the mock answers every third one wrong), the mock's answers and a skill.
`classifier-config` prints examples/pr-mismatch/config.offline.yaml with its workspace at `ws`
and System One at the stub (the scripted proposer kept). `run` runs one command in the storm
folder and in the calm folder (the command in each folder's config.yaml or bench.yaml), checks
it and writes its figures as JSON; every command is killed (and counted as a hang) after
--command-timeout seconds. `report` turns those files into bench/results/chaos.md and exits 1
when a check failed.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

FAULTS = ["rate_limit", "rate_limit_bare", "server_error", "hang", "malformed", "reset",
          "cut_body", "slowloris"]
# result.json fields that differ between two equal skill runs (kills_trials.py drops the same).
SKILL_VOLATILE = ["run_id", "started_at", "finished_at", "elapsed_seconds", "usage", "cost_usd",
                  "unpriced_models"]


# ---------------------------------------------------------------- preparing

def tasks(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "skill.md").write_text("---\nname: echo\ndescription: Echo.\n---\nAnswer with the label.\n")
    with open(out / "data.jsonl", "w") as data, open(out / "answers.jsonl", "w") as answers:
        for i in range(args.tasks):
            text = f"message number {i}"
            data.write(json.dumps({"id": f"t{i}", "input": text, "expected": f"label{i}"}) + "\n")
            answers.write(json.dumps({"input": text,
                                      "output": "wrong" if i % 3 == 0 else f"label{i}"}) + "\n")
    return 0


def classifier_config(args):
    lines = Path(args.config).read_text(encoding="utf-8").splitlines()
    keys = {"workspace:": "workspace: ws",
            "systemone:": "systemone: " + json.dumps(
                {"provider": "custom", "base_url": args.systemone, "model": "jev-latest",
                 "timeout": float(args.timeout), "max_retries": int(args.max_retries)})}
    out = []
    for line in lines:
        key = next((k for k in keys if line.startswith(k)), None)
        out.append(keys.pop(key) if key else line)
    if keys:
        sys.exit(f"{args.config} has no line starting with {', '.join(keys)}: update bench/chaos_check.py")
    print("\n".join(out))
    return 0


# ---------------------------------------------------------------- running

def stats(url):
    with urllib.request.urlopen(url + "/stats", timeout=10) as response:
        return json.load(response)


def settled(url):
    """The mock's counters once they stop moving (the last requests of a command that has
    exited may still be on their way in; a hung one stays in flight, so that is not waited
    for). At most 5 s."""
    deadline = time.monotonic() + 5
    last = stats(url)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = stats(url)
        if now["requests"] == last["requests"] and now["faults"] == last["faults"]:
            return now
        last = now
    return last


def minus(after, before):
    return {"requests": after["requests"] - before["requests"],
            "questions": after.get("questions", 0) - before.get("questions", 0),
            "faults": {k: after["faults"].get(k, 0) - before["faults"].get(k, 0) for k in FAULTS}}


CURRENT = []  # the process group a run is waiting for, killed when this script is stopped


def stop(signum, frame):
    for process in CURRENT:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def run(argv, cwd, log, url, timeout):
    """One command to its end (or killed after `timeout` s): exit code, seconds, what the mock
    at `url` saw meanwhile, stdout and stderr."""
    before = stats(url)
    started = time.monotonic()
    hung = False
    done = threading.Event()
    in_flight = []

    def sample():
        # The chat mock's requests in flight every 0.1 s (the System One stub has no such count).
        while not done.wait(0.1):
            try:
                now = stats(url)
            except OSError:
                continue
            if "in_flight" in now:
                in_flight.append(now["in_flight"])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with open(f"{log}.out", "wb") as out, open(f"{log}.err", "wb") as err:
        process = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        CURRENT.append(process)
        try:
            rc = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            os.killpg(process.pid, signal.SIGKILL)
            rc = process.wait()
        finally:
            CURRENT.remove(process)
            done.set()
    seconds = time.monotonic() - started
    sampler.join()
    seen = minus(settled(url), before)
    if in_flight:
        seen["in_flight"] = {"mean": round(sum(in_flight) / len(in_flight), 1), "max": max(in_flight),
                             "samples": len(in_flight)}
    text_out = Path(f"{log}.out").read_text(errors="replace")
    text_err = Path(f"{log}.err").read_text(errors="replace")
    phase = {"rc": rc, "seconds": round(seconds, 3), "hung": hung, **seen,
             "log": str(log)}
    model_calls = re.search(r"^Model calls: ([\d,]+) answered from the cache, ([\d,]+) asked"
                            r"(?: \(([\d,]+) HTTP requests? sent\))?", text_err, re.M)
    if model_calls:
        number = lambda s: int(s.replace(",", "")) if s else None  # noqa: E731
        phase["cached"], phase["asked"], phase["cli_requests"] = map(number, model_calls.groups())
    return phase, text_out, text_err


def tail(text, lines=6):
    return "\n".join(text.strip().splitlines()[-lines:])


def normalise(reason):
    """A failure reason without what differs between two equal failures (the mock's port)."""
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", reason.strip())


def attempts_of(reason, default):
    found = re.search(r"after (\d+) attempts?", reason)
    return int(found.group(1)) if found else default


class Checks:
    def __init__(self):
        self.problems, self.notes, self.passed = [], [], []

    def check(self, ok, what, detail=""):
        """Records `what` as passed, or as a problem with `detail`."""
        if ok:
            self.passed.append(what)
        else:
            self.problems.append(what + (f": {detail}" if detail else ""))
        return ok

    def common(self, label, phase, err):
        self.check(not phase["hung"], f"{label}: ended by itself",
                   f"killed after the command timeout (a hang); see {phase['log']}.err")
        self.check("panicked" not in err, f"{label}: no panic", tail(err))

    def identity(self, label, phase, answered):
        """Every request the mock did not spoil was one answered call, and the CLI counted
        every HTTP request the mock received."""
        faults = sum(phase["faults"].values())
        if phase.get("cli_requests") is not None:
            self.check(phase["cli_requests"] == phase["requests"],
                       f"{label}: the CLI's count of HTTP requests is the mock's",
                       f"the CLI says {phase['cli_requests']}, the mock received {phase['requests']}")
        if answered is not None:
            self.check(phase["requests"] - faults == answered,
                       f"{label}: requests not spoiled = calls answered",
                       f"{phase['requests']} requests - {faults} spoiled = "
                       f"{phase['requests'] - faults}, but {answered} calls were answered")


# ---------------------------------------------------------------- evaluate

def run_evaluate(args, checks):
    argv = [args.ours, "evaluate", "--json", "-c", "config.yaml"]
    storm_dir, calm_dir = Path(args.storm_dir), Path(args.calm_dir)
    ids = [json.loads(line)["id"] for line in (storm_dir / "data.jsonl").read_text().splitlines()
           if line.strip()]
    figures = {"command": "skill-factory evaluate --json -c config.yaml", "phases": {}}

    def evaluate(label, folder, url):
        phase, out, err = run(argv, folder, Path(args.logs) / f"{args.name}-{label}", url,
                              args.command_timeout)
        figures["phases"][label] = phase
        checks.common(label, phase, err)
        try:
            report = json.loads(out)
        except ValueError as error:
            checks.check(False, f"{label}: the --json report parses", f"{error}; {tail(err)}")
            return phase, None
        return phase, report

    def account(label, phase, report):
        """Every task once in the report, scored or failed with a reason and a score of 0."""
        items = report.get("items", [])
        by_id = {}
        bad, bad_ids = [], set()
        for item in items:
            if item.get("id") in by_id:
                bad.append(f"{item.get('id')} twice")
                bad_ids.add(item.get("id"))
            by_id[item.get("id")] = item
            reason = item.get("error")
            if reason is None:
                if not isinstance(item.get("output"), str) or not isinstance(item.get("score"), (int, float)):
                    bad.append(f"{item.get('id')}: scored without an output or a score")
                    bad_ids.add(item.get("id"))
            elif not (isinstance(reason, str) and reason.strip()) or item.get("score") != 0:
                bad.append(f"{item.get('id')}: failed with reason {reason!r} and score {item.get('score')!r}")
                bad_ids.add(item.get("id"))
        missing = [i for i in ids if i not in by_id]
        extra = [i for i in by_id if i not in set(ids)]
        failed = [item for item in items if item.get("error") is not None]
        checks.check(not missing and not extra and not bad and len(items) == len(ids),
                     f"{label}: every task in the report once, scored or failed with a reason and score 0",
                     f"{len(missing)} missing (first {missing[:5]}), {len(extra)} unknown, "
                     f"{len(items)} items for {len(ids)} tasks; {bad[:5]}")
        checks.check(report.get("failed") == len(failed) and report.get("tasks") == len(ids),
                     f"{label}: the report's `failed` and `tasks` count its items",
                     f"failed {report.get('failed')} against {len(failed)}, tasks {report.get('tasks')}")
        all_failed = len(failed) == len(ids)
        checks.check(phase["rc"] == 0 or (phase["rc"] == 3 and all_failed),
                     f"{label}: exit 0 (3 only when every rollout failed)",
                     f"exit {phase['rc']} with {len(failed)} of {len(ids)} failed")
        phase["tasks"], phase["failed"] = len(ids), len(failed)
        phase["accounted"] = sum(1 for i in ids if i in by_id and i not in bad_ids)
        return by_id, failed

    # The calm twin first: the scores every task must have.
    calm_phase, calm = evaluate("calm", calm_dir, args.calm_url)
    calm_items = {}
    if calm is not None:
        calm_items, calm_failed = account("calm", calm_phase, calm)
        checks.check(not calm_failed and sum(calm_phase["faults"].values()) == 0,
                     "calm: no fault and no failed rollout", f"{len(calm_failed)} failed")

    storm_phase, storm = evaluate("storm", storm_dir, args.storm_url)
    if storm is None:
        return figures
    storm_items, failed = account("storm", storm_phase, storm)
    checks.check(storm_phase.get("asked") == len(ids) and storm_phase.get("cached") == 0,
                 "storm: every task asked once, none from the cache (an empty cache)",
                 f"{storm_phase.get('cached')} from the cache, {storm_phase.get('asked')} asked")
    checks.identity("storm", storm_phase, (storm_phase.get("asked") or 0) - len(failed))
    figures["rollouts"] = len(ids)
    figures["accounted"] = storm_phase["accounted"]
    figures["failed"] = len(failed)
    figures["reasons"] = dict(Counter(normalise(i["error"]) for i in failed).most_common())
    figures["spoiled_by_failed"] = sum(attempts_of(i["error"], args.attempts) for i in failed)
    # The scored tasks: as in the calm run.
    differ = [i for i, item in storm_items.items() if item.get("error") is None and i in calm_items
              and (item.get("score"), item.get("output")) != (calm_items[i].get("score"), calm_items[i].get("output"))]
    compared = sum(1 for i, item in storm_items.items() if item.get("error") is None and i in calm_items)
    checks.check(not differ and compared == len(ids) - len(failed),
                 "storm: every scored task has the calm run's score and output",
                 f"{len(differ)} of {compared} differ (first {differ[:5]})")
    figures["identical"] = {"compared": compared, "differ": len(differ)}

    # The rerun from the cache: only what failed is asked again.
    rerun_phase, rerun = evaluate("rerun", storm_dir, args.storm_url)
    if rerun is None:
        return figures
    rerun_items, rerun_failed = account("rerun", rerun_phase, rerun)
    checks.check(rerun_phase.get("asked") == len(failed)
                 and rerun_phase.get("cached") == len(ids) - len(failed),
                 "rerun: the cache answers every scored task, only the failed ones are asked",
                 f"{rerun_phase.get('cached')} from the cache, {rerun_phase.get('asked')} asked, "
                 f"for {len(failed)} failed")
    checks.check(len(failed) <= rerun_phase["requests"] <= len(failed) * args.attempts,
                 f"rerun: requests between the failed rollouts and {args.attempts} times them",
                 f"{rerun_phase['requests']} requests for {len(failed)} failed rollouts")
    checks.identity("rerun", rerun_phase, (rerun_phase.get("asked") or 0) - len(rerun_failed))
    changed = [i for i, item in storm_items.items() if item.get("error") is None and i in rerun_items
               and (item.get("score"), item.get("output")) != (rerun_items[i].get("score"), rerun_items[i].get("output"))]
    checks.check(not changed, "rerun: every task scored before keeps its score",
                 f"{len(changed)} changed (first {changed[:5]})")
    now_scored = [i for i in rerun_items if rerun_items[i].get("error") is None and i in calm_items
                  and storm_items.get(i, {}).get("error") is not None]
    differ_now = [i for i in now_scored if (rerun_items[i].get("score"), rerun_items[i].get("output"))
                  != (calm_items[i].get("score"), calm_items[i].get("output"))]
    checks.check(not differ_now, "rerun: the tasks it scored anew have the calm run's scores",
                 f"{len(differ_now)} of {len(now_scored)} differ")
    figures["rerun"] = {"failed": len(rerun_failed), "scored_anew": len(now_scored),
                        "reasons": dict(Counter(normalise(i["error"]) for i in rerun_failed).most_common())}
    figures["spoiled_by_failed_rerun"] = sum(attempts_of(i["error"], args.attempts) for i in rerun_failed)
    return figures


# ---------------------------------------------------------------- optimize (skill mode)

def lines_of(path, checks, what):
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            out.append(json.loads(line))
        except ValueError as error:
            checks.check(False, f"{what}: {path.name} line {number} parses", str(error))
    return out


def accounted(folder, checks, label):
    """tests/it/common/chaos.rs `assert_accounted`, ported: each evaluation that started
    finished complete with as many tasks, rollouts.jsonl holds exactly that many rollouts per
    (round, candidate, split), each scored (an output) or failed (a reason and a score of 0),
    and result.json counts the failed ones. Returns (rollouts, failed rollouts, result)."""
    try:
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        checks.check(False, f"{label}: result.json parses", str(error))
        return 0, 0, [], None
    checks.check(True, f"{label}: result.json parses")
    events = lines_of(folder / "events.jsonl", checks, label)
    rollouts = lines_of(folder / "rollouts.jsonl", checks, label)

    def key(v):
        return (v.get("round", -1) if isinstance(v.get("round"), int) else -1,
                v.get("candidate", -1) if isinstance(v.get("candidate"), int) else -1,
                v.get("split") if isinstance(v.get("split"), str) else "")

    started, finished, incomplete = Counter(), Counter(), []
    for event in events:
        if event.get("event") == "evaluation_started":
            started[key(event)] += event["tasks"]
        elif event.get("event") == "evaluation_finished":
            if event.get("complete") is not True:
                incomplete.append(event)
            finished[key(event)] += event["tasks"]
    checks.check(bool(started), f"{label}: an evaluation started", str(folder))
    checks.check(not incomplete, f"{label}: every evaluation_finished says complete: true",
                 f"{len(incomplete)} do not (first {incomplete[:1]})")
    checks.check(started == finished, f"{label}: every evaluation that started finished with its task count",
                 f"{dict((k, (started[k], finished[k])) for k in set(started) | set(finished) if started[k] != finished[k])}")
    written, failed, bad = Counter(), [], []
    for rollout in rollouts:
        written[key(rollout)] += 1
        reason = rollout.get("error")
        if reason is not None:
            failed.append(rollout)
            if not (isinstance(reason, str) and reason.strip()) or rollout.get("score") != 0:
                bad.append(f"{key(rollout)} {rollout.get('task_id')}: reason {reason!r}, score {rollout.get('score')!r}")
        elif not isinstance(rollout.get("output"), str):
            bad.append(f"{key(rollout)} {rollout.get('task_id')}: scored without an output")
    checks.check(written == started, f"{label}: rollouts.jsonl has one rollout per task of each evaluation",
                 f"{dict((k, (written[k], started[k])) for k in set(written) | set(started) if written[k] != started[k])}")
    checks.check(not bad, f"{label}: every rollout scored, or failed with a reason and score 0", "; ".join(bad[:5]))
    checks.check(result.get("failed_rollouts") == len(failed),
                 f"{label}: result.json failed_rollouts counts the failed rollouts",
                 f"{result.get('failed_rollouts')} against {len(failed)}")
    # Accounted for: a rollout of an evaluation that started, within its task count, scored or
    # failed as it should.
    good = sum(min(written[k], started[k]) for k in written) - len(bad)
    return len(rollouts), good, failed, result


def skill_outcome(result):
    return {k: v for k, v in result.items() if k not in SKILL_VOLATILE} if isinstance(result, dict) else None


def run_optimize(args, checks):
    argv = [args.ours, "optimize", "-c", "config.yaml", "-o", "runs"]
    figures = {"command": "skill-factory optimize -c config.yaml -o runs", "phases": {}}
    outcomes = {}
    for label, folder, url in (("calm", Path(args.calm_dir), args.calm_url),
                               ("storm", Path(args.storm_dir), args.storm_url)):
        phase, out, err = run(argv, folder, Path(args.logs) / f"{args.name}-{label}", url,
                              args.command_timeout)
        figures["phases"][label] = phase
        checks.common(label, phase, err)
        checks.check(phase["rc"] == 0, f"{label}: exit 0", f"exit {phase['rc']}: {tail(err)}")
        rollouts, good, failed, result = accounted(folder / "runs" / "latest", checks, label)
        phase["rollouts"], phase["failed"] = rollouts, len(failed)
        if result is None:
            continue
        checks.check(result.get("optimizer") == args.optimizer
                     and isinstance((result.get("best_skill") or {}).get("body"), str),
                     f"{label}: result.json names the optimizer and holds the best skill",
                     f"optimizer {result.get('optimizer')!r}")
        usage = result.get("usage") or {}
        phase["failed_calls"] = {part: (usage.get(part) or {}).get("failed_calls") for part in ("target", "optimizer")}
        phase["stop_reason"] = result.get("stop_reason")
        total = (usage.get("total") or {}).get("failed_calls")
        answered = phase["asked"] - total if phase.get("asked") is not None and total is not None else None
        checks.identity(label, phase, answered)
        outcomes[label] = (skill_outcome(result), failed)
        if label == "calm":
            checks.check(not failed and sum(phase["faults"].values()) == 0 and not total,
                         "calm: no fault and no failed call", f"{len(failed)} failed rollouts, {total} failed calls")
        else:
            figures["rollouts"], figures["accounted"] = rollouts, good
            figures["failed"] = len(failed)
            figures["reasons"] = dict(Counter(normalise(r["error"]) for r in failed).most_common())
            optimizer_failed = phase["failed_calls"].get("optimizer") or 0
            figures["spoiled_by_failed"] = sum(attempts_of(r["error"], args.attempts) for r in failed) \
                + optimizer_failed * args.attempts
            checks.check(rollouts > 10, "storm: more than 10 rollouts", str(rollouts))
    if "calm" in outcomes and "storm" in outcomes:
        same = outcomes["calm"][0] == outcomes["storm"][0]
        storm_phase = figures["phases"]["storm"]
        lost = sum(v or 0 for v in storm_phase.get("failed_calls", {}).values())
        figures["identical"] = {"same": same, "lost_calls": lost,
                                "differs_in": sorted(k for k in set(outcomes["calm"][0]) | set(outcomes["storm"][0])
                                                     if outcomes["calm"][0].get(k) != outcomes["storm"][0].get(k))}
        if lost == 0:
            # Nothing lost: the retries must give the calm run's answers, so the same run.
            checks.check(same, "storm: no call lost, so the calm run's result",
                         f"differs in {figures['identical']['differs_in']}")
    return figures


# ---------------------------------------------------------------- the classifier lab

def answers_of(ws):
    path = ws / "answers.jsonl"
    if not path.exists():
        return None, 0
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(a["s"], a["q"], a["p"]) for a in lines}, len(lines)


def lab_requests(text):
    """(answered, planned, failed) summed over the `lab: X/Y requests sent, Z failed` lines (X
    is the requests that were answered, of Y), and the first error of each WARNING line."""
    answered = planned = failed = 0
    found = False
    for match in re.finditer(r"^lab: ([\d,]+)/([\d,]+) requests sent, ([\d,]+) failed", text, re.M):
        found = True
        answered += int(match.group(1).replace(",", ""))
        planned += int(match.group(2).replace(",", ""))
        failed += int(match.group(3).replace(",", ""))
    errors = re.findall(r"^WARNING: ([\d,]+) System One requests? failed.*First error: (.*)$", text, re.M)
    if not found:
        return None, None, None, errors
    return answered, planned, failed, errors


def run_classifier(args, checks):
    argv = [args.ours, "optimize", "-c", "bench.yaml"]
    figures = {"command": "skill-factory optimize -c bench.yaml", "phases": {}}
    outcomes = {}
    for label, folder, url in (("calm", Path(args.calm_dir), args.calm_url),
                               ("storm", Path(args.storm_dir), args.storm_url)):
        reruns = 0
        while True:
            name = label if reruns == 0 else f"{label} rerun {reruns}"
            phase, out, err = run(argv, folder, Path(args.logs) / f"{args.name}-{name.replace(' ', '-')}",
                                  url, args.command_timeout)
            figures["phases"][name] = phase
            checks.common(name, phase, err)
            phase["sent"], phase["planned"], phase["lab_failed"], errors = lab_requests(out + "\n" + err)
            phase["errors"] = [[int(n.replace(",", "")), normalise(e)] for n, e in errors]
            checks.check(phase["sent"] is not None, f"{name}: prints its `lab: X/Y requests sent, Z failed` line",
                         tail(out + err))
            checks.check(phase["sent"] is None or phase["sent"] + phase["lab_failed"] == phase["planned"],
                         f"{name}: answered + failed = the requests planned",
                         f"{phase['sent']} + {phase['lab_failed']} against {phase['planned']}")
            checks.identity(name, phase, phase["sent"])
            if label == "calm":
                checks.check(sum(phase["faults"].values()) == 0 and not phase["lab_failed"],
                             "calm: no fault and no failed request", f"{phase['lab_failed']} failed")
            if phase["rc"] == 0:
                checks.check(True, f"{name}: exit 0")
                break
            if label == "calm" or phase["rc"] != 3 or phase["hung"]:
                checks.check(False, f"{name}: exit 0 (the storm: or 3)", f"exit {phase['rc']}: {tail(err)}")
                break
            checks.check("run the same command again" in err,
                         f"{name}: exit 3 says \"run the same command again\"", tail(err))
            if reruns == args.max_reruns:
                checks.check(False, f"storm: exit 0 within {args.max_reruns} reruns", tail(err))
                break
            reruns += 1
        ws = folder / "ws"
        answers, lines = answers_of(ws)
        try:
            probeset = json.loads((ws / "probeset.json").read_text(encoding="utf-8"))
            result = json.loads((ws / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            checks.check(False, f"{label}: probeset.json and result.json parse", str(error))
            continue
        outcomes[label] = {"probeset": probeset, "answers": answers, "lines": lines,
                           "scores": (result.get("baseline_score"), result.get("best_score"))}
        figures[f"{label}_reruns"] = reruns
    if "calm" not in outcomes or "storm" not in outcomes:
        return figures
    calm, storm = outcomes["calm"], outcomes["storm"]
    pairs = lambda answers: {(s, q) for s, q, _ in answers or ()}  # noqa: E731
    figures["rollouts"] = len(pairs(calm["answers"]))
    figures["accounted"] = len(pairs(calm["answers"]) & pairs(storm["answers"]))
    same_answers = calm["answers"] == storm["answers"]
    same_probeset = calm["probeset"] == storm["probeset"]
    checks.check(same_probeset, "storm: the calm run's probeset.json")
    checks.check(same_answers, "storm: the calm run's answers.jsonl lines, as a set of (s, q, p)",
                 f"{len(storm['answers'] - calm['answers'])} not in the calm run's, "
                 f"{len(calm['answers'] - storm['answers'])} missing")
    checks.check(calm["scores"] == storm["scores"], "storm: the calm run's baseline and best score",
                 f"{storm['scores']} against {calm['scores']}")
    figures["identical"] = {"same": same_answers and same_probeset and calm["scores"] == storm["scores"],
                            "answers": figures["rollouts"], "lines": storm["lines"],
                            "calm_lines": calm["lines"]}
    storm_phases = [p for name, p in figures["phases"].items() if name.startswith("storm")]
    lost = sum(p["lab_failed"] or 0 for p in storm_phases)
    figures["failed"] = lost
    # The CLI prints the first error of a run's failed requests, not each one's.
    reasons = Counter()
    for p in storm_phases:
        for n, error in p.get("errors", []):
            reasons[f"(the first error of {n}) {error}"] += n
    figures["reasons"] = dict(reasons.most_common())
    checks.check(sum(reasons.values()) == lost, "storm: a WARNING line with the first error for every run with failed requests",
                 f"{sum(reasons.values())} in WARNING lines, {lost} failed")
    figures["spoiled_by_failed"] = lost * args.attempts
    return figures


# ---------------------------------------------------------------- run, report

def run_command(args):
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    checks = Checks()
    started = time.monotonic()
    kind = {"evaluate": run_evaluate, "optimize": run_optimize, "classifier": run_classifier}[args.kind]
    figures = kind(args, checks)
    storm_phases = {k: v for k, v in figures["phases"].items() if not k.startswith("calm")}
    figures.update({
        "name": args.name, "kind": args.kind, "title": args.title, "mock_line": args.mock_line,
        "attempts": args.attempts, "seconds": round(time.monotonic() - started, 3),
        "faults_total": sum(sum(p["faults"].values()) for p in storm_phases.values()),
        "problems": checks.problems, "passed": checks.passed, "notes": checks.notes,
    })
    figures["faults_survived"] = figures["faults_total"] - figures.get("spoiled_by_failed", 0) \
        - figures.get("spoiled_by_failed_rerun", 0)
    Path(args.out).write_text(json.dumps(figures, indent=1))
    print(f"{args.name}: {len(checks.passed)} checks passed, {len(checks.problems)} failed "
          f"({figures['seconds']:.1f} s)", file=sys.stderr)
    for problem in checks.problems:
        print(f"  PROBLEM {args.name}: {problem}", file=sys.stderr)
    return 0


def faults_cell(faults):
    return " ".join(f"{k} {faults[k]}" for k in FAULTS if faults.get(k)) or "none"


def reasons_cell(reasons, limit=6):
    if not reasons:
        return "none"
    items = list(reasons.items())
    shown = "; ".join(f"{n} x `{r if len(r) <= 320 else r[:150] + ' ... ' + r[-150:]}`" for r, n in items[:limit])
    return shown + (f"; and {sum(n for _, n in items[limit:])} more" if len(items) > limit else "")


def identical_cell(r):
    same = r.get("identical")
    if same is None:
        return "n/a (did not run)"
    if r["kind"] == "evaluate":
        return ("yes" if not same["differ"] else f"**no**: {same['differ']} differ") + \
            f" ({same['compared']} scored tasks compared)"
    if r["kind"] == "optimize":
        if same["same"]:
            return "yes (result.json without ids, times and spending)"
        if same["lost_calls"]:
            return f"no, as expected: {same['lost_calls']} calls failed after every retry (differs in {', '.join(same['differs_in'])})"
        return f"**no**: differs in {', '.join(same['differs_in'])}"
    return ("yes" if same["same"] else "**no**") + " (probeset.json, (s, q, p) of answers.jsonl, scores)"


def report(args):
    runs = [json.load(open(path)) for path in args.files]
    p = []
    problems = [(r, x) for r in runs for x in r["problems"]]
    p += ["# Chaos: every command through a storm of faults", "",
          f"Written by `{args.command}` {args.setting}", "",
          "Each run has its own folder and its own faulty mock (and a calm twin: the same mock "
          "without faults). The storm spoils about 30% of the requests: " + args.storm + ". The "
          "mock picks the fault of request number n from its seed, so which call meets which "
          "fault depends on the order in which concurrent calls arrive. Figures of the mock are "
          "its `GET /stats` before and after each command; \"spoiled\" is the mock's count of "
          "requests a fault spoiled. A request is **survived** when its call got an answer on "
          "a later attempt: faults survived = faults injected - the attempts of the calls that "
          "failed after every retry (a failed rollout's reason says how many; a failed optimizer "
          "or System One call counts its provider's `max_retries`). \"In flight at the mock\" is the chat "
          "mock's count of open requests sampled every 0.1 s: each 429 halves the provider's "
          "adaptive cap on requests in flight (`max_concurrency` is its ceiling) and a running "
          "`Retry-After` keeps it from growing back, so under a storm it can stay far below "
          "`max_concurrency`, and a hung or slowloris attempt holds its slot until the timeout.", ""]
    p += ["| run | requests (storm) | faults injected | faults survived | rollouts accounted (classifier: examples x questions) | failed rollouts (classifier: System One requests) | identical to calm | wall time | checks |",
          "|---|---:|---:|---:|---|---:|---|---:|---|"]
    total_requests = total_faults = total_survived = 0
    for r in runs:
        storm = [v for k, v in r["phases"].items() if not k.startswith("calm")]
        requests = sum(v["requests"] for v in storm)
        total_requests += requests
        total_faults += r["faults_total"]
        total_survived += r["faults_survived"]
        accounted = f"{r.get('accounted')} of {r.get('rollouts')}" if r.get("rollouts") is not None else "n/a"
        ident = r.get("identical")
        if ident is None:
            ident_short = "n/a"
        elif r["kind"] == "evaluate":
            ident_short = "yes" if not ident["differ"] else "**no**"
        elif r["kind"] == "optimize":
            ident_short = "yes" if ident["same"] else ("no (calls lost)" if ident["lost_calls"] else "**no**")
        else:
            ident_short = "yes" if ident["same"] else "**no**"
        p.append(f"| {r['title']} | {requests:,} | {r['faults_total']:,} | {r['faults_survived']:,} | "
                 f"{accounted} | {r.get('failed', 'n/a')} | {ident_short} | {r['seconds']:.1f} s | "
                 + (f"**{len(r['problems'])} failed**" if r["problems"] else f"{len(r['passed'])} passed") + " |")
    p.append(f"| **total** | {total_requests:,} | **{total_faults:,}** | **{total_survived:,}** | | "
             f"{sum(r.get('failed') or 0 for r in runs)} | | {sum(r['seconds'] for r in runs):.1f} s | "
             + (f"**{len(problems)} failed**" if problems else "all passed") + " |")
    p.append("")
    for r in runs:
        p += [f"## {r['title']}", "", f"`{r['command']}`; storm {r['mock_line']}.", "",
              "| phase | exit | wall time | requests (mock / CLI) | in flight at the mock (mean / most, sampled every 0.1 s) | spoiled | "
              + " | ".join(FAULTS) + " | calls asked / from the cache | failed |",
              "|---|---:|---:|---|---|---:|" + "---:|" * len(FAULTS) + "---|---:|"]
        for name, v in r["phases"].items():
            asked = f"{v['asked']} / {v['cached']}" if v.get("asked") is not None else (
                f"{v['sent']} System One requests answered of {v['planned']}" if v.get("sent") is not None else "n/a")
            failed = v.get("failed", v.get("lab_failed", "n/a"))
            cli = v.get("cli_requests")
            cli_text = f"{cli:,}" if cli is not None else "n/a"
            flight = f"{v['in_flight']['mean']} / {v['in_flight']['max']}" if v.get("in_flight") else "n/a"
            p.append(f"| {name} | {v['rc']}{' (killed: hang)' if v['hung'] else ''} | {v['seconds']:.2f} s | "
                     f"{v['requests']:,} / {cli_text} | {flight} | {sum(v['faults'].values())} | "
                     + " | ".join(str(v["faults"][k]) for k in FAULTS) + f" | {asked} | {failed} |")
        p += ["", "| what | figure |", "|---|---|"]
        unit = "examples x questions (answers the calm run holds)" if r["kind"] == "classifier" else "rollouts"
        p.append(f"| {unit}, accounted for in the storm run | {r.get('accounted')} of {r.get('rollouts')} |")
        p.append(f"| failed {'System One requests' if r['kind'] == 'classifier' else 'rollouts'} (after every retry), reasons | "
                 f"{r.get('failed', 'n/a')}: {reasons_cell(r.get('reasons'))} |")
        if r["kind"] == "evaluate" and r.get("rerun"):
            p.append(f"| the rerun from the cache | scored {r['rerun']['scored_anew']} of the failed anew; "
                     f"{r['rerun']['failed']} failed again: {reasons_cell(r['rerun']['reasons'])} |")
        if r["kind"] == "classifier":
            p.append(f"| reruns of the storm run until exit 0 | {r.get('storm_reruns', 'n/a')} |")
        if r["kind"] == "optimize" and "storm" in r["phases"]:
            s = r["phases"]["storm"]
            p.append(f"| stop reason (storm / calm) | {s.get('stop_reason')} / {r['phases'].get('calm', {}).get('stop_reason')} |")
            p.append(f"| calls failed after every retry (target / optimizer) | "
                     f"{(s.get('failed_calls') or {}).get('target')} / {(s.get('failed_calls') or {}).get('optimizer')} |")
        p.append(f"| identical to the calm run | {identical_cell(r)} |")
        p.append(f"| faults injected / survived | {r['faults_total']} / {r['faults_survived']} |")
        p.append(f"| wall time of the whole run (calm twin included) | {r['seconds']:.1f} s |")
        p.append(f"| checks | {len(r['passed'])} passed, {len(r['problems'])} failed |")
        p.append("")
    p += ["## Problems", ""]
    if problems:
        p += [f"- {r['title']}: {x}" for r, x in problems]
    else:
        p.append("None: every check of every run passed.")
    p += ["", "<details><summary>Every check</summary>", ""]
    for r in runs:
        p.append(f"- **{r['title']}**: " + "; ".join(
            [f"FAILED {x}" for x in r["problems"]] + [f"ok {x}" for x in r["passed"]]))
    p += ["", "</details>"]
    Path(args.out).write_text("\n".join(p) + "\n", encoding="utf-8")
    for r, x in problems:
        print(f"PROBLEM {r['name']}: {x}", file=sys.stderr)
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tasks")
    t.add_argument("out")
    t.add_argument("--tasks", type=int, required=True)
    c = sub.add_parser("classifier-config")
    c.add_argument("config")
    c.add_argument("systemone")
    c.add_argument("timeout")
    c.add_argument("max_retries")
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=["evaluate", "optimize", "classifier"], required=True)
    r.add_argument("--name", required=True)
    r.add_argument("--title", default="")
    r.add_argument("--ours", required=True)
    r.add_argument("--storm-dir", required=True)
    r.add_argument("--storm-url", required=True)
    r.add_argument("--calm-dir", required=True)
    r.add_argument("--calm-url", required=True)
    r.add_argument("--optimizer", default="")
    r.add_argument("--attempts", type=int, default=3, help="the provider's max_retries (attempts in all)")
    r.add_argument("--max-reruns", type=int, default=3)
    r.add_argument("--command-timeout", type=float, default=600)
    r.add_argument("--mock-line", default="")
    r.add_argument("--logs", required=True)
    r.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--setting", default="")
    p.add_argument("--command", default="bash bench/chaos.sh")
    p.add_argument("--storm", default="")
    p.add_argument("files", nargs="+")
    args = parser.parse_args()
    return {"tasks": tasks, "classifier-config": classifier_config, "run": run_command,
            "report": report}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
