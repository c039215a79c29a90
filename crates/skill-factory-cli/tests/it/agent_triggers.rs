//! Trigger runs (`kind: trigger`) watching the real agent CLIs, Claude Code and Codex, against
//! the mock model server started in this process. For each CLI, `skill-factory evaluate --json`
//! runs a six-query trigger set with examples/receipt-trigger's skill and its distractor. The
//! mock's router is deterministic (crates/skill-factory-mock/src/routing.rs): it decides from
//! the skill listing the CLI sends, so the right answer for each query is known in advance.
//!
//! What it proves, for each CLI:
//! * the harness installs the candidate and the distractor where the CLI discovers skills: the
//!   CLI's own streamed requests (`stream: true`) to the model list both, with the line
//!   `- receipt-total: <description>`;
//! * the description evaluated is the one the CLI sees: `--skill` with an edited description
//!   changes the listing and the decisions;
//! * the preset's invocation (`watch_args`, the prompt on stdin) runs the CLI to its end;
//! * the detection reads the event stream right: each item's output (`loaded` or
//!   `not loaded`) and `loaded_skills` (the distractor's load included) are what the router
//!   decided, and match what the CLI really did. Claude Code sent the body of the skill it
//!   loaded back to the model ("Base directory for this skill: .../.claude/skills/<name>")
//!   after its `Skill` call. Codex ran `cat .../.agents/skills/<name>/SKILL.md` and sent the
//!   file back;
//! * the trigger figures (true positives and the rest) count those decisions.
//!
//! Both CLIs list their own bundled skills beside ours (Claude Code's `dataviz`,
//! `update-config` and others; the system skills Codex writes into CODEX_HOME, such as
//! `openai-docs`), and the router chooses among all of them. The queries were chosen so that
//! none of those wins, and the test checks the router's choice over the whole listing: a new
//! CLI version whose bundled skills change a decision fails with a message that says so.
//!
//! The CLIs are not fetched here (tests never reach the network). `scripts/setup-agent-clis.sh`
//! (run by `.ci/run`) installs them, pinned, outside the clone at
//! `${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/agents/node_modules/.bin/claude` and
//! `.../codex`, where this test finds them; `SKILL_FACTORY_CLAUDE_CLI` and
//! `SKILL_FACTORY_CODEX_CLI` name other binaries. Without them, this test fails and says how
//! to install them. Both CLIs talk to 127.0.0.1 only, and keep their state (HOME, CODEX_HOME)
//! in the test's temporary folder.

use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory_mock::{MockConfig, MockServer, ReceivedRequest, parse_listing, route};

use crate::common::{external_tool, repo_root, run, with_config};

/// The skill evaluated, from examples/receipt-trigger, and its distractor.
const SKILL: &str = "receipt-total";
const DISTRACTOR: &str = "expense-report";

/// The example's descriptions.
const SEED_DESCRIPTION: &str = "Answers questions about receipts and bills.";
const DISTRACTOR_DESCRIPTION: &str = "Fills in expense reports and expense claims for trips and \
     conferences, ready to submit for reimbursement.";

/// The seed's description with a negative part: the router then excludes the skill for any
/// query that shares a word with it (here the grand total and the printer).
const EDITED_DESCRIPTION: &str =
    "Answers questions about receipts and bills. Not for printers or a grand total.";

/// One query of the trigger set, and the skill the router loads for it with the seed's
/// description and with the edited one.
struct Query {
    id: &'static str,
    query: &'static str,
    should_trigger: bool,
    seed: Option<&'static str>,
    edited: Option<&'static str>,
}

const QUERIES: [Query; 6] = [
    Query {
        id: "grand-total",
        query: "What was the grand total on this receipt?",
        should_trigger: true,
        seed: Some(SKILL),
        edited: None,
    },
    Query {
        id: "bill",
        query: "How much do I owe for this dinner bill?",
        should_trigger: true,
        seed: Some(SKILL),
        edited: Some(SKILL),
    },
    Query {
        id: "lunch",
        query: "Lunch receipt attached, what did it cost?",
        should_trigger: true,
        seed: Some(SKILL),
        edited: Some(SKILL),
    },
    // A near miss the seed's description claims ("receipt"): a false trigger.
    Query {
        id: "printer",
        query: "Replace the paper roll in the receipt printer.",
        should_trigger: false,
        seed: Some(SKILL),
        edited: None,
    },
    Query {
        id: "area",
        query: "Calculate the total area of the garden beds.",
        should_trigger: false,
        seed: None,
        edited: None,
    },
    // The distractor's: it shares more words with this query than the skill does.
    Query {
        id: "expense",
        query: "Add this receipt to my expense report.",
        should_trigger: false,
        seed: Some(DISTRACTOR),
        edited: Some(DISTRACTOR),
    },
];

