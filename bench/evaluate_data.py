#!/usr/bin/env python3
"""Writes the data of bench/evaluate_vs_python.sh into a directory.

    python3 bench/evaluate_data.py SOURCE_DATASET OUT_DIR [--tasks 240] [--seed 7]

OUT_DIR gets:
  dataset.jsonl  TASKS invoices derived from SOURCE_DATASET (the invoice example): each
                 task gets its own id and a varied input (a reference line, an optional
                 footer), so no two prompts are the same.
  answers.jsonl  what the mock target model answers to each input: a realistic mix of
                 exact JSON, fenced JSON, wrong values, missing keys, prose and truncated
                 JSON, drawn reproducibly from SEED.

Only the standard library is used, so any python3 runs it.
"""

import argparse
import json
import random
from pathlib import Path

# Share of each kind of answer (they add up to 1).
MIX = [
    ("exact", 0.30),  # compact JSON equal to the expected object
    ("exact_pretty", 0.10),  # the expected object as the dataset renders it
    ("fenced", 0.15),  # right JSON inside a ```json fence, with a lead-in line
    ("wrong_values", 0.15),  # valid JSON, every key, one or two values wrong
    ("missing_keys", 0.10),  # valid JSON lacking one or two keys
    ("prose", 0.10),  # a sentence, no JSON at all
    ("partial", 0.10),  # JSON cut off mid-object
]

FOOTERS = ["", "Thank you for your business!", "Payment within 30 days.", "Merci !"]


def dumps(value, **kwargs):
    return json.dumps(value, ensure_ascii=False, **kwargs)


def vary_input(text, index, rng):
    """The source invoice with a reference line and sometimes a footer."""
    lines = text.split("\n")
    reference = f"Ref: BENCH-{index:04d}-{rng.randrange(10000):04d}"
    lines.insert(rng.randrange(1, len(lines) + 1), reference)
    footer = rng.choice(FOOTERS)
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def wrong_values(expected, rng):
    answer = dict(expected)
    for key in rng.sample(["vendor", "date", "total", "currency"], rng.choice([1, 2])):
        if key == "vendor":
            answer["vendor"] = answer["vendor"].upper() + " INC"
        elif key == "date":
            year, month, day = answer["date"].split("-")
            answer["date"] = f"{day}/{month}/{year}"
        elif key == "total":
            # Either the amount as text or off by a few cents.
            if rng.random() < 0.5:
                answer["total"] = f"{answer['total']:.2f}"
            else:
                answer["total"] = round(answer["total"] + 0.07, 2)
        else:
            answer["currency"] = "$" if answer["currency"] != "USD" else "EUR"
    return dumps(answer)


def answer_for(kind, expected, rng):
    if kind == "exact":
        answer = dict(expected)
        # Integral totals sometimes come back as ints (104 for 104.0): still equal as JSON.
        if isinstance(answer["total"], float) and answer["total"].is_integer() and rng.random() < 0.5:
            answer["total"] = int(answer["total"])
        items = list(answer.items())
        rng.shuffle(items)
        return dumps(dict(items))
    if kind == "exact_pretty":
        return dumps(expected, indent=2)
    if kind == "fenced":
        return f"Here is the extracted data:\n```json\n{dumps(expected, indent=2)}\n```"
    if kind == "wrong_values":
        return wrong_values(expected, rng)
    if kind == "missing_keys":
        answer = dict(expected)
        for key in rng.sample(["date", "total", "currency"], rng.choice([1, 2])):
            del answer[key]
        return dumps(answer)
    if kind == "prose":
        return (
            f"The invoice is from {expected['vendor']}, dated {expected['date']}, "
            f"for a total of {expected['total']} {expected['currency']}."
        )
    # partial: a reply cut off part-way through the object.
    text = dumps(expected)
    return text[: rng.randrange(len(text) // 3, len(text) - 2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="dataset to derive the tasks from")
    parser.add_argument("out", type=Path, help="directory to write into")
    parser.add_argument("--tasks", type=int, default=240)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    sources = [json.loads(line) for line in args.source.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(args.seed)
    kinds = [kind for kind, _ in MIX]
    weights = [share for _, share in MIX]
    args.out.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(kinds, 0)
    with open(args.out / "dataset.jsonl", "w", encoding="utf-8") as dataset, open(
        args.out / "answers.jsonl", "w", encoding="utf-8"
    ) as answers:
        for index in range(args.tasks):
            source = sources[index % len(sources)]
            task_input = vary_input(source["input"], index, rng)
            kind = rng.choices(kinds, weights)[0]
            counts[kind] += 1
            task = {"id": f"bench-{index:04d}", "input": task_input, "expected": source["expected"]}
            dataset.write(dumps(task) + "\n")
            answer = {"input": task_input, "output": answer_for(kind, source["expected"], rng)}
            answers.write(dumps(answer) + "\n")
    print(" ".join(f"{kind}={count}" for kind, count in counts.items()))


if __name__ == "__main__":
    main()
