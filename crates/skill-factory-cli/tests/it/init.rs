//! `skill-factory init`, `completions` and `man` through the binary: the files init writes,
//! the provider it picks, that it never replaces a file, tasks drafted by a mock model, and
//! that every command it prints runs: `evaluate` on a local config asks for the model file,
//! and on drafted tasks against the mock it scores them; `triggers draft` replaces the stub.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use skill_factory_mock::{MockConfig, MockServer};

use crate::common::{Ran, bin, run};

const SKILL: &str = "---\nname: receipt-total\ndescription: Gives the total amount of a pasted receipt.\n---\nReply with the total only.\n";

/// `skill-factory init ARGS` run in `dir`, under the clean environment.
fn init(dir: &Path, args: &[&str]) -> Ran {
    run(bin().current_dir(dir).arg("init").args(args))
}

/// The words of the command line `init` printed that starts with `prefix`.
fn printed(stdout: &str, prefix: &str) -> Vec<String> {
    let line = stdout
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"));
    shlex::split(line).unwrap()
}

/// A printed `skill-factory ...` command, run in `dir`.
fn run_printed(dir: &Path, words: &[String]) -> Ran {
    assert_eq!(words[0], "skill-factory");
    run(bin().current_dir(dir).args(&words[1..]))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every section of the guide that a config's comments link (`docs/guide/<chapter>.md#<section>`)
/// is a heading of that chapter.
fn guide_links_resolve(config: &str) {
    let links: Vec<&str> = config
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|word| word.starts_with("docs/guide/"))
        .map(|word| word.trim_end_matches(['.', ',']))
        .collect();
    assert!(!links.is_empty(), "no link to the guide in:\n{config}");
    let root = crate::common::repo_root();
    for link in links {
        let problem = crate::docs_links::link_problem(&root, Path::new("config.yaml"), link);
        assert_eq!(problem, None, "{link}");
    }
}

