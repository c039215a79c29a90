//! Classifier mode against a hostile user: outputs over files the command did not write,
//! several commands on one workspace at once, a seal whose splits moved, empty and planted
//! answer caches, typos in probe sets and imports, and a slow policy command. Every refusal
//! exits 2 naming the file or flag and the fix.

use std::path::{Path, PathBuf};

use crate::classifier::{
    args, edit, has, offline_example, optimized_example, responder, sf, workspace,
};
use crate::classifier_exports::{copy, fixtures, lab};
use crate::common::{self, bin};

/// Asserts a refusal: exit 2 and every one of `parts` in stderr.
fn refused(ran: &common::Ran, parts: &[&str]) {
    assert_eq!(ran.code, Some(2), "{}{}", ran.stdout, ran.stderr);
    for part in parts {
        has(&ran.stderr, part);
    }
}

/// `skill-factory <args>` in `dir`.
fn sf_in(dir: &Path, args: &[&str]) -> common::Ran {
    common::run(bin().current_dir(dir).args(args))
}

/// A skill-scanner lab (the Python tool's fixture) in a new folder.
fn scanner_lab() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy(&fixtures().join("python/inputs/scanner"), tmp.path());
    tmp
}

#[test]
fn import_scanner_never_replaces_a_workspaces_answers_without_force() {
    let tmp = scanner_lab();
    let dir = tmp.path();
    let import = |out: &str, more: &[&str]| {
        lab(
            dir,
            &[&["import-scanner", "lab", "-o", out][..], more].concat(),
        )
    };
    assert_eq!(import("out", &[]).code, Some(0));
    // The same import again writes the same bytes: nothing is lost, nothing is refused.
    let again = import("out", &[]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    // A workspace whose answers were paid for.
    let ws = dir.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let paid = "{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}\n".repeat(3);
    std::fs::write(ws.join("answers.jsonl"), &paid).unwrap();
    for more in [&[][..], &["--questions", "questions.json"][..]] {
        let ran = import("ws", more);
        refused(&ran, &["-o ws/answers.jsonl already exists", "--force"]);
        assert_eq!(
            std::fs::read_to_string(ws.join("answers.jsonl")).unwrap(),
            paid
        );
        assert!(
            !ws.join("dataset.jsonl").exists() && !ws.join("pool.json").exists(),
            "an import refused wrote some of its files"
        );
    }
    let forced = import("ws", &["--force"]);
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    assert_eq!(
        std::fs::read(ws.join("answers.jsonl")).unwrap(),
        std::fs::read(dir.join("lab/answers.jsonl")).unwrap()
    );
    // Into the lab itself: its answer cache is what the import reads, --force or not.
    let into_the_lab = import("lab", &["--force"]);
    refused(
        &into_the_lab,
        &["lab/answers.jsonl is the lab's answer cache"],
    );
    // A file is not a folder to import into.
    std::fs::write(dir.join("a-file"), "x").unwrap();
    refused(
        &import("a-file", &[]),
        &["-o a-file is a file, not a folder"],
    );
}

#[test]
fn lab_export_never_writes_over_a_dataset_or_a_file_it_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    optimized_example(dir);
    let dataset = std::fs::read_to_string(dir.join("dataset.jsonl")).unwrap();
    let export = |out: &str, more: &[&str]| {
        lab(
            dir,
            &[
                &["export", "--probeset", "ws/probeset.json", "-o", out][..],
                more,
            ]
            .concat(),
        )
    };
    refused(
        &export("dataset.jsonl", &["--format", "json"]),
        &[
            "-o dataset.jsonl already exists and is not a probe set",
            "--force",
        ],
    );
    // With the config, the dataset is known as one of its inputs: never, even forced.
    refused(
        &export(
            "dataset.jsonl",
            &["--format", "json", "-c", "config.offline.yaml", "--force"],
        ),
        &["is the dataset (`dataset:`)", "--force does not apply"],
    );
    refused(
        &export("ws/probeset.json", &["--force"]),
        &["is the probe set exported (--probeset)"],
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("dataset.jsonl")).unwrap(),
        dataset
    );
    // Its own exports are replaced by the next: a rerun needs no flag.
    for out in ["p.json", "p.ts", "p.py"] {
        for _ in 0..2 {
            let ran = export(out, &[]);
            assert_eq!(ran.code, Some(0), "{out}: {}", ran.stderr);
        }
    }
    std::fs::write(dir.join("mine.ts"), "export const mine = 1;\n").unwrap();
    refused(
        &export("mine.ts", &[]),
        &["-o mine.ts already exists and is not an export", "--force"],
    );
    assert_eq!(export("mine.ts", &["--force"]).code, Some(0));
    refused(&export("ws", &["--format", "json"]), &["-o ws is a folder"]);
}

