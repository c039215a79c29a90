//! The tolerant JSON extraction the metrics apply to a model's output.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(value) = skill_factory::metric::json_text::parse_tolerant(text) {
        assert!(skill_factory::metric::json_text::python_eq(&value, &value));
    }
    let _ = skill_factory::metric::golden::first_number(text);
});
