"""The `gepa` package from PyPI (0.1.4) on the same task, split, metric and mock as one of our
runs, for bench/optimizers.sh.

    python gepa_package.py BASE_URL DATASET RUN_FOLDER SEED_SKILL MAX_METRIC_CALLS SEED

The validation and test tasks are the ones our run in RUN_FOLDER scored (read from its
rollouts.jsonl) and the train tasks the rest of the dataset, the metric is ours (`golden: exact`: the trimmed answer equals
the expected one), the seed candidate is our seed skill's body, and both the task model and the
reflection model are the loopback mock at BASE_URL. The best candidate is scored on the test
tasks by sending the same requests our `api` harness sends (the candidate as system prompt, the
task input as user message). Prints one JSON line: test and validation score of the best
candidate, metric calls (in all, and when the best was found) and the seconds inside
`gepa.optimize`.

With GEPA_MLFLOW_URI and GEPA_MLFLOW_EXPERIMENT set, the package tracks the run in that MLflow
server (`use_mlflow`, for bench/mlflow.sh), and a run that fails prints
`{"failed": MESSAGE, "seconds": S}` instead, with the time inside `gepa.optimize` until it failed.
"""

import json
import os
import sys
import tempfile
import time
import urllib.request

BASE, DATASET, RUN, SEED_SKILL, BUDGET, SEED = sys.argv[1:7]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["OPENAI_API_KEY"] = "x"
os.environ["OPENAI_API_BASE"] = BASE + "/v1"

import gepa  # noqa: E402  (after the environment litellm reads at import)
from gepa.adapters.default_adapter.default_adapter import EvaluationResult  # noqa: E402

tasks = {}
with open(DATASET) as lines:
    for line in lines:
        if line.strip():
            record = json.loads(line)
            tasks[str(record["id"])] = record

# Our run scored every validation task for the baseline and every test task at the end; the
# train tasks are the rest of the dataset.
splits = {"val": [], "test": []}
with open(os.path.join(RUN, "rollouts.jsonl")) as lines:
    for line in lines:
        record = json.loads(line)
        split, task = record["split"], str(record["task_id"])
        if split in splits and task not in splits[split]:
            splits[split].append(task)
held = set(splits["val"]) | set(splits["test"])
splits["train"] = [i for i in tasks if i not in held]


def items(ids):
    return [
        {"input": tasks[i]["input"], "answer": str(tasks[i]["expected"]), "additional_context": {}}
        for i in ids
    ]


def evaluator(data, response):
    right = response.strip() == data["answer"].strip()
    feedback = "exact match" if right else f"expected {data['answer']!r}, got {response.strip()!r}"
    return EvaluationResult(score=1.0 if right else 0.0, feedback=feedback, objective_scores=None)


with open(SEED_SKILL) as text:
    skill = text.read()
body = skill.split("---", 2)[2] if skill.startswith("---") else skill

tracking = {}
if os.environ.get("GEPA_MLFLOW_URI"):
    tracking = {
        "use_mlflow": True,
        "mlflow_tracking_uri": os.environ["GEPA_MLFLOW_URI"],
        "mlflow_experiment_name": os.environ["GEPA_MLFLOW_EXPERIMENT"],
    }

started = time.perf_counter()
with tempfile.TemporaryDirectory() as run_dir:
    try:
        result = gepa.optimize(
            seed_candidate={"system_prompt": body.strip()},
            trainset=items(splits["train"]),
            valset=items(splits["val"]),
            task_lm="openai/mock",
            evaluator=evaluator,
            reflection_lm="openai/mock",
            reflection_lm_kwargs={"api_base": BASE + "/v1", "api_key": "x"},
            max_metric_calls=int(BUDGET),
            reflection_minibatch_size=3,
            use_merge=True,
            seed=int(SEED),
            run_dir=os.path.join(run_dir, "gepa"),
            **tracking,
        )
    except Exception as error:
        if not tracking:
            raise
        print(json.dumps({"failed": str(error)[:300], "seconds": time.perf_counter() - started}))
        sys.exit(0)
seconds = time.perf_counter() - started
best = result.best_candidate["system_prompt"]


def answer(system, user):
    request = urllib.request.Request(
        BASE + "/v1/chat/completions",
        data=json.dumps(
            {"model": "mock", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        ).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
    )
    with urllib.request.urlopen(request) as reply:
        return json.load(reply)["choices"][0]["message"]["content"]


test = items(splits["test"])
right = sum(evaluator(item, answer(best.strip(), item["input"])).score for item in test)
print(
    json.dumps(
        {
            "test": right / len(test) if test else None,
            "val": result.val_aggregate_scores[result.best_idx],
            "metric_calls": result.total_metric_calls,
            "calls_to_best": result.discovery_eval_counts[result.best_idx],
            "seconds": seconds,
            "sizes": {k: len(v) for k, v in splits.items()},
        }
    )
)
