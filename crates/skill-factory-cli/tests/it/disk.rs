//! A full disk and a read-only runs folder: a clear error naming the file and the fix, exit 2,
//! and no corrupt file left (every JSON file whole, every JSONL line whole, no temporaries, a
//! cache SQLite still opens). Each case runs in a mount namespace of its own
//! (`unshare --user --map-root-user --mount`) on a small tmpfs, so no real disk is filled and
//! no privilege is needed.

use std::path::{Path, PathBuf};
use std::process::Command;

use skill_factory_llm::{CacheMode, CacheStore};
use skill_factory_mock::MockConfig;

use crate::common::{self, repo_root};

/// What a command run on the small file system left: its exit code, what it printed, and a
/// copy of the file system made after it ended.
struct Outcome {
    code: Option<i32>,
    stderr: String,
    stdout: String,
    copy: PathBuf,
}

/// Runs `skill-factory ARGS` with a tmpfs of `size` mounted at `mount` (read-only when
/// `read_only`, with a `runs` folder made first), then copies the tmpfs to `dir/copy`.
fn on_small_disk(dir: &Path, mount: &Path, size: &str, read_only: bool, args: &[&str]) -> Outcome {
    std::fs::create_dir_all(mount).unwrap();
    let copy = dir.join("copy");
    let remount = if read_only {
        format!(
            "mkdir -p {m}/runs && mount -o remount,ro {m} && ",
            m = mount.display()
        )
    } else {
        String::new()
    };
    let script = format!(
        "mount -t tmpfs -o size={size} tmpfs {m} && {remount}\"$0\" \"$@\" >{out} 2>{err}; echo $? >{code}; cp -a {m} {copy}",
        m = mount.display(),
        out = dir.join("stdout").display(),
        err = dir.join("stderr").display(),
        code = dir.join("code").display(),
        copy = copy.display(),
    );
    let mut command = Command::new("unshare");
    common::scrub(&mut command);
    let status = command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
        .arg(env!("CARGO_BIN_EXE_skill-factory"))
        .args(args)
        .status()
        .expect("unshare runs (util-linux)");
    assert!(status.success(), "the namespace could not be set up");
    let code = std::fs::read_to_string(dir.join("code")).unwrap();
    Outcome {
        code: code.trim().parse().ok(),
        stderr: std::fs::read_to_string(dir.join("stderr")).unwrap(),
        stdout: std::fs::read_to_string(dir.join("stdout")).unwrap(),
        copy,
    }
}

/// Asserts that nothing below `dir` is half-written.
fn assert_nothing_corrupt(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
                continue;
            }
            assert!(
                !name.ends_with(".tmp"),
                "a temporary is left: {}",
                path.display()
            );
            let text = || std::fs::read_to_string(&path).unwrap();
            if name.ends_with(".json") {
                serde_json::from_str::<serde_json::Value>(&text())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            } else if name.ends_with(".jsonl") {
                let text = text();
                assert!(
                    text.is_empty() || text.ends_with('\n'),
                    "{}: torn",
                    path.display()
                );
                for (n, line) in text.lines().enumerate() {
                    serde_json::from_str::<serde_json::Value>(line)
                        .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1));
                }
            } else if name.ends_with(".sqlite") {
                CacheStore::open(&path, CacheMode::ReadOnly)
                    .and_then(|cache| cache.stats())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    }
}

/// `optimize` of the offline ticket-classifier example into `runs/` on the small file system,
/// and that runs folder.
fn optimize_on_small_disk(dir: &Path, size: &str, read_only: bool) -> (Outcome, PathBuf) {
    let config = repo_root().join("examples/ticket-classifier/config.offline.yaml");
    let mount = dir.join("disk");
    let runs = mount.join("runs");
    let args = [
        "optimize",
        "-c",
        config.to_str().unwrap(),
        "-o",
        runs.to_str().unwrap(),
    ];
    (on_small_disk(dir, &mount, size, read_only, &args), runs)
}

