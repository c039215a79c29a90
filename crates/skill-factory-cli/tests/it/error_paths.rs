//! The error audit: every user-facing error path a user is likely to hit, as one table. Each
//! case sets up a folder (the good skill, dataset and config of `errors.rs`, or a copy of an
//! example, then edits), runs one command and checks its exit code and that its message names
//! the file, line or key and says the fix. All cases run, and every failing one is reported.

use std::path::Path;

use crate::common::{bin, copy_example, repo_root, run};

const GOOD_SKILL: &str = "---\nname: s\ndescription: d\n---\nBody.\n";
const GOOD_DATA: &str = "{\"id\": \"a\", \"input\": \"x\", \"expected\": \"y\"}\n{\"id\": \"b\", \"input\": \"x2\", \"expected\": \"y\"}\n";
const FAKE: &str = "skill: skill.md\ndataset: data.jsonl\nprovider: {name: fake, responses: [y]}\n";

/// A change to the case's folder before the command runs.
enum Edit {
    /// Writes a file (folders made as needed).
    Write(&'static str, &'static str),
    /// Appends to a file.
    Append(&'static str, &'static str),
    /// Replaces text in a file (which must hold it).
    Replace(&'static str, &'static str, &'static str),
    /// Removes a file.
    Remove(&'static str),
}

use Edit::*;

struct Case {
    what: &'static str,
    /// An example copied in first (`examples/<name>`), else the good skill, data and config.
    example: Option<&'static str>,
    edits: &'static [Edit],
    /// The command's arguments; `{dir}` is the case's folder. It runs there.
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    code: i32,
    /// What stderr must hold: the place (file, line, key, flag) and the fix.
    says: &'static [&'static str],
}

const fn case(
    what: &'static str,
    edits: &'static [Edit],
    args: &'static [&'static str],
    code: i32,
    says: &'static [&'static str],
) -> Case {
    Case {
        what,
        example: None,
        edits,
        args,
        env: &[],
        code,
        says,
    }
}

impl Case {
    /// The case with `env` set for its command.
    const fn env(self, env: &'static [(&'static str, &'static str)]) -> Case {
        Case { env, ..self }
    }

    /// The case on a copy of the offline pr-mismatch example, its workspace inside the copy.
    const fn lab(self) -> Case {
        Case {
            example: Some("pr-mismatch"),
            ..self
        }
    }
}

const EVALUATE: &[&str] = &["evaluate", "-c", "config.yaml"];
const OPTIMIZE: &[&str] = &["optimize", "-c", "config.yaml", "-o", "runs"];
const LAB_STATUS: &[&str] = &["lab", "status", "-c", "config.offline.yaml"];
/// The pr-mismatch example's workspace, moved into its copy.
const WORKSPACE: Edit = Replace(
    "config.offline.yaml",
    "workspace: ../../runs/pr-mismatch-offline",
    "workspace: ws",
);

