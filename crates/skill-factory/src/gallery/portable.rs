//! The config of a gallery entry: the run's `config.yaml` snapshot (roles resolved, keys
//! removed, paths absolute) made portable, so that it can be committed and rerun from any
//! checkout.
//!
//! The files that define the run travel with the entry (the seed, the dataset, the scripts of
//! `fake` providers, whose answers are the run's inputs) and the config names them by their
//! entry file names. Every other path (a local GGUF model, a working folder) becomes relative
//! to the entry folder. The run's own output places (runs folder, emitted skill, cache) go back
//! to their defaults beside the config, so a rerun never writes where the original run did.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::{DATASET_FILE, SEED_FILE};
use crate::config::{CacheConfig, OptimizerParams, RunConfig};
use crate::run::prune_nulls;

/// A run's config made portable, and the files to copy into the entry for it.
#[derive(Debug, Clone, PartialEq)]
pub struct PortableConfig {
    /// The config, with entry-relative paths.
    pub config: RunConfig,
    /// `(source, entry file name)` of every file the config now names inside the entry (the
    /// seed excepted: it is written from the run's `candidates/000.md`).
    pub copies: Vec<(PathBuf, String)>,
}

/// The entry file holding the script of a `fake` provider of `role`.
pub fn script_file(role: &str) -> String {
    format!("{role}_script.yaml")
}

/// Makes the snapshot `config` of a run portable for the entry folder `entry_dir` (see the
/// module doc).
pub fn portable_config(config: &RunConfig, entry_dir: &Path) -> PortableConfig {
    let mut config = config.clone();
    let mut copies = vec![(config.dataset.clone(), DATASET_FILE.to_owned())];
    config.skill = PathBuf::from(SEED_FILE);
    config.dataset = PathBuf::from(DATASET_FILE);
    config.output.dir = None;
    config.output.emit_skill_dir = None;
    config.cache.path = CacheConfig::default().path;
    config.optimizer.params.work_dir = OptimizerParams::default().work_dir;

    let relative = |path: &mut PathBuf| *path = relative_path(path, entry_dir);
    config.harness.cwd.as_mut().map(relative);
    config.optimizer.params.cwd.as_mut().map(relative);
    if let Some(command) = config.metric.command.as_mut() {
        command.cwd.as_mut().map(relative);
    }
    if let Some(systemone) = config.metric.systemone.as_mut() {
        systemone.cache.as_mut().map(relative);
    }

    for (role, block) in [
        ("target", &mut config.provider),
        ("target", &mut config.target),
        ("optimizer", &mut config.optimizer_provider),
        ("judge", &mut config.judge_provider),
    ] {
        let Some(block) = block.as_mut() else {
            continue;
        };
        if let Some(script) = block.script.as_mut() {
            let name = script_file(role);
            copies.push((PathBuf::from(&*script), name.clone()));
            *script = name;
        }
        // The snapshot resolved every role, so each block names its provider.
        let local = block.name.as_deref().is_some_and(|name| {
            name.trim()
                .eq_ignore_ascii_case(skill_factory_llm::local::PROVIDER)
        });
        if let Some(model) = block.model.as_mut().filter(|_| local) {
            *model = relative_path(Path::new(&*model), entry_dir)
                .to_string_lossy()
                .into_owned();
        }
    }
    PortableConfig { config, copies }
}

/// The YAML of an entry's config, with a header saying where it comes from.
pub fn config_yaml(config: &RunConfig, run_id: &str) -> String {
    let mut value = serde_json::to_value(config).unwrap_or(Value::Null);
    prune_nulls(&mut value);
    let yaml = serde_saphyr::to_string(&value).unwrap_or_default();
    format!(
        "# The config of run {run_id} as it ran (written by `skill-factory gallery add` from the run's\n\
         # config.yaml): provider roles resolved, API keys removed, paths relative to this folder.\n\
         {yaml}"
    )
}

/// `path` relative to the folder `base`, both taken as they are on disk when they exist (links
/// resolved) and lexically otherwise. A path with nothing in common with `base` (another
/// drive) stays as it is.
pub fn relative_path(path: &Path, base: &Path) -> PathBuf {
    let path = resolved(path);
    let base = resolved(base);
    let path_parts: Vec<Component> = path.components().collect();
    let base_parts: Vec<Component> = base.components().collect();
    let common = path_parts
        .iter()
        .zip(&base_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let shares_root = matches!(
        (path_parts.first(), base_parts.first()),
        (Some(a), Some(b)) if a == b
    );
    if common == 0 || !shares_root {
        return path;
    }
    let mut relative = PathBuf::new();
    for _ in common..base_parts.len() {
        relative.push("..");
    }
    for part in &path_parts[common..] {
        relative.push(part);
    }
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    relative
}

/// The canonical path when it exists, else the absolute path with `.` and `..` worked out.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_path_climbs_to_the_common_folder() {
        assert_eq!(
            relative_path(
                Path::new("/nowhere/repo/models/m.gguf"),
                Path::new("/nowhere/repo/gallery/entry")
            ),
            PathBuf::from("../../models/m.gguf")
        );
    }

    #[test]
    fn relative_path_works_out_dot_dot_in_paths_that_do_not_exist() {
        assert_eq!(
            relative_path(
                Path::new("/nowhere/repo/examples/x/../../models/m.gguf"),
                Path::new("/nowhere/repo/gallery/entry/")
            ),
            PathBuf::from("../../models/m.gguf")
        );
    }

    #[test]
    fn relative_path_inside_the_base_goes_down() {
        assert_eq!(
            relative_path(Path::new("/nowhere/a/b/c.txt"), Path::new("/nowhere/a")),
            PathBuf::from("b/c.txt")
        );
        assert_eq!(
            relative_path(Path::new("/nowhere/a"), Path::new("/nowhere/a")),
            PathBuf::from(".")
        );
    }

    #[test]
    fn relative_path_reads_a_relative_base_from_the_working_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            relative_path(&cwd.join("models/m.gguf"), Path::new("not-yet/entry")),
            PathBuf::from("../../models/m.gguf")
        );
    }
}
