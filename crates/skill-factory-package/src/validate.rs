//! `validate`: the Agent Skills checks of [`crate::spec`] run on what is on disk — a
//! skill file, a skill folder, or a collection of skill folders.
//!
//! - a file: its frontmatter and body; when it is named `SKILL.md`, also its folder (the files
//!   beside it and the name matching the folder name);
//! - a folder holding `SKILL.md`: that skill folder;
//! - any other folder: a collection, every `skills/<name>/SKILL.md` in it, or else every
//!   `<name>/SKILL.md`.

use std::path::{Path, PathBuf};

use crate::bundle::{BundleError, SkillBundle};
use crate::spec::{self, Finding, Rule, Severity};

/// The in-memory check of one skill, for callers (such as the optimizer, on every candidate)
/// that have a [`skill_factory_core::Skill`] rather than a path.
pub use crate::spec::validate_skill;

/// The findings of one skill.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillReport {
    /// The skill file checked.
    pub path: PathBuf,
    /// Errors first, then warnings; empty when the skill is valid and clean.
    pub findings: Vec<Finding>,
}

impl SkillReport {
    /// How many findings have `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|finding| finding.severity == severity)
            .count()
    }
}

/// Why a path could not be validated at all.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// The path does not exist.
    #[error("{}: no such file or folder. Pass a SKILL.md, a skill folder or a folder of skills.", path.display())]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// A folder with no skill in it.
    #[error(
        "{}: no SKILL.md found here, in skills/*/ or in */. Pass a SKILL.md, a skill folder or \
         a folder of skill folders.",
        path.display()
    )]
    NoSkills {
        /// The folder given.
        path: PathBuf,
    },
    /// A folder could not be listed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The folder.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
}

/// Validates a skill file, a skill folder or a collection folder; one report per skill.
pub fn validate_path(path: &Path) -> Result<Vec<SkillReport>, ValidateError> {
    let metadata = std::fs::metadata(path).map_err(|_| ValidateError::NotFound {
        path: path.to_path_buf(),
    })?;
    if !metadata.is_dir() {
        return Ok(vec![validate_skill_file(path)]);
    }
    let own = path.join("SKILL.md");
    if own.is_file() {
        return Ok(vec![validate_skill_file(&own)]);
    }
    let skills_dir = path.join("skills");
    let mut files = skill_files_in(&skills_dir)?;
    if files.is_empty() {
        files = skill_files_in(path)?;
    }
    if files.is_empty() {
        return Err(ValidateError::NoSkills {
            path: path.to_path_buf(),
        });
    }
    Ok(files.iter().map(|file| validate_skill_file(file)).collect())
}

/// `<dir>/*/SKILL.md`, sorted; empty when `dir` is not a folder.
fn skill_files_in(dir: &Path) -> Result<Vec<PathBuf>, ValidateError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(dir).map_err(|error| ValidateError::Read {
        path: dir.to_path_buf(),
        source: error,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("SKILL.md"))
        .filter(|file| file.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Validates one skill file (and its folder when it is named `SKILL.md`). A file that cannot
/// be read or parsed gives a report with one [`Rule::Frontmatter`] error.
pub fn validate_skill_file(path: &Path) -> SkillReport {
    let findings = match SkillBundle::load(path) {
        Ok(bundle) => {
            let mut findings = bundle.findings();
            if let Some(folder) = bundle.folder_name() {
                findings.extend(spec::validate_folder_name(&bundle.skill, &folder));
            }
            findings.sort_by_key(|finding| finding.severity);
            findings
        }
        Err(BundleError::Skill { source, .. }) => vec![Finding::error(
            Rule::Frontmatter,
            source.to_string(),
            // The parser's message already says how to fix it.
            "",
        )],
        Err(error) => vec![Finding::error(
            Rule::Frontmatter,
            error.to_string(),
            "Check the path and its permissions.",
        )],
    };
    SkillReport {
        path: path.to_path_buf(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(dir: &Path, folder: &str, name: &str) -> PathBuf {
        let root = dir.join(folder);
        std::fs::create_dir_all(&root).unwrap();
        let file = root.join("SKILL.md");
        std::fs::write(
            &file,
            format!("---\nname: {name}\ndescription: d\n---\n\nBody.\n"),
        )
        .unwrap();
        file
    }

    #[test]
    fn skill_folder_whose_name_differs_from_the_folder_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        write_skill(dir.path(), "folder", "other");
        let reports = validate_path(&dir.path().join("folder")).unwrap();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].findings[0].rule, Rule::NameMatchesFolder);
        assert_eq!(reports[0].count(Severity::Error), 1);
    }

    #[test]
    fn collection_checks_every_skill_under_skills() {
        let dir = tempfile::tempdir().unwrap();
        write_skill(&dir.path().join("skills"), "b-skill", "b-skill");
        write_skill(&dir.path().join("skills"), "a-skill", "A Skill");
        let reports = validate_path(dir.path()).unwrap();
        let names: Vec<String> = reports
            .iter()
            .map(|report| {
                report
                    .path
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, vec!["a-skill", "b-skill"]);
        assert!(reports[0].count(Severity::Error) >= 1);
        assert_eq!(reports[1].findings, vec![]);
    }

    #[test]
    fn folder_of_skill_folders_without_skills_dir_is_a_collection() {
        let dir = tempfile::tempdir().unwrap();
        write_skill(dir.path(), "one", "one");
        assert_eq!(validate_path(dir.path()).unwrap().len(), 1);
    }

    #[test]
    fn unparseable_skill_file_is_a_frontmatter_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.md");
        std::fs::write(&file, "no frontmatter").unwrap();
        let reports = validate_path(&file).unwrap();
        assert_eq!(reports[0].findings[0].rule, Rule::Frontmatter);
        assert!(reports[0].findings[0].message.contains("'name'"));
    }

    #[test]
    fn empty_folder_and_missing_path_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            validate_path(dir.path()),
            Err(ValidateError::NoSkills { .. })
        ));
        assert!(matches!(
            validate_path(&dir.path().join("nope")),
            Err(ValidateError::NotFound { .. })
        ));
    }
}
