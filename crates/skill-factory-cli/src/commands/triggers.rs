//! `skill-factory triggers draft`: a trigger set drafted by the optimizer model, for review.

use std::process::ExitCode;

use skill_factory::config::{Role, load_config};
use skill_factory::harness::trigger::draft;
use skill_factory::session::read_skill;
use skill_factory_io::output::write_atomic;
use skill_factory_io::replace::{Outputs, Recognize};

use crate::cli::{TriggersAction, TriggersArgs};
use crate::output::outln;

/// A file at `--out` is replaced only with `--force`: nothing tells a drafted set from one
/// the user has reviewed and fixed.
struct TriggerSet;

impl Recognize for TriggerSet {
    fn recognizes(&self, _bytes: &[u8]) -> bool {
        false
    }

    fn describe(&self) -> &str {
        "a trigger set"
    }
}

/// Runs the command.
pub async fn run(args: TriggersArgs) -> anyhow::Result<ExitCode> {
    let TriggersAction::Draft {
        skill,
        config,
        out,
        count,
        force,
    } = args.action;
    let skill_file = skill;
    let skill = read_skill(&skill_file)?;
    let loaded = load_config(&config)?;
    let mut outputs = Outputs::new(force);
    outputs
        .reads(&skill_file, "the skill")
        .reads(&config, "the config");
    outputs.check("--out", &out, TriggerSet)?;
    let settings = loaded.role(Role::Optimizer);
    let env = |key: &str| loaded.env(key);
    let client = skill_factory_llm::providers::build_client(
        settings,
        settings.model.as_deref().unwrap_or_default(),
        &env,
    )?;
    let drafted = draft::draft(client.as_ref(), &skill, count as usize)
        .await
        .map_err(|error| super::ModelFailed(error.into()))?;
    let mut text = serde_json::to_string_pretty(&drafted)?;
    text.push('\n');
    write_atomic(&out, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    let should = drafted.iter().filter(|d| d.should_trigger).count();
    outln!(
        "Wrote {} queries to {} ({should} that should load {}, {} near misses).",
        drafted.len(),
        out.display(),
        skill.name,
        drafted.len() - should
    );
    outln!(
        "This is a draft written by a model: read every query, fix or delete the ones that are wrong or unrealistic, and add near misses from your own users before a run optimizes on it."
    );
    Ok(ExitCode::SUCCESS)
}
