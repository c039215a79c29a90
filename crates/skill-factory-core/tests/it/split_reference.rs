//! Splits and minibatches listed in the reference spec (Appendix A.1 and A.2), and the
//! properties every split must keep.

use proptest::prelude::*;
use skill_factory_core::{Dataset, Split, SplitError, Task};
use skill_factory_pycompat::random::Random;

fn dataset_of(ids: &[String]) -> Dataset {
    Dataset {
        tasks: ids
            .iter()
            .map(|id| Task::new(id.clone(), format!("input {id}")))
            .collect(),
    }
}

fn invoice_ids() -> Vec<String> {
    (1..=12).map(|i| format!("inv-{i:03}")).collect()
}

fn ticket_ids() -> Vec<String> {
    (1..=15).map(|i| format!("tk-{i:02}")).collect()
}

fn fixture_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i}")).collect()
}

fn ids(tasks: &[Task]) -> Vec<&str> {
    tasks.iter().map(|task| task.id.as_str()).collect()
}

fn assert_split(ids_in: &[String], fraction: f64, seed: u64, train: &[&str], val: &[&str]) {
    let split = dataset_of(ids_in)
        .split(fraction, 0.0, seed)
        .expect("valid split");
    assert_eq!(ids(&split.train), train, "train @{fraction} seed {seed}");
    assert_eq!(ids(&split.val), val, "val @{fraction} seed {seed}");
    assert!(split.test.is_empty());
}

#[test]
fn invoice_example_split_matches_reference() {
    assert_split(
        &invoice_ids(),
        0.34,
        7,
        &[
            "inv-009", "inv-005", "inv-010", "inv-002", "inv-001", "inv-007", "inv-003", "inv-006",
        ],
        &["inv-008", "inv-012", "inv-004", "inv-011"],
    );
}

#[test]
fn ticket_example_split_matches_reference() {
    assert_split(
        &ticket_ids(),
        0.34,
        3,
        &[
            "tk-01", "tk-05", "tk-02", "tk-08", "tk-14", "tk-06", "tk-03", "tk-09", "tk-10",
            "tk-04",
        ],
        &["tk-13", "tk-11", "tk-07", "tk-12", "tk-15"],
    );
}

#[test]
fn test_fixture_splits_match_reference() {
    assert_split(
        &fixture_ids(8),
        0.5,
        0,
        &["t0", "t3", "t7", "t6"],
        &["t4", "t1", "t5", "t2"],
    );
    assert_split(
        &fixture_ids(6),
        0.5,
        0,
        &["t0", "t5", "t3"],
        &["t4", "t2", "t1"],
    );
    assert_split(
        &fixture_ids(10),
        0.3,
        1,
        &["t7", "t5", "t3", "t0", "t4", "t1", "t2"],
        &["t6", "t8", "t9"],
    );
    assert_split(&fixture_ids(4), 0.5, 0, &["t1", "t3"], &["t2", "t0"]);
    assert_split(&fixture_ids(2), 0.9, 0, &["t1"], &["t0"]);
}

#[test]
fn sizes_from_the_spec_examples() {
    let val_size = |n: usize, fraction: f64| {
        dataset_of(&fixture_ids(n))
            .split(fraction, 0.0, 0)
            .map(|split| split.val.len())
    };
    assert_eq!(val_size(10, 0.3), Ok(3));
    assert_eq!(val_size(2, 0.9), Ok(1));
    assert_eq!(val_size(12, 0.34), Ok(4));
    assert_eq!(val_size(15, 0.34), Ok(5));
}

#[test]
fn test_split_comes_from_the_end_of_train() {
    let split = dataset_of(&invoice_ids())
        .split(0.34, 0.25, 7)
        .expect("valid split");
    assert_eq!(
        ids(&split.val),
        ["inv-008", "inv-012", "inv-004", "inv-011"]
    );
    assert_eq!(
        ids(&split.train),
        ["inv-009", "inv-005", "inv-010", "inv-002", "inv-001"]
    );
    assert_eq!(ids(&split.test), ["inv-007", "inv-003", "inv-006"]);
}

