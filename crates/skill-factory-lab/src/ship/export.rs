//! Exports of a probe set for production: JSON (the probe set's saved form), TypeScript and
//! Python modules with the hash, model, pinned version, state budget, threshold, the compiled
//! questions, a `score()` that returns NaN when an answer it reads is missing, `flags()`, and,
//! when a declarative policy is given, the policy compiled into a `verdict()`.
//!
//! The generated code computes exactly what the lab computes: sums and means use the same
//! compensated summation as the lab's scorer (Python 3.12's `sum()`), so a score is the same
//! float in Rust, TypeScript and Python, not just close. String literals are JSON strings with
//! every non-ASCII character escaped, valid in both languages; float literals are Python's
//! `repr`, which both languages read back to the same float.

use std::fmt::Write as _;

use serde_json::{Number, Value};
use skill_factory_pycompat::{json, repr};

use crate::LabError;
use crate::measure::policy::{Condition, Op, PolicySpec};
use crate::probe::probeset::ProbeSet;
use crate::probe::score::ScoreExpr;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The probe set file itself.
    Json,
    /// A TypeScript module.
    TypeScript,
    /// The same module as JavaScript (an ES module, the types left out), for `.js` and `.mjs`.
    JavaScript,
    /// A Python module.
    Python,
}

impl Format {
    /// The format a file name's suffix means: `.json`; `.ts`, `.mts`; `.js`, `.mjs`; `.py`.
    pub fn of_path(path: &std::path::Path) -> Result<Format, LabError> {
        let suffix = path
            .extension()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        match suffix {
            "json" => Ok(Format::Json),
            "ts" | "mts" => Ok(Format::TypeScript),
            "js" | "mjs" => Ok(Format::JavaScript),
            "py" => Ok(Format::Python),
            _ => Err(LabError::invalid(format!(
                "{}: cannot tell the export format from the suffix '.{suffix}'; name the file .json, .ts (or .mts), .js (or .mjs) or .py, or pass --format json|ts|js|py",
                path.display()
            ))),
        }
    }

    /// The format called `name` (`json`, `ts`, `py`).
    pub fn named(name: &str) -> Result<Format, LabError> {
        match name {
            "json" => Ok(Format::Json),
            "ts" => Ok(Format::TypeScript),
            "js" => Ok(Format::JavaScript),
            "py" => Ok(Format::Python),
            other => Err(LabError::invalid(format!(
                "--format {other}: use json, ts, js or py"
            ))),
        }
    }
}

/// The text of `probeset` in `format`, with `policy` compiled in (TypeScript and Python).
pub fn export(
    probeset: &ProbeSet,
    format: Format,
    policy: Option<&PolicySpec>,
) -> Result<String, LabError> {
    if probeset.threshold.is_none() {
        return Err(LabError::invalid(format!(
            "probe set '{}' has no threshold yet: fit it first (`skill-factory optimize` or `lab select --out`)",
            probeset.name
        )));
    }
    if let Some(policy) = policy.filter(|_| format != Format::Json)
        && let Some((argv, _)) = &policy.command
    {
        return Err(LabError::invalid(format!(
            "policy '{}' runs a command (`{}`), which cannot be compiled into an export: export without the policy, or write it as rules",
            policy.name,
            argv.join(" ")
        )));
    }
    if let Some(policy) = policy {
        let missing: Vec<String> = policy
            .questions()
            .into_iter()
            .filter(|id| !probeset.bank.contains(id))
            .collect();
        if !missing.is_empty() && format != Format::Json {
            return Err(LabError::invalid(format!(
                "policy '{}' reads {}, which probe set '{}' does not ask: production could not answer it; add the question to the probe set (keep_questions) or drop the rule",
                policy.name,
                missing.join(", "),
                probeset.name
            )));
        }
    }
    Ok(match format {
        Format::Json => json::dumps_indent(&probeset.to_json(), 1) + "\n",
        Format::TypeScript => Lang::TypeScript.module(probeset, policy)?,
        Format::JavaScript => Lang::JavaScript.module(probeset, policy)?,
        Format::Python => Lang::Python.module(probeset, policy)?,
    })
}

