//! The index of run folders: every folder under a runs root that holds a `result.json`, ours
//! or the Python tool's, summarized for the runs list (config, optimizer, status, baseline and
//! best on validation and on the held-out test, calls, tokens, cost, date).
//!
//! A summary comes from the run's `result.json` alone, so a list of a thousand runs reads a
//! thousand small files and nothing else. Symbolic links are not followed (a run folder's
//! `latest` link would list its newest run twice, and a link may lead out of the root), and a
//! run folder is not searched for more runs. A `result.json` that cannot be read or parsed is
//! listed among the index's problems with its path and reason, never a reason to fail the list.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use skill_factory_runfolder::names::RESULT_FILE;
use skill_factory_runfolder::result::{Record, RunResult};

/// How deep below the root run folders are looked for (`runs/<config>/<run>` is depth 2;
/// an `output.dir` may add a level or two).
const MAX_DEPTH: usize = 5;

/// Where a run stands, from its `stop_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still searching (or killed before it could say otherwise).
    Running,
    /// The search ended on its own: rounds done, patience, a perfect score, its metric calls.
    Done,
    /// Stopped early by its budget or by Ctrl-C; its report is written.
    Stopped,
    /// It could not measure anything (no rollout reached its model, the optimizer failed).
    Failed,
}

impl RunStatus {
    /// The status a `stop_reason` means; a result without one (the Python tool's) is done.
    pub fn of(stop_reason: Option<&str>) -> RunStatus {
        match stop_reason {
            // `done`: a classifier run (`lab optimize`).
            None | Some("rounds" | "patience" | "perfect" | "metric_calls" | "done") => {
                RunStatus::Done
            }
            Some("running") => RunStatus::Running,
            Some("budget" | "cancelled") => RunStatus::Stopped,
            Some(_) => RunStatus::Failed,
        }
    }
}

/// One run, as the runs list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run folder, relative to the root, `/`-separated.
    pub path: String,
    /// The run's id (`run_id`, else the folder's name).
    pub run_id: String,
    /// The config's name (`config_name`, else the name of the folder holding the run).
    pub config_name: String,
    /// `skill` or `classifier` (`kind`; the Python tool's runs are skill runs).
    pub kind: String,
    /// The optimizer.
    pub optimizer: String,
    /// Where the run stands.
    pub status: RunStatus,
    /// The reason it stopped, as written (`None` for the Python tool's runs).
    pub stop_reason: Option<String>,
    /// The seed's validation score.
    pub baseline_val: f64,
    /// The best skill's validation score.
    pub best_val: f64,
    /// The seed's held-out test score, when the run has a test split that was scored.
    pub test_seed: Option<f64>,
    /// The best skill's held-out test score, likewise.
    pub test_best: Option<f64>,
    /// Model calls of every role.
    pub calls: Option<u64>,
    /// Input and output tokens of every role.
    pub tokens: Option<u64>,
    /// The cost in dollars (`None` when a model has no known price).
    pub cost_usd: Option<f64>,
    /// When the run started (RFC 3339).
    pub started_at: Option<String>,
}

/// Why one `result.json` is not in the list.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The file could not be read: missing, not a regular file (a FIFO would hang the
    /// server), or larger than a run's file may be.
    #[error(transparent)]
    Read(#[from] skill_factory_io::input::InputError),
    /// The file is not JSON.
    #[error("{}: not valid JSON ({source}); the run may still be writing it, or it was cut short", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// JSON, but not a result: a field every result has is missing or has the wrong type.
    #[error("{}: {source}; is this a Skill Factory result.json?", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// What the reader said.
        source: serde_json::Error,
    },
}

impl RunSummary {
    /// The summary of the run whose `result.json` at `file` holds `text`; `path` is the run
    /// folder relative to the root.
    pub fn parse(path: &str, file: &Path, text: &str) -> Result<RunSummary, IndexError> {
        let value: Value = serde_json::from_str(text).map_err(|source| IndexError::Json {
            path: file.to_path_buf(),
            source,
        })?;
        let result: RunResult =
            serde_json::from_value(value).map_err(|source| IndexError::Shape {
                path: file.to_path_buf(),
                source,
            })?;
        Ok(RunSummary::of(path, &result))
    }

