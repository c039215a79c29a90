//! The `api` harness: the skill body as system prompt, the task input as the user message.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use skill_factory_core::{Rollout, Skill, Task, Usage};
use skill_factory_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, StopReason};

use super::Harness;
use crate::config::HarnessConfig;

/// Runs a skill by sending one chat request to the target model.
pub struct ApiHarness {
    client: Arc<dyn ChatModel>,
    temperature: f64,
    max_tokens: u32,
}

impl ApiHarness {
    /// The `api` harness of a `harness` block, calling `client` (the target's model).
    pub fn from_config(config: &HarnessConfig, client: Arc<dyn ChatModel>) -> Self {
        ApiHarness::new(client, config.temperature, config.max_tokens)
    }

    /// A harness that calls `client` with the given sampling settings.
    pub fn new(client: Arc<dyn ChatModel>, temperature: f64, max_tokens: u32) -> Self {
        ApiHarness {
            client,
            temperature,
            max_tokens,
        }
    }
}

#[async_trait]
impl Harness for ApiHarness {
    fn name(&self) -> &str {
        "api"
    }

    /// The body alone is the system prompt.
    fn shows_description(&self) -> bool {
        false
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        let body = skill.body.trim();
        let system = (!body.is_empty()).then(|| body.to_string());
        let mut request = ChatRequest::single(
            system,
            task.input.clone(),
            self.temperature,
            self.max_tokens,
        );
        request.sample_index = sample;
        let started = Instant::now();
        let answer = self.client.chat(&request).await;
        let latency_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        let mut rollout = answered(&task.id, answer);
        rollout.latency_ms = latency_ms;
        rollout
            .metadata
            .insert("harness".into(), Value::from("api"));
        rollout
    }
}

/// The rollout of one model call: the answer's text as the output, its tokens and model, and
/// whether it was cut at max_tokens (still scored, but the reason must be visible to the
/// optimizer and in reports); or the call's error, unreachable when no answer came.
pub(crate) fn answered(task_id: &str, answer: Result<ChatResponse, LlmError>) -> Rollout {
    match answer {
        Ok(response) => {
            let mut rollout = Rollout::success(task_id, response.text);
            rollout.usage = Usage {
                input_tokens: response.usage.input_tokens,
                output_tokens: response.usage.output_tokens,
            };
            rollout
                .metadata
                .insert("model".into(), Value::from(response.model));
            if response.stop_reason == StopReason::MaxTokens {
                rollout
                    .metadata
                    .insert("truncated".into(), Value::Bool(true));
            }
            rollout
        }
        Err(error) if error.is_unreachable() => Rollout::unreachable(task_id, error.to_string()),
        Err(error) => Rollout::failure(task_id, error.to_string()),
    }
}
