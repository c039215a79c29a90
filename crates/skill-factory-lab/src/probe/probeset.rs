//! The probe set: the artifact classifier mode trains and ships.
//!
//! Where skill mode trains one SKILL.md text, classifier mode trains a probe set: compiled
//! yes/no questions, a [`ScoreExpr`] over their answers, a threshold (flag at or above it;
//! `null` means "fit it on train"), the state budget (examples longer than it are skipped,
//! never truncated) and the model the threshold was measured on.
//!
//! Its content hash (`sha256`) covers exactly what decides a verdict, so renaming a probe set
//! or editing its calibration notes keeps parity with a shipped copy while changing one word
//! of a question breaks it; a file whose content no longer matches its stated hash is refused.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::Path;

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use skill_factory_llm::systemone::Question;
use skill_factory_pycompat::{json, repr};

use crate::LabError;
use crate::files::{read_json, write_atomic};
use crate::probe::question::{Bank, shown};
use crate::probe::score::ScoreExpr;

/// The model a probe set is measured on unless it says otherwise.
pub const DEFAULT_MODEL: &str = "jev-latest";

/// Characters of example text sent per request unless the probe set says otherwise.
pub const DEFAULT_STATE_BUDGET: usize = 96_000;

/// The name of a probe set whose file gives none.
pub const DEFAULT_NAME: &str = "probeset";

/// Every key of a probe set file, in the order it is saved.
const KEYS: &[&str] = &[
    "name",
    "model",
    "pinned_version",
    "state_budget",
    "frames",
    "questions",
    "score",
    "threshold",
    "calibration",
    "sha256",
];

/// Questions, a score over their answers, a threshold, and the settings they were measured
/// with. Build one with [`ProbeSet::new`] or [`ProbeSet::from_json`]; after changing fields
/// by hand, [`ProbeSet::validate`] checks it again.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSet {
    /// A label for reports and exports (not part of the hash).
    pub name: String,
    /// The model the threshold was measured on, as requested (`jev-latest`).
    pub model: String,
    /// The version that actually answered (`jev-1.13.0`), if known (not part of the hash).
    pub pinned_version: Option<String>,
    /// The longest state sent, in characters; longer examples are skipped.
    pub state_budget: usize,
    /// The questions. It may hold questions the score does not read, kept for policies.
    pub bank: Bank,
    /// How the answers combine into one number.
    pub score: ScoreExpr,
    /// Flag when the score is at least this; `None` until fitted on train.
    pub threshold: Option<f64>,
    /// Notes on how the threshold was fitted (budget, split, rates); not part of the hash.
    pub calibration: Map<String, Value>,
}

impl ProbeSet {
    /// A validated probe set with the default model and state budget, no pinned version and
    /// no calibration notes.
    pub fn new(
        name: impl Into<String>,
        bank: Bank,
        score: ScoreExpr,
        threshold: Option<f64>,
    ) -> Result<ProbeSet, LabError> {
        let probeset = ProbeSet {
            name: name.into(),
            model: DEFAULT_MODEL.to_owned(),
            pinned_version: None,
            state_budget: DEFAULT_STATE_BUDGET,
            bank,
            score,
            threshold,
            calibration: Map::new(),
        };
        probeset.validate()?;
        Ok(probeset)
    }

    /// Checks the bank, that the score is well formed and reads only questions of the bank,
    /// that the state budget is at least 1 and that the threshold is finite.
    pub fn validate(&self) -> Result<(), LabError> {
        self.bank.validate()?;
        // A hand-built expression gets the checks a loaded one had (non-empty lists).
        ScoreExpr::parse(&self.score.to_json()).map_err(|e| e.within("score"))?;
        let unknown: Vec<String> = self
            .score
            .referenced()
            .into_iter()
            .filter(|id| !self.bank.contains(id))
            .collect();
        if !unknown.is_empty() {
            return Err(LabError::invalid(format!(
                "score reads questions not in the probe set: {}; add them under \"questions\" \
                 or take them out of the score",
                repr::repr_str_list(&unknown)
            )));
        }
        if self.state_budget < 1 {
            return Err(LabError::invalid(format!(
                "state_budget must be >= 1 (the characters of example text sent), got {}",
                self.state_budget
            )));
        }
        if let Some(threshold) = self.threshold
            && !threshold.is_finite()
        {
            return Err(LabError::invalid(format!(
                "threshold must be a finite number or null (fit on train), got {threshold}"
            )));
        }
        Ok(())
    }

