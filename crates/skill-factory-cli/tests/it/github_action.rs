//! The GitHub Action (`action.yml`, its scripts in `.github/action/`), run here as a runner runs
//! a composite action: each step's `run:` with its `env:`, the `${{ }}` expressions the action
//! uses put in, the variables GitHub sets, in a throwaway pull request's repository. The input
//! `binary` is this build, or the release's download goes to a stand-in `curl`, so nothing
//! reaches the network; `comment` is off and no token is given.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{copy_example, repo_root};

/// The repository GitHub would name in `GITHUB_REPOSITORY`.
const REPOSITORY: &str = "your-org/skills";

/// The offline example's skills: the hand-written one scores 1.000, the vague seed 0.475.
fn good_skill() -> String {
    example_file("hand_written_skill.md")
}

fn vague_skill() -> String {
    example_file("seed_skill.md")
}

fn example_file(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("examples/invoice-extractor").join(name)).unwrap()
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(repo)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A pull request's repository and its two commits.
struct PullRequest {
    repo: PathBuf,
    base: String,
    head: String,
}

/// A pull request in a new repository under `dir`: `main` holds the invoice example (its
/// `seed_skill.md` being `base_skill`), then `change` edits the tree on the branch `pr`.
fn pull_request(dir: &Path, base_skill: &str, change: impl FnOnce(&Path)) -> PullRequest {
    pull_request_on(
        dir,
        |repo| std::fs::write(repo.join("invoice-extractor/seed_skill.md"), base_skill).unwrap(),
        change,
    )
}

/// A pull request as [`pull_request`] makes one, `base` changing the example before the base
/// commit.
fn pull_request_on(
    dir: &Path,
    base: impl FnOnce(&Path),
    change: impl FnOnce(&Path),
) -> PullRequest {
    let repo = dir.join("repo");
    copy_example("invoice-extractor", &repo.join("invoice-extractor"));
    base(&repo);
    std::fs::write(repo.join("README.md"), "# Skills\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    git(&repo, &["config", "commit.gpgsign", "false"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-q", "-b", "pr"]);
    change(&repo);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "the pull request"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    PullRequest { repo, base, head }
}

/// A step of the composite action: what it runs, with which variables.
struct Step {
    id: Option<String>,
    run: String,
    env: Vec<(String, String)>,
}

/// `action.yml`, read as GitHub reads it.
struct Action {
    inputs: BTreeMap<String, String>,
    outputs: BTreeMap<String, String>,
    steps: Vec<Step>,
}

fn text(value: &Value, what: &str) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => panic!("{what} is not a scalar: {other}"),
    }
}

fn action() -> Action {
    let path = repo_root().join("action.yml");
    let source = std::fs::read_to_string(&path).unwrap();
    let yaml: Value = skill_factory_config::yaml::parse(&source, &path, &[])
        .unwrap_or_else(|e| panic!("action.yml: {e}"));
    assert_eq!(yaml["runs"]["using"], "composite", "a composite action");
    let inputs = yaml["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, input)| {
            let default = input
                .get("default")
                .map_or_else(String::new, |d| text(d, name));
            (name.clone(), default)
        })
        .collect();
    let outputs = yaml["outputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, output)| (name.clone(), text(&output["value"], name)))
        .collect();
    let steps = yaml["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            let step = step.as_object().unwrap();
            for key in step.keys() {
                // Anything else (`if:`, `uses:`, `working-directory:`) the runner below would
                // have to learn first.
                assert!(
                    ["name", "id", "shell", "env", "run"].contains(&key.as_str()),
                    "a step's `{key}:` is not run by this test"
                );
            }
            assert_eq!(step["shell"], "bash", "every step runs in bash");
            Step {
                id: step.get("id").map(|id| text(id, "id")),
                run: text(&step["run"], "run"),
                env: step.get("env").map_or_else(Vec::new, |env| {
                    env.as_object()
                        .unwrap()
                        .iter()
                        .map(|(name, value)| (name.clone(), text(value, name)))
                        .collect()
                }),
            }
        })
        .collect();
    Action {
        inputs,
        outputs,
        steps,
    }
}

/// What GitHub knows of the run, for the expressions.
struct Context<'a> {
    pr: &'a PullRequest,
    inputs: &'a BTreeMap<String, String>,
    steps: &'a BTreeMap<String, BTreeMap<String, String>>,
}

