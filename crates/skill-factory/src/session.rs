//! A run's inputs, loaded and checked: the config, the seed skill, the dataset and its split,
//! the ledger every call of the run is booked in, and the model clients the run's parts ask
//! for.
//!
//! The session builds no part itself: the harness, the metric and the optimizer each build
//! themselves from their config block ([`crate::harness::from_config`],
//! [`crate::metric::from_config`], [`crate::optimizer::OptimizerPlan`]), asking the session for
//! what they share: model clients ([`Session::client`]), the environment of child processes
//! ([`Session::child_env`]), the ledger, and the place of a block for an error
//! ([`Session::block_error`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use skill_factory_core::{Dataset, Skill, Split, Task, trigger};
use skill_factory_io::input;
use skill_factory_llm::{
    BudgetedModel, CacheMode, CacheStore, ChatModel, Ledger, LlmError, ModelLayers,
    ProviderSettings, RECORD_ENV, REPLAY_ENV, Recorder, Replay, Scheduler, pricing_for,
};
use skill_factory_package::bundle::SkillBundle;

use crate::config::{LoadedConfig, Role, load_config};
use crate::error::{EngineError, ProviderFailure};
use crate::noise::Noise;

/// How a session is opened.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The skill to use instead of the config's seed (a path relative to the working
    /// directory; `evaluate --skill`).
    pub skill: Option<PathBuf>,
    /// `--no-cache`: the run neither reads nor writes the model cache.
    pub no_cache: bool,
    /// Hold the run's calls to the config's `optimizer.budget` (as `optimize` does); without
    /// it the ledger only counts.
    pub budgeted: bool,
    /// Record every model exchange, into a file named once the run has a folder
    /// ([`crate::run::optimize`] puts it there); `SKILL_FACTORY_RECORD` names one instead.
    pub record: bool,
    /// `--batch`: the target's and the judge's calls go as provider batches, as if their
    /// blocks said `batch: true`, where their provider has a batch API; neither having one
    /// is an error ([`Session::open`]).
    pub batch: bool,
    /// `--samples K`: samples of every task, over `noise.samples` (and `noise.max_samples`
    /// when that is lower).
    pub samples: Option<u32>,
}

/// What the ids of a skill-mode run's trigger queries start with.
pub const TRIGGER_ID_PREFIX: &str = "trigger-";

/// Reads a skill-mode run's trigger set, its ids prefixed.
fn read_triggers(path: &Path) -> Result<Dataset, EngineError> {
    let text = input::read_text(path, input::DATASET)?;
    let origin = path.display().to_string();
    let set = trigger::parse_trigger_set(&text, &origin)?;
    let queries = set
        .iter()
        .map(|query| Task {
            id: format!("{TRIGGER_ID_PREFIX}{}", query.id),
            ..query.clone()
        })
        .collect();
    Ok(Dataset::from_tasks(queries, &origin)?)
}

/// Rollouts in flight at once in batch mode: as many as a batch takes
/// ([`skill_factory_llm::batch::BatchOptions`]), so an evaluation's calls make one batch
/// instead of one per `max_workers`.
const BATCH_IN_FLIGHT: usize = 10_000;

/// Everything a command needs to evaluate or optimize: the loaded config, the seed skill, the
/// dataset, and the ledger and model layers every client of the run shares.
pub struct Session {
    /// The loaded config.
    pub config: LoadedConfig,
    /// The skill to evaluate (the config's seed unless overridden).
    pub skill: Skill,
    /// The path the skill was read from.
    pub skill_path: PathBuf,
    /// The paths of the files its folder carries (relative, `/`-separated; none for a skill
    /// file that stands alone), which candidates may link to.
    pub skill_files: Vec<String>,
    /// The whole dataset.
    pub dataset: Dataset,
    /// A skill-mode run's trigger set (its `trigger` block), each query's id prefixed with
    /// [`TRIGGER_ID_PREFIX`] so that it cannot clash with a task's.
    pub triggers: Option<Dataset>,
    /// What the run's calls have spent, and its budget (see [`Session::ledger`]).
    ledger: Arc<Ledger>,
    /// `--no-cache`.
    cache_off: bool,
    /// [`SessionOptions::record`].
    record: bool,
    /// [`SessionOptions::batch`].
    batch: bool,
    /// The scheduler, cache and recording every client of the run shares; set up when the
    /// first client is built.
    layers: OnceLock<ModelLayers>,
    /// The target this session is, in a run of several ([`Session::for_target`]): its calls
    /// are booked as `target <name>`.
    target: Option<String>,
}