#[test]
fn select_and_recalibrate_write_only_over_probe_sets_they_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    optimized_example(dir);
    let select = |out: &str, more: &[&str]| {
        lab(
            dir,
            &[
                &["select", "-c", "config.offline.yaml", "--out", out][..],
                more,
            ]
            .concat(),
        )
    };
    let seed = std::fs::read_to_string(dir.join("seed_probeset.json")).unwrap();
    refused(
        &select("seed_probeset.json", &["--force"]),
        &[
            "--out seed_probeset.json is the seed probe set (`probeset:`)",
            "--force does not apply",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("seed_probeset.json")).unwrap(),
        seed
    );
    // The workspace's baseline is a probe set too, but it is the seal's "before".
    refused(
        &select("ws/seed.json", &["--force"]),
        &["is the workspace's seed.json"],
    );
    for _ in 0..2 {
        let ran = select("picked.json", &[]);
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    }
    std::fs::write(dir.join("notes.json"), "{\"mine\": true}\n").unwrap();
    refused(
        &select("notes.json", &[]),
        &[
            "--out notes.json already exists and is not a probe set written by skill-factory",
            "pass --force to replace it",
        ],
    );
    assert_eq!(select("notes.json", &["--force"]).code, Some(0));
    refused(&select("ws", &[]), &["--out ws is a folder"]);
    let recalibrate = lab(
        dir,
        &[
            "recalibrate",
            "-c",
            "config.offline.yaml",
            "--model",
            "fake-jev-2.0",
            "--out",
            "ws/probeset.json",
            "--force",
        ],
    );
    refused(
        &recalibrate,
        &["--out ws/probeset.json is the workspace's probeset.json"],
    );
}

#[test]
fn report_out_and_the_workspace_keep_the_files_a_user_put_there() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = optimized_example(dir);
    assert_eq!(
        lab(dir, &["freeze", "-c", "config.offline.yaml"]).code,
        Some(0)
    );
    std::fs::create_dir(dir.join("out")).unwrap();
    std::fs::write(dir.join("out/report-splits.md"), "my notes\n").unwrap();
    let report = |more: &[&str]| {
        lab(
            dir,
            &[
                &["report", "-c", "config.offline.yaml", "--out", "out"][..],
                more,
            ]
            .concat(),
        )
    };
    refused(
        &report(&[]),
        &["--out out/report-splits.md already exists", "--force"],
    );
    // Refused before the sealed splits were opened: no opening is logged.
    let seal = common::read_json(&dir.join("ws/seal.json"));
    assert_eq!(seal["views"].as_array().unwrap().len(), 0, "{seal}");
    let forced = report(&["--force"]);
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    assert!(
        std::fs::read_to_string(dir.join("out/report-splits.md"))
            .unwrap()
            .starts_with("# Report: ")
    );
    // Its own report is replaced by the next without a flag.
    assert_eq!(report(&[]).code, Some(0));
    std::fs::write(dir.join("a-file"), "x").unwrap();
    refused(
        &lab(
            dir,
            &["report", "-c", "config.offline.yaml", "--out", "a-file"],
        ),
        &["--out a-file is a file, not a folder"],
    );

    // optimize -o onto a file, or into a folder holding a report of the user's: refused
    // before anything runs.
    refused(
        &sf_in(
            dir,
            &["optimize", "-c", "config.offline.yaml", "-o", "a-file"],
        ),
        &["the workspace a-file is a file, not a folder"],
    );
    std::fs::create_dir(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/report.md"), "# My notes\n").unwrap();
    let into_mine = sf_in(
        dir,
        &["optimize", "-c", "config.offline.yaml", "-o", "mine"],
    );
    refused(
        &into_mine,
        &[
            "the workspace's report.md mine/report.md already exists and is not a classifier report",
            "set another `workspace:`",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("mine/report.md")).unwrap(),
        "# My notes\n"
    );
    assert!(!dir.join("mine/probeset.json").exists());
    // A seed kept as the workspace's seed.json would be replaced by the fitted one.
    std::fs::copy(dir.join("seed_probeset.json"), dir.join("ws/seed.json")).unwrap();
    edit(
        &config,
        "probeset: seed_probeset.json",
        "probeset: ws/seed.json",
    );
    refused(
        &sf_in(dir, &["optimize", "-c", "config.offline.yaml"]),
        &[
            "the workspace's seed.json",
            "is the seed probe set (`probeset:`)",
        ],
    );
}

