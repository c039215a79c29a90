//! What a CI job reads of an `evaluate`: a JUnit XML file (`--junit`, one test case per task,
//! a failure for each task that scores under `noise.pass_score`, with its feedback), a Markdown
//! summary fit for a pull request comment or `$GITHUB_STEP_SUMMARY` (`--markdown`), and the
//! exit code of `--fail-if` and `--fail-under`.

use std::path::Path;

use anyhow::Context;
use quick_xml::Writer;
use quick_xml::events::BytesText;
use skill_factory_core::stats::{Estimate, Verdict};
use skill_factory_core::{Evaluation, TaskEvaluation};
use skill_factory_io::output::write_atomic;

use crate::cli::FailIf;

/// Characters of a task's output kept in its test case's `system-out`.
const OUTPUT_CHARS: usize = 2_000;

/// One task of an evaluation, its samples taken together.
pub struct TaskLine<'a> {
    /// The task's id.
    pub id: &'a str,
    /// The mean of its samples' scores.
    pub score: f64,
    /// Its lowest-scoring sample, whose feedback says what went wrong.
    pub worst: &'a TaskEvaluation,
}

/// The tasks of `evaluation` in the order they were evaluated, each over its samples.
pub fn tasks(evaluation: &Evaluation) -> Vec<TaskLine<'_>> {
    let mut lines: Vec<(TaskLine<'_>, usize)> = Vec::new();
    // By id, so that an evaluation of many tasks and samples is gathered in one pass.
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for item in &evaluation.items {
        match at.get(item.task_id()).map(|&i| &mut lines[i]) {
            Some((line, count)) => {
                line.score += item.score();
                *count += 1;
                if item.score() < line.worst.score() {
                    line.worst = item;
                }
            }
            None => {
                at.insert(item.task_id(), lines.len());
                lines.push((
                    TaskLine {
                        id: item.task_id(),
                        score: item.score(),
                        worst: item,
                    },
                    1,
                ));
            }
        }
    }
    lines
        .into_iter()
        .map(|(mut line, count)| {
            line.score /= count as f64;
            line
        })
        .collect()
}

/// One side of what `evaluate` scored: a skill, its score and its tasks.
pub struct Scored<'a> {
    /// The skill as the user named it.
    pub skill: String,
    /// Its score with its interval.
    pub estimate: &'a Estimate,
    /// Every rollout of it.
    pub evaluation: &'a Evaluation,
}

/// A comparison's difference (head − base) and what it says.
pub struct Compared<'a> {
    /// The base's side.
    pub base: Scored<'a>,
    /// B − A paired by task, with its interval.
    pub difference: &'a Estimate,
    /// What the interval says.
    pub verdict: Verdict,
}

/// The exit code the flags ask for: 1 when `--fail-under` finds the score below it, or when
/// `--fail-if` is met by the comparison's verdict; else 0.
pub fn failed(
    head: &Estimate,
    compared: Option<&Compared<'_>>,
    (fail_if, fail_under): (FailIf, Option<f64>),
) -> Option<String> {
    if let Some(floor) = fail_under
        && head.mean < floor
    {
        return Some(format!(
            "the score {:.3} is under --fail-under {floor}",
            head.mean
        ));
    }
    let verdict = compared?.verdict;
    let fails = match fail_if {
        FailIf::Worse => verdict == Verdict::Worse,
        FailIf::NotBetter => verdict != Verdict::Better,
        FailIf::Never => false,
    };
    fails.then(|| {
        format!(
            "the verdict is {} (--fail-if {})",
            verdict.words(),
            fail_if.name()
        )
    })
}

/// A character XML 1.0 can hold; others (most control characters) become U+FFFD.
fn xml_char(c: char) -> char {
    match c {
        '\t' | '\n' | '\r' => c,
        c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
        c => c,
    }
}

fn xml_text(text: &str) -> String {
    text.chars().map(xml_char).collect()
}