impl Session {
    /// Loads the config at `config_path`, its seed skill (or the options' skill) and its
    /// dataset; the ledger's clock starts now.
    pub fn open(config_path: &Path, options: SessionOptions) -> Result<Session, EngineError> {
        let mut config = load_config(config_path)?;
        if let Some(samples) = options.samples {
            let noise = &mut config.config.noise;
            noise.samples = samples;
            noise.max_samples = noise.max_samples.max(samples);
        }
        let skill_path = options.skill.unwrap_or_else(|| config.config.skill.clone());
        let (skill, skill_files) = load_skill(&skill_path)?;
        let dataset_path = config.config.dataset.clone();
        let text = input::read_text(&dataset_path, input::DATASET)?;
        let origin = dataset_path.display().to_string();
        let dataset = if config.config.is_trigger() {
            skill_factory_core::trigger::parse_trigger_set(&text, &origin)?
        } else {
            Dataset::from_jsonl(&text, &origin)?
        };
        let triggers = match &config.config.trigger {
            Some(block) => {
                skill_factory_core::trigger::check_tasks_beside(&dataset.tasks, &origin)?;
                Some(read_triggers(&block.dataset)?)
            }
            None => None,
        };
        let ledger = if options.budgeted {
            Ledger::new(config.config.optimizer.budget.limits())
        } else {
            Ledger::unlimited()
        };
        let session = Session {
            config,
            skill,
            skill_path,
            skill_files,
            dataset,
            triggers,
            ledger: Arc::new(ledger),
            cache_off: options.no_cache,
            record: options.record,
            batch: options.batch,
            layers: OnceLock::new(),
            target: None,
        };
        session.check_config_outputs()?;
        if session.batch && !(session.batched(Role::Target) || session.batched(Role::Judge)) {
            let roles = session.config.roles();
            return Err(EngineError::Block {
                place: session.config.place_of("provider"),
                key: "provider".to_string(),
                detail: format!(
                    "--batch, but neither the target's provider ({}) nor the judge's ({}) has a batch API that batch mode speaks ({}): run without --batch",
                    roles.target.name.as_deref().unwrap_or("none"),
                    roles.judge.name.as_deref().unwrap_or("none"),
                    skill_factory_llm::providers::batch_provider_names().join(", ")
                ),
            });
        }
        Ok(session)
    }

    /// Every file the run reads (the config, the skill, the dataset, a `fake` script, a local
    /// model), each with what it is, as they are on disk.
    fn inputs(&self) -> Vec<(&'static str, PathBuf)> {
        let run = &self.config.config;
        let mut inputs = vec![
            ("config", self.config.path.clone()),
            ("skill", self.skill_path.clone()),
            ("dataset", run.dataset.clone()),
        ];
        if let Some(block) = &run.trigger {
            inputs.push(("trigger set", block.dataset.clone()));
        }
        for settings in Role::ALL.map(|role| self.config.role(role)) {
            if let Some(script) = &settings.script {
                inputs.push(("fake provider script", PathBuf::from(script)));
            }
            if settings.name.as_deref() == Some(skill_factory_llm::local::PROVIDER)
                && let Some(model) = &settings.model
            {
                inputs.push(("local model", PathBuf::from(model)));
            }
        }
        inputs
            .into_iter()
            .filter_map(|(what, path)| Some((what, path.canonicalize().ok()?)))
            .collect()
    }

    /// Refuses an output of the run that is one of its inputs: writing it would destroy the
    /// input, and with it the run's data. `key` names the output: a config key (the error then
    /// gives its line), a variable or a flag (`-o`, `--emit`).
    pub fn check_output(&self, key: &str, path: &Path) -> Result<(), EngineError> {
        // An output that does not exist yet cannot be an input, which exists.
        let Ok(target) = path.canonicalize() else {
            return Ok(());
        };
        match self
            .inputs()
            .into_iter()
            .find(|(_, input)| *input == target)
        {
            Some((what, input)) => Err(EngineError::OutputIsInput {
                place: (!key.starts_with('-') && key != RECORD_ENV)
                    .then(|| self.config.place_of(key)),
                key: key.to_string(),
                path: path.to_path_buf(),
                what,
                input,
            }),
            None => Ok(()),
        }
    }

