//! One skill on several targets: the transfer matrix of `evaluate`, and `optimize` for one
//! target measured on another, and for two under `objective.aggregate: min`.
//!
//! The mock's needs model answers a receipt task right only when the skill holds its kind's
//! rule; model `b` answers every kind right without rules, but on it the `tax` and `tip`
//! rules cancel each other, so the skill that model `a` needs is one that `b` loses with.

use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory_mock::{MockServer, Needs};

use crate::common::{self, read_json, run, with_config};

/// The receipt tasks, a seed with no rule, and the mock serving both models: `b` answers every
/// kind without rules, but on it the tax and tip rules cancel each other.
async fn setup(dir: &Path) -> MockServer {
    std::fs::write(
        dir.join("seed.md"),
        "---\nname: receipt-adjustments\ndescription: Names the adjustment a receipt line makes. Use when reading receipts.\n---\n\nSay the adjustment in one word.\n",
    )
    .unwrap();
    common::receipts::serve(dir, |needs| {
        needs.with_model("b", &common::receipts::KINDS, &[("tax", "tip")])
    })
    .await
}

/// A config of targets `a` and `b` (both models of the mock at `base_url`).
fn config(dir: &Path, name: &str, base_url: &str, targets: &str, extra: &str) -> PathBuf {
    let config = dir.join(format!("{name}.yaml"));
    let optimizer = if extra.contains("optimizer:") {
        ""
    } else {
        "optimizer: {name: gepa, max_metric_calls: 1500, minibatch_size: 6}\n"
    };
    std::fs::write(
        &config,
        format!(
            "skill: seed.md\ndataset: tasks.jsonl\nval_fraction: 0.34\ntest_fraction: 0.25\nseed: 3\n\
             provider: {{name: openai-compatible, model: a, base_url: \"{base_url}/v1\", api_key: k}}\n\
             targets:\n{targets}\
             metric: {{golden: {{mode: exact}}}}\ncache: {{mode: off}}\n{optimizer}{extra}"
        ),
    )
    .unwrap();
    config
}

const BOTH: &str = "  - {name: a, provider: {model: a}}\n  - {name: b, provider: {model: b}}\n";

