//! `lab import-scanner`: a skill-scanner judge lab (`bundles-<budget>.jsonl` and
//! `answers.jsonl`) turned into a classifier workspace: a dataset of its bundles, its answers
//! copied as they are (the hashes are the same, so they serve the workspace without a request),
//! and optionally a question bank as the pool.
//!
//! An example's id and group are its folder relative to the folders' common path; its source
//! is the corpus, its split the lab's, its metadata the scanner's findings and the bundle's
//! kind. A bundle the lab skipped keeps the reason, one it never sent (no state hash) says so,
//! and one skipped for being over the lab's budget keeps only its size, so the workspace's own
//! state budget decides whether it is judged.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::LabError;
use crate::data::dataset::{Example, Labels, dataset_text};
use crate::data::split::Split;
use crate::lock::WorkspaceLock;
use crate::output::Kind;
use crate::probe::question::Bank;
use skill_factory_io::replace::Outputs;

/// skill-scanner's default state budget, in characters.
pub const DEFAULT_BUDGET: usize = 96_000;

/// What an import wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Examples in the dataset.
    pub examples: usize,
    /// The dataset file.
    pub dataset: PathBuf,
    /// The copied answer cache.
    pub answers: PathBuf,
    /// The pool, when a question bank was given.
    pub pool: Option<PathBuf>,
    /// Bundles whose folder an earlier bundle already had, each with the unique id it was
    /// given (`line (the folder of line) as 'id#2'`): same group, so they share a split.
    pub renamed: Vec<String>,
}

/// The size an over-budget message gives: `skill text is N characters, over the judge's M
/// budget...`.
fn over_budget_size(reason: &str) -> Option<usize> {
    let rest = reason.strip_prefix("skill text is ")?;
    let (number, tail) = rest.split_once(" characters")?;
    tail.contains("budget")
        .then(|| number.replace(',', "").parse().ok())
        .flatten()
}

/// The longest common folder of `paths`, component by component.
fn common_folder(paths: &[PathBuf]) -> PathBuf {
    let mut common: Vec<Component> = match paths.first() {
        Some(first) => first.components().collect(),
        None => return PathBuf::new(),
    };
    for path in &paths[1..] {
        let parts: Vec<Component> = path.components().collect();
        let same = common
            .iter()
            .zip(&parts)
            .take_while(|(a, b)| a == b)
            .count();
        common.truncate(same);
    }
    if paths.len() == 1 {
        common.pop();
    }
    common.iter().collect()
}

