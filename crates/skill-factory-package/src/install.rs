//! Install an exported skill into the folders agents read skills from, for a project
//! (`<project>/<agent dir>/skills/<name>/`) or for the user (`~/<agent dir>/skills/<name>/`).
//!
//! The table of agents and paths is the Agent Skills installer table (`npx skills`, see
//! docs/agent-skills.md for where it differs from `skills@1.5.26`). Several agents share
//! `.agents/skills/` in a project; such a folder is written once.
//!
//! Installing never silently replaces a different skill: an existing folder with the same
//! files is reported as already installed, one with different files is a conflict unless
//! `force` is set, and on any conflict nothing is written at all.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::bundle::{BundledFile, SkillBundle};
use crate::export::{ExportError, SkillLayout};
use crate::spec::Finding;
use crate::staged_dir::{self, holds_exactly};

/// Where an agent's user-wide skills folder lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalBase {
    /// Under the home folder: `~/<path>`.
    Home(&'static str),
    /// Under the XDG config folder: `$XDG_CONFIG_HOME/<path>`, by default `~/.config/<path>`.
    Config(&'static str),
    /// Under a folder an environment variable may move: `$<var>/<path>`, by default
    /// `~/<default>/<path>` (Claude Code's `CLAUDE_CONFIG_DIR`, Codex's `CODEX_HOME`).
    Env {
        /// The variable.
        var: &'static str,
        /// The folder under `~` when the variable is unset.
        default: &'static str,
        /// The skills folder below it.
        path: &'static str,
    },
}

/// An agent that loads skills, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// The id used on the command line (as `npx skills -a` spells it).
    pub id: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// The product name.
    pub name: &'static str,
    /// The skills folder relative to a project root.
    pub project_dir: &'static str,
    /// The user-wide skills folder.
    pub global_dir: GlobalBase,
}

/// Every agent `install` knows, from the Agent Skills installer table.
pub const AGENTS: &[Agent] = &[
    Agent {
        id: "claude-code",
        aliases: &["claude"],
        name: "Claude Code",
        project_dir: ".claude/skills",
        global_dir: GlobalBase::Env {
            var: "CLAUDE_CONFIG_DIR",
            default: ".claude",
            path: "skills",
        },
    },
    Agent {
        id: "codex",
        aliases: &[],
        name: "Codex",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Env {
            var: "CODEX_HOME",
            default: ".codex",
            path: "skills",
        },
    },
    Agent {
        id: "cursor",
        aliases: &[],
        name: "Cursor",
        project_dir: ".cursor/skills",
        global_dir: GlobalBase::Home(".cursor/skills"),
    },
    Agent {
        id: "gemini-cli",
        aliases: &["gemini"],
        name: "Gemini CLI",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Home(".gemini/skills"),
    },
    Agent {
        id: "opencode",
        aliases: &[],
        name: "OpenCode",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Config("opencode/skills"),
    },
    Agent {
        id: "github-copilot",
        aliases: &["copilot"],
        name: "GitHub Copilot",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Home(".copilot/skills"),
    },
    Agent {
        id: "amp",
        aliases: &[],
        name: "Amp",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Config("agents/skills"),
    },
    Agent {
        id: "kimi-code-cli",
        aliases: &["kimi"],
        name: "Kimi Code CLI",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Config("agents/skills"),
    },
    Agent {
        id: "replit",
        aliases: &[],
        name: "Replit",
        project_dir: ".agents/skills",
        global_dir: GlobalBase::Config("agents/skills"),
    },
    Agent {
        id: "windsurf",
        aliases: &[],
        name: "Windsurf",
        project_dir: ".windsurf/skills",
        global_dir: GlobalBase::Home(".codeium/windsurf/skills"),
    },
    Agent {
        id: "cline",
        aliases: &[],
        name: "Cline",
        project_dir: ".cline/skills",
        global_dir: GlobalBase::Home(".cline/skills"),
    },
    Agent {
        id: "roo",
        aliases: &["roo-code"],
        name: "Roo Code",
        project_dir: ".roo/skills",
        global_dir: GlobalBase::Home(".roo/skills"),
    },
    Agent {
        id: "goose",
        aliases: &[],
        name: "Goose",
        project_dir: ".goose/skills",
        global_dir: GlobalBase::Config("goose/skills"),
    },
    Agent {
        id: "continue",
        aliases: &[],
        name: "Continue",
        project_dir: ".continue/skills",
        global_dir: GlobalBase::Home(".continue/skills"),
    },
    Agent {
        id: "kiro-cli",
        aliases: &["kiro"],
        name: "Kiro",
        project_dir: ".kiro/skills",
        global_dir: GlobalBase::Home(".kiro/skills"),
    },
    Agent {
        id: "qwen-code",
        aliases: &["qwen"],
        name: "Qwen Code",
        project_dir: ".qwen/skills",
        global_dir: GlobalBase::Home(".qwen/skills"),
    },
    Agent {
        id: "openhands",
        aliases: &[],
        name: "OpenHands",
        project_dir: ".openhands/skills",
        global_dir: GlobalBase::Home(".openhands/skills"),
    },
];

