//! `skill-factory gallery add | index`: the real binary turns a run folder of the offline
//! example into a gallery entry (skill, seed, candidates, result, portable config, README with
//! the run's numbers) and an index, refuses what is not a finished run, and the entry's config
//! reruns the same optimization.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::artifacts;
use crate::common::{Ran, bin, read_json, repo_root, run};

fn example(file: &str) -> PathBuf {
    repo_root().join("examples/invoice-extractor").join(file)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The offline example with a held-out test split, in `dir` (scripted target and optimizer).
fn offline_config_with_test_split(dir: &Path) -> PathBuf {
    let config = dir.join("invoice.yaml");
    let path = |file: &str| example(file).display().to_string();
    std::fs::write(
        &config,
        format!(
            "skill: {seed}\ndataset: {dataset}\nval_fraction: 0.34\ntest_fraction: 0.25\nseed: 7\n\
             provider: {{name: fake, model: scripted-invoice-model, script: {target}}}\n\
             optimizer_provider: {{name: fake, model: scripted-optimizer, script: {optimizer}}}\n\
             optimizer: {{rounds: 3, minibatch_size: 4, max_edits_per_round: 1, patience: 2}}\n\
             metric:\n  golden: {{mode: json_equal, weight: 2.0}}\n  programmatic:\n    weight: 1.0\n    \
             checks: [is_valid_json, {{json_has_keys: [vendor, date, total, currency]}}]\n\
             harness: {{max_tokens: 512}}\n",
            seed = path("seed_skill.md"),
            dataset = path("dataset.jsonl"),
            target = path("fake_target.yaml"),
            optimizer = path("fake_optimizer.yaml"),
        ),
    )
    .unwrap();
    config
}

/// Runs `optimize` and returns the run folder.
fn optimize(config: &Path, runs: &Path) -> PathBuf {
    let ran = run(bin()
        .arg("optimize")
        .arg("--record")
        .arg("-c")
        .arg(config)
        .arg("-o")
        .arg(runs));
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    artifacts::artifacts(&ran.stdout)
}

fn gallery_add(cwd: &Path, run_dir: &Path, extra: &[&str]) -> Ran {
    run(bin()
        .current_dir(cwd)
        .args(["gallery", "add"])
        .arg(run_dir)
        .args(extra))
}

#[test]
fn gallery_add_writes_the_entry_and_the_index_from_an_offline_run() {
    let tmp = tempfile::tempdir().unwrap();
    let config = offline_config_with_test_split(tmp.path());
    let run_dir = optimize(&config, &tmp.path().join("runs"));

    let ran = gallery_add(tmp.path(), &run_dir, &[]);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let entry = tmp.path().join("gallery/invoice-extractor");
    assert!(
        ran.stdout
            .starts_with("Gallery entry invoice-extractor → gallery/invoice-extractor (run "),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("Index → gallery/README.md (1 entry)"));

    // The run's own files, unchanged.
    assert_eq!(
        read(&entry.join("result.json")),
        read(&run_dir.join("result.json"))
    );
    assert_eq!(
        read(&entry.join("seed_skill.md")),
        read(&run_dir.join("candidates/000.md"))
    );
    assert_eq!(
        read(&entry.join("dataset.jsonl")),
        read(&example("dataset.jsonl"))
    );
    assert_eq!(
        read(&entry.join("optimizer_script.yaml")),
        read(&example("fake_optimizer.yaml"))
    );
    let run_candidates = std::fs::read_dir(run_dir.join("candidates"))
        .unwrap()
        .count();
    assert!(run_candidates > 1);
    for number in 0..run_candidates {
        let name = format!("candidates/{number:03}.md");
        assert_eq!(
            read(&entry.join(&name)),
            read(&run_dir.join(&name)),
            "{name}"
        );
    }

    // The best skill in the Agent Skills layout, passing `validate`.
    let skill_md = entry.join("invoice-extractor/SKILL.md");
    assert_eq!(read(&skill_md), read(&run_dir.join("best_skill.md")));
    let validated = run(bin().arg("validate").arg(entry.join("invoice-extractor")));
    assert_eq!(validated.code, Some(0), "{}", validated.stdout);

    // The config names the entry's own files and no absolute path.
    let entry_config = read(&entry.join("config.yaml"));
    assert!(
        entry_config.contains("\nskill: seed_skill.md\n"),
        "{entry_config}"
    );
    assert!(
        entry_config.contains("\ndataset: dataset.jsonl\n"),
        "{entry_config}"
    );
    assert!(
        entry_config.contains("script: target_script.yaml"),
        "{entry_config}"
    );
    assert!(
        !entry_config.contains(&tmp.path().display().to_string()),
        "{entry_config}"
    );

    // The README's numbers are the result's.
    let result = read_json(&entry.join("result.json"));
    let readme = read(&entry.join("README.md"));
    let score = |v: &Value| format!("{:.3}", v.as_f64().unwrap());
    assert!(readme.contains(&format!(
        "| Baseline → best (validation) | **{} → {}**",
        score(&result["baseline_score"]),
        score(&result["best_score"])
    )));
    assert!(readme.contains(&format!(
        "| Held-out test: seed → best | **{} → {}**",
        score(&result["test"]["seed_score"]),
        score(&result["test"]["best_score"])
    )));
    assert!(readme.contains(&format!(
        "from run `{}`",
        result["run_id"].as_str().unwrap()
    )));
    assert!(readme.contains("**The proposals were scripted.**"));
    assert!(readme.contains("| [000](candidates/000.md) | 0 | "));
    assert!(readme.contains(
        "```bash\nSKILL_FACTORY_REPLAY=gallery/invoice-extractor/traffic.jsonl skill-factory \
         optimize -c gallery/invoice-extractor/config.yaml\n```"
    ));
    assert!(readme.contains(
        "### Rerun live\n\n```bash\nskill-factory optimize --record -c \
         gallery/invoice-extractor/config.yaml\n\
         skill-factory gallery add gallery/invoice-extractor/runs/invoice-extractor/latest\n```"
    ));
    assert!(entry.join("traffic.jsonl").is_file());

    let index = read(&tmp.path().join("gallery/README.md"));
    assert!(
        index.contains("| [invoice-extractor](invoice-extractor/README.md) | "),
        "{index}"
    );

    // `gallery index` writes the same index again.
    let ran = run(bin().current_dir(tmp.path()).args(["gallery", "index"]));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(read(&tmp.path().join("gallery/README.md")), index);
}

#[test]
fn the_entry_config_reruns_the_same_optimization_and_readding_keeps_other_files() {
    let tmp = tempfile::tempdir().unwrap();
    let config = offline_config_with_test_split(tmp.path());
    let first = optimize(&config, &tmp.path().join("runs"));
    let ran = gallery_add(tmp.path(), &first, &["--name", "invoices"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let entry = tmp.path().join("gallery/invoices");
    std::fs::write(entry.join("NOTES.md"), "kept").unwrap();

    // The Reproduce commands, as the README gives them, from the folder holding the gallery.
    let readme = read(&entry.join("README.md"));
    assert!(readme.contains("skill-factory optimize --record -c gallery/invoices/config.yaml\n"));
    assert!(readme.contains(
        "SKILL_FACTORY_REPLAY=gallery/invoices/traffic.jsonl skill-factory optimize -c gallery/invoices/config.yaml\n"
    ));
    assert!(readme.contains(
        "skill-factory gallery add gallery/invoices/runs/invoices/latest --name invoices\n"
    ));
    let rerun = run(bin().current_dir(tmp.path()).args([
        "optimize",
        "--record",
        "-c",
        "gallery/invoices/config.yaml",
    ]));
    assert_eq!(rerun.code, Some(0), "{}\n{}", rerun.stdout, rerun.stderr);
    let again = gallery_add(
        tmp.path(),
        Path::new("gallery/invoices/runs/invoices/latest"),
        &["--name", "invoices"],
    );
    assert_eq!(again.code, Some(0), "{}", again.stderr);

    let before = read_json(&first.join("result.json"));
    let after = read_json(&entry.join("result.json"));
    // The entry now comes from the rerun of its own config (named after the entry folder).
    assert_eq!(before["config_name"], "invoice");
    assert_eq!(after["config_name"], "invoices");
    for key in ["baseline_score", "best_score", "history", "splits", "test"] {
        assert_eq!(before[key], after[key], "{key}");
    }
    assert_eq!(read(&entry.join("NOTES.md")), "kept");
    assert!(entry.join("runs/invoices/latest/result.json").is_file());
}

#[test]
fn gallery_add_refuses_a_folder_that_is_not_a_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    let ran = gallery_add(tmp.path(), tmp.path(), &[]);
    assert_eq!(ran.code, Some(2));
    assert!(ran.stderr.contains("no result.json here"), "{}", ran.stderr);

    let run_dir = optimize(&example("config.offline.yaml"), &tmp.path().join("runs"));
    let result = run_dir.join("result.json");
    let finished = read(&result);
    let stop = read_json(&result)["stop_reason"].to_string();
    assert!(finished.contains(&format!("\"stop_reason\": {stop}")));
    let text = finished.replace(
        &format!("\"stop_reason\": {stop}"),
        "\"stop_reason\": \"running\"",
    );
    std::fs::write(&result, text).unwrap();
    let ran = gallery_add(tmp.path(), &run_dir, &[]);
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("the run has not finished"),
        "{}",
        ran.stderr
    );
    assert!(!tmp.path().join("gallery").exists());
}

#[test]
fn gallery_add_refuses_a_bad_entry_name_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = optimize(&example("config.offline.yaml"), &tmp.path().join("runs"));
    let ran = gallery_add(tmp.path(), &run_dir, &["--name", "../Bad Name"]);
    assert_eq!(ran.code, Some(2));
    assert!(ran.stderr.contains("--name bad-name"), "{}", ran.stderr);
    assert!(!tmp.path().join("gallery").exists());
}