fn json(ran: &common::Ran) -> Value {
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    serde_json::from_str(&ran.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_matrix_gives_each_target_the_score_its_own_evaluate_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let server = setup(tmp.path()).await;
    let config = config(tmp.path(), "matrix", &server.base_url(), BOTH, "");
    let ruled = tmp.path().join("ruled.md");
    std::fs::write(
        &ruled,
        format!(
            "---\nname: receipt-adjustments\ndescription: Names the adjustment a receipt line makes.\n---\n\nSay the adjustment in one word.\n{}\n{}\n",
            Needs::rule("tax"),
            Needs::rule("tip")
        ),
    )
    .unwrap();
    let matrix = json(&tokio::task::block_in_place(|| {
        run(with_config("evaluate", &config)
            .args(["--split", "val", "--json", "--skill"])
            .arg(&ruled)
            .args(["--skill", "none"]))
    }));
    assert_eq!(matrix["targets"], serde_json::json!(["a", "b"]));
    let rows = matrix["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows.iter().map(|r| r["skill"].as_str().unwrap()).collect();
    // `none` is always the last row, given or not.
    assert_eq!(labels, ["seed.md", "ruled.md", "none"]);
    let cell = |row: usize, target: &str| rows[row]["targets"][target]["score"].as_f64().unwrap();
    // The seed serves no kind on a and every kind on b; the two rules serve two kinds on a
    // and cancel each other's kinds on b.
    assert_eq!((cell(0, "a"), cell(0, "b")), (0.0, 1.0));
    assert!((cell(1, "a") - 2.0 / 3.0).abs() < 0.1, "{}", cell(1, "a"));
    assert!(cell(1, "b") < 0.5, "{}", cell(1, "b"));
    assert_eq!(rows[0]["targets"]["a"]["drop"].as_f64().unwrap(), 1.0);
    assert_eq!(rows[0]["targets"]["b"]["drop"].as_f64().unwrap(), 0.0);
    // Each cell is what a single-target evaluate of that skill gives.
    for (row, skill) in [(0, None), (1, Some(&ruled))] {
        for target in ["a", "b"] {
            let alone = json(&tokio::task::block_in_place(|| {
                let mut command = with_config("evaluate", &config);
                command.args(["--split", "val", "--json", "--targets", target]);
                if let Some(skill) = skill {
                    command.arg("--skill").arg(skill);
                }
                run(&mut command)
            }));
            assert_eq!(alone["score"].as_f64().unwrap(), cell(row, target));
        }
    }
    // The text matrix: a row a skill, a column a target, and the drops.
    let text = tokio::task::block_in_place(|| {
        run(with_config("evaluate", &config)
            .args(["--split", "val", "--skill"])
            .arg(&ruled)
            .args(["--skill", "none"]))
    });
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(
        lines[0].starts_with("Scores on the 8 tasks of the val split"),
        "{}",
        text.stdout
    );
    assert!(lines[2].starts_with("skill") && lines[2].contains("a") && lines[2].ends_with("b"));
    assert!(
        lines[3].starts_with("seed.md") && lines[3].contains("−1.000"),
        "{}",
        text.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_optimized_for_one_target_loses_on_the_other_and_min_holds_both() {
    let tmp = tempfile::tempdir().unwrap();
    let server = setup(tmp.path()).await;
    let target = |name: &str, targets: &str, extra: &str| {
        let config = config(tmp.path(), name, &server.base_url(), targets, extra);
        let out = tmp.path().join(format!("runs-{name}"));
        let ran = tokio::task::block_in_place(|| common::optimize(&[], &config, &out));
        assert_eq!(ran.code, Some(0), "{name}: {}{}", ran.stdout, ran.stderr);
        let folder = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.join("result.json").is_file())
            .unwrap();
        (read_json(&folder.join("result.json")), folder)
    };
    let score = |result: &Value, target: &str, which: &str| {
        result["targets"][target][which]["mean"].as_f64().unwrap()
    };

    // Optimized for a, measured on b: the rules a needs cancel each other on b.
    let (one, folder) = target(
        "one",
        "  - {name: a, provider: {model: a}}\n  - {name: b, provider: {model: b}, optimize: false}\n",
        "",
    );
    assert_eq!(one["targets"]["b"]["optimize"], false);
    assert_eq!(one["targets"]["a"]["split"], "test");
    assert!(
        score(&one, "a", "best") > score(&one, "a", "seed"),
        "{:#}",
        one["targets"]
    );
    assert!(
        score(&one, "b", "best") < score(&one, "b", "seed"),
        "{:#}",
        one["targets"]
    );
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("## Targets (test split)"), "{report}");
    assert!(report.contains("| b | no, measured |"), "{report}");

    // Both optimized, under min: the best holds both (gepa decides by means in this
    // deterministic run; llm_loop through the gate, whose every decision shows its
    // per-target gains).
    for optimizer in ["gepa", "llm_loop"] {
        let (both, folder) = target(
            &format!("both-{optimizer}"),
            BOTH,
            &format!(
                "objective: {{aggregate: min}}\noptimizer: {{name: {optimizer}, rounds: 12, max_metric_calls: 1500, minibatch_size: 2}}\n"
            ),
        );
        let targets = &both["targets"];
        assert!(
            score(&both, "a", "best") > score(&both, "a", "seed"),
            "{optimizer}: {targets:#}"
        );
        let b = &targets["b"];
        assert!(
            b["improvement"]["interval"][1].as_f64().unwrap() >= 0.0,
            "{optimizer}: b detectably worse: {b:#}"
        );
        let gates = common::artifacts::comparisons(&both);
        if optimizer == "llm_loop" {
            assert!(!gates.is_empty(), "no gate decided");
            // The report's gates say each target's gain.
            let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
            assert!(report.contains(" pts (a "), "{report}");
        }
        for gate in gates {
            let gains = gate["per_target"].as_object().expect("per-target gains");
            assert_eq!(gains.len(), 2, "{gate:#}");
            let loses = gains.values().any(|g| g.as_f64().unwrap() < 0.0);
            if gate["accepted"] == true {
                assert!(
                    !loses,
                    "{optimizer} kept an edit that loses on a target: {gate:#}"
                );
            }
        }
    }
}

#[test]
fn bad_targets_name_their_key_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("tasks.jsonl"),
        "{\"input\": \"x\", \"expected\": \"y\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("seed.md"),
        "---\nname: s\ndescription: d\n---\n\nb\n",
    )
    .unwrap();
    let cases: [(&str, &str, &str, &[&str]); 5] = [
        (
            "twice",
            "  - {name: a}\n  - {name: a}\n",
            "",
            &["targets[1].name", "used twice"],
        ),
        (
            "spaces",
            "  - {name: my target}\n",
            "",
            &["targets[0].name", "letters, digits"],
        ),
        (
            "none optimized",
            "  - {name: a, optimize: false}\n",
            "",
            &["'targets'", "at least one target be optimized"],
        ),
        (
            "unknown weight",
            "  - {name: a}\n",
            "objective: {weights: {c: 2}}\n",
            &["objective.weights.c", "no target is named 'c'"],
        ),
        (
            "target harness",
            "  - {name: a, harness: {type: subprocess}}\n",
            "",
            &["targets[0].harness", "command"],
        ),
    ];
    for (name, targets, extra, wanted) in cases {
        let config = config(dir, name, "http://127.0.0.1:9", targets, extra);
        common::assert_refused(&config, name, wanted);
    }
    // --targets names only the config's targets.
    let config = config(dir, "known", "http://127.0.0.1:9", BOTH, "");
    let ran = run(with_config("evaluate", &config).args(["--targets", "c"]));
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("its targets are a, b"),
        "{}",
        ran.stderr
    );
}