/// `skill-factory <args> -c config` started in the background, its output kept.
fn spawn(items: &[&str], config: &Path) -> std::process::Child {
    common::process()
        .args(items)
        .arg("-c")
        .arg(config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `children` off the async runtime (the stub serves on it meanwhile).
async fn wait_all(children: Vec<std::process::Child>) -> Vec<std::process::Output> {
    tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect()
    })
    .await
    .unwrap()
}

/// A System One stub answering after `latency`, and a workspace config asking it.
async fn stubbed_workspace(
    latency: std::time::Duration,
) -> (
    skill_factory_mock::SystemOneStub,
    tempfile::TempDir,
    PathBuf,
) {
    let stub = skill_factory_mock::SystemOneStub::start_with(
        skill_factory_mock::StubOptions {
            latency,
            ..Default::default()
        },
        responder,
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    (stub, dir, config)
}

#[tokio::test(flavor = "multi_thread")]
async fn three_asks_and_an_optimize_at_once_buy_every_answer_once() {
    let (stub, dir, config) = stubbed_workspace(std::time::Duration::from_millis(20)).await;
    let children = vec![
        spawn(&["lab", "ask"], &config),
        spawn(&["optimize"], &config),
        spawn(&["lab", "ask"], &config),
        spawn(&["lab", "ask"], &config),
    ];
    let outputs = wait_all(children).await;
    for output in &outputs {
        assert!(output.status.success(), "{}", common::printed(output));
    }
    // Each (state, question) was asked once, whoever asked it.
    let mut asked = std::collections::HashSet::new();
    for request in stub.received() {
        let state = request.body["state"].as_str().unwrap().to_string();
        for id in request.body["questions"].as_object().unwrap().keys() {
            assert!(
                asked.insert((state.clone(), id.clone())),
                "asked twice: {id} about {state}"
            );
        }
    }
    let answers = std::fs::read_to_string(dir.path().join("ws/answers.jsonl")).unwrap();
    let lines: Vec<&str> = answers.lines().collect();
    let distinct: std::collections::HashSet<&&str> = lines.iter().collect();
    assert_eq!(lines.len(), asked.len());
    assert_eq!(
        distinct.len(),
        lines.len(),
        "an answer line was written twice"
    );
    let waited = outputs
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("is in use by another command"))
        .count();
    assert!(waited >= 1, "nobody waited");
    assert!(
        !dir.path().join("ws/lock").exists(),
        "the lock file was left"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_waits_for_the_holder_of_the_workspace_and_a_killed_holder_leaves_no_lock() {
    let (_stub, dir, config) = stubbed_workspace(std::time::Duration::from_secs(30)).await;
    let lock = dir.path().join("ws/lock");
    // A holder killed while its requests hang.
    let mut holder = spawn(&["lab", "ask"], &config);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&lock).is_ok_and(|note| note.contains("`lab ask`")) {
        assert!(std::time::Instant::now() < deadline, "the ask never locked");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    let report = &["lab", "report", "--splits", "train,val"];
    let after_kill = sf(args(report, &config)).await;
    assert_eq!(after_kill.code, Some(0), "{}", after_kill.stderr);
    assert!(
        !after_kill.stderr.contains("in use"),
        "waited for a dead holder: {}",
        after_kill.stderr
    );
    assert!(!lock.exists(), "the lock file was left");

    // A holder alive: a command that writes waits for it, one that only reads does not.
    let mut held = std::fs::File::create(&lock).unwrap();
    std::io::Write::write_all(&mut held, b"pid 1, `optimize`, since a while").unwrap();
    held.lock().unwrap();
    let mut waiting = spawn(report, &config);
    let score = sf(args(&["lab", "score"], &config)).await;
    assert_eq!(score.code, Some(0), "{}", score.stderr);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        waiting.try_wait().unwrap().is_none(),
        "the report did not wait"
    );
    drop(held);
    let output = wait_all(vec![waiting]).await.remove(0);
    assert!(output.status.success(), "{}", common::printed(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for part in [
        "is in use by another command (pid 1, `optimize`, since a while); waiting",
        "Ctrl-C",
    ] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
}

/// `skill-factory lab <args> -c config.offline.yaml` in `dir`.
fn lab_c(dir: &Path, items: &[&str]) -> common::Ran {
    lab(dir, &[items, &["-c", "config.offline.yaml"]].concat())
}

#[test]
fn changing_the_splits_after_a_freeze_is_refused_until_undone_or_refrozen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = optimized_example(dir);
    assert_eq!(lab_c(dir, &["freeze"]).code, Some(0));
    let report = lab_c(dir, &["report", "--ask"]);
    assert_eq!(report.code, Some(0), "{}", report.stderr);
    let dataset = std::fs::read_to_string(dir.join("dataset.jsonl")).unwrap();
    type Change = (&'static str, fn(&Path, &Path), &'static str);
    let changes: [Change; 4] = [
        (
            "another salt",
            |_, config| edit(config, "salt: pr-11", "salt: pr-12"),
            "splits.salt was \"pr-11\" and is now \"pr-12\"",
        ),
        (
            "other fractions",
            |_, config| edit(config, "{train: 0.5, val: 0.25}", "{train: 0.6, val: 0.2}"),
            "splits.fractions was {\"train\":0.5,\"val\":0.25} and is now",
        ),
        (
            "a held-out group",
            |_, config| {
                edit(
                    config,
                    "  salt: pr-11",
                    "  salt: pr-11\n  held_out_groups: [access-change]",
                )
            },
            "splits.held_out_groups was [] and is now [\"access-change\"]",
        ),
        (
            "an example removed from the dataset",
            |dir, _| {
                let path = dir.join("dataset.jsonl");
                let text = std::fs::read_to_string(&path).unwrap();
                let kept: Vec<&str> = text.lines().skip(1).collect();
                std::fs::write(&path, kept.join("\n") + "\n").unwrap();
            },
            "the dataset changed",
        ),
    ];
    let original = std::fs::read_to_string(&config).unwrap();
    for (what, change, said) in changes {
        change(dir, &config);
        for command in [
            &["score"][..],
            &["select"],
            &["status"],
            &["ask", "--dry-run"],
            &["report", "--splits", "test"],
            &["simulate"],
        ] {
            refused(
                &lab_c(dir, command),
                &[
                    "the split assignment changed since `lab freeze`",
                    said,
                    "lab freeze -c config.offline.yaml --force",
                ],
            );
        }
        refused(
            &sf_in(dir, &["optimize", "-c", "config.offline.yaml"]),
            &[said],
        );
        refused(&lab_c(dir, &["freeze"]), &[said, "--force"]);
        // Going back lifts it.
        std::fs::write(&config, &original).unwrap();
        std::fs::write(dir.join("dataset.jsonl"), &dataset).unwrap();
        let back = lab_c(dir, &["score"]);
        assert_eq!(back.code, Some(0), "{what}: {}", back.stderr);
    }
    // Refreezing under the new assignment, forced: the seal says it was opened under
    // another.
    edit(&config, "salt: pr-11", "salt: pr-12");
    let forced = lab_c(dir, &["freeze", "--force"]);
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    let score = lab_c(dir, &["score"]);
    assert_eq!(score.code, Some(0), "{}", score.stderr);
    let status = lab_c(dir, &["status"]);
    has(
        &status.stdout,
        "WARNING: sealed splits were opened under an earlier",
    );
    let seal = common::read_json(&dir.join("ws/seal.json"));
    assert!(
        seal["frozen"]["assignment"]["settings"]["salt"] == "pr-12",
        "{seal}"
    );
}

#[test]
fn a_misspelt_workspace_or_the_seed_itself_is_not_frozen_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = optimized_example(dir);
    edit(&config, "workspace: ws", "workspace: wsx");
    refused(
        &lab_c(dir, &["freeze"]),
        &[
            "lab freeze: the probe set to freeze",
            "is the baseline it would be compared with",
            "it has no probeset.json: is `workspace:` in config.offline.yaml",
            "skill-factory optimize -c config.offline.yaml",
            "--force",
        ],
    );
    assert!(!dir.join("wsx/seal.json").exists());
    refused(&lab_c(dir, &["report", "--splits", "test"]), &["freeze"]);
    edit(&config, "workspace: wsx", "workspace: ws");
    // The config's seed, named explicitly, against the fitted baseline.
    refused(
        &lab_c(dir, &["freeze", "--probeset", "seed_probeset.json"]),
        &["is the config's seed"],
    );
    let forced = lab_c(
        dir,
        &["freeze", "--probeset", "seed_probeset.json", "--force"],
    );
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    assert_eq!(lab_c(dir, &["freeze"]).code, Some(0));
}

#[test]
fn a_seal_whose_openings_were_deleted_keeps_refusing_another_pair() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    optimized_example(dir);
    assert_eq!(lab_c(dir, &["freeze"]).code, Some(0));
    assert_eq!(lab_c(dir, &["report", "--ask"]).code, Some(0));
    let path = dir.join("ws/seal.json");
    let mut seal = common::read_json(&path);
    seal.as_object_mut().unwrap().remove("views");
    std::fs::write(&path, seal.to_string()).unwrap();
    let mut other = common::read_json(&dir.join("ws/probeset.json"));
    other["threshold"] = serde_json::json!(0.5);
    other.as_object_mut().unwrap().remove("sha256");
    std::fs::write(dir.join("other.json"), other.to_string()).unwrap();
    refused(
        &lab_c(dir, &["freeze", "--probeset", "other.json"]),
        &["the log of openings was removed from seal.json", "--force"],
    );
    let status = lab_c(dir, &["status"]);
    has(&status.stdout, "opened an unknown number of times");
    let forced = lab_c(dir, &["freeze", "--probeset", "other.json", "--force"]);
    assert_eq!(forced.code, Some(0), "{}", forced.stderr);
    has(&lab_c(dir, &["status"]).stdout, "WARNING");
}

