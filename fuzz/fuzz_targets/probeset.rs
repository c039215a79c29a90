//! A probe set file and its score expression, and the score of any answers.
#![no_main]
use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use skill_factory_lab::probe::probeset::ProbeSet;
use skill_factory_lab::probe::score::ScoreExpr;

fuzz_target!(|text: &str| {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if let Ok(expr) = ScoreExpr::parse(&value) {
        let answers: HashMap<String, f64> =
            expr.referenced().into_iter().map(|q| (q, 0.5)).collect();
        let _ = expr.eval(&answers);
        let _ = expr.describe();
    }
    if let Ok(set) = ProbeSet::from_json(&value, "fuzz.json") {
        let _ = set.sha256();
        for format in [
            skill_factory_lab::ship::export::Format::TypeScript,
            skill_factory_lab::ship::export::Format::Python,
        ] {
            let _ = skill_factory_lab::ship::export::export(&set, format, None);
        }
    }
});
