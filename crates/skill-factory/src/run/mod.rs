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
//! | `result.json` | the reference's fields, then ours ([`result`]) |
//! | `config.yaml` | the config as run: roles resolved, paths absolute, API keys and secret-looking `env` values removed |
//! | `events.jsonl` | one line per event, append-only ([`events`]) |
//! | `rollouts.jsonl` | every rollout in full |
//! | `candidates/NNN.md` | the seed (`000`) and every proposal, valid or not |
//! | `scores.svg` | validation score per round ([`chart`]) |
//!
//! `report.md`, `best_skill.md`, `result.json` and `scores.svg` are first written before the
//! baseline (with no scores yet) and rewritten (atomically) after the baseline and after every
//! round, so a run killed at any point still leaves a readable folder; its `result.json` then
//! says `"stop_reason": "running"`.

pub mod chart;
pub mod events;
pub mod folder;
pub mod report;
pub mod result;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use serde_json::Value;
use skill_factory_llm::{BudgetLimits, Ledger, ProviderSettings};

use self::events::EventLog;
use self::folder::RunFolder;
use self::result::{RunInfo, TestScores, result_json};
use crate::bundle::SkillBundle;
use crate::cancel::CancelToken;
use crate::config::{BudgetConfig, RunConfig, resolve_paths};
use crate::error::EngineError;
use crate::optimizer::event::Fanout;
use crate::optimizer::{
    Event, EventSink, OptimizationResult, RunContext, build_optimizer, optimizer_name,
};
use crate::session::Session;

/// The report's file name.
pub const REPORT_FILE: &str = "report.md";
/// The best skill's file name.
pub const BEST_SKILL_FILE: &str = "best_skill.md";
/// The result's file name.
pub const RESULT_FILE: &str = "result.json";
/// The resolved config's file name.
pub const CONFIG_FILE: &str = "config.yaml";
/// The score chart's file name.
pub const CHART_FILE: &str = "scores.svg";

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
    /// The ledger the run's calls are booked in; default: a new one from [`ledger_for`].
    /// Pass one to watch the spending while the run goes on.
    pub ledger: Option<Arc<Ledger>>,
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

/// The budget of an `optimizer.budget` block.
pub fn budget_limits(budget: &BudgetConfig) -> BudgetLimits {
    BudgetLimits {
        max_calls: budget.max_calls,
        max_tokens: budget.max_tokens,
        max_usd: budget.max_usd,
        max_duration: budget
            .max_minutes
            .and_then(|m| Duration::try_from_secs_f64(m * 60.0).ok()),
    }
}

/// A fresh ledger with the config's `optimizer.budget`; its clock starts now.
pub fn ledger_for(config: &RunConfig) -> Arc<Ledger> {
    Arc::new(Ledger::new(budget_limits(&config.optimizer.budget)))
}

/// Model-bound steps allowed in flight at once during `optimize`: `harness.max_workers`
/// (default 16), or `optimizer.max_workers` when a config sets it higher. The reference
/// read only `optimizer.max_workers` (default 1) here; taking the larger keeps its configs'
/// intent while letting ours run in parallel by default.
pub fn max_workers(config: &RunConfig) -> usize {
    config
        .harness
        .max_workers
        .max(config.optimizer.max_workers)
        .max(1)
}

fn folder_error(path: &Path, error: std::io::Error) -> EngineError {
    EngineError::RunFolder {
        path: path.to_path_buf(),
        detail: error.to_string(),
    }
}

