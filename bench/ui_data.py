"""Run folders for the dashboard benchmark (bench/ui.sh).

    python3 bench/ui_data.py ROOT TEMPLATE_RUN RUNS CANDIDATES TASKS

Writes under ROOT:
- list/: RUNS run folders (`<config>/<run id>/result.json`, 20 configs), each a copy of the
  TEMPLATE_RUN's result.json (a real run of ours) with its own id, date, scores and spend;
- big/<run id>/: one run of CANDIDATES candidates scored on TASKS validation tasks each
  (CANDIDATES x TASKS rollouts), written in the shape `optimize` writes: result.json,
  events.jsonl (proposal, lineage, score and decision events), rollouts.jsonl, tasks.jsonl,
  candidates/NNN.md, report.md, best_skill.md.
Deterministic: the same arguments give the same files.
"""

import json
import os
import random
import sys


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def list_runs(root, template, runs):
    for i in range(runs):
        result = dict(template)
        day, second = divmod(i, 86400 // 60)
        run_id = f"202611{1 + day % 28:02d}-{second // 60:02d}{second % 60:02d}00-{i:04d}"
        baseline = round((i * 37 % 100) / 100, 4)
        best = round(min(1.0, baseline + (i * 13 % 50) / 100), 4)
        result.update(
            run_id=run_id,
            config_name=f"config-{i % 20:02d}",
            started_at=f"2026-11-{1 + day % 28:02d}T{second // 60:02d}:{second % 60:02d}:00Z",
            baseline_score=baseline,
            best_score=best,
            improvement=round(best - baseline, 4),
            stop_reason=["perfect", "rounds", "patience", "budget", "cancelled"][i % 5],
        )
        write(os.path.join(root, "list", result["config_name"], run_id, "result.json"), json.dumps(result, indent=2))


def big_run(root, candidates, tasks):
    rng = random.Random(7)
    folder = os.path.join(root, "big", "20261202-120000")
    ids = [f"t{i:05d}" for i in range(tasks)]
    write(
        os.path.join(folder, "tasks.jsonl"),
        "".join(json.dumps({"split": "val", "id": t, "input": f"message {t}: " + "words " * 30, "expected": "billing"}) + "\n" for t in ids),
    )
    events, rollouts, seq, rseq = [], [], 0, 0

    def event(**fields):
        nonlocal seq
        seq += 1
        events.append(json.dumps({"seq": seq, "ts": "2026-12-02T12:00:00.000Z", **fields, "spent": {"calls": seq, "cached_calls": 0, "tokens": seq * 40, "usd": 0.0}}))

    event(event="run_started", optimizer="llm_loop", skill="big", train=0, val=tasks, test=0, rounds=candidates, max_workers=16,
          budget={"max_calls": None, "max_tokens": None, "max_usd": None, "max_minutes": None}, max_metric_calls=None)
    body = "# Big\n\nAnswer with the label.\n"
    best, best_id, history = 0.0, 0, []
    for c in range(candidates):
        if c:
            body += f"- rule {c}: a line the optimizer added in round {c}.\n"
            event(event="candidate_proposed", round=c, candidate=c, index=0, parent=best_id, temperature=0.2, valid=True,
                  rationale=f"round {c}: added rule {c}", body_chars=len(body), input_tokens=400, output_tokens=40,
                  file=f"candidates/{c:03d}.md")
            event(event="lineage", round=c, candidate=c, parents=[best_id], component="body", operation="rewrite")
        write(os.path.join(folder, "candidates", f"{c:03d}.md"), f"---\nname: big\ndescription: A big run.\n---\n{body}")
        p = min(0.95, 0.3 + c / candidates * 0.6)
        scores = []
        for t in ids:
            rseq += 1
            score = 1.0 if rng.random() < p else 0.0
            scores.append(score)
            rollouts.append(json.dumps({"seq": rseq, "ts": "2026-12-02T12:00:00.000Z", "round": c, "candidate": c, "split": "val", "task_id": t,
                                        "score": score, "output": "billing" if score else "refund", "error": None,
                                        "feedback": f"[golden] score {score:.2f}: expected 'billing'", "breakdown": {"golden": score},
                                        "input_tokens": 40, "output_tokens": 2, "metric_input_tokens": 0, "metric_output_tokens": 0,
                                        "latency_ms": 1.0, "reused": False, "metadata": {}}))
        val = sum(scores) / len(scores)
        event(event="candidate_scored", round=c, candidate=c, val_score=val)
        accepted = c == 0 or val > best
        if c:
            event(event="decision", round=c, candidate=c, accepted=accepted, val_score=val, best_before=best, note=f"round {c}: added rule {c}")
        if accepted:
            best, best_id = val, c
        history.append({"iteration": c, "train_score": val, "val_score": round(val, 4), "accepted": accepted, "note": f"round {c}", "skill_name": "big", "body": body})
    event(event="stopped", reason="rounds", detail="every round ran")
    event(event="run_finished", baseline_score=history[0]["val_score"], best_score=best)
    best_text = open(os.path.join(folder, "candidates", f"{best_id:03d}.md")).read()
    write(os.path.join(folder, "best_skill.md"), best_text)
    write(os.path.join(folder, "events.jsonl"), "\n".join(events) + "\n")
    write(os.path.join(folder, "rollouts.jsonl"), "\n".join(rollouts) + "\n")
    write(os.path.join(folder, "report.md"), "# Big run\n")
    write(os.path.join(folder, "result.json"), json.dumps({
        "optimizer": "llm_loop", "baseline_score": history[0]["val_score"], "best_score": round(best, 4),
        "improvement": round(best - history[0]["val_score"], 4), "candidates": candidates, "accepted": sum(h["accepted"] for h in history),
        "metadata": {}, "best_skill": {"name": "big", "description": "A big run.", "body": best_text}, "history": history,
        "run_id": "20261202-120000", "config_name": "big", "started_at": "2026-12-02T12:00:00Z", "finished_at": "2026-12-02T12:10:00Z",
        "stop_reason": "rounds", "splits": {"train": 0, "val": tasks, "test": 0}, "test": None,
        "usage": {"total": {"calls": rseq, "cached_calls": 0, "failed_calls": 0, "input_tokens": rseq * 40, "output_tokens": rseq * 2, "cost_usd": 0.0}},
        "cost_usd": 0.0,
    }))
    return rseq


def main():
    root, template_run, runs, candidates, tasks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    with open(template_run) as f:
        template = json.load(f)
    list_runs(root, template, runs)
    made = big_run(root, candidates, tasks)
    print(f"{runs} run folders in {root}/list; one run of {made} rollouts in {root}/big")


if __name__ == "__main__":
    main()
