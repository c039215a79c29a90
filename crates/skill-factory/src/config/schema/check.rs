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
    pub fn from_spec(spec: &Value) -> Result<Check, CheckError> {
        let (name, args) = match spec {
            Value::String(name) => (name.as_str(), Args::None),
            Value::Object(map) if map.len() == 1 => match map.iter().next() {
                Some((name, value)) => (name.as_str(), Args::of(value)),
                None => return Err(CheckError::InvalidSpec(spec.clone())),
            },
            _ => return Err(CheckError::InvalidSpec(spec.clone())),
        };
        let check = match name {
            "is_valid_json" => {
                args.expect_none("is_valid_json")?;
                Check::IsValidJson
            }
            "json_has_keys" => Check::JsonHasKeys(keys_arg(&args)?),
            "matches_regex" => {
                let name = "matches_regex";
                let [pattern, flags] = args.bind(name, &["pattern"], &["flags"], REGEX_USAGE)?;
                let pattern = string_arg(name, "pattern", pattern, REGEX_USAGE)?;
                let flags = match flags {
                    None => 0,
                    Some(v) => v
                        .as_i64()
                        .ok_or_else(|| CheckError::FlagsNotInteger(v.clone()))?,
                };
                compile_regex(&pattern, flags)?;
                Check::MatchesRegex { pattern, flags }
            }
            "contains" | "not_contains" => {
                let (name, usage) = if name == "contains" {
                    ("contains", CONTAINS_USAGE)
                } else {
                    ("not_contains", NOT_CONTAINS_USAGE)
                };
                let [substring, case_sensitive] =
                    args.bind(name, &["substring"], &["case_sensitive"], usage)?;
                let substring = string_arg(name, "substring", substring, usage)?;
                let case_sensitive = match case_sensitive {
                    None => false,
                    Some(v) => v
                        .as_bool()
                        .ok_or_else(|| CheckError::CaseSensitiveNotBool {
                            check: name,
                            value: v.clone(),
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
                let [max_chars] = args.bind("max_length", &["max_chars"], &[], MAX_LENGTH_USAGE)?;
                let max_chars = max_chars
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or(CheckError::MaxCharsNotCount)?;
                Check::MaxLength(max_chars)
            }
            "json_schema" => {
                let schema = args
                    .raw()
                    .filter(|v| v.is_object() || v.is_boolean())
                    .ok_or(CheckError::SchemaNotMapping)?;
                compile_schema(schema)?;
                Check::JsonSchema(schema.clone())
            }
            unknown => {
                return Err(CheckError::Unknown {
                    name: unknown.to_string(),
                });
            }
        };
        Ok(check)
    }
}

/// A `matches_regex` pattern compiled, as the config check and the metric both need it.
pub(crate) fn compile_regex(pattern: &str, flags: i64) -> Result<fancy_regex::Regex, CheckError> {
    re::compile(pattern, flags).map_err(|source| CheckError::InvalidRegex {
        pattern: pattern.to_string(),
        source,
    })
}

/// A `json_schema` schema compiled, as the config check and the metric both need it.
pub(crate) fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, CheckError> {
    jsonschema::validator_for(schema).map_err(|source| CheckError::InvalidSchema(Box::new(source)))
}

/// Why an entry of `metric.programmatic.checks` cannot be read, or its pattern or schema
/// cannot be compiled. The loader places it at the entry's line, so each message says what
/// to write instead.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Neither a check name nor a mapping with one key.
    #[error(
        "invalid check spec {}: write a check name such as is_valid_json, or a mapping with one key, the check name, such as {{json_has_keys: [vendor, total]}}",
        compact(.0)
    )]
    InvalidSpec(Value),
    /// A name that is no check; the closest check name, if any, is suggested.
    #[error(
        "unknown programmatic check '{name}'{}; valid checks: {}",
        suggestion(name),
        Check::NAMES.join(", ")
    )]
    Unknown {
        /// The name given.
        name: String,
    },
    /// Arguments given to a check that takes none.
    #[error("{0} takes no arguments: write - {0}")]
    TakesNoArguments(&'static str),
    /// More positional arguments than the check has.
    #[error("{check}: takes {expected} positional argument(s) but {given} were given; {usage}")]
    TooManyArguments {
        /// The check.
        check: &'static str,
        /// How many it takes.
        expected: usize,
        /// How many were given.
        given: usize,
        /// How to write it.
        usage: &'static str,
    },
    /// A named argument the check does not have.
    #[error("{check}: unknown argument '{key}' (accepted: {}); {usage}", accepted.join(", "))]
    UnknownArgument {
        /// The check.
        check: &'static str,
        /// The argument given.
        key: String,
        /// The arguments it has.
        accepted: Vec<&'static str>,
        /// How to write it.
        usage: &'static str,
    },
    /// A required argument left out.
    #[error("{check}: missing argument '{param}'; {usage}")]
    MissingArgument {
        /// The check.
        check: &'static str,
        /// The argument.
        param: &'static str,
        /// How to write it.
        usage: &'static str,
    },
    /// A text argument given as another kind of value (YAML reads `yes` or `12` unquoted as
    /// no string).
    #[error(
        "{check}: {param} must be a string, got {}; quote it in YAML; {usage}",
        compact(value)
    )]
    NotAString {
        /// The check.
        check: &'static str,
        /// The argument.
        param: &'static str,
        /// The value given.
        value: Value,
        /// How to write it.
        usage: &'static str,
    },
    /// `matches_regex` flags that are not an integer.
    #[error("matches_regex: flags must be an integer such as 2 (re.I), got {}", compact(.0))]
    FlagsNotInteger(Value),
    /// A pattern Python's `re` would not compile either.
    #[error("matches_regex: invalid regular expression /{pattern}/: {source}")]
    InvalidRegex {
        /// The pattern.
        pattern: String,
        /// What the regex compiler said.
        source: re::PatternError,
    },
    /// `case_sensitive` that is not a boolean.
    #[error(
        "{check}: case_sensitive must be true or false, got {}",
        compact(value)
    )]
    CaseSensitiveNotBool {
        /// The check.
        check: &'static str,
        /// The value given.
        value: Value,
    },
    /// `max_length` without a character count.
    #[error("max_length: max_chars must be a whole number >= 0; {MAX_LENGTH_USAGE}")]
    MaxCharsNotCount,
    /// `json_has_keys` given named arguments.
    #[error("json_has_keys expects a list of key names; {KEYS_USAGE}")]
    KeysNotAList,
    /// A key name of `json_has_keys` that is not a string.
    #[error(
        "json_has_keys: key names must be strings, got {}; quote it in YAML; {KEYS_USAGE}",
        compact(.0)
    )]
    KeyNotAString(Value),
    /// `json_schema` given something that cannot be a schema.
    #[error(
        "json_schema: expects a JSON Schema mapping, e.g. {{json_schema: {{type: object, required: [total]}}}}"
    )]
    SchemaNotMapping,
    /// A schema the validator does not accept.
    #[error("json_schema: the schema is not valid: {0}")]
    InvalidSchema(#[source] Box<jsonschema::ValidationError<'static>>),
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

    fn expect_none(&self, name: &'static str) -> Result<(), CheckError> {
        let empty = match self {
            Args::None => true,
            Args::Positional(items, _) => items.is_empty(),
            Args::Keyword(map, _) => map.is_empty(),
        };
        if empty {
            Ok(())
        } else {
            Err(CheckError::TakesNoArguments(name))
        }
    }

    /// Binds the arguments to the check's parameters like a Python call would: positional
    /// ones fill `positional` in order, named ones may be any parameter. Every positional
    /// parameter is required; the named-only ones are optional.
    fn bind<const N: usize>(
        &self,
        name: &'static str,
        positional: &[&'static str],
        named_only: &[&'static str],
        usage: &'static str,
    ) -> Result<[Option<&'a Value>; N], CheckError> {
        let params: Vec<&'static str> = positional.iter().chain(named_only).copied().collect();
        let mut bound: [Option<&'a Value>; N] = [None; N];
        match self {
            Args::None => {}
            Args::Positional(items, _) => {
                if items.len() > positional.len() {
                    return Err(CheckError::TooManyArguments {
                        check: name,
                        expected: positional.len(),
                        given: items.len(),
                        usage,
                    });
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
                        .ok_or_else(|| CheckError::UnknownArgument {
                            check: name,
                            key: key.clone(),
                            accepted: params.clone(),
                            usage,
                        })?;
                    *slot = Some(value);
                }
            }
        }
        for (&param, slot) in positional.iter().zip(&bound) {
            if slot.is_none() {
                return Err(CheckError::MissingArgument {
                    check: name,
                    param,
                    usage,
                });
            }
        }
        Ok(bound)
    }
}

fn keys_arg(args: &Args<'_>) -> Result<Vec<String>, CheckError> {
    let items = match args {
        Args::None => return Ok(Vec::new()),
        Args::Positional(items, _) => items,
        Args::Keyword(..) => return Err(CheckError::KeysNotAList),
    };
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| CheckError::KeyNotAString((*item).clone()))
        })
        .collect()
}

