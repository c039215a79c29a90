//! `gallery/README.md`: one row per entry (skill, task, optimizer, target model, baseline →
//! best on validation, held-out test), generated from every entry's `result.json` and
//! `config.yaml`, so the index never disagrees with its entries.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::facts::RunFacts;
use super::readme::{cell, target_block};
use super::{CONFIG_FILE, GalleryError, README_FILE, RESULT_FILE, read_text};
use crate::config::{RunConfig, load_config};
use skill_factory_llm::ProviderSettings;

/// One entry as the index shows it.
#[derive(Debug, Clone)]
pub struct EntrySummary {
    /// The entry's folder name.
    pub name: String,
    /// The folder of its optimized skill (holding `SKILL.md`), relative to the entry.
    pub skill_dir: String,
    /// Its `result.json`.
    pub facts: RunFacts,
    /// Its `config.yaml`.
    pub config: RunConfig,
}

/// Reads an entry folder: its `result.json`, its `config.yaml` and the folder of its skill.
pub fn read_entry(dir: &Path) -> Result<EntrySummary, GalleryError> {
    let result_path = dir.join(RESULT_FILE);
    let facts =
        RunFacts::parse(&read_text(&result_path)?).map_err(|error| GalleryError::Result {
            path: result_path.clone(),
            source: error,
        })?;
    let config_path = dir.join(CONFIG_FILE);
    let config = load_config(&config_path)
        .map_err(|source| GalleryError::Config {
            path: config_path.clone(),
            source: Box::new(source),
        })?
        .config;
    let mut skill_dirs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|error| GalleryError::Read {
        path: dir.to_path_buf(),
        source: error,
    })? {
        let Ok(entry) = entry else { continue };
        if entry.path().join("SKILL.md").is_file() {
            skill_dirs.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    skill_dirs.sort();
    let skill_dir = match skill_dirs.as_slice() {
        [one] => one.clone(),
        _ => {
            return Err(GalleryError::SkillFolder {
                path: dir.to_path_buf(),
                found: skill_dirs.len(),
            });
        }
    };
    Ok(EntrySummary {
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        skill_dir,
        facts,
        config,
    })
}

/// Every entry of a gallery (each sub-folder holding a `result.json`), sorted by name.
pub fn read_entries(gallery_dir: &Path) -> Result<Vec<EntrySummary>, GalleryError> {
    let listing = std::fs::read_dir(gallery_dir).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => GalleryError::NoGallery {
            path: gallery_dir.to_path_buf(),
        },
        _ => GalleryError::Read {
            path: gallery_dir.to_path_buf(),
            source: error,
        },
    })?;
    let mut dirs: Vec<PathBuf> = listing
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join(RESULT_FILE).is_file())
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    dirs.sort();
    dirs.iter().map(|dir| read_entry(dir)).collect()
}

/// A model in two or three words: the GGUF file of a local model, `scripted` for the fake
/// provider, else the model name.
fn short_model(block: Option<&ProviderSettings>) -> String {
    let Some(block) = block else {
        return "—".to_owned();
    };
    let name = block.name.as_deref().unwrap_or_default().trim();
    let model = block.model.as_deref().unwrap_or_default();
    if name.eq_ignore_ascii_case("fake") {
        return "scripted (`fake`)".to_owned();
    }
    if name.eq_ignore_ascii_case(skill_factory_llm::local::PROVIDER) {
        let file = Path::new(model)
            .file_name()
            .map_or_else(|| model.to_owned(), |f| f.to_string_lossy().into_owned());
        return format!("`{file}` (local)");
    }
    format!("`{model}` ({name})")
}

/// The first sentence of a description: what the skill does, without when to use it.
fn task(description: &str) -> String {
    let trimmed = description.trim();
    let first = trimmed
        .find(". ")
        .map_or(trimmed, |end| &trimmed[..=end])
        .trim();
    cell(first, 120)
}

fn test_scores(facts: &RunFacts) -> String {
    match &facts.run.test {
        None => "no test split".to_owned(),
        Some(test) => match (test.seed_score, test.best_score) {
            (Some(seed), Some(best)) => format!("{seed:.3} → {best:.3}"),
            _ => "not scored".to_owned(),
        },
    }
}

/// The text of `gallery/README.md` for `entries`.
pub fn index_readme(entries: &[EntrySummary]) -> String {
    let mut text = String::new();
    text.push_str("# Gallery\n\n");
    text.push_str(
        "Skills optimized by Skill Factory, each with the command, models, dataset and scores \
         that produced it. An entry holds the optimized skill in the Agent Skills layout \
         (`<entry>/<skill>/SKILL.md`, ready for `skill-factory install` or `npx skills add`), \
         the seed, every candidate the optimizer wrote, the run's `result.json` and its config, \
         and a README. Entries are written by `skill-factory gallery add RUN_DIR` from a \
         finished run, and this index by `skill-factory gallery index`: no number here is typed \
         by hand.\n\n",
    );
    if entries.is_empty() {
        text.push_str("No entries yet.\n");
    } else {
        text.push_str(
            "| skill | task | optimizer | target model | baseline → best (val) | test: seed → best |\n\
             | :--- | :--- | :--- | :--- | :---: | :---: |\n",
        );
        for entry in entries {
            let facts = &entry.facts;
            let _ = writeln!(
                text,
                "| [{name}]({name}/README.md) | {task} | `{optimizer}`, proposals: {proposer} | {target} | {baseline:.3} → {best:.3} | {test} |",
                name = entry.name,
                task = task(&facts.best_skill.description),
                optimizer = facts.optimizer,
                proposer = short_model(entry.config.optimizer_provider.as_ref()),
                target = short_model(target_block(&entry.config)),
                baseline = facts.baseline_score,
                best = facts.best_score,
                test = test_scores(facts),
            );
        }
    }
    text.push_str(
        "\n## Add an entry\n\n\
         1. Write a config with `test_fraction` set, so the seed and the best skill are also \
         scored on tasks the optimizer never sees; keep its dataset and any `fake` scripts in \
         the repository.\n\
         2. `skill-factory optimize -c CONFIG` and wait for it to finish.\n\
         3. `skill-factory gallery add RUN_DIR` (for example `runs/<name>/latest` beside the \
         config; `--name NAME` names the entry, `--gallery DIR` picks another gallery). It \
         writes `gallery/<name>/` from the run folder and regenerates this index.\n\n\
         `skill-factory gallery index` regenerates this index alone. Each entry's README ends \
         with the commands that rerun it from its own `config.yaml`.\n",
    );
    text
}

/// What [`write_index`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexWritten {
    /// `<gallery>/README.md`.
    pub path: PathBuf,
    /// Entries listed.
    pub entries: usize,
}

/// Regenerates `<gallery>/README.md` from every entry of the gallery.
pub fn write_index(gallery_dir: &Path) -> Result<IndexWritten, GalleryError> {
    let entries = read_entries(gallery_dir)?;
    let path = gallery_dir.join(README_FILE);
    super::write_file(&path, index_readme(&entries).as_bytes())?;
    Ok(IndexWritten {
        path,
        entries: entries.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_is_the_description_up_to_its_first_sentence() {
        assert_eq!(
            task("Read a receipt and give its total. Use when someone asks."),
            "Read a receipt and give its total."
        );
        assert_eq!(task("  No full stop here  "), "No full stop here");
    }

    #[test]
    fn an_empty_gallery_says_so_and_still_explains_how_to_add_an_entry() {
        let text = index_readme(&[]);
        assert!(text.starts_with("# Gallery\n"));
        assert!(text.contains("No entries yet."));
        assert!(text.contains("## Add an entry"));
    }
}
