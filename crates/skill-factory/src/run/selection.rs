//! The final pick on a separate selection split (`selection_fraction`): the validation split
//! decided every step of the search, so the best on it is biased upwards (GEPA users ask for a
//! held-out pick, gepa PR #308). With a selection split, the last few bests of the search are
//! scored once more on tasks the search never saw, and the one that scores highest there is
//! the run's best skill. The held-out test split is still scored only after this pick.

use std::collections::HashSet;

use futures_util::future::join_all;
use serde_json::{Value, json};
use skill_factory_core::{Estimate, Split, Task};

use crate::optimizer::{CandidateRecord, OptimizationResult, RunContext, identity};

/// How many of the search's last bests compete on the selection split.
pub const CANDIDATES: usize = 3;

/// A `selection_fraction` so large that no train task would be left to search on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{size} selection tasks would leave none of the {train} train tasks for training; lower selection_fraction"
)]
pub struct SelectionTooLarge {
    /// The selection split's size.
    pub size: usize,
    /// The train split's size before it.
    pub train: usize,
}

/// Moves `round(n × fraction)` tasks (at least one) from the end of the train split into a
/// selection split, where `n` is the dataset's size. `None` for a fraction of 0; an error
/// when no train task would be left.
pub fn carve(split: &mut Split, fraction: f64) -> Result<Option<Vec<Task>>, SelectionTooLarge> {
    if fraction <= 0.0 {
        return Ok(None);
    }
    let total = split.train.len() + split.val.len() + split.test.len();
    let size = ((total as f64 * fraction).round_ties_even() as usize).max(1);
    if size >= split.train.len() {
        return Err(SelectionTooLarge {
            size,
            train: split.train.len(),
        });
    }
    let at = split.train.len() - size;
    Ok(Some(split.train.split_off(at)))
}

/// Scores the search's last [`CANDIDATES`] distinct bests on `selection` (`noise.samples`
/// samples of each task, the same for all) and makes the pick the result's best: in a
/// deterministic run the highest scoring one (ties: the higher validation score, then the
/// later); in a noisy run the search's last best, unless an earlier one is better paired by
/// task and sample, the lower end of its interval (split over the rivals) above 0.
/// Records what was scored and picked in `metadata.selection`. Leaves the result alone when
/// the run is stopping (cancelled or out of budget), with the reason recorded.
pub async fn pick(context: &RunContext, result: &mut OptimizationResult, selection: &[Task]) {
    if let Some(stop) = context.stop_reason() {
        return skipped(result, selection.len(), stop.detail());
    }
    let mut seen = HashSet::new();
    let mut finalists: Vec<CandidateRecord> = result
        .history
        .iter()
        .rev()
        .filter(|record| record.accepted && seen.insert(identity(&record.skill)))
        .take(CANDIDATES)
        .cloned()
        .collect();
    let noise = context.noise();
    let scored = join_all(finalists.iter().map(|record| {
        let candidate = record.candidate.unwrap_or(0);
        context.sample_scores(
            &record.skill,
            selection,
            0..noise.samples,
            (candidate, "selection"),
        )
    }))
    .await;
    let Some(samples) = scored.into_iter().collect::<Option<Vec<Vec<Vec<f64>>>>>() else {
        let why = context
            .stop_reason()
            .map_or_else(|| "the run stopped".to_string(), |s| s.detail());
        return skipped(result, selection.len(), why);
    };
    let weights = skill_factory_core::task::weights(selection);
    let estimates: Vec<Estimate> = samples
        .iter()
        .map(|s| noise.estimate(s, &weights))
        .collect();
    let winner = if noise.is_noisy() {
        // Finalists run newest first: the search's last best stands unless another is
        // detectably better than it.
        let tail = noise.tail() / (finalists.len().saturating_sub(1)).max(1) as f64;
        let mut pick = (0, 0.0);
        for other in 1..finalists.len() {
            let gain = noise.paired(&samples[0], &samples[other], &weights);
            if gain.lower(tail) > 0.0 && gain.mean > pick.1 {
                pick = (other, gain.mean);
            }
        }
        pick.0
    } else {
        // Finalists run newest first, so on a full tie the later best wins.
        (0..finalists.len())
            .max_by(|&a, &b| {
                let key = |i: usize| (estimates[i].mean, finalists[i].val_score);
                key(a)
                    .partial_cmp(&key(b))
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.cmp(&a))
            })
            .unwrap_or(0)
    };
    let candidates: Vec<Value> = finalists
        .iter()
        .zip(&estimates)
        .map(|(record, estimate)| {
            json!({
                "candidate": record.candidate,
                "val": record.val_score,
                "selection": estimate.mean,
                "interval": [estimate.low, estimate.high],
            })
        })
        .collect();
    let picked = finalists.swap_remove(winner);
    result.metadata.insert(
        "selection".into(),
        json!({
            "tasks": selection.len(),
            "candidates": candidates,
            "picked": picked.candidate,
            "paired": noise.is_noisy(),
        }),
    );
    result.best_skill = picked.skill;
    result.best_score = picked.val_score;
    result.best_candidate = picked.candidate.unwrap_or(0);
}

/// Records that the `tasks` selection tasks were not scored, and `why`; the best on
/// validation stays.
fn skipped(result: &mut OptimizationResult, tasks: usize, why: String) {
    result
        .metadata
        .insert("selection".into(), json!({"tasks": tasks, "skipped": why}));
}

/// The report's lines on the pick, from `metadata.selection`; empty without one.
pub fn report(result: &OptimizationResult) -> String {
    let Some(selection) = result.metadata.get("selection") else {
        return String::new();
    };
    let tasks = selection["tasks"].as_u64().unwrap_or(0);
    let mut text = String::from("\n## Final pick on the selection split\n\n");
    if let Some(why) = selection["skipped"].as_str() {
        text.push_str(&format!(
            "The {tasks} selection tasks were not scored: {why}; the best on validation stays.\n"
        ));
        return text;
    }
    text.push_str("| candidate | val | selection |\n| ---: | ---: | ---: |\n");
    for row in selection["candidates"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "| {} | {:.3} | {:.3} |\n",
            row["candidate"],
            row["val"].as_f64().unwrap_or(0.0),
            row["selection"].as_f64().unwrap_or(0.0)
        ));
    }
    let picked = &selection["picked"];
    let how = if selection["paired"].as_bool() == Some(true) {
        format!(
            "the search's last best stands unless another is detectably better than it, paired by task; the pick, candidate {picked}, is the best skill"
        )
    } else {
        format!("candidate {picked} scored highest there and is the best skill")
    };
    text.push_str(&format!(
        "\nThe search's last bests were scored on {tasks} tasks it never saw; {how}.\n"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(n: usize) -> Vec<Task> {
        (0..n).map(|i| Task::new(format!("t{i}"), "x")).collect()
    }

    #[test]
    fn carving_takes_the_end_of_train_and_keeps_one_train_task() {
        let mut split = Split {
            train: tasks(6),
            val: tasks(3),
            test: tasks(1),
        };
        let selection = carve(&mut split, 0.2).unwrap().unwrap();
        assert_eq!(selection.len(), 2);
        assert_eq!(selection[0].id, "t4");
        assert_eq!(split.train.len(), 4);
        assert!(carve(&mut split, 0.0).unwrap().is_none());
        let error = carve(&mut split, 0.5).unwrap_err().to_string();
        assert!(error.contains("lower selection_fraction"), "{error}");
    }
}
