//! `skill-factory track push RUN_DIR [--uri URI] [--experiment NAME]`: send what a tracked
//! run did not deliver to its MLflow server (the run folder's `mlflow.jsonl`).
//!
//! Exit codes: 0 when every call reached the server (or had already), 2 on a user error (no
//! journal, no usable address), 1 when the server did not take every call (those it took are
//! marked; pushing again sends the rest).

use std::process::ExitCode;

use skill_factory::tracking::pending::{PushError, PushOptions, push};

use crate::cli::{TrackAction, TrackArgs};
use crate::output::{errln, outln};

/// Runs the command.
pub async fn run(args: TrackArgs) -> anyhow::Result<ExitCode> {
    let TrackAction::Push {
        run_dir,
        uri,
        experiment,
    } = args.action;
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let pushed = match push(&run_dir, PushOptions { uri, experiment }, &env).await {
        Ok(pushed) => pushed,
        Err(error @ PushError::Delivery { .. }) => {
            errln!("error: {error}");
            return Ok(ExitCode::from(1));
        }
        Err(error) => return Err(error.into()),
    };
    for note in &pushed.notes {
        errln!("note: {note}");
    }
    let run = match &pushed.run {
        Some(run) => format!(
            "run {} ({}/#/experiments/{}/runs/{})",
            run.run_id,
            pushed.uri.trim_end_matches('/'),
            run.experiment_id,
            run.run_id
        ),
        None => "no run".to_owned(),
    };
    if pushed.calls == 0 {
        outln!(
            "Nothing to push: every call in {} already reached MLflow at {}, {run}.",
            pushed.journal.display(),
            pushed.uri
        );
    } else {
        let experiment = pushed
            .experiment
            .map(|name| format!(" in experiment '{name}'"))
            .unwrap_or_default();
        outln!(
            "Pushed {} call{} to MLflow at {}{experiment}, {run}; {} now marks every call delivered.",
            pushed.calls,
            if pushed.calls == 1 { "" } else { "s" },
            pushed.uri,
            pushed.journal.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
