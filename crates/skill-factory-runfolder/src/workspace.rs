//! The files a classifier workspace adds to a run folder: `history.json` (every round) and
//! `seal.json` (the freeze that guards test and held-out), in the reference tool's layout.
//! The lab writes and reads them through these types, and the dashboard reads them, so the
//! two cannot drift apart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One round of `history.json`: the seed (round 0), selection (1), then reflective rounds.
/// `R` is how its reports are held: as the file holds them (by split name), or typed, as
/// the lab holds them while it runs ([`RoundRecord::with_reports`] turns one into the other).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord<R = Map<String, Value>> {
    /// 0 for the seed, 1 for selection.
    pub round: usize,
    /// What changed: `seed`, `selection`, `+2 questions`, ...
    pub change: String,
    /// Why.
    pub rationale: String,
    /// The candidate tried (or the one that came closest), `-` when there was none.
    pub candidate: String,
    /// Its score expression, described.
    pub score: String,
    /// Its threshold.
    pub threshold: Option<f64>,
    /// Its state budget (none for an unusable proposal).
    pub state_budget: Option<usize>,
    /// Whether it became the best.
    pub accepted: bool,
    /// Why it was refused.
    pub reasons: Vec<String>,
    /// Questions this round added to the pool.
    pub new_questions: Vec<String>,
    /// USD spent in this round.
    pub usd: f64,
    /// Requests that failed in this round.
    pub failed_requests: usize,
    /// Its report per split (`train`, `val`; `test` and `held-out` only in a report after
    /// the freeze), in the order the lab scored them.
    pub reports: R,
    /// The proposer's reply, when it was unusable (cut to its first characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_reply: Option<String>,
    /// What the proposer was shown (reflective rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl<R> RoundRecord<R> {
    /// The same round with its reports made by `reports` from these.
    pub fn with_reports<S>(&self, reports: impl FnOnce(&R) -> S) -> RoundRecord<S> {
        RoundRecord {
            round: self.round,
            change: self.change.clone(),
            rationale: self.rationale.clone(),
            candidate: self.candidate.clone(),
            score: self.score.clone(),
            threshold: self.threshold,
            state_budget: self.state_budget,
            accepted: self.accepted,
            reasons: self.reasons.clone(),
            new_questions: self.new_questions.clone(),
            usd: self.usd,
            failed_requests: self.failed_requests,
            reports: reports(&self.reports),
            raw_reply: self.raw_reply.clone(),
            prompt: self.prompt.clone(),
        }
    }
}

impl RoundRecord {
    /// Keeps only the reports of `splits` (by name): the dashboard shows no sealed split
    /// before the freeze.
    pub fn retain_splits(&mut self, splits: &[&str]) {
        self.reports
            .retain(|split, _| splits.contains(&split.as_str()));
    }
}

/// `seal.json`: the freeze, if any, and every opening of the sealed splits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealRecord {
    /// The recorded freeze; `null` until `lab freeze`.
    #[serde(default)]
    pub frozen: Option<FrozenRecord>,
    /// Every opening, oldest first (absent in a seal that was never opened).
    #[serde(default)]
    pub views: Option<Vec<ViewRecord>>,
}

/// The pair that may be reported on the sealed splits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrozenRecord {
    /// The content hash of the frozen probe set.
    pub hash: String,
    /// The content hash of the baseline it is compared with, if one was recorded.
    #[serde(default)]
    pub baseline: Option<String>,
    /// When it was frozen (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    #[serde(default)]
    pub at: String,
    /// The note given to `lab freeze`.
    #[serde(default)]
    pub note: String,
    /// The split assignment frozen with it, so a later change of `splits:` or of the
    /// dataset cannot move examples out of the sealed splits unseen. Absent in seals written
    /// before it was recorded (and in the Python tool's): those are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignment: Option<AssignmentRecord>,
}

/// Which example is in which split, as frozen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssignmentRecord {
    /// The SHA-256 (hex) of the `(example id, split)` pairs sorted by id, one `id<TAB>split`
    /// line each.
    pub sha256: String,
    /// Examples per split name.
    #[serde(default)]
    pub counts: BTreeMap<String, usize>,
    /// The `splits:` settings that gave it (`salt`, `fractions`, the held-out lists,
    /// `read_before_split`), so a change can be named and undone.
    #[serde(default)]
    pub settings: Map<String, Value>,
}

/// One logged opening of the sealed splits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewRecord {
    /// The content hash of the probe set read.
    pub hash: String,
    /// The content hash of the baseline read with it, if any.
    #[serde(default)]
    pub baseline: Option<String>,
    /// When (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    #[serde(default)]
    pub at: String,
    /// The sealed splits opened, by name, sorted.
    #[serde(default)]
    pub splits: Vec<String>,
    /// The `sha256` of the split assignment they were opened under (see
    /// [`AssignmentRecord`]), when it was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignment: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_round_keeps_the_reference_layout_and_drops_absent_replies() {
        let round = RoundRecord {
            round: 1,
            change: "selection".into(),
            rationale: "fit".into(),
            candidate: "c".into(),
            score: "q".into(),
            threshold: None,
            state_budget: Some(4000),
            accepted: true,
            reasons: vec![],
            new_questions: vec![],
            usd: 0.5,
            failed_requests: 0,
            reports: Map::from_iter([
                ("train".to_string(), json!({})),
                ("test".to_string(), json!({})),
            ]),
            raw_reply: None,
            prompt: None,
        };
        let value = serde_json::to_value(&round).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "round",
                "change",
                "rationale",
                "candidate",
                "score",
                "threshold",
                "state_budget",
                "accepted",
                "reasons",
                "new_questions",
                "usd",
                "failed_requests",
                "reports"
            ]
        );
        let mut back: RoundRecord = serde_json::from_value(value).unwrap();
        assert_eq!(back, round);
        back.retain_splits(&["train", "val"]);
        assert_eq!(back.reports.keys().collect::<Vec<_>>(), ["train"]);
    }

    #[test]
    fn a_seal_never_frozen_reads_from_an_empty_object() {
        let seal: SealRecord = serde_json::from_str("{}").unwrap();
        assert_eq!(seal, SealRecord::default());
        let frozen: SealRecord =
            serde_json::from_str(r#"{"frozen": {"hash": "h"}, "views": []}"#).unwrap();
        assert_eq!(frozen.frozen.unwrap().hash, "h");
    }

    #[test]
    fn a_seal_without_an_assignment_reads_and_writes_none() {
        let reference = r#"{"frozen": {"hash": "h", "baseline": null, "at": "t", "note": ""},
            "views": [{"hash": "h", "baseline": null, "at": "t", "splits": ["test"]}]}"#;
        let seal: SealRecord = serde_json::from_str(reference).unwrap();
        let frozen = seal.frozen.clone().unwrap();
        assert_eq!(frozen.assignment, None);
        let written = serde_json::to_value(&seal).unwrap();
        assert!(written["frozen"].get("assignment").is_none(), "{written}");
        assert!(written["views"][0].get("assignment").is_none(), "{written}");
        let recorded: SealRecord = serde_json::from_str(
            r#"{"frozen": {"hash": "h", "assignment": {"sha256": "ab", "counts": {"test": 3},
                "settings": {"salt": "s"}}}, "views": [{"hash": "h", "assignment": "ab"}]}"#,
        )
        .unwrap();
        let assignment = recorded.frozen.unwrap().assignment.unwrap();
        assert_eq!(assignment.sha256, "ab");
        assert_eq!(assignment.counts["test"], 3);
        assert_eq!(recorded.views.unwrap()[0].assignment.as_deref(), Some("ab"));
    }
}
