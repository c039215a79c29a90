//! The `kind: classifier` config: what to tune, on which data, against which model.
//!
//! Every relative path resolves against the config file's directory, so a config runs the same
//! from anywhere. It is read by the loader skill mode uses (`skill_factory_config`), so every
//! error names the file, the line and the key path: unknown keys are errors at every level
//! (the reference tool ignores them in `splits`, `objective` and `optimizer`, and turns a typo
//! in `systemone` into a silently offline lab), each with the closest valid key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use skill_factory_config::locate::{Located, Locator, Unusable, parse_path};
use skill_factory_config::scalar::ScalarText;
use skill_factory_llm::systemone::{
    AnswerCache, DecisionModel, SCRIPTED_PROVIDER, SystemOneClient, SystemOneError,
    SystemOneSettings, scripted,
};
use skill_factory_llm::{
    CacheMode, CacheStore, CachedModel, ChatModel, ProviderSettings, build_client,
};

use crate::LabError;
use crate::answers::lab::{Lab, LabSettings};
use crate::data::dataset::Labels;
use crate::data::splits::SplitPlan;
use crate::optimizer::objective::{Objective, ObjectiveFile};
use crate::optimizer::{OptimizerFile, OptimizerSettings};

/// The proposer's answers, in the workspace.
pub const PROPOSALS_FILE: &str = "proposals.sqlite";

/// A loaded classifier config, paths resolved.
#[derive(Debug, Clone)]
pub struct ClassifierConfig {
    /// The config file.
    pub path: PathBuf,
    /// The run and probe-set name (default: the config's directory name).
    pub name: String,
    /// The labelled examples (JSONL).
    pub dataset: PathBuf,
    /// The class names used in the dataset.
    pub labels: Labels,
    /// The seed probe set.
    pub probeset: PathBuf,
    /// More questions to select from.
    pub pool: Option<PathBuf>,
    /// Where the cache, reports and seal live (default `runs/<name>` beside the config).
    pub workspace: PathBuf,
    /// How examples are split.
    pub splits: SplitPlan,
    /// How to reach the model.
    pub systemone: SystemOneSettings,
    /// The script of the `scripted` provider.
    pub script: Option<PathBuf>,
    /// How the lab batches and prices.
    pub lab: LabSettings,
    /// What the optimizer maximizes, under which constraints.
    pub objective: Objective,
    /// The optimizer's settings.
    pub optimizer: OptimizerSettings,
    /// The proposer model of reflective rounds, a fake provider's script resolved.
    pub optimizer_provider: Option<ProviderSettings>,
    /// The declarative policy (`policy:`, inline or a YAML file), as written, where, and the
    /// folder a command of it runs in; read against the probe set's questions by
    /// [`crate::run::workspace::Project::policy`].
    pub policy: Option<(Value, String, PathBuf)>,
    /// The file `policy:` names, when it names one (not when the policy is written inline).
    pub policy_file: Option<PathBuf>,
    /// Questions kept in every candidate (for policies), never selected.
    pub keep_questions: Option<Vec<String>>,
}