    /// The content hash: SHA-256 (64 hex) of the canonical JSON (keys sorted, no spaces,
    /// non-ASCII raw, numbers as Python writes them) of `{"questions": {id: [instructions,
    /// true, false]}, "score", "threshold", "model", "state_budget"}`, questions compiled and
    /// the threshold always a float. Equal to the reference's `content_hash()`.
    ///
    /// A question that does not compile (only possible in a probe set that fails
    /// [`ProbeSet::validate`]) is hashed as its spec, so the hash stays defined.
    pub fn sha256(&self) -> String {
        let questions: Map<String, Value> = self
            .bank
            .specs
            .iter()
            .map(|(id, spec)| {
                let hashed = match spec.compile(&self.bank.frames) {
                    Ok(q) => Value::from(vec![q.instructions, q.if_true, q.if_false]),
                    Err(_) => spec.to_json(),
                };
                (id.clone(), hashed)
            })
            .collect();
        let mut payload = Map::new();
        payload.insert("questions".into(), Value::Object(questions));
        payload.insert("score".into(), self.score.to_json());
        payload.insert("threshold".into(), threshold_json(self.threshold));
        payload.insert("model".into(), Value::String(self.model.clone()));
        payload.insert("state_budget".into(), Value::from(self.state_budget));
        hex::encode(Sha256::digest(
            json::dumps_canonical(&Value::Object(payload)).as_bytes(),
        ))
    }

    /// The first 12 hex characters of [`ProbeSet::sha256`], as reports and the seal show it.
    pub fn hash12(&self) -> String {
        let mut hash = self.sha256();
        hash.truncate(12);
        hash
    }

    /// The score of one example's answers, `None` when a question it reads is unanswered.
    pub fn score_of<S: BuildHasher>(&self, answers: &HashMap<String, f64, S>) -> Option<f64> {
        self.score.eval(answers)
    }

    /// The verdict: the score is defined, a threshold is set, and the score reaches it.
    pub fn flags<S: BuildHasher>(&self, answers: &HashMap<String, f64, S>) -> bool {
        match (self.score_of(answers), self.threshold) {
            (Some(score), Some(threshold)) => score >= threshold,
            _ => false,
        }
    }

    /// The question ids the score reads, in first-use order.
    pub fn score_ids(&self) -> Vec<String> {
        self.score.referenced()
    }

    /// Every question of the bank compiled, in bank order (the score's and the kept ones).
    pub fn compiled_questions(&self) -> Result<Vec<(String, Question)>, LabError> {
        self.bank.compiled()
    }