/// Runs the optimization a session's config describes and writes its run folder.
///
/// The session's ledger is replaced by the run's (see [`RunOptions::ledger`]) before any
/// client is built, so every call of the run is admitted and booked by it.
pub async fn optimize(
    session: &mut Session,
    options: RunOptions,
) -> Result<RunOutcome, EngineError> {
    let config_path = session.config.path.clone();
    optimizer_name(&session.config.config.optimizer).map_err(|e| EngineError::Unsupported {
        config: config_path.clone(),
        key: "optimizer.name".into(),
        detail: e.to_string(),
    })?;
    let ledger = options
        .ledger
        .clone()
        .unwrap_or_else(|| ledger_for(&session.config.config));
    session.ledger = ledger.clone();
    let split = session.split()?;
    let harness = session.harness()?;
    let metric = session.metric()?;
    let client = session.client("optimizer", &session.config.optimizer_provider())?;
    let optimizer = build_optimizer(&session.config.config.optimizer, client).map_err(|e| {
        EngineError::Unsupported {
            config: config_path.clone(),
            key: "optimizer.name".into(),
            detail: e.to_string(),
        }
    })?;

    let started = Utc::now();
    let runs_dir = options
        .runs_dir
        .clone()
        .unwrap_or_else(|| session.config.runs_dir());
    let folder = RunFolder::create(&runs_dir, started).map_err(|e| folder_error(&runs_dir, e))?;
    let write = |name: &str, text: &str| {
        folder
            .write(name, text)
            .map_err(|e| folder_error(&folder.file(name), e))
    };
    write(CONFIG_FILE, &config_snapshot(session, &runs_dir))?;
    let log =
        EventLog::create(&folder, ledger.clone()).map_err(|e| folder_error(&folder.path, e))?;
    write(&EventLog::candidate_file(0), &session.skill.to_markdown())?;

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
            skipped: Some("the run has not reached the end of its search".into()),
        }),
        ..RunInfo::default()
    };
    let recorder = Arc::new(Recorder {
        folder: folder.clone(),
        log,
        base: base.clone(),
        ledger: ledger.clone(),
        failed_rollouts: AtomicUsize::new(0),
    });
    // Written before the baseline, which may take long (agent harnesses): a run killed
    // before its first round still leaves a folder every reader lists.
    recorder.checkpoint(&OptimizationResult::starting(
        optimizer.name(),
        &session.skill,
    ));
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![recorder.clone()];
    sinks.extend(options.display.clone());
    let workers = max_workers(&session.config.config);
    let context = RunContext::new(
        harness,
        metric,
        workers,
        ledger.clone(),
        options.cancel.clone(),
        Arc::new(Fanout(sinks)),
    )
    .with_skill_files(bundled_files(&session.skill_path));
    context.emit(Event::RunStarted {
        optimizer: optimizer.name().to_string(),
        skill: session.skill.name.clone(),
        train: split.train.len(),
        val: split.val.len(),
        test: split.test.len(),
        rounds: session.config.config.optimizer.rounds,
        max_workers: workers,
    });

    let result = optimizer
        .optimize(&session.skill, &split.train, &split.val, &context)
        .await;

    let test = if split.test.is_empty() {
        None
    } else {
        Some(score_test(&context, session, &result, &split.test).await)
    };
    let info = RunInfo {
        finished_at: Some(Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)),
        test,
        ..recorder.info_now()
    };
    let report = recorder
        .write_outputs(&result, &info)
        .map_err(|e| folder_error(&folder.path, e))?;
    context.emit(Event::RunFinished {
        baseline_score: result.baseline_score,
        best_score: result.best_score,
    });
    Ok(RunOutcome {
        result,
        info,
        folder,
        report,
    })
}

/// The paths of the files bundled with the skill at `path` (its folder's, when it is a
/// `SKILL.md`), which candidates may link to; none when they cannot be read.
fn bundled_files(path: &Path) -> Vec<String> {
    SkillBundle::load(path)
        .map(|bundle| bundle.files.into_iter().map(|file| file.path).collect())
        .unwrap_or_default()
}

/// Scores the seed and the best skill on the held-out test split, once, after the search;
/// not at all when the run was cancelled or is out of budget (the scores would be partial).
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
        skipped: Some(reason),
    };
    if let Some(stop) = context.stop_reason() {
        return skipped(format!(
            "{} before the test split was scored",
            stop.detail()
        ));
    }
    let seed = &session.skill;
    let best = &result.best_skill;
    let (seed_scored, best_scored) = if best.body == seed.body {
        let scored = context.evaluate(seed, test, 0, 0, "test").await;
        (scored.clone(), scored)
    } else {
        tokio::join!(
            context.evaluate(seed, test, 0, 0, "test"),
            context.evaluate(best, test, 0, result.best_candidate, "test"),
        )
    };
    if !(seed_scored.complete && best_scored.complete) {
        let why = context
            .stop_reason()
            .map_or_else(|| "the run stopped".to_string(), |s| s.detail());
        return skipped(format!("{why} while the test split was being scored"));
    }
    context.emit(Event::TestScored {
        seed_score: seed_scored.score(),
        best_score: best_scored.score(),
    });
    TestScores {
        size: test.len(),
        seed_score: Some(seed_scored.score()),
        best_score: Some(best_scored.score()),
        skipped: None,
    }
}

