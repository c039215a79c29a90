//! Parity: is what runs in production what the lab measured?
//!
//! * **Artifact parity** ([`check_artifact`]): a shipped JSON export must hold the same
//!   content hash as the probe set (a renamed probe set or edited calibration notes still
//!   pass; a changed question, score or threshold fails); a TypeScript or Python export is
//!   generated again and compared byte for byte, the first differing line shown.
//! * **Production parity** ([`check_production`]): verdicts logged in production (JSONL rows
//!   `{id, flagged}`, `{id, verdict}` or `{id, score}`) against the lab's own verdicts on the
//!   same examples from the cached answers: OK when recall and false-positive rate agree
//!   within the tolerance.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::LabError;
use crate::answers::table::AnswerTable;
use crate::data::dataset::Example;
use crate::measure::evaluate::Policy;
use crate::measure::metrics::Rates;
use crate::measure::policy::PolicySpec;
use crate::probe::probeset::ProbeSet;
use crate::ship::export::{Format, export};
use skill_factory_pycompat::repr;

/// The longest part of a differing line shown.
const SHOWN_CHARS: usize = 120;
/// Disagreeing examples listed at most.
pub const MOST_DISAGREEMENTS: usize = 20;

/// The outcome of a parity check: OK or not, and what to print.
#[derive(Debug, Clone, PartialEq)]
pub struct Parity {
    /// Whether it holds.
    pub ok: bool,
    /// The lines to print, the summary first.
    pub lines: Vec<String>,
}

/// The first 64-hex-digit token of `text`.
fn first_hash(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut start = None;
    for (i, b) in bytes.iter().enumerate() {
        if b.is_ascii_hexdigit() && !b.is_ascii_uppercase() {
            let s = *start.get_or_insert(i);
            if i + 1 - s == 64 && bytes.get(i + 1).is_none_or(|n| !n.is_ascii_hexdigit()) {
                return Some(&text[s..=i]);
            }
        } else {
            start = None;
        }
    }
    None
}

fn cut(line: &str) -> String {
    line.chars().take(SHOWN_CHARS).collect()
}

/// `artifact` (an export) against `probeset` (and `policy`, compiled into TypeScript and
/// Python exports when given).
pub fn check_artifact(
    probeset: &ProbeSet,
    policy: Option<&PolicySpec>,
    artifact: &Path,
    format: Option<Format>,
) -> Result<Parity, LabError> {
    let shown = artifact.display();
    let text = crate::files::read_text(
        artifact,
        crate::files::EXPORT,
        ": pass the exported file as shipped (--artifact)",
    )?;
    let format = match format {
        Some(format) => format,
        None => Format::of_path(artifact)?,
    };
    let expected = probeset.sha256();
    let measured = &expected[..12];
    let outcome = |ok: bool, shipped: Option<&str>, detail: String| Parity {
        ok,
        lines: vec![format!(
            "artifact parity: {} (measured {measured}, shipped {}); {detail}",
            if ok { "OK" } else { "MISMATCH" },
            shipped.map_or("no hash", |h| &h[..12.min(h.len())])
        )],
    };
    if format == Format::Json {
        // The shipped hash of a JSON export is its content's, computed again: its `sha256`
        // field could say anything.
        let mut value: Value = match serde_json::from_str(&text) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) => {
                return Ok(outcome(
                    false,
                    None,
                    "not a probe set: the file is not a JSON object".into(),
                ));
            }
            Err(e) => return Ok(outcome(false, None, format!("not a probe set: {e}"))),
        };
        if let Some(map) = value.as_object_mut() {
            map.remove("sha256");
        }
        let shipped = match ProbeSet::from_json(&value, &shown.to_string()) {
            Ok(set) => set.sha256(),
            Err(e) => return Ok(outcome(false, None, format!("not a probe set: {e}"))),
        };
        return Ok(if shipped == expected {
            outcome(
                true,
                Some(&shipped),
                "same questions, score, threshold, model and budget".into(),
            )
        } else {
            outcome(
                false,
                Some(&shipped),
                "content differs from the measured probe set".into(),
            )
        });
    }
    let shipped = first_hash(&text);
    let wanted = export(probeset, format, policy)?;
    if wanted == text {
        return Ok(outcome(
            true,
            shipped,
            "byte for byte identical to a fresh export".into(),
        ));
    }
    let (ours, theirs): (Vec<&str>, Vec<&str>) = (wanted.lines().collect(), text.lines().collect());
    let detail = match ours.iter().zip(&theirs).position(|(a, b)| a != b) {
        Some(i) => format!(
            "line {} differs: expected {}, shipped {}",
            i + 1,
            repr::repr_str(&cut(ours[i])),
            repr::repr_str(&cut(theirs[i]))
        ),
        None => format!(
            "lengths differ: expected {} lines, shipped {}",
            ours.len(),
            theirs.len()
        ),
    };
    let mut parity = outcome(false, shipped, detail);
    if policy.is_none() && (text.contains("function verdict") || text.contains("def verdict(")) {
        parity.lines.push(
            "the shipped file has a policy compiled in: pass the config (-c) whose policy it was exported with".into(),
        );
    }
    Ok(parity)
}

/// One production row's verdict.
#[derive(Debug, Clone, PartialEq)]
enum Logged {
    Flagged(bool),
    Verdict(String),
    Score(Option<f64>),
}

