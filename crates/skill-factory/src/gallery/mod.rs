//! The gallery: optimized skills with the exact command, models, data and scores that produced
//! them, written from finished run folders so that no number is ever typed by hand.
//!
//! [`add_entry`] turns a run folder into `<gallery>/<entry>/`:
//!
//! | file | what |
//! |---|---|
//! | `README.md` | generated from the run ([`readme`]): models, dataset, metric, baseline → best, held-out test, tokens, time, every candidate, how to reproduce |
//! | `<skill>/SKILL.md` | the best skill in the Agent Skills layout (exported, so it passes `validate`) |
//! | `seed_skill.md` | the seed as the run read it (`candidates/000.md`) |
//! | `candidates/NNN.md` | every candidate of the run, as written |
//! | `result.json` | the run's, unchanged |
//! | `config.yaml` | the run's config made portable ([`portable`]) |
//! | `dataset.jsonl`, `<role>_script.yaml` | the run's dataset and the scripts of its `fake` providers |
//!
//! then regenerates `<gallery>/README.md` ([`index`]). Other files in an entry folder (its
//! `runs/` and `.skill-factory/` after a rerun, notes) are left alone.

pub mod facts;
pub mod history;
pub mod index;
pub mod portable;
pub mod readme;

use std::path::{Path, PathBuf};

use skill_factory_core::{Dataset, DatasetError, Skill, SkillError};
use skill_factory_package::bundle::{BundleError, SkillBundle};
use skill_factory_package::export::{ExportError, Exported, SkillLayout, export_bundle};
use skill_factory_package::spec::{Finding, slugify};

use self::facts::RunFacts;
use self::history::{BadEventLine, candidate_history};
use self::index::{IndexWritten, write_index};
use self::portable::{config_yaml, portable_config};
use self::readme::{Commands, EntryView, entry_readme};
use crate::config::{ConfigError, load_config};
use crate::run::folder::write_atomic;
use skill_factory_runfolder::names::{BEST_SKILL_FILE, CANDIDATES_DIR, EVENTS_FILE, TRAFFIC_FILE};

/// The gallery folder when none is given.
pub const DEFAULT_GALLERY_DIR: &str = "gallery";
/// An entry's README (and the index's).
pub const README_FILE: &str = "README.md";
/// The seed skill of an entry.
pub const SEED_FILE: &str = "seed_skill.md";
/// The dataset of an entry.
pub const DATASET_FILE: &str = "dataset.jsonl";
/// The config of an entry (and of a run).
pub const CONFIG_FILE: &str = skill_factory_runfolder::names::CONFIG_FILE;
/// The run's result, copied into the entry.
pub const RESULT_FILE: &str = skill_factory_runfolder::names::RESULT_FILE;

