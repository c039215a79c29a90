"""Runs a probe set's Python export on test cases and prints one JSON line per case:
{id, score, flags, verdict}, the score as repr() ("nan" for NaN).

    python3 evaluate.py EXPORT CASES.json
"""

import importlib.util
import json
import math
import sys

spec = importlib.util.spec_from_file_location("export", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with open(sys.argv[2]) as f:
    cases = json.load(f)
for case in cases:
    score = module.score(case["answers"])
    verdict = module.verdict(case["answers"], case["example"]) if hasattr(module, "verdict") else None
    print(json.dumps({
        "id": case["id"],
        "score": "nan" if math.isnan(score) else repr(score),
        "flags": module.flags(case["answers"]),
        "verdict": verdict,
    }))
