//! Untrusted text stays text: a skill's name, a task's id, a model's output or a link planted
//! in a runs folder cannot choose where files are written or reach the terminal as control
//! sequences. (The dashboard's side is in `ui.rs` and `ui_browser.rs`, the gallery's in
//! `gallery.rs`, escapes in `optimize` and `evaluate` output in `errors.rs`.)

use std::path::Path;

use crate::common::{self, bin, run};

/// Every path below `dir`, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_skill_name_that_is_a_path_is_exported_and_installed_inside_the_target() {
    for (name, folder) in [("../../x", "x"), ("/etc/cron.d", "etc-cron-d")] {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(
            work.join("s.md"),
            format!("---\nname: {name}\ndescription: Evil.\n---\nBody\n"),
        )
        .unwrap();
        let exported = run(bin()
            .current_dir(&work)
            .args(["export", "--skill", "s.md", "-o", "out"]));
        assert_eq!(exported.code, Some(0), "{}", exported.stderr);
        assert!(
            exported.stderr.contains("name-slugged"),
            "{}",
            exported.stderr
        );
        assert_eq!(
            tree(&work.join("out")),
            [folder.to_string(), format!("{folder}/SKILL.md")]
        );
        std::fs::create_dir_all(work.join("proj")).unwrap();
        let installed = run(bin().current_dir(&work).args([
            "install",
            "--skill",
            "s.md",
            "--project",
            "proj",
            "--agent",
            "claude-code",
        ]));
        assert_eq!(installed.code, Some(0), "{}", installed.stderr);
        assert!(
            work.join(format!("proj/.claude/skills/{folder}/SKILL.md"))
                .is_file()
        );
        // Nothing was written beside or above the working folder.
        assert_eq!(
            tree(dir.path())
                .iter()
                .filter(|p| !p.starts_with("work"))
                .count(),
            0
        );
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.md"),
        "---\nname: \"...\"\ndescription: Evil.\n---\nBody\n",
    )
    .unwrap();
    let refused = run(bin()
        .current_dir(dir.path())
        .args(["export", "--skill", "s.md", "-o", "out"]));
    assert_eq!(refused.code, Some(2));
    assert!(
        refused.stderr.contains("no letters a-z or digits")
            && refused.stderr.contains("name: my-skill"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("out").exists(), "nothing was written");
}

#[test]
fn a_latest_link_planted_in_the_runs_folder_is_repointed_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("tk");
    common::copy_example("ticket-classifier", &example);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::os::unix::fs::symlink(&elsewhere, runs.join("latest")).unwrap();
    let ran = run(bin()
        .args(["optimize", "-c"])
        .arg(example.join("config.offline.yaml"))
        .arg("-o")
        .arg(&runs));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(tree(&elsewhere).is_empty(), "{:?}", tree(&elsewhere));
    let target = std::fs::read_link(runs.join("latest")).unwrap();
    assert!(target.is_relative(), "{}", target.display());
    assert!(runs.join("latest/result.json").is_file());
}

#[test]
fn lab_output_shows_control_characters_from_the_data_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("pr");
    let config = common::offline_pr_mismatch(&example);
    // Every example id carries a window-title sequence and a screen clear.
    let dataset = std::fs::read_to_string(example.join("dataset.jsonl")).unwrap();
    let hostile = dataset.replace("{\"id\": \"", "{\"id\": \"\\u001b]0;owned\\u0007\\u001b[2J");
    assert_ne!(hostile, dataset);
    std::fs::write(example.join("dataset.jsonl"), hostile).unwrap();
    for args in [
        vec!["optimize"],
        vec!["lab", "score", "--failures", "val"],
        vec!["lab", "simulate"],
        vec!["lab", "status"],
    ] {
        let ran = run(bin().args(&args).arg("-c").arg(&config));
        let printed = format!("{}{}", ran.stdout, ran.stderr);
        assert_eq!(ran.code, Some(0), "{args:?}: {printed}");
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
            "{args:?} printed a raw control character: {printed:?}"
        );
    }
    let failures = run(bin()
        .args(["lab", "score", "--failures", "val", "-c"])
        .arg(&config));
    assert!(failures.stdout.contains("\\u001b"), "{}", failures.stdout);
}
