//! A classifier workspace: the config's inputs loaded once, and the files a run writes.
//!
//! | File | Content |
//! |---|---|
//! | `answers.jsonl` | every answer ever bought |
//! | `pool.json` | every question ever in the pool, so later runs select from it |
//! | `probeset.json` | the best probe set (what to ship) |
//! | `seed.json` | the seed, its threshold fitted on train (the "before" of reports) |
//! | `report.md`, `splits.svg` | before and after, rounds, questions, coverage |
//! | `history.json` | every round, machine-readable (a reflective round with the proposer's prompt) |
//! | `proposals.sqlite` | the proposer's answers, so a rerun asks it nothing |
//! | `policy.json` | the config's declarative policy as run (when it has one) |
//! | `result.json` | the run summary, in the shape of skill-mode runs (`kind: "classifier"`) |
//! | `seal.json` | the freeze record and every opening of a sealed split |
//!
//! Every file is written whole (temporary file, then rename).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use skill_factory_pycompat::{float::round, json as pyjson};
use skill_factory_runfolder::names::{HISTORY_FILE, RESULT_FILE};
use skill_factory_runfolder::result::{
    BestSkill, ClassifierRecord, HistoryRecord, Record, RunResult, Splits as RunSplits,
};
use skill_factory_runfolder::workspace::{AssignmentRecord, RoundRecord};

use crate::LabError;
use crate::config::{self, ClassifierConfig, PROPOSALS_FILE};
use crate::data::dataset::{Example, load_dataset};
use crate::data::seal::Seal;
use crate::data::split::Split;
use crate::data::splits::{Splits, assign};
use crate::files::write_atomic;
use crate::measure::evaluate::Policy;
use crate::measure::policy::PolicySpec;
use crate::optimizer::objective::Objective;
use crate::optimizer::{Outcome, history};
use crate::output::Kind;
use crate::probe::probeset::ProbeSet;
use crate::probe::question::Bank;
use skill_factory_io::replace::Outputs;

/// Everything a classifier command reads, loaded and checked once.
#[derive(Debug)]
pub struct Project {
    /// The config.
    pub config: ClassifierConfig,
    /// Every example, in file order.
    pub examples: Vec<Example>,
    /// The examples by split.
    pub splits: Splits,
    /// The seed probe set.
    pub seed: ProbeSet,
    /// The config's pool file, if any.
    pub pool_file: Option<Bank>,
}

impl Project {
    /// Loads the config at `path`, its dataset, splits, seed and pool. `workspace` replaces
    /// the config's (`--out`); a file there is refused, since every workspace file would be
    /// read and written below it.
    pub fn load(path: &Path, workspace: Option<&Path>) -> Result<Project, LabError> {
        let mut config = config::load(path)?;
        if let Some(dir) = workspace {
            config.workspace = dir.to_path_buf();
        }
        Outputs::new(false).check_folder("the workspace", &config.workspace)?;
        let examples = load_dataset(&config.dataset, &config.labels)?;
        let splits = assign(&config.splits, &examples)?;
        let seed = ProbeSet::load(&config.probeset)?;
        let pool_file = config.pool.as_deref().map(Bank::load).transpose()?;
        Ok(Project {
            config,
            examples,
            splits,
            seed,
            pool_file,
        })
    }

    /// The workspace folder.
    pub fn dir(&self) -> &Path {
        &self.config.workspace
    }

    /// A file of the workspace.
    pub fn file(&self, name: &str) -> PathBuf {
        self.config.workspace.join(name)
    }

    /// The pool: the seed's questions, the config's pool file and the workspace's
    /// `pool.json`, merged (a question id with two different texts is an error).
    pub fn pool(&self) -> Result<Bank, LabError> {
        let mut pool = self.seed.bank.clone();
        let mut add = |bank: &Bank, origin: &Path| {
            pool.merge(bank).map(|_| ()).map_err(|e| {
                LabError::invalid(format!(
                    "{}: {e}; give the new question another id",
                    origin.display()
                ))
            })
        };
        if let (Some(bank), Some(path)) = (&self.pool_file, &self.config.pool) {
            add(bank, path)?;
        }
        let saved = self.file("pool.json");
        if saved.exists() {
            add(&Bank::load(&saved)?, &saved)?;
        }
        Ok(pool)
    }

    /// The config's policy, its rules read against the pool's questions (a rule may read a
    /// question the score does not), or the threshold policy when the config has none.
    pub fn policy(&self) -> Result<(Policy, Option<PolicySpec>), LabError> {
        let Some((value, origin, folder)) = &self.config.policy else {
            return Ok((Policy::threshold(), None));
        };
        let pool = self.pool()?;
        let spec = PolicySpec::from_json_in(origin, value, &|id| pool.contains(id), folder)?;
        Ok((spec.policy(), Some(spec)))
    }

    /// The best probe set: `probeset.json` when a run wrote one, else the seed.
    pub fn best(&self) -> Result<ProbeSet, LabError> {
        self.saved_or_seed("probeset.json")
    }

    /// The baseline: `seed.json` (the seed with its fitted threshold) when a run wrote one,
    /// else the seed.
    pub fn baseline(&self) -> Result<ProbeSet, LabError> {
        self.saved_or_seed("seed.json")
    }

