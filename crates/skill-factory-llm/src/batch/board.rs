//! What the batches of a run did: the counts its report gives, and the events its progress
//! line is drawn from.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::batch::BatchProgress;
use crate::budget::Ledger;

/// Something that happened to one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchEvent {
    /// A batch of `requests` was submitted.
    Submitted {
        /// Its id.
        id: String,
        /// Requests in it.
        requests: usize,
    },
    /// A batch an earlier, interrupted run submitted is polled again.
    Resumed {
        /// Its id.
        id: String,
        /// Requests in it.
        requests: usize,
    },
    /// A look at a batch still running.
    Running {
        /// Its id.
        id: String,
        /// Requests that have ended.
        done: usize,
        /// Requests in it.
        total: usize,
    },
    /// A batch ended and its results were read.
    Read {
        /// Its id.
        id: String,
        /// Requests answered.
        answered: usize,
        /// Requests that errored or expired (asked directly instead).
        failed: usize,
    },
}

/// What the batches of a run did, so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchCounts {
    /// Batches submitted by this run.
    pub submitted: u64,
    /// Batches of an earlier run polled again instead of submitted anew.
    pub resumed: u64,
    /// Requests answered by a batch.
    pub answered: u64,
    /// Requests a batch did not answer (errored, expired, or the batch failed), asked
    /// directly instead.
    pub direct: u64,
}

type Watcher = Box<dyn Fn(&BatchEvent) + Send + Sync>;

/// The counts and the watcher of a run's batches, shared by all its batched clients.
#[derive(Default)]
pub struct BatchBoard {
    submitted: AtomicU64,
    resumed: AtomicU64,
    answered: AtomicU64,
    direct: AtomicU64,
    watcher: Mutex<Option<Watcher>>,
    /// Set (and waiters woken) once the run stops waiting for its batches.
    abandoned: tokio::sync::watch::Sender<bool>,
    /// The run's ledger, whose calls waiting for room tell a batch of one that the budget
    /// holds one request at a time ([`BatchBoard::hold_to`]).
    ledger: OnceLock<Arc<Ledger>>,
    /// Set once batching was given up for the run ([`BatchBoard::one_at_a_time`]): every
    /// later call is asked directly.
    unbatched: AtomicBool,
}

impl std::fmt::Debug for BatchBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchBoard")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl BatchBoard {
    /// A board with nothing counted and no watcher.
    pub fn new() -> Arc<Self> {
        Arc::new(BatchBoard::default())
    }

    /// Calls `watcher` with every later event (the progress line); replaces an earlier one.
    pub fn watch(&self, watcher: impl Fn(&BatchEvent) + Send + Sync + 'static) {
        *self.lock() = Some(Box::new(watcher));
    }

    /// What has been counted so far.
    pub fn counts(&self) -> BatchCounts {
        BatchCounts {
            submitted: self.submitted.load(Ordering::Relaxed),
            resumed: self.resumed.load(Ordering::Relaxed),
            answered: self.answered.load(Ordering::Relaxed),
            direct: self.direct.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn tell(&self, event: BatchEvent) {
        match &event {
            BatchEvent::Submitted { .. } => self.submitted.fetch_add(1, Ordering::Relaxed),
            BatchEvent::Resumed { .. } => self.resumed.fetch_add(1, Ordering::Relaxed),
            BatchEvent::Read { answered, .. } => {
                self.answered.fetch_add(*answered as u64, Ordering::Relaxed)
            }
            BatchEvent::Running { .. } => 0,
        };
        if let Some(watcher) = self.lock().as_ref() {
            watcher(&event);
        }
    }

    pub(crate) fn progress(&self, id: &str, progress: &BatchProgress) {
        if let BatchProgress::Running { done, total } = progress {
            self.tell(BatchEvent::Running {
                id: id.to_string(),
                done: *done,
                total: *total,
            });
        }
    }

    /// Stops every wait for a batch of the run, now and later: the calls waiting fail with
    /// [`crate::LlmError::Abandoned`], and their batches stay owed in the journal for a rerun
    /// to poll (the first Ctrl-C of `optimize`, which would otherwise wait for them).
    pub fn abandon(&self) {
        self.abandoned.send_replace(true);
    }

    /// Whether [`BatchBoard::abandon`] has been called.
    pub fn is_abandoned(&self) -> bool {
        *self.abandoned.borrow()
    }

    /// Resolves once [`BatchBoard::abandon`] has been called.
    pub(crate) async fn abandoned(&self) {
        let mut seen = self.abandoned.subscribe();
        let _ = seen.wait_for(|abandoned| *abandoned).await;
    }

    /// Counts one request a batch did not answer, asked directly instead.
    pub(crate) fn asked_directly(&self) {
        self.direct.fetch_add(1, Ordering::Relaxed);
    }

    /// Makes the run's batches answer to `ledger`'s budget: a batch about to go out with one
    /// request while other calls wait for room in the budget means the budget holds one
    /// request's most possible cost at a time, so every batch would carry one request and
    /// wait for the one before it (a batch takes minutes to hours). Batch mode is then given
    /// up for the run ([`BatchBoard::is_direct`]).
    pub fn hold_to(&self, ledger: Arc<Ledger>) {
        let _ = self.ledger.set(ledger);
    }

    /// Whether batch mode was given up for the run: its calls are asked directly.
    pub fn is_direct(&self) -> bool {
        self.unbatched.load(Ordering::SeqCst)
    }

    /// Whether a batch of `requests` should go direct instead: batch mode was given up, or
    /// this batch holds one request while others wait for room in the budget, which gives
    /// batch mode up now and says so, once, on stderr.
    pub(crate) fn one_at_a_time(&self, requests: usize) -> bool {
        if self.is_direct() {
            return true;
        }
        let starved = requests == 1
            && self
                .ledger
                .get()
                .is_some_and(|ledger| ledger.waiting_for_room() > 0);
        if starved && !self.unbatched.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                "optimizer.budget has room for one batched request at a time (each holds the most it may cost until it is answered), so every batch would carry a single request and wait for the one before it: batch mode is off for the rest of the run, and its calls are asked directly, at the direct price"
            );
        }
        starved
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Watcher>> {
        self.watcher
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
