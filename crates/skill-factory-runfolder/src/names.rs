//! The names of a run folder's files (`<runs>/<YYYYMMDD-HHMMSS>/`) and of a classifier
//! workspace's.

/// The run's log of events, one JSON line each ([`crate::event::EventLine`]).
pub const EVENTS_FILE: &str = "events.jsonl";
/// Every rollout in full, one JSON line each.
pub const ROLLOUTS_FILE: &str = "rollouts.jsonl";
/// The folder of proposals, `NNN.md` each ([`candidate_file`]).
pub const CANDIDATES_DIR: &str = "candidates";
/// The result, in the Python tool's shape plus ours.
pub const RESULT_FILE: &str = "result.json";
/// The report for people.
pub const REPORT_FILE: &str = "report.md";
/// The best skill's SKILL.md.
pub const BEST_SKILL_FILE: &str = "best_skill.md";
/// The best skill as a folder, when the seed carries files (`references/`, ...).
pub const BEST_SKILL_DIR: &str = "best_skill";
/// The config as it ran.
pub const CONFIG_FILE: &str = "config.yaml";
/// The tasks of every split, one JSON line each.
pub const TASKS_FILE: &str = "tasks.jsonl";
/// The chart of scores by round.
pub const CHART_FILE: &str = "scores.svg";
/// The model traffic of a run made with `--record`.
pub const TRAFFIC_FILE: &str = "traffic.jsonl";
/// A tracked run's calls to its MLflow server, and which of them reached it.
pub const MLFLOW_FILE: &str = "mlflow.jsonl";
/// The link beside the run folders to the newest of them.
pub const LATEST: &str = "latest";

/// A classifier workspace's history of rounds.
pub const HISTORY_FILE: &str = "history.json";
/// A classifier workspace's seal (which splits are frozen).
pub const SEAL_FILE: &str = "seal.json";

/// The file of candidate `number` inside the run folder: `candidates/007.md`.
pub fn candidate_file(number: usize) -> String {
    format!("{CANDIDATES_DIR}/{number:03}.md")
}
