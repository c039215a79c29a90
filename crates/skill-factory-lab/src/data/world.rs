//! The synthetic world the tests share (spec §6.0): 120 examples by default, and a System
//! One stand-in that answers from markers in the state.
//!
//! Positives carry `INTENT:bad`; the capability marker `CAP:yes` is in both classes, so
//! capability questions separate badly and intent questions well. Some positives carry a
//! `LURE` only a lure question sees, and some states are long enough to be over a small
//! budget. Other tests pin numbers computed from these exact rules: change nothing here.

use serde_json::{Map, json};
use skill_factory_llm::systemone::{Question, sha24};
use skill_factory_pycompat::float;

use crate::data::dataset::Example;
use crate::data::splits::{SplitPlan, Splits, assign};

/// Example `i` (0-based) of `n`: positive iff `i % 3 == 0`; `CAP:yes` for even `i`;
/// `INTENT:bad` for positives; ` LURE` on positives with `i % 9 == 0`; 400 × ` pad` when
/// `i % 10 == 7`; id `ex<i:03>`, group `g<i / 2>`, source `src-b` for the last 12 (else
/// `src-a`), metadata `findings: [{severity: high}]` with `CAP:yes` (else `[]`).
pub(crate) fn examples(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| {
            let positive = i % 3 == 0;
            let capable = i % 2 == 0;
            let cap = if capable { "CAP:yes" } else { "CAP:no" };
            let intent = if positive {
                "INTENT:bad"
            } else {
                "INTENT:good"
            };
            let lure = if positive && i % 9 == 0 { " LURE" } else { "" };
            let pad = if i % 10 == 7 {
                " pad".repeat(400)
            } else {
                String::new()
            };
            let mut example = Example::new(
                format!("ex{i:03}"),
                positive,
                format!("item {i} {cap} {intent}{lure}{pad}"),
            );
            example.group = format!("g{}", i / 2);
            example.source = if i + 12 >= n { "src-b" } else { "src-a" }.to_string();
            let findings = if capable {
                json!([{"severity": "high"}])
            } else {
                json!([])
            };
            example.metadata = Map::from_iter([("findings".to_string(), findings)]);
            example
        })
        .collect()
}

/// Deterministic noise in [0, 0.05]: the first 4 hex digits of sha24(`text` + `qid`) over
/// 0xFFFF, times 0.05 (in that order: the float rounding follows the reference's).
pub(crate) fn jitter(text: &str, qid: &str) -> f64 {
    let hash = sha24(&format!("{text}{qid}"));
    let first = u32::from_str_radix(&hash[..4], 16).unwrap_or(0);
    f64::from(first) / 65535.0 * 0.05
}

/// P(true) by the lower-cased instructions of `q`, rounded to 2 decimals: "intent" -> 0.9 +
/// jitter (capped at 1) when the state has `INTENT:bad` and its item number does not end in
/// 6, else 0.02 + jitter (a deliberately miss-prone reading); "lure" -> 0.95 with `LURE`,
/// else jitter / 5; "capability" -> 0.8 or 0.1 by `CAP:yes`, plus jitter; else jitter.
pub(crate) fn responder(state: &str, qid: &str, q: &Question) -> f64 {
    let text = q.instructions.to_lowercase();
    let noise = jitter(state, qid);
    let p = if text.contains("intent") {
        let item_ends_in_6 = state
            .split_whitespace()
            .nth(1)
            .is_some_and(|item| item.ends_with('6'));
        let hit = state.contains("INTENT:bad") && !item_ends_in_6;
        (if hit { 0.9 } else { 0.02 } + noise).min(1.0)
    } else if text.contains("lure") {
        if state.contains("LURE") {
            0.95
        } else {
            noise / 5.0
        }
    } else if text.contains("capability") {
        (if state.contains("CAP:yes") { 0.8 } else { 0.1 }) + noise
    } else {
        noise
    };
    float::round(p, 2)
}

