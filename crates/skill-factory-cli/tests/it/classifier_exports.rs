//! Classifier mode's way to production: declarative policies (`lab simulate`), exports
//! (`lab export`) run by Node and Python against the lab's own scorer, and `lab parity` of
//! artifacts and production verdicts, on a workspace whose answers the Python tool bought
//! (`crates/skill-factory-lab/tests/fixtures/python/`: its answers, its outputs).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use skill_factory_lab::answers::lab::Asked;
use skill_factory_lab::run::workspace::Project;

use crate::common::external_tool::external_tool;
use crate::common::{bin, repo_root, run};

pub(crate) fn fixtures() -> PathBuf {
    repo_root().join("crates/skill-factory-lab/tests/fixtures")
}

/// The Python tool's recorded run of `name` in `commands.json` of `folder`.
fn recorded(folder: &str, name: &str) -> Value {
    let file = fixtures().join("python").join(folder).join("commands.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no recorded command {name:?}"))
        .clone()
}

/// The pr-mismatch workspace the Python tool optimized (answers cached, texts left out), with
/// the two policies as YAML beside it and a config that uses `tiered`.
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let source = fixtures().join("python/parity/workspace");
    copy(&source, tmp.path());
    for file in ["seed_probeset.json", "candidates.json"] {
        std::fs::copy(
            repo_root().join("examples/pr-mismatch").join(file),
            tmp.path().join(file),
        )
        .unwrap();
    }
    for file in ["tiered.yaml", "ci_guard.yaml"] {
        std::fs::copy(
            fixtures().join("policies").join(file),
            tmp.path().join(file),
        )
        .unwrap();
    }
    // Nothing is asked: every answer is cached, and the address is never used.
    let config = std::fs::read_to_string(tmp.path().join("config.yaml"))
        .unwrap()
        .replace("@SYSTEMONE_URL@", "http://127.0.0.1:9");
    std::fs::write(tmp.path().join("config.yaml"), &config).unwrap();
    std::fs::write(
        tmp.path().join("policy.yaml"),
        format!("{config}policy: tiered.yaml\n"),
    )
    .unwrap();
    tmp
}

/// The workspace's best probe set with every pool question in its bank (kept for the
/// policy, which reads one its score does not), written as `kept.json`.
fn kept(ws: &Path) -> PathBuf {
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(ws.join(p)).unwrap()).unwrap()
    };
    let (mut set, pool) = (read("ws/probeset.json"), read("ws/pool.json"));
    set["frames"] = pool["frames"].clone();
    set["questions"] = pool["questions"].clone();
    set.as_object_mut().unwrap().remove("sha256");
    let path = ws.join("kept.json");
    std::fs::write(&path, set.to_string()).unwrap();
    path
}

pub(crate) fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub(crate) fn lab(dir: &Path, args: &[&str]) -> crate::common::Ran {
    run(bin().current_dir(dir).arg("lab").args(args))
}

/// `lab simulate -c config.yaml` with each of `policies` as a `--policy` file.
fn simulate(dir: &Path, policies: &[&str]) -> crate::common::Ran {
    let mut args = vec!["simulate", "-c", "config.yaml"];
    for policy in policies {
        args.extend(["--policy", policy]);
    }
    lab(dir, &args)
}