/// Draws `rounds` minibatches of `size` from `train` with one `Random(0)`, as llm_loop does.
fn minibatches(train: &[&str], size: usize, rounds: usize) -> Vec<Vec<String>> {
    let mut rng = Random::new(0);
    (0..rounds)
        .map(|_| {
            rng.sample(train, size)
                .into_iter()
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

fn invoice_batches(numbers: &[[u32; 4]]) -> Vec<Vec<String>> {
    numbers
        .iter()
        .map(|batch| batch.iter().map(|n| format!("inv-{n:03}")).collect())
        .collect()
}

const INVOICE_TRAIN: [&str; 8] = [
    "inv-009", "inv-005", "inv-010", "inv-002", "inv-001", "inv-007", "inv-003", "inv-006",
];

#[test]
fn invoice_minibatches_match_reference() {
    let wanted = invoice_batches(&[
        [3, 6, 2, 9],
        [1, 6, 2, 7],
        [1, 2, 10, 6],
        [2, 1, 5, 10],
        [10, 3, 9, 1],
        [1, 6, 7, 3],
        [10, 6, 9, 7],
        [7, 2, 1, 9],
    ]);
    assert_eq!(minibatches(&INVOICE_TRAIN, 4, 8), wanted);
}

#[test]
fn invoice_fast_minibatches_match_reference() {
    let wanted: Vec<Vec<String>> = [[3, 6, 2], [9, 10, 1], [6, 2, 10]]
        .iter()
        .map(|batch| batch.iter().map(|n| format!("inv-{n:03}")).collect())
        .collect();
    assert_eq!(minibatches(&INVOICE_TRAIN, 3, 3), wanted);
}

#[test]
fn ticket_minibatches_match_reference() {
    let train = [
        "tk-01", "tk-05", "tk-02", "tk-08", "tk-14", "tk-06", "tk-03", "tk-09", "tk-10", "tk-04",
    ];
    let wanted = [
        ["tk-03", "tk-04", "tk-01"],
        ["tk-14", "tk-10", "tk-09"],
        ["tk-03", "tk-14", "tk-09"],
        ["tk-06", "tk-08", "tk-02"],
    ];
    assert_eq!(minibatches(&train, 3, 4), wanted);
}

#[test]
fn optimizer_test_minibatches_match_reference() {
    let wanted = [["t6", "t3"], ["t0", "t3"], ["t6", "t3"]];
    assert_eq!(minibatches(&["t0", "t3", "t7", "t6"], 2, 3), wanted);
}

fn sorted_ids(tasks: &[&Task]) -> Vec<String> {
    let mut ids: Vec<String> = tasks.iter().map(|task| task.id.clone()).collect();
    ids.sort();
    ids
}

fn all_parts(split: &Split) -> Vec<&Task> {
    split
        .train
        .iter()
        .chain(&split.val)
        .chain(&split.test)
        .collect()
}

proptest! {
    #[test]
    fn splits_partition_the_dataset_deterministically(
        n in 2usize..60,
        val_fraction in 0.01f64..0.99,
        test_fraction in prop_oneof![Just(0.0), 0.0f64..0.6],
        seed in any::<u64>(),
    ) {
        let dataset = dataset_of(&fixture_ids(n));
        let without_test = dataset.split(val_fraction, 0.0, seed).map_err(|error| {
            TestCaseError::fail(format!("a split without test must always succeed: {error}"))
        })?;
        prop_assert!(!without_test.train.is_empty() && !without_test.val.is_empty());

        match dataset.split(val_fraction, test_fraction, seed) {
            Ok(split) => {
                let everything: Vec<&Task> = dataset.tasks.iter().collect();
                // Same multiset of ids: every task in exactly one part.
                prop_assert_eq!(sorted_ids(&all_parts(&split)), sorted_ids(&everything));
                prop_assert!(!split.train.is_empty() && !split.val.is_empty());
                prop_assert_eq!(split.test.is_empty(), test_fraction == 0.0);
                prop_assert_eq!(&dataset.split(val_fraction, test_fraction, seed), &Ok(split.clone()));
                // Adding a test split never changes val; test is carved from train's tail.
                prop_assert_eq!(&split.val, &without_test.val);
                let rejoined: Vec<Task> =
                    split.train.iter().chain(&split.test).cloned().collect();
                prop_assert_eq!(rejoined, without_test.train);
            }
            Err(error) => {
                prop_assert!(test_fraction > 0.0);
                let expected_kind = matches!(
                    error,
                    SplitError::NoTrainingTasks { .. } | SplitError::FractionsTooLarge { .. }
                );
                prop_assert!(expected_kind, "{error}");
            }
        }
    }
}
