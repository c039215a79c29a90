//! The run-wide scheduler: one cap on requests in flight across every client of a run, and one
//! gate per provider endpoint (its adaptive concurrency cap and its requests-per-minute pace)
//! shared by every client that calls that endpoint, so a target and a judge on the same
//! account count against the same limits.
//!
//! An attempt takes, in this order, a slot of its provider, a token of its provider's pace and
//! a slot of the run-wide cap; all three are held only while the HTTP exchange runs. The order
//! matters: waiting for a provider's pace while holding a run-wide slot would stall the other
//! providers of the run.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::limit::{AdaptiveLimit, Outcome, Ticket};
use crate::rate::RateLimit;

/// Limits shared by every model client of one run. Cloning it shares it.
#[derive(Clone, Default)]
pub struct Scheduler {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    global: Option<Arc<Semaphore>>,
    max_in_flight: Option<usize>,
    gates: Mutex<HashMap<(String, String), Arc<ProviderGate>>>,
    sent: AtomicU64,
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("max_in_flight", &self.inner.max_in_flight)
            .field("requests_sent", &self.requests_sent())
            .finish()
    }
}

impl Scheduler {
    /// A scheduler with at most `max_in_flight` requests in flight across all its clients
    /// (`None`: no run-wide cap, only the providers' own). 0 counts as 1.
    pub fn new(max_in_flight: Option<usize>) -> Self {
        let max_in_flight = max_in_flight.map(|n| n.clamp(1, Semaphore::MAX_PERMITS));
        Scheduler {
            inner: Arc::new(Inner {
                global: max_in_flight.map(|n| Arc::new(Semaphore::new(n))),
                max_in_flight,
                ..Inner::default()
            }),
        }
    }

    /// The run-wide cap.
    pub fn max_in_flight(&self) -> Option<usize> {
        self.inner.max_in_flight
    }

    /// HTTP requests sent through this scheduler so far, retries included.
    pub fn requests_sent(&self) -> u64 {
        self.inner.sent.load(Ordering::Relaxed)
    }

    /// The gate of the provider `provider` at `endpoint`, created on first use. When clients
    /// of one endpoint configure different limits, the stricter one holds for all of them.
    pub fn gate(
        &self,
        provider: &str,
        endpoint: &str,
        max_concurrency: Option<usize>,
        requests_per_minute: Option<u32>,
    ) -> Arc<ProviderGate> {
        let mut gates = self.inner.gates.lock().unwrap_or_else(|p| p.into_inner());
        let key = (provider.to_string(), endpoint.to_string());
        match gates.get(&key) {
            Some(existing) => {
                existing.tighten(max_concurrency, requests_per_minute);
                existing.clone()
            }
            None => {
                let gate = Arc::new(ProviderGate::new(max_concurrency, requests_per_minute));
                gates.insert(key, gate.clone());
                gate
            }
        }
    }

    /// Waits until one more request may go out to `gate`'s provider; the returned slot holds
    /// the places taken until it is finished or dropped.
    pub async fn acquire(&self, gate: &Arc<ProviderGate>) -> Slot {
        let ticket = gate.limit.acquire().await;
        let mut slot = Slot {
            gate: gate.clone(),
            ticket: Some(ticket),
            _global: None,
        };
        if let Some(rate) = gate.rate() {
            rate.acquire().await;
        }
        if let Some(global) = &self.inner.global {
            // The semaphore is never closed, so acquiring cannot fail; if it ever did,
            // running without the run-wide cap is still correct.
            slot._global = global.clone().acquire_owned().await.ok();
        }
        self.inner.sent.fetch_add(1, Ordering::Relaxed);
        slot
    }
}

/// The limits of one provider endpoint.
#[derive(Debug)]
pub struct ProviderGate {
    limit: AdaptiveLimit,
    rate: Mutex<Option<Arc<RateLimit>>>,
}

