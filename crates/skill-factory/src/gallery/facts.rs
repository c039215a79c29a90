//! What a gallery entry reads from a run's `result.json`: the typed result
//! ([`skill_factory_runfolder::result::RunResult`]) of a skill-mode run of ours, whose record
//! holds the run id, splits, held-out test scores, usage and time. The Python tool's results
//! and classifier workspaces have no such record and are refused.

use serde::de::Error as _;
use skill_factory_runfolder::result::{BestSkill, Record, RunResult, SkillRecord};

/// A skill-mode run's result, as a gallery entry reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    /// Optimizer name.
    pub optimizer: String,
    /// The seed's validation score.
    pub baseline_score: f64,
    /// The best skill's validation score.
    pub best_score: f64,
    /// The best skill.
    pub best_skill: BestSkill,
    /// What the run adds to the reference's fields.
    pub run: SkillRecord,
}

impl RunFacts {
    /// Reads the facts from the text of a `result.json`.
    pub fn parse(text: &str) -> Result<RunFacts, serde_json::Error> {
        let result = RunResult::parse(text)?;
        match result.record {
            Record::Skill(run) => Ok(RunFacts {
                optimizer: result.optimizer,
                baseline_score: result.baseline_score,
                best_score: result.best_score,
                best_skill: result.best_skill,
                run: *run,
            }),
            _ => Err(serde_json::Error::custom(
                "not a skill-mode run of Skill Factory (it has no `run_id`, `stop_reason` and `started_at`)",
            )),
        }
    }

    /// Whether the run finished (it was not still running, or killed, when it was written).
    pub fn finished(&self) -> bool {
        self.run.finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_skills_reference_files_are_read_when_the_result_has_them() {
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../gallery/receipt-total/result.json"
        );
        let text = std::fs::read_to_string(file).unwrap();
        assert!(RunFacts::parse(&text).unwrap().best_skill.files.is_empty());
        let mut result: serde_json::Value = serde_json::from_str(&text).unwrap();
        result["best_skill"]["files"] = serde_json::json!({"references/a.md": "A.\n"});
        let facts = RunFacts::parse(&result.to_string()).unwrap();
        assert_eq!(facts.best_skill.files["references/a.md"], "A.\n");
    }
}
