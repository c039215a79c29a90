//! Train / validation / test splits.
//!
//! Without a test split the train/validation split is the Python tool's, task for task and in
//! the same order, for the same seed: sort by id, shuffle with CPython's RNG, validation first.
//! The held-out test split is taken from the end of the shuffled order, so asking for one never
//! changes the validation set, only shortens train.

use crate::dataset::Dataset;
use crate::task::Task;
use skill_factory_pycompat::random::Random;

/// A dataset split into the part that drives reflection, the part that gates edits, and an
/// optional held-out test part that the optimizer never reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Split {
    /// Tasks the optimizer learns from.
    pub train: Vec<Task>,
    /// Tasks that gate every accepted edit.
    pub val: Vec<Task>,
    /// Held-out tasks scored once at the end.
    pub test: Vec<Task>,
}

/// Why a dataset could not be split.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplitError {
    /// `val_fraction` is not strictly between 0 and 1.
    #[error(
        "val_fraction must be greater than 0 and less than 1, got {value}; set `val_fraction` to a value such as 0.3"
    )]
    ValFractionOutOfRange {
        /// The fraction given.
        value: f64,
    },
    /// `test_fraction` is negative or not below 1.
    #[error(
        "test_fraction must be at least 0 and less than 1, got {value}; set `test_fraction` to a value such as 0.2, or to 0 for no test split"
    )]
    TestFractionOutOfRange {
        /// The fraction given.
        value: f64,
    },
    /// Validation and test together would take every task.
    #[error(
        "val_fraction + test_fraction must be less than 1, got {val_fraction} + {test_fraction}; lower `test_fraction` (or `val_fraction`) so tasks remain for training"
    )]
    FractionsTooLarge {
        /// The validation fraction given.
        val_fraction: f64,
        /// The test fraction given.
        test_fraction: f64,
    },
    /// Fewer than two tasks: train and validation cannot both be non-empty.
    #[error("splitting needs at least 2 tasks, the dataset has {tasks}; add tasks to the dataset")]
    TooFewTasks {
        /// The number of tasks in the dataset.
        tasks: usize,
    },
    /// The rounded validation and test sizes leave no training task.
    #[error(
        "{tasks} tasks split into {val} validation + {test} test leave none for training; {}",
        advise_smaller_test(*max_test)
    )]
    NoTrainingTasks {
        /// The number of tasks in the dataset.
        tasks: usize,
        /// The validation size.
        val: usize,
        /// The requested test size.
        test: usize,
        /// The largest test size that still leaves one training task.
        max_test: usize,
    },
}

impl Dataset {
    /// Splits deterministically into train, validation and (when `test_fraction > 0`) test.
    ///
    /// Tasks are sorted by id, shuffled with CPython's `random.Random(seed)`, and
    /// `n_val = min(max(1, round(n × val_fraction)), n − 1)` (round half to even) tasks from
    /// the front become validation. With `test_fraction > 0`,
    /// `n_test = max(1, round(n × test_fraction))` tasks from the back become test. Train is
    /// what lies between; every part keeps the shuffled order. With `test_fraction == 0` this
    /// is exactly the Python tool's split.
    pub fn split(
        &self,
        val_fraction: f64,
        test_fraction: f64,
        seed: u64,
    ) -> Result<Split, SplitError> {
        // Negated range checks, so that NaN is rejected too.
        if !(val_fraction > 0.0 && val_fraction < 1.0) {
            return Err(SplitError::ValFractionOutOfRange {
                value: val_fraction,
            });
        }
        if !(0.0..1.0).contains(&test_fraction) {
            return Err(SplitError::TestFractionOutOfRange {
                value: test_fraction,
            });
        }
        if val_fraction + test_fraction >= 1.0 {
            return Err(SplitError::FractionsTooLarge {
                val_fraction,
                test_fraction,
            });
        }
        let n = self.tasks.len();
        if n < 2 {
            return Err(SplitError::TooFewTasks { tasks: n });
        }

        let mut order: Vec<&Task> = self.tasks.iter().collect();
        // Python compares str by code point, which is the byte order of UTF-8.
        order.sort_by(|a, b| a.id.cmp(&b.id));
        Random::new(seed).shuffle(&mut order);

        let n_val = round_fraction(n, val_fraction).clamp(1, n - 1);
        let n_test = if test_fraction > 0.0 {
            round_fraction(n, test_fraction).max(1)
        } else {
            0
        };
        if n_val + n_test >= n {
            return Err(SplitError::NoTrainingTasks {
                tasks: n,
                val: n_val,
                test: n_test,
                max_test: n - n_val - 1,
            });
        }

        let owned = |tasks: &[&Task]| tasks.iter().map(|&task| task.clone()).collect();
        Ok(Split {
            val: owned(&order[..n_val]),
            train: owned(&order[n_val..n - n_test]),
            test: owned(&order[n - n_test..]),
        })
    }
}