// One case a line, so that the table reads as one: rustfmt would spread each over a dozen.
#[rustfmt::skip]
const CASES: &[Case] = &[
    // Inputs named by the config.
    case("dataset file missing", &[Replace("config.yaml", "data.jsonl", "nope.jsonl")], EVALUATE, 2, &["nope.jsonl", "check the path"]),
    case("skill file missing", &[Replace("config.yaml", "skill.md", "nope.md")], EVALUATE, 2, &["nope.md", "cannot read skill file"]),
    case("--skill file missing", &[], &["evaluate", "--skill", "nope.md", "-c", "config.yaml"], 2, &["nope.md", "on the command line to the working folder"]),
    case("task without input", &[Write("data.jsonl", "{\"id\": \"a\", \"expected\": \"y\"}\n")], EVALUATE, 2, &["data.jsonl:1", "'input'"]),
    case("duplicate task ids", &[Write("data.jsonl", "{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"y\"}\n")], EVALUATE, 2, &["data.jsonl", "duplicate task ids: 'a' (lines 1, 2)"]),
    case("empty dataset", &[Write("data.jsonl", "\n\n")], EVALUATE, 2, &["data.jsonl", "no tasks"]),
    case("dataset too small to split", &[Write("data.jsonl", "{\"id\": \"a\", \"input\": \"x\", \"expected\": \"y\"}\n")], OPTIMIZE, 2, &["data.jsonl", "splitting needs at least 2 tasks"]),
    case("frontmatter never closed", &[Write("skill.md", "---\nname: s\nBody\n")], EVALUATE, 2, &["skill.md", "never closed"]),
    case("frontmatter not YAML", &[Write("skill.md", "---\nname: [s\n---\nB\n")], EVALUATE, 2, &["skill.md", "line 2"]),
    // The config itself.
    case("YAML syntax error", &[Replace("config.yaml", "responses: [y]}", "responses: [y]")], EVALUATE, 2, &["config.yaml", "YAML syntax error", "line 3"]),
    case("empty config", &[Write("config.yaml", "")], EVALUATE, 2, &["config.yaml", "empty"]),
    case("no skill key", &[Replace("config.yaml", "skill: skill.md\n", "")], EVALUATE, 2, &["config.yaml", "missing required key 'skill'", "skill:"]),
    case("wrong type", &[Append("config.yaml", "optimizer: {rounds: many}\n")], EVALUATE, 2, &["config.yaml", "optimizer.rounds", "line 4"]),
    case("duplicate key", &[Append("config.yaml", "seed: 1\nseed: 2\n")], EVALUATE, 2, &["config.yaml", "duplicate", "seed"]),
    case("unknown harness type", &[Append("config.yaml", "harness: {type: subproces}\n")], EVALUATE, 2, &["config.yaml", "subproces", "did you mean 'subprocess'"]),
    case("unknown golden mode", &[Append("config.yaml", "metric: {golden: {mode: exakt}}\n")], EVALUATE, 2, &["config.yaml", "exakt", "exact"]),
    case("unknown programmatic check", &[Append("config.yaml", "metric: {programmatic: {checks: [is_json]}}\n")], EVALUATE, 2, &["config.yaml", "checks[0]", "is_valid_json"]),
    case("subprocess harness without a command", &[Append("config.yaml", "harness: {type: subprocess}\n")], EVALUATE, 2, &["config.yaml", "harness.command", "command:"]),
    case("zero timeout", &[Append("config.yaml", "harness: {timeout: 0}\n")], EVALUATE, 2, &["config.yaml", "timeout"]),
    case("negative budget", &[Append("config.yaml", "optimizer: {budget: {max_usd: -1}}\n")], EVALUATE, 2, &["config.yaml", "max_usd"]),
    case("broken .env", &[Write(".env", "NOT A LINE\n")], EVALUATE, 2, &[".env", "line 1", "KEY=value"]),
    case("a classifier config given to evaluate", &[Write("config.yaml", "kind: classifier\ndataset: data.jsonl\nprobeset: p.json\n")], EVALUATE, 2, &["config.yaml", "classifier", "skill-factory optimize -c"]),
    // Providers.
    case("no model", &[Replace("config.yaml", "{name: fake, responses: [y]}", "{name: openai, model: \"\", api_key: k}")], EVALUATE, 2, &["config.yaml", "line 3", "no model for provider 'openai'", "set `model`"]),
    case("a hosted provider without any model", &[Replace("config.yaml", "{name: fake, responses: [y]}", "{name: openai, api_key: k}")], EVALUATE, 2, &["config.yaml", "line 3", "no model for provider 'openai'", "set `model`"]),
    case("fake provider with nothing to say", &[Replace("config.yaml", "{name: fake, responses: [y]}", "{name: fake}")], EVALUATE, 2, &["config.yaml", "fake provider needs something"]),
    case("base_url not a URL", &[Replace("config.yaml", "{name: fake, responses: [y]}", "{name: openai-compatible, model: m, base_url: \"localhost:8080\", api_key: k}")], EVALUATE, 2, &["config.yaml", "not an http(s) URL", "https://"]),
    case("local model file missing", &[Replace("config.yaml", "{name: fake, responses: [y]}", "{name: local, model: models/none.gguf}")], EVALUATE, 2, &["none.gguf", "models fetch"]),
    case("agent CLI not installed", &[Append("config.yaml", "harness: {type: claude_code, executable: /nonexistent/claude}\nmetric: {programmatic: {checks: [is_valid_json]}}\n")], EVALUATE, 3, &["measured nothing", "/nonexistent/claude"]),
    case("replay file missing", &[], EVALUATE, 2, &["nope.jsonl", "SKILL_FACTORY_RECORD"]),
    // Flags.
    case("no --config", &[], &["evaluate"], 2, &["--config"]),
    case("bad --split", &[], &["evaluate", "-c", "config.yaml", "--split", "nope"], 2, &["--split", "nope", "possible values"]),
    // Other commands.
    case("export of a missing skill", &[], &["export", "--skill", "nope", "-o", "out"], 2, &["nope", "no such file or folder"]),
    case("export onto a folder that is not a skill's", &[Write("out/s/notes.txt", "mine")], &["export", "--skill", "skill.md", "-o", "out"], 2, &["out/s", "not a skill folder"]),
    case("an optimizer count no search can use", &[Append("config.yaml", "optimizer: {name: gepa, parents: 100000}\n")], OPTIMIZE, 2, &["config.yaml", "optimizer.parents", "line 4"]),
    case("an agents' folder variable that is relative", &[], &["install", "--skill", "skill.md", "--agent", "claude-code", "--global"], 2, &["CLAUDE_CONFIG_DIR", "relative path", "absolute path"]).env(&[("CLAUDE_CONFIG_DIR", "~/claude")]),
    case("ui export into the run folder", &[Write("run/result.json", "{\"optimizer\": \"gepa\", \"baseline_score\": 0.1, \"best_score\": 0.2}")], &["ui", "export", "run", "-o", "run/result.json"], 2, &["run/result.json", "inside the run folder"]),
    case("validate of a folder without skills", &[Write("empty/notes.txt", "x")], &["validate", "empty"], 2, &["empty", "no SKILL.md"]),
    case("gallery index without a gallery", &[], &["gallery", "index"], 2, &["gallery: no gallery here yet", "skill-factory gallery add", "--gallery DIR"]),
    case("unknown model to fetch", &[], &["models", "fetch", "gema", "--dir", "models"], 2, &["gema", "known models"]),
    case("cache stats of a file that is not a cache", &[Write("junk.sqlite", "this is not SQLite at all, not even close to it....")], &["cache", "stats", "--path", "junk.sqlite"], 2, &["junk.sqlite", "not an SQLite database"]),
    case("optimize of a classifier config with a skill-mode flag", &[WORKSPACE], &["optimize", "-c", "config.offline.yaml", "--min-improvement", "0.1"], 2, &["config.offline.yaml", "--min-improvement belongs to skill mode", "Leave it out"]).lab(),
    // Classifier mode.
    case("classifier dataset missing", &[WORKSPACE, Remove("dataset.jsonl")], LAB_STATUS, 2, &["dataset.jsonl", "dataset:"]).lab(),
    case("classifier probe set missing", &[WORKSPACE, Remove("seed_probeset.json")], LAB_STATUS, 2, &["seed_probeset.json", "probe set"]).lab(),
    case("unknown classifier key", &[WORKSPACE, Append("config.offline.yaml", "bogus: 1\n")], LAB_STATUS, 2, &["config.offline.yaml", "bogus"]).lab(),
    case("classifier split fraction out of range", &[WORKSPACE, Replace("config.offline.yaml", "train: 0.5", "train: 1.5")], LAB_STATUS, 2, &["config.offline.yaml", "splits.fractions.train", "between 0 and 1"]).lab(),
    case("a classifier dataset line that is not an object", &[WORKSPACE, Append("dataset.jsonl", "[1]\n")], LAB_STATUS, 2, &["dataset.jsonl:", "object"]).lab(),
    case("an unknown split", &[WORKSPACE], &["lab", "ask", "-c", "config.offline.yaml", "--splits", "tarin", "--dry-run"], 2, &["--splits", "tarin", "train"]).lab(),
    case("an unknown split to reask", &[WORKSPACE], &["lab", "reask", "-c", "config.offline.yaml", "--split", "tarin"], 2, &["in --split;", "tarin", "train"]).lab(),
    case("a false-positive rate that is not a rate", &[WORKSPACE], &["lab", "select", "-c", "config.offline.yaml", "--fpr", "1.5"], 2, &["--fpr", "1.5"]).lab(),
    case("recalibrate with a rate that is not a rate is refused before any request", &[WORKSPACE], &["lab", "recalibrate", "-c", "config.offline.yaml", "--model", "m2", "--out", "re.json", "--fpr", "1.5"], 2, &["--fpr", "1.5"]).lab(),
    case("a misspelt objective key, with the closest", &[WORKSPACE, Replace("config.offline.yaml", "fpr_budget: 0.1", "fpr_budgt: 0.1")], LAB_STATUS, 2, &["config.offline.yaml line 20", "fpr_budgt", "did you mean 'fpr_budget'?"]).lab(),
    case("a misspelt probe set key, with the closest", &[WORKSPACE, Replace("seed_probeset.json", "\"threshold\": null", "\"thresold\": null")], LAB_STATUS, 2, &["seed_probeset.json", "thresold", "threshold"]).lab(),
    case("an export format that does not exist", &[WORKSPACE], &["lab", "export", "--probeset", "seed_probeset.json", "-o", "x.out", "--format", "yaml"], 2, &["--format", "yaml", "json, ts"]).lab(),
];

