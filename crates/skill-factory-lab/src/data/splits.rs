//! Honest, group-aware splits: train, val, test and held-out, assigned by a salted hash of the
//! example's group, so the assignment is deterministic and independent of the file's order.
//!
//! One example's split, first match wins: listed (by id or group) in `read_before_split` ->
//! train; an explicit `split`; a held-out source or group -> held-out; else the group's hash
//! against the train and val fractions. A group that still lands in two splits is an error,
//! because its near-duplicates would leak from one split into another.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use skill_factory_pycompat::repr;
use skill_factory_runfolder::workspace::AssignmentRecord;

use crate::LabError;
use crate::data::dataset::Example;
use crate::data::split::Split;

/// Where the examples go: the `splits:` section of the config.
///
/// Deserializes from that section (`fractions: {train, val}`, `held_out_sources`,
/// `held_out_groups`, `read_before_split`, `salt`) and validates it. Unlike the reference,
/// an unknown key is an error: a misspelt `held_out_sources` would otherwise put the sources
/// meant to be kept out into train without a word.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(try_from = "PlanFile")]
pub struct SplitPlan {
    /// The share of the groups (hash below it) that go to train.
    pub train: f64,
    /// The share that goes to val; test gets the rest.
    pub val: f64,
    /// Sources kept out entirely (held-out).
    pub held_out_sources: BTreeSet<String>,
    /// Groups kept out entirely (held-out).
    pub held_out_groups: BTreeSet<String>,
    /// Ids or groups someone read while designing: they go to train, whatever else says.
    pub read_before_split: BTreeSet<String>,
    /// Prepended to the group before hashing; the only knob that reshuffles the split.
    pub salt: String,
}

impl Default for SplitPlan {
    fn default() -> Self {
        SplitPlan {
            train: DEFAULT_TRAIN,
            val: DEFAULT_VAL,
            held_out_sources: BTreeSet::new(),
            held_out_groups: BTreeSet::new(),
            read_before_split: BTreeSet::new(),
            salt: String::new(),
        }
    }
}

/// The default share of train.
const DEFAULT_TRAIN: f64 = 0.5;
/// The default share of val.
const DEFAULT_VAL: f64 = 0.25;

impl SplitPlan {
    /// Checks `0 < train < 1`, `0 < val < 1` and `train + val <= 1`.
    pub fn validate(&self) -> Result<(), LabError> {
        for (key, value, example) in [("train", self.train, "0.5"), ("val", self.val, "0.25")] {
            // Written so that NaN fails too.
            if !(0.0 < value && value < 1.0) {
                return Err(LabError::invalid(format!(
                    "splits.fractions.{key} must be between 0 and 1 (both excluded), found {}; \
                     it is the share of the groups that go to {key}, e.g. {example}",
                    repr::repr_float(value)
                )));
            }
        }
        if self.train + self.val > 1.0 {
            return Err(LabError::invalid(format!(
                "splits.fractions.train + splits.fractions.val must be at most 1 (test gets \
                 the rest), found {} + {}; lower one of them",
                repr::repr_float(self.train),
                repr::repr_float(self.val)
            )));
        }
        Ok(())
    }

    /// The split of one example (see the module documentation for the precedence).
    pub fn assign_one(&self, example: &Example) -> Split {
        if self.was_read(example) {
            Split::Train
        } else {
            self.declared(example)
                .unwrap_or_else(|| self.by_hash(&example.group))
        }
    }

    /// Whether someone read the example before the split: it must be trained on.
    fn was_read(&self, example: &Example) -> bool {
        self.read_before_split.contains(&example.id)
            || self.read_before_split.contains(&example.group)
    }

    /// The split the data itself asks for: the explicit one, else held-out for a held-out
    /// source or group.
    fn declared(&self, example: &Example) -> Option<Split> {
        example.split.or_else(|| {
            let held_out = self.held_out_sources.contains(&example.source)
                || self.held_out_groups.contains(&example.group);
            held_out.then_some(Split::HeldOut)
        })
    }

    /// The settings as the seal records them: `salt`, `fractions`, `held_out_sources`,
    /// `held_out_groups` and `read_before_split`, lists sorted.
    pub fn to_json(&self) -> Map<String, Value> {
        let list =
            |items: &BTreeSet<String>| Value::from(items.iter().cloned().collect::<Vec<_>>());
        let mut map = Map::new();
        map.insert("salt".into(), Value::from(self.salt.clone()));
        map.insert(
            "fractions".into(),
            json!({"train": self.train, "val": self.val}),
        );
        map.insert("held_out_sources".into(), list(&self.held_out_sources));
        map.insert("held_out_groups".into(), list(&self.held_out_groups));
        map.insert("read_before_split".into(), list(&self.read_before_split));
        map
    }

