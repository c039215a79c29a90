//! The rounds of a run, as `history.json` records them.

use skill_factory_pycompat::float::round;
use skill_factory_runfolder::workspace::RoundRecord;

use crate::measure::evaluate::Reports;

/// One round of the history, its reports typed.
pub type Round = RoundRecord<Reports>;

/// `entry` as `history.json` records it: reports by split name, dollars to six places, an
/// unusable reply cut to its first characters.
pub fn record(entry: &Round) -> RoundRecord {
    let mut record = entry.with_reports(|reports| {
        reports
            .iter()
            .map(|(split, report)| (split.name().to_string(), report.to_json()))
            .collect()
    });
    record.usd = round(record.usd, 6);
    record.raw_reply = record
        .raw_reply
        .map(|raw| raw.chars().take(RAW_REPLY_CHARS).collect());
    record
}

/// Characters of an unusable reply kept in the history.
const RAW_REPLY_CHARS: usize = 4000;
