//! `skill-factory evaluate`: score a skill on (part of) the dataset, or compare two.
//!
//! Every score comes with its interval (the standard error clustered by task), the noise
//! floor of the dataset (the smallest difference a paired comparison on it detects at 80%
//! power) and, with repeated samples (`--samples K`), the split of the variance into sampling
//! noise and the tasks' differences, and `pass@k` and `pass^k`. `--compare A B` scores two
//! skills on the same tasks and samples and says whether B is better, worse, or not
//! detectably different.
//!
//! Exit codes: 0 when it scored (for `--compare`: B is better, or no difference is
//! detectable), 1 when `--compare` finds B detectably worse, 2 on a user error, 3 when no
//! rollout reached its model or program (an unreachable provider, an agent CLI that does not
//! start): the score printed is then no measurement.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use serde_json::{Value, json};
use skill_factory::evaluate::{evaluate, evaluate_summary};
use skill_factory::harness::Harness;
use skill_factory::metric::Metric;
use skill_factory::noise::Noise;
use skill_factory::optimizer::StopReason;
use skill_factory::session::{Session, SessionOptions, load_skill};
use skill_factory::{harness, metric};
use skill_factory_core::stats::{self, Estimate, FloorBasis, NoiseFloor, Variance, Verdict};
use skill_factory_core::trigger::{LOADED_SKILLS, SHOULD_TRIGGER, TriggerCounts};
use skill_factory_core::{Evaluation, Skill, Summary, Task};
use skill_factory_runfolder::result::ScoreEstimate;

use super::verdict;
use crate::cli::{EvaluateArgs, FailIf, SplitChoice};
use crate::output::{errln, outln};
use crate::progress::TaskBar;

/// The power the noise floor is stated at.
const POWER: f64 = 0.8;

/// Runs the command.
pub async fn run(args: EvaluateArgs) -> anyhow::Result<ExitCode> {
    // Several skills are the rows of a matrix whose first is the seed.
    let instead = match args.skill.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    };
    let session = Session::open(
        &args.config,
        SessionOptions {
            skill: instead,
            no_cache: args.no_cache,
            budgeted: false,
            record: false,
            batch: args.batch,
            samples: args.samples,
        },
    )?;
    let targets = chosen_targets(&session, &args.targets)?;
    if targets.len() >= 2 || args.skill.len() >= 2 {
        let tasks = select_tasks(&session, args.split)?;
        if args.compare.is_some() {
            bail!(
                "--compare scores two skills on one target: pick it with --targets NAME (the config's targets are {})",
                targets.join(", ")
            );
        }
        return super::matrix::run(&session, &args, &tasks, &targets).await;
    }
    let session = match targets.first() {
        Some(name) if !session.target_names().is_empty() => session.for_target(name)?,
        _ => session,
    };
    let tasks = select_tasks(&session, args.split)?;
    for (flag, path) in [("--junit", &args.junit), ("--markdown", &args.markdown)] {
        if let Some(path) = path {
            session.check_output(flag, path)?;
        }
    }
    let harness = harness::from_config(&session)?;
    let metric = metric::from_config(&session)?;
    let started = std::time::Instant::now();
    if let Some(pair) = &args.compare {
        return compare(&session, &args, &tasks, (harness, metric), pair).await;
    }
    let noise = session.noise();
    let workers = session.workers(session.config.config.harness.max_workers.max(1));
    let bar = Arc::new(TaskBar::new(
        tasks.len() * noise.samples as usize,
        "evaluate",
    ));
    crate::progress::watch_batches(&session, Some(bar.bar().clone()))?;
    let skill = Arc::new(session.skill.clone());
    // The JSON report and the CI files list every rollout, and --fail-under is decided on the
    // whole; the text alone shows only the worst, so it keeps no other.
    let every = args.junit.is_some() || args.markdown.is_some() || args.fail_under.is_some();
    let summary = if args.json || every {
        let evaluation = evaluate(
            skill,
            &tasks,
            noise.samples,
            harness,
            metric,
            workers,
            bar.clone(),
        )
        .await;
        bar.finish();
        super::print_model_calls(&session);
        let summary = evaluation.summary(if args.json { 0 } else { args.worst });
        let figures = Figures::of(&summary, &noise);
        if args.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&json_report(
                    &session,
                    args.split,
                    &evaluation,
                    &figures,
                    &noise
                ))?
            );
        } else {
            print_text(&summary, args.worst, &noise);
        }
        let head = verdict::Scored {
            skill: session.skill_path.display().to_string(),
            estimate: &figures.estimate,
            evaluation: &evaluation,
        };
        let failure = verdict::failed(&figures.estimate, None, gates(&args));
        ci_files(
            &args,
            &session,
            (&head, None),
            (started.elapsed().as_secs_f64(), failure.as_deref()),
        )?;
        if let Some(code) = nothing_worked(&summary) {
            return Ok(code);
        }
        return Ok(exit(failure));
    } else {
        let summary = evaluate_summary(
            skill,
            &tasks,
            noise.samples,
            harness,
            metric,
            workers,
            bar.clone(),
            args.worst,
        )
        .await;
        bar.finish();
        super::print_model_calls(&session);
        print_text(&summary, args.worst, &noise);
        summary
    };
    nothing_worked(&summary).map_or(Ok(ExitCode::SUCCESS), Ok)
}

