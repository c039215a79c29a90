//! `report.md`: the reference tool's scorecard, character for character, then our sections:
//! held-out test scores and the val→test gap, tokens and cost per role, why the run stopped,
//! and the score chart.

use std::collections::BTreeMap;
use std::fmt::Write;

use skill_factory_llm::Spend;

use skill_factory_core::Estimate;
use skill_factory_runfolder::result::{TargetRecord, TriggerRecord};

use super::headline::Source;
use super::result::{RunInfo, TestEstimates};
use crate::optimizer::OptimizationResult;

/// The reference's part of the report: title, four bullets and the candidate history table.
pub fn reference_report(result: &OptimizationResult) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# Skill optimization report — {}", result.optimizer);
    text.push('\n');
    let _ = writeln!(
        text,
        "- **Baseline (seed) score:** {:.3}",
        result.baseline_score
    );
    let _ = writeln!(text, "- **Best score:** {:.3}", result.best_score);
    let _ = writeln!(
        text,
        "- **Absolute improvement:** {:+.1} points",
        result.improvement() * 100.0
    );
    let _ = writeln!(
        text,
        "- **Candidates evaluated:** {} ({} accepted)",
        result.history.len(),
        result.accepted()
    );
    text.push('\n');
    text.push_str("## Candidate history\n\n");
    text.push_str("| iter | train | val | accepted | note |\n");
    text.push_str("| ---: | ----: | --: | :------: | :--- |\n");
    for record in &result.history {
        let _ = writeln!(
            text,
            "| {} | {:.3} | {:.3} | {} | {} |",
            record.iteration,
            record.train_score,
            record.val_score,
            if record.accepted { "✓" } else { "·" },
            record.note.replace('|', "\\|").replace('\n', " ")
        );
    }
    text
}

fn spend_row(text: &mut String, role: &str, spend: &Spend) {
    let cost = if spend.unpriced_calls > 0 {
        "unknown".to_string()
    } else {
        format!("{:.4}", spend.usd)
    };
    let _ = writeln!(
        text,
        "| {role} | {} | {} | {} | {} | {cost} |",
        spend.calls, spend.cached_calls, spend.input_tokens, spend.output_tokens
    );
}