/// The world's examples split with the default plan (fractions 0.5 / 0.25, no salt).
pub(crate) fn default_splits(examples: &[Example]) -> Splits {
    assign(&SplitPlan::default(), examples).expect("the world's groups never straddle splits")
}

/// The probe set the noise and drift tests share: the whole test bank, scored by
/// `intent@reviewer` alone at `threshold`, measured on `fake-jev` at a 10,000-character budget.
pub(crate) fn intent_probeset(threshold: f64) -> crate::probe::probeset::ProbeSet {
    let mut probeset = crate::probe::probeset::ProbeSet::new(
        "demo",
        crate::probe::question::test_bank(),
        crate::probe::score::ScoreExpr::parse(&json!("intent@reviewer"))
            .expect("a valid expression"),
        Some(threshold),
    )
    .expect("the score reads a bank question");
    probeset.model = "fake-jev".into();
    probeset.state_budget = 10_000;
    probeset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::split::Split;

    fn question(instructions: &str) -> Question {
        Question::new(instructions, "Yes.", "No.")
    }

    #[test]
    fn the_world_has_a_third_positives_lures_long_states_and_a_second_source() {
        let world = examples(120);
        assert_eq!(world.len(), 120);
        assert_eq!(world.iter().filter(|e| e.label).count(), 40);
        assert_eq!(world[0].id, "ex000");
        assert_eq!(
            world[0].state.as_deref(),
            Some("item 0 CAP:yes INTENT:bad LURE")
        );
        assert_eq!(world[1].state.as_deref(), Some("item 1 CAP:no INTENT:good"));
        assert_eq!(world[3].group, "g1");
        assert_eq!(
            world[7].chars,
            Some("item 7 CAP:no INTENT:good".len() + 1600)
        );
        assert_eq!(world[107].source, "src-a");
        assert_eq!(world[108].source, "src-b");
        assert_eq!(world[0].metadata["findings"], json!([{"severity": "high"}]));
        assert_eq!(world[1].metadata["findings"], json!([]));
    }

    #[test]
    fn jitter_is_the_first_four_hex_digits_scaled_to_five_hundredths() {
        // sha24("hello") starts with 2cf2.
        assert_eq!(jitter("hel", "lo"), 0.008778515297169451);
        assert!(examples(30).iter().all(|e| {
            let j = jitter(e.state.as_deref().unwrap_or_default(), "q");
            (0.0..=0.05).contains(&j)
        }));
    }

    #[test]
    fn responder_reads_intent_lure_capability_and_noise_markers() {
        let intent = question("You review an item.\n\nDoes the item show bad INTENT?");
        let lure = question("Does it contain a lure?");
        let capability = question("Does this item have the capability?");
        let noise = question("Is it noisy?");
        // Expected values computed with Python from the rules of spec §6.0.
        let hit = "item 3 CAP:no INTENT:bad";
        assert_eq!(responder(hit, "i", &intent), 0.94);
        // Item numbers ending in 6 are the positives the intent reading misses.
        assert_eq!(responder("item 36 CAP:yes INTENT:bad", "i", &intent), 0.03);
        assert_eq!(
            responder("item 0 CAP:yes INTENT:bad LURE", "l", &lure),
            0.95
        );
        assert_eq!(responder(hit, "l", &lure), 0.01);
        assert_eq!(
            responder("item 1 CAP:yes INTENT:good", "c", &capability),
            0.82
        );
        assert_eq!(responder(hit, "c", &capability), 0.11);
        assert_eq!(responder(hit, "n", &noise), 0.01);
    }

    #[test]
    fn the_default_split_of_the_world_fills_train_val_and_test() {
        let splits = default_splits(&examples(120));
        for split in [Split::Train, Split::Val, Split::Test] {
            assert!(!splits.get(split).is_empty(), "{split} is empty");
        }
        assert!(splits.get(Split::HeldOut).is_empty());
    }
}
