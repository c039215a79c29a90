//! `skill-factory list`: what this build knows.

use std::process::ExitCode;

use skill_factory::config::HarnessType;
use skill_factory::config::{Check, GoldenMode, OptimizerKind};
use skill_factory_llm::providers::provider_names;
use skill_factory_llm::systemone::systemone_provider_names;

use crate::output::outln;

/// Prints the optimizers, providers, harnesses and metrics, one line each.
pub fn run() -> anyhow::Result<ExitCode> {
    outln!("Optimizers: {}", OptimizerKind::available());
    for kind in OptimizerKind::ALL {
        outln!("  {:<9} {}", kind.name(), kind.description());
    }
    outln!(
        "Providers:  {} (batch: {})",
        provider_names().join(", "),
        skill_factory_llm::providers::batch_provider_names().join(", ")
    );
    let harnesses: Vec<&str> = HarnessType::ALL.iter().map(|h| h.name()).collect();
    outln!(
        "Harnesses:  {} (skill_mode: prompt, installed; executor: local, ray)",
        harnesses.join(", ")
    );
    let modes: Vec<&str> = GoldenMode::ALL.iter().map(|m| m.as_str()).collect();
    // The keys of a config's `metric` block, each with what it can be set to.
    outln!(
        "Metrics:    golden ({}), programmatic ({}), judge, systemone ({}), command",
        modes.join(", "),
        Check::NAMES.join(", "),
        systemone_provider_names().join(", ")
    );
    Ok(ExitCode::SUCCESS)
}