/// Why a gallery entry or index could not be written.
#[derive(Debug, thiserror::Error)]
pub enum GalleryError {
    /// An input the run named (its dataset) cannot be read.
    #[error(transparent)]
    Input(#[from] skill_factory_io::input::InputError),
    /// The folder is not a run folder of `skill-factory optimize`.
    #[error(
        "{}: no {missing} here. `gallery add` takes a run folder written by `skill-factory \
         optimize` (it holds result.json, config.yaml, best_skill.md, events.jsonl and \
         candidates/), e.g. runs/<config name>/latest.",
        path.display()
    )]
    NotARun {
        /// The folder given.
        path: PathBuf,
        /// The file it lacks.
        missing: &'static str,
    },
    /// The run has not finished (or was killed): its numbers are not final.
    #[error(
        "{}: the run has not finished (result.json says \"stop_reason\": \"{stop_reason}\"), so \
         its numbers are not final. Wait for it to end, or rerun the optimization.",
        path.display()
    )]
    Unfinished {
        /// The run folder.
        path: PathBuf,
        /// What `result.json` says.
        stop_reason: String,
    },
    /// The gallery folder does not exist yet.
    #[error(
        "{}: no gallery here yet. Add a finished, recorded run with `skill-factory gallery add \
         RUN_DIR` (it makes the folder), or name another gallery with --gallery DIR.",
        path.display()
    )]
    NoGallery {
        /// The folder looked for.
        path: PathBuf,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A file the entry would copy is a link (inside the run folder), a device or a pipe.
    #[error(
        "{}: not a regular file ({kind}); `gallery add` copies only regular files, so that a run \
         folder cannot bring a file from elsewhere into the gallery. Put the file itself there.",
        path.display()
    )]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A fake provider's script the run names is not a script.
    #[error(
        "{}: the run's config names it as a fake provider's script, but it does not read as one \
         (a YAML mapping of `responses:` and/or `rules:`); the gallery copies only scripts it can \
         replay. Fix the script or the config's `script:`.",
        path.display()
    )]
    NotAScript {
        /// The file.
        path: PathBuf,
    },
    /// `result.json` lacks a field the gallery needs.
    #[error(
        "{}: not a result.json written by skill-factory optimize ({detail}). Add the entry from \
         a run of this version.",
        path.display(),
        detail = source
    )]
    Result {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: serde_json::Error,
    },
    /// The run's (or entry's) config could not be read.
    #[error("{}: {source}", path.display())]
    Config {
        /// The config file.
        path: PathBuf,
        /// Why.
        source: Box<ConfigError>,
    },
    /// A skill file of the run is not a valid SKILL.md.
    #[error("{}: {source}", path.display())]
    Skill {
        /// The file.
        path: PathBuf,
        /// Why.
        source: SkillError,
    },
    /// The run was not recorded, so its entry could not be replayed.
    #[error(
        "{}: the run was not recorded (no traffic.jsonl), so its entry could not be replayed. \
         Rerun it with `skill-factory optimize --record -c CONFIG` and add that run.",
        path.display()
    )]
    NotRecorded {
        /// The run folder.
        path: PathBuf,
    },
    /// A line of `events.jsonl` is broken.
    #[error("{}: {source}", path.display())]
    Events {
        /// The file.
        path: PathBuf,
        /// Which line and why.
        source: BadEventLine,
    },
    /// The run's dataset cannot be read as a dataset.
    #[error("{}: {source}", path.display())]
    Dataset {
        /// The dataset file.
        path: PathBuf,
        /// Why.
        source: Box<DatasetError>,
    },
    /// The dataset no longer has the tasks the run split.
    #[error(
        "{}: the dataset holds {found} tasks but the run split {expected}; it changed after the \
         run, so the entry could not be reproduced from it. Rerun the optimization on the \
         dataset as it is now.",
        path.display()
    )]
    DatasetChanged {
        /// The dataset file.
        path: PathBuf,
        /// Tasks in it now.
        found: usize,
        /// Tasks the run had.
        expected: usize,
    },
    /// The entry name cannot be a gallery folder.
    #[error(
        "the entry name {name:?} is not a lowercase name of letters, digits and hyphens. Pass \
         --name {suggestion}."
    )]
    BadName {
        /// The name given.
        name: String,
        /// A usable name.
        suggestion: String,
    },
    /// An entry folder does not hold exactly one skill folder.
    #[error(
        "{}: a gallery entry holds one skill folder (<skill>/SKILL.md), found {found}. Rewrite \
         the entry with `skill-factory gallery add`.",
        path.display()
    )]
    SkillFolder {
        /// The entry folder.
        path: PathBuf,
        /// Skill folders found.
        found: usize,
    },
    /// The seed's own skill folder could not be read.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The best skill is not a valid Agent Skill.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
}

/// Reads a whole text file.
pub(crate) fn read_text(path: &Path) -> Result<String, GalleryError> {
    std::fs::read_to_string(path).map_err(|error| GalleryError::Read {
        path: path.to_path_buf(),
        source: error,
    })
}

