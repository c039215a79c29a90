//! Tasks across several targets: a run that optimizes a skill for several models or agents
//! scores every task once per target, each copy marked with its target and weighted by it.

use serde_json::Value;

use crate::task::Task;

/// The metadata key that names a task's target.
pub const TARGET_KEY: &str = "target";

/// What joins a task's id and its target's name in the copy's id (`t3@haiku`).
pub const TARGET_SEPARATOR: char = '@';

/// Every task once per target, task by task (so that any prefix holds every target), the
/// copy's id `<id>@<target>`, its metadata naming the target, and its weight the task's times
/// the target's, scaled so that the targets' weights average 1.
pub fn across(tasks: &[Task], targets: &[(String, f64)]) -> Vec<Task> {
    let total: f64 = targets.iter().map(|(_, weight)| weight).sum();
    let scale = if total > 0.0 {
        targets.len() as f64 / total
    } else {
        1.0
    };
    let mut copies = Vec::with_capacity(tasks.len() * targets.len());
    for task in tasks {
        for (name, weight) in targets {
            let mut copy = task.clone();
            copy.id = format!("{}{TARGET_SEPARATOR}{name}", task.id);
            copy.metadata
                .insert(TARGET_KEY.to_owned(), Value::from(name.as_str()));
            copy.weight = task.weight * weight * scale;
            copies.push(copy);
        }
    }
    copies
}

/// The target a task was copied for ([`across`]), if any.
pub fn target_of(task: &Task) -> Option<&str> {
    task.metadata.get(TARGET_KEY).and_then(Value::as_str)
}

/// The positions of the tasks of each target in `tasks`, targets in order of first
/// appearance; tasks of no target are left out.
pub fn by_target(tasks: &[Task]) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        let Some(name) = target_of(task) else {
            continue;
        };
        match groups.iter_mut().find(|(n, _)| n == name) {
            Some((_, indices)) => indices.push(index),
            None => groups.push((name.to_owned(), vec![index])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_is_copied_once_per_target_with_the_targets_weights() {
        let tasks: Vec<Task> = (0..3).map(|i| Task::new(format!("t{i}"), "in")).collect();
        let targets = [("a".to_owned(), 3.0), ("b".to_owned(), 1.0)];
        let copies = across(&tasks, &targets);
        assert_eq!(copies.len(), 6);
        assert_eq!(copies[0].id, "t0@a");
        assert_eq!(copies[1].id, "t0@b");
        assert_eq!(target_of(&copies[1]), Some("b"));
        assert_eq!(copies[0].input, "in");
        // 3 : 1, averaging 1.
        assert!((copies[0].weight - 1.5).abs() < 1e-12 && (copies[1].weight - 0.5).abs() < 1e-12);
        let groups = by_target(&copies);
        assert_eq!(groups[0], ("a".to_owned(), vec![0, 2, 4]));
        assert_eq!(groups[1], ("b".to_owned(), vec![1, 3, 5]));
        assert!(by_target(&tasks).is_empty());
    }
}
