//! Which model plays which role: the target, the optimizer and the judge, resolved from the
//! provider blocks, the `SKILL_FACTORY_*_MODEL` variables and the defaults (the rules are in
//! the module doc of [`crate::config`]).

use skill_factory_llm::ProviderSettings;

use super::schema::RunConfig;

/// Environment variable naming the target model when its block gives none.
pub const TARGET_MODEL_ENV: &str = "SKILL_FACTORY_TARGET_MODEL";
/// Environment variable naming the optimizer model when its block gives none.
pub const OPTIMIZER_MODEL_ENV: &str = "SKILL_FACTORY_OPTIMIZER_MODEL";
/// Environment variable naming the judge model when its block gives none.
pub const JUDGE_MODEL_ENV: &str = "SKILL_FACTORY_JUDGE_MODEL";

/// Provider used when no block anywhere names one.
pub const DEFAULT_PROVIDER: &str = "anthropic";
/// Target model when nothing names one.
pub const DEFAULT_TARGET_MODEL: &str = "claude-sonnet-5";
/// Optimizer model when nothing names one and nothing is inherited from the target.
pub const DEFAULT_OPTIMIZER_MODEL: &str = "claude-opus-4-8";

/// A model role of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Runs the skill.
    Target,
    /// Proposes skill edits.
    Optimizer,
    /// Scores outputs for `metric.judge`.
    Judge,
}

impl Role {
    /// Every role, the target first.
    pub const ALL: [Role; 3] = [Role::Target, Role::Optimizer, Role::Judge];

    /// The role's name in messages, the ledger and events: `target`, `optimizer`, `judge`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Target => "target",
            Role::Optimizer => "optimizer",
            Role::Judge => "judge",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The three model roles of a run, each with a provider name and a model filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRoles {
    /// Runs the skill.
    pub target: ProviderSettings,
    /// Proposes skill edits.
    pub optimizer: ProviderSettings,
    /// Scores outputs for `metric.judge`.
    pub judge: ProviderSettings,
}

impl ResolvedRoles {
    /// The settings of `role`.
    pub fn get(&self, role: Role) -> &ProviderSettings {
        match role {
            Role::Target => &self.target,
            Role::Optimizer => &self.optimizer,
            Role::Judge => &self.judge,
        }
    }
}

/// Looks up an environment variable; the caller decides where variables come from.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The role's default model when its block and its variable name none.
enum Fallback {
    Fixed(&'static str),
    TargetModel,
}

impl RunConfig {
    /// The block that describes the target: `provider`, or `target` when `provider` is absent
    /// or empty. `None` when neither gives anything.
    pub fn target_block(&self) -> Option<&ProviderSettings> {
        non_empty(self.provider.as_ref()).or_else(|| non_empty(self.target.as_ref()))
    }

    /// The top-level key of the block a role's settings come from, for placing errors: the
    /// role's own block when the config has one, else the target's (`provider`, or `target`
    /// when only that is given), which the role inherits.
    pub fn provider_block_key(&self, role: Role) -> &'static str {
        let own = match role {
            Role::Optimizer => Some(("optimizer_provider", &self.optimizer_provider)),
            Role::Judge => Some(("judge_provider", &self.judge_provider)),
            Role::Target => None,
        };
        if let Some((key, block)) = own
            && non_empty(block.as_ref()).is_some()
        {
            return key;
        }
        if non_empty(self.provider.as_ref()).is_none() && non_empty(self.target.as_ref()).is_some()
        {
            "target"
        } else {
            "provider"
        }
    }

    /// The target's settings: its block, the name defaulting to `anthropic` and the model to
    /// `SKILL_FACTORY_TARGET_MODEL`, else `claude-sonnet-5` where the provider serves it
    /// (Anthropic's API and the fake; another provider must be given its model).
    fn target_provider(&self, env: EnvLookup) -> ProviderSettings {
        let mut settings = self.target_block().cloned().unwrap_or_default();
        settings.name = Some(
            normalized_name(settings.name.as_deref())
                .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned()),
        );
        if settings.model.is_none() {
            settings.model = env_value(env, TARGET_MODEL_ENV)
                .or_else(|| claude_default(&settings, DEFAULT_TARGET_MODEL));
        }
        settings
    }

    /// The optimizer's settings (see the module doc of [`crate::config`] for the rules).
    fn optimizer_provider(&self, env: EnvLookup) -> ProviderSettings {
        let mut settings = self.role(
            self.optimizer_provider.as_ref(),
            OPTIMIZER_MODEL_ENV,
            Fallback::Fixed(DEFAULT_OPTIMIZER_MODEL),
            env,
        );
        // Batch mode is for the rollouts and their grading; a proposal is needed at once,
        // so the optimizer batches only when its own block says so.
        if self
            .optimizer_provider
            .as_ref()
            .and_then(|b| b.batch)
            .is_none()
        {
            settings.batch = None;
            settings.batch_poll = None;
        }
        settings
    }

    /// The judge's settings (see the module doc of [`crate::config`] for the rules).
    fn judge_provider(&self, env: EnvLookup) -> ProviderSettings {
        self.role(
            self.judge_provider.as_ref(),
            JUDGE_MODEL_ENV,
            Fallback::TargetModel,
            env,
        )
    }