/// Writes a file atomically, creating its folder.
pub(crate) fn write_file(path: &Path, contents: &[u8]) -> Result<(), GalleryError> {
    write_atomic(path, contents).map_err(|error| GalleryError::Write {
        path: path.to_path_buf(),
        source: error,
    })
}

/// How to add an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddOptions {
    /// The gallery folder (`--gallery`, default [`DEFAULT_GALLERY_DIR`]); the Reproduce
    /// commands name it as given when it is relative.
    pub gallery_dir: PathBuf,
    /// The entry's folder name (`--name`); default: the best skill's Agent Skills name.
    pub name: Option<String>,
}

impl Default for AddOptions {
    fn default() -> Self {
        AddOptions {
            gallery_dir: PathBuf::from(DEFAULT_GALLERY_DIR),
            name: None,
        }
    }
}

/// What [`add_entry`] wrote.
#[derive(Debug, Clone)]
pub struct AddedEntry {
    /// The entry's name (its folder name).
    pub name: String,
    /// `<gallery>/<name>`.
    pub dir: PathBuf,
    /// The exported best skill.
    pub skill: Exported,
    /// The run's result.
    pub facts: RunFacts,
    /// Candidate files copied (the seed's included).
    pub candidates: usize,
    /// The regenerated index.
    pub index: IndexWritten,
}

impl AddedEntry {
    /// Warnings of the skill export (a slugged name, size guidance).
    pub fn warnings(&self) -> &[Finding] {
        &self.skill.warnings
    }
}

fn require(run_dir: &Path, name: &'static str) -> Result<PathBuf, GalleryError> {
    let path = run_dir.join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(GalleryError::NotARun {
            path: run_dir.to_path_buf(),
            missing: name,
        })
    }
}

fn parse_skill(path: &Path) -> Result<Skill, GalleryError> {
    Skill::parse(&read_text(path)?).map_err(|source| GalleryError::Skill {
        path: path.to_path_buf(),
        source,
    })
}

/// The bytes of the regular file `path`. Inside a run folder a link is not followed
/// (`follow` false): the folder may come from someone else, and its entry is committed.
fn read_regular(path: &Path, follow: bool) -> Result<Vec<u8>, GalleryError> {
    let read_error = |source| GalleryError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    }
    .map_err(read_error)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(GalleryError::NotAFile {
            path: path.to_path_buf(),
            kind: if kind.is_symlink() {
                "a link"
            } else if kind.is_dir() {
                "a folder"
            } else {
                "a device, pipe or socket"
            },
        });
    }
    std::fs::read(path).map_err(read_error)
}

/// The candidate files of a run (`candidates/NNN.md`), sorted, with their text.
fn read_candidates(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, GalleryError> {
    let listing = std::fs::read_dir(dir).map_err(|error| GalleryError::Read {
        path: dir.to_path_buf(),
        source: error,
    })?;
    let mut files = Vec::new();
    for entry in listing.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let numbered = name
            .strip_suffix(".md")
            .is_some_and(|stem| !stem.is_empty() && stem.chars().all(|c| c.is_ascii_digit()));
        if numbered {
            files.push((name, read_regular(&entry.path(), false)?));
        }
    }
    files.sort();
    Ok(files)
}

/// A path as a command line shows it: `/`-separated, without a leading `./`, quoted for a
/// POSIX shell when it needs to be.
fn shell_path(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let text = text.trim_start_matches("./").to_owned();
    shlex::try_quote(&text).map_or(text.clone(), |quoted| quoted.into_owned())
}