/// The whole report: the reference's part, then ours.
pub fn report(result: &OptimizationResult, info: &RunInfo, chart_file: &str) -> String {
    let mut text = reference_report(result);
    text.push_str(&super::selection::report(result));
    text.push_str(&uncertainty(result, info));

    if let Some(test) = &info.test {
        text.push_str("\n## Held-out test\n\n");
        match (test.seed_score, test.best_score) {
            (Some(seed), Some(best)) => {
                let interval = |pick: fn(&TestEstimates) -> &Estimate| {
                    test.estimates
                        .as_ref()
                        .map_or_else(String::new, |e| format!(" {} |", span(pick(e))))
                };
                let confidence = test.estimates.as_ref().map_or_else(String::new, |e| {
                    format!(" test {} interval |", percent(e.seed.confidence))
                });
                let rule = if test.estimates.is_some() {
                    " :---: |"
                } else {
                    ""
                };
                let _ = writeln!(
                    text,
                    "| skill | val | test |{confidence}\n| :--- | ---: | ---: |{rule}"
                );
                let _ = writeln!(
                    text,
                    "| seed | {:.3} | {seed:.3} |{}",
                    result.baseline_score,
                    interval(|e| &e.seed)
                );
                let _ = writeln!(
                    text,
                    "| best | {:.3} | {best:.3} |{}",
                    result.best_score,
                    interval(|e| &e.best)
                );
                text.push('\n');
                let _ = writeln!(
                    text,
                    "On {} held-out tasks the best skill scores {best:.3} against the seed's {seed:.3} ({:+.1} points). Val → test gap of the best skill: {:+.1} points (val {:.3}, test {best:.3}).",
                    test.size,
                    (best - seed) * 100.0,
                    (result.best_score - best) * 100.0,
                    result.best_score
                );
                if let Some(estimates) = &test.estimates {
                    let gain = &estimates.improvement;
                    let _ = writeln!(
                        text,
                        "\nThe gain, paired by task and sample over {} tasks × {} sample{}: {} points, {} interval {} to {} points ({}).",
                        gain.tasks,
                        estimates.samples,
                        if estimates.samples == 1 { "" } else { "s" },
                        points(gain.mean),
                        percent(gain.confidence),
                        points(gain.low),
                        points(gain.high),
                        gain.verdict().words()
                    );
                }
            }
            _ => {
                let _ = writeln!(
                    text,
                    "The {} held-out tasks were not scored: {}.",
                    test.size,
                    test.skipped.as_deref().unwrap_or("the run stopped early")
                );
            }
        }
    }

    if let Some(trigger) = &info.trigger {
        text.push_str(&triggering(trigger));
    }
    if !info.targets.is_empty() {
        text.push_str(&targets(&info.targets));
    }

    text.push_str("\n## Tokens and cost\n\n");
    text.push_str(
        "| role | calls | cached | input tokens | output tokens | cost (USD) |\n| :--- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (role, spend) in &info.by_role {
        spend_row(&mut text, role, spend);
    }
    spend_row(&mut text, "**total**", &info.total());
    text.push('\n');
    let _ = write!(text, "Wall time: {:.1} s.", info.elapsed_secs);
    if info.failed_rollouts > 0 {
        let _ = write!(
            text,
            " Failed rollouts: {} (scored 0; each one's reason is in rollouts.jsonl).",
            info.failed_rollouts
        );
    }
    if !info.refused_copies.is_empty() {
        let _ = write!(
            text,
            " Candidates refused for copying a task's answer or input: {} ({}; never scored, each one's reason is in events.jsonl).",
            info.refused_copies.len(),
            numbers(&info.refused_copies)
        );
    }
    if !info.cleaned_repeats.is_empty() {
        let _ = write!(
            text,
            " Candidates cleaned of repeated paragraphs before scoring: {} ({}).",
            info.cleaned_repeats.len(),
            numbers(&info.cleaned_repeats)
        );
    }
    if let Some(batches) = &info.batches {
        let resumed = match batches.resumed {
            0 => String::new(),
            n => format!(" and {n} of an earlier run polled again"),
        };
        let _ = write!(
            text,
            " Provider batches: {} submitted{resumed}; {} requests answered by a batch at half price, {} asked directly (errored, expired or not submitted).",
            batches.submitted, batches.answered, batches.direct
        );
    }
    if !info.unpriced_models.is_empty() {
        let _ = write!(
            text,
            " No price is known for {}: set `pricing: {{input_per_mtok: ..., output_per_mtok: ...}}` in its provider block to count its cost.",
            info.unpriced_models.join(", ")
        );
    }
    text.push('\n');

    text.push_str("\n## Why the run stopped\n\n");
    match &result.stop {
        Some(stop) => {
            let _ = writeln!(text, "**{}**: {}.", stop.code(), stop.detail());
        }
        None if result.history.is_empty() => text.push_str("**running**: the seed's baseline is being scored (or the run was killed before it was); no score is known yet.\n"),
        None => text.push_str("**running**: the run has not finished (or was killed); this report shows its last completed round.\n"),
    }

    let _ = write!(
        text,
        "\n## Score chart\n\n![Validation score per round]({chart_file})\n"
    );
    text
}