    /// The summary of the run at `path` (relative to the root) whose result is `result`.
    pub fn of(path: &str, result: &RunResult) -> RunSummary {
        let folder = |depth: usize| {
            path.rsplit('/')
                .nth(depth)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
        };
        let mut summary = RunSummary {
            path: path.to_string(),
            run_id: folder(0).unwrap_or_default(),
            config_name: folder(1).unwrap_or_default(),
            kind: result.kind.clone().unwrap_or_else(|| "skill".into()),
            optimizer: result.optimizer.clone(),
            status: RunStatus::of(None),
            stop_reason: None,
            baseline_val: result.baseline_score,
            best_val: result.best_score,
            test_seed: None,
            test_best: None,
            calls: None,
            tokens: None,
            cost_usd: None,
            started_at: None,
        };
        match &result.record {
            Record::Skill(run) => {
                let total = run.usage.get("total");
                summary.run_id.clone_from(&run.run_id);
                summary.config_name.clone_from(&run.config_name);
                summary.status = RunStatus::of(Some(&run.stop_reason));
                summary.stop_reason = Some(run.stop_reason.clone());
                summary.test_seed = run.test.as_ref().and_then(|t| t.seed_score);
                summary.test_best = run.test.as_ref().and_then(|t| t.best_score);
                summary.calls = total.map(|t| t.calls);
                summary.tokens = total.map(|t| t.input_tokens + t.output_tokens);
                summary.cost_usd = run.cost_usd;
                summary.started_at = Some(run.started_at.clone());
            }
            Record::Classifier(workspace) => {
                summary.config_name.clone_from(&workspace.config_name);
                summary.status = RunStatus::of(Some(&workspace.stop_reason));
                summary.stop_reason = Some(workspace.stop_reason.clone());
                summary.started_at = Some(workspace.started_at.clone());
            }
            Record::Reference {} => {}
        }
        summary
    }
}

/// Every run under a root, newest first, and the result files that could not be read.
///
/// [`Index::refresh`] walks the folders again but reads a `result.json` only when its size or
/// modification time changed since the last walk, so keeping a thousand runs up to date costs
/// a thousand `stat` calls, not a thousand parses.
#[derive(Debug, Default)]
pub struct Index {
    /// The runs, newest first (by start time, then by id).
    pub runs: Vec<RunSummary>,
    /// The `result.json` files left out, each with its path and reason.
    pub problems: Vec<String>,
    /// Every `result.json` of the last walk: its stamp and what it gave.
    seen: HashMap<PathBuf, Seen>,
}

/// One `result.json` as last read.
#[derive(Debug)]
struct Seen {
    stamp: (Option<SystemTime>, u64),
    outcome: Result<RunSummary, IndexError>,
}

impl Index {
    /// Reads every run folder under `root`.
    pub fn scan(root: &Path) -> Index {
        let mut index = Index::default();
        index.refresh(root);
        index
    }

    /// Walks `root` again, rereading only the result files that changed; true when the list
    /// or its problems changed.
    pub fn refresh(&mut self, root: &Path) -> bool {
        let mut found = Vec::new();
        walk(root, 0, &mut found);
        let mut changed = found.len() != self.seen.len();
        let mut seen = HashMap::with_capacity(found.len());
        for folder in found {
            let file = folder.join(RESULT_FILE);
            let stamp = std::fs::metadata(&file)
                .map(|meta| (meta.modified().ok(), meta.len()))
                .unwrap_or((None, 0));
            let entry = match self.seen.remove(&file) {
                Some(old) if old.stamp == stamp && stamp.0.is_some() => old,
                _ => {
                    changed = true;
                    Seen {
                        stamp,
                        outcome: read(root, &folder, &file),
                    }
                }
            };
            seen.insert(file, entry);
        }
        changed |= !self.seen.is_empty();
        self.seen = seen;
        if changed {
            self.runs = self
                .seen
                .values()
                .filter_map(|entry| entry.outcome.as_ref().ok().cloned())
                .collect();
            self.runs.sort_by(|a, b| {
                b.started_at
                    .cmp(&a.started_at)
                    .then_with(|| b.run_id.cmp(&a.run_id))
            });
            let mut problems: Vec<(&PathBuf, String)> = self
                .seen
                .iter()
                .filter_map(|(file, entry)| {
                    entry.outcome.as_ref().err().map(|e| (file, e.to_string()))
                })
                .collect();
            problems.sort();
            self.problems = problems.into_iter().map(|(_, problem)| problem).collect();
        }
        changed
    }
}

