//! YAML text → [`RunConfig`]: the shared parser (`skill_factory_config::yaml`), then the
//! checks of skill mode's values.

use std::path::Path;

use skill_factory_config::ConfigError;
use skill_factory_config::locate::Locator;

use super::schema::RunConfig;
use super::validate::validate;

/// How to add the required keys of a run config.
const FIXES: &[(&str, &str)] = &[
    (
        "skill",
        "add e.g. 'skill: seed_skill.md' (the seed SKILL.md, relative to the config file)",
    ),
    (
        "dataset",
        "add e.g. 'dataset: dataset.jsonl' (the JSONL tasks, relative to the config file)",
    ),
];

/// Parses and checks a config's text. `file` is used in messages only; paths in the result are
/// as written (see [`super::load_config`] for resolving them).
///
/// After a successful parse `metric` holds at least one block: a config without any gets
/// `golden` in `normalized` mode with weight 1, as in the reference tool.
pub fn parse_config(text: &str, file: &Path) -> Result<RunConfig, ConfigError> {
    let mut config: RunConfig = skill_factory_config::yaml::parse(text, file, FIXES)?;
    validate(&config, file, &Locator::new(text))?;
    if config.metric.is_empty() {
        config.metric.golden = Some(Default::default());
    }
    Ok(config)
}
