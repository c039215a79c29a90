//! A per-client cap on requests in flight (`max_concurrency` in a provider block).
//!
//! The cap holds per HTTP attempt, not per call: a call waiting out a back-off gives its slot
//! to another call, so the cap counts what the provider actually sees.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many requests one client may have in flight at once; unlimited when built from `None`.
#[derive(Debug, Clone, Default)]
pub struct ConcurrencyLimit {
    semaphore: Option<Arc<Semaphore>>,
}

impl ConcurrencyLimit {
    /// A cap of `max` requests in flight, or no cap for `None`. A cap of 0 would block every
    /// call forever, so it is raised to 1 (the provider registry rejects 0 with a message).
    pub fn new(max: Option<usize>) -> Self {
        ConcurrencyLimit {
            semaphore: max.map(|n| Arc::new(Semaphore::new(n.clamp(1, Semaphore::MAX_PERMITS)))),
        }
    }

    /// Waits for a free slot; the slot is released when the returned permit is dropped.
    pub async fn acquire(&self) -> Option<OwnedSemaphorePermit> {
        let semaphore = self.semaphore.clone()?;
        // The semaphore is never closed, so acquiring cannot fail; if it ever were, running
        // uncapped is better than failing the call.
        semaphore.acquire_owned().await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cap_hands_out_only_that_many_permits() {
        let limit = ConcurrencyLimit::new(Some(2));
        let first = limit.acquire().await;
        let second = limit.acquire().await;
        assert!(first.is_some() && second.is_some());
        let third =
            tokio::time::timeout(std::time::Duration::from_millis(20), limit.acquire()).await;
        assert!(
            third.is_err(),
            "a third request must wait while two are in flight"
        );
        drop(first);
        assert!(limit.acquire().await.is_some());
    }

    #[tokio::test]
    async fn no_cap_never_waits() {
        let limit = ConcurrencyLimit::new(None);
        assert!(limit.acquire().await.is_none());
    }
}
