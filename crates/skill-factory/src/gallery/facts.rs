//! What a gallery entry reads from a run's `result.json`: the fields the reference tool
//! writes (scores, the best skill) and the ones Skill Factory adds after them (run id, splits,
//! held-out test scores, usage, time). See [`crate::run::result`] for the file itself.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The best skill's name, description and reference files.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BestSkill {
    /// The skill's name as the run wrote it.
    pub name: String,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// Its reference files by path, as the search left them (written only for a skill that
    /// has some).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// Task counts of the splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Splits {
    /// Train tasks.
    pub train: usize,
    /// Validation tasks.
    pub val: usize,
    /// Held-out test tasks.
    pub test: usize,
}

impl Splits {
    /// Tasks in all splits together: the dataset's size.
    pub fn total(&self) -> usize {
        self.train + self.val + self.test
    }
}

/// Held-out test scores of the seed and the best skill.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Test {
    /// Test tasks.
    pub size: usize,
    /// The seed's score, when it was scored.
    pub seed_score: Option<f64>,
    /// The best skill's score, when it was scored.
    pub best_score: Option<f64>,
    /// Why the test split was not scored.
    #[serde(default)]
    pub skipped: Option<String>,
}

/// Calls and tokens of one role (or of all of them, `total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct Usage {
    /// Model calls.
    pub calls: u64,
    /// Of them, answered from the cache.
    #[serde(default)]
    pub cached_calls: u64,
    /// Of them, failed.
    #[serde(default)]
    pub failed_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// The fields of a finished run's `result.json` the gallery uses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RunFacts {
    /// Optimizer name.
    pub optimizer: String,
    /// The seed's validation score.
    pub baseline_score: f64,
    /// The best skill's validation score.
    pub best_score: f64,
    /// The best skill.
    pub best_skill: BestSkill,
    /// The run folder's name.
    pub run_id: String,
    /// UTC start, RFC 3339.
    #[serde(default)]
    pub started_at: Option<String>,
    /// UTC end; `None` while the run is going on (or after it was killed).
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Why the search stopped (`running` while it goes on).
    pub stop_reason: String,
    /// The reason in a sentence.
    #[serde(default)]
    pub stop_detail: Option<String>,
    /// Task counts.
    pub splits: Splits,
    /// Held-out test scores; `None` without a test split.
    #[serde(default)]
    pub test: Option<Test>,
    /// Calls and tokens per role, and `total`.
    #[serde(default)]
    pub usage: BTreeMap<String, Usage>,
    /// Dollars spent; `None` when a model has no known price.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Wall time in seconds.
    #[serde(default)]
    pub elapsed_seconds: f64,
}

impl RunFacts {
    /// Reads the facts from the text of a `result.json`.
    pub fn parse(text: &str) -> Result<RunFacts, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Whether the run finished (it was not still running, or killed, when it was written).
    pub fn finished(&self) -> bool {
        self.finished_at.is_some() && self.stop_reason != "running"
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
