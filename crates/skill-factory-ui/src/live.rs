//! The live stream: one server-sent-event stream per tab, carrying three kinds of message:
//!
//! - `runs`: the runs list changed (the page reads `/api/runs` again);
//! - `jobs`: the jobs, in full, whenever one changes;
//! - `event`: each new line of the open run's `events.jsonl`, with its `seq` as the SSE id,
//!   so a reconnecting browser (which sends `Last-Event-ID`) resumes after the last one it saw.
//!
//! The events file is tailed by polling its length, so a line is sent within
//! [`TAIL_EVERY`] of being written; a line still being written (no line break yet) waits for
//! the next look.

use std::convert::Infallible;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event;
use futures_util::Stream;
use serde_json::Value;
use skill_factory_runfolder::event::EventLine;
use tokio::sync::{mpsc, watch};

use crate::jobs::Jobs;
use skill_factory_io::secrets::Scrubber;

/// How often the open run's events file is looked at.
pub const TAIL_EVERY: Duration = Duration::from_millis(250);

/// What one stream follows.
pub struct Follow {
    /// The open run's `events.jsonl`, if a run page is open.
    pub events: Option<PathBuf>,
    /// Send only events whose `seq` is above this.
    pub after: u64,
    /// Changes of the runs list.
    pub runs: watch::Receiver<u64>,
    /// The jobs.
    pub jobs: Arc<Jobs>,
    /// Secrets to hide from event lines.
    pub scrub: Scrubber,
}

/// The stream of `follow`; it ends when the browser goes away.
pub fn stream(follow: Follow) -> impl Stream<Item = Result<Event, Infallible>> {
    let (send, receive) = mpsc::channel::<Event>(64);
    tokio::spawn(run(follow, send));
    futures_util::stream::unfold(receive, |mut receive| async move {
        receive.recv().await.map(|event| (Ok(event), receive))
    })
}

async fn run(mut follow: Follow, send: mpsc::Sender<Event>) {
    let mut jobs = follow.jobs.watch();
    let mut offset = 0u64;
    let mut partial = Vec::new();
    let jobs_now = |jobs: &Jobs| {
        Event::default()
            .event("jobs")
            .data(serde_json::to_string(&jobs.list()).unwrap_or_default())
    };
    if send.send(jobs_now(&follow.jobs)).await.is_err() {
        return;
    }
    loop {
        if let Some(file) = &follow.events {
            for line in tail(file, &mut offset, &mut partial) {
                let Ok(line) = serde_json::from_str::<EventLine>(&line) else {
                    continue;
                };
                let seq = line.seq;
                if seq <= follow.after {
                    continue;
                }
                let mut event = serde_json::to_value(&line).unwrap_or(Value::Null);
                follow.scrub.json(&mut event);
                let message = Event::default()
                    .event("event")
                    .id(seq.to_string())
                    .data(event.to_string());
                if send.send(message).await.is_err() {
                    return;
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(TAIL_EVERY) => {}
            changed = follow.runs.changed() => {
                if changed.is_err() || send.send(Event::default().event("runs").data("changed")).await.is_err() {
                    return;
                }
            }
            changed = jobs.changed() => {
                if changed.is_err() || send.send(jobs_now(&follow.jobs)).await.is_err() {
                    return;
                }
            }
            () = send.closed() => return,
        }
    }
}

/// The complete lines appended to `file` since `offset`; a last line without its line break
/// is kept in `partial` for the next call.
fn tail(file: &Path, offset: &mut u64, partial: &mut Vec<u8>) -> Vec<String> {
    let Ok(mut handle) = std::fs::File::open(file) else {
        return Vec::new();
    };
    let length = handle.metadata().map(|m| m.len()).unwrap_or(0);
    if length < *offset {
        // The file was replaced: read it again from the start.
        *offset = 0;
        partial.clear();
    }
    if length == *offset || handle.seek(SeekFrom::Start(*offset)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if handle.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    *offset += bytes.len() as u64;
    partial.extend_from_slice(&bytes);
    // Bytes, not text, until a line is complete: a character may straddle two reads.
    let Some(end) = partial.iter().rposition(|b| *b == b'\n') else {
        return Vec::new();
    };
    let complete: Vec<u8> = partial.drain(..=end).collect();
    String::from_utf8_lossy(&complete)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn tail_gives_each_complete_line_once_and_waits_for_a_half_written_one() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("events.jsonl");
        std::fs::write(&file, "{\"seq\":1}\n{\"seq\":2").unwrap();
        let (mut offset, mut partial) = (0, Vec::new());
        assert_eq!(tail(&file, &mut offset, &mut partial), ["{\"seq\":1}"]);
        assert!(tail(&file, &mut offset, &mut partial).is_empty());
        let mut handle = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        handle.write_all(b"}\n{\"seq\":3}\n").unwrap();
        assert_eq!(
            tail(&file, &mut offset, &mut partial),
            ["{\"seq\":2}", "{\"seq\":3}"]
        );
    }
}