/// A JSON string literal of `text` with every non-ASCII character escaped (JavaScript reads
/// it as `text`).
fn json_literal(text: &str) -> String {
    json::dumps(&Value::String(text.to_string()))
}

/// A Python string literal of `text`, ASCII only: as [`json_literal`], but a character beyond
/// the Basic Multilingual Plane is one `\UXXXXXXXX` escape (Python reads a JSON surrogate
/// pair as two lone surrogates, not as the character).
fn python_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) >= 0x7f && (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) > 0xffff => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number literal: an integer as written, a float as Python's `repr`.
fn number(n: &Number) -> String {
    if n.is_f64() {
        repr::repr_float(n.as_f64().unwrap_or(f64::NAN))
    } else {
        n.to_string()
    }
}

fn float(x: f64) -> String {
    repr::repr_float(x)
}

#[derive(Clone, Copy, PartialEq)]
enum Lang {
    TypeScript,
    JavaScript,
    Python,
}

impl Lang {
    /// A string literal this language reads as `text`.
    fn lit(self, text: &str) -> String {
        match self {
            Lang::Python => python_literal(text),
            _ => json_literal(text),
        }
    }

    /// `annotation` in TypeScript, nothing in JavaScript.
    fn ty(self, annotation: &'static str) -> &'static str {
        if self == Lang::TypeScript {
            annotation
        } else {
            ""
        }
    }

    fn comment(self) -> &'static str {
        match self {
            Lang::TypeScript | Lang::JavaScript => "//",
            Lang::Python => "#",
        }
    }