    /// Reads a probe set; `origin` (the file, or where in a config it came from) starts every
    /// error message.
    ///
    /// `questions` and `score` are required; `name` defaults to `probeset`, `model` to
    /// `jev-latest`, `state_budget` to 96,000, `threshold` and `pinned_version` to null and
    /// `calibration` to `{}`. A non-empty `sha256` must equal the recomputed hash: otherwise
    /// the file was edited after it was measured, and is refused. Any other key is an error
    /// naming the closest valid one: the reference drops it, so a misspelt `threshold` would
    /// silently leave the threshold to be fitted again.
    pub fn from_json(value: &Value, origin: &str) -> Result<ProbeSet, LabError> {
        let fail = |message: String| LabError::invalid(format!("{origin}: {message}"));
        let Value::Object(data) = value else {
            return Err(fail(format!(
                "a probe set is a JSON object with \"questions\" and \"score\", not {}",
                shown(value)
            )));
        };
        if let Some(key) = data.keys().find(|key| !KEYS.contains(&key.as_str())) {
            let hint = match skill_factory_config::closest(key, KEYS) {
                Some(near) => format!("did you mean '{near}'?"),
                None => format!("a probe set has {}", KEYS.join(", ")),
            };
            return Err(fail(format!(
                "unknown key '{key}' ({hint}): a misspelt key would be dropped silently (a \
                 misspelt threshold would be fitted again), so fix or remove it"
            )));
        }
        for key in ["questions", "score"] {
            if !data.contains_key(key) {
                return Err(fail(format!(
                    "probe set is missing '{key}': a probe set needs \"questions\" (id -> \
                     question) and \"score\" (an expression over their ids)"
                )));
            }
        }
        let questions = match data.get("questions") {
            Some(Value::Object(questions)) => questions.clone(),
            other => {
                return Err(fail(format!(
                    "\"questions\" must be an object of id -> question, not {}",
                    other.map_or_else(|| "nothing".to_owned(), shown)
                )));
            }
        };
        let mut bank_json = Map::new();
        bank_json.insert(
            "frames".into(),
            data.get("frames").cloned().unwrap_or(Value::Null),
        );
        bank_json.insert("questions".into(), Value::Object(questions));
        let bank = Bank::from_json(&Value::Object(bank_json)).map_err(|e| e.within(origin))?;
        let score = ScoreExpr::parse(data.get("score").unwrap_or(&Value::Null))
            .map_err(|e| e.within("score").within(origin))?;
        let probeset = ProbeSet {
            name: text_or(data, "name", DEFAULT_NAME),
            model: text_or(data, "model", DEFAULT_MODEL),
            pinned_version: optional_text(data, "pinned_version").map_err(|e| e.within(origin))?,
            state_budget: state_budget(data).map_err(|e| e.within(origin))?,
            bank,
            score,
            threshold: threshold(data).map_err(|e| e.within(origin))?,
            calibration: match data.get("calibration") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(notes)) => notes.clone(),
                Some(other) => {
                    return Err(fail(format!(
                        "\"calibration\" must be an object of notes, not {}",
                        shown(other)
                    )));
                }
            },
        };
        probeset.validate().map_err(|e| e.within(origin))?;
        match data.get("sha256") {
            None | Some(Value::Null) => {}
            Some(Value::String(stated)) if stated.is_empty() || *stated == probeset.sha256() => {}
            Some(Value::String(_)) => {
                return Err(fail(
                    "probe set content does not match its sha256: it was edited after it was \
                     measured. Measure it again (skill-factory optimize, or lab select --out), \
                     or delete the \"sha256\" field to accept the hand edit"
                        .to_owned(),
                ));
            }
            Some(other) => {
                return Err(fail(format!(
                    "\"sha256\" must be the hex content hash written on save, not {}; delete \
                     the field to accept the file as it is",
                    shown(other)
                )));
            }
        }
        Ok(probeset)
    }

    /// Reads a probe set file. A missing file is [`LabError::NotFound`]; bad JSON and invalid
    /// content are [`LabError::Invalid`], naming the file.
    pub fn load(path: &Path) -> Result<ProbeSet, LabError> {
        let value = read_json(path, ": check the path of the probe set")?;
        ProbeSet::from_json(&value, &path.display().to_string())
    }

    /// The probe set as saved, keys in the order `name, model, pinned_version, state_budget,
    /// frames, questions, score, threshold, calibration, sha256`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::String(self.name.clone()));
        map.insert("model".into(), Value::String(self.model.clone()));
        map.insert(
            "pinned_version".into(),
            self.pinned_version
                .clone()
                .map_or(Value::Null, Value::String),
        );
        map.insert("state_budget".into(), Value::from(self.state_budget));
        if let Value::Object(bank) = self.bank.to_json() {
            map.extend(bank);
        }
        map.insert("score".into(), self.score.to_json());
        map.insert("threshold".into(), threshold_json(self.threshold));
        map.insert(
            "calibration".into(),
            Value::Object(self.calibration.clone()),
        );
        map.insert("sha256".into(), Value::String(self.sha256()));
        Value::Object(map)
    }

    /// Writes the probe set as Python's `json.dumps(indent=1, ensure_ascii=False)` plus a
    /// newline, atomically, creating missing directories.
    pub fn save(&self, path: &Path) -> Result<(), LabError> {
        write_atomic(path, &(json::dumps_indent(&self.to_json(), 1) + "\n"))
    }
}

