//! Classifier mode: tune a *probe set* (yes/no questions, a score expression, a threshold and a
//! state budget) for a System One decision model, measured on honest, sealed splits.
//!
//! A System One model answers every question about an example in one request with a
//! calibrated P(true). The lab buys each answer once and keeps it in `answers.jsonl` (the
//! format, hashes and client of `skill_factory_llm::systemone`, shared with skill mode, the
//! Python tool and skill-scanner), so every threshold, ensemble and report afterwards is
//! computed offline at no cost.
//!
//! * [`question`]: questions, framings and the question bank;
//! * [`score`]: the JSON score expression;
//! * [`probeset`]: the probe set and its content hash;
//! * [`dataset`]: labelled examples (JSONL) and their status at a state budget;
//! * [`splits`]: group-aware train / val / test / held-out assignment by salted hash;
//! * [`seal`]: the freeze record that guards test and held-out (`seal.json`);
//! * [`table`]: the cached answers of a set of examples, as the metrics read them;
//! * [`lab`]: planning, pricing and asking the missing answers;
//! * [`metrics`]: rates, AUC and threshold fitting;
//! * [`noise`]: re-asking the same questions, and how far the answers moved;
//! * [`drift`]: refitting the threshold on train when the model changes;
//! * [`evaluate`]: a probe set scored on a split, through a policy;
//! * [`policy`]: declarative policies (levels and first-match rules);
//! * [`export`]: the probe set as JSON, TypeScript and Python, its policy compiled in;
//! * [`parity`]: a shipped export, or production verdicts, checked against the lab;
//! * [`objective`]: the objective, its constraints and the validation gate;
//! * [`select`]: the candidate families fitted on train;
//! * [`optimizer`]: seed, selection and the gate, round by round;
//! * [`reflect`]: the failure digest, the proposal prompt and reading the proposer's reply;
//! * [`config`]: the `kind: classifier` YAML;
//! * [`scanner`]: a skill-scanner judge lab imported as a workspace;
//! * [`skill`]: a classifier workspace as an agent skill carrying its scorer;
//! * [`workspace`]: the files of a workspace and the reports written into it;
//! * [`run`]: what the commands do (open a workspace, plan, optimize, write its reports), for
//!   the CLI to call and print.

#![warn(missing_docs)]

pub mod config;
pub mod dataset;
pub mod drift;
pub mod error;
pub mod evaluate;
pub mod export;
mod files;
pub mod lab;
pub mod metrics;
pub mod noise;
pub mod objective;
pub mod optimizer;
pub mod parity;
pub mod policy;
pub mod probeset;
pub mod question;
pub mod reflect;
pub mod report;
pub mod run;
pub mod scanner;
pub mod score;
pub mod seal;
pub mod select;
pub mod skill;
pub mod splits;
pub mod svg;
pub mod table;
pub mod workspace;
#[cfg(test)]
pub(crate) mod world;

pub use error::LabError;
