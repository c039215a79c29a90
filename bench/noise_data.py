"""The task of bench/noise.sh, written into OUT_DIR as dataset.jsonl (which is also the
mock's answers file) and seed_skill.md.

    python noise_data.py OUT_DIR

160 support tickets in 8 queues of 20. Every line carries a `need` field: the queue whose rule
the needs mock (`sf-mock-server --needs`) wants in the skill before it answers that ticket right,
so the seed skill (no rule) answers none right and a skill with all 8 rules answers all.
"""

import json
import os
import sys

from optimizers_data import QUEUES as OPTIMIZERS_QUEUES

# The six queues of bench/optimizers.sh's `labels` task, and two more.
QUEUES = {
    **OPTIMIZERS_QUEUES["labels"],
    "refund": "I want my money back for the cancelled subscription",
    "outage": "nothing loads for anyone in our team since this morning, ticket",
}

PER_QUEUE = 20

SEED = (
    "---\nname: ticket-queues\ndescription: Sort a support ticket into its queue. Use when "
    "triaging incoming tickets.\n---\n\n# Ticket queues\n\nSay which queue the ticket belongs "
    "to, in one word.\n"
)


def main(out):
    os.makedirs(out, exist_ok=True)
    lines = []
    # Interleaved, so that every split gets every queue.
    for n in range(PER_QUEUE):
        for queue, text in QUEUES.items():
            lines.append(
                {
                    "id": f"{queue}-{n:02d}",
                    "input": f"{text} {1000 + n * 7 + len(queue)}",
                    "expected": queue,
                    "need": f"noise/{queue}",
                }
            )
    with open(os.path.join(out, "dataset.jsonl"), "w") as dataset:
        for line in lines:
            dataset.write(json.dumps(line) + "\n")
    with open(os.path.join(out, "seed_skill.md"), "w") as seed:
        seed.write(SEED)


if __name__ == "__main__":
    main(sys.argv[1])