    /// The outputs the config names that are written whatever the command: the model cache
    /// (unless it is off), a recording, System One's answer cache, the runs folder and the
    /// exported skill's folder.
    fn check_config_outputs(&self) -> Result<(), EngineError> {
        let run = &self.config.config;
        if !self.cache_off && run.cache.mode != CacheMode::Off {
            self.check_output("cache.path", &run.cache.path)?;
        }
        if let Some(path) = self.config.env(RECORD_ENV) {
            self.check_output(RECORD_ENV, Path::new(&path))?;
        }
        if let Some(path) = run.metric.systemone.as_ref().and_then(|s| s.cache.as_ref()) {
            self.check_output("metric.systemone.cache", path)?;
        }
        self.check_output("output.dir", &self.config.runs_dir())?;
        if let Some(path) = &run.output.emit_skill_dir {
            self.check_output("output.emit_skill_dir", path)?;
        }
        Ok(())
    }

    /// The names of the config's targets (`targets`), in their order; none for a run of one.
    pub fn target_names(&self) -> Vec<String> {
        self.config
            .config
            .targets
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The run as its target `name` sees it ([`LoadedConfig::for_target`]): that target's
    /// model and harness, the same skill, data, ledger, cache and scheduler, its calls booked
    /// under their own line (`target <name>`). An unknown name is an error naming the
    /// targets.
    pub fn for_target(&self, name: &str) -> Result<Session, EngineError> {
        let Some(config) = self.config.for_target(name) else {
            return Err(self.block_error(
                "targets",
                format!(
                    "no target is named '{name}'; the config's targets are {}",
                    self.target_names().join(", ")
                ),
            ));
        };
        let layers = OnceLock::new();
        let _ = layers.set(self.layers()?.clone());
        Ok(Session {
            config,
            skill: self.skill.clone(),
            skill_path: self.skill_path.clone(),
            skill_files: self.skill_files.clone(),
            dataset: self.dataset.clone(),
            triggers: self.triggers.clone(),
            ledger: self.ledger.clone(),
            cache_off: self.cache_off,
            record: self.record,
            batch: self.batch,
            layers,
            target: Some(name.to_owned()),
        })
    }

    /// Whether the run's rollouts can vary, and its noise settings (`noise`, with
    /// `--samples`).
    pub fn noise(&self) -> Noise {
        Noise::of(&self.config.config)
    }

    /// What the run's model calls have spent, and its budget: every client built by
    /// [`Session::client`] books its calls here and is refused once a limit is reached.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// What stands between the run and its models, set up on first use: a scheduler whose
    /// run-wide cap is twice the run's workers ([`crate::config::RunConfig::max_workers`]) —
    /// the rollouts plus as many scoring calls (an LLM judge) of rollouts already done, so
    /// grading never takes a slot from the next rollout —, the cache of `cache:` (unless it
    /// is off), and a recording or replay when `SKILL_FACTORY_RECORD` /
    /// `SKILL_FACTORY_REPLAY` name one.
    pub fn layers(&self) -> Result<&ModelLayers, EngineError> {
        if let Some(layers) = self.layers.get() {
            return Ok(layers);
        }
        let built = self.build_layers()?;
        // Two threads may race to set up; either result is equivalent and one is kept.
        Ok(self.layers.get_or_init(|| built))
    }

    /// The layers if a client was built, else `None` (the run called no model).
    pub fn layers_in_use(&self) -> Option<&ModelLayers> {
        self.layers.get()
    }

    fn build_layers(&self) -> Result<ModelLayers, EngineError> {
        let run = &self.config.config;
        let in_flight = run.max_workers().saturating_mul(2);
        let mut layers = ModelLayers::new(Scheduler::new(Some(in_flight)))
            .with_batch_journal(&self.config.runs_dir());
        // A budget with room for one batched request at a time turns batch mode off.
        layers.batches().hold_to(self.ledger.clone());
        if let Some(path) = self.config.env(REPLAY_ENV) {
            layers = layers.with_replay(Arc::new(Replay::load(path)?));
        } else {
            let mode = if self.cache_off {
                CacheMode::Off
            } else {
                run.cache.mode
            };
            if mode != CacheMode::Off {
                let store = CacheStore::open(&run.cache.path, mode)?;
                layers = layers.with_cache(Arc::new(store));
            }
        }
        if let Some(path) = self.config.env(RECORD_ENV) {
            layers = layers.with_recorder(Arc::new(Recorder::open(path)?));
        } else if self.record {
            layers = layers.with_recorder(Arc::new(Recorder::pending()));
        }
        Ok(layers)
    }

    /// The train / val / test split of the dataset, as the config's `val_fraction`,
    /// `test_fraction` and `seed` describe it. A trigger set is split the same way on its
    /// own and each of its parts follows the tasks of the same part, weighted so that the
    /// queries make `trigger.weight` of the part's score ([`trigger::beside`]).
    pub fn split(&self) -> Result<Split, EngineError> {
        let run = &self.config.config;
        let split = |dataset: &Dataset, path: &Path| {
            dataset
                .split(run.val_fraction, run.test_fraction, run.seed)
                .map_err(|cause| EngineError::Split {
                    config: self.config.path.clone(),
                    dataset: path.to_path_buf(),
                    cause,
                })
        };
        let tasks = split(&self.dataset, &run.dataset)?;
        match (&self.triggers, &run.trigger) {
            (Some(triggers), Some(block)) => {
                let queries = split(triggers, &block.dataset)?;
                Ok(Split {
                    train: trigger::beside(tasks.train, queries.train, block.weight),
                    val: trigger::beside(tasks.val, queries.val, block.weight),
                    test: trigger::beside(tasks.test, queries.test, block.weight),
                })
            }
            _ => Ok(tasks),
        }
    }

    /// Every task of the run: the dataset's, and a trigger set's queries after them weighted
    /// as in each part of the split ([`trigger::beside`]). The dataset alone is borrowed.
    pub fn all_tasks(&self) -> std::borrow::Cow<'_, [Task]> {
        match (&self.triggers, &self.config.config.trigger) {
            (Some(triggers), Some(block)) => std::borrow::Cow::Owned(trigger::beside(
                self.dataset.tasks.clone(),
                triggers.tasks.clone(),
                block.weight,
            )),
            _ => std::borrow::Cow::Borrowed(&self.dataset.tasks),
        }
    }

