//! Experiment tracking: an `optimize` run recorded as an MLflow run while it happens.
//!
//! A config's `tracking: {mlflow: {uri, experiment}}`, or `MLFLOW_TRACKING_URI` (with
//! `MLFLOW_EXPERIMENT_NAME`), turns it on ([`MlflowSettings::of`]). The run folder's
//! [`Tracker`] is one more [`EventSink`] of the run: it turns the events a tracker cares about
//! into calls ([`pending::Call`]: the config as parameters, every candidate's scores and every
//! gate's decision as metrics by step, usage and cost, `report.md`, `best_skill.md` and
//! `result.json` as artifacts), appends each to the run folder's journal (`mlflow.jsonl`,
//! [`pending`]) and hands it to a thread of its own, which sends them in order over MLflow's
//! REST API ([`mlflow`]). So a tracking server that is slow or down never holds the run: the
//! first failure is said once on stderr, nothing more is sent, and `skill-factory track push
//! RUN_DIR` ([`pending::push`]) later sends what the journal holds beyond its last delivery.
//!
//! Weights & Biases is not a second backend: its offline runs, which `wandb sync` uploads,
//! are `.wandb` files of protobuf records in a LevelDB-style log that only its SDK writes (no
//! documented plain format), so a run could only be handed to it through its Python SDK.

pub mod mlflow;
pub mod pending;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use skill_factory_io::secrets::{HIDDEN, looks_secret};
use skill_factory_llm::Spend;
use skill_factory_runfolder::names::{BEST_SKILL_FILE, REPORT_FILE, RESULT_FILE};
use tokio::sync::{mpsc, oneshot};

use self::mlflow::{MlflowClient, PARAM_VALUE_CHARS, Sender, Trouble};
use self::pending::{Call, Journal, Metric, Param, Tag};
use crate::config::LoadedConfig;
use crate::optimizer::{Event, EventSink};

/// The variable that names an MLflow server when the config does not, as MLflow's own
/// clients read it.
pub const URI_ENV: &str = "MLFLOW_TRACKING_URI";

/// The variable that names the experiment when the config does not.
pub const EXPERIMENT_ENV: &str = "MLFLOW_EXPERIMENT_NAME";

/// How long a run that ended waits for the tracker to deliver its last calls, while the
/// server answers; what is left then stays in the journal for `track push`.
const FINISH_WAIT: Duration = Duration::from_secs(10);

/// How often a run that ended looks whether the server is failing.
const FINISH_POLL: Duration = Duration::from_millis(20);

/// The longest key MLflow takes for a parameter, a metric or a tag.
const KEY_CHARS: usize = 250;

/// The run folder's files uploaded as the run's artifacts, once it ended.
const ARTIFACTS: [&str; 3] = [REPORT_FILE, BEST_SKILL_FILE, RESULT_FILE];

/// Where a run is tracked.
#[derive(Debug, Clone, PartialEq)]
pub struct MlflowSettings {
    /// The tracking server's address, as given (credentials included: never show it).
    pub uri: String,
    /// The experiment's name.
    pub experiment: String,
}

impl MlflowSettings {
    /// The tracking `config` asks for: `tracking.mlflow`'s keys, else `MLFLOW_TRACKING_URI`
    /// and `MLFLOW_EXPERIMENT_NAME` (from the environment or `.env`), the experiment named
    /// after the config when neither names one. `Ok(None)`: the run is not tracked (an
    /// `MLFLOW_TRACKING_URI` that is no http(s) address, a file store say, is left to
    /// MLflow's own clients, with a warning). `Err`: a `tracking.mlflow` block with no
    /// usable address anywhere, which names the fix.
    pub fn of(config: &LoadedConfig) -> Result<Option<MlflowSettings>, String> {
        let block = config.config.tracking.mlflow.as_ref();
        let given = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
        let uri = match (block, given(block.and_then(|b| b.uri.clone()))) {
            (_, Some(uri)) => uri,
            (Some(_), None) => match given(config.env(URI_ENV)) {
                Some(uri) if is_http(&uri) => uri,
                Some(_) => {
                    return Err(format!(
                        "the block has no uri, and {URI_ENV} is not an http:// or https:// address; add 'uri: http://127.0.0.1:5000' (a server of `mlflow server`)"
                    ));
                }
                None => {
                    return Err(format!(
                        "the block has no uri and {URI_ENV} is not set; add 'uri: http://127.0.0.1:5000' (a server of `mlflow server`), or set {URI_ENV}"
                    ));
                }
            },
            (None, None) => match given(config.env(URI_ENV)) {
                Some(uri) if is_http(&uri) => uri,
                Some(_) => {
                    tracing::warn!(
                        "{URI_ENV} is set but is not an http:// or https:// address (a file store or a database is written by MLflow's own clients only), so this run is not tracked"
                    );
                    return Ok(None);
                }
                None => return Ok(None),
            },
        };
        let experiment = given(block.and_then(|b| b.experiment.clone()))
            .or_else(|| given(config.env(EXPERIMENT_ENV)))
            .unwrap_or_else(|| config.name.clone());
        Ok(Some(MlflowSettings {
            uri: uri.trim().to_owned(),
            experiment: experiment.trim().to_owned(),
        }))
    }
}

