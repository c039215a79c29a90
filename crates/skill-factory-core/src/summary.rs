//! An evaluation's report figures, gathered item by item as rollouts finish, keeping only the
//! worst items it will show and each task's sample scores: an evaluation of any size is
//! summed up in memory that grows with its tasks, never with its outputs.

use crate::rollout::Usage;
use crate::score::TaskEvaluation;
use crate::trigger::TriggerCounts;

/// The score, failures, tokens, each task's sample scores and the `k` worst tasks (each by
/// its worst sample) of an evaluation.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    k: usize,
    size: usize,
    /// The scores of each task's samples, by task index.
    scores: Vec<Vec<f64>>,
    /// Each task's weight, by task index.
    weights: Vec<f64>,
    /// The scores summed, each times its task's weight, and the weights summed.
    sum: f64,
    total_weight: f64,
    failed: usize,
    usage: Usage,
    any_reachable: bool,
    /// The error of the first item added, and whether every item since failed with it.
    common_error: Option<(Option<String>, bool)>,
    /// The error of the item first in dataset order, with its index.
    first: Option<(usize, Option<String>)>,
    /// The `k` lowest-scoring items with their task index, lowest first, ties in dataset
    /// order; one per task, its lowest-scoring sample.
    worst: Vec<(usize, TaskEvaluation)>,
    /// The loads of a trigger run's rollouts, once one is added.
    trigger: Option<TriggerCounts>,
}

impl Summary {
    /// How often the agent loaded the skill against how often it should have, when the items
    /// are a trigger run's ([`crate::trigger`]).
    pub fn trigger(&self) -> Option<TriggerCounts> {
        self.trigger
    }

    /// An empty summary that keeps the `k` worst items.
    pub fn new(k: usize) -> Self {
        Summary {
            k,
            ..Summary::default()
        }
    }

    /// Adds an item of task number `index` (its place in the dataset order); a task with
    /// several samples is added once per sample.
    pub fn add(&mut self, index: usize, item: &TaskEvaluation) {
        self.size += 1;
        if self.scores.len() <= index {
            self.scores.resize_with(index + 1, Vec::new);
            self.weights.resize(index + 1, 1.0);
        }
        self.scores[index].push(item.score());
        self.weights[index] = item.weight;
        self.sum += item.score() * item.weight;
        self.total_weight += item.weight;
        self.failed += usize::from(!item.rollout.ok());
        let mut counts = self.trigger.unwrap_or_default();
        if counts.add(&item.rollout) {
            self.trigger = Some(counts);
        }
        self.usage.add(item.rollout.usage);
        self.usage.add(item.result.usage);
        self.any_reachable |= !item.rollout.is_unreachable();
        match &mut self.common_error {
            None => self.common_error = Some((item.rollout.error.clone(), true)),
            Some((error, alike)) => *alike &= *error == item.rollout.error,
        }
        if self.first.as_ref().is_none_or(|(first, _)| index < *first) {
            self.first = Some((index, item.rollout.error.clone()));
        }
        if self.k == 0 {
            return;
        }
        if let Some(at) = self.worst.iter().position(|(i, _)| *i == index) {
            if self.worst[at].1.score() <= item.score() {
                return;
            }
            self.worst.remove(at);
        }
        let rank = |(i, kept): &(usize, TaskEvaluation)| {
            kept.score()
                .total_cmp(&item.score())
                .then(i.cmp(&index))
                .is_lt()
        };
        let at = self.worst.partition_point(rank);
        if at < self.k {
            self.worst.insert(at, (index, item.clone()));
            self.worst.truncate(self.k);
        }
    }

    /// Mean of the item scores, each by its task's weight (0 when empty).
    pub fn score(&self) -> f64 {
        if self.total_weight <= 0.0 {
            return 0.0;
        }
        self.sum / self.total_weight
    }

    /// Number of rollouts evaluated (tasks times their samples).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Number of tasks evaluated.
    pub fn tasks(&self) -> usize {
        self.scores.iter().filter(|s| !s.is_empty()).count()
    }

    /// The scores of each task's samples, by task index (a task not evaluated has none).
    pub fn per_task(&self) -> &[Vec<f64>] {
        &self.scores
    }

