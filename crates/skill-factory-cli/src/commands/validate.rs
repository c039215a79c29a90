//! `skill-factory validate`: check skills against the Agent Skills spec.

use std::process::ExitCode;

use skill_factory_package::spec::Severity;
use skill_factory_package::validate::validate_path;

use crate::cli::ValidateArgs;
use crate::output::outln;

/// Runs the command: one line per finding (or `ok`), then a summary. Exit 2 on any error.
pub fn run(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let reports = validate_path(&args.path)?;
    let mut errors = 0;
    let mut warnings = 0;
    for report in &reports {
        let path = report.path.display();
        if report.findings.is_empty() {
            outln!("{path}: ok");
        }
        for finding in &report.findings {
            outln!("{path}: {finding}");
        }
        errors += report.count(Severity::Error);
        warnings += report.count(Severity::Warning);
    }
    outln!(
        "Checked {} skill{}: {errors} error{}, {warnings} warning{}.",
        reports.len(),
        plural(reports.len()),
        plural(errors),
        plural(warnings)
    );
    Ok(if errors > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