    /// Whether the calls of `role` go as provider batches: its block says `batch: true`, or
    /// `--batch` asks it of the target and the judge.
    pub fn batched(&self, role: Role) -> bool {
        self.role_settings(role).batch == Some(true)
    }

    /// Rollouts (with their scoring) in flight at once: `max_workers`; in batch mode as many
    /// as a batch takes, when the `api` harness's calls or the judge's are batched (a process
    /// harness keeps its `max_workers`: its rollouts are processes); with a Ray executor, its
    /// `max_workers` when larger.
    pub fn workers(&self, workers: usize) -> usize {
        let harness = &self.config.config.harness;
        let api = harness.harness_type == crate::config::HarnessType::Api;
        if api && (self.batched(Role::Target) || self.batched(Role::Judge)) {
            workers.max(BATCH_IN_FLIGHT)
        } else {
            // A Ray executor's own `max_workers` may let more jobs run than rollouts here.
            workers.max(harness.executor.max_workers.unwrap_or(0))
        }
    }

    /// A role's settings with `--batch` applied.
    fn role_settings(&self, role: Role) -> std::borrow::Cow<'_, ProviderSettings> {
        let settings = self.config.role(role);
        // `--batch` batches what can be: a judge on a server without a batch API (Ollama,
        // say) stays direct while the target batches.
        if self.batch
            && role != Role::Optimizer
            && settings.batch.is_none()
            && skill_factory_llm::providers::has_batch_api(settings)
        {
            let mut batched = settings.clone();
            batched.batch = Some(true);
            std::borrow::Cow::Owned(batched)
        } else {
            std::borrow::Cow::Borrowed(settings)
        }
    }

    /// Builds the model client of one role, booked in the run's ledger.
    pub fn client(&self, role: Role) -> Result<Arc<dyn ChatModel>, EngineError> {
        let settings = &*self.role_settings(role);
        let model = settings.model.clone().unwrap_or_default();
        let env = |key: &str| self.config.env(key);
        let client = self
            .layers()?
            .build(settings, &model, &env)
            .map_err(|cause| self.provider_error(role, cause))?;
        self.budgeted(role, settings, client)
    }

    /// A model client error, placed at the config block the role's settings come from.
    fn provider_error(&self, role: Role, cause: LlmError) -> EngineError {
        let key = self.config.config.provider_block_key(role);
        EngineError::Provider(Box::new(ProviderFailure {
            place: self.config.place_of(key),
            key,
            role: role.name(),
            cause,
        }))
    }

    /// Wraps a client so that the run's [`Ledger`] admits each of its calls and books its
    /// tokens and cost. With a dollar budget, a model without a known price is refused here:
    /// its spending could not be counted.
    fn budgeted(
        &self,
        role: Role,
        settings: &ProviderSettings,
        client: Arc<dyn ChatModel>,
    ) -> Result<Arc<dyn ChatModel>, EngineError> {
        let provider_error = |detail: String| self.provider_error(role, LlmError::Config(detail));
        if let Some(pricing) = settings.pricing {
            pricing.check().map_err(|e| self.provider_error(role, e))?;
        }
        let pricing = pricing_for(settings.pricing, client.provider(), client.model());
        if pricing.is_none() && self.ledger.limits().max_usd.is_some() {
            return Err(provider_error(format!(
                "optimizer.budget.max_usd is set, but no price is known for {}/{}; add `pricing: {{input_per_mtok: ..., output_per_mtok: ...}}` (dollars per million tokens) to the {role} provider block",
                client.provider(),
                client.model()
            )));
        }
        let line = match (&self.target, role) {
            (Some(target), Role::Target) => format!("target {target}"),
            _ => role.name().to_owned(),
        };
        let budgeted = BudgetedModel::new(client, self.ledger.clone(), line, pricing);
        Ok(Arc::new(if settings.batch == Some(true) {
            budgeted.reserving()
        } else {
            budgeted
        }))
    }

    /// The variables a child process gets on top of the inherited environment: the `.env`
    /// values the environment does not already set, then the block's own `env`, which wins.
    pub fn child_env(&self, own: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self
            .config
            .dotenv_vars()
            .iter()
            .filter(|(key, _)| std::env::var_os(key).is_none())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        env.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        env
    }

    /// The variables a job on a cluster gets on top of its node's environment, which is not
    /// this process's: every `.env` value (this process's own value of the variable when it
    /// has one, as a local child would see it), then the block's own `env`, which wins.
    /// Variables set only in this process's environment are not shipped.
    pub fn shipped_env(&self, own: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self
            .config
            .dotenv_vars()
            .iter()
            .map(|(key, value)| {
                let value = std::env::var(key).unwrap_or_else(|_| value.clone());
                (key.clone(), value)
            })
            .collect();
        env.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        env
    }

    /// Why the block at `key` (a key path such as `metric.command.command`) cannot be built,
    /// placed at its line in the config file.
    pub fn block_error(&self, key: &str, detail: impl std::fmt::Display) -> EngineError {
        EngineError::Block {
            place: self.config.place_of(key),
            key: key.to_string(),
            detail: detail.to_string(),
        }
    }
}