#[test]
fn an_empty_answer_cache_is_said_with_the_command_that_fills_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    offline_example(dir);
    let score = lab_c(dir, &["score"]);
    assert_eq!(score.code, Some(0), "{}", score.stderr);
    for part in [
        "note: no answers are cached for the probe set's questions on train, val",
        "the rates above say nothing yet",
        "skill-factory lab ask -c config.offline.yaml",
    ] {
        has(&score.stderr, part);
    }
    let select = lab_c(dir, &["select"]);
    assert_eq!(select.code, Some(0), "{}", select.stderr);
    has(
        &select.stderr,
        "no answers are cached for the pool's questions on train",
    );
    has(&select.stderr, "no candidate can be fitted");
    let simulate = lab_c(dir, &["simulate"]);
    assert_eq!(simulate.code, Some(0), "{}", simulate.stderr);
    has(
        &simulate.stderr,
        "note: no answers are cached for the policies' questions on train, val",
    );
    std::fs::write(
        dir.join("production.jsonl"),
        "{\"id\": \"consistent-rename-refactor-1\", \"flagged\": false}\n",
    )
    .unwrap();
    let parity = lab_c(
        dir,
        &[
            "parity",
            "--probeset",
            "seed_probeset.json",
            "--production",
            "production.jsonl",
            "--split",
            "train",
        ],
    );
    has(
        &parity.stderr,
        "note: no answers are cached for the probe set's questions on train",
    );
    // Train bought, val not: the note counts what is missing.
    assert_eq!(lab_c(dir, &["ask", "--splits", "train"]).code, Some(0));
    let half = lab_c(dir, &["score"]);
    has(
        &half.stderr,
        "10 of 32 judged example(s) have no cached answers for the probe set's questions",
    );
    assert!(
        !lab_c(dir, &["select"]).stderr.contains("note:"),
        "train is answered"
    );
    assert_eq!(lab_c(dir, &["ask"]).code, Some(0));
    let whole = lab_c(dir, &["score"]);
    assert!(!whole.stderr.contains("note:"), "{}", whole.stderr);
}

