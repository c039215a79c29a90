#!/usr/bin/env python3
"""Writes a classifier-mode workspace big enough to time cache-only commands.

    python3 bench/classifier_data.py OUT_DIR [--examples 10000] [--questions 200]
        [--load-answers 1000000] [--seed 7] [--base-url URL]

OUT_DIR gets:
  dataset.jsonl        EXAMPLES hash-only examples (`id`, `label`, `state_hash`, `chars`,
                       `group`, `source`): rescored from the cache, never asked; about one in
                       five is positive; splits come from the default hash rule (no salt)
  pool.json            QUESTIONS questions in bank format: QUESTIONS/2 bases under two
                       framings (`<base>@reviewer`, `<base>@auditor`)
  seed_probeset.json   a seed reading two pool questions, threshold null (fit on train)
  select.yaml          config whose workspace is ws-select/
  ws-select/answers.jsonl   an answer for every (example, question): EXAMPLES x QUESTIONS lines
  load.yaml            config whose workspace is ws-load/
  ws-load/answers.jsonl     the first LOAD_ANSWERS lines of that file (with the defaults the
                       first 5,000 examples x 200 questions), for timing a load alone

Answers are in the form the tools write (`{"s", "q", "m", "p", "v"}`, model `jev-latest`,
served `fake-jev-1.0`). P(true) is the logistic of a normal draw whose mean depends on the
label for one question in twenty (so that selection has something to find, never perfectly)
and not for the others. Everything comes from one
`random.Random(seed)`: the same arguments write the same bytes.

The configs point System One at BASE_URL (default a closed loopback port): every command timed
on these files is cache-only, and the benchmark checks that the mock received nothing.
"""

import argparse
import hashlib
import json
import math
import os
import random
import sys

MODEL = "jev-latest"
SERVED = "fake-jev-1.0"
FRAMES = {
    "reviewer": "You are reviewing a change before it is merged.",
    "auditor": "You are auditing a change for undisclosed side effects.",
}


def sha24(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def question_hash(instructions, true, false):
    # Compact JSON of [instructions, true, false], non-ASCII raw (all ASCII here).
    return sha24(json.dumps([instructions, true, false], separators=(",", ":"), ensure_ascii=False))


def config(name, workspace, base_url):
    return f"""kind: classifier
name: {name}
dataset: dataset.jsonl
labels: {{positive: positive, negative: negative}}
probeset: seed_probeset.json
pool: pool.json
workspace: {workspace}
systemone:
  provider: custom
  base_url: {base_url}
  model: {MODEL}
objective:
  fpr_budget: 0.01
optimizer:
  rounds: 0
  max_questions: 6
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--load-answers", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--base-url", default="http://127.0.0.1:9/v1/systemone")
    args = parser.parse_args()
    if args.questions < 2 or args.questions % 2:
        parser.error("--questions must be an even number >= 2")
    if args.load_answers > args.examples * args.questions:
        parser.error("--load-answers is more than examples x questions")

    rng = random.Random(args.seed)
    os.makedirs(os.path.join(args.out, "ws-select"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "ws-load"), exist_ok=True)

    # Questions: bases q000..q099 under both framings; the bank keeps base order.
    questions = {}
    hashes = []
    for b in range(args.questions // 2):
        text = f"Question {b:03d}: does the change do something its description does not say (aspect {b})?"
        for frame in FRAMES:
            qid = f"q{b:03d}@{frame}"
            spec = {"frame": frame, "question": text, "true": "Yes: it does.", "false": "No: it does not."}
            questions[qid] = spec
            hashes.append(question_hash(FRAMES[frame] + "\n\n" + text, spec["true"], spec["false"]))
    with open(os.path.join(args.out, "pool.json"), "w", encoding="utf-8") as f:
        json.dump({"frames": FRAMES, "questions": questions}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    seed_ids = list(questions)[:2]
    seed = {
        "name": "bench",
        "model": MODEL,
        "pinned_version": None,
        "state_budget": 24000,
        "frames": dict(FRAMES),
        "questions": {qid: questions[qid] for qid in seed_ids},
        "score": {"max": seed_ids},
        "threshold": None,
        "calibration": {},
    }
    with open(os.path.join(args.out, "seed_probeset.json"), "w", encoding="utf-8") as f:
        json.dump(seed, f, indent=1, ensure_ascii=False)
        f.write("\n")

    # How strongly each question separates (the shift of its logit on positives): one in
    # twenty is informative, none perfectly, and the rest are noise.
    strength = [0.0] * args.questions
    for i in rng.sample(range(args.questions), k=max(1, args.questions // 20)):
        strength[i] = rng.uniform(0.8, 2.5)

    examples = []
    with open(os.path.join(args.out, "dataset.jsonl"), "w", encoding="utf-8") as f:
        for n in range(args.examples):
            positive = rng.random() < 0.2
            example = {
                "id": f"ex-{n:05d}",
                "label": "positive" if positive else "negative",
                "state_hash": "%024x" % rng.getrandbits(96),
                "chars": rng.randint(400, 6000),
                "group": f"g-{n // 2:05d}",
                "source": f"bench/repo-{n % 4}",
            }
            # Groups of two share a label, so no group spans two splits with different labels.
            if n % 2 == 1:
                example["label"] = examples[-1]["label"]
            examples.append(example)
            f.write(json.dumps(example) + "\n")

    written = 0
    with open(os.path.join(args.out, "ws-select", "answers.jsonl"), "w", encoding="utf-8") as full, open(
        os.path.join(args.out, "ws-load", "answers.jsonl"), "w", encoding="utf-8"
    ) as part:
        for example in examples:
            y = 1.0 if example["label"] == "positive" else 0.0
            s = example["state_hash"]
            lines = []
            for i, q in enumerate(hashes):
                p = 1.0 / (1.0 + math.exp(-rng.gauss(strength[i] * y - 1.0, 1.0)))
                lines.append(json.dumps({"s": s, "q": q, "m": MODEL, "p": round(p, 4), "v": SERVED}) + "\n")
            full.writelines(lines)
            take = max(0, min(len(lines), args.load_answers - written))
            part.writelines(lines[:take])
            written += take

    for name, workspace in (("select", "ws-select"), ("load", "ws-load")):
        with open(os.path.join(args.out, f"{name}.yaml"), "w", encoding="utf-8") as f:
            f.write(config(f"bench-{name}", workspace, args.base_url))
    print(
        f"{args.examples} examples, {args.questions} questions, "
        f"{args.examples * args.questions} answers in ws-select, {written} in ws-load",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
