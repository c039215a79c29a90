//! What the batches of a run did: the counts its report gives, and the events its progress
//! line is drawn from.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::batch::BatchProgress;

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

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Watcher>> {
        self.watcher
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