/// The threshold as JSON: always a float (`1.0`, never `1`), or null.
fn threshold_json(threshold: Option<f64>) -> Value {
    threshold
        .and_then(Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A text field, Python-`str()`-ed if it is not a string; absent or null gives `default`.
fn text_or(data: &Map<String, Value>, key: &str, default: &str) -> String {
    match data.get(key) {
        None | Some(Value::Null) => default.to_owned(),
        Some(value) => repr::str_json(value),
    }
}

/// `pinned_version`: a string or null.
fn optional_text(data: &Map<String, Value>, key: &str) -> Result<Option<String>, LabError> {
    match data.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(LabError::invalid(format!(
            "\"{key}\" must be the model version that answered (e.g. \"jev-1.13.0\") or null, \
             not {}",
            shown(other)
        ))),
    }
}

/// `state_budget`: a whole number of characters, at least 1 (checked by `validate`).
fn state_budget(data: &Map<String, Value>) -> Result<usize, LabError> {
    let value = match data.get("state_budget") {
        None | Some(Value::Null) => return Ok(DEFAULT_STATE_BUDGET),
        Some(value) => value,
    };
    let whole = match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            // `24000.0` is read as Python's `int()` reads it.
            n.as_f64()
                .filter(|x| x.fract() == 0.0 && *x >= 0.0 && *x < 2f64.powi(63))
                .map(|x| x as u64)
        }),
        _ => None,
    };
    match whole.and_then(|n| usize::try_from(n).ok()) {
        Some(budget) => Ok(budget),
        None => Err(LabError::invalid(format!(
            "state_budget must be >= 1 (a whole number of characters, e.g. 24000), got {}",
            shown(value)
        ))),
    }
}