/// Finds an agent by id or alias (case-insensitive).
pub fn find_agent(id: &str) -> Result<&'static Agent, InstallError> {
    let wanted = id.trim().to_lowercase();
    AGENTS
        .iter()
        .find(|agent| agent.id == wanted || agent.aliases.contains(&wanted.as_str()))
        .ok_or_else(|| {
            let closest = AGENTS
                .iter()
                .flat_map(|agent| std::iter::once(agent.id).chain(agent.aliases.iter().copied()))
                .map(|known| (strsim::jaro_winkler(&wanted, known), known))
                .filter(|(similarity, _)| *similarity >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, known)| known.to_owned());
            InstallError::UnknownAgent {
                id: id.to_owned(),
                closest,
            }
        })
}

/// The user's folders that global skill paths are built from, read from the environment
/// by [`HomeDirs::from_env`] or set directly (tests point them at a temporary folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeDirs {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, when set and not empty.
    pub config_home: Option<PathBuf>,
    /// Folder-moving variables (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`) that are set, by name.
    pub overrides: BTreeMap<String, PathBuf>,
}

impl HomeDirs {
    /// Reads `$HOME`, `$XDG_CONFIG_HOME` and the agents' folder variables.
    pub fn from_env() -> Result<Self, InstallError> {
        HomeDirs::from_vars(&|name| std::env::var_os(name))
    }

    /// [`HomeDirs::from_env`] over any source of variables. A folder variable must be an
    /// absolute path: a relative one (`CLAUDE_CONFIG_DIR="~/claude"`, where the quotes kept
    /// the shell from expanding `~`) would put skills under the working folder, where no agent
    /// looks, so it is refused naming the variable; a relative `$XDG_CONFIG_HOME` is ignored,
    /// as the XDG spec says.
    pub fn from_vars(vars: &dyn Fn(&str) -> Option<OsString>) -> Result<Self, InstallError> {
        let var = |name: &str| {
            vars(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME").ok_or(InstallError::NoHome)?;
        let mut overrides = BTreeMap::new();
        for agent in AGENTS {
            if let GlobalBase::Env { var: name, .. } = agent.global_dir
                && let Some(value) = var(name)
            {
                if value.is_relative() {
                    return Err(InstallError::RelativeFolder {
                        var: name.to_owned(),
                        value,
                    });
                }
                overrides.insert(name.to_owned(), value);
            }
        }
        Ok(HomeDirs {
            home,
            config_home: var("XDG_CONFIG_HOME").filter(|path| path.is_absolute()),
            overrides,
        })
    }

    /// An agent's user-wide skills folder.
    pub fn global_dir(&self, agent: &Agent) -> PathBuf {
        match agent.global_dir {
            GlobalBase::Home(path) => self.home.join(path),
            GlobalBase::Config(path) => self
                .config_home
                .clone()
                .unwrap_or_else(|| self.home.join(".config"))
                .join(path),
            GlobalBase::Env { var, default, path } => self
                .overrides
                .get(var)
                .cloned()
                .unwrap_or_else(|| self.home.join(default))
                .join(path),
        }
    }
}

/// Where to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Into a project: `<root>/<agent project dir>/<name>`.
    Project(PathBuf),
    /// For the user: `<agent global dir>/<name>`.
    Global(HomeDirs),
}

impl Scope {
    /// The skills folder of `agent` in this scope (the skill goes in a folder below it).
    pub fn skills_dir(&self, agent: &Agent) -> PathBuf {
        match self {
            Scope::Project(root) => root.join(agent.project_dir),
            Scope::Global(homes) => homes.global_dir(agent),
        }
    }
}

/// What happened in one skill folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallStatus {
    /// The folder did not exist and was written.
    Installed,
    /// The folder already held exactly these files; nothing was written.
    AlreadyInstalled,
    /// The folder held a different skill and `force` replaced it.
    Replaced,
}