/// Imports the lab in `lab` (its `bundles-<budget>.jsonl`) into `out`, with `questions` (a
/// bank file) as the pool. A file of `out` that holds something else (the answers of a
/// workspace) is replaced only with `force`; one the import reads never is. `out` is locked
/// while it is checked and written ([`WorkspaceLock`]); `waiting` hears who holds it when the
/// import must wait.
pub fn import(
    lab: &Path,
    out: &Path,
    budget: usize,
    questions: Option<&Path>,
    force: bool,
    waiting: &dyn Fn(&str),
) -> Result<Imported, LabError> {
    let bundles = lab.join(format!("bundles-{budget}.jsonl"));
    let answers = lab.join("answers.jsonl");
    for file in [&bundles, &answers] {
        if !file.is_file() {
            return Err(LabError::invalid(format!(
                "not a skill-scanner lab: {} is missing (pass the lab folder, and --budget if its bundles file has another budget)",
                file.display()
            )));
        }
    }
    let text = crate::files::read_text(&bundles, skill_factory_io::input::DATASET, "")?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", bundles.display(), i + 1);
        let row: Map<String, Value> = serde_json::from_str(line).map_err(|e| {
            LabError::invalid(format!(
                "{at}: not a JSON object ({e}); each line is one bundle"
            ))
        })?;
        let Some(dir) = row.get("dir").and_then(Value::as_str) else {
            return Err(LabError::invalid(format!(
                "{at}: the bundle has no `dir`, the skill folder it was made from"
            )));
        };
        rows.push((at, PathBuf::from(dir), row));
    }
    if rows.is_empty() {
        return Err(LabError::invalid(format!(
            "{}: no bundle in the file: run the scanner's judge lab first",
            bundles.display()
        )));
    }
    let dirs: Vec<PathBuf> = rows.iter().map(|(_, dir, _)| dir.clone()).collect();
    let common = common_folder(&dirs);
    let labels = Labels {
        positive: "malicious".into(),
        negative: "benign".into(),
    };
    let mut examples = Vec::with_capacity(rows.len());
    // Per folder, where its first bundle was and its split: a second bundle of the folder
    // gets an id of its own in the same group.
    let mut first: HashMap<String, (String, Option<Split>)> = HashMap::new();
    let rows: Vec<(String, PathBuf, String, Map<String, Value>)> = rows
        .into_iter()
        .map(|(at, dir, row)| {
            let group = dir
                .strip_prefix(&common)
                .unwrap_or(&dir)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            (at, dir, group, row)
        })
        .collect();
    // A made-up id must be no folder's id either.
    let mut taken: HashSet<String> = rows.iter().map(|(_, _, group, _)| group.clone()).collect();
    let mut renamed = Vec::new();
    for (at, dir, group, row) in rows {
        let text_of = |key: &str| row.get(key).and_then(Value::as_str).map(str::to_string);
        let split = match text_of("split") {
            Some(name) => Some(Split::parse(&name).ok_or_else(|| {
                LabError::invalid(format!(
                    "{at}: split '{name}' is not one of train, val, test, held-out"
                ))
            })?),
            None => None,
        };
        let id = match first.get(&group) {
            None => {
                first.insert(group.clone(), (at.clone(), split));
                group.clone()
            }
            Some((earlier, earlier_split)) if *earlier_split != split => {
                let name = |split: &Option<Split>| split.map_or("none", Split::name);
                return Err(LabError::invalid(format!(
                    "{at}: this bundle's folder {} is also the bundle of {earlier}, with split \
                     {} here and {} there: one skill folder cannot be in two splits (its \
                     bundles would leak from one into the other); give both the same split in \
                     the lab's bundles file",
                    dir.display(),
                    name(&split),
                    name(earlier_split)
                )));
            }
            Some((earlier, _)) => {
                let unique = (2..)
                    .map(|n| format!("{group}#{n}"))
                    .find(|id| !taken.contains(id))
                    .expect("some suffix is free");
                renamed.push(format!("{at} (the folder of {earlier}) as '{unique}'"));
                unique
            }
        };
        taken.insert(id.clone());
        let state_hash = text_of("stateHash");
        let mut chars = row.get("chars").and_then(Value::as_u64).map(|n| n as usize);
        let mut skipped = text_of("skipped").filter(|r| !r.is_empty());
        if let Some(size) = skipped.as_deref().and_then(over_budget_size) {
            // Over the lab's budget: the workspace's own budget decides.
            chars = Some(size);
            skipped = None;
        } else if state_hash.is_none() && skipped.is_none() {
            skipped = Some("not sent by the lab".into());
        }
        let mut metadata = Map::new();
        metadata.insert(
            "findings".into(),
            row.get("findings")
                .cloned()
                .unwrap_or(Value::Array(Vec::new())),
        );
        metadata.insert(
            "kind".into(),
            row.get("kind").cloned().unwrap_or(Value::Null),
        );
        examples.push(Example {
            group,
            id,
            label: text_of("label").as_deref() == Some("malicious"),
            state: None,
            state_hash,
            chars,
            source: text_of("corpus").unwrap_or_default(),
            split,
            skipped,
            metadata,
        });
    }
    let dataset = out.join("dataset.jsonl");
    let dataset_text = dataset_text(&examples, &labels);
    let copied = out.join("answers.jsonl");
    let cache = crate::files::read_bytes(&answers, crate::files::ANSWERS, "")?;
    let pool = match questions {
        Some(file) => Some((file, out.join("pool.json"), Bank::load(file)?.text())),
        None => None,
    };
    // Every file is checked before any is written: an import refused halfway would leave a
    // workspace whose dataset and answers do not belong together.
    let mut outputs = Outputs::new(force);
    outputs
        .reads(&bundles, "the lab's bundles file")
        .reads(&answers, "the lab's answer cache");
    if let Some((file, _, _)) = &pool {
        outputs.reads(file, "the question bank (--questions)");
    }
    outputs.check_folder("-o", out)?;
    // A command running on the workspace meanwhile would write into the files being replaced.
    let _lock = WorkspaceLock::acquire(out, "lab import-scanner", waiting)?;
    let mut writes = vec![
        (&dataset, dataset_text.as_bytes()),
        (&copied, cache.as_slice()),
    ];
    if let Some((_, path, text)) = &pool {
        writes.push((path, text.as_bytes()));
    }
    for (path, bytes) in &writes {
        outputs.check("-o", path, Kind::Exactly(bytes))?;
    }
    for (path, bytes) in writes {
        skill_factory_io::output::write_atomic(path, bytes).map_err(|e| LabError::io(path, e))?;
    }
    let pool = pool.map(|(_, path, _)| path);
    Ok(Imported {
        examples: examples.len(),
        dataset,
        answers: copied,
        pool,
        renamed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_budget_message_gives_the_size() {
        assert_eq!(
            over_budget_size(
                "skill text is 120000 characters, over the judge's 96000 budget; skipped rather than truncated"
            ),
            Some(120_000)
        );
        assert_eq!(
            over_budget_size("scripts/huge.py was truncated while collecting"),
            None
        );
    }

    #[test]
    fn ids_are_relative_to_the_common_folder_or_to_the_parent_of_a_single_one() {
        let paths = |p: &[&str]| p.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(
            common_folder(&paths(&["/c/a/x", "/c/b/y"])),
            PathBuf::from("/c")
        );
        assert_eq!(common_folder(&paths(&["/c/a/x"])), PathBuf::from("/c/a"));
    }

    #[test]
    fn bundles_of_one_folder_get_ids_of_their_own_in_one_group_or_are_refused_across_splits() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().join("lab");
        std::fs::create_dir(&lab).unwrap();
        std::fs::write(lab.join("answers.jsonl"), "").unwrap();
        let bundle = |dir: &str, split: &str| {
            format!(
                "{{\"dir\": \"/c/{dir}\", \"label\": \"benign\", \"split\": \"{split}\", \"stateHash\": \"h{dir}\"}}\n"
            )
        };
        let bundles = lab.join(format!("bundles-{DEFAULT_BUDGET}.jsonl"));
        std::fs::write(
            &bundles,
            [
                bundle("a", "train"),
                bundle("a", "train"),
                bundle("a#2", "val"),
                bundle("b", "test"),
            ]
            .concat(),
        )
        .unwrap();
        let out = dir.path().join("out");
        let imported = import(&lab, &out, DEFAULT_BUDGET, None, false, &|_| {}).unwrap();
        assert_eq!(imported.examples, 4);
        assert_eq!(imported.renamed.len(), 1, "{:?}", imported.renamed);
        assert!(
            imported.renamed[0].contains(":2 (the folder of "),
            "{:?}",
            imported.renamed
        );
        assert!(
            imported.renamed[0].ends_with("as 'a#3'"),
            "{:?}",
            imported.renamed
        );
        let labels = Labels {
            positive: "malicious".into(),
            negative: "benign".into(),
        };
        let examples = crate::data::dataset::load_dataset(&imported.dataset, &labels).unwrap();
        let ids: Vec<(&str, &str)> = examples
            .iter()
            .map(|e| (e.id.as_str(), e.group.as_str()))
            .collect();
        assert_eq!(ids, [("a", "a"), ("a#3", "a"), ("a#2", "a#2"), ("b", "b")]);

        std::fs::write(
            &bundles,
            [bundle("a", "train"), bundle("a", "val")].concat(),
        )
        .unwrap();
        let refused = import(
            &lab,
            &dir.path().join("out2"),
            DEFAULT_BUDGET,
            None,
            false,
            &|_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains(&format!(
                "{}:2: this bundle's folder /c/a is also the bundle of",
                bundles.display()
            )) && refused.contains("split val here and train there"),
            "{refused}"
        );
        assert!(
            !dir.path().join("out2").exists(),
            "a refused import wrote its folder"
        );
    }
}
