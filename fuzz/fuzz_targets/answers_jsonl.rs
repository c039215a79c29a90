//! `answers.jsonl`, the System One answer cache, as found on disk (a torn last line, garbage).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("answers.jsonl");
    std::fs::write(&file, bytes).expect("written");
    let _ = skill_factory_llm::systemone::AnswerCache::open(&file);
});
