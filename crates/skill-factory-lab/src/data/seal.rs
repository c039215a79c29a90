//! The freeze record that guards the sealed splits (test and held-out): `<workspace>/seal.json`.
//!
//! `lab freeze` records the probe set to report (its content hash) and the baseline it is
//! compared with; `lab report`, the only reader of sealed splits, opens them through
//! [`Seal::open`], which refuses any other pair and logs every opening. Refreezing another pair
//! after an opening needs `--force` and leaves the seal *contaminated*: the report then says
//! that the sealed numbers were seen under an earlier configuration.
//!
//! The file is a local, trust-based log (deleting it unseals everything); it guards the CLI's
//! paths, not this library's API. Its layout is the reference's:
//! `{"frozen": null | {hash, baseline, at, note}, "views": [{hash, baseline, at, splits}]}`,
//! indented by one space, with a trailing newline. (The reference escapes non-ASCII characters
//! of a note as `\uXXXX`; here they are written as they are, which reads back the same.)

use std::path::{Path, PathBuf};

use skill_factory_pycompat::json as pyjson;
use skill_factory_runfolder::workspace::{FrozenRecord, SealRecord, ViewRecord};

use crate::LabError;
use crate::data::split::Split;
use crate::files::write_atomic;

/// The file name of the seal inside a workspace.
const FILE_NAME: &str = "seal.json";

/// The seal of one workspace, as loaded from (and saved to) its `seal.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Seal {
    /// `<workspace>/seal.json`.
    path: PathBuf,
    /// The freeze, if there is one.
    frozen: Option<FrozenRecord>,
    /// Every opening, oldest first; the split names are checked at load.
    views: Vec<ViewRecord>,
}

impl Seal {
    /// Loads the seal of `workspace`; a missing file is a seal that was never frozen. A file
    /// that cannot be read as a seal is an error naming it: restoring it keeps the record,
    /// deleting it unseals.
    pub fn load(workspace: &Path) -> Result<Seal, LabError> {
        let path = workspace.join(FILE_NAME);
        let text = match skill_factory_io::input::read_text(&path, crate::files::WORKSPACE_FILE) {
            Ok(text) => text,
            Err(skill_factory_io::input::InputError::Missing { .. }) => {
                return Ok(Seal {
                    path,
                    frozen: None,
                    views: Vec::new(),
                });
            }
            Err(skill_factory_io::input::InputError::NotUtf8 { .. }) => {
                return Err(broken(&path, "it is not UTF-8 text"));
            }
            Err(error) => return Err(error.into()),
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|error| broken(&path, &error.to_string()))?;
        // serde reads a struct from an array too; a seal is only ever an object.
        if !value.is_object() {
            return Err(broken(&path, "it is not a JSON object"));
        }
        let record: SealRecord =
            serde_json::from_value(value).map_err(|error| broken(&path, &error.to_string()))?;
        let views = record.views.unwrap_or_default();
        if let Some(name) = views
            .iter()
            .flat_map(|view| &view.splits)
            .find(|name| Split::parse(name).is_none())
        {
            return Err(broken(&path, &format!("it names no split '{name}'")));
        }
        Ok(Seal {
            path,
            frozen: record.frozen,
            views,
        })
    }

    /// Records `hash` (and `baseline`) as the pair to report on the sealed splits, and saves.
    ///
    /// Refreezing the same pair is always allowed. Freezing another pair once the sealed
    /// splits have been opened is refused unless `force`: their numbers are then no longer
    /// unseen, which [`Seal::contaminated`] reports from then on.
    pub fn freeze(
        &mut self,
        hash: &str,
        baseline: Option<&str>,
        note: &str,
        force: bool,
    ) -> Result<(), LabError> {
        let changed = self
            .frozen
            .as_ref()
            .is_some_and(|f| f.hash != hash || f.baseline.as_deref() != baseline);
        if changed && !self.views.is_empty() && !force {
            return Err(LabError::Sealed(format!(
                "the sealed splits were already opened {} time(s) under another configuration \
                 (frozen {}); refreezing means their numbers are no longer unseen. Rerun \
                 `skill-factory lab freeze -c <config>` with --force to refreeze anyway, and \
                 every report will say so",
                self.views.len(),
                self.frozen.as_ref().map_or("", |f| short(&f.hash))
            )));
        }
        self.frozen = Some(FrozenRecord {
            hash: hash.to_string(),
            baseline: baseline.map(str::to_string),
            at: now(),
            note: note.to_string(),
        });
        self.save()
    }

