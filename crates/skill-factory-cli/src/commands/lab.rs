//! Classifier mode: `optimize` of a `kind: classifier` config, and the `lab` commands.
//!
//! Exit codes: 0 done; 2 a user error (bad config or probe set, a sealed split asked for, an
//! offline lab that needs requests); 3 some System One requests failed (their examples count
//! as misses; rerun to fill the cache).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use skill_factory_io::output::write_atomic;
use skill_factory_lab::LabError;
use skill_factory_lab::answers::lab::AskReport;
use skill_factory_lab::answers::table::AnswerTable;
use skill_factory_lab::answers::{drift, noise};
use skill_factory_lab::data::dataset::Example;
use skill_factory_lab::data::seal::{Seal, refuse_sealed};
use skill_factory_lab::data::splits::Split;
use skill_factory_lab::measure::evaluate::{Policy, Reports, evaluate_split, question_stats};
use skill_factory_lab::measure::metrics::pct;
use skill_factory_lab::measure::policy::PolicySpec;
use skill_factory_lab::optimizer::reflect;
use skill_factory_lab::optimizer::select::{Selection, pareto};
use skill_factory_lab::probe::probeset::ProbeSet;
use skill_factory_lab::probe::question::Bank;
use skill_factory_lab::run::report;
use skill_factory_lab::run::svg::splits_svg;
use skill_factory_lab::run::workspace::Project;
use skill_factory_lab::run::{
    self, Opened, asked_of, examples_of, reports_of, svg_rows, table_rows,
};
use skill_factory_pycompat::float::thousands;

use super::lab_open::{open, parse_splits};
use super::{NOTHING_WORKED, lab_export};
use crate::cli::{LabAction, LabArgs};
use crate::output::{errln, outln};

/// The exit code when some System One requests failed.
const REQUESTS_FAILED: u8 = NOTHING_WORKED;

/// How often the ask progress line is printed, in requests.
const PROGRESS_EVERY: usize = 200;

fn progress(done: usize, total: usize) {
    if done.is_multiple_of(PROGRESS_EVERY) && done < total {
        errln!("asked {done}/{total} requests");
    }
}

/// Refuses an `--fpr` that is not a rate, before anything is read or asked.
fn check_rate(rate: f64) -> anyhow::Result<()> {
    if !(0.0..1.0).contains(&rate) {
        bail!("--fpr must be a rate at least 0 and below 1 (0.01 = 1%), got {rate}");
    }
    Ok(())
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
    let opened = open(config, out)?;
    let project = &opened.project;
    outln!(
        "Optimizing probe set {} (classifier mode)...",
        project.config.name
    );
    let plan = run::plan(&opened)?;
    errln!(
        "{} examples, {} questions: {} requests to send, about ${:.4}",
        plan.examples,
        plan.questions,
        plan.requests,
        plan.usd
    );
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

/// Writes a report file whole (a killed run leaves the previous one), naming it on failure.
fn write_whole(path: &Path, text: &str) -> anyhow::Result<()> {
    write_atomic(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
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
        } => select(&config.config, fpr, max_questions, out),
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
        } => report(&config.config, before, after, &splits, ask, out).await,
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
        } => recalibrate(&config.config, &model, probeset, fpr, &out).await,
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
        } => import_scanner(&lab, &out, budget, questions.as_deref()),
        LabAction::Export {
            probeset,
            out,
            format,
            config,
            policy,
        } => lab_export::export(
            &probeset,
            &out,
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
    let Opened { project, lab, .. } = open(config, None)?;
    let probeset = probeset_or(probeset, || Ok(project.best()?))?;
    // Policies may read pool questions the score does not: the table holds them all.
    let bank = pool_and(&project, &probeset)?;
    let mut policies = Vec::new();
    if files.is_empty() {
        let (policy, spec) = project.policy()?;
        if spec.is_some() {
            policies.push(policy);
        }
        policies.push(Policy::threshold());
    }
    for file in files {
        let spec = PolicySpec::load(file, &|id| bank.contains(id))?;
        policies.push(spec.policy());
    }
    let examples = examples_of(&project, &splits);
    let table = lab.table(&examples, &asked_of(&bank)?, probeset.state_budget, 0);
    for policy in &policies {
        let reports = reports_of(&project, &splits, &table, &probeset, policy);
        run::policy_held(policy)?;
        let per_split: Vec<String> = reports
            .iter()
            .map(|(split, report)| {
                let levels: Vec<String> = report
                    .levels
                    .iter()
                    .map(|(level, r)| {
                        // Counts are of this level or a higher one; recall to one decimal, the
                        // false-positive rate to two (the reference's layout).
                        format!(
                            "{level} {}/{} ({:.1}%) fp {}/{} ({:.2}%)",
                            r.tp,
                            r.positives(),
                            r.recall() * 100.0,
                            r.fp,
                            r.negatives(),
                            r.fpr() * 100.0
                        )
                    })
                    .collect();
                format!("{}: {}", split.name(), levels.join(", "))
            })
            .collect();
        outln!("{:<28} {}", policy.name, per_split.join("   "));
    }
    Ok(ExitCode::SUCCESS)
}