/// `text` with every `${{ }}` put in: exactly the expressions `action.yml` uses, as GitHub
/// evaluates them on a pull request; any other fails the test.
fn substitute(text: &str, context: &Context<'_>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .unwrap_or_else(|| panic!("an unclosed expression in {text:?}"))
            + start;
        let expression = rest[start + 3..end].trim();
        out.push_str(&evaluate(expression, context));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

fn evaluate(expression: &str, context: &Context<'_>) -> String {
    if let Some(name) = expression.strip_prefix("inputs.") {
        return context
            .inputs
            .get(name)
            .unwrap_or_else(|| panic!("action.yml reads the undeclared input {name}"))
            .clone();
    }
    if let Some(path) = expression.strip_prefix("steps.") {
        let (id, output) = path
            .split_once(".outputs.")
            .unwrap_or_else(|| panic!("an unknown step expression: {expression}"));
        return context
            .steps
            .get(id)
            .and_then(|outputs| outputs.get(output))
            .cloned()
            .unwrap_or_default();
    }
    match expression {
        "github.event.pull_request.base.sha || github.base_ref" => context.pr.base.clone(),
        // The action is used from its own repository here (`uses: ./`): no action_repository.
        "github.action_repository || github.repository" => REPOSITORY.to_string(),
        "github.event.pull_request.number" => "7".to_string(),
        // No token: nothing could be posted even if `comment` were on.
        "github.token" => String::new(),
        other => panic!("action.yml uses ${{{{ {other} }}}}, which this test does not evaluate"),
    }
}

/// `name=value` lines of a `$GITHUB_OUTPUT` file.
fn outputs_of(file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// What a run of the action left.
struct Job {
    /// The exit code of the step that failed, 0 when none did.
    code: i32,
    /// Every step's output, stdout then stderr.
    log: String,
    /// `$GITHUB_STEP_SUMMARY`.
    summary: String,
    /// The outputs of each step, by id.
    steps: BTreeMap<String, BTreeMap<String, String>>,
    /// The action's outputs.
    outputs: BTreeMap<String, String>,
    /// `$GITHUB_PATH`.
    path_file: String,
}

/// Runs the action's steps in the pull request's checkout, as GitHub runs a composite action
/// used with `with:` being `given` (the other inputs their defaults), stopping at the first
/// step that fails.
fn run_action(dir: &Path, pr: &PullRequest, given: &[(&str, &str)]) -> Job {
    run_action_with(dir, pr, given, None)
}

/// [`run_action`] with `tools` first on the PATH (stand-ins for the runner's programs).
fn run_action_with(
    dir: &Path,
    pr: &PullRequest,
    given: &[(&str, &str)],
    tools: Option<&Path>,
) -> Job {
    let action = action();
    let mut inputs = action.inputs.clone();
    for (name, value) in given {
        assert!(inputs.contains_key(*name), "action.yml has no input {name}");
        inputs.insert((*name).to_string(), (*value).to_string());
    }
    // Defaults are expressions too (`base-ref`); given values are taken as they are.
    let no_steps = BTreeMap::new();
    let defaults = Context {
        pr,
        inputs: &BTreeMap::new(),
        steps: &no_steps,
    };
    for (name, default) in &action.inputs {
        if !given.iter().any(|(n, _)| n == name) {
            inputs.insert(name.clone(), substitute(default, &defaults));
        }
    }

    let runner = dir.join("runner");
    let home = dir.join("home");
    std::fs::create_dir_all(runner.join("temp")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let (summary_file, path_file) = (runner.join("step_summary.md"), runner.join("path"));
    std::fs::write(&summary_file, "").unwrap();
    std::fs::write(&path_file, "").unwrap();

    let mut steps: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut log = String::new();
    let mut code = 0;
    for (n, step) in action.steps.iter().enumerate() {
        let context = Context {
            pr,
            inputs: &inputs,
            steps: &steps,
        };
        let script = runner.join(format!("step-{n}.sh"));
        std::fs::write(&script, substitute(&step.run, &context)).unwrap();
        let output_file = runner.join(format!("output-{n}"));
        std::fs::write(&output_file, "").unwrap();
        // $GITHUB_PATH's folders come first on the PATH of the steps after the one that
        // wrote them.
        let mut path: Vec<PathBuf> = std::fs::read_to_string(&path_file)
            .unwrap()
            .lines()
            .rev()
            .map(PathBuf::from)
            .collect();
        path.extend(tools.map(Path::to_path_buf));
        path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .current_dir(&pr.repo)
            // Nothing of this machine's environment but PATH: no key, no GITHUB_TOKEN of a CI
            // that runs this test, no SKILL_FACTORY_* override.
            .env_clear()
            .env("PATH", std::env::join_paths(path).unwrap())
            .env("HOME", &home)
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", &pr.repo)
            .env("GITHUB_ACTION_PATH", repo_root())
            .env("GITHUB_STEP_SUMMARY", &summary_file)
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_BASE_REF", "main")
            .env("GITHUB_HEAD_REF", "pr")
            .env("GITHUB_REF", "refs/pull/7/merge")
            .env("GITHUB_SHA", &pr.head)
            .env("GITHUB_REPOSITORY", REPOSITORY)
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("RUNNER_TEMP", runner.join("temp"));
        for (name, value) in &step.env {
            command.env(name, substitute(value, &context));
        }
        let out = command.output().expect("bash runs");
        log.push_str(&crate::common::printed(&out));
        let outputs = outputs_of(&output_file);
        if let Some(id) = &step.id {
            steps.insert(id.clone(), outputs);
        }
        if !out.status.success() {
            code = out.status.code().expect("the step exited");
            break;
        }
    }
    let context = Context {
        pr,
        inputs: &inputs,
        steps: &steps,
    };
    let outputs = action
        .outputs
        .iter()
        .map(|(name, value)| (name.clone(), substitute(value, &context)))
        .collect();
    Job {
        code,
        log,
        summary: std::fs::read_to_string(&summary_file).unwrap(),
        outputs,
        path_file: std::fs::read_to_string(&path_file).unwrap(),
        steps,
    }
}

/// The inputs of every run here: this build, the offline config only (the example's others
/// need a model server or a key), no comment.
fn inputs() -> Vec<(&'static str, &'static str)> {
    vec![
        ("binary", env!("CARGO_BIN_EXE_skill-factory")),
        ("configs", "config.offline.yaml"),
        ("comment", "false"),
    ]
}

#[test]
fn the_release_installed_by_default_is_this_version() {
    // A release's action installs that release's binary: bump `version` with Cargo.toml.
    assert_eq!(action().inputs["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn a_pull_request_that_makes_a_skill_worse_fails_with_its_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let pr = pull_request(tmp.path(), &good_skill(), |repo| {
        std::fs::write(repo.join("invoice-extractor/seed_skill.md"), vague_skill()).unwrap();
    });
    let job = run_action(tmp.path(), &pr, &inputs());
    assert_eq!(job.code, 1, "{}", job.log);
    for want in [
        "| `invoice-extractor/seed_skill.md` | `invoice-extractor/config.offline.yaml` | worse ❌ (failed) |",
        "**Verdict: worse ❌.**",
        "**Failed:** 1 regression(s), 0 error(s).",
        // The base's copy is named by its commit and path, not by a temporary file.
        &format!(
            "invoice-extractor/seed_skill.md against {}:invoice-extractor/seed_skill.md",
            &pr.base[..12]
        ),
        "| inv-002 | 1.00 | 0.00 |",
    ] {
        assert!(
            job.summary.contains(want),
            "{want:?} not in\n{}",
            job.summary
        );
    }
    assert!(
        !job.summary.contains(&*tmp.path().to_string_lossy()),
        "{}",
        job.summary
    );
    assert!(
        job.log.contains(
            "::error file=invoice-extractor/seed_skill.md,title=skill regression::\
             invoice-extractor/seed_skill.md with invoice-extractor/config.offline.yaml: \
             the verdict is worse (--fail-if worse)."
        ),
        "{}",
        job.log
    );

    let evaluate = &job.steps["evaluate"];
    let summary = PathBuf::from(&evaluate["summary"]);
    assert_eq!(job.outputs["summary"], evaluate["summary"]);
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), job.summary);
    let reports = PathBuf::from(&job.outputs["reports"]);
    assert!(reports.starts_with(tmp.path().join("runner/temp")));
    let junit = std::fs::read_to_string(reports.join("0.xml")).unwrap();
    assert!(
        junit.contains(r#"<testsuite name="invoice-extractor" tests="16" failures="16""#),
        "{junit}"
    );
    assert!(reports.join("0.md").is_file());

    // The install step put this build on the job's PATH and named it.
    let binary = Path::new(env!("CARGO_BIN_EXE_skill-factory"));
    assert_eq!(job.steps["install"]["path"], binary.to_string_lossy());
    assert_eq!(
        job.path_file.trim(),
        binary.parent().unwrap().to_string_lossy()
    );

    // `fail-if: never` reports the same verdict and passes.
    let tmp = tempfile::tempdir().unwrap();
    let pr = pull_request(tmp.path(), &good_skill(), |repo| {
        std::fs::write(repo.join("invoice-extractor/seed_skill.md"), vague_skill()).unwrap();
    });
    let mut never = inputs();
    never.push(("fail-if", "never"));
    let job = run_action(tmp.path(), &pr, &never);
    assert_eq!(job.code, 0, "{}", job.log);
    assert!(job.summary.contains("| worse ❌ |"), "{}", job.summary);
}

#[test]
fn a_pull_request_that_improves_a_skill_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let pr = pull_request(tmp.path(), &vague_skill(), |repo| {
        std::fs::write(repo.join("invoice-extractor/seed_skill.md"), good_skill()).unwrap();
    });
    let job = run_action(tmp.path(), &pr, &inputs());
    assert_eq!(job.code, 0, "{}", job.log);
    assert!(
        job.summary.contains(
            "| `invoice-extractor/seed_skill.md` | `invoice-extractor/config.offline.yaml` | better ✅ |"
        ),
        "{}",
        job.summary
    );
    assert!(!job.summary.contains("**Failed:**"), "{}", job.summary);
    assert!(
        PathBuf::from(&job.outputs["reports"])
            .join("0.xml")
            .is_file()
    );
}

#[test]
fn a_pull_request_that_changes_no_skill_passes() {
    let tmp = tempfile::tempdir().unwrap();
    // Markdown that no config names is not a skill.
    let pr = pull_request(tmp.path(), &good_skill(), |repo| {
        std::fs::write(repo.join("README.md"), "# Skills\n\nMore words.\n").unwrap();
        std::fs::write(repo.join("invoice-extractor/NOTES.md"), "notes\n").unwrap();
    });
    let job = run_action(tmp.path(), &pr, &inputs());
    assert_eq!(job.code, 0, "{}", job.log);
    assert!(
        job.summary
            .contains(&format!("No skill changed since `{}`", &pr.base[..12])),
        "{}",
        job.summary
    );
    assert!(job.steps["evaluate"]["summary"].ends_with("summary.md"));
}

#[test]
fn a_new_skill_is_evaluated_alone_with_the_config_that_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let pr = pull_request(tmp.path(), &good_skill(), |repo| {
        // A skill folder beside its config, which names it quoted and with a comment.
        let shipped = repo.join("shipped");
        copy_example("invoice-extractor", &shipped);
        for name in ["seed_skill.md", "hand_written_skill.md"] {
            std::fs::remove_file(shipped.join(name)).unwrap();
        }
        let config = std::fs::read_to_string(shipped.join("config.offline.yaml")).unwrap();
        std::fs::write(
            shipped.join("config.offline.yaml"),
            config.replace(
                "skill: seed_skill.md",
                "skill: \"./invoice-extractor/SKILL.md\"   # the shipped skill",
            ),
        )
        .unwrap();
        std::fs::create_dir_all(shipped.join("invoice-extractor")).unwrap();
        std::fs::write(shipped.join("invoice-extractor/SKILL.md"), good_skill()).unwrap();
        // A SKILL.md with no config beside it is named, not evaluated.
        std::fs::create_dir_all(repo.join("other")).unwrap();
        std::fs::write(repo.join("other/SKILL.md"), vague_skill()).unwrap();
    });
    let mut floor = inputs();
    floor.push(("fail-under", "0.9"));
    let job = run_action(tmp.path(), &pr, &floor);
    assert_eq!(job.code, 0, "{}", job.log);
    for want in [
        "| `shipped/invoice-extractor/SKILL.md` | `shipped/config.offline.yaml` | new skill, scores 1.000 |",
        "A new skill: there is no `shipped/invoice-extractor/SKILL.md` at",
        "`other/SKILL.md` changed, but no config matching `config.offline.yaml` is beside it: not evaluated.",
    ] {
        assert!(
            job.summary.contains(want),
            "{want:?} not in\n{}",
            job.summary
        );
    }
    assert!(
        job.log
            .contains("::warning file=other/SKILL.md,title=skill not evaluated::"),
        "{}",
        job.log
    );
    // Under the floor, a new skill fails.
    let tmp = tempfile::tempdir().unwrap();
    let pr = pull_request(tmp.path(), &good_skill(), |repo| {
        // Its folder's config names another skill: a SKILL.md no config names is evaluated
        // with every config in its own folder.
        copy_example("invoice-extractor", &repo.join("fresh"));
        std::fs::write(repo.join("fresh/SKILL.md"), vague_skill()).unwrap();
    });
    let job = run_action(tmp.path(), &pr, &floor);
    assert_eq!(job.code, 1, "{}", job.log);
    assert!(
        job.summary.contains(
            "| `fresh/SKILL.md` | `fresh/config.offline.yaml` | new skill, scores 0.475 (failed) |"
        ),
        "{}",
        job.summary
    );
}