#[test]
fn a_bare_skill_without_keys_gets_a_local_config_whose_evaluate_asks_for_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    let ran = init(dir, &["SKILL.md"]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);

    let config = read(&dir.join("config.yaml"));
    for want in [
        "skill: SKILL.md\n",
        "dataset: dataset.jsonl\n",
        "test_fraction: 0.2\n",
        "name: local\n",
        "model: models/SmolLM2-135M-Instruct.Q4_1.gguf\n",
        "`skill-factory models fetch`",
        "name: llm_loop",
        "reflection: compact",
        "mode: normalized",
        "  # judge:",
        "docs/guide/start.md#start-from-your-own-skill",
        "docs/guide/configuration.md#local-models",
        "docs/guide/configuration.md#configuration",
    ] {
        assert!(config.contains(want), "{want:?} not in:\n{config}");
    }
    guide_links_resolve(&config);
    // Every line of the dataset is an example that says to replace it.
    let dataset = read(&dir.join("dataset.jsonl"));
    let lines: Vec<Value> = dataset
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for line in &lines {
        assert!(
            line["input"].as_str().unwrap().contains("REPLACE IT"),
            "{line}"
        );
        assert!(line["expected"].as_str().unwrap().contains("REPLACE IT"));
    }
    // The trigger set stub reads as a trigger set: two of each kind.
    let set = skill_factory_core::trigger::parse_trigger_set(
        &read(&dir.join("trigger_set.json")),
        "trigger_set.json",
    )
    .unwrap();
    let should: Vec<bool> = set
        .tasks
        .iter()
        .map(|t| t.metadata["should_trigger"] == true)
        .collect();
    assert_eq!(should, [true, true, false, false]);
    assert!(
        set.tasks[2].input.contains("receipt"),
        "{}",
        set.tasks[2].input
    );

    assert!(
        ran.stdout.contains("Replace the 4 example tasks"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("measures nothing"), "{}", ran.stdout);
    assert_eq!(
        printed(&ran.stdout, "skill-factory models fetch"),
        ["skill-factory", "models", "fetch"]
    );
    assert_eq!(
        printed(&ran.stdout, "skill-factory triggers draft"),
        [
            "skill-factory",
            "triggers",
            "draft",
            "SKILL.md",
            "-c",
            "config.yaml",
            "-o",
            "trigger_set.json",
            "--force"
        ]
    );
    // The printed evaluate loads the config and stops at the model file, saying how to get it.
    let evaluate = printed(&ran.stdout, "skill-factory evaluate");
    assert_eq!(evaluate, ["skill-factory", "evaluate", "-c", "config.yaml"]);
    let ran = run_printed(dir, &evaluate);
    assert_eq!(ran.code, Some(2), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr
            .contains("cannot open model file models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("skill-factory models fetch"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_skill_folder_or_another_dir_gets_paths_relative_to_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir(root.join("receipt-total")).unwrap();
    std::fs::write(root.join("receipt-total/SKILL.md"), SKILL).unwrap();

    let ran = init(root, &["receipt-total"]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let config = read(&root.join("receipt-total/config.yaml"));
    assert!(config.contains("skill: SKILL.md\n"), "{config}");
    // The model is where `models fetch`, run where init ran, puts it.
    assert!(
        config.contains("model: ../models/SmolLM2-135M-Instruct.Q4_1.gguf\n"),
        "{config}"
    );
    assert!(
        ran.stdout.contains("export and install carry whole"),
        "{}",
        ran.stdout
    );
    let evaluate = printed(&ran.stdout, "skill-factory evaluate");
    assert_eq!(evaluate[3], "receipt-total/config.yaml");
    let ran = run_printed(root, &evaluate);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("models fetch"), "{}", ran.stderr);

    let ran = init(root, &["receipt-total/SKILL.md", "--dir", "work/first"]);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let config = read(&root.join("work/first/config.yaml"));
    assert!(
        config.contains("skill: ../../receipt-total/SKILL.md\n"),
        "{config}"
    );
    assert!(!ran.stdout.contains("carry whole"), "{}", ran.stdout);
    let ran = run_printed(root, &printed(&ran.stdout, "skill-factory evaluate"));
    assert!(
        ran.stderr.contains("SmolLM2-135M-Instruct.Q4_1.gguf")
            && ran.stderr.contains("models fetch"),
        "{}",
        ran.stderr
    );
}

#[test]
fn init_never_replaces_a_file_and_then_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    std::fs::write(dir.join("trigger_set.json"), "[]\n").unwrap();
    let ran = init(dir, &["SKILL.md"]);
    assert_eq!(ran.code, Some(2), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr
            .contains("trigger_set.json already exists: init never replaces a file"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("--dir"), "{}", ran.stderr);
    assert_eq!(read(&dir.join("trigger_set.json")), "[]\n");
    assert!(!dir.join("config.yaml").exists());
    assert!(!dir.join("dataset.jsonl").exists());
}

#[test]
fn a_skill_without_a_name_or_description_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("SKILL.md"), "---\nname: bare\n---\nDo it.\n").unwrap();
    let ran = init(dir, &["SKILL.md"]);
    assert_eq!(ran.code, Some(2), "{}", ran.stdout);
    assert!(
        ran.stderr
            .contains("SKILL.md: error [description-required]"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("Add `description:"), "{}", ran.stderr);
    std::fs::write(dir.join("SKILL.md"), "Just a body.\n").unwrap();
    let ran = init(dir, &["SKILL.md"]);
    assert_eq!(ran.code, Some(2));
    assert!(ran.stderr.contains("has no 'name'"), "{}", ran.stderr);
    let ran = init(dir, &["."]);
    assert_eq!(ran.code, Some(2));
    std::fs::create_dir(dir.join("empty")).unwrap();
    let ran = init(dir, &["empty"]);
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("the folder has no SKILL.md"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        2,
        "nothing written"
    );
}

#[test]
fn the_provider_follows_the_keys_found_and_no_key_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let skill = tmp.path().join("skill");
    std::fs::create_dir(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), SKILL).unwrap();
    let secret = "sk-ant-init-test-0123456789";
    std::fs::write(skill.join(".env"), format!("ANTHROPIC_API_KEY={secret}\n")).unwrap();

    // A key in the .env beside the skill, another in the environment: the first of the list
    // wins, and neither is written.
    let ran = run(bin()
        .current_dir(tmp.path())
        .env("OPENAI_API_KEY", "sk-openai-init-test")
        .args(["init", "skill", "--dir", "a"]));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let config = read(&tmp.path().join("a/config.yaml"));
    assert!(
        config.contains("provider:\n  name: anthropic\n  model: claude-haiku-4-5-20251001\n"),
        "{config}"
    );
    assert!(
        config.contains("optimizer_provider:\n  name: anthropic\n  model: claude-sonnet-5\n"),
        "{config}"
    );
    assert!(config.contains("ANTHROPIC_API_KEY"), "{config}");
    guide_links_resolve(&config);
    assert!(
        !config.contains(secret) && !config.contains("sk-openai"),
        "{config}"
    );
    // That .env is not one a run with a/config.yaml reads: init says so.
    assert!(
        ran.stdout.contains(
            "ANTHROPIC_API_KEY is set in skill/.env, which a run with this config does not read"
        ),
        "{}",
        ran.stdout
    );

    std::fs::remove_file(skill.join(".env")).unwrap();
    let ran = run(bin()
        .current_dir(tmp.path())
        .env("OPENAI_API_KEY", "sk-openai-init-test")
        .args(["init", "skill", "--dir", "b"]));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let config = read(&tmp.path().join("b/config.yaml"));
    assert!(
        config.contains("provider:\n  name: openai\n  model: gpt-5-mini\n"),
        "{config}"
    );
    assert!(!config.contains("sk-openai"), "{config}");

    // --provider and --model choose instead; the config loads.
    let ran = init(
        tmp.path(),
        &[
            "init-skill-not-there",
            "--provider",
            "ollama",
            "--model",
            "qwen2.5:7b",
        ],
    );
    assert_eq!(ran.code, Some(2));
    let ran = init(
        tmp.path(),
        &["skill", "--provider", "ollama", "--model", "qwen2.5:7b"],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let config = read(&skill.join("config.yaml"));
    assert!(
        config.contains("provider:\n  name: ollama\n  model: \"qwen2.5:7b\"\n"),
        "{config}"
    );
    assert!(!config.contains("optimizer_provider"), "{config}");
    let ran =
        run(bin()
            .current_dir(tmp.path())
            .args(["cache", "stats", "-c", "skill/config.yaml"]));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);

    let ran = init(tmp.path(), &["skill", "--dir", "c", "--provider", "ollama"]);
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("give the model with --model"),
        "{}",
        ran.stderr
    );
    let ran = init(tmp.path(), &["skill", "--dir", "c", "--provider", "olama"]);
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("Did you mean 'ollama'"),
        "{}",
        ran.stderr
    );
    assert!(!tmp.path().join("c").exists());
}