fn string_arg(
    check: &'static str,
    param: &'static str,
    value: Option<&Value>,
    usage: &'static str,
) -> Result<String, CheckError> {
    match value {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(CheckError::NotAString {
            check,
            param,
            value: other.clone(),
            usage,
        }),
        None => Err(CheckError::MissingArgument {
            check,
            param,
            usage,
        }),
    }
}

/// ` (did you mean 'contains'?)` for an unknown check name close to a real one, else nothing.
fn suggestion(name: &str) -> String {
    Check::NAMES
        .iter()
        .map(|candidate| (strsim::sorensen_dice(name, candidate), candidate))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(similarity, _)| *similarity >= SUGGESTION_MIN_SIMILARITY)
        .map(|(_, c)| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default()
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

impl schemars::JsonSchema for Check {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Check".into()
    }

    /// A bare check name, or a mapping of one check name to its arguments.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "title": "check",
            "anyOf": [
                {"type": "string", "enum": Check::NAMES},
                {
                    "type": "object",
                    "minProperties": 1,
                    "maxProperties": 1,
                    "propertyNames": {"enum": Check::NAMES}
                }
            ]
        })
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
            assert_eq!(
                Check::from_spec(&spec).map_err(|e| e.to_string()),
                Ok(check),
                "{spec}"
            );
        }
        assert_eq!(Check::IsValidJson.spec(), json!("is_valid_json"));
        assert_eq!(
            Check::MaxLength(5).spec(),
            json!({"max_length": 5}),
            "one argument is written as the value itself"
        );
    }
}
