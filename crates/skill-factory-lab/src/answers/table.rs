//! The cached answers of a set of examples, as the metrics read them: per example, its status
//! at the budget and P(true) for every question answered.

use std::collections::{BTreeMap, HashMap};

use crate::data::dataset::Status;

/// What is known about one example.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its status at the table's budget.
    pub status: Status,
    /// P(true) by question id, for every question with a cached answer (none unless judged).
    pub answers: HashMap<String, f64>,
    /// How many of those answers each model version served.
    pub versions: BTreeMap<String, usize>,
}

/// Rows by example id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerTable {
    /// The rows, by example id.
    pub rows: HashMap<String, Row>,
}

impl AnswerTable {
    /// The answers of example `id` (empty when it has none).
    pub fn answers(&self, id: &str) -> &HashMap<String, f64> {
        static EMPTY: std::sync::OnceLock<HashMap<String, f64>> = std::sync::OnceLock::new();
        self.rows
            .get(id)
            .map(|row| &row.answers)
            .unwrap_or_else(|| EMPTY.get_or_init(HashMap::new))
    }
}

impl AnswerTable {
    /// How many of the table's answers each model version served.
    pub fn served(&self) -> BTreeMap<String, usize> {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for row in self.rows.values() {
            for (version, n) in &row.versions {
                *counts.entry(version.clone()).or_default() += n;
            }
        }
        counts
    }
}

/// The version that served most answers (first by name on ties): what a threshold fitted on
/// them is pinned to.
pub fn most_served(served: &BTreeMap<String, usize>) -> Option<String> {
    let top = served.values().copied().max()?;
    served
        .iter()
        .find(|(_, n)| **n == top)
        .map(|(v, _)| v.clone())
}