    /// The probe set a flag names, else the best.
    pub fn given_or_best(&self, given: Option<&Path>) -> Result<ProbeSet, LabError> {
        given.map_or_else(|| self.best(), ProbeSet::load)
    }

    /// The probe set a flag names, else the baseline.
    pub fn given_or_baseline(&self, given: Option<&Path>) -> Result<ProbeSet, LabError> {
        given.map_or_else(|| self.baseline(), ProbeSet::load)
    }

    /// The pool with `probeset`'s questions added: a probe set given by file may ask questions
    /// the pool lacks, and a policy or a digest reads them all.
    pub fn pool_with(&self, probeset: &ProbeSet) -> Result<Bank, LabError> {
        let mut bank = self.pool()?;
        bank.merge(&probeset.bank)?;
        Ok(bank)
    }

    fn saved_or_seed(&self, name: &str) -> Result<ProbeSet, LabError> {
        let path = self.file(name);
        if path.exists() {
            ProbeSet::load(&path)
        } else {
            Ok(self.seed.clone())
        }
    }

    /// Every file a command of this workspace reads, with what it is: the config, its
    /// dataset, seed, pool and policy files, and the workspace's own files that exist. A
    /// command writes none of them from a flag ([`Outputs`]).
    pub fn inputs(&self) -> Vec<(PathBuf, String)> {
        let config = &self.config;
        let mut inputs = vec![
            (config.path.clone(), "the config".to_string()),
            (
                config.dataset.clone(),
                "the dataset (`dataset:`)".to_string(),
            ),
            (
                config.probeset.clone(),
                "the seed probe set (`probeset:`)".to_string(),
            ),
        ];
        if let Some(pool) = &config.pool {
            inputs.push((pool.clone(), "the question pool (`pool:`)".to_string()));
        }
        if let Some(policy) = &config.policy_file {
            inputs.push((policy.clone(), "the policy file (`policy:`)".to_string()));
        }
        for name in WORKSPACE_FILES {
            let path = self.file(name);
            if path.exists() {
                inputs.push((path, format!("the workspace's {name}")));
            }
        }
        inputs
    }

    /// Refuses to start a run that would replace a file it did not write: a config input
    /// (dataset, seed, policy) that is one of the files a run writes into the workspace, or
    /// a file there of another kind (a `report.md` of the user's own).
    pub fn check_outputs(&self) -> Result<(), LabError> {
        let config = &self.config;
        let fix = format!(
            "Move it away, or set another `workspace:` in {} (or pass -o DIR)",
            config.path.display()
        );
        let mut outputs = Outputs::without_force(fix);
        outputs.reads(&config.path, "the config");
        outputs.reads(&config.dataset, "the dataset (`dataset:`)");
        outputs.reads(&config.probeset, "the seed probe set (`probeset:`)");
        // The pool file is left out: the grown pool written over it holds every question it
        // had, so a `pool:` that is the workspace's own `pool.json` loses nothing.
        if let Some(policy) = &config.policy_file {
            outputs.reads(policy, "the policy file (`policy:`)");
        }
        for (name, kind) in [
            ("pool.json", Kind::Json),
            ("seed.json", Kind::ProbeSet),
            ("probeset.json", Kind::ProbeSet),
            (POLICY_FILE, Kind::Json),
            (HISTORY_FILE, Kind::Json),
            (RESULT_FILE, Kind::Json),
            ("report.md", Kind::ClassifierReport),
            ("splits.svg", Kind::Chart),
        ] {
            outputs.check(&format!("the workspace's {name}"), &self.file(name), kind)?;
        }
        Ok(())
    }

    /// Which example is in which split now, as the seal records it.
    pub fn assignment(&self) -> AssignmentRecord {
        self.splits.assignment(&self.config.splits)
    }

    /// The seal of the workspace, told the split assignment now ([`Seal::under`]).
    pub fn seal(&self) -> Result<Seal, LabError> {
        Ok(Seal::load(self.dir())?.under(self.assignment(), &self.config.path))
    }

    /// Refuses to freeze `probeset` against `baseline` when it is that baseline or the seed:
    /// nothing optimized would be frozen, and the sealed splits would open to the seed (what a
    /// misspelt `workspace:`, which holds no `probeset.json`, leads to).
    pub fn refuse_unoptimized(
        &self,
        probeset: &ProbeSet,
        baseline: &ProbeSet,
    ) -> Result<(), LabError> {
        let hash = probeset.sha256();
        let what = if hash == baseline.sha256() {
            "the baseline it would be compared with"
        } else if hash == self.seed.sha256() {
            "the config's seed"
        } else {
            return Ok(());
        };
        let config = self.config.path.display();
        let missing = if self.file("probeset.json").exists() {
            String::new()
        } else {
            format!(
                " (it has no probeset.json: is `workspace:` in {config} the folder `optimize` \
                 wrote?)"
            )
        };
        Err(LabError::invalid(format!(
            "lab freeze: the probe set to freeze ({}, {}) is {what}: nothing optimized was \
             found in the workspace {}{missing}, and freezing it would open the sealed splits \
             to the seed. Run `skill-factory optimize -c {config}` first, or name the probe set \
             with --probeset FILE; --force freezes it anyway",
            probeset.name,
            probeset.hash12(),
            self.dir().display()
        )))
    }