/// A classifier config file (`kind: classifier`): what to tune, on which data, against which model.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// `classifier`: marks the file as a classifier config.
    #[serde(default, rename = "kind")]
    _kind: Option<ScalarText>,
    /// Name of the run and of the probe set it produces (default: the name of the config
    /// file's folder).
    #[serde(default)]
    name: Option<ScalarText>,
    /// Path of the labelled examples, a JSONL file, relative to the config file (required).
    dataset: ScalarText,
    /// The class names the dataset's labels use (default `positive` and `negative`).
    #[serde(default)]
    labels: Option<LabelsFile>,
    /// Path of the seed probe set (JSON), relative to the config file; a `threshold: null` in
    /// it is fitted on train (required).
    probeset: ScalarText,
    /// Path of more questions the optimizer may select from, a question bank in JSON (default:
    /// none, only the seed's questions and those the workspace already holds).
    #[serde(default)]
    pool: Option<ScalarText>,
    /// Folder of the answer cache, the reports and the seal, relative to the config file
    /// (default `runs/<name>` beside the config file).
    #[serde(default)]
    workspace: Option<ScalarText>,
    /// How examples are split into train, val, test and held-out (default: half of the groups
    /// to train, a quarter to val, the rest to test).
    #[serde(default)]
    splits: Option<SplitsFile>,
    /// How to reach the System One model, and how requests are batched and priced (default:
    /// provider `typesafe`, model `jev-latest`).
    #[serde(default)]
    systemone: Option<SystemOneFile>,
    /// What the optimizer maximizes and the constraints a candidate must respect (default:
    /// validation recall at a 1% false-positive budget).
    #[serde(default)]
    objective: Option<ObjectiveFile>,
    /// The declarative policy that turns scores and answers into levels: a map (`name`,
    /// `levels`, and `rules` or `command`) or the path of a YAML file holding one (default: the
    /// threshold policy, levels `pass` and `flag`).
    #[serde(default)]
    policy: Option<Value>,
    /// How the optimizer searches: rounds, patience, question caps, margins (default: every
    /// key's own default).
    #[serde(default)]
    optimizer: Option<OptimizerFile>,
    /// The LLM that proposes new questions in reflective rounds (`name`, `model`, `api_key`,
    /// ...; default: none, selection only, no reflective rounds).
    #[serde(default)]
    optimizer_provider: Option<ProviderSettings>,
    /// Ids of questions kept in every candidate for the policy to read, never selected
    /// (default: the seed's questions that its score does not read).
    #[serde(default, deserialize_with = "optional_list")]
    keep_questions: Option<Vec<String>>,
}

/// The `labels` block: the class names the dataset uses.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct LabelsFile {
    /// The label of positive examples, those to flag (default `positive`).
    #[serde(default)]
    positive: Option<ScalarText>,
    /// The label of negative examples, those to let pass (default `negative`).
    #[serde(default)]
    negative: Option<ScalarText>,
}

/// The `splits` block: how examples are split, by a salted hash of their group.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SplitsFile {
    /// Shares of the groups that go to train and val; test gets the rest (default train 0.5,
    /// val 0.25).
    #[serde(default)]
    fractions: Option<FractionsFile>,
    /// Sources whose examples all go to held-out, never used for tuning (default: none).
    #[serde(default, deserialize_with = "optional_list")]
    held_out_sources: Option<Vec<String>>,
    /// Groups whose examples all go to held-out, never used for tuning (default: none).
    #[serde(default, deserialize_with = "optional_list")]
    held_out_groups: Option<Vec<String>>,
    /// Ids or groups of examples read while designing the probe set: they go to train,
    /// whatever else says (default: none).
    #[serde(default, deserialize_with = "optional_list")]
    read_before_split: Option<Vec<String>>,
    /// Text put before each group before hashing; the only knob that reshuffles the split
    /// (default: empty).
    #[serde(default)]
    salt: Option<ScalarText>,
}

/// The `splits.fractions` block: the shares of train and val.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct FractionsFile {
    /// Share of the groups that go to train, between 0 and 1 excluded (default 0.5).
    #[serde(default)]
    train: Option<f64>,
    /// Share of the groups that go to val, between 0 and 1 excluded; train + val must be at
    /// most 1 (default 0.25).
    #[serde(default)]
    val: Option<f64>,
}

