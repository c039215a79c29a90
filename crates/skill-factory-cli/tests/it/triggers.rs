//! Trigger runs (`kind: trigger`) through the binary: the offline example, optimization on
//! the mock's router with every optimizer, the held-out figures, bad trigger configs, and
//! `triggers draft`.
//!
//! The mock's router (`skill_factory_mock::routing`) loads the listed skill whose description
//! shares the most words with the request, unless a "Not for ..." sentence names one of the
//! request's words; its description optimizer adds the words of missed requests and rules out
//! those of false triggers. The example's seed description ("Answers questions about receipts
//! and bills.") both over-triggers (receipt printers, bills in the senate) and under-triggers
//! (totals asked for without saying receipt or bill).

use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory_mock::{MockConfig, MockServer, Variation};

use crate::common::{self, bin, evaluate, read_json, run, with_config};

/// The example folder copied into `dest`, the distractor included.
fn copy_example(dest: &Path) {
    common::copy_example("receipt-trigger", dest);
}

/// A config in `dir` for the example's data, routed and optimized by the mock at `base_url`.
fn mock_config(dir: &Path, name: &str, base_url: &str, optimizer: &str, extra: &str) -> PathBuf {
    let config = dir.join(format!("config.{name}.yaml"));
    std::fs::write(
        &config,
        format!(
            "kind: trigger\nskill: seed_skill.md\ndataset: trigger_set.json\n\
             distractors: [distractors/expense-report]\n\
             val_fraction: 0.25\ntest_fraction: 0.25\nseed: 3\n\
             provider: {{name: openai-compatible, model: router, base_url: \"{base_url}/v1\", api_key: k}}\n\
             optimizer: {{name: {optimizer}, rounds: 6, max_metric_calls: 400, minibatch_size: 8}}\n\
             harness: {{type: api}}\ncache: {{mode: off}}\n{extra}"
        ),
    )
    .unwrap();
    config
}

/// The one run folder under `out`.
fn run_folder(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("result.json").is_file())
        .expect("a run folder")
}

fn figures<'a>(result: &'a Value, which: &str) -> &'a Value {
    &result["trigger"][which]
}

/// The Agent Skills rules and the honesty rule every optimized description keeps.
fn holds_the_rules(best: &str, seed: &skill_factory_core::Skill, queries: &[String]) {
    let best = skill_factory_core::Skill::parse(best).unwrap();
    assert_eq!(best.body, seed.body, "a trigger run never changes the body");
    assert_eq!(best.name, seed.name);
    assert!(
        best.description.chars().count() <= 1024,
        "{}",
        best.description
    );
    assert!(
        !best.description.contains(['<', '>']),
        "{}",
        best.description
    );
    let lower = best.description.to_lowercase();
    for query in queries {
        let query = query
            .to_lowercase()
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_string();
        assert!(!lower.contains(&query), "copies {query:?}: {lower}");
    }
}