    /// The examples of `split`.
    pub fn split(&self, split: Split) -> &[Example] {
        self.splits.get(split)
    }

    /// Writes every file of a finished run except `report.md` and `splits.svg`.
    pub fn write_outcome(&self, outcome: &Outcome, started_at: &str) -> Result<(), LabError> {
        let mut best = outcome.best.clone();
        best.name.clone_from(&self.config.name);
        outcome.seed.save(&self.file("seed.json"))?;
        best.save(&self.file("probeset.json"))?;
        if let Some((policy, _, _)) = &self.config.policy {
            // The rules as run, so an export of the workspace (a skill with its scorer) can
            // compile them in without the config.
            write_atomic(
                &self.file(POLICY_FILE),
                &(pyjson::dumps_indent(policy, 1) + "\n"),
            )?;
        }
        let records: Vec<RoundRecord> = outcome.history.iter().map(history::record).collect();
        let history = serde_json::to_value(&records).expect("rounds are plain data");
        write_atomic(
            &self.file(HISTORY_FILE),
            &(pyjson::dumps_indent(&history, 1) + "\n"),
        )?;
        let result = serde_json::to_value(result_json(self, outcome, &best, started_at))
            .unwrap_or(Value::Null);
        write_atomic(
            &self.file(RESULT_FILE),
            &(pyjson::dumps_pretty(&result) + "\n"),
        )?;
        // Last: the grown pool is an input of the next run, so a run killed before this point
        // reruns from the pool it started with, to the same outcome.
        outcome.pool.save(&self.file("pool.json"))
    }
}

/// The policy the run measured through, in the workspace.
pub const POLICY_FILE: &str = "policy.json";

/// Every file a workspace may hold (see the module documentation).
const WORKSPACE_FILES: [&str; 11] = [
    "answers.jsonl",
    "pool.json",
    "probeset.json",
    "seed.json",
    "report.md",
    "splits.svg",
    HISTORY_FILE,
    PROPOSALS_FILE,
    POLICY_FILE,
    RESULT_FILE,
    "seal.json",
];

/// The objective's value of a run's reports (0 when it cannot be read).
fn value(objective: &Objective, reports: &crate::measure::evaluate::Reports) -> f64 {
    objective.value(reports).unwrap_or(0.0)
}

/// `result.json`: the summary skill-mode runs write, so run lists (ours and the Python
/// tool's dashboard) show classifier runs too. Scores are the objective (validation recall
/// at the false-positive budget).
fn result_json(
    project: &Project,
    outcome: &Outcome,
    best: &ProbeSet,
    started_at: &str,
) -> RunResult {
    let objective = &project.config.objective;
    let baseline = value(objective, &outcome.before);
    let best_score = value(objective, &outcome.after);
    let recall = |reports: &crate::measure::evaluate::Reports, split: Split| {
        reports
            .get(&split)
            .and_then(|r| r.rates(objective.level.as_deref()))
            .map_or(0.0, |r| round(r.recall(), 4))
    };
    let history = outcome
        .history
        .iter()
        .map(|r| HistoryRecord {
            iteration: r.round,
            train_score: recall(&r.reports, Split::Train),
            val_score: recall(&r.reports, Split::Val),
            accepted: r.accepted,
            note: format!("{}: {}", r.change, r.candidate),
            skill_name: project.config.name.clone(),
            body: if r.round == 0 {
                pyjson::dumps_indent(&outcome.seed.to_json(), 1)
            } else {
                r.score.clone()
            },
            ..HistoryRecord::default()
        })
        .collect();
    let body = pyjson::dumps_indent(&best.to_json(), 1);
    let count = |split| project.split(split).len();
    let metadata = json!({
        "usd": round(outcome.spend.usd, 6),
        "input_tokens": outcome.spend.input_tokens,
        "sha256": best.sha256(),
        "failed_requests": outcome.spend.failed,
    });
    RunResult {
        kind: Some("classifier".into()),
        optimizer: "classifier".into(),
        baseline_score: round(baseline, 4),
        best_score: round(best_score, 4),
        improvement: round(best_score - baseline, 4),
        candidates: outcome.history.len(),
        accepted: outcome.history.iter().filter(|r| r.accepted).count(),
        metadata: metadata.as_object().cloned().unwrap_or_default(),
        best_skill: BestSkill {
            name: project.config.name.clone(),
            description: "probe set".into(),
            markdown: format!("```json\n{body}\n```\n"),
            body,
            files: Default::default(),
        },
        history,
        record: Record::Classifier(ClassifierRecord {
            config_name: project.config.name.clone(),
            started_at: started_at.to_string(),
            finished_at: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            stop_reason: "done".into(),
            splits: RunSplits {
                train: count(Split::Train),
                val: count(Split::Val),
                test: count(Split::Test),
                held_out: Some(count(Split::HeldOut)),
            },
        }),
    }
}
