//! A skill with the files it carries: the `SKILL.md` plus `references/`, `scripts/`, `assets/`
//! and any other files of its folder, as export and install copy them.
//!
//! What a folder contributes (see docs/agent-skills.md):
//! - only a file named exactly `SKILL.md` has a skill folder; any other skill file (a run's
//!   `best_skill.md`, an example's `seed_skill.md`) is exported alone, because the files
//!   beside it belong to something else;
//! - every regular file below that folder is carried, at any depth, except hidden entries
//!   (names starting with `.`, such as `.git` or `.DS_Store`), which are skipped silently;
//! - symbolic links are never followed (a link can point anywhere on the machine): each one
//!   is skipped with a [`Rule::Symlink`] warning;
//! - a folder with more than [`MAX_FILES`] files or [`MAX_BYTES`] bytes is refused: that is a
//!   project, not a skill.

use std::path::{Path, PathBuf};

use skill_factory_core::{Skill, SkillError};

use crate::spec::{self, Finding, Rule};
use skill_factory_io::input::{self, InputError};

/// Most files a skill folder may carry.
pub const MAX_FILES: usize = 1000;
/// Most bytes a skill folder's files may hold together (50 MiB).
pub const MAX_BYTES: u64 = 50 * 1024 * 1024;

/// A file carried with a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundledFile {
    /// Path relative to the skill folder, `/`-separated (e.g. `references/guide.md`).
    pub path: String,
    /// The file's bytes, copied unchanged.
    pub contents: Vec<u8>,
    /// Whether the file is executable (scripts keep their mode when copied; Unix only).
    pub executable: bool,
}

/// A skill and the files it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillBundle {
    /// The skill; its `name` may still be invalid (export slugs it).
    pub skill: Skill,
    /// Carried files, sorted by path. Never contains `SKILL.md` itself.
    pub files: Vec<BundledFile>,
    /// What loading noticed (symlinks skipped, unreadable names).
    pub notes: Vec<Finding>,
    /// The folder the skill was loaded from, when it came from a `SKILL.md`.
    pub folder: Option<PathBuf>,
}

/// Why a skill and its files could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The path does not exist.
    #[error("{}: no such file or folder. Pass a SKILL.md or a folder holding one.", path.display())]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// A folder was given that has no `SKILL.md`.
    #[error(
        "{}: the folder has no SKILL.md. Pass a skill file, or a folder holding a SKILL.md.",
        path.display()
    )]
    NoSkillFile {
        /// The folder given.
        path: PathBuf,
    },
    /// The skill file cannot be read (not a regular file, too large, not UTF-8, ...).
    #[error(transparent)]
    Input(#[from] InputError),
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The skill file is not a valid SKILL.md.
    #[error("{}: {source}", path.display())]
    Skill {
        /// The skill file.
        path: PathBuf,
        /// Why it cannot be read.
        source: SkillError,
    },
    /// The folder holds too much to be one skill.
    #[error(
        "{}: the skill folder holds more than {MAX_FILES} files or {} MiB; that looks like a \
         project, not a skill. Move SKILL.md and its references/, scripts/ and assets/ into a \
         folder of their own.",
        path.display(),
        MAX_BYTES / 1024 / 1024
    )]
    TooLarge {
        /// The skill folder.
        path: PathBuf,
    },
}

impl SkillBundle {
    /// A skill without files.
    pub fn from_skill(skill: Skill) -> Self {
        SkillBundle {
            skill,
            files: Vec::new(),
            notes: Vec::new(),
            folder: None,
        }
    }

    /// The same folder around another version of its skill: `skill` replaces the SKILL.md,
    /// and each of its reference files ([`Skill::files`]) the file of that path (an optimized
    /// skill rewrites them), which keeps its place in the sorted list.
    pub fn carrying(mut self, skill: Skill) -> Self {
        for (path, text) in &skill.files {
            match self.files.iter_mut().find(|file| file.path == *path) {
                Some(file) => file.contents = text.clone().into_bytes(),
                None => self.files.push(BundledFile {
                    path: path.clone(),
                    contents: text.clone().into_bytes(),
                    executable: false,
                }),
            }
        }
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.skill = skill;
        self
    }

