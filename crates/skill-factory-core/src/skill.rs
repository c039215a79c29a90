//! SKILL.md: YAML frontmatter and a Markdown body.

use serde_json::{Map, Value};

/// A skill: the document an agent loads. Only `body` is ever optimized.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The skill's name (required, non-blank).
    pub name: String,
    /// What the skill does and when to use it.
    pub description: String,
    /// Other frontmatter keys, in their original order.
    pub extra: Map<String, Value>,
    /// The Markdown body, trimmed.
    pub body: String,
}

/// Why a SKILL.md could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkillError {
    /// Placeholder until the parser lands.
    #[error("{0}")]
    Invalid(String),
}
