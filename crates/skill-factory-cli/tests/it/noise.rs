//! Repeated samples, intervals and paired comparisons, through the binary: `evaluate
//! --samples`, `evaluate --compare`, the `noise` block's checks, the sample number a program
//! is given, and a noisy `optimize` against a loopback model whose answers flip.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use skill_factory_mock::{Answering, MockConfig, MockServer, Needs, Variation, load_answers};

use crate::common::{self, artifacts, bin, repo_root};

/// The offline config (scripted models) of `examples/<name>`.
fn offline_config(name: &str) -> PathBuf {
    repo_root()
        .join("examples")
        .join(name)
        .join("config.offline.yaml")
}

/// Six labelled tasks and their seed in `dir`, with a config that adds `extra`.
fn task_set(dir: &Path, extra: &str) -> PathBuf {
    common::labelled_tasks(dir, "Echo the message.", 6);
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nmetric: {{golden: {{mode: exact}}}}\n{extra}"
        ),
    )
    .unwrap();
    config
}

fn run(args: &[&str], config: &Path) -> (Option<i32>, String, String) {
    let out = bin().args(args).arg("-c").arg(config).output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn samples_show_the_interval_the_variance_split_and_pass_at_k() {
    let config = offline_config("invoice-extractor");
    let (code, stdout, stderr) = run(&["evaluate", "--worst", "0", "--samples", "3"], &config);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "Score: 0.475 over 16 tasks × 3 samples");
    assert!(
        lines[1].starts_with("95% interval: 0.308 – 0.642 (± 0.167; standard error 0.078"),
        "{stdout}"
    );
    // The scripted target answers every sample alike: no sampling noise, and one task's
    // difference (1/16) is the floor.
    assert!(
        stdout.contains("Noise floor: 0.062, the smallest difference a paired comparison on these tasks detects at 80% power (repeated samples never disagreed"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("Variance: 0% within tasks (samples of a task disagree), 100% between tasks"),
        "{stdout}"
    );
    assert!(stdout.contains("pass@3: 0."), "{stdout}");
    assert!(
        stdout.contains("Regime: deterministic (the api harness at temperature 0, no LLM judge)"),
        "{stdout}"
    );
}

#[test]
fn json_lists_every_sample_with_the_figures() {
    let config = offline_config("ticket-classifier");
    let (code, stdout, stderr) = run(&["evaluate", "--json", "--samples", "2"], &config);
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["samples"], 2);
    assert_eq!(report["tasks"], 20);
    let items = report["items"].as_array().unwrap();
    assert_eq!(items.len(), 40);
    assert_eq!(
        (items[0]["sample"].as_u64(), items[1]["sample"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        items[0]["id"], items[1]["id"],
        "a task's samples are side by side"
    );
    let [low, high] = [0, 1].map(|i| report["interval"][i].as_f64().unwrap());
    let score = report["score"].as_f64().unwrap();
    assert!(low <= score && score <= high, "{report}");
    assert_eq!(report["noise_floor"]["basis"], "no_sampling");
    assert_eq!(report["variance"]["within"], 0.0);
    assert_eq!(report["regime"], "deterministic");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_sample_is_its_own_cache_entry_so_a_rerun_asks_only_for_new_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let server =
        common::labelled_mock(tmp.path(), "Echo the message.", 5, MockConfig::default()).await;
    let config = tmp.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\nmetric: {{golden: {{mode: exact}}}}\n\
             harness: {{temperature: 0.7}}\n\
             provider: {{name: openai-compatible, model: m, base_url: \"{}/v1\", api_key: k}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let evaluate = |samples: &'static str| {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            run(&["evaluate", "--worst", "0", "--samples", samples], &config)
        })
    };
    let (code, stdout, stderr) = evaluate("2").await.unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with("Score: 0.600 over 5 tasks × 2 samples"),
        "{stdout}"
    );
    assert_eq!(server.request_count(), 10, "two samples of five tasks");
    let (_, again, _) = evaluate("2").await.unwrap();
    assert_eq!(again, stdout, "a rerun replays its samples");
    assert_eq!(server.request_count(), 10, "a rerun asks nothing");
    let (code, _, stderr) = evaluate("3").await.unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        server.request_count(),
        15,
        "a third sample asks only for it"
    );
}

