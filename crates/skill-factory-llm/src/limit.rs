//! An adaptive cap on one provider's requests in flight (`max_concurrency` in a provider block).
//!
//! The cap follows AIMD, as TCP does: a 429 halves it, a run of successes adds one back, up to
//! the configured ceiling. Only a 429 for a request sent *after* the last cut cuts again, so a
//! burst of 429s answering requests that were all sent under the old cap counts as one signal,
//! not as one halving each. While the server's `Retry-After` runs, the cap does not grow.
//!
//! The cap holds per HTTP attempt, not per call: a call waiting out a back-off gives its slot
//! to another call, so the cap counts what the provider actually sees.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How an attempt that held a slot ended, as far as the cap is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The provider answered (whatever the body said).
    Answered,
    /// HTTP 429, with the server's `Retry-After` if it sent one.
    RateLimited(Option<Duration>),
    /// Anything else: 5xx, timeout, broken connection. Not a signal about the rate.
    Failed,
}

/// An AIMD concurrency cap; unlimited until the first 429 when built without a ceiling.
#[derive(Debug)]
pub struct AdaptiveLimit {
    state: Mutex<State>,
    freed: Notify,
}

#[derive(Debug)]
struct State {
    /// The most the cap may grow to; `None` is unlimited.
    ceiling: Option<usize>,
    in_flight: usize,
    /// The current cap; `None` is unlimited.
    limit: Option<usize>,
    /// Successes since the cap last changed.
    successes: usize,
    /// Bumped at every cut; a slot remembers the epoch it was taken in.
    epoch: u64,
    /// No growth before this instant (the server's `Retry-After`).
    hold_until: Option<Instant>,
}

/// A held slot: which cut epoch it was taken in. Give it back with [`AdaptiveLimit::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    epoch: u64,
}

impl AdaptiveLimit {
    /// A cap that starts at `ceiling` (unlimited for `None`) and never grows above it. A
    /// ceiling of 0 would block every call forever, so it counts as 1 (the provider registry
    /// rejects 0 with a message).
    pub fn new(ceiling: Option<usize>) -> Self {
        let ceiling = ceiling.map(|c| c.max(1));
        AdaptiveLimit {
            state: Mutex::new(State {
                ceiling,
                in_flight: 0,
                limit: ceiling,
                successes: 0,
                epoch: 0,
                hold_until: None,
            }),
            freed: Notify::new(),
        }
    }

    /// The most the cap may grow to.
    pub fn ceiling(&self) -> Option<usize> {
        self.lock().ceiling
    }

    /// Lowers the ceiling (and the cap with it) to `ceiling` if that is stricter.
    pub fn tighten(&self, ceiling: usize) {
        let ceiling = ceiling.max(1);
        let mut state = self.lock();
        state.ceiling = Some(state.ceiling.map_or(ceiling, |c| c.min(ceiling)));
        state.limit = Some(state.limit.map_or(ceiling, |l| l.min(ceiling)));
    }

    /// The cap right now (`None`: unlimited).
    pub fn current(&self) -> Option<usize> {
        self.lock().limit
    }