fn is_http(uri: &str) -> bool {
    let uri = uri.trim();
    uri.starts_with("http://") || uri.starts_with("https://")
}

/// What a tracked run says of itself when it starts.
#[derive(Debug, Clone)]
pub struct RunStart {
    /// The run folder's name, the MLflow run's `mlflow.runName`.
    pub run_name: String,
    /// When it started, in milliseconds since 1970.
    pub started_ms: i64,
    /// The config as it ran, secrets withheld ([`params`]).
    pub params: Vec<Param>,
    /// Its tags: kind, optimizer, target.
    pub tags: Vec<Tag>,
}

/// How a tracked run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// It ran to its end (a budget stop included).
    Finished,
    /// Nothing worked, or the run folder could not be written.
    Failed,
    /// Stopped with Ctrl-C.
    Killed,
}

impl RunStatus {
    /// MLflow's name for it.
    fn mlflow(self) -> &'static str {
        match self {
            RunStatus::Finished => "FINISHED",
            RunStatus::Failed => "FAILED",
            RunStatus::Killed => "KILLED",
        }
    }
}

/// What a tracked run records as it ends.
#[derive(Debug, Clone)]
pub struct RunEnd {
    /// How it ended.
    pub status: RunStatus,
    /// Its stop reason's code (`rounds`, `patience`, `budget`, ...), if the search gave one.
    pub stop_reason: Option<&'static str>,
    /// What its model calls cost.
    pub spend: Spend,
    /// Seconds it took.
    pub elapsed_secs: f64,
}

/// A run's parameters: the config as a JSON value (as `config.yaml` holds it, secrets
/// already withheld) flattened into dotted keys (`optimizer.name`), lists as JSON text,
/// values cut to MLflow's 6000 characters; a value under a secret-looking name is hidden
/// whatever it is, by the one rule of [`skill_factory_io::secrets`].
pub fn params(config: &Value) -> Vec<Param> {
    let mut out = Vec::new();
    flatten("", config, &mut out);
    out
}

fn flatten(key: &str, value: &Value, out: &mut Vec<Param>) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (name, item) in map {
                let key = if key.is_empty() {
                    name.clone()
                } else {
                    format!("{key}.{name}")
                };
                flatten(&key, item, out);
            }
        }
        other => {
            let name = key.rsplit('.').next().unwrap_or(key);
            let text = match other {
                Value::String(_) if looks_secret(name) => HIDDEN.to_owned(),
                Value::String(text) => text.clone(),
                _ => other.to_string(),
            };
            out.push(Param {
                key: mlflow_key(key),
                value: text.chars().take(PARAM_VALUE_CHARS).collect(),
            });
        }
    }
}

/// `key` in the characters MLflow takes in a name (letters, digits, `_ - . / : ` and
/// spaces), the others as `_`, cut to its 250.
fn mlflow_key(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_alphanumeric() || "_-./: ".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(KEY_CHARS)
        .collect()
}

/// The metrics an event records, at `now` (milliseconds since 1970): a candidate's
/// validation score with its interval and its train (minibatch) score at its number as the
/// step, a gate's decision at its challenger's (accepted 0 or 1, the paired gain, the bound
/// it was held to), the best score after each round, the headline, the test split, and the
/// The metrics of `pairs` at `step`, those whose value is not finite left out (MLflow
/// refuses them).
fn finite(pairs: &[(&str, f64)], step: usize, now: i64) -> Vec<Metric> {
    pairs
        .iter()
        .filter(|(_, value)| value.is_finite())
        .map(|(key, value)| Metric {
            key: (*key).to_owned(),
            value: *value,
            timestamp: now,
            step: step as i64,
        })
        .collect()
}

