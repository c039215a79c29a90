//! Faults for chaos runs, and the check that a run folder accounts for every rollout.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use skill_factory_mock::FaultPlan;

/// About 30% of requests fail, in every way the mock knows: 429 with and without
/// `Retry-After`, 500, hangs, broken JSON, resets, bodies cut halfway and slowloris bodies.
/// Give clients a timeout of a second or two, so that hangs and slowloris cost little.
pub fn storm(seed: u64) -> FaultPlan {
    FaultPlan {
        rate_limit: 0.08,
        rate_limit_bare: 0.06,
        server_error: 0.05,
        hang: 0.015,
        malformed: 0.02,
        reset: 0.03,
        cut_body: 0.03,
        slowloris: 0.015,
        retry_after_secs: 1,
        seed,
    }
}

/// The lines of a JSONL file, parsed; a line that is not JSON fails with its number.
fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}: {line}", path.display(), n + 1))
        })
        .collect()
}

/// Asserts that a finished run folder accounts for every rollout: each evaluation that
/// started finished complete, with as many rollouts in `rollouts.jsonl` as it had tasks, each
/// either scored or failed with its reason and a score of 0, and `result.json` counts the
/// failed ones. Returns the number of rollouts and of failed ones.
pub fn assert_accounted(folder: &Path) -> (usize, usize) {
    let result = super::read_json(&folder.join("result.json"));
    let events = lines(&folder.join("events.jsonl"));
    let rollouts = lines(&folder.join("rollouts.jsonl"));
    type Key = (i64, i64, String);
    let key = |v: &Value| -> Key {
        (
            v["round"].as_i64().unwrap_or(-1),
            v["candidate"].as_i64().unwrap_or(-1),
            v["split"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut started: BTreeMap<Key, u64> = BTreeMap::new();
    let mut finished: BTreeMap<Key, u64> = BTreeMap::new();
    for event in &events {
        match event["event"].as_str() {
            Some("evaluation_started") => {
                *started.entry(key(event)).or_default() += event["tasks"].as_u64().unwrap();
            }
            Some("evaluation_finished") => {
                assert_eq!(event["complete"], true, "{event}");
                *finished.entry(key(event)).or_default() += event["tasks"].as_u64().unwrap();
            }
            _ => {}
        }
    }
    assert!(!started.is_empty(), "no evaluation in {}", folder.display());
    assert_eq!(started, finished, "every evaluation that started finished");
    let mut written: BTreeMap<Key, u64> = BTreeMap::new();
    let mut failed = 0;
    for rollout in &rollouts {
        *written.entry(key(rollout)).or_default() += 1;
        match rollout["error"].as_str() {
            Some(reason) => {
                failed += 1;
                assert!(!reason.trim().is_empty(), "{rollout}");
                assert_eq!(rollout["score"], 0.0, "{rollout}");
            }
            None => assert!(rollout["output"].is_string(), "{rollout}"),
        }
    }
    assert_eq!(
        written, started,
        "each evaluation wrote one rollout per task"
    );
    assert_eq!(result["failed_rollouts"], failed, "{result}");
    (rollouts.len(), failed)
}