    /// Train, val or test by the group's hash.
    fn by_hash(&self, group: &str) -> Split {
        let u = group_hash(&self.salt, group);
        if u < self.train {
            Split::Train
        } else if u < self.train + self.val {
            Split::Val
        } else {
            Split::Test
        }
    }
}

/// A group's place in [0, 1): the first 8 bytes of SHA-256(`salt` + `group`), big-endian,
/// divided by 2^64 (as the reference computes it, so both tools split alike).
pub fn group_hash(salt: &str, group: &str) -> f64 {
    let mut hasher = Sha256::new();
    hasher.update(salt.as_bytes());
    hasher.update(group.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // Dividing by a power of two is exact, so this is the correctly rounded quotient that
    // Python's int / int gives.
    u64::from_be_bytes(first) as f64 / 2f64.powi(64)
}

/// The examples of each split, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Splits {
    /// Indexed by the position of the split in [`Split::ALL`].
    examples: [Vec<Example>; 4],
    /// The split of every example id.
    by_id: HashMap<String, Split>,
    /// See [`Splits::moved_by_read_before_split`].
    moved: Vec<String>,
}

impl Splits {
    /// The examples of `split`, in file order.
    pub fn get(&self, split: Split) -> &[Example] {
        &self.examples[split as usize]
    }

    /// The number of positive and of negative examples in `split`.
    pub fn counts(&self, split: Split) -> (usize, usize) {
        let examples = self.get(split);
        let positives = examples.iter().filter(|e| e.label).count();
        (positives, examples.len() - positives)
    }

    /// The split of the example with this id, if there is one.
    pub fn split_of(&self, id: &str) -> Option<Split> {
        self.by_id.get(id).copied()
    }

    /// The assignment as the seal records it, made by `plan`: the SHA-256 of the (id, split)
    /// pairs sorted by id (one `id<TAB>split` line each), so the same examples in the same
    /// splits give the same hash in any file order, and the examples per split.
    pub fn assignment(&self, plan: &SplitPlan) -> AssignmentRecord {
        let mut pairs: Vec<(&String, &Split)> = self.by_id.iter().collect();
        pairs.sort_unstable_by_key(|(id, _)| *id);
        let mut hasher = Sha256::new();
        for (id, split) in pairs {
            hasher.update(id.as_bytes());
            hasher.update(b"\t");
            hasher.update(split.name().as_bytes());
            hasher.update(b"\n");
        }
        AssignmentRecord {
            sha256: hex::encode(hasher.finalize()),
            counts: Split::ALL
                .iter()
                .map(|&split| (split.name().to_string(), self.get(split).len()))
                .collect(),
            settings: plan.to_json(),
        }
    }

    /// The ids, in file order, that `read_before_split` put in train although an explicit
    /// `split` or a held-out source or group placed them elsewhere. That override is the
    /// contract but easy to miss, so callers print a note naming them. (Examples it moves
    /// from a hashed val or test are its ordinary purpose and not listed.)
    pub fn moved_by_read_before_split(&self) -> &[String] {
        &self.moved
    }
}

/// Assigns every example its split (after validating the plan), and checks that no group
/// spans two splits.
pub fn assign(plan: &SplitPlan, examples: &[Example]) -> Result<Splits, LabError> {
    plan.validate()?;
    let mut splits = Splits {
        examples: Default::default(),
        by_id: HashMap::with_capacity(examples.len()),
        moved: Vec::new(),
    };
    // Per group, the first example seen in each of its splits: what the error names.
    let mut places: BTreeMap<&str, Vec<(Split, &str)>> = BTreeMap::new();
    for example in examples {
        let split = plan.assign_one(example);
        if plan.was_read(example) && plan.declared(example).is_some_and(|s| s != Split::Train) {
            splits.moved.push(example.id.clone());
        }
        let seen = places.entry(&example.group).or_default();
        if !seen.iter().any(|(s, _)| *s == split) {
            seen.push((split, &example.id));
        }
        splits.by_id.insert(example.id.clone(), split);
        splits.examples[split as usize].push(example.clone());
    }
    let leaking: Vec<(&str, Vec<(Split, &str)>)> = places
        .into_iter()
        .filter(|(_, seen)| seen.len() > 1)
        .collect();
    if !leaking.is_empty() {
        let mut shown: Vec<String> = leaking
            .iter()
            .take(5)
            .map(|(group, seen)| {
                let places: Vec<String> = seen
                    .iter()
                    .map(|(split, id)| format!("{} in {split}", repr::repr_str(id)))
                    .collect();
                format!("{} ({})", repr::repr_str(group), places.join(", "))
            })
            .collect();
        if leaking.len() > 5 {
            shown.push("...".to_string());
        }
        return Err(LabError::invalid(format!(
            "{} group(s) span several splits: {}. Examples of one group are near-duplicates and \
             must share a split: give all of the group's examples the same explicit `split`, or \
             list the group in `splits.read_before_split` to put all of it in train",
            leaking.len(),
            shown.join(", ")
        )));
    }
    Ok(splits)
}

