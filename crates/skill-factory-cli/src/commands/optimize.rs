//! `skill-factory optimize`: run the config's optimizer, write the run folder, print the report.
//!
//! Exit codes: 0 when the run finished (a budget stop included), 2 on a user error (bad
//! config, missing key, unwritable folder), 1 when `--min-improvement X` is set and the
//! improvement is below X, 130 when the run was stopped with Ctrl-C (its report and result
//! are still written). A second Ctrl-C quits at once.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use skill_factory::bundle::SkillBundle;
use skill_factory::cancel::CancelToken;
use skill_factory::export::{export_bundle, install_hint};
use skill_factory::optimizer::StopReason;
use skill_factory::run::result::round4;
use skill_factory::run::{self, RunOptions};
use skill_factory::session::Session;
use tokio::task::JoinHandle;

use crate::cli::OptimizeArgs;
use crate::interrupt::{self, INTERRUPTED};
use crate::live::LiveDisplay;
use crate::output::{errln, out, outln};

/// Runs the command.
pub async fn run(args: OptimizeArgs) -> anyhow::Result<ExitCode> {
    if let Some(x) = args.min_improvement
        && !x.is_finite()
    {
        bail!("--min-improvement must be a number such as 0.05 (5 points), got {x}");
    }
    let mut session = Session::open(&args.config, None)?;
    if args.no_cache {
        session.disable_cache();
    }
    let seed_file = session
        .skill_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| session.skill_path.display().to_string());
    outln!(
        "Optimizing {seed_file} with '{}'…",
        session.config.config.optimizer.name
    );
    // Only the body is optimized: what the seed's frontmatter or folder breaks of the Agent
    // Skills spec stays broken in the best skill, so it is said now, not at export.
    if let Ok(bundle) = SkillBundle::load(&session.skill_path) {
        for finding in bundle.findings() {
            errln!("{seed_file}: {finding}");
        }
    }

    let ledger = run::ledger_for(&session.config.config);
    let display = Arc::new(LiveDisplay::new(ledger.clone()));
    let cancel = CancelToken::new();
    let interrupts = watch_interrupts(cancel.clone());
    let outcome = run::optimize(
        &mut session,
        RunOptions {
            runs_dir: args.out.clone(),
            cancel: cancel.clone(),
            display: Some(display.clone()),
            ledger: Some(ledger),
        },
    )
    .await;
    display.finish();
    interrupts.abort();
    let outcome = outcome?;

    let result = &outcome.result;
    out!("{}", outcome.report);
    outln!(
        "Baseline {:.3} → best {:.3} ({:+.1} pts)",
        result.baseline_score,
        result.best_score,
        result.improvement() * 100.0
    );
    outln!("Artifacts: {}", outcome.folder.path.display());

    let output = &session.config.config.output;
    if let Some(dir) = args.emit.as_ref().or(output.emit_skill_dir.as_ref()) {
        let collection = args.collection || output.as_collection;
        let mut bundle = SkillBundle::load(&session.skill_path)
            .with_context(|| format!("cannot read {}", session.skill_path.display()))?;
        bundle.skill = result.best_skill.clone();
        let exported = export_bundle(&bundle, dir, collection)?;
        for warning in &exported.warnings {
            errln!("{warning}");
        }
        outln!("{}", install_hint(&exported.skill_dir));
    }

    if result.stop == Some(StopReason::Cancelled) {
        return Ok(ExitCode::from(INTERRUPTED));
    }
    if let Some(wanted) = args.min_improvement {
        // Compared at the 4 decimals of result.json, so 0.55 − 0.5 counts as 0.05.
        let gained = round4(result.improvement());
        if gained < wanted - 1e-12 {
            errln!(
                "The improvement {:+.1} points is below --min-improvement {wanted} ({:+.1} points).",
                gained * 100.0,
                wanted * 100.0
            );
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first Ctrl-C asks the run to stop after the calls in flight; the second quits at once.
fn watch_interrupts(cancel: CancelToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        cancel.cancel();
        errln!(
            "\nStopping after the calls in flight; the report will still be written. Press Ctrl-C again to quit at once."
        );
        if tokio::signal::ctrl_c().await.is_ok() {
            errln!("Interrupted.");
            interrupt::quit(i32::from(INTERRUPTED));
        }
    })
}