#[test]
fn gallery_add_refuses_a_run_that_was_not_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let ran = run(bin()
        .arg("optimize")
        .arg("-c")
        .arg(example("config.offline.yaml"))
        .arg("-o")
        .arg(tmp.path().join("runs")));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let added = gallery_add(tmp.path(), &artifacts::artifacts(&ran.stdout), &[]);
    assert_eq!(added.code, Some(2));
    assert!(
        added.stderr.contains("was not recorded") && added.stderr.contains("--record"),
        "{}",
        added.stderr
    );
    assert!(!tmp.path().join("gallery").exists());
}

#[test]
fn an_entry_replayed_from_its_traffic_reproduces_its_numbers_without_any_model() {
    let tmp = tempfile::tempdir().unwrap();
    let first = optimize(
        &offline_config_with_test_split(tmp.path()),
        &tmp.path().join("runs"),
    );
    let ran = gallery_add(tmp.path(), &first, &["--name", "invoices"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let entry = tmp.path().join("gallery/invoices");
    // The scripted models' files are gone: only the recording can answer.
    for file in ["fake_target.yaml", "fake_optimizer.yaml"] {
        let _ = std::fs::remove_file(entry.join(file));
    }
    let replayed = run(bin()
        .current_dir(tmp.path())
        .env("SKILL_FACTORY_REPLAY", "gallery/invoices/traffic.jsonl")
        .args(["optimize", "-c", "gallery/invoices/config.yaml", "-o"])
        .arg(tmp.path().join("replayed")));
    assert_eq!(
        replayed.code,
        Some(0),
        "{}\n{}",
        replayed.stdout,
        replayed.stderr
    );
    let before = read_json(&entry.join("result.json"));
    let after = read_json(&artifacts::artifacts(&replayed.stdout).join("result.json"));
    for key in [
        "baseline_score",
        "best_score",
        "history",
        "best_skill",
        "splits",
        "test",
    ] {
        assert_eq!(before[key], after[key], "{key}");
    }
}

/// `result.json` without what differs between any two runs of the same search.
fn without_run_identity(mut result: Value) -> Value {
    let object = result.as_object_mut().unwrap();
    for key in ["run_id", "started_at", "finished_at", "elapsed_seconds"] {
        object.remove(key);
    }
    result
}

#[test]
fn every_committed_entry_replays_to_its_result_json_with_no_model() {
    let gallery = repo_root().join("gallery");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&gallery)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("result.json").is_file())
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "the gallery should hold an entry");
    for entry in entries {
        // The README's replay command, with the run folder and the cache kept out of the
        // repository; the models/ folder a live rerun would need is never read.
        let runs = tempfile::tempdir().unwrap();
        let replayed = run(bin()
            .env("SKILL_FACTORY_REPLAY", entry.join("traffic.jsonl"))
            .args(["optimize", "--no-cache", "-c"])
            .arg(entry.join("config.yaml"))
            .arg("-o")
            .arg(runs.path()));
        assert_eq!(
            replayed.code,
            Some(0),
            "{}: {}\n{}",
            entry.display(),
            replayed.stdout,
            replayed.stderr
        );
        let before = without_run_identity(read_json(&entry.join("result.json")));
        let after = without_run_identity(read_json(
            &artifacts::artifacts(&replayed.stdout).join("result.json"),
        ));
        assert_eq!(before, after, "{}", entry.display());
    }
}

