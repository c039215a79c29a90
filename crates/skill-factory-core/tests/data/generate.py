"""Regenerates the expected outputs in this folder from the Python skill-factory 0.2.0 (used as
a black box through its public API).

Run from this folder with a Python 3.11 that has `skill-factory==0.2.0` installed:
python generate.py
The Rust tests only read the JSON files written here; they never need Python.
"""

import json

from skill_factory import Dataset


def dataset_case():
    records = [
        {"id": "inv-002", "input": "ACME Corp\nTotal: $262.50", "expected":
            {"vendor": "ACME Corp", "date": "2024-03-01", "total": 262.50, "currency": "USD"}},
        {"id": "inv-001", "input": "Café Noël — 12,00 €", "expected":
            {"vendor": "Café Noël", "total": 12.0, "currency": "EUR", "lines": [1, 2.5, 1e-05]}},
        {"input": {"question": "2+2?", "choices": [3, 4]}, "expected": 4, "metadata": {"k": 1}},
        {"id": 17, "input": "numeric id", "expected": None, "extra": "ignored"},
        {"id": 2.5, "input": "float id", "expected": ["a", "b"]},
        {"id": True, "input": "bool id", "expected": True},
        {"id": "z", "input": "tab\there \u0001 ctl", "expected": "kept \u00e9 raw"},
        {"input": 1e16, "expected": {"nested": {"empty": [], "obj": {}}}},
        {"id": "b", "input": "", "expected": ""},
        {"id": "A", "input": "capital sorts first", "expected": 10.0},
        {"id": "é", "input": "non-ASCII id sorts last", "expected": -0.5},
        {"id": "10", "input": "string ten", "expected": 0.0001},
    ]
    lines = []
    for index, record in enumerate(records):
        lines.append(json.dumps(record, ensure_ascii=False))
        if index % 4 == 1:
            lines.append("   ")
    text = "\n".join(lines) + "\n"
    with open("dataset_records.jsonl", "w", encoding="utf-8", newline="") as out:
        out.write(text)
    dataset = Dataset.from_jsonl("dataset_records.jsonl")
    tasks = [{"id": t.id, "input": t.input, "expected": t.expected, "metadata": t.metadata}
             for t in dataset.tasks]
    splits = []
    for fraction in [0.1, 0.25, 0.3, 0.5, 0.9]:
        for seed in [0, 1, 3, 7, 42, 2**32 + 5]:
            train, val = dataset.split(fraction, seed=seed)
            splits.append({"val_fraction": fraction, "seed": seed,
                           "train": [t.id for t in train], "val": [t.id for t in val]})
    return {"tasks": tasks, "splits": splits}


def write(name, value):
    with open(name, "w", encoding="utf-8") as out:
        json.dump(value, out, ensure_ascii=False, indent=1)
        out.write("\n")


write("dataset_python.json", dataset_case())