#[test]
fn a_change_to_a_skill_folders_file_evaluates_its_skill_against_the_base_folder() {
    // A skill folder with a reference file, beside the config that names its SKILL.md.
    let with_folder = |repo: &Path, notes: &str| {
        let config = std::fs::read_to_string(repo.join("invoice-extractor/config.offline.yaml"))
            .unwrap()
            .replace("skill: seed_skill.md", "skill: invoice/SKILL.md");
        std::fs::write(repo.join("invoice-extractor/config.offline.yaml"), config).unwrap();
        let folder = repo.join("invoice-extractor/invoice");
        std::fs::create_dir_all(folder.join("references")).unwrap();
        std::fs::write(folder.join("SKILL.md"), good_skill()).unwrap();
        std::fs::write(folder.join("references/notes.md"), notes).unwrap();
        std::fs::write(folder.join("references/old.md"), "to be removed\n").unwrap();
    };
    let tmp = tempfile::tempdir().unwrap();
    let pr = pull_request_on(
        tmp.path(),
        |repo| with_folder(repo, "Totals include tax.\n"),
        |repo| {
            // The pull request changes one reference file and deletes another.
            let references = repo.join("invoice-extractor/invoice/references");
            std::fs::write(
                references.join("notes.md"),
                "Totals are in the currency of the invoice.\n",
            )
            .unwrap();
            std::fs::remove_file(references.join("old.md")).unwrap();
        },
    );
    let job = run_action(tmp.path(), &pr, &inputs());
    assert_eq!(job.code, 0, "{}", job.log);
    assert!(
        job.summary.contains(
            "| `invoice-extractor/invoice/SKILL.md` | `invoice-extractor/config.offline.yaml` |"
        ),
        "{}",
        job.summary
    );
    // The base's SKILL.md was read with its folder as it was at the base.
    let base = PathBuf::from(&job.outputs["reports"]).join("base/0/invoice-extractor/invoice");
    assert_eq!(
        std::fs::read_to_string(base.join("references/notes.md")).unwrap(),
        "Totals include tax.\n"
    );
    assert!(base.join("references/old.md").is_file());
    assert_eq!(
        std::fs::read_to_string(base.join("SKILL.md")).unwrap(),
        good_skill()
    );
}