/// The JUnit XML of `head` (with the base's score of each task beside it when compared): a
/// test suite named after the skill, a test case per task, a failure for each task whose score
/// is under `pass_score`.
pub fn junit(
    head: &Scored<'_>,
    base: Option<&Scored<'_>>,
    (suite, pass_score, seconds): (&str, f64, f64),
) -> anyhow::Result<String> {
    let lines = tasks(head.evaluation);
    let base_lines = base.map(|b| tasks(b.evaluation));
    let failures = lines.iter().filter(|l| l.score < pass_score - 1e-9).count();
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    writer
        .create_element("testsuites")
        .with_attribute(("name", "skill-factory evaluate"))
        .with_attribute(("tests", lines.len().to_string().as_str()))
        .with_attribute(("failures", failures.to_string().as_str()))
        .with_attribute(("errors", "0"))
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attribute(("name", xml_text(suite).as_str()))
                .with_attribute(("tests", lines.len().to_string().as_str()))
                .with_attribute(("failures", failures.to_string().as_str()))
                .with_attribute(("errors", "0"))
                .with_attribute(("skipped", "0"))
                .with_attribute(("time", format!("{seconds:.3}").as_str()))
                .write_inner_content(|w| {
                    w.create_element("properties").write_inner_content(|w| {
                        let mut properties = vec![
                            ("skill".to_owned(), head.skill.clone()),
                            ("score".to_owned(), format!("{:.4}", head.estimate.mean)),
                            (
                                "interval".to_owned(),
                                format!("{:.4} to {:.4}", head.estimate.low, head.estimate.high),
                            ),
                            ("pass_score".to_owned(), pass_score.to_string()),
                        ];
                        if let Some(base) = base {
                            properties.push(("base_skill".to_owned(), base.skill.clone()));
                            properties.push((
                                "base_score".to_owned(),
                                format!("{:.4}", base.estimate.mean),
                            ));
                        }
                        for (name, value) in &properties {
                            w.create_element("property")
                                .with_attribute(("name", name.as_str()))
                                .with_attribute(("value", xml_text(value).as_str()))
                                .write_empty()?;
                        }
                        Ok(())
                    })?;
                    for line in &lines {
                        let was = base_lines
                            .as_ref()
                            .and_then(|b| b.iter().find(|l| l.id == line.id))
                            .map(|l| format!(" (base {:.2})", l.score))
                            .unwrap_or_default();
                        w.create_element("testcase")
                            .with_attribute(("name", xml_text(line.id).as_str()))
                            .with_attribute(("classname", xml_text(suite).as_str()))
                            .with_attribute((
                                "time",
                                format!("{:.3}", line.worst.rollout.latency_ms / 1000.0).as_str(),
                            ))
                            .write_inner_content(|w| {
                                if line.score < pass_score - 1e-9 {
                                    let feedback = xml_text(line.worst.result.feedback.trim());
                                    w.create_element("failure")
                                        .with_attribute((
                                            "message",
                                            format!("score {:.2}{was}", line.score).as_str(),
                                        ))
                                        .with_attribute(("type", "score"))
                                        .write_text_content(BytesText::new(&feedback))?;
                                }
                                let output: String = line
                                    .worst
                                    .rollout
                                    .output
                                    .chars()
                                    .take(OUTPUT_CHARS)
                                    .collect();
                                w.create_element("system-out")
                                    .write_text_content(BytesText::new(&xml_text(&output)))?;
                                Ok(())
                            })?;
                    }
                    Ok(())
                })?;
            Ok::<(), std::io::Error>(())
        })?;
    let body = String::from_utf8(writer.into_inner()).context("the JUnit XML is not UTF-8")?;
    Ok(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}\n"
    ))
}

/// `0.412 (95% interval 0.300 to 0.520)`.
fn with_interval(estimate: &Estimate) -> String {
    format!(
        "{:.3} ({}% interval {:.3} to {:.3})",
        estimate.mean,
        (estimate.confidence * 100.0).round(),
        estimate.low,
        estimate.high
    )
}