fn apply(dir: &Path, edit: &Edit) -> Result<(), String> {
    let path = |name: &str| dir.join(name);
    match edit {
        Write(name, text) => {
            if let Some(parent) = path(name).parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(path(name), text).map_err(|e| e.to_string())
        }
        Append(name, text) => {
            let old = std::fs::read_to_string(path(name)).map_err(|e| e.to_string())?;
            std::fs::write(path(name), format!("{old}{text}")).map_err(|e| e.to_string())
        }
        Replace(name, from, to) => {
            let old = std::fs::read_to_string(path(name)).map_err(|e| e.to_string())?;
            if !old.contains(from) {
                return Err(format!("{name} does not hold {from:?}"));
            }
            std::fs::write(path(name), old.replacen(from, to, 1)).map_err(|e| e.to_string())
        }
        Remove(name) => std::fs::remove_file(path(name)).map_err(|e| e.to_string()),
    }
}

/// Runs one case; `Err` says what went wrong.
fn check(case: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    match case.example {
        Some(example) => copy_example(example, dir),
        None => {
            for (name, text) in [
                ("skill.md", GOOD_SKILL),
                ("data.jsonl", GOOD_DATA),
                ("config.yaml", FAKE),
            ] {
                std::fs::write(dir.join(name), text).unwrap();
            }
        }
    }
    for edit in case.edits {
        apply(dir, edit)?;
    }
    let root = repo_root().canonicalize().unwrap();
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("{dir}", &dir.display().to_string())
                .replace("{repo}", &root.display().to_string())
        })
        .collect();
    let mut command = bin();
    command.current_dir(dir).args(&args);
    for (name, value) in case.env {
        command.env(name, value);
    }
    if case.what == "replay file missing" {
        command.env("SKILL_FACTORY_REPLAY", "nope.jsonl");
    }
    let ran = run(&mut command);
    let mut problems = Vec::new();
    if ran.code != Some(case.code) {
        problems.push(format!("exit {:?}, not {}", ran.code, case.code));
    }
    for part in case.says {
        if !ran.stderr.contains(part) {
            problems.push(format!("no {part:?}"));
        }
    }
    if ran.stderr.contains("panicked") {
        problems.push("a panic".to_string());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n  stderr: {}",
            problems.join("; "),
            ran.stderr.trim().replace('\n', "\n          ")
        ))
    }
}

#[test]
fn every_likely_user_error_names_its_place_and_its_fix_with_its_exit_code() {
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|case| check(case).err().map(|e| format!("- {}: {e}", case.what)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