/// The `splits:` section as written, before validation.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    #[serde(default)]
    fractions: Option<FractionsFile>,
    #[serde(default)]
    held_out_sources: Option<Vec<Text>>,
    #[serde(default)]
    held_out_groups: Option<Vec<Text>>,
    #[serde(default)]
    read_before_split: Option<Vec<Text>>,
    #[serde(default)]
    salt: Option<Text>,
}

/// `splits.fractions`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FractionsFile {
    #[serde(default = "default_train")]
    train: f64,
    #[serde(default = "default_val")]
    val: f64,
}

/// Serde's default for `fractions.train`.
fn default_train() -> f64 {
    DEFAULT_TRAIN
}

/// Serde's default for `fractions.val`.
fn default_val() -> f64 {
    DEFAULT_VAL
}

impl TryFrom<PlanFile> for SplitPlan {
    type Error = LabError;

    fn try_from(file: PlanFile) -> Result<Self, LabError> {
        let set = |items: Option<Vec<Text>>| -> BTreeSet<String> {
            items.unwrap_or_default().into_iter().map(|t| t.0).collect()
        };
        let (train, val) = file
            .fractions
            .map_or((DEFAULT_TRAIN, DEFAULT_VAL), |f| (f.train, f.val));
        let plan = SplitPlan {
            train,
            val,
            held_out_sources: set(file.held_out_sources),
            held_out_groups: set(file.held_out_groups),
            read_before_split: set(file.read_before_split),
            salt: file.salt.map(|t| t.0).unwrap_or_default(),
        };
        plan.validate()?;
        Ok(plan)
    }
}

/// A name in the `splits:` section: a string, or a number read as the digits written (YAML
/// reads `salt: 11` as a number; the reference uses `str()` of it).
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

/// Reads a [`Text`].
struct TextVisitor;

