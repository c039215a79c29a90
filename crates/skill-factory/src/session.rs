//! A run's inputs, loaded and checked: the config, the seed skill, the dataset and its split,
//! and the builders that turn the config's blocks into a harness and a metric.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use skill_factory_core::{Dataset, Skill, Split};
use skill_factory_llm::systemone::{
    AnswerCache, BudgetedDecisions, CachedDecisions, DecisionModel, SystemOneClient,
    SystemOneSettings,
};
use skill_factory_llm::{
    BudgetedModel, CacheMode, CacheStore, ChatModel, Ledger, LlmError, ModelLayers,
    ProviderSettings, RECORD_ENV, REPLAY_ENV, Recorder, Replay, Scheduler, pricing_for,
};

use crate::config::{HarnessType, LoadedConfig, SystemOneConfig, load_config};
use crate::error::{EngineError, ProviderFailure};
use crate::harness::{
    AgentCli, AgentOptions, ApiHarness, BudgetedHarness, Harness, ProcessSettings, Program,
    SubprocessHarness,
};
use crate::metric::{
    Check, CommandMetric, CompositeMetric, Criterion, GoldenMetric, GoldenMode, LlmJudgeMetric,
    Metric, ProgrammaticMetric, SystemOneCheck, SystemOneMetric,
};

/// Everything a command needs to evaluate or optimize: the loaded config, the seed skill and
/// the dataset.
pub struct Session {
    /// The loaded config.
    pub config: LoadedConfig,
    /// The skill to evaluate (the config's seed unless overridden).
    pub skill: Skill,
    /// The path the skill was read from.
    pub skill_path: PathBuf,
    /// The whole dataset.
    pub dataset: Dataset,
    /// What the run's model calls have spent, and its budget: every client built by
    /// [`Session::client`] books its calls here and is refused once a limit is reached.
    /// Unlimited unless a command installs a budget before building clients.
    pub ledger: Arc<Ledger>,
    /// `--no-cache`: the run neither reads nor writes the model cache.
    cache_off: bool,
    /// The scheduler, cache and recording every client of the run shares; set up when the
    /// first client is built.
    layers: OnceLock<ModelLayers>,
}

impl Session {
    /// Loads the config at `config_path`, its seed skill (or `skill_override`, a path relative
    /// to the working directory) and its dataset.
    pub fn open(config_path: &Path, skill_override: Option<&Path>) -> Result<Session, EngineError> {
        let config = load_config(config_path)?;
        let skill_path = skill_override
            .map(Path::to_path_buf)
            .unwrap_or_else(|| config.config.skill.clone());
        let skill = read_skill(&skill_path)?;
        let dataset_path = config.config.dataset.clone();
        let text = read_text("dataset", &dataset_path)?;
        let dataset = Dataset::from_jsonl(&text, &dataset_path.display().to_string())?;
        Ok(Session {
            config,
            skill,
            skill_path,
            dataset,
            ledger: Arc::new(Ledger::unlimited()),
            cache_off: false,
            layers: OnceLock::new(),
        })
    }

    /// Turns the model cache off for this run (`--no-cache`); call it before building
    /// clients.
    pub fn disable_cache(&mut self) {
        self.cache_off = true;
    }