/// Exit 3, with the reason on stderr, when the evaluation measured nothing.
fn nothing_worked(summary: &Summary) -> Option<ExitCode> {
    let error = summary.measured_nothing()?;
    let stop = StopReason::RolloutsFailed {
        what: "the evaluation".to_owned(),
        error: error.to_owned(),
    };
    errln!("The evaluation measured nothing: {}.", stop.detail());
    Some(ExitCode::from(super::NOTHING_WORKED))
}

/// The targets to evaluate on: those `--targets` names, else every target of the config (none
/// for a config without `targets`, which has the one of `provider` and `harness`).
fn chosen_targets(session: &Session, asked: &[String]) -> anyhow::Result<Vec<String>> {
    let known = session.target_names();
    if asked.is_empty() {
        return Ok(known);
    }
    if known.is_empty() {
        bail!(
            "--targets names targets, but {} has no 'targets' list: add one (see docs/guide/targets.md)",
            session.config.path.display()
        );
    }
    for name in asked {
        if !known.contains(name) {
            bail!(
                "--targets names '{name}', which is not a target of {}: its targets are {}",
                session.config.path.display(),
                known.join(", ")
            );
        }
    }
    Ok(asked.to_vec())
}

/// The tasks of the split asked for; the whole dataset is borrowed, not copied.
fn select_tasks(session: &Session, choice: SplitChoice) -> anyhow::Result<Cow<'_, [Task]>> {
    let tasks = match choice {
        SplitChoice::All => return Ok(session.all_tasks()),
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

/// What the text and JSON reports say about a score, from its tasks' sample scores.
struct Figures {
    estimate: Estimate,
    floor: Option<NoiseFloor>,
    variance: Option<Variance>,
    /// `pass@k` and `pass^k` with k the samples per task, when there are several.
    passes: Option<(f64, f64)>,
    samples: u32,
    /// A trigger run's loads against what should have loaded.
    trigger: Option<TriggerCounts>,
}

impl Figures {
    fn of(summary: &Summary, noise: &Noise) -> Figures {
        let (per_task, weights) = (summary.per_task(), summary.weights());
        let estimate = noise.estimate(per_task, weights);
        let mut floor = stats::noise_floor(per_task, noise.confidence, POWER);
        // One sample of a run whose rollouts cannot vary: the floor is one task, not the
        // unpaired bound of a noisy run.
        if let Some(f) = &mut floor
            && f.basis == FloorBasis::Unpaired
            && !noise.is_noisy()
        {
            f.difference = 1.0 / estimate.tasks.max(1) as f64;
            f.basis = FloorBasis::NoSampling;
        }
        let passes = (noise.samples >= 2).then(|| {
            let of = |aggregate| {
                stats::estimate(
                    per_task,
                    weights,
                    aggregate,
                    noise.pass_score,
                    noise.confidence,
                )
                .mean
            };
            (
                of(stats::Aggregate::PassAtK),
                of(stats::Aggregate::PassAllK),
            )
        });
        Figures {
            estimate,
            floor,
            variance: stats::variance(per_task),
            passes,
            samples: noise.samples,
            trigger: summary.trigger(),
        }
    }

    /// The lines below the score line.
    fn lines(&self, noise: &Noise) -> Vec<String> {
        let e = &self.estimate;
        let mut lines = Vec::new();
        let percent = percent(e.confidence);
        match e.se {
            Some(se) => lines.push(format!(
                "{percent} interval: {:.3} – {:.3} (± {:.3}; standard error {se:.3}, clustered by task)",
                e.low,
                e.high,
                e.half_width()
            )),
            None => lines.push(format!(
                "{percent} interval: unknown (one task says nothing about the spread)"
            )),
        }
        if let Some(floor) = &self.floor {
            let why = match floor.basis {
                FloorBasis::Sampling => format!(
                    "the sampling noise measured from {} samples of each task; {} samples would halve it",
                    self.samples,
                    self.samples * 4
                ),
                FloorBasis::NoSampling if self.samples >= 2 => {
                    "repeated samples never disagreed, so one task's difference is real".to_string()
                }
                FloorBasis::NoSampling => {
                    "rollouts do not vary, so one task's difference is real".to_string()
                }
                FloorBasis::Unpaired => "one sample per task cannot tell sampling noise from the tasks' differences, so this is an upper bound: --samples 3 measures the noise".to_string(),
            };
            lines.push(format!(
                "Noise floor: {:.3}, the smallest difference a paired comparison on these tasks detects at {}% power ({why})",
                floor.difference,
                (floor.power * 100.0).round()
            ));
        }
        if let Some(split) = &self.variance {
            let within = split.within_share() * 100.0;
            lines.push(format!(
                "Variance: {within:.0}% within tasks (samples of a task disagree), {:.0}% between tasks",
                100.0 - within
            ));
        }
        if let Some((any, all)) = self.passes {
            let k = self.samples;
            lines.push(format!(
                "pass@{k}: {any:.3} (any of a task's {k} samples scores at least {}); pass^{k}: {all:.3} (all {k} do)",
                noise.pass_score
            ));
        }
        lines.push(format!("Regime: {}", regime(noise)));
        lines
    }

    fn json(&self) -> Value {
        let mut json = json!({
            "interval": [self.estimate.low, self.estimate.high],
            "se": self.estimate.se,
            "confidence": self.estimate.confidence,
            "noise_floor": self.floor.map(|f| json!({
                "difference": f.difference,
                "power": f.power,
                "basis": f.basis,
            })),
            "variance": self.variance.map(|v| json!({
                "within": v.within,
                "between": v.between,
                "within_share": v.within_share(),
            })),
            "pass_at_k": self.passes.map(|(any, _)| any),
            "pass_all_k": self.passes.map(|(_, all)| all),
        });
        // Only a trigger run's report has the key.
        if let (Value::Object(json), Some(counts)) = (&mut json, self.trigger) {
            json.insert("trigger".into(), json!(counts.figures()));
        }
        json
    }
}

/// `noisy (harness.temperature is 0.8: the target samples)`.
fn regime(noise: &Noise) -> String {
    let name = if noise.is_noisy() {
        "noisy"
    } else {
        "deterministic"
    };
    if noise.reasons.is_empty() {
        format!("{name} (the api harness at temperature 0, no LLM judge)")
    } else {
        format!("{name} ({})", noise.reasons.join("; "))
    }
}

fn percent(confidence: f64) -> String {
    let text = format!("{:.1}", confidence * 100.0);
    format!("{}%", text.strip_suffix(".0").unwrap_or(&text))
}

/// `over 8 tasks`, `over 8 tasks × 4 samples`.
fn over(tasks: usize, samples: u32) -> String {
    if samples > 1 {
        format!("over {tasks} tasks × {samples} samples")
    } else {
        format!("over {tasks} tasks")
    }
}

fn print_text(summary: &Summary, worst: usize, noise: &Noise) {
    let figures = Figures::of(summary, noise);
    // The score line is the Python tool's, so that scripts reading it keep working.
    outln!(
        "Score: {:.3} {}",
        figures.estimate.mean,
        over(summary.tasks(), noise.samples)
    );
    for line in figures.lines(noise) {
        outln!("{line}");
    }
    if let Some(trigger) = figures.trigger {
        outln!("Trigger: {}", trigger.line());
    }
    let failed = summary.failed();
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
    outln!("{}", summary.feedback_digest());
}

fn json_report(
    session: &Session,
    split: SplitChoice,
    evaluation: &Evaluation,
    figures: &Figures,
    noise: &Noise,
) -> Value {
    let usage = evaluation.usage();
    // Unknown (null) when a model called has no price.
    let spent = session.ledger().total();
    let cost = (spent.unpriced_calls == 0).then_some(spent.usd);
    let mut report = json!({
        "config": session.config.path.display().to_string(),
        "skill": session.skill_path.display().to_string(),
        "skill_name": session.skill.name,
        "split": format!("{split:?}").to_lowercase(),
        "score": figures.estimate.mean,
        "tasks": figures.estimate.tasks,
        "samples": noise.samples,
        "failed": evaluation.failed(),
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        "cost_usd": cost,
        "regime": noise.regime,
        "regime_reasons": noise.reasons,
        "items": evaluation.items.iter().map(|item| {
            let mut line = json!({
                "id": item.task_id(),
                "sample": item.rollout.sample,
                "score": item.score(),
                "output": item.rollout.output,
                "error": item.rollout.error,
                "feedback": item.result.feedback,
                "breakdown": item.result.breakdown,
                "latency_ms": item.rollout.latency_ms,
            });
            // A trigger run's decision: what should have loaded, what did, and what the
            // router said.
            for key in [SHOULD_TRIGGER, LOADED_SKILLS, "reply"] {
                if let (Value::Object(line), Some(value)) = (&mut line, item.rollout.metadata.get(key)) {
                    line.insert(key.to_owned(), value.clone());
                }
            }
            // A task that counts apart from the others (a trigger set beside the tasks).
            if let (Value::Object(line), true) = (&mut line, item.weight != 1.0) {
                line.insert("weight".to_owned(), Value::from(item.weight));
            }
            line
        }).collect::<Vec<_>>(),
    });
    if let (Value::Object(report), Value::Object(figures)) = (&mut report, figures.json()) {
        report.extend(figures);
    }
    report
}

/// `none`, the skill of no instructions at all.
const NONE: &str = "none";

/// The skill a `--compare` argument names: a SKILL.md or a folder holding one, or `none`.
fn compared_skill(path: &Path) -> anyhow::Result<Skill> {
    if path.as_os_str() == NONE {
        return Ok(Skill::new("none", "", ""));
    }
    Ok(load_skill(path)?.0)
}

/// `--compare A B`: both skills on the same tasks and samples, B − A paired by task.
async fn compare(
    session: &Session,
    args: &EvaluateArgs,
    tasks: &[Task],
    (harness, metric): (Arc<dyn Harness>, Arc<dyn Metric>),
    pair: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let [a_path, b_path] = pair else {
        bail!("--compare takes two skills: --compare A.md B.md (or none for no skill)");
    };
    let (a, b) = (compared_skill(a_path)?, compared_skill(b_path)?);
    let noise = session.noise();
    let workers = session.workers(session.config.config.harness.max_workers.max(1));
    let bar = Arc::new(TaskBar::new(
        2 * tasks.len() * noise.samples as usize,
        "compare",
    ));
    crate::progress::watch_batches(session, Some(bar.bar().clone()))?;
    let run = |skill: Skill| {
        evaluate(
            Arc::new(skill),
            tasks,
            noise.samples,
            harness.clone(),
            metric.clone(),
            workers,
            bar.clone(),
        )
    };
    let (scored_a, scored_b) = tokio::join!(run(a), run(b));
    bar.finish();
    super::print_model_calls(session);
    let (summary_a, summary_b) = (scored_a.summary(0), scored_b.summary(0));
    let weights = summary_a.weights();
    let difference = noise.paired(summary_a.per_task(), summary_b.per_task(), weights);
    let (fa, fb) = (
        Figures::of(&summary_a, &noise),
        Figures::of(&summary_b, &noise),
    );
    let verdict = difference.verdict();
    let floor = pooled_floor(
        (summary_a.per_task(), summary_b.per_task(), weights),
        &noise,
    );
    let name = |path: &Path| path.display().to_string();
    if args.json {
        let side = |path: &Path, figures: &Figures, evaluation: &Evaluation| {
            let mut side = json!({
                "skill": name(path),
                "score": figures.estimate.mean,
                "failed": evaluation.failed(),
            });
            if let (Value::Object(side), Value::Object(more)) = (&mut side, figures.json()) {
                side.extend(more);
            }
            side
        };
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "config": session.config.path.display().to_string(),
                "split": format!("{:?}", args.split).to_lowercase(),
                "tasks": difference.tasks,
                "samples": noise.samples,
                "regime": noise.regime,
                "regime_reasons": noise.reasons,
                "a": side(a_path, &fa, &scored_a),
                "b": side(b_path, &fb, &scored_b),
                "difference": ScoreEstimate::from(&difference),
                "verdict": verdict,
                "noise_floor": floor,
            }))?
        );
    } else {
        let percent = percent(noise.confidence);
        for (label, path, figures) in [("A", a_path, &fa), ("B", b_path, &fb)] {
            outln!(
                "{label}: {} scores {:.3} ({percent} interval {:.3} – {:.3})",
                name(path),
                figures.estimate.mean,
                figures.estimate.low,
                figures.estimate.high
            );
        }
        outln!(
            "B − A, paired by task and sample {}: {:+.1} points ({percent} interval {:+.1} to {:+.1})",
            over(difference.tasks, noise.samples),
            difference.mean * 100.0,
            difference.low * 100.0,
            difference.high * 100.0
        );
        let sentence = match verdict {
            Verdict::Better => "B is better".to_string(),
            Verdict::Worse => "B is worse".to_string(),
            Verdict::NoDetectableDifference => format!(
                "no detectable difference at this sample size{}",
                floor.map_or_else(String::new, |f| format!(
                    " (differences under about {:.1} points go unseen at {}% power: more tasks or --samples would see smaller ones)",
                    f * 100.0,
                    (POWER * 100.0).round()
                ))
            ),
        };
        outln!("Verdict: {sentence}.");
        outln!("Regime: {}", regime(&noise));
    }
    let base = verdict::Scored {
        skill: name(a_path),
        estimate: &fa.estimate,
        evaluation: &scored_a,
    };
    let head = verdict::Scored {
        skill: name(b_path),
        estimate: &fb.estimate,
        evaluation: &scored_b,
    };
    let compared = verdict::Compared {
        base,
        difference: &difference,
        verdict,
    };
    let failure = verdict::failed(&fb.estimate, Some(&compared), gates(args));
    ci_files(
        args,
        session,
        (&head, Some(&compared)),
        (started.elapsed().as_secs_f64(), failure.as_deref()),
    )?;
    if let Some(code) = nothing_worked(&summary_a).or_else(|| nothing_worked(&summary_b)) {
        return Ok(code);
    }
    Ok(exit(failure))
}

