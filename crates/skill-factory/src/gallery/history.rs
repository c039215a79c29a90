//! The full candidate history of a run, read from its `events.jsonl`: every proposal the
//! optimizer wrote (valid or not), what became of it and the file that keeps it. The
//! reference's `history` in `result.json` lists only the rounds' decisions; the gallery shows
//! every candidate, so that a reader sees what was tried and rejected too.

use std::collections::BTreeMap;

use serde_json::Value;

/// What became of a candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The seed, scored for the baseline.
    Seed,
    /// Scored on validation and accepted as the new best.
    Accepted,
    /// Scored on validation and not accepted.
    Rejected,
    /// Its body equals an earlier candidate's (that candidate's score stands).
    SameAs(usize),
    /// Its body is its parent's, so it was not scored.
    Unchanged(usize),
    /// Refused before scoring; the reason.
    Invalid(String),
    /// Valid but never scored (the run stopped first).
    NotScored,
}

/// One candidate of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateRow {
    /// Candidate number (0 is the seed).
    pub number: usize,
    /// The round that proposed it (0 for the seed).
    pub round: usize,
    /// Its validation score, when it was scored.
    pub val_score: Option<f64>,
    /// What became of it.
    pub outcome: Outcome,
    /// The optimizer's rationale (the seed's: empty).
    pub rationale: String,
}

impl CandidateRow {
    /// The candidate's file inside the run (and the entry) folder.
    pub fn file(&self) -> String {
        crate::run::events::EventLog::candidate_file(self.number)
    }
}

/// A line of `events.jsonl` that is not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} is not a JSON object: {detail}")]
pub struct BadEventLine {
    /// 1-based line number.
    pub line: usize,
    /// What the parser said.
    pub detail: String,
}

fn number(event: &Value, key: &str) -> Option<usize> {
    event
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

/// The candidates of a run, seed first, in candidate order, from the text of its
/// `events.jsonl`. `baseline` is the seed's validation score (from `result.json`).
pub fn candidate_history(events: &str, baseline: f64) -> Result<Vec<CandidateRow>, BadEventLine> {
    let mut rows: BTreeMap<usize, CandidateRow> = BTreeMap::new();
    rows.insert(
        0,
        CandidateRow {
            number: 0,
            round: 0,
            val_score: Some(baseline),
            outcome: Outcome::Seed,
            rationale: String::new(),
        },
    );
    let mut scored: BTreeMap<usize, (f64, Option<usize>)> = BTreeMap::new();
    let mut accepted: Vec<usize> = Vec::new();
    for (index, line) in events.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(line).map_err(|error| BadEventLine {
            line: index + 1,
            detail: error.to_string(),
        })?;
        match event.get("event").and_then(Value::as_str) {
            Some("candidate_proposed") => {
                let Some(candidate) = number(&event, "candidate") else {
                    continue;
                };
                let valid = event.get("valid").and_then(Value::as_bool).unwrap_or(false);
                let text = |key: &str| {
                    event
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                rows.insert(
                    candidate,
                    CandidateRow {
                        number: candidate,
                        round: number(&event, "round").unwrap_or(0),
                        val_score: None,
                        outcome: match (valid, number(&event, "unchanged_from")) {
                            (true, Some(parent)) => Outcome::Unchanged(parent),
                            (true, None) => Outcome::NotScored,
                            (false, _) => Outcome::Invalid(text("reason")),
                        },
                        rationale: text("rationale"),
                    },
                );
            }
            Some("candidate_scored") => {
                if let (Some(candidate), Some(score)) = (
                    number(&event, "candidate"),
                    event.get("val_score").and_then(Value::as_f64),
                ) {
                    scored.insert(candidate, (score, number(&event, "same_as")));
                }
            }
            Some("decision") => {
                if event.get("accepted").and_then(Value::as_bool) == Some(true)
                    && let Some(candidate) = number(&event, "candidate")
                {
                    accepted.push(candidate);
                }
            }
            _ => {}
        }
    }
    // The seed's scoring is the baseline, already in its row.
    for (candidate, (score, same_as)) in scored.into_iter().filter(|(c, _)| *c != 0) {
        if let Some(row) = rows.get_mut(&candidate) {
            row.val_score = Some(score);
            row.outcome = match same_as {
                Some(earlier) => Outcome::SameAs(earlier),
                None => Outcome::Rejected,
            };
        }
    }
    for candidate in accepted {
        if let Some(row) = rows.get_mut(&candidate) {
            row.outcome = Outcome::Accepted;
        }
    }
    Ok(rows.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENTS: &str = r#"{"seq":1,"event":"run_started"}
{"seq":1,"event":"candidate_scored","round":0,"candidate":0,"val_score":0.25}
{"seq":2,"event":"candidate_proposed","round":1,"candidate":1,"valid":true,"rationale":"Be terse."}
{"seq":3,"event":"candidate_proposed","round":1,"candidate":2,"valid":false,"reason":"the reply lacks <NEW_SKILL_BODY> tags","rationale":""}
{"seq":4,"event":"candidate_scored","round":1,"candidate":1,"val_score":0.75}
{"seq":5,"event":"decision","round":1,"candidate":1,"accepted":true,"val_score":0.75,"best_before":0.25,"note":"Be terse."}
{"seq":6,"event":"candidate_proposed","round":2,"candidate":3,"valid":true,"rationale":"Say more."}
{"seq":7,"event":"candidate_proposed","round":2,"candidate":4,"valid":true,"rationale":"Be terse."}
{"seq":8,"event":"candidate_scored","round":2,"candidate":3,"val_score":0.5}
{"seq":9,"event":"candidate_scored","round":2,"candidate":4,"val_score":0.75,"same_as":1}
{"seq":10,"event":"decision","round":2,"candidate":4,"accepted":false,"val_score":0.75,"best_before":0.75,"note":"x"}
{"seq":11,"event":"candidate_proposed","round":3,"candidate":5,"valid":true,"rationale":"Same.","unchanged_from":1}
{"seq":12,"event":"decision","round":3,"accepted":false,"val_score":0.75,"best_before":0.75,"note":"proposal identical to current skill"}
{"seq":13,"event":"candidate_proposed","round":4,"candidate":6,"valid":true,"rationale":"Late."}
"#;

    #[test]
    fn every_candidate_gets_a_row_with_what_became_of_it() {
        let rows = candidate_history(EVENTS, 0.25).unwrap();
        let outcomes: Vec<(usize, usize, Option<f64>, Outcome)> = rows
            .iter()
            .map(|r| (r.number, r.round, r.val_score, r.outcome.clone()))
            .collect();
        assert_eq!(
            outcomes,
            vec![
                (0, 0, Some(0.25), Outcome::Seed),
                (1, 1, Some(0.75), Outcome::Accepted),
                (
                    2,
                    1,
                    None,
                    Outcome::Invalid("the reply lacks <NEW_SKILL_BODY> tags".into())
                ),
                (3, 2, Some(0.5), Outcome::Rejected),
                (4, 2, Some(0.75), Outcome::SameAs(1)),
                (5, 3, None, Outcome::Unchanged(1)),
                (6, 4, None, Outcome::NotScored),
            ]
        );
        assert_eq!(rows[1].rationale, "Be terse.");
        assert_eq!(rows[3].file(), "candidates/003.md");
    }

    #[test]
    fn a_broken_line_is_reported_with_its_number() {
        let error = candidate_history("{\"event\":\"x\"}\n{oops\n", 0.0).unwrap_err();
        assert_eq!(error.line, 2);
    }
}
