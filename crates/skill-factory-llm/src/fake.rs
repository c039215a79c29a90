//! The scripted fake model (`name: fake`): answers from rules and canned responses, in
//! process, so that every pipeline can run offline and deterministically.
//!
//! Rules are tried first, in order; the first whose every condition holds answers. Otherwise
//! the canned `responses` answer in order, the last one repeating (an empty list answers "").
//! With no matching rule and no responses the call fails, naming the request.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use fancy_regex::Regex;
use serde::Deserialize;

use crate::http::truncate;
use crate::request::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Role, StopReason, TokenUsage,
};
use crate::settings::FakeRule;

/// The contents of a fake provider's `script` file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FakeScript {
    /// Canned answers, in order, the last one repeating.
    #[serde(default)]
    pub responses: Option<Vec<String>>,
    /// Rules, tried in order before the responses.
    #[serde(default)]
    pub rules: Vec<FakeRule>,
}

impl FakeScript {
    /// Parses script YAML; `origin` (usually the file path) names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, LlmError> {
        if text.trim().is_empty() {
            return Err(LlmError::Config(format!(
                "fake provider script {origin} is empty: give it a `responses:` list and/or `rules:`"
            )));
        }
        let script: FakeScript = serde_saphyr::from_str(text).map_err(|e| {
            LlmError::Config(format!(
                "fake provider script {origin} is not valid: {e}\n(expected keys: responses, a list of strings; rules, a list of mappings with reply and any of system_contains, system_lacks, user_contains, user_matches)"
            ))
        })?;
        if script.responses.is_none() && script.rules.is_empty() {
            return Err(LlmError::Config(format!(
                "fake provider script {origin} holds neither `responses` nor `rules`"
            )));
        }
        Ok(script)
    }
}

/// A rule with its regular expression compiled, and a label for messages.
#[derive(Debug)]
struct CompiledRule {
    label: String,
    rule: FakeRule,
    user_regex: Option<Regex>,
}

/// The scripted fake model. It records every request it receives, for tests.
#[derive(Debug)]
pub struct FakeModel {
    model: String,
    rules: Vec<CompiledRule>,
    responses: Option<Vec<String>>,
    next_response: AtomicUsize,
    received: Mutex<Vec<ChatRequest>>,
}

impl FakeModel {
    /// A fake named `model` with no rules and no responses (every call fails until some are added).
    pub fn new(model: &str) -> Self {
        FakeModel {
            model: model.to_string(),
            rules: Vec::new(),
            responses: None,
            next_response: AtomicUsize::new(0),
            received: Mutex::new(Vec::new()),
        }
    }

    /// A fake answering from a script's YAML text; `origin` names it in errors.
    pub fn from_script_text(text: &str, origin: &str) -> Result<Self, LlmError> {
        FakeModel::new("fake").with_script(FakeScript::parse(text, origin)?, origin)
    }

    /// Sets the canned responses, replacing any.
    pub fn with_responses(mut self, responses: Vec<String>) -> Self {
        self.responses = Some(responses);
        self
    }

    /// Appends rules after those already present; `origin` names them in errors. Fails on a
    /// `user_matches` that is not a valid regular expression.
    pub fn with_rules(mut self, rules: Vec<FakeRule>, origin: &str) -> Result<Self, LlmError> {
        for (index, rule) in rules.into_iter().enumerate() {
            let label = format!("rule {} of {origin}", index + 1);
            let user_regex = match rule.user_matches.as_deref() {
                Some(pattern) => Some(Regex::new(pattern).map_err(|e| {
                    LlmError::Config(format!(
                        "{label}: user_matches {pattern:?} is not a valid regular expression: {e}"
                    ))
                })?),
                None => None,
            };
            self.rules.push(CompiledRule {
                label,
                rule,
                user_regex,
            });
        }
        Ok(self)
    }

