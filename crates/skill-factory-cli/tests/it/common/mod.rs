//! What the test modules share: the binary under a clean environment, reading what
//! `optimize` printed, and the external programs some tests check us against.

pub mod artifacts;
pub mod chaos;
pub mod external_tool;
pub mod receipts;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use skill_factory_llm::PROVIDERS;
use skill_factory_llm::systemone::SYSTEMONE_PROVIDERS;
use skill_factory_llm::systemone::provider::CLOUDFLARE_ACCOUNT_ENV;

/// Where the agent CLIs and installers look for their global configuration: a developer's
/// own must not decide where a test installs a skill.
const AGENT_CONFIG_VARIABLES: [&str; 3] = ["CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"];

/// Every variable of the test's environment that could change what the binary does: each
/// provider's key and endpoint variable, each System One key, every `SKILL_FACTORY_*`
/// variable (model overrides, recording, replay, logging), every `MLFLOW_*` variable (a
/// tracking server a run would report to), and the agents' config folders.
/// Read from the provider tables, so a provider added later is scrubbed too.
pub fn foreign_variables() -> Vec<OsString> {
    let tables = PROVIDERS
        .iter()
        .flat_map(|provider| [provider.key_env, provider.base_url_env])
        .chain(SYSTEMONE_PROVIDERS.iter().map(|provider| provider.key_env))
        .flatten()
        .chain([CLOUDFLARE_ACCOUNT_ENV])
        .chain(AGENT_CONFIG_VARIABLES)
        .map(OsString::from);
    let ours = std::env::vars_os().map(|(name, _)| name).filter(|name| {
        let name = name.to_string_lossy();
        name.starts_with("SKILL_FACTORY_") || name.starts_with("MLFLOW_")
    });
    tables.chain(ours).collect()
}

/// Removes [`foreign_variables`] from a command's environment.
pub fn scrub(command: &mut std::process::Command) -> &mut std::process::Command {
    for name in foreign_variables() {
        command.env_remove(name);
    }
    command
}

/// `skill-factory` as a child process under a clean environment.
pub fn process() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_skill-factory"));
    scrub(&mut command);
    command
}

/// `skill-factory` under a clean environment, as an `assert_cmd` command.
pub fn bin() -> assert_cmd::Command {
    assert_cmd::Command::from_std(process())
}

/// What a finished `skill-factory` printed, and its exit code.
pub struct Ran {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

/// What a finished command printed, stdout then stderr.
pub fn printed(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the command to its end.
pub fn run(command: &mut assert_cmd::Command) -> Ran {
    let output = command.output().expect("skill-factory runs");
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A seed skill (`skill_text` its body) and `n` labelled tasks in `dir`, as `skill.md` and
/// `data.jsonl`; returns the answers a mock should give, every third one wrong, so the
/// expected score is known.
pub fn labelled_tasks(dir: &Path, skill_text: &str, n: usize) -> HashMap<String, String> {
    std::fs::write(
        dir.join("skill.md"),
        format!("---\nname: echo\ndescription: Echo.\n---\n{skill_text}\n"),
    )
    .unwrap();
    let mut dataset = String::new();
    let mut answers = HashMap::new();
    for i in 0..n {
        let input = format!("message number {i}");
        dataset.push_str(&format!(
            "{{\"id\": \"t{i}\", \"input\": \"{input}\", \"expected\": \"label{i}\"}}\n"
        ));
        let answer = if i % 3 == 0 {
            "wrong".to_string()
        } else {
            format!("label{i}")
        };
        answers.insert(input, answer);
    }
    std::fs::write(dir.join("data.jsonl"), dataset).unwrap();
    answers
}

/// The seed skill most tests give [`labelled_tasks`].
pub const LABEL_SKILL: &str = "Answer with the label.";

/// A mock model server that knows the answers of `n` labelled tasks written into `dir` with
/// the seed skill `skill_text` ([`labelled_tasks`]), otherwise as `config` says.
pub async fn labelled_mock(
    dir: &Path,
    skill_text: &str,
    n: usize,
    config: skill_factory_mock::MockConfig,
) -> skill_factory_mock::MockServer {
    skill_factory_mock::MockServer::start(skill_factory_mock::MockConfig {
        answers: labelled_tasks(dir, skill_text, n),
        ..config
    })
    .await
    .unwrap()
}

/// Copies `examples/<name>` into `dest`, made as needed: its files and sub-folders (a trigger
/// example's distractor skills), but not a `runs/` folder a run left there.
pub fn copy_example(name: &str, dest: &Path) {
    copy_folder(&repo_root().join("examples").join(name), dest);
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "runs" {
                copy_folder(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of the offline pr-mismatch example in `dest` whose workspace is `ws` inside the
/// copy (the example's own is outside the clone); returns its `config.offline.yaml`.
pub fn offline_pr_mismatch(dest: &Path) -> PathBuf {
    copy_example("pr-mismatch", dest);
    let config = dest.join("config.offline.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("workspace: ../../runs/pr-mismatch-offline", "workspace: ws"),
    )
    .unwrap();
    config
}

/// The repository's root folder (examples, gallery, `.env.example`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A JSON file read and parsed (`result.json`, `events.jsonl` lines are not this).
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `skill-factory <command> -c config` under a clean environment, for more arguments to follow.
pub fn with_config(command: &str, config: &Path) -> assert_cmd::Command {
    let mut with_config = bin();
    with_config.args([command, "-c"]).arg(config);
    with_config
}

/// `evaluate -c config`, run to its end.
pub fn evaluate(config: &Path) -> Ran {
    run(&mut with_config("evaluate", config))
}

/// The string at `key` of each element of a JSON array (`items` → their `id`s); panics
/// where one is missing, as the tests that read them expect every element to have it.
pub fn strings<'a>(array: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    array
        .as_array()
        .unwrap()
        .iter()
        .map(|element| element[key].as_str().unwrap())
        .collect()
}

/// `optimize -c config -o out` with `args`, run to its end.
pub fn optimize(args: &[&str], config: &Path, out: &Path) -> Ran {
    run(bin()
        .arg("optimize")
        .arg("-c")
        .arg(config)
        .arg("-o")
        .arg(out)
        .args(args))
}

/// Whether a run folder's search turned a scored edit down: a `candidate_scored` event of a
/// round that scored below the run's best (a round's losing proposal, or a round not kept).
pub fn an_edit_was_turned_down(folder: &Path) -> bool {
    let result = read_json(&folder.join("result.json"));
    let best = result["best_score"].as_f64().unwrap_or(0.0);
    std::fs::read_to_string(folder.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|e| {
            e["event"] == "candidate_scored"
                && e["round"].as_u64() > Some(0)
                && e["val_score"].as_f64().is_some_and(|score| score < best)
        })
}

/// `evaluate -c config` is refused with exit 2 and a message holding every `wanted` text
/// (`name` says which case failed).
pub fn assert_refused(config: &Path, name: &str, wanted: &[&str]) {
    let ran = run(&mut with_config("evaluate", config));
    assert_eq!(ran.code, Some(2), "{name}: {}{}", ran.stdout, ran.stderr);
    for want in wanted {
        assert!(
            ran.stderr.contains(want),
            "{name}: {want:?} not in {}",
            ran.stderr
        );
    }
}

/// A port on 127.0.0.1 that was free a moment ago: a server may take it, or, left alone,
/// nothing listens there.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
