//! `lab export` (a probe set as JSON, TypeScript or Python, the config's policy compiled in)
//! and `lab parity` (a shipped export, or production verdicts, against the lab). Exit 4 when
//! parity does not hold.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use skill_factory_io::output::write_atomic;
use skill_factory_io::replace::Outputs;
use skill_factory_lab::data::seal::refuse_sealed;
use skill_factory_lab::measure::policy::PolicySpec;
use skill_factory_lab::output::Kind;
use skill_factory_lab::probe::probeset::ProbeSet;
use skill_factory_lab::run::workspace::Project;
use skill_factory_lab::ship::export::{Format, export as render};
use skill_factory_lab::ship::parity::{check_artifact, check_production};

use super::lab_open::{open, parse_splits};
use crate::output::{errln, outln};
use skill_factory_lab::run::{Measured, Opened, asked_of};

/// The exit code when parity does not hold.
const MISMATCH: u8 = 4;

/// The policy to compile in: the file given, else the config's, else none.
fn policy_of(
    config: Option<&Path>,
    file: Option<&Path>,
    probeset: &ProbeSet,
) -> anyhow::Result<Option<PolicySpec>> {
    if let Some(file) = file {
        return Ok(Some(PolicySpec::load(file, &|id| {
            probeset.bank.contains(id)
        })?));
    }
    match config {
        Some(config) => Ok(Project::load(config, None)?.policy()?.1),
        None => Ok(None),
    }
}

/// `lab export --probeset P -o FILE [--format F] [-c CONFIG]`.
pub fn export(
    probeset: &Path,
    (out, force): (&Path, bool),
    format: Option<&str>,
    config: Option<&Path>,
    policy_file: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let set = ProbeSet::load(probeset)?;
    let format = match format {
        Some(name) => Format::named(name)?,
        None => Format::of_path(out)?,
    };
    let mut outputs = Outputs::new(force);
    outputs.reads(probeset, "the probe set exported (--probeset)");
    if let Some(file) = policy_file {
        outputs.reads(file, "the policy file (--policy)");
    }
    if let Some(config) = config {
        outputs.reads_all(Project::load(config, None)?.inputs());
    }
    let kind = match format {
        Format::Json => Kind::ProbeSet,
        _ => Kind::ExportCode,
    };
    outputs.check("-o", out, kind)?;
    let policy = policy_of(config, policy_file, &set)?;
    let text = render(&set, format, policy.as_ref())?;
    write_atomic(out, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    outln!(
        "wrote {} (sha256 {}){}",
        out.display(),
        set.hash12(),
        policy
            .as_ref()
            .filter(|_| format != Format::Json)
            .map(|p| format!(", policy {}", p.describe()))
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

/// `lab parity --probeset P [--artifact F] [--production JSONL -c CONFIG --split S]`.
pub fn parity(
    probeset: &Path,
    artifact: Option<&Path>,
    production: Option<&Path>,
    (config, policy_file): (Option<&Path>, Option<&Path>),
    split: &str,
    tolerance: f64,
) -> anyhow::Result<ExitCode> {
    if artifact.is_none() && production.is_none() {
        bail!(
            "lab parity needs --artifact FILE (a shipped export) and/or --production JSONL (logged verdicts, with -c CONFIG)"
        );
    }
    if !(0.0..=1.0).contains(&tolerance) {
        bail!("--tolerance {tolerance}: give a rate between 0 and 1 (0.02 is two points)");
    }
    let set = ProbeSet::load(probeset)?;
    let mut ok = true;
    if let Some(artifact) = artifact {
        let policy = policy_of(config, policy_file, &set)?;
        let parity = check_artifact(&set, policy.as_ref(), artifact, None)?;
        ok &= parity.ok;
        for line in parity.lines {
            outln!("{line}");
        }
    }
    if let Some(production) = production {
        let Some(config) = config else {
            bail!(
                "--production compares with the lab's cached answers: pass the classifier config with -c"
            );
        };
        let splits = parse_splits("--split", split)?;
        let [split] = splits[..] else {
            bail!("--split {split}: give one split (train or val)");
        };
        refuse_sealed(&[split], "lab parity --production")?;
        let Opened { project, lab, .. } = open(config, None)?;
        let (policy, _) = project.policy()?;
        let examples = project.split(split);
        let asked = asked_of(&set.bank)?;
        let refs: Vec<_> = examples.iter().collect();
        let table = lab.table(&refs, &asked, set.state_budget, 0);
        if let Some(note) = skill_factory_lab::run::missing_answers(
            &refs,
            set.state_budget,
            &table,
            &Measured {
                what: &format!("the probe set's questions on {}", split.name()),
                when_none: "the lab's side of the comparison below says nothing yet",
                config: &project.config.path,
            },
        ) {
            errln!("note: {note}");
        }
        let ids: std::collections::HashSet<&str> =
            project.examples.iter().map(|ex| ex.id.as_str()).collect();
        let known = |id: &str| ids.contains(id);
        let parity = check_production(
            &set, &policy, examples, &known, &table, production, tolerance,
        )?;
        skill_factory_lab::run::policy_held(&policy)?;
        ok &= parity.ok;
        for line in parity.lines {
            outln!("{line}");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(MISMATCH)
    })
}
