//! The rounds of a run, as `history.json` records them.

use skill_factory_pycompat::float::round;
use skill_factory_runfolder::workspace::RoundRecord;

use crate::measure::evaluate::Reports;

/// One round of the history.
#[derive(Debug, Clone)]
pub struct Round {
    /// 0 for the seed, 1 for selection.
    pub round: usize,
    /// What changed: `seed`, `selection`.
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
    /// Its reports on train and validation.
    pub reports: Reports,
    /// The proposer's reply, when it was unusable (its first 4,000 characters).
    pub raw_reply: Option<String>,
    /// What the proposer was shown (reflective rounds).
    pub prompt: Option<String>,
}

impl Round {
    /// The round as `history.json` records it.
    pub fn to_record(&self) -> RoundRecord {
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
            usd: round(self.usd, 6),
            failed_requests: self.failed_requests,
            reports: self
                .reports
                .iter()
                .map(|(split, report)| (split.name().to_string(), report.to_json()))
                .collect(),
            raw_reply: self
                .raw_reply
                .as_ref()
                .map(|raw| raw.chars().take(RAW_REPLY_CHARS).collect()),
            prompt: self.prompt.clone(),
        }
    }
}

/// Characters of an unusable reply kept in the history.
const RAW_REPLY_CHARS: usize = 4000;