/// A Markdown cell's text: one line, no pipe.
fn cell(text: &str, chars: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let clipped: String = line.chars().take(chars).collect();
    let clipped = if clipped.chars().count() < line.chars().count() {
        format!("{clipped}…")
    } else {
        clipped
    };
    clipped.replace('|', "\\|")
}

/// The Markdown summary: the verdict, the scores with their intervals, and the tasks whose
/// score changed (a comparison) or that scored under `pass_score` (a single skill).
pub fn markdown(
    head: &Scored<'_>,
    compared: Option<&Compared<'_>>,
    (title, pass_score, failure): (&str, f64, Option<&str>),
) -> String {
    let mut text = format!("## Skill Factory: {title}\n\n");
    let status = match failure {
        Some(why) => format!("**Failed:** {why}.\n\n"),
        None => String::new(),
    };
    let Some(compared) = compared else {
        text.push_str(&status);
        text.push_str(&format!(
            "`{}` scores **{}**.\n",
            head.skill,
            with_interval(head.estimate)
        ));
        let failing: Vec<TaskLine<'_>> = tasks(head.evaluation)
            .into_iter()
            .filter(|l| l.score < pass_score - 1e-9)
            .collect();
        if !failing.is_empty() {
            text.push_str(&format!(
                "\n### Tasks under {pass_score} ({})\n\n| task | score | feedback |\n| :--- | ---: | :--- |\n",
                failing.len()
            ));
            for line in failing {
                text.push_str(&format!(
                    "| {} | {:.2} | {} |\n",
                    cell(line.id, 60),
                    line.score,
                    cell(&line.worst.result.feedback, 200)
                ));
            }
        }
        return text;
    };
    let verdict = match compared.verdict {
        Verdict::Better => "better ✅",
        Verdict::Worse => "worse ❌",
        Verdict::NoDetectableDifference => "no detectable difference",
    };
    let d = compared.difference;
    text.push_str(&format!(
        "**Verdict: {verdict}.** {status}Head − base, paired by task over {} tasks: **{:+.1} points**, {}% interval {:+.1} to {:+.1}.\n\n",
        d.tasks,
        d.mean * 100.0,
        (d.confidence * 100.0).round(),
        d.low * 100.0,
        d.high * 100.0
    ));
    text.push_str("| | skill | score |\n| :--- | :--- | :--- |\n");
    for (label, side) in [("base", &compared.base), ("head", head)] {
        text.push_str(&format!(
            "| {label} | `{}` | {} |\n",
            cell(&side.skill, 120),
            with_interval(side.estimate)
        ));
    }
    let base_lines = tasks(compared.base.evaluation);
    let changed: Vec<(TaskLine<'_>, f64)> = tasks(head.evaluation)
        .into_iter()
        .filter_map(|line| {
            let was = base_lines.iter().find(|b| b.id == line.id)?.score;
            ((line.score - was).abs() > 1e-9).then_some((line, was))
        })
        .collect();
    if changed.is_empty() {
        text.push_str("\nNo task's score changed.\n");
        return text;
    }
    text.push_str(&format!(
        "\n### Tasks that changed ({})\n\n| task | base | head | head's feedback |\n| :--- | ---: | ---: | :--- |\n",
        changed.len()
    ));
    for (line, was) in changed {
        text.push_str(&format!(
            "| {} | {was:.2} | {:.2} | {} |\n",
            cell(line.id, 60),
            line.score,
            cell(&line.worst.result.feedback, 200)
        ));
    }
    text
}

/// Writes a report file whole, or says which flag's file could not be written.
pub fn write(flag: &str, path: &Path, text: &str) -> anyhow::Result<()> {
    write_atomic(path, text.as_bytes())
        .with_context(|| format!("{flag}: cannot write {}", path.display()))
}
