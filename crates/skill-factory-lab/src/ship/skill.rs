//! A classifier run as an agent skill: `skill-factory export --skill <workspace>` writes a
//! SKILL.md that says how to use the tuned probe set, and under `scripts/` the probe set and
//! its scorer in TypeScript, JavaScript and Python (the workspace's policy compiled in), so
//! `npx skills add` installs a skill that carries its own checked classifier.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use skill_factory_core::Skill;
use skill_factory_package::bundle::{BundledFile, SkillBundle};
use skill_factory_pycompat::float::thousands;
use skill_factory_runfolder::names::RESULT_FILE;
use skill_factory_runfolder::result::{Record, RunResult};

use crate::LabError;
use crate::measure::policy::PolicySpec;
use crate::probe::probeset::ProbeSet;
use crate::run::workspace::POLICY_FILE;
use crate::ship::export::{Format, export};

/// The scorer files a skill carries, by format.
const SCORERS: [(&str, Format); 4] = [
    ("scripts/probeset.json", Format::Json),
    ("scripts/scorer.ts", Format::TypeScript),
    ("scripts/scorer.mjs", Format::JavaScript),
    ("scripts/scorer.py", Format::Python),
];

/// Whether `dir` is a classifier workspace (its `result.json` says `kind: classifier`).
pub fn is_workspace(dir: &Path) -> bool {
    skill_factory_io::input::read_text(&dir.join(RESULT_FILE), crate::files::WORKSPACE_FILE)
        .ok()
        .and_then(|text| RunResult::parse(&text).ok())
        .is_some_and(|result| matches!(result.record, Record::Classifier(_)))
}

/// The skill of the classifier workspace `dir`.
pub fn bundle(dir: &Path) -> Result<SkillBundle, LabError> {
    let probeset = ProbeSet::load(&dir.join("probeset.json"))?;
    let file = dir.join(POLICY_FILE);
    let policy = file
        .is_file()
        .then(|| PolicySpec::load(&file, &|id| probeset.bank.contains(id)))
        .transpose()?;
    let mut files = Vec::new();
    if policy.is_some() {
        files.push(BundledFile {
            path: "scripts/policy.json".to_string(),
            contents: crate::files::read_bytes(&file, crate::files::WORKSPACE_FILE, "")?,
            executable: false,
        });
    }
    for (path, format) in SCORERS {
        files.push(BundledFile {
            path: path.to_string(),
            contents: export(&probeset, format, policy.as_ref())?.into_bytes(),
            executable: false,
        });
    }
    let questions = probeset.bank.len();
    let threshold = probeset.threshold.unwrap_or(f64::NAN);
    let description = format!(
        "Classify an item with the checked probe set '{}': {questions} yes/no question{} for the System One model {}, flagged when the score reaches {threshold:.4}. Use it to give the same verdict production gives; the scorer is in scripts/.",
        probeset.name,
        if questions == 1 { "" } else { "s" },
        probeset.model
    );
    let mut body = String::new();
    let _ = writeln!(body, "# {} classifier\n", probeset.name);
    let _ = writeln!(
        body,
        "A probe set tuned and measured by Skill Factory: yes/no questions a System One decision model answers with a calibrated P(true), the score that combines the answers, and the threshold fitted on training examples (content hash `{}`).\n",
        probeset.hash12()
    );
    body.push_str("## Use it\n\n");
    let _ = writeln!(
        body,
        "1. Ask the model `{}`{} every question of `QUESTIONS` in `scripts/scorer.mjs` (or `scorer.py`, `scorer.ts`) about the item, with at most {} characters of the item's text; skip a longer item rather than cut it.",
        probeset.model,
        probeset
            .pinned_version
            .as_deref()
            .map(|v| format!(" (measured on {v})"))
            .unwrap_or_default(),
        thousands(probeset.state_budget as u64)
    );
    body.push_str("2. Pass the answers, `{question id: P(true)}`, to `score()` and `flags()`");
    if let Some(policy) = &policy {
        let _ = write!(
            body,
            ", or to `verdict()`, which applies the policy `{}` ({})",
            policy.name,
            policy.levels.join(" < ")
        );
    }
    body.push_str(".\n3. A question without an answer makes the score NaN, which never flags: ask again rather than guess.\n\n");
    let _ = writeln!(
        body,
        "Score: `{}`, flagged at `>= {threshold}`.\n",
        probeset.score.describe()
    );
    let rates: Vec<(String, &Value)> = ["train", "val"]
        .iter()
        .filter_map(|split| {
            probeset
                .calibration
                .get(*split)
                .map(|r| (split.to_string(), r))
        })
        .filter(|(_, r)| r.is_object())
        .collect();
    if !rates.is_empty() {
        body.push_str("## Measured\n\n| split | recall | false positives |\n|---|---:|---:|\n");
        for (split, r) in rates {
            let pct = |key: &str| {
                r[key]
                    .as_f64()
                    .map_or("-".to_string(), |x| format!("{:.1}%", x * 100.0))
            };
            let _ = writeln!(body, "| {split} | {} | {} |", pct("recall"), pct("fpr"));
        }
        body.push_str("\nThe held-out test split is reported by `skill-factory lab report` after `lab freeze`.\n\n");
    }
    let _ = writeln!(
        body,
        "## Check it\n\n`skill-factory lab parity --probeset scripts/probeset.json --artifact scripts/scorer.py{}` regenerates a scorer and compares it byte for byte (exit 4 when it differs); `--production verdicts.jsonl -c CONFIG` compares logged verdicts with the lab's.",
        if policy.is_some() {
            " --policy scripts/policy.json"
        } else {
            ""
        }
    );
    let skill = Skill::new(
        // Export and install slug the name as the Agent Skills layout needs.
        probeset.name.clone(),
        description,
        body.trim_end().to_string(),
    );
    Ok(SkillBundle {
        skill,
        files,
        notes: Vec::new(),
        folder: None,
    })
}
