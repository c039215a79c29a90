//! `skill-factory evaluate` over several targets or skills: the transfer matrix.
//!
//! One row per skill (the config's seed, each `--skill`, and no skill at all), one column per
//! target (the config's `targets`, or those `--targets` names), each cell the score a
//! single-target `evaluate` of that skill on that target gives, with its interval, and its
//! drop from the row's best target. Every cell is measured on the same tasks and samples.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use skill_factory::evaluate::evaluate_summary;
use skill_factory::session::{Session, load_skill};
use skill_factory::{harness, metric};
use skill_factory_core::stats::Estimate;
use skill_factory_core::{Skill, Task};
use skill_factory_runfolder::result::ScoreEstimate;

use crate::cli::EvaluateArgs;
use crate::output::outln;
use crate::progress::TaskBar;

/// The label of the row of no skill at all.
pub const NO_SKILL: &str = "none";

/// The column of a config without `targets`: its `provider` and `harness`.
const TARGET: &str = "target";

/// One row of the matrix: a skill and where it came from.
struct Row {
    label: String,
    skill: Skill,
}

/// One cell: a skill's score on a target.
struct Cell {
    estimate: Estimate,
    failed: usize,
}

/// Scores every row's skill on every target of `targets` and prints the matrix.
pub async fn run(
    session: &Session,
    args: &EvaluateArgs,
    tasks: &[Task],
    targets: &[String],
) -> anyhow::Result<ExitCode> {
    let rows = rows(session, &args.skill)?;
    let own: Vec<Session> = targets
        .iter()
        .map(|name| session.for_target(name))
        .collect::<Result<_, _>>()?;
    // A config without targets has one: its own provider and harness.
    let (columns, sessions): (Vec<String>, Vec<&Session>) = if own.is_empty() {
        (vec![TARGET.to_owned()], vec![session])
    } else {
        (targets.to_vec(), own.iter().collect())
    };
    let samples: usize = sessions.iter().map(|s| s.noise().samples as usize).sum();
    let bar = Arc::new(TaskBar::new(rows.len() * tasks.len() * samples, "matrix"));
    crate::progress::watch_batches(session, Some(bar.bar().clone()))?;
    let mut cells: Vec<Vec<Cell>> = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut line = Vec::with_capacity(sessions.len());
        for target in &sessions {
            line.push(cell(target, &row.skill, tasks, bar.clone()).await?);
        }
        cells.push(line);
    }
    let targets = columns.as_slice();
    bar.finish();
    super::print_model_calls(session);
    let confidence = session.noise().confidence;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json_matrix(
                session, args, targets, &rows, &cells, tasks
            ))?
        );
    } else {
        print_matrix(targets, &rows, &cells, tasks.len(), confidence, args);
    }
    Ok(ExitCode::SUCCESS)
}

/// The seed, each skill given, and no skill at all.
fn rows(session: &Session, skills: &[PathBuf]) -> anyhow::Result<Vec<Row>> {
    // The config's seed, whatever skill the session was opened with.
    let seed = &session.config.config.skill;
    let mut rows = vec![Row {
        label: shown(seed),
        skill: load_skill(seed)?.0,
    }];
    // No skill at all is the last row whether asked for or not.
    for path in skills.iter().filter(|p| p.as_os_str() != NO_SKILL) {
        rows.push(Row {
            label: shown(path),
            skill: load_skill(path)?.0,
        });
    }
    rows.push(Row {
        label: NO_SKILL.to_owned(),
        skill: Skill::new(NO_SKILL, "", ""),
    });
    Ok(rows)
}

/// A path as a row's label: the file's name, with its folder when that is `SKILL.md`.
fn shown(path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    match path.parent().and_then(Path::file_name) {
        Some(folder) if name == "SKILL.md" => format!("{}/{name}", folder.to_string_lossy()),
        _ => name,
    }
}