#[test]
fn a_fifo_or_a_folder_as_the_answer_cache_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    offline_example(dir);
    std::fs::create_dir(dir.join("ws")).unwrap();
    let cache = dir.join("ws/answers.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&cache)
        .status()
        .unwrap();
    assert!(made.success());
    for command in [&["score"][..], &["select"], &["status"], &["ask"]] {
        refused(
            &lab_c(dir, command),
            &[
                "ws/answers.jsonl is a FIFO, not a regular file",
                "Move it away",
            ],
        );
    }
    refused(
        &sf_in(dir, &["optimize", "-c", "config.offline.yaml"]),
        &["is a FIFO"],
    );
    std::fs::remove_file(&cache).unwrap();
    std::fs::create_dir(&cache).unwrap();
    refused(&lab_c(dir, &["score"]), &["ws/answers.jsonl is a folder"]);
}

#[test]
fn a_misspelt_probe_set_key_is_refused_with_the_closest_valid_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    optimized_example(dir);
    let mut set = common::read_json(&dir.join("ws/probeset.json"));
    let threshold = set.as_object_mut().unwrap().remove("threshold").unwrap();
    set["thresold"] = threshold;
    set.as_object_mut().unwrap().remove("sha256");
    std::fs::write(dir.join("typo.json"), set.to_string()).unwrap();
    for command in [
        &["score", "--probeset", "typo.json"][..],
        &["freeze", "--probeset", "typo.json"],
        &["simulate", "--probeset", "typo.json"],
    ] {
        refused(
            &lab_c(dir, command),
            &["typo.json: unknown key 'thresold' (did you mean 'threshold'?)"],
        );
    }
    refused(
        &lab(dir, &["export", "--probeset", "typo.json", "-o", "p.ts"]),
        &["unknown key 'thresold'"],
    );
    // The config's seed too, before anything runs.
    let mut seed = common::read_json(&dir.join("seed_probeset.json"));
    seed["state_budgt"] = serde_json::json!(4000);
    std::fs::write(dir.join("seed_probeset.json"), seed.to_string()).unwrap();
    refused(
        &sf_in(dir, &["optimize", "-c", "config.offline.yaml"]),
        &["seed_probeset.json: unknown key 'state_budgt' (did you mean 'state_budget'?)"],
    );
}

