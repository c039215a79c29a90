"""Regenerates metric_reference.json from the Python reference tool (skill-factory 0.2.0).

Runs the reference's public metric API as a black box on the cases below and records each
score, feedback, breakdown and (for the judge) the prompt it sent. tests/metrics.rs replays
the same cases against the Rust metrics. Cases where the Rust port differs on purpose
(numeric commas, case-folded `contains`, boolean judge scores, JSON parser messages) are
not listed here; tests/metrics.rs covers them on their own.

    python metric_reference.py > metric_reference.json
"""

import json

from skill_factory import Rollout, Task
from skill_factory.llm import FakeLLMClient
from skill_factory.metrics import (
    CompositeMetric,
    GoldenMetric,
    LLMJudgeMetric,
    ProgrammaticMetric,
    RubricCriterion,
    WeightedMetric,
    checks,
)


def build_check(spec):
    if isinstance(spec, str):
        return getattr(checks, spec)()
    (name, args), = spec.items()
    if isinstance(args, list):
        return getattr(checks, name)(*args)
    if isinstance(args, dict):
        return getattr(checks, name)(**args)
    return getattr(checks, name)(args)


def build(metric, prompts):
    kind = metric["kind"]
    if kind == "golden":
        return GoldenMetric(metric["mode"])
    if kind == "programmatic":
        return ProgrammaticMetric([build_check(s) for s in metric["checks"]])
    if kind == "judge":
        def responder(prompt, system, reply=metric["reply"]):
            prompts.append(prompt)
            return reply
        criteria = [RubricCriterion(c["name"], c["description"], c["weight"]) for c in metric["criteria"]]
        return LLMJudgeMetric(FakeLLMClient(responder=responder), criteria)
    if kind == "composite":
        return CompositeMetric([WeightedMetric(build(p["metric"], prompts), p["weight"]) for p in metric["parts"]])
    raise ValueError(kind)


def run(case):
    prompts = []
    metric = build(case["metric"], prompts)
    task = Task(id=case["task"]["id"], input=case["task"]["input"], expected=case["task"].get("expected"))
    rollout = Rollout(task=task, output=case["output"], error=case.get("error"))
    try:
        result = metric.evaluate(task, rollout)
        case["expect"] = {"score": result.score, "feedback": result.feedback, "breakdown": dict(result.breakdown)}
    except Exception as error:  # the reference's not-applicable signal
        case["expect"] = {"not_applicable": str(error)}
    if prompts:
        case["prompt"] = prompts[0]
    return case


def task(expected, input="in", id="t1"):
    return {"id": id, "input": input, "expected": expected}


cases = []
text_pairs = [
    ("hello", "hello"), ("Hello", "hello"), (" Straße  Big ", "STRASSE big"),
    ("the quick brown fox", "the quick red fox"), ("it's", "it's"), ('say "hi"', 'it\'s "x"'),
    ("tab\there\n", "new\nline"), ("café ü", "日本"), ("\x00\x7f\x80\u200b", "a\\b"),
    ("Total: 10.00", "it is 10"), ("1,234.50", "1234.5"), ('{"a":1,"b":99}', '{"a":1,"b":2}'),
    ('```json\n{"a":1}\n```', '{"a":1}'), ("", "x"), ("x", ""), ("", ""),
    ("[1,2]", "[1,2]"), ("5", "5.0"), ("a\x1cb", "a b"), ("a\u200bb", "a b"), ("a a a b", "a b b"),
    ("ﬃ x", "FFI X"), (" hello\x1c", "  hello \n"), ("'\"", "\\'"), ("-3", "-3.0"), ("- 3", "3"),
    ("abc -0.5x", ".5"), ("10.000001", "10"), ("10.0000011", "10"), ("+5", "5"), ("1e3", "1000"),
    ("\U0001F600 \U000E0001 \u0378 \ue000 \xad \u2028", "x"),
]
for mode in ["exact", "normalized", "token_f1", "numeric"]:
    for out, exp in text_pairs:
        cases.append({"metric": {"kind": "golden", "mode": mode}, "task": task(exp), "output": out})

