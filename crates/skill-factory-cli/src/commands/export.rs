//! `skill-factory export`: write a skill in the Agent Skills layout (`<out>/<name>/SKILL.md`).

use std::process::ExitCode;

use skill_factory_package::bundle::SkillBundle;
use skill_factory_package::export::{export_bundle, install_hint};

use crate::cli::ExportArgs;
use crate::output::{errln, outln};

/// Runs the command: validates, writes, prints warnings (stderr) and the install hint.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let bundle = SkillBundle::load(&args.skill)?;
    let exported = export_bundle(&bundle, &args.out, args.collection, args.force)?;
    for warning in &exported.warnings {
        errln!("{warning}");
    }
    outln!("{}", install_hint(&exported.skill_dir));
    Ok(ExitCode::SUCCESS)
}
