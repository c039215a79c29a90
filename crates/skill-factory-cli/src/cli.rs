//! Flag definitions: every command, option and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Train agent skills (SKILL.md) like weights: measure them on a dataset with a metric, and
/// keep only the edits that beat the best on held-out data.
#[derive(Debug, Parser)]
#[command(name = "skill-factory", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Score a skill on a dataset and show the worst tasks with their feedback.
    Evaluate(EvaluateArgs),
    /// List the optimizers, providers, harnesses and metrics this build knows.
    List,
}

/// Flags of `evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The run config (YAML).
    #[arg(short, long, value_name = "CONFIG")]
    pub config: PathBuf,
    /// A skill to evaluate instead of the config's seed (relative to the working directory).
    #[arg(long, value_name = "PATH")]
    pub skill: Option<PathBuf>,
    /// Which tasks to evaluate on.
    #[arg(long, value_enum, default_value_t = SplitChoice::All)]
    pub split: SplitChoice,
    /// Print a machine-readable JSON result instead of text.
    #[arg(long)]
    pub json: bool,
    /// How many worst tasks to show with their feedback.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub worst: usize,
}

/// A part of the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitChoice {
    /// The tasks the optimizer learns from.
    Train,
    /// The tasks that gate edits.
    Val,
    /// The held-out tasks (needs `test_fraction` in the config).
    Test,
    /// The whole dataset.
    All,
}