    /// What stands between the run and its models, set up on first use: a scheduler whose
    /// run-wide cap is twice `harness.max_workers` (or a larger `optimizer.max_workers`) —
    /// `max_workers` rollouts plus as many scoring calls (an LLM judge) of rollouts already
    /// done, so grading never takes a slot from the next rollout —, the cache
    /// of `cache:` (unless it is off), and a recording or replay when `SKILL_FACTORY_RECORD` /
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
        let in_flight = crate::run::max_workers(run).saturating_mul(2);
        let mut layers = ModelLayers::new(Scheduler::new(Some(in_flight)));
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
        }
        Ok(layers)
    }

    /// The train / val / test split of the dataset, as the config's `val_fraction`,
    /// `test_fraction` and `seed` describe it.
    pub fn split(&self) -> Result<Split, EngineError> {
        let run = &self.config.config;
        self.dataset
            .split(run.val_fraction, run.test_fraction, run.seed)
            .map_err(|cause| EngineError::Split {
                config: self.config.path.clone(),
                cause,
            })
    }

    /// Builds the model client of one role.
    pub fn client(
        &self,
        role: &'static str,
        settings: &ProviderSettings,
    ) -> Result<Arc<dyn ChatModel>, EngineError> {
        let model = settings.model.clone().unwrap_or_default();
        let env = |key: &str| self.config.env(key);
        let client = self
            .layers()?
            .build(settings, &model, &env)
            .map_err(|cause| self.provider_error(role, cause))?;
        self.budgeted(role, settings, client)
    }

    /// A model client error, placed at the config block the role's settings come from.
    fn provider_error(&self, role: &'static str, cause: LlmError) -> EngineError {
        let key = self.config.config.provider_block_key(role);
        EngineError::Provider(Box::new(ProviderFailure {
            place: self.config.place_of(key),
            key,
            role,
            cause,
        }))
    }

    /// Wraps a client so that the run's [`Ledger`] admits each of its calls and books its
    /// tokens and cost. With a dollar budget, a model without a known price is refused here:
    /// its spending could not be counted.
    fn budgeted(
        &self,
        role: &'static str,
        settings: &ProviderSettings,
        client: Arc<dyn ChatModel>,
    ) -> Result<Arc<dyn ChatModel>, EngineError> {
        let provider_error = |detail: String| self.provider_error(role, LlmError::Config(detail));
        if let Some(pricing) = settings.pricing {
            pricing.check().map_err(provider_error)?;
        }
        let pricing = pricing_for(settings.pricing, client.provider(), client.model());
        if pricing.is_none() && self.ledger.limits().max_usd.is_some() {
            return Err(provider_error(format!(
                "optimizer.budget.max_usd is set, but no price is known for {}/{}; add `pricing: {{input_per_mtok: ..., output_per_mtok: ...}}` (dollars per million tokens) to the {role} provider block",
                client.provider(),
                client.model()
            )));
        }
        Ok(Arc::new(BudgetedModel::new(
            client,
            self.ledger.clone(),
            role,
            pricing,
        )))
    }

    /// Builds the harness the config describes. Only the `api` harness builds a model client
    /// (the target's): the others run a child process and need no provider and no key.
    pub fn harness(&self) -> Result<Arc<dyn Harness>, EngineError> {
        let harness = &self.config.config.harness;
        let bad = |key: &str, detail: String| EngineError::Harness {
            config: self.config.path.clone(),
            key: key.to_string(),
            detail,
        };
        let agent = |cli: AgentCli| Program::Agent {
            cli,
            options: AgentOptions {
                executable: harness.executable().to_string(),
                model: harness.model.clone(),
                extra_args: harness.extra_args.clone(),
            },
        };
        let program = match harness.harness_type {
            HarnessType::Api => {
                let client = self.client("target", &self.config.target_provider())?;
                return Ok(Arc::new(ApiHarness::new(
                    client,
                    harness.temperature,
                    harness.max_tokens,
                )));
            }
            HarnessType::Subprocess => {
                let argv = match &harness.command {
                    Some(command) => command.argv().map_err(|e| bad("harness.command", e))?,
                    None => Vec::new(),
                };
                Program::Command {
                    argv,
                    input_via: harness.input_via,
                }
            }
            HarnessType::ClaudeCode => agent(AgentCli::ClaudeCode),
            HarnessType::Codex => agent(AgentCli::Codex),
            HarnessType::GeminiCli => agent(AgentCli::GeminiCli),
        };
        let settings = ProcessSettings {
            timeout: seconds(harness.timeout_secs()).map_err(|e| bad("harness.timeout", e))?,
            cwd: harness.cwd.clone(),
            env: self.child_env(&harness.env),
            skill_mode: harness.skill_mode,
        };
        let built = SubprocessHarness::new(program, settings).map_err(|e| {
            let key = if harness.command.is_some() {
                "harness.command"
            } else {
                "harness.type"
            };
            bad(key, e)
        })?;
        Ok(Arc::new(BudgetedHarness::new(
            Arc::new(built),
            self.ledger.clone(),
        )))
    }

    /// The variables a child process gets on top of the inherited environment: the `.env`
    /// values the environment does not already set, then the config's own `env`, which wins.
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

    /// Builds the composite metric the config describes, in the fixed order golden →
    /// programmatic → judge → systemone → command (the judge client is built only when a judge
    /// is configured, the System One client only with `metric.systemone`).
    pub fn metric(&self) -> Result<Arc<dyn Metric>, EngineError> {
        let metric = &self.config.config.metric;
        let config_path = &self.config.path;
        let bad = |key: String, detail: String| EngineError::Metric {
            config: config_path.clone(),
            key,
            detail,
        };
        let mut parts: Vec<(Box<dyn Metric>, f64)> = Vec::new();
        let default_golden = crate::config::GoldenConfig::default();
        let golden = metric
            .golden
            .as_ref()
            .or(metric.is_empty().then_some(&default_golden));
        if let Some(golden) = golden {
            let mode: GoldenMode = golden
                .mode
                .parse()
                .map_err(|e| bad("metric.golden.mode".into(), e))?;
            parts.push((Box::new(GoldenMetric::new(mode)), golden.weight));
        }
        if let Some(programmatic) = &metric.programmatic {
            let mut checks = Vec::new();
            for (index, spec) in programmatic.checks.iter().enumerate() {
                let check = Check::from_spec(spec)
                    .map_err(|e| bad(format!("metric.programmatic.checks[{index}]"), e))?;
                checks.push(check);
            }
            let built = ProgrammaticMetric::new(checks)
                .map_err(|e| bad("metric.programmatic.checks".into(), e))?;
            parts.push((Box::new(built), programmatic.weight));
        }
        if let Some(judge) = &metric.judge {
            let client = self.client("judge", &self.config.judge_provider())?;
            let criteria = judge
                .criteria
                .iter()
                .map(|c| Criterion::new(c.name.clone(), c.description.clone(), c.weight))
                .collect();
            let built = LlmJudgeMetric::new(client, criteria)
                .map_err(|e| bad("metric.judge.criteria".into(), e))?;
            parts.push((Box::new(built), judge.weight));
        }
        if let Some(systemone) = &metric.systemone {
            parts.push((
                Box::new(self.systemone_metric(systemone)?),
                systemone.weight,
            ));
        }
        if let Some(command) = &metric.command {
            let argv = match &command.command {
                Some(c) => c
                    .argv()
                    .map_err(|e| bad("metric.command.command".into(), e))?,
                None => Vec::new(),
            };
            let timeout =
                seconds(command.timeout).map_err(|e| bad("metric.command.timeout".into(), e))?;
            let built = CommandMetric::new(argv, timeout)
                .map_err(|e| bad("metric.command.command".into(), e))?
                .in_dir(command.cwd.clone())
                .with_env(self.child_env(&command.env));
            parts.push((Box::new(built), command.weight));
        }
        let composite = CompositeMetric::new(parts).map_err(|e| bad("metric".into(), e))?;
        Ok(Arc::new(composite))
    }
}

