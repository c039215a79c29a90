//! The `subprocess` harness: the user's own command, run per rollout with placeholders, stdin,
//! timeouts, environment and working directory, and every way a child can go wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skill_factory::config::GoldenMode;
use skill_factory::config::{InputVia, SkillMode};
use skill_factory::evaluate::{Quiet, evaluate};
use skill_factory::harness::{Harness, ProcessSettings, Program, SubprocessHarness};
use skill_factory::metric::GoldenMetric;
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_io::process::Limits;

fn skill(body: &str) -> Skill {
    Skill::parse(&format!("---\nname: s\ndescription: d\n---\n{body}\n")).unwrap()
}

fn task(input: &str) -> Task {
    Task::new("t1", input)
}

fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn harness(items: &[&str], input_via: InputVia, settings: ProcessSettings) -> SubprocessHarness {
    SubprocessHarness::new(
        Program::Command {
            argv: argv(items),
            input_via,
        },
        settings,
    )
    .expect("valid harness")
}

fn quick() -> ProcessSettings {
    ProcessSettings::with_timeout(Duration::from_secs(20))
}

async fn run(items: &[&str], input_via: InputVia, input: &str) -> Rollout {
    harness(items, input_via, quick())
        .run(&skill("Return the input unchanged."), &task(input))
        .await
}

/// True while `pid` names a live process (a zombie counts as gone: it runs nothing).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

fn wait_until_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test]
async fn stdin_mode_pipes_the_input_and_records_the_return_code() {
    let rollout = run(&["tr", "a-z", "A-Z"], InputVia::Stdin, "hello world").await;
    assert_eq!(rollout.error, None);
    assert_eq!(rollout.output, "HELLO WORLD");
    assert_eq!(rollout.metadata["returncode"], 0);
    assert_eq!(rollout.metadata["harness"], "subprocess");
    assert!(rollout.latency_ms > 0.0);
}

#[tokio::test]
async fn arg_mode_substitutes_the_input_and_gives_the_child_an_empty_stdin() {
    let rollout = run(
        &[
            "sh",
            "-c",
            "if read -r line; then echo \"stdin: $line\"; else echo \"arg: $0\"; fi",
            "{input}",
        ],
        InputVia::Arg,
        "hello",
    )
    .await;
    assert_eq!(rollout.output, "arg: hello");
}

#[tokio::test]
async fn skill_file_is_a_readable_file_holding_the_whole_skill() {
    let rollout = run(&["cat", "{skill_file}"], InputVia::Stdin, "x").await;
    assert!(rollout.output.contains("name: s"), "{}", rollout.output);
    assert!(rollout.output.contains("Return the input unchanged."));
}

#[tokio::test]
async fn skill_dir_is_the_folder_of_that_file() {
    let rollout = run(
        &["sh", "-c", "cat \"$0/SKILL.md\"", "{skill_dir}"],
        InputVia::Stdin,
        "x",
    )
    .await;
    assert!(rollout.output.contains("name: s"), "{rollout:?}");
}

#[tokio::test]
async fn input_file_and_task_id_are_substituted() {
    let rollout = run(
        &[
            "sh",
            "-c",
            "printf '%s:' \"$1\"; cat \"$0\"",
            "{input_file}",
            "{task_id}",
        ],
        InputVia::Arg,
        "from a file",
    )
    .await;
    assert_eq!(rollout.output, "t1:from a file");
}

#[tokio::test]
async fn skill_body_is_substituted_inline() {
    let rollout = run(&["printf", "%s", "{skill_body}"], InputVia::Stdin, "x").await;
    assert_eq!(rollout.output, "Return the input unchanged.");
}

#[tokio::test]
async fn a_skill_body_containing_a_placeholder_reaches_the_child_as_written() {
    let rollout = harness(&["printf", "%s", "{skill_body}"], InputVia::Stdin, quick())
        .run(
            &skill("Body with {input} and {task_id} inside."),
            &task("INJECTED"),
        )
        .await;
    assert_eq!(rollout.output, "Body with {input} and {task_id} inside.");
}