/// The `systemone` block: how to reach the System One model, and how requests are batched.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SystemOneFile {
    /// The host: `typesafe`, `openrouter`, `vercel`, `cloudflare`, `ollama`, `custom`, or
    /// `scripted` for offline answers from rules (default `typesafe`).
    #[serde(default)]
    provider: Option<ScalarText>,
    /// The model asked, also recorded with every cached answer (default: the provider's,
    /// `jev-latest` for `typesafe`).
    #[serde(default)]
    model: Option<ScalarText>,
    /// The API key; wins over every environment variable (default: `SKILL_FACTORY_SYSTEMONE_KEY`,
    /// else the provider's variable, e.g. `TYPESAFE_API_KEY`).
    #[serde(default)]
    api_key: Option<ScalarText>,
    /// The endpoint URL, in place of the provider's (default: the provider's; required for
    /// `custom`).
    #[serde(default)]
    base_url: Option<ScalarText>,
    /// The Cloudflare account id, for `cloudflare` (default: the `CLOUDFLARE_ACCOUNT_ID`
    /// variable).
    #[serde(default)]
    account_id: Option<ScalarText>,
    /// Seconds one attempt may take, above 0 (default 60).
    #[serde(default)]
    timeout: Option<f64>,
    /// Retries after the first attempt, on 429, 5xx and network failures (default 4).
    #[serde(default)]
    max_retries: Option<u32>,
    /// With `provider: scripted`: the YAML file of rules that answers in place of a model,
    /// relative to the config file (default: none; only that provider takes one).
    #[serde(default)]
    script: Option<ScalarText>,
    /// Most questions in one request, at least 1; the example's text is billed once per
    /// request (default 40).
    #[serde(default)]
    per_request: Option<usize>,
    /// Requests in flight at once, at least 1 (default 8).
    #[serde(default)]
    concurrency: Option<usize>,
    /// Price of a million input tokens in dollars, for cost estimates and `max_usd`
    /// (default 0.042).
    #[serde(default)]
    usd_per_million_input_tokens: Option<f64>,
    /// Most dollars one command may spend on requests, checked on estimates before each is
    /// sent (default: no cap).
    #[serde(default)]
    max_usd: Option<f64>,
    /// Characters counted as one token in cost estimates, at least 1 (default 4).
    #[serde(default)]
    chars_per_token: Option<usize>,
}

/// A list of scalars as text, or nothing.
fn optional_list<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    Option::<Vec<ScalarText>>::deserialize(deserializer)
        .map(|list| list.map(|items| items.into_iter().map(|item| item.0).collect()))
}

/// How to add the required keys of a classifier config.
const FIXES: &[(&str, &str)] = &[
    (
        "dataset",
        "add e.g. 'dataset: dataset.jsonl' (the JSONL examples, relative to the config file)",
    ),
    (
        "probeset",
        "add e.g. 'probeset: probeset.json' (the seed probe set, relative to the config file)",
    ),
];

/// A value of the config that reads but cannot be used, at its line.
struct Checker<'a>(Located<'a>);

impl Checker<'_> {
    fn error(&self, key: &str, message: impl Into<String>) -> LabError {
        LabError::from(self.0.unreadable(&parse_path(key), message))
    }

    fn unusable(&self, unusable: Unusable) -> LabError {
        LabError::from(self.0.unusable(unusable))
    }
}

/// The JSON Schema of a classifier config file, from the structs that read it: every key,
/// its type, its default and what it is.
pub fn config_schema() -> schemars::Schema {
    schemars::schema_for!(ConfigFile)
}

