//! `skill-factory list`: what this build knows.

use std::process::ExitCode;

use skill_factory_llm::providers::provider_names;
use skill_factory_llm::systemone::systemone_provider_names;

use crate::output::outln;

/// Prints the optimizers, providers, harnesses and metrics, one line each.
pub fn run() -> anyhow::Result<ExitCode> {
    outln!(
        "Optimizers: {}",
        skill_factory::optimizer::AVAILABLE.join(", ")
    );
    outln!("Providers:  {}", provider_names().join(", "));
    outln!(
        "Harnesses:  api, subprocess, claude_code, codex, gemini_cli (skill_mode: prompt, installed)"
    );
    outln!(
        "Metrics:    golden (exact, normalized, token_f1, json_equal, numeric), programmatic (is_valid_json, json_has_keys, json_schema, matches_regex, contains, not_contains, max_length), llm_judge, systemone ({}), command",
        systemone_provider_names().join(", ")
    );
    Ok(ExitCode::SUCCESS)
}