/// One skill folder written (or found up to date), and the agents that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The skill folder, `<skills dir>/<name>`.
    pub dir: PathBuf,
    /// Ids of the agents that read this folder.
    pub agents: Vec<&'static str>,
    /// What was done.
    pub status: InstallStatus,
}

/// The result of an install.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallReport {
    /// The skill's name (its folder name).
    pub name: String,
    /// One entry per distinct skill folder, in the order the agents were given.
    pub folders: Vec<Installed>,
    /// Warnings about the skill (as export shows them).
    pub warnings: Vec<Finding>,
}

/// Why an install was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// No such agent.
    #[error(
        "unknown agent {id:?}.{} Run `skill-factory install --list-agents` to see every agent.",
        closest.as_ref().map(|known| format!(" Did you mean {known:?}?")).unwrap_or_default()
    )]
    UnknownAgent {
        /// The id given.
        id: String,
        /// The closest known id or alias.
        closest: Option<String>,
    },
    /// `$HOME` is not set, so global folders are unknown.
    #[error(
        "$HOME is not set, so the global skill folders are unknown. Set HOME or install into a project with --project DIR."
    )]
    NoHome,
    /// An agent's folder variable holds a relative path.
    #[error(
        "{var} is '{}', a relative path{}: the agent would not find skills installed there. Set {var} to an absolute path, or unset it for the default folder.",
        value.display(),
        if value.starts_with("~") { " (a quoted ~ is not expanded by the shell)" } else { "" }
    )]
    RelativeFolder {
        /// The variable.
        var: String,
        /// Its value.
        value: PathBuf,
    },
    /// No agent was named.
    #[error("no agent given. Name one or more with --agent, e.g. --agent claude-code.")]
    NoAgent,
    /// The skill cannot be exported (invalid, unwritable).
    #[error(transparent)]
    Export(#[from] ExportError),
    /// Folders that hold a different skill of the same name; nothing was written.
    #[error(
        "a different skill named {name:?} is already installed in:\n{}\nNothing was written. \
         Pass --force to replace it, or rename the skill.",
        dirs.iter().map(|dir| format!("  {}", dir.display())).collect::<Vec<_>>().join("\n")
    )]
    Conflict {
        /// The skill's name.
        name: String,
        /// The folders that differ.
        dirs: Vec<PathBuf>,
    },
}