/// Loads and checks the classifier config at `path`.
pub fn load(path: &Path) -> Result<ClassifierConfig, LabError> {
    let origin = path.display().to_string();
    let raw = crate::files::read_text(
        path,
        skill_factory_io::input::CONFIG,
        ": pass the classifier config with -c",
    )?;
    let file: ConfigFile = skill_factory_config::yaml::parse(&raw, path, FIXES)?;
    let locator = Locator::new(&raw);
    let check = Checker(Located {
        file: path,
        locator: &locator,
    });
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let resolve = |p: String| {
        let p = PathBuf::from(p);
        if p.is_relative() { dir.join(p) } else { p }
    };
    let dataset = resolve(file.dataset.0);
    let probeset = resolve(file.probeset.0);
    let name = match file.name.map(|n| n.0) {
        Some(name) if !name.trim().is_empty() => name,
        _ => std::fs::canonicalize(&dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "classifier".to_string()),
    };
    let mut labels = Labels::default();
    if let Some(given) = file.labels {
        if let Some(positive) = given.positive {
            labels.positive = positive.0;
        }
        if let Some(negative) = given.negative {
            labels.negative = negative.0;
        }
    }
    let workspace = file
        .workspace
        .map(|w| resolve(w.0))
        .unwrap_or_else(|| dir.join("runs").join(folder_name(&name)));
    let splits = split_plan(&check, file.splits)?;
    let (systemone, script, lab) = systemone(&check, file.systemone, &resolve)?;
    let objective = Objective::from_file(file.objective).map_err(|e| check.unusable(e))?;
    let optimizer = OptimizerSettings::from_file(file.optimizer).map_err(|e| check.unusable(e))?;
    let mut optimizer_provider = file.optimizer_provider;
    // Like every path of the config, a fake provider's script is beside the config.
    if let Some(script) = optimizer_provider
        .as_mut()
        .and_then(|settings| settings.script.as_mut())
        && Path::new(script.as_str()).is_relative()
    {
        *script = dir.join(script.as_str()).display().to_string();
    }
    let mut policy_file = None;
    let policy = match file.policy.filter(|p| !p.is_null()) {
        None => None,
        Some(Value::String(file)) if file.contains(".py") => {
            return Err(check.error(
                "policy",
                format!("{file}: Python policy functions cannot run in this tool; write the rules as a declarative policy (levels and rules, inline or in a YAML file: see `policy` in docs/guide/classifier.md)"),
            ));
        }
        Some(Value::String(file)) => {
            let path = resolve(file);
            let folder = path.parent().map_or_else(|| dir.clone(), Path::to_path_buf);
            let read = (
                crate::measure::policy::read_file(&path)?,
                path.display().to_string(),
                folder,
            );
            policy_file = Some(path);
            Some(read)
        }
        Some(inline @ Value::Object(_)) => Some((inline, format!("{origin}: policy"), dir.clone())),
        Some(other) => {
            return Err(check.error(
                "policy",
                format!(
                    "policy must be a map (name, levels, rules) or the path of a YAML file holding one, not {}",
                    skill_factory_pycompat::repr::type_name(&other)
                ),
            ));
        }
    };
    Ok(ClassifierConfig {
        path: path.to_path_buf(),
        name,
        dataset,
        labels,
        probeset,
        pool: file.pool.map(|p| resolve(p.0)),
        workspace,
        splits,
        systemone,
        script,
        lab,
        objective,
        optimizer,
        optimizer_provider,
        policy,
        policy_file,
        keep_questions: file.keep_questions,
    })
}

fn split_plan(check: &Checker<'_>, given: Option<SplitsFile>) -> Result<SplitPlan, LabError> {
    let mut plan = SplitPlan::default();
    let Some(given) = given else {
        return Ok(plan);
    };
    if let Some(fractions) = given.fractions {
        if let Some(train) = fractions.train {
            plan.train = train;
        }
        if let Some(val) = fractions.val {
            plan.val = val;
        }
    }
    plan.held_out_sources = given
        .held_out_sources
        .unwrap_or_default()
        .into_iter()
        .collect();
    plan.held_out_groups = given
        .held_out_groups
        .unwrap_or_default()
        .into_iter()
        .collect();
    plan.read_before_split = given
        .read_before_split
        .unwrap_or_default()
        .into_iter()
        .collect();
    plan.salt = given.salt.map(|s| s.0).unwrap_or_default();
    plan.validate()
        .map_err(|e| check.error("splits", e.to_string()))?;
    Ok(plan)
}

type SystemOneBlock = (SystemOneSettings, Option<PathBuf>, LabSettings);

fn systemone(
    check: &Checker<'_>,
    given: Option<SystemOneFile>,
    resolve: &dyn Fn(String) -> PathBuf,
) -> Result<SystemOneBlock, LabError> {
    let mut settings = SystemOneSettings::default();
    let mut lab = LabSettings::default();
    let Some(given) = given else {
        return Ok((settings, None, lab));
    };
    let text = |value: Option<ScalarText>| value.map(|v| v.0);
    settings.provider = text(given.provider);
    settings.model = text(given.model);
    settings.api_key = text(given.api_key);
    settings.base_url = text(given.base_url);
    settings.account_id = text(given.account_id);
    if let Some(timeout) = given.timeout {
        if !(timeout > 0.0 && timeout.is_finite()) {
            return Err(check.error(
                "systemone.timeout",
                "systemone.timeout must be a number of seconds above 0",
            ));
        }
        settings.timeout = std::time::Duration::from_secs_f64(timeout);
    }
    if let Some(retries) = given.max_retries {
        settings.max_retries = retries;
    }
    let script = text(given.script).map(resolve);
    let scripted_provider = settings
        .provider
        .as_deref()
        .is_some_and(|p| p.trim().eq_ignore_ascii_case(SCRIPTED_PROVIDER));
    if scripted_provider && script.is_none() {
        return Err(check.error(
            "systemone.provider",
            "systemone.provider is scripted but systemone.script is missing; name the YAML file of rules",
        ));
    }
    if !scripted_provider && script.is_some() {
        return Err(check.error(
            "systemone.script",
            "systemone.script only applies to provider: scripted",
        ));
    }
    if let Some(n) = given.per_request {
        lab.per_request = n;
    }
    if let Some(n) = given.concurrency {
        lab.concurrency = n;
    }
    if let Some(n) = given.chars_per_token {
        lab.chars_per_token = n;
    }
    if let Some(price) = given.usd_per_million_input_tokens {
        lab.usd_per_million_input_tokens = price;
    }
    lab.max_usd = given.max_usd;
    lab.validate()
        .map_err(|e| check.error("systemone", e.to_string()))?;
    Ok((settings, script, lab))
}