    /// Logs an opening of the sealed splits among `splits` by the probe set `hash` (compared
    /// with `baseline`), saves, and returns how many openings there have been. When `splits`
    /// holds no sealed split nothing is checked or logged.
    ///
    /// Refused unless frozen, `hash` is the frozen hash, and `baseline` (if any) is the frozen
    /// hash or the frozen baseline: a report can show the frozen pair and nothing else.
    pub fn open(
        &mut self,
        hash: &str,
        splits: &[Split],
        baseline: Option<&str>,
    ) -> Result<usize, LabError> {
        let mut wanted: Vec<Split> = splits.iter().copied().filter(|s| s.is_sealed()).collect();
        // The reference logs split names sorted as strings: `held-out` before `test`.
        wanted.sort_by_key(|s| s.name());
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(self.views.len());
        }
        let names: Vec<&str> = wanted.iter().map(|s| s.name()).collect();
        let names = names.join(", ");
        let Some(frozen) = &self.frozen else {
            return Err(LabError::Sealed(format!(
                "{names} sealed: freeze the configuration first (skill-factory lab freeze -c \
                 <config>), then report"
            )));
        };
        if frozen.hash != hash {
            let refreeze = if self.views.is_empty() {
                "freeze it (skill-factory lab freeze -c <config> --probeset <it>)".to_string()
            } else {
                "freeze it with --force (skill-factory lab freeze -c <config> --probeset <it> \
                 --force; the sealed splits were already opened, so the report will say they \
                 are no longer unseen)"
                    .to_string()
            };
            return Err(LabError::Sealed(format!(
                "{names} sealed: this probe set ({}) is not the frozen one ({}); report the \
                 frozen probe set, or {refreeze}",
                short(hash),
                short(&frozen.hash)
            )));
        }
        if let Some(baseline) = baseline
            && baseline != frozen.hash
            && Some(baseline) != frozen.baseline.as_deref()
        {
            return Err(LabError::Sealed(format!(
                "{names} sealed: the baseline ({}) is not the one recorded at freeze ({}); \
                 compare with the frozen baseline, or refreeze with --baseline \
                 (skill-factory lab freeze -c <config> --baseline <probe set>) to compare \
                 against it",
                short(baseline),
                frozen.baseline.as_deref().map_or("none", short)
            )));
        }
        self.views.push(ViewRecord {
            hash: hash.to_string(),
            baseline: baseline.map(str::to_string),
            at: now(),
            splits: wanted.iter().map(|s| s.name().to_string()).collect(),
        });
        self.save()?;
        Ok(self.views.len())
    }

    /// Whether a freeze is recorded.
    pub fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// The recorded freeze, if any.
    pub fn frozen(&self) -> Option<&FrozenRecord> {
        self.frozen.as_ref()
    }

    /// Every logged opening, oldest first.
    pub fn views(&self) -> &[ViewRecord] {
        &self.views
    }

    /// Whether the sealed splits were opened under a configuration other than the frozen
    /// one: a view of another probe set, or with a baseline that is neither the frozen hash
    /// nor the frozen baseline.
    pub fn contaminated(&self) -> bool {
        let Some(frozen) = &self.frozen else {
            return false;
        };
        self.views.iter().any(|view| {
            view.hash != frozen.hash
                || view.baseline.as_ref().is_some_and(|baseline| {
                    *baseline != frozen.hash && Some(baseline) != frozen.baseline.as_ref()
                })
        })
    }

    /// One line for `lab status` and reports: `not frozen: test and held-out splits are
    /// sealed`, or `frozen <at> as <hash12>; sealed splits opened N time(s)`, with a warning
    /// appended when contaminated.
    pub fn summary(&self) -> String {
        let Some(frozen) = &self.frozen else {
            return "not frozen: test and held-out splits are sealed".to_string();
        };
        let mut summary = format!(
            "frozen {} as {}; sealed splits opened {} time(s)",
            frozen.at,
            short(&frozen.hash),
            self.views.len()
        );
        if self.contaminated() {
            summary.push_str("; WARNING: sealed splits were opened under an earlier configuration");
        }
        summary
    }

    /// Writes `seal.json` atomically ([`Seal::freeze`] and [`Seal::open`] already do).
    pub fn save(&self) -> Result<(), LabError> {
        let record = SealRecord {
            frozen: self.frozen.clone(),
            views: Some(self.views.clone()),
        };
        let value = serde_json::to_value(&record).expect("a seal is plain data");
        let mut text = pyjson::dumps_indent(&value, 1);
        text.push('\n');
        write_atomic(&self.path, &text)
    }
}

