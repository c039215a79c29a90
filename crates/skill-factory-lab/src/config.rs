//! The `kind: classifier` config: what to tune, on which data, against which model.
//!
//! Every relative path resolves against the config file's directory, so a config runs the same
//! from anywhere. Unknown keys are errors at every level (the reference tool ignores them in
//! `splits`, `objective` and `optimizer`, and turns a typo in `systemone` into a silently
//! offline lab), each naming the key, the block and the keys allowed there.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use skill_factory_llm::systemone::{
    AnswerCache, DecisionModel, SCRIPTED_PROVIDER, SystemOneClient, SystemOneSettings, scripted,
};
use skill_factory_llm::{
    CacheMode, CacheStore, CachedModel, ChatModel, ProviderSettings, build_client,
};

use crate::LabError;
use crate::dataset::Labels;
use crate::lab::{Lab, LabSettings};
use crate::objective::Objective;
use crate::optimizer::OptimizerSettings;
use crate::splits::SplitPlan;

/// The proposer's answers, in the workspace.
pub const PROPOSALS_FILE: &str = "proposals.sqlite";

const TOP_KEYS: &[&str] = &[
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
];
const SPLIT_KEYS: &[&str] = &[
    "fractions",
    "held_out_sources",
    "held_out_groups",
    "read_before_split",
    "salt",
];
const CLIENT_KEYS: &[&str] = &[
    "provider",
    "model",
    "api_key",
    "base_url",
    "account_id",
    "timeout",
    "max_retries",
    "script",
];
const LAB_KEYS: &[&str] = &[
    "per_request",
    "concurrency",
    "usd_per_million_input_tokens",
    "max_usd",
    "chars_per_token",
];

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
    /// The proposer model of reflective rounds, as written.
    pub optimizer_provider: Option<Value>,
    /// The declarative policy (`policy:`, inline or a YAML file), as written, where, and the
    /// folder a command of it runs in; read against the probe set's questions by
    /// [`crate::workspace::Project::policy`].
    pub policy: Option<(Value, String, PathBuf)>,
    /// Questions kept in every candidate (for policies), never selected.
    pub keep_questions: Option<Vec<String>>,
}

/// The error for a key of `block` that is not among `allowed`.
fn unknown_keys(
    origin: &str,
    block: &str,
    map: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), LabError> {
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !allowed.contains(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(LabError::invalid(format!(
        "{origin}: unknown {block} keys: {}; the keys allowed there are: {}",
        unknown.join(", "),
        allowed.join(", ")
    )))
}

/// Reads a config block as a mapping (absent or null = empty).
fn block<'a>(
    origin: &str,
    root: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, LabError> {
    match root.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(LabError::invalid(format!(
            "{origin}: '{key}' must be a mapping, not {}",
            skill_factory_pycompat::repr::type_name(other)
        ))),
    }
}

fn text(
    origin: &str,
    map: &Map<String, Value>,
    key: &str,
    block: &str,
) -> Result<Option<String>, LabError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(LabError::invalid(format!(
            "{origin}: {block}{key} must be text, not {}",
            skill_factory_pycompat::repr::type_name(other)
        ))),
    }
}

fn number(
    origin: &str,
    map: &Map<String, Value>,
    key: &str,
    block: &str,
) -> Result<Option<f64>, LabError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(LabError::invalid(format!(
            "{origin}: {block}{key} must be a number, not {}",
            skill_factory_pycompat::repr::type_name(other)
        ))),
    }
}

fn count(
    origin: &str,
    map: &Map<String, Value>,
    key: &str,
    block: &str,
) -> Result<Option<usize>, LabError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64().map(|n| n as usize)),
        Some(other) => Err(LabError::invalid(format!(
            "{origin}: {block}{key} must be a whole number of at least 0, not {other}"
        ))),
    }
}

