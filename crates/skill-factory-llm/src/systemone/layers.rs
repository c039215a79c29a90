//! What stands between the System One metric and its host, as for chat models: the run's
//! model cache ([`CachedDecisions`]), so a rerun asks nothing it asked before, and the run's
//! budget ([`BudgetedDecisions`]), so its requests count against `max_calls` and
//! `max_minutes` and appear in the run's spending.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::SystemOneError;
use super::answer::Answers;
use super::client::{Asked, DecisionModel};
use super::question::Question;
use crate::budget::{Call, Ledger};
use crate::cache::{CacheKey, CacheStore};
use crate::request::{ChatResponse, StopReason, TokenUsage};

/// A decision model with the run's SQLite cache in front of it: a request (the model, the
/// state and every question) asked before is answered from the cache, whole; errors are never
/// stored. A cache that fails at run time lets requests through, with one warning.
pub struct CachedDecisions {
    inner: Arc<dyn DecisionModel>,
    store: Arc<CacheStore>,
    provider: String,
    endpoint: String,
    warned: AtomicBool,
}

impl CachedDecisions {
    /// `inner`, reached at `endpoint` of `provider`, behind `store`.
    pub fn new(
        inner: Arc<dyn DecisionModel>,
        store: Arc<CacheStore>,
        provider: &str,
        endpoint: &str,
    ) -> Self {
        CachedDecisions {
            inner,
            store,
            provider: format!("systemone:{provider}"),
            endpoint: endpoint.to_string(),
            warned: AtomicBool::new(false),
        }
    }

    fn warn(&self, error: &dyn std::fmt::Display) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("{error}; System One requests go out uncached");
        }
    }

    fn lookup(&self, key: &CacheKey, ids: &[String]) -> Option<Answers> {
        let hit = match self.store.get(key) {
            Ok(hit) => hit?,
            Err(error) => {
                self.warn(&error);
                return None;
            }
        };
        let answers = decode(&hit.response, ids)?;
        self.store.note_hit(key, &hit);
        Some(answers)
    }
}

/// The stored form of a set of answers: a chat answer whose text is their JSON.
fn encode(answers: &Answers) -> ChatResponse {
    ChatResponse {
        text: json!({"probabilities": answers.probabilities}).to_string(),
        usage: TokenUsage {
            input_tokens: answers.input_tokens.unwrap_or(0),
            output_tokens: 0,
        },
        stop_reason: StopReason::End,
        model: answers.served_model.clone(),
        latency: std::time::Duration::ZERO,
        cached: false,
        batch: false,
    }
}

/// Answers back from their stored form; `None` unless every question asked has one.
fn decode(stored: &ChatResponse, ids: &[String]) -> Option<Answers> {
    let value: Value = serde_json::from_str(&stored.text).ok()?;
    let probabilities = value.get("probabilities")?.as_object()?;
    let probabilities = ids
        .iter()
        .map(|id| Some((id.clone(), probabilities.get(id)?.as_f64()?)))
        .collect::<Option<_>>()?;
    Some(Answers {
        probabilities,
        served_model: stored.model.clone(),
        input_tokens: Some(stored.usage.input_tokens).filter(|&n| n > 0),
        cached: true,
    })
}

#[async_trait]
impl DecisionModel for CachedDecisions {
    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn ask(&self, state: &str, questions: &[(String, Question)]) -> Asked {
        let key = CacheKey::decision(
            &self.provider,
            &self.endpoint,
            self.inner.model(),
            state,
            questions,
        );
        let ids: Vec<String> = questions.iter().map(|(id, _)| id.clone()).collect();
        if let Some(answers) = self.lookup(&key, &ids) {
            return Ok(answers);
        }
        self.store.note_miss();
        let answers = self.inner.ask(state, questions).await?;
        let written = self
            .store
            .put_in_background(
                key,
                self.provider.clone(),
                self.inner.model().to_string(),
                encode(&answers),
            )
            .await;
        if let Err(error) = written {
            self.warn(&error);
        }
        Ok(answers)
    }
}

/// A decision model whose every request is admitted by the run's [`Ledger`] first and booked
/// after, under the role `systemone`. System One has no price table here, so its dollars are
/// unknown (the run's cost says so).
pub struct BudgetedDecisions {
    inner: Arc<dyn DecisionModel>,
    ledger: Arc<Ledger>,
    label: String,
}

/// The role System One requests are booked under.
pub const SYSTEMONE_ROLE: &str = "systemone";

impl BudgetedDecisions {
    /// Wraps `inner` of `provider`.
    pub fn new(inner: Arc<dyn DecisionModel>, ledger: Arc<Ledger>, provider: &str) -> Self {
        let label = format!("systemone:{provider}/{}", inner.model());
        BudgetedDecisions {
            inner,
            ledger,
            label,
        }
    }
}