/// Refuses `splits` if any is sealed: for the commands (`what`, e.g. `lab ask`) that must
/// never read test or held-out.
pub fn refuse_sealed(splits: &[Split], what: &str) -> Result<(), LabError> {
    let sealed: Vec<&str> = Split::ALL
        .into_iter()
        .filter(|s| s.is_sealed() && splits.contains(s))
        .map(Split::name)
        .collect();
    if sealed.is_empty() {
        return Ok(());
    }
    let (names, them) = if sealed.len() == 1 {
        (format!("the {} split", sealed[0]), "it")
    } else {
        (format!("the {} splits", sealed.join(" and ")), "them")
    };
    Err(LabError::Sealed(format!(
        "{what} cannot read {names}: test and held-out are sealed, and only `skill-factory lab \
         report` reads {them}, after `skill-factory lab freeze`; use train or val here"
    )))
}

/// The error for a `seal.json` that cannot be read as a seal.
fn broken(path: &Path, detail: &str) -> LabError {
    LabError::invalid(format!(
        "{}: not a valid seal file ({detail}); restore it from a backup, or delete it to \
         unseal (the freeze and every logged opening of test and held-out are then forgotten)",
        path.display()
    ))
}

/// The first 12 characters of a hash, as messages and summaries show it.
fn short(hash: &str) -> &str {
    hash.char_indices()
        .nth(12)
        .map_or(hash, |(end, _)| &hash[..end])
}