/// `skill` on `tasks` through the target of `session`, as `evaluate` scores it there.
async fn cell(
    session: &Session,
    skill: &Skill,
    tasks: &[Task],
    bar: Arc<TaskBar>,
) -> anyhow::Result<Cell> {
    let harness = harness::from_config(session)?;
    let metric = metric::from_config(session)?;
    let noise = session.noise();
    let workers = session.workers(session.config.config.harness.max_workers.max(1));
    let summary = evaluate_summary(
        Arc::new(skill.clone()),
        tasks,
        noise.samples,
        harness,
        metric,
        workers,
        bar,
        0,
    )
    .await;
    Ok(Cell {
        estimate: noise.estimate(summary.per_task(), summary.weights()),
        failed: summary.failed(),
    })
}

/// How far each cell of a row lies below the row's best target.
fn drops(line: &[Cell]) -> Vec<f64> {
    let best = line
        .iter()
        .map(|c| c.estimate.mean)
        .fold(f64::NEG_INFINITY, f64::max);
    line.iter().map(|c| best - c.estimate.mean).collect()
}

fn print_matrix(
    targets: &[String],
    rows: &[Row],
    cells: &[Vec<Cell>],
    tasks: usize,
    confidence: f64,
    args: &EvaluateArgs,
) {
    outln!(
        "Scores on the {} tasks of the {} split, ± the half-width of each {}% interval, and each cell's drop from its row's best target:",
        tasks,
        format!("{:?}", args.split).to_lowercase(),
        confidence * 100.0
    );
    outln!();
    let text: Vec<Vec<String>> = cells
        .iter()
        .map(|line| {
            line.iter()
                .zip(drops(line))
                .map(|(cell, drop)| {
                    let failed = if cell.failed > 0 {
                        format!(" ({} failed)", cell.failed)
                    } else {
                        String::new()
                    };
                    let drop = if drop > 1e-9 {
                        format!("  −{drop:.3}")
                    } else {
                        String::new()
                    };
                    format!(
                        "{:.3} ± {:.3}{drop}{failed}",
                        cell.estimate.mean,
                        cell.estimate.half_width()
                    )
                })
                .collect()
        })
        .collect();
    let first = rows
        .iter()
        .map(|r| r.label.chars().count())
        .chain(["skill".len()])
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = targets
        .iter()
        .enumerate()
        .map(|(t, name)| {
            text.iter()
                .map(|line| line[t].chars().count())
                .chain([name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |first_cell: &str, others: &[String]| {
        let mut out = format!("{first_cell:<first$}");
        for (cell, width) in others.iter().zip(&widths) {
            out.push_str(&format!("  {cell:<width$}"));
        }
        out.trim_end().to_owned()
    };
    outln!("{}", line("skill", targets));
    for (row, cells) in rows.iter().zip(&text) {
        outln!("{}", line(&row.label, cells));
    }
}

fn json_matrix(
    session: &Session,
    args: &EvaluateArgs,
    targets: &[String],
    rows: &[Row],
    cells: &[Vec<Cell>],
    tasks: &[Task],
) -> Value {
    json!({
        "config": session.config.path.display().to_string(),
        "split": format!("{:?}", args.split).to_lowercase(),
        "tasks": tasks.len(),
        "targets": targets,
        "rows": rows.iter().zip(cells).map(|(row, line)| {
            let by_target: serde_json::Map<String, Value> = targets
                .iter()
                .zip(line)
                .zip(drops(line))
                .map(|((name, cell), drop)| {
                    let value = json!({
                        "score": cell.estimate.mean,
                        "interval": ScoreEstimate::from(&cell.estimate),
                        "drop": drop,
                        "samples": cell.estimate.samples,
                        "failed": cell.failed,
                    });
                    (name.clone(), value)
                })
                .collect();
            json!({"skill": row.label, "targets": by_target})
        }).collect::<Vec<_>>(),
    })
}
