//! `skill-factory completions SHELL`: the shell's completion script, generated from the same
//! flag definitions the binary parses, so it never lags behind a new command or flag.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionsArgs};
use crate::output::out;

/// The name the scripts complete: the installed binary's.
pub const BIN_NAME: &str = "skill-factory";

/// Runs the command.
pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), BIN_NAME, &mut script);
    let mut script = String::from_utf8(script)?;
    if args.shell == Shell::Bash {
        // clap_complete's bash script spells the state of a subcommand of a hyphenated binary
        // two ways, `skill__factory__subcmd__init` where it walks the words and
        // `skill__subcmd__factory__subcmd__init` in the arms that complete, so no subcommand's
        // flags ever complete (clap-rs/clap#6421). Spelled one way, they match; once the
        // generator is fixed the replacement finds nothing to replace.
        script = script.replace(
            &BIN_NAME.replace('-', "__subcmd__"),
            &BIN_NAME.replace('-', "__"),
        );
    }
    out!("{script}");
    Ok(ExitCode::SUCCESS)
}
