//! The programmatic metric: deterministic checks on the output, averaged.
//!
//! Each check scores the output in [0, 1] with a short note; the metric's score is their
//! mean and its feedback one line per check, `[<label>] pass: <note>` for a full score or
//! `[<label>] <score>: <note>` otherwise. The checks, labels and notes are the reference
//! tool's, with two changes: case-insensitive `contains` compares Unicode case folds (so `ß`
//! contains `SS`), and `json_schema` validates the output against a JSON Schema.
//!
//! The checks are read from the config by [`Check`], which documents how a config writes
//! them.

use async_trait::async_trait;
use fancy_regex::Regex;
use serde_json::Value;
use skill_factory_core::{MetricResult, Rollout, Task};
use skill_factory_pycompat::repr::{repr_str, repr_str_list, type_name};

use super::json_text::parse_tolerant;
use super::text::casefold;
use super::{MetricSetupError, Scored, ScoresOutput};
use crate::config::{Check, CheckError, ProgrammaticConfig, compile_regex, compile_schema};

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "programmatic";

/// How many schema violations a `json_schema` note lists before summarizing the rest.
const SCHEMA_VIOLATIONS_SHOWN: usize = 3;

/// Longest violation message kept in a `json_schema` note: a type error on a large object
/// would otherwise print the whole object.
const SCHEMA_MESSAGE_MAX_CHARS: usize = 200;

/// A check ready to run: its regex or schema compiled once.
enum Compiled {
    IsValidJson,
    JsonHasKeys(Vec<String>),
    MatchesRegex {
        pattern: String,
        regex: Regex,
    },
    Contains {
        substring: String,
        case_sensitive: bool,
        negate: bool,
    },
    MaxLength(usize),
    JsonSchema(Box<jsonschema::Validator>),
}

impl Compiled {
    fn new(check: &Check) -> Result<Compiled, CheckError> {
        Ok(match check {
            Check::IsValidJson => Compiled::IsValidJson,
            Check::JsonHasKeys(keys) => Compiled::JsonHasKeys(keys.clone()),
            Check::MatchesRegex { pattern, flags } => Compiled::MatchesRegex {
                pattern: pattern.clone(),
                regex: compile_regex(pattern, *flags)?,
            },
            Check::Contains {
                substring,
                case_sensitive,
            } => Compiled::Contains {
                substring: substring.clone(),
                case_sensitive: *case_sensitive,
                negate: false,
            },
            Check::NotContains {
                substring,
                case_sensitive,
            } => Compiled::Contains {
                substring: substring.clone(),
                case_sensitive: *case_sensitive,
                negate: true,
            },
            Check::MaxLength(max) => Compiled::MaxLength(*max),
            Check::JsonSchema(schema) => Compiled::JsonSchema(Box::new(compile_schema(schema)?)),
        })
    }

