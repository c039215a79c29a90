//! The temporary folder of one rollout: the files its placeholders point at and, in
//! `skill_mode: installed`, a fresh agent workspace holding the candidate as a real skill.
//!
//! Layout, under a new `skill-factory-XXXXXX` folder in the system temp dir:
//!
//! ```text
//! SKILL.md      the whole candidate skill ({skill_file}; prompt mode, written when used)
//! references/   the reference files the candidate carries, beside it
//! input.txt     the task input ({input_file}, written when used)
//! workspace/    installed mode only: the agent's working directory
//!   .claude/skills/<name>/SKILL.md   (claude_code)   or
//!   .agents/skills/<name>/SKILL.md   (codex, gemini_cli, subprocess)
//!   (and the candidate's references/ in that skill folder)
//! ```
//!
//! The input file lives outside the workspace so that the agent does not find it lying among
//! its project files. The folder and everything the agent left in it is removed when the
//! rollout ends.

use std::io;
use std::path::{Path, PathBuf};

use skill_factory_core::Skill;
use tempfile::TempDir;

/// Writes `skill`'s reference files under `folder`, none outside it
/// ([`skill_factory_io::path::below`]).
fn write_files(folder: &Path, skill: &Skill) -> io::Result<()> {
    for (path, text) in &skill.files {
        let target = skill_factory_io::path::below(folder, path)?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, text)?;
    }
    Ok(())
}

/// The longest skill folder name written.
const MAX_FOLDER_NAME: usize = 64;

/// Where an installed skill ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The agent's working directory.
    pub workspace: PathBuf,
    /// The skill's folder (`<workspace>/<skills dir>/<name>`).
    pub skill_dir: PathBuf,
    /// Its SKILL.md.
    pub skill_file: PathBuf,
}

/// The temporary folder of one rollout, removed when dropped or [`RolloutDir::remove`]d.
#[derive(Debug)]
pub struct RolloutDir {
    dir: TempDir,
}

impl RolloutDir {
    /// Creates a fresh, empty folder.
    pub fn create() -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("skill-factory-")
            .tempdir()?;
        Ok(RolloutDir { dir })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the whole skill to `SKILL.md`, with its reference files beside it, and returns
    /// the SKILL.md's path.
    pub fn write_skill(&self, skill: &Skill) -> io::Result<PathBuf> {
        let path = self.path().join("SKILL.md");
        std::fs::write(&path, skill.to_markdown())?;
        write_files(self.path(), skill)?;
        Ok(path)
    }

    /// Writes the task input to `input.txt` and returns its path.
    pub fn write_input(&self, input: &str) -> io::Result<PathBuf> {
        let path = self.path().join("input.txt");
        std::fs::write(&path, input)?;
        Ok(path)
    }

    /// Creates `workspace/<skills_dir>/<name>/SKILL.md` holding the whole skill. The folder
    /// is the name's slug, and the frontmatter `name` is set to the same slug: the Agent Skills
    /// spec requires them to be equal, and an agent may skip a skill whose name is not its
    /// folder's (export does the same).
    pub fn install_skill(&self, skill: &Skill, skills_dir: &str) -> io::Result<Installed> {
        let workspace = self.path().join("workspace");
        let folder = skill_folder_name(&skill.name);
        let skill_dir = workspace.join(skills_dir).join(&folder);
        std::fs::create_dir_all(&skill_dir)?;
        let skill_file = skill_dir.join("SKILL.md");
        let mut installed = skill.clone();
        installed.name = folder;
        std::fs::write(&skill_file, installed.to_markdown())?;
        write_files(&skill_dir, skill)?;
        Ok(Installed {
            workspace,
            skill_dir,
            skill_file,
        })
    }

    /// Removes the folder now, logging (not failing) when something cannot be removed.
    pub fn remove(self) {
        let shown = self.path().display().to_string();
        if let Err(error) = self.dir.close() {
            tracing::warn!(folder = %shown, %error, "could not remove a rollout's temporary folder");
        }
    }
}

/// A folder name for a skill: the slug export gives it ([`skill_factory_package::spec::slugify`]: `My Skill!`
/// → `my-skill`), cut to 64 characters, `skill` when nothing is left. Agents expect skill
/// folders in this form, and a name must not reach outside its folder.
pub fn skill_folder_name(name: &str) -> String {
    let Ok(mut folder) = skill_factory_package::spec::slugify(name) else {
        return "skill".to_string();
    };
    // A slug is ASCII, so cutting it by bytes keeps whole characters.
    folder.truncate(MAX_FOLDER_NAME);
    folder.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill() -> Skill {
        Skill::parse("---\nname: My Skill!\ndescription: d\n---\nDo it.\n").unwrap()
    }

    #[test]
    fn folder_names_are_lower_case_words_joined_by_hyphens() {
        assert_eq!(skill_folder_name("My Skill!"), "my-skill");
        assert_eq!(skill_folder_name("../../etc"), "etc");
        assert_eq!(skill_folder_name("pdf_tools v2"), "pdf-tools-v2");
        assert_eq!(skill_folder_name("日本語"), "skill");
        assert_eq!(skill_folder_name(&"a".repeat(100)).len(), 64);
    }

    #[test]
    fn installing_writes_the_whole_skill_under_the_agents_skill_folder_named_as_it() {
        let dir = RolloutDir::create().unwrap();
        let installed = dir.install_skill(&skill(), ".claude/skills").unwrap();
        assert_eq!(installed.workspace, dir.path().join("workspace"));
        assert_eq!(
            installed.skill_file,
            dir.path()
                .join("workspace/.claude/skills/my-skill/SKILL.md")
        );
        let text = std::fs::read_to_string(&installed.skill_file).unwrap();
        assert_eq!(text, "---\nname: my-skill\ndescription: d\n---\n\nDo it.\n");
    }

    #[test]
    fn the_reference_files_go_beside_the_skill_file_and_never_outside_the_folder() {
        let with_guide = skill().with_files(std::collections::BTreeMap::from([(
            "references/guide.md".to_owned(),
            "Guide.\n".to_owned(),
        )]));
        let dir = RolloutDir::create().unwrap();
        let file = dir.write_skill(&with_guide).unwrap();
        let guide = file.parent().unwrap().join("references/guide.md");
        assert_eq!(std::fs::read_to_string(guide).unwrap(), "Guide.\n");
        let installed = dir.install_skill(&with_guide, ".agents/skills").unwrap();
        let guide = installed.skill_dir.join("references/guide.md");
        assert_eq!(std::fs::read_to_string(guide).unwrap(), "Guide.\n");
        for path in ["../escape.md", "/tmp/escape.md", ""] {
            let bad = skill().with_files(std::collections::BTreeMap::from([(
                path.to_owned(),
                "x".to_owned(),
            )]));
            let error = dir.write_skill(&bad).unwrap_err();
            assert!(error.to_string().contains("must stay inside"), "{error}");
        }
    }

    #[test]
    fn the_folder_and_everything_in_it_is_removed() {
        let dir = RolloutDir::create().unwrap();
        let path = dir.path().to_path_buf();
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("skill-factory-")
        );
        dir.write_skill(&skill()).unwrap();
        dir.install_skill(&skill(), ".agents/skills").unwrap();
        dir.remove();
        assert!(!path.exists());
    }
}