#[test]
fn a_full_disk_stops_optimize_with_the_file_and_the_fix_and_leaves_nothing_half_written() {
    // From too small for the first file to room for all but the report.
    for size in ["8k", "24k", "40k", "60k"] {
        let dir = tempfile::tempdir().unwrap();
        let (outcome, runs) = optimize_on_small_disk(dir.path(), size, false);
        assert_eq!(outcome.code, Some(2), "{size}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains("No space left on device")
                && outcome.stderr.contains(
                    "the disk is full: free some space on it, or pick another folder with -o DIR"
                )
                && outcome.stderr.contains(&runs.display().to_string()),
            "{size}: {}",
            outcome.stderr
        );
        assert!(!outcome.stderr.contains("panicked"), "{}", outcome.stderr);
        assert_nothing_corrupt(&outcome.copy);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_under_the_cache_keeps_the_cache_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        common::labelled_mock(dir.path(), common::LABEL_SKILL, 200, MockConfig::default()).await;
    let mount = dir.path().join("disk");
    let cache = mount.join("cache.sqlite");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "skill: skill.md\ndataset: data.jsonl\n\
             provider: {{name: openai, model: m, base_url: \"{}/v1\", api_key: k}}\n\
             metric:\n  golden: {{mode: exact}}\ncache: {{path: \"{}\"}}\n",
            server.base_url(),
            cache.display()
        ),
    )
    .unwrap();
    let outcome = {
        let dir = dir.path().to_path_buf();
        let args = ["evaluate", "-c", config.to_str().unwrap()].map(str::to_string);
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            on_small_disk(&dir, &mount, "48k", false, &args)
        })
        .await
        .unwrap()
    };
    assert!(!outcome.stderr.contains("panicked"), "{}", outcome.stderr);
    // The cache is an optimization: the evaluation goes on without it, and says so.
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains("database or disk is full (free some space")
            && outcome.stderr.contains("calls go to the model uncached"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stdout.contains("Score: 0.665 over 200 tasks"),
        "{}",
        outcome.stdout
    );
    assert_nothing_corrupt(&outcome.copy);
}

#[test]
fn a_read_only_runs_folder_is_refused_before_the_run_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, runs) = optimize_on_small_disk(dir.path(), "1m", true);
    assert_eq!(outcome.code, Some(2), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("Read-only file system")
            && outcome.stderr.contains(
                "the file system is read-only: write elsewhere, or pick another folder with -o DIR"
            )
            && outcome.stderr.contains(&runs.display().to_string()),
        "{}",
        outcome.stderr
    );
    assert!(
        std::fs::read_dir(outcome.copy.join("runs"))
            .unwrap()
            .next()
            .is_none(),
        "nothing was written"
    );
}

#[test]
fn a_full_disk_under_a_lab_workspace_stops_it_with_the_file_and_the_fix() {
    for size in ["8k", "32k", "64k"] {
        let dir = tempfile::tempdir().unwrap();
        let example = dir.path().join("pr");
        common::copy_example("pr-mismatch", &example);
        let mount = dir.path().join("disk");
        let config = example.join("config.offline.yaml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            text.replace(
                "workspace: ../../runs/pr-mismatch-offline",
                &format!("workspace: {}", mount.join("ws").display()),
            ),
        )
        .unwrap();
        let args = ["optimize", "-c", config.to_str().unwrap()];
        let outcome = on_small_disk(dir.path(), &mount, size, false, &args);
        assert_eq!(outcome.code, Some(2), "{size}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains("No space left on device")
                && outcome
                    .stderr
                    .contains("the disk is full: free some space on it, or")
                && outcome
                    .stderr
                    .contains(&mount.join("ws").display().to_string()),
            "{size}: {}",
            outcome.stderr
        );
        assert!(!outcome.stderr.contains("panicked"), "{}", outcome.stderr);
        assert_nothing_corrupt(&outcome.copy);
    }
}
