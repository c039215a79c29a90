//! An optimizer model's edit patch (`<EDITS>`), read and applied to a body.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skill_factory::optimizer::patch;
use skill_factory::optimizer::protect::Protected;

fuzz_target!(|input: (&str, &str)| {
    let (reply, body) = input;
    if let Ok(parsed) = patch::parse(reply) {
        let protected = Protected::new(&["Protected".to_string()]);
        let _ = patch::apply(body, &parsed.edits, &protected);
        for edit in &parsed.edits {
            let _ = edit.describe();
        }
    }
});
