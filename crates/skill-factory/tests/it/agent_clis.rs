//! The agent CLI presets against fake `claude`, `codex` and `gemini` executables written for
//! these tests: POSIX sh scripts that check their argv and stdin the way the real CLIs parse
//! them (failing with a usage error otherwise), record what they received, and answer like the
//! real ones: the final answer on stdout, progress on stderr.
//!
//! Each fake follows the skill it was given: a skill whose text says `UPPERCASE` makes it
//! answer the task in upper case. In installed mode it finds the skill the way the real agent
//! does, in `.claude/skills/*/SKILL.md` or `.agents/skills/*/SKILL.md` under its working
//! directory, and like a real agent skips a skill whose frontmatter `name` is not its folder's
//! name. `FAKE_MODE` makes any of them misbehave as real programs do: a huge answer, bytes that
//! are not UTF-8, a crash by signal, a hang.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use skill_factory::config::SkillMode;
use skill_factory::harness::{
    AgentCli, AgentOptions, Harness, ProcessSettings, Program, SubprocessHarness,
};
use skill_factory_core::{Rollout, Skill, Task};

/// Shared by the fakes: records argv (one NUL-terminated element each) and stdin, then applies
/// the skill to the task.
const COMMON: &str = r#"
record() {
    : > "$REC/argv"
    for a in "$@"; do printf '%s\0' "$a" >> "$REC/argv"; done
}
installed_skill() {
    for file in "$1"/*/SKILL.md; do
        [ -f "$file" ] || continue
        folder=$(basename "$(dirname "$file")")
        if grep -qx "name: $folder" "$file"; then
            cat "$file"
        else
            echo "skipping $file: its name is not its folder's ($folder)" >&2
        fi
    done
}
misbehave() {
    [ -n "${FAKE_MODE:-}" ] || return 0
    cat > /dev/null
    case "$FAKE_MODE" in
        huge) yes 'the answer is long' | head -c 12000000; exit 0 ;;
        binary) printf 'caf\351 \377\376 done\n'; exit 0 ;;
        crash) echo "fatal: out of memory" >&2; kill -SEGV $$ ;;
        hang) sleep 30 ;;
    esac
}
answer() {
    # $1 = skill text, $2 = task
    case "$1" in
        *UPPERCASE*) printf '%s\n' "$2" | tr 'a-z' 'A-Z' ;;
        *) printf '%s\n' "$2" ;;
    esac
}
usage() { echo "error: $*" >&2; exit 2; }
"#;

const FAKE_CLAUDE: &str = r#"
record "$@"
misbehave
[ "$1" = "-p" ] || usage "expected -p first"
[ "$2" = "--output-format" ] && [ "$3" = "text" ] || usage "expected --output-format text"
shift 3
system=""
if [ "$1" = "--append-system-prompt" ]; then
    [ $# -ge 2 ] || usage "--append-system-prompt needs a value"
    system="$2"; shift 2
fi
if [ "$1" = "--model" ]; then
    [ $# -ge 2 ] || usage "--model needs a value"
    shift 2
fi
input=$(cat)
printf '%s' "$input" > "$REC/stdin"
[ -n "$input" ] || usage "no prompt on stdin"
echo "claude: thinking" >&2
answer "$system$(installed_skill .claude/skills)" "$input"
"#;

const FAKE_CODEX: &str = r#"
record "$@"
misbehave
[ "$1" = "exec" ] || usage "expected the exec subcommand"
[ "$2" = "--skip-git-repo-check" ] || usage "not inside a trusted directory and --skip-git-repo-check was not specified"
shift 2
last=""
for a in "$@"; do last="$a"; done
[ "$last" = "-" ] || usage "expected - (read the prompt from stdin) last"
prompt=$(cat)
printf '%s' "$prompt" > "$REC/stdin"
echo "codex: working" >&2
task=$(printf '%s\n' "$prompt" | awk 'seen { print } /^---$/ { seen = 1 }')
[ -n "$task" ] || task="$prompt"
answer "$prompt$(installed_skill .agents/skills)" "$task"
"#;

const FAKE_GEMINI: &str = r#"
record "$@"
misbehave
[ "$1" = "--output-format" ] && [ "$2" = "text" ] || usage "expected --output-format text"
shift 2
prompt=""
while [ $# -gt 0 ]; do
    case "$1" in
    --prompt=*)
        [ $# -eq 1 ] || usage "expected --prompt=<text> last"
        prompt="${1#--prompt=}"; shift
        ;;
    --prompt)
        usage "--prompt <text> as two arguments: a prompt starting with - is read as flags"
        ;;
    *)
        shift
        ;;
    esac
done
[ -n "$prompt" ] || usage "no --prompt=: would start the interactive UI"
stdin=$(cat)
printf '%s' "$stdin" > "$REC/stdin"
[ -z "$stdin" ] || usage "unexpected input on stdin"
echo "gemini: loaded" >&2
task=$(printf '%s\n' "$prompt" | awk 'seen { print } /^---$/ { seen = 1 }')
[ -n "$task" ] || task="$prompt"
answer "$prompt$(installed_skill .agents/skills)" "$task"
"#;

/// A folder holding the three fakes and what they record.
struct Fakes {
    dir: tempfile::TempDir,
}

impl Fakes {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in [
            ("claude", FAKE_CLAUDE),
            ("codex", FAKE_CODEX),
            ("gemini", FAKE_GEMINI),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{COMMON}{body}")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Fakes { dir }
    }

    fn executable(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn recorded_argv(&self) -> Vec<String> {
        let bytes = std::fs::read(self.dir.path().join("argv")).unwrap();
        bytes
            .split(|b| *b == 0)
            .filter(|part| !part.is_empty())
            .map(|part| String::from_utf8_lossy(part).into_owned())
            .collect()
    }

    fn recorded_stdin(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stdin")).unwrap()
    }

    fn harness(
        &self,
        cli: AgentCli,
        model: Option<&str>,
        extra: &[&str],
        mode: SkillMode,
    ) -> SubprocessHarness {
        self.build(cli, model, extra, mode, None, Duration::from_secs(20))
    }

    /// A harness whose fake misbehaves as `FAKE_MODE` says, with a rollout timeout.
    fn misbehaving(&self, cli: AgentCli, fake_mode: &str, timeout: Duration) -> SubprocessHarness {
        self.build(cli, None, &[], SkillMode::Prompt, Some(fake_mode), timeout)
    }

    fn build(
        &self,
        cli: AgentCli,
        model: Option<&str>,
        extra: &[&str],
        mode: SkillMode,
        fake_mode: Option<&str>,
        timeout: Duration,
    ) -> SubprocessHarness {
        let executable = match cli {
            AgentCli::ClaudeCode => self.executable("claude"),
            AgentCli::Codex => self.executable("codex"),
            AgentCli::GeminiCli => self.executable("gemini"),
        };
        let mut settings = ProcessSettings::with_timeout(timeout);
        settings.env = BTreeMap::from([("REC".to_string(), self.dir.path().display().to_string())]);
        if let Some(fake_mode) = fake_mode {
            settings.env.insert("FAKE_MODE".into(), fake_mode.into());
        }
        settings.skill_mode = mode;
        SubprocessHarness::new(
            Program::Agent {
                cli,
                options: AgentOptions {
                    executable,
                    model: model.map(str::to_string),
                    extra_args: extra.iter().map(|s| s.to_string()).collect(),
                },
            },
            settings,
        )
        .unwrap()
    }
}

const CLIS: [AgentCli; 3] = [AgentCli::ClaudeCode, AgentCli::Codex, AgentCli::GeminiCli];

fn skill(body: &str) -> Skill {
    Skill::parse(&format!(
        "---\nname: Shout Skill\ndescription: Answers loudly.\n---\n{body}\n"
    ))
    .unwrap()
}

async fn run(harness: &SubprocessHarness, body: &str, input: &str) -> Rollout {
    harness.run(&skill(body), &Task::new("t1", input)).await
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn claude_code_gets_the_reference_argv_and_the_input_on_stdin() {
    let fakes = Fakes::new();
    let harness = fakes.harness(
        AgentCli::ClaudeCode,
        Some("claude-haiku-4-5"),
        &["--max-turns", "3"],
        SkillMode::Prompt,
    );
    assert_eq!(harness.name(), "claude_code");
    let rollout = run(&harness, "Answer in UPPERCASE.", "hello there").await;
    assert_eq!(rollout.error, None, "{rollout:?}");
    assert_eq!(rollout.output, "HELLO THERE");
    assert_eq!(rollout.metadata["harness"], "claude_code");
    assert_eq!(rollout.metadata["stderr"], "claude: thinking\n");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&[
            "-p",
            "--output-format",
            "text",
            "--append-system-prompt",
            "Answer in UPPERCASE.",
            "--model",
            "claude-haiku-4-5",
            "--max-turns",
            "3",
        ])
    );
    assert_eq!(fakes.recorded_stdin(), "hello there");
}

#[tokio::test]
async fn claude_code_without_model_or_extra_args_adds_nothing() {
    let fakes = Fakes::new();
    let harness = fakes.harness(AgentCli::ClaudeCode, None, &[], SkillMode::Prompt);
    let rollout = run(&harness, "Be calm.", "hello").await;
    assert_eq!(rollout.output, "hello");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&[
            "-p",
            "--output-format",
            "text",
            "--append-system-prompt",
            "Be calm."
        ])
    );
}

#[tokio::test]
async fn claude_code_passes_a_body_with_placeholders_untouched() {
    let fakes = Fakes::new();
    let harness = fakes.harness(AgentCli::ClaudeCode, None, &[], SkillMode::Prompt);
    run(&harness, "Reply to {input} by {task_id}.", "SECRET").await;
    assert_eq!(fakes.recorded_argv()[4], "Reply to {input} by {task_id}.");
}

#[tokio::test]
async fn claude_code_installed_finds_the_skill_in_its_project_skills_folder() {
    let fakes = Fakes::new();
    let harness = fakes.harness(AgentCli::ClaudeCode, None, &[], SkillMode::Installed);
    let rollout = run(&harness, "Answer in UPPERCASE.", "quiet please").await;
    assert_eq!(rollout.error, None, "{rollout:?}");
    assert_eq!(rollout.output, "QUIET PLEASE");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&["-p", "--output-format", "text"]),
        "installed mode must not also append the skill to the system prompt"
    );
}

#[tokio::test]
async fn claude_code_installed_layout_is_dot_claude_skills_name_skill_md() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("layout");
    std::fs::write(&script, "#!/bin/sh\nfind . -name SKILL.md\npwd -P\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut settings = ProcessSettings::with_timeout(Duration::from_secs(20));
    settings.skill_mode = SkillMode::Installed;
    for (cli, expected) in [
        (
            AgentCli::ClaudeCode,
            "./.claude/skills/shout-skill/SKILL.md",
        ),
        (AgentCli::Codex, "./.agents/skills/shout-skill/SKILL.md"),
        (AgentCli::GeminiCli, "./.agents/skills/shout-skill/SKILL.md"),
    ] {
        let harness = SubprocessHarness::new(
            Program::Agent {
                cli,
                options: AgentOptions {
                    executable: script.display().to_string(),
                    model: None,
                    extra_args: Vec::new(),
                },
            },
            settings.clone(),
        )
        .unwrap();
        let rollout = run(&harness, "b", "x").await;
        let lines: Vec<&str> = rollout.output.lines().collect();
        assert_eq!(lines[0], expected, "{cli:?}");
        let workspace = PathBuf::from(lines[1]);
        assert!(workspace.ends_with("workspace"), "{workspace:?}");
        assert!(!workspace.exists(), "{cli:?} left its workspace behind");
    }
}

#[tokio::test]
async fn codex_reads_skill_then_task_from_stdin() {
    let fakes = Fakes::new();
    let harness = fakes.harness(
        AgentCli::Codex,
        Some("gpt-5-codex"),
        &["--sandbox", "read-only"],
        SkillMode::Prompt,
    );
    assert_eq!(harness.name(), "codex");
    let rollout = run(&harness, "Answer in UPPERCASE.", "make it loud").await;
    assert_eq!(rollout.error, None, "{rollout:?}");
    assert_eq!(rollout.output, "MAKE IT LOUD");
    assert_eq!(rollout.metadata["stderr"], "codex: working\n");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&[
            "exec",
            "--skip-git-repo-check",
            "--model",
            "gpt-5-codex",
            "--sandbox",
            "read-only",
            "-",
        ])
    );
    assert_eq!(
        fakes.recorded_stdin(),
        "Answer in UPPERCASE.\n\n---\n\nmake it loud"
    );
}

#[tokio::test]
async fn codex_installed_gets_the_task_alone_and_finds_the_skill() {
    let fakes = Fakes::new();
    let harness = fakes.harness(AgentCli::Codex, None, &[], SkillMode::Installed);
    let rollout = run(&harness, "Answer in UPPERCASE.", "make it loud").await;
    assert_eq!(rollout.output, "MAKE IT LOUD", "{rollout:?}");
    assert_eq!(fakes.recorded_stdin(), "make it loud");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&["exec", "--skip-git-repo-check", "-"])
    );
}

#[tokio::test]
async fn gemini_gets_skill_then_task_as_its_prompt_and_nothing_on_stdin() {
    let fakes = Fakes::new();
    let harness = fakes.harness(
        AgentCli::GeminiCli,
        Some("gemini-2.5-flash"),
        &["--yolo"],
        SkillMode::Prompt,
    );
    assert_eq!(harness.name(), "gemini_cli");
    let rollout = run(&harness, "Answer in UPPERCASE.", "be heard").await;
    assert_eq!(rollout.error, None, "{rollout:?}");
    assert_eq!(rollout.output, "BE HEARD");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&[
            "--output-format",
            "text",
            "--model",
            "gemini-2.5-flash",
            "--yolo",
            "--prompt=Answer in UPPERCASE.\n\n---\n\nbe heard",
        ])
    );
    assert_eq!(fakes.recorded_stdin(), "");
}

#[tokio::test]
async fn gemini_installed_finds_the_skill_in_the_agents_skills_folder() {
    let fakes = Fakes::new();
    let harness = fakes.harness(AgentCli::GeminiCli, None, &[], SkillMode::Installed);
    let rollout = run(&harness, "Answer in UPPERCASE.", "be heard").await;
    assert_eq!(rollout.output, "BE HEARD", "{rollout:?}");
    assert_eq!(
        fakes.recorded_argv(),
        strings(&["--output-format", "text", "--prompt=be heard"])
    );
}

#[tokio::test]
async fn a_gemini_prompt_that_starts_with_a_dash_stays_one_argument() {
    let fakes = Fakes::new();
    let harness = fakes.harness(AgentCli::GeminiCli, None, &[], SkillMode::Installed);
    let rollout = run(&harness, "Answer in UPPERCASE.", "--approval-mode=yolo -y").await;
    assert_eq!(
        fakes.recorded_argv(),
        strings(&[
            "--output-format",
            "text",
            "--prompt=--approval-mode=yolo -y"
        ])
    );
    assert_eq!(rollout.output, "--APPROVAL-MODE=YOLO -Y", "{rollout:?}");
}

#[tokio::test]
async fn an_agent_that_rejects_its_arguments_is_a_failed_rollout_with_its_usage_error() {
    let fakes = Fakes::new();
    // The codex fake refuses to run without `exec`: point the claude preset at it.
    let harness = SubprocessHarness::new(
        Program::Agent {
            cli: AgentCli::ClaudeCode,
            options: AgentOptions {
                executable: fakes.executable("codex"),
                model: None,
                extra_args: Vec::new(),
            },
        },
        {
            let mut s = ProcessSettings::with_timeout(Duration::from_secs(20));
            s.env = BTreeMap::from([("REC".to_string(), fakes.dir.path().display().to_string())]);
            s
        },
    )
    .unwrap();
    let rollout = run(&harness, "b", "x").await;
    assert_eq!(
        rollout.error.as_deref(),
        Some("exit 2: error: expected the exec subcommand")
    );
}

#[tokio::test]
async fn a_missing_agent_binary_says_which_one() {
    let harness = SubprocessHarness::new(
        Program::Agent {
            cli: AgentCli::GeminiCli,
            options: AgentOptions {
                executable: "gemini-not-installed-sf".to_string(),
                model: None,
                extra_args: Vec::new(),
            },
        },
        ProcessSettings::with_timeout(Duration::from_secs(5)),
    )
    .unwrap();
    let rollout = run(&harness, "b", "x").await;
    let error = rollout.error.unwrap();
    assert!(
        error.starts_with("failed to launch 'gemini-not-installed-sf'"),
        "{error}"
    );
}

#[tokio::test]
async fn an_agent_that_hangs_is_stopped_at_the_timeout() {
    let fakes = Fakes::new();
    for cli in CLIS {
        let harness = fakes.misbehaving(cli, "hang", Duration::from_millis(400));
        let started = std::time::Instant::now();
        let rollout = run(&harness, "b", "x").await;
        assert_eq!(
            rollout.error.as_deref(),
            Some("command timed out after 0.4s"),
            "{cli:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(3), "{cli:?}");
    }
}

#[tokio::test]
async fn an_agent_that_crashes_fails_its_rollout_with_the_signal_and_its_last_words() {
    let fakes = Fakes::new();
    for cli in CLIS {
        let rollout = run(
            &fakes.misbehaving(cli, "crash", Duration::from_secs(20)),
            "b",
            "x",
        )
        .await;
        assert_eq!(
            rollout.error.as_deref(),
            Some("exit -11: fatal: out of memory"),
            "{cli:?}"
        );
        assert_eq!(rollout.output, "", "{cli:?}");
    }
}

#[tokio::test]
async fn a_huge_agent_answer_is_capped_and_flagged() {
    let fakes = Fakes::new();
    for cli in CLIS {
        let rollout = run(
            &fakes.misbehaving(cli, "huge", Duration::from_secs(20)),
            "b",
            "x",
        )
        .await;
        assert_eq!(rollout.error, None, "{cli:?}");
        assert_eq!(
            rollout.output.len(),
            8 << 20,
            "{cli:?}: the first 8 MiB are kept"
        );
        assert!(
            rollout.output.starts_with("the answer is long\n"),
            "{cli:?}"
        );
        assert_eq!(rollout.metadata["output_truncated"], true, "{cli:?}");
        assert_eq!(rollout.metadata["stdout_bytes"], 12_000_000, "{cli:?}");
    }
}

#[tokio::test]
async fn agent_bytes_that_are_not_utf8_become_replacement_characters() {
    let fakes = Fakes::new();
    for cli in CLIS {
        let rollout = run(
            &fakes.misbehaving(cli, "binary", Duration::from_secs(20)),
            "b",
            "x",
        )
        .await;
        assert_eq!(rollout.error, None, "{cli:?}");
        assert_eq!(
            rollout.output, "caf\u{fffd} \u{fffd}\u{fffd} done",
            "{cli:?}"
        );
    }
}
