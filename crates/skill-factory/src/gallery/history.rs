//! The full candidate history of a run, read from its `events.jsonl`: every proposal the
//! optimizer wrote (valid or not), what became of it and the file that keeps it. The
//! reference's `history` in `result.json` lists only the rounds' decisions; the gallery shows
//! every candidate, so that a reader sees what was tried and rejected too.

use std::collections::BTreeMap;

use skill_factory_runfolder::event::{Event, EventLine};

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
        skill_factory_runfolder::names::candidate_file(self.number)
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
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|error| BadEventLine {
                line: index + 1,
                detail: error.to_string(),
            })?;
        // A line of another version's event (or of none) has nothing to say about candidates.
        let Ok(line) = serde_json::from_value::<EventLine>(value) else {
            continue;
        };
        match line.event {
            Event::CandidateProposed {
                round,
                candidate,
                valid,
                reason,
                unchanged_from,
                rationale,
                ..
            } => {
                rows.insert(
                    candidate,
                    CandidateRow {
                        number: candidate,
                        round,
                        val_score: None,
                        outcome: match (valid, unchanged_from) {
                            (true, Some(parent)) => Outcome::Unchanged(parent),
                            (true, None) => Outcome::NotScored,
                            (false, _) => Outcome::Invalid(reason.unwrap_or_default()),
                        },
                        rationale,
                    },
                );
            }
            Event::CandidateScored {
                candidate,
                val_score,
                same_as,
                ..
            } => {
                scored.insert(candidate, (val_score, same_as));
            }
            Event::Decision {
                candidate: Some(candidate),
                accepted: true,
                ..
            } => accepted.push(candidate),
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

    fn proposed(round: usize, candidate: usize, rationale: &str) -> Event {
        proposal(round, candidate, rationale, None, None)
    }

    /// A proposal refused for `reason`, or the same body as `unchanged_from`.
    fn proposal(
        round: usize,
        candidate: usize,
        rationale: &str,
        reason: Option<&str>,
        unchanged_from: Option<usize>,
    ) -> Event {
        Event::CandidateProposed {
            round,
            candidate,
            index: 0,
            parent: 0,
            temperature: 1.0,
            valid: reason.is_none(),
            reason: reason.map(str::to_string),
            unchanged_from,
            warnings: Vec::new(),
            rationale: rationale.into(),
            body_chars: 10,
            input_tokens: 1,
            output_tokens: 1,
            document: String::new(),
        }
    }

    fn scored(round: usize, candidate: usize, val_score: f64, same_as: Option<usize>) -> Event {
        Event::CandidateScored {
            round,
            candidate,
            val_score,
            interval: None,
            same_as,
        }
    }

    fn decision(round: usize, candidate: Option<usize>, accepted: bool) -> Event {
        Event::Decision {
            round,
            candidate,
            accepted,
            val_score: 0.75,
            best_before: 0.25,
            note: String::new(),
        }
    }

    /// The text of `events.jsonl` holding `events`, as a run writes it.
    fn log(events: Vec<Event>) -> String {
        events
            .into_iter()
            .enumerate()
            .map(|(i, event)| {
                let line = EventLine {
                    seq: i as u64 + 1,
                    ts: "2026-12-03T00:00:00.000Z".into(),
                    event,
                    spent: None,
                    file: None,
                };
                format!("{}\n", serde_json::to_string(&line).unwrap())
            })
            .collect()
    }

    fn events() -> String {
        let invalid = proposal(
            1,
            2,
            "",
            Some("the reply lacks <NEW_SKILL_BODY> tags"),
            None,
        );
        let unchanged = proposal(3, 5, "Same.", None, Some(1));
        log(vec![
            scored(0, 0, 0.25, None),
            proposed(1, 1, "Be terse."),
            invalid,
            scored(1, 1, 0.75, None),
            decision(1, Some(1), true),
            proposed(2, 3, "Say more."),
            proposed(2, 4, "Be terse."),
            scored(2, 3, 0.5, None),
            scored(2, 4, 0.75, Some(1)),
            decision(2, Some(4), false),
            unchanged,
            decision(3, None, false),
            proposed(4, 6, "Late."),
        ])
    }

    #[test]
    fn every_candidate_gets_a_row_with_what_became_of_it() {
        let rows = candidate_history(&events(), 0.25).unwrap();
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
