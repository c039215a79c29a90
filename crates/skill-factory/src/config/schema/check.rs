//! One entry of `metric.programmatic.checks`, read into its [`Check`] when the config loads.
//!
//! A check is written as a bare name (`- is_valid_json`) or as a mapping with one key, the
//! check's name, whose value holds the arguments: a list for positional arguments
//! (`{json_has_keys: [vendor, total]}`), a mapping for named ones (`{contains: {substring:
//! cat, case_sensitive: true}}`) or a single value (`{matches_regex: "\\d+"}`). A check that
//! cannot be read, or whose regular expression or JSON Schema does not compile, is a config
//! error that names its line.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};
use skill_factory_pycompat::re;

use skill_factory_config::yaml::INVALID_VALUE;

/// One deterministic check on a rollout's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// The output parses as JSON (tolerantly: fences and surrounding prose allowed).
    IsValidJson,
    /// The output parses as a JSON object holding these keys; scores the fraction present.
    JsonHasKeys(Vec<String>),
    /// A Python regular expression is found anywhere in the output.
    MatchesRegex {
        /// The pattern, in Python `re` syntax.
        pattern: String,
        /// Python `re` flag bits: `re.I`=2, `re.M`=8, `re.S`=16, `re.X`=64, `re.A`=256.
        flags: i64,
    },
    /// The output contains the substring.
    Contains {
        /// The text to look for.
        substring: String,
        /// Compare exactly; otherwise compare Unicode case folds.
        case_sensitive: bool,
    },
    /// The output does not contain the substring.
    NotContains {
        /// The text that must not appear.
        substring: String,
        /// Compare exactly; otherwise compare Unicode case folds.
        case_sensitive: bool,
    },
    /// The output has at most this many characters (Unicode code points).
    MaxLength(usize),
    /// The output parses as JSON that validates against this JSON Schema.
    JsonSchema(Value),
}

impl Check {
    /// Every check name a config can use, in documentation order.
    pub const NAMES: [&'static str; 7] = [
        "is_valid_json",
        "json_has_keys",
        "matches_regex",
        "contains",
        "not_contains",
        "max_length",
        "json_schema",
    ];

    /// The check's label in feedback and breakdowns: its config name.
    pub fn label(&self) -> &'static str {
        match self {
            Check::IsValidJson => "is_valid_json",
            Check::JsonHasKeys(_) => "json_has_keys",
            Check::MatchesRegex { .. } => "matches_regex",
            Check::Contains { .. } => "contains",
            Check::NotContains { .. } => "not_contains",
            Check::MaxLength(_) => "max_length",
            Check::JsonSchema(_) => "json_schema",
        }
    }

    /// Reads one entry of a config's `checks` list: a bare check name, or a one-key mapping
    /// from the check name to its arguments (a list of positional arguments, a mapping of
    /// named arguments, or a single value). The error says what is wrong and what to write.
    pub fn from_spec(spec: &Value) -> Result<Check, String> {
        let (name, args) = match spec {
            Value::String(name) => (name.as_str(), Args::None),
            Value::Object(map) if map.len() == 1 => match map.iter().next() {
                Some((name, value)) => (name.as_str(), Args::of(value)),
                None => return Err(invalid_spec(spec)),
            },
            _ => return Err(invalid_spec(spec)),
        };
        let check = match name {
            "is_valid_json" => {
                args.expect_none(name)?;
                Check::IsValidJson
            }
            "json_has_keys" => Check::JsonHasKeys(keys_arg(&args)?),
            "matches_regex" => {
                let [pattern, flags] = args.bind(name, &["pattern"], &["flags"], REGEX_USAGE)?;
                let pattern = string_arg(name, "pattern", pattern, REGEX_USAGE)?;
                let flags = match flags {
                    None => 0,
                    Some(v) => v.as_i64().ok_or_else(|| {
                        format!(
                            "matches_regex: flags must be an integer such as 2 (re.I), got {}",
                            compact(v)
                        )
                    })?,
                };
                re::compile(&pattern, flags).map_err(|e| {
                    format!("matches_regex: invalid regular expression /{pattern}/: {e}")
                })?;
                Check::MatchesRegex { pattern, flags }
            }
            "contains" | "not_contains" => {
                let usage = if name == "contains" {
                    CONTAINS_USAGE
                } else {
                    NOT_CONTAINS_USAGE
                };
                let [substring, case_sensitive] =
                    args.bind(name, &["substring"], &["case_sensitive"], usage)?;
                let substring = string_arg(name, "substring", substring, usage)?;
                let case_sensitive = match case_sensitive {
                    None => false,
                    Some(v) => v.as_bool().ok_or_else(|| {
                        format!(
                            "{name}: case_sensitive must be true or false, got {}",
                            compact(v)
                        )
                    })?,
                };
                if name == "contains" {
                    Check::Contains {
                        substring,
                        case_sensitive,
                    }
                } else {
                    Check::NotContains {
                        substring,
                        case_sensitive,
                    }
                }
            }
            "max_length" => {
                let [max_chars] = args.bind(name, &["max_chars"], &[], MAX_LENGTH_USAGE)?;
                let max_chars = max_chars
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        format!(
                            "max_length: max_chars must be a whole number >= 0; {MAX_LENGTH_USAGE}"
                        )
                    })?;
                Check::MaxLength(max_chars)
            }
            "json_schema" => {
                let schema = args.raw().filter(|v| v.is_object() || v.is_boolean()).ok_or_else(|| {
                    "json_schema: expects a JSON Schema mapping, e.g. {json_schema: {type: object, \
                     required: [total]}}"
                        .to_string()
                })?;
                jsonschema::validator_for(schema)
                    .map_err(|e| format!("json_schema: the schema is not valid: {e}"))?;
                Check::JsonSchema(schema.clone())
            }
            unknown => return Err(unknown_check(unknown)),
        };
        Ok(check)
    }
}

