//! Classifier mode: `optimize` of a `kind: classifier` config, and the `lab` commands.
//!
//! Exit codes: 0 done; 2 a user error (bad config or probe set, a sealed split asked for, an
//! offline lab that needs requests); 3 some System One requests failed (their examples count
//! as misses; rerun to fill the cache).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use skill_factory_io::replace::Outputs;
use skill_factory_lab::LabError;
use skill_factory_lab::answers::lab::AskReport;
use skill_factory_lab::answers::{drift, noise};
use skill_factory_lab::data::seal::refuse_sealed;
use skill_factory_lab::data::split::Split;
use skill_factory_lab::lock::WorkspaceLock;
use skill_factory_lab::measure::evaluate::Reports;
use skill_factory_lab::output::Kind;
use skill_factory_lab::run::ask::{AskRequest, Asking};
use skill_factory_lab::run::compare::{self, CompareRequest};
use skill_factory_lab::run::score::{self, ScoreRequest};
use skill_factory_lab::run::select::{self, SelectRequest};
use skill_factory_lab::run::workspace::Project;
use skill_factory_lab::run::{self, Opened, check_rate, examples_of};

use super::lab_open::{open, open_to_change, parse_splits, waiting};
use super::{NOTHING_WORKED, lab_export};
use crate::cli::{LabAction, LabArgs};
use crate::output::{errln, out, outln};

/// The exit code when some System One requests failed.
const REQUESTS_FAILED: u8 = NOTHING_WORKED;

