//! A JSONL file read by `Dataset::from_jsonl` and split, against what the Python skill-factory
//! 0.2.0 made of the same file (`data/generate.py`).

use serde_json::Value;
use skill_factory_core::Dataset;

fn expected() -> Value {
    serde_json::from_str(include_str!("../data/dataset_python.json")).expect("valid expected data")
}

fn dataset() -> Dataset {
    Dataset::from_jsonl(
        include_str!("../data/dataset_records.jsonl"),
        "dataset_records.jsonl",
    )
    .expect("the records file is valid")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .expect("array of ids")
        .iter()
        .map(|id| id.as_str().expect("string id"))
        .collect()
}

#[test]
fn tasks_equal_the_python_tools_tasks() {
    let dataset = dataset();
    let wanted = expected();
    let wanted = wanted["tasks"].as_array().expect("tasks");
    assert_eq!(dataset.len(), wanted.len());
    for (task, wanted) in dataset.iter().zip(wanted) {
        assert_eq!(task.id, wanted["id"].as_str().expect("id"));
        assert_eq!(
            task.input,
            wanted["input"].as_str().expect("input"),
            "task {}",
            task.id
        );
        assert_eq!(
            task.expected.as_deref(),
            wanted["expected"].as_str(),
            "task {}",
            task.id
        );
        assert_eq!(
            &Value::Object(task.metadata.clone()),
            &wanted["metadata"],
            "task {}",
            task.id
        );
    }
}

#[test]
fn splits_equal_the_python_tools_splits() {
    let dataset = dataset();
    let wanted = expected();
    for case in wanted["splits"].as_array().expect("splits") {
        let fraction = case["val_fraction"].as_f64().expect("fraction");
        let seed = case["seed"].as_u64().expect("seed");
        let split = dataset.split(fraction, 0.0, seed).expect("valid split");
        let ids = |tasks: &[skill_factory_core::Task]| -> Vec<String> {
            tasks.iter().map(|task| task.id.clone()).collect()
        };
        assert_eq!(
            ids(&split.val),
            strings(&case["val"]),
            "val @{fraction} seed {seed}"
        );
        assert_eq!(
            ids(&split.train),
            strings(&case["train"]),
            "train @{fraction} seed {seed}"
        );
        assert!(split.test.is_empty());
    }
}