json_pairs = [
    ('{"a":1,"b":99}', '{"a":1,"b":2}'), ('```json\n{"a":1}\n```', '{"a":1}'),
    ('{"b":1,"a":"X  y"}', '{"a":"x y","b":true,"c":3}'), ("[1,2]", "[1,2]"), ("[1,2]", "[1,3]"),
    ("no json", "{}"), ('{"a":1', "{}"), ("{}", "{}"), ('{"a": {"x":1}}', '{"a":{"x":1.0}}'),
    ("5", "5.0"), ('{"a":"262.5"}', '{"a":262.5}'), ('{"a":null}', '{"a":1}'), ('{"a":""}', '{"a":"x"}'),
    ('{"a":null}', '{"a":null}'), ('{"a":[]}', '{"a":[1]}'), ('{"a":{"k":"X"}}', '{"a":{"k":"x"}}'),
    ('{"a":["X"]}', '{"a":["x"]}'), ('{"a":1,"z":2,"y":3}', '{"a":1}'),
    ('{"b":2,"a":1}', '{"a":1,"b":2,"c":3,"d":4}'), ('{"x":1}', '{"b":1,"a":2}'), ('{"a":1}', "not json"),
    ("null", "not json"), ('{"a":1}', "[1]"), ("{}", '{"a":1}'), ('{"a":1}', "{}"), ('{"a":true}', '{"a":1}'),
    ('{"a":1.0}', '{"a":true}'), ('{"a":"1"}', '{"a":1}'), ("[1, true]", "[1.0, 1]"),
    ('text {"a": 1} more', '{"a":1}'), ('a [1, {"x": 2}] b', '[1,{"x":2}]'), ('{"a":"}"}', '{"a":"}"}'),
    ("x { y", "{}"), ('{"a": 1} {"b": 2}', '{"a":1}'), ('  ```json\n{"a":1}\n```  ', '{"a":1}'),
    ("```\n[1]\n```", "[1]"), ("```JSON\n[1]\n```", "[1]"), ('```json\n{"a":1}\n``` trailing', '{"a":1}'),
    ('{"é":"Ü"}', '{"é":"ü"}'), ('{"a":"x"}', '{"a":"  X "}'), ('{"a":1}', '{"a":1, "a":2}'),
    ('{"k\'q":1}', '{"k\'q":2, "z":1}'), ('{"a":1} ]', "{}"), ('{"a":[1,2}', "{}"), ('"str"', '"STR"'),
    ("12345678901234567890", "12345678901234567890.0"), ('{"a":1}', '{"a": 1.0000000000000001}'),
    ("hello", "hello"),
]
for out, exp in json_pairs:
    cases.append({"metric": {"kind": "golden", "mode": "json_equal"}, "task": task(exp), "output": out})
for mode in ["exact", "json_equal"]:
    cases.append({"metric": {"kind": "golden", "mode": mode}, "task": task(None), "output": "x"})
    cases.append({"metric": {"kind": "golden", "mode": mode}, "task": task("x"), "output": "", "error": "bad\nthing"})

def prog(*specs):
    return {"kind": "programmatic", "checks": list(specs)}

valid_outputs = [
    "```json\n5\n```", "```json 5```", "```\n5\n```", " ```json\n5\n``` ", "```json\n5\n```\nmore",
    "```python\n5\n```", "```JSON\n5\n```", '```json\n"a```b"\n```', "```json\n```",
    "```json\n5\n``` ```json\n6\n```", "```json5```", "5", ' "x" ', "true", "nope", "", '{"a":1',
    "[1, 2", "x ] {", '```json\n{"a":1}\n```',
]
for out in valid_outputs:
    cases.append({"metric": prog("is_valid_json"), "task": task("E"), "output": out})
for out in ['{"a":1,"b":2}', '{"a":1}', "[1]", "5", "null", '"s"', "true", "nope", "1.5", "{}"]:
    cases.append({"metric": prog({"json_has_keys": ["a", "b"]}), "task": task("E"), "output": out})