    /// The run as its target `name` sees it: the target's provider block (one without a
    /// name talks to the run's provider, taking its connection settings where it leaves them
    /// out) and harness block in place of the run's, and no other target. `None` when no
    /// target has that name.
    pub fn for_target(&self, name: &str) -> Option<RunConfig> {
        let target = self.targets.iter().find(|t| t.name == name)?;
        let mut config = self.clone();
        if let Some(block) = &target.provider {
            let mut settings = block.clone();
            if normalized_name(block.name.as_deref()).is_none()
                && let Some(run) = self.target_block()
            {
                settings.name.clone_from(&run.name);
                inherit_connection(&mut settings, run);
            }
            config.provider = Some(settings);
            config.target = None;
        }
        if let Some(harness) = &target.harness {
            config.harness = harness.clone();
        }
        config.targets = Vec::new();
        config.objective = super::schema::ObjectiveConfig::default();
        Some(config)
    }

    /// All three roles at once.
    pub fn roles(&self, env: EnvLookup) -> ResolvedRoles {
        ResolvedRoles {
            target: self.target_provider(env),
            optimizer: self.optimizer_provider(env),
            judge: self.judge_provider(env),
        }
    }

    fn role(
        &self,
        block: Option<&ProviderSettings>,
        model_env: &str,
        fallback: Fallback,
        env: EnvLookup,
    ) -> ProviderSettings {
        let target = self.target_provider(env);
        let target_given = self.target_block().is_some();
        let role_model = env_value(env, model_env);
        let Some(block) = non_empty(block) else {
            if target_given {
                // No block: the role talks to the target's provider exactly as the target does.
                let mut settings = target;
                if let Some(model) = role_model {
                    if settings.model.as_deref() != Some(model.as_str()) {
                        // A deployment and a price belong to the target's model, not this one.
                        settings.deployment = None;
                        settings.pricing = None;
                    }
                    settings.model = Some(model);
                }
                return settings;
            }
            let anthropic = ProviderSettings {
                name: Some(DEFAULT_PROVIDER.to_owned()),
                ..ProviderSettings::default()
            };
            let model =
                role_model.or_else(|| fallback_model(&fallback, &target, false, &anthropic));
            return ProviderSettings { model, ..anthropic };
        };
        let mut settings = block.clone();
        let own_name = normalized_name(block.name.as_deref());
        let inherits = target_given && own_name.is_none();
        match own_name {
            Some(name) => settings.name = Some(name),
            None => {
                // A block without a name talks to the target's provider: it takes the target's
                // connection settings wherever it leaves them out.
                settings.name = target.name.clone();
                inherit_connection(&mut settings, &target);
            }
        }
        if settings.model.is_none() {
            settings.model =
                role_model.or_else(|| fallback_model(&fallback, &target, inherits, &settings));
        }
        settings
    }
}

/// The model of a role whose block names none: the target's, or the role's Claude default
/// where its provider serves Claude.
fn fallback_model(
    fallback: &Fallback,
    target: &ProviderSettings,
    inherits: bool,
    settings: &ProviderSettings,
) -> Option<String> {
    match fallback {
        Fallback::TargetModel => target
            .model
            .clone()
            .or_else(|| claude_default(settings, DEFAULT_TARGET_MODEL)),
        Fallback::Fixed(_) if inherits => target
            .model
            .clone()
            .or_else(|| claude_default(settings, DEFAULT_TARGET_MODEL)),
        Fallback::Fixed(model) => claude_default(settings, model),
    }
}

/// A Claude model as the default of a block naming no model, for the providers that take it:
/// Anthropic's API, and the fake, which answers to any name. Another provider gets none, so
/// that building its client says "set `model`" instead of the run asking, say, OpenAI for
/// `claude-sonnet-5` and failing every rollout.
fn claude_default(settings: &ProviderSettings, model: &str) -> Option<String> {
    matches!(
        settings.name.as_deref(),
        Some(DEFAULT_PROVIDER) | Some("fake")
    )
    .then(|| model.to_owned())
}

fn inherit_connection(settings: &mut ProviderSettings, target: &ProviderSettings) {
    fn fill<T: Clone>(field: &mut Option<T>, from: &Option<T>) {
        if field.is_none() {
            field.clone_from(from);
        }
    }
    fill(&mut settings.base_url, &target.base_url);
    fill(&mut settings.api_key, &target.api_key);
    fill(&mut settings.api_version, &target.api_version);
    fill(&mut settings.timeout, &target.timeout);
    fill(&mut settings.max_retries, &target.max_retries);
    fill(&mut settings.max_concurrency, &target.max_concurrency);
    fill(
        &mut settings.requests_per_minute,
        &target.requests_per_minute,
    );
    fill(&mut settings.call_timeout, &target.call_timeout);
    fill(&mut settings.batch, &target.batch);
    fill(&mut settings.batch_poll, &target.batch_poll);
    fill(&mut settings.responses, &target.responses);
    fill(&mut settings.rules, &target.rules);
    fill(&mut settings.script, &target.script);
}

fn non_empty(block: Option<&ProviderSettings>) -> Option<&ProviderSettings> {
    block.filter(|b| **b != ProviderSettings::default())
}

/// Provider names are case-insensitive and surrounding blanks are ignored; a blank name
/// counts as none.
fn normalized_name(name: Option<&str>) -> Option<String> {
    name.map(|n| n.trim().to_lowercase())
        .filter(|n| !n.is_empty())
}

fn env_value(env: EnvLookup, key: &str) -> Option<String> {
    env(key)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}