/// `lab import-scanner LAB --out DIR`.
fn import_scanner(
    lab: &Path,
    out: &Path,
    budget: usize,
    questions: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let imported = skill_factory_lab::data::scanner::import(lab, out, budget, questions)?;
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
    outln!(
        "Write a config with `kind: classifier`, `dataset`, `probeset` and `workspace: .` to use it."
    );
    Ok(ExitCode::SUCCESS)
}

/// The workspace's pool with `probeset`'s questions added (a probe set given by file may ask
/// questions the pool lacks).
fn pool_and(project: &Project, probeset: &ProbeSet) -> anyhow::Result<Bank> {
    let mut bank = project.pool()?;
    bank.merge(&probeset.bank).map_err(anyhow::Error::msg)?;
    Ok(bank)
}

fn probeset_or(
    path: Option<PathBuf>,
    default: impl FnOnce() -> anyhow::Result<ProbeSet>,
) -> anyhow::Result<ProbeSet> {
    match path {
        Some(path) => Ok(ProbeSet::load(&path)?),
        None => default(),
    }
}

async fn ask(
    config: &Path,
    questions: Option<PathBuf>,
    splits: &str,
    budget: Option<usize>,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let splits = parse_splits("--splits", splits)?;
    refuse_sealed(&splits, "lab ask")?;
    let Opened { project, lab, .. } = open(config, None)?;
    let extra = questions.as_deref().map(Bank::load).transpose()?;
    let bank = match &extra {
        Some(bank) => bank.clone(),
        None => project.pool()?,
    };
    let budget = match budget {
        Some(budget) => budget,
        None => project.best()?.state_budget,
    };
    let asked = asked_of(&bank)?;
    let examples = examples_of(&project, &splits);
    let jobs = lab.plan(&examples, &asked, budget, 0);
    outln!(
        "{} examples, {} questions: {} requests to send, about ${:.4}",
        examples.len(),
        asked.len(),
        jobs.len(),
        lab.estimate_usd(&jobs)
    );
    if dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let report = lab.ask(&examples, &asked, budget, 0, &progress).await?;
    outln!("{}", report.summary());
    for error in report.errors.iter().take(3) {
        errln!("error: {error}");
    }
    if let (Some(extra), Some(path)) = (&extra, &questions) {
        let mut pool = project.pool()?;
        let added = pool.merge(extra).map_err(|e| {
            anyhow::anyhow!("{}: {e}; give the new question another id", path.display())
        })?;
        pool.save(&project.file("pool.json"))?;
        outln!(
            "pool.json: {} question(s) added, {} in all",
            added.len(),
            pool.len()
        );
    }
    Ok(if report.failed > 0 {
        ExitCode::from(REQUESTS_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Warns when answers came from another version than the one the threshold is pinned to.
fn drift_warning(probeset: &ProbeSet, table: &AnswerTable) -> Option<String> {
    let pinned = probeset.pinned_version.as_deref()?;
    let mut others: BTreeMap<&str, usize> = BTreeMap::new();
    for row in table.rows.values() {
        for (version, n) in &row.versions {
            if version != pinned {
                *others.entry(version).or_default() += n;
            }
        }
    }
    if others.is_empty() {
        return None;
    }
    let list: Vec<String> = others.iter().map(|(v, n)| format!("{v} ({n})")).collect();
    Some(format!(
        "thresholds are pinned to {pinned}, but answers came from {}: measure the probe set again on that version before trusting the threshold",
        list.join(", ")
    ))
}

fn score(
    config: &Path,
    probeset: Option<PathBuf>,
    splits: &str,
    questions: bool,
    failures: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let splits = parse_splits("--splits", splits)?;
    refuse_sealed(&splits, "lab score")?;
    let failures = match failures {
        Some(name) => {
            let parsed = parse_splits("--failures", name)?;
            let [split] = parsed[..] else {
                bail!("--failures {name}: give one split (train or val)");
            };
            refuse_sealed(&[split], "lab score --failures")?;
            Some(split)
        }
        None => None,
    };
    let Opened { project, lab, .. } = open(config, None)?;
    let probeset = probeset_or(probeset, || Ok(project.best()?))?;
    let examples = examples_of(&project, &splits);
    let asked = asked_of(&probeset.bank)?;
    let table = lab.table(&examples, &asked, probeset.state_budget, 0);
    if let Some(warning) = drift_warning(&probeset, &table) {
        errln!("WARNING: {warning}");
    }
    let (policy, _) = project.policy()?;
    let reports = reports_of(&project, &splits, &table, &probeset, &policy);
    run::policy_held(&policy)?;
    outln!(
        "{} ({}, {} questions): {} >= {}",
        probeset.name,
        probeset.hash12(),
        probeset.bank.len(),
        probeset.score.describe(),
        probeset
            .threshold
            .map_or_else(|| "no threshold yet".to_string(), |t| format!("{t:.4}"))
    );
    outln!(
        "{}",
        report::before_after_table(
            None,
            &reports,
            policy.detect_levels(),
            &table_rows(&project, &splits, &reports)
        )
    );
    if questions {
        let pool = project.pool()?;
        let pool_asked = asked_of(&pool)?;
        let train_val = examples_of(&project, &[Split::Train, Split::Val]);
        let pool_table = lab.table(&train_val, &pool_asked, probeset.state_budget, 0);
        let by_split = [
            (Split::Train, project.split(Split::Train)),
            (Split::Val, project.split(Split::Val)),
        ];
        let budget = project.config.objective.fpr_budget;
        let mut stats = question_stats(&pool.ids(), &by_split, &pool_table, budget)
            .map_err(anyhow::Error::msg)?;
        stats.sort_by(|a, b| b.auc(Split::Train).total_cmp(&a.auc(Split::Train)));
        outln!(
            "\n| Question | In set | Train AUC | Val AUC | Val recall at {} |",
            pct(budget)
        );
        outln!("|---|---|---|---|---|");
        for stat in stats.iter().take(200) {
            let val = stat.splits.get(&Split::Val);
            outln!(
                "| {} | {} | {:.3} | {:.3} | {} |",
                stat.qid,
                if probeset.bank.contains(&stat.qid) {
                    "yes"
                } else {
                    ""
                },
                stat.auc(Split::Train),
                stat.auc(Split::Val),
                val.map_or_else(
                    || "-".to_string(),
                    |v| format!("{} at {}", pct(v.rates.recall()), pct(v.rates.fpr()))
                )
            );
        }
    }
    if let Some(split) = failures {
        // Every pool question answered for the split, and how each separates on train.
        let bank = pool_and(&project, &probeset)?;
        let asked = asked_of(&bank)?;
        let shown = examples_of(&project, &[Split::Train, split]);
        let table = lab.table(&shown, &asked, probeset.state_budget, 0);
        let train = [(Split::Train, project.split(Split::Train))];
        let budget = project.config.objective.fpr_budget;
        let mut stats =
            question_stats(&bank.ids(), &train, &table, budget).map_err(anyhow::Error::msg)?;
        stats.sort_by(|a, b| b.auc(Split::Train).total_cmp(&a.auc(Split::Train)));
        let digest = reflect::failure_digest(&reflect::DigestInput {
            probeset: &probeset,
            train: project.split(split),
            label: &split.name().to_uppercase(),
            table: &table,
            stats: &stats,
            max_state_budget: project.config.optimizer.max_state_budget,
            shown: FAILURES_SHOWN,
            excerpt: FAILURES_EXCERPT,
        });
        outln!("\n{digest}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Examples and state characters `lab score --failures` shows.
const FAILURES_SHOWN: usize = 50;
/// Characters of each state `lab score --failures` shows.
const FAILURES_EXCERPT: usize = 300;

fn select(
    config: &Path,
    fpr: Option<f64>,
    max_questions: usize,
    out: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let Opened { project, lab, .. } = open(config, None)?;
    let budget = fpr.unwrap_or(project.config.objective.fpr_budget);
    check_rate(budget)?;
    if max_questions == 0 {
        bail!("--max-questions must be at least 1");
    }
    let pool = project.pool()?;
    let best = project.best()?;
    let asked = asked_of(&pool)?;
    let train_val = examples_of(&project, &[Split::Train, Split::Val]);
    let table = lab.table(&train_val, &asked, best.state_budget, 0);
    let train: Vec<&Example> = project.split(Split::Train).iter().collect();
    let ids = pool.ids();
    let mut candidates = Selection::new(&ids, &train, &table)
        .candidates(budget, max_questions)
        .map_err(anyhow::Error::msg)?;
    candidates.sort_by_key(|c| std::cmp::Reverse(c.rank_key()));
    outln!(
        "{} candidates fitted on train at {:.2}% false positives",
        candidates.len(),
        budget * 100.0
    );
    let (policy, _) = project.policy()?;
    // Measured anew here: the best's pinned version and notes do not carry over.
    let mut base = best.clone();
    base.name.clone_from(&project.config.name);
    base.pinned_version = None;
    base.calibration = Default::default();
    let as_probeset =
        |c: &skill_factory_lab::optimizer::select::Candidate| -> anyhow::Result<ProbeSet> {
            c.probe_set(&base, &pool, &[]).map_err(anyhow::Error::msg)
        };
    outln!("| Candidate | Questions | Threshold | Train recall at FPR | Val recall at FPR |");
    outln!("|---|---|---|---|---|");
    for candidate in candidates.iter().take(15) {
        let probeset = as_probeset(candidate)?;
        let val = evaluate_split(
            Split::Val,
            project.split(Split::Val),
            &table,
            &probeset,
            &policy,
        );
        let val = val.rates(None).map_or_else(
            || "-".to_string(),
            |r| format!("{} at {}", pct(r.recall()), pct(r.fpr())),
        );
        outln!(
            "| {} | {} | {:.4} | {} at {} | {} |",
            candidate.name,
            candidate.questions.len(),
            candidate.threshold,
            pct(candidate.train.recall()),
            pct(candidate.train.fpr()),
            val
        );
    }
    outln!("\nPareto front (train):");
    outln!("| Candidate | Questions | Train recall | Train FPR |");
    outln!("|---|---|---|---|");
    for candidate in pareto(&candidates) {
        outln!(
            "| {} | {} | {} | {} |",
            candidate.name,
            candidate.questions.len(),
            pct(candidate.train.recall()),
            pct(candidate.train.fpr())
        );
    }
    if let Some(path) = out {
        let Some(top) = candidates.first() else {
            bail!(
                "no candidate to write: the pool has no answered question on train (run `skill-factory lab ask -c {}` first)",
                config.display()
            );
        };
        as_probeset(top)?.save(&path)?;
        outln!("wrote {} ({})", path.display(), top.name);
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
    let probeset = probeset_or(probeset, || Ok(project.best()?))?;
    let baseline = probeset_or(baseline, || Ok(project.baseline()?))?;
    let mut seal = Seal::load(project.dir())?;
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
    ask_first: bool,
    out: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let Opened { project, lab, .. } = open(config, None)?;
    let splits: Vec<Split> = parse_splits("--splits", splits)?
        .into_iter()
        .filter(|&s| !project.split(s).is_empty())
        .collect();
    let before = probeset_or(before, || Ok(project.baseline()?))?;
    let after = probeset_or(after, || Ok(project.best()?))?;
    let sealed: Vec<Split> = splits.iter().copied().filter(|s| s.is_sealed()).collect();
    let mut seal = Seal::load(project.dir())?;
    if !sealed.is_empty() {
        seal.open(&after.sha256(), &sealed, Some(&before.sha256()))?;
        seal.save()?;
    }
    let examples = examples_of(&project, &splits);
    let mut spend = AskReport::default();
    let mut tables = Vec::new();
    for probeset in [&before, &after] {
        let asked = asked_of(&probeset.bank)?;
        if ask_first {
            spend.absorb(
                &lab.ask(&examples, &asked, probeset.state_budget, 0, &progress)
                    .await?,
            );
        }
        tables.push(lab.table(&examples, &asked, probeset.state_budget, 0));
    }
    let (policy, _) = project.policy()?;
    let before_reports = reports_of(&project, &splits, &tables[0], &before, &policy);
    let after_reports = reports_of(&project, &splits, &tables[1], &after, &policy);
    run::policy_held(&policy)?;
    let levels = policy.detect_levels().to_vec();
    let table = report::before_after_table(
        Some(&before_reports),
        &after_reports,
        &levels,
        &table_rows(&project, &splits, &after_reports),
    );
    outln!(
        "before: {} ({}); after: {} ({})",
        before.name,
        before.hash12(),
        after.name,
        after.hash12()
    );
    outln!("{table}");
    outln!("seal: {}", seal.summary());
    if ask_first && spend.planned > 0 {
        outln!("{}", spend.summary());
    }
    let unanswered = examples
        .iter()
        .filter(|e| {
            e.status(after.state_budget) == skill_factory_lab::data::dataset::Status::Judged
                && tables[1].answers(&e.id).is_empty()
        })
        .count();
    if unanswered > 0 && !ask_first {
        errln!(
            "note: {unanswered} judged example(s) have no cached answers and count as misses; rerun with --ask to buy them"
        );
    }
    if let Some(dir) = out {
        let text = format!(
            "# Report: {} against {}\n\n![before and after](report-splits.svg)\n\n{table}\n\nseal: {}\n",
            after.name,
            before.name,
            seal.summary()
        );
        write_whole(&dir.join("report-splits.md"), &text)?;
        let svg = splits_svg(
            &after.name,
            &svg_rows(Some(&before_reports), &after_reports, None),
        );
        write_whole(&dir.join("report-splits.svg"), &svg)?;
        outln!(
            "wrote {} and report-splits.svg",
            dir.join("report-splits.md").display()
        );
    }
    if spend.failed > 0 {
        errln!(
            "WARNING: {} requests failed; those examples count as misses above. Rerun with --ask.",
            spend.failed
        );
        return Ok(ExitCode::from(REQUESTS_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

async fn reask(
    config: &Path,
    probeset: Option<PathBuf>,
    split: &str,
    replicate: u32,
) -> anyhow::Result<ExitCode> {
    let splits = parse_splits("--split", split)?;
    refuse_sealed(&splits, "lab reask")?;
    let Opened { project, lab, .. } = open(config, None)?;
    let probeset = probeset_or(probeset, || Ok(project.best()?))?;
    let examples = examples_of(&project, &splits);
    let result = noise::reask(&lab, &probeset, &examples, replicate, &progress).await?;
    outln!("{}", result.summary());
    for id in result.flipped.iter().take(20) {
        outln!("  flipped: {id}");
    }
    Ok(if result.failed > 0 {
        ExitCode::from(REQUESTS_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

async fn recalibrate(
    config: &Path,
    model: &str,
    probeset: Option<PathBuf>,
    fpr: Option<f64>,
    out: &Path,
) -> anyhow::Result<ExitCode> {
    if let Some(rate) = fpr {
        check_rate(rate)?;
    }
    let Opened { project, lab, .. } = open(config, None)?;
    let probeset = probeset_or(probeset, || Ok(project.best()?))?;
    let new_lab =
        project
            .config
            .lab_for_model(model, lab.shared_cache(), &run::environment(config)?)?;
    let result = match drift::recalibrate(
        &probeset,
        &lab,
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

fn status(config: &Path) -> anyhow::Result<ExitCode> {
    let Opened { project, lab, .. } = open(config, None)?;
    let best = project.best()?;
    outln!("workspace: {}", project.dir().display());
    let counts: Vec<String> = Split::ALL
        .iter()
        .map(|&s| {
            let (p, n) = project.splits.counts(s);
            format!("{} {p}+/{n}-", s.name())
        })
        .collect();
    outln!("splits: {}", counts.join(", "));
    outln!(
        "{}",
        report::coverage_table(&report::coverage(
            &Split::ALL.map(|s| (s, project.split(s))),
            best.state_budget
        ))
    );
    outln!(
        "cache: {} answers; lab {}",
        lab.cache().len(),
        match lab.offline_reason() {
            None => format!("online: {}", lab.model()),
            Some(reason) => format!("offline: {reason}"),
        }
    );
    outln!(
        "probe set: {} ({}), {} questions, state budget {}",
        best.name,
        best.hash12(),
        best.bank.len(),
        thousands(best.state_budget as u64)
    );
    let pool = project.pool()?;
    outln!("pool: {} questions", pool.len());
    let train_val = examples_of(&project, &[Split::Train, Split::Val]);
    outln!(
        "one pass over train+val: ${:.4} for the probe set, ${:.4} for the pool",
        lab.cost_per_pass(&train_val, best.bank.len(), best.state_budget),
        lab.cost_per_pass(&train_val, pool.len(), best.state_budget)
    );
    outln!("seal: {}", Seal::load(project.dir())?.summary());
    let objective = &project.config.objective;
    outln!(
        "objective: {} recall at {} false positives",
        objective.split,
        pct(objective.fpr_budget)
    );
    Ok(ExitCode::SUCCESS)
}