/// seed's and the best's scores as the run ends. Values that are not finite are left out.
fn metrics(event: &Event, now: i64) -> Vec<Metric> {
    let at = |step: usize, pairs: &[(&str, f64)]| finite(pairs, step, now);
    match event {
        Event::CandidateScored {
            candidate,
            val_score,
            interval,
            ..
        } => {
            let mut pairs = vec![("val_score", *val_score)];
            if let Some([low, high]) = interval {
                pairs.extend([("val_score_low", *low), ("val_score_high", *high)]);
            }
            at(*candidate, &pairs)
        }
        Event::EvaluationFinished {
            candidate,
            split,
            score,
            complete: true,
            ..
        } if split == "train" => at(*candidate, &[("train_score", *score)]),
        Event::Compared { comparison, .. } => at(
            comparison.challenger,
            &[
                ("gate_accepted", f64::from(u8::from(comparison.accepted))),
                ("gate_gain", comparison.difference.mean),
                ("gate_bound", comparison.bound),
            ],
        ),
        Event::RoundFinished {
            round, best_score, ..
        } => at(*round, &[("best_val_score", *best_score)]),
        Event::HeadlineScored {
            best_score,
            interval: [low, high],
            ..
        } => at(
            0,
            &[
                ("headline_score", *best_score),
                ("headline_score_low", *low),
                ("headline_score_high", *high),
            ],
        ),
        Event::TestScored {
            seed_score,
            best_score,
        } => at(
            0,
            &[
                ("test_seed_score", *seed_score),
                ("test_best_score", *best_score),
            ],
        ),
        Event::RunFinished {
            baseline_score,
            best_score,
        } => at(
            0,
            &[
                ("baseline_score", *baseline_score),
                ("best_score", *best_score),
            ],
        ),
        _ => Vec::new(),
    }
}

/// Milliseconds since 1970, as MLflow counts time.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A tracked run's sink: journals every call and queues it for the tracker's thread.
pub struct Tracker {
    queue: Mutex<Queue>,
    shared: Arc<Shared>,
    /// Sent by the tracker's thread once it is through the queue.
    done: Mutex<Option<oneshot::Receiver<()>>>,
}

/// The calls not yet handed over, numbered in the order they are journaled.
struct Queue {
    seq: u64,
    journal: Arc<Journal>,
    /// `None` once the run ended.
    calls: Option<mpsc::UnboundedSender<(u64, Call)>>,
}

/// What the run's side and the tracker's thread both know.
struct Shared {
    /// The server, as shown.
    uri: String,
    /// The run folder.
    folder: PathBuf,
    /// Whether a problem was said already (one line a run).
    said: AtomicBool,
    /// Set when the run stopped waiting: the thread sends nothing more.
    abandoned: AtomicBool,
    /// How the client's last attempt went.
    trouble: Trouble,
}

impl Shared {
    /// Says a tracking problem on stderr, unless one was said already.
    fn say(&self, problem: &str) {
        if !self.said.swap(true, Ordering::SeqCst) {
            tracing::warn!("{problem}");
        }
    }

    /// Says that the server did not take a call, and where what it lacks is.
    fn failed(&self, error: &dyn std::fmt::Display) {
        self.say(&format!(
            "{error}; the run goes on untracked, and what did not reach the server is kept in {}: `skill-factory track push {}` sends it",
            self.folder.join(skill_factory_runfolder::names::MLFLOW_FILE).display(),
            self.folder.display()
        ));
    }
}