fn queries(dir: &Path) -> Vec<String> {
    let set: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trigger_set.json")).unwrap())
            .unwrap();
    set.iter()
        .map(|q| q["query"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_offline_example_measures_the_seed_and_optimizes_its_description() {
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let config = tmp.path().join("config.offline.yaml");
    let ran = evaluate(&config);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains("Score: 0.516 over 64 tasks"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains(
            "Trigger: precision 0.512, recall 0.656, false-trigger rate 0.625 (loaded for 21 of 32 queries that should load it and 20 of 32 near misses)"
        ),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("should have loaded, did not: the agent loaded expense-report instead")
            || ran.stdout.contains("loaded for a query it should not"),
        "{}",
        ran.stdout
    );

    let out = tmp.path().join("runs");
    let ran = common::optimize(&[], &config, &out);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let folder = run_folder(&out);
    let result = read_json(&folder.join("result.json"));
    assert_eq!(result["trigger"]["split"], "test");
    assert_eq!(figures(&result, "seed")["accuracy"], 0.5625);
    assert_eq!(figures(&result, "best")["accuracy"], 1.0);
    assert_eq!(figures(&result, "best")["false_trigger_rate"], 0.0);
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("## Triggering (test split)"), "{report}");
    assert!(
        report.contains("| best | 1.000 | 1.000 | 1.000 | 0.000 | 10 / 10 | 0 / 6 |"),
        "{report}"
    );
    let seed = skill_factory_core::Skill::parse(
        &std::fs::read_to_string(tmp.path().join("seed_skill.md")).unwrap(),
    )
    .unwrap();
    let best = std::fs::read_to_string(folder.join("best_skill.md")).unwrap();
    holds_the_rules(&best, &seed, &queries(tmp.path()));
    assert!(best.contains("Not for designing"), "{best}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_optimizer_rewrites_the_description_alone_and_gepa_reaches_the_held_out_bar() {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let seed = skill_factory_core::Skill::parse(
        &std::fs::read_to_string(tmp.path().join("seed_skill.md")).unwrap(),
    )
    .unwrap();
    let all = queries(tmp.path());
    for optimizer in ["gepa", "llm_loop", "skillopt"] {
        let config = mock_config(tmp.path(), optimizer, &server.base_url(), optimizer, "");
        let out = tmp.path().join(format!("runs-{optimizer}"));
        let ran = tokio::task::block_in_place(|| common::optimize(&[], &config, &out));
        assert_eq!(
            ran.code,
            Some(0),
            "{optimizer}: {}{}",
            ran.stdout,
            ran.stderr
        );
        let folder = run_folder(&out);
        let result = read_json(&folder.join("result.json"));
        let seed_accuracy = figures(&result, "seed")["accuracy"].as_f64().unwrap();
        let best_accuracy = figures(&result, "best")["accuracy"].as_f64().unwrap();
        assert!(
            best_accuracy > seed_accuracy,
            "{optimizer}: held-out accuracy {seed_accuracy} → {best_accuracy}"
        );
        if optimizer == "gepa" {
            assert!(
                best_accuracy >= 0.9,
                "gepa: held-out accuracy {best_accuracy}"
            );
        }
        let best = std::fs::read_to_string(folder.join("best_skill.md")).unwrap();
        holds_the_rules(&best, &seed, &all);
        // The search never reads the held-out split: no test request reached a prompt.
        let tasks: Vec<Value> = std::fs::read_to_string(folder.join("tasks.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let test_inputs: Vec<&str> = tasks
            .iter()
            .filter(|t| t["split"] == "test")
            .map(|t| t["input"].as_str().unwrap())
            .collect();
        assert_eq!(test_inputs.len(), 16);
        for request in server.received() {
            let body = request.body.to_string();
            if body.contains("THE PART TO REWRITE: description") {
                for input in &test_inputs {
                    assert!(
                        !body.contains(input),
                        "{optimizer} showed test request {input:?}"
                    );
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_kept_under_a_noisy_router_holds_on_its_noise_free_twin() {
    let noisy = MockServer::start(MockConfig {
        variation: Variation {
            flips: 0.1,
            ..Variation::default()
        },
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let exact = MockServer::start(MockConfig::default()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let config = mock_config(
        tmp.path(),
        "noisy",
        &noisy.base_url(),
        "gepa",
        "noise: {samples: 3, max_samples: 6}\nharness: {type: api, temperature: 0.7}\n",
    );
    // The harness line above replaces the config's first one.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replacen("harness: {type: api}\n", "", 1);
    std::fs::write(&config, text).unwrap();
    // The router's noise is drawn afresh (unseeded), and a run may rightly keep no edit; the
    // check needs one that kept an edit, which most runs do.
    let mut kept_one = None;
    for attempt in 0..4 {
        let out = tmp.path().join(format!("runs-{attempt}"));
        let ran = tokio::task::block_in_place(|| common::optimize(&[], &config, &out));
        assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
        let folder = run_folder(&out);
        if read_json(&folder.join("result.json"))["accepted"].as_u64() > Some(1) {
            kept_one = Some(folder);
            break;
        }
    }
    let best = kept_one
        .expect("four noisy runs kept no edit")
        .join("best_skill.md");
    // Every kept edit must be real: on the noise-free router the best is no worse than the
    // seed on every split.
    let twin = mock_config(tmp.path(), "twin", &exact.base_url(), "gepa", "");
    let score = |skill: &Path| -> f64 {
        let ran = tokio::task::block_in_place(|| {
            run(with_config("evaluate", &twin)
                .arg("--skill")
                .arg(skill)
                .arg("--json"))
        });
        assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
        serde_json::from_str::<Value>(&ran.stdout).unwrap()["score"]
            .as_f64()
            .unwrap()
    };
    let (seed, kept) = (score(&tmp.path().join("seed_skill.md")), score(&best));
    assert!(
        kept >= seed,
        "noise-free accuracy fell from {seed} to {kept}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_json_names_the_rates_and_each_decision() {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let config = mock_config(tmp.path(), "json", &server.base_url(), "gepa", "");
    let ran = tokio::task::block_in_place(|| run(with_config("evaluate", &config).arg("--json")));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    let trigger = &report["trigger"];
    let (tp, fp, tn, fn_) = (
        trigger["true_positives"].as_u64().unwrap(),
        trigger["false_positives"].as_u64().unwrap(),
        trigger["true_negatives"].as_u64().unwrap(),
        trigger["false_negatives"].as_u64().unwrap(),
    );
    assert_eq!(tp + fp + tn + fn_, 64);
    assert_eq!(
        trigger["accuracy"].as_f64().unwrap(),
        report["score"].as_f64().unwrap()
    );
    assert_eq!(
        trigger["precision"].as_f64().unwrap(),
        tp as f64 / (tp + fp) as f64
    );
    let items = report["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .all(|i| i["output"] == "loaded" || i["output"] == "not loaded")
    );
    // The router saw the candidate and the distractor, listed by name, as agents list them.
    let listing = server
        .received()
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("The following skills are available:"))
        .unwrap();
    assert!(
        listing.contains("- expense-report: Fills in expense reports"),
        "{listing}"
    );
    assert!(
        listing.contains("- receipt-total: Answers questions about receipts and bills."),
        "{listing}"
    );
}

#[test]
fn a_bad_trigger_config_names_its_key_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let dir = tmp.path();
    let base = std::fs::read_to_string(dir.join("config.offline.yaml")).unwrap();
    let cases: [(&str, String, &[&str]); 5] = [
        (
            "metric",
            format!("{base}metric: {{golden: {{}}}}\n"),
            &["config.yaml line", "'metric'", "remove the 'metric' block"],
        ),
        (
            "subprocess",
            base.replace(
                "harness:\n  type: api ",
                "harness:\n  command: [echo]\n  type: subprocess ",
            ),
            &[
                "harness.type",
                "does not show whether an agent loaded the skill",
            ],
        ),
        (
            "no kind",
            base.replace("kind: trigger\n", "")
                .replace("dataset: trigger_set.json", "dataset: data.jsonl"),
            &["distractors", "add 'kind: trigger'"],
        ),
        (
            "twin distractor",
            base.replace("[distractors/expense-report]", "[seed_skill.md]"),
            &[
                "distractors",
                "named 'receipt-total' like another skill",
                "rename one",
            ],
        ),
        (
            "bad set",
            base.replace("trigger_set.json", "bad_set.json"),
            &[
                "bad_set.json: item 2: has no \"should_trigger\"",
                "near miss",
            ],
        ),
    ];
    std::fs::write(dir.join("data.jsonl"), "{\"input\": \"x\"}\n").unwrap();
    std::fs::write(
        dir.join("bad_set.json"),
        "[{\"query\": \"a\", \"should_trigger\": true}, {\"query\": \"b\"}]",
    )
    .unwrap();
    refused(&dir.join("config.yaml"), cases);
}

/// Each case's config text, written to `config`, is refused by `evaluate` with exit 2 and a
/// message holding every wanted text.
fn refused(
    config: &Path,
    cases: impl IntoIterator<Item = (&'static str, String, &'static [&'static str])>,
) {
    for (name, text, wanted) in cases {
        std::fs::write(config, text).unwrap();
        common::assert_refused(config, name, wanted);
    }
}

/// The receipt example copied into a new folder, with `drafter.yaml`: a scripted model that
/// answers a request for a trigger set with `reply`.
fn drafting_example(reply: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let indented: String = reply
        .lines()
        .map(|line| format!("      {line}\n"))
        .collect();
    std::fs::write(
        tmp.path().join("drafter.yaml"),
        format!("rules:\n  - user_contains: \"near misses\"\n    reply: |\n{indented}"),
    )
    .unwrap();
    tmp
}

/// Runs `triggers draft` on the seed of the example copied into `dir`, into `dir/drafted.json`,
/// with a trigger config whose provider block is `provider`, and the arguments `extra` after.
fn draft_in(dir: &Path, provider: &str, extra: &[&str]) -> common::Ran {
    let config = dir.join("draft.yaml");
    std::fs::write(
        &config,
        format!(
            "kind: trigger\nskill: seed_skill.md\ndataset: not_yet.json\nprovider: {provider}\n"
        ),
    )
    .unwrap();
    run(bin()
        .args(["triggers", "draft"])
        .arg(dir.join("seed_skill.md"))
        .arg("-c")
        .arg(&config)
        .arg("-o")
        .arg(dir.join("drafted.json"))
        .args(extra))
}

#[test]
fn triggers_draft_writes_a_reviewable_set_and_never_replaces_a_file() {
    let tmp = drafting_example(
        "Here is the set:\n[{\"query\": \"What did I pay for lunch?\", \"should_trigger\": true},\n {\"query\": \"Design a receipt for my shop\", \"should_trigger\": false}]",
    );
    let dir = tmp.path();
    let out = dir.join("drafted.json");
    let draft = |force: bool| {
        let mut extra = vec!["--count", "4"];
        if force {
            extra.push("--force");
        }
        draft_in(dir, "{name: fake, model: m, script: drafter.yaml}", &extra)
    };
    let ran = draft(false);
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("Wrote 2 queries"), "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("1 that should load receipt-total, 1 near misses"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("draft"), "{}", ran.stdout);
    let set = skill_factory_core::trigger::parse_trigger_set(
        &std::fs::read_to_string(&out).unwrap(),
        "drafted.json",
    )
    .unwrap();
    assert_eq!(set.len(), 2);
    let again = draft(false);
    assert_eq!(again.code, Some(2), "{}", again.stderr);
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
    assert_eq!(draft(true).code, Some(0));
}

#[test]
fn a_draft_the_model_cannot_give_exits_3_and_writes_nothing() {
    let tmp = drafting_example("I would rather write a poem about receipts.");
    let dir = tmp.path();
    let out = dir.join("drafted.json");
    for (provider, said) in [
        (
            "{name: fake, model: m, script: drafter.yaml}".to_owned(),
            "holds no JSON list",
        ),
        (
            format!(
                "{{name: vllm, model: m, base_url: \"http://127.0.0.1:{}/v1\", max_retries: 1}}",
                common::free_port()
            ),
            "could not be asked",
        ),
    ] {
        let ran = draft_in(dir, &provider, &[]);
        assert_eq!(
            ran.code,
            Some(3),
            "{provider}: {}{}",
            ran.stdout,
            ran.stderr
        );
        assert!(ran.stderr.contains(said), "{provider}: {}", ran.stderr);
        assert!(!out.exists(), "{provider}: a file was written");
    }
}

/// A skill-mode config over the receipt tasks that carries the example's trigger set.
fn together_config(dir: &Path, base_url: &str, extra: &str) -> PathBuf {
    let config = dir.join("config.together.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: seed_skill.md\ndataset: tasks.jsonl\n\
             trigger: {{dataset: trigger_set.json, weight: 0.4}}\n\
             distractors: [distractors/expense-report]\n\
             val_fraction: 0.25\ntest_fraction: 0.25\nseed: 3\n\
             provider: {{name: openai-compatible, model: m, base_url: \"{base_url}/v1\", api_key: k}}\n\
             optimizer: {{name: gepa, max_metric_calls: 1500, minibatch_size: 8}}\n\
             metric: {{golden: {{mode: exact}}}}\nharness: {{type: api}}\ncache: {{mode: off}}\n{extra}"
        ),
    )
    .unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_run_with_a_trigger_set_scores_both_by_their_weights_and_optimizes_both() {
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let server = common::receipts::serve(tmp.path(), |needs| needs).await;
    let config = together_config(tmp.path(), &server.base_url(), "");

    // evaluate: the tasks and the queries of the validation split, weighed 0.6 and 0.4.
    let ran = tokio::task::block_in_place(|| run(with_config("evaluate", &config).arg("--json")));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    let items = report["items"].as_array().unwrap();
    let mean = |queries: bool| {
        let scores: Vec<f64> = items
            .iter()
            .filter(|i| i["should_trigger"].is_boolean() == queries)
            .map(|i| i["score"].as_f64().unwrap())
            .collect();
        assert!(!scores.is_empty(), "queries: {queries}: {report:#}");
        scores.iter().sum::<f64>() / scores.len() as f64
    };
    let (tasks, queries) = (mean(false), mean(true));
    let score = report["score"].as_f64().unwrap();
    assert!(
        (score - (0.6 * tasks + 0.4 * queries)).abs() < 1e-9,
        "{score} is not 0.6 × {tasks} + 0.4 × {queries}"
    );
    assert!(
        items
            .iter()
            .filter(|i| i["should_trigger"].is_boolean())
            .all(|i| i["id"].as_str().unwrap().starts_with("trigger-") && i["weight"].is_number()),
        "{report:#}"
    );
    assert_eq!(
        report["trigger"]["accuracy"].as_f64().unwrap(),
        queries,
        "the trigger figures are the queries' alone"
    );
    let text = evaluate(&config);
    assert!(
        text.stdout.contains("Trigger: precision"),
        "{}",
        text.stdout
    );

    // optimize: gepa mends the body for the tasks and the description for the queries, and
    // the held-out split says both.
    let out = tmp.path().join("runs");
    let ran = tokio::task::block_in_place(|| common::optimize(&[], &config, &out));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let folder = run_folder(&out);
    let result = read_json(&folder.join("result.json"));
    assert_eq!(result["trigger"]["split"], "test");
    let (seed, best) = (
        figures(&result, "seed")["accuracy"].as_f64().unwrap(),
        figures(&result, "best")["accuracy"].as_f64().unwrap(),
    );
    assert!(best > seed, "held-out trigger accuracy {seed} → {best}");
    let test = &result["test"];
    assert!(
        test["best_score"].as_f64().unwrap() > test["seed_score"].as_f64().unwrap(),
        "{test}"
    );
    let best_skill = skill_factory_core::Skill::parse(
        &std::fs::read_to_string(folder.join("best_skill.md")).unwrap(),
    )
    .unwrap();
    assert!(best_skill.body.contains("(need "), "{}", best_skill.body);
    let seed_skill = skill_factory_core::Skill::parse(
        &std::fs::read_to_string(tmp.path().join("seed_skill.md")).unwrap(),
    )
    .unwrap();
    assert_ne!(best_skill.description, seed_skill.description);
    assert!(best_skill.description.chars().count() <= 1024);
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("## Triggering (test split)"), "{report}");
}

#[test]
fn a_bad_trigger_block_names_its_key_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    copy_example(tmp.path());
    let dir = tmp.path();
    std::fs::write(
        dir.join("tasks.jsonl"),
        "{\"input\": \"x\", \"expected\": \"y\"}\n",
    )
    .unwrap();
    // A task that carries the key marking the trigger set's queries would be taken for one.
    std::fs::write(
        dir.join("marked.jsonl"),
        "{\"input\": \"x\", \"expected\": \"y\"}\n\
         {\"id\": \"t2\", \"input\": \"z\", \"metadata\": {\"should_trigger\": true}}\n",
    )
    .unwrap();
    let config = together_config(dir, "http://127.0.0.1:9", "");
    let base = std::fs::read_to_string(&config).unwrap();
    let cases: [(&str, String, &[&str]); 4] = [
        (
            "a task marked as a query",
            base.replace("dataset: tasks.jsonl", "dataset: marked.jsonl"),
            &[
                "marked.jsonl: task 't2' has a 'should_trigger' key in its metadata",
                "rename the key",
            ],
        ),
        (
            "weight",
            base.replace("weight: 0.4", "weight: 1.5"),
            &["trigger.weight", "strictly between 0 and 1", "0.3"],
        ),
        (
            "trigger run",
            format!(
                "kind: trigger\n{}",
                base.replace("metric: {golden: {mode: exact}}\n", "")
            ),
            &["'trigger'", "already its trigger set"],
        ),
        (
            "subprocess",
            base.replace(
                "harness: {type: api}",
                "harness: {type: subprocess, command: [echo]}",
            ),
            &["harness.type", "cannot be scored through it"],
        ),
    ];
    refused(&config, cases);
}