#[tokio::test]
async fn json_braces_in_the_template_survive_untouched() {
    let rollout = run(
        &["printf", "%s|%s", "{input}", r#"{"not": "a placeholder"}"#],
        InputVia::Arg,
        "hello",
    )
    .await;
    assert_eq!(rollout.output, r#"hello|{"not": "a placeholder"}"#);
}

#[tokio::test]
async fn a_non_zero_exit_is_a_failed_rollout_quoting_stderr() {
    let rollout = run(
        &["sh", "-c", "echo partial; echo boom >&2; exit 3"],
        InputVia::Stdin,
        "x",
    )
    .await;
    assert_eq!(rollout.error.as_deref(), Some("exit 3: boom"));
    assert_eq!(rollout.output, "");
    assert_eq!(rollout.metadata["returncode"], 3);
    assert_eq!(rollout.metadata["stderr"], "boom\n");
    assert_eq!(rollout.metadata["stdout"], "partial\n");
}

#[tokio::test]
async fn a_crash_without_stderr_says_so_and_reports_the_signal() {
    let rollout = run(&["sh", "-c", "kill -9 $$"], InputVia::Stdin, "x").await;
    assert_eq!(rollout.error.as_deref(), Some("exit -9: (no stderr)"));
}

#[tokio::test]
async fn a_timeout_is_a_failed_rollout_and_comes_on_time() {
    let settings = ProcessSettings::with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let rollout = harness(&["sleep", "5"], InputVia::Stdin, settings)
        .run(&skill("b"), &task("x"))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        rollout.error.as_deref(),
        Some("command timed out after 0.3s")
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group_grandchildren_included() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = format!(
        "sleep 30 & echo $! > {pids}; echo started >&2; sleep 30",
        pids = pids.display()
    );
    let settings = ProcessSettings::with_timeout(Duration::from_millis(500));
    let rollout = harness(&["sh", "-c", &script], InputVia::Stdin, settings)
        .run(&skill("b"), &task("x"))
        .await;
    let error = rollout.error.unwrap_or_default();
    assert!(error.contains("timed out"), "{error}");
    assert!(error.contains("(stderr: started)"), "{error}");
    let grandchild: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_gone(grandchild),
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn a_background_process_left_by_a_finished_command_is_killed_too() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = format!(
        "sleep 30 >/dev/null 2>&1 & echo $! > {pids}; echo done",
        pids = pids.display()
    );
    let rollout = run(&["sh", "-c", &script], InputVia::Stdin, "x").await;
    assert_eq!(rollout.output, "done");
    let leftover: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_gone(leftover),
        "background process {leftover} survived"
    );
}

#[tokio::test]
async fn a_missing_executable_is_a_launch_failure() {
    let rollout = run(&["no-such-binary-sf-test"], InputVia::Stdin, "x").await;
    let error = rollout.error.unwrap();
    assert!(
        error.starts_with("failed to launch 'no-such-binary-sf-test': "),
        "{error}"
    );
}

#[test]
fn arg_mode_without_an_input_placeholder_is_refused() {
    let error = SubprocessHarness::new(
        Program::Command {
            argv: argv(&["cat", "{skill_file}"]),
            input_via: InputVia::Arg,
        },
        quick(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("input_via: arg"), "{error}");
    let empty = SubprocessHarness::new(
        Program::Command {
            argv: Vec::new(),
            input_via: InputVia::Stdin,
        },
        quick(),
    );
    assert!(empty.unwrap_err().to_string().contains("command"));
}

#[tokio::test]
async fn huge_output_is_capped_and_flagged_not_held_in_memory() {
    let settings = quick();
    let limits = Limits {
        stdout_head: 1024 * 1024,
        tail: 64 * 1024,
    };
    let rollout = harness(
        &["sh", "-c", "yes abcdefghi | head -c 30000000"],
        InputVia::Stdin,
        settings,
    )
    .with_limits(limits)
    .run(&skill("b"), &task("x"))
    .await;
    assert_eq!(rollout.error, None);
    assert!(
        rollout.output.len() <= 1024 * 1024,
        "{}",
        rollout.output.len()
    );
    assert!(rollout.output.starts_with("abcdefghi\nabcdefghi"));
    assert_eq!(rollout.metadata["output_truncated"], true);
    assert_eq!(rollout.metadata["stdout_bytes"], 30_000_000);
}

#[tokio::test]
async fn huge_stderr_of_a_failure_is_quoted_by_its_tail() {
    let rollout = run(
        &[
            "sh",
            "-c",
            "yes noise | head -c 20000000 >&2; echo 'the real reason' >&2; exit 1",
        ],
        InputVia::Stdin,
        "x",
    )
    .await;
    let error = rollout.error.unwrap();
    assert!(error.starts_with("exit 1: "), "{}", &error[..40]);
    assert!(
        error.ends_with("the real reason"),
        "{}",
        &error[error.len() - 40..]
    );
    assert!(error.chars().count() <= "exit 1: ".len() + 1000);
    let kept = rollout.metadata["stderr"].as_str().unwrap();
    assert!(kept.len() <= 64 * 1024);
}

#[tokio::test]
async fn bytes_that_are_not_utf8_become_replacement_characters() {
    let rollout = run(&["printf", "ok \\377\\376 end"], InputVia::Stdin, "x").await;
    assert_eq!(rollout.error, None);
    assert_eq!(rollout.output, "ok \u{fffd}\u{fffd} end");
}

#[tokio::test]
async fn env_is_laid_over_the_inherited_environment() {
    let mut settings = quick();
    settings.env = BTreeMap::from([("SF_TEST_VALUE".to_string(), "42".to_string())]);
    let rollout = harness(
        &[
            "sh",
            "-c",
            "printf '%s %s' \"$SF_TEST_VALUE\" \"${PATH:+has-path}\"",
        ],
        InputVia::Stdin,
        settings,
    )
    .run(&skill("b"), &task("x"))
    .await;
    assert_eq!(rollout.output, "42 has-path");
}

#[tokio::test]
async fn cwd_sets_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = quick();
    settings.cwd = Some(dir.path().to_path_buf());
    let rollout = harness(&["pwd", "-P"], InputVia::Stdin, settings)
        .run(&skill("b"), &task("x"))
        .await;
    assert_eq!(
        PathBuf::from(rollout.output),
        dir.path().canonicalize().unwrap()
    );
}

#[tokio::test]
async fn the_rollout_folder_is_removed_afterwards() {
    let rollout = run(&["printf", "%s", "{skill_dir}"], InputVia::Stdin, "x").await;
    let folder = Path::new(&rollout.output);
    assert!(
        folder
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("skill-factory-"),
        "{folder:?}"
    );
    assert!(!folder.exists(), "{folder:?} was left behind");
}

#[tokio::test]
async fn installed_mode_runs_in_a_fresh_workspace_holding_the_skill() {
    let mut settings = quick();
    settings.skill_mode = SkillMode::Installed;
    let rollout = harness(
        &[
            "sh",
            "-c",
            "pwd -P; ls .agents/skills; cat .agents/skills/s/SKILL.md; echo \"$0\"",
            "{skill_file}",
        ],
        InputVia::Stdin,
        settings,
    )
    .run(&skill("Installed body."), &task("x"))
    .await;
    assert_eq!(rollout.error, None, "{rollout:?}");
    let lines: Vec<&str> = rollout.output.lines().collect();
    assert!(lines[0].ends_with("/workspace"), "{lines:?}");
    assert_eq!(lines[1], "s");
    assert!(rollout.output.contains("Installed body."));
    assert!(
        lines
            .last()
            .unwrap()
            .ends_with("workspace/.agents/skills/s/SKILL.md"),
        "{lines:?}"
    );
    assert_eq!(rollout.metadata["skill_mode"], "installed");
    assert!(
        !Path::new(lines[0]).exists(),
        "the workspace was left behind"
    );
}

#[tokio::test]
async fn rollouts_run_in_parallel_under_evaluate() {
    let harness = Arc::new(harness(
        &["sh", "-c", "sleep 0.5; cat"],
        InputVia::Stdin,
        quick(),
    ));
    let tasks: Vec<Task> = (0..4)
        .map(|i| Task::new(format!("t{i}"), format!("in {i}")).with_expected(format!("in {i}")))
        .collect();
    let started = Instant::now();
    let evaluation = evaluate(
        Arc::new(skill("b")),
        &tasks,
        1,
        harness,
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        4,
        Arc::new(Quiet),
    )
    .await;
    assert_eq!(evaluation.score(), 1.0);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "four 0.5 s rollouts with 4 workers took {:?}",
        started.elapsed()
    );
}