    /// Appends a script's rules, and takes its responses unless some are already set.
    pub fn with_script(self, script: FakeScript, origin: &str) -> Result<Self, LlmError> {
        let mut fake = self.with_rules(script.rules, origin)?;
        if fake.responses.is_none() {
            fake.responses = script.responses;
        }
        Ok(fake)
    }

    /// Every request received so far, oldest first.
    pub fn received(&self) -> Vec<ChatRequest> {
        self.received
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn record(&self, request: &ChatRequest) -> usize {
        let mut received = self
            .received
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        received.push(request.clone());
        received.len()
    }

    fn answer(&self, request: &ChatRequest, number: usize) -> Result<String, LlmError> {
        let system = request.system.as_deref().unwrap_or("");
        let user = last_user_message(request);
        for compiled in &self.rules {
            if rule_matches(compiled, system, user)? {
                return Ok(compiled.rule.reply.clone());
            }
        }
        match &self.responses {
            Some(responses) => {
                let index = self.next_response.fetch_add(1, Ordering::SeqCst);
                Ok(responses
                    .get(index.min(responses.len().saturating_sub(1)))
                    .cloned()
                    .unwrap_or_default())
            }
            None => Err(LlmError::Script(format!(
                "no rule matched request #{number} (system: {:?}, user: {:?}) and no `responses` are scripted to fall back on; add a rule that matches it",
                truncate(system, 80),
                truncate(user, 80)
            ))),
        }
    }
}

/// The last user turn: what rules about "the user message" look at.
fn last_user_message(request: &ChatRequest) -> &str {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str())
}

fn rule_matches(compiled: &CompiledRule, system: &str, user: &str) -> Result<bool, LlmError> {
    let rule = &compiled.rule;
    if rule
        .system_contains
        .as_deref()
        .is_some_and(|needle| !system.contains(needle))
        || rule
            .system_lacks
            .as_deref()
            .is_some_and(|needle| system.contains(needle))
        || rule
            .user_contains
            .as_deref()
            .is_some_and(|needle| !user.contains(needle))
    {
        return Ok(false);
    }
    match &compiled.user_regex {
        Some(regex) => regex.is_match(user).map_err(|e| {
            LlmError::Script(format!(
                "{}: user_matches could not be evaluated: {e}",
                compiled.label
            ))
        }),
        None => Ok(true),
    }
}

