//! Classifier mode against a hostile user: outputs over files the command did not write,
//! several commands on one workspace at once, a seal whose splits moved, empty and planted
//! answer caches, typos in probe sets and imports, and a slow policy command. Every refusal
//! exits 2 naming the file or flag and the fix.

use std::path::Path;

use crate::classifier::{edit, has, optimized_example};
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

    // optimize -o into a folder holding a report of the user's: refused before anything runs.
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