/// Installs a skill (validated and laid out as export does) for `agents` in `scope`.
///
/// An existing folder with identical files is left alone ([`InstallStatus::AlreadyInstalled`]);
/// one with different files is replaced only when `force` is set, otherwise nothing at all is
/// written and [`InstallError::Conflict`] lists every such folder.
pub fn install(
    bundle: &SkillBundle,
    agents: &[&'static Agent],
    scope: &Scope,
    force: bool,
) -> Result<InstallReport, InstallError> {
    if agents.is_empty() {
        return Err(InstallError::NoAgent);
    }
    let layout = SkillLayout::from_bundle(bundle)?;
    let mut folders: Vec<Installed> = Vec::new();
    for agent in agents {
        let dir = scope.skills_dir(agent).join(&layout.name);
        match folders.iter_mut().find(|folder| folder.dir == dir) {
            Some(folder) => {
                if !folder.agents.contains(&agent.id) {
                    folder.agents.push(agent.id);
                }
            }
            None => folders.push(Installed {
                status: status_of(&dir, &layout.files),
                dir,
                agents: vec![agent.id],
            }),
        }
    }
    let conflicts: Vec<PathBuf> = folders
        .iter()
        .filter(|folder| folder.status == InstallStatus::Replaced)
        .map(|folder| folder.dir.clone())
        .collect();
    if !conflicts.is_empty() && !force {
        return Err(InstallError::Conflict {
            name: layout.name,
            dirs: conflicts,
        });
    }
    for folder in &folders {
        if folder.status != InstallStatus::AlreadyInstalled {
            staged_dir::write(&folder.dir, &layout.files).map_err(ExportError::from)?;
        }
    }
    Ok(InstallReport {
        name: layout.name,
        folders,
        warnings: layout.warnings,
    })
}

/// What installing into `dir` would do: write it, nothing, or replace a different skill.
fn status_of(dir: &Path, files: &[BundledFile]) -> InstallStatus {
    if std::fs::symlink_metadata(dir).is_err() {
        return InstallStatus::Installed;
    }
    if holds_exactly(dir, files) {
        InstallStatus::AlreadyInstalled
    } else {
        InstallStatus::Replaced
    }
}

#[cfg(test)]
mod tests {
    use skill_factory_core::Skill;

    use super::*;

    fn bundle(body: &str) -> SkillBundle {
        SkillBundle::from_skill(Skill::new("my-skill", "Does it.", body))
    }

    fn agents(ids: &[&str]) -> Vec<&'static Agent> {
        ids.iter().map(|id| find_agent(id).unwrap()).collect()
    }

    fn homes(home: &Path) -> HomeDirs {
        HomeDirs {
            home: home.to_path_buf(),
            config_home: None,
            overrides: BTreeMap::new(),
        }
    }

    #[test]
    fn agent_ids_are_unique_and_aliases_resolve() {
        let mut ids: Vec<&str> = AGENTS
            .iter()
            .flat_map(|agent| std::iter::once(agent.id).chain(agent.aliases.iter().copied()))
            .collect();
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), count);
        assert_eq!(find_agent("copilot").unwrap().id, "github-copilot");
        assert_eq!(find_agent("Claude-Code").unwrap().id, "claude-code");
    }

    #[test]
    fn unknown_agent_suggests_the_closest_id() {
        let error = find_agent("claude-cod").expect_err("unknown");
        let message = error.to_string();
        assert!(
            message.contains("Did you mean \"claude-code\"?"),
            "{message}"
        );
        assert!(message.contains("--list-agents"), "{message}");
    }

    #[test]
    fn project_install_writes_each_agent_folder_and_shares_agents_dir() {
        let project = tempfile::tempdir().unwrap();
        let scope = Scope::Project(project.path().to_path_buf());
        let report = install(
            &bundle("Body."),
            &agents(&["claude-code", "codex", "opencode", "cursor"]),
            &scope,
            false,
        )
        .unwrap();
        let dirs: Vec<(PathBuf, Vec<&str>)> = report
            .folders
            .iter()
            .map(|folder| (folder.dir.clone(), folder.agents.clone()))
            .collect();
        let root = project.path();
        assert_eq!(
            dirs,
            vec![
                (root.join(".claude/skills/my-skill"), vec!["claude-code"]),
                (
                    root.join(".agents/skills/my-skill"),
                    vec!["codex", "opencode"]
                ),
                (root.join(".cursor/skills/my-skill"), vec!["cursor"]),
            ]
        );
        for (dir, _) in dirs {
            assert!(dir.join("SKILL.md").is_file(), "{}", dir.display());
        }
    }

    #[test]
    fn global_paths_follow_home_xdg_and_agent_variables() {
        let mut dirs = homes(Path::new("/h"));
        let path = |dirs: &HomeDirs, id: &str| dirs.global_dir(find_agent(id).unwrap());
        assert_eq!(path(&dirs, "claude-code"), Path::new("/h/.claude/skills"));
        assert_eq!(path(&dirs, "codex"), Path::new("/h/.codex/skills"));
        assert_eq!(
            path(&dirs, "opencode"),
            Path::new("/h/.config/opencode/skills")
        );
        assert_eq!(
            path(&dirs, "windsurf"),
            Path::new("/h/.codeium/windsurf/skills")
        );
        assert_eq!(path(&dirs, "goose"), Path::new("/h/.config/goose/skills"));
        dirs.config_home = Some(PathBuf::from("/x"));
        dirs.overrides
            .insert("CODEX_HOME".into(), PathBuf::from("/c"));
        assert_eq!(path(&dirs, "opencode"), Path::new("/x/opencode/skills"));
        assert_eq!(path(&dirs, "codex"), Path::new("/c/skills"));
    }

    #[test]
    fn a_relative_folder_variable_is_refused_and_a_relative_xdg_config_home_ignored() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        let error =
            HomeDirs::from_vars(&vars(&[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "~/claude")]))
                .unwrap_err()
                .to_string();
        assert!(
            error.starts_with("CLAUDE_CONFIG_DIR is '~/claude', a relative path (a quoted ~"),
            "{error}"
        );
        assert!(
            error.contains("Set CLAUDE_CONFIG_DIR to an absolute path"),
            "{error}"
        );
        let error = HomeDirs::from_vars(&vars(&[("HOME", "/h"), ("CODEX_HOME", "codex")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("CODEX_HOME is 'codex', a relative path:"),
            "{error}"
        );
        let dirs = HomeDirs::from_vars(&vars(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "cfg"),
            ("CLAUDE_CONFIG_DIR", "/c"),
        ]))
        .unwrap();
        assert_eq!(dirs.config_home, None);
        assert_eq!(
            dirs.global_dir(find_agent("claude-code").unwrap()),
            Path::new("/c/skills")
        );
    }

    #[test]
    fn identical_install_is_reported_and_different_one_needs_force() {
        let home = tempfile::tempdir().unwrap();
        let scope = Scope::Global(homes(home.path()));
        let claude = agents(&["claude-code"]);
        install(&bundle("One."), &claude, &scope, false).unwrap();
        let again = install(&bundle("One."), &claude, &scope, false).unwrap();
        assert_eq!(again.folders[0].status, InstallStatus::AlreadyInstalled);

        let skill_md = home.path().join(".claude/skills/my-skill/SKILL.md");
        let error = install(&bundle("Two."), &claude, &scope, false).expect_err("conflict");
        assert!(error.to_string().contains("--force"), "{error}");
        assert!(std::fs::read_to_string(&skill_md).unwrap().contains("One."));

        let forced = install(&bundle("Two."), &claude, &scope, true).unwrap();
        assert_eq!(forced.folders[0].status, InstallStatus::Replaced);
        assert!(std::fs::read_to_string(&skill_md).unwrap().contains("Two."));
    }

    #[test]
    fn a_conflict_in_one_folder_writes_no_folder() {
        let project = tempfile::tempdir().unwrap();
        let scope = Scope::Project(project.path().to_path_buf());
        install(&bundle("One."), &agents(&["cursor"]), &scope, false).unwrap();
        let error = install(
            &bundle("Two."),
            &agents(&["claude-code", "cursor"]),
            &scope,
            false,
        )
        .expect_err("conflict");
        assert!(matches!(error, InstallError::Conflict { ref dirs, .. } if dirs.len() == 1));
        assert!(!project.path().join(".claude").exists());
    }

    #[test]
    fn an_extra_file_in_the_installed_folder_makes_it_different() {
        let project = tempfile::tempdir().unwrap();
        let scope = Scope::Project(project.path().to_path_buf());
        install(&bundle("One."), &agents(&["roo"]), &scope, false).unwrap();
        std::fs::write(project.path().join(".roo/skills/my-skill/extra.md"), "x").unwrap();
        let error =
            install(&bundle("One."), &agents(&["roo"]), &scope, false).expect_err("differs");
        assert!(matches!(error, InstallError::Conflict { .. }));
    }

    #[cfg(unix)]
    #[test]
    fn force_replaces_a_symlinked_install_without_touching_its_target() {
        let project = tempfile::tempdir().unwrap();
        let canonical = project.path().join(".agents/skills/my-skill");
        std::fs::create_dir_all(&canonical).unwrap();
        std::fs::write(canonical.join("SKILL.md"), "old").unwrap();
        std::fs::create_dir_all(project.path().join(".claude/skills")).unwrap();
        std::os::unix::fs::symlink(&canonical, project.path().join(".claude/skills/my-skill"))
            .unwrap();
        let scope = Scope::Project(project.path().to_path_buf());
        let report = install(&bundle("New."), &agents(&["claude-code"]), &scope, true).unwrap();
        assert_eq!(report.folders[0].status, InstallStatus::Replaced);
        assert_eq!(
            std::fs::read_to_string(canonical.join("SKILL.md")).unwrap(),
            "old"
        );
        let installed = project.path().join(".claude/skills/my-skill");
        assert!(!installed.is_symlink());
        assert!(
            std::fs::read_to_string(installed.join("SKILL.md"))
                .unwrap()
                .contains("New.")
        );
    }

    #[test]
    fn install_without_agents_or_of_an_invalid_skill_is_refused() {
        let project = tempfile::tempdir().unwrap();
        let scope = Scope::Project(project.path().to_path_buf());
        assert!(matches!(
            install(&bundle("b"), &[], &scope, false),
            Err(InstallError::NoAgent)
        ));
        let invalid = SkillBundle::from_skill(Skill::new("my-skill", "", "b"));
        let error = install(&invalid, &agents(&["codex"]), &scope, false).expect_err("invalid");
        assert!(
            error.to_string().contains("description-required"),
            "{error}"
        );
        assert_eq!(std::fs::read_dir(project.path()).unwrap().count(), 0);
    }
}
