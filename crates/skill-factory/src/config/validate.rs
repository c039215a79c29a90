//! Checks a parsed config for values of the right type that are still wrong: out of range,
//! inconsistent, or missing for the chosen harness.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use super::schema::{
    Command, ExecutorType, HarnessType, InputVia, ObjectiveConfig, OptimizerConfig, OptimizerKind,
    RunConfig, SkillMode, protected_name,
};
use skill_factory_config::ConfigError;
use skill_factory_config::locate::{Located, Locator, Step};

/// The most rollouts a config may put in flight at once.
const MAX_WORKERS: usize = 65_536;

/// A key path under construction: `at(&["metric", "judge"]).index(1)`.
#[derive(Clone)]
struct KeyPath(Vec<Step>);

fn at(keys: &[&str]) -> KeyPath {
    KeyPath(keys.iter().map(|k| Step::Key((*k).to_owned())).collect())
}

impl KeyPath {
    fn index(mut self, i: usize) -> Self {
        self.0.push(Step::Index(i));
        self
    }

    fn key(mut self, k: &str) -> Self {
        self.0.push(Step::Key(k.to_owned()));
        self
    }
}

/// Builds errors that point at a key path in one file; with a `harness` prefix, the
/// `harness` keys it is given are those of a target's own block (`targets[1].harness`).
struct Checker<'a>(Located<'a>, Option<KeyPath>);

impl Checker<'_> {
    fn invalid(&self, path: KeyPath, problem: String, fix: &str) -> ConfigError {
        self.0.invalid(&self.moved(path).0, problem, fix)
    }

    /// `path` in the block the checks are about: a `harness` key of a target under it.
    fn moved(&self, path: KeyPath) -> KeyPath {
        match (&self.1, path.0.first()) {
            (Some(prefix), Some(Step::Key(first))) if first == "harness" => {
                KeyPath(prefix.0.iter().cloned().chain(path.0).collect())
            }
            _ => path,
        }
    }

    /// A dotted key (`harness.command`) as the file writes it: under a target's prefix
    /// (`targets[0].harness.command`) when the checks are about a target's block.
    fn key_name(&self, key: &str) -> String {
        match &self.1 {
            Some(prefix) if key.starts_with("harness") => {
                let mut name = String::new();
                for step in &prefix.0 {
                    match step {
                        Step::Key(k) if name.is_empty() => name.push_str(k),
                        Step::Key(k) => {
                            name.push('.');
                            name.push_str(k);
                        }
                        Step::Index(i) => name.push_str(&format!("[{i}]")),
                    }
                }
                format!("{name}.{key}")
            }
            _ => key.to_owned(),
        }
    }

    /// The same file, its `harness` keys under `prefix`.
    fn under(&self, prefix: KeyPath) -> Checker<'_> {
        Checker(Located { ..self.0 }, Some(prefix))
    }

    /// A weight must be a finite number greater than 0.
    fn weight(&self, path: KeyPath, value: f64) -> Result<(), ConfigError> {
        if value.is_finite() && value > 0.0 {
            Ok(())
        } else {
            Err(self.invalid(
                path,
                format!("weight {value} is not greater than 0"),
                "use a positive number such as 1.0",
            ))
        }
    }

    /// A count of the `optimizer` block within its [`Limit`].
    fn count(&self, limit: &Limit, optimizer: &OptimizerConfig) -> Result<(), ConfigError> {
        let value = (limit.of)(optimizer);
        let path = at(&["optimizer", limit.key]);
        if value > limit.most {
            return Err(self.invalid(
                path,
                format!(
                    "{value} {} is more than {}: {}",
                    limit.unit, limit.most, limit.why
                ),
                limit.fix,
            ));
        }
        if limit.least_one {
            self.at_least_one(path, value)?;
        }
        Ok(())
    }

    fn at_least_one(&self, path: KeyPath, value: usize) -> Result<(), ConfigError> {
        if value >= 1 {
            Ok(())
        } else {
            Err(self.invalid(path, "0 is not allowed".to_owned(), "use 1 or more"))
        }
    }

    /// A count of rollouts in flight: at least 1, and not so many that it can only be a typo
    /// (the async semaphores behind it refuse more than about 2^61 permits).
    fn workers(&self, path: KeyPath, value: usize) -> Result<(), ConfigError> {
        if value > MAX_WORKERS {
            return Err(self.invalid(
                path,
                format!("{value} rollouts in flight is more than {MAX_WORKERS}"),
                "use a number such as 16 (the model providers' rate limits are the real cap)",
            ));
        }
        self.at_least_one(path, value)
    }

    fn positive_seconds(&self, path: KeyPath, value: Option<f64>) -> Result<(), ConfigError> {
        match value {
            Some(v) if !(v.is_finite() && v > 0.0) => Err(self.invalid(
                path,
                format!("{v} seconds is not a positive duration"),
                "use a number of seconds greater than 0",
            )),
            Some(v) if Duration::try_from_secs_f64(v).is_err() => Err(self.invalid(
                path,
                format!("{v} seconds is longer than any duration this tool can wait"),
                "use a number of seconds such as 300",
            )),
            _ => Ok(()),
        }
    }

    /// A list of named, weighted entries (judge criteria, System One checks): not empty
    /// (`problem` and `fix` say so), each name given once, each weight above 0.
    fn weighted_entries(
        &self,
        keys: &[&str],
        entries: &[(&str, f64)],
        problem: &str,
        fix: &str,
    ) -> Result<(), ConfigError> {
        if entries.is_empty() {
            return Err(self.invalid(at(keys), problem.to_owned(), fix));
        }
        self.unique_names(&at(keys), entries.iter().map(|&(name, _)| name))?;
        for (i, &(_, weight)) in entries.iter().enumerate() {
            self.weight(at(keys).index(i).key("weight"), weight)?;
        }
        Ok(())
    }

    fn unique_names<'n>(
        &self,
        base: &KeyPath,
        names: impl Iterator<Item = &'n str>,
    ) -> Result<(), ConfigError> {
        let mut seen = HashSet::new();
        for (i, name) in names.enumerate() {
            let path = KeyPath(base.0.clone()).index(i).key("name");
            if name.trim().is_empty() {
                return Err(self.invalid(
                    path,
                    "the name is empty".to_owned(),
                    "give every entry a short name",
                ));
            }
            if !seen.insert(name) {
                return Err(self.invalid(
                    path,
                    format!("the name '{name}' is used twice"),
                    "give every entry its own name",
                ));
            }
        }
        Ok(())
    }
}