/// Our first section: the regime, the headline's scores with their intervals, and each
/// gate's decision; empty for results written before the run measured them.
fn uncertainty(result: &OptimizationResult, info: &RunInfo) -> String {
    let (Some(noise), Some(headline)) = (&info.noise, &info.headline) else {
        return String::new();
    };
    let mut text = String::new();
    let confidence = percent(noise.confidence);
    let _ = writeln!(text, "\n## Scores with {confidence} intervals\n");
    let _ = writeln!(text, "The run was {}.\n", noise.describe());
    let _ = writeln!(
        text,
        "| skill | score | {confidence} interval | tasks × samples | measured on |\n| :--- | ---: | :---: | ---: | :--- |"
    );
    let row = |text: &mut String, name: &str, estimate: &Estimate, on: &str| {
        let per_task = estimate.samples as f64 / estimate.tasks.max(1) as f64;
        let _ = writeln!(
            text,
            "| {name} | {:.3} | {} | {} × {} | {on} |",
            estimate.mean,
            span(estimate),
            estimate.tasks,
            trim(per_task)
        );
    };
    row(&mut text, "seed", &headline.seed, "validation");
    let best_on = match headline.source {
        Source::FreshSamples => "fresh samples of validation, never drawn by the search",
        Source::Validation => "validation, the search's own scores",
    };
    row(
        &mut text,
        &format!("best (candidate {})", result.best_candidate),
        &headline.best,
        best_on,
    );
    let gain = &headline.improvement;
    let _ = writeln!(
        text,
        "| gain over the seed | {} pts | {} to {} pts | {} tasks, paired | {} |",
        points(gain.mean),
        points(gain.low),
        points(gain.high),
        gain.tasks,
        gain.verdict().words()
    );
    text.push('\n');
    match headline.source {
        Source::FreshSamples => {
            let _ = writeln!(
                text,
                "The search scored the best skill {:.3}; that figure is optimistic (the best was kept for scoring high, on draws that were partly luck), so the headline is its score on {} fresh sample{} of every validation task.",
                headline.search_best_score,
                headline.samples,
                if headline.samples == 1 { "" } else { "s" }
            );
        }
        Source::Validation if noise.is_noisy() => {
            let _ = writeln!(
                text,
                "The headline is the search's own validation score{}.",
                headline.note.as_ref().map_or_else(
                    || " (the best skill is the seed, which no gate selected)".to_string(),
                    |why| format!(": {why}")
                )
            );
        }
        Source::Validation => {
            text.push_str("The search selected on these validation tasks, so the held-out test (or a selection split) tells how the gain carries to tasks it never saw.\n");
        }
    }
    let decided: Vec<_> = result
        .history
        .iter()
        .filter_map(|r| Some((r, r.comparison.as_ref()?)))
        .collect();
    if !decided.is_empty() {
        let _ = writeln!(
            text,
            "\n### Gates\n\n| round | candidate | gain over the best | {confidence} interval | bound | tasks × samples | looks | kept | why |\n| ---: | ---: | ---: | :---: | ---: | ---: | ---: | :---: | :--- |"
        );
        for (record, comparison) in decided {
            let d = &comparison.difference;
            // Over several targets, the gain on each: a win on one bought on another shows.
            let per_target = if comparison.per_target.is_empty() {
                String::new()
            } else {
                let gains: Vec<String> = comparison
                    .per_target
                    .iter()
                    .map(|(name, gain)| format!("{name} {}", points(*gain)))
                    .collect();
                format!(" ({})", gains.join(", "))
            };
            let _ = writeln!(
                text,
                "| {} | {} | {} pts{per_target} | {} to {} pts | {} | {} × {} | {} | {} | {} |",
                record.iteration,
                comparison.challenger,
                points(d.mean),
                points(d.low),
                points(d.high),
                points(comparison.bound),
                d.tasks,
                comparison.samples,
                comparison.looks,
                if comparison.accepted { "✓" } else { "·" },
                comparison.reason.replace('|', "\\|")
            );
        }
    }
    text
}

/// A run over several targets: the seed and the best on each, the measured-only ones too, so
/// a skill that wins on one target by losing on another shows it.
fn targets(targets: &BTreeMap<String, TargetRecord>) -> String {
    let split = targets.values().next().map_or("test", |t| t.split.as_str());
    let confidence = targets
        .values()
        .next()
        .map_or_else(|| "95%".to_owned(), |t| percent(t.seed.confidence));
    let mut text = format!(
        "\n## Targets ({split} split)\n\n| target | optimized | seed | best | gain, paired by task | gain's {confidence} interval |\n| :--- | :---: | ---: | ---: | ---: | :---: |\n"
    );
    for (name, record) in targets {
        let gain = &record.improvement;
        let _ = writeln!(
            text,
            "| {name} | {} | {:.3} | {:.3} | {} | {} to {} |",
            if record.optimize {
                "yes"
            } else {
                "no, measured"
            },
            record.seed.mean,
            record.best.mean,
            points(gain.mean),
            points(gain.interval[0]),
            points(gain.interval[1]),
        );
    }
    text.push_str(
        "\nGains in points (0.01 of score). A target marked \"no, measured\" had no say in the search: its row is the skill's transfer to it.\n",
    );
    text
}

/// A trigger run's section: how often each skill loaded on the held-out split.
fn triggering(trigger: &TriggerRecord) -> String {
    let rate = |value: Option<f64>| value.map_or("n/a".to_owned(), |v| format!("{v:.3}"));
    let mut text = format!(
        "\n## Triggering ({} split)\n\n| skill | accuracy | precision | recall | false-trigger rate | loaded / should | loaded / near misses |\n| :--- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        trigger.split
    );
    for (name, figures) in [("seed", &trigger.seed), ("best", &trigger.best)] {
        let c = &figures.counts;
        let _ = writeln!(
            text,
            "| {name} | {} | {} | {} | {} | {} / {} | {} / {} |",
            rate(figures.accuracy),
            rate(figures.precision),
            rate(figures.recall),
            rate(figures.false_trigger_rate),
            c.true_positives,
            c.true_positives + c.false_negatives,
            c.false_positives,
            c.false_positives + c.true_negatives,
        );
    }
    text.push_str(
        "\nPrecision: of the loads, the share that should have happened. Recall: of the queries that should load the skill, the share that did. False-trigger rate: of the near misses, the share that loaded it anyway.\n",
    );
    text
}

