//! The tracker's journal, `mlflow.jsonl` in the run folder: every call the run makes to
//! MLflow, in order, appended as it happens (before it is sent), and after each request that
//! reached the server a mark saying which run the calls up to it went into. What follows the
//! last mark did not reach the server; [`push`] (`skill-factory track push RUN_DIR`) sends it
//! and marks it, so pushing twice sends nothing twice. The `process` line names the process
//! that ran the run, so that a push can end a run killed outright (`KILLED`).
//!
//! ```text
//! {"line":"server","uri":"http://127.0.0.1:5000"}
//! {"line":"process","host":"ci-7","pid":4711,"started":123456}
//! {"line":"call","seq":1,"call":{"start_run":{"experiment":"invoice-extractor","run_name":"20260304-050607","start_time":1772600767000,"tags":[...]}}}
//! {"line":"call","seq":2,"call":{"log_batch":{"params":[{"key":"optimizer.name","value":"llm_loop"},...]}}}
//! {"line":"delivered","through":2,"experiment_id":"1","run_id":"5f0c…","artifact_uri":"mlflow-artifacts:/1/5f0c…/artifacts"}
//! {"line":"call","seq":3,"call":{"log_batch":{"metrics":[{"key":"val_score","value":0.43,"timestamp":1772600767100,"step":0}]}}}
//! ```
//!
//! A call carries its own times (a metric's timestamp, the run's start and end), so sending it
//! later records what happened when it happened; MLflow ignores a metric logged twice with the
//! same step, time and value, and parameters and tags logged again with the same values. The
//! server's address is kept as it may be shown: credentials in it are not written.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use skill_factory_io::append::Appender;
use skill_factory_io::input::{self, InputError};
use skill_factory_io::process::ProcessId;
use skill_factory_io::secrets::HIDDEN;
use skill_factory_runfolder::names::MLFLOW_FILE;

use super::mlflow::{MlflowClient, MlflowError, RunRef, Sender};

/// A metric's value at one step, as MLflow takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Its name (`val_score`).
    pub key: String,
    /// Its value (finite).
    pub value: f64,
    /// When, in milliseconds since 1970.
    pub timestamp: i64,
    /// The step: a candidate's number, a round's.
    pub step: i64,
}

/// A parameter of the run: a key of its config and the value it ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The dotted key (`optimizer.name`).
    pub key: String,
    /// The value as text.
    pub value: String,
}

/// A tag of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tag {
    /// `skill_factory.optimizer`, `mlflow.runName`, ...
    pub key: String,
    /// Its value.
    pub value: String,
}

impl Tag {
    /// A tag.
    pub fn new(key: &str, value: impl Into<String>) -> Tag {
        Tag {
            key: key.to_owned(),
            value: value.into(),
        }
    }
}

/// One call of a run to its tracking server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Find or create the experiment, and create the run in it.
    StartRun {
        /// The experiment's name.
        experiment: String,
        /// The run's name (`mlflow.runName`): the run folder's.
        run_name: String,
        /// When the run started, in milliseconds since 1970.
        start_time: i64,
        /// Its first tags.
        tags: Vec<Tag>,
    },
    /// Metrics, parameters and tags.
    LogBatch {
        /// Metrics.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        metrics: Vec<Metric>,
        /// Parameters.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        params: Vec<Param>,
        /// Tags.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tags: Vec<Tag>,
    },
    /// Upload a file of the run folder (read when sent) as the artifact of the same name.
    LogArtifact {
        /// Its name in the run folder (`report.md`).
        path: String,
    },
    /// End the run.
    EndRun {
        /// `FINISHED`, `FAILED` or `KILLED`.
        status: String,
        /// When, in milliseconds since 1970.
        end_time: i64,
    },
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
enum Line {
    /// The server the run tracked to, as it may be shown.
    Server {
        /// Its address.
        uri: String,
    },
    /// A call, numbered from 1.
    Call {
        /// Its number.
        seq: u64,
        /// The call.
        call: Call,
    },
    /// The process of the run, so that a push can tell a run that was killed (its MLflow
    /// run never ended) from one still going.
    Process {
        /// The machine it ran on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
        /// Its id.
        pid: u32,
        /// When it started, in clock ticks after boot.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started: Option<u64>,
    },
    /// Every call up to `through` reached the server, into this run.
    Delivered {
        /// The last call delivered.
        through: u64,
        /// The run they went into.
        #[serde(flatten)]
        run: RunRef,
    },
}

