//! Runs: an optimization from a loaded [`Session`] to a complete run folder.
//!
//! [`optimize`] builds the harness, the metric and the optimizer (so that a bad config or a
//! missing key fails before any folder exists), creates `<runs dir>/<UTC timestamp>/` and
//! points `<runs dir>/latest` at it, runs the search with every event logged as it happens,
//! scores the seed and the best skill once on the held-out test split (when there is one, and
//! only after the search), and writes the run's files:
//!
//! | file | what |
//! |---|---|
//! | `report.md` | the reference's report, then test scores, spending, why the run stopped, the chart |
//! | `best_skill.md` | the best skill's SKILL.md |
//! | `best_skill/` | for a seed folder with `references/`: the best SKILL.md and its reference files, as `export` takes a folder |
//! | `result.json` | the reference's fields, then ours ([`result`]) |
//! | `config.yaml` | the config as run: roles resolved, paths absolute, API keys and secret-looking `env` values removed |
//! | `events.jsonl` | one line per event, append-only ([`events`]) |
//! | `rollouts.jsonl` | every rollout in full |
//! | `tasks.jsonl` | every task of the run, one line each: its split, id, input, expected answer and metadata (what the dashboard's per-task table shows beside the rollouts) |
//! | `candidates/NNN.md` | the seed (`000`) and every proposal, valid or not |
//! | `scores.svg` | validation score per round ([`chart`]) |
//! | `traffic.jsonl` | with `--record`: every model exchange, for `SKILL_FACTORY_REPLAY` |
//! | `mlflow.jsonl` | a tracked run's calls to its MLflow server, and which reached it ([`crate::tracking`]) |
//!
//! `report.md`, `best_skill.md`, `result.json` and `scores.svg` are first written before the
//! baseline (with no scores yet) and rewritten (atomically) after the baseline and after every
//! round, so a run killed at any point still leaves a readable folder; its `result.json` then
//! says `"stop_reason": "running"`.

pub mod chart;
pub mod events;
pub mod folder;
pub mod headline;
pub mod report;
pub mod result;
pub mod selection;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{SecondsFormat, Utc};
use serde_json::Value;
use skill_factory_core::target::across;
use skill_factory_core::{Skill, Split};
use skill_factory_io::output::write_atomic;
use skill_factory_io::path::below;
use skill_factory_io::secrets::looks_secret;
use skill_factory_llm::batch::BatchBoard;
use skill_factory_llm::url::EndpointUrl;
use skill_factory_llm::{Ledger, ProviderSettings};

use self::events::EventLog;
use self::folder::RunFolder;
use self::result::{RunInfo, TestEstimates, TestScores, result_json};
use crate::cancel::CancelToken;
use crate::config::{Role, resolve_paths};
use crate::error::EngineError;
use crate::harness::{self, Harness};
use crate::metric::{self, Metric};
use crate::optimizer::event::Fanout;
use crate::optimizer::honest::{self, Honesty};
use crate::optimizer::protect::Protected;
use crate::optimizer::{
    BackendSettings, Event, EventSink, OptimizationResult, Optimizer, OptimizerPlan, RunContext,
    SkillOptSettings, StopReason, identity,
};
use crate::session::Session;
use crate::tracking::{self, MlflowSettings, RunEnd, RunStart, RunStatus, Tracker};
use skill_factory_runfolder::lines::TaskLine;
use skill_factory_runfolder::names::{
    BEST_SKILL_DIR, BEST_SKILL_FILE, CHART_FILE, CONFIG_FILE, REPORT_FILE, RESULT_FILE, TASKS_FILE,
    TRAFFIC_FILE, candidate_file,
};
use skill_factory_runfolder::result::{ScoreEstimate, TargetRecord, TriggerRecord};

/// How to run an optimization.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Where runs go (`optimize -o`); else the config's `output.dir`, else
    /// `runs/<config name>` beside the config.
    pub runs_dir: Option<PathBuf>,
    /// Set it to stop the run after the calls in flight.
    pub cancel: CancelToken,
    /// Also receives every event (the command line's live display).
    pub display: Option<Arc<dyn EventSink>>,
}