/// The summary of the run in `folder`, or why its `result.json` gave none.
fn read(root: &Path, folder: &Path, file: &Path) -> Result<RunSummary, IndexError> {
    let relative = folder
        .strip_prefix(root)
        .unwrap_or(folder)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let text = skill_factory_io::input::read_text(file, skill_factory_io::input::RUN_FILE)?;
    RunSummary::parse(&relative, file, &text)
}

/// Every run folder at or below `folder` (a folder holding a `result.json` is not searched
/// further), in path order; symbolic links are not followed.
fn walk(folder: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    if folder.join(RESULT_FILE).is_file() {
        found.push(folder.to_path_buf());
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut folders: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .collect();
    folders.sort();
    for child in folders {
        walk(&child, depth + 1, found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result.json of ours, as `optimize` writes it (the fields the list reads).
    fn ours(run_id: &str, started: &str, stop: &str) -> String {
        serde_json::json!({
            "optimizer": "gepa",
            "baseline_score": 0.25,
            "best_score": 0.75,
            "run_id": run_id,
            "config_name": "receipts",
            "started_at": started,
            "stop_reason": stop,
            "test": {"size": 4, "seed_score": 0.0, "best_score": 1.0},
            "usage": {"total": {"calls": 39, "input_tokens": 3597, "output_tokens": 1287}},
            "cost_usd": null,
        })
        .to_string()
    }

    fn write(root: &Path, folder: &str, text: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(RESULT_FILE), text).unwrap();
    }

    #[test]
    fn every_run_folder_is_listed_newest_first_with_its_scores_and_spending() {
        let root = tempfile::tempdir().unwrap();
        write(
            root.path(),
            "receipts/20261201-090000",
            &ours("20261201-090000", "2026-12-01T09:00:00Z", "perfect"),
        );
        write(
            root.path(),
            "receipts/20261202-090000",
            &ours("20261202-090000", "2026-12-02T09:00:00Z", "budget"),
        );
        let index = Index::scan(root.path());
        assert!(index.problems.is_empty(), "{:?}", index.problems);
        let ids: Vec<&str> = index.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["20261202-090000", "20261201-090000"]);
        let newest = &index.runs[0];
        assert_eq!(newest.path, "receipts/20261202-090000");
        assert_eq!(newest.status, RunStatus::Stopped);
        assert_eq!(index.runs[1].status, RunStatus::Done);
        assert_eq!((newest.baseline_val, newest.best_val), (0.25, 0.75));
        assert_eq!((newest.test_seed, newest.test_best), (Some(0.0), Some(1.0)));
        assert_eq!((newest.calls, newest.tokens), (Some(39), Some(4884)));
        assert_eq!(newest.cost_usd, None, "an unpriced model has no cost");
    }

    #[test]
    fn a_python_tool_result_is_listed_by_its_folder_names() {
        let root = tempfile::tempdir().unwrap();
        let theirs = r#"{"optimizer": "llm_loop", "baseline_score": 0.1, "best_score": 0.4,
            "improvement": 0.3, "candidates": 3, "accepted": 2, "metadata": {}, "history": []}"#;
        write(root.path(), "runs/invoices/20261130-120000", theirs);
        let index = Index::scan(root.path());
        let run = &index.runs[0];
        assert_eq!(run.run_id, "20261130-120000");
        assert_eq!(run.config_name, "invoices");
        assert_eq!(run.status, RunStatus::Done);
        assert_eq!(
            (run.calls, run.test_best, run.started_at.as_deref()),
            (None, None, None)
        );
    }

    #[test]
    fn a_broken_result_is_a_problem_with_its_path_not_a_failed_list() {
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "a/1", "{\"optimizer\": \"gepa\", \"baseline");
        write(
            root.path(),
            "a/2",
            "{\"baseline_score\": 0.1, \"best_score\": 0.2}",
        );
        write(
            root.path(),
            "a/3",
            &ours("3", "2026-12-01T00:00:00Z", "running"),
        );
        let index = Index::scan(root.path());
        assert_eq!(index.runs.len(), 1);
        assert_eq!(index.runs[0].status, RunStatus::Running);
        let problems = &index.problems;
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("a/1/result.json") && problems[0].contains("not valid JSON"));
        assert!(
            problems[1].contains("missing field `optimizer`"),
            "{}",
            problems[1]
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_are_not_followed_so_latest_is_not_listed_twice() {
        let root = tempfile::tempdir().unwrap();
        write(
            root.path(),
            "receipts/20261201-090000",
            &ours("r1", "2026-12-01T09:00:00Z", "rounds"),
        );
        std::os::unix::fs::symlink(
            root.path().join("receipts/20261201-090000"),
            root.path().join("receipts/latest"),
        )
        .unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(
            outside.path(),
            "run",
            &ours("elsewhere", "2026-12-01T10:00:00Z", "rounds"),
        );
        std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
        let index = Index::scan(root.path());
        let ids: Vec<&str> = index.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["r1"]);
    }

    #[test]
    fn a_real_result_json_of_ours_reads_as_the_run_it_records() {
        // The gallery's entry is a result.json written by `optimize` itself.
        let file =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gallery/receipt-total/result.json");
        let text = std::fs::read_to_string(&file).unwrap();
        let run = RunSummary::parse("receipt-total/x", &file, &text).unwrap();
        let result: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(run.optimizer, result["optimizer"].as_str().unwrap());
        assert_eq!(run.config_name, "receipt-total");
        assert_eq!(run.best_val, result["best_score"].as_f64().unwrap());
        assert_eq!(run.test_best, result["test"]["best_score"].as_f64());
        assert_eq!(run.calls, result["usage"]["total"]["calls"].as_u64());
        assert_eq!(run.status, RunStatus::Done);
    }

    #[test]
    fn a_refresh_rereads_only_what_changed_and_drops_what_is_gone() {
        let root = tempfile::tempdir().unwrap();
        write(
            root.path(),
            "a/1",
            &ours("1", "2026-12-01T09:00:00Z", "running"),
        );
        write(
            root.path(),
            "a/2",
            &ours("2", "2026-12-01T10:00:00Z", "rounds"),
        );
        let mut index = Index::scan(root.path());
        assert!(!index.refresh(root.path()), "nothing changed");
        // A run that finished rewrites its result (whole, by rename, as `optimize` does).
        let file = root.path().join("a/1").join(RESULT_FILE);
        std::fs::write(
            file.with_extension("tmp"),
            ours("1", "2026-12-01T09:00:00Z", "budget"),
        )
        .unwrap();
        std::fs::rename(file.with_extension("tmp"), &file).unwrap();
        std::fs::remove_dir_all(root.path().join("a/2")).unwrap();
        write(root.path(), "b/3", "{");
        assert!(index.refresh(root.path()));
        let statuses: Vec<(&str, RunStatus)> = index
            .runs
            .iter()
            .map(|r| (r.run_id.as_str(), r.status))
            .collect();
        assert_eq!(statuses, [("1", RunStatus::Stopped)]);
        assert_eq!(index.problems.len(), 1, "{:?}", index.problems);
    }

    #[test]
    fn a_stop_reason_maps_to_a_status() {
        assert_eq!(RunStatus::of(Some("metric_calls")), RunStatus::Done);
        assert_eq!(
            RunStatus::of(Some("done")),
            RunStatus::Done,
            "a classifier run"
        );
        assert_eq!(RunStatus::of(Some("cancelled")), RunStatus::Stopped);
        assert_eq!(RunStatus::of(Some("rollouts_failed")), RunStatus::Failed);
        assert_eq!(RunStatus::of(Some("optimizer_failed")), RunStatus::Failed);
    }
}
