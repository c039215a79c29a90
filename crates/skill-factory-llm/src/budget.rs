//! Run budgets: a shared ledger of what a run has spent (calls, tokens, dollars, wall time)
//! and a [`ChatModel`] wrapper that asks the ledger *before* every call and books the call
//! after it.
//!
//! Every client of a run (target, judge, optimizer) is wrapped in a [`BudgetedModel`] that
//! shares one [`Ledger`]. A call is admitted only while every limit still has room; the first
//! refusal marks the ledger exhausted for good (spending only grows), so every later call is
//! refused with the same reason and the caller can stop cleanly and say why.
//!
//! * `max_calls` is exact even under concurrency: a call reserves its slot atomically before
//!   it is sent.
//! * `max_tokens` and `max_usd` are checked against what finished calls reported, so calls
//!   already in flight when the limit is reached may overshoot it by at most their own size.
//! * `max_minutes` is measured from the ledger's creation (the start of the run).
//!
//! * A batched client's calls ([`BudgetedModel::reserving`]) are all in flight at once, so
//!   each holds the most it may cost (its prompt's bytes and `max_tokens`, at the direct
//!   price, since a request a batch does not answer is asked directly) against `max_tokens`
//!   and `max_usd` from its admission until it is booked; a call that does not fit waits for
//!   the calls in flight to be booked. A batch is never submitted with more than the budget
//!   has room for; when that room is one request ([`Ledger::waiting_for_room`] while a batch
//!   of one would go out), batch mode is given up for the run
//!   ([`crate::batch::BatchBoard::hold_to`]).
//!
//! Answers replayed from a cache (`ChatResponse::cached`) cost nothing: their slot is given
//! back and neither tokens nor dollars are booked; they are counted apart as cached calls.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Serialize;

use crate::cost::Pricing;
use crate::request::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// The hard limits of a run; `None` means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetLimits {
    /// Most model calls sent (cache hits excluded).
    pub max_calls: Option<u64>,
    /// Most tokens, input and output together.
    pub max_tokens: Option<u64>,
    /// Most dollars, at the prices of [`crate::cost`].
    pub max_usd: Option<f64>,
    /// Most wall time from the start of the run.
    pub max_duration: Option<Duration>,
}

impl BudgetLimits {
    /// True when no limit is set.
    pub fn is_unlimited(&self) -> bool {
        *self == BudgetLimits::default()
    }
}

/// Which limit stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    /// `max_calls`.
    MaxCalls,
    /// `max_tokens`.
    MaxTokens,
    /// `max_usd`.
    MaxUsd,
    /// `max_minutes`.
    MaxMinutes,
}

impl BudgetLimit {
    /// The config key of the limit (`max_calls`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            BudgetLimit::MaxCalls => "max_calls",
            BudgetLimit::MaxTokens => "max_tokens",
            BudgetLimit::MaxUsd => "max_usd",
            BudgetLimit::MaxMinutes => "max_minutes",
        }
    }
}

/// The limit a run reached, and a sentence saying so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exhaustion {
    /// The limit.
    pub limit: BudgetLimit,
    /// E.g. `max_calls reached: 40 of 40 calls made`.
    pub detail: String,
}

/// What has been spent, by one role or in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spend {
    /// Calls sent to a model (cache hits excluded), failed ones included.
    pub calls: u64,
    /// Calls answered from a cache, for free.
    pub cached_calls: u64,
    /// Calls that failed after their retries.
    pub failed_calls: u64,
    /// Prompt tokens of sent calls.
    pub input_tokens: u64,
    /// Completion tokens of sent calls.
    pub output_tokens: u64,
    /// Dollars of sent calls whose model has a price.
    pub usd: f64,
    /// Sent calls whose model has no known price (their dollars are not in `usd`).
    pub unpriced_calls: u64,
}

impl Spend {
    /// Input and output tokens together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another spend to this one.
    pub fn add(&mut self, other: &Spend) {
        self.calls += other.calls;
        self.cached_calls += other.cached_calls;
        self.failed_calls += other.failed_calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.usd += other.usd;
        self.unpriced_calls += other.unpriced_calls;
    }
}