/// Checks value ranges and cross-key rules; the first problem found is returned.
pub(crate) fn validate(
    config: &RunConfig,
    file: &Path,
    locator: &Locator,
) -> Result<(), ConfigError> {
    let check = Checker(Located { file, locator }, None);
    split(config, &check)?;
    optimizer(config, &check)?;
    noise(config, &check)?;
    metric(config, &check)?;
    trigger(config, &check)?;
    targets(config, &check)?;
    tracking(config, &check)?;
    harness(config, &check)
}

/// The rules of `tracking.mlflow`: a server's address is an http(s) URL, and an experiment's
/// name says something. An address left out is `MLFLOW_TRACKING_URI`'s, read when the run
/// starts ([`crate::tracking::MlflowSettings::of`]).
fn tracking(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let Some(mlflow) = &config.tracking.mlflow else {
        return Ok(());
    };
    if let Some(uri) = &mlflow.uri {
        let path = at(&["tracking", "mlflow", "uri"]);
        let fix = "write the tracking server's address as http://HOST:PORT, e.g. http://127.0.0.1:5000 (`mlflow server` listens there by default)";
        let uri = uri.trim();
        if !(uri.starts_with("http://") || uri.starts_with("https://")) {
            return Err(check.invalid(
                path,
                // Not quoted: an address may carry credentials.
                "the address is not an http:// or https:// URL; a run is tracked over MLflow's REST API, so a file store or a database URI cannot be written to from here".to_owned(),
                fix,
            ));
        }
        if let Err(problem) = reqwest::Url::parse(uri) {
            return Err(check.invalid(path, format!("the address is not a URL ({problem})"), fix));
        }
    }
    if let Some(name) = &mlflow.experiment
        && name.trim().is_empty()
    {
        return Err(check.invalid(
            at(&["tracking", "mlflow", "experiment"]),
            "the experiment's name is empty".to_owned(),
            "name the experiment, e.g. 'experiment: invoice-extractor', or remove the key to use MLFLOW_EXPERIMENT_NAME or the config's name",
        ));
    }
    Ok(())
}