/// `threshold`: a number (read as a float) or null.
fn threshold(data: &Map<String, Value>) -> Result<Option<f64>, LabError> {
    match data.get("threshold") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(LabError::invalid(format!(
            "\"threshold\" must be a number (flag at or above it) or null (fit it on train), \
             not {}",
            shown(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::question::{QuestionSpec, test_bank};
    use serde_json::json;
    use std::path::PathBuf;

    /// The §6.0 seed: the capability question alone, threshold null, model `fake-jev`.
    fn seed() -> ProbeSet {
        let bank = test_bank()
            .subset(&["capability".to_owned()])
            .expect("subset");
        let mut probeset =
            ProbeSet::new("seed", bank, ScoreExpr::Question("capability".into()), None)
                .expect("valid");
        probeset.model = "fake-jev".into();
        probeset.state_budget = 10_000;
        probeset
    }

    fn mean_probeset(threshold: Option<f64>) -> ProbeSet {
        let score = ScoreExpr::parse(&json!({"mean": ["intent@reviewer", "lure"]})).expect("ok");
        ProbeSet::new("intent", test_bank(), score, threshold).expect("valid")
    }

    fn answers(pairs: &[(&str, f64)]) -> HashMap<String, f64> {
        pairs.iter().map(|(id, p)| ((*id).to_owned(), *p)).collect()
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pr-mismatch-vectors")
            .join(name)
    }

    #[test]
    fn probe_set_requires_score_ids_in_the_bank_and_a_positive_state_budget() {
        let score = ScoreExpr::parse(&json!({"max": ["capability", "ghost"]})).expect("ok");
        let message = ProbeSet::new("p", test_bank(), score, None).expect_err("ghost");
        assert!(
            message
                .to_string()
                .contains("not in the probe set: ['ghost']"),
            "{message}"
        );
        let mut probeset = seed();
        probeset.state_budget = 0;
        let message = probeset.validate().expect_err("budget 0");
        assert!(
            message.to_string().contains("state_budget must be >= 1"),
            "{message}"
        );
        let mut value = seed().to_json();
        value["state_budget"] = json!(0);
        value["sha256"] = Value::Null;
        let message = ProbeSet::from_json(&value, "p.json").expect_err("budget 0");
        assert!(
            message
                .to_string()
                .contains("p.json: state_budget must be >= 1")
        );
    }

    #[test]
    fn flags_above_threshold_not_below_and_never_without_threshold() {
        let p = answers(&[("intent@reviewer", 0.9), ("lure", 0.5)]);
        let low = answers(&[("intent@reviewer", 0.1), ("lure", 0.1)]);
        let probeset = mean_probeset(Some(0.7));
        assert_eq!(probeset.score_of(&p), Some(0.7));
        assert!(probeset.flags(&p), "at the threshold flags");
        assert!(!probeset.flags(&low));
        assert!(
            !probeset.flags(&answers(&[("intent@reviewer", 0.9)])),
            "no score"
        );
        assert!(!mean_probeset(None).flags(&p));
    }

    #[test]
    fn content_hash_ignores_name_and_calibration() {
        let probeset = mean_probeset(Some(0.5));
        let hash = probeset.sha256();
        assert_eq!(hash.len(), 64);
        assert_eq!(probeset.hash12(), hash[..12]);

        let mut renamed = probeset.clone();
        renamed.name = "another".into();
        renamed.calibration.insert("fpr_budget".into(), json!(0.01));
        renamed.pinned_version = Some("jev-1.13.0".into());
        assert_eq!(renamed.sha256(), hash);

        let mut merged = probeset.clone();
        assert!(merged.bank.merge(&test_bank()).expect("no-op").is_empty());
        assert_eq!(merged.sha256(), hash);

        // Moving text between frame and question keeps the compiled text, hence the hash.
        let mut moved = probeset.clone();
        moved.bank.specs.insert(
            "intent@reviewer".into(),
            QuestionSpec::Whole {
                instructions: "You review an item before it is used.\n\nDoes the item show \
                               bad intent?"
                    .into(),
                if_true: "Yes".into(),
                if_false: "No".into(),
            },
        );
        assert_eq!(moved.sha256(), hash);

        let mut reworded = probeset.clone();
        reworded.bank.frames.insert(
            "reviewer".into(),
            "You review an item before it is shipped.".into(),
        );
        assert_ne!(reworded.sha256(), hash);
        let mut rethresholded = probeset.clone();
        rethresholded.threshold = Some(0.6);
        assert_ne!(rethresholded.sha256(), hash);
        let mut remodelled = probeset.clone();
        remodelled.model = "jev-1.13.0".into();
        assert_ne!(remodelled.sha256(), hash);
    }

    #[test]
    fn editing_the_threshold_in_the_file_is_refused_as_edited_after_measuring() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("probeset.json");
        let mut probeset = mean_probeset(Some(0.5));
        probeset.pinned_version = Some("jev-1.13.0".into());
        probeset.save(&path).expect("saved");
        let loaded = ProbeSet::load(&path).expect("loads");
        assert_eq!(loaded.sha256(), probeset.sha256());
        assert_eq!(loaded.pinned_version.as_deref(), Some("jev-1.13.0"));
        assert_eq!(loaded, probeset);

        let text = std::fs::read_to_string(&path).expect("readable");
        let edited = text.replace("\"threshold\": 0.5", "\"threshold\": 0.9");
        assert_ne!(edited, text);
        std::fs::write(&path, &edited).expect("written");
        let message = ProbeSet::load(&path).expect_err("edited").to_string();
        assert!(
            message.contains("edited after it was measured"),
            "{message}"
        );
        assert!(
            message.contains("probeset.json") && message.contains("delete"),
            "{message}"
        );

        let mut value: Value = serde_json::from_str(&edited).expect("JSON");
        if let Value::Object(map) = &mut value {
            map.remove("sha256");
        }
        let accepted = ProbeSet::from_json(&value, "edited").expect("accepted");
        assert_eq!(accepted.threshold, Some(0.9));
    }

    #[test]
    fn probe_set_load_errors_name_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing.json");
        assert!(matches!(
            ProbeSet::load(&missing),
            Err(LabError::NotFound { .. })
        ));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"questions\": ").expect("written");
        let message = ProbeSet::load(&bad).expect_err("bad JSON").to_string();
        assert!(message.contains("bad.json: invalid JSON"), "{message}");
        let mut value = seed().to_json();
        if let Value::Object(map) = &mut value {
            map.remove("score");
        }
        std::fs::write(&bad, value.to_string()).expect("written");
        let message = ProbeSet::load(&bad).expect_err("no score").to_string();
        assert!(
            message.contains("bad.json: probe set is missing 'score'"),
            "{message}"
        );
    }

    #[test]
    fn saved_layout_follows_the_reference_key_order_with_indent_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("seed.json");
        seed().save(&path).expect("saved");
        let text = std::fs::read_to_string(&path).expect("readable");
        let expected = format!(
            "{{\n \"name\": \"seed\",\n \"model\": \"fake-jev\",\n \"pinned_version\": null,\n \
             \"state_budget\": 10000,\n \"frames\": {{}},\n \"questions\": {{\n  \"capability\": \
             {{\n   \"instructions\": \"Does this item have the capability?\",\n   \"true\": \
             \"Yes\",\n   \"false\": \"No\"\n  }}\n }},\n \"score\": \"capability\",\n \
             \"threshold\": null,\n \"calibration\": {{}},\n \"sha256\": \"{}\"\n}}\n",
            seed().sha256()
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn an_integer_threshold_is_a_float_and_score_integers_stay_integers() {
        let value = json!({
            "questions": {"a": {"instructions": "Is it?", "true": "Y", "false": "N"}},
            "score": {"scale": ["a", 2]},
            "threshold": 1,
        });
        let probeset = ProbeSet::from_json(&value, "int.json").expect("loads");
        assert_eq!(probeset.threshold, Some(1.0));
        let saved = json::dumps_canonical(&probeset.to_json());
        assert!(saved.contains(r#""threshold":1.0"#), "{saved}");
        assert!(saved.contains(r#""score":{"scale":["a",2]}"#), "{saved}");
        let mut as_float = value.clone();
        as_float["threshold"] = json!(1.0);
        let same = ProbeSet::from_json(&as_float, "float.json").expect("loads");
        assert_eq!(same.sha256(), probeset.sha256());
        // The defaults of a file that names nothing else.
        assert_eq!(probeset.name, DEFAULT_NAME);
        assert_eq!(probeset.model, DEFAULT_MODEL);
        assert_eq!(probeset.state_budget, DEFAULT_STATE_BUDGET);
    }

    #[test]
    fn pr_mismatch_fixtures_are_the_reference_files() {
        for (name, expected) in [
            (
                "seed_probeset.json",
                "f69d8cf9e7aa5e98e1677fba1a085f4abe9582e2bc5397ea7c71c01b203530cb",
            ),
            (
                "candidates.json",
                "7b470e4efc8b787dc402c55c098ade588f539ac8fbcaf325f692c03365cbcb41",
            ),
        ] {
            let bytes = std::fs::read(fixture(name)).expect("fixture");
            assert_eq!(hex::encode(Sha256::digest(&bytes)), expected, "{name}");
        }
    }

    #[test]
    fn pr_mismatch_question_hashes_match_the_conformance_vectors() {
        let seed = ProbeSet::load(&fixture("seed_probeset.json")).expect("seed");
        let mut pool = seed.bank.clone();
        let candidates = Bank::load(&fixture("candidates.json")).expect("candidates");
        assert_eq!(pool.merge(&candidates).expect("merges").len(), 6);
        let hashes: Vec<(String, String)> = pool
            .compiled()
            .expect("compiles")
            .into_iter()
            .map(|(id, question)| (id, question.hash()))
            .collect();
        let expected = [
            ("touches_ci", "1044d893421cf093e161400e"),
            ("deletes_code", "4852a1e6432c108d7276012e"),
            ("touches_access", "5b847cc226616cd0624a0b5f"),
            ("changes_values", "b2002f693387a72935ec9015"),
            ("undisclosed_change@reviewer", "1ebbba0c992a34625530e3a6"),
            ("undisclosed_change@auditor", "7f125123c562951813e6b445"),
            ("hidden_behavior@reviewer", "de18b4cd85e94690749a803a"),
            ("hidden_behavior@auditor", "a00e4bd759cd274254746a16"),
            ("reviewer_surprise@reviewer", "5e85402a9f474445d9ea1004"),
            ("silent_weakening@auditor", "4ae24b6fa084fd46226d1c7d"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(id, hash)| ((*id).to_owned(), (*hash).to_owned()))
            .collect();
        assert_eq!(hashes, expected);
    }

    #[test]
    fn pr_mismatch_seed_content_hash_matches_the_conformance_vector() {
        let seed = ProbeSet::load(&fixture("seed_probeset.json")).expect("seed");
        assert_eq!(
            (seed.name.as_str(), seed.model.as_str(), seed.state_budget),
            ("pr-mismatch", "jev-latest", 24_000)
        );
        assert_eq!(seed.threshold, None);
        assert_eq!(
            seed.score_ids(),
            [
                "touches_ci",
                "deletes_code",
                "touches_access",
                "changes_values"
            ]
        );
        assert_eq!(
            seed.sha256(),
            "f2738fd1d23ad5b3bea510682a9d00a886bd3e17251bd0472fffa83e9e135fa1"
        );
        // Saved and reloaded (now with its sha256 and indent-1 layout), it is the same.
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("seed.json");
        seed.save(&path).expect("saved");
        assert_eq!(
            ProbeSet::load(&path).expect("reloads").sha256(),
            seed.sha256()
        );
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_closest_valid_one() {
        let mut value = seed().to_json();
        value["thresold"] = json!(0.5);
        let message = ProbeSet::from_json(&value, "p.json")
            .expect_err("thresold")
            .to_string();
        assert!(
            message.starts_with("p.json: unknown key 'thresold' (did you mean 'threshold'?)"),
            "{message}"
        );
        let mut value = seed().to_json();
        value["zzz"] = json!(1);
        let message = ProbeSet::from_json(&value, "p.json")
            .expect_err("zzz")
            .to_string();
        assert!(
            message.contains("unknown key 'zzz' (a probe set has name, model,"),
            "{message}"
        );
        for key in ["Score", "state-budget"] {
            let mut value = seed().to_json();
            let moved = value
                .as_object_mut()
                .unwrap()
                .remove(&key.to_lowercase().replace('-', "_"))
                .unwrap();
            value[key] = moved;
            let message = ProbeSet::from_json(&value, "p.json")
                .expect_err(key)
                .to_string();
            assert!(
                message.contains(&format!("unknown key '{key}'")),
                "{message}"
            );
        }
    }
}
