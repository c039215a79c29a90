//! Reading a config file: the text, the checks, path resolution, `.env` values and the run's
//! name.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use skill_factory_io::input::{self, InputError};
use skill_factory_llm::ProviderSettings;

use super::parse::parse_config;
use super::roles::{ResolvedRoles, Role};
use super::schema::RunConfig;
use skill_factory_config::locate::{Locator, parse_path};
use skill_factory_config::{ConfigError, Place};

/// A config read from a file, with everything needed to act on it. Its `Debug` output lists
/// the `.env` variable names, never their values.
#[derive(Clone)]
pub struct LoadedConfig {
    /// The checked config; its relative paths are already joined to [`Self::dir`].
    pub config: RunConfig,
    /// The config file as given.
    pub path: PathBuf,
    /// The directory of the config file (`.` when the path has none).
    pub dir: PathBuf,
    /// A short name for the run (see [`config_name`]).
    pub name: String,
    /// Values read from `.env` files (see [`Self::env`]).
    dotenv: BTreeMap<String, String>,
    /// The file's text, for placing errors found after loading (see [`Self::place_of`]).
    text: Arc<str>,
    /// The model roles, resolved once at load with the environment of that moment, so every
    /// part of a run talks to the same models even if a variable changes while it runs.
    roles: ResolvedRoles,
}

