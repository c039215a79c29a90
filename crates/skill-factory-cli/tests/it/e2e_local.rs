//! End to end against a real model: every example's `config.local.yaml` is evaluated and
//! optimized with the in-process `local` provider, and one evaluation goes through each HTTP
//! wire format (OpenAI chat completions, Anthropic Messages) to llama.cpp's `llama-server`
//! serving the same GGUF on 127.0.0.1.
//!
//! Built only with the cargo feature `e2e`; `.ci/run` sets it up and runs it:
//! `SKILL_FACTORY_E2E_MODEL` is the GGUF file, `SKILL_FACTORY_E2E_SERVER` the server's base URL
//! (`http://127.0.0.1:PORT`). A missing variable fails the test with what to set.
//!
//! Answers of a 135M model are poor: these tests check structure and invariants (scores in
//! range, run files written, answers non-empty, tokens counted), never quality.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn required_env(name: &str, what: &str) -> String {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value,
        _ => panic!(
            "{name} is not set: it must give {what}. `.ci/run` sets it; by hand run \
             `scripts/setup-tools.sh`, `skill-factory models fetch` and \
             `scripts/build-llama-server.sh`, start the server, then export {name}"
        ),
    }
}

fn model_path() -> PathBuf {
    let path = PathBuf::from(required_env(
        "SKILL_FACTORY_E2E_MODEL",
        "the path of a GGUF chat model (e.g. models/SmolLM2-135M-Instruct.Q4_1.gguf)",
    ));
    assert!(
        path.is_file(),
        "SKILL_FACTORY_E2E_MODEL={} is not a file",
        path.display()
    );
    path.canonicalize().unwrap_or(path)
}

fn server_url() -> String {
    required_env(
        "SKILL_FACTORY_E2E_SERVER",
        "the base URL of llama-server serving the same GGUF, e.g. http://127.0.0.1:8098",
    )
    .trim_end_matches('/')
    .to_string()
}

fn examples_dir() -> PathBuf {
    crate::common::repo_root().join("examples")
}