/// The text files under `references/` of a skill's folder (`bundle`, when the skill is a
/// `SKILL.md` in one): what a search may rewrite ([`Skill::files`]). None for another skill
/// file (a `seed_skill.md` stands alone), for files that are not UTF-8 text, or when the
/// folder cannot be read (`validate` says why).
fn reference_files(bundle: Option<&SkillBundle>) -> BTreeMap<String, String> {
    bundle
        .into_iter()
        .flat_map(|bundle| &bundle.files)
        .filter(|file| file.path.starts_with("references/"))
        .filter_map(|file| {
            Some((
                file.path.clone(),
                String::from_utf8(file.contents.clone()).ok()?,
            ))
        })
        .collect()
}

/// Reads the skill at `path` (a SKILL.md, or a folder holding one) with its reference files,
/// and the paths of every file its folder carries (relative, `/`-separated; none for a skill
/// file that stands alone), which candidates may link to.
pub fn load_skill(path: &Path) -> Result<(Skill, Vec<String>), EngineError> {
    // The folder is read once: its file list for the link checks, its references for the
    // search.
    let bundle = SkillBundle::load(path).ok();
    let skill = read_skill(path)?.with_files(reference_files(bundle.as_ref()));
    let files = bundle
        .map(|bundle| bundle.files.into_iter().map(|file| file.path).collect())
        .unwrap_or_default();
    Ok((skill, files))
}

/// Reads and parses a SKILL.md file, or the `SKILL.md` of a skill folder (as `export`,
/// `install` and `validate` take either).
pub fn read_skill(path: &Path) -> Result<Skill, EngineError> {
    let file = if path.is_dir() && path.join("SKILL.md").is_file() {
        path.join("SKILL.md")
    } else {
        path.to_path_buf()
    };
    let text = input::read_text(&file, input::SKILL)?;
    Skill::parse(&text).map_err(|cause| EngineError::Skill { path: file, cause })
}