/// Variables of the developer's environment that would send a CLI elsewhere than the mock;
/// the children inherit skill-factory's environment below the config's `env`.
const FOREIGN_AGENT_VARIABLES: [&str; 5] = [
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "OPENAI_BASE_URL",
];

/// Which CLI a run watches.
#[derive(Clone, Copy, Debug)]
enum Cli {
    ClaudeCode,
    Codex,
}

impl Cli {
    fn harness_type(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude_code",
            Cli::Codex => "codex",
        }
    }

    /// The binary: the variable's, else where scripts/setup-agent-clis.sh installs it.
    fn executable(self) -> PathBuf {
        let (var, under_cache, what) = match self {
            Cli::ClaudeCode => (
                "SKILL_FACTORY_CLAUDE_CLI",
                "skill-factory-ci/agents/node_modules/.bin/claude",
                "Claude Code (the npm package @anthropic-ai/claude-code)",
            ),
            Cli::Codex => (
                "SKILL_FACTORY_CODEX_CLI",
                "skill-factory-ci/agents/node_modules/.bin/codex",
                "the Codex CLI (the npm package @openai/codex)",
            ),
        };
        external_tool::external_tool(
            var,
            under_cache,
            what,
            "scripts/setup-agent-clis.sh   (needs Node and npm)",
        )
    }

    /// The route the CLI asks the model on.
    fn route(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "/v1/messages",
            Cli::Codex => "/v1/responses",
        }
    }

    /// The variables that point the CLI at the mock, with its state in `dir`.
    fn env(self, server: &MockServer, dir: &Path) -> Vec<(&'static str, String)> {
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let home = home.display().to_string();
        match self {
            Cli::ClaudeCode => vec![
                ("ANTHROPIC_BASE_URL", server.base_url()),
                ("ANTHROPIC_API_KEY", "any".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                ("DISABLE_TELEMETRY", "1".into()),
                ("DISABLE_AUTOUPDATER", "1".into()),
                ("HOME", home),
            ],
            Cli::Codex => {
                // An absolute path: Codex refuses a relative CODEX_HOME.
                let codex_home = dir.join("codex-home");
                std::fs::create_dir_all(&codex_home).unwrap();
                std::fs::write(
                    codex_home.join("config.toml"),
                    format!(
                        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n\
                         [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\n\
                         env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
                        server.base_url()
                    ),
                )
                .unwrap();
                vec![
                    ("CODEX_HOME", codex_home.display().to_string()),
                    ("OPENAI_API_KEY", "any".into()),
                    ("HOME", home),
                ]
            }
        }
    }

    /// The skills a request shows loaded: Claude Code sends a loaded skill's body after
    /// "Base directory for this skill: <its folder>"; Codex sends a `function_call` that
    /// `cat`s its SKILL.md, and that call's output holds the file read.
    fn loads(self, body: &Value) -> Vec<String> {
        let mut loads = Vec::new();
        match self {
            Cli::ClaudeCode => {
                for text in strings(body) {
                    for line in text.lines() {
                        let Some(folder) = line.strip_prefix("Base directory for this skill: ")
                        else {
                            continue;
                        };
                        let (parent, name) = folder.trim().rsplit_once('/').unwrap();
                        assert!(parent.ends_with("/.claude/skills"), "{folder}");
                        loads.push(name.to_owned());
                    }
                }
            }
            Cli::Codex => {
                let items = body["input"].as_array().cloned().unwrap_or_default();
                for call in items.iter().filter(|i| i["type"] == "function_call") {
                    let arguments: Value =
                        serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
                    let command = arguments["cmd"].as_str().unwrap_or_default();
                    let Some(file) = command.strip_prefix("cat ") else {
                        continue;
                    };
                    let folder = file.strip_suffix("/SKILL.md").unwrap_or_else(|| {
                        panic!("Codex ran `{command}`, not a read of a SKILL.md")
                    });
                    let (parent, name) = folder.rsplit_once('/').unwrap();
                    assert!(parent.ends_with("/.agents/skills"), "{command}");
                    let output = items
                        .iter()
                        .find(|i| {
                            i["type"] == "function_call_output" && i["call_id"] == call["call_id"]
                        })
                        .map(|i| strings(&i["output"]).join("\n"))
                        .unwrap_or_else(|| panic!("no output of `{command}` in {body}"));
                    assert!(
                        output.contains(&format!("name: {name}\n")),
                        "`{command}` did not read the installed SKILL.md: {output}"
                    );
                    loads.push(name.to_owned());
                }
            }
        }
        loads.dedup();
        loads
    }
}

/// Every string inside a JSON value.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(text) => vec![text.as_str()],
        Value::Array(values) => values.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// A trigger run in `dir`: the example's skill and distractor, the six queries, and a config
/// whose harness is the CLI pointed at the mock.
fn write_run(dir: &Path, cli: Cli, server: &MockServer) -> PathBuf {
    let example = repo_root().join("examples/receipt-trigger");
    std::fs::copy(example.join("seed_skill.md"), dir.join("SKILL.md")).unwrap();
    let distractor = dir.join("distractors").join(DISTRACTOR);
    std::fs::create_dir_all(&distractor).unwrap();
    std::fs::copy(
        example
            .join("distractors")
            .join(DISTRACTOR)
            .join("SKILL.md"),
        distractor.join("SKILL.md"),
    )
    .unwrap();
    let set: Vec<Value> = QUERIES
        .iter()
        .map(|q| serde_json::json!({"id": q.id, "query": q.query, "should_trigger": q.should_trigger}))
        .collect();
    std::fs::write(
        dir.join("trigger_set.json"),
        serde_json::to_string_pretty(&set).unwrap(),
    )
    .unwrap();
    let quoted = |text: &str| serde_json::to_string(text).unwrap();
    let env: String = cli
        .env(server, dir)
        .into_iter()
        .map(|(name, value)| format!("    {name}: {}\n", quoted(&value)))
        .collect();
    let config = format!(
        "kind: trigger\nskill: SKILL.md\ndataset: trigger_set.json\n\
         distractors: [distractors/{DISTRACTOR}]\n\
         harness:\n  type: {}\n  executable: {}\n  timeout: 60\n  max_workers: 2\n  env:\n{env}",
        cli.harness_type(),
        quoted(&cli.executable().display().to_string()),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// `evaluate -c config --json` (with `--skill skill`), its JSON report.
async fn evaluate(config: &Path, skill: Option<&Path>) -> Value {
    let (config, skill) = (config.to_owned(), skill.map(Path::to_owned));
    let ran = tokio::task::spawn_blocking(move || {
        let mut command = with_config("evaluate", &config);
        command.arg("--json");
        if let Some(skill) = skill {
            command.arg("--skill").arg(skill);
        }
        for name in FOREIGN_AGENT_VARIABLES {
            command.env_remove(name);
        }
        run(&mut command)
    })
    .await
    .unwrap();
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|error| panic!("{error}: not JSON:\n{}\n{}", ran.stdout, ran.stderr))
}

/// Checks an evaluation with `description` against the router's decisions (`decided` gives
/// each query's load) and against the requests the mock received during it.
fn check(
    cli: Cli,
    report: &Value,
    received: &[ReceivedRequest],
    description: &str,
    decided: fn(&Query) -> Option<&'static str>,
) {
    let items = report["items"].as_array().unwrap();
    assert_eq!(items.len(), QUERIES.len(), "{report:#}");
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    for query in &QUERIES {
        let load = decided(query);
        let loaded = load == Some(SKILL);
        let item = items
            .iter()
            .find(|item| item["id"] == query.id)
            .unwrap_or_else(|| panic!("no item {} in {report:#}", query.id));
        assert_eq!(item["error"], Value::Null, "{cli:?} {}: {item:#}", query.id);
        assert_eq!(
            item["output"],
            if loaded { "loaded" } else { "not loaded" },
            "{cli:?} {}: {item:#}",
            query.id
        );
        // What the engine read in the event stream: the skill loaded, whichever it was.
        assert_eq!(
            item["loaded_skills"],
            serde_json::json!(load.into_iter().collect::<Vec<_>>()),
            "{cli:?} {}: {item:#}",
            query.id
        );
        assert_eq!(item["should_trigger"], query.should_trigger, "{item:#}");
        match (query.should_trigger, loaded) {
            (true, true) => tp += 1,
            (false, true) => fp += 1,
            (true, false) => fn_ += 1,
            (false, false) => tn += 1,
        }

        // What the CLI sent the model for this query.
        let needle = serde_json::to_string(query.query).unwrap();
        let needle = &needle[1..needle.len() - 1];
        let requests: Vec<&ReceivedRequest> = received
            .iter()
            .filter(|r| r.path == cli.route() && r.body.to_string().contains(needle))
            .collect();
        assert!(
            !requests.is_empty(),
            "{cli:?} asked the mock nothing on {} for {:?}",
            cli.route(),
            query.query
        );
        for request in &requests {
            assert_eq!(request.body["stream"], true, "{cli:?}: {}", request.body);
        }
        let listed = requests
            .iter()
            .flat_map(|r| strings(&r.body))
            .find_map(parse_listing)
            .unwrap_or_else(|| panic!("{cli:?} listed no skills for {:?}", query.query));
        // The CLI lists its own bundled skills too; the router must choose as expected among
        // all of them, or the queries need other words.
        let names: Vec<&str> = listed.iter().map(|skill| skill.name.as_str()).collect();
        assert_eq!(
            route(&listed, query.query).map(|at| names[at]),
            load,
            "{cli:?} {}: the router's choice among the skills the CLI listed ({names:?}) is not \
             the one this test expects; a bundled skill may share words with the query",
            query.id
        );
        let ours = |name: &str| {
            listed
                .iter()
                .find(|skill| skill.name == name)
                .map(|skill| skill.description.clone())
        };
        assert_eq!(ours(SKILL).as_deref(), Some(description), "{listed:?}");
        assert_eq!(
            ours(DISTRACTOR).as_deref(),
            Some(DISTRACTOR_DESCRIPTION),
            "{listed:?}"
        );
        let line = format!("- {SKILL}: {description}");
        assert!(
            requests.iter().any(|r| strings(&r.body)
                .iter()
                .any(|s| s.lines().any(|l| l.trim_start().starts_with(&line)))),
            "{cli:?}: no listing line {line:?}"
        );
        let mut loads: Vec<String> = requests.iter().flat_map(|r| cli.loads(&r.body)).collect();
        loads.sort();
        loads.dedup();
        assert_eq!(
            loads,
            load.into_iter().map(str::to_owned).collect::<Vec<_>>(),
            "{cli:?} {}: what the CLI loaded",
            query.id
        );
    }
    let trigger = &report["trigger"];
    for (key, count) in [
        ("true_positives", tp),
        ("false_positives", fp),
        ("false_negatives", fn_),
        ("true_negatives", tn),
        ("failed", 0),
    ] {
        assert_eq!(trigger[key], count, "{cli:?} {key}: {trigger:#}");
    }
    assert_eq!(
        trigger["precision"].as_f64(),
        Some(tp as f64 / (tp + fp) as f64),
        "{trigger:#}"
    );
    assert_eq!(
        trigger["recall"].as_f64(),
        Some(tp as f64 / (tp + fn_) as f64),
        "{trigger:#}"
    );
    assert_eq!(report["failed"], 0, "{report:#}");
}

/// The seed, then the same skill with [`EDITED_DESCRIPTION`] through `--skill`.
async fn trigger_run_watches(cli: Cli) {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let temp = tempfile::tempdir().unwrap();
    let config = write_run(temp.path(), cli, &server);

    let report = evaluate(&config, None).await;
    let seen = server.received();
    check(cli, &report, &seen, SEED_DESCRIPTION, |q| q.seed);
    let trigger = &report["trigger"];
    assert_eq!(
        (
            trigger["true_positives"].as_u64(),
            trigger["false_positives"].as_u64()
        ),
        (Some(3), Some(1)),
        "{trigger:#}"
    );

    let edited = temp.path().join("edited").join(SKILL);
    std::fs::create_dir_all(&edited).unwrap();
    let seed = std::fs::read_to_string(temp.path().join("SKILL.md")).unwrap();
    let text = seed.replace(
        &format!("description: {SEED_DESCRIPTION}"),
        &format!("description: {EDITED_DESCRIPTION}"),
    );
    assert_ne!(text, seed);
    std::fs::write(edited.join("SKILL.md"), text).unwrap();
    let report = evaluate(&config, Some(&edited.join("SKILL.md"))).await;
    check(
        cli,
        &report,
        &server.received()[seen.len()..],
        EDITED_DESCRIPTION,
        |q| q.edited,
    );
    let trigger = &report["trigger"];
    assert_eq!(
        (
            trigger["false_negatives"].as_u64(),
            trigger["true_negatives"].as_u64()
        ),
        (Some(1), Some(3)),
        "{trigger:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_run_watches_claude_code_load_the_skill() {
    trigger_run_watches(Cli::ClaudeCode).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_run_watches_codex_read_the_skill() {
    trigger_run_watches(Cli::Codex).await;
}