cases.append({"metric": prog("json_has_keys"), "task": task("E"), "output": "{}"})
cases.append({"metric": prog({"json_has_keys": ["it's", "é", "x\ny"]}), "task": task("E"), "output": "{}"})
cases.append({"metric": prog({"json_has_keys": ["b", "a"]}), "task": task("E"), "output": "{}"})
cases.append({"metric": prog({"json_has_keys": ["a", "a", "b"]}), "task": task("E"), "output": '{"b":1}'})
for pattern, flags, out in [
    (r"\d+", 0, "a cat and 3 dogs"), (r"\d+", 0, "none"), ("^B", 0, "a\nb"), ("^B", 10, "a\nb"),
    ("a.b", 16, "a\nb"), ("a.b", 0, "a\nb"), ("a b # c", 64, "ab"), (r"\w+$", 256, "é"),
    (r"(?i)^\s*(billing|bug)\s*$", 0, " Billing \n"), ("it's/\"x\"", 0, "q"), ("(?<=a)b", 0, "ab"),
    (r"(a)\1", 0, "aa"), ("a$", 0, "a\n"), (r"a\Z", 0, "a\n"),
]:
    spec = {"matches_regex": {"pattern": pattern, "flags": flags}} if flags else {"matches_regex": pattern}
    cases.append({"metric": prog(spec), "task": task("E"), "output": out})
for sub, cs, out in [("cat", False, "a CAT"), ("cat", True, "a CAT"), ("it's", False, "x"), ("", False, ""), ("ǅ", False, "ǆ")]:
    for name in ["contains", "not_contains"]:
        spec = {name: {"substring": sub, "case_sensitive": cs}} if cs else {name: sub}
        cases.append({"metric": prog(spec), "task": task("E"), "output": out})
for mx, out in [(3, "abc"), (3, "abcd"), (2, "日本"), (0, ""), (5, "\U0001F600\u0301")]:
    cases.append({"metric": prog({"max_length": mx}), "task": task("E"), "output": out})
cases.append({"metric": prog({"matches_regex": r"\d+"}, {"contains": "cat"}), "task": task("E"), "output": "a cat and 3 dogs"})
cases.append({"metric": prog({"matches_regex": r"\d+"}, {"contains": "cat"}, "is_valid_json", {"max_length": 3}), "task": task("E"), "output": "no animals 5"})
cases.append({"metric": prog({"contains": "a"}, {"contains": "b"}), "task": task("E"), "output": "a"})
cases.append({"metric": prog({"contains": "a"}), "task": task("E"), "output": "", "error": "boom"})

crit2 = [{"name": "correctness", "description": "Is it right?", "weight": 3.0},
         {"name": "format", "description": "Bare label only.", "weight": 1.0}]
def judge(reply, criteria=crit2):
    return {"kind": "judge", "criteria": criteria, "reply": reply}
ticket = task("billing", input="My card was charged twice.")
for reply in [
    '{"scores":{"correctness":8,"format":10},"rationale":"good"}',
    '```json\n{"scores":{"correctness":10,"format":5},"rationale":"fenced"}\n```',
    '```\n{"scores":{"correctness":10}}\n```',
    'Here: {"scores":{"correctness":"7","format":"10"},"rationale":" r "} thanks',
    "nonsense " * 40, "[1,2]", '{"scores":{"correctness":15,"format":-3}}',
    '{"scores":{"correctness":null,"format":"abc"},"rationale":""}',
    '{"scores":{"correctness":8,"format":10},"rationale":5}', '{"rationale":"no scores"}', "it's {bad",
    '{"scores":{"correctness":7.25,"format":1e1}, "rationale":"a\\nb"}',
    '```json\n{"scores":{"correctness":10,"format":10}}', '{"scores":{"correctness":" 8 ","format":"1_0"}}',
    '{"scores":{"correctness":8},"rationale":"\\n r  \\n"}', '{"scores":{"correctness":8},"rationale":null}',
    '{"scores":{"correctness":8},"rationale":[1,"a",{"b":true}]}',
    '```json\n{"scores":{"correctness":10}}\n```\nextra', 'pre {"a": 1} mid {"scores":{"correctness":10}} post',
    '```JSON\n{"scores":{"correctness":10}}\n```', '{"scores":{"correctness":[8]}}',
    '{"scores":{"correctness":"8/10"}}', '{"scores":{"correctness":"1e1"}}', '{"scores":{"correctness":"0x10"}}',
    '{"scores":{"Correctness":10}}', '{"scores":{"correctness":8},"rationale":1.0}',
    '{"scores":{"correctness":8},"rationale":true}', "   \n" + "x" * 250,
]:
    cases.append({"metric": judge(reply), "task": ticket, "output": "billing"})
