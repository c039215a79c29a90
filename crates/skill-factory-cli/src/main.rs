//! The `skill-factory` command line: parses flags, wires the engine together and prints.
//! Everything that is not parsing, wiring or printing lives in the engine crates.

mod cli;
mod commands;
mod interrupt;
mod live;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::output::errln;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SKILL_FACTORY_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        // Plain text, through the one escaping writer: no colour codes in a log file or a
        // pipe, and no control character of a quoted message on a terminal.
        .with_ansi(false)
        .without_time()
        .with_writer(|| output::LogWriter)
        .init();
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        // As the reference tool: no subcommand prints the help and exits 1.
        let mut help = <Cli as clap::CommandFactory>::command();
        let _ = help.print_help();
        return ExitCode::from(1);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        interrupt::quit_on_termination();
        if !matches!(command, Command::Optimize(_)) {
            interrupt::quit_on_ctrl_c();
        }
        match command {
            Command::Init(args) => commands::init::run(args).await,
            Command::Optimize(args) => commands::optimize::run(args).await,
            Command::Evaluate(args) => commands::evaluate::run(args).await,
            Command::List => commands::list::run(),
            Command::Export(args) => commands::export::run(args),
            Command::Validate(args) => commands::validate::run(args),
            Command::Install(args) => commands::install::run(args),
            Command::Cache(args) => commands::cache::run(args),
            Command::Models(args) => commands::models::run(args),
            Command::Gallery(args) => commands::gallery::run(args),
            Command::Track(args) => commands::track::run(args).await,
            Command::Lab(args) => commands::lab::run(args).await,
            Command::Triggers(args) => commands::triggers::run(args).await,
            Command::Ui(args) => commands::ui::run(args).await,
            Command::Completions(args) => commands::completions::run(args),
            Command::Man(args) => commands::man::run(args),
        }
    });
    // No engine thread of a local model may be inside llama.cpp while the process exits.
    skill_factory_llm::local::shutdown();
    output::flush_log();
    match outcome {
        Ok(code) => code,
        Err(error) => {
            errln!(
                "error: {}",
                skill_factory_llm::http::error_chain(error.as_ref())
            );
            commands::exit_code(&error)
        }
    }
}
