//! Deserializers that accept any YAML scalar where text is meant.
//!
//! The reference tool passes argv elements, extra arguments and environment values through
//! Python's `str()`, so `[sleep, 5]` or `PORT: 8080` work there; these helpers give the same
//! text here instead of a type error.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use skill_factory_pycompat::repr::repr_float;

/// One scalar rendered as Python's `str()` would render it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalarText(pub String);

impl<'de> Deserialize<'de> for ScalarText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor).map(ScalarText)
    }
}

/// Any scalar, read as text.
impl schemars::JsonSchema for ScalarText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ScalarText".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "number", "boolean"]})
    }
}

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a text, number or true/false")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<String, E> {
        Ok(if v { "True" } else { "False" }.to_owned())
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<String, E> {
        Ok(repr_float(v))
    }
}

/// A list whose elements may be any scalars, each turned into text.
pub fn string_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let items: Vec<ScalarText> = Vec::deserialize(deserializer)?;
    Ok(items.into_iter().map(|s| s.0).collect())
}

/// A mapping from names to scalars, each value turned into text.
pub fn string_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let items: BTreeMap<String, ScalarText> = BTreeMap::deserialize(deserializer)?;
    Ok(items.into_iter().map(|(k, v)| (k, v.0)).collect())
}