/// The journal of one run folder, open for appending (by the run, or by a push).
#[derive(Debug)]
pub struct Journal {
    file: Appender,
    /// Whether a failed write was said already.
    warned: AtomicBool,
}

impl Journal {
    /// Opens (or creates) the journal of the run folder `folder`.
    pub fn open(folder: &Path) -> io::Result<Journal> {
        Ok(Journal {
            file: Appender::open(&folder.join(MLFLOW_FILE), |line| {
                serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
            })?,
            warned: AtomicBool::new(false),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Writes the server's address (as shown) first.
    pub fn server(&self, uri: &str) -> io::Result<()> {
        self.write(&Line::Server {
            uri: uri.to_owned(),
        })
    }

    /// Writes which process runs the run (this one), after the server.
    pub fn process(&self) -> io::Result<()> {
        let ProcessId { host, pid, started } = ProcessId::current();
        self.write(&Line::Process { host, pid, started })
    }

    /// Appends call number `seq`.
    pub fn call(&self, seq: u64, call: &Call) -> io::Result<()> {
        self.write(&Line::Call {
            seq,
            call: call.clone(),
        })
    }

    /// Marks the calls up to `through` delivered into `run`. A mark that cannot be written is
    /// said once: its calls are sent again by a push, which they bear.
    pub fn delivered(&self, through: u64, run: &RunRef) {
        let written = self.write(&Line::Delivered {
            through,
            run: run.clone(),
        });
        if let Err(error) = written
            && !self.warned.swap(true, Ordering::SeqCst)
        {
            tracing::warn!(
                "cannot write to {}: {error}; calls that reached MLflow may be sent again by `skill-factory track push`",
                self.path().display()
            );
        }
    }

    fn write(&self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        self.file.append(&text)
    }
}

/// A journal as read back.
#[derive(Debug, Default, PartialEq)]
struct Recorded {
    /// The server the run tracked to, as shown.
    uri: Option<String>,
    /// Every call, in order.
    calls: Vec<(u64, Call)>,
    /// Each run the calls went into, with the last call delivered into it, the latest last.
    deliveries: Vec<(u64, RunRef)>,
    /// The process that ran the run, when the journal says.
    process: Option<ProcessId>,
}

impl Recorded {
    /// Reads the journal at `path`.
    fn read(path: &Path) -> Result<Recorded, PushError> {
        let text = input::read_text(path, input::RUN_FILE).map_err(|error| match error {
            InputError::Missing { .. } => PushError::Journal {
                path: path.to_path_buf(),
                detail: "there is no such file, so the run was not tracked; a run is tracked when its config has a 'tracking: {mlflow: {uri: ...}}' block or MLFLOW_TRACKING_URI is set while `skill-factory optimize` runs".to_owned(),
            },
            other => PushError::Unreadable(other),
        })?;
        let mut recorded = Recorded::default();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(line).map_err(|error| PushError::Journal {
                path: path.to_path_buf(),
                detail: format!(
                    "line {} is not a line of the tracker's journal ({error}); the file is written by `skill-factory optimize`, not by hand",
                    number + 1
                ),
            })?;
            match line {
                Line::Server { uri } => recorded.uri = Some(uri),
                Line::Call { seq, call } => recorded.calls.push((seq, call)),
                Line::Process { host, pid, started } => {
                    recorded.process = Some(ProcessId { host, pid, started });
                }
                Line::Delivered { through, run } => {
                    recorded
                        .deliveries
                        .retain(|(_, known)| known.run_id != run.run_id);
                    recorded.deliveries.push((through, run));
                }
            }
        }
        Ok(recorded)
    }
}

/// Where and how to push.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// The server (default: the run's, else `MLFLOW_TRACKING_URI`).
    pub uri: Option<String>,
    /// The experiment of a run the push creates (default: the run's).
    pub experiment: Option<String>,
}

/// What a push did.
#[derive(Debug)]
pub struct Pushed {
    /// The server, as shown.
    pub uri: String,
    /// The run the calls are in.
    pub run: Option<RunRef>,
    /// Calls sent now (0: everything had reached the server already).
    pub calls: usize,
    /// The experiment a run created now went into.
    pub experiment: Option<String>,
    /// Things to say: artifacts left out, a flag that did not apply.
    pub notes: Vec<String>,
    /// The journal.
    pub journal: PathBuf,
}

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The journal is missing or unreadable.
    #[error("{}: {detail}", path.display())]
    Journal {
        /// The journal.
        path: PathBuf,
        /// What is wrong and what to do.
        detail: String,
    },
    /// The journal cannot be read (a folder, a FIFO, too large).
    #[error(transparent)]
    Unreadable(InputError),
    /// No usable address.
    #[error("{0}")]
    Address(String),
    /// The server did not take every call; the journal marks those it took.
    #[error("{source}; {sent} call{} reached it and are marked in {}, `skill-factory track push` again sends the rest", if *sent == 1 { "" } else { "s" }, journal.display())]
    Delivery {
        /// The failure.
        source: MlflowError,
        /// Calls that reached the server before it.
        sent: usize,
        /// The journal.
        journal: PathBuf,
    },
}

