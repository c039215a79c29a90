//! A run config (YAML), every key checked.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = skill_factory::config::parse_config(text, std::path::Path::new("fuzz/config.yaml"));
});
