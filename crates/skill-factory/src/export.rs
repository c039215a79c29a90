//! Export a skill in the Agent Skills layout that `npx skills` installs from (reference spec
//! §3.4, §8.4): `<out>/<name>/SKILL.md`, or `<out>/skills/<name>/SKILL.md` for a collection,
//! with the files of the source skill folder carried along (see [`crate::bundle`]).
//!
//! Unlike the reference, the folder name and the frontmatter `name` always agree: a name that
//! breaks the Agent Skills name rules is replaced by its slug in both places, with a
//! [`Rule::NameSlugged`] warning, because installers and agents look a skill up by folder and
//! match it by name. A skill that still breaks the spec is refused and nothing is written.
//!
//! The folder is written atomically: readers see the previous export or the new one, and no
//! stale file of a previous export survives.

use std::path::{Path, PathBuf};

use skill_factory_core::Skill;

use crate::bundle::{BundledFile, SkillBundle};
use crate::skill_spec::{self, Finding, Rule};
use crate::staged_dir;

/// A name that has no ASCII letter or digit to make a slug of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the skill name {name:?} has no letters a-z or digits to make a folder name from. Give the \
     skill a name such as `name: my-skill`."
)]
pub struct SlugError {
    /// The name as written.
    pub name: String,
}

/// Why a skill could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The skill breaks the Agent Skills spec; nothing was written.
    #[error(
        "the skill {name:?} is not a valid Agent Skill, so nothing was written:\n{}",
        list(findings)
    )]
    Invalid {
        /// The skill's name as written.
        name: String,
        /// Every error (and warning) found.
        findings: Vec<Finding>,
    },
    /// The destination exists and is not a skill folder, so replacing it could destroy work.
    #[error(
        "{} exists and is not a skill folder (no SKILL.md); nothing was written. Remove it or \
         export to another folder with -o.",
        path.display()
    )]
    Occupied {
        /// The destination folder.
        path: PathBuf,
    },
    /// The destination is the source skill folder itself.
    #[error(
        "{} is the skill folder being exported; exporting onto it would replace it (and drop its \
         hidden files). Export to another folder with -o.",
        path.display()
    )]
    OntoSource {
        /// The folder.
        path: PathBuf,
    },
    /// Writing the exported files failed.
    #[error("cannot write {}: {detail}", path.display())]
    Write {
        /// The file or folder being written.
        path: PathBuf,
        /// What the operating system said.
        detail: String,
    },
}

fn list(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|finding| format!("  {finding}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl From<staged_dir::WriteFailure> for ExportError {
    fn from(failure: staged_dir::WriteFailure) -> Self {
        ExportError::Write {
            path: failure.path,
            detail: failure.detail,
        }
    }
}

/// The reference's slug (§3.4): trim, lowercase, each run of characters outside `[a-z0-9]`
/// becomes one `-`, leading and trailing `-` removed; non-ASCII letters are dropped
/// (`Café` → `caf`). A valid Agent Skills name is its own slug.
pub fn slugify(name: &str) -> Result<String, SlugError> {
    let mut slug = String::new();
    let mut pending_hyphen = false;
    for c in name.trim().to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_hyphen && !slug.is_empty() {
                slug.push('-');
            }
            pending_hyphen = false;
            slug.push(c);
        } else {
            pending_hyphen = true;
        }
    }
    if slug.is_empty() {
        return Err(SlugError {
            name: name.to_owned(),
        });
    }
    Ok(slug)
}

/// A skill as it will be written: the folder name (equal to the frontmatter name) and every
/// file, `SKILL.md` first. Built by [`SkillLayout::from_bundle`], which validates.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillLayout {
    /// The folder name and frontmatter `name`.
    pub name: String,
    /// `SKILL.md` then the carried files, paths relative to the skill folder.
    pub files: Vec<BundledFile>,
    /// Warnings to show (including [`Rule::NameSlugged`] when the name was replaced).
    pub warnings: Vec<Finding>,
}