/// The `--fail-if` (by default `worse`) and `--fail-under` of the command.
fn gates(args: &EvaluateArgs) -> (FailIf, Option<f64>) {
    (args.fail_if.unwrap_or(FailIf::Worse), args.fail_under)
}

/// Exit 1 when a gate failed, saying why on stderr.
fn exit(failure: Option<String>) -> ExitCode {
    match failure {
        Some(why) => {
            errln!("Failed: {why}.");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}

/// Writes `--junit` and `--markdown` when asked for.
fn ci_files(
    args: &EvaluateArgs,
    session: &Session,
    (head, compared): (&verdict::Scored<'_>, Option<&verdict::Compared<'_>>),
    (seconds, failure): (f64, Option<&str>),
) -> anyhow::Result<()> {
    let noise = session.noise();
    let suite = session.skill.name.clone();
    if let Some(path) = &args.junit {
        let base = compared.map(|c| &c.base);
        let xml = verdict::junit(head, base, (&suite, noise.pass_score, seconds))?;
        verdict::write("--junit", path, &xml)?;
    }
    if let Some(path) = &args.markdown {
        let title = match compared {
            Some(c) => format!("{} against {}", head.skill, c.base.skill),
            None => head.skill.clone(),
        };
        let text = verdict::markdown(head, compared, (&title, noise.pass_score, failure));
        verdict::write("--markdown", path, &text)?;
    }
    Ok(())
}

/// The noise floor of the comparison itself: the smallest difference its paired design
/// detects at 80% power, from the spread of the per-task differences it saw.
fn pooled_floor((a, b, weights): (&[Vec<f64>], &[Vec<f64>], &[f64]), noise: &Noise) -> Option<f64> {
    let d = noise.paired(a, b, weights);
    let se = d.se?;
    let df = d.df;
    let z = stats::t_quantile(1.0 - noise.tail(), df) + stats::t_quantile(POWER, df);
    Some((z * se).max(1.0 / d.tasks.max(1) as f64))
}
