//! `skill-factory evaluate`: score a skill on (part of) the dataset.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use serde_json::json;
use skill_factory::evaluate::evaluate;
use skill_factory::session::Session;
use skill_factory_core::{Evaluation, Task};

use crate::cli::{EvaluateArgs, SplitChoice};
use crate::output::{errln, outln};
use crate::progress::TaskBar;

/// Runs the command.
pub async fn run(args: EvaluateArgs) -> anyhow::Result<ExitCode> {
    let mut session = Session::open(&args.config, args.skill.as_deref())?;
    if args.no_cache {
        session.disable_cache();
    }
    let tasks = select_tasks(&session, args.split)?;
    let harness = session.harness()?;
    let metric = session.metric()?;
    let workers = session.config.config.harness.max_workers.max(1);
    let bar = Arc::new(TaskBar::new(tasks.len(), "evaluate"));
    let evaluation = evaluate(
        Arc::new(session.skill.clone()),
        &tasks,
        harness,
        metric,
        workers,
        bar.clone(),
    )
    .await;
    bar.finish();
    if let Some(line) = model_calls_line(&session) {
        errln!("{line}");
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json_report(&session, args.split, &evaluation))?
        );
    } else {
        print_text(&evaluation, args.worst);
    }
    Ok(ExitCode::SUCCESS)
}

/// How many calls went to the models and how many the cache answered, for stderr (stdout
/// stays the score and the report); nothing when no model was called over the network.
fn model_calls_line(session: &Session) -> Option<String> {
    let layers = session.layers_in_use()?;
    if let Some(replay) = layers.replay() {
        return Some(format!(
            "Model calls: answered from the recording {}",
            replay.path().display()
        ));
    }
    let sent = layers.scheduler().requests_sent();
    let (hits, misses) = layers
        .cache()
        .map(|cache| (cache.run_hits(), cache.run_misses()))
        .unwrap_or_default();
    if sent + hits + misses == 0 {
        return None;
    }
    Some(match layers.cache() {
        Some(_) => format!(
            "Model calls: {hits} answered from the cache, {misses} asked ({sent} HTTP requests sent)"
        ),
        None => format!("Model calls: {sent} HTTP requests sent (cache off)"),
    })
}

fn select_tasks(session: &Session, choice: SplitChoice) -> anyhow::Result<Vec<Task>> {
    let tasks = match choice {
        SplitChoice::All => return Ok(session.dataset.tasks.clone()),
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
    Ok(tasks)
}

fn print_text(evaluation: &Evaluation, worst: usize) {
    outln!(
        "Score: {:.3} over {} tasks",
        evaluation.score(),
        evaluation.size()
    );
    let failed = evaluation.failed();
    if failed > 0 {
        outln!("Failed rollouts: {failed} (scored 0; reasons below)");
    }
    outln!();
    outln!("Worst tasks:");
    outln!("{}", evaluation.feedback_digest(worst));
}

fn json_report(
    session: &Session,
    split: SplitChoice,
    evaluation: &Evaluation,
) -> serde_json::Value {
    let usage = evaluation.usage();
    json!({
        "config": session.config.path.display().to_string(),
        "skill": session.skill_path.display().to_string(),
        "skill_name": session.skill.name,
        "split": format!("{split:?}").to_lowercase(),
        "score": evaluation.score(),
        "tasks": evaluation.size(),
        "failed": evaluation.failed(),
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
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