impl SkillLayout {
    /// Slugs an invalid name, validates the result against the Agent Skills spec and renders
    /// the files. Any error finding refuses the skill with [`ExportError::Invalid`].
    pub fn from_bundle(bundle: &SkillBundle) -> Result<Self, ExportError> {
        let original = &bundle.skill.name;
        let mut skill = bundle.skill.clone();
        let mut renamed = None;
        if !skill_spec::validate_name(original).is_empty() {
            match slugify(original) {
                Ok(slug) => {
                    renamed = Some(Finding::warning(
                        Rule::NameSlugged,
                        format!(
                            "The name {original:?} is not a valid Agent Skills name; exported as \
                             {slug:?} (folder and frontmatter)."
                        ),
                        format!("Write `name: {slug}` in the source skill to silence this."),
                    ));
                    skill.name = slug;
                }
                Err(error) => {
                    return Err(ExportError::Invalid {
                        name: original.clone(),
                        findings: vec![Finding::error(
                            Rule::NameCharacters,
                            error.to_string(),
                            "Write a name of lowercase words joined by hyphens, e.g. \
                             `name: my-skill`.",
                        )],
                    });
                }
            }
        }
        let prepared = SkillBundle {
            skill,
            ..bundle.clone()
        };
        let mut findings = prepared.findings();
        if skill_spec::has_errors(&findings) {
            findings.extend(renamed);
            return Err(ExportError::Invalid {
                name: original.clone(),
                findings,
            });
        }
        let mut warnings: Vec<Finding> = renamed.into_iter().collect();
        warnings.append(&mut findings);
        let mut files = vec![BundledFile {
            path: "SKILL.md".to_owned(),
            contents: prepared.skill.to_markdown().into_bytes(),
            executable: false,
        }];
        files.extend(prepared.files);
        Ok(SkillLayout {
            name: prepared.skill.name,
            files,
            warnings,
        })
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The skill folder, `<out>/<name>` or `<out>/skills/<name>`.
    pub skill_dir: PathBuf,
    /// `<skill_dir>/SKILL.md`.
    pub skill_md: PathBuf,
    /// The folder name and frontmatter `name`.
    pub name: String,
    /// How many files were written, `SKILL.md` included.
    pub files: usize,
    /// Warnings to show the user (a slugged name, size guidance, skipped links).
    pub warnings: Vec<Finding>,
}

/// Exports a skill and the files it carries into `out_dir` (`<out_dir>/<name>/`, or
/// `<out_dir>/skills/<name>/` when `collection`), replacing a previous export of it.
///
/// To export an optimized skill with the seed folder's files, load the seed and swap the
/// skill: `let mut bundle = SkillBundle::load(seed)?; bundle.skill = best; export_bundle(..)`.
pub fn export_bundle(
    bundle: &SkillBundle,
    out_dir: &Path,
    collection: bool,
) -> Result<Exported, ExportError> {
    let mut layout = SkillLayout::from_bundle(bundle)?;
    let parent = if collection {
        out_dir.join("skills")
    } else {
        out_dir.to_path_buf()
    };
    let skill_dir = parent.join(&layout.name);
    if !is_replaceable(&skill_dir) {
        return Err(ExportError::Occupied { path: skill_dir });
    }
    if let Some(inside) = location_in_source(bundle, &skill_dir) {
        if inside.is_empty() {
            return Err(ExportError::OntoSource { path: skill_dir });
        }
        // A previous export inside the source folder is not part of the skill.
        let nested = format!("{inside}/");
        layout
            .files
            .retain(|file| file.path == "SKILL.md" || !file.path.starts_with(&nested));
    }
    staged_dir::write(&skill_dir, &layout.files)?;
    Ok(Exported {
        skill_md: skill_dir.join("SKILL.md"),
        skill_dir,
        name: layout.name,
        files: layout.files.len(),
        warnings: layout.warnings,
    })
}

/// Exports a skill without bundled files and returns the path of the `SKILL.md` written.
/// Warnings (such as a slugged name) are logged with `tracing::warn!`; use [`export_bundle`]
/// to get them as values.
pub fn export_skill(
    skill: &Skill,
    out_dir: &Path,
    collection: bool,
) -> Result<PathBuf, ExportError> {
    let exported = export_bundle(&SkillBundle::from_skill(skill.clone()), out_dir, collection)?;
    for warning in &exported.warnings {
        tracing::warn!("{warning}");
    }
    Ok(exported.skill_md)
}

/// Where `skill_dir` lies inside the bundle's source folder, `/`-separated (`""` for the
/// folder itself); `None` when it is outside or does not exist yet.
fn location_in_source(bundle: &SkillBundle, skill_dir: &Path) -> Option<String> {
    let source = bundle.folder.as_ref()?.canonicalize().ok()?;
    let target = skill_dir.canonicalize().ok()?;
    let relative = target.strip_prefix(&source).ok()?;
    let parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

/// Whether export may replace what is at `dir`: nothing, an empty folder, or a skill folder.
fn is_replaceable(dir: &Path) -> bool {
    let Ok(metadata) = std::fs::symlink_metadata(dir) else {
        return true;
    };
    if !metadata.is_dir() {
        return false;
    }
    dir.join("SKILL.md").is_file()
        || std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// The four lines printed after an export (§8.4), without a trailing newline.
pub fn install_hint(skill_dir: &Path) -> String {
    format!(
        "Emitted skill → {}\nInstall into an agent with:\n  npx skills add {}\nor copy the folder \
         into ~/.claude/skills, ~/.codex/skills, etc.",
        skill_dir.join("SKILL.md").display(),
        skill_dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(name: &str, description: &str) -> SkillBundle {
        SkillBundle::from_skill(Skill::new(name, description, "# Steps\n\nDo it."))
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    #[test]
    fn slug_follows_the_reference_rules() {
        assert_eq!(slugify("My Skill!").as_deref(), Ok("my-skill"));
        assert_eq!(slugify("Hello World 2!").as_deref(), Ok("hello-world-2"));
        assert_eq!(slugify("  a__b--c  ").as_deref(), Ok("a-b-c"));
        assert_eq!(slugify("Café").as_deref(), Ok("caf"));
        assert_eq!(slugify("my-skill").as_deref(), Ok("my-skill"));
    }

    #[test]
    fn slug_of_a_name_without_letters_or_digits_is_an_error() {
        let error = slugify("!!!").expect_err("no slug");
        assert_eq!(error.name, "!!!");
        assert!(error.to_string().contains("name: my-skill"));
    }

    #[test]
    fn export_writes_name_folder_with_skill_md() {
        let out = tempfile::tempdir().unwrap();
        let exported = export_bundle(&bundle("my-skill", "Does it."), out.path(), false).unwrap();
        assert_eq!(exported.skill_dir, out.path().join("my-skill"));
        assert_eq!(exported.skill_md, out.path().join("my-skill/SKILL.md"));
        assert_eq!(exported.warnings, vec![]);
        assert_eq!(
            read(&exported.skill_md),
            "---\nname: my-skill\ndescription: Does it.\n---\n\n# Steps\n\nDo it.\n"
        );
    }

    #[test]
    fn collection_export_goes_under_skills() {
        let out = tempfile::tempdir().unwrap();
        let path = export_skill(&Skill::new("my-skill", "d", "b"), out.path(), true).unwrap();
        assert_eq!(path, out.path().join("skills/my-skill/SKILL.md"));
        assert!(path.is_file());
    }

    #[test]
    fn invalid_name_is_exported_as_its_slug_in_folder_and_frontmatter_with_a_warning() {
        let out = tempfile::tempdir().unwrap();
        let exported = export_bundle(&bundle("My Skill!", "Does it."), out.path(), false).unwrap();
        assert_eq!(exported.name, "my-skill");
        assert!(read(&exported.skill_md).starts_with("---\nname: my-skill\n"));
        assert_eq!(exported.warnings.len(), 1);
        assert_eq!(exported.warnings[0].rule, Rule::NameSlugged);
        assert!(exported.warnings[0].message.contains("\"My Skill!\""));
        assert!(exported.warnings[0].message.contains("\"my-skill\""));
    }

    #[test]
    fn export_without_description_is_refused_and_writes_nothing() {
        let out = tempfile::tempdir().unwrap();
        let error = export_bundle(&bundle("my-skill", ""), out.path(), false).expect_err("refused");
        let message = error.to_string();
        assert!(message.contains("nothing was written"), "{message}");
        assert!(
            message.contains("error [description-required]"),
            "{message}"
        );
        assert!(message.contains("Fix: Add `description:"), "{message}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    }

    #[test]
    fn export_of_a_name_without_letters_is_refused() {
        let out = tempfile::tempdir().unwrap();
        let error = export_bundle(&bundle("!!!", "d"), out.path(), false).expect_err("refused");
        assert!(
            error.to_string().contains("no letters a-z or digits"),
            "{error}"
        );
    }

    #[test]
    fn export_of_a_name_too_long_even_as_slug_is_refused() {
        let out = tempfile::tempdir().unwrap();
        let name = format!("Long {}", "x".repeat(70));
        let error = export_bundle(&bundle(&name, "d"), out.path(), false).expect_err("refused");
        let message = error.to_string();
        assert!(message.contains("error [name-length]"), "{message}");
        assert!(message.contains("warning [name-slugged]"), "{message}");
    }

    #[test]
    fn bundled_file_escaping_the_skill_folder_is_refused() {
        let out = tempfile::tempdir().unwrap();
        let mut bundle = bundle("my-skill", "d");
        bundle.files.push(BundledFile {
            path: "../escape.txt".into(),
            contents: b"x".to_vec(),
            executable: false,
        });
        let error = export_bundle(&bundle, &out.path().join("dist"), false).expect_err("refused");
        assert!(error.to_string().contains("error [file-path]"), "{error}");
        assert!(error.to_string().contains("'..'"), "{error}");
        assert!(!out.path().join("escape.txt").exists());
        assert!(!out.path().join("dist").exists());
    }

    #[test]
    fn re_export_replaces_the_folder_without_stale_files() {
        let out = tempfile::tempdir().unwrap();
        let mut first = bundle("my-skill", "d");
        first.files.push(BundledFile {
            path: "references/old.md".into(),
            contents: b"old".to_vec(),
            executable: false,
        });
        export_bundle(&first, out.path(), false).unwrap();
        let exported = export_bundle(&bundle("my-skill", "new"), out.path(), false).unwrap();
        assert!(!exported.skill_dir.join("references").exists());
        assert!(read(&exported.skill_md).contains("description: new"));
        let leftovers: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec!["my-skill"]);
    }

    #[test]
    fn export_refuses_to_replace_a_folder_that_is_not_a_skill() {
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(out.path().join("my-skill")).unwrap();
        std::fs::write(out.path().join("my-skill/notes.txt"), "mine").unwrap();
        let error =
            export_bundle(&bundle("my-skill", "d"), out.path(), false).expect_err("refused");
        assert!(matches!(error, ExportError::Occupied { .. }));
        assert_eq!(read(&out.path().join("my-skill/notes.txt")), "mine");
    }

    fn source_folder(root: &Path) -> PathBuf {
        let folder = root.join("my-skill");
        std::fs::create_dir_all(folder.join("references")).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            "---\nname: my-skill\ndescription: d\n---\n\nBody.\n",
        )
        .unwrap();
        std::fs::write(folder.join("references/a.md"), "a").unwrap();
        std::fs::create_dir(folder.join(".git")).unwrap();
        folder
    }

    #[test]
    fn export_onto_the_source_folder_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let folder = source_folder(root.path());
        let bundle = SkillBundle::load(&folder).unwrap();
        let error = export_bundle(&bundle, root.path(), false).expect_err("onto itself");
        assert!(matches!(error, ExportError::OntoSource { .. }), "{error}");
        assert!(folder.join(".git").is_dir());
    }

    #[test]
    fn re_export_into_the_source_folder_does_not_carry_the_previous_export() {
        let root = tempfile::tempdir().unwrap();
        let folder = source_folder(root.path());
        let out = folder.join("dist");
        export_bundle(&SkillBundle::load(&folder).unwrap(), &out, false).unwrap();
        let exported = export_bundle(&SkillBundle::load(&folder).unwrap(), &out, false).unwrap();
        assert_eq!(exported.files, 2);
        assert!(!exported.skill_dir.join("dist").exists());
    }

    #[test]
    fn install_hint_has_the_four_reference_lines() {
        let hint = install_hint(Path::new("out/my-skill"));
        assert_eq!(
            hint,
            "Emitted skill → out/my-skill/SKILL.md\nInstall into an agent with:\n  npx skills add \
             out/my-skill\nor copy the folder into ~/.claude/skills, ~/.codex/skills, etc."
        );
    }
}