fn word_count(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

#[async_trait]
impl ChatModel for FakeModel {
    fn provider(&self) -> &str {
        "fake"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> &str {
        ""
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let number = self.record(request);
        let reply = self.answer(request, number)?;
        let input_tokens = word_count(request.system.as_deref().unwrap_or(""))
            + request
                .messages
                .iter()
                .map(|m| word_count(&m.content))
                .sum::<u64>();
        Ok(ChatResponse {
            usage: TokenUsage {
                input_tokens,
                output_tokens: word_count(&reply),
            },
            text: reply.trim().to_string(),
            stop_reason: StopReason::End,
            model: self.model.clone(),
            latency: started.elapsed(),
            cached: false,
            batch: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(system: &str, user: &str) -> ChatRequest {
        ChatRequest::single(Some(system.to_string()), user, 0.0, 100)
    }

    fn rule(reply: &str) -> FakeRule {
        FakeRule {
            reply: reply.to_string(),
            ..FakeRule::default()
        }
    }

    #[tokio::test]
    async fn responses_come_in_order_and_the_last_repeats() {
        let fake = FakeModel::new("fake").with_responses(vec!["one".into(), "two".into()]);
        let mut replies = Vec::new();
        for _ in 0..4 {
            replies.push(fake.chat(&ask("", "q")).await.unwrap().text);
        }
        assert_eq!(replies, ["one", "two", "two", "two"]);
    }

    #[tokio::test]
    async fn an_empty_response_list_answers_empty_text() {
        let fake = FakeModel::new("fake").with_responses(Vec::new());
        assert_eq!(fake.chat(&ask("", "q")).await.unwrap().text, "");
    }

    #[tokio::test]
    async fn the_first_rule_whose_every_condition_holds_wins_before_responses() {
        let rules = vec![
            FakeRule {
                system_contains: Some("judge".into()),
                user_contains: Some("invoice".into()),
                ..rule("judge-invoice")
            },
            FakeRule {
                system_contains: Some("judge".into()),
                ..rule("judge-any")
            },
            FakeRule {
                system_lacks: Some("judge".into()),
                user_matches: Some(r"^\d+$".into()),
                ..rule("digits")
            },
        ];
        let fake = FakeModel::new("fake")
            .with_rules(rules, "the provider block")
            .unwrap()
            .with_responses(vec!["fallback".into()]);
        assert_eq!(
            fake.chat(&ask("You are a judge", "an invoice"))
                .await
                .unwrap()
                .text,
            "judge-invoice"
        );
        assert_eq!(
            fake.chat(&ask("You are a judge", "a receipt"))
                .await
                .unwrap()
                .text,
            "judge-any"
        );
        assert_eq!(
            fake.chat(&ask("Solve", "1234")).await.unwrap().text,
            "digits"
        );
        assert_eq!(
            fake.chat(&ask("Solve", "12a")).await.unwrap().text,
            "fallback"
        );
    }

    #[tokio::test]
    async fn no_matching_rule_and_no_responses_names_the_request() {
        let fake = FakeModel::new("fake")
            .with_rules(
                vec![FakeRule {
                    user_contains: Some("x".into()),
                    ..rule("r")
                }],
                "block",
            )
            .unwrap();
        let error = fake.chat(&ask("sys", "hello there")).await.unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, LlmError::Script(_)));
        assert!(
            text.contains("request #1") && text.contains("hello there") && text.contains("sys"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn usage_counts_whitespace_tokens_and_requests_are_recorded() {
        let fake = FakeModel::new("fake").with_responses(vec!["three word answer".into()]);
        let request = ask("be brief", "what is two plus two");
        let response = fake.chat(&request).await.unwrap();
        assert_eq!(
            response.usage,
            TokenUsage {
                input_tokens: 7,
                output_tokens: 3
            }
        );
        assert_eq!(fake.received(), vec![request]);
    }

    #[test]
    fn invalid_regexes_are_reported_with_their_rule() {
        let error = FakeModel::new("fake")
            .with_rules(
                vec![
                    rule("a"),
                    FakeRule {
                        user_matches: Some("(".into()),
                        ..rule("b")
                    },
                ],
                "s.yaml",
            )
            .unwrap_err();
        assert!(error.to_string().contains("rule 2 of s.yaml"), "{error}");
    }

    #[tokio::test]
    async fn scripts_parse_responses_and_rules() {
        let text = "rules:\n  - user_contains: capital\n    reply: Paris\nresponses:\n  - first\n  - |\n    multi\n    line\n";
        let fake = FakeModel::from_script_text(text, "script.yaml").unwrap();
        assert_eq!(
            fake.chat(&ask("", "the capital?")).await.unwrap().text,
            "Paris"
        );
        assert_eq!(fake.chat(&ask("", "other")).await.unwrap().text, "first");
        assert_eq!(
            fake.chat(&ask("", "other")).await.unwrap().text,
            "multi\nline"
        );
    }

    #[test]
    fn script_errors_name_the_file_and_the_bad_key() {
        let unknown = FakeModel::from_script_text("respones: [a]\n", "s.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("s.yaml") && unknown.contains("respones"),
            "{unknown}"
        );
        let empty = FakeModel::from_script_text("  \n", "s.yaml")
            .unwrap_err()
            .to_string();
        assert!(empty.contains("s.yaml is empty"), "{empty}");
        let nothing = FakeModel::from_script_text("rules: []\n", "s.yaml")
            .unwrap_err()
            .to_string();
        assert!(nothing.contains("neither"), "{nothing}");
    }
}