const REGEX_USAGE: &str =
    "write {matches_regex: \"<pattern>\"} or {matches_regex: {pattern: \"<pattern>\", flags: 2}}";
const CONTAINS_USAGE: &str =
    "write {contains: <text>} or {contains: {substring: <text>, case_sensitive: true}}";
const NOT_CONTAINS_USAGE: &str =
    "write {not_contains: <text>} or {not_contains: {substring: <text>, case_sensitive: true}}";
const MAX_LENGTH_USAGE: &str = "write {max_length: 200}";
const KEYS_USAGE: &str = "write {json_has_keys: [vendor, total]}";

/// The arguments given to a check in a config entry.
enum Args<'a> {
    /// A bare name, or a null value.
    None,
    /// A list, or a single value standing for a one-item list.
    Positional(Vec<&'a Value>, &'a Value),
    /// A mapping of argument names to values.
    Keyword(&'a Map<String, Value>, &'a Value),
}

impl<'a> Args<'a> {
    fn of(value: &'a Value) -> Args<'a> {
        match value {
            Value::Null => Args::None,
            Value::Array(items) => Args::Positional(items.iter().collect(), value),
            Value::Object(map) => Args::Keyword(map, value),
            scalar => Args::Positional(vec![scalar], value),
        }
    }

    /// The value as written in the config.
    fn raw(&self) -> Option<&'a Value> {
        match self {
            Args::None => None,
            Args::Positional(_, raw) | Args::Keyword(_, raw) => Some(raw),
        }
    }

    fn expect_none(&self, name: &str) -> Result<(), String> {
        let empty = match self {
            Args::None => true,
            Args::Positional(items, _) => items.is_empty(),
            Args::Keyword(map, _) => map.is_empty(),
        };
        if empty {
            Ok(())
        } else {
            Err(format!("{name} takes no arguments: write - {name}"))
        }
    }

    /// Binds the arguments to the check's parameters like a Python call would: positional
    /// ones fill `positional` in order, named ones may be any parameter. Every positional
    /// parameter is required; the named-only ones are optional.
    fn bind<const N: usize>(
        &self,
        name: &str,
        positional: &[&str],
        named_only: &[&str],
        usage: &str,
    ) -> Result<[Option<&'a Value>; N], String> {
        let params: Vec<&str> = positional.iter().chain(named_only).copied().collect();
        let mut bound: [Option<&'a Value>; N] = [None; N];
        match self {
            Args::None => {}
            Args::Positional(items, _) => {
                if items.len() > positional.len() {
                    return Err(format!(
                        "{name}: takes {} positional argument(s) but {} were given; {usage}",
                        positional.len(),
                        items.len()
                    ));
                }
                for (slot, item) in bound.iter_mut().zip(items) {
                    *slot = Some(item);
                }
            }
            Args::Keyword(map, _) => {
                for (key, value) in map.iter() {
                    let slot = params
                        .iter()
                        .position(|p| p == key)
                        .and_then(|index| bound.get_mut(index))
                        .ok_or_else(|| {
                            format!(
                                "{name}: unknown argument '{key}' (accepted: {}); {usage}",
                                params.join(", ")
                            )
                        })?;
                    *slot = Some(value);
                }
            }
        }
        for (param, slot) in positional.iter().zip(&bound) {
            if slot.is_none() {
                return Err(format!("{name}: missing argument '{param}'; {usage}"));
            }
        }
        Ok(bound)
    }
}

fn keys_arg(args: &Args<'_>) -> Result<Vec<String>, String> {
    let items = match args {
        Args::None => return Ok(Vec::new()),
        Args::Positional(items, _) => items,
        Args::Keyword(..) => {
            return Err(format!(
                "json_has_keys expects a list of key names; {KEYS_USAGE}"
            ));
        }
    };
    items
        .iter()
        .map(|item| {
            item.as_str().map(str::to_string).ok_or_else(|| {
                format!(
                    "json_has_keys: key names must be strings, got {}; quote it in YAML; {KEYS_USAGE}",
                    compact(item)
                )
            })
        })
        .collect()
}

fn string_arg(
    name: &str,
    param: &str,
    value: Option<&Value>,
    usage: &str,
) -> Result<String, String> {
    match value {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "{name}: {param} must be a string, got {}; quote it in YAML; {usage}",
            compact(other)
        )),
        None => Err(format!("{name}: missing argument '{param}'; {usage}")),
    }
}