impl ClassifierConfig {
    /// The model whose answers the lab asks and reads.
    pub fn model(&self) -> String {
        if let Some(model) = self
            .systemone
            .model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
        {
            return model.to_string();
        }
        let provider = self.systemone.provider.as_deref().unwrap_or("typesafe");
        skill_factory_llm::systemone::provider::find_systemone_provider(provider)
            .map_or("jev-latest", |p| p.default_model)
            .to_string()
    }

    /// The answer cache of the workspace.
    pub fn answers_path(&self) -> PathBuf {
        self.workspace.join("answers.jsonl")
    }

    /// The decision model, or why there is none (no key, ...): the lab then reads the cache
    /// only. Variables are read through `env`.
    pub fn decision_model(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn DecisionModel>, SystemOneError> {
        if let Some(script) = &self.script {
            return scripted(script, &self.model()).map(|m| Arc::new(m) as Arc<dyn DecisionModel>);
        }
        SystemOneClient::new(&self.systemone, env).map(|c| Arc::new(c) as Arc<dyn DecisionModel>)
    }

    /// The lab of this config: online when a model can be reached, else offline with the
    /// reason. The answer cache is opened (and a torn last line repaired) here.
    pub fn lab(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Lab, LabError> {
        let cache = Arc::new(AnswerCache::open(&self.answers_path())?);
        self.lab_on(cache, env)
    }

    /// The proposer of reflective rounds (`optimizer_provider`), answers kept in the
    /// workspace's `proposals.sqlite`, so a second identical run asks nothing; none without
    /// the key.
    pub fn proposer(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Arc<dyn ChatModel>>, LabError> {
        let Some(settings) = &self.optimizer_provider else {
            return Ok(None);
        };
        let origin = self.path.display();
        let client = build_client(settings, "", env)
            .map_err(|e| LabError::invalid(format!("{origin}: optimizer_provider: {e}")))?;
        if client.provider() == "fake" {
            // Scripted replies answer in order; a cache would replay the first.
            return Ok(Some(client));
        }
        let file = self.workspace.join(PROPOSALS_FILE);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| LabError::io(parent, e))?;
        }
        let store = CacheStore::open(&file, CacheMode::ReadWrite)
            .map_err(|e| LabError::invalid(e.to_string()))?;
        Ok(Some(Arc::new(CachedModel::new(client, Arc::new(store)))))
    }

    /// A lab for this config's `systemone` settings with the model `model` instead, on the
    /// same answer cache as `cache` (for `lab recalibrate`).
    pub fn lab_for_model(
        &self,
        model: &str,
        cache: Arc<AnswerCache>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Lab, LabError> {
        let mut other = self.clone();
        other.systemone.model = Some(model.to_string());
        other.lab_on(cache, env)
    }

    fn lab_on(
        &self,
        cache: Arc<AnswerCache>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Lab, LabError> {
        match self.decision_model(env) {
            Ok(model) => Ok(Lab::online(model, cache, self.lab.clone())),
            Err(reason) => Lab::offline(self.model(), reason.to_string(), cache, self.lab.clone()),
        }
    }
}

/// The default workspace's folder for a probe set `name`: the name itself, as the Python tool
/// has it, but never a path. A separator or NUL becomes `-`, and a name of dots only becomes
/// `classifier`, so that `name: ../../x` cannot move the workspace out of `runs/`.
fn folder_name(name: &str) -> String {
    let folder: String = name
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | '\0') {
                '-'
            } else {
                c
            }
        })
        .collect();
    if folder.trim_matches('.').is_empty() {
        "classifier".to_string()
    } else {
        folder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_names_the_workspace_folder_but_never_a_path() {
        for (name, folder) in [
            ("pr-mismatch", "pr-mismatch"),
            ("My Probe", "My Probe"),
            ("../../x", "..-..-x"),
            ("/etc/cron.d", "-etc-cron.d"),
            ("..", "classifier"),
            ("a\\b\0c", "a-b-c"),
        ] {
            assert_eq!(folder_name(name), folder, "{name:?}");
        }
    }

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    const MINIMAL: &str = "kind: classifier\ndataset: d.jsonl\nprobeset: p.json\n";

    #[test]
    fn a_classifier_config_is_recognised_and_its_paths_resolve_beside_it() {
        let (dir, path) = write(&format!(
            "{MINIMAL}name: demo\nlabels: {{positive: bad, negative: good}}\nworkspace: ws\n"
        ));
        let config = load(&path).unwrap();
        assert_eq!(config.labels.positive, "bad");
        assert_eq!(config.workspace, dir.path().join("ws"));
        assert_eq!(config.dataset, dir.path().join("d.jsonl"));
        assert!(config.optimizer_provider.is_none());
        assert_eq!(config.model(), "jev-latest");
    }

    #[test]
    fn broken_yaml_is_reported_at_its_line_of_the_file() {
        let (_dir, broken) = write("kind: classifier\nprobeset: [\n");
        let error = load(&broken).unwrap_err().to_string();
        assert!(error.contains("config.yaml line 2"), "{error}");
        assert!(error.contains("'probeset'"), "{error}");
    }

    #[test]
    fn unknown_keys_are_refused_at_every_level_with_their_line_and_the_closest_key() {
        for (extra, expected) in [
            ("typo: 1\n", "unknown key 'typo' in the top level"),
            (
                "systemone: {provder: x}\n",
                "unknown key 'provder' in systemone",
            ),
            (
                "splits: {salt: a, fraction: {}}\n",
                "unknown key 'fraction' in splits",
            ),
            ("objective: {fpr: 0.1}\n", "unknown key 'fpr' in objective"),
            (
                "objective: {constraints: [{max_fp: 1}]}\n",
                "unknown key 'max_fp' in objective.constraints[0]",
            ),
            (
                "optimizer: {round: 1}\n",
                "unknown key 'round' in optimizer",
            ),
            ("labels: {postive: x}\n", "unknown key 'postive' in labels"),
        ] {
            let (_dir, path) = write(&format!("{MINIMAL}{extra}"));
            let error = load(&path).unwrap_err().to_string();
            assert!(error.contains(expected), "{extra}: {error}");
            assert!(error.contains("config.yaml line 4"), "{error}");
        }
        for (extra, suggestion) in [
            ("systemone: {provder: x}\n", "did you mean 'provider'?"),
            ("splits: {fraction: {}}\n", "did you mean 'fractions'?"),
            ("labels: {postive: x}\n", "did you mean 'positive'?"),
            (
                "objective: {fpr_budgt: 0.1}\n",
                "did you mean 'fpr_budget'?",
            ),
            ("optimizer: {round: 1}\n", "did you mean 'rounds'?"),
            ("probset: p.json\n", "did you mean 'probeset'?"),
        ] {
            let (_dir, path) = write(&format!("{MINIMAL}{extra}"));
            let error = load(&path).unwrap_err().to_string();
            assert!(error.contains(suggestion), "{extra}: {error}");
        }
    }

    #[test]
    fn dataset_and_probeset_are_required() {
        let (_dir, path) = write("kind: classifier\nprobeset: p.json\n");
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains("missing required key 'dataset'"), "{error}");
        assert!(
            error.contains("add e.g. 'dataset: dataset.jsonl'"),
            "{error}"
        );
    }

