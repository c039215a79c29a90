//! `optimizer.protected`: the `## ` sections of a skill's body (and the reference files)
//! that no candidate may change, whichever optimizer made it.
//!
//! The rule is enforced where every candidate is checked before it is scored
//! ([`super::round::check`]), so `llm_loop`'s rewrites, `gepa`'s mutations and merges and
//! `skillopt`'s patches all pass through it; `gepa` also never picks a protected component to
//! rewrite, and `skillopt` refuses a single edit that touches one ([`super::patch`]), so
//! their other work is not lost to it. A section counts as kept when a section of the same
//! heading holds the same text; one an edit hid in an HTML comment or swallowed into a code
//! fence is no section any more ([`super::component`]), so it counts as removed.
//!
//! A protected name is written with or without its `## ` (`Safety`, `## Safety`): it is read
//! once into its heading ([`protected_name`]), and a section's heading is read the same way
//! before they are compared, so `#` marks and runs of spaces do not matter. A name under
//! `references/` names a reference file.

use skill_factory_core::Skill;

use super::component::{Component, ComponentKind, Components};
use crate::config::protected_name;

/// The protected parts of a run, each named as a heading (`## Safety`) or a reference file's
/// path (`references/policy.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    names: Vec<String>,
}

/// Whether `name` (normalized) names a reference file rather than a section.
fn is_file(name: &str) -> bool {
    !name.starts_with("## ")
}

impl Protected {
    /// The protected parts of the config's `entries`, each normalized once
    /// ([`protected_name`]), repeats and names of nothing left out.
    pub fn new(entries: &[String]) -> Protected {
        let mut names: Vec<String> = Vec::new();
        for name in entries.iter().filter_map(|entry| protected_name(entry)) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Protected { names }
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The protected names, normalized, in the config's order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether the section of heading `name` (`## Safety`, as written in a body), or the
    /// reference file at path `name`, is protected.
    pub fn covers(&self, name: &str) -> bool {
        protected_name(name).is_some_and(|name| self.names.contains(&name))
    }

    /// The protected names `skill` has no section or reference file of: they protect nothing
    /// in a search from it.
    pub fn missing_from(&self, skill: &Skill) -> Vec<&str> {
        let components = Components::of(skill);
        self.names
            .iter()
            .filter(|name| !components.iter().any(|c| named(c, name)))
            .map(String::as_str)
            .collect()
    }

    /// How `child` does not keep every protected part of `parent` as it was, if it does not:
    /// a protected section or file changed, removed (hidden in a comment or a fence
    /// included), or added a second time.
    pub fn changed(&self, parent: &Skill, child: &Skill) -> Option<Change> {
        if self.names.is_empty() {
            return None;
        }
        let (before, after) = (Components::of(parent), Components::of(child));
        self.names.iter().find_map(|name| {
            let texts = |components: &Components| -> Vec<String> {
                components
                    .iter()
                    .filter(|c| named(c, name))
                    .map(|c| c.text.trim_end().to_string())
                    .collect()
            };
            let (old, new) = (texts(&before), texts(&after));
            let how = match old.len().cmp(&new.len()) {
                _ if old == new => return None,
                std::cmp::Ordering::Greater => How::Removed,
                std::cmp::Ordering::Less => How::Added,
                std::cmp::Ordering::Equal => How::Changed,
            };
            Some(Change {
                name: name.clone(),
                how,
            })
        })
    }

    /// [`Protected::changed`] of two bodies alone (an edit patch's before and after).
    pub fn changed_body(&self, before: &str, after: &str) -> Option<Change> {
        let body = |text: &str| Skill::new(String::new(), String::new(), text);
        self.changed(&body(before), &body(after))
    }
}

/// Whether `component` is the section or the reference file of the protected `name`.
fn named(component: &Component, name: &str) -> bool {
    matches!(
        component.kind,
        ComponentKind::Section | ComponentKind::Reference
    ) && protected_name(&component.name).as_deref() == Some(name)
}

/// A protected part a candidate did not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The protected name (`## Safety`, `references/policy.md`).
    pub name: String,
    how: How,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Changed,
    Removed,
    Added,
}

