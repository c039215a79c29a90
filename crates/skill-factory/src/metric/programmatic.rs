//! The programmatic metric: deterministic checks on the output, averaged.
//!
//! Each check scores the output in [0, 1] with a short note; the metric's score is their
//! mean and its feedback one line per check, `[<label>] pass: <note>` for a full score or
//! `[<label>] <score>: <note>` otherwise. The checks, labels and notes are the reference
//! tool's, with two changes: case-insensitive `contains` compares Unicode case folds (so `ß`
//! contains `SS`), and `json_schema` validates the output against a JSON Schema.
//!
//! In a config, a check is written as a bare name (`- is_valid_json`) or as a mapping with
//! one key, the check's name, whose value holds the arguments: a list for positional
//! arguments (`{json_has_keys: [vendor, total]}`), a mapping for named ones
//! (`{contains: {substring: cat, case_sensitive: true}}`) or a single value
//! (`{matches_regex: "\\d+"}`). See [`Check::from_spec`].

use async_trait::async_trait;
use fancy_regex::Regex;
use serde_json::{Map, Value};
use skill_factory_core::{MetricResult, Rollout, Task};

use super::json_text::parse_tolerant;
use super::text::casefold;
use super::{Metric, NotApplicable, pyregex};
use crate::pyrepr::{repr_str, repr_str_list, type_name};

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "programmatic";

/// How many schema violations a `json_schema` note lists before summarizing the rest.
const SCHEMA_VIOLATIONS_SHOWN: usize = 3;

