"""The three tasks of bench/optimizers.sh, written into OUT_DIR/<task>/ as dataset.jsonl and
seed_skill.md, plus OUT_DIR/answers.jsonl (every task's lines, for the mock) and
OUT_DIR/conflicts.txt (the --conflict pairs of the mock).

    python optimizers_data.py OUT_DIR

Every line carries a `need` field: the group whose rule the needs mock (`sf-mock-server
--needs`) wants in the skill before it answers that line right.

- labels: 48 support tickets in 6 queues, one short seed skill. A perfect skill needs the 6 rules.
- conflict: 40 tickets in 4 queues, where the refund and chargeback rules cancel each other
  (`--conflict`): no single skill serves both, so the best one serves refunds (12 tickets) and
  drops chargebacks (8), 0.8 at most; per-task Pareto selection keeps both lines of search alive.
- sections: 40 messages in 5 queues, and a seed skill of three `##` sections, so component-wise
  mutation has parts to choose from.
"""

import json
import os
import sys

QUEUES = {
    "labels": {
        "billing": "my card was charged twice for order",
        "bug": "the app shows a blank screen after I press save on",
        "feature": "please add an export to spreadsheet option for",
        "account": "I cannot reset the password of my login for",
        "shipping": "the parcel tracking has not moved for days on order",
        "security": "I got a sign-in alert from an unknown country for account",
    },
    "conflict": {
        "refund": "I want my money back for the cancelled booking",
        "chargeback": "my bank opened a dispute about the payment for booking",
        "bug": "the booking page freezes when I pick a date for booking",
        "feature": "could you let me choose a seat when I book, like for booking",
    },
    "sections": {
        "urgent": "production is down for every user since the deploy of build",
        "routine": "when is the next scheduled maintenance window for cluster",
        "spam": "congratulations you won a free cruise, claim prize code",
        "sales": "we would like a quote for two hundred seats, reference",
        "legal": "our lawyer asks for the data processing agreement, case",
    },
}

SIZES = {
    "labels": {queue: 8 for queue in QUEUES["labels"]},
    "conflict": {"refund": 12, "chargeback": 8, "bug": 10, "feature": 10},
    "sections": {queue: 8 for queue in QUEUES["sections"]},
}

CONFLICTS = [("conflict/refund", "conflict/chargeback")]

SEEDS = {
    "labels": (
        "---\nname: ticket-queues\ndescription: Sort a support ticket into its queue. Use when "
        "triaging incoming tickets.\n---\n\n# Ticket queues\n\nSay which queue the ticket belongs "
        "to, in one word.\n"
    ),
    "conflict": (
        "---\nname: booking-tickets\ndescription: Sort a booking support ticket into its queue. "
        "Use when triaging travel booking tickets.\n---\n\n# Booking tickets\n\nSay which queue "
        "the ticket belongs to, in one word.\n"
    ),
    "sections": (
        "---\nname: inbox-triage\ndescription: Triage an incoming message into one queue. Use "
        "when sorting a shared inbox.\n---\n\n# Inbox triage\n\nRead the message and name its "
        "queue.\n\n## Queues\n\nThe queues are urgent, routine, spam, sales and legal.\n\n"
        "## Format\n\nReply with the queue name only, in lower case.\n\n## Escalation\n\n"
        "Nothing is escalated by this skill.\n"
    ),
}


def main(out):
    everything = []
    for task, queues in QUEUES.items():
        folder = os.path.join(out, task)
        os.makedirs(folder, exist_ok=True)
        lines = []
        for queue, text in queues.items():
            for i in range(SIZES[task][queue]):
                lines.append(
                    {
                        "id": f"{task}-{queue}-{i:02d}",
                        "input": f"{text} {task[0].upper()}{i:03d}",
                        "expected": queue,
                        "need": f"{task}/{queue}",
                    }
                )
        with open(os.path.join(folder, "dataset.jsonl"), "w") as data:
            data.writelines(json.dumps(line) + "\n" for line in lines)
        with open(os.path.join(folder, "seed_skill.md"), "w") as seed:
            seed.write(SEEDS[task])
        everything.extend(lines)
    with open(os.path.join(out, "answers.jsonl"), "w") as answers:
        answers.writelines(json.dumps(line) + "\n" for line in everything)
    with open(os.path.join(out, "conflicts.txt"), "w") as conflicts:
        conflicts.writelines(f"{a},{b}\n" for a, b in CONFLICTS)


if __name__ == "__main__":
    main(sys.argv[1])