#[test]
fn declarative_policies_replay_exactly_as_the_python_tools_python_ones() {
    let ws = workspace();
    let ran = simulate(ws.path(), &["tiered.yaml", "ci_guard.yaml"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let theirs = recorded("simulate", "simulate tiered and ci_guard");
    assert_eq!(ran.stdout, theirs["stdout"].as_str().unwrap());
    // The config's own policy, with the threshold policy beside it by default.
    let ran = lab(
        ws.path(),
        &["simulate", "-c", "policy.yaml", "--splits", "train"],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(
        lines[0].starts_with("tiered ") && lines[1].starts_with("threshold "),
        "{}",
        ran.stdout
    );
    // The test split stays sealed here too.
    let sealed = lab(
        ws.path(),
        &["simulate", "-c", "config.yaml", "--splits", "test"],
    );
    assert_eq!(sealed.code, Some(2));
}

#[test]
fn a_broken_policy_names_the_file_the_rule_and_the_fix() {
    let ws = workspace();
    let cases = [
        (
            "{levels: [allow, block], rules: [{level: deny, when: {flagged: true}}]}",
            "rules[0].level: 'deny' is not one of the levels [allow, block]",
        ),
        (
            "{levels: [allow, block], rules: [{level: block, when: {score: {above: 1}}}]}",
            "unknown operator 'above'",
        ),
        (
            "{levels: [allow, block], rules: [{level: block, when: {answer: {question: nope, gte: 1}}}]}",
            "no question 'nope' in the probe set",
        ),
        (
            "{levels: [allow, block], rules: [{level: block, when: {colour: red}}]}",
            "unknown condition 'colour'",
        ),
    ];
    for (policy, expected) in cases {
        std::fs::write(ws.path().join("bad.yaml"), policy).unwrap();
        let ran = simulate(ws.path(), &["bad.yaml"]);
        assert_eq!(ran.code, Some(2), "{policy}");
        assert!(
            ran.stderr.contains("bad.yaml") && ran.stderr.contains(expected),
            "{policy}: {}",
            ran.stderr
        );
    }
}

/// The lab's (score, flags, level) of each case, by case id.
type Verdicts = HashMap<String, (Option<f64>, bool, String)>;

/// The Rust scorer's (score, flags, level) of every train and val example, and of a few
/// made-up answer maps (none, one missing answer), for `probeset` through the config's policy.
fn lab_verdicts(ws: &Path, probeset: &Path) -> (Vec<Value>, Verdicts) {
    let project = Project::load(&ws.join("policy.yaml"), None).unwrap();
    let lab = project.config.lab(&|_: &str| None).unwrap();
    let set = skill_factory_lab::probe::probeset::ProbeSet::load(probeset).unwrap();
    let (policy, _) = project.policy().unwrap();
    let pool = project.pool().unwrap();
    let examples: Vec<_> = project
        .split(skill_factory_lab::data::split::Split::Train)
        .iter()
        .chain(project.split(skill_factory_lab::data::split::Split::Val))
        .collect();
    let table = lab.table(
        &examples,
        &Asked::all(pool.compiled().unwrap()),
        set.state_budget,
        0,
    );
    let mut cases = Vec::new();
    let mut expected = HashMap::new();
    let mut add = |id: String,
                   example: &skill_factory_lab::data::dataset::Example,
                   answers: HashMap<String, f64>| {
        let score = set.score_of(&answers);
        let level = policy.verdict(example, &answers, score, set.threshold);
        let mut fields = example.metadata.clone();
        fields.insert("id".into(), json!(example.id));
        fields.insert("group".into(), json!(example.group));
        fields.insert("source".into(), json!(example.source));
        cases.push(json!({"id": id, "answers": answers, "example": fields}));
        expected.insert(
            id,
            (score, set.flags(&answers), policy.levels[level].clone()),
        );
    };
    for example in &examples {
        add(
            example.id.clone(),
            example,
            table.answers(&example.id).clone(),
        );
    }
    let first = examples[0];
    add("no answers".into(), first, HashMap::new());
    let mut partial = table.answers(&first.id).clone();
    let dropped = set.score_ids()[0].clone();
    partial.remove(&dropped);
    add("one answer missing".into(), first, partial);
    (cases, expected)
}

/// Runs `command` on the export and checks every case against the lab's verdict.
fn check_export(command: &mut Command, what: &str, expected: &Verdicts) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{what}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut seen = 0;
    for line in stdout.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let (score, flags, level) = &expected[row["id"].as_str().unwrap()];
        let theirs = row["score"].as_str().unwrap();
        match score {
            None => assert_eq!(theirs, "nan", "{what} {row}"),
            Some(s) => assert_eq!(
                theirs.parse::<f64>().unwrap().to_bits(),
                s.to_bits(),
                "{what} {row}: the lab scores {s:?}"
            ),
        }
        assert_eq!(row["flags"], *flags, "{what} {row}");
        assert_eq!(row["verdict"], level.as_str(), "{what} {row}");
        seen += 1;
    }
    assert_eq!(seen, expected.len(), "{what}: every case answered");
}

#[test]
fn exports_score_flag_and_judge_every_example_exactly_as_the_lab_does() {
    let ws = workspace();
    let modules = external_tool(
        "SKILL_FACTORY_BROWSER_MODULES",
        "skill-factory-ci/browser/node_modules",
        "the typescript package (npm), which type-checks and transpiles the TypeScript export",
        "scripts/setup-browser.sh   (needs npm)",
    );
    // The workspace's best, and one that reads many pool questions through every operator.
    let best = kept(ws.path());
    let complex = ws.path().join("complex.json");
    let mut set: Value = serde_json::from_str(&std::fs::read_to_string(&best).unwrap()).unwrap();
    set["score"] = json!({"max": [
        {"mean": ["hidden_behavior@auditor", "undisclosed_change@reviewer", "silent_weakening@auditor"]},
        {"scale": [{"min": ["deletes_code", "touches_ci"]}, 1.5]},
        {"weighted": [[0.25, "changes_values"], [0.5, {"sum": ["touches_access", "undisclosed_change@auditor", 0.1]}]]},
    ]});
    set["threshold"] = json!(0.55);
    std::fs::write(&complex, set.to_string()).unwrap();
    let scripts = repo_root().join("crates/skill-factory-cli/tests/it/exports");
    for probeset in [best, complex] {
        let (cases, expected) = lab_verdicts(ws.path(), &probeset);
        let levels: std::collections::BTreeSet<&str> =
            expected.values().map(|(_, _, l)| l.as_str()).collect();
        assert_eq!(
            levels.len(),
            3,
            "every level of the policy occurs: {levels:?}"
        );
        assert!(
            expected.values().any(|(s, _, _)| s.is_none()),
            "a case without a score"
        );
        let cases_file = ws.path().join("cases.json");
        std::fs::write(&cases_file, serde_json::to_string(&cases).unwrap()).unwrap();
        for suffix in ["ts", "mjs", "py"] {
            let out = ws.path().join(format!("export.{suffix}"));
            let ran = lab(
                ws.path(),
                &[
                    "export",
                    "--probeset",
                    probeset.to_str().unwrap(),
                    "-o",
                    out.to_str().unwrap(),
                    "-c",
                    "policy.yaml",
                ],
            );
            assert_eq!(ran.code, Some(0), "{}", ran.stderr);
            assert!(ran.stdout.contains("policy tiered"), "{}", ran.stdout);
            let what = format!("{} as .{suffix}", probeset.display());
            if suffix == "py" {
                check_export(
                    Command::new("python3")
                        .arg(scripts.join("evaluate.py"))
                        .arg(&out)
                        .arg(&cases_file),
                    &what,
                    &expected,
                );
            } else {
                check_export(
                    Command::new("node")
                        .arg(scripts.join("evaluate.mjs"))
                        .arg(&out)
                        .arg(&cases_file)
                        .arg(&modules),
                    &what,
                    &expected,
                );
            }
        }
    }
}

#[test]
fn exports_refuse_what_production_could_not_run_and_are_reproducible() {
    let ws = workspace();
    let out = ws.path().join("p.ts");
    let export = |args: &[&str]| {
        lab(
            ws.path(),
            &[&["export", "-o", out.to_str().unwrap()][..], args].concat(),
        )
    };
    // A probe set without a threshold.
    let seed = repo_root().join("examples/pr-mismatch/seed_probeset.json");
    let refused = export(&["--probeset", seed.to_str().unwrap()]);
    assert_eq!(refused.code, Some(2));
    assert!(
        refused.stderr.contains("has no threshold yet"),
        "{}",
        refused.stderr
    );
    assert!(!out.exists(), "nothing written");
    // A policy that reads a question the probe set does not ask.
    std::fs::write(
        ws.path().join("other.yaml"),
        format!(
            "{}policy: {{levels: [a, b], rules: [{{level: b, when: {{answer: {{question: touches_ci, gte: 0.5}}}}}}]}}\n",
            std::fs::read_to_string(ws.path().join("config.yaml")).unwrap()
        ),
    )
    .unwrap();
    let refused = export(&["--probeset", "ws/probeset.json", "-c", "other.yaml"]);
    assert_eq!(refused.code, Some(2));
    assert!(
        refused.stderr.contains("reads touches_ci") && refused.stderr.contains("keep_questions"),
        "{}",
        refused.stderr
    );
    // An unknown suffix.
    let txt = lab(
        ws.path(),
        &["export", "--probeset", "ws/probeset.json", "-o", "p.txt"],
    );
    assert_eq!(txt.code, Some(2));
    assert!(
        txt.stderr.contains("--format json|ts|js|py"),
        "{}",
        txt.stderr
    );
    // The JSON export is the probe set file, byte for byte as the Python tool writes it.
    let json_out = ws.path().join("p.json");
    let ran = lab(
        ws.path(),
        &[
            "export",
            "--probeset",
            "ws/probeset.json",
            "-o",
            json_out.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        std::fs::read_to_string(&json_out).unwrap(),
        std::fs::read_to_string(ws.path().join("ws/probeset.json")).unwrap()
    );
    // An astral character in a question survives the Python export (the Python tool's writes
    // two lone surrogates there).
    let unicode = fixtures().join("python/inputs/exports/unicode.json");
    let py = ws.path().join("u.py");
    let ran = lab(
        ws.path(),
        &[
            "export",
            "--probeset",
            unicode.to_str().unwrap(),
            "-o",
            py.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let shown = Command::new("python3")
        .arg("-c")
        .arg("import importlib.util, json, sys; s = importlib.util.spec_from_file_location('m', sys.argv[1]); m = importlib.util.module_from_spec(s); s.loader.exec_module(m); print(json.dumps(m.QUESTIONS, ensure_ascii=False))")
        .arg(&py)
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let questions = String::from_utf8(shown.stdout).unwrap();
    let source: Value = serde_json::from_str(&std::fs::read_to_string(&unicode).unwrap()).unwrap();
    let wanted = source.to_string();
    let astral: Vec<char> = wanted.chars().filter(|c| *c as u32 > 0xffff).collect();
    assert!(
        !astral.is_empty() && astral.iter().all(|c| questions.contains(*c)),
        "{questions}"
    );
}

#[test]
fn artifact_parity_passes_a_fresh_export_and_names_the_first_difference() {
    let ws = workspace();
    kept(ws.path());
    let parity = |artifact: &str, config: Option<&str>| {
        let mut args = vec!["parity", "--probeset", "kept.json", "--artifact", artifact];
        if let Some(config) = config {
            args.extend(["-c", config]);
        }
        lab(ws.path(), &args)
    };
    for (file, config) in [
        ("a.ts", None),
        ("a.py", None),
        ("a.mjs", None),
        ("a.json", None),
        ("p.ts", Some("policy.yaml")),
    ] {
        let mut args = vec!["export", "--probeset", "kept.json", "-o", file];
        if let Some(config) = config {
            args.extend(["-c", config]);
        }
        assert_eq!(lab(ws.path(), &args).code, Some(0));
        let ran = parity(file, config);
        assert_eq!(ran.code, Some(0), "{file}: {}{}", ran.stdout, ran.stderr);
        assert!(
            ran.stdout.starts_with("artifact parity: OK (measured "),
            "{}",
            ran.stdout
        );
    }
    // A TypeScript file with a changed threshold: exit 4 and the line.
    let text = std::fs::read_to_string(ws.path().join("a.ts")).unwrap();
    let (line, threshold) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("export const THRESHOLD"))
        .unwrap();
    std::fs::write(
        ws.path().join("b.ts"),
        text.replace(threshold, "export const THRESHOLD = 0.5;"),
    )
    .unwrap();
    let ran = parity("b.ts", None);
    assert_eq!(ran.code, Some(4));
    assert!(
        ran.stdout.contains(&format!(
            "line {} differs: expected '{threshold}', shipped 'export const THRESHOLD = 0.5;'",
            line + 1
        )),
        "{}",
        ran.stdout
    );
    // A policy compiled in, checked without it.
    let ran = parity("p.ts", None);
    assert_eq!(ran.code, Some(4));
    assert!(
        ran.stdout.contains("pass the config (-c)"),
        "{}",
        ran.stdout
    );
    // JSON: a renamed copy passes, a changed threshold does not; as the Python tool says.
    let mut renamed: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path().join("a.json")).unwrap()).unwrap();
    renamed["name"] = json!("shipped-name");
    std::fs::write(ws.path().join("renamed.json"), renamed.to_string()).unwrap();
    assert_eq!(parity("renamed.json", None).code, Some(0));
    renamed["threshold"] = json!(0.9);
    std::fs::write(ws.path().join("changed.json"), renamed.to_string()).unwrap();
    let ran = parity("changed.json", None);
    assert_eq!(ran.code, Some(4));
    assert!(
        ran.stdout
            .ends_with("content differs from the measured probe set\n"),
        "{}",
        ran.stdout
    );
    let missing = parity("nowhere.ts", None);
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("nowhere.ts not found"),
        "{}",
        missing.stderr
    );
    let neither = lab(ws.path(), &["parity", "--probeset", "ws/probeset.json"]);
    assert_eq!(neither.code, Some(2));
}

