//! The scripted System One model (`systemone: {provider: scripted, script: FILE}`): answers
//! from regex rules in a YAML file, so classifier-mode examples and tests run offline and
//! reproduce on any machine.
//!
//! ```yaml
//! model: fake-jev-1.0     # the version it reports serving (default: the model asked)
//! rules:                  # the first rule whose patterns all match gives P(true)
//!   - asks: "(?i)continuous integration"   # regex over the compiled instructions
//!     state: "\\.github/workflows/"        # regex over the state
//!     p: 0.86
//! default: 0.08           # P(true) when no rule matches
//! jitter: 0.04            # adds a deterministic 0..jitter from the state and question hashes
//! ```
//!
//! A rule may also name `id` (a regex over the question id). The jitter depends only on the
//! texts, never on the order of requests, so a rerun and a concurrent run answer alike.

use std::path::Path;

use fancy_regex::Regex;
use serde::Deserialize;

use super::SystemOneError;
use super::fake::FakeSystemOne;
use super::question::{Question, sha24};

/// The scripted provider's name in `systemone.provider`.
pub const SCRIPTED_PROVIDER: &str = "scripted";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    model: Option<String>,
    #[serde(default)]
    rules: Vec<RuleFile>,
    #[serde(default)]
    default: f64,
    #[serde(default)]
    jitter: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    id: Option<String>,
    asks: Option<String>,
    state: Option<String>,
    p: f64,
}

struct Rule {
    id: Option<Regex>,
    asks: Option<Regex>,
    state: Option<Regex>,
    p: f64,
}

impl Rule {
    fn matches(&self, state: &str, id: &str, question: &Question) -> bool {
        let hit = |pattern: &Option<Regex>, text: &str| {
            pattern
                .as_ref()
                .is_none_or(|re| re.is_match(text).unwrap_or(false))
        };
        hit(&self.id, id) && hit(&self.asks, &question.instructions) && hit(&self.state, state)
    }
}

/// Loads the script at `path` as a decision model asked as `model`.
pub fn scripted(path: &Path, model: &str) -> Result<FakeSystemOne, SystemOneError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| {
        SystemOneError::Config(format!(
            "cannot read the System One script {shown}: {e}; set systemone.script to a YAML file of rules"
        ))
    })?;
    let script: ScriptFile = serde_saphyr::from_str(&text).map_err(|e| {
        SystemOneError::Config(format!(
            "{shown}: not a System One script ({e}); expected `rules: [{{asks, state, id, p}}]`, `default` and `jitter`"
        ))
    })?;
    let probability = |what: String, p: f64| {
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            Err(SystemOneError::Config(format!(
                "{shown}: {what} is {p}; it must lie between 0 and 1"
            )))
        }
    };
    let default = probability("default".to_string(), script.default)?;
    let jitter = probability("jitter".to_string(), script.jitter)?;
    let mut rules = Vec::with_capacity(script.rules.len());
    for (index, rule) in script.rules.into_iter().enumerate() {
        let number = index + 1;
        let compile = |field: &str, pattern: Option<String>| {
            pattern
                .map(|p| {
                    Regex::new(&p).map_err(|e| {
                        SystemOneError::Config(format!(
                            "{shown}: rule {number}: '{field}' is not a valid regex ({e}); fix the pattern"
                        ))
                    })
                })
                .transpose()
        };
        rules.push(Rule {
            id: compile("id", rule.id)?,
            asks: compile("asks", rule.asks)?,
            state: compile("state", rule.state)?,
            p: probability(format!("rule {number}: p"), rule.p)?,
        });
    }
    let served = script.model.unwrap_or_else(|| model.to_string());
    let responder = move |state: &str, id: &str, question: &Question| {
        let base = rules
            .iter()
            .find(|rule| rule.matches(state, id, question))
            .map_or(default, |rule| rule.p);
        let noise = u16::from_str_radix(
            &sha24(&format!("{}{}", sha24(state), question.hash()))[..4],
            16,
        )
        .map_or(0.0, |n| f64::from(n) / 65535.0);
        // Four decimals keep the cache readable; the value stays in [0, 1].
        ((base + noise * jitter).min(1.0) * 10_000.0).round() / 10_000.0
    };
    Ok(FakeSystemOne::new(model, responder).serving(served))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systemone::DecisionModel;

    fn script(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake_jev.yaml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[tokio::test]
    async fn the_first_matching_rule_answers_and_the_default_covers_the_rest() {
        let (_dir, path) = script(
            "model: fake-jev-1.0\nrules:\n  - asks: '(?i)ci'\n    state: 'workflows'\n    p: 0.9\n  - id: '^lure'\n    p: 0.7\ndefault: 0.1\n",
        );
        let model = scripted(&path, "jev-latest").unwrap();
        let questions = vec![
            (
                "ci".to_string(),
                Question::new("Does it touch CI?", "Yes", "No"),
            ),
            ("lure".to_string(), Question::new("A lure?", "Yes", "No")),
            ("other".to_string(), Question::new("Other?", "Yes", "No")),
        ];
        let answers = model
            .ask("edits .github/workflows/x.yml", &questions)
            .await
            .unwrap();
        assert_eq!(answers.probabilities["ci"], 0.9);
        assert_eq!(answers.probabilities["lure"], 0.7);
        assert_eq!(answers.probabilities["other"], 0.1);
        assert_eq!(answers.served_model, "fake-jev-1.0");
        assert_eq!(model.model(), "jev-latest");
        let elsewhere = model.ask("plain text", &questions[..1]).await.unwrap();
        assert_eq!(elsewhere.probabilities["ci"], 0.1);
    }

    #[tokio::test]
    async fn jitter_is_deterministic_and_bounded() {
        let (_dir, path) = script("default: 0.5\njitter: 0.05\n");
        let q = vec![("q".to_string(), Question::new("Is it?", "Yes", "No"))];
        let a = scripted(&path, "m")
            .unwrap()
            .ask("state", &q)
            .await
            .unwrap();
        let b = scripted(&path, "m")
            .unwrap()
            .ask("state", &q)
            .await
            .unwrap();
        assert_eq!(a.probabilities, b.probabilities);
        let p = a.probabilities["q"];
        assert!((0.5..=0.55).contains(&p), "{p}");
    }

    #[test]
    fn bad_scripts_are_refused_with_the_file_and_the_fix() {
        for (text, expected) in [
            (
                "rules:\n  - asks: '('\n    p: 0.5\n",
                "rule 1: 'asks' is not a valid regex",
            ),
            ("rules:\n  - p: 1.5\n", "rule 1: p is 1.5"),
            ("rulez: []\n", "not a System One script"),
            ("default: -1\n", "default is -1"),
        ] {
            let (_dir, path) = script(text);
            let error = scripted(&path, "m").err().unwrap().to_string();
            assert!(error.contains(expected), "{text}: {error}");
            assert!(error.contains("fake_jev.yaml"), "{error}");
        }
        let missing = scripted(Path::new("/nonexistent/fake.yaml"), "m")
            .err()
            .unwrap();
        assert!(
            missing.to_string().contains("systemone.script"),
            "{missing}"
        );
    }
}