impl Session {
    /// The System One metric of `metric.systemone`: its HTTP client (keys from the environment
    /// and `.env`) and its answer cache (the `cache` file, else in memory).
    fn systemone_metric(&self, config: &SystemOneConfig) -> Result<SystemOneMetric, EngineError> {
        let bad = |key: &str, detail: String| EngineError::Metric {
            config: self.config.path.clone(),
            key: key.to_string(),
            detail,
        };
        let mut settings = SystemOneSettings {
            provider: config.provider.clone(),
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            base_url: config.base_url.clone(),
            account_id: config.account_id.clone(),
            ..SystemOneSettings::default()
        };
        if let Some(timeout) = config.timeout {
            settings.timeout = seconds(timeout).map_err(|e| bad("metric.systemone.timeout", e))?;
        }
        let env = |key: &str| self.config.env(key);
        let client = SystemOneClient::new(&settings, &env)
            .map_err(|e| bad("metric.systemone", e.to_string()))?;
        let cache = match &config.cache {
            Some(path) => {
                AnswerCache::open(path).map_err(|e| bad("metric.systemone.cache", e.to_string()))?
            }
            None => AnswerCache::in_memory(),
        };
        let checks = config
            .checks
            .iter()
            .map(|c| {
                SystemOneCheck::new(
                    c.name.clone(),
                    c.question.clone(),
                    c.if_true.clone(),
                    c.if_false.clone(),
                    c.weight,
                )
            })
            .collect();
        if self.ledger.limits().max_usd.is_some() {
            return Err(bad(
                "metric.systemone",
                "optimizer.budget.max_usd is set, but the price of System One requests is not known, so that budget could not be kept; bound them with max_calls instead".to_string(),
            ));
        }
        let (provider, url) = (client.provider().to_string(), client.url().to_string());
        let mut model: Arc<dyn DecisionModel> = Arc::new(client);
        // The run's model cache and budget stand in front of System One as of every model.
        if let Some(store) = self.layers()?.cache() {
            model = Arc::new(CachedDecisions::new(model, store.clone(), &provider, &url));
        }
        let model = Arc::new(BudgetedDecisions::new(
            model,
            self.ledger.clone(),
            &provider,
        ));
        SystemOneMetric::new(
            model,
            Arc::new(cache),
            checks,
            config.threshold,
            config.include_expected,
        )
        .map_err(|e| bad("metric.systemone.checks", e))
    }
}

/// A duration from a number of seconds in a config, refusing what is not a positive time.
fn seconds(value: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{value} seconds is not a positive duration; use e.g. 30"))
}

/// Reads and parses a SKILL.md file.
pub fn read_skill(path: &Path) -> Result<Skill, EngineError> {
    let text = read_text("skill file", path)?;
    Skill::parse(&text).map_err(|cause| EngineError::Skill {
        path: path.to_path_buf(),
        cause,
    })
}

fn read_text(what: &'static str, path: &Path) -> Result<String, EngineError> {
    std::fs::read_to_string(path).map_err(|e| EngineError::Read {
        what,
        path: path.to_path_buf(),
        detail: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file; check the path (relative paths in a config are relative to the config file)".into(),
            _ => e.to_string(),
        },
    })
}