impl ProviderGate {
    fn new(max_concurrency: Option<usize>, requests_per_minute: Option<u32>) -> Self {
        ProviderGate {
            limit: AdaptiveLimit::new(max_concurrency),
            rate: Mutex::new(requests_per_minute.map(|n| Arc::new(RateLimit::per_minute(n)))),
        }
    }

    /// The provider's concurrency cap right now (`None`: unlimited).
    pub fn current_limit(&self) -> Option<usize> {
        self.limit.current()
    }

    /// The provider's pace, in requests a minute, if it has one.
    pub fn requests_per_minute(&self) -> Option<f64> {
        self.rate().map(|r| r.requests_per_minute())
    }

    fn rate(&self) -> Option<Arc<RateLimit>> {
        self.rate.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Applies another client's limits where they are stricter.
    fn tighten(&self, max_concurrency: Option<usize>, requests_per_minute: Option<u32>) {
        if let Some(max) = max_concurrency {
            self.limit.tighten(max);
        }
        if let Some(per_minute) = requests_per_minute {
            let mut rate = self.rate.lock().unwrap_or_else(|p| p.into_inner());
            let wanted = RateLimit::per_minute(per_minute);
            if rate
                .as_ref()
                .is_none_or(|r| wanted.requests_per_minute() < r.requests_per_minute())
            {
                *rate = Some(Arc::new(wanted));
            }
        }
    }
}

/// The places one attempt holds. Report how the attempt ended with [`Slot::finish`]; a slot
/// dropped unfinished (its call was cancelled) counts as neither success nor 429.
pub struct Slot {
    gate: Arc<ProviderGate>,
    ticket: Option<Ticket>,
    _global: Option<OwnedSemaphorePermit>,
}

impl Slot {
    /// Gives the places back and lets the provider's cap adapt to `outcome`.
    pub fn finish(mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            self.gate.limit.release(ticket, outcome);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.gate.limit.release(ticket, Outcome::Failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_run_wide_cap_holds_across_providers() {
        let scheduler = Scheduler::new(Some(2));
        let a = scheduler.gate("openai", "http://a", None, None);
        let b = scheduler.gate("anthropic", "http://b", None, None);
        let _one = scheduler.acquire(&a).await;
        let _two = scheduler.acquire(&b).await;
        let third = tokio::time::timeout(Duration::from_millis(30), scheduler.acquire(&a)).await;
        assert!(third.is_err(), "two in flight across the run is the cap");
        assert_eq!(scheduler.requests_sent(), 2);
    }

    #[tokio::test]
    async fn clients_of_one_endpoint_share_its_gate_and_its_stricter_limit() {
        let scheduler = Scheduler::new(None);
        let target = scheduler.gate("openai", "http://x/v1", Some(8), Some(600));
        let judge = scheduler.gate("openai", "http://x/v1", Some(2), None);
        let again = scheduler.gate("openai", "http://x/v1", None, Some(60));
        assert!(Arc::ptr_eq(&target, &judge) && Arc::ptr_eq(&judge, &again));
        assert_eq!(target.current_limit(), Some(2));
        assert_eq!(target.requests_per_minute(), Some(60.0));
        let other = scheduler.gate("openai", "http://y/v1", Some(8), None);
        assert_eq!(
            (other.current_limit(), other.requests_per_minute()),
            (Some(8), None)
        );
    }

    #[tokio::test]
    async fn a_finished_429_cuts_the_providers_cap() {
        let scheduler = Scheduler::new(Some(64));
        let gate = scheduler.gate("openai", "http://x", Some(8), None);
        let slot = scheduler.acquire(&gate).await;
        slot.finish(Outcome::RateLimited(Some(Duration::from_millis(1))));
        assert_eq!(gate.current_limit(), Some(4));
    }

    #[tokio::test]
    async fn a_dropped_slot_gives_its_places_back() {
        let scheduler = Scheduler::new(Some(1));
        let gate = scheduler.gate("openai", "http://x", Some(1), None);
        drop(scheduler.acquire(&gate).await);
        tokio::time::timeout(Duration::from_millis(200), scheduler.acquire(&gate))
            .await
            .expect("the dropped slot is free again");
    }
}
