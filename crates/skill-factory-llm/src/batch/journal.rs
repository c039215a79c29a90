//! The batches a run has submitted and not yet read back, in a JSONL file beside the runs of
//! its config (`batches.jsonl`), so that a run killed while waiting resumes polling the same
//! batches when it is run again, instead of submitting (and paying for) them twice.
//!
//! One line is appended when a batch is submitted, naming its id, the client it belongs to
//! (provider, endpoint, model) and the `custom_id` of every request in it; one more once its
//! results have been read. A batch with the first line and not the second is still owed.
//! Lines are appended whole under a lock ([`skill_factory_io::append::append_locked`]), so several runs
//! of one config may share the file and a killed writer leaves no half line behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file name of the journal, in the folder of a config's runs.
pub const FILE: &str = "batches.jsonl";

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    /// A batch was submitted.
    Submitted {
        submitted: String,
        provider: String,
        endpoint: String,
        model: String,
        custom_ids: Vec<String>,
    },
    /// A batch's results were read.
    Read { read: String },
}

/// The journal file of one folder.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
}

impl Journal {
    /// The journal in `folder` (created with its first line).
    pub fn in_folder(folder: &Path) -> Self {
        Journal {
            path: folder.join(FILE),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The batches of the client (`provider`, `endpoint`, `model`) submitted and not read:
    /// each batch id with the `custom_id`s of its requests. A missing file owes nothing; a
    /// line that does not parse (a newer tool's, or damage) is skipped.
    pub fn owed(
        &self,
        provider: &str,
        endpoint: &str,
        model: &str,
    ) -> HashMap<String, Vec<String>> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return HashMap::new();
        };
        let mut owed = HashMap::new();
        for line in text.lines() {
            match serde_json::from_str::<Line>(line) {
                Ok(Line::Submitted {
                    submitted,
                    provider: p,
                    endpoint: e,
                    model: m,
                    custom_ids,
                }) if p == provider && e == endpoint && m == model => {
                    owed.insert(submitted, custom_ids);
                }
                Ok(Line::Read { read }) => {
                    owed.remove(&read);
                }
                _ => {}
            }
        }
        owed
    }

    /// Notes that the batch `id` of the client was submitted with these requests.
    pub fn submitted(
        &self,
        id: &str,
        (provider, endpoint, model): (&str, &str, &str),
        custom_ids: &[String],
    ) -> std::io::Result<()> {
        self.append(&Line::Submitted {
            submitted: id.to_string(),
            provider: provider.to_string(),
            endpoint: endpoint.to_string(),
            model: model.to_string(),
            custom_ids: custom_ids.to_vec(),
        })
    }

    /// Notes that the results of the batch `id` were read: it is owed no more.
    pub fn read(&self, id: &str) -> std::io::Result<()> {
        self.append(&Line::Read {
            read: id.to_string(),
        })
    }

    fn append(&self, line: &Line) -> std::io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        text.push('\n');
        skill_factory_io::append::append_locked(&self.path, &text, |tail| {
            serde_json::from_slice::<Line>(tail).is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: (&str, &str, &str) = ("openai", "http://127.0.0.1:9/v1", "m");

    #[test]
    fn a_batch_is_owed_from_its_submission_until_its_results_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::in_folder(&dir.path().join("runs"));
        let owed = || journal.owed(CLIENT.0, CLIENT.1, CLIENT.2);
        assert!(owed().is_empty(), "no file owes nothing");
        journal
            .submitted("b1", CLIENT, &["x".into(), "y".into()])
            .unwrap();
        journal.submitted("b2", CLIENT, &["z".into()]).unwrap();
        journal
            .submitted("b3", ("openai", CLIENT.1, "other model"), &["x".into()])
            .unwrap();
        assert_eq!(
            owed().len(),
            2,
            "another model's batch is not this client's"
        );
        assert_eq!(owed()["b1"], vec!["x".to_string(), "y".to_string()]);
        journal.read("b1").unwrap();
        assert_eq!(owed().keys().collect::<Vec<_>>(), vec!["b2"]);
    }

    #[test]
    fn a_half_written_line_is_skipped_and_cut_before_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::in_folder(dir.path());
        journal.submitted("b1", CLIENT, &["x".into()]).unwrap();
        let mut text = std::fs::read_to_string(journal.path()).unwrap();
        text.push_str("{\"read\": \"b");
        std::fs::write(journal.path(), &text).unwrap();
        assert_eq!(journal.owed(CLIENT.0, CLIENT.1, CLIENT.2).len(), 1);
        journal.submitted("b2", CLIENT, &["y".into()]).unwrap();
        let text = std::fs::read_to_string(journal.path()).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.lines()
                .all(|l| serde_json::from_str::<Line>(l).is_ok()),
            "{text}"
        );
    }
}