/// A pull request's change that touches no skill.
fn touch_readme(repo: &Path) {
    std::fs::write(repo.join("README.md"), "# Skills, again\n").unwrap();
}

/// A release as the release workflow publishes it, for this runner (Linux X64): the archive
/// (whose `skill-factory` only prints its version) and its `.sha256`, in `dir`.
fn publish_release(dir: &Path) -> String {
    let name = format!(
        "skill-factory-{}-x86_64-unknown-linux-gnu",
        env!("CARGO_PKG_VERSION")
    );
    let folder = dir.join(&name);
    std::fs::create_dir_all(&folder).unwrap();
    let exe = folder.join("skill-factory");
    std::fs::write(&exe, "#!/bin/sh\necho 'skill-factory (the release)'\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let archive = format!("{name}.tar.gz");
    let status = Command::new("tar")
        .current_dir(dir)
        .args(["-czf", &archive, &name])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_dir_all(&folder).unwrap();
    let checksum = Command::new("bash")
        .current_dir(dir)
        .arg(repo_root().join(".github/checksums.sh"))
        .arg(&archive)
        .output()
        .unwrap();
    assert!(checksum.status.success());
    archive
}

/// A `curl` that serves `-o FILE URL` from `served` by the URL's file name and logs each URL
/// to `served/urls`: the install step's downloads without a network.
fn offline_curl(tools: &Path, served: &Path) {
    std::fs::create_dir_all(tools).unwrap();
    let curl = tools.join("curl");
    std::fs::write(
        &curl,
        format!(
            r#"#!/usr/bin/env bash
set -euo pipefail
out= url=
while [[ $# -gt 0 ]]; do
  case "$1" in
  -o) out="$2"; shift 2 ;;
  --retry) shift 2 ;;
  -*) shift ;;
  *) url="$1"; shift ;;
  esac
done
echo "$url" >>'{served}/urls'
cp "{served}/${{url##*/}}" "$out" 2>/dev/null || {{ echo "curl: (22) 404: $url" >&2; exit 22; }}
"#,
            served = served.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&curl, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_release_binary_is_installed_only_when_its_checksum_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let (served, tools) = (tmp.path().join("served"), tmp.path().join("tools"));
    std::fs::create_dir_all(&served).unwrap();
    let archive = publish_release(&served);
    offline_curl(&tools, &served);
    let pr = pull_request(tmp.path(), &good_skill(), touch_readme);
    let job = run_action_with(tmp.path(), &pr, &[("comment", "false")], Some(&tools));
    assert_eq!(job.code, 0, "{}", job.log);
    let release = format!(
        "https://github.com/{REPOSITORY}/releases/download/v{}/{archive}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        std::fs::read_to_string(served.join("urls")).unwrap(),
        format!("{release}\n{release}.sha256\n")
    );
    let installed = PathBuf::from(&job.steps["install"]["path"]);
    assert!(
        installed.starts_with(tmp.path().join("runner/temp"))
            && installed.ends_with("skill-factory"),
        "{}",
        installed.display()
    );
    assert!(
        job.log.contains("skill-factory (the release)"),
        "{}",
        job.log
    );
    assert_eq!(
        job.path_file.trim(),
        installed.parent().unwrap().to_string_lossy()
    );
    assert!(job.summary.contains("No skill changed"), "{}", job.summary);

    // An archive that is not the one the checksum names is neither unpacked nor run.
    let tmp = tempfile::tempdir().unwrap();
    let (served, tools) = (tmp.path().join("served"), tmp.path().join("tools"));
    std::fs::create_dir_all(&served).unwrap();
    let archive = publish_release(&served);
    std::fs::write(
        served.join(format!("{archive}.sha256")),
        format!("{}  {archive}\n", "0".repeat(64)),
    )
    .unwrap();
    offline_curl(&tools, &served);
    let pr = pull_request(tmp.path(), &good_skill(), touch_readme);
    let job = run_action_with(tmp.path(), &pr, &[("comment", "false")], Some(&tools));
    assert_eq!(job.code, 1, "{}", job.log);
    assert!(
        job.log.contains(&format!(
            "::error title=skill-factory install::{archive} has SHA-256 "
        )) && job.log.contains(&format!(
            "but the release says {}: not installed",
            "0".repeat(64)
        )),
        "{}",
        job.log
    );
    assert!(
        !job.log.contains("skill-factory (the release)"),
        "{}",
        job.log
    );
    assert!(
        !job.steps.contains_key("evaluate"),
        "the job stops at the install"
    );

    // A version that is not a release's is refused before anything is downloaded.
    let pr = pull_request(&tmp.path().join("other"), &good_skill(), touch_readme);
    let job = run_action_with(
        &tmp.path().join("other"),
        &pr,
        &[("comment", "false"), ("version", "v9.9")],
        Some(&tools),
    );
    assert_eq!(job.code, 1, "{}", job.log);
    assert!(
        job.log
            .contains("version: 'v9.9' is not a release version such as 0.1.0"),
        "{}",
        job.log
    );
    let asked = std::fs::read_to_string(served.join("urls")).unwrap();
    assert_eq!(asked.lines().count(), 2, "only the earlier run's: {asked}");
}

#[test]
fn the_workflow_of_the_docs_is_the_example_ci_lints() {
    // .ci/run's actionlint reads docs/examples/skills-workflow.yml, so docs/ci.md shows it as is.
    let page = std::fs::read_to_string(repo_root().join("docs/ci.md")).unwrap();
    let example =
        std::fs::read_to_string(repo_root().join("docs/examples/skills-workflow.yml")).unwrap();
    let shown = page
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("docs/ci.md shows the workflow in a yaml block");
    assert_eq!(shown, example);
    assert!(example.contains("uses: your-org/skill-factory@v"));
    assert!(page.contains("`your-org/skill-factory` is a placeholder"));
}