fn invalid_spec(spec: &Value) -> String {
    format!(
        "invalid check spec {}: write a check name such as is_valid_json, or a mapping with one \
         key, the check name, such as {{json_has_keys: [vendor, total]}}",
        compact(spec)
    )
}

fn unknown_check(name: &str) -> String {
    let closest = Check::NAMES
        .iter()
        .map(|candidate| (strsim::sorensen_dice(name, candidate), candidate))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(similarity, _)| *similarity >= SUGGESTION_MIN_SIMILARITY);
    let hint = closest
        .map(|(_, c)| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default();
    format!(
        "unknown programmatic check '{name}'{hint}; valid checks: {}",
        Check::NAMES.join(", ")
    )
}

/// Least bigram similarity (Sørensen-Dice) at which an unknown check name gets a "did you
/// mean" hint: close enough for `is_json` or `regex`, far enough to stay silent on nonsense.
const SUGGESTION_MIN_SIMILARITY: f64 = 0.4;

/// A value as compact JSON, for error messages.
fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "?".to_string())
}

impl<'de> Deserialize<'de> for Check {
    /// Reads the entry as written, then the check it names; an unreadable check becomes an
    /// error the loader places at the entry's line.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spec = Value::deserialize(deserializer)?;
        Check::from_spec(&spec)
            .map_err(|problem| D::Error::custom(format!("{INVALID_VALUE}{problem}")))
    }
}

impl Serialize for Check {
    /// Writes the check in its shortest config form, which reads back as the same check.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.spec().serialize(serializer)
    }
}

impl Check {
    /// The check as a config entry in its shortest form: a bare name, or the name mapped to
    /// its one argument when the others are at their defaults.
    pub fn spec(&self) -> Value {
        let substring = |substring: &str, case_sensitive: bool| {
            if case_sensitive {
                json!({"substring": substring, "case_sensitive": true})
            } else {
                json!(substring)
            }
        };
        let args = match self {
            Check::IsValidJson => return json!(self.label()),
            Check::JsonHasKeys(keys) => json!(keys),
            Check::MatchesRegex { pattern, flags: 0 } => json!(pattern),
            Check::MatchesRegex { pattern, flags } => json!({"pattern": pattern, "flags": flags}),
            Check::Contains {
                substring: text,
                case_sensitive,
            }
            | Check::NotContains {
                substring: text,
                case_sensitive,
            } => substring(text, *case_sensitive),
            Check::MaxLength(max_chars) => json!(max_chars),
            Check::JsonSchema(schema) => schema.clone(),
        };
        let mut entry = Map::new();
        entry.insert(self.label().to_string(), args);
        Value::Object(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_reads_back_from_its_spec() {
        let checks = [
            Check::IsValidJson,
            Check::JsonHasKeys(vec!["vendor".into(), "total".into()]),
            Check::MatchesRegex {
                pattern: "\\d+".into(),
                flags: 0,
            },
            Check::MatchesRegex {
                pattern: "total".into(),
                flags: 2,
            },
            Check::Contains {
                substring: "cat".into(),
                case_sensitive: false,
            },
            Check::NotContains {
                substring: "TODO".into(),
                case_sensitive: true,
            },
            Check::MaxLength(200),
            Check::JsonSchema(json!({"type": "object", "required": ["total"]})),
        ];
        for check in checks {
            let spec = check.spec();
            assert_eq!(Check::from_spec(&spec), Ok(check), "{spec}");
        }
        assert_eq!(Check::IsValidJson.spec(), json!("is_valid_json"));
        assert_eq!(
            Check::MaxLength(5).spec(),
            json!({"max_length": 5}),
            "one argument is written as the value itself"
        );
    }
}
