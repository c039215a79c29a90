//! The run folder's logs: `events.jsonl` (one line per event, in the order they happened),
//! `rollouts.jsonl` (every rollout in full) and `candidates/NNN.md` (every proposal).
//!
//! Both logs are append-only and every line is handed to the operating system as soon as it
//! is written (no buffering in the process), so a run killed at any point leaves complete
//! lines behind, readable by the dashboard. Each event line carries a sequence number, a UTC
//! timestamp with milliseconds and what the run had spent at that moment (`spent`: calls,
//! tokens, dollars).

use std::borrow::Cow;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{SecondsFormat, Utc};
use skill_factory_io::append::Appender;
use skill_factory_llm::Ledger;
use skill_factory_runfolder::event::{EventLine, Spent};
use skill_factory_runfolder::lines::RolloutLine;
use skill_factory_runfolder::names::{CANDIDATES_DIR, EVENTS_FILE, ROLLOUTS_FILE, candidate_file};

use super::folder::RunFolder;
use crate::optimizer::{Event, EventSink};

/// An append-only JSON Lines file whose lines carry a sequence number.
pub struct JsonLines {
    file: Appender,
    /// The last line's sequence number, held while a line is written, so lines are in order.
    seq: Mutex<u64>,
}

impl JsonLines {
    /// Creates (or appends to) the file, which this run alone writes.
    pub fn open(path: &Path) -> io::Result<JsonLines> {
        Ok(JsonLines {
            file: Appender::owned(path, |line| {
                serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
            })?,
            seq: Mutex::new(0),
        })
    }

    /// Appends one line; `fill` receives the line's sequence number (from 1) to complete it.
    /// A line the disk had no room for is cut off again, so the file never ends in half a line.
    pub fn append<T: serde::Serialize>(&self, fill: impl FnOnce(u64) -> T) -> io::Result<()> {
        let mut seq = self.seq.lock().unwrap_or_else(|p| p.into_inner());
        let mut line = serde_json::to_string(&fill(*seq + 1)).map_err(io::Error::other)?;
        line.push('\n');
        self.file.append(&line)?;
        *seq += 1;
        Ok(())
    }
}

/// The current time as the logs write it: `2026-03-04T05:06:07.123Z`.
pub fn timestamp() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Records every event of a run into its folder.
pub struct EventLog {
    folder: RunFolder,
    events: JsonLines,
    rollouts: JsonLines,
    ledger: Arc<Ledger>,
    warned: AtomicBool,
}

impl EventLog {
    /// Opens the logs of `folder` and creates its `candidates/` folder.
    pub fn create(folder: &RunFolder, ledger: Arc<Ledger>) -> io::Result<EventLog> {
        std::fs::create_dir_all(folder.file(CANDIDATES_DIR))?;
        Ok(EventLog {
            folder: folder.clone(),
            events: JsonLines::open(&folder.file(EVENTS_FILE))?,
            rollouts: JsonLines::open(&folder.file(ROLLOUTS_FILE))?,
            ledger,
            warned: AtomicBool::new(false),
        })
    }

    /// A failed write is reported once and the run goes on: losing a log line must not
    /// lose the run.
    fn check(&self, outcome: io::Result<()>) {
        if let Err(error) = outcome
            && !self.warned.swap(true, Ordering::SeqCst)
        {
            tracing::warn!(
                "cannot write to the run folder {}: {error}",
                self.folder.path.display()
            );
        }
    }

    fn spent(&self) -> Spent {
        let total = self.ledger.total();
        Spent {
            calls: total.calls,
            cached_calls: total.cached_calls,
            tokens: total.tokens(),
            usd: (total.usd * 1e6).round() / 1e6,
        }
    }
}

impl EventSink for EventLog {
    fn event(&self, event: &Event) {
        let mut file = None;
        match event {
            Event::Rollout(record) => {
                let item = &record.item;
                let usage = item.rollout.usage;
                let line = |seq| RolloutLine {
                    seq,
                    ts: timestamp(),
                    round: record.round,
                    candidate: record.candidate,
                    split: record.split.clone(),
                    task_id: item.task_id().into(),
                    sample: item.rollout.sample,
                    score: item.score(),
                    output: item.rollout.output.as_str().into(),
                    error: item.rollout.error.as_deref().map(Into::into),
                    feedback: item.result.feedback.as_str().into(),
                    breakdown: Cow::Borrowed(&item.result.breakdown),
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    metric_input_tokens: item.result.usage.input_tokens,
                    metric_output_tokens: item.result.usage.output_tokens,
                    latency_ms: item.rollout.latency_ms,
                    reused: record.reused,
                    metadata: Cow::Borrowed(&item.rollout.metadata),
                };
                let outcome = self.rollouts.append(line);
                self.check(outcome);
            }
            Event::CandidateProposed {
                candidate,
                document,
                ..
            } => {
                let name = candidate_file(*candidate);
                self.check(self.folder.write(&name, document));
                file = Some(name);
            }
            _ => {}
        }
        let line = |seq| EventLine {
            seq,
            ts: timestamp(),
            event,
            spent: Some(self.spent()),
            file,
        };
        let outcome = self.events.append(line);
        self.check(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use skill_factory_core::{MetricResult, Rollout, TaskEvaluation};

    use crate::optimizer::RolloutRecord;

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn every_event_is_one_complete_line_with_time_sequence_and_spend() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = RunFolder::create(tmp.path(), Utc::now()).unwrap();
        let log = EventLog::create(&folder, Arc::new(Ledger::unlimited())).unwrap();
        log.event(&Event::RoundStarted {
            round: 1,
            minibatch: vec!["a".into()],
        });
        log.event(&Event::Rollout(RolloutRecord::new(
            1,
            0,
            "train",
            false,
            TaskEvaluation::new(
                Rollout::success("a", "out"),
                MetricResult::new("m", 0.5, "half"),
            ),
        )));
        log.event(&Event::CandidateProposed {
            round: 1,
            candidate: 1,
            index: 0,
            parent: 0,
            temperature: 0.2,
            valid: false,
            reason: Some("the reply was empty".into()),
            unchanged_from: None,
            warnings: Vec::new(),
            rationale: String::new(),
            body_chars: 0,
            input_tokens: 3,
            output_tokens: 0,
            document: "raw answer".into(),
        });
        let events = lines(&folder.file(EVENTS_FILE));
        assert_eq!(events.len(), 3);
        assert_eq!(events[0]["event"], "round_started");
        assert_eq!(events[0]["seq"], 1);
        assert!(events[0]["ts"].as_str().unwrap().ends_with('Z'));
        assert_eq!(events[0]["spent"]["calls"], 0);
        assert_eq!(events[1]["event"], "rollout");
        assert_eq!(events[1]["score"], 0.5);
        assert_eq!(events[2]["reason"], "the reply was empty");
        assert_eq!(events[2]["file"], "candidates/001.md");
        assert!(events[2].get("document").is_none());
        let rollouts = lines(&folder.file(ROLLOUTS_FILE));
        assert_eq!(rollouts[0]["output"], "out");
        assert_eq!(rollouts[0]["feedback"], "half");
        assert_eq!(rollouts[0]["split"], "train");
        assert_eq!(
            std::fs::read_to_string(folder.file("candidates/001.md")).unwrap(),
            "raw answer"
        );
    }
}
