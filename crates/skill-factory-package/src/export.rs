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
use crate::spec::{self, Finding, Rule, slugify};
use crate::staged_dir::{self, holds_exactly};

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
    /// The folder to export into is a file.
    #[error(
        "{} is a file, not a folder to export into; nothing was written. Pass a folder with -o \
         (it is created when missing).",
        path.display()
    )]
    NotAFolder {
        /// The path given.
        path: PathBuf,
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
    /// The destination holds a different skill (other files, or the same ones with other
    /// contents), which replacing would lose.
    #[error(
        "{} holds a different skill of the same name{}; nothing was written. Pass --force to \
         replace it, or export to another folder with -o.",
        path.display(),
        lost_text(lost)
    )]
    Different {
        /// The destination folder.
        path: PathBuf,
        /// Its files that the export would delete.
        lost: Vec<String>,
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
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or folder being written.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
}

fn lost_text(lost: &[String]) -> String {
    if lost.is_empty() {
        String::new()
    } else {
        format!(" (replacing it would delete {})", lost.join(", "))
    }
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
            source: failure.source,
        }
    }
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
        if !spec::validate_name(original).is_empty() {
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
        let moved = move_foreign_keys(&mut skill);
        let prepared = SkillBundle {
            skill,
            ..bundle.clone()
        };
        let mut findings = prepared.findings();
        if spec::has_errors(&findings) {
            findings.extend(renamed);
            findings.extend(moved);
            return Err(ExportError::Invalid {
                name: original.clone(),
                findings,
            });
        }
        let mut warnings: Vec<Finding> = renamed.into_iter().chain(moved).collect();
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

/// Moves the frontmatter keys of the skill's own that the spec does not define (`version`,
/// `author`, `tags`: see [`spec::is_foreign_key`]) under `metadata:` as text, as the spec
/// advises, and says which. A misspelled known key is left to fail validation, and so is a
/// key `metadata` already holds or a `metadata` that is not a mapping.
fn move_foreign_keys(skill: &mut Skill) -> Option<Finding> {
    let mut metadata = match skill.extra.get("metadata") {
        None => serde_json::Map::new(),
        Some(serde_json::Value::Object(map)) => map.clone(),
        Some(_) => return None,
    };
    let foreign: Vec<String> = skill
        .extra
        .keys()
        .filter(|key| spec::is_foreign_key(key) && !metadata.contains_key(key.as_str()))
        .cloned()
        .collect();
    if foreign.is_empty() {
        return None;
    }
    for key in &foreign {
        if let Some(value) = skill.extra.shift_remove(key) {
            metadata.insert(key.clone(), serde_json::Value::String(as_text(&value)));
        }
    }
    skill
        .extra
        .insert("metadata".to_owned(), serde_json::Value::Object(metadata));
    let keys = foreign.join(", ");
    Some(Finding::warning(
        Rule::MovedToMetadata,
        format!(
            "{keys} {} not Agent Skills frontmatter {}; exported under `metadata:` as text.",
            if foreign.len() == 1 { "is" } else { "are" },
            if foreign.len() == 1 { "key" } else { "keys" }
        ),
        "Move them under `metadata:` in the source skill to silence this.",
    ))
}

/// A frontmatter value as the text `metadata` holds: a list of plain values joined by commas
/// (`tags: [pdf, forms]` → `pdf, forms`), anything else as it reads.
fn as_text(value: &serde_json::Value) -> String {
    use serde_json::Value;
    let plain = |value: &Value| match value {
        Value::String(text) => Some(text.clone()),
        Value::Null => Some(String::new()),
        Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
        Value::Array(_) | Value::Object(_) => None,
    };
    match value {
        Value::Array(items) => items
            .iter()
            .map(plain)
            .collect::<Option<Vec<String>>>()
            .map_or_else(|| value.to_string(), |texts| texts.join(", ")),
        other => plain(other).unwrap_or_else(|| other.to_string()),
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
/// `<out_dir>/skills/<name>/` when `collection`). A folder there that holds a different skill
/// (other files, or other contents) is replaced only with `force`, as `install` does;
/// writing the same files again changes nothing.
///
/// To export an optimized skill with the seed folder's files, load the seed and swap the
/// skill: `let mut bundle = SkillBundle::load(seed)?; bundle.skill = best; export_bundle(..)`.
pub fn export_bundle(
    bundle: &SkillBundle,
    out_dir: &Path,
    collection: bool,
    force: bool,
) -> Result<Exported, ExportError> {
    let (mut layout, skill_dir) = destination(bundle, out_dir, collection)?;
    if let Some(inside) = location_in_source(bundle, &skill_dir) {
        // A previous export inside the source folder is not part of the skill.
        let nested = format!("{inside}/");
        layout
            .files
            .retain(|file| file.path == "SKILL.md" || !file.path.starts_with(&nested));
    }
    if !force && holds_a_skill(&skill_dir) && !holds_exactly(&skill_dir, &layout.files) {
        let lost = staged_dir::files_in(&skill_dir, usize::MAX)
            .unwrap_or_default()
            .into_iter()
            .filter(|path| !layout.files.iter().any(|file| file.path == *path))
            .collect();
        return Err(ExportError::Different {
            path: skill_dir,
            lost,
        });
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

/// Where a skill named `name` is exported into `out_dir`.
pub fn skill_dir(out_dir: &Path, collection: bool, name: &str) -> PathBuf {
    if collection {
        out_dir.join("skills").join(name)
    } else {
        out_dir.join(name)
    }
}

/// Refuses, before anything is run, an export into `out_dir` that [`export_bundle`] would
/// refuse whatever the exported skill: a destination that is not a folder (a file), one that
/// is not a skill folder, the source skill's own folder, or one that already holds a skill,
/// unless `force`. `optimize --emit` calls it so that a paid run never ends on an export that
/// cannot happen.
pub fn check_destination(
    bundle: &SkillBundle,
    out_dir: &Path,
    collection: bool,
    force: bool,
) -> Result<PathBuf, ExportError> {
    let (_, dir) = destination(bundle, out_dir, collection)?;
    if !force && holds_a_skill(&dir) {
        return Err(ExportError::Different {
            path: dir,
            lost: Vec::new(),
        });
    }
    Ok(dir)
}

/// The skill as it will be written and its folder in `out_dir`, refused when `out_dir` is a
/// file, when the folder is something other than a skill folder, or when it is the source
/// skill's own folder: what [`export_bundle`] and [`check_destination`] both refuse.
fn destination(
    bundle: &SkillBundle,
    out_dir: &Path,
    collection: bool,
) -> Result<(SkillLayout, PathBuf), ExportError> {
    refuse_a_file(out_dir)?;
    let layout = SkillLayout::from_bundle(bundle)?;
    let dir = skill_dir(out_dir, collection, &layout.name);
    if !is_replaceable(&dir) {
        return Err(ExportError::Occupied { path: dir });
    }
    if location_in_source(bundle, &dir).is_some_and(|inside| inside.is_empty()) {
        return Err(ExportError::OntoSource { path: dir });
    }
    Ok((layout, dir))
}

/// [`ExportError::NotAFolder`] when the folder to export into is a file.
fn refuse_a_file(out_dir: &Path) -> Result<(), ExportError> {
    if std::fs::symlink_metadata(out_dir).is_ok_and(|metadata| !metadata.is_dir()) {
        return Err(ExportError::NotAFolder {
            path: out_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// Whether `dir` is a folder holding a `SKILL.md`.
fn holds_a_skill(dir: &Path) -> bool {
    dir.join("SKILL.md").is_file()
}

/// Exports a skill without bundled files and returns the path of the `SKILL.md` written.
/// Warnings (such as a slugged name) are logged with `tracing::warn!`; use [`export_bundle`]
/// to get them as values.
pub fn export_skill(
    skill: &Skill,
    out_dir: &Path,
    collection: bool,
) -> Result<PathBuf, ExportError> {
    let exported = export_bundle(
        &SkillBundle::from_skill(skill.clone()),
        out_dir,
        collection,
        false,
    )?;
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
    fn export_writes_name_folder_with_skill_md() {
        let out = tempfile::tempdir().unwrap();
        let exported =
            export_bundle(&bundle("my-skill", "Does it."), out.path(), false, false).unwrap();
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
        let exported =
            export_bundle(&bundle("My Skill!", "Does it."), out.path(), false, false).unwrap();
        assert_eq!(exported.name, "my-skill");
        assert!(read(&exported.skill_md).starts_with("---\nname: my-skill\n"));
        assert_eq!(exported.warnings.len(), 1);
        assert_eq!(exported.warnings[0].rule, Rule::NameSlugged);
        assert!(exported.warnings[0].message.contains("\"My Skill!\""));
        assert!(exported.warnings[0].message.contains("\"my-skill\""));
    }

    #[test]
    fn keys_outside_the_spec_move_under_metadata_as_text_with_a_warning() {
        let out = tempfile::tempdir().unwrap();
        let source = "---\nname: my-skill\ndescription: Does it.\nversion: 1.0\n\
                      tags: [pdf, forms]\nmetadata:\n  team: docs\nlicense: MIT\n---\nDo it.\n";
        let skill = Skill::parse(source).unwrap();
        let exported =
            export_bundle(&SkillBundle::from_skill(skill), out.path(), false, false).unwrap();
        let rules: Vec<Rule> = exported.warnings.iter().map(|w| w.rule).collect();
        assert_eq!(rules, vec![Rule::MovedToMetadata]);
        assert!(
            exported.warnings[0]
                .message
                .starts_with("version, tags are not Agent Skills frontmatter keys"),
            "{}",
            exported.warnings[0].message
        );
        let written = read(&exported.skill_md);
        assert_eq!(
            written,
            "---\nname: my-skill\ndescription: Does it.\nmetadata:\n  team: docs\n  version: '1.0'\n  \
             tags: pdf, forms\nlicense: MIT\n---\n\nDo it.\n"
        );
        // What was written is a valid skill, with the values kept as text.
        let reread = Skill::parse(&written).unwrap();
        assert!(spec::validate_skill(&reread).is_empty());
    }

    #[test]
    fn a_misspelled_key_or_one_metadata_already_has_is_still_refused() {
        let out = tempfile::tempdir().unwrap();
        for (extra, key) in [
            ("allowed_tools: Read\n", "allowed_tools"),
            ("author: me\nmetadata:\n  author: you\n", "author"),
        ] {
            let source =
                format!("---\nname: my-skill\ndescription: Does it.\n{extra}---\nDo it.\n");
            let skill = Skill::parse(&source).unwrap();
            let error = export_bundle(&SkillBundle::from_skill(skill), out.path(), false, false)
                .expect_err("refused");
            let ExportError::Invalid { findings, .. } = error else {
                panic!("{error}");
            };
            assert!(
                findings
                    .iter()
                    .any(|f| f.rule == Rule::UnknownKey && f.message.contains(key)),
                "{findings:?}"
            );
        }
        assert!(!out.path().join("my-skill").exists());
    }

    #[test]
    fn export_without_description_is_refused_and_writes_nothing() {
        let out = tempfile::tempdir().unwrap();
        let error =
            export_bundle(&bundle("my-skill", ""), out.path(), false, false).expect_err("refused");
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
        let error =
            export_bundle(&bundle("!!!", "d"), out.path(), false, false).expect_err("refused");
        assert!(
            error.to_string().contains("no letters a-z or digits"),
            "{error}"
        );
    }

    #[test]
    fn export_of_a_name_too_long_even_as_slug_is_refused() {
        let out = tempfile::tempdir().unwrap();
        let name = format!("Long {}", "x".repeat(70));
        let error =
            export_bundle(&bundle(&name, "d"), out.path(), false, false).expect_err("refused");
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
        let error =
            export_bundle(&bundle, &out.path().join("dist"), false, false).expect_err("refused");
        assert!(error.to_string().contains("error [file-path]"), "{error}");
        assert!(error.to_string().contains("'..'"), "{error}");
        assert!(!out.path().join("escape.txt").exists());
        assert!(!out.path().join("dist").exists());
    }

    #[test]
    fn re_export_of_a_different_skill_needs_force_and_then_leaves_no_stale_files() {
        let out = tempfile::tempdir().unwrap();
        let mut first = bundle("my-skill", "d");
        first.files.push(BundledFile {
            path: "references/old.md".into(),
            contents: b"old".to_vec(),
            executable: false,
        });
        export_bundle(&first, out.path(), false, false).unwrap();
        let refused = export_bundle(&bundle("my-skill", "new"), out.path(), false, false)
            .expect_err("a different skill is not replaced silently");
        assert!(
            matches!(&refused, ExportError::Different { lost, .. } if lost == &["references/old.md"]),
            "{refused}"
        );
        assert!(refused.to_string().contains("--force"), "{refused}");
        assert!(out.path().join("my-skill/references/old.md").is_file());
        let exported = export_bundle(&bundle("my-skill", "new"), out.path(), false, true).unwrap();
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
            export_bundle(&bundle("my-skill", "d"), out.path(), false, false).expect_err("refused");
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
        let error = export_bundle(&bundle, root.path(), false, false).expect_err("onto itself");
        assert!(matches!(error, ExportError::OntoSource { .. }), "{error}");
        assert!(folder.join(".git").is_dir());
        // `optimize --emit` is told before its run, even with --force.
        let error = check_destination(&bundle, root.path(), false, true).expect_err("checked");
        assert!(matches!(error, ExportError::OntoSource { .. }), "{error}");
    }

    #[test]
    fn re_export_into_the_source_folder_does_not_carry_the_previous_export() {
        let root = tempfile::tempdir().unwrap();
        let folder = source_folder(root.path());
        let out = folder.join("dist");
        export_bundle(&SkillBundle::load(&folder).unwrap(), &out, false, false).unwrap();
        let exported =
            export_bundle(&SkillBundle::load(&folder).unwrap(), &out, false, false).unwrap();
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