/// Reads production rows: `(line, id, verdict)` per non-blank line.
fn read_production(path: &Path) -> Result<Vec<(usize, String, Logged)>, LabError> {
    let shown = path.display();
    let text = crate::files::read_text(
        path,
        skill_factory_io::input::DATASET,
        ": pass the JSONL file of production verdicts (--production)",
    )?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let row: Value = serde_json::from_str(line).map_err(|e| {
            LabError::invalid(format!("{shown}:{n}: invalid JSON ({e}); each line is one object such as {{\"id\": \"x\", \"flagged\": true}}"))
        })?;
        let Some(id) = row.get("id").and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }) else {
            return Err(LabError::invalid(format!(
                "{shown}:{n}: the row has no `id`; give the example id the lab knows it by"
            )));
        };
        let logged = if let Some(flag) = row.get("flagged") {
            Logged::Flagged(flag.as_bool().ok_or_else(|| {
                LabError::invalid(format!(
                    "{shown}:{n}: `flagged` is true or false, not {flag}"
                ))
            })?)
        } else if let Some(verdict) = row.get("verdict") {
            Logged::Verdict(
                verdict
                    .as_str()
                    .ok_or_else(|| {
                        LabError::invalid(format!(
                            "{shown}:{n}: `verdict` is a level name, not {verdict}"
                        ))
                    })?
                    .to_string(),
            )
        } else if let Some(score) = row.get("score") {
            Logged::Score(match score {
                Value::Null => None,
                other => Some(other.as_f64().ok_or_else(|| {
                    LabError::invalid(format!(
                        "{shown}:{n}: `score` is a number or null, not {other}"
                    ))
                })?),
            })
        } else {
            return Err(LabError::invalid(format!(
                "{shown}:{n}: the row has no verdict: give `flagged` (true/false), `verdict` (a level) or `score` (a number)"
            )));
        };
        rows.push((n, id, logged));
    }
    Ok(rows)
}

/// Production verdicts in `production` against the lab's on `examples` (one split, from
/// `table`, through `policy`); `known` holds every example id of the dataset.
pub fn check_production(
    probeset: &ProbeSet,
    policy: &Policy,
    examples: &[Example],
    known: &dyn Fn(&str) -> bool,
    table: &AnswerTable,
    production: &Path,
    tolerance: f64,
) -> Result<Parity, LabError> {
    let shown = production.display();
    let rows = read_production(production)?;
    let mut logged: HashMap<&str, (usize, &Logged)> = HashMap::new();
    for (line, id, verdict) in &rows {
        if !known(id) {
            return Err(LabError::invalid(format!(
                "{shown}:{line}: no example '{id}' in the dataset; production rows must use the dataset's ids"
            )));
        }
        logged.insert(id.as_str(), (*line, verdict));
    }
    let detect = policy.detect_levels();
    let (mut lab, mut prod) = (Rates::default(), Rates::default());
    let (mut compared, mut agree, mut missing) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for ex in examples {
        let Some((line, verdict)) = logged.get(ex.id.as_str()) else {
            missing += 1;
            continue;
        };
        let answers = table.answers(&ex.id);
        let score = probeset.score_of(answers);
        let ours = policy.verdict(ex, answers, score, probeset.threshold) > 0;
        let theirs = match verdict {
            Logged::Flagged(flag) => *flag,
            Logged::Verdict(level) => {
                if !policy.levels.contains(level) {
                    return Err(LabError::invalid(format!(
                        "{shown}:{line}: verdict '{level}' is not a level of policy '{}' ({})",
                        policy.name,
                        policy.levels.join(", ")
                    )));
                }
                detect.contains(level)
            }
            Logged::Score(s) => {
                let Some(threshold) = probeset.threshold else {
                    return Err(LabError::invalid(format!(
                        "{shown}:{line}: a `score` row needs the probe set's threshold, and probe set '{}' has none",
                        probeset.name
                    )));
                };
                s.is_some_and(|s| s >= threshold)
            }
        };
        compared += 1;
        lab.count(ex.label, ours);
        prod.count(ex.label, theirs);
        if ours == theirs {
            agree += 1;
        } else if disagreements.len() < MOST_DISAGREEMENTS {
            disagreements.push(format!(
                "  {}: lab {}, production {}",
                ex.id,
                if ours { "flags" } else { "passes" },
                if theirs { "flags" } else { "passes" },
            ));
        }
    }
    let (recall_gap, fpr_gap) = (
        (lab.recall() - prod.recall()).abs(),
        (lab.fpr() - prod.fpr()).abs(),
    );
    let ok = compared > 0 && recall_gap <= tolerance && fpr_gap <= tolerance;
    // Recall and agreement to one decimal, false-positive rates to two (the reference's
    // layout).
    let pct1 = |x: f64| format!("{:.1}%", x * 100.0);
    let pct2 = |x: f64| format!("{:.2}%", x * 100.0);
    let mut lines = vec![format!(
        "behavior parity: {} on {compared} examples ({} agree, {missing} missing from production); recall lab {} vs production {}, FPR lab {} vs production {} (tolerance {})",
        if ok { "OK" } else { "MISMATCH" },
        pct1(if compared > 0 {
            agree as f64 / compared as f64
        } else {
            0.0
        }),
        pct1(lab.recall()),
        pct1(prod.recall()),
        pct2(lab.fpr()),
        pct2(prod.fpr()),
        pct1(tolerance)
    )];
    if compared == 0 {
        lines.push("no production row names an example of this split: nothing to compare".into());
    }
    lines.extend(disagreements);
    Ok(Parity { ok, lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_hash_is_the_first_64_hex_token() {
        let hash = "a".repeat(64);
        assert_eq!(
            first_hash(&format!("// sha256: {hash}\n")),
            Some(hash.as_str())
        );
        assert_eq!(
            first_hash(&"b".repeat(65)),
            None,
            "a longer run is not a hash"
        );
        assert_eq!(first_hash("no hash"), None);
    }
}
