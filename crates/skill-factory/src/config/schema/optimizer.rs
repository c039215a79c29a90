//! The `optimizer` block.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use skill_factory_llm::BudgetLimits;

use super::OptimizerKind;
use super::harness::Command;

/// The optimizer and its settings: one flat set of keys, since the Python tool accepts every
/// key whatever the optimizer, and its configs must load unchanged; each optimizer reads the
/// keys marked with its name.
// A run resolves it once into an `OptimizerPlan` (crate::optimizer), which gives each backend
// only the settings it reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizerConfig {
    /// `llm_loop` (default), `gepa` (the Python tool's `dspy_gepa`) or `skillopt`, in any case
    /// ([`OptimizerKind`]).
    #[serde(default = "default_name")]
    pub name: String,
    /// `llm_loop` and `skillopt`: most rounds; 1 to 10,000 (default 6). `gepa` ignores it,
    /// as the Python tool does: its metric-call budget ends the search.
    #[serde(default = "default_rounds")]
    pub rounds: usize,
    /// Train tasks sampled per round; 1 to 10,000 (default 4). A run reads a size over the
    /// train split as the whole split, and says so.
    #[serde(default = "default_minibatch_size")]
    pub minibatch_size: usize,
    /// `llm_loop` and `gepa`: candidates proposed per round (per parent for `gepa`); 1 to 32
    /// (default 1; the Python tool read 0 as 1).
    #[serde(default = "default_max_edits_per_round")]
    pub max_edits_per_round: usize,
    /// Consecutive rounds without improvement before stopping (default 3; 0 stops after the
    /// first round).
    #[serde(default = "default_patience")]
    pub patience: usize,
    /// Seed of minibatch sampling (and of GEPA), separate from the split seed (default 0).
    #[serde(default)]
    pub seed: u64,
    /// The Python tool's cap of rollouts in flight during `optimize`; at least 1 (default
    /// 1). `optimize` runs the larger of it and `harness.max_workers`, so it only matters
    /// when set higher.
    #[serde(default = "default_max_workers")]
    pub max_workers: usize,
    /// Backend-specific settings (the `skillopt` bridge).
    #[serde(default, deserialize_with = "super::block")]
    pub params: OptimizerParams,
    /// Every optimizer: what the optimized skill should achieve; empty = the built-in goal
    /// sentence.
    #[serde(default)]
    pub goal: String,
    /// Every optimizer: a candidate is accepted only if it beats the best by more than this
    /// (default 0.0).
    #[serde(default)]
    pub min_delta: f64,
    /// `llm_loop` and `gepa`: how proposals are asked for (default `full`, the Python tool's
    /// prompt).
    #[serde(default)]
    pub reflection: ReflectionStyle,
    /// `gepa`: the Python tool's task LM id. Accepted for compatibility; rollouts always run
    /// through the configured harness and target (docs/compatibility.md).
    #[serde(default)]
    pub lm: Option<String>,
    /// `gepa`: the Python tool's reflection LM id (`provider/model`). Accepted for
    /// compatibility; reflection runs on `optimizer_provider` (docs/compatibility.md).
    #[serde(default)]
    pub reflection_lm: Option<String>,
    /// `gepa`: the search budget preset when `max_metric_calls` is not set: `light` (default),
    /// `medium` or `heavy` ([`MetricCallBudget`](crate::optimizer::MetricCallBudget)).
    #[serde(default = "default_auto")]
    pub auto: String,
    /// Most rollouts scored by the search, for every optimizer (reused results are free);
    /// `gepa`'s default comes from `auto`, the others have none.
    #[serde(default)]
    pub max_metric_calls: Option<u64>,
    /// `gepa`: parents mutated at once in each step, each by `max_edits_per_round` proposals;
    /// 1 to 16 (default 1). A step draws no more than the Pareto frontier offers (each
    /// member once per part it may rewrite), and the run says so.
    #[serde(default = "default_parents")]
    pub parents: usize,
    /// `gepa`: merge two frontier candidates that share an ancestor (default true).
    #[serde(default = "default_true")]
    pub merge: bool,
    /// `gepa`: most merges tried in a run; 0 to 100 (default 5).
    #[serde(default = "default_max_merges")]
    pub max_merges: usize,
    /// `gepa`: extend the minibatch gate when parent and child differ by one task or less, so
    /// a lucky draw does not pass a child (default true).
    #[serde(default = "default_true")]
    pub adaptive_gate: bool,
    /// `gepa`: how many times the best child that passed its gate is reflected on again, each
    /// time on the next minibatch, before validation; when a child of its own passes that
    /// gate, that one goes on instead, so one validation pays for several edits; 0 to 8
    /// (default 2; 0 validates every child that passes, as GEPA does).
    #[serde(default = "default_deepen")]
    pub deepen: usize,
    /// `gepa`: which component a mutation rewrites (default `round_robin`).
    #[serde(default)]
    pub component_selector: ComponentSelector,
    /// `skillopt`: most edits of the first step; the limit decays like a learning rate
    /// (cosine) to `min_patch_edits` at the last round; at most 32 (default 4).
    #[serde(default = "default_max_patch_edits")]
    pub max_patch_edits: usize,
    /// `skillopt`: most edits of the last step (default 2).
    #[serde(default = "default_min_patch_edits")]
    pub min_patch_edits: usize,
    /// Every optimizer: the `## ` sections of the body (each named by its heading, with or
    /// without the `## `) and the reference files (by path, `references/...`) no candidate
    /// may change ([`protected_name`]).
    #[serde(default)]
    pub protected: Vec<String>,
    /// Every optimizer: the most tokens a candidate skill may have (about 4 characters a
    /// token), so a search cannot win by bloating the skill. None by default.
    #[serde(default)]
    pub max_skill_tokens: Option<usize>,
    /// Hard limits on what the run may spend (none by default).
    #[serde(default, deserialize_with = "super::block")]
    pub budget: BudgetConfig,
}

