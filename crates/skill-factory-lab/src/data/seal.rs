//! The freeze record that guards the sealed splits (test and held-out): `<workspace>/seal.json`.
//!
//! `lab freeze` records the probe set to report (its content hash) and the baseline it is
//! compared with; `lab report`, the only reader of sealed splits, opens them through
//! [`Seal::open`], which refuses any other pair and logs every opening. Refreezing another pair
//! after an opening needs `--force` and leaves the seal *contaminated*: the report then says
//! that the sealed numbers were seen under an earlier configuration.
//!
//! The freeze also records the split assignment (which example is in which split, as a hash,
//! with the counts and the `splits:` settings that gave it), and every command that reads
//! splits refuses to run once the assignment differs ([`Seal::check_assignment`]): a new
//! salt, other fractions or held-out lists, or an edited dataset would move former test
//! examples into train and val, and give the next report another test set under the same
//! seal. Going back to the frozen assignment, or refreezing with `--force`, lifts it.
//!
//! The file is a local, trust-based log (deleting it unseals everything); it guards the CLI's
//! paths, not this library's API. Its layout is the reference's:
//! `{"frozen": null | {hash, baseline, at, note}, "views": [{hash, baseline, at, splits}]}`,
//! indented by one space, with a trailing newline, plus `assignment` in the freeze and in
//! each view when known (the reference ignores keys it does not know). (The reference escapes
//! non-ASCII characters of a note as `\uXXXX`; here they are written as they are, which reads
//! back the same.)