    /// Loads a skill from a skill file or a folder holding a `SKILL.md`, with the files of its
    /// folder when it has one (rules in the module doc).
    pub fn load(path: &Path) -> Result<Self, BundleError> {
        let metadata = std::fs::metadata(path).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => BundleError::NotFound {
                path: path.to_path_buf(),
            },
            _ => BundleError::Read {
                path: path.to_path_buf(),
                source: error,
            },
        })?;
        let skill_file = if metadata.is_dir() {
            let file = path.join("SKILL.md");
            if !file.is_file() {
                return Err(BundleError::NoSkillFile {
                    path: path.to_path_buf(),
                });
            }
            file
        } else {
            path.to_path_buf()
        };
        let text = input::read_text(&skill_file, input::SKILL)?;
        let skill = Skill::parse(&text).map_err(|source| BundleError::Skill {
            path: skill_file.clone(),
            source,
        })?;
        let mut bundle = SkillBundle::from_skill(skill);
        if skill_file
            .file_name()
            .is_some_and(|name| name == "SKILL.md")
        {
            let folder = match skill_file.parent() {
                Some(parent) if parent.as_os_str().is_empty() => PathBuf::from("."),
                Some(parent) => parent.to_path_buf(),
                None => PathBuf::from("."),
            };
            let mut walk = Walk::default();
            walk.visit(&folder, "")?;
            if walk.too_large {
                return Err(BundleError::TooLarge { path: folder });
            }
            walk.files.sort_by(|a, b| a.path.cmp(&b.path));
            bundle.files = walk.files;
            bundle.notes = walk.notes;
            bundle.folder = Some(folder);
        }
        Ok(bundle)
    }

    /// The name of the folder the skill came from, when it came from a `SKILL.md`.
    pub fn folder_name(&self) -> Option<String> {
        let folder = self.folder.as_ref()?;
        // `.` has no file name; canonicalize to learn it.
        let resolved = folder.canonicalize().ok()?;
        resolved
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
    }

    /// Every finding of the Agent Skills checks except the folder name: the skill's
    /// frontmatter and body, the carried files' paths, links from the body, and what loading
    /// noticed.
    pub fn findings(&self) -> Vec<Finding> {
        let mut findings = spec::validate_skill(&self.skill);
        let paths: Vec<&str> = self.files.iter().map(|file| file.path.as_str()).collect();
        findings.extend(spec::validate_files(&self.skill, &paths));
        findings.extend(self.notes.iter().cloned());
        findings.sort_by_key(|finding| finding.severity);
        findings
    }
}

/// Whether any execute bit is set.
#[cfg(unix)]
pub(crate) fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

/// Whether any execute bit is set (never, where there are none).
#[cfg(not(unix))]
pub(crate) fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    false
}

/// Collects the files below a skill folder without following links.
#[derive(Default)]
struct Walk {
    files: Vec<BundledFile>,
    notes: Vec<Finding>,
    bytes: u64,
    too_large: bool,
}

