//! Our export against the real installer: `npx skills add <exported dir>` (the npm package
//! `skills`) must install exactly the files we wrote, and our `install` must produce the same
//! folder as it does.
//!
//! The installer is not fetched here (tests never reach the network):
//! `scripts/setup-skills-cli.sh` (run by `scripts/quickstart` and `.ci/run`) installs it outside
//! the clone, at `${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/node/node_modules/.bin/skills`,
//! where this test finds it; `SKILL_FACTORY_SKILLS_CLI` names another one. Without it this test
//! fails and says how to install it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use crate::common::external_tool;

const SKILLS_CLI_VAR: &str = "SKILL_FACTORY_SKILLS_CLI";

/// Where `scripts/setup-skills-cli.sh` installs the installer, below the user's cache folder.
const DEFAULT_CLI_UNDER_CACHE: &str = "skill-factory-ci/node/node_modules/.bin/skills";

/// The installer named by the variable, else the one at the default place; a failure that says
/// how to install it when neither is there.
fn skills_cli() -> PathBuf {
    external_tool::external_tool(
        SKILLS_CLI_VAR,
        DEFAULT_CLI_UNDER_CACHE,
        "the `skills` installer from npm (the one behind `npx skills`)",
        "scripts/setup-skills-cli.sh   (needs Node and npm)",
    )
}

/// Runs `skills add <skill_dir> -y -a claude-code` in `project`, offline-safe: telemetry off,
/// HOME in the temporary folder, no terminal, and a time limit.
fn npx_skills_add(skill_dir: &Path, project: &Path, home: &Path) {
    let cli = skills_cli();
    let mut child = Process::new(&cli)
        .arg("add")
        .arg(skill_dir)
        .args(["-y", "-a", "claude-code"])
        .current_dir(project)
        .env("HOME", home)
        .env("DISABLE_TELEMETRY", "1")
        .env("DO_NOT_TRACK", "1")
        .env("CI", "true")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", cli.display()));
    let started = Instant::now();
    while child.try_wait().expect("installer status").is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("`skills add` did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("installer output");
    assert!(
        output.status.success(),
        "`skills add` failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every regular file below `dir` (following a top-level link, as agents do), by path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, prefix: &str, files: &mut BTreeMap<String, Vec<u8>>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        for entry in entries {
            let entry = entry.expect("entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                walk(&path, &format!("{prefix}{name}/"), files);
            } else {
                files.insert(
                    format!("{prefix}{name}"),
                    std::fs::read(&path).expect("file"),
                );
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, "", &mut files);
    files
}

fn export(skill: &Path, out: &Path) -> PathBuf {
    let assert = crate::common::bin()
        .args(["export", "--skill"])
        .arg(skill)
        .arg("-o")
        .arg(out)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let skill_md = stdout
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("Emitted skill → "))
        .unwrap_or_else(|| panic!("no 'Emitted skill' line in:\n{stdout}"));
    PathBuf::from(skill_md)
        .parent()
        .expect("skill folder")
        .to_path_buf()
}

fn check_round_trip(source: &Path, name: &str) {
    let temp = tempfile::tempdir().unwrap();
    let (dist, project, home) = (
        temp.path().join("dist"),
        temp.path().join("project"),
        temp.path().join("home"),
    );
    for dir in [&project, &home] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let exported = export(source, &dist);
    assert_eq!(exported, dist.join(name));

    npx_skills_add(&exported, &project, &home);
    let installed = project.join(".claude/skills").join(name);
    assert_eq!(
        std::fs::read(installed.join("SKILL.md")).expect("installed SKILL.md"),
        std::fs::read(exported.join("SKILL.md")).unwrap(),
        "the installed SKILL.md differs from the exported one"
    );
    assert_eq!(tree(&installed), tree(&exported));

    let ours = temp.path().join("ours");
    std::fs::create_dir_all(&ours).unwrap();
    crate::common::bin()
        .args(["install", "-a", "claude-code", "--skill"])
        .arg(source)
        .arg("--project")
        .arg(&ours)
        .assert()
        .success();
    assert_eq!(
        tree(&ours.join(".claude/skills").join(name)),
        tree(&installed)
    );
}

#[test]
fn npx_skills_installs_an_exported_example_byte_for_byte() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/invoice-extractor/seed_skill.md");
    check_round_trip(&example, "invoice-extractor");
}

#[test]
fn npx_skills_installs_an_exported_skill_with_its_bundled_files() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-form-notes");
    check_round_trip(&fixture, "pdf-form-notes");
}

#[test]
fn npx_skills_installs_a_classifier_run_with_its_scorer_that_runs() {
    // The pr-mismatch example, optimized offline: its workspace is the skill.
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("example");
    let config = crate::common::offline_pr_mismatch(&dir);
    crate::common::bin()
        .args(["optimize", "-c"])
        .arg(&config)
        .assert()
        .success();
    check_round_trip(&dir.join("ws"), "pr-mismatch");
    // The scorer (installed byte for byte, as checked above) answers as the lab does: 0.2
    // above the threshold is `block`, below it `pass`, and no answer never flags.
    let installed = export(&dir.join("ws"), &temp.path().join("dist")).join("scripts/scorer.py");
    let probeset: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ws/probeset.json")).unwrap())
            .unwrap();
    let question = probeset["score"].as_str().expect("a one-question score");
    let threshold = probeset["threshold"].as_f64().unwrap();
    let program = format!(
        "import importlib.util, sys\ns = importlib.util.spec_from_file_location('s', sys.argv[1]); m = importlib.util.module_from_spec(s); s.loader.exec_module(m)\nfor p in ({}, {}, None):\n    a = {{}} if p is None else {{'{question}': p}}\n    print(m.flags(a), m.verdict(a))",
        threshold + 0.25,
        threshold - 0.01
    );
    let ran = std::process::Command::new("python3")
        .arg("-c")
        .arg(program)
        .arg(&installed)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "True block\nFalse pass\nFalse pass\n"
    );
}