/// Makes a finished run folder (first argument) name or hold a secret file (second).
type Plant = dyn Fn(&Path, &Path);

#[test]
fn gallery_add_copies_no_file_from_outside_the_run_and_its_inputs() {
    let planted = "aws_secret_access_key = do-not-commit-me";
    let attempts: [(&str, &Plant, &str); 4] = [
        (
            "a recording that is a link",
            &|run_dir, secret| {
                std::fs::remove_file(run_dir.join("traffic.jsonl")).unwrap();
                std::os::unix::fs::symlink(secret, run_dir.join("traffic.jsonl")).unwrap();
            },
            "not a regular file (a link)",
        ),
        (
            "a candidate that is a link",
            &|run_dir, secret| {
                let candidate = run_dir.join("candidates/001.md");
                let _ = std::fs::remove_file(&candidate);
                std::os::unix::fs::symlink(secret, candidate).unwrap();
            },
            "not a regular file (a link)",
        ),
        (
            "a script that is not a script",
            &|run_dir, secret| {
                let config = run_dir.join("config.yaml");
                let text = read(&config);
                let script = example("fake_target.yaml").display().to_string();
                assert!(text.contains(&script), "{text}");
                std::fs::write(
                    &config,
                    text.replace(&script, &secret.display().to_string()),
                )
                .unwrap();
            },
            "does not read as one",
        ),
        (
            "a script that is a device",
            &|run_dir, _| {
                let config = run_dir.join("config.yaml");
                let text = read(&config);
                let script = example("fake_target.yaml").display().to_string();
                std::fs::write(&config, text.replace(&script, "/dev/zero")).unwrap();
            },
            "not a regular file (a device, pipe or socket)",
        ),
    ];
    for (what, plant, expected) in attempts {
        let tmp = tempfile::tempdir().unwrap();
        let secret = tmp.path().join("credentials");
        std::fs::write(&secret, planted).unwrap();
        let run_dir = optimize(&example("config.offline.yaml"), &tmp.path().join("runs"));
        plant(&run_dir, &secret);
        let ran = gallery_add(tmp.path(), &run_dir, &[]);
        assert_eq!(ran.code, Some(2), "{what}: {}{}", ran.stdout, ran.stderr);
        assert!(ran.stderr.contains(expected), "{what}: {}", ran.stderr);
        assert!(!ran.stderr.contains(planted), "{what}: {}", ran.stderr);
        let gallery = tmp.path().join("gallery");
        if gallery.exists() {
            for entry in walk(&gallery) {
                assert!(
                    !read(&entry).contains(planted),
                    "{what}: {}",
                    entry.display()
                );
            }
        }
    }
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files
}
