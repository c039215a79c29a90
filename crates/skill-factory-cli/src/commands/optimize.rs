//! `skill-factory optimize`: run the config's optimizer, write the run folder, print the report.
//!
//! Exit codes: 0 when the run finished (a budget stop included), 2 on a user error (bad
//! config, missing key, unwritable folder), 1 when `--min-improvement X` is set and the
//! improvement is below X, 3 when it stopped because nothing worked (every rollout of an
//! evaluation failed, or every request to the optimizer model), 130 when the run was stopped
//! with Ctrl-C (its report and result are still written). A second Ctrl-C quits at once.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use skill_factory::cancel::CancelToken;
use skill_factory::optimizer::StopReason;
use skill_factory::run::{self, RunOptions};
use skill_factory::session::Session;
use skill_factory::session::SessionOptions;
use skill_factory_llm::batch::BatchBoard;
use skill_factory_package::bundle::SkillBundle;
use skill_factory_package::export::{check_destination, export_bundle, install_hint};
use skill_factory_runfolder::result::round4;
use tokio::task::JoinHandle;

use crate::cli::{Kind, OptimizeArgs};
use crate::interrupt::{self, INTERRUPTED};
use crate::live::LiveDisplay;
use crate::output::{errln, out, outln};

/// Refuses the flags of skill mode for a classifier config, rather than ignoring them: a CI
/// job's `--min-improvement` would never fail, and `--emit` would export nothing.
fn refuse_skill_flags(args: &OptimizeArgs) -> anyhow::Result<()> {
    let given = [
        ("--emit", args.emit.is_some()),
        ("--collection", args.collection),
        ("--force", args.force),
        ("--record", args.record),
        ("--min-improvement", args.min_improvement.is_some()),
        ("--no-cache", args.no_cache),
        ("--batch", args.batch),
        ("--samples", args.samples.is_some()),
    ];
    let given: Vec<&str> = given
        .iter()
        .filter(|(_, set)| *set)
        .map(|(flag, _)| *flag)
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    bail!(
        "{}: {} belong{} to skill mode, and this is a classifier config. Leave {} out; a \
         classifier workspace is exported with `skill-factory export --skill WORKSPACE`, and \
         its answer cache is never bypassed (use a fresh workspace with -o DIR instead)",
        args.config.display(),
        given.join(", "),
        if given.len() == 1 { "s" } else { "" },
        if given.len() == 1 { "it" } else { "them" },
    )
}

/// Runs the command.
pub async fn run(args: OptimizeArgs) -> anyhow::Result<ExitCode> {
    let classifier = match args.kind {
        Some(kind) => kind == Kind::Classifier,
        None => skill_factory::config::is_classifier_config(&args.config),
    };
    if classifier {
        refuse_skill_flags(&args)?;
        return super::lab::optimize_classifier(&args.config, args.out.as_deref()).await;
    }
    if let Some(x) = args.min_improvement
        && !x.is_finite()
    {
        bail!("--min-improvement must be a number such as 0.05 (5 points), got {x}");
    }
    let session = Session::open(
        &args.config,
        SessionOptions {
            skill: None,
            no_cache: args.no_cache,
            budgeted: true,
            record: args.record,
            batch: args.batch,
            samples: args.samples,
        },
    )?;
    let seed_file = session
        .skill_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| session.skill_path.display().to_string());
    let seed = SkillBundle::load(&session.skill_path)
        .with_context(|| format!("cannot read {}", session.skill_path.display()));
    // Only the body is optimized: what the seed's frontmatter or folder breaks of the Agent
    // Skills spec stays broken in the best skill, so it is said now, not at export.
    if let Ok(bundle) = &seed {
        for finding in bundle.findings() {
            errln!("{seed_file}: {finding}");
        }
    }
    // An export that cannot happen is refused now, not after a paid run.
    let emit = emit_target(&args, &session, seed)?;

    // Said once the run has started, so a missing key or a bad block is the first thing said.
    let heading = format!(
        "Optimizing {seed_file} with '{}'…",
        session.config.config.optimizer.name
    );
    let display = Arc::new(LiveDisplay::new(session.ledger().clone(), heading));
    crate::progress::watch_batches(&session, display.bar().cloned())?;
    let cancel = CancelToken::new();
    let batches = session.layers_in_use().map(|l| l.batches().clone());
    let interrupts = watch_interrupts(cancel.clone(), batches);
    let outcome = run::optimize(
        &session,
        RunOptions {
            runs_dir: args.out.clone(),
            cancel: cancel.clone(),
            display: Some(display.clone()),
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
    outln!(
        "Report: {}",
        outcome
            .folder
            .latest_file(skill_factory_runfolder::names::REPORT_FILE)
            .display()
    );
    super::print_model_calls(&session);

    if let Some(Emit {
        dir,
        collection,
        bundle,
    }) = emit
    {
        let bundle = bundle.carrying(result.best_skill.clone());
        let exported = export_bundle(&bundle, &dir, collection, args.force)?;
        for warning in &exported.warnings {
            errln!("{warning}");
        }
        outln!("{}", install_hint(&exported.skill_dir));
    }

    if result.stop == Some(StopReason::Cancelled) {
        return Ok(ExitCode::from(INTERRUPTED));
    }
    if let Some(stop) = result.stop.as_ref().filter(|stop| stop.is_failure()) {
        errln!("The run stopped early: {}.", stop.detail());
        return Ok(ExitCode::from(super::NOTHING_WORKED));
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

/// Where and how the best skill is exported, with the seed folder it takes its files from.
struct Emit {
    dir: PathBuf,
    collection: bool,
    bundle: SkillBundle,
}

/// The export of the best skill (`--emit`, else `output.emit_skill_dir`), checked before the
/// run: an export folder that is one of the run's inputs (the session checked the config's
/// already), a file, or one that already holds a skill (without `--force`) is refused now.
fn emit_target(
    args: &OptimizeArgs,
    session: &Session,
    seed: anyhow::Result<SkillBundle>,
) -> anyhow::Result<Option<Emit>> {
    let output = &session.config.config.output;
    let Some(dir) = args.emit.as_ref().or(output.emit_skill_dir.as_ref()) else {
        return Ok(None);
    };
    if let Some(flag) = &args.emit {
        session.check_output("--emit", flag)?;
    }
    let collection = args.collection || output.as_collection;
    let bundle = seed?;
    check_destination(&bundle, dir, collection, args.force)?;
    Ok(Some(Emit {
        dir: dir.clone(),
        collection,
        bundle,
    }))
}

/// The first Ctrl-C asks the run to stop after the calls in flight; the second quits at once.
fn watch_interrupts(cancel: CancelToken, batches: Option<Arc<BatchBoard>>) -> JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        cancel.cancel();
        // A batch may take hours: its calls stop waiting, and it stays owed to a rerun.
        if let Some(batches) = batches {
            batches.abandon();
        }
        errln!(
            "\nStopping after the calls in flight; the report will still be written. Press Ctrl-C again to quit at once."
        );
        if tokio::signal::ctrl_c().await.is_ok() {
            errln!("Interrupted.");
            interrupt::quit(i32::from(INTERRUPTED));
        }
    })
}
