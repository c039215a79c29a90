//! `skill-factory evaluate`: score a skill on (part of) the dataset.
//!
//! Exit codes: 0 when it scored, 2 on a user error, 3 when no rollout reached its model or
//! program (an unreachable provider, an agent CLI that does not start): the score printed is
//! then no measurement.

use std::borrow::Cow;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use serde_json::json;
use skill_factory::evaluate::{evaluate, evaluate_summary};
use skill_factory::optimizer::StopReason;
use skill_factory::session::{Session, SessionOptions};
use skill_factory::{harness, metric};
use skill_factory_core::{Evaluation, Summary, Task};

use crate::cli::{EvaluateArgs, SplitChoice};
use crate::output::{errln, outln};
use crate::progress::TaskBar;

/// Runs the command.
pub async fn run(args: EvaluateArgs) -> anyhow::Result<ExitCode> {
    let session = Session::open(
        &args.config,
        SessionOptions {
            skill: args.skill.clone(),
            no_cache: args.no_cache,
            budgeted: false,
            record: false,
            batch: args.batch,
        },
    )?;
    let tasks = select_tasks(&session, args.split)?;
    let harness = harness::from_config(&session)?;
    let metric = metric::from_config(&session)?;
    let workers = session.workers(session.config.config.harness.max_workers.max(1));
    let bar = Arc::new(TaskBar::new(tasks.len(), "evaluate"));
    crate::progress::watch_batches(&session, Some(bar.bar().clone()))?;
    let skill = Arc::new(session.skill.clone());
    // The JSON report lists every task; the text one only the worst, so it keeps no other.
    let summary = if args.json {
        let evaluation = evaluate(skill, &tasks, harness, metric, workers, bar.clone()).await;
        bar.finish();
        super::print_model_calls(&session);
        outln!(
            "{}",
            serde_json::to_string_pretty(&json_report(&session, args.split, &evaluation))?
        );
        evaluation.summary(0)
    } else {
        let summary = evaluate_summary(
            skill,
            &tasks,
            harness,
            metric,
            workers,
            bar.clone(),
            args.worst,
        )
        .await;
        bar.finish();
        super::print_model_calls(&session);
        print_text(&summary, args.worst);
        summary
    };
    if let Some(error) = summary.all_unreachable() {
        let stop = StopReason::RolloutsFailed {
            what: "the evaluation".to_owned(),
            error: error.to_owned(),
        };
        errln!("The evaluation measured nothing: {}.", stop.detail());
        return Ok(ExitCode::from(super::NOTHING_WORKED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The tasks of the split asked for; the whole dataset is borrowed, not copied.
fn select_tasks(session: &Session, choice: SplitChoice) -> anyhow::Result<Cow<'_, [Task]>> {
    let tasks = match choice {
        SplitChoice::All => return Ok(Cow::Borrowed(&session.dataset.tasks)),
        SplitChoice::Train => session.split()?.train,
        SplitChoice::Val => session.split()?.val,
        SplitChoice::Test => session.split()?.test,
    };
    if tasks.is_empty() {
        bail!(
            "the test split of {} is empty: set test_fraction (for example 0.2) in the config to hold out test tasks",
            session.config.path.display()
        );
    }
    Ok(Cow::Owned(tasks))
}

fn print_text(evaluation: &Summary, worst: usize) {
    outln!(
        "Score: {:.3} over {} tasks",
        evaluation.score(),
        evaluation.size()
    );
    let failed = evaluation.failed();
    if worst == 0 {
        // Nothing asked for below the score: no empty "Worst tasks:" header.
        if failed > 0 {
            outln!("Failed rollouts: {failed} (scored 0)");
        }
        return;
    }
    if failed > 0 {
        outln!("Failed rollouts: {failed} (scored 0; reasons below)");
    }
    outln!();
    outln!("Worst tasks:");
    outln!("{}", evaluation.feedback_digest());
}

fn json_report(
    session: &Session,
    split: SplitChoice,
    evaluation: &Evaluation,
) -> serde_json::Value {
    let usage = evaluation.usage();
    // Unknown (null) when a model called has no price.
    let spent = session.ledger().total();
    let cost = (spent.unpriced_calls == 0).then_some(spent.usd);
    json!({
        "config": session.config.path.display().to_string(),
        "skill": session.skill_path.display().to_string(),
        "skill_name": session.skill.name,
        "split": format!("{split:?}").to_lowercase(),
        "score": evaluation.score(),
        "tasks": evaluation.size(),
        "failed": evaluation.failed(),
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        "cost_usd": cost,
        "items": evaluation.items.iter().map(|item| json!({
            "id": item.task_id(),
            "score": item.score(),
            "output": item.rollout.output,
            "error": item.rollout.error,
            "feedback": item.result.feedback,
            "breakdown": item.result.breakdown,
            "latency_ms": item.rollout.latency_ms,
        })).collect::<Vec<_>>(),
    })
}