impl std::fmt::Display for Change {
    /// The refusal's reason, which later prompts show the optimizer model.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.name;
        let what = if is_file(name) { "file" } else { "section" };
        match self.how {
            How::Changed => write!(
                f,
                "changes the protected {what} «{name}»; protected parts are kept word for word"
            ),
            How::Removed => write!(
                f,
                "removes the protected {what} «{name}» (or hides it in an HTML comment or a code fence); protected parts are kept word for word"
            ),
            How::Added => write!(
                f,
                "adds a {what} «{name}», which is protected; protected parts are kept as they are"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(body: &str) -> Skill {
        Skill::new("s", "d", body)
    }

    const BODY: &str =
        "# Tool\n\nIntro.\n\n## Steps\n\n- one\n\n## Safety\n\nNever reveal internal notes.\n";

    #[test]
    fn a_name_is_read_with_or_without_its_heading_marks() {
        for entry in [
            "Safety",
            "## Safety",
            "  ##   Safety ",
            "#Safety",
            "### Safety",
        ] {
            let protected = Protected::new(&[entry.to_string()]);
            assert_eq!(protected.names(), ["## Safety"], "{entry:?}");
            assert!(protected.covers("## Safety"), "{entry:?}");
            assert!(protected.covers("##  Safety  "), "{entry:?}");
            assert!(!protected.covers("## Safety notes"), "{entry:?}");
        }
        let files = Protected::new(&["references/policy.md".to_string()]);
        assert_eq!(files.names(), ["references/policy.md"]);
        assert!(files.covers("references/policy.md"));
        assert!(!files.covers("## references/policy.md"));
        for nothing in ["", "  ", "##", "## "] {
            assert_eq!(protected_name(nothing), None, "{nothing:?}");
        }
        let repeated = Protected::new(&["Safety".into(), "## Safety".into(), "##".into()]);
        assert_eq!(repeated.names(), ["## Safety"]);
    }

    #[test]
    fn a_name_the_seed_lacks_is_found_missing() {
        let protected = Protected::new(&["Safety".into(), "Legal".into()]);
        assert_eq!(protected.missing_from(&skill(BODY)), vec!["## Legal"]);
        // A heading in a code fence is an example, not a section.
        let fenced = skill("Intro.\n\n```md\n## Safety\n```\n");
        assert_eq!(
            protected.missing_from(&fenced),
            vec!["## Safety", "## Legal"]
        );
    }

    #[test]
    fn a_candidate_keeps_the_protected_section_or_says_how_it_did_not() {
        let protected = Protected::new(&["Safety".into()]);
        let parent = skill(BODY);
        let kept = skill(&BODY.replace("- one", "- one\n- two"));
        assert_eq!(protected.changed(&parent, &kept), None);
        let reason = |body: &str| {
            protected
                .changed(&parent, &skill(body))
                .unwrap()
                .to_string()
        };
        let rewritten = reason(&BODY.replace(
            "Never reveal internal notes.",
            "Reveal internal notes freely.",
        ));
        assert!(
            rewritten.starts_with("changes the protected section «## Safety»"),
            "{rewritten}"
        );
        assert!(reason("# Tool\n\nIntro.\n").starts_with("removes the protected section"));
        // Hidden from a reader: in a comment closed after it, or one never closed.
        let hidden = BODY
            .replace("## Safety", "<!--\n## Safety")
            .replace("notes.\n", "notes.\n-->\n");
        assert!(reason(&hidden).starts_with("removes"), "{hidden}");
        let open = BODY.replace("- one", "- one <!-- draft");
        assert!(reason(&open).starts_with("removes"), "{open}");
        let fenced = BODY.replace("- one", "- one\n\n```");
        assert!(reason(&fenced).starts_with("removes"), "{fenced}");
        let twice = format!("{BODY}\n## Safety\n\nAnything goes.\n");
        assert!(reason(&twice).starts_with("adds a section «## Safety»"));
        // Blank lines after the section are not part of it.
        assert_eq!(
            protected.changed(&parent, &skill(&format!("{BODY}\n\n"))),
            None
        );
    }

    #[test]
    fn a_protected_reference_file_is_kept_too() {
        let protected = Protected::new(&["references/policy.md".into()]);
        let files = |text: &str| {
            std::collections::BTreeMap::from([("references/policy.md".into(), text.into())])
        };
        let parent = skill("Body.").with_files(files("Keep.\n"));
        let child = skill("Body.").with_files(files("Changed.\n"));
        assert!(
            protected
                .changed(&parent, &child)
                .unwrap()
                .to_string()
                .starts_with("changes the protected file «references/policy.md»")
        );
        assert_eq!(
            protected.changed(&parent, &parent.with_body("New body.")),
            None
        );
    }
}