    /// Requests in flight right now.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// Waits for a free slot under the current cap.
    pub async fn acquire(&self) -> Ticket {
        loop {
            // Registered before the check, so a release between the check and the wait is
            // not missed.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut state = self.lock();
                if state.limit.is_none_or(|limit| state.in_flight < limit) {
                    state.in_flight += 1;
                    return Ticket { epoch: state.epoch };
                }
            }
            freed.await;
        }
    }

    /// Gives a slot back and adapts the cap to how the attempt ended.
    pub fn release(&self, ticket: Ticket, outcome: Outcome) {
        let now = Instant::now();
        {
            let mut state = self.lock();
            state.in_flight = state.in_flight.saturating_sub(1);
            match outcome {
                Outcome::Answered => grow(&mut state, now),
                Outcome::RateLimited(retry_after) => {
                    if ticket.epoch == state.epoch {
                        // Unlimited so far: halve what the provider was actually seeing.
                        let base = state.limit.unwrap_or(state.in_flight + 1);
                        state.limit = Some((base / 2).max(1));
                        state.epoch += 1;
                        state.successes = 0;
                        tracing::debug!(limit = ?state.limit, "429: provider concurrency cut");
                    }
                    if let Some(wait) = retry_after {
                        let until = now + wait;
                        state.hold_until = Some(state.hold_until.map_or(until, |h| h.max(until)));
                    }
                }
                Outcome::Failed => {}
            }
        }
        self.freed.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every critical section leaves the state consistent, so a panic elsewhere while the
        // lock was held cannot have broken it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Additive increase: one more slot after as many successes in a row as the cap allows at
/// once (one "round trip" of the cap), unless a `Retry-After` is still running.
fn grow(state: &mut State, now: Instant) {
    let Some(limit) = state.limit else {
        return;
    };
    if state.hold_until.is_some_and(|until| now < until) {
        return;
    }
    state.successes += 1;
    if state.successes < limit {
        return;
    }
    state.successes = 0;
    let grown = limit + 1;
    state.limit = Some(state.ceiling.map_or(grown, |ceiling| grown.min(ceiling)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cap_hands_out_only_that_many_slots() {
        let limit = AdaptiveLimit::new(Some(2));
        let first = limit.acquire().await;
        let _second = limit.acquire().await;
        let third = tokio::time::timeout(Duration::from_millis(20), limit.acquire()).await;
        assert!(
            third.is_err(),
            "a third request must wait while two are in flight"
        );
        limit.release(first, Outcome::Answered);
        tokio::time::timeout(Duration::from_millis(200), limit.acquire())
            .await
            .expect("a released slot is handed to the next caller");
    }

    #[tokio::test]
    async fn no_ceiling_never_waits_until_a_429() {
        let limit = AdaptiveLimit::new(None);
        let mut tickets = Vec::new();
        for _ in 0..100 {
            tickets.push(limit.acquire().await);
        }
        assert_eq!(limit.current(), None);
        // A 429 with 100 in flight cuts to half of what the provider saw.
        limit.release(tickets.pop().unwrap(), Outcome::RateLimited(None));
        assert_eq!(limit.current(), Some(50));
    }

    #[tokio::test]
    async fn a_429_halves_the_cap_once_per_round_of_requests() {
        let limit = AdaptiveLimit::new(Some(16));
        let mut tickets = Vec::new();
        for _ in 0..16 {
            tickets.push(limit.acquire().await);
        }
        // Three 429s answering requests sent under the old cap: one cut, not three.
        for _ in 0..3 {
            limit.release(tickets.pop().unwrap(), Outcome::RateLimited(None));
        }
        assert_eq!(limit.current(), Some(8));
        for ticket in tickets.drain(..) {
            limit.release(ticket, Outcome::Failed);
        }
        // A 429 for a request sent after the cut cuts again.
        let fresh = limit.acquire().await;
        limit.release(fresh, Outcome::RateLimited(None));
        assert_eq!(limit.current(), Some(4));
        // Never below one.
        for _ in 0..5 {
            let fresh = limit.acquire().await;
            limit.release(fresh, Outcome::RateLimited(None));
        }
        assert_eq!(limit.current(), Some(1));
    }

    #[tokio::test]
    async fn successes_grow_the_cap_back_by_one_per_round_up_to_the_ceiling() {
        let limit = AdaptiveLimit::new(Some(4));
        let ticket = limit.acquire().await;
        limit.release(ticket, Outcome::RateLimited(None));
        assert_eq!(limit.current(), Some(2));
        let mut seen = Vec::new();
        for _ in 0..20 {
            let ticket = limit.acquire().await;
            limit.release(ticket, Outcome::Answered);
            seen.push(limit.current().unwrap());
        }
        // 2 successes → 3, 3 more → 4, then it stays at the ceiling.
        assert_eq!(seen[1], 3);
        assert_eq!(seen[4], 4);
        assert_eq!(*seen.last().unwrap(), 4);
    }

    #[tokio::test]
    async fn the_cap_does_not_grow_while_retry_after_runs() {
        let limit = AdaptiveLimit::new(Some(4));
        let ticket = limit.acquire().await;
        limit.release(ticket, Outcome::RateLimited(Some(Duration::from_secs(60))));
        for _ in 0..10 {
            let ticket = limit.acquire().await;
            limit.release(ticket, Outcome::Answered);
        }
        assert_eq!(limit.current(), Some(2));
    }

    #[tokio::test]
    async fn tightening_lowers_the_ceiling_and_the_cap_but_never_raises_them() {
        let limit = AdaptiveLimit::new(Some(8));
        limit.tighten(3);
        assert_eq!((limit.ceiling(), limit.current()), (Some(3), Some(3)));
        limit.tighten(5);
        assert_eq!((limit.ceiling(), limit.current()), (Some(3), Some(3)));
        let unlimited = AdaptiveLimit::new(None);
        unlimited.tighten(4);
        assert_eq!(unlimited.current(), Some(4));
    }

    #[tokio::test]
    async fn a_cut_makes_new_requests_wait_for_the_lower_cap() {
        let limit = std::sync::Arc::new(AdaptiveLimit::new(Some(4)));
        let mut tickets = Vec::new();
        for _ in 0..4 {
            tickets.push(limit.acquire().await);
        }
        limit.release(tickets.pop().unwrap(), Outcome::RateLimited(None));
        // Cap 2 with 3 still in flight: a new request waits until only one is left.
        let waiter = {
            let limit = limit.clone();
            tokio::spawn(async move { limit.acquire().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        limit.release(tickets.pop().unwrap(), Outcome::Failed);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "2 in flight is still at the cap");
        limit.release(tickets.pop().unwrap(), Outcome::Failed);
        tokio::time::timeout(Duration::from_millis(500), waiter)
            .await
            .expect("the waiter gets the slot")
            .unwrap();
        assert_eq!(limit.in_flight(), 2);
    }
}