/// How `llm_loop` and `gepa` ask the optimizer model for a proposal.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionStyle {
    /// The Python tool's prompt: the goal, every minibatch rollout with its feedback, the
    /// edits already rejected, and an answer in `<RATIONALE>` / `<NEW_SKILL_BODY>` tags.
    #[default]
    Full,
    /// A short prompt a small model can follow (a 135M-parameter local model, say): the
    /// current instructions, the worst rollout with its feedback, the goal, and a request for
    /// the new instructions alone, which are the whole reply (a reply that loops, repeating
    /// a paragraph until the token limit, is read as that paragraph). It shows no rejected
    /// edits (small models copy them) and relies on the goal, so set `goal`.
    Compact,
}

/// How `gepa` picks the component a mutation rewrites.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ComponentSelector {
    /// Each candidate's components in turn.
    #[default]
    RoundRobin,
    /// The optimizer model sees the whole skill and rewrites the one part it blames for the
    /// failures; a reply that changes more than one part is refused.
    Blamed,
}

/// `optimizer.budget`: hard limits of a run, checked before every model call. When one is
/// reached the run stops cleanly, keeps the best skill so far and says why in its report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Most model calls (target, judge and optimizer together; cache hits are free).
    #[serde(default)]
    pub max_calls: Option<u64>,
    /// Most tokens, input and output together.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Most US dollars, at the built-in prices or the provider blocks' `pricing`.
    #[serde(default)]
    pub max_usd: Option<f64>,
    /// Most minutes of wall time.
    #[serde(default)]
    pub max_minutes: Option<f64>,
}

impl BudgetConfig {
    /// The limits as the run folder's `run_started` event records them.
    pub fn recorded(&self) -> skill_factory_runfolder::event::Budget {
        skill_factory_runfolder::event::Budget {
            max_calls: self.max_calls,
            max_tokens: self.max_tokens,
            max_usd: self.max_usd,
            max_minutes: self.max_minutes,
        }
    }