/// Sends what the run in `folder` did not deliver to its MLflow server; `env` looks up
/// `MLFLOW_TRACKING_URI` and MLflow's credentials.
pub async fn push(
    folder: &Path,
    options: PushOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Pushed, PushError> {
    let path = folder.join(MLFLOW_FILE);
    let mut recorded = Recorded::read(&path)?;
    let uri = address(&options, recorded.uri.as_deref(), env)?;
    let client = MlflowClient::new(&uri, env).map_err(|e| PushError::Address(e.to_string()))?;
    let journal = Journal::open(folder).map_err(|error| PushError::Journal {
        path: path.clone(),
        detail: format!("cannot append to it: {error}"),
    })?;
    let failed = |source: MlflowError, sent: usize| PushError::Delivery {
        source,
        sent,
        journal: path.clone(),
    };
    // The latest run of the journal this server has: its calls up to the mark are there.
    // Another server (or a store that lost the run) gets every call, into a run of its own.
    let mut resumed = None;
    for (through, run) in recorded.deliveries.iter().rev() {
        if client
            .run(&run.run_id)
            .await
            .map_err(|e| failed(e, 0))?
            .is_some()
        {
            resumed = Some((*through, run.clone()));
            break;
        }
    }
    let mut notes = Vec::new();
    if let Some(end) = unended(&recorded, &path, &mut notes) {
        // Journaled first, as the run journals its calls: a second push finds it there.
        let seq = recorded.calls.last().map_or(1, |(seq, _)| seq + 1);
        journal
            .call(seq, &end)
            .map_err(|error| PushError::Journal {
                path: path.clone(),
                detail: format!("cannot append to it: {error}"),
            })?;
        recorded.calls.push((seq, end));
    }
    let after = resumed.as_ref().map_or(0, |(through, _)| *through);
    let mut calls: Vec<(u64, Call)> = recorded
        .calls
        .into_iter()
        .filter(|(seq, _)| *seq > after)
        .collect();
    let mut experiment = None;
    if let Some((
        _,
        Call::StartRun {
            experiment: name, ..
        },
    )) = calls.first_mut()
    {
        if let Some(chosen) = &options.experiment {
            *name = chosen.clone();
        }
        experiment = Some(name.clone());
    } else if options.experiment.is_some() && !calls.is_empty() {
        notes.push(
            "--experiment names the experiment of a run the push creates; this run exists on the server already, so it stays in its experiment".to_owned(),
        );
    }
    let mut sender = Sender::new(&client, &journal, folder, resumed.map(|(_, run)| run), true);
    let outcome = sender.send(&calls).await;
    let sent = std::mem::take(&mut sender.sent);
    outcome.map_err(|e| failed(e, sent.calls))?;
    notes.extend(sent.notes);
    Ok(Pushed {
        uri: client.uri().to_owned(),
        run: sender.run().cloned(),
        calls: sent.calls,
        experiment,
        notes,
        journal: path,
    })
}

/// The end of a run whose process is gone without ending its MLflow run (killed outright: a
/// SIGKILL, a machine that went down), `KILLED` at the journal's last write, the last sign of
/// its life; `None` for a run that ended, or that may still be going, which `notes` tell.
fn unended(recorded: &Recorded, journal: &Path, notes: &mut Vec<String>) -> Option<Call> {
    if recorded
        .calls
        .iter()
        .any(|(_, call)| matches!(call, Call::EndRun { .. }))
    {
        return None;
    }
    let process = recorded.process.as_ref();
    match process.and_then(ProcessId::is_running) {
        Some(false) => {
            let last_write = std::fs::metadata(journal).and_then(|m| m.modified()).ok()?;
            let end_time = last_write
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .and_then(|since| i64::try_from(since.as_millis()).ok())?;
            notes.push("the run's process ended without ending its MLflow run (it was killed): the run is marked KILLED, at the last time it wrote to its journal".to_owned());
            Some(Call::EndRun {
                status: "KILLED".to_owned(),
                end_time,
            })
        }
        Some(true) => {
            notes.push(format!(
                "the run is still going (process {}): MLflow shows it RUNNING until it ends, and its end reaches MLflow then",
                process.map_or(0, |p| p.pid)
            ));
            None
        }
        None => {
            notes.push("the run never ended its MLflow run, and whether its process is gone cannot be told from this machine: MLflow shows it RUNNING".to_owned());
            None
        }
    }
}

/// The server to push to: the flag's, the run's (unless the journal could only keep it with
/// its credentials hidden), else `MLFLOW_TRACKING_URI`'s.
fn address(
    options: &PushOptions,
    recorded: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, PushError> {
    if let Some(uri) = &options.uri {
        return Ok(uri.clone());
    }
    if let Some(uri) = recorded.filter(|uri| !uri.contains(HIDDEN)) {
        return Ok(uri.to_owned());
    }
    if let Some(uri) = env("MLFLOW_TRACKING_URI").filter(|uri| !uri.trim().is_empty()) {
        return Ok(uri);
    }
    Err(PushError::Address(match recorded {
        Some(shown) => format!(
            "the run tracked to {shown}, whose credentials the run folder does not keep; give the address with --uri (or MLFLOW_TRACKING_URI), or the credentials in MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
        ),
        None => "the journal names no server; give one with --uri http://HOST:PORT (or MLFLOW_TRACKING_URI)".to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> RunRef {
        RunRef {
            experiment_id: "1".into(),
            run_id: id.into(),
            artifact_uri: format!("mlflow-artifacts:/1/{id}/artifacts"),
        }
    }

    #[test]
    fn a_journal_reads_back_its_calls_and_the_latest_mark_of_each_run() {
        let tmp = tempfile::tempdir().unwrap();
        let journal = Journal::open(tmp.path()).unwrap();
        journal.server("http://***:***@h:5000/").unwrap();
        let start = Call::StartRun {
            experiment: "e".into(),
            run_name: "20260304-050607".into(),
            start_time: 1,
            tags: vec![Tag::new("skill_factory.kind", "skill")],
        };
        let metrics = Call::LogBatch {
            metrics: vec![Metric {
                key: "val_score".into(),
                value: 0.5,
                timestamp: 2,
                step: 0,
            }],
            params: vec![],
            tags: vec![],
        };
        journal.call(1, &start).unwrap();
        journal.delivered(1, &run("a"));
        journal.call(2, &metrics).unwrap();
        journal.delivered(2, &run("b"));
        journal.delivered(1, &run("a"));
        let text = std::fs::read_to_string(journal.path()).unwrap();
        assert!(
            text.contains(r#"{"line":"call","seq":2,"call":{"log_batch":{"metrics":[{"key":"val_score","value":0.5,"timestamp":2,"step":0}]}}}"#),
            "{text}"
        );
        let recorded = Recorded::read(journal.path()).unwrap();
        assert_eq!(recorded.uri.as_deref(), Some("http://***:***@h:5000/"));
        assert_eq!(recorded.calls, vec![(1, start), (2, metrics)]);
        assert_eq!(recorded.deliveries, vec![(2, run("b")), (1, run("a"))]);
    }

    #[test]
    fn a_run_whose_process_is_gone_without_an_end_is_ended_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let journal = Journal::open(tmp.path()).unwrap();
        journal.server("http://h:5000/").unwrap();
        journal.process().unwrap();
        let read = || Recorded::read(journal.path()).unwrap();
        // This process runs the run: it is still going.
        let mut notes = Vec::new();
        assert_eq!(unended(&read(), journal.path(), &mut notes), None);
        assert!(notes[0].contains("still going"), "{notes:?}");
        // A process that has ended ran it: killed.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let mut gone = read();
        gone.process = Some(ProcessId::of(child.id()));
        child.wait().unwrap();
        let mut notes = Vec::new();
        let Some(Call::EndRun { status, end_time }) = unended(&gone, journal.path(), &mut notes)
        else {
            panic!("no end for a killed run: {notes:?}");
        };
        assert_eq!(status, "KILLED");
        let written = std::fs::metadata(journal.path())
            .unwrap()
            .modified()
            .unwrap();
        let written = written
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        assert_eq!(end_time, i64::try_from(written).unwrap());
        assert!(notes[0].contains("marked KILLED"), "{notes:?}");
        // A run that ended, or a journal that names no process, is not ended again.
        journal
            .call(
                1,
                &Call::EndRun {
                    status: "FINISHED".into(),
                    end_time: 1,
                },
            )
            .unwrap();
        let mut ended = read();
        ended.process = gone.process.clone();
        let mut notes = Vec::new();
        assert_eq!(unended(&ended, journal.path(), &mut notes), None);
        assert!(notes.is_empty(), "{notes:?}");
        let mut unknown = gone;
        unknown.process = None;
        assert_eq!(unended(&unknown, journal.path(), &mut notes), None);
        assert!(notes[0].contains("cannot be told"), "{notes:?}");
    }

    #[test]
    fn a_push_names_what_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let none = |_: &str| None;
        let error = runtime
            .block_on(push(tmp.path(), PushOptions::default(), &none))
            .unwrap_err();
        assert!(matches!(error, PushError::Journal { .. }));
        assert!(
            error.to_string().contains("the run was not tracked"),
            "{error}"
        );
        let journal = Journal::open(tmp.path()).unwrap();
        journal.server("http://***:***@h:5000/").unwrap();
        let error = runtime
            .block_on(push(tmp.path(), PushOptions::default(), &none))
            .unwrap_err();
        assert!(error.to_string().contains("--uri"), "{error}");
        std::fs::write(journal.path(), "{\"line\":\"other\"}\n").unwrap();
        let error = runtime
            .block_on(push(tmp.path(), PushOptions::default(), &none))
            .unwrap_err();
        assert!(error.to_string().contains("line 1 is not"), "{error}");
    }
}