/// The rules of `targets` and `objective`: named targets, at least one optimized, weights of
/// optimized targets only, and each target's own harness block held to the harness rules.
fn targets(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let objective = &config.objective;
    if config.targets.is_empty() {
        if *objective != ObjectiveConfig::default() {
            return Err(check.invalid(
                at(&["objective"]),
                "an objective combines the scores of several targets, and the config names none"
                    .to_owned(),
                "add a 'targets' list, or remove 'objective'",
            ));
        }
        return Ok(());
    }
    check.unique_names(
        &at(&["targets"]),
        config.targets.iter().map(|t| t.name.as_str()),
    )?;
    for (i, target) in config.targets.iter().enumerate() {
        let path = at(&["targets"]).index(i).key("name");
        if let Some(bad) = target
            .name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(check.invalid(
                path,
                format!("'{}' holds '{bad}'", target.name),
                "name a target with letters, digits, '-', '_' and '.' (it is a column, a key of result.json and a word of --targets)",
            ));
        }
        if let Some(harness) = &target.harness {
            let own = RunConfig {
                harness: harness.clone(),
                ..config.clone()
            };
            let under = check.under(at(&["targets"]).index(i));
            self::harness(&own, &under)?;
        }
    }
    if !config.targets.iter().any(|t| t.optimize) {
        return Err(check.invalid(
            at(&["targets"]),
            "every target says 'optimize: false', so nothing is left to optimize for".to_owned(),
            "let at least one target be optimized (remove its 'optimize: false')",
        ));
    }
    for (name, weight) in &objective.weights {
        let path = at(&["objective", "weights", name]);
        check.weight(path.clone(), *weight)?;
        match config.targets.iter().find(|t| &t.name == name) {
            None => {
                return Err(check.invalid(
                    path,
                    format!("no target is named '{name}'"),
                    "give weights by the names of the 'targets' list",
                ));
            }
            Some(target) if !target.optimize => {
                return Err(check.invalid(
                    path,
                    format!("target '{name}' is measured, not optimized ('optimize: false'), so it has no weight in the objective"),
                    "remove its weight, or its 'optimize: false'",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The rules of `kind: trigger`: scored by whether the agent loads the skill, so no metric
/// block, and run by a harness that shows a load; `distractors` belong to it, and to a
/// skill-mode run's `trigger` block, whose weight is a share.
fn trigger(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    if let Some(block) = &config.trigger {
        if config.is_trigger() {
            return Err(check.invalid(
                at(&["trigger"]),
                "a trigger run's dataset is already its trigger set".to_owned(),
                "remove the 'trigger' block, or 'kind: trigger' to score tasks and queries together",
            ));
        }
        if !(block.weight > 0.0 && block.weight < 1.0) {
            return Err(check.invalid(
                at(&["trigger", "weight"]),
                format!(
                    "{} is not a share of the score strictly between 0 and 1",
                    block.weight
                ),
                "use a weight such as 0.3 (the queries make 30% of the score, the tasks 70%)",
            ));
        }
        if config.harness.harness_type == HarnessType::Subprocess {
            return Err(check.invalid(
                at(&["harness", "type"]),
                "a subprocess command does not show whether an agent loaded the skill, so the trigger set cannot be scored through it".to_owned(),
                "use 'api' (the target model routes among the skills), 'claude_code', 'codex' or 'gemini_cli', or remove the 'trigger' block",
            ));
        }
    }
    if !config.is_trigger() {
        if !config.distractors.is_empty() && config.trigger.is_none() {
            return Err(check.invalid(
                at(&["distractors"]),
                "distractors compete with the skill for a load, which only a trigger run or a trigger set measures"
                    .to_owned(),
                "add 'kind: trigger' to measure the description, a 'trigger' block to measure it beside the tasks, or remove 'distractors'",
            ));
        }
        return Ok(());
    }
    if !config.metric.is_empty() {
        return Err(check.invalid(
            at(&["metric"]),
            "a trigger run is scored by whether the agent loads the skill (trigger accuracy), not by a metric"
                .to_owned(),
            "remove the 'metric' block",
        ));
    }
    if config.harness.harness_type == HarnessType::Subprocess {
        return Err(check.invalid(
            at(&["harness", "type"]),
            "a subprocess command does not show whether an agent loaded the skill".to_owned(),
            "use 'api' (the target model routes among the skills), 'claude_code', 'codex' or 'gemini_cli'",
        ));
    }
    Ok(())
}

/// The most samples of one task a config may ask for: more is a typo, not a plan.
const MAX_SAMPLES: u32 = 1_000;

fn noise(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let n = &config.noise;
    for (key, value) in [("samples", n.samples), ("max_samples", n.max_samples)] {
        if !(1..=MAX_SAMPLES).contains(&value) {
            return Err(check.invalid(
                at(&["noise", key]),
                format!("{value} samples of a task is not between 1 and {MAX_SAMPLES}"),
                "use a small number such as 3",
            ));
        }
    }
    if n.max_samples < n.samples {
        return Err(check.invalid(
            at(&["noise", "max_samples"]),
            format!(
                "{} is below noise.samples {}: a gate starts with that many",
                n.max_samples, n.samples
            ),
            "make max_samples at least samples",
        ));
    }
    if !(n.confidence > 0.5 && n.confidence < 1.0) {
        return Err(check.invalid(
            at(&["noise", "confidence"]),
            format!("{} is not strictly between 0.5 and 1", n.confidence),
            "use a confidence such as 0.95",
        ));
    }
    if !(0.0..=1.0).contains(&n.pass_score) {
        return Err(check.invalid(
            at(&["noise", "pass_score"]),
            format!("{} is not a score between 0 and 1", n.pass_score),
            "use 1.0 (full marks) or a lower bar such as 0.5",
        ));
    }
    Ok(())
}

fn split(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let val = config.val_fraction;
    if !(val > 0.0 && val < 1.0) {
        return Err(check.invalid(
            at(&["val_fraction"]),
            format!("{val} is not strictly between 0 and 1"),
            "use a fraction such as 0.3",
        ));
    }
    let test = config.test_fraction;
    if !(0.0..1.0).contains(&test) {
        return Err(check.invalid(
            at(&["test_fraction"]),
            format!("{test} is not between 0 (included) and 1"),
            "use 0 for no test split, or a fraction such as 0.2",
        ));
    }
    if val + test >= 1.0 {
        return Err(check.invalid(
            at(&["test_fraction"]),
            format!("val_fraction {val} + test_fraction {test} leaves no training tasks"),
            "make the two fractions add up to less than 1",
        ));
    }
    let selection = config.selection_fraction;
    if !(0.0..1.0).contains(&selection) {
        return Err(check.invalid(
            at(&["selection_fraction"]),
            format!("{selection} is not between 0 (included) and 1"),
            "use 0 for no selection split, or a fraction such as 0.2",
        ));
    }
    if val + test + selection >= 1.0 {
        return Err(check.invalid(
            at(&["selection_fraction"]),
            format!(
                "val_fraction {val} + test_fraction {test} + selection_fraction {selection} leaves no training tasks"
            ),
            "make the three fractions add up to less than 1",
        ));
    }
    Ok(())
}

/// The range of one count of the `optimizer` block: up to `most`, the most that makes sense;
/// more is a typo, not a plan, and some counts multiply the work of every step (a `parents:
/// 100000` once planned a hundred thousand mutations a step and ran out of memory).
struct Limit {
    /// The key under `optimizer`.
    key: &'static str,
    /// The value in a block.
    of: fn(&OptimizerConfig) -> usize,
    /// Whether 0 is refused.
    least_one: bool,
    /// The largest value accepted.
    most: usize,
    /// What the value counts, after the number (`parents a step`).
    unit: &'static str,
    /// Why more makes no sense.
    why: &'static str,
    /// What to write instead.
    fix: &'static str,
}

/// Every count of the `optimizer` block that has an upper bound, in the order they are
/// checked. `min_patch_edits` is bounded by `max_patch_edits`, and the run clamps
/// `minibatch_size` to the train split and `parents` to what the Pareto frontier offers.
const LIMITS: [Limit; 7] = [
    Limit {
        key: "rounds",
        of: |o| o.rounds,
        least_one: true,
        most: 10_000,
        unit: "rounds",
        why: "each round asks the optimizer model and scores a candidate on validation",
        fix: "use a number such as 6; patience and the budget stop a search that stalls",
    },
    Limit {
        key: "minibatch_size",
        of: |o| o.minibatch_size,
        least_one: true,
        most: 10_000,
        unit: "train tasks a minibatch",
        why: "a reflection shows the optimizer model a few failures, and the run uses at most the whole train split anyway",
        fix: "use a number such as 4",
    },
    Limit {
        key: "max_edits_per_round",
        of: |o| o.max_edits_per_round,
        least_one: true,
        most: 32,
        unit: "proposals a round",
        why: "each proposal is a request to the optimizer model and a candidate to score",
        fix: "use 1 to 4 (default 1)",
    },
    Limit {
        key: "parents",
        of: |o| o.parents,
        least_one: true,
        most: 16,
        unit: "parents a step",
        why: "each parent is scored on a minibatch and mutated, and a step draws its parents from the Pareto frontier, which holds a few candidates",
        fix: "use 1 to 4 (default 1)",
    },
    Limit {
        key: "max_merges",
        of: |o| o.max_merges,
        least_one: false,
        most: 100,
        unit: "merges",
        why: "a step tries at most one merge, and only two frontier candidates with a common ancestor can merge",
        fix: "use a number such as 5 (default), or set 'merge: false'",
    },
    Limit {
        key: "deepen",
        of: |o| o.deepen,
        least_one: false,
        most: 8,
        unit: "deeper reflections",
        why: "each level reflects again on a fresh minibatch before one validation, and 2 measured best",
        fix: "use 0 to 3 (default 2)",
    },
    Limit {
        key: "max_patch_edits",
        of: |o| o.max_patch_edits,
        least_one: false,
        most: 32,
        unit: "edits a step",
        why: "a patch of more edits than that is a rewrite, which skillopt exists to avoid",
        fix: "use a number such as 4 (default)",
    },
];

fn optimizer(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let o = &config.optimizer;
    for limit in &LIMITS {
        check.count(limit, o)?;
    }
    check.workers(at(&["optimizer", "max_workers"]), o.max_workers)?;
    if !(o.min_delta.is_finite() && o.min_delta >= 0.0) {
        return Err(check.invalid(
            at(&["optimizer", "min_delta"]),
            format!("{} is not 0 or more", o.min_delta),
            "use 0.0 (any strict improvement) or a small positive margin such as 0.01",
        ));
    }
    search(config, check)?;
    budget(config, check)?;
    check.positive_seconds(
        at(&["optimizer", "params", "timeout"]),
        Some(o.params.timeout),
    )
}

/// The keys of the `gepa` and `skillopt` searches.
fn search(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let o = &config.optimizer;
    if o.name.parse() == Ok(OptimizerKind::Gepa)
        && !["light", "medium", "heavy"].contains(&o.auto.trim().to_lowercase().as_str())
    {
        return Err(check.invalid(
            at(&["optimizer", "auto"]),
            format!("'{}' is not a budget preset", o.auto),
            "use light, medium or heavy, or set optimizer.max_metric_calls",
        ));
    }
    check.at_least_one(at(&["optimizer", "min_patch_edits"]), o.min_patch_edits)?;
    if o.max_patch_edits < o.min_patch_edits {
        return Err(check.invalid(
            at(&["optimizer", "max_patch_edits"]),
            format!(
                "{} is less than min_patch_edits {}",
                o.max_patch_edits, o.min_patch_edits
            ),
            "the limit decays from max_patch_edits to min_patch_edits: make max the larger",
        ));
    }
    for (i, entry) in o.protected.iter().enumerate() {
        if protected_name(entry).is_none() {
            return Err(check.invalid(
                at(&["optimizer", "protected"]).index(i),
                format!("{entry:?} names no section"),
                "write the heading of a section of the skill, with or without its `## ` (e.g. Safety), or a reference file's path (references/policy.md)",
            ));
        }
    }
    for (key, value) in [
        ("max_metric_calls", o.max_metric_calls),
        ("max_skill_tokens", o.max_skill_tokens.map(|t| t as u64)),
    ] {
        if value == Some(0) {
            return Err(check.invalid(
                at(&["optimizer", key]),
                "0 leaves the search nothing to spend".to_owned(),
                "use 1 or more, or remove the key",
            ));
        }
    }
    Ok(())
}

fn budget(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let b = &config.optimizer.budget;
    for (key, value) in [("max_calls", b.max_calls), ("max_tokens", b.max_tokens)] {
        if value == Some(0) {
            return Err(check.invalid(
                at(&["optimizer", "budget", key]),
                "0 would stop the run before its first call".to_owned(),
                "use 1 or more, or remove the key for no limit",
            ));
        }
    }
    for (key, value, example) in [
        ("max_usd", b.max_usd, "e.g. 5.0 (dollars)"),
        ("max_minutes", b.max_minutes, "e.g. 30 (minutes)"),
    ] {
        if let Some(v) = value
            && !(v.is_finite() && v > 0.0)
        {
            return Err(check.invalid(
                at(&["optimizer", "budget", key]),
                format!("{v} is not greater than 0"),
                &format!("use a positive number, {example}, or remove the key for no limit"),
            ));
        }
    }
    Ok(())
}

fn metric(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let m = &config.metric;
    if let Some(golden) = &m.golden {
        check.weight(at(&["metric", "golden", "weight"]), golden.weight)?;
    }
    if let Some(programmatic) = &m.programmatic {
        check.weight(
            at(&["metric", "programmatic", "weight"]),
            programmatic.weight,
        )?;
        if programmatic.checks.is_empty() {
            return Err(check.invalid(
                at(&["metric", "programmatic", "checks"]),
                "programmatic needs a non-empty 'checks' list".to_owned(),
                "add e.g. 'checks: [is_valid_json]'",
            ));
        }
    }
    if let Some(judge) = &m.judge {
        check.weight(at(&["metric", "judge", "weight"]), judge.weight)?;
        let criteria: Vec<(&str, f64)> = judge
            .criteria
            .iter()
            .map(|c| (c.name.as_str(), c.weight))
            .collect();
        check.weighted_entries(
            &["metric", "judge", "criteria"],
            &criteria,
            "judge needs a non-empty 'criteria' list",
            "add e.g. 'criteria: [{name: correctness, description: \"Is the answer right?\"}]'",
        )?;
    }
    if let Some(systemone) = &m.systemone {
        check.weight(at(&["metric", "systemone", "weight"]), systemone.weight)?;
        check.positive_seconds(at(&["metric", "systemone", "timeout"]), systemone.timeout)?;
        if let Some(threshold) = systemone.threshold
            && !(0.0..=1.0).contains(&threshold)
        {
            return Err(check.invalid(
                at(&["metric", "systemone", "threshold"]),
                format!("{threshold} is not a probability between 0 and 1"),
                "use e.g. 0.5, or remove it to score with the probabilities themselves",
            ));
        }
        let checks: Vec<(&str, f64)> = systemone
            .checks
            .iter()
            .map(|c| (c.name.as_str(), c.weight))
            .collect();
        check.weighted_entries(
            &["metric", "systemone", "checks"],
            &checks,
            "systemone needs a non-empty 'checks' list",
            "add e.g. 'checks: [{name: strict_json, question: \"Is the output only JSON?\"}]'",
        )?;
    }
    command_metric(config, check)
}

fn harness(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let h = &config.harness;
    if !(h.temperature.is_finite() && h.temperature >= 0.0) {
        return Err(check.invalid(
            at(&["harness", "temperature"]),
            format!("{} is not 0 or more", h.temperature),
            "use e.g. 0.0 for repeatable answers",
        ));
    }
    if h.max_tokens == 0 {
        return Err(check.invalid(
            at(&["harness", "max_tokens"]),
            "0 is not allowed".to_owned(),
            "use e.g. 2048",
        ));
    }
    check.workers(at(&["harness", "max_workers"]), h.max_workers)?;
    check.positive_seconds(at(&["harness", "timeout"]), h.timeout)?;
    if h.harness_type == HarnessType::Subprocess && h.command.as_ref().is_none_or(|c| c.is_empty())
    {
        // Point at the command if one is written (but empty), else at the type that needs it.
        let line_of = if h.command.is_some() {
            at(&["harness", "command"])
        } else {
            at(&["harness", "type"])
        };
        return Err(ConfigError::MissingKey {
            place: check.0.place(&check.moved(line_of).0),
            key: check.key_name("harness.command"),
            fix: "a subprocess harness needs the command to run; add e.g. 'command: [python, run_skill.py, \"{skill_file}\"]' under harness".to_owned(),
        });
    }
    process_harness(config, check)
}

/// The rules of `harness.executor`: a Ray cluster runs processes, so it needs a process
/// harness and an address; `local` takes no Ray keys.
fn executor(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let h = &config.harness;
    let e = &h.executor;
    match e.executor_type {
        ExecutorType::Local => {
            let ray_keys = [
                ("address", e.address.is_some()),
                ("max_workers", e.max_workers.is_some()),
                ("num_cpus", e.num_cpus.is_some()),
            ];
            if let Some((key, _)) = ray_keys.iter().find(|(_, set)| *set) {
                return Err(check.invalid(
                    at(&["harness", "executor", key]),
                    format!("the local executor runs rollouts on this machine and has no '{key}'"),
                    "set 'type: ray' to run them on a Ray cluster, or remove the key",
                ));
            }
        }
        ExecutorType::Ray => {
            if h.harness_type == HarnessType::Api {
                return Err(check.invalid(
                    at(&["harness", "executor", "type"]),
                    "the api harness makes a model call and runs no process for a cluster to run".to_owned(),
                    "remove 'executor' (batch mode, 'batch: true' in the provider block, is the way to scale model calls), or use a process harness (subprocess, claude_code, codex, gemini_cli)",
                ));
            }
            let address = e.address.as_deref().map(str::trim).unwrap_or_default();
            if !(address.starts_with("http://") || address.starts_with("https://")) {
                return Err(check.invalid(
                    at(&["harness", "executor", if e.address.is_some() { "address" } else { "type" }]),
                    format!("a Ray executor needs the address of the cluster's dashboard, got {:?}", e.address.as_deref().unwrap_or("none")),
                    "add 'address: http://127.0.0.1:8265' (the dashboard of `ray start --head`; its Job Submission API takes the jobs)",
                ));
            }
            if let Err(problem) = reqwest::Url::parse(address) {
                return Err(check.invalid(
                    at(&["harness", "executor", "address"]),
                    // Not quoted: an address may carry credentials.
                    format!("the address is not a URL ({problem})"),
                    "write the dashboard's address as http://HOST:PORT, e.g. http://127.0.0.1:8265",
                ));
            }
            if let Some(workers) = e.max_workers {
                check.workers(at(&["harness", "executor", "max_workers"]), workers)?;
            }
            if let Some(cpus) = e.num_cpus
                && !(cpus.is_finite() && cpus >= 0.0)
            {
                return Err(check.invalid(
                    at(&["harness", "executor", "num_cpus"]),
                    format!("{cpus} is not 0 or more"),
                    "use e.g. 1 (a core per rollout) or 0 (no reservation)",
                ));
            }
        }
    }
    Ok(())
}

/// The rules of the harnesses that run a child process, and of keys that only some of them
/// read (a key that would be silently ignored is an error, as unknown keys are).
fn process_harness(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let h = &config.harness;
    let kind = h.harness_type;
    if kind != HarnessType::Subprocess {
        if h.command.is_some() {
            return Err(check.invalid(
                at(&["harness", "command"]),
                format!("the {} harness does not run a command of yours", kind.name()),
                "remove 'command', or set 'type: subprocess' to run your own command (agent CLIs take executable, model and extra_args)",
            ));
        }
        if h.input_via == InputVia::Arg {
            return Err(check.invalid(
                at(&["harness", "input_via"]),
                format!("the {} harness passes the input itself", kind.name()),
                "remove 'input_via', or set 'type: subprocess'",
            ));
        }
    }
    if kind == HarnessType::Api && h.skill_mode == SkillMode::Installed {
        return Err(check.invalid(
            at(&["harness", "skill_mode"]),
            "the api harness sends the skill as the system prompt; there is no agent to install it for".to_owned(),
            "remove 'skill_mode', or use an agent harness (type: claude_code, codex, gemini_cli or subprocess)",
        ));
    }
    executor(config, check)?;
    if h.skill_mode == SkillMode::Installed && h.cwd.is_some() {
        return Err(check.invalid(
            at(&["harness", "cwd"]),
            "skill_mode: installed runs the agent in a fresh temporary workspace holding the skill, so 'cwd' cannot apply".to_owned(),
            "remove 'cwd', or use 'skill_mode: prompt' to run in that folder",
        ));
    }
    if let Some(command) = &h.command {
        let argv = argv_of(check, command, at(&["harness", "command"]))?;
        if h.input_via == InputVia::Arg
            && !argv
                .iter()
                .any(|a| a.contains("{input}") || a.contains("{input_file}"))
        {
            return Err(check.invalid(
                at(&["harness", "input_via"]),
                "input_via: arg passes the input only through the command's placeholders, and the command has neither {input} nor {input_file}".to_owned(),
                "add \"{input}\" or \"{input_file}\" to the command, or use 'input_via: stdin'",
            ));
        }
    }
    Ok(())
}

/// The argv of a command, or an error pointing at it when a string cannot be split.
fn argv_of(check: &Checker, command: &Command, path: KeyPath) -> Result<Vec<String>, ConfigError> {
    command.argv().map_err(|problem| {
        check.invalid(
            path,
            problem.to_string(),
            "write the command as a list, e.g. [python3, score.py]",
        )
    })
}

/// `metric.command`: a command to run, a positive weight and timeout.
fn command_metric(config: &RunConfig, check: &Checker) -> Result<(), ConfigError> {
    let Some(metric) = &config.metric.command else {
        return Ok(());
    };
    check.weight(at(&["metric", "command", "weight"]), metric.weight)?;
    check.positive_seconds(at(&["metric", "command", "timeout"]), Some(metric.timeout))?;
    match &metric.command {
        Some(command) if !command.is_empty() => {
            argv_of(check, command, at(&["metric", "command", "command"]))?;
            Ok(())
        }
        _ => Err(ConfigError::MissingKey {
            place: check.0.place(&at(&["metric", "command"]).0),
            key: "metric.command.command".to_owned(),
            fix: "the command metric needs the program to run; add e.g. 'command: [python3, score.py]' under metric.command".to_owned(),
        }),
    }
}
