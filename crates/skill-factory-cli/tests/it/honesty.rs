//! A candidate that states a task's expected answer, or says a paragraph twice, never scores as
//! written: the first is refused unscored and the optimizer is told why, the second is cleaned.

use crate::common::{printed, with_config};

const SKILL: &str =
    "---\nname: totals\ndescription: Reads receipt totals.\n---\nAnswer with the total.\n";

/// Six receipts, each with its own total.
fn dataset() -> String {
    (1..=6)
        .map(|i| {
            format!(
                "{{\"id\": \"r{i}\", \"input\": \"Shop {i}\\nTotal {i}1.{i}5\", \"expected\": \"{i}1.{i}5\"}}\n"
            )
        })
        .collect()
}

#[test]
fn a_candidate_that_copies_an_answer_is_refused_unscored_and_the_optimizer_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("skill.md"), SKILL).unwrap();
    std::fs::write(dir.path().join("data.jsonl"), dataset()).unwrap();
    // Round 1 copies every receipt's total; once the prompt says that was refused, the
    // optimizer proposes a rule, with a paragraph said twice.
    let answers: Vec<String> = (1..=6).map(|i| format!("{i}1.{i}5")).collect();
    let copying = format!(
        "<RATIONALE>Memorize.</RATIONALE><NEW_SKILL_BODY>The correct answers are {}.</NEW_SKILL_BODY>",
        answers.join(", ")
    );
    let rule = "<RATIONALE>A rule.</RATIONALE><NEW_SKILL_BODY>Copy the number after Total.\\n\\nDigits only.\\n\\nCopy the number after Total.</NEW_SKILL_BODY>";
    std::fs::write(
        dir.path().join("optimizer.yaml"),
        format!(
            "rules:\n  - {{user_contains: \"copies task\", reply: \"{rule}\"}}\n  - {{user_contains: \"<NEW_SKILL_BODY>\", reply: \"{copying}\"}}\n"
        ),
    )
    .unwrap();
    let target_rules: String = (1..=6)
        .map(|i| {
            format!(
                "  - {{system_contains: \"after Total\", user_contains: \"Shop {i}\\n\", reply: \"{i}1.{i}5\"}}\n"
            )
        })
        .collect();
    std::fs::write(
        dir.path().join("target.yaml"),
        format!("rules:\n{target_rules}responses: [\"no idea\"]\n"),
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.5\n\
         provider: {name: fake, script: target.yaml}\n\
         optimizer_provider: {name: fake, script: optimizer.yaml}\n\
         optimizer: {rounds: 2, patience: 2, minibatch_size: 2}\nmetric: {golden: {mode: exact}}\n",
    )
    .unwrap();
    let runs = dir.path().join("runs");
    let out = with_config("optimize", &config)
        .arg("-o")
        .arg(&runs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", printed(&out));
    let latest = runs.join("latest");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(
        result["refused_copies"],
        serde_json::json!([1]),
        "{result:#}"
    );
    assert_eq!(
        result["cleaned_repeats"],
        serde_json::json!([2]),
        "{result:#}"
    );
    assert_eq!(
        result["best_score"], 1.0,
        "the rule scores once the copy is refused"
    );
    let body = result["best_skill"]["body"].as_str().unwrap();
    assert_eq!(body, "Copy the number after Total.\n\nDigits only.");
    let report = std::fs::read_to_string(latest.join("report.md")).unwrap();
    assert!(
        report.contains("Candidates refused for copying a task's answer or input: 1 (candidate 1;"),
        "{report}"
    );
    let events: Vec<serde_json::Value> = std::fs::read_to_string(latest.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let refused = events
        .iter()
        .find(|e| e["event"] == "candidate_proposed" && e["valid"] == false)
        .expect("the copying proposal");
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("copies task r")),
        "{refused}"
    );
    // It was never scored.
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "candidate_scored" && e["candidate"] == refused["candidate"]),
        "{events:?}"
    );
}
