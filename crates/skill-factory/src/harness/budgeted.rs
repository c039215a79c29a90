//! [`BudgetedHarness`]: a process harness whose every rollout is admitted by the run's budget
//! first and booked after, as a model call is.
//!
//! An agent CLI or a command is one call to the budget: it counts against `max_calls`, and
//! `max_minutes` is checked before each one, so a run with `claude_code` and local metrics
//! stops on time. What the program spends inside (its own model calls, tokens, dollars) is
//! invisible to Skill Factory: its rollouts are booked as calls with no tokens, at no cost.

use std::sync::Arc;

use async_trait::async_trait;
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_llm::{Call, Ledger};

use super::Harness;

/// The role process rollouts are booked under.
pub const HARNESS_ROLE: &str = "harness";

/// A harness whose rollouts the run's [`Ledger`] admits and books.
pub struct BudgetedHarness {
    inner: Arc<dyn Harness>,
    ledger: Arc<Ledger>,
}

impl BudgetedHarness {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Harness>, ledger: Arc<Ledger>) -> Self {
        BudgetedHarness { inner, ledger }
    }
}

#[async_trait]
impl Harness for BudgetedHarness {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn shows_description(&self) -> bool {
        self.inner.shows_description()
    }

    fn shows_body(&self) -> bool {
        self.inner.shows_body()
    }

    fn shows_files(&self) -> bool {
        self.inner.shows_files()
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        if let Err(refused) = self.ledger.admit() {
            return Rollout::failure(&task.id, refused.to_string());
        }
        let rollout = self.inner.run_sample(skill, task, sample).await;
        let call = if rollout.error.is_some() {
            Call::Failed
        } else {
            Call::Answered {
                input_tokens: 0,
                output_tokens: 0,
                usd: Some(0.0),
            }
        };
        self.ledger.book_call(HARNESS_ROLE, self.inner.name(), call);
        rollout
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skill_factory_llm::BudgetLimits;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Fails tasks whose id starts with `x`, answers the others; counts its runs.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    #[async_trait]
    impl Harness for Counting {
        fn name(&self) -> &str {
            "subprocess"
        }
        async fn run_sample(&self, _skill: &Skill, task: &Task, _sample: u32) -> Rollout {
            self.0.fetch_add(1, Ordering::SeqCst);
            if task.id.starts_with('x') {
                Rollout::failure(&task.id, "exit 1")
            } else {
                Rollout::success(&task.id, "ok")
            }
        }
    }

    fn skill() -> Skill {
        Skill::new("s", "d", "b")
    }

    /// A counting harness under a ledger with `limits`, the ledger, and the budgeted harness
    /// over both.
    fn budgeted(limits: BudgetLimits) -> (Arc<Counting>, Arc<Ledger>, BudgetedHarness) {
        let inner = Arc::new(Counting::default());
        let ledger = Arc::new(Ledger::new(limits));
        let harness = BudgetedHarness::new(inner.clone(), ledger.clone());
        (inner, ledger, harness)
    }

    /// Asserts that the task `id` runs through `harness` without an error.
    async fn assert_runs(harness: &BudgetedHarness, id: &str) {
        let rollout = harness.run(&skill(), &Task::new(id, "i")).await;
        assert!(rollout.error.is_none());
    }

    #[tokio::test]
    async fn rollouts_beyond_max_calls_are_not_run_and_say_why() {
        let (inner, ledger, harness) = budgeted(BudgetLimits {
            max_calls: Some(2),
            ..BudgetLimits::default()
        });
        assert_runs(&harness, "a").await;
        let failed = harness.run(&skill(), &Task::new("x", "i")).await;
        assert_eq!(failed.error.as_deref(), Some("exit 1"));
        let refused = harness.run(&skill(), &Task::new("b", "i")).await;
        assert!(
            refused
                .error
                .as_deref()
                .is_some_and(|e| e.contains("max_calls reached")),
            "{refused:?}"
        );
        assert_eq!(
            inner.0.load(Ordering::SeqCst),
            2,
            "the refused rollout never ran"
        );
        let spend = ledger.by_role()[HARNESS_ROLE];
        assert_eq!(
            (spend.calls, spend.failed_calls, spend.unpriced_calls),
            (2, 1, 0)
        );
        assert!(ledger.exhausted().is_some());
    }

    #[tokio::test]
    async fn max_minutes_is_checked_before_every_rollout() {
        let (inner, _ledger, harness) = budgeted(BudgetLimits {
            max_duration: Some(Duration::from_millis(30)),
            ..BudgetLimits::default()
        });
        assert_runs(&harness, "a").await;
        tokio::time::sleep(Duration::from_millis(40)).await;
        let late = harness.run(&skill(), &Task::new("b", "i")).await;
        assert!(
            late.error
                .as_deref()
                .is_some_and(|e| e.contains("max_minutes reached")),
            "{late:?}"
        );
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
    }
}
