//! `skill-factory export`: write a skill in the Agent Skills layout (`<out>/<name>/SKILL.md`).

use std::path::Path;
use std::process::ExitCode;

use skill_factory_package::bundle::SkillBundle;
use skill_factory_package::export::{export_bundle, install_hint};

use crate::cli::ExportArgs;
use crate::output::{errln, outln};

/// The skill at `path`: a skill file or folder, or a classifier workspace as the skill that
/// carries its probe set and scorer.
pub fn bundle_of(path: &Path) -> anyhow::Result<SkillBundle> {
    if path.is_dir() && skill_factory_lab::ship::skill::is_workspace(path) {
        return Ok(skill_factory_lab::ship::skill::bundle(path)?);
    }
    Ok(SkillBundle::load(path)?)
}

/// Runs the command: validates, writes, prints warnings (stderr) and the install hint.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let bundle = bundle_of(&args.skill)?;
    let exported = export_bundle(&bundle, &args.out, args.collection, args.force)?;
    for warning in &exported.warnings {
        errln!("{warning}");
    }
    outln!("{}", install_hint(&exported.skill_dir));
    Ok(ExitCode::SUCCESS)
}
