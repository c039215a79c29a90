//! `skill-factory install`: copy a skill into agents' skills folders.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use skill_factory_package::install::{
    AGENTS, Agent, GlobalBase, HomeDirs, InstallStatus, Scope, find_agent, install,
};

use crate::cli::InstallArgs;
use crate::output::{errln, outln};

/// Runs the command: `--list-agents`, or an install that prints one line per skill folder.
pub fn run(args: InstallArgs) -> anyhow::Result<ExitCode> {
    if args.list_agents {
        print_agents();
        return Ok(ExitCode::SUCCESS);
    }
    let Some(skill) = &args.skill else {
        bail!("no skill given. Pass --skill PATH (a SKILL.md or an exported skill folder).");
    };
    let agents = args
        .agents
        .iter()
        .map(|id| find_agent(id))
        .collect::<Result<Vec<_>, _>>()?;
    let scope = if args.global {
        Scope::Global(HomeDirs::from_env()?)
    } else {
        let root = args.project.clone().unwrap_or_else(|| PathBuf::from("."));
        if !root.is_dir() {
            let what = if root.exists() {
                "a file, not a folder. Pass the project's folder"
            } else {
                "no such folder. Pass an existing project folder"
            };
            bail!(
                "--project {}: {what}, or leave --project out to install into the current folder.",
                root.display()
            );
        }
        Scope::Project(root)
    };
    let bundle = super::export::bundle_of(skill)?;
    let report = install(&bundle, &agents, &scope, args.force)?;
    for warning in &report.warnings {
        errln!("{warning}");
    }
    for folder in &report.folders {
        let agents = folder.agents.join(", ");
        let dir = folder.dir.display();
        match folder.status {
            InstallStatus::Installed => {
                outln!("Installed {} for {agents} → {dir}", report.name);
            }
            InstallStatus::AlreadyInstalled => {
                outln!("{} is already installed for {agents} → {dir}", report.name);
            }
            InstallStatus::Replaced => {
                outln!(
                    "Replaced the existing {} for {agents} → {dir} (--force)",
                    report.name
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_agents() {
    let rows: Vec<[String; 3]> = AGENTS
        .iter()
        .map(|agent| {
            [
                agent_label(agent),
                agent.project_dir.to_owned(),
                global_label(agent),
            ]
        })
        .collect();
    let header = [
        "agent",
        "project (--project DIR, default .)",
        "global (--global)",
    ];
    let width = |column: usize| {
        rows.iter()
            .map(|row| row[column].chars().count())
            .chain(std::iter::once(header[column].chars().count()))
            .max()
            .unwrap_or(0)
    };
    let (first, second) = (width(0), width(1));
    outln!("{:first$}  {:second$}  {}", header[0], header[1], header[2]);
    for [agent, project, global] in rows {
        outln!("{agent:first$}  {project:second$}  {global}");
    }
}

fn agent_label(agent: &Agent) -> String {
    if agent.aliases.is_empty() {
        agent.id.to_owned()
    } else {
        format!("{} ({})", agent.id, agent.aliases.join(", "))
    }
}

fn global_label(agent: &Agent) -> String {
    match agent.global_dir {
        GlobalBase::Home(path) => format!("~/{path}"),
        GlobalBase::Config(path) => format!("~/.config/{path} (or $XDG_CONFIG_HOME/{path})"),
        GlobalBase::Env { var, default, path } => format!("~/{default}/{path} (or ${var}/{path})"),
    }
}
