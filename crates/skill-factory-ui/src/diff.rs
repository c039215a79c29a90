//! Line diffs between two skill documents, and the blame of the best skill: the candidate
//! (and round) that introduced each of its lines, with the validation gain that candidate
//! bought over its parent.

use serde::Serialize;
use similar::{ChangeTag, DiffOp, TextDiff};

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffLine {
    /// `equal`, `insert` or `delete`.
    pub tag: &'static str,
    /// Its line number in the first text (from 1), unless inserted.
    pub old: Option<usize>,
    /// Its line number in the second text (from 1), unless deleted.
    pub new: Option<usize>,
    /// The line, without its line break.
    pub text: String,
}

/// The line diff from `before` to `after`.
pub fn lines(before: &str, after: &str) -> Vec<DiffLine> {
    TextDiff::from_lines(before, after)
        .iter_all_changes()
        .map(|change| DiffLine {
            tag: match change.tag() {
                ChangeTag::Equal => "equal",
                ChangeTag::Insert => "insert",
                ChangeTag::Delete => "delete",
            },
            old: change.old_index().map(|i| i + 1),
            new: change.new_index().map(|i| i + 1),
            text: change.value().trim_end_matches(['\n', '\r']).to_string(),
        })
        .collect()
}

/// Where one line of the best skill came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Origin {
    /// The line.
    pub text: String,
    /// The candidate that introduced it (0: the seed had it).
    pub candidate: usize,
    /// That candidate's round.
    pub round: usize,
    /// The validation gain of that candidate over its parent, when both were validated.
    pub gain: Option<f64>,
}

/// One step of a lineage: a candidate, its round, its validation score and its document.
#[derive(Debug, Clone)]
pub struct Step {
    /// The candidate.
    pub candidate: usize,
    /// Its round.
    pub round: usize,
    /// Its validation score.
    pub val: Option<f64>,
    /// Its document.
    pub text: String,
}

/// The origin of every line of the last step's document, walking `chain` from the seed: a
/// line the diff from one step to the next keeps keeps its origin, any other line of the next
/// step is that step's.
pub fn blame(chain: &[Step]) -> Vec<Origin> {
    let Some(first) = chain.first() else {
        return Vec::new();
    };
    let mut origins: Vec<Origin> = first
        .text
        .lines()
        .map(|line| Origin {
            text: line.to_string(),
            candidate: first.candidate,
            round: first.round,
            gain: None,
        })
        .collect();
    for pair in chain.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let gain = child.val.zip(parent.val).map(|(c, p)| c - p);
        let new_lines: Vec<&str> = child.text.lines().collect();
        let mut next: Vec<Option<Origin>> = vec![None; new_lines.len()];
        let diff = TextDiff::from_lines(&parent.text, &child.text);
        for op in diff.ops() {
            if let DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = *op
            {
                for offset in 0..len {
                    if let (Some(origin), Some(slot)) = (
                        origins.get(old_index + offset),
                        next.get_mut(new_index + offset),
                    ) {
                        *slot = Some(origin.clone());
                    }
                }
            }
        }
        origins = next
            .into_iter()
            .zip(new_lines)
            .map(|(kept, line)| {
                kept.unwrap_or(Origin {
                    text: line.to_string(),
                    candidate: child.candidate,
                    round: child.round,
                    gain,
                })
            })
            .collect();
    }
    origins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_marks_each_line_kept_added_or_removed_with_its_numbers() {
        let diff = lines("a\nb\nc\n", "a\nB\nc\nd\n");
        let tags: Vec<(&str, &str)> = diff.iter().map(|l| (l.tag, l.text.as_str())).collect();
        assert_eq!(
            tags,
            [
                ("equal", "a"),
                ("delete", "b"),
                ("insert", "B"),
                ("equal", "c"),
                ("insert", "d")
            ]
        );
        assert_eq!((diff[1].old, diff[1].new), (Some(2), None));
        assert_eq!((diff[4].old, diff[4].new), (None, Some(4)));
    }

    #[test]
    fn every_line_of_the_best_is_blamed_on_the_step_that_wrote_it() {
        let step = |candidate, val, text: &str| Step {
            candidate,
            round: candidate,
            val: Some(val),
            text: text.into(),
        };
        let chain = [
            step(0, 0.25, "# Skill\nBe vague.\n"),
            step(3, 0.5, "# Skill\nAnswer with the label.\n"),
            step(
                7,
                0.75,
                "# Skill\nAnswer with the label.\nLowercase only.\n",
            ),
        ];
        let origins = blame(&chain);
        let by: Vec<(usize, Option<f64>)> = origins.iter().map(|o| (o.candidate, o.gain)).collect();
        assert_eq!(by, [(0, None), (3, Some(0.25)), (7, Some(0.25))]);
        assert_eq!(origins[2].text, "Lowercase only.");
    }
}
