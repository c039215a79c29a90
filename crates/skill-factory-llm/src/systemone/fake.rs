//! A deterministic in-process decision model, for tests and offline runs.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::SystemOneError;
use super::answer::Answers;
use super::client::{Asked, DecisionModel};
use super::question::Question;

/// Gives P(true) for (state, question id, question).
pub type Responder = Arc<dyn Fn(&str, &str, &Question) -> f64 + Send + Sync>;

/// Tells, from the state, whether a request must fail.
pub type FailWhen = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// One request a [`FakeSystemOne`] received.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRequest {
    /// The state asked about.
    pub state: String,
    /// The question ids, in the order asked.
    pub ids: Vec<String>,
}

/// Answers from a responder function, records every request, and fails on demand. It reports
/// `max(1, chars / 4)` input tokens per request, as the lab's estimate does.
pub struct FakeSystemOne {
    model: String,
    served: String,
    responder: Responder,
    fail_when: Option<FailWhen>,
    requests: Mutex<Vec<FakeRequest>>,
}

impl FakeSystemOne {
    /// A fake named `model` (also the version it reports serving) answering with `responder`.
    pub fn new(
        model: impl Into<String>,
        responder: impl Fn(&str, &str, &Question) -> f64 + Send + Sync + 'static,
    ) -> Self {
        let model = model.into();
        FakeSystemOne {
            served: model.clone(),
            model,
            responder: Arc::new(responder),
            fail_when: None,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Reports `served` as the version that answered.
    pub fn serving(mut self, served: impl Into<String>) -> Self {
        self.served = served.into();
        self
    }

    /// Fails every request whose state makes `predicate` true.
    pub fn fail_when(mut self, predicate: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.fail_when = Some(Arc::new(predicate));
        self
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<FakeRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

#[async_trait]
impl DecisionModel for FakeSystemOne {
    fn model(&self) -> &str {
        &self.model
    }

    async fn ask(&self, state: &str, questions: &[(String, Question)]) -> Asked {
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(FakeRequest {
                state: state.to_string(),
                ids: questions.iter().map(|(id, _)| id.clone()).collect(),
            });
        if self.fail_when.as_ref().is_some_and(|fail| fail(state)) {
            return Err(SystemOneError::Request {
                provider: "fake".to_string(),
                detail: "HTTP 503: the fake was told to fail".to_string(),
            });
        }
        let probabilities = questions
            .iter()
            .map(|(id, question)| {
                (
                    id.clone(),
                    (self.responder)(state, id, question).clamp(0.0, 1.0),
                )
            })
            .collect();
        Ok(Answers {
            probabilities,
            served_model: self.served.clone(),
            input_tokens: Some((state.chars().count() as u64 / 4).max(1)),
            cached: false,
        })
    }
}