/// The fenced blocks of the guide's chapter on targets, in order, each with its language.
fn guide_blocks() -> Vec<(String, String)> {
    let chapter =
        std::fs::read_to_string(common::repo_root().join("docs/guide/targets.md")).unwrap();
    let mut blocks = Vec::new();
    let mut lines = chapter.lines();
    while let Some(line) = lines.next() {
        if let Some(language) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((language.to_owned(), body.join("\n")));
        }
    }
    blocks
}

#[test]
fn the_guides_targets_example_prints_what_the_guide_shows() {
    let blocks = guide_blocks();
    let tmp = tempfile::tempdir().unwrap();
    common::copy_example(
        "invoice-extractor",
        &tmp.path().join("examples/invoice-extractor"),
    );
    // The matrix: the command the guide shows, and the text after it, line for line.
    let at = blocks
        .iter()
        .position(|(language, body)| language == "bash" && body.contains("evaluate"))
        .unwrap();
    let command = shlex::split(&blocks[at].1).unwrap();
    assert_eq!(command[0], "skill-factory");
    let ran = run(common::bin().current_dir(tmp.path()).args(&command[1..]));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        ran.stdout.trim_end(),
        blocks[at + 1].1,
        "the guide's matrix"
    );
    // The report's last section after the optimize the guide names.
    let report = blocks
        .iter()
        .find(|(language, body)| language == "text" && body.starts_with("## Targets"))
        .unwrap();
    let out = tmp.path().join("runs");
    let ran = run(common::bin()
        .current_dir(tmp.path())
        .args([
            "optimize",
            "-c",
            "examples/invoice-extractor/config.targets.yaml",
            "-o",
        ])
        .arg(&out));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let written = std::fs::read_to_string(out.join("latest/report.md")).unwrap();
    assert!(
        written.contains(&report.1),
        "the guide's Targets section is not the report's:\n{written}"
    );
}