#[derive(Debug, Default)]
struct Books {
    by_role: BTreeMap<String, Spend>,
    total: Spend,
    unpriced_models: BTreeSet<String>,
    /// What the calls admitted with a reserve may still cost.
    held: Reserve,
}

/// The most one call may cost, held against `max_tokens` and `max_usd` while it is in flight
/// ([`Ledger::admit_reserving`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reserve {
    /// Tokens, prompt and completion.
    pub tokens: u64,
    /// Dollars (0 when the price is unknown).
    pub usd: f64,
}

impl Reserve {
    /// The most `request` may cost at `pricing`: a token is at least a byte of its text,
    /// plus a few for each message's framing, and the completion at most `max_tokens`.
    pub fn of(request: &ChatRequest, pricing: Option<Pricing>) -> Reserve {
        let prompt: u64 = request
            .system
            .iter()
            .chain(request.messages.iter().map(|m| &m.content))
            .map(|text| text.len() as u64 + 16)
            .sum();
        let completion = u64::from(request.max_tokens);
        let usd = pricing.map_or(0.0, |price| {
            price.cost(crate::request::TokenUsage {
                input_tokens: prompt,
                output_tokens: completion,
            })
        });
        Reserve {
            tokens: prompt + completion,
            usd,
        }
    }
}

/// The shared account of a run's spending, and its limits.
#[derive(Debug)]
pub struct Ledger {
    limits: BudgetLimits,
    started: Instant,
    /// Calls admitted and not given back (cache hits give theirs back).
    reserved: AtomicU64,
    /// Calls waiting in [`Ledger::admit_reserving`] for room beside the reserves held.
    waiting: AtomicUsize,
    /// Woken whenever a held reserve is given back.
    released: tokio::sync::Notify,
    books: Mutex<Books>,
    exhausted: OnceLock<Exhaustion>,
}

impl Ledger {
    /// A ledger enforcing `limits`, its clock starting now.
    pub fn new(limits: BudgetLimits) -> Self {
        Ledger {
            limits,
            started: Instant::now(),
            reserved: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            released: tokio::sync::Notify::new(),
            books: Mutex::new(Books::default()),
            exhausted: OnceLock::new(),
        }
    }

    /// A ledger that only keeps accounts.
    pub fn unlimited() -> Self {
        Ledger::new(BudgetLimits::default())
    }

    /// The limits enforced.
    pub fn limits(&self) -> &BudgetLimits {
        &self.limits
    }

    /// Wall time since the ledger was created.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The limit that was reached, once one was.
    pub fn exhausted(&self) -> Option<&Exhaustion> {
        self.exhausted.get()
    }

    /// Everything spent so far.
    pub fn total(&self) -> Spend {
        self.books().total
    }

    /// What each role (`target`, `judge`, `optimizer`) spent so far.
    pub fn by_role(&self) -> BTreeMap<String, Spend> {
        self.books().by_role.clone()
    }

    /// `provider/model` names that were called but have no price.
    pub fn unpriced_models(&self) -> Vec<String> {
        self.books().unpriced_models.iter().cloned().collect()
    }