/// Longest violation message kept in a `json_schema` note: a type error on a large object
/// would otherwise print the whole object.
const SCHEMA_MESSAGE_MAX_CHARS: usize = 200;

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
                pyregex::compile(&pattern, flags).map_err(|e| {
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

/// A check ready to run: its regex or schema compiled once.
enum Compiled {
    IsValidJson,
    JsonHasKeys(Vec<String>),
    MatchesRegex {
        pattern: String,
        regex: Regex,
    },
    Contains {
        substring: String,
        case_sensitive: bool,
        negate: bool,
    },
    MaxLength(usize),
    JsonSchema(Box<jsonschema::Validator>),
}

impl Compiled {
    fn new(check: &Check) -> Result<Compiled, String> {
        Ok(match check {
            Check::IsValidJson => Compiled::IsValidJson,
            Check::JsonHasKeys(keys) => Compiled::JsonHasKeys(keys.clone()),
            Check::MatchesRegex { pattern, flags } => Compiled::MatchesRegex {
                pattern: pattern.clone(),
                regex: pyregex::compile(pattern, *flags).map_err(|e| {
                    format!("matches_regex: invalid regular expression /{pattern}/: {e}")
                })?,
            },
            Check::Contains {
                substring,
                case_sensitive,
            } => Compiled::Contains {
                substring: substring.clone(),
                case_sensitive: *case_sensitive,
                negate: false,
            },
            Check::NotContains {
                substring,
                case_sensitive,
            } => Compiled::Contains {
                substring: substring.clone(),
                case_sensitive: *case_sensitive,
                negate: true,
            },
            Check::MaxLength(max) => Compiled::MaxLength(*max),
            Check::JsonSchema(schema) => Compiled::JsonSchema(Box::new(
                jsonschema::validator_for(schema)
                    .map_err(|e| format!("json_schema: the schema is not valid: {e}"))?,
            )),
        })
    }

    /// The check's score in [0, 1] and its note.
    fn run(&self, output: &str) -> (f64, String) {
        match self {
            Compiled::IsValidJson => match parse_tolerant(output) {
                Ok(_) => (1.0, "valid JSON".to_string()),
                Err(e) => (0.0, format!("invalid JSON: {e}")),
            },
            Compiled::JsonHasKeys(keys) => {
                let object = match parse_tolerant(output) {
                    Ok(Value::Object(map)) => map,
                    Ok(other) => return (0.0, format!("not a JSON object: {}", type_name(&other))),
                    Err(e) => return (0.0, format!("not a JSON object: {e}")),
                };
                let missing: Vec<&str> = keys
                    .iter()
                    .map(String::as_str)
                    .filter(|k| !object.contains_key(*k))
                    .collect();
                if missing.is_empty() {
                    return (1.0, "all keys present".to_string());
                }
                let present = keys.len() - missing.len();
                (
                    present as f64 / keys.len() as f64,
                    format!("missing keys: {}", repr_str_list(&missing)),
                )
            }
            Compiled::MatchesRegex { pattern, regex } => match regex.is_match(output) {
                Ok(true) => (1.0, format!("matched /{pattern}/")),
                Ok(false) => (0.0, format!("did not match /{pattern}/")),
                Err(e) => (
                    0.0,
                    format!("did not match /{pattern}/ (the regex engine gave up: {e})"),
                ),
            },
            Compiled::Contains {
                substring,
                case_sensitive,
                negate,
            } => {
                let found = if *case_sensitive {
                    output.contains(substring.as_str())
                } else {
                    casefold(output).contains(&casefold(substring))
                };
                let note = if found {
                    format!("contains {}", repr_str(substring))
                } else {
                    format!("missing {}", repr_str(substring))
                };
                if *negate {
                    (
                        f64::from(u8::from(!found)),
                        format!("must not contain {note}"),
                    )
                } else {
                    (f64::from(u8::from(found)), note)
                }
            }
            Compiled::MaxLength(max) => {
                let length = output.chars().count();
                if length <= *max {
                    (1.0, format!("{length} <= {max} chars"))
                } else {
                    (0.0, format!("{length} > {max} chars"))
                }
            }
            Compiled::JsonSchema(validator) => {
                let instance = match parse_tolerant(output) {
                    Ok(value) => value,
                    Err(e) => return (0.0, format!("invalid JSON: {e}")),
                };
                let violations: Vec<String> = validator
                    .iter_errors(&instance)
                    .map(|error| {
                        let pointer = error.instance_path().as_str();
                        let place = if pointer.is_empty() {
                            "(root)"
                        } else {
                            pointer
                        };
                        format!(
                            "{place}: {}",
                            truncate(&error.to_string(), SCHEMA_MESSAGE_MAX_CHARS)
                        )
                    })
                    .collect();
                if violations.is_empty() {
                    return (1.0, "matches the schema".to_string());
                }
                let shown = violations
                    .iter()
                    .take(SCHEMA_VIOLATIONS_SHOWN)
                    .cloned()
                    .collect::<Vec<_>>();
                let mut note = format!("schema violations: {}", shown.join("; "));
                if violations.len() > SCHEMA_VIOLATIONS_SHOWN {
                    note.push_str(&format!(
                        "; and {} more",
                        violations.len() - SCHEMA_VIOLATIONS_SHOWN
                    ));
                }
                (0.0, note)
            }
        }
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Runs deterministic checks on the output and averages their scores.
pub struct ProgrammaticMetric {
    checks: Vec<(&'static str, Compiled)>,
}

impl ProgrammaticMetric {
    /// A metric running these checks, in order. Fails without checks, or when a regex or a
    /// schema does not compile.
    pub fn new(checks: Vec<Check>) -> Result<Self, String> {
        if checks.is_empty() {
            return Err("the programmatic metric needs at least one check in 'checks'".to_string());
        }
        let checks = checks
            .iter()
            .map(|check| Ok((check.label(), Compiled::new(check)?)))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(ProgrammaticMetric { checks })
    }
}

#[async_trait]
impl Metric for ProgrammaticMetric {
    fn name(&self) -> &str {
        NAME
    }

    async fn score(&self, _task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        if let Some(error) = &rollout.error {
            return Ok(super::rollout_failed(NAME, error));
        }
        let mut total = 0.0;
        let mut lines = Vec::with_capacity(self.checks.len());
        let mut parts = Vec::with_capacity(self.checks.len());
        for (label, check) in &self.checks {
            let (score, note) = check.run(&rollout.output);
            let score = skill_factory_core::score::clamp_unit(score);
            total += score;
            lines.push(if score == 1.0 {
                format!("[{label}] pass: {note}")
            } else {
                format!("[{label}] {score:.2}: {note}")
            });
            parts.push((*label, score));
        }
        let mean = total / self.checks.len() as f64;
        let result = MetricResult::new(NAME, mean, lines.join("\n"));
        Ok(parts
            .into_iter()
            .fold(result, |r, (label, score)| r.with_part(label, score)))
    }
}