/// The current UTC time to the second, as the seal records it.
fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEALED: [Split; 2] = [Split::Test, Split::HeldOut];

    fn sealed_message<T: std::fmt::Debug>(result: Result<T, LabError>) -> String {
        match result {
            Err(LabError::Sealed(message)) => message,
            other => panic!("expected a sealed error, got {other:?}"),
        }
    }

    #[test]
    fn opening_train_or_val_is_free_and_sealed_splits_need_the_frozen_hash() {
        let dir = tempfile::tempdir().unwrap();
        let mut seal = Seal::load(dir.path()).unwrap();
        assert!(!seal.is_frozen());
        assert_eq!(
            seal.open("h1", &[Split::Train, Split::Val], None).unwrap(),
            0
        );
        assert!(!dir.path().join(FILE_NAME).exists());
        let unfrozen = sealed_message(seal.open("h1", &[Split::Test], None));
        assert!(
            unfrozen.contains("freeze") && unfrozen.starts_with("test sealed"),
            "{unfrozen}"
        );
        seal.freeze("h1", None, "", false).unwrap();
        assert_eq!(
            seal.open("h1", &[Split::Train, Split::Test, Split::HeldOut], None)
                .unwrap(),
            1
        );
        assert_eq!(seal.views()[0].splits, ["held-out", "test"]);
        let other = sealed_message(seal.open("h2", &SEALED, None));
        assert!(other.contains("not the frozen one"), "{other}");
        assert!(other.contains("--force"), "{other}");
        assert_eq!(Seal::load(dir.path()).unwrap().views().len(), 1);
    }

    #[test]
    fn refreezing_after_a_view_needs_force_and_marks_the_seal_contaminated() {
        let dir = tempfile::tempdir().unwrap();
        let mut seal = Seal::load(dir.path()).unwrap();
        seal.freeze("h1", None, "first", false).unwrap();
        seal.open("h1", &[Split::Test], None).unwrap();
        // The same pair again is no change.
        seal.freeze("h1", None, "again", false).unwrap();
        let refused = sealed_message(seal.freeze("h2", None, "", false));
        assert!(refused.contains("--force"), "{refused}");
        assert_eq!(seal.frozen().unwrap().hash, "h1");
        seal.freeze("h2", None, "forced", true).unwrap();
        let reloaded = Seal::load(dir.path()).unwrap();
        assert!(reloaded.contaminated());
        assert!(
            reloaded.summary().contains("WARNING"),
            "{}",
            reloaded.summary()
        );
        assert_eq!(reloaded.frozen().unwrap().hash, "h2");
        assert_eq!(reloaded.frozen().unwrap().note, "forced");
        assert_eq!(reloaded.views().len(), 1);
        assert_eq!(reloaded, seal);
    }

    #[test]
    fn summary_before_freezing_says_the_splits_are_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let mut seal = Seal::load(dir.path()).unwrap();
        assert_eq!(
            seal.summary(),
            "not frozen: test and held-out splits are sealed"
        );
        seal.freeze("0123456789abcdef", None, "", false).unwrap();
        seal.open("0123456789abcdef", &SEALED, None).unwrap();
        let at = &seal.frozen().unwrap().at;
        assert_eq!(
            seal.summary(),
            format!("frozen {at} as 0123456789ab; sealed splits opened 1 time(s)")
        );
    }

    #[test]
    fn the_baseline_is_part_of_the_seal() {
        let dir = tempfile::tempdir().unwrap();
        let mut seal = Seal::load(dir.path()).unwrap();
        seal.freeze("after", Some("before"), "", false).unwrap();
        assert_eq!(seal.open("after", &SEALED, Some("before")).unwrap(), 1);
        assert_eq!(seal.open("after", &SEALED, Some("after")).unwrap(), 2);
        let other = sealed_message(seal.open("after", &SEALED, Some("other")));
        assert!(
            other.contains("baseline") && other.contains("--baseline"),
            "{other}"
        );
        assert!(!seal.contaminated());
        let refused = sealed_message(seal.freeze("after", Some("other"), "", false));
        assert!(refused.contains("--force"), "{refused}");
        seal.freeze("after", Some("other"), "", true).unwrap();
        assert!(seal.contaminated());
        assert!(Seal::load(dir.path()).unwrap().contaminated());
    }

    #[test]
    fn the_seal_file_has_the_reference_layout() {
        let dir = tempfile::tempdir().unwrap();
        let mut seal = Seal::load(dir.path()).unwrap();
        seal.freeze("h1", None, "caf\u{e9}", false).unwrap();
        seal.open("h1", &[Split::Test, Split::HeldOut], Some("h1"))
            .unwrap();
        let frozen_at = seal.frozen().unwrap().at.clone();
        let view_at = seal.views()[0].at.clone();
        assert_eq!(frozen_at.len(), "2026-01-02T03:04:05Z".len());
        assert!(frozen_at.ends_with('Z') && frozen_at.as_bytes()[10] == b'T');
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\n \"frozen\": {{\n  \"hash\": \"h1\",\n  \"baseline\": null,\n  \"at\": \
                 \"{frozen_at}\",\n  \"note\": \"caf\u{e9}\"\n }},\n \"views\": [\n  {{\n   \
                 \"hash\": \"h1\",\n   \"baseline\": \"h1\",\n   \"at\": \"{view_at}\",\n   \
                 \"splits\": [\n    \"held-out\",\n    \"test\"\n   ]\n  }}\n ]\n}}\n"
            )
        );
        let mut fresh = Seal::load(tempfile::tempdir().unwrap().path()).unwrap();
        fresh.path = dir.path().join("empty.json");
        fresh.save().unwrap();
        let empty = std::fs::read_to_string(dir.path().join("empty.json")).unwrap();
        assert_eq!(empty, "{\n \"frozen\": null,\n \"views\": []\n}\n");
    }

    #[test]
    fn a_broken_seal_file_is_an_error_naming_it_and_saying_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for broken in [
            "{\"frozen\": ",
            "[]",
            "{\"frozen\": {\"note\": \"no hash\"}}",
            "{\"views\": [{\"hash\": \"h\", \"splits\": [\"dev\"]}]}",
        ] {
            std::fs::write(&path, broken).unwrap();
            let message = Seal::load(dir.path()).unwrap_err().to_string();
            assert!(message.contains("seal.json"), "{message}");
            assert!(
                message.contains("restore") && message.contains("delete"),
                "{message}"
            );
        }
    }

    #[test]
    fn refusing_sealed_splits_names_the_split_and_the_one_command_that_reads_it() {
        assert!(refuse_sealed(&[Split::Train, Split::Val], "lab ask").is_ok());
        let one = sealed_message(refuse_sealed(&[Split::Val, Split::Test], "lab score"));
        assert!(
            one.starts_with("lab score cannot read the test split"),
            "{one}"
        );
        assert!(
            one.contains("skill-factory lab report") && one.contains("lab freeze"),
            "{one}"
        );
        let both = sealed_message(refuse_sealed(&[Split::HeldOut, Split::Test], "lab reask"));
        assert!(both.contains("the test and held-out splits"), "{both}");
    }
}