    /// Each task's weight, by task index ([`crate::Task::weight`]), for the statistics of
    /// [`Summary::per_task`].
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Number of rollouts that failed (harness or model error).
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// Tokens spent by rollouts and metrics together.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The first rollout's error when the evaluation measured nothing: every rollout failed
    /// because its model or program could not be reached ([`crate::Rollout::is_unreachable`]),
    /// or, over two tasks or more, every rollout failed with one and the same error (a
    /// script that cannot be opened, a key the agent refuses: the program failed before the
    /// task or the skill could matter). No edit of the skill can change such a score.
    pub fn measured_nothing(&self) -> Option<&str> {
        let alike = matches!(&self.common_error, Some((Some(_), true))) && self.tasks() >= 2;
        if self.any_reachable && !alike {
            return None;
        }
        self.first.as_ref()?.1.as_deref()
    }

    /// The kept worst items, lowest first.
    pub fn worst(&self) -> impl Iterator<Item = &TaskEvaluation> {
        self.worst.iter().map(|(_, item)| item)
    }

    /// One line per kept worst item: `- task <id> (score <s>): <feedback>`.
    pub fn feedback_digest(&self) -> String {
        self.worst()
            .map(|item| {
                let feedback = item.result.feedback.trim();
                let feedback = if feedback.is_empty() {
                    "no feedback"
                } else {
                    feedback
                };
                format!(
                    "- task {} (score {:.2}): {}",
                    item.task_id(),
                    item.score(),
                    feedback
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Evaluation, MetricResult, Rollout};

    fn item(id: &str, score: f64) -> TaskEvaluation {
        TaskEvaluation::new(
            Rollout::success(id, "out"),
            MetricResult::new("m", score, format!("fb {id}")),
        )
    }

    #[test]
    fn items_in_any_order_sum_up_as_the_whole_evaluation_does() {
        let items: Vec<TaskEvaluation> = [0.5, 0.0, 1.0, 0.0, 0.25, 0.75]
            .iter()
            .enumerate()
            .map(|(i, s)| item(&format!("t{i}"), *s))
            .collect();
        let whole = Evaluation {
            items: items.clone(),
        };
        let mut streamed = Summary::new(3);
        for index in [4, 1, 5, 0, 3, 2] {
            streamed.add(index, &items[index]);
        }
        assert_eq!(streamed.size(), 6);
        assert!((streamed.score() - whole.score()).abs() < 1e-12);
        assert_eq!(streamed.failed(), whole.failed());
        assert_eq!(streamed.feedback_digest(), whole.feedback_digest(3));
        let ids: Vec<&str> = streamed.worst().map(|i| i.task_id()).collect();
        assert_eq!(ids, ["t1", "t3", "t4"], "ties in dataset order");
    }

    fn failed(rollout: Rollout) -> TaskEvaluation {
        TaskEvaluation::new(rollout, MetricResult::new("m", 0.0, "no output"))
    }

    /// Both ways of summing up agree on whether an evaluation measured anything.
    fn measured_nothing(items: Vec<TaskEvaluation>) -> Option<String> {
        let mut streamed = Summary::new(0);
        for (index, item) in items.iter().enumerate() {
            streamed.add(index, item);
        }
        let whole = Evaluation { items };
        assert_eq!(
            streamed.measured_nothing().map(str::to_owned),
            whole.measured_nothing()
        );
        whole.measured_nothing()
    }

    #[test]
    fn an_evaluation_measures_nothing_when_no_program_ran_or_every_task_failed_alike() {
        let cannot_open = "exit 2: sh: 0: cannot open ./agent.sh: No such file";
        let unreachable = |id: &str| failed(Rollout::unreachable(id, "connection refused"));
        let alike = |id: &str| failed(Rollout::failure(id, cannot_open));
        assert_eq!(
            measured_nothing(vec![unreachable("a"), unreachable("b")]).as_deref(),
            Some("connection refused")
        );
        assert_eq!(
            measured_nothing(vec![alike("a"), alike("b")]).as_deref(),
            Some(cannot_open)
        );
        // One task failing is a result about that task; two failing differently are results
        // about each; a success among them is a measurement.
        assert_eq!(measured_nothing(vec![alike("a")]), None);
        assert_eq!(
            measured_nothing(vec![
                alike("a"),
                failed(Rollout::failure("b", "exit 1: wrong"))
            ]),
            None
        );
        assert_eq!(measured_nothing(vec![alike("a"), item("b", 0.0)]), None);
        assert_eq!(measured_nothing(vec![item("a", 0.0), item("b", 0.0)]), None);
    }
}
