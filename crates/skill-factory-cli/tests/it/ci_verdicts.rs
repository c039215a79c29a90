//! What a CI job reads of `evaluate`: `--junit` validated against the JUnit schema CI systems
//! read (Jenkins xunit's `junit-10.xsd`, installed with a validator by
//! `scripts/setup-junit-schema.sh`), `--markdown`, and the exit codes of `--fail-if` and
//! `--fail-under`, on the offline invoice example (a hand-written skill against the vague seed).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Ran, run, with_config};

/// The validator's Python and the schema: `SKILL_FACTORY_JUNIT_PYTHON`, else where
/// `scripts/setup-junit-schema.sh` puts them.
fn validator() -> (PathBuf, PathBuf) {
    let python = std::env::var_os("SKILL_FACTORY_JUNIT_PYTHON").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"),
                PathBuf::from,
            );
            cache.join("skill-factory-ci/junit/bin/python")
        },
        PathBuf::from,
    );
    let xsd = python
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("junit-10.xsd");
    assert!(
        python.is_file() && xsd.is_file(),
        "{} or {} is missing: run scripts/setup-junit-schema.sh (or set SKILL_FACTORY_JUNIT_PYTHON)",
        python.display(),
        xsd.display()
    );
    (python, xsd)
}

/// Fails unless `xml` validates against the JUnit schema.
fn assert_valid_junit(xml: &Path) {
    let (python, xsd) = validator();
    let out = Command::new(python)
        .args([
            "-c",
            "import sys, xmlschema; xmlschema.XMLSchema(sys.argv[1]).validate(sys.argv[2])",
        ])
        .arg(xsd)
        .arg(xml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} does not validate: {}",
        xml.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn example(dir: &Path) -> PathBuf {
    common::copy_example("invoice-extractor", dir);
    dir.join("config.offline.yaml")
}

fn compare(config: &Path, base: &str, head: &str, more: &[&str]) -> Ran {
    let dir = config.parent().unwrap();
    run(with_config("evaluate", config)
        .arg("--compare")
        .arg(dir.join(base))
        .arg(dir.join(head))
        .args(more))
}

#[test]
fn a_regressing_skill_fails_the_job_with_a_junit_file_and_a_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let config = example(tmp.path());
    let (junit, markdown) = (tmp.path().join("junit.xml"), tmp.path().join("summary.md"));
    // The seed against the hand-written skill: the head is worse.
    let ran = compare(
        &config,
        "hand_written_skill.md",
        "seed_skill.md",
        &[
            "--junit",
            junit.to_str().unwrap(),
            "--markdown",
            markdown.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.code, Some(1), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr
            .contains("Failed: the verdict is worse (--fail-if worse)."),
        "{}",
        ran.stderr
    );
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<testsuite name="invoice-extractor" tests="16" failures="16""#),
        "{xml}"
    );
    assert!(xml.contains(r#"<testcase name="inv-002""#), "{xml}");
    assert!(xml.contains(r#"message="score 0.00 (base 1.00)""#), "{xml}");
    assert!(
        xml.contains("output is not valid JSON"),
        "the feedback is the failure's text"
    );
    let summary = std::fs::read_to_string(&markdown).unwrap();
    for want in [
        "## Skill Factory: ",
        "**Verdict: worse ❌.**",
        "**Failed:** the verdict is worse (--fail-if worse).",
        "| base | `",
        "hand_written_skill.md` | 1.000 (95% interval",
        "### Tasks that changed (16)",
        "| inv-002 | 1.00 | 0.00 | [golden] score 0.00: output is not valid JSON",
    ] {
        assert!(summary.contains(want), "{want:?} not in\n{summary}");
    }

    // The other way round the head is better: no failure, whatever --fail-if worse says.
    let ran = compare(
        &config,
        "seed_skill.md",
        "hand_written_skill.md",
        &["--junit", junit.to_str().unwrap()],
    );
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert_valid_junit(&junit);
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains(r#"tests="16" failures="0""#)
    );
}

#[test]
fn fail_if_and_fail_under_set_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let config = example(tmp.path());
    let same = |more: &[&str]| compare(&config, "seed_skill.md", "seed_skill.md", more).code;
    // A skill against itself: no detectable difference.
    assert_eq!(same(&[]), Some(0));
    assert_eq!(same(&["--fail-if", "not-better"]), Some(1));
    assert_eq!(
        same(&["--fail-if", "never", "--fail-under", "0.4"]),
        Some(0)
    );
    // --fail-under holds the head's score (0.475), with or without a comparison.
    assert_eq!(same(&["--fail-under", "0.5"]), Some(1));
    let worse = compare(
        &config,
        "hand_written_skill.md",
        "seed_skill.md",
        &["--fail-if", "never"],
    );
    assert_eq!(worse.code, Some(0), "{}", worse.stderr);
    let markdown = tmp.path().join("single.md");
    let ran = run(with_config("evaluate", &config).args([
        "--fail-under",
        "0.8",
        "--markdown",
        markdown.to_str().unwrap(),
    ]));
    assert_eq!(ran.code, Some(1), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("under --fail-under 0.8"),
        "{}",
        ran.stderr
    );
    assert!(ran.stdout.contains("Score: 0.475"), "{}", ran.stdout);
    let summary = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        summary.contains("**Failed:** the score 0.475 is under --fail-under 0.8."),
        "{summary}"
    );
    assert!(summary.contains("### Tasks under 1 (16)"), "{summary}");
    let ran = run(with_config("evaluate", &config).args(["--fail-under", "0.4"]));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    // --fail-if means nothing without a comparison.
    let ran = run(with_config("evaluate", &config).args(["--fail-if", "worse"]));
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("--compare"), "{}", ran.stderr);
}

#[test]
fn a_report_never_replaces_an_input_and_hostile_outputs_stay_valid_xml() {
    let tmp = tempfile::tempdir().unwrap();
    let config = example(tmp.path());
    let ran = run(with_config("evaluate", &config)
        .arg("--junit")
        .arg(tmp.path().join("dataset.jsonl")));
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("--junit"), "{}", ran.stderr);
    assert!(
        std::fs::read_to_string(tmp.path().join("dataset.jsonl"))
            .unwrap()
            .starts_with('{'),
        "the dataset is intact"
    );
    // A target whose answers carry what XML cannot hold as it is.
    std::fs::write(
        tmp.path().join("hostile.yaml"),
        "rules:\n  - {user_contains: \"\", reply: \"\\u0001 <b>&amp; ]]> \\\"quoted\\\" \\u001b[31m\\uFFFE\"}\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("script: fake_target.yaml", "script: hostile.yaml");
    std::fs::write(&config, text).unwrap();
    let junit = tmp.path().join("hostile.xml");
    let ran = run(with_config("evaluate", &config).arg("--junit").arg(&junit));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("&lt;b&gt;&amp;amp; ]]&gt;"), "{xml}");
}