/// Logs events and keeps the result files current.
struct Recorder {
    folder: RunFolder,
    log: EventLog,
    base: RunInfo,
    ledger: Arc<Ledger>,
    /// Rollouts that failed (a failed result is never reused, so each is counted once).
    failed_rollouts: AtomicUsize,
}

impl Recorder {
    /// The run information with the spending as of now.
    fn info_now(&self) -> RunInfo {
        RunInfo {
            by_role: self.ledger.by_role(),
            unpriced_models: self.ledger.unpriced_models(),
            elapsed_secs: self.ledger.elapsed().as_secs_f64(),
            failed_rollouts: self.failed_rollouts.load(Ordering::Relaxed),
            ..self.base.clone()
        }
    }

    /// Writes `best_skill.md`, `scores.svg`, `result.json` and `report.md`; returns the report.
    fn write_outputs(
        &self,
        result: &OptimizationResult,
        info: &RunInfo,
    ) -> std::io::Result<String> {
        self.folder
            .write(BEST_SKILL_FILE, &result.best_skill.to_markdown())?;
        self.folder.write(CHART_FILE, &chart::score_chart(result))?;
        self.folder.write(RESULT_FILE, &result_json(result, info))?;
        let report = report::report(result, info, CHART_FILE);
        self.folder.write(REPORT_FILE, &report)?;
        Ok(report)
    }
}

impl EventSink for Recorder {
    fn event(&self, event: &Event) {
        if let Event::Rollout(record) = event
            && !record.reused
            && record.item.rollout.error.is_some()
        {
            self.failed_rollouts.fetch_add(1, Ordering::Relaxed);
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

/// The config as it ran, as YAML: every role's provider block resolved (inheritance and
/// defaults applied), API keys and secret-looking `env` values removed (see `remove_secrets`),
/// paths absolute so the file runs from anywhere, and keys left at nothing omitted.
pub fn config_snapshot(session: &Session, runs_dir: &Path) -> String {
    let loaded = &session.config;
    let mut config = loaded.config.clone();
    let roles = config.roles(&|key| loaded.env(key));
    let strip = |mut settings: ProviderSettings| {
        settings.api_key = None;
        settings
    };
    config.provider = Some(strip(roles.target));
    config.target = None;
    config.optimizer_provider = Some(strip(roles.optimizer));
    config.judge_provider = config.metric.judge.is_some().then(|| strip(roles.judge));
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
    let yaml = serde_saphyr::to_string(&value).unwrap_or_default();
    format!(
        "# The config of this run as it ran: provider roles resolved, paths absolute, API keys and secret-looking environment values removed.\n{yaml}"
    )
}

/// What an environment variable whose value the snapshot withholds is written as.
pub const WITHHELD: &str = "<withheld: set it in the environment>";

/// Removes every `api_key` (provider blocks, `metric.systemone`, wherever a block has one)
/// and withholds the value of every `env` entry whose name looks like a secret
/// (`..._KEY`, `..._TOKEN`, `SECRET`, `PASSWORD`, ...): the snapshot is meant to be shared.
pub(crate) fn remove_secrets(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("api_key");
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

/// Whether an environment variable name suggests its value is a credential.
fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
    ]
    .iter()
    .any(|word| name.contains(word))
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
            "provider": {"name": "openai", "model": "m", "api_key": "sk-1"},
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
        for secret in ["sk-1", "sk-2", "ts-3", "k-4", "ghp-5", "pw-6"] {
            assert!(!text.contains(secret), "{secret} left in {text}");
        }
        assert!(!text.contains("api_key"), "{text}");
        assert_eq!(config["harness"]["env"]["AGENT_MODE"], "eval");
        assert_eq!(config["metric"]["command"]["env"]["LEVEL"], "strict");
        assert_eq!(config["harness"]["env"]["GITHUB_TOKEN"], WITHHELD);
        assert_eq!(config["metric"]["systemone"]["provider"], "typesafe");
    }
}