/// A finished run.
pub struct RunOutcome {
    /// The search's result.
    pub result: OptimizationResult,
    /// What the run adds to it (test scores, spending, times).
    pub info: RunInfo,
    /// The run's folder.
    pub folder: RunFolder,
    /// The text of `report.md`.
    pub report: String,
}

fn folder_error(path: &Path, source: std::io::Error) -> EngineError {
    EngineError::RunFolder {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs the optimization a session's config describes and writes its run folder. Every call
/// of the run is admitted and booked by the session's ledger (open the session with
/// [`crate::session::SessionOptions::budgeted`] to hold it to the config's budget).
pub async fn optimize(session: &Session, options: RunOptions) -> Result<RunOutcome, EngineError> {
    let parts = RunParts::build(session)?;
    let Opened {
        recorder,
        context,
        tracker,
    } = open_folder(session, &parts, &options)?;
    let mut result = parts
        .optimizer
        .optimize(
            &session.skill,
            &parts.split.train,
            &parts.split.val,
            &context,
        )
        .await;
    if let Some(tasks) = &parts.selection {
        selection::pick(&context, &mut result, tasks).await;
    }
    let headline = headline::measure(&context, &session.skill, &mut result, &parts.split.val).await;
    let test = if parts.split.test.is_empty() {
        None
    } else {
        Some(score_test(&context, session, &result, &parts.split.test).await)
    };
    let held_out = if parts.split.test.is_empty() {
        ("val", parts.split.val.as_slice())
    } else {
        ("test", parts.split.test.as_slice())
    };
    let trigger = trigger_record(&context, (&session.skill, &result.best_skill), held_out);
    let targets = match &parts.targets {
        Some(targets) => {
            targets
                .measure(&context, (&session.skill, &result), held_out.0)
                .await
        }
        None => BTreeMap::new(),
    };
    let info = RunInfo {
        finished_at: Some(Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)),
        test,
        noise: Some(context.noise()),
        headline: Some(headline),
        trigger,
        targets,
        ..recorder.info_now()
    };
    let written = recorder.write_outputs(&result, &info);
    if written.is_ok() {
        context.emit(Event::RunFinished {
            baseline_score: result.baseline_score,
            best_score: result.best_score,
        });
    }
    if let Some(tracker) = &tracker {
        let status = match &result.stop {
            _ if written.is_err() => RunStatus::Failed,
            Some(StopReason::Cancelled) => RunStatus::Killed,
            Some(stop) if stop.is_failure() => RunStatus::Failed,
            _ => RunStatus::Finished,
        };
        tracker
            .finish(RunEnd {
                status,
                stop_reason: result.stop.as_ref().map(StopReason::code),
                spend: recorder.ledger.total(),
                elapsed_secs: info.elapsed_secs,
            })
            .await;
    }
    let report = written.map_err(|e| folder_error(&recorder.folder.path, e))?;
    Ok(RunOutcome {
        result,
        info,
        folder: recorder.folder.clone(),
        report,
    })
}

/// What a run is made of, all built from the config before any folder exists, so a bad key
/// or a missing API key leaves nothing behind.
struct RunParts {
    /// The split; over several targets, every task once per optimized target.
    split: Split,
    /// A run over several targets: its targets and its split before the copies.
    targets: Option<Targets>,
    /// The selection split carved out of train (`selection_fraction`), if any.
    selection: Option<Vec<skill_factory_core::Task>>,
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    optimizer: Box<dyn Optimizer>,
    /// The search's most rounds, 0 for none ([`OptimizerPlan::rounds`]).
    rounds: usize,
    /// Where the run is tracked, if it is.
    tracking: Option<MlflowSettings>,
}

impl RunParts {
    fn build(session: &Session) -> Result<RunParts, EngineError> {
        // The name first: a run that cannot search should not ask for keys.
        let plan = OptimizerPlan::from_config(&session.config.config.optimizer)
            .map_err(|e| session.block_error("optimizer.name", e))?;
        let mut split = session.split()?;
        let mut selection = selection::carve(&mut split, session.config.config.selection_fraction)
            .map_err(|detail| session.block_error("selection_fraction", detail))?;
        let targets = Targets::of(session, &split);
        if let Some(targets) = &targets {
            split = Split {
                train: across(&split.train, &targets.optimized),
                val: across(&split.val, &targets.optimized),
                test: across(&split.test, &targets.optimized),
            };
            selection = selection.map(|tasks| across(&tasks, &targets.optimized));
        }
        check_seed_size(session)?;
        let harness = harness::from_config(session)?;
        let metric = metric::from_config(session)?;
        say_clamped_minibatch(&plan, split.train.len());
        let rounds = plan.rounds();
        let optimizer = plan.build(|| session.client(Role::Optimizer))?;
        let tracking = MlflowSettings::of(&session.config)
            .map_err(|detail| session.block_error("tracking.mlflow", detail))?;
        Ok(RunParts {
            split,
            targets,
            selection,
            harness,
            metric,
            optimizer,
            rounds,
            tracking,
        })
    }
}

/// A run over several targets (`targets`): the optimized ones with their weights in the
/// objective, every target in the config's order, and the held-out part of the split before
/// its tasks were copied per target.
struct Targets {
    optimized: Vec<(String, f64)>,
    all: Vec<(String, bool)>,
    held_out: Vec<skill_factory_core::Task>,
}

impl Targets {
    /// The targets of the session, `None` for a run of one.
    fn of(session: &Session, split: &Split) -> Option<Targets> {
        let run = &session.config.config;
        if run.targets.is_empty() {
            return None;
        }
        let held_out = if split.test.is_empty() {
            split.val.clone()
        } else {
            split.test.clone()
        };
        Some(Targets {
            optimized: run
                .targets
                .iter()
                .filter(|t| t.optimize)
                .map(|t| (t.name.clone(), run.objective.weight(&t.name)))
                .collect(),
            all: run
                .targets
                .iter()
                .map(|t| (t.name.clone(), t.optimize))
                .collect(),
            held_out,
        })
    }

    /// The seed and the best on each target's copies of the held-out split (`split`), with
    /// the samples the run already drew where it drew them (the optimized targets' test
    /// split), fresh ones elsewhere (the targets measured only). A target the run stopped
    /// before scoring is left out.
    async fn measure(
        &self,
        context: &RunContext,
        (seed, result): (&Skill, &OptimizationResult),
        split: &str,
    ) -> BTreeMap<String, TargetRecord> {
        let noise = context.noise();
        let samples = 0..noise.final_samples();
        let mut records = BTreeMap::new();
        for (name, optimize) in &self.all {
            let tasks = across(&self.held_out, &[(name.clone(), 1.0)]);
            let scored = tokio::join!(
                context.sample_scores(seed, &tasks, samples.clone(), (0, "test")),
                context.sample_scores(
                    &result.best_skill,
                    &tasks,
                    samples.clone(),
                    (result.best_candidate, "test")
                ),
            );
            let (Some(seed_samples), Some(best_samples)) = scored else {
                continue;
            };
            let weights = skill_factory_core::task::weights(&tasks);
            records.insert(
                name.clone(),
                TargetRecord {
                    optimize: *optimize,
                    split: split.to_owned(),
                    seed: ScoreEstimate::from(&noise.estimate(&seed_samples, &weights)),
                    best: ScoreEstimate::from(&noise.estimate(&best_samples, &weights)),
                    improvement: ScoreEstimate::from(&noise.paired(
                        &seed_samples,
                        &best_samples,
                        &weights,
                    )),
                },
            );
        }
        records
    }
}

/// Refuses a seed already over `optimizer.max_skill_tokens`: every candidate is held to the
/// budget, so none could be kept and the run would pay for nothing. A seed's other defects
/// are not held against its candidates ([`crate::optimizer::round::check`]); this one is the
/// config contradicting the seed, which only the user can settle.
fn check_seed_size(session: &Session) -> Result<(), EngineError> {
    let Some(limit) = session.config.config.optimizer.max_skill_tokens else {
        return Ok(());
    };
    let tokens = session.skill.estimate_tokens();
    if tokens <= limit {
        return Ok(());
    }
    Err(session.block_error(
        "optimizer.max_skill_tokens",
        format!(
            "the seed skill is already about {tokens} tokens, over the size budget of {limit}, so every candidate would be refused; raise max_skill_tokens to {tokens} or more, or remove it"
        ),
    ))
}

/// Says, once before the search, that a `minibatch_size` over the train split is read as
/// the whole split (the searches sample no more tasks than there are), so a bound the config
/// check could not know, the dataset's size, is not silently ignored. A bridged `skillopt`
/// samples nothing.
fn say_clamped_minibatch(plan: &OptimizerPlan, train: usize) {
    let size = plan.shared.minibatch_size;
    let bridged = matches!(
        plan.backend,
        BackendSettings::SkillOpt(SkillOptSettings {
            bridge: Some(_),
            ..
        })
    );
    if size > train && train > 0 && !bridged {
        tracing::warn!(
            "optimizer.minibatch_size is {size}, more than the {train} train task{}: every minibatch is the whole train split",
            if train == 1 { "" } else { "s" }
        );
    }
}

/// Creates the run folder and its first files (the config snapshot, the seed, and the result
/// files before any score, so a run killed during a long baseline still leaves a folder every
/// reader lists), starts its tracker when it is tracked, and makes the context the search
/// runs in, announcing the run.
fn open_folder(
    session: &Session,
    parts: &RunParts,
    options: &RunOptions,
) -> Result<Opened, EngineError> {
    let started = Utc::now();
    let runs_dir = options
        .runs_dir
        .clone()
        .unwrap_or_else(|| session.config.runs_dir());
    if options.runs_dir.is_some() {
        session.check_output("-o", &runs_dir)?;
    }
    let folder = RunFolder::create(&runs_dir, started).map_err(|e| folder_error(&runs_dir, e))?;
    let write = |name: &str, text: &str| {
        folder
            .write(name, text)
            .map_err(|e| folder_error(&folder.file(name), e))
    };
    let config = config_value(session, &runs_dir);
    write(CONFIG_FILE, &snapshot_text(&config))?;
    write(TASKS_FILE, &tasks_lines(&parts.split))?;
    // A recording without its file yet (`--record`) gets the run folder's.
    if let Some(recorder) = session.layers_in_use().and_then(|layers| layers.recorder()) {
        recorder.start(folder.file(TRAFFIC_FILE))?;
    }
    let ledger = session.ledger().clone();
    let log =
        EventLog::create(&folder, ledger.clone()).map_err(|e| folder_error(&folder.path, e))?;
    write(&candidate_file(0), &session.skill.to_markdown())?;

    let split = &parts.split;
    let base = RunInfo {
        run_id: folder.id.clone(),
        config_name: session.config.name.clone(),
        started_at: started.to_rfc3339_opts(SecondsFormat::Secs, true),
        finished_at: None,
        splits: (split.train.len(), split.val.len(), split.test.len()),
        test: (!split.test.is_empty()).then(|| TestScores {
            size: split.test.len(),
            seed_score: None,
            best_score: None,
            estimates: None,
            skipped: Some("the run has not reached the end of its search".into()),
        }),
        noise: Some(session.noise()),
        ..RunInfo::default()
    };
    let recorder = Arc::new(RunWriter {
        folder,
        log,
        base,
        ledger: ledger.clone(),
        failed_rollouts: AtomicUsize::new(0),
        refused_copies: Mutex::new(Vec::new()),
        cleaned_repeats: Mutex::new(Vec::new()),
        batches: Role::ALL
            .into_iter()
            .any(|role| session.batched(role))
            .then(|| session.layers_in_use().map(|l| l.batches().clone()))
            .flatten(),
    });
    recorder.checkpoint(&OptimizationResult::starting(
        parts.optimizer.name(),
        &session.skill,
    ));
    let tracker = parts.tracking.as_ref().and_then(|settings| {
        let start = RunStart {
            run_name: recorder.folder.id.clone(),
            started_ms: started.timestamp_millis(),
            params: tracking::params(&config),
            tags: run_tags(session, parts),
        };
        Tracker::start(settings, &recorder.folder.path, start, &|key| {
            session.config.env(key)
        })
    });
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![recorder.clone()];
    sinks.extend(tracker.clone().map(|t| t as Arc<dyn EventSink>));
    sinks.extend(options.display.clone());
    let workers = session.workers(session.config.config.max_workers());
    let context = RunContext::new(
        parts.harness.clone(),
        parts.metric.clone(),
        workers,
        ledger,
        options.cancel.clone(),
        Arc::new(Fanout(sinks)),
    )
    .with_skill_files(session.skill_files.clone())
    // The optimizer's tasks only: the held-out test split is never shown to the check either.
    .with_max_skill_tokens(session.config.config.optimizer.max_skill_tokens)
    .with_protected(protected(session))
    .with_max_metric_calls(session.config.config.optimizer.max_metric_calls)
    .holding_every_target(
        session.config.config.objective.aggregate == crate::config::TargetAggregate::Min,
    )
    .with_noise(session.noise())
    .with_honesty(Honesty::new(
        &seed_text(&session.skill),
        split.train.iter().chain(&split.val),
    ));
    context.emit(Event::RunStarted {
        optimizer: parts.optimizer.name().to_string(),
        skill: session.skill.name.clone(),
        train: split.train.len(),
        val: split.val.len(),
        test: split.test.len(),
        rounds: parts.rounds,
        max_workers: workers,
        budget: session.config.config.optimizer.budget.recorded(),
        max_metric_calls: session.config.config.optimizer.max_metric_calls,
    });
    Ok(Opened {
        recorder,
        context,
        tracker,
    })
}

/// A run as its folder opened: the folder's writer, the context the search runs in, and the
/// tracker when the run is tracked.
struct Opened {
    recorder: Arc<RunWriter>,
    context: RunContext,
    tracker: Option<Arc<Tracker>>,
}

/// A tracked run's tags: its kind, its optimizer and its target model (the targets' names,
/// over several).
fn run_tags(session: &Session, parts: &RunParts) -> Vec<tracking::pending::Tag> {
    use tracking::pending::Tag;
    let run = &session.config.config;
    let target = if run.targets.is_empty() {
        session
            .config
            .role(Role::Target)
            .model
            .clone()
            .unwrap_or_default()
    } else {
        let names: Vec<&str> = run.targets.iter().map(|t| t.name.as_str()).collect();
        names.join(",")
    };
    vec![
        Tag::new(
            "skill_factory.kind",
            if run.is_trigger() { "trigger" } else { "skill" },
        ),
        Tag::new("skill_factory.optimizer", parts.optimizer.name()),
        Tag::new("skill_factory.target", target),
    ]
}

/// The run's protected parts (`optimizer.protected`), after saying, once, which of them the
/// seed has no section or file of: those protect nothing, most likely a misspelt heading.
fn protected(session: &Session) -> Protected {
    let protected = Protected::new(&session.config.config.optimizer.protected);
    for name in protected.missing_from(&session.skill) {
        tracing::warn!(
            "optimizer.protected names «{name}», which the seed has no section of (a line starting with `## `, outside code fences and comments): it protects nothing"
        );
    }
    protected
}

/// The `tasks.jsonl` of `split`: one line per task, with the split it is in first.
fn tasks_lines(split: &Split) -> String {
    let named = [
        ("train", &split.train),
        ("val", &split.val),
        ("test", &split.test),
    ];
    let mut text = String::new();
    for (name, tasks) in named {
        for task in tasks.iter() {
            let line = TaskLine {
                split: name.into(),
                task: task.clone(),
            };
            text.push_str(&serde_json::to_string(&line).unwrap_or_default());
            text.push('\n');
        }
    }
    text
}

/// The seed's body and reference files: what a candidate may keep of the seed.
fn seed_text(seed: &Skill) -> String {
    std::iter::once(seed.body.as_str())
        .chain(seed.files.values().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Scores the seed and the best skill on the held-out test split, once, after the search, on
/// the same samples of every task (`noise.final_samples()` of each), so their difference is
/// paired by task and sample; not at all when the run was cancelled or is out of budget (the
/// scores would be partial).
async fn score_test(
    context: &RunContext,
    session: &Session,
    result: &OptimizationResult,
    test: &[skill_factory_core::Task],
) -> TestScores {
    let skipped = |reason: String| TestScores {
        size: test.len(),
        seed_score: None,
        best_score: None,
        estimates: None,
        skipped: Some(reason),
    };
    if let Some(stop) = context.stop_reason() {
        return skipped(format!(
            "{} before the test split was scored",
            stop.detail()
        ));
    }
    let noise = context.noise();
    let seed = &session.skill;
    let best = &result.best_skill;
    let same = identity(best) == identity(seed);
    let samples = 0..noise.final_samples();
    let seed_samples = context.sample_scores(seed, test, samples.clone(), (0, "test"));
    let (seed_samples, best_samples) = if same {
        let scored = seed_samples.await;
        (scored.clone(), scored)
    } else {
        let best_samples =
            context.sample_scores(best, test, samples, (result.best_candidate, "test"));
        tokio::join!(seed_samples, best_samples)
    };
    let (Some(seed_samples), Some(best_samples)) = (seed_samples, best_samples) else {
        let why = context
            .stop_reason()
            .map_or_else(|| "the run stopped".to_string(), |s| s.detail());
        return skipped(format!("{why} while the test split was being scored"));
    };
    let weights = skill_factory_core::task::weights(test);
    let estimates = TestEstimates {
        samples: noise.final_samples(),
        seed: noise.estimate(&seed_samples, &weights),
        best: noise.estimate(&best_samples, &weights),
        improvement: noise.paired(&seed_samples, &best_samples, &weights),
    };
    context.emit(Event::TestScored {
        seed_score: estimates.seed.mean,
        best_score: estimates.best.mean,
    });
    TestScores {
        size: test.len(),
        seed_score: Some(estimates.seed.mean),
        best_score: Some(estimates.best.mean),
        estimates: Some(estimates),
        skipped: None,
    }
}

/// A trigger run's loads of the seed and the best skill on the held-out split, from the
/// results the run already has (`None` for other runs, or when one of them was not scored).
fn trigger_record(
    context: &RunContext,
    (seed, best): (&Skill, &Skill),
    (split, tasks): (&str, &[skill_factory_core::Task]),
) -> Option<TriggerRecord> {
    Some(TriggerRecord {
        split: split.to_owned(),
        seed: context.trigger_counts(seed, tasks)?.figures(),
        best: context.trigger_counts(best, tasks)?.figures(),
    })
}

/// Logs events and keeps the result files current.
struct RunWriter {
    folder: RunFolder,
    log: EventLog,
    base: RunInfo,
    ledger: Arc<Ledger>,
    /// Rollouts that failed (a failed result is never reused, so each is counted once).
    failed_rollouts: AtomicUsize,
    /// Candidates refused for copying a task's answer or input.
    refused_copies: Mutex<Vec<usize>>,
    /// Candidates cleaned of repeated paragraphs.
    cleaned_repeats: Mutex<Vec<usize>>,
    /// The run's batch counts, when any role batches its calls.
    batches: Option<Arc<BatchBoard>>,
}

impl RunWriter {
    /// The run information with the spending as of now.
    fn info_now(&self) -> RunInfo {
        RunInfo {
            by_role: self.ledger.by_role(),
            unpriced_models: self.ledger.unpriced_models(),
            elapsed_secs: self.ledger.elapsed().as_secs_f64(),
            failed_rollouts: self.failed_rollouts.load(Ordering::Relaxed),
            refused_copies: sorted(&self.refused_copies),
            cleaned_repeats: sorted(&self.cleaned_repeats),
            batches: self.batches.as_ref().map(|board| board.counts()),
            ..self.base.clone()
        }
    }

    /// Writes `best_skill/` for a skill with reference files: its SKILL.md and those files, a
    /// folder `export` and `install` take whole.
    fn write_best_folder(&self, best: &Skill) -> std::io::Result<()> {
        if best.files.is_empty() {
            return Ok(());
        }
        let dir = self.folder.file(BEST_SKILL_DIR);
        write_atomic(&dir.join("SKILL.md"), best.to_markdown().as_bytes())?;
        for (path, text) in &best.files {
            write_atomic(&below(&dir, path)?, text.as_bytes())?;
        }
        Ok(())
    }

    /// Writes `best_skill.md`, `scores.svg`, `result.json` and `report.md`; returns the report.
    fn write_outputs(
        &self,
        result: &OptimizationResult,
        info: &RunInfo,
    ) -> std::io::Result<String> {
        self.folder
            .write(BEST_SKILL_FILE, &result.best_skill.to_markdown())?;
        self.write_best_folder(&result.best_skill)?;
        self.folder.write(CHART_FILE, &chart::score_chart(result))?;
        self.folder.write(RESULT_FILE, &result_json(result, info))?;
        let report = report::report(result, info, CHART_FILE);
        self.folder.write(REPORT_FILE, &report)?;
        Ok(report)
    }
}

impl EventSink for RunWriter {
    fn event(&self, event: &Event) {
        if let Event::Rollout(record) = event
            && !record.reused
            && record.item.rollout.error.is_some()
        {
            self.failed_rollouts.fetch_add(1, Ordering::Relaxed);
        }
        if let Event::CandidateProposed {
            candidate,
            reason,
            warnings,
            ..
        } = event
        {
            if reason
                .as_deref()
                .is_some_and(|r| r.starts_with(honest::COPIES))
            {
                lock(&self.refused_copies).push(*candidate);
            }
            if warnings
                .iter()
                .any(|w| w.starts_with(honest::REPEATS_REMOVED))
            {
                lock(&self.cleaned_repeats).push(*candidate);
            }
        }
        self.log.event(event);
    }

    fn checkpoint(&self, partial: &OptimizationResult) {
        if let Err(error) = self.write_outputs(partial, &self.info_now()) {
            tracing::warn!(
                "cannot update the run folder {}: {error}",
                self.folder.path.display()
            );
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section leaves its data consistent, so a poisoned lock is still usable.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The candidate numbers in order (events come in completion order).
fn sorted(ids: &Mutex<Vec<usize>>) -> Vec<usize> {
    let mut ids = lock(ids).clone();
    ids.sort_unstable();
    ids
}

/// The config as it ran, as YAML: every role's provider block resolved (inheritance and
/// defaults applied), API keys and secret-looking `env` values removed (see `remove_secrets`),
/// paths absolute so the file runs from anywhere, and keys left at nothing omitted.
pub fn config_snapshot(session: &Session, runs_dir: &Path) -> String {
    snapshot_text(&config_value(session, runs_dir))
}

/// The config as it ran ([`config_snapshot`]) as a JSON value: what `config.yaml` holds and
/// a tracked run's parameters are made of.
fn config_value(session: &Session, runs_dir: &Path) -> Value {
    let loaded = &session.config;
    let mut config = loaded.config.clone();
    let strip = |role: Role| ProviderSettings {
        api_key: None,
        ..loaded.role(role).clone()
    };
    config.provider = Some(strip(Role::Target));
    config.target = None;
    config.optimizer_provider = Some(strip(Role::Optimizer));
    config.judge_provider = config.metric.judge.is_some().then(|| strip(Role::Judge));
    config.skill = session.skill_path.clone();
    config.output.dir = Some(runs_dir.to_path_buf());
    // The loaded paths are relative to the working directory: anchoring them there makes
    // every path of the snapshot absolute.
    if let Ok(cwd) = std::env::current_dir() {
        resolve_paths(&mut config, &cwd);
    }
    let mut value = serde_json::to_value(&config).unwrap_or(Value::Null);
    prune_nulls(&mut value);
    remove_secrets(&mut value);
    value
}

/// The text of `config.yaml`: the config as it ran, under a line saying what it is.
fn snapshot_text(value: &Value) -> String {
    let yaml = serde_saphyr::to_string(value).unwrap_or_default();
    format!(
        "# The config of this run as it ran: provider roles resolved, paths absolute, API keys and secret-looking environment values removed.\n{yaml}"
    )
}

/// What an environment variable whose value the snapshot withholds is written as.
pub const WITHHELD: &str = "<withheld: set it in the environment>";

/// Removes every `api_key` (provider blocks, `metric.systemone`, wherever a block has one),
/// redacts the credentials of every `base_url` and `uri` (userinfo, query values), and withholds the
/// value of every `env` entry whose name looks like a secret (`..._KEY`, `..._TOKEN`,
/// `SECRET`, `PASSWORD`, ...): the snapshot is meant to be shared.
pub(crate) fn remove_secrets(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("api_key");
            // A provider's endpoint, a tracking server's address.
            for key in ["base_url", "uri"] {
                if let Some(Value::String(url)) = map.get_mut(key) {
                    *url = EndpointUrl::new(url.clone()).shown().to_string();
                }
            }
            if let Some(Value::Object(env)) = map.get_mut("env") {
                for (name, value) in env.iter_mut() {
                    if looks_secret(name) {
                        *value = Value::String(WITHHELD.into());
                    }
                }
            }
            map.values_mut().for_each(remove_secrets);
        }
        Value::Array(items) => items.iter_mut().for_each(remove_secrets),
        _ => {}
    }
}

/// Removes null members of objects, recursively, so the snapshot shows only what is set.
pub(crate) fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_removed_wherever_the_config_holds_them() {
        let mut config = json!({
            "provider": {"name": "openai", "model": "m", "api_key": "sk-1", "base_url": "http://u:pass-7@h/v1?key=key-8"},
            "tracking": {"mlflow": {"uri": "https://u:pass-9@mlflow.example/"}},
            "judge_provider": {"name": "anthropic", "api_key": "sk-2"},
            "metric": {
                "systemone": {"provider": "typesafe", "api_key": "ts-3", "checks": []},
                "command": {"command": ["score"], "env": {"SCORER_API_KEY": "k-4", "LEVEL": "strict"}},
            },
            "harness": {"type": "subprocess", "env": {
                "GITHUB_TOKEN": "ghp-5", "db_password": "pw-6", "AGENT_MODE": "eval",
            }},
        });
        remove_secrets(&mut config);
        let text = config.to_string();
        for secret in [
            "sk-1", "sk-2", "ts-3", "k-4", "ghp-5", "pw-6", "pass-7", "key-8", "pass-9",
        ] {
            assert!(!text.contains(secret), "{secret} left in {text}");
        }
        assert!(!text.contains("api_key"), "{text}");
        assert_eq!(config["harness"]["env"]["AGENT_MODE"], "eval");
        assert_eq!(config["metric"]["command"]["env"]["LEVEL"], "strict");
        assert_eq!(config["harness"]["env"]["GITHUB_TOKEN"], WITHHELD);
        assert_eq!(config["metric"]["systemone"]["provider"], "typesafe");
    }
}