    /// The check's score in [0, 1] and its note.
    fn run(&self, output: &str) -> (f64, String) {
        match self {
            Compiled::IsValidJson => match parse_tolerant(output) {
                Ok(_) => (1.0, "valid JSON".to_string()),
                Err(e) => (0.0, format!("invalid JSON: {e}")),
            },
            Compiled::JsonHasKeys(keys) => {
                let object = match parse_tolerant(output) {
                    Ok(Value::Object(map)) => map,
                    Ok(other) => return (0.0, format!("not a JSON object: {}", type_name(&other))),
                    Err(e) => return (0.0, format!("not a JSON object: {e}")),
                };
                let missing: Vec<&str> = keys
                    .iter()
                    .map(String::as_str)
                    .filter(|k| !object.contains_key(*k))
                    .collect();
                if missing.is_empty() {
                    return (1.0, "all keys present".to_string());
                }
                let present = keys.len() - missing.len();
                (
                    present as f64 / keys.len() as f64,
                    format!("missing keys: {}", repr_str_list(&missing)),
                )
            }
            Compiled::MatchesRegex { pattern, regex } => match regex.is_match(output) {
                Ok(true) => (1.0, format!("matched /{pattern}/")),
                Ok(false) => (0.0, format!("did not match /{pattern}/")),
                Err(e) => (
                    0.0,
                    format!("did not match /{pattern}/ (the regex engine gave up: {e})"),
                ),
            },
            Compiled::Contains {
                substring,
                case_sensitive,
                negate,
            } => {
                let found = if *case_sensitive {
                    output.contains(substring.as_str())
                } else {
                    casefold(output).contains(&casefold(substring))
                };
                let note = if found {
                    format!("contains {}", repr_str(substring))
                } else {
                    format!("missing {}", repr_str(substring))
                };
                if *negate {
                    (
                        f64::from(u8::from(!found)),
                        format!("must not contain {note}"),
                    )
                } else {
                    (f64::from(u8::from(found)), note)
                }
            }
            Compiled::MaxLength(max) => {
                let length = output.chars().count();
                if length <= *max {
                    (1.0, format!("{length} <= {max} chars"))
                } else {
                    (0.0, format!("{length} > {max} chars"))
                }
            }
            Compiled::JsonSchema(validator) => {
                let instance = match parse_tolerant(output) {
                    Ok(value) => value,
                    Err(e) => return (0.0, format!("invalid JSON: {e}")),
                };
                let violations: Vec<String> = validator
                    .iter_errors(&instance)
                    .map(|error| {
                        let pointer = error.instance_path().as_str();
                        let place = if pointer.is_empty() {
                            "(root)"
                        } else {
                            pointer
                        };
                        format!(
                            "{place}: {}",
                            truncate(&error.to_string(), SCHEMA_MESSAGE_MAX_CHARS)
                        )
                    })
                    .collect();
                if violations.is_empty() {
                    return (1.0, "matches the schema".to_string());
                }
                let shown = violations
                    .iter()
                    .take(SCHEMA_VIOLATIONS_SHOWN)
                    .cloned()
                    .collect::<Vec<_>>();
                let mut note = format!("schema violations: {}", shown.join("; "));
                if violations.len() > SCHEMA_VIOLATIONS_SHOWN {
                    note.push_str(&format!(
                        "; and {} more",
                        violations.len() - SCHEMA_VIOLATIONS_SHOWN
                    ));
                }
                (0.0, note)
            }
        }
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Runs deterministic checks on the output and averages their scores.
pub struct ProgrammaticMetric {
    checks: Vec<(&'static str, Compiled)>,
}

impl ProgrammaticMetric {
    /// The checks of a `metric.programmatic` block.
    pub fn from_config(config: &ProgrammaticConfig) -> Result<Self, MetricSetupError> {
        ProgrammaticMetric::new(config.checks.clone())
    }

    /// A metric running these checks, in order. Fails without checks, or when a regex or a
    /// schema does not compile.
    pub fn new(checks: Vec<Check>) -> Result<Self, MetricSetupError> {
        if checks.is_empty() {
            return Err(MetricSetupError::NoChecks { metric: NAME });
        }
        let checks = checks
            .iter()
            .map(|check| Ok((check.label(), Compiled::new(check)?)))
            .collect::<Result<Vec<_>, CheckError>>()?;
        Ok(ProgrammaticMetric { checks })
    }
}

#[async_trait]
impl ScoresOutput for ProgrammaticMetric {
    const NAME: &'static str = NAME;

    async fn score_output(&self, _task: &Task, rollout: &Rollout) -> Scored {
        let mut total = 0.0;
        let mut lines = Vec::with_capacity(self.checks.len());
        let mut parts = Vec::with_capacity(self.checks.len());
        for (label, check) in &self.checks {
            let (score, note) = check.run(&rollout.output);
            let score = skill_factory_core::score::clamp_unit(score);
            total += score;
            lines.push(if score == 1.0 {
                format!("[{label}] pass: {note}")
            } else {
                format!("[{label}] {score:.2}: {note}")
            });
            parts.push((*label, score));
        }
        let mean = total / self.checks.len() as f64;
        let result = MetricResult::new(NAME, mean, lines.join("\n"));
        Ok(parts
            .into_iter()
            .fold(result, |r, (label, score)| r.with_part(label, score)))
    }
}
