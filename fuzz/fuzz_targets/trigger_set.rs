//! A trigger set: skill-creator's JSON list, an `evals` object, or JSONL, as a user writes it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = skill_factory_core::trigger::parse_trigger_set(text, "fuzz.json");
});