    #[test]
    fn the_scripted_provider_needs_a_script_and_only_it_takes_one() {
        let (_dir, path) = write(&format!("{MINIMAL}systemone: {{provider: scripted}}\n"));
        assert!(
            load(&path)
                .unwrap_err()
                .to_string()
                .contains("systemone.script is missing")
        );
        let (_dir, path) = write(&format!("{MINIMAL}systemone: {{script: f.yaml}}\n"));
        assert!(
            load(&path)
                .unwrap_err()
                .to_string()
                .contains("only applies to provider: scripted")
        );
    }

    #[test]
    fn a_missing_key_makes_the_lab_offline_with_the_variable_to_set() {
        let (dir, path) = write(&format!("{MINIMAL}systemone: {{provider: typesafe}}\n"));
        let config = load(&path).unwrap();
        let lab = config.lab(&|_| None).unwrap();
        let reason = lab.offline_reason().unwrap();
        assert!(
            reason.contains("no key for typesafe: set TYPESAFE_API_KEY"),
            "{reason}"
        );
        assert!(
            !dir.path().join("runs").exists(),
            "an offline lab writes nothing"
        );
    }

    #[test]
    fn python_policies_are_refused_with_what_to_do() {
        let (_dir, path) = write(&format!("{MINIMAL}policy: policy.py:judge\n"));
        let error = load(&path).unwrap_err().to_string();
        assert!(
            error.contains("policy.py:judge") && error.contains("declarative policy"),
            "{error}"
        );
    }