    fn books(&self) -> MutexGuard<'_, Books> {
        self.books
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Admits one call, or refuses it because a limit is reached (from then on every call is
    /// refused). An admitted call holds a slot of `max_calls` until it is booked.
    pub fn admit(&self) -> Result<(), LlmError> {
        if let Some(done) = self.exhausted.get() {
            return Err(LlmError::Budget(done.detail.clone()));
        }
        if let Some(limit) = self.limits.max_duration {
            let elapsed = self.elapsed();
            if elapsed >= limit {
                return Err(self.exhaust(
                    BudgetLimit::MaxMinutes,
                    format!(
                        "max_minutes reached: {:.1} of {} minutes elapsed",
                        elapsed.as_secs_f64() / 60.0,
                        trim_float(limit.as_secs_f64() / 60.0)
                    ),
                ));
            }
        }
        let total = self.total();
        if let Some(limit) = self.limits.max_tokens
            && total.tokens() >= limit
        {
            return Err(self.exhaust(
                BudgetLimit::MaxTokens,
                format!(
                    "max_tokens reached: {} of {limit} tokens used",
                    total.tokens()
                ),
            ));
        }
        if let Some(limit) = self.limits.max_usd
            && total.usd >= limit
        {
            return Err(self.exhaust(
                BudgetLimit::MaxUsd,
                format!(
                    "max_usd reached: ${:.4} of ${} spent",
                    total.usd,
                    trim_float(limit)
                ),
            ));
        }
        if let Some(limit) = self.limits.max_calls {
            let reserved = self
                .reserved
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < limit).then_some(n + 1)
                });
            if reserved.is_err() {
                return Err(self.exhaust(
                    BudgetLimit::MaxCalls,
                    format!("max_calls reached: {limit} of {limit} calls made"),
                ));
            }
        } else {
            self.reserved.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Admits one call as [`Ledger::admit`] does, then holds `reserve` against `max_tokens`
    /// and `max_usd` until the returned [`Holding`] is dropped (once the call is booked).
    /// While the reserve does not fit beside what was spent and what calls in flight hold,
    /// the call waits, its `max_calls` slot given back, for one of those to be booked (it
    /// may cost less than it held), and is then admitted anew: so the calls of a batch never
    /// hold more than the budget has room for, and the rest wait for the next batch. With
    /// nothing held it goes in as an unreserved call would.
    pub async fn admit_reserving(&self, reserve: Reserve) -> Result<Holding<'_>, LlmError> {
        loop {
            self.admit()?;
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            {
                let mut books = self.books();
                let tokens = books.total.tokens() + books.held.tokens + reserve.tokens;
                let usd = books.total.usd + books.held.usd + reserve.usd;
                let fits = self.limits.max_tokens.is_none_or(|limit| tokens <= limit)
                    && self.limits.max_usd.is_none_or(|limit| usd <= limit);
                if fits || books.held.tokens == 0 {
                    books.held.tokens += reserve.tokens;
                    books.held.usd += reserve.usd;
                    return Ok(Holding {
                        ledger: self,
                        reserve,
                    });
                }
            }
            self.reserved.fetch_sub(1, Ordering::SeqCst);
            let _waiting = Waiting::on(&self.waiting);
            released.await;
        }
    }

    /// How many calls wait for room beside the reserves held ([`Ledger::admit_reserving`]):
    /// when a batch would go out with one request while some wait, the budget has room for
    /// one request at a time, and batching them is only slower.
    pub fn waiting_for_room(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Marks the ledger exhausted (the first reason sticks) and returns the refusal.
    fn exhaust(&self, limit: BudgetLimit, detail: String) -> LlmError {
        let first = self.exhausted.get_or_init(|| Exhaustion { limit, detail });
        LlmError::Budget(first.detail.clone())
    }

    /// Books the outcome of an admitted model call for `role`. `model` names it for the list
    /// of unpriced models.
    pub fn book(
        &self,
        role: &str,
        model: &str,
        pricing: Option<Pricing>,
        outcome: Result<&ChatResponse, &LlmError>,
    ) {
        let call = match outcome {
            Ok(response) if response.cached => Call::Cached,
            Ok(response) => Call::Answered {
                input_tokens: response.usage.input_tokens,
                output_tokens: response.usage.output_tokens,
                usd: pricing.map(|price| price.cost(response.usage)),
            },
            Err(_) => Call::Failed,
        };
        self.book_call(role, model, call);
    }

    /// Books the outcome of any admitted call (a model's, a System One request, an agent
    /// run) for `role`; `label` names what was called, for the list of unpriced ones.
    pub fn book_call(&self, role: &str, label: &str, call: Call) {
        let mut spend = Spend::default();
        match call {
            Call::Cached => {
                // A replayed answer cost nothing: give its slot back.
                self.reserved.fetch_sub(1, Ordering::SeqCst);
                spend.cached_calls = 1;
            }
            Call::Answered {
                input_tokens,
                output_tokens,
                usd,
            } => {
                spend.calls = 1;
                spend.input_tokens = input_tokens;
                spend.output_tokens = output_tokens;
                match usd {
                    Some(usd) => spend.usd = usd,
                    None => spend.unpriced_calls = 1,
                }
            }
            Call::Failed => {
                spend.calls = 1;
                spend.failed_calls = 1;
            }
        }
        let mut books = self.books();
        books.total.add(&spend);
        books
            .by_role
            .entry(role.to_string())
            .or_default()
            .add(&spend);
        if spend.unpriced_calls > 0 {
            books.unpriced_models.insert(label.to_string());
        }
    }
}