use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory_pycompat::json as pyjson;
use skill_factory_runfolder::workspace::{AssignmentRecord, FrozenRecord, SealRecord, ViewRecord};

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
    /// The file holds a freeze but no log of openings: the log was removed, so how often
    /// the sealed splits were opened is unknown.
    views_removed: bool,
    /// The split assignment of the workspace now, and the config that gives it, when the
    /// caller said ([`Seal::under`]).
    current: Option<(AssignmentRecord, PathBuf)>,
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
                    views_removed: false,
                    current: None,
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
        let views_removed = record.frozen.is_some() && record.views.is_none();
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
            views_removed,
            current: None,
        })
    }

    /// This seal, told the split assignment the workspace has now and the config that gives
    /// it: a freeze records it, an opening logs it, and [`Seal::check_assignment`] compares it
    /// with the frozen one.
    pub fn under(mut self, assignment: AssignmentRecord, config: &Path) -> Seal {
        self.current = Some((assignment, config.to_path_buf()));
        self
    }

    /// Refuses when the split assignment differs from the one frozen: the message says what
    /// changed (the `splits:` settings, or the dataset) and the two ways out.
    pub fn check_assignment(&self) -> Result<(), LabError> {
        match self.moved() {
            None => Ok(()),
            Some(Moved { what, undo, config }) => Err(LabError::Sealed(format!(
                "{}: {what}. Former test examples may now be read by train and val, and a \
                 report would use another test set under the same seal. To go back, {undo}; \
                 or refreeze under the new assignment with `skill-factory lab freeze -c {} \
                 --force` (once the sealed splits were opened under the old one, every later \
                 report says so)",
                config.display(),
                config.display()
            ))),
        }
    }

    /// What changed since the freeze when the assignment now is not the frozen one; none
    /// when either is unknown.
    fn moved(&self) -> Option<Moved<'_>> {
        let frozen = self.frozen.as_ref()?;
        let then = frozen.assignment.as_ref()?;
        let (now, config) = self.current.as_ref()?;
        if then.sha256 == now.sha256 {
            return None;
        }
        let mut keys: Vec<&String> = then.settings.keys().chain(now.settings.keys()).collect();
        keys.sort();
        keys.dedup();
        let shown =
            |value: Option<&Value>| value.map_or_else(|| "unset".to_string(), Value::to_string);
        let settings: Vec<String> = keys
            .into_iter()
            .filter(|key| then.settings.get(*key) != now.settings.get(*key))
            .map(|key| {
                format!(
                    "splits.{key} was {} and is now {}",
                    shown(then.settings.get(key)),
                    shown(now.settings.get(key))
                )
            })
            .collect();
        let counts: Vec<String> = Split::ALL
            .iter()
            .filter_map(|split| {
                let name = split.name();
                let (before, after) = (then.counts.get(name), now.counts.get(name));
                (before != after).then(|| {
                    format!(
                        "{name} had {} example(s), now {}",
                        before.copied().unwrap_or(0),
                        after.copied().unwrap_or(0)
                    )
                })
            })
            .collect();
        let (what, undo) = if settings.is_empty() {
            (
                "the dataset changed (examples added or removed, or their group, source or \
                 explicit split)"
                    .to_string(),
                "restore the dataset as it was at the freeze".to_string(),
            )
        } else {
            (
                settings.join(", "),
                format!(
                    "set `splits:` back to {}",
                    Value::Object(then.settings.clone())
                ),
            )
        };
        let counts = if counts.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts.join(", "))
        };
        Some(Moved {
            what: format!(
                "the split assignment changed since `lab freeze` ({}): {what}{counts}",
                frozen.at
            ),
            undo,
            config,
        })
    }

    /// Records `hash` (and `baseline`) as the pair to report on the sealed splits, and saves.
    ///
    /// Refreezing the same pair is always allowed. Freezing another pair once the sealed
    /// splits have been opened (or once their log of openings was removed from the file) is
    /// refused unless `force`: their numbers are then no longer unseen, which
    /// [`Seal::contaminated`] reports from then on. So is freezing under another split
    /// assignment than the frozen one: examples the optimizer read would become test
    /// examples. The assignment given to [`Seal::under`] is recorded.
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
        if changed && (!self.views.is_empty() || self.views_removed) && !force {
            let opened = if self.views_removed {
                "the log of openings was removed from seal.json, so the sealed splits may have \
                 been opened"
                    .to_string()
            } else {
                format!(
                    "the sealed splits were already opened {} time(s)",
                    self.views.len()
                )
            };
            return Err(LabError::Sealed(format!(
                "{opened} under another configuration (frozen {}); refreezing means their \
                 numbers are no longer unseen. Rerun `skill-factory lab freeze -c <config>` \
                 with --force to refreeze anyway, and every report will say so",
                self.frozen.as_ref().map_or("", |f| short(&f.hash))
            )));
        }
        if !force && let Some(Moved { what, undo, config }) = self.moved() {
            return Err(LabError::Sealed(format!(
                "{}: {what}. Refreezing under it would turn examples the optimizer read into \
                 test examples. To go back, {undo}; or rerun `skill-factory lab freeze -c {}` \
                 with --force to refreeze anyway",
                config.display(),
                config.display()
            )));
        }
        self.frozen = Some(FrozenRecord {
            hash: hash.to_string(),
            baseline: baseline.map(str::to_string),
            at: now(),
            note: note.to_string(),
            assignment: self
                .current
                .as_ref()
                .map(|(assignment, _)| assignment.clone()),
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
        self.check_assignment()?;
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
            assignment: self
                .current
                .as_ref()
                .map(|(assignment, _)| assignment.sha256.clone()),
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
    /// one: a view of another probe set, with a baseline that is neither the frozen hash nor
    /// the frozen baseline, or under another split assignment; or whether that cannot be told,
    /// the log of openings having been removed.
    pub fn contaminated(&self) -> bool {
        let Some(frozen) = &self.frozen else {
            return false;
        };
        let assignment = frozen.assignment.as_ref().map(|a| a.sha256.as_str());
        self.views_removed
            || self.views.iter().any(|view| {
                view.hash != frozen.hash
                    || view.baseline.as_ref().is_some_and(|baseline| {
                        *baseline != frozen.hash && Some(baseline) != frozen.baseline.as_ref()
                    })
                    || (assignment.is_some()
                        && view.assignment.is_some()
                        && view.assignment.as_deref() != assignment)
            })
    }

    /// One line for `lab status` and reports: `not frozen: test and held-out splits are
    /// sealed`, or `frozen <at> as <hash12>; sealed splits opened N time(s)`, with a warning
    /// appended when contaminated.
    pub fn summary(&self) -> String {
        let Some(frozen) = &self.frozen else {
            return "not frozen: test and held-out splits are sealed".to_string();
        };
        let opened = if self.views_removed && self.views.is_empty() {
            "an unknown number of times (their log was removed from seal.json)".to_string()
        } else {
            format!("{} time(s)", self.views.len())
        };
        let mut summary = format!(
            "frozen {} as {}; sealed splits opened {opened}",
            frozen.at,
            short(&frozen.hash),
        );
        if self.contaminated() {
            summary.push_str("; WARNING: sealed splits were opened under an earlier configuration");
        }
        summary
    }

    /// Writes `seal.json` atomically ([`Seal::freeze`] and [`Seal::open`] already do).
    pub fn save(&self) -> Result<(), LabError> {
        // A removed log stays removed until an opening is logged: an empty one would say the
        // sealed splits were never opened.
        let removed = self.views_removed && self.views.is_empty();
        let record = SealRecord {
            frozen: self.frozen.clone(),
            views: (!removed).then(|| self.views.clone()),
        };
        let value = serde_json::to_value(&record).expect("a seal is plain data");
        let mut text = pyjson::dumps_indent(&value, 1);
        text.push('\n');
        write_atomic(&self.path, &text)
    }
}

/// How the split assignment moved since the freeze.
struct Moved<'a> {
    /// What changed, with the examples per split then and now.
    what: String,
    /// How to go back to the frozen assignment.
    undo: String,
    /// The config that gives the assignment now.
    config: &'a Path,
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

    /// An assignment with `salt` and `test` examples in test, the rest as given.
    fn assignment(sha: &str, salt: &str, test: usize) -> AssignmentRecord {
        AssignmentRecord {
            sha256: sha.to_string(),
            counts: [("train".to_string(), 10), ("test".to_string(), test)]
                .into_iter()
                .collect(),
            settings: serde_json::json!({"salt": salt, "fractions": {"train": 0.5, "val": 0.25}})
                .as_object()
                .unwrap()
                .clone(),
        }
    }

    #[test]
    fn a_changed_split_assignment_is_refused_saying_what_changed_and_how_to_go_back() {
        let dir = tempfile::tempdir().unwrap();
        let config = Path::new("config.yaml");
        let frozen_under = assignment("a1", "pr-11", 12);
        let mut seal = Seal::load(dir.path())
            .unwrap()
            .under(frozen_under.clone(), config);
        seal.freeze("h1", Some("h0"), "", false).unwrap();
        let reloaded = Seal::load(dir.path()).unwrap();
        assert_eq!(
            reloaded.frozen().unwrap().assignment.as_ref(),
            Some(&frozen_under)
        );
        // The same assignment, however the file was reread: nothing to say.
        reloaded
            .clone()
            .under(frozen_under.clone(), config)
            .check_assignment()
            .unwrap();
        // A seal that was never told the assignment (or one written before it was recorded)
        // checks nothing.
        reloaded.check_assignment().unwrap();

        let salted = Seal::load(dir.path())
            .unwrap()
            .under(assignment("b2", "pr-12", 10), config);
        let refused = sealed_message(salted.check_assignment());
        for part in [
            "config.yaml: the split assignment changed since `lab freeze`",
            "splits.salt was \"pr-11\" and is now \"pr-12\"",
            "set `splits:` back to {",
            "test had 12 example(s), now 10",
            "skill-factory lab freeze -c config.yaml --force",
        ] {
            assert!(refused.contains(part), "{part}: {refused}");
        }
        let mut opening = salted.clone();
        assert!(sealed_message(opening.open("h1", &SEALED, Some("h0"))).contains("salt"));
        let mut refreeze = salted.clone();
        let not_forced = sealed_message(refreeze.freeze("h1", Some("h0"), "", false));
        assert!(
            not_forced.contains("the optimizer read") && not_forced.contains("--force"),
            "{not_forced}"
        );

        // Same settings, another dataset.
        let edited = Seal::load(dir.path())
            .unwrap()
            .under(assignment("c3", "pr-11", 12), config);
        let dataset = sealed_message(edited.check_assignment());
        assert!(dataset.contains("the dataset changed"), "{dataset}");
        assert!(!dataset.contains("splits.salt"), "{dataset}");
    }

    #[test]
    fn a_view_under_the_old_assignment_marks_a_forced_refreeze_contaminated() {
        let dir = tempfile::tempdir().unwrap();
        let config = Path::new("c.yaml");
        let mut seal = Seal::load(dir.path())
            .unwrap()
            .under(assignment("a1", "s", 12), config);
        seal.freeze("h1", None, "", false).unwrap();
        seal.open("h1", &SEALED, None).unwrap();
        assert_eq!(seal.views()[0].assignment.as_deref(), Some("a1"));
        assert!(!seal.contaminated());
        let mut moved = Seal::load(dir.path())
            .unwrap()
            .under(assignment("b2", "t", 12), config);
        moved.freeze("h1", None, "refrozen", true).unwrap();
        moved.check_assignment().unwrap();
        let reloaded = Seal::load(dir.path()).unwrap();
        assert!(reloaded.contaminated());
        assert!(
            reloaded.summary().contains("WARNING"),
            "{}",
            reloaded.summary()
        );
    }

    #[test]
    fn a_seal_whose_log_of_openings_was_removed_still_refuses_another_pair() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(
            &path,
            "{\"frozen\": {\"hash\": \"h1\", \"baseline\": \"h0\", \"at\": \"t\", \"note\": \"\"}}",
        )
        .unwrap();
        let mut seal = Seal::load(dir.path()).unwrap();
        assert!(seal.contaminated());
        assert!(
            seal.summary().contains("unknown number of times"),
            "{}",
            seal.summary()
        );
        let refused = sealed_message(seal.freeze("h2", Some("h0"), "", false));
        assert!(
            refused.contains("log of openings was removed") && refused.contains("--force"),
            "{refused}"
        );
        // The same pair is no change; the log stays missing rather than empty.
        seal.freeze("h1", Some("h0"), "", false).unwrap();
        let kept = Seal::load(dir.path()).unwrap();
        assert!(
            kept.summary().contains("unknown number of times"),
            "{}",
            kept.summary()
        );
        assert!(
            sealed_message(
                Seal::load(dir.path())
                    .unwrap()
                    .freeze("h2", None, "", false)
            )
            .contains("--force")
        );
        seal.freeze("h2", Some("h0"), "forced", true).unwrap();
        assert!(Seal::load(dir.path()).unwrap().contaminated());
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