fn advise_smaller_test(max_test: usize) -> String {
    if max_test == 0 {
        "set `test_fraction` to 0 (no test split) or add tasks".to_owned()
    } else {
        format!("lower `test_fraction` so that at most {max_test} task(s) go to test, or add tasks")
    }
}

/// Python's `round(n * fraction)`: the product in floating point, rounded half to even.
fn round_fraction(n: usize, fraction: f64) -> usize {
    // The fraction is in (0, 1), so the result lies in 0..=n.
    (n as f64 * fraction).round_ties_even() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(ids: &[&str]) -> Dataset {
        Dataset {
            tasks: ids
                .iter()
                .map(|id| Task::new(*id, format!("input {id}")))
                .collect(),
        }
    }

    fn numbered(n: usize) -> Dataset {
        let ids: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        dataset(&ids.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn ids(tasks: &[Task]) -> Vec<&str> {
        tasks.iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn same_seed_gives_the_same_split() {
        let data = numbered(10);
        assert_eq!(data.split(0.3, 0.0, 1), data.split(0.3, 0.0, 1));
        assert_eq!(data.split(0.3, 0.2, 4), data.split(0.3, 0.2, 4));
    }

    #[test]
    fn ten_tasks_at_three_tenths_give_three_val_seven_train() {
        let split = numbered(10).split(0.3, 0.0, 1).unwrap();
        assert_eq!(split.val.len(), 3);
        assert_eq!(split.train.len(), 7);
        assert!(split.test.is_empty());
        assert!(split.val.iter().all(|v| !split.train.contains(v)));
    }

    #[test]
    fn two_tasks_keep_both_sides_non_empty() {
        let split = numbered(2).split(0.9, 0.0, 0).unwrap();
        assert_eq!(
            (ids(&split.train), ids(&split.val)),
            (vec!["t1"], vec!["t0"])
        );
    }

    #[test]
    fn rounding_is_half_to_even() {
        // 10 × 0.25 = 2.5 → 2; 14 × 0.25 = 3.5 → 4.
        assert_eq!(numbered(10).split(0.25, 0.0, 0).unwrap().val.len(), 2);
        assert_eq!(numbered(14).split(0.25, 0.0, 0).unwrap().val.len(), 4);
    }

    #[test]
    fn tiny_val_fraction_still_gives_one_val_task() {
        assert_eq!(numbered(5).split(0.01, 0.0, 0).unwrap().val.len(), 1);
        assert_eq!(numbered(5).split(0.3, 0.01, 0).unwrap().test.len(), 1);
    }

    #[test]
    fn out_of_range_val_fraction_names_the_key() {
        for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            let error = numbered(4).split(bad, 0.0, 0).unwrap_err();
            assert!(matches!(error, SplitError::ValFractionOutOfRange { .. }));
        }
        assert_eq!(
            numbered(4).split(1.0, 0.0, 0).unwrap_err().to_string(),
            "val_fraction must be greater than 0 and less than 1, got 1; set `val_fraction` to a value such as 0.3"
        );
    }

    #[test]
    fn out_of_range_test_fraction_names_the_key() {
        for bad in [1.0, -0.1, f64::NAN] {
            let error = numbered(4).split(0.3, bad, 0).unwrap_err();
            assert!(matches!(error, SplitError::TestFractionOutOfRange { .. }));
        }
        assert_eq!(
            numbered(4).split(0.3, -0.5, 0).unwrap_err().to_string(),
            "test_fraction must be at least 0 and less than 1, got -0.5; set `test_fraction` to a value such as 0.2, or to 0 for no test split"
        );
    }

    #[test]
    fn fractions_adding_up_to_one_are_rejected() {
        assert_eq!(
            numbered(10).split(0.5, 0.5, 0).unwrap_err().to_string(),
            "val_fraction + test_fraction must be less than 1, got 0.5 + 0.5; lower `test_fraction` (or `val_fraction`) so tasks remain for training"
        );
    }

    #[test]
    fn fewer_than_two_tasks_cannot_be_split() {
        assert_eq!(
            numbered(1).split(0.5, 0.0, 0).unwrap_err().to_string(),
            "splitting needs at least 2 tasks, the dataset has 1; add tasks to the dataset"
        );
        assert_eq!(
            numbered(0).split(0.5, 0.0, 0).unwrap_err(),
            SplitError::TooFewTasks { tasks: 0 }
        );
    }

    #[test]
    fn test_split_that_leaves_no_train_task_is_rejected() {
        // 3 tasks: val = round(1.5) = 2, test = max(1, round(0.3)) = 1, train = 0.
        assert_eq!(
            numbered(3).split(0.5, 0.1, 0).unwrap_err().to_string(),
            "3 tasks split into 2 validation + 1 test leave none for training; set `test_fraction` to 0 (no test split) or add tasks"
        );
    }
}