impl Tracker {
    /// Starts tracking the run in `folder` as `start` describes it, with the credentials
    /// `env` gives; `None` (said once on stderr) when the journal cannot be written or the
    /// client cannot start: the run goes on untracked.
    pub fn start(
        settings: &MlflowSettings,
        folder: &Path,
        start: RunStart,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Arc<Tracker>> {
        let refuse = |why: String| {
            tracing::warn!("{why}; the run goes on untracked in MLflow");
            None
        };
        let client = match MlflowClient::new(&settings.uri, env) {
            Ok(client) => client,
            Err(error) => return refuse(error.to_string()),
        };
        let journal = match Journal::open(folder).and_then(|journal| {
            journal.server(client.uri())?;
            journal.process()?;
            Ok(journal)
        }) {
            Ok(journal) => Arc::new(journal),
            Err(error) => {
                return refuse(format!(
                    "cannot write {}: {error}",
                    folder
                        .join(skill_factory_runfolder::names::MLFLOW_FILE)
                        .display()
                ));
            }
        };
        let shared = Arc::new(Shared {
            uri: client.uri().to_owned(),
            folder: folder.to_path_buf(),
            said: AtomicBool::new(false),
            abandoned: AtomicBool::new(false),
            trouble: client.trouble(),
        });
        let (calls, queued) = mpsc::unbounded_channel();
        let (finished, done) = oneshot::channel();
        let thread = {
            let (journal, shared) = (journal.clone(), shared.clone());
            std::thread::Builder::new()
                .name("mlflow-tracker".into())
                .spawn(move || deliver(client, journal, queued, shared, finished))
        };
        if let Err(error) = thread {
            return refuse(format!("cannot start its thread: {error}"));
        }
        let tracker = Arc::new(Tracker {
            queue: Mutex::new(Queue {
                seq: 0,
                journal,
                calls: Some(calls),
            }),
            shared,
            done: Mutex::new(Some(done)),
        });
        tracker.queue(Call::StartRun {
            experiment: settings.experiment.clone(),
            run_name: start.run_name,
            start_time: start.started_ms,
            tags: start.tags,
        });
        tracker.queue(Call::LogBatch {
            metrics: Vec::new(),
            params: start.params,
            tags: Vec::new(),
        });
        Some(tracker)
    }

    /// Journals `call` and hands it to the tracker's thread.
    fn queue(&self, call: Call) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.seq += 1;
        if let Err(error) = queue.journal.call(queue.seq, &call) {
            self.shared.say(&format!(
                "cannot write {}: {error}; calls from here on are sent but not kept",
                queue.journal.path().display()
            ));
        }
        if let Some(calls) = &queue.calls {
            // A thread that is gone already said why.
            let _ = calls.send((queue.seq, call));
        }
    }

    /// Records how the run ended (usage, cost, its stop reason), uploads its report, best
    /// skill and result, ends the MLflow run, and waits up to 10 s for the thread to deliver,
    /// but not a moment once the server is seen failing (a run is never held by a server that
    /// is down while its requests are retried); what is not delivered then is left to
    /// `track push`, said once.
    pub async fn finish(&self, end: RunEnd) {
        let spend = &end.spend;
        let now = now_ms();
        let usage = [
            ("tokens", spend.tokens() as f64),
            ("input_tokens", spend.input_tokens as f64),
            ("output_tokens", spend.output_tokens as f64),
            ("usd", spend.usd),
            ("model_calls", spend.calls as f64),
            ("cached_calls", spend.cached_calls as f64),
            ("elapsed_seconds", end.elapsed_secs),
        ];
        self.queue(Call::LogBatch {
            metrics: finite(&usage, 0, now),
            params: Vec::new(),
            tags: end
                .stop_reason
                .map(|code| Tag::new("skill_factory.stop_reason", code))
                .into_iter()
                .collect(),
        });
        for path in ARTIFACTS {
            self.queue(Call::LogArtifact { path: path.into() });
        }
        self.queue(Call::EndRun {
            status: end.status.mlflow().to_owned(),
            end_time: now,
        });
        // Closing the channel lets the thread end once it is through the queue.
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .calls
            .take();
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut done) = done else {
            return;
        };
        let deadline = tokio::time::Instant::now() + FINISH_WAIT;
        loop {
            tokio::select! {
                biased;
                _ = &mut done => return,
                () = tokio::time::sleep(FINISH_POLL) => {}
            }
            if let Some(problem) = self.shared.trouble.now() {
                self.shared.abandoned.store(true, Ordering::SeqCst);
                self.shared.failed(&problem);
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
        }
        self.shared.abandoned.store(true, Ordering::SeqCst);
        self.shared.say(&format!(
            "MLflow at {} had not taken the run's last calls {} s after it ended; they are kept in {}: `skill-factory track push {}` sends them",
            self.shared.uri,
            FINISH_WAIT.as_secs(),
            self.shared.folder.join(skill_factory_runfolder::names::MLFLOW_FILE).display(),
            self.shared.folder.display()
        ));
    }
}

