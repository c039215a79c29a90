//! A SKILL.md: frontmatter and body, as a user writes it or a model proposes it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(skill) = skill_factory_core::Skill::parse(text) {
        // What parses must write back and parse again.
        let again = skill_factory_core::Skill::parse(&skill.to_markdown());
        assert!(
            again.is_ok(),
            "a parsed skill does not read back: {again:?}"
        );
    }
});