#[test]
fn scanner_bundles_sharing_a_folder_import_with_ids_the_lab_accepts() {
    let tmp = scanner_lab();
    let dir = tmp.path();
    let bundles = dir.join("lab/bundles-96000.jsonl");
    let text = std::fs::read_to_string(&bundles).unwrap();
    let first = text.lines().next().unwrap();
    let twin = first.replace("be904898daad66e448e82c06", "0123456789abcdef01234567");
    std::fs::write(&bundles, format!("{text}{twin}\n")).unwrap();
    let ran = lab(
        dir,
        &[
            "import-scanner",
            "lab",
            "-o",
            ".",
            "--questions",
            "questions.json",
        ],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    has(&ran.stdout, "imported 7 examples");
    has(
        &ran.stderr,
        "1 bundle(s) share a skill folder with an earlier one",
    );
    has(&ran.stderr, "as 'malicious/evil-a#2'");
    let status = lab(dir, &["status", "-c", "config.yaml"]);
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    has(&status.stdout, "splits: train 2+/1-");
    // Bundles of one folder in two splits cannot be imported: the lab names them.
    let split = twin.replace("\"split\":\"train\"", "\"split\":\"test\"");
    std::fs::write(&bundles, format!("{text}{split}\n")).unwrap();
    refused(
        &lab(dir, &["import-scanner", "lab", "-o", "other"]),
        &[
            "lab/bundles-96000.jsonl:7: this bundle's folder /corpora/malicious/evil-a is also the bundle of",
            "split test here and train there",
        ],
    );
}

#[test]
fn a_command_policys_deadline_is_its_timeout_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = optimized_example(dir);
    let policy = |timeout: &str| {
        format!(
            "name: slow\nlevels: [pass, flag]\ncommand: [sh, -c, 'while read line; do sleep 5; echo pass; done']\n{timeout}"
        )
    };
    std::fs::write(dir.join("slow.yaml"), policy("timeout: 0.3\n")).unwrap();
    let started = std::time::Instant::now();
    refused(
        &lab_c(dir, &["simulate", "--policy", "slow.yaml"]),
        &[
            "the policy command `sh -c while read line; do sleep 5; echo pass; done` gave no answer within 0.3 s",
            "the policy's `timeout`",
        ],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    for (timeout, said) in [
        (
            "timeout: 0\n",
            "slow.yaml.timeout: is a number of seconds above 0",
        ),
        (
            "timeout: soon\n",
            "slow.yaml.timeout: is a number of seconds above 0",
        ),
        (
            "timout: 5\n",
            "unknown key 'timout' (did you mean 'timeout'?)",
        ),
    ] {
        std::fs::write(dir.join("slow.yaml"), policy(timeout)).unwrap();
        refused(&lab_c(dir, &["simulate", "--policy", "slow.yaml"]), &[said]);
    }
    // In the config: the same key, read before anything runs.
    edit(
        &config,
        "policy: policy.yaml",
        "policy: {levels: [pass, flag], rules: [], timeout: 5}",
    );
    refused(
        &sf_in(dir, &["optimize", "-c", "config.offline.yaml"]),
        &["policy.timeout: is how long a `command` may take to answer"],
    );
}