#[test]
fn production_parity_agrees_with_the_python_tool_and_refuses_what_it_cannot_read() {
    let ws = workspace();
    let production = fixtures().join("python/inputs/parity/production");
    let parity = |file: &str, extra: &[&str]| {
        let path = production.join(file);
        let args = [
            &[
                "parity",
                "-c",
                "config.yaml",
                "--probeset",
                "ws/probeset.json",
                "--production",
                path.to_str().unwrap(),
            ][..],
            extra,
        ]
        .concat();
        lab(ws.path(), &args)
    };
    for (file, name, extra) in [
        ("flagged-match.jsonl", "production flagged-match", &[][..]),
        ("score-match.jsonl", "production score-match", &[]),
        ("verdict-match.jsonl", "production verdict-match", &[]),
        ("flagged-wins.jsonl", "production flagged-wins", &[]),
        ("blank-lines.jsonl", "production blank-lines", &[]),
        ("partial.jsonl", "production partial", &[]),
        ("flagged-mismatch.jsonl", "production flagged-mismatch", &[]),
        ("score-mismatch.jsonl", "production score-mismatch", &[]),
        (
            "flagged-within-tolerance.jsonl",
            "production flagged-within-tolerance",
            &[],
        ),
        (
            "flagged-within-tolerance.jsonl",
            "production flagged-within-tolerance --tolerance 0.1",
            &["--tolerance", "0.1"],
        ),
    ] {
        let ran = parity(file, extra);
        let theirs = recorded("parity", name);
        assert_eq!(
            ran.code,
            theirs["exit"].as_i64().map(|c| c as i32),
            "{name}: {}{}",
            ran.stdout,
            ran.stderr
        );
        assert_eq!(ran.stdout, theirs["stdout"].as_str().unwrap(), "{name}");
    }
    // Where the Python tool reads on silently, a clear error with the file and line.
    for (file, expected) in [
        ("no-id.jsonl", "no-id.jsonl:"),
        ("no-verdict.jsonl", "has no verdict"),
        ("bad-json.jsonl", "bad-json.jsonl:2: invalid JSON"),
        (
            "extra-ids.jsonl",
            "no example 'not-an-example' in the dataset",
        ),
        (
            "verdict-levels.jsonl",
            "verdict 'allow' is not a level of policy 'threshold'",
        ),
    ] {
        let ran = parity(file, &[]);
        assert_eq!(ran.code, Some(2), "{file}: {}", ran.stdout);
        assert!(ran.stderr.contains(expected), "{file}: {}", ran.stderr);
    }
    let sealed = parity("flagged-match.jsonl", &["--split", "test"]);
    assert_eq!(sealed.code, Some(2), "{}", sealed.stdout);
    let without_config = lab(
        ws.path(),
        &[
            "parity",
            "--probeset",
            "ws/probeset.json",
            "--production",
            "x.jsonl",
        ],
    );
    assert_eq!(without_config.code, Some(2));
    assert!(
        without_config.stderr.contains("-c"),
        "{}",
        without_config.stderr
    );
    // Verdicts of the config's policy levels are read as such.
    std::fs::write(
        ws.path().join("levels.jsonl"),
        "{\"id\": \"consistent-rename-refactor-1\", \"verdict\": \"block\"}\n",
    )
    .unwrap();
    let path = ws.path().join("levels.jsonl");
    let ran = lab(
        ws.path(),
        &[
            "parity",
            "-c",
            "policy.yaml",
            "--probeset",
            "ws/probeset.json",
            "--production",
            path.to_str().unwrap(),
        ],
    );
    assert!(
        ran.stdout.starts_with("behavior parity: ") && ran.stdout.contains("on 1 examples"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
}

/// The reflective run of the Python tool's fixture, ours: the same seed, pool, System One
/// answers (the mock's hashed probabilities) and scripted proposer replies.
async fn reflective_run() -> (tempfile::TempDir, crate::common::Ran, Value) {
    let stub = skill_factory_mock::SystemOneStub::start(|state, _, question| {
        skill_factory_mock::hashed_probability(state, question)
    })
    .await
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let inputs = fixtures().join("python/inputs/reflect");
    for file in ["dataset.jsonl", "candidates.json"] {
        std::fs::copy(
            repo_root().join("examples/pr-mismatch").join(file),
            tmp.path().join(file),
        )
        .unwrap();
    }
    std::fs::copy(
        inputs.join("seed_probeset.json"),
        tmp.path().join("seed_probeset.json"),
    )
    .unwrap();
    let replies: Value =
        serde_json::from_str(&std::fs::read_to_string(inputs.join("replies.json")).unwrap())
            .unwrap();
    let template = std::fs::read_to_string(inputs.join("config.yaml.in")).unwrap();
    let (kept, _) = template.split_once("optimizer_provider:").unwrap();
    let config = format!(
        "{}optimizer_provider: {{name: fake, model: fake-proposer, responses: {}}}\n",
        kept.replace("@SYSTEMONE_URL@", &stub.url()),
        replies
    );
    std::fs::write(tmp.path().join("config.yaml"), config).unwrap();
    let ran = run(bin()
        .current_dir(tmp.path())
        .args(["optimize", "-c", "config.yaml"]));
    let history = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("ws/history.json")).unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    drop(stub);
    (tmp, ran, history)
}

#[tokio::test(flavor = "multi_thread")]
async fn reflective_rounds_show_the_proposer_what_the_python_tool_shows_and_keep_the_same_rounds() {
    let (_tmp, ran, ours) = reflective_run().await;
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let theirs: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("python/reflect/history.json")).unwrap(),
    )
    .unwrap();
    let (ours, theirs) = (ours.as_array().unwrap(), theirs.as_array().unwrap());
    assert_eq!(ours.len(), theirs.len(), "{ours:#?}");
    for (o, t) in ours.iter().zip(theirs) {
        for key in [
            "round",
            "change",
            "candidate",
            "score",
            "accepted",
            "reasons",
            "new_questions",
            "state_budget",
        ] {
            assert_eq!(
                o[key], t[key],
                "round {} {key}: {}",
                t["round"], o["rationale"]
            );
        }
        if t["threshold"].is_null() {
            assert!(o["threshold"].is_null());
        } else {
            let (a, b) = (
                o["threshold"].as_f64().unwrap(),
                t["threshold"].as_f64().unwrap(),
            );
            assert!(
                (a - b).abs() < 1e-9,
                "round {} threshold {a} vs {b}",
                t["round"]
            );
        }
    }
    // What the proposer was shown, round by round, is the Python tool's prompt.
    let prompts: Vec<Value> =
        std::fs::read_to_string(fixtures().join("python/reflect/prompts.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let shown: Vec<&Value> = ours.iter().filter(|r| r.get("prompt").is_some()).collect();
    assert_eq!(shown.len(), prompts.len());
    for (round, prompt) in shown.iter().zip(&prompts) {
        let messages = &prompt["body"]["messages"];
        assert_eq!(
            messages[0]["content"],
            skill_factory_lab::optimizer::reflect::SYSTEM
        );
        assert_eq!(
            round["prompt"], messages[1]["content"],
            "round {}",
            round["round"]
        );
    }
}

#[test]
fn a_skill_scanner_lab_imports_as_the_python_tool_imports_it() {
    let tmp = tempfile::tempdir().unwrap();
    copy(&fixtures().join("python/inputs/scanner"), tmp.path());
    let theirs = fixtures().join("python/scanner");
    let ran = lab(
        tmp.path(),
        &[
            "import-scanner",
            "lab",
            "--out",
            "out",
            "--questions",
            "questions.json",
        ],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        ran.stdout,
        recorded("scanner", "import-scanner")["stdout"]
            .as_str()
            .unwrap()
    );
    for file in ["dataset.jsonl", "answers.jsonl", "pool.json"] {
        assert_eq!(
            std::fs::read(tmp.path().join("out").join(file)).unwrap(),
            std::fs::read(theirs.join("out").join(file)).unwrap(),
            "{file}"
        );
    }
    let ran = lab(tmp.path(), &["import-scanner", "lab", "--out", "out-noq"]);
    assert_eq!(
        ran.stdout,
        recorded("scanner", "import-scanner without --questions")["stdout"]
            .as_str()
            .unwrap()
    );
    assert!(!tmp.path().join("out-noq/pool.json").exists());
    for (args, name) in [
        (
            vec!["import-scanner", "not-a-lab", "--out", "bad"],
            "not-a-lab/bundles-96000.jsonl is missing",
        ),
        (
            vec!["import-scanner", "lab", "--out", "bad", "--budget", "24000"],
            "lab/bundles-24000.jsonl is missing",
        ),
    ] {
        let ran = lab(tmp.path(), &args);
        assert_eq!(ran.code, Some(2));
        assert!(
            ran.stderr.contains("not a skill-scanner lab") && ran.stderr.contains(name),
            "{}",
            ran.stderr
        );
    }
    // The imported workspace reads: its splits, and the answers serve it from the cache.
    std::fs::copy(
        tmp.path().join("out/dataset.jsonl"),
        tmp.path().join("dataset.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        tmp.path().join("out/answers.jsonl"),
        tmp.path().join("answers.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        tmp.path().join("out/pool.json"),
        tmp.path().join("pool.json"),
    )
    .unwrap();
    let status = lab(tmp.path(), &["status", "-c", "config.yaml"]);
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    assert!(
        status
            .stdout
            .contains("splits: train 1+/1-, val 1+/1-, test 1+/1-"),
        "{}",
        status.stdout
    );
    assert!(
        status.stdout.contains("cache: 7 answers"),
        "{}",
        status.stdout
    );
}

#[test]
fn a_command_policy_answers_like_the_rules_and_a_wrong_answer_stops_the_command() {
    let ws = workspace();
    for file in ["tiered.py", "tiered_command.yaml"] {
        std::fs::copy(fixtures().join("policies").join(file), ws.path().join(file)).unwrap();
    }
    let ran = simulate(ws.path(), &["tiered_command.yaml"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let theirs = recorded("simulate", "simulate tiered");
    assert_eq!(ran.stdout, theirs["stdout"].as_str().unwrap());
    // The config's policy as a command: scoring goes through it.
    let config = std::fs::read_to_string(ws.path().join("config.yaml")).unwrap();
    std::fs::write(
        ws.path().join("command.yaml"),
        format!("{config}policy: tiered_command.yaml\n"),
    )
    .unwrap();
    let score = lab(ws.path(), &["score", "-c", "command.yaml"]);
    assert_eq!(score.code, Some(0), "{}", score.stderr);
    assert!(
        score.stdout.contains("Positives warn") && score.stdout.contains("Positives block"),
        "{}",
        score.stdout
    );
    // It cannot be compiled into code.
    let refused = lab(
        ws.path(),
        &[
            "export",
            "--probeset",
            "ws/probeset.json",
            "-o",
            "p.py",
            "-c",
            "command.yaml",
        ],
    );
    assert_eq!(refused.code, Some(2));
    assert!(
        refused.stderr.contains("runs a command"),
        "{}",
        refused.stderr
    );
    // A program that answers something else than a level fails the command, naming it.
    let program = std::fs::read_to_string(ws.path().join("tiered.py")).unwrap();
    std::fs::write(
        ws.path().join("tiered.py"),
        program.replace("print(\"block\")", "print(\"maybe\")"),
    )
    .unwrap();
    let ran = simulate(ws.path(), &["tiered_command.yaml"]);
    assert_eq!(ran.code, Some(2), "{}", ran.stdout);
    assert!(
        ran.stderr.contains("answered 'maybe'")
            && ran
                .stderr
                .contains("not one of the levels allow, warn, block"),
        "{}",
        ran.stderr
    );
    std::fs::write(ws.path().join("tiered.py"), "import sys\nsys.exit(0)\n").unwrap();
    let ran = simulate(ws.path(), &["tiered_command.yaml"]);
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("exited before answering"),
        "{}",
        ran.stderr
    );
}