    #[test]
    fn a_policy_is_inline_or_a_file_beside_the_config() {
        let (dir, path) = write(&format!(
            "{MINIMAL}policy: {{levels: [pass, flag], rules: [{{level: flag, when: {{flagged: true}}}}]}}\n"
        ));
        let inline = load(&path).unwrap().policy.unwrap();
        assert_eq!(
            inline.2,
            dir.path(),
            "a command of it runs beside the config"
        );
        assert_eq!(inline.0["levels"][1], "flag");
        assert!(inline.1.ends_with("config.yaml: policy"), "{}", inline.1);
        std::fs::write(dir.path().join("p.yaml"), "levels: [a, b]\nrules: []\n").unwrap();
        std::fs::write(&path, format!("{MINIMAL}policy: p.yaml\n")).unwrap();
        let file = load(&path).unwrap().policy.unwrap();
        assert!(file.1.ends_with("p.yaml"), "{}", file.1);
        std::fs::write(&path, format!("{MINIMAL}policy: missing.yaml\n")).unwrap();
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains("missing.yaml not found"), "{error}");
        std::fs::write(&path, format!("{MINIMAL}policy: [1]\n")).unwrap();
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains("policy must be a map"), "{error}");
    }

    #[test]
    fn the_schema_lists_every_key_with_a_description() {
        let schema = serde_json::to_value(config_schema()).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        let keys: Vec<&str> = properties.keys().map(String::as_str).collect();
        for key in [
            "kind",
            "name",
            "dataset",
            "labels",
            "probeset",
            "pool",
            "workspace",
            "splits",
            "systemone",
            "objective",
            "policy",
            "optimizer",
            "optimizer_provider",
            "keep_questions",
        ] {
            assert!(properties.contains_key(key), "{key} missing from {keys:?}");
        }
        assert_eq!(properties.len(), 14, "{keys:?}");
        assert_eq!(schema["additionalProperties"], Value::Bool(false));
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["dataset", "probeset"]);
        let mut objects = vec![("the top level".to_string(), &schema)];
        let defs = schema["$defs"].as_object().unwrap();
        objects.extend(defs.iter().map(|(name, def)| (name.clone(), def)));
        for name in [
            "LabelsFile",
            "SplitsFile",
            "FractionsFile",
            "SystemOneFile",
            "ObjectiveFile",
            "ConstraintFile",
            "OptimizerFile",
        ] {
            assert!(defs.contains_key(name), "{name} missing from $defs");
        }
        for (name, object) in objects {
            let Some(properties) = object.get("properties").and_then(Value::as_object) else {
                continue;
            };
            for (key, property) in properties {
                let description = property["description"].as_str().unwrap_or_default();
                assert!(
                    !description.trim().is_empty(),
                    "{name}.{key} has no description"
                );
            }
        }
    }
}