    /// The limits a ledger enforces.
    pub fn limits(&self) -> BudgetLimits {
        BudgetLimits {
            max_calls: self.max_calls,
            max_tokens: self.max_tokens,
            max_usd: self.max_usd,
            max_duration: self
                .max_minutes
                .and_then(|m| Duration::try_from_secs_f64(m * 60.0).ok()),
        }
    }
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        Self {
            name: default_name(),
            rounds: default_rounds(),
            minibatch_size: default_minibatch_size(),
            max_edits_per_round: default_max_edits_per_round(),
            patience: default_patience(),
            seed: 0,
            max_workers: default_max_workers(),
            params: OptimizerParams::default(),
            goal: String::new(),
            min_delta: 0.0,
            reflection: ReflectionStyle::default(),
            lm: None,
            reflection_lm: None,
            auto: default_auto(),
            max_metric_calls: None,
            parents: default_parents(),
            merge: true,
            max_merges: default_max_merges(),
            adaptive_gate: true,
            deepen: default_deepen(),
            component_selector: ComponentSelector::default(),
            max_patch_edits: default_max_patch_edits(),
            min_patch_edits: default_min_patch_edits(),
            protected: Vec::new(),
            max_skill_tokens: None,
            budget: BudgetConfig::default(),
        }
    }
}

/// `optimizer.params`: settings of the `skillopt` bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizerParams {
    /// The external command; a string is shell-split, a list is used as argv. Placeholders
    /// `{seed} {train} {val} {out_dir}`.
    #[serde(default)]
    pub command: Option<Command>,
    /// Where the bridge writes its inputs and looks for the result (default `runs/skillopt`,
    /// relative to the config file).
    #[serde(default = "default_work_dir")]
    pub work_dir: PathBuf,
    /// File name of the result inside `work_dir` (default `best_skill.md`).
    #[serde(default = "default_output_skill")]
    pub output_skill: String,
    /// Seconds before the command is stopped (default 3600).
    #[serde(default = "default_params_timeout")]
    pub timeout: f64,
    /// Working directory of the command (default: inherited).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

impl Default for OptimizerParams {
    fn default() -> Self {
        Self {
            command: None,
            work_dir: default_work_dir(),
            output_skill: default_output_skill(),
            timeout: default_params_timeout(),
            cwd: None,
        }
    }
}

/// A `protected` entry as a run names it, read once: a reference file's path as written
/// (trimmed), else a section heading with its `## ` and its words one space apart, whatever
/// `#` marks and spaces the entry had (`Safety`, `## Safety` and `##  Safety` are `## Safety`);
/// `None` when nothing is left (`""`, `##`).
pub fn protected_name(entry: &str) -> Option<String> {
    let entry = entry.trim();
    if entry.starts_with("references/") {
        return Some(entry.to_string());
    }
    let words: Vec<&str> = entry.trim_start_matches('#').split_whitespace().collect();
    (!words.is_empty()).then(|| format!("## {}", words.join(" ")))
}

fn default_name() -> String {
    OptimizerKind::LlmLoop.name().to_owned()
}

fn default_rounds() -> usize {
    6
}

fn default_minibatch_size() -> usize {
    4
}

fn default_max_edits_per_round() -> usize {
    1
}

fn default_patience() -> usize {
    3
}

fn default_max_workers() -> usize {
    1
}

fn default_parents() -> usize {
    1
}

fn default_true() -> bool {
    true
}

fn default_deepen() -> usize {
    2
}

fn default_max_merges() -> usize {
    5
}

fn default_max_patch_edits() -> usize {
    4
}

fn default_min_patch_edits() -> usize {
    2
}

fn default_auto() -> String {
    "light".to_owned()
}

fn default_work_dir() -> PathBuf {
    PathBuf::from("runs/skillopt")
}

fn default_output_skill() -> String {
    "best_skill.md".to_owned()
}

fn default_params_timeout() -> f64 {
    3600.0
}