impl fmt::Debug for LoadedConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedConfig")
            .field("config", &self.config)
            .field("path", &self.path)
            .field("dir", &self.dir)
            .field("name", &self.name)
            .field("dotenv", &self.dotenv.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl LoadedConfig {
    /// A variable from the process environment, else from the `.env` files (the one beside
    /// the config wins over the working directory's). Empty values count as unset.
    pub fn env(&self, key: &str) -> Option<String> {
        skill_factory_config::env::variable(&self.dotenv, key)
    }

    /// The folder holding this config's runs: `output.dir` when given, else
    /// `runs/<config name>` beside the config file (the reference wrote every run into
    /// `runs/latest`, overwriting the previous one).
    pub fn runs_dir(&self) -> PathBuf {
        self.config
            .output
            .dir
            .clone()
            .unwrap_or_else(|| self.dir.join("runs").join(&self.name))
    }

    /// Where the key path `key` (`provider`, `metric.programmatic.checks[1]`) is written in
    /// the config file: the file and the line of its value, or the file alone when the config
    /// does not have the key.
    pub fn place_of(&self, key: &str) -> Place {
        Place {
            file: self.path.clone(),
            line: Locator::new(&self.text).line(&parse_path(key)),
        }
    }

    /// The values read from `.env` files, for passing on to child processes.
    pub fn dotenv_vars(&self) -> &BTreeMap<String, String> {
        &self.dotenv
    }

    /// The config as its target `name` sees it ([`RunConfig::for_target`]): the target role
    /// resolved from the target's block, the optimizer and the judge as the run resolved
    /// them. `None` when no target has that name.
    pub fn for_target(&self, name: &str) -> Option<LoadedConfig> {
        let config = self.config.for_target(name)?;
        let env = |key: &str| skill_factory_config::env::variable(&self.dotenv, key);
        let target = config.roles(&env).target;
        let mut derived = LoadedConfig {
            config,
            ..self.clone()
        };
        derived.roles.target = target;
        Some(derived)
    }

    /// Every role's settings, resolved at load (see [`RunConfig::roles`]).
    pub fn roles(&self) -> &ResolvedRoles {
        &self.roles
    }

    /// The settings of `role`, resolved at load.
    pub fn role(&self, role: Role) -> &ProviderSettings {
        self.roles.get(role)
    }
}

/// Reads, checks and resolves a skill-mode config file.
///
/// Relative paths in it are joined to the config file's directory, `.env` beside the config
/// and in the working directory are read (without touching the process environment), and
/// every problem comes back as a [`ConfigError`] that names the file, line and key.
pub fn load_config(path: &Path) -> Result<LoadedConfig, ConfigError> {
    let cwd = std::env::current_dir().ok();
    load_config_in(path, cwd.as_deref())
}

/// [`load_config`] with the working directory made explicit, so tests need not change it.
pub(crate) fn load_config_in(path: &Path, cwd: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
    let text = input::read_text(path, input::CONFIG).map_err(|error| match error {
        InputError::Missing { .. } => ConfigError::NotFound {
            path: path.to_path_buf(),
        },
        other => ConfigError::Unreadable(other),
    })?;
    if skill_factory_core::mode::is_classifier(&text) {
        return Err(ConfigError::ClassifierConfig {
            path: path.to_path_buf(),
        });
    }
    let mut config = parse_config(&text, path)?;
    let base = path.parent().unwrap_or(Path::new(""));
    resolve_paths(&mut config, base);

    let dotenv = skill_factory_config::env::beside_in(path, cwd)?;
    let roles = config.roles(&|key| skill_factory_config::env::variable(&dotenv, key));

    Ok(LoadedConfig {
        config,
        path: path.to_path_buf(),
        dir: config_dir(path),
        name: config_name(path),
        dotenv,
        text: text.into(),
        roles,
    })
}

/// The directory of a config file, `.` when the path names none.
pub(crate) fn config_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Joins every relative path of the config to `base`, the config file's directory.
///
/// The reference tool does this for `skill` and `dataset` only and leaves the rest relative to
/// the working directory; doing it for all of them means a config runs the same from anywhere.
pub(crate) fn resolve_paths(config: &mut RunConfig, base: &Path) {
    let join = |p: &mut PathBuf| {
        if p.is_relative() && !base.as_os_str().is_empty() {
            *p = base.join(&*p);
        }
    };
    join(&mut config.skill);
    join(&mut config.dataset);
    config.distractors.iter_mut().for_each(join);
    if let Some(block) = config.trigger.as_mut() {
        join(&mut block.dataset);
    }
    join(&mut config.cache.path);
    config.output.dir.as_mut().map(join);
    config.output.emit_skill_dir.as_mut().map(join);
    config.harness.cwd.as_mut().map(join);
    for target in &mut config.targets {
        if let Some(cwd) = target.harness.as_mut().and_then(|h| h.cwd.as_mut()) {
            join(cwd);
        }
    }
    if let Some(systemone) = config.metric.systemone.as_mut() {
        systemone.cache.as_mut().map(join);
    }
    if let Some(command) = config.metric.command.as_mut() {
        command.cwd.as_mut().map(join);
    }
    join(&mut config.optimizer.params.work_dir);
    config.optimizer.params.cwd.as_mut().map(join);
    let target_is_local = local_target(config);
    let own = [
        &mut config.provider,
        &mut config.target,
        &mut config.optimizer_provider,
        &mut config.judge_provider,
    ];
    let targets = config.targets.iter_mut().map(|t| &mut t.provider);
    for block in own.into_iter().chain(targets).flatten() {
        if let Some(script) = block.script.as_mut() {
            let mut p = PathBuf::from(&*script);
            join(&mut p);
            *script = p.to_string_lossy().into_owned();
        }
        // A local provider's model is a GGUF file. A block without a name inherits the
        // target's provider, so it is local when the target is.
        let local = match block.name.as_deref().map(str::trim) {
            Some(name) if !name.is_empty() => is_local(name),
            _ => target_is_local,
        };
        if let Some(model) = block.model.as_mut().filter(|_| local) {
            let mut p = PathBuf::from(&*model);
            join(&mut p);
            *model = p.to_string_lossy().into_owned();
        }
    }
}

/// Whether the target block (`provider`, else `target`) names the `local` provider.
fn local_target(config: &RunConfig) -> bool {
    [&config.provider, &config.target]
        .into_iter()
        .flatten()
        .find(|block| **block != ProviderSettings::default())
        .and_then(|block| block.name.as_deref())
        .is_some_and(is_local)
}

fn is_local(name: &str) -> bool {
    name.trim()
        .eq_ignore_ascii_case(skill_factory_llm::local::PROVIDER)
}

/// A short name for a run, from its config path: the file stem without a `config` prefix or
/// suffix. `examples/invoice-extractor/config.yaml` and `.../config.fast.yaml` give the folder
/// name `invoice-extractor`; `my-run.yaml` and `my-run.config.yaml` give `my-run`.
pub fn config_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = stem.to_lowercase();
    if lower == "config" || lower.starts_with("config.") {
        return folder_name(path).unwrap_or(stem);
    }
    for suffix in [".config", "-config", "_config"] {
        if lower.ends_with(suffix) && lower.len() > suffix.len() {
            return stem[..stem.len() - suffix.len()].to_owned();
        }
    }
    stem
}

/// The name of the folder holding the file, looking up the working directory when the path
/// has no folder part.
fn folder_name(path: &Path) -> Option<String> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let named = parent.file_name().map(|n| n.to_string_lossy().into_owned());
    named.or_else(|| {
        let absolute = parent.canonicalize().ok()?;
        absolute
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    })
}