fn span(estimate: &Estimate) -> String {
    format!("{:.3} – {:.3}", estimate.low, estimate.high)
}

/// A difference of scores in points: `+12.3`.
fn points(difference: f64) -> String {
    format!("{:+.1}", difference * 100.0)
}

/// `95%`.
fn percent(confidence: f64) -> String {
    format!("{}%", trim(confidence * 100.0))
}

/// A number without a needless fraction: `2`, `2.5`.
fn trim(x: f64) -> String {
    let text = format!("{x:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_string)
}

/// Candidate numbers as the report writes them: `candidate 3`, `candidates 3, 5`.
fn numbers(ids: &[usize]) -> String {
    let list: Vec<String> = ids.iter().map(ToString::to_string).collect();
    let word = if ids.len() == 1 {
        "candidate"
    } else {
        "candidates"
    };
    format!("{word} {}", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::{CandidateRecord, StopReason};
    use serde_json::Map;
    use skill_factory_core::Skill;

    fn result() -> OptimizationResult {
        let seed = Skill::new("s", "d", "body");
        let record = |iteration, train, val, accepted, note: &str| CandidateRecord {
            iteration,
            skill: seed.clone(),
            train_score: train,
            val_score: val,
            accepted,
            candidate: Some(iteration),
            note: note.to_string(),
            interval: None,
            comparison: None,
        };
        OptimizationResult {
            optimizer: "llm_loop".into(),
            best_skill: seed.clone(),
            baseline_score: 0.559,
            best_score: 1.0,
            best_candidate: 0,
            history: vec![
                record(0, 0.559, 0.559, true, "seed (baseline)"),
                record(1, 0.5, 1.0, true, "a | b\nc"),
                record(2, 1.0, 1.0, false, "no gain"),
            ],
            metadata: Map::new(),
            stop: Some(StopReason::Patience { patience: 1 }),
        }
    }

    #[test]
    fn the_reference_part_has_the_reference_layout() {
        assert_eq!(
            reference_report(&result()),
            "# Skill optimization report — llm_loop\n\n\
             - **Baseline (seed) score:** 0.559\n\
             - **Best score:** 1.000\n\
             - **Absolute improvement:** +44.1 points\n\
             - **Candidates evaluated:** 3 (2 accepted)\n\n\
             ## Candidate history\n\n\
             | iter | train | val | accepted | note |\n\
             | ---: | ----: | --: | :------: | :--- |\n\
             | 0 | 0.559 | 0.559 | ✓ | seed (baseline) |\n\
             | 1 | 0.500 | 1.000 | ✓ | a \\| b c |\n\
             | 2 | 1.000 | 1.000 | · | no gain |\n"
        );
    }

    #[test]
    fn our_sections_follow_with_test_gap_spending_stop_reason_and_chart() {
        let mut info = RunInfo {
            test: Some(super::super::result::TestScores {
                size: 3,
                seed_score: Some(0.5),
                best_score: Some(0.9),
                estimates: None,
                skipped: None,
            }),
            ..RunInfo::default()
        };
        info.by_role.insert(
            "target".into(),
            Spend {
                calls: 10,
                input_tokens: 100,
                output_tokens: 20,
                unpriced_calls: 10,
                ..Spend::default()
            },
        );
        info.unpriced_models = vec!["together/llama".into()];
        let text = report(&result(), &info, "scores.svg");
        assert!(text.starts_with(&reference_report(&result())));
        assert!(text.contains("| best | 1.000 | 0.900 |"), "{text}");
        assert!(
            text.contains("Val → test gap of the best skill: +10.0 points"),
            "{text}"
        );
        assert!(
            text.contains("| target | 10 | 0 | 100 | 20 | unknown |"),
            "{text}"
        );
        assert!(
            text.contains("No price is known for together/llama"),
            "{text}"
        );
        assert!(text.contains("**patience**: 1 round in a row"), "{text}");
        assert!(text.ends_with("![Validation score per round](scores.svg)\n"));
    }
}