impl Visitor<'_> for TextVisitor {
    type Value = Text;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
        Ok(Text(text.to_string()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Text, E> {
        Ok(Text(text))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Text, E> {
        Ok(Text(n.to_string()))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Text, E> {
        Ok(Text(n.to_string()))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Text, E> {
        Ok(Text(repr::repr_float(x)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::world;
    use serde_json::json;

    fn ids(splits: &Splits, split: Split) -> Vec<&str> {
        splits.get(split).iter().map(|e| e.id.as_str()).collect()
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn error_text<T: std::fmt::Debug>(result: Result<T, LabError>) -> String {
        result.unwrap_err().to_string()
    }

    /// The 16 template groups of the pr-mismatch example (spec §7.1): name, positive, size,
    /// u with salt `pr-11`, and the split that gives with fractions 0.5 / 0.25.
    const PR_MISMATCH: [(&str, bool, usize, f64, Split); 16] = [
        ("rename-refactor", false, 3, 0.0565, Split::Train),
        ("cleanup-limit", true, 2, 0.0660, Split::Train),
        ("rename-logic", true, 3, 0.0850, Split::Train),
        ("access-change", false, 3, 0.2419, Split::Train),
        ("bump-ci-skip", true, 3, 0.3503, Split::Train),
        ("format-test-delete", true, 2, 0.4049, Split::Train),
        ("ci-job-gating", false, 3, 0.4290, Split::Train),
        ("dead-code-removal", false, 3, 0.4884, Split::Train),
        ("docs-validation", true, 3, 0.5329, Split::Val),
        ("dep-bump", false, 3, 0.5970, Split::Val),
        ("logging-access", true, 2, 0.6552, Split::Val),
        ("docs-typo", false, 2, 0.6973, Split::Val),
        ("typo-retry", true, 3, 0.8245, Split::Test),
        ("test-removal", false, 3, 0.8693, Split::Test),
        ("config-tuning", false, 3, 0.9078, Split::Test),
        ("ci-cache", false, 3, 0.9777, Split::Test),
    ];

    /// The 44 pr-mismatch examples as far as splitting goes: ids, labels and groups.
    fn pr_mismatch_examples() -> Vec<Example> {
        let mut examples = Vec::new();
        for (group, positive, size, _, _) in PR_MISMATCH {
            let class = if positive { "mismatch" } else { "consistent" };
            for k in 1..=size {
                let mut example = Example::new(format!("{class}-{group}-{k}"), positive, group);
                example.group = group.to_string();
                examples.push(example);
            }
        }
        examples
    }

    #[test]
    fn splits_are_group_aware_and_independent_of_order() {
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        let mut home: HashMap<&str, Split> = HashMap::new();
        for split in Split::ALL {
            for example in splits.get(split) {
                assert_eq!(*home.entry(&example.group).or_insert(split), split);
            }
        }
        for split in [Split::Train, Split::Val, Split::Test] {
            assert!(!splits.get(split).is_empty(), "{split} is empty");
        }
        let (positives, negatives) = Split::ALL
            .into_iter()
            .map(|s| splits.counts(s))
            .fold((0, 0), |(p, n), (dp, dn)| (p + dp, n + dn));
        assert_eq!((positives, negatives), (40, 80));
        // File order within a split (the world's ids ascend with the line).
        let train = ids(&splits, Split::Train);
        let mut sorted = train.clone();
        sorted.sort();
        assert_eq!(train, sorted);
        let mut reversed = examples.clone();
        reversed.reverse();
        let again = assign(&SplitPlan::default(), &reversed).unwrap();
        for example in &examples {
            assert_eq!(splits.split_of(&example.id), again.split_of(&example.id));
        }
        assert_eq!(splits.split_of("nobody"), None);
    }

    #[test]
    fn salt_changes_the_train_set() {
        let examples = world::examples(120);
        let plain = world::default_splits(&examples);
        let salted = SplitPlan {
            salt: "another".to_string(),
            ..SplitPlan::default()
        };
        let salted = assign(&salted, &examples).unwrap();
        assert_ne!(ids(&plain, Split::Train), ids(&salted, Split::Train));
    }

    #[test]
    fn held_out_sources_and_groups_go_to_held_out() {
        let examples = world::examples(120);
        let plan = SplitPlan {
            held_out_sources: set(&["src-b"]),
            held_out_groups: set(&["g0"]),
            ..SplitPlan::default()
        };
        let splits = assign(&plan, &examples).unwrap();
        let mut expected = vec!["ex000".to_string(), "ex001".to_string()];
        expected.extend((108..120).map(|i| format!("ex{i}")));
        assert_eq!(ids(&splits, Split::HeldOut), expected);
        assert!(splits.moved_by_read_before_split().is_empty());
    }

    #[test]
    fn read_before_split_by_group_beats_a_held_out_source() {
        let examples = world::examples(120);
        let plan = SplitPlan {
            held_out_sources: set(&["src-b"]),
            read_before_split: set(&["g55"]),
            ..SplitPlan::default()
        };
        let splits = assign(&plan, &examples).unwrap();
        assert_eq!(splits.split_of("ex110"), Some(Split::Train));
        assert_eq!(splits.split_of("ex111"), Some(Split::Train));
        assert_eq!(splits.split_of("ex112"), Some(Split::HeldOut));
        // The override is the contract, and it is reported so that callers can say so.
        assert_eq!(splits.moved_by_read_before_split(), ["ex110", "ex111"]);
    }

    #[test]
    fn explicit_split_wins_and_unknown_split_names_are_rejected() {
        let mut examples = world::examples(120);
        // Group g1 (ex002, ex003), and a src-b group that would be held out.
        for i in [2, 3] {
            examples[i].split = Some(Split::HeldOut);
        }
        for i in [108, 109] {
            examples[i].split = Some(Split::Val);
        }
        let plan = SplitPlan {
            held_out_sources: set(&["src-b"]),
            ..SplitPlan::default()
        };
        let splits = assign(&plan, &examples).unwrap();
        assert_eq!(splits.split_of("ex002"), Some(Split::HeldOut));
        assert_eq!(splits.split_of("ex003"), Some(Split::HeldOut));
        assert_eq!(splits.split_of("ex108"), Some(Split::Val));
        // read_before_split (by id) overrides an explicit split too, and says so.
        let read = SplitPlan {
            read_before_split: set(&["ex108", "ex109"]),
            ..plan
        };
        let splits = assign(&read, &examples).unwrap();
        assert_eq!(splits.split_of("ex108"), Some(Split::Train));
        assert_eq!(splits.moved_by_read_before_split(), ["ex108", "ex109"]);
        let record = json!({"id": "a", "label": 1, "split": "validation"});
        let error = Example::from_record(record.as_object().unwrap(), &Default::default());
        assert!(
            error
                .unwrap_err()
                .to_string()
                .contains("unknown split 'validation'")
        );
        assert_eq!(Split::parse(" held-out "), Some(Split::HeldOut));
    }

    #[test]
    fn a_group_straddling_explicit_splits_is_an_error_naming_both_examples() {
        let mut examples = world::examples(120);
        examples[2].split = Some(Split::Test);
        examples[3].split = Some(Split::Val);
        let error = error_text(assign(&SplitPlan::default(), &examples));
        assert!(error.contains("1 group(s) span several splits"), "{error}");
        assert!(
            error.contains("'g1' ('ex002' in test, 'ex003' in val)"),
            "{error}"
        );
        assert!(error.contains("explicit `split`"), "{error}");
        assert!(error.contains("read_before_split"), "{error}");
        // Reading one member by id splits its group from the rest just the same.
        let examples = world::examples(120);
        let home = world::default_splits(&examples).split_of("ex001");
        assert_eq!(home, Some(Split::Test));
        let read = SplitPlan {
            read_before_split: set(&["ex000"]),
            ..SplitPlan::default()
        };
        let error = error_text(assign(&read, &examples));
        assert!(
            error.contains("'g0' ('ex000' in train, 'ex001' in test)"),
            "{error}"
        );
    }

    #[test]
    fn plan_from_config_reads_fractions_held_out_sources_and_salt_and_rejects_invalid_fractions() {
        let plan: SplitPlan = serde_json::from_value(json!({
            "fractions": {"train": 0.6, "val": 0.2},
            "held_out_sources": ["src-b"],
            "salt": "s1",
        }))
        .unwrap();
        let expected = SplitPlan {
            train: 0.6,
            val: 0.2,
            held_out_sources: set(&["src-b"]),
            salt: "s1".to_string(),
            ..SplitPlan::default()
        };
        assert_eq!(plan, expected);
        let numeric: SplitPlan = serde_json::from_value(json!({"salt": 11})).unwrap();
        assert_eq!(numeric.salt, "11");
        assert_eq!(numeric.train, 0.5);
        let empty: SplitPlan = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty, SplitPlan::default());
        let too_much =
            serde_json::from_value::<SplitPlan>(json!({"fractions": {"train": 0.8, "val": 0.5}}));
        let message = too_much.unwrap_err().to_string();
        assert!(
            message.contains("at most 1") && message.contains("0.8 + 0.5"),
            "{message}"
        );
        let typo = serde_json::from_value::<SplitPlan>(json!({"held_out_source": ["src-b"]}));
        assert!(typo.unwrap_err().to_string().contains("unknown field"));
        let whole = SplitPlan {
            train: 1.0,
            ..SplitPlan::default()
        };
        let message = error_text(whole.validate());
        assert!(message.contains("splits.fractions.train must be between 0 and 1"));
        let nan = SplitPlan {
            val: f64::NAN,
            ..SplitPlan::default()
        };
        assert!(error_text(assign(&nan, &[])).contains("splits.fractions.val"));
    }

    #[test]
    fn pr_mismatch_group_hashes_match_the_conformance_table() {
        let plan = SplitPlan {
            salt: "pr-11".to_string(),
            ..SplitPlan::default()
        };
        for (group, _, _, u, split) in PR_MISMATCH {
            let hash = group_hash("pr-11", group);
            assert!((hash - u).abs() <= 0.00005, "{group}: {hash} is not {u}");
            assert_eq!(plan.by_hash(group), split, "{group}");
        }
        let splits = assign(&plan, &pr_mismatch_examples()).unwrap();
        assert_eq!(splits.counts(Split::Train), (10, 12));
        assert_eq!(splits.counts(Split::Val), (5, 5));
        assert_eq!(splits.counts(Split::Test), (3, 9));
        assert_eq!(splits.counts(Split::HeldOut), (0, 0));
    }

    #[test]
    fn default_salt_would_leave_pr_mismatch_validation_without_positives() {
        let splits = assign(&SplitPlan::default(), &pr_mismatch_examples()).unwrap();
        assert_eq!(splits.counts(Split::Train), (10, 8));
        assert_eq!(splits.counts(Split::Val), (0, 6));
        assert_eq!(splits.counts(Split::Test), (8, 12));
    }
}
