//! What stands between a run and its models: [`ModelLayers`] builds every client of a run so
//! that they share one scheduler and one cache, and records or replays their traffic.
//!
//! A client built here is, from the outside in:
//!
//! ```text
//! RecordingModel (SKILL_FACTORY_RECORD,   every exchange appended to a JSONL file
//!   or optimize --record)
//!   CachedModel (cache.mode)              answered from the SQLite cache when it can
//!     BatchedModel (batch: true)          gathered into provider batches; what a batch
//!                                         did not answer is asked directly
//!       the provider's client             HTTP through the run's scheduler (run-wide cap,
//!                                         provider gates, retries, timeouts)
//! ```
//!
//! With a replay (`SKILL_FACTORY_REPLAY`), a [`ReplayModel`] takes the place of the cache and
//! the provider's client: nothing is sent and nothing is cached, and no API key is needed.
//! The scripted `fake` provider is never cached: it costs nothing, and a cache would freeze
//! its in-order answers.

use std::sync::Arc;

use std::path::Path;

use crate::batch::{BatchBoard, BatchedModel, Journal};
use crate::cache::{CacheMode, CacheStore, CachedModel};
use crate::providers::{WireFormat, build_batch_api, build_client_in, find_provider};
use crate::record::{Recorder, RecordingModel, Replay, ReplayModel};
use crate::request::{ChatModel, LlmError};
use crate::schedule::Scheduler;
use crate::settings::ProviderSettings;

/// The scheduler, cache, recorder and replay shared by every model client of one run.
/// Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct ModelLayers {
    scheduler: Scheduler,
    cache: Option<Arc<CacheStore>>,
    recorder: Option<Arc<Recorder>>,
    replay: Option<Arc<Replay>>,
    batches: Arc<BatchBoard>,
    journal: Option<Journal>,
}

impl ModelLayers {
    /// Layers with `scheduler` and nothing else: no cache, no recording.
    pub fn new(scheduler: Scheduler) -> Self {
        ModelLayers {
            scheduler,
            ..ModelLayers::default()
        }
    }

    /// The same layers with `store` in front of every (non-fake) client; a store in mode
    /// `off` is left out.
    pub fn with_cache(mut self, store: Arc<CacheStore>) -> Self {
        self.cache = (store.mode() != CacheMode::Off).then_some(store);
        self
    }

    /// The same layers, recording every exchange to `recorder`.
    pub fn with_recorder(mut self, recorder: Arc<Recorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The same layers, answering only from `replay`.
    pub fn with_replay(mut self, replay: Arc<Replay>) -> Self {
        self.replay = Some(replay);
        self
    }

    /// The same layers, keeping the ids of the batches their batched clients submit in
    /// `folder`'s journal (and polling again the batches it owes).
    pub fn with_batch_journal(mut self, folder: &Path) -> Self {
        self.journal = Some(Journal::in_folder(folder));
        self
    }

    /// What the run's batched clients did, and the watcher of their progress.
    pub fn batches(&self) -> &Arc<BatchBoard> {
        &self.batches
    }

    /// The run's scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The run's cache, if it has one.
    pub fn cache(&self) -> Option<&Arc<CacheStore>> {
        self.cache.as_ref()
    }

    /// The recording traffic is appended to, if any.
    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref()
    }

    /// The recording answers come from, if any.
    pub fn replay(&self) -> Option<&Arc<Replay>> {
        self.replay.as_ref()
    }

    /// Builds the client a provider block describes (see [`crate::build_client`]) inside these
    /// layers.
    pub fn build(
        &self,
        settings: &ProviderSettings,
        default_model: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        let wire = settings
            .name
            .as_deref()
            .and_then(|name| find_provider(name).ok())
            .map(|info| info.wire);
        let fake = wire == Some(WireFormat::Fake);
        let local = wire == Some(WireFormat::Local);
        let client = match &self.replay {
            // A replay of a local model needs neither the model file nor the engine: the
            // recording is matched on the provider and the file's name.
            Some(replay) if local => {
                let model = (settings.model.as_deref())
                    .filter(|m| !m.trim().is_empty())
                    .or(Some(default_model));
                Arc::new(ReplayModel::named(
                    crate::local::PROVIDER,
                    &crate::local::replayed_name(settings, model)?,
                    "replay",
                    replay.clone(),
                ))
            }
            Some(replay) => {
                // A replay sends nothing, so it needs no key: a placeholder lets the client
                // (and with it the provider and model the recording is matched on, and the
                // block's checks) be built on a machine without the recorder's keys.
                let mut keyless = settings.clone();
                if !fake {
                    keyless.api_key.get_or_insert_with(|| "replay".to_string());
                }
                let replaced = build_client_in(&keyless, default_model, env, &self.scheduler)?;
                Arc::new(ReplayModel::new(replaced.as_ref(), replay.clone()))
            }
            None => {
                let mut client = build_client_in(settings, default_model, env, &self.scheduler)?;
                if settings.batch == Some(true) {
                    let (api, options) =
                        build_batch_api(settings, default_model, env, &self.scheduler)?;
                    client = Arc::new(BatchedModel::new(
                        client,
                        api,
                        self.journal.clone(),
                        self.cache.clone(),
                        self.batches.clone(),
                        options,
                    ));
                }
                match &self.cache {
                    Some(store) if !fake => Arc::new(CachedModel::new(client, store.clone())),
                    _ => client,
                }
            }
        };
        Ok(match &self.recorder {
            Some(recorder) => Arc::new(RecordingModel::new(client, recorder.clone())),
            None => client,
        })
    }
}