impl EventSink for Tracker {
    fn event(&self, event: &Event) {
        let metrics = metrics(event, now_ms());
        if !metrics.is_empty() {
            self.queue(Call::LogBatch {
                metrics,
                params: Vec::new(),
                tags: Vec::new(),
            });
        }
    }
}

/// The tracker's thread: sends the queued calls in order, each time all that arrived since
/// (merged into few requests), until the run closes the queue. After a failure, or once the
/// run stopped waiting, it sends nothing more: the journal holds the rest.
fn deliver(
    client: MlflowClient,
    journal: Arc<Journal>,
    mut queued: mpsc::UnboundedReceiver<(u64, Call)>,
    shared: Arc<Shared>,
    finished: oneshot::Sender<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            shared.say(&format!(
                "cannot start the tracker's runtime ({error}); the run goes on untracked"
            ));
            return;
        }
    };
    runtime.block_on(async {
        let mut sender = Some(Sender::new(&client, &journal, &shared.folder, None, false));
        while let Some(first) = queued.recv().await {
            let mut calls = vec![first];
            while let Ok(next) = queued.try_recv() {
                calls.push(next);
            }
            if shared.abandoned.load(Ordering::SeqCst) {
                sender = None;
            }
            let Some(active) = sender.as_mut() else {
                continue;
            };
            let outcome = active.send(&calls).await;
            for note in active.sent.notes.drain(..) {
                shared.say(&note);
            }
            if let Err(error) = outcome {
                shared.failed(&error);
                sender = None;
            }
        }
    });
    let _ = finished.send(());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_config_flattens_into_dotted_keys_with_secrets_hidden() {
        let config = json!({
            "optimizer": {"name": "llm_loop", "rounds": 4, "budget": {"max_usd": null}},
            "metric": {"programmatic": {"checks": ["is_valid_json", {"json_has_keys": ["a"]}]}},
            "harness": {"env": {"SERVICE_TOKEN": "t-123456789", "LEVEL": "x"}, "max_tokens": 512},
            "odd name!": "v",
            "description": "é".repeat(7000),
        });
        let params = params(&config);
        let value = |key: &str| {
            params
                .iter()
                .find(|p| p.key == key)
                .map(|p| p.value.clone())
                .unwrap_or_else(|| panic!("{key} missing from {params:?}"))
        };
        assert_eq!(value("optimizer.name"), "llm_loop");
        assert_eq!(value("optimizer.rounds"), "4");
        assert_eq!(
            value("metric.programmatic.checks"),
            r#"["is_valid_json",{"json_has_keys":["a"]}]"#
        );
        assert_eq!(value("harness.env.SERVICE_TOKEN"), HIDDEN);
        assert_eq!(value("harness.env.LEVEL"), "x");
        assert_eq!(value("harness.max_tokens"), "512");
        assert_eq!(value("odd name_"), "v");
        assert_eq!(value("description").chars().count(), PARAM_VALUE_CHARS);
        assert!(!params.iter().any(|p| p.key.starts_with("optimizer.budget")));
    }

    #[test]
    fn scores_gates_and_rounds_become_metrics_by_step() {
        let scored = Event::CandidateScored {
            round: 1,
            candidate: 3,
            val_score: 0.75,
            interval: Some([0.5, f64::NAN]),
            same_as: None,
        };
        let metrics = metrics(&scored, 7);
        let keys: Vec<(&str, i64)> = metrics.iter().map(|m| (m.key.as_str(), m.step)).collect();
        assert_eq!(keys, [("val_score", 3), ("val_score_low", 3)]);
        assert!(metrics.iter().all(|m| m.timestamp == 7));
        let minibatch = |complete| Event::EvaluationFinished {
            round: 2,
            candidate: 1,
            split: "train".into(),
            sample: 0,
            score: 0.5,
            tasks: 4,
            failed: 0,
            complete,
        };
        assert_eq!(super::metrics(&minibatch(true), 0)[0].key, "train_score");
        assert!(super::metrics(&minibatch(false), 0).is_empty());
        let round = Event::RoundFinished {
            round: 2,
            best_score: 1.0,
            rounds_without_improvement: 0,
        };
        assert_eq!(super::metrics(&round, 0)[0].step, 2);
    }
}