/// The examples that have a config named `file`.
fn examples_with(file: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(examples_dir())
        .expect("examples folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(file).is_file())
        .collect();
    found.sort();
    found
}

/// A temporary folder holding a copy of `example` (its sub-folders too, not its runs).
fn copy_example(example: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let name = example.file_name().expect("an example folder");
    crate::common::copy_example(&name.to_string_lossy(), tmp.path());
    tmp
}

/// A copy of an example in a temporary folder, its config pointed at `model` and cut to one
/// round with a short proposal timeout, so the suite stays within minutes.
fn staged_example(example: &Path, model: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = copy_example(example);
    let config = tmp.path().join("config.local.yaml");
    let text = fs::read_to_string(&config).expect("read config");
    let staged: Vec<String> = text
        .lines()
        .map(|line| {
            let indent = &line[..line.len() - line.trim_start().len()];
            let key = line.trim_start();
            if key.starts_with("model:") && line.contains(".gguf") {
                format!("{indent}model: '{}'", model.display())
            } else if key.starts_with("rounds:") {
                format!("{indent}rounds: 1")
            } else if key.starts_with("timeout:") {
                format!("{indent}timeout: 45")
            } else {
                line.to_string()
            }
        })
        .collect();
    fs::write(&config, staged.join("\n") + "\n").expect("write config");
    (tmp, config)
}

fn skill_factory(args: &[&str]) -> Output {
    crate::common::bin()
        .args(args)
        .output()
        .expect("run skill-factory")
}

/// `evaluate -c CONFIG --split val --json --no-cache`, which must succeed: its stdout.
fn evaluate_val(config: &str, what: &str) -> String {
    evaluate_val_with(config, &[], what)
}

/// [`evaluate_val`] with `extra` arguments.
fn evaluate_val_with(config: &str, extra: &[&str], what: &str) -> String {
    let mut args = vec![
        "evaluate",
        "-c",
        config,
        "--split",
        "val",
        "--json",
        "--no-cache",
    ];
    args.extend_from_slice(extra);
    succeeded(&skill_factory(&args), what)
}

fn succeeded(output: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed with {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Checks an `evaluate --json` result: every task answered by the model (non-empty text, no
/// error), scores in [0, 1], tokens counted. Returns the overall score.
fn check_evaluation(json: &str, what: &str) -> f64 {
    let result: Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("{what}: evaluate --json printed no JSON ({e}):\n{json}"));
    let score = result["score"].as_f64().expect("score");
    assert!((0.0..=1.0).contains(&score), "{what}: score {score}");
    let items = result["items"].as_array().expect("items");
    assert!(!items.is_empty(), "{what}: no tasks evaluated");
    for item in items {
        let task_score = item["score"].as_f64().expect("task score");
        assert!((0.0..=1.0).contains(&task_score), "{what}: {item}");
    }
    assert_eq!(
        result["failed"].as_u64(),
        Some(0),
        "{what}: failed rollouts in {json}"
    );
    assert!(
        result["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0
            && result["usage"]["output_tokens"].as_u64().unwrap_or(0) > 0,
        "{what}: token usage not reported: {}",
        result["usage"]
    );
    score
}

fn check_target_answers(json: &str, what: &str) {
    let result: Value = serde_json::from_str(json).expect("evaluate --json");
    for item in result["items"].as_array().expect("items") {
        assert!(item["error"].is_null(), "{what}: {item}");
        let output = item["output"].as_str().unwrap_or_default();
        assert!(!output.trim().is_empty(), "{what}: empty answer in {item}");
    }
}

#[test]
fn every_local_example_evaluates_and_optimizes_against_the_real_model() {
    let model = model_path();
    let examples = examples_with("config.local.yaml");
    assert!(
        !examples.is_empty(),
        "no examples/*/config.local.yaml found"
    );
    for example in examples {
        let name = example.file_name().unwrap().to_string_lossy().into_owned();
        let (tmp, config) = staged_example(&example, &model);
        let config_arg = config.to_str().unwrap();

        let stdout = evaluate_val(config_arg, &format!("{name}: evaluate"));
        check_evaluation(&stdout, &format!("{name}: evaluate"));

        let out = tmp.path().join("runs");
        let stdout = succeeded(
            &skill_factory(&["optimize", "-c", config_arg, "--out", out.to_str().unwrap()]),
            &format!("{name}: optimize"),
        );
        assert!(
            stdout.contains("Baseline") || stdout.contains("baseline"),
            "{name}: optimize printed no baseline:\n{stdout}"
        );
        let run = out.join("latest");
        for file in ["result.json", "best_skill.md", "report.md", "events.jsonl"] {
            assert!(run.join(file).is_file(), "{name}: optimize wrote no {file}");
        }
        let result: Value =
            serde_json::from_str(&fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
        let baseline = result["baseline_score"].as_f64().expect("baseline_score");
        let best = result["best_score"].as_f64().expect("best_score");
        assert!((0.0..=1.0).contains(&baseline) && (0.0..=1.0).contains(&best));
        assert!(
            best >= baseline,
            "{name}: best {best} below baseline {baseline}"
        );
        assert!(
            result["usage"].to_string().contains("optimizer"),
            "{name}: the optimizer model was never called: {}",
            result["usage"]
        );
    }
}

/// A copy of the receipt-total example whose target is `provider` (YAML flow mapping).
fn example_served_by(provider: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, config) = staged_example(&examples_dir().join("receipt-total"), &model_path());
    let text = fs::read_to_string(&config).unwrap();
    let start = text.find("\nprovider:").expect("provider block") + 1;
    let end = text[start..]
        .find("\n\n")
        .map(|i| start + i)
        .expect("end of provider block");
    let text = format!("{}provider: {provider}{}", &text[..start], &text[end..]);
    fs::write(&config, text).unwrap();
    (tmp, config)
}

/// A copy of an example whose `config.<server>.yaml` has every provider block pointed at the
/// loopback llama-server (which serves whatever model name it is asked for), cut to one round
/// of compact proposals and short answers: the 135M model behind it rambles to any limit, and
/// what is tested here is that every role reaches the server, not the model.
fn staged_server_example(example: &Path, server: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = copy_example(example);
    let config = tmp.path().join(format!("config.{server}.yaml"));
    let text = fs::read_to_string(&config).expect("read config");
    let pointed = format!(
        "{{name: {server}, base_url: '{}/v1', max_retries: 2,",
        server_url()
    );
    let staged: Vec<String> = text
        .lines()
        .map(|line| {
            let key = line.trim_start();
            if key.starts_with("rounds:") {
                "  rounds: 1\n  reflection: compact".to_string()
            } else if key.starts_with("max_tokens:") {
                "  max_tokens: 24".to_string()
            } else {
                line.replace(&format!("{{name: {server},"), &pointed)
            }
        })
        .collect();
    assert!(
        staged.iter().any(|line| line.contains(&pointed)),
        "{}: no {server} block",
        config.display()
    );
    fs::write(&config, staged.join("\n") + "\n").expect("write config");
    (tmp, config)
}

/// Every example's `config.lmstudio.yaml` and `config.ollama.yaml` run against a real server.
/// A config without a judge is optimized, both twins. One with a judge is evaluated on its
/// validation split, its LM Studio twin only: the 135M model fills the judge's 1024-token
/// answers, so an optimization would take minutes each, and the twins differ only in the
/// server's name and model (checked for every example by the engine's `examples_servers`).
#[test]
fn every_example_runs_with_its_lmstudio_and_ollama_configs_against_a_real_server() {
    let examples = examples_with("config.lmstudio.yaml");
    assert!(examples.len() >= 4, "{examples:?}");
    for example in examples {
        let judged = fs::read_to_string(example.join("config.lmstudio.yaml"))
            .unwrap()
            .contains("\njudge_provider:");
        let servers: &[&str] = if judged {
            &["lmstudio"]
        } else {
            &["lmstudio", "ollama"]
        };
        for server in servers {
            let what = format!(
                "{}/config.{server}.yaml",
                example.file_name().unwrap().to_string_lossy()
            );
            let (tmp, config) = staged_server_example(&example, server);
            let config = config.to_str().unwrap();
            if judged {
                let stdout = evaluate_val(config, &what);
                check_evaluation(&stdout, &what);
                check_target_answers(&stdout, &what);
                assert!(stdout.contains("[llm_judge]"), "{what}: no judge feedback");
                continue;
            }
            let out = tmp.path().join("runs");
            let out = out.to_str().unwrap();
            succeeded(
                &skill_factory(&["optimize", "--no-cache", "-c", config, "-o", out]),
                &what,
            );
            let result: Value = serde_json::from_str(
                &fs::read_to_string(tmp.path().join("runs/latest/result.json"))
                    .expect("result.json"),
            )
            .expect("result.json is JSON");
            let usage = &result["usage"];
            assert!(
                usage["optimizer"]["calls"].as_u64().unwrap_or(0) > 0,
                "{what}: the optimizer never reached the server: {usage}"
            );
            assert_eq!(usage["total"]["failed_calls"], 0, "{what}: {usage}");
            assert_eq!(result["failed_rollouts"], 0, "{what}: {result}");
            let (baseline, best) = (
                result["baseline_score"].as_f64().unwrap(),
                result["best_score"].as_f64().unwrap(),
            );
            assert!(
                best >= baseline,
                "{what}: best {best} below baseline {baseline}"
            );
        }
    }
}

/// The receipt-total example's validation tasks, its target `provider` (YAML flow mapping)
/// being the loopback llama-server: every task answered with text, scored and counted.
fn check_served_by(provider: &str, what: &str) {
    let (_tmp, config) = example_served_by(provider);
    let stdout = evaluate_val(config.to_str().unwrap(), what);
    check_evaluation(&stdout, what);
    check_target_answers(&stdout, what);
}

#[test]
fn llama_server_answers_through_the_openai_wire_format() {
    let url = server_url();
    check_served_by(
        &format!(
            "{{name: openai-compatible, base_url: '{url}/v1', model: smollm2, max_retries: 2}}"
        ),
        "openai-compatible",
    );
}

#[test]
fn llama_server_answers_through_the_anthropic_wire_format() {
    let url = server_url();
    check_served_by(
        &format!("{{name: anthropic, base_url: '{url}', model: smollm2, max_retries: 2}}"),
        "anthropic",
    );
}

#[test]
fn the_local_provider_answers_every_task_with_text() {
    let (_tmp, config) = staged_example(&examples_dir().join("receipt-total"), &model_path());
    let stdout = evaluate_val(config.to_str().unwrap(), "evaluate with the local provider");
    check_target_answers(&stdout, "local");
}

fn local_client() -> std::sync::Arc<dyn skill_factory_llm::ChatModel> {
    client_of(&model_path(), None)
}

/// A `local` client of the GGUF at `model`, with the block's `seed` when given.
fn client_of(model: &Path, seed: Option<u64>) -> std::sync::Arc<dyn skill_factory_llm::ChatModel> {
    let settings = skill_factory_llm::ProviderSettings {
        name: Some("local".into()),
        model: Some(model.to_string_lossy().into_owned()),
        seed,
        ..Default::default()
    };
    skill_factory_llm::build_client(&settings, "", &|_| None).expect("local client")
}

fn chat_request(user: &str, max_tokens: u32) -> skill_factory_llm::ChatRequest {
    skill_factory_llm::ChatRequest::single(
        Some("You are a helpful assistant.".into()),
        user,
        0.0,
        max_tokens,
    )
}

#[tokio::test]
async fn the_local_engine_honours_max_tokens_stop_sequences_and_counts_tokens() {
    use skill_factory_llm::StopReason;
    let client = local_client();
    assert_eq!(client.provider(), "local");
    // No URL: the weights' fingerprint and the seed, which the cache keys by.
    assert!(
        client.endpoint().starts_with("gguf:") && client.endpoint().ends_with(":seed=0"),
        "{}",
        client.endpoint()
    );

    // Cut at max_tokens: exactly that many tokens, and the reason says so.
    let short = client
        .chat(&chat_request("Write a long story about a dragon.", 6))
        .await
        .expect("answer");
    assert_eq!(short.stop_reason, StopReason::MaxTokens);
    assert_eq!(short.usage.output_tokens, 6);
    assert!(short.usage.input_tokens > 10, "{:?}", short.usage);

    // Greedy decoding repeats itself exactly.
    let long = client
        .chat(&chat_request("Write a long story about a dragon.", 40))
        .await
        .expect("answer");
    let again = client
        .chat(&chat_request("Write a long story about a dragon.", 40))
        .await
        .expect("answer");
    assert_eq!(long.text, again.text);
    assert!(
        long.text.starts_with(short.text.trim()),
        "{long:?} vs {short:?}"
    );

    // A stop sequence taken from the middle of that answer ends it there, excluded.
    let words: Vec<&str> = long.text.split_whitespace().collect();
    assert!(words.len() > 6, "answer too short to cut: {:?}", long.text);
    let stop = format!(" {}", words[5]);
    let cut_at = long.text.find(&stop).expect("stop in text");
    let mut request = chat_request("Write a long story about a dragon.", 40);
    request.stop = vec![stop.clone()];
    let stopped = client.chat(&request).await.expect("answer");
    assert_eq!(stopped.stop_reason, StopReason::End);
    assert_eq!(stopped.text, long.text[..cut_at].trim(), "stop {stop:?}");

    // A prompt longer than a sequence's context is refused with a message, not a crash.
    let huge = "receipt line ".repeat(6000);
    let error = client
        .chat(&chat_request(&huge, 8))
        .await
        .expect_err("too long");
    assert!(error.to_string().contains("tokens of context"), "{error}");
}

#[tokio::test]
async fn concurrent_requests_to_the_local_engine_all_get_answers() {
    let client = local_client();
    let questions = [
        "What is the capital of France?",
        "Name a color.",
        "What is 2 plus 2?",
        "Say hello.",
        "Name an animal.",
        "What day comes after Monday?",
    ];
    let mut calls = tokio::task::JoinSet::new();
    for question in questions {
        let client = client.clone();
        calls.spawn(async move { client.chat(&chat_request(question, 24)).await });
    }
    let answers = calls.join_all().await;
    assert_eq!(answers.len(), questions.len());
    for answer in answers {
        let answer = answer.expect("answer");
        assert!(!answer.text.is_empty());
        assert!(answer.usage.output_tokens > 0 && answer.usage.output_tokens <= 24);
    }
}

/// The quickstart's job as the README describes it: `examples/receipt-total/config.local.yaml`
/// unchanged (three rounds, the real model as target and optimizer, `reflection: compact`)
/// finds a skill that beats the seed on validation and does not lose on the held-out test.
#[test]
fn the_quickstart_optimization_finds_a_better_skill_with_the_real_model() {
    let (tmp, config) = staged_example(&examples_dir().join("receipt-total"), &model_path());
    // Staging cuts the search to one round; the quickstart runs the example's own three.
    let original =
        fs::read_to_string(examples_dir().join("receipt-total/config.local.yaml")).unwrap();
    let rounds = original
        .lines()
        .find(|l| l.trim_start().starts_with("rounds:"))
        .unwrap()
        .to_string();
    let staged = fs::read_to_string(&config)
        .unwrap()
        .replace("  rounds: 1", &rounds);
    fs::write(&config, staged).unwrap();
    let out = tmp.path().join("runs");
    succeeded(
        &skill_factory(&[
            "optimize",
            "-c",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-cache",
        ]),
        "receipt-total: optimize",
    );
    let result: Value =
        serde_json::from_str(&fs::read_to_string(out.join("latest/result.json")).unwrap()).unwrap();
    let (baseline, best) = (
        result["baseline_score"].as_f64().unwrap(),
        result["best_score"].as_f64().unwrap(),
    );
    assert!(best > baseline, "no better skill found: {result:#}");
    let test = &result["test"];
    assert!(
        test["best_score"].as_f64() >= test["seed_score"].as_f64(),
        "the best skill loses on the held-out test: {test}"
    );
    assert_ne!(result["best_skill"]["body"], result["history"][0]["body"]);
}

/// The quickstart's model sampled at temperature 0.8: repeated samples of a task disagree, so
/// `evaluate --samples` measures sampling noise apart from the tasks' differences, and an
/// optimization is noisy by its config and reports every score with its interval.
#[test]
fn at_temperature_0_8_the_quickstart_run_is_noisy_and_shows_its_intervals() {
    let (tmp, config) = staged_example(&examples_dir().join("receipt-total"), &model_path());
    let hot = fs::read_to_string(&config)
        .unwrap()
        .replace("temperature: 0.0", "temperature: 0.8");
    fs::write(&config, hot).unwrap();
    let config = config.to_str().unwrap();
    let evaluated = evaluate_val_with(
        config,
        &["--samples", "4"],
        "receipt-total at 0.8: evaluate --samples 4",
    );
    let report: Value = serde_json::from_str(&evaluated).unwrap();
    assert_eq!(report["samples"], 4);
    assert_eq!(report["regime"], "noisy");
    let within = report["variance"]["within"].as_f64().unwrap();
    assert!(
        within > 0.0,
        "four samples of every task all agreed: {report}"
    );
    assert_eq!(report["noise_floor"]["basis"], "sampling", "{report}");
    let out = tmp.path().join("runs");
    succeeded(
        &skill_factory(&[
            "optimize",
            "-c",
            config,
            "--out",
            out.to_str().unwrap(),
            "--no-cache",
        ]),
        "receipt-total at 0.8: optimize",
    );
    let report = fs::read_to_string(out.join("latest/report.md")).unwrap();
    assert!(report.contains("## Scores with 95% intervals"), "{report}");
    assert!(
        report.contains("The run was noisy (harness.temperature is 0.8: the target samples)"),
        "{report}"
    );
    let result: Value =
        serde_json::from_str(&fs::read_to_string(out.join("latest/result.json")).unwrap()).unwrap();
    let [low, high] = [0, 1].map(|i| result["headline"]["best"]["interval"][i].as_f64().unwrap());
    let best = result["best_score"].as_f64().unwrap();
    assert!(low <= best && best <= high, "{result:#}");
    assert!(
        result["test"]["paired_improvement"]["interval"].is_array(),
        "{result:#}"
    );
}

/// Above temperature 0 a draw is seeded by the block's `seed` and the request's sample index:
/// the same (seed, sample) gives the same answer, other samples and other seeds draw others,
/// and the seed is part of the client's identity (so the cache keeps their answers apart).
#[tokio::test]
async fn sampling_is_seeded_by_the_block_seed_and_the_sample_index() {
    let seven = client_of(&model_path(), Some(7));
    let eight = client_of(&model_path(), Some(8));
    assert_ne!(seven.endpoint(), eight.endpoint());
    let sample = |client: std::sync::Arc<dyn skill_factory_llm::ChatModel>, index: u32| async move {
        let mut request = chat_request("Invent a name for a new fruit and describe it.", 24);
        request.temperature = 0.9;
        request.sample_index = index;
        client.chat(&request).await.expect("answer").text
    };
    let mut by_seven = Vec::new();
    for index in 0..4 {
        let first = sample(seven.clone(), index).await;
        assert_eq!(
            first,
            sample(seven.clone(), index).await,
            "sample {index} repeats"
        );
        by_seven.push(first);
    }
    let distinct: std::collections::HashSet<&String> = by_seven.iter().collect();
    assert!(distinct.len() > 1, "four samples all gave {by_seven:?}");
    let mut by_eight = Vec::new();
    for index in 0..4 {
        by_eight.push(sample(eight.clone(), index).await);
    }
    assert_ne!(by_seven, by_eight, "another seed draws other answers");
}

/// Every client of one file uses one loaded model, whatever role it plays.
#[tokio::test]
async fn clients_of_one_file_share_one_loaded_model() {
    let model = model_path();
    let loaded = |path: &Path| {
        skill_factory_llm::local::loaded_models()
            .iter()
            .filter(|p| p.as_path() == path)
            .count()
    };
    let target = client_of(&model, None);
    let judge = client_of(&model, Some(3));
    let optimizer = client_of(&model, None);
    assert_eq!(
        loaded(&model),
        1,
        "{:?}",
        skill_factory_llm::local::loaded_models()
    );
    for client in [&target, &judge, &optimizer] {
        assert!(
            !client
                .chat(&chat_request("Say hi.", 4))
                .await
                .unwrap()
                .text
                .is_empty()
        );
    }
    assert_eq!(loaded(&model), 1);
    drop((target, judge, optimizer));
}

/// `judge_provider: local` grades with the in-process model: every task's feedback carries the
/// judge's part (a 135M judge often answers no JSON, and is then dropped for that task, with
/// the reason, instead of failing the run).
#[test]
fn a_local_judge_grades_every_task() {
    let (tmp, config) = staged_example(&examples_dir().join("receipt-total"), &model_path());
    // Three receipts: a judge call of a small model can run to its 1024-token limit.
    let dataset = tmp.path().join("dataset.jsonl");
    let three: String = fs::read_to_string(&dataset)
        .unwrap()
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&dataset, three).unwrap();
    let text = fs::read_to_string(&config).unwrap();
    let with_judge = format!(
        "{text}judge_provider:\n  name: local\n  model: '{}'\n",
        model_path().display()
    )
    .replace("test_fraction: 0.25\n", "")
    .replace(
        "metric:\n  golden:",
        "metric:\n  judge:\n    criteria:\n      - {name: correct, description: Is the answer the receipt's total?}\n  golden:",
    );
    assert!(with_judge.contains("judge:\n    criteria"), "{with_judge}");
    fs::write(&config, with_judge).unwrap();
    let stdout = succeeded(
        &skill_factory(&[
            "evaluate",
            "-c",
            config.to_str().unwrap(),
            "--json",
            "--no-cache",
        ]),
        "evaluate with a local judge",
    );
    let result: Value = serde_json::from_str(&stdout).unwrap();
    let items = result["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for item in items {
        let feedback = item["feedback"].as_str().unwrap_or_default();
        assert!(feedback.contains("[llm_judge]"), "no judge part: {item}");
    }
}

/// Another family and quantizations: Gemma 3 270M (Q4_K_M; `models fetch gemma3-270m`) and a
/// Q8_0 requantization of SmolLM2 (made by llama.cpp's `llama-quantize` in `.ci/run`) load and
/// answer, with real token counts. `SKILL_FACTORY_E2E_GEMMA` and `SKILL_FACTORY_E2E_Q8` name
/// the files.
#[tokio::test]
async fn a_gemma_model_and_a_q8_model_load_and_answer() {
    for (variable, architecture, quantization) in [
        ("SKILL_FACTORY_E2E_GEMMA", "gemma3", "Q4_K_M"),
        ("SKILL_FACTORY_E2E_Q8", "llama", "Q8_0"),
    ] {
        let path = PathBuf::from(required_env(variable, "the path of a GGUF file"));
        let info = skill_factory_llm::local::gguf::read_gguf_info(&path).expect("a GGUF header");
        assert_eq!(info.architecture, architecture, "{}", path.display());
        assert_eq!(
            info.quantization.as_deref(),
            Some(quantization),
            "{}",
            path.display()
        );
        let client = client_of(&path, None);
        let answer = client
            .chat(&chat_request("The capital of France is", 8))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            !answer.text.trim().is_empty(),
            "{}: {answer:?}",
            path.display()
        );
        assert!(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0);
        assert!(answer.usage.output_tokens <= 8);
    }
}