/// The offline invoice example's best skill, from a real optimization into `dir`.
fn optimized_invoice_skill(dir: &Path) -> PathBuf {
    let config = offline_config("invoice-extractor");
    let optimized = common::with_config("optimize", &config)
        .arg("-o")
        .arg(dir)
        .assert()
        .success();
    let stdout = String::from_utf8(optimized.get_output().stdout.clone()).unwrap();
    artifacts::artifacts(&stdout).join("best_skill.md")
}

#[test]
fn compare_gives_a_paired_verdict_and_an_exit_code_to_gate_on() {
    let tmp = tempfile::tempdir().unwrap();
    let best = optimized_invoice_skill(tmp.path());
    let seed = repo_root().join("examples/invoice-extractor/seed_skill.md");
    let config = offline_config("invoice-extractor");
    let compare = |a: &Path, b: &Path| {
        let out = bin()
            .args(["evaluate", "-c"])
            .arg(&config)
            .arg("--compare")
            .arg(a)
            .arg(b)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, stdout) = compare(&seed, &best);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("B − A, paired by task and sample over 16 tasks: +"),
        "{stdout}"
    );
    assert!(stdout.contains("Verdict: B is better."), "{stdout}");
    // The other way round, B is worse: a CI job gating on the exit code fails.
    let (code, stdout) = compare(&best, &seed);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("Verdict: B is worse."), "{stdout}");
    // A skill against itself: nothing to see, at this or any sample size.
    let (code, stdout) = compare(&seed, &seed);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("Verdict: no detectable difference at this sample size"),
        "{stdout}"
    );
    // What the skill buys over no skill at all, as JSON.
    let out = bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .args(["--compare", "none"])
        .arg(&best)
        .args(["--samples", "3", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["a"]["skill"], "none");
    assert_eq!(report["verdict"], "better", "{report}");
    let difference = &report["difference"];
    assert!(
        difference["interval"][0].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert_eq!(difference["tasks"], 16);
}

#[test]
fn compare_refuses_a_skill_flag_and_a_missing_file_is_named() {
    let config = offline_config("invoice-extractor");
    let out = bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .args(["--skill", "x.md", "--compare", "a.md", "b.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .args(["--compare", "none", "no-such-skill.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-skill.md"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn noise_keys_are_checked_with_their_place_and_a_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "noise: {samples: 0}",
            "noise.samples",
            "use a small number such as 3",
        ),
        (
            "noise: {samples: 5, max_samples: 2}",
            "noise.max_samples",
            "make max_samples at least samples",
        ),
        (
            "noise: {confidence: 1.5}",
            "noise.confidence",
            "use a confidence such as 0.95",
        ),
        ("noise: {regime: loud}", "regime", "auto"),
        ("noise: {sample: 2}", "sample", "samples"),
    ];
    for (block, key, fix) in cases {
        let config = task_set(
            tmp.path(),
            &format!("harness: {{temperature: 0}}\n{block}\n"),
        );
        let (code, _, stderr) = run(&["evaluate"], &config);
        assert_eq!(code, Some(2), "{block}: {stderr}");
        assert!(
            stderr.contains(key) && stderr.contains(fix),
            "{block}: {stderr}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_program_is_told_which_sample_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let config = task_set(
        tmp.path(),
        "harness: {type: subprocess, command: [sh, -c, 'echo sample-$SKILL_FACTORY_SAMPLE']}\n",
    );
    let (code, stdout, stderr) = run(&["evaluate", "--json", "--samples", "3"], &config);
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let first_task: Vec<&str> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|item| item["output"].as_str().unwrap())
        .collect();
    assert_eq!(first_task, ["sample-0", "sample-1", "sample-2"]);
    // A program's output can vary: the regime says so.
    assert_eq!(report["regime"], "noisy");
    assert!(
        report["regime_reasons"][0]
            .as_str()
            .unwrap()
            .contains("subprocess harness"),
        "{report}"
    );
}

/// 24 tickets in 4 queues for the needs mock: right only when the skill holds the queue's
/// rule.
fn tickets(dir: &Path) -> PathBuf {
    let queues = ["billing", "bug", "feature", "account"];
    let mut lines = String::new();
    for n in 0..6 {
        for queue in queues {
            lines.push_str(&format!(
                "{{\"id\": \"{queue}-{n}\", \"input\": \"ticket about {queue} number {n} for order {}\", \"expected\": \"{queue}\"}}\n",
                1000 + n
            ));
        }
    }
    let dataset = dir.join("dataset.jsonl");
    std::fs::write(&dataset, lines).unwrap();
    std::fs::write(
        dir.join("seed.md"),
        "---\nname: tickets\ndescription: Sort a support ticket into its queue. Use when triaging.\n---\n\nSay the queue in one word.\n",
    )
    .unwrap();
    dataset
}

#[tokio::test(flavor = "multi_thread")]
async fn a_noisy_optimization_gates_by_paired_tests_and_measures_its_headline_afresh() {
    let tmp = tempfile::tempdir().unwrap();
    let dataset = tickets(tmp.path());
    let answers = load_answers(&dataset).unwrap();
    let needs = Needs::new(&answers, HashMap::new(), Vec::new());
    let server = MockServer::start(MockConfig {
        answers,
        answering: Answering::Needs(Arc::new(needs)),
        variation: Variation {
            flips: 0.15,
            ..Variation::default()
        },
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = tmp.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: seed.md\ndataset: dataset.jsonl\nval_fraction: 0.5\ntest_fraction: 0.25\n\
             provider: {{name: openai-compatible, model: m, base_url: \"{}/v1\", api_key: k}}\n\
             optimizer: {{rounds: 6, minibatch_size: 3, patience: 6}}\n\
             harness: {{temperature: 0.7}}\nmetric: {{golden: {{mode: exact}}}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let out = tokio::task::spawn_blocking(move || {
        bin()
            .args(["optimize", "--no-cache", "-c"])
            .arg(&config)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = artifacts::artifacts(&stdout);
    let result = common::read_json(&folder.join("result.json"));
    assert_eq!(result["noise"]["regime"], "noisy");
    assert_eq!(
        result["noise"]["reasons"][0],
        "harness.temperature is 0.7: the target samples"
    );
    let headline = &result["headline"];
    let gated = artifacts::comparisons(&result);
    assert!(!gated.is_empty(), "no gate was decided: {result:#}");
    for comparison in &gated {
        assert_eq!(comparison["regime"], "noisy");
        let bound = comparison["bound"].as_f64().unwrap();
        // Kept exactly when the bound cleared min_delta (0).
        assert_eq!(comparison["accepted"], bound > 0.0, "{comparison}");
    }
    if result["accepted"].as_u64() > Some(1) {
        // The best was scored again on samples the search never drew: the headline.
        assert_eq!(headline["source"], "fresh_samples", "{headline}");
        assert_eq!(headline["samples"], 2);
        assert_eq!(result["best_score"], headline["best"]["mean"]);
        assert!(headline["search_best_score"].is_number());
    } else {
        assert_eq!(headline["source"], "validation", "{headline}");
    }
    // The held-out test: both skills on the same two samples of every task, paired.
    let test = &result["test"];
    assert_eq!(test["samples"], 2);
    assert_eq!(test["paired_improvement"]["tasks"], 6);
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("## Scores with 95% intervals"), "{report}");
    assert!(
        report.contains("The run was noisy (harness.temperature is 0.7: the target samples)"),
        "{report}"
    );
    assert!(report.contains("### Gates"), "{report}");
    let events = std::fs::read_to_string(folder.join("events.jsonl")).unwrap();
    for (event, missing) in [
        ("compared", "no gate event"),
        ("headline_scored", "no headline event"),
    ] {
        let line = format!("\"event\":\"{event}\"");
        assert!(events.contains(&line), "{missing}");
    }
}

#[test]
fn optimize_samples_a_deterministic_seed_and_stays_deterministic_when_its_samples_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let config = offline_config("ticket-classifier");
    let out = bin()
        .args(["optimize", "--samples", "2", "-c"])
        .arg(&config)
        .arg("-o")
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}");
    let folder = artifacts::artifacts(&stdout);
    let result = common::read_json(&folder.join("result.json"));
    assert_eq!(result["noise"]["samples"], 2);
    assert_eq!(result["noise"]["regime"], "deterministic");
    // The seed's two samples of each of the 6 validation tasks.
    assert_eq!(result["headline"]["seed"]["samples"], 12);
}