/// The user message of the one request `server` received.
fn the_prompt(server: &MockServer) -> String {
    let received = server.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let messages = received[0].body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafted_tasks_come_from_the_configured_model_and_the_printed_commands_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    // The key of the provider given with --provider, in the .env beside the skill.
    std::fs::write(dir.join(".env"), "OPENAI_API_KEY=init-test-key\n").unwrap();
    let with_key = |answers: HashMap<String, String>| MockConfig {
        answers,
        require_api_key: Some("init-test-key".into()),
        ..MockConfig::default()
    };
    let args = |server: &MockServer| -> Vec<String> {
        [
            "SKILL.md",
            "--draft-tasks",
            "12",
            "--provider",
            "openai-compatible",
            "--model",
            "drafter",
            "--base-url",
        ]
        .map(String::from)
        .into_iter()
        .chain([format!("{}/v1", server.base_url())])
        .collect()
    };
    let init_with = |server: &MockServer| -> Ran {
        let args = args(server);
        tokio::task::block_in_place(|| {
            init(dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
        })
    };

    // A model that answers no list: exit 3 (the model failed, not the input), nothing written.
    let silent = MockServer::start(with_key(HashMap::new())).await.unwrap();
    let ran = init_with(&silent);
    assert_eq!(ran.code, Some(3), "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stderr.contains("usable task"), "{}", ran.stderr);
    assert!(ran.stderr.contains("Nothing was written"), "{}", ran.stderr);
    assert!(!dir.join("config.yaml").exists() && !dir.join("dataset.jsonl").exists());
    let prompt = the_prompt(&silent);
    assert!(prompt.contains("SKILL NAME: receipt-total"), "{prompt}");
    assert!(prompt.contains("Reply with the total only."), "{prompt}");
    assert!(prompt.contains("Write 12 tasks"), "{prompt}");

    // A model that drafts: its tasks are the dataset, marked as drafts, and the printed
    // evaluate scores the skill on them.
    let tasks = [
        ("Coffee 3.50\nCake 4.00\nTotal 7.50", "7.50"),
        (
            "Hotel, 2 nights: 240.00 EUR\nCity tax: 6.00\nAmount due: 246.00",
            "246.00",
        ),
        ("Lunch for four, total incl. tip: $112.40", "112.40"),
    ];
    let mut list: Vec<Value> = tasks
        .iter()
        .map(|(input, expected)| json!({"input": input, "expected": expected, "grading": "answer"}))
        .collect();
    // A task with grading notes instead of the reply, which golden cannot score; and items
    // that are no task (no input, a repeated input), which are left out.
    let notes = "Which receipt is cheaper, this one or last week's (Total 9.10)?\nTotal 8.20";
    list.extend([
        json!({"input": notes, "expected": "Names this receipt, 0.90 less", "grading": "notes"}),
        json!({"expected": "1.00"}),
        json!({"input": tasks[0].0, "expected": "7.5"}),
    ]);
    let skill = skill_factory_core::Skill::parse(SKILL).unwrap();
    let mut answers: HashMap<String, String> = tasks
        .iter()
        .map(|(input, expected)| (input.to_string(), expected.to_string()))
        .collect();
    answers.insert(prompt, format!("```json\n{}\n```", Value::Array(list)));
    answers.insert(
        skill_factory::harness::trigger::draft::prompt(&skill, 20),
        json!([
            {"query": "what did I pay in total at the cafe?", "should_trigger": true},
            {"query": "design a receipt template for my shop", "should_trigger": false}
        ])
        .to_string(),
    );
    let drafter = MockServer::start(with_key(answers)).await.unwrap();
    let ran = init_with(&drafter);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains("Review the 4 tasks a model drafted"),
        "{}",
        ran.stdout
    );
    let lines: Vec<Value> = read(&dir.join("dataset.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3]["metadata"]["grading"], "notes");
    assert!(
        ran.stdout
            .contains("1 of them carry grading notes rather than one right answer"),
        "{}",
        ran.stdout
    );
    for (line, (input, expected)) in lines.iter().zip(tasks) {
        assert_eq!(line["input"], input);
        assert_eq!(line["expected"], expected);
        assert_eq!(line["metadata"]["draft"], true);
    }
    let config = read(&dir.join("config.yaml"));
    assert!(
        config.contains("were drafted by a model: review them"),
        "{config}"
    );
    assert!(!config.contains("init-test-key"), "{config}");

    let evaluate = printed(&ran.stdout, "skill-factory evaluate");
    let scored = tokio::task::block_in_place(|| run_printed(dir, &evaluate));
    assert_eq!(scored.code, Some(0), "{}{}", scored.stdout, scored.stderr);
    assert!(
        scored.stdout.contains("Score: 0.750 over 4 tasks"),
        "{}",
        scored.stdout
    );

    let optimize = printed(&ran.stdout, "skill-factory optimize");
    let optimized = tokio::task::block_in_place(|| run_printed(dir, &optimize));
    assert_eq!(
        optimized.code,
        Some(0),
        "{}{}",
        optimized.stdout,
        optimized.stderr
    );
    assert!(
        optimized.stdout.contains("/latest/report.md"),
        "{}",
        optimized.stdout
    );

    // The printed `triggers draft` replaces the stub with a drafted set.
    let draft = printed(&ran.stdout, "skill-factory triggers draft");
    let drafted = tokio::task::block_in_place(|| run_printed(dir, &draft));
    assert_eq!(
        drafted.code,
        Some(0),
        "{}{}",
        drafted.stdout,
        drafted.stderr
    );
    let set: Value = serde_json::from_str(&read(&dir.join("trigger_set.json"))).unwrap();
    assert_eq!(set[0]["query"], "what did I pay in total at the cafe?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_score_on_the_example_tasks_says_they_are_examples_to_replace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let url = format!("{}/v1", server.base_url());
    let ran = tokio::task::block_in_place(|| {
        init(
            dir,
            &[
                "SKILL.md",
                "--provider",
                "vllm",
                "--model",
                "m",
                "--base-url",
                &url,
            ],
        )
    });
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(
        read(&dir.join("config.yaml")).contains(&format!("base_url: \"{url}\"")),
        "{}",
        read(&dir.join("config.yaml"))
    );
    let scored = tokio::task::block_in_place(|| {
        run_printed(dir, &printed(&ran.stdout, "skill-factory evaluate"))
    });
    assert_eq!(scored.code, Some(0), "{}{}", scored.stdout, scored.stderr);
    assert!(scored.stdout.contains("over 4 tasks"), "{}", scored.stdout);
    assert!(
        scored.stdout.contains("- task example-1")
            && scored
                .stdout
                .contains("expected: 'EXAMPLE ANSWER, REPLACE IT"),
        "{}",
        scored.stdout
    );
}

#[test]
fn an_unreachable_model_is_an_error_that_says_so_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    let port = crate::common::free_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let ran = init(
        dir,
        &[
            "SKILL.md",
            "--draft-tasks",
            "5",
            "--provider",
            "vllm",
            "--model",
            "m",
            "--base-url",
            &url,
        ],
    );
    // The model is out of reach, not the input wrong: exit 3, as when nothing of a run worked.
    assert_eq!(ran.code, Some(3), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr
            .contains("cannot draft tasks: the model m of vllm could not be asked"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("Nothing was written"), "{}", ran.stderr);
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1, "only the skill");

    let ran = init(
        dir,
        &["SKILL.md", "--draft-tasks", "5", "--provider", "anthropic"],
    );
    assert_eq!(ran.code, Some(2), "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stderr.contains("cannot draft tasks"), "{}", ran.stderr);
    assert!(ran.stderr.contains("ANTHROPIC_API_KEY"), "{}", ran.stderr);
    assert!(ran.stderr.contains("Nothing was written"), "{}", ran.stderr);
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1, "only the skill");
}

/// The top-level commands `skill-factory --help` lists.
fn commands() -> Vec<String> {
    let ran = run(bin().arg("--help"));
    assert_eq!(ran.code, Some(0));
    let listed: Vec<String> = ran
        .stdout
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| line.starts_with("  "))
        .map(|line| line.split_whitespace().next().unwrap().to_owned())
        .collect();
    for command in ["init", "optimize", "evaluate", "completions", "man"] {
        assert!(listed.iter().any(|c| c == command), "{listed:?}");
    }
    listed
}

#[test]
fn completions_name_every_command_and_bash_completes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let ran = run(bin().args(["completions", "bash"]));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let script = tmp.path().join("skill-factory.bash");
    std::fs::write(&script, &ran.stdout).unwrap();
    let commands = commands();
    for command in &commands {
        assert!(
            ran.stdout.contains(&format!("skill__factory,{command})")),
            "{command} not in the bash script"
        );
    }
    // Sourced into bash, the script completes the command names and `init`'s flags.
    let function = ran
        .stdout
        .split("complete -F ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let complete = |words: &str| -> Vec<String> {
        let line = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             {function} skill-factory \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &line])
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let offered = complete("skill-factory ''");
    for command in &commands {
        assert!(offered.contains(command), "{command} not in {offered:?}");
    }
    assert_eq!(complete("skill-factory ini"), ["init"]);
    let flags = complete("skill-factory init --");
    for flag in [
        "--dir",
        "--draft-tasks",
        "--provider",
        "--model",
        "--base-url",
    ] {
        assert!(flags.iter().any(|f| f == flag), "{flag} not in {flags:?}");
    }
    let flags = complete("skill-factory lab ask --");
    assert!(flags.iter().any(|f| f == "--dry-run"), "{flags:?}");

    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let ran = run(bin().args(["completions", shell]));
        assert_eq!(ran.code, Some(0), "{shell}: {}", ran.stderr);
        for command in ["init", "optimize", "completions", "man"] {
            assert!(ran.stdout.contains(command), "{shell}: no {command}");
        }
    }
    let ran = run(bin().args(["completions", "tcsh"]));
    assert_eq!(ran.code, Some(2));
    assert!(ran.stderr.contains("possible values"), "{}", ran.stderr);
}