/// 0, or [`REQUESTS_FAILED`] when `failed` requests (their examples count as misses) ask for a
/// rerun.
fn exit_code(failed: usize) -> ExitCode {
    if failed > 0 {
        ExitCode::from(REQUESTS_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// How often the ask progress line is printed, in requests.
const PROGRESS_EVERY: usize = 200;

fn progress(done: usize, total: usize) {
    if done.is_multiple_of(PROGRESS_EVERY) && done < total {
        errln!("asked {done}/{total} requests");
    }
}

/// Prints the failed requests of `report` and says whether there were any.
fn warn_failures(report: &AskReport) -> bool {
    if report.failed == 0 {
        return false;
    }
    errln!(
        "WARNING: {} System One requests failed; their examples counted as misses (see report.md). The answers that came are cached: run the same command again to ask only for the missing ones. First error: {}",
        report.failed,
        report.errors.first().map_or("unknown", String::as_str)
    );
    true
}

/// `optimize -c CONFIG` of a classifier config.
pub async fn optimize_classifier(config: &Path, out: Option<&Path>) -> anyhow::Result<ExitCode> {
    let started = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let opened = open_to_change(config, out, "optimize")?;
    let project = &opened.project;
    let plan = run::plan(&opened)?;
    outln!(
        "Optimizing probe set {} (classifier mode)...",
        project.config.name
    );
    errln!("{plan}");
    let outcome = run::optimize(&opened, &started, &progress).await?;
    let objective = &project.config.objective;
    if outcome.spend.planned > 0 {
        outln!("lab: {}", outcome.spend.summary());
    }
    let rates = |reports: &Reports, split: Split| {
        reports
            .get(&split)
            .and_then(|r| r.rates(objective.level.as_deref()))
            .map_or_else(
                || "-".to_string(),
                |r| format!("{:.1}%@{:.2}%", r.recall() * 100.0, r.fpr() * 100.0),
            )
    };
    for round in &outcome.history {
        let (train, val) = (
            rates(&round.reports, Split::Train),
            rates(&round.reports, Split::Val),
        );
        if round.round == 0 {
            outln!("seed: train {train}  val {val}");
        } else {
            outln!(
                "round {} ({}): {} train {train}  val {val} {}",
                round.round,
                round.change,
                round.candidate,
                if round.accepted {
                    "kept".to_string()
                } else {
                    format!("refused: {}", round.reasons.join("; "))
                }
            );
        }
    }
    let recall = |reports: &Reports| {
        reports
            .get(&objective.split)
            .and_then(|r| r.rates(objective.level.as_deref()))
            .map_or(0.0, |r| r.recall())
    };
    outln!(
        "{} recall at {:.2}% false positives: {:.1}% → {:.1}%; spent ${:.4}",
        objective.split,
        objective.fpr_budget * 100.0,
        recall(&outcome.before) * 100.0,
        recall(&outcome.after) * 100.0,
        outcome.spend.usd
    );
    if let Some(round) = outcome.history.iter().skip(1).find(|r| r.accepted) {
        outln!(
            "Kept {}: {} >= {}",
            round.candidate,
            round.score,
            round
                .threshold
                .map_or_else(String::new, |t| format!("{t:.4}"))
        );
    } else if let Some(round) = outcome.history.get(1) {
        outln!(
            "Kept the seed: {} refused ({})",
            round.candidate,
            round.reasons.join("; ")
        );
    }
    outln!(
        "Artifacts: {} (probeset.json, report.md, splits.svg)",
        project.dir().display()
    );
    outln!(
        "Test and held-out splits stay sealed: `skill-factory lab freeze -c {0}` records this probe set, then `skill-factory lab report -c {0}` opens them.",
        config.display()
    );
    if outcome.served.len() > 1 {
        let versions: Vec<String> = outcome
            .served
            .iter()
            .map(|(version, n)| format!("{version} ({n})"))
            .collect();
        errln!(
            "WARNING: the cached answers came from several model versions: {}; the threshold was fitted on all of them and is pinned to {}. Use a fresh workspace (-o DIR) to measure one version alone",
            versions.join(", "),
            outcome.best.pinned_version.as_deref().unwrap_or("none")
        );
    }
    if warn_failures(&outcome.spend) {
        return Ok(ExitCode::from(REQUESTS_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs a `lab` command.
pub async fn run(args: LabArgs) -> anyhow::Result<ExitCode> {
    let Some(action) = args.action else {
        let mut help = <crate::cli::Cli as clap::CommandFactory>::command();
        if let Some(lab) = help.find_subcommand_mut("lab") {
            let _ = lab.print_help();
        }
        return Ok(ExitCode::from(1));
    };
    match action {
        LabAction::Ask {
            config,
            questions,
            splits,
            budget,
            dry_run,
        } => ask(&config.config, questions, &splits, budget, dry_run).await,
        LabAction::Score {
            config,
            probeset,
            splits,
            questions,
            failures,
        } => score(
            &config.config,
            probeset,
            &splits,
            questions,
            failures.as_deref(),
        ),
        LabAction::Select {
            config,
            fpr,
            max_questions,
            out,
            force,
        } => select(&config.config, fpr, max_questions, out, force),
        LabAction::Freeze {
            config,
            probeset,
            baseline,
            note,
            force,
        } => freeze(&config.config, probeset, baseline, &note, force),
        LabAction::Report {
            config,
            before,
            after,
            splits,
            ask,
            out,
            force,
        } => {
            let out = out.map(|dir| (dir, force));
            report(&config.config, before, after, &splits, ask, out).await
        }
        LabAction::Reask {
            config,
            probeset,
            split,
            replicate,
        } => reask(&config.config, probeset, &split, replicate).await,
        LabAction::Recalibrate {
            config,
            model,
            probeset,
            fpr,
            out,
            force,
        } => recalibrate(&config.config, &model, probeset, fpr, (&out, force)).await,
        LabAction::Status { config } => status(&config.config),
        LabAction::Simulate {
            config,
            policies,
            probeset,
            splits,
        } => simulate(&config.config, &policies, probeset, &splits),
        LabAction::ImportScanner {
            lab,
            out,
            budget,
            questions,
            force,
        } => import_scanner(&lab, &out, budget, questions.as_deref(), force),
        LabAction::Export {
            probeset,
            out,
            format,
            config,
            policy,
            force,
        } => lab_export::export(
            &probeset,
            (&out, force),
            format.as_deref(),
            config.as_deref(),
            policy.as_deref(),
        ),
        LabAction::Parity {
            probeset,
            artifact,
            production,
            config,
            policy,
            split,
            tolerance,
        } => lab_export::parity(
            &probeset,
            artifact.as_deref(),
            production.as_deref(),
            (config.as_deref(), policy.as_deref()),
            &split,
            tolerance,
        ),
    }
}

/// `lab simulate`: each policy replayed on the cached answers, per split and detect level.
fn simulate(
    config: &Path,
    files: &[PathBuf],
    probeset: Option<PathBuf>,
    splits: &str,
) -> anyhow::Result<ExitCode> {
    let splits = parse_splits("--splits", splits)?;
    refuse_sealed(&splits, "lab simulate")?;
    let opened = open(config, None)?;
    let simulated = run::simulate::simulate(
        &opened,
        &run::simulate::SimulateRequest {
            probeset: probeset.as_deref(),
            policies: files,
            splits: &splits,
        },
    )?;
    if let Some(note) = &simulated.note {
        errln!("note: {note}");
    }
    out!("{simulated}");
    Ok(ExitCode::SUCCESS)
}

/// `lab import-scanner LAB --out DIR`.
fn import_scanner(
    lab: &Path,
    out: &Path,
    budget: usize,
    questions: Option<&Path>,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let imported =
        skill_factory_lab::data::scanner::import(lab, out, budget, questions, force, &waiting)?;
    outln!(
        "imported {} examples into {}",
        imported.examples,
        out.display()
    );
    outln!("  dataset  {}", imported.dataset.display());
    outln!("  answers  {}", imported.answers.display());
    if let Some(pool) = &imported.pool {
        outln!("  pool     {}", pool.display());
    }
    if !imported.renamed.is_empty() {
        errln!(
            "note: {} bundle(s) share a skill folder with an earlier one; each got an id of its own in the folder's group (so they stay in one split): {}",
            imported.renamed.len(),
            imported.renamed.join("; ")
        );
    }
    outln!(
        "Write a config with `kind: classifier`, `dataset`, `probeset` and `workspace: .` to use it."
    );
    Ok(ExitCode::SUCCESS)
}

async fn ask(
    config: &Path,
    questions: Option<PathBuf>,
    splits: &str,
    budget: Option<usize>,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let request = AskRequest::new(parse_splits("--splits", splits)?, questions, budget)?;
    // A dry run buys and writes nothing: it need not wait for a command that does.
    let opened = if dry_run {
        open(config, None)?
    } else {
        open_to_change(config, None, "lab ask")?
    };
    let asking = Asking::new(&opened, request)?;
    outln!("{}", asking.plan());
    if dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let report = asking.ask(&progress).await?;
    outln!("{}", report.summary());
    for error in report.errors.iter().take(3) {
        errln!("error: {error}");
    }
    if let Some(growth) = asking.add_questions()? {
        outln!("{growth}");
    }
    Ok(exit_code(report.failed))
}

fn score(
    config: &Path,
    probeset: Option<PathBuf>,
    splits: &str,
    questions: bool,
    failures: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let mut request =
        ScoreRequest::new(parse_splits("--splits", splits)?, probeset)?.with_questions(questions);
    if let Some(name) = failures {
        let [split] = parse_splits("--failures", name)?[..] else {
            bail!("--failures {name}: give one split (train or val)");
        };
        request = request.with_failures(split)?;
    }
    let opened = open(config, None)?;
    let scored = score::score(&opened, request)?;
    if let Some(warning) = &scored.drift {
        errln!("WARNING: {warning}");
    }
    outln!("{scored}");
    if let Some(note) = &scored.note {
        errln!("note: {note}");
    }
    if let Some(table) = scored.questions()? {
        outln!("\n{table}");
    }
    if let Some(digest) = scored.failures()? {
        outln!("\n{digest}");
    }
    Ok(ExitCode::SUCCESS)
}

fn select(
    config: &Path,
    fpr: Option<f64>,
    max_questions: usize,
    out: Option<PathBuf>,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let opened = open(config, None)?;
    if let Some(path) = &out {
        outputs(&opened.project, force).check("--out", path, Kind::ProbeSet)?;
    }
    let selected = select::select(&opened, SelectRequest { fpr, max_questions })?;
    outln!("{selected}");
    if let Some(note) = &selected.note {
        errln!("note: {note}");
    }
    if let Some(path) = out {
        let name = selected.write_top(&path)?;
        outln!("wrote {} ({name})", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn freeze(
    config: &Path,
    probeset: Option<PathBuf>,
    baseline: Option<PathBuf>,
    note: &str,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let project = Project::load(config, None)?;
    let probeset = project.given_or_best(probeset.as_deref())?;
    let baseline = project.given_or_baseline(baseline.as_deref())?;
    if !force {
        project.refuse_unoptimized(&probeset, &baseline)?;
    }
    let _lock = WorkspaceLock::acquire(project.dir(), "lab freeze", &waiting)?;
    let mut seal = project.seal()?;
    seal.freeze(&probeset.sha256(), Some(&baseline.sha256()), note, force)?;
    seal.save()?;
    outln!(
        "frozen {} as {} against baseline {}; every report on test and held-out is now logged",
        probeset.name,
        probeset.hash12(),
        baseline.hash12()
    );
    Ok(ExitCode::SUCCESS)
}

async fn report(
    config: &Path,
    before: Option<PathBuf>,
    after: Option<PathBuf>,
    splits: &str,
    ask: bool,
    out: Option<(PathBuf, bool)>,
) -> anyhow::Result<ExitCode> {
    let opened = open_to_change(config, None, "lab report")?;
    if let Some((dir, force)) = &out {
        // Before the sealed splits are opened: a refused --out must not cost an opening.
        let mut outputs = outputs(&opened.project, *force);
        for given in [&before, &after].into_iter().flatten() {
            outputs.reads(given, "a probe set given");
        }
        outputs.check_folder("--out", dir)?;
        outputs.check("--out", &dir.join("report-splits.md"), Kind::ReportTable)?;
        outputs.check("--out", &dir.join("report-splits.svg"), Kind::Chart)?;
    }
    let request = CompareRequest {
        before,
        after,
        splits: parse_splits("--splits", splits)?,
        ask,
    };
    let compared = compare::compare(&opened, &request, &progress).await?;
    outln!("{compared}");
    if let Some(note) = &compared.note {
        errln!("note: {note}");
    }
    if let Some((dir, _)) = out {
        let written = compared.write(&dir)?;
        outln!("wrote {} and report-splits.svg", written.display());
    }
    let failed = compared.failed();
    if failed > 0 {
        errln!(
            "WARNING: {failed} requests failed; those examples count as misses above. Rerun with --ask."
        );
    }
    Ok(exit_code(failed))
}

async fn reask(
    config: &Path,
    probeset: Option<PathBuf>,
    split: &str,
    replicate: u32,
) -> anyhow::Result<ExitCode> {
    let splits = parse_splits("--split", split)?;
    refuse_sealed(&splits, "lab reask")?;
    let opened = open_to_change(config, None, "lab reask")?;
    let Opened { project, lab, .. } = &opened;
    let probeset = project.given_or_best(probeset.as_deref())?;
    let examples = examples_of(project, &splits);
    let result = noise::reask(lab, &probeset, &examples, replicate, &progress).await?;
    outln!("{}", result.summary());
    for id in result.flipped.iter().take(20) {
        outln!("  flipped: {id}");
    }
    Ok(exit_code(result.failed))
}

async fn recalibrate(
    config: &Path,
    model: &str,
    probeset: Option<PathBuf>,
    fpr: Option<f64>,
    (out, force): (&Path, bool),
) -> anyhow::Result<ExitCode> {
    if let Some(rate) = fpr {
        check_rate(rate)?;
    }
    let opened = open_to_change(config, None, "lab recalibrate")?;
    let Opened { project, lab, .. } = &opened;
    // Before anything is asked: a refused --out must not cost requests.
    let mut outputs = outputs(project, force);
    if let Some(given) = &probeset {
        outputs.reads(given, "the probe set given (--probeset)");
    }
    outputs.check("--out", out, Kind::ProbeSet)?;
    let probeset = project.given_or_best(probeset.as_deref())?;
    let new_lab =
        project
            .config
            .lab_for_model(model, lab.shared_cache(), &run::environment(config)?)?;
    let result = match drift::recalibrate(
        &probeset,
        lab,
        &new_lab,
        project.split(Split::Train),
        project.split(Split::Val),
        fpr,
        &progress,
    )
    .await
    {
        Err(LabError::RequestsFailed(message)) => {
            errln!("error: {message}");
            return Ok(ExitCode::from(REQUESTS_FAILED));
        }
        other => other?,
    };
    result.after.save(out)?;
    outln!("{}", result.summary());
    outln!(
        "wrote {} (model {}, sha256 {})",
        out.display(),
        result.after.model,
        result.after.hash12()
    );
    Ok(ExitCode::SUCCESS)
}

/// The output checks of a command on `project` given `force`: none of the workspace's inputs
/// may be written over.
fn outputs(project: &Project, force: bool) -> Outputs {
    let mut outputs = Outputs::new(force);
    outputs.reads_all(project.inputs());
    outputs
}

fn status(config: &Path) -> anyhow::Result<ExitCode> {
    let opened = open(config, None)?;
    outln!("{}", run::status::status(&opened)?);
    Ok(ExitCode::SUCCESS)
}
