//! The LLM judge: a model grades the output against a weighted rubric.
//!
//! One call per rollout, at temperature 0 with at most 1024 output tokens, showing the judge
//! the task input, the output and (when the task has one) the reference answer. The judge
//! answers `{"scores": {"<criterion>": 0-10, ...}, "rationale": "..."}`; each score is
//! clamped to [0, 10] and divided by 10, and the metric's score is their weighted mean.
//!
//! Differences from the reference tool, on purpose:
//! * a boolean score counts as non-numeric (0) instead of as 1;
//! * a score of `NaN` counts as 0 instead of 10;
//! * a judge call that fails after the client's retries, or a reply whose `scores` is not an
//!   object, makes the metric *not applicable* to the rollout (a composite drops it and
//!   says why) instead of aborting the whole evaluation.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use skill_factory_core::{MetricResult, Rollout, Task, Usage};
use skill_factory_llm::{ChatModel, ChatRequest};
use skill_factory_pycompat::repr::{repr_float, repr_str, str_json, type_name};

use super::text::py_strip;
use super::{MetricSetupError, NotApplicable, Scored, ScoresOutput};
use crate::config::{Criterion, JudgeConfig};

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "llm_judge";

/// The judge's sampling temperature: grading should be repeatable.
pub const JUDGE_TEMPERATURE: f64 = 0.0;

/// The judge's output token limit.
pub const JUDGE_MAX_TOKENS: u32 = 1024;

/// How many characters of an unparseable reply the feedback quotes.
const UNPARSEABLE_QUOTE_CHARS: usize = 200;

/// The highest score the judge gives a criterion.
const SCALE_MAX: f64 = 10.0;

/// What the judge is told about its role.
pub const SYSTEM_PROMPT: &str = "You are an evaluation judge: strict, but fair. Grade how well \
the ASSISTANT OUTPUT fulfils the TASK, criterion by criterion, using the rubric you are given. \
Give credit for answers that are correct and complete; take points off for invented facts, \
broken formatting and anything left out. Reply with minified JSON only: no prose and no code \
fences.";

/// Asks a model to grade the output against a weighted rubric.
pub struct LlmJudgeMetric {
    client: Arc<dyn ChatModel>,
    criteria: Vec<Criterion>,
}

impl LlmJudgeMetric {
    /// The judge of a `metric.judge` block, grading with `client` (the judge role's model).
    pub fn from_config(
        config: &JudgeConfig,
        client: Arc<dyn ChatModel>,
    ) -> Result<Self, MetricSetupError> {
        LlmJudgeMetric::new(client, config.criteria.clone())
    }

    /// A judge using `client` to grade against `criteria`. Fails without criteria or when a
    /// weight is not a positive number.
    pub fn new(
        client: Arc<dyn ChatModel>,
        criteria: Vec<Criterion>,
    ) -> Result<Self, MetricSetupError> {
        if criteria.is_empty() {
            return Err(MetricSetupError::NoCriteria);
        }
        if let Some(bad) = criteria
            .iter()
            .find(|c| !(c.weight.is_finite() && c.weight > 0.0))
        {
            return Err(MetricSetupError::BadWeight {
                part: "criterion",
                name: bad.name.clone(),
                weight: bad.weight,
            });
        }
        Ok(LlmJudgeMetric { client, criteria })
    }

    /// The rubric, in order.
    pub fn criteria(&self) -> &[Criterion] {
        &self.criteria
    }

    /// The request sent to the judge for this task and output.
    pub fn request(&self, task: &Task, output: &str) -> ChatRequest {
        let mut lines: Vec<String> = vec![
            "TASK INPUT:".to_string(),
            task.input.clone(),
            String::new(),
            "ASSISTANT OUTPUT:".to_string(),
            if output.is_empty() {
                "(empty)".to_string()
            } else {
                output.to_string()
            },
        ];
        if let Some(expected) = &task.expected {
            lines.push(String::new());
            lines.push("REFERENCE ANSWER (for grading only):".to_string());
            lines.push(expected.clone());
        }
        lines.push(String::new());
        lines.push("RUBRIC:".to_string());
        for criterion in &self.criteria {
            lines.push(format!(
                "- {} (weight {}): {}",
                criterion.name,
                repr_float(criterion.weight),
                criterion.description
            ));
        }
        lines.push(String::new());
        lines.push(
            "Score each criterion from 0 (fails) to 10 (perfect). Respond with JSON:".to_string(),
        );
        let template: Vec<String> = self
            .criteria
            .iter()
            .map(|c| format!("\"{}\": <0-10>", c.name))
            .collect();
        lines.push(format!(
            "{{\"scores\": {{{}}}, \"rationale\": \"<one paragraph>\"}}",
            template.join(", ")
        ));
        ChatRequest::single(
            Some(SYSTEM_PROMPT.to_string()),
            lines.join("\n"),
            JUDGE_TEMPERATURE,
            JUDGE_MAX_TOKENS,
        )
    }

