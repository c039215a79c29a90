//! `skill-factory man [-o DIR]`: the man page, generated from the flag definitions; printed,
//! or written as one page per command into a folder (`skill-factory.1`,
//! `skill-factory-optimize.1`, `skill-factory-lab-ask.1`, ...).

use std::process::ExitCode;

use clap::CommandFactory;
use skill_factory_io::output::write_atomic;
use skill_factory_io::replace::{Outputs, Recognize};

use crate::cli::{Cli, ManArgs};
use crate::output::{out, outln};

/// A page this command wrote earlier is replaced when the pages are written again; any other
/// file of that name is left alone (the command has no `--force`).
struct ManPage;

impl Recognize for ManPage {
    fn recognizes(&self, bytes: &[u8]) -> bool {
        bytes.starts_with(PAGE_START)
    }

    fn describe(&self) -> &str {
        "a man page written by skill-factory man"
    }
}

/// How every page clap_mangen renders begins (roff's definition of the apostrophe string).
const PAGE_START: &[u8] = b".ie \\n(.g .ds Aq";

/// Runs the command.
pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    // `help` is a page of its own nowhere: every page documents its own flags.
    let mut command = Cli::command().disable_help_subcommand(true);
    // Built, every subcommand knows its full name (`skill-factory-lab-ask`), which names its
    // page and the references between pages.
    command.build();
    match args.out {
        None => {
            out!("{}", render(&command)?);
        }
        Some(dir) => {
            let outputs = Outputs::without_force(
                "Move it away, or write the pages into another folder with -o",
            );
            outputs.check_folder("-o", &dir)?;
            let mut pages = Vec::new();
            collect(&command, &mut pages)?;
            for (name, _) in &pages {
                outputs.check("-o", &dir.join(name), ManPage)?;
            }
            for (name, text) in &pages {
                let path = dir.join(name);
                write_atomic(&path, text.as_bytes())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            }
            outln!("Wrote {} man pages into {}.", pages.len(), dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The page of `command` (its options and its subcommands' names).
fn render(command: &clap::Command) -> anyhow::Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    Ok(String::from_utf8(page)?)
}

/// The file name and page of `command` and of each of its subcommands, at every depth.
fn collect(command: &clap::Command, pages: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    let man = clap_mangen::Man::new(command.clone());
    pages.push((man.get_filename(), render(command)?));
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, pages)?;
    }
    Ok(())
}