fn strings(
    origin: &str,
    map: &Map<String, Value>,
    key: &str,
    block: &str,
) -> Result<Option<Vec<String>>, LabError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(LabError::invalid(format!(
                    "{origin}: {block}{key} must be a list of text, and {other} is not text"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(LabError::invalid(format!(
            "{origin}: {block}{key} must be a list, not {}",
            skill_factory_pycompat::repr::type_name(other)
        ))),
    }
}

/// Loads and checks the classifier config at `path`.
pub fn load(path: &Path) -> Result<ClassifierConfig, LabError> {
    let origin = path.display().to_string();
    let raw = crate::files::read_text(
        path,
        crate::files::CONFIG,
        ": pass the classifier config with -c",
    )?;
    let root: Value = serde_saphyr::from_str(&raw)
        .map_err(|e| LabError::invalid(format!("{origin}: not valid YAML: {e}")))?;
    let Value::Object(root) = root else {
        return Err(LabError::invalid(format!(
            "{origin}: the config must be a mapping of keys (kind, dataset, probeset, ...)"
        )));
    };
    unknown_keys(&origin, "classifier config", &root, TOP_KEYS)?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let resolve = |p: String| {
        let p = PathBuf::from(p);
        if p.is_relative() { dir.join(p) } else { p }
    };
    let required = |key: &str| -> Result<PathBuf, LabError> {
        text(&origin, &root, key, "")?.map(&resolve).ok_or_else(|| {
            LabError::invalid(format!(
                "{origin}: classifier config is missing '{key}' (the {} file)",
                if key == "dataset" {
                    "JSONL examples"
                } else {
                    "seed probe set"
                }
            ))
        })
    };
    let dataset = required("dataset")?;
    let probeset = required("probeset")?;
    let name = match text(&origin, &root, "name", "")? {
        Some(name) if !name.trim().is_empty() => name,
        _ => std::fs::canonicalize(&dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "classifier".to_string()),
    };
    let mut labels = Labels::default();
    if let Some(map) = block(&origin, &root, "labels")? {
        unknown_keys(&origin, "labels", map, &["positive", "negative"])?;
        if let Some(p) = text(&origin, map, "positive", "labels.")? {
            labels.positive = p;
        }
        if let Some(n) = text(&origin, map, "negative", "labels.")? {
            labels.negative = n;
        }
    }
    let workspace = text(&origin, &root, "workspace", "")?
        .map(&resolve)
        .unwrap_or_else(|| dir.join("runs").join(folder_name(&name)));

    let splits = split_plan(&origin, block(&origin, &root, "splits")?)?;
    let (systemone, script, lab) =
        systemone(&origin, block(&origin, &root, "systemone")?, &resolve)?;
    let objective = Objective::from_json(root.get("objective").filter(|v| !v.is_null()))
        .map_err(|e| LabError::invalid(format!("{origin}: objective: {e}")))?;
    let optimizer = OptimizerSettings::from_json(block(&origin, &root, "optimizer")?)
        .map_err(|e| LabError::invalid(format!("{origin}: optimizer: {e}")))?;
    let policy = match root.get("policy").filter(|p| !p.is_null()) {
        None => None,
        Some(Value::String(file)) if file.contains(".py") => {
            return Err(LabError::invalid(format!(
                "{origin}: policy: {file}: Python policy functions cannot run in this tool; write the rules as a declarative policy (levels and rules, inline or in a YAML file: see `policy` in the README's classifier section)"
            )));
        }
        Some(Value::String(file)) => {
            let path = resolve(file.clone());
            let folder = path.parent().map_or_else(|| dir.clone(), Path::to_path_buf);
            Some((
                crate::policy::read_file(&path)?,
                path.display().to_string(),
                folder,
            ))
        }
        Some(inline @ Value::Object(_)) => {
            Some((inline.clone(), format!("{origin}: policy"), dir.clone()))
        }
        Some(other) => {
            return Err(LabError::invalid(format!(
                "{origin}: policy must be a map (name, levels, rules) or the path of a YAML file holding one, not {}",
                skill_factory_pycompat::repr::type_name(other)
            )));
        }
    };
    let optimizer_provider = root
        .get("optimizer_provider")
        .filter(|v| !v.is_null())
        .cloned();
    Ok(ClassifierConfig {
        path: path.to_path_buf(),
        name,
        dataset,
        labels,
        probeset,
        pool: text(&origin, &root, "pool", "")?.map(&resolve),
        workspace,
        splits,
        systemone,
        script,
        lab,
        objective,
        optimizer,
        optimizer_provider,
        policy,
        keep_questions: strings(&origin, &root, "keep_questions", "")?,
    })
}

fn split_plan(origin: &str, map: Option<&Map<String, Value>>) -> Result<SplitPlan, LabError> {
    let mut plan = SplitPlan::default();
    let Some(map) = map else {
        return Ok(plan);
    };
    unknown_keys(origin, "splits", map, SPLIT_KEYS)?;
    if let Some(fractions) = block(origin, map, "fractions")? {
        unknown_keys(origin, "splits.fractions", fractions, &["train", "val"])?;
        if let Some(train) = number(origin, fractions, "train", "splits.fractions.")? {
            plan.train = train;
        }
        if let Some(val) = number(origin, fractions, "val", "splits.fractions.")? {
            plan.val = val;
        }
    }
    let set = |key: &str| -> Result<_, LabError> {
        Ok(strings(origin, map, key, "splits.")?
            .unwrap_or_default()
            .into_iter()
            .collect())
    };
    plan.held_out_sources = set("held_out_sources")?;
    plan.held_out_groups = set("held_out_groups")?;
    plan.read_before_split = set("read_before_split")?;
    plan.salt = text(origin, map, "salt", "splits.")?.unwrap_or_default();
    plan.validate()
        .map_err(|e| LabError::invalid(format!("{origin}: {e}")))?;
    Ok(plan)
}

type SystemOneBlock = (SystemOneSettings, Option<PathBuf>, LabSettings);

fn systemone(
    origin: &str,
    map: Option<&Map<String, Value>>,
    resolve: &dyn Fn(String) -> PathBuf,
) -> Result<SystemOneBlock, LabError> {
    let mut settings = SystemOneSettings::default();
    let mut lab = LabSettings::default();
    let Some(map) = map else {
        return Ok((settings, None, lab));
    };
    let allowed: Vec<&str> = CLIENT_KEYS.iter().chain(LAB_KEYS).copied().collect();
    unknown_keys(origin, "systemone", map, &allowed)?;
    let b = "systemone.";
    settings.provider = text(origin, map, "provider", b)?;
    settings.model = text(origin, map, "model", b)?;
    settings.api_key = text(origin, map, "api_key", b)?;
    settings.base_url = text(origin, map, "base_url", b)?;
    settings.account_id = text(origin, map, "account_id", b)?;
    if let Some(timeout) = number(origin, map, "timeout", b)? {
        if !(timeout > 0.0 && timeout.is_finite()) {
            return Err(LabError::invalid(format!(
                "{origin}: systemone.timeout must be a number of seconds above 0"
            )));
        }
        settings.timeout = std::time::Duration::from_secs_f64(timeout);
    }
    if let Some(retries) = count(origin, map, "max_retries", b)? {
        settings.max_retries = retries as u32;
    }
    let script = text(origin, map, "script", b)?.map(resolve);
    let scripted_provider = settings
        .provider
        .as_deref()
        .is_some_and(|p| p.trim().eq_ignore_ascii_case(SCRIPTED_PROVIDER));
    if scripted_provider && script.is_none() {
        return Err(LabError::invalid(format!(
            "{origin}: systemone.provider is scripted but systemone.script is missing; name the YAML file of rules"
        )));
    }
    if !scripted_provider && script.is_some() {
        return Err(LabError::invalid(format!(
            "{origin}: systemone.script only applies to provider: scripted"
        )));
    }
    if let Some(n) = count(origin, map, "per_request", b)? {
        lab.per_request = n;
    }
    if let Some(n) = count(origin, map, "concurrency", b)? {
        lab.concurrency = n;
    }
    if let Some(n) = count(origin, map, "chars_per_token", b)? {
        lab.chars_per_token = n;
    }
    if let Some(price) = number(origin, map, "usd_per_million_input_tokens", b)? {
        lab.usd_per_million_input_tokens = price;
    }
    lab.max_usd = number(origin, map, "max_usd", b)?;
    lab.validate()
        .map_err(|e| LabError::invalid(format!("{origin}: {e}")))?;
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
    ) -> Result<Arc<dyn DecisionModel>, String> {
        if let Some(script) = &self.script {
            return scripted(script, &self.model())
                .map(|m| Arc::new(m) as Arc<dyn DecisionModel>)
                .map_err(|e| e.to_string());
        }
        SystemOneClient::new(&self.systemone, env)
            .map(|c| Arc::new(c) as Arc<dyn DecisionModel>)
            .map_err(|e| e.to_string())
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
        let Some(block) = &self.optimizer_provider else {
            return Ok(None);
        };
        let origin = self.path.display();
        let mut settings: ProviderSettings = serde_json::from_value(block.clone())
            .map_err(|e| LabError::invalid(format!("{origin}: optimizer_provider: {e}")))?;
        // Like every path of the config, a fake provider's script is beside the config.
        if let (Some(script), Some(dir)) = (settings.script.as_mut(), self.path.parent())
            && Path::new(script.as_str()).is_relative()
        {
            *script = dir.join(script.as_str()).display().to_string();
        }
        let client = build_client(&settings, "", env)
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
            Err(reason) => Lab::offline(self.model(), reason, cache, self.lab.clone()),
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
    fn broken_yaml_is_reported_as_a_yaml_error_of_the_file() {
        let (_dir, broken) = write("kind: classifier\nprobeset: [\n");
        let error = load(&broken).unwrap_err().to_string();
        assert!(error.contains("not valid YAML"), "{error}");
        assert!(error.contains("config.yaml"), "{error}");
    }

    #[test]
    fn unknown_keys_are_refused_at_every_level_with_the_keys_allowed() {
        for (extra, expected) in [
            ("typo: 1\n", "unknown classifier config keys: typo"),
            (
                "systemone: {provder: x}\n",
                "unknown systemone keys: provder",
            ),
            (
                "splits: {salt: a, fraction: {}}\n",
                "unknown splits keys: fraction",
            ),
            ("objective: {fpr: 0.1}\n", "unknown objective keys: fpr"),
            ("optimizer: {round: 1}\n", "unknown optimizer keys: round"),
            ("labels: {postive: x}\n", "unknown labels keys: postive"),
        ] {
            let (_dir, path) = write(&format!("{MINIMAL}{extra}"));
            let error = load(&path).unwrap_err().to_string();
            assert!(error.contains(expected), "{extra}: {error}");
            assert!(error.contains("config.yaml"), "{error}");
        }
    }

    #[test]
    fn dataset_and_probeset_are_required() {
        let (_dir, path) = write("kind: classifier\nprobeset: p.json\n");
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains("missing 'dataset'"), "{error}");
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
}