    /// Scores a judge reply: the weighted mean of the criteria scores, or 0 when the reply
    /// holds no JSON object. A `scores` value that is not an object is a judge failure.
    pub fn grade(&self, reply: &str) -> Result<MetricResult, NotApplicable> {
        let Some(verdict) = parse_reply(reply) else {
            let quoted: String = reply.chars().take(UNPARSEABLE_QUOTE_CHARS).collect();
            return Ok(MetricResult::new(
                NAME,
                0.0,
                format!("judge returned unparseable output: {}", repr_str(&quoted)),
            ));
        };
        let empty = Map::new();
        let scores = match verdict.get("scores") {
            None => &empty,
            Some(Value::Object(scores)) => scores,
            Some(other) => {
                return Err(NotApplicable(format!(
                    "judge failed: its reply's \"scores\" is a {}, not an object of criterion scores",
                    type_name(other)
                )));
            }
        };
        let mut weighted = 0.0;
        let mut total_weight = 0.0;
        let mut parts = Vec::with_capacity(self.criteria.len());
        for criterion in &self.criteria {
            let raw = scores
                .get(&criterion.name)
                .and_then(numeric_score)
                .unwrap_or(0.0);
            let score = if raw.is_nan() {
                0.0
            } else {
                raw.clamp(0.0, SCALE_MAX) / SCALE_MAX
            };
            weighted += criterion.weight * score;
            total_weight += criterion.weight;
            parts.push((criterion.name.as_str(), score));
        }
        let rationale = verdict.get("rationale").map(str_json).unwrap_or_default();
        let per_criterion: Vec<String> = parts
            .iter()
            .map(|(name, s)| format!("{name}={s:.2}"))
            .collect();
        let feedback = format!(
            "{} (per-criterion: {})",
            py_strip(&rationale),
            per_criterion.join(", ")
        );
        let result = MetricResult::new(NAME, weighted / total_weight, py_strip(&feedback));
        Ok(parts
            .into_iter()
            .fold(result, |r, (name, s)| r.with_part(name, s)))
    }
}

#[async_trait]
impl ScoresOutput for LlmJudgeMetric {
    const NAME: &'static str = NAME;

    async fn score_output(&self, task: &Task, rollout: &Rollout) -> Scored {
        let mut request = self.request(task, &rollout.output);
        // A repeated sample's grade is a draw of its own too, as the rollout was.
        request.sample_index = rollout.sample;
        let response = self
            .client
            .chat(&request)
            .await
            .map_err(|e| NotApplicable(format!("judge failed: {e}")))?;
        let mut result = self.grade(&response.text)?;
        result.usage = Usage {
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
        };
        Ok(result)
    }
}

/// The judge's JSON object: from a leading code fence if there is one, else the whole reply,
/// else the span from the first `{` to the last `}`.
fn parse_reply(reply: &str) -> Option<Map<String, Value>> {
    let text = reply.trim();
    let text = match text.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.strip_prefix("json").unwrap_or(rest);
            rest.find("```").map_or(rest, |end| &rest[..end]).trim()
        }
        None => text,
    };
    let value = serde_json::from_str::<Value>(text).ok().or_else(|| {
        let start = text.find('{')?;
        let end = text.rfind('}')?;
        (start < end)
            .then(|| serde_json::from_str::<Value>(&text[start..=end]).ok())
            .flatten()
    })?;
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// A criterion score as Python's `float()` reads it; booleans, lists, objects and null are
/// not numbers.
fn numeric_score(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_python_float(s),
        _ => None,
    }
}

/// Python's `float(str)`: surrounding whitespace allowed, `_` allowed between digits,
/// `inf`/`infinity`/`nan` in any case.
fn parse_python_float(text: &str) -> Option<f64> {
    let text = py_strip(text);
    let chars: Vec<char> = text.chars().collect();
    let underscores_ok = chars.iter().enumerate().all(|(i, c)| {
        *c != '_'
            || (i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit))
    });
    if !underscores_ok {
        return None;
    }
    text.replace('_', "").parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_accepts_what_python_float_accepts() {
        assert_eq!(parse_python_float(" 8 "), Some(8.0));
        assert_eq!(parse_python_float("1_0"), Some(10.0));
        assert_eq!(parse_python_float("1e1"), Some(10.0));
        assert_eq!(parse_python_float("inf"), Some(f64::INFINITY));
        assert_eq!(parse_python_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_python_float("NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_python_float(".5"), Some(0.5));
    }

    #[test]
    fn python_float_rejects_what_python_float_rejects() {
        for text in ["8/10", "0x10", "_1", "1_", "1__0", "", "eight"] {
            assert_eq!(parse_python_float(text), None, "{text:?}");
        }
    }

    #[test]
    fn reply_parsing_prefers_a_leading_fence() {
        let reply = "```json\n{\"scores\":{}}\n```\nextra";
        assert!(parse_reply(reply).is_some());
        assert!(parse_reply("```JSON\n{\"a\":1}\n```").is_some());
        assert!(parse_reply("```json\n{\"a\":1}").is_some());
    }

    #[test]
    fn reply_parsing_uses_the_greedy_brace_span() {
        assert!(parse_reply("Here: {\"a\": {\"b\": 1}} thanks").is_some());
        assert!(parse_reply("pre {\"a\": 1} mid {\"b\": 2} post").is_none());
        assert!(parse_reply("[1, 2]").is_none());
        assert!(parse_reply("} {").is_none());
    }
}