cases.append({"metric": judge('{"scores":{"correctness":8},"rationale":"x"}'), "task": task(None, input="My card was charged twice."), "output": ""})
cases.append({"metric": judge("{}"), "task": task("", input=""), "output": "   "})
cases.append({"metric": judge("{}", [{"name": "we\"ird'name", "description": "desc", "weight": 1e-5},
                                     {"name": "ünï", "description": "x", "weight": 1e16},
                                     {"name": "n", "description": "", "weight": 0.1},
                                     {"name": "m", "description": "d", "weight": 3.5}]),
              "task": task("  exp ", input="  spaced  \n"), "output": "  out  "})
cases.append({"metric": judge("x"), "task": ticket, "output": "", "error": "boom"})

golden_exact = {"kind": "golden", "mode": "exact"}
cases.append({"metric": {"kind": "composite", "parts": [{"metric": golden_exact, "weight": 3.0}, {"metric": prog("is_valid_json"), "weight": 1.0}]}, "task": task("hello"), "output": "hello"})
cases.append({"metric": {"kind": "composite", "parts": [{"metric": golden_exact, "weight": 3.0}, {"metric": prog("is_valid_json"), "weight": 1.0}]}, "task": task(None), "output": "{}"})
cases.append({"metric": {"kind": "composite", "parts": [{"metric": golden_exact, "weight": 1.0}]}, "task": task(None), "output": "x"})
cases.append({"metric": {"kind": "composite", "parts": [{"metric": golden_exact, "weight": 3.0}, {"metric": prog("is_valid_json"), "weight": 1.0}]}, "task": task("x"), "output": "", "error": "boom"})

ticket_crit = [{"name": "correctness", "description": "Is the chosen category the best fit for the message?", "weight": 3.0},
               {"name": "format", "description": "Is the output a single bare label with no extra text?", "weight": 2.0}]
ticket_metric = {"kind": "composite", "parts": [
    {"metric": {"kind": "golden", "mode": "normalized"}, "weight": 2.0},
    {"metric": prog({"matches_regex": "(?i)^\\s*(billing|bug|feature_request|account|other)\\s*$"}), "weight": 1.0},
    {"metric": judge('{"scores":{"correctness":10,"format":10},"rationale":"perfect"}', ticket_crit), "weight": 1.0},
]}
cases.append({"metric": ticket_metric, "task": task("billing", input="I was charged twice this month.", id="tk-01"), "output": "billing"})
cases.append({"metric": ticket_metric, "task": task("billing", input="I was charged twice this month.", id="tk-01"), "output": "This ticket is about billing."})

invoice_crit = [{"name": "correctness", "description": "Are vendor, date, total, currency all correct and properly normalized?", "weight": 3.0},
                {"name": "format", "description": "Is the output strictly a single JSON object with no prose, markdown, or code fences?", "weight": 2.0}]
invoice_expected = json.dumps({"vendor": "Acme Corp", "date": "2024-03-15", "total": 1234.5, "currency": "USD"}, indent=2)
invoice_metric = {"kind": "composite", "parts": [
    {"metric": {"kind": "golden", "mode": "json_equal"}, "weight": 2.0},
    {"metric": prog("is_valid_json", {"json_has_keys": ["vendor", "date", "total", "currency"]}), "weight": 1.0},
    {"metric": judge('{"scores":{"correctness":9},"rationale":"ok"}', invoice_crit), "weight": 1.0},
]}
invoice_task = task(invoice_expected, input="ACME CORP\nInvoice date: 15 March 2024\nTotal due: $1,234.50", id="inv-001")
cases.append({"metric": invoice_metric, "task": invoice_task, "output": invoice_expected})
cases.append({"metric": invoice_metric, "task": invoice_task, "output": '{"vendor": "ACME corp", "date": "2024-03-15", "total": "1234.50"}'})

print(json.dumps([run(c) for c in cases], ensure_ascii=False, indent=1))