#[test]
fn the_man_page_is_roff_naming_every_command_and_its_folder_holds_one_page_each() {
    let ran = run(bin().arg("man"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let page = ran.stdout;
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH skill-factory 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "{section} not in {page}");
    }
    let commands = commands();
    for command in commands.iter().filter(|c| *c != "help") {
        let reference = format!("skill\\-factory\\-{}(1)", command.replace('-', "\\-"));
        assert!(page.contains(&reference), "{reference} not in {page}");
    }
    // groff reads it without a warning, where groff is installed (it is wherever `man` is).
    if let Ok(out) = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(page.as_bytes())?;
            child.wait_with_output()
        })
    {
        assert!(out.status.success(), "groff failed");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff warned");
    }

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("man");
    let ran = run(bin().arg("man").arg("-o").arg(&out));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    for command in commands.iter().filter(|c| *c != "help") {
        let file = out.join(format!("skill-factory-{command}.1"));
        assert!(
            read(&file).contains(".TH skill-factory-"),
            "{}",
            file.display()
        );
    }
    assert!(read(&out.join("skill-factory-lab-ask.1")).contains("\\-\\-dry\\-run"));
    // And `man` shows one, where man is installed.
    if let Ok(shown) = std::process::Command::new("man")
        .arg("-l")
        .arg(out.join("skill-factory-init.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        // ASCII hyphens, whatever the locale of the machine.
        .env("LC_ALL", "C")
        .output()
    {
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.status.success(),
            "{}",
            String::from_utf8_lossy(&shown.stderr)
        );
        assert!(text.contains("--draft-tasks"), "{text}");
    }
    // Written again, its own pages are replaced; a file of another kind is not.
    let ran = run(bin().arg("man").arg("-o").arg(&out));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    std::fs::write(out.join("skill-factory-init.1"), "my notes\n").unwrap();
    let ran = run(bin().arg("man").arg("-o").arg(&out));
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr
            .contains("skill-factory-init.1 already exists and is not a man page"),
        "{}",
        ran.stderr
    );
    assert_eq!(read(&out.join("skill-factory-init.1")), "my notes\n");
}