/// One call counted as waiting for room while it lives, however its wait ends (a caller that
/// gives up drops it too).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn on(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reserve held by an admitted call ([`Ledger::admit_reserving`]), given back when dropped:
/// after the call is booked, or when the call is abandoned.
#[derive(Debug)]
pub struct Holding<'a> {
    ledger: &'a Ledger,
    reserve: Reserve,
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        {
            let mut books = self.ledger.books();
            books.held.tokens = books.held.tokens.saturating_sub(self.reserve.tokens);
            books.held.usd = (books.held.usd - self.reserve.usd).max(0.0);
        }
        self.ledger.released.notify_waiters();
    }
}

/// What became of one admitted call, for [`Ledger::book_call`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Call {
    /// Answered from a cache: free, and its `max_calls` slot is given back.
    Cached,
    /// Answered; `usd` is its price, `None` when unknown.
    Answered {
        /// Prompt tokens billed.
        input_tokens: u64,
        /// Completion tokens billed.
        output_tokens: u64,
        /// Dollars, when the price is known.
        usd: Option<f64>,
    },
    /// Failed after its retries.
    Failed,
}

/// `2` for 2.0, `0.5` for 0.5: limits read as they were written.
fn trim_float(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A client whose every call is admitted by a shared [`Ledger`] first and booked after,
/// under a role name (`target`, `judge`, `optimizer`).
pub struct BudgetedModel {
    inner: Arc<dyn ChatModel>,
    ledger: Arc<Ledger>,
    role: String,
    pricing: Option<Pricing>,
    label: String,
    /// Whether each call holds its most at the batch price while in flight.
    reserving: bool,
}

impl BudgetedModel {
    /// Wraps `inner`; `pricing` is the price of its model (`None`: unknown).
    pub fn new(
        inner: Arc<dyn ChatModel>,
        ledger: Arc<Ledger>,
        role: impl Into<String>,
        pricing: Option<Pricing>,
    ) -> Self {
        let label = format!("{}/{}", inner.provider(), inner.model());
        BudgetedModel {
            inner,
            ledger,
            role: role.into(),
            pricing,
            label,
            reserving: false,
        }
    }

    /// The same wrapper for a batched client: each call holds the most it may cost from its
    /// admission until it is booked ([`Ledger::admit_reserving`]).
    pub fn reserving(mut self) -> Self {
        self.reserving = true;
        self
    }

    /// The price charged for this client's calls.
    pub fn pricing(&self) -> Option<Pricing> {
        self.pricing
    }
}

#[async_trait]
impl ChatModel for BudgetedModel {
    crate::request::delegate_identity!(inner);

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        // At the direct price: a request a batch does not answer is asked directly.
        let holding = match self.reserving {
            true => Some(
                self.ledger
                    .admit_reserving(Reserve::of(request, self.pricing))
                    .await?,
            ),
            false => {
                self.ledger.admit()?;
                None
            }
        };
        let outcome = self.inner.chat(request).await;
        // A batch answered at the batch price; what it did not answer was asked directly.
        let pricing = match &outcome {
            Ok(response) if response.batch => self.pricing.map(Pricing::batch),
            _ => self.pricing,
        };
        self.ledger
            .book(&self.role, &self.label, pricing, outcome.as_ref());
        // Given back once booked, so a call waiting for room sees what this one cost.
        drop(holding);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeModel;
    use crate::request::{StopReason, TokenUsage};

    fn fake(reply: &str) -> Arc<dyn ChatModel> {
        Arc::new(FakeModel::new("m").with_responses(vec![reply.to_string()]))
    }

    fn ask() -> ChatRequest {
        ChatRequest::single(None, "one two three", 0.0, 10)
    }

    fn budgeted(ledger: &Arc<Ledger>, price: Option<Pricing>) -> BudgetedModel {
        BudgetedModel::new(fake("four five"), ledger.clone(), "target", price)
    }

    #[tokio::test]
    async fn calls_beyond_max_calls_are_refused_before_they_are_sent() {
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_calls: Some(2),
            ..BudgetLimits::default()
        }));
        let model = budgeted(&ledger, None);
        assert!(model.chat(&ask()).await.is_ok());
        assert!(model.chat(&ask()).await.is_ok());
        let refused = model.chat(&ask()).await.unwrap_err();
        assert!(matches!(refused, LlmError::Budget(_)), "{refused}");
        assert!(
            refused.to_string().contains("max_calls reached"),
            "{refused}"
        );
        assert_eq!(ledger.total().calls, 2);
        assert_eq!(
            ledger.exhausted().map(|e| e.limit),
            Some(BudgetLimit::MaxCalls)
        );
    }

    #[tokio::test]
    async fn batched_calls_hold_their_most_and_one_that_does_not_fit_waits_for_room() {
        let price = Pricing {
            input_per_mtok: 1_000.0,
            output_per_mtok: 1_000.0,
        };
        let reserve = Reserve::of(&ask(), Some(price));
        // "one two three" (13 bytes + 16) and 10 completion tokens, at $1,000 per million.
        assert_eq!(reserve.tokens, 39);
        assert!((reserve.usd - 39.0 * 1_000.0 / 1e6).abs() < 1e-12);
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_usd: Some(reserve.usd * 3.5),
            ..BudgetLimits::default()
        }));
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(ledger.admit_reserving(reserve).await.unwrap());
        }
        // A fourth does not fit beside the three: it waits, holding no call slot meanwhile.
        let waiting = {
            let ledger = ledger.clone();
            tokio::spawn(async move {
                let holding = ledger.admit_reserving(reserve).await.is_ok();
                (holding, ledger.total().calls)
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "it waited");
        assert_eq!(ledger.waiting_for_room(), 1);
        assert_eq!(ledger.reserved.load(Ordering::SeqCst), 3);
        assert!(ledger.exhausted().is_none(), "waiting is not refusing");
        // One is booked for less than it held, and given back: the fourth goes in.
        ledger.book_call(
            "target",
            "m",
            Call::Answered {
                input_tokens: 5,
                output_tokens: 5,
                usd: Some(reserve.usd / 4.0),
            },
        );
        held.pop();
        assert_eq!(waiting.await.unwrap(), (true, 1));
        assert_eq!(ledger.waiting_for_room(), 0);
        drop(held);
        assert_eq!(ledger.books().held.tokens, 0, "every reserve given back");
    }

    /// Answers as a batch would: the fake's answer, marked as a batch's.
    struct Batched(Arc<dyn ChatModel>);

    #[async_trait]
    impl ChatModel for Batched {
        fn provider(&self) -> &str {
            "fake"
        }
        fn model(&self) -> &str {
            "m"
        }
        fn endpoint(&self) -> &str {
            ""
        }
        async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let mut response = self.0.chat(request).await?;
            response.batch = true;
            Ok(response)
        }
    }

    #[tokio::test]
    async fn a_batch_answer_is_booked_at_half_price_and_a_direct_one_at_full() {
        let price = Pricing {
            input_per_mtok: 2.0,
            output_per_mtok: 4.0,
        };
        let ledger = Arc::new(Ledger::unlimited());
        let direct = BudgetedModel::new(fake("four five"), ledger.clone(), "target", Some(price));
        let answer = direct.chat(&ask()).await.unwrap();
        let full = price.cost(answer.usage);
        assert!(full > 0.0);
        assert!((ledger.total().usd - full).abs() < 1e-12);
        let batched = BudgetedModel::new(
            Arc::new(Batched(fake("four five"))),
            ledger.clone(),
            "target",
            Some(price),
        )
        .reserving();
        batched.chat(&ask()).await.unwrap();
        assert!((ledger.total().usd - full * 1.5).abs() < 1e-12);
        assert_eq!(
            ledger.books().held,
            Reserve::default(),
            "released once booked"
        );
    }

    #[tokio::test]
    async fn max_calls_holds_exactly_under_concurrency() {
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_calls: Some(5),
            ..BudgetLimits::default()
        }));
        let model = Arc::new(budgeted(&ledger, None));
        let mut handles = Vec::new();
        for _ in 0..40 {
            let model = model.clone();
            handles.push(tokio::spawn(
                async move { model.chat(&ask()).await.is_ok() },
            ));
        }
        let mut admitted = 0;
        for handle in handles {
            admitted += usize::from(handle.await.unwrap_or(false));
        }
        assert_eq!(admitted, 5);
        assert_eq!(ledger.total().calls, 5);
    }

    #[tokio::test]
    async fn token_and_dollar_limits_refuse_once_reached_and_stay_refused() {
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_tokens: Some(5),
            ..BudgetLimits::default()
        }));
        let model = budgeted(&ledger, None);
        // 3 input + 2 output words: the limit is reached by the first call.
        assert!(model.chat(&ask()).await.is_ok());
        assert_eq!(ledger.total().tokens(), 5);
        let refused = model.chat(&ask()).await.unwrap_err().to_string();
        assert!(refused.contains("max_tokens reached: 5 of 5"), "{refused}");

        let dollars = Arc::new(Ledger::new(BudgetLimits {
            max_usd: Some(0.5),
            ..BudgetLimits::default()
        }));
        let pricey = budgeted(
            &dollars,
            Some(Pricing {
                input_per_mtok: 100_000.0,
                output_per_mtok: 0.0,
            }),
        );
        assert!(pricey.chat(&ask()).await.is_ok());
        assert!((dollars.total().usd - 0.3).abs() < 1e-9);
        assert!(pricey.chat(&ask()).await.is_ok());
        let refused = pricey.chat(&ask()).await.unwrap_err().to_string();
        assert!(refused.contains("max_usd reached"), "{refused}");
    }

    #[tokio::test]
    async fn the_wall_clock_limit_refuses_after_it_elapses() {
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_duration: Some(Duration::from_millis(1)),
            ..BudgetLimits::default()
        }));
        tokio::time::sleep(Duration::from_millis(5)).await;
        let refused = budgeted(&ledger, None).chat(&ask()).await.unwrap_err();
        assert!(
            refused.to_string().contains("max_minutes reached"),
            "{refused}"
        );
        assert_eq!(ledger.total().calls, 0);
    }

    struct Replayed;

    #[async_trait]
    impl ChatModel for Replayed {
        fn provider(&self) -> &str {
            "openai"
        }
        fn model(&self) -> &str {
            "gpt-4o"
        }
        fn endpoint(&self) -> &str {
            ""
        }
        async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                text: "x".into(),
                usage: TokenUsage {
                    input_tokens: 1000,
                    output_tokens: 1000,
                },
                stop_reason: StopReason::End,
                model: "gpt-4o".into(),
                latency: Duration::ZERO,
                cached: true,
                batch: false,
            })
        }
    }

    #[tokio::test]
    async fn cache_hits_cost_nothing_and_use_no_call_slot() {
        let ledger = Arc::new(Ledger::new(BudgetLimits {
            max_calls: Some(1),
            ..BudgetLimits::default()
        }));
        let model = BudgetedModel::new(
            Arc::new(Replayed),
            ledger.clone(),
            "judge",
            Some(Pricing {
                input_per_mtok: 1.0,
                output_per_mtok: 1.0,
            }),
        );
        for _ in 0..3 {
            assert!(model.chat(&ask()).await.is_ok());
        }
        let spent = ledger.total();
        assert_eq!((spent.calls, spent.cached_calls, spent.tokens()), (0, 3, 0));
        assert_eq!(spent.usd, 0.0);
        assert!(ledger.exhausted().is_none());
    }

    #[tokio::test]
    async fn spending_is_kept_per_role_and_unpriced_models_are_listed() {
        let ledger = Arc::new(Ledger::unlimited());
        let target = BudgetedModel::new(fake("a"), ledger.clone(), "target", None);
        let judge = BudgetedModel::new(fake("b"), ledger.clone(), "judge", Some(Pricing::FREE));
        target.chat(&ask()).await.unwrap();
        judge.chat(&ask()).await.unwrap();
        judge.chat(&ask()).await.unwrap();
        let roles = ledger.by_role();
        assert_eq!(roles["target"].calls, 1);
        assert_eq!(roles["judge"].calls, 2);
        assert_eq!(roles["target"].unpriced_calls, 1);
        assert_eq!(ledger.unpriced_models(), ["fake/m"]);
        assert_eq!(ledger.total().calls, 3);
    }
}