#[async_trait]
impl DecisionModel for BudgetedDecisions {
    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn ask(&self, state: &str, questions: &[(String, Question)]) -> Asked {
        self.ledger
            .admit()
            .map_err(|refused| SystemOneError::Request {
                provider: self.label.clone(),
                detail: refused.to_string(),
            })?;
        let outcome = self.inner.ask(state, questions).await;
        let call = match &outcome {
            Ok(answers) if answers.cached => Call::Cached,
            Ok(answers) => Call::Answered {
                input_tokens: answers.input_tokens.unwrap_or(0),
                output_tokens: 0,
                usd: None,
            },
            Err(_) => Call::Failed,
        };
        self.ledger.book_call(SYSTEMONE_ROLE, &self.label, call);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BudgetLimits;
    use crate::cache::CacheMode;
    use crate::systemone::FakeSystemOne;

    fn questions() -> Vec<(String, Question)> {
        vec![
            ("a".into(), Question::new("Is it JSON?", "Yes", "No")),
            ("b".into(), Question::new("Is it short?", "Yes", "No")),
        ]
    }

    fn fake() -> Arc<FakeSystemOne> {
        Arc::new(FakeSystemOne::new("jev-test", |state, id, _| {
            if state.contains("good") && id == "a" {
                0.9
            } else {
                0.2
            }
        }))
    }

    #[tokio::test]
    async fn a_request_asked_before_is_answered_from_the_model_cache_in_a_later_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let host = fake();
        for run in 0..2 {
            let store = Arc::new(CacheStore::open(&path, CacheMode::ReadWrite).unwrap());
            let cached = CachedDecisions::new(host.clone(), store, "custom", "http://h/v1");
            let answers = cached.ask("a good state", &questions()).await.unwrap();
            assert_eq!(answers.probabilities["a"], 0.9);
            assert_eq!(answers.probabilities["b"], 0.2);
            assert_eq!(answers.cached, run == 1);
            let other = cached.ask("another state", &questions()).await.unwrap();
            assert_eq!(other.probabilities["a"], 0.2);
        }
        assert_eq!(host.requests().len(), 2, "the second run asked nothing");
        // Another endpoint is another model: asked again.
        let store = Arc::new(CacheStore::open(&path, CacheMode::ReadWrite).unwrap());
        let elsewhere = CachedDecisions::new(host.clone(), store, "custom", "http://other/v1");
        elsewhere.ask("a good state", &questions()).await.unwrap();
        assert_eq!(host.requests().len(), 3);
    }

    #[tokio::test]
    async fn failures_are_not_cached_and_the_off_mode_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let failing = Arc::new(FakeSystemOne::new("jev-test", |_, _, _| 0.5).fail_when(|_| true));
        let store = Arc::new(CacheStore::open(&path, CacheMode::ReadWrite).unwrap());
        let cached = CachedDecisions::new(failing.clone(), store, "custom", "u");
        assert!(cached.ask("s", &questions()).await.is_err());
        assert!(cached.ask("s", &questions()).await.is_err());
        assert_eq!(failing.requests().len(), 2);

        let host = fake();
        let off = Arc::new(CacheStore::open(&path, CacheMode::Off).unwrap());
        let uncached = CachedDecisions::new(host.clone(), off, "custom", "u");
        uncached.ask("s", &questions()).await.unwrap();
        uncached.ask("s", &questions()).await.unwrap();
        assert_eq!(host.requests().len(), 2);
    }

    #[tokio::test]
    async fn requests_count_against_max_calls_and_cache_hits_are_free() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(CacheStore::open(dir.path().join("c.sqlite"), CacheMode::ReadWrite).unwrap());
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_calls: Some(2),
            ..BudgetLimits::default()
        }));
        let cached: Arc<dyn DecisionModel> =
            Arc::new(CachedDecisions::new(fake(), store, "custom", "u"));
        let budgeted = BudgetedDecisions::new(cached, ledger.clone(), "custom");
        budgeted.ask("one", &questions()).await.unwrap();
        budgeted.ask("one", &questions()).await.unwrap();
        budgeted.ask("two", &questions()).await.unwrap();
        let refused = budgeted.ask("three", &questions()).await.unwrap_err();
        assert!(
            refused.to_string().contains("max_calls reached"),
            "{refused}"
        );
        let spend = ledger.by_role()[SYSTEMONE_ROLE];
        assert_eq!((spend.calls, spend.cached_calls), (2, 1));
        assert_eq!(ledger.unpriced_models(), ["systemone:custom/jev-test"]);
    }
}
