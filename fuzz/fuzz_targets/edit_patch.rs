//! An optimizer model's edit patch (`<EDITS>`), read and applied to a body.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skill_factory::optimizer::patch;

fuzz_target!(|input: (&str, &str)| {
    let (reply, body) = input;
    if let Ok(parsed) = patch::parse(reply) {
        let _ = patch::apply(body, &parsed.edits, &["Protected".to_string()]);
        for edit in &parsed.edits {
            let _ = edit.describe();
        }
    }
});