    fn nan(self) -> &'static str {
        match self {
            Lang::TypeScript | Lang::JavaScript => "Number.NaN",
            Lang::Python => "math.nan",
        }
    }

    /// The answer to `id`, NaN when missing.
    fn answer(self, id: &str) -> String {
        match self {
            Lang::TypeScript | Lang::JavaScript => format!("(p[{}] ?? Number.NaN)", self.lit(id)),
            Lang::Python => format!("_p(p, {})", self.lit(id)),
        }
    }

    fn list(self, items: &[String]) -> String {
        format!("[{}]", items.join(", "))
    }

    fn expr(self, e: &ScoreExpr) -> String {
        let each = |items: &[ScoreExpr]| items.iter().map(|i| self.expr(i)).collect::<Vec<_>>();
        match e {
            ScoreExpr::Question(id) => self.answer(id),
            ScoreExpr::Number(n) => number(n),
            ScoreExpr::Mean(items) => {
                format!("(_sum({}) / {})", self.list(&each(items)), items.len())
            }
            ScoreExpr::Sum(items) => format!("_sum({})", self.list(&each(items))),
            ScoreExpr::Max(items) => match self {
                Lang::TypeScript | Lang::JavaScript => {
                    format!("Math.max({})", each(items).join(", "))
                }
                Lang::Python => format!("_max({})", each(items).join(", ")),
            },
            ScoreExpr::Min(items) => match self {
                Lang::TypeScript | Lang::JavaScript => {
                    format!("Math.min({})", each(items).join(", "))
                }
                Lang::Python => format!("_min({})", each(items).join(", ")),
            },
            ScoreExpr::Weighted(pairs) => {
                let terms: Vec<String> = pairs
                    .iter()
                    .map(|(w, e)| format!("{} * {}", number(w), self.expr(e)))
                    .collect();
                format!("(0.0 + {})", terms.join(" + "))
            }
            ScoreExpr::Scale(e, k) => format!("({} * {})", self.expr(e), number(k)),
        }
    }

    fn compare(self, value: &str, bounds: &[(Op, f64)]) -> String {
        let parts: Vec<String> = bounds
            .iter()
            .map(|(op, bound)| format!("{value} {} {}", op.symbol(), float(*bound)))
            .collect();
        format!("({})", parts.join(self.and()))
    }

    fn and(self) -> &'static str {
        match self {
            Lang::TypeScript | Lang::JavaScript => " && ",
            Lang::Python => " and ",
        }
    }

    fn or(self) -> &'static str {
        match self {
            Lang::TypeScript | Lang::JavaScript => " || ",
            Lang::Python => " or ",
        }
    }

    /// A condition over `s` (the score), `p` (the answers) and `example` (its fields).
    fn condition(self, c: &Condition) -> String {
        let field = |name: &str| match self {
            Lang::TypeScript | Lang::JavaScript => format!("example[{}]", self.lit(name)),
            Lang::Python => format!("example.get({})", self.lit(name)),
        };
        match c {
            Condition::Flagged(true) => "(s >= THRESHOLD)".to_string(),
            Condition::Flagged(false) => match self {
                Lang::TypeScript | Lang::JavaScript => "!(s >= THRESHOLD)".to_string(),
                Lang::Python => "(not (s >= THRESHOLD))".to_string(),
            },
            Condition::Scored(true) => match self {
                Lang::Python => "(not math.isnan(s))".to_string(),
                _ => "!Number.isNaN(s)".to_string(),
            },
            Condition::Scored(false) => match self {
                Lang::Python => "math.isnan(s)".to_string(),
                _ => "Number.isNaN(s)".to_string(),
            },
            Condition::Score(bounds) => self.compare("s", bounds),
            Condition::Margin(offsets) => {
                let parts: Vec<String> = offsets
                    .iter()
                    .map(|(op, x)| format!("s {} (THRESHOLD + {})", op.symbol(), float(*x)))
                    .collect();
                format!("({})", parts.join(self.and()))
            }
            Condition::Answer(id, bounds) => self.compare(&self.answer(id), bounds),
            Condition::Missing(id) => match self {
                Lang::TypeScript | Lang::JavaScript => format!("Number.isNaN({})", self.answer(id)),
                Lang::Python => format!("math.isnan({})", self.answer(id)),
            },
            Condition::MetadataIn(name, values) => {
                let values: Vec<String> = values.iter().map(|v| self.value(v)).collect();
                match self {
                    Lang::TypeScript | Lang::JavaScript => {
                        format!("{}.includes({})", self.list(&values), field(name))
                    }
                    Lang::Python => format!("_is_in({}, {})", field(name), self.list(&values)),
                }
            }
            Condition::MetadataCompare(name, bounds) => {
                self.compare(&format!("_num({})", field(name)), bounds)
            }
            Condition::All(all) => format!(
                "({})",
                all.iter()
                    .map(|c| self.condition(c))
                    .collect::<Vec<_>>()
                    .join(self.and())
            ),
            Condition::Any(any) => format!(
                "({})",
                any.iter()
                    .map(|c| self.condition(c))
                    .collect::<Vec<_>>()
                    .join(self.or())
            ),
            Condition::Not(inner) => match self {
                Lang::TypeScript | Lang::JavaScript => format!("!{}", self.condition(inner)),
                Lang::Python => format!("(not {})", self.condition(inner)),
            },
        }
    }

    /// A JSON value as a literal (metadata values are text, numbers, booleans or null).
    fn value(self, v: &Value) -> String {
        match (self, v) {
            (Lang::Python, Value::Bool(true)) => "True".into(),
            (Lang::Python, Value::Bool(false)) => "False".into(),
            (Lang::Python, Value::Null) => "None".into(),
            (_, Value::Number(n)) => number(n),
            (_, other) => json::dumps(other),
        }
    }

    fn module(self, ps: &ProbeSet, policy: Option<&PolicySpec>) -> Result<String, LabError> {
        let hash = ps.sha256();
        let c = self.comment();
        let threshold = ps.threshold.map_or_else(|| self.nan().to_string(), float);
        let questions = ps
            .compiled_questions()
            .map_err(|e| LabError::invalid(format!("probe set '{}': {e}", ps.name)))?;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{c} Generated by skill-factory from probe set {}. Do not edit: regenerate with `skill-factory lab export`.",
            repr::repr_str(&ps.name)
        );
        let _ = writeln!(out, "{c} sha256: {hash}");
        out.push('\n');
        let pinned = ps.pinned_version.as_deref().map(|v| self.lit(v));
        match self {
            Lang::TypeScript | Lang::JavaScript => {
                let _ = writeln!(out, "export const PROBESET_SHA256 = {};", self.lit(&hash));
                let _ = writeln!(out, "export const MODEL = {};", self.lit(&ps.model));
                let _ = writeln!(
                    out,
                    "export const PINNED_VERSION{} = {};",
                    self.ty(": string | null"),
                    pinned.unwrap_or_else(|| "null".into())
                );
                let _ = writeln!(out, "export const STATE_BUDGET = {};", ps.state_budget);
                let _ = writeln!(out, "export const THRESHOLD = {threshold};");
                out.push('\n');
                out.push_str(self.ty(
                    "export interface ChoiceQuestion {\n  readonly type: \"choice\";\n  readonly instructions: string;\n  readonly criteria: { readonly true: string; readonly false: string };\n}\n\n",
                ));
                let _ = writeln!(
                    out,
                    "export const QUESTIONS{} = {{",
                    self.ty(": Record<string, ChoiceQuestion>")
                );
                for (id, q) in &questions {
                    let _ = write!(
                        out,
                        "  {}: {{\n    type: \"choice\",\n    instructions: {},\n    criteria: {{ true: {}, false: {} }},\n  }},\n",
                        self.lit(id),
                        self.lit(&q.instructions),
                        self.lit(&q.if_true),
                        self.lit(&q.if_false)
                    );
                }
                out.push_str("};\n\n");
                let _ = write!(
                    out,
                    "/** Python's sum(): compensated (Neumaier) summation, as the lab scores. */\nfunction _sum(xs{}){} {{",
                    self.ty(": number[]"),
                    self.ty(": number")
                );
                out.push_str("\n  let total = 0.0;\n  let compensation = 0.0;\n  for (const x of xs) {\n    const t = total + x;\n    compensation += Math.abs(total) >= Math.abs(x) ? total - t + x : x - t + total;\n    total = t;\n  }\n  return compensation !== 0 && Number.isFinite(compensation) ? total + compensation : total;\n}\n\n",
                );
                let answers = self.ty(": Record<string, number>");
                let _ = write!(
                    out,
                    "/** {}. NaN when a question it reads was not answered. */\nexport function score(p{answers}){} {{\n  return {};\n}}\n\n",
                    ps.score.describe(),
                    self.ty(": number"),
                    self.expr(&ps.score)
                );
                let _ = writeln!(
                    out,
                    "/** Whether the score reaches the threshold (NaN never does). */\nexport function flags(p{answers}){} {{\n  return score(p) >= THRESHOLD;\n}}",
                    self.ty(": boolean")
                );
                if let Some(policy) = policy {
                    out.push('\n');
                    let levels: Vec<String> = policy.levels.iter().map(|l| self.lit(l)).collect();
                    let _ = writeln!(out, "export const POLICY = {};", self.lit(&policy.name));
                    let _ = writeln!(
                        out,
                        "export const LEVELS{} = {};",
                        self.ty(": readonly string[]"),
                        self.list(&levels)
                    );
                    out.push('\n');
                    let _ = write!(
                        out,
                        "function _num(v{}){} {{\n  return typeof v === \"number\" ? v : Number.NaN;\n}}\n\n",
                        self.ty(": unknown"),
                        self.ty(": number")
                    );
                    let _ = writeln!(
                        out,
                        "/** Policy {}: the level of the first rule that matches, else {}. `example` holds the example's id, group, source and metadata fields. */",
                        repr::repr_str(&policy.name),
                        self.lit(&policy.levels[0])
                    );
                    let _ = writeln!(
                        out,
                        "export function verdict(p{answers}, example{} = {{}}){} {{\n  const s = score(p);",
                        self.ty(": Record<string, unknown>"),
                        self.ty(": string")
                    );
                    for rule in &policy.rules {
                        let _ = writeln!(
                            out,
                            "  if ({}) return {};",
                            self.condition(&rule.when),
                            self.lit(&policy.levels[rule.level])
                        );
                    }
                    let _ = writeln!(out, "  return {};\n}}", self.lit(&policy.levels[0]));
                }
            }
            Lang::Python => {
                out.push_str("import math\n\n");
                let _ = writeln!(out, "PROBESET_SHA256 = {}", self.lit(&hash));
                let _ = writeln!(out, "MODEL = {}", self.lit(&ps.model));
                let _ = writeln!(
                    out,
                    "PINNED_VERSION = {}",
                    pinned.unwrap_or_else(|| "None".into())
                );
                let _ = writeln!(out, "STATE_BUDGET = {}", ps.state_budget);
                let _ = writeln!(out, "THRESHOLD = {threshold}");
                out.push('\n');
                out.push_str("QUESTIONS = {\n");
                for (id, q) in &questions {
                    let _ = write!(
                        out,
                        "    {}: {{\n        \"type\": \"choice\",\n        \"instructions\": {},\n        \"criteria\": {{\"true\": {}, \"false\": {}}},\n    }},\n",
                        self.lit(id),
                        self.lit(&q.instructions),
                        self.lit(&q.if_true),
                        self.lit(&q.if_false)
                    );
                }
                out.push_str("}\n\n\n");
                out.push_str(
                    "def _p(p, qid):\n    \"\"\"The answer to qid, NaN when it was not answered.\"\"\"\n    v = p.get(qid)\n    return math.nan if v is None else float(v)\n\n\n",
                );
                out.push_str(
                    "def _max(*xs):\n    return math.nan if any(math.isnan(x) for x in xs) else max(xs)\n\n\n",
                );
                out.push_str(
                    "def _min(*xs):\n    return math.nan if any(math.isnan(x) for x in xs) else min(xs)\n\n\n",
                );
                out.push_str(
                    "def _sum(xs):\n    \"\"\"Python 3.12's sum(): compensated (Neumaier) summation, as the lab scores.\"\"\"\n    total = 0.0\n    compensation = 0.0\n    for x in xs:\n        t = total + x\n        compensation += (total - t) + x if abs(total) >= abs(x) else (x - t) + total\n        total = t\n    return total + compensation if compensation != 0 and math.isfinite(compensation) else total\n\n\n",
                );
                let _ = write!(
                    out,
                    "def score(p):\n    \"\"\"{}. NaN when a question it reads was not answered.\"\"\"\n    return {}\n\n\n",
                    ps.score
                        .describe()
                        .replace('\\', "\\\\")
                        .replace("\"\"\"", "\\\"\\\"\\\""),
                    self.expr(&ps.score)
                );
                out.push_str(
                    "def flags(p):\n    \"\"\"Whether the score reaches the threshold (NaN never does).\"\"\"\n    return score(p) >= THRESHOLD\n",
                );
                if let Some(policy) = policy {
                    out.push_str("\n\n");
                    let levels: Vec<String> = policy.levels.iter().map(|l| self.lit(l)).collect();
                    let _ = writeln!(out, "POLICY = {}", self.lit(&policy.name));
                    let _ = writeln!(out, "LEVELS = ({},)", levels.join(", "));
                    out.push_str("\n\n");
                    out.push_str(
                        "def _num(v):\n    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan\n\n\n",
                    );
                    out.push_str(
                        "def _is_in(v, values):\n    return any(type(v) is type(x) and v == x for x in values)\n\n\n",
                    );
                    let _ = write!(
                        out,
                        "def verdict(p, example=None):\n    \"\"\"Policy {}: the level of the first rule that matches, else {}.\n\n    example holds the example's id, group, source and metadata fields.\n    \"\"\"\n    example = example or {{}}\n    s = score(p)\n",
                        repr::repr_str(&policy.name),
                        self.lit(&policy.levels[0])
                    );
                    for rule in &policy.rules {
                        let _ = writeln!(
                            out,
                            "    if {}:\n        return {}",
                            self.condition(&rule.when),
                            self.lit(&policy.levels[rule.level])
                        );
                    }
                    let _ = writeln!(out, "    return {}", self.lit(&policy.levels[0]));
                }
            }
        }
        Ok(out)
    }
}