impl Walk {
    fn visit(&mut self, dir: &Path, prefix: &str) -> Result<(), BundleError> {
        let read_error = |error: std::io::Error| BundleError::Read {
            path: dir.to_path_buf(),
            source: error,
        };
        let mut entries = std::fs::read_dir(dir)
            .map_err(read_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(read_error)?;
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            if self.too_large {
                return Ok(());
            }
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str() else {
                self.notes.push(Finding::error(
                    Rule::FilePath,
                    format!(
                        "{} has a name that is not valid UTF-8; installers cannot carry it.",
                        entry.path().display()
                    ),
                    "Rename the file with plain characters.",
                ));
                continue;
            };
            if name.starts_with('.') || (prefix.is_empty() && name == "SKILL.md") {
                continue;
            }
            let relative = format!("{prefix}{name}");
            // `DirEntry::file_type` does not follow symbolic links.
            let file_type = entry.file_type().map_err(read_error)?;
            if file_type.is_symlink() {
                self.notes.push(Finding::warning(
                    Rule::Symlink,
                    format!("{relative} is a symbolic link; it is not carried along."),
                    "Replace the link with a copy of the file if the skill needs it.",
                ));
            } else if file_type.is_dir() {
                self.visit(&entry.path(), &format!("{relative}/"))?;
            } else if file_type.is_file() {
                let path = entry.path();
                let metadata = entry.metadata().map_err(read_error)?;
                let size = metadata.len();
                // Checked before reading so a huge file is never loaded.
                if self.files.len() >= MAX_FILES || self.bytes + size > MAX_BYTES {
                    self.too_large = true;
                    return Ok(());
                }
                let contents = input::read_bytes(&path, input::BUNDLED_FILE)?;
                self.bytes += contents.len() as u64;
                self.files.push(BundledFile {
                    path: relative,
                    contents,
                    executable: is_executable(&metadata),
                });
            } else {
                self.notes.push(Finding::warning(
                    Rule::FilePath,
                    format!("{relative} is not a regular file; it is not carried along."),
                    "Remove it from the skill folder.",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILL: &str =
        "---\nname: my-skill\ndescription: Does it.\n---\n\nSee [guide](references/guide.md).\n";

    fn skill_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("my-skill");
        for sub in ["references", "scripts", "assets/img", ".git"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("SKILL.md"), SKILL).unwrap();
        std::fs::write(root.join("references/guide.md"), "guide").unwrap();
        std::fs::write(root.join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join("assets/img/logo.png"), [0u8, 159, 146, 150]).unwrap();
        std::fs::write(root.join("FORMS.md"), "forms").unwrap();
        std::fs::write(root.join(".git/config"), "hidden").unwrap();
        std::fs::write(root.join(".DS_Store"), "hidden").unwrap();
        dir
    }

    fn paths(bundle: &SkillBundle) -> Vec<&str> {
        bundle.files.iter().map(|file| file.path.as_str()).collect()
    }

    #[test]
    fn skill_md_carries_every_file_of_its_folder_except_hidden_ones() {
        let dir = skill_folder();
        let bundle = SkillBundle::load(&dir.path().join("my-skill/SKILL.md")).unwrap();
        assert_eq!(
            paths(&bundle),
            vec![
                "FORMS.md",
                "assets/img/logo.png",
                "references/guide.md",
                "scripts/run.sh"
            ]
        );
        assert_eq!(bundle.files[1].contents, vec![0u8, 159, 146, 150]);
        assert_eq!(bundle.folder_name().as_deref(), Some("my-skill"));
        assert_eq!(bundle.findings(), vec![]);
    }

    #[test]
    fn an_optimized_skill_brings_its_rewritten_reference_files_into_the_folder() {
        let dir = skill_folder();
        let bundle = SkillBundle::load(&dir.path().join("my-skill/SKILL.md")).unwrap();
        let files = std::collections::BTreeMap::from([
            (
                "references/guide.md".to_string(),
                "Rewritten.\n".to_string(),
            ),
            ("references/new.md".to_string(), "Added.\n".to_string()),
        ]);
        let best = bundle.skill.with_body("Better.").with_files(files);
        let carried = bundle.clone().carrying(best.clone());
        assert_eq!(carried.skill, best);
        assert_eq!(
            paths(&carried),
            vec![
                "FORMS.md",
                "assets/img/logo.png",
                "references/guide.md",
                "references/new.md",
                "scripts/run.sh"
            ]
        );
        let text = |path: &str| {
            let file = carried.files.iter().find(|f| f.path == path).unwrap();
            String::from_utf8(file.contents.clone()).unwrap()
        };
        assert_eq!(text("references/guide.md"), "Rewritten.\n");
        assert_eq!(
            carried.files[0], bundle.files[0],
            "the other files are untouched"
        );
    }

    #[cfg(unix)]
    #[test]
    fn executable_scripts_keep_their_mode_through_export() {
        use std::os::unix::fs::PermissionsExt;
        let dir = skill_folder();
        let script = dir.path().join("my-skill/scripts/run.sh");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bundle = SkillBundle::load(&dir.path().join("my-skill")).unwrap();
        let flags: Vec<(&str, bool)> = bundle
            .files
            .iter()
            .map(|file| (file.path.as_str(), file.executable))
            .collect();
        assert!(flags.contains(&("scripts/run.sh", true)));
        assert!(flags.contains(&("references/guide.md", false)));
        let out = tempfile::tempdir().unwrap();
        let exported = crate::export::export_bundle(&bundle, out.path(), false, false).unwrap();
        let mode = |path: &str| {
            std::fs::metadata(exported.skill_dir.join(path))
                .unwrap()
                .permissions()
                .mode()
                & 0o111
        };
        assert_ne!(mode("scripts/run.sh"), 0);
        assert_eq!(mode("references/guide.md"), 0);
    }

    #[test]
    fn folder_path_loads_its_skill_md() {
        let dir = skill_folder();
        let bundle = SkillBundle::load(&dir.path().join("my-skill")).unwrap();
        assert_eq!(bundle.skill.name, "my-skill");
        assert_eq!(bundle.files.len(), 4);
    }

    #[test]
    fn other_skill_file_names_are_loaded_alone() {
        let dir = skill_folder();
        let file = dir.path().join("my-skill/best_skill.md");
        std::fs::write(&file, SKILL).unwrap();
        let bundle = SkillBundle::load(&file).unwrap();
        assert_eq!(bundle.files, vec![]);
        assert_eq!(bundle.folder, None);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_skipped_with_a_warning_and_never_followed() {
        let dir = skill_folder();
        let root = dir.path().join("my-skill");
        std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("secret.txt"),
            root.join("references/leak.md"),
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        let bundle = SkillBundle::load(&root).unwrap();
        assert!(
            !paths(&bundle)
                .iter()
                .any(|path| path.contains("leak") || path.starts_with("up"))
        );
        let symlinks: Vec<&Finding> = bundle
            .notes
            .iter()
            .filter(|finding| finding.rule == Rule::Symlink)
            .collect();
        assert_eq!(symlinks.len(), 2);
        assert!(symlinks[0].message.contains("references/leak.md"));
    }

    #[test]
    fn missing_path_and_folder_without_skill_md_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let error = SkillBundle::load(&dir.path().join("nope")).expect_err("missing");
        assert!(error.to_string().contains("no such file or folder"));
        let error = SkillBundle::load(dir.path()).expect_err("no SKILL.md");
        assert!(error.to_string().contains("has no SKILL.md"));
    }

    #[test]
    fn folder_with_too_many_files_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SKILL.md"), SKILL).unwrap();
        for index in 0..=MAX_FILES {
            std::fs::write(dir.path().join(format!("f{index}")), "").unwrap();
        }
        let error = SkillBundle::load(dir.path()).expect_err("too large");
        assert!(matches!(error, BundleError::TooLarge { .. }));
        assert!(error.to_string().contains("folder of their own"));
    }
}