#[test]
fn debug_output_names_env_variables_but_hides_their_values() {
    let mut settings = quick();
    settings.env = BTreeMap::from([("ANTHROPIC_API_KEY".to_string(), "sk-ant-secret".to_string())]);
    let shown = format!("{:?}", harness(&["cat"], InputVia::Stdin, settings));
    assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
    assert!(!shown.contains("sk-ant-secret"), "{shown}");
}

#[tokio::test]
async fn the_command_sees_the_skills_reference_files_beside_the_skill_file() {
    let with_guide = skill("Read the guide.").with_files(BTreeMap::from([(
        "references/guide.md".to_string(),
        "Answer in French.\n".to_string(),
    )]));
    let reads = harness(
        &["cat", "{skill_dir}/references/guide.md"],
        InputVia::Stdin,
        quick(),
    );
    assert!(
        reads.shows_files(),
        "a command given the skill folder sees its files"
    );
    let rollout = reads.run(&with_guide, &task("x")).await;
    assert_eq!(rollout.error, None, "{rollout:?}");
    assert_eq!(rollout.output.trim(), "Answer in French.");
    let blind = harness(&["echo", "{input}"], InputVia::Arg, quick());
    assert!(
        !blind.shows_files(),
        "a command given no skill path sees no file"
    );
    let mut settings = quick();
    settings.skill_mode = SkillMode::Installed;
    assert!(harness(&["echo", "{input}"], InputVia::Arg, settings).shows_files());
}
