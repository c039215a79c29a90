//! A dataset file: JSON lines of tasks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = skill_factory_core::Dataset::from_jsonl(text, "fuzz.jsonl");
});