#[test]
fn the_reference_page_is_what_man_markdown_prints() {
    let ran = run(bin().args(["man", "--markdown"]));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let page =
        std::fs::read_to_string(crate::common::repo_root().join("docs/reference.md")).unwrap();
    assert!(
        page == ran.stdout,
        "docs/reference.md is not what the binary prints: regenerate it with `skill-factory man --markdown > docs/reference.md`"
    );
    // Every command, flag, config key and variable is there: the evaluate flags CI reads,
    // keys of both kinds of config at every depth with their defaults, and a variable.
    for want in [
        "## `skill-factory evaluate`",
        "* `--fail-under <SCORE>`",
        "## `skill-factory lab ask`",
        "| `val_fraction` | number | `0.3` |",
        "| `harness` | [block](#harness) |",
        "### `metric.judge.criteria[]`",
        "| `mode` | `exact` \\| `normalized` \\| `token_f1` \\| `json_equal` \\| `numeric` | `normalized` |",
        "| `max_workers` | integer | `16` |",
        "| `aggregate` | `mean` \\| `min` | `mean` |",
        "### `splits.fractions` (classifier)",
        "| `probeset` | text | required |",
        "| `ANTHROPIC_API_KEY` | anthropic (the default provider) |",
        "| `SKILL_FACTORY_RECORD` |",
    ] {
        assert!(page.contains(want), "{want:?} is not in docs/reference.md");
    }
}