/// The Reproduce commands of an entry in `gallery_dir` (as given).
fn commands(gallery_dir: &Path, entry: &str, default_name: &str) -> Commands {
    let name_flag = if entry == default_name {
        String::new()
    } else {
        format!(" --name {entry}")
    };
    let runs = format!("runs/{entry}/latest");
    if gallery_dir.is_absolute() {
        return Commands {
            from: Some("From this folder:".to_owned()),
            config: CONFIG_FILE.to_owned(),
            traffic: TRAFFIC_FILE.to_owned(),
            run_dir: runs,
            add_flags: format!(" --gallery ..{name_flag}"),
        };
    }
    let gallery = shell_path(gallery_dir);
    let gallery_flag = if gallery == DEFAULT_GALLERY_DIR {
        String::new()
    } else {
        format!(" --gallery {gallery}")
    };
    let entry_dir = shell_path(&gallery_dir.join(entry));
    Commands {
        from: None,
        config: format!("{entry_dir}/{CONFIG_FILE}"),
        traffic: format!("{entry_dir}/{TRAFFIC_FILE}"),
        run_dir: format!("{entry_dir}/{runs}"),
        add_flags: format!("{gallery_flag}{name_flag}"),
    }
}

/// Writes `<gallery>/<entry>/` from the finished run folder `run_dir` (see the module doc)
/// and regenerates the gallery index. Everything is read and checked before anything is
/// written.
pub fn add_entry(run_dir: &Path, options: &AddOptions) -> Result<AddedEntry, GalleryError> {
    let result_path = require(run_dir, RESULT_FILE)?;
    let config_path = require(run_dir, CONFIG_FILE)?;
    let best_path = require(run_dir, BEST_SKILL_FILE)?;
    let events_path = require(run_dir, EVENTS_FILE)?;
    let candidates_dir = require(run_dir, CANDIDATES_DIR)?;

    let result_text = read_text(&result_path)?;
    let facts = RunFacts::parse(&result_text).map_err(|error| GalleryError::Result {
        path: result_path.clone(),
        source: error,
    })?;
    if !facts.finished() {
        return Err(GalleryError::Unfinished {
            path: run_dir.to_path_buf(),
            stop_reason: facts.run.stop_reason.clone(),
        });
    }
    let traffic_path = run_dir.join(TRAFFIC_FILE);
    if !traffic_path.is_file() {
        return Err(GalleryError::NotRecorded {
            path: run_dir.to_path_buf(),
        });
    }
    let traffic = read_regular(&traffic_path, false)?;
    let snapshot = load_config(&config_path)
        .map_err(|source| GalleryError::Config {
            path: config_path.clone(),
            source: Box::new(source),
        })?
        .config;
    // Its reference files, as rewritten by the search, are in result.json.
    let best = parse_skill(&best_path)?.with_files(facts.best_skill.files.clone());
    let seed_path = candidates_dir.join("000.md");
    let seed_text = read_text(&seed_path)?;
    parse_skill(&seed_path)?;
    let candidates = read_candidates(&candidates_dir)?;
    let history =
        candidate_history(&read_text(&events_path)?, facts.baseline_score).map_err(|source| {
            GalleryError::Events {
                path: events_path.clone(),
                source,
            }
        })?;

    let dataset_text =
        skill_factory_io::input::read_text(&snapshot.dataset, skill_factory_io::input::DATASET)?;
    let dataset_size = Dataset::from_jsonl(&dataset_text, &snapshot.dataset.display().to_string())
        .map_err(|error| GalleryError::Dataset {
            path: snapshot.dataset.clone(),
            source: Box::new(error),
        })?
        .len();
    if dataset_size != facts.run.splits.total() {
        return Err(GalleryError::DatasetChanged {
            path: snapshot.dataset.clone(),
            found: dataset_size,
            expected: facts.run.splits.total(),
        });
    }

    // The best skill carries the files of the seed's folder, as `optimize --emit` exports it.
    let bundle = if snapshot.skill.is_file() {
        SkillBundle::load(&snapshot.skill)?
    } else {
        SkillBundle::from_skill(best.clone())
    }
    .carrying(best);
    let skill_name = SkillLayout::from_bundle(&bundle)?.name;
    let entry = match &options.name {
        Some(name) => {
            let suggestion = slugify(name).unwrap_or_else(|_| skill_name.clone());
            if suggestion != *name {
                return Err(GalleryError::BadName {
                    name: name.clone(),
                    suggestion,
                });
            }
            name.clone()
        }
        None => skill_name.clone(),
    };
    let dir = options.gallery_dir.join(&entry);
    let portable = portable_config(&snapshot, &dir);
    let mut copies = Vec::new();
    for (source, name) in &portable.copies {
        let bytes = read_regular(source, true)?;
        if name != DATASET_FILE {
            let text = String::from_utf8_lossy(&bytes);
            // The parser's error quotes the file, which may be anything: it is not shown.
            skill_factory_llm::fake::FakeScript::parse(&text, &source.display().to_string())
                .map_err(|_| GalleryError::NotAScript {
                    path: source.clone(),
                })?;
        }
        copies.push((name.clone(), bytes));
    }
    let commands = commands(&options.gallery_dir, &entry, &skill_name);
    let readme = entry_readme(&EntryView {
        entry: &entry,
        skill_dir: &skill_name,
        facts: &facts,
        config: &portable.config,
        dataset_size,
        history: &history,
        commands: &commands,
    });

    std::fs::create_dir_all(&dir).map_err(|error| GalleryError::Write {
        path: dir.clone(),
        source: error,
    })?;
    // The entry folder is the gallery's own: its skill is rewritten with the entry.
    let exported = export_bundle(&bundle, &dir, false, true)?;
    write_file(
        &dir.join(CONFIG_FILE),
        config_yaml(&portable.config, &facts.run.run_id).as_bytes(),
    )?;
    write_file(&dir.join(SEED_FILE), seed_text.as_bytes())?;
    for (name, bytes) in &copies {
        write_file(&dir.join(name), bytes)?;
    }
    write_file(&dir.join(RESULT_FILE), result_text.as_bytes())?;
    write_file(&dir.join(TRAFFIC_FILE), &traffic)?;
    let candidates_out = dir.join(CANDIDATES_DIR);
    if candidates_out.exists() {
        // A previous entry's candidates go: a shorter run must not keep the longer one's.
        std::fs::remove_dir_all(&candidates_out).map_err(|error| GalleryError::Write {
            path: candidates_out.clone(),
            source: error,
        })?;
    }
    for (name, bytes) in &candidates {
        write_file(&candidates_out.join(name), bytes)?;
    }
    write_file(&dir.join(README_FILE), readme.as_bytes())?;
    let index = write_index(&options.gallery_dir)?;
    Ok(AddedEntry {
        name: entry,
        dir,
        skill: exported,
        facts,
        candidates: candidates.len(),
        index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduce_commands_name_a_relative_gallery_as_given() {
        let commands = commands(Path::new("./gallery"), "receipt-total", "receipt-total");
        assert_eq!(commands.from, None);
        assert_eq!(commands.config, "gallery/receipt-total/config.yaml");
        assert_eq!(
            commands.run_dir,
            "gallery/receipt-total/runs/receipt-total/latest"
        );
        assert_eq!(commands.add_flags, "");
    }

    #[test]
    fn reproduce_commands_carry_the_flags_that_write_the_same_entry_again() {
        let commands = commands(Path::new("docs/my gallery"), "receipts", "receipt-total");
        assert_eq!(commands.config, "'docs/my gallery/receipts'/config.yaml");
        assert_eq!(
            commands.add_flags,
            " --gallery 'docs/my gallery' --name receipts"
        );
    }

    #[test]
    fn reproduce_commands_run_from_the_entry_when_the_gallery_path_is_absolute() {
        let root = std::env::temp_dir().join("gallery");
        let commands = commands(&root, "receipt-total", "receipt-total");
        assert_eq!(commands.from.as_deref(), Some("From this folder:"));
        assert_eq!(commands.config, "config.yaml");
        assert_eq!(commands.run_dir, "runs/receipt-total/latest");
        assert_eq!(commands.add_flags, " --gallery ..");
    }
}
