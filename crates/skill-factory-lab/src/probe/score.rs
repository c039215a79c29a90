//! The score expression: how a probe set turns its answers (P(true) per question) into one
//! number, written as JSON.
//!
//! | JSON | Meaning |
//! |---|---|
//! | `"qid"` | P(true) of that question |
//! | a number | a constant |
//! | `{"mean": [e, ...]}`, `max`, `min`, `sum` | a reducer over a non-empty list |
//! | `{"weighted": [[w, e], ...]}` | the sum of w * e |
//! | `{"scale": [e, k]}` | e * k |
//!
//! If any question it reads has no answer, the expression has no value (and flags nothing).

use std::collections::HashMap;
use std::hash::BuildHasher;

use serde_json::{Map, Number, Value};
use skill_factory_pycompat::{float, repr};

use crate::LabError;
use crate::probe::question::shown;

/// A parsed score expression. Numbers keep the form they were written in (`2` stays `2`,
/// `2.0` stays `2.0`), because the probe set's hash is taken over the expression as written.
#[derive(Debug, Clone, PartialEq)]
pub enum ScoreExpr {
    /// P(true) of the question with this id.
    Question(String),
    /// A constant.
    Number(Number),
    /// The arithmetic mean.
    Mean(Vec<ScoreExpr>),
    /// The largest value.
    Max(Vec<ScoreExpr>),
    /// The smallest value.
    Min(Vec<ScoreExpr>),
    /// The sum.
    Sum(Vec<ScoreExpr>),
    /// The sum of weight * value.
    Weighted(Vec<(Number, ScoreExpr)>),
    /// The value times a factor.
    Scale(Box<ScoreExpr>, Number),
}

/// The reducers, by JSON name.
const REDUCERS: [&str; 4] = ["mean", "max", "min", "sum"];

impl ScoreExpr {
    /// Reads an expression. Refused: booleans anywhere (JSON `true` is not `1` here), `null`,
    /// a list where an expression is expected (a list is only an operator's argument), an
    /// object with other than exactly one key, an unknown operator, an empty argument list,
    /// and a non-numeric weight or factor.
    pub fn parse(value: &Value) -> Result<ScoreExpr, LabError> {
        match value {
            Value::String(id) => Ok(ScoreExpr::Question(id.clone())),
            Value::Number(n) => Ok(ScoreExpr::Number(n.clone())),
            Value::Bool(b) => Err(LabError::invalid(format!(
                "a score cannot be a boolean ({b}): write a question id, a number (1 or 0) or \
                 an operator object"
            ))),
            Value::Null => Err(LabError::invalid(
                "a score cannot be null: write a question id, a number or an operator object \
                 such as {\"mean\": [\"q1\", \"q2\"]}",
            )),
            Value::Array(_) => Err(LabError::invalid(format!(
                "a list is not a score expression: {}; combine its items with an operator, \
                 e.g. {{\"mean\": [...]}} or {{\"max\": [...]}}",
                shown(value)
            ))),
            Value::Object(map) => {
                let mut entries = map.iter();
                let (Some((op, arg)), None) = (entries.next(), entries.next()) else {
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort();
                    return Err(LabError::invalid(format!(
                        "a score operator has exactly one key, got {}: nest operators instead \
                         of listing them side by side",
                        repr::repr_str_list(&keys)
                    )));
                };
                parse_operator(op, arg)
            }
        }
    }

    /// The expression as JSON, exactly as it was read (`2` stays `2`, `2.0` stays `2.0`).
    pub fn to_json(&self) -> Value {
        let list = |items: &[ScoreExpr]| Value::Array(items.iter().map(Self::to_json).collect());
        let (op, arg) = match self {
            ScoreExpr::Question(id) => return Value::String(id.clone()),
            ScoreExpr::Number(n) => return Value::Number(n.clone()),
            ScoreExpr::Mean(items) => ("mean", list(items)),
            ScoreExpr::Max(items) => ("max", list(items)),
            ScoreExpr::Min(items) => ("min", list(items)),
            ScoreExpr::Sum(items) => ("sum", list(items)),
            ScoreExpr::Weighted(pairs) => (
                "weighted",
                Value::Array(
                    pairs
                        .iter()
                        .map(|(w, e)| Value::Array(vec![Value::Number(w.clone()), e.to_json()]))
                        .collect(),
                ),
            ),
            ScoreExpr::Scale(e, k) => (
                "scale",
                Value::Array(vec![e.to_json(), Value::Number(k.clone())]),
            ),
        };
        let mut map = Map::new();
        map.insert(op.to_owned(), arg);
        Value::Object(map)
    }

    /// The score of one example from its answers (P(true) by question id), or `None` when a
    /// question it reads has no answer: a missing answer is never read as 0. (An empty `mean`,
    /// `max` or `min`, which [`ScoreExpr::parse`] refuses, is `None` too; an empty `sum` is 0.)
    ///
    /// Computed as the reference computes it, in f64: `mean` is Python's `sum()` (compensated,
    /// see [`skill_factory_pycompat::float::Sum`]) over the count; `max` / `min` keep the
    /// first extreme; `weighted` adds `w * e` left to right from 0.0. Allocates nothing.
    pub fn eval<S: BuildHasher>(&self, answers: &HashMap<String, f64, S>) -> Option<f64> {
        self.eval_by(&|id: &str| answers.get(id).copied())
    }

    /// [`ScoreExpr::eval`] with answers from any lookup (an indexed row, a default for
    /// missing answers, ...).
    pub fn eval_by<F: Fn(&str) -> Option<f64>>(&self, answer: &F) -> Option<f64> {
        match self {
            ScoreExpr::Question(id) => answer(id),
            ScoreExpr::Number(n) => n.as_f64(),
            ScoreExpr::Mean(items) => {
                if items.is_empty() {
                    return None;
                }
                let total = python_sum(items, answer)?;
                Some(total / items.len() as f64)
            }
            ScoreExpr::Sum(items) => python_sum(items, answer),
            ScoreExpr::Max(items) => extreme(items, answer, |v, best| v > best),
            ScoreExpr::Min(items) => extreme(items, answer, |v, best| v < best),
            ScoreExpr::Weighted(pairs) => {
                let mut total = 0.0;
                for (w, e) in pairs {
                    total += w.as_f64()? * e.eval_by(answer)?;
                }
                Some(total)
            }
            ScoreExpr::Scale(e, k) => Some(e.eval_by(answer)? * k.as_f64()?),
        }
    }

    /// The question ids the expression reads, depth first, in first-use order, each once.
    pub fn referenced(&self) -> Vec<String> {
        let mut ids = Vec::new();
        self.collect_ids(&mut ids);
        ids
    }

    fn collect_ids(&self, ids: &mut Vec<String>) {
        match self {
            ScoreExpr::Question(id) => {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
            ScoreExpr::Number(_) => {}
            ScoreExpr::Mean(items)
            | ScoreExpr::Max(items)
            | ScoreExpr::Min(items)
            | ScoreExpr::Sum(items) => items.iter().for_each(|e| e.collect_ids(ids)),
            ScoreExpr::Weighted(pairs) => pairs.iter().for_each(|(_, e)| e.collect_ids(ids)),
            ScoreExpr::Scale(e, _) => e.collect_ids(ids),
        }
    }

    /// A short human form, as the reference prints it in reports: question ids as they are,
    /// numbers as `%g`, reducers as `mean(a, b)`, `weighted` as `2*a + 1*c` and `scale` as
    /// `a*4.545` (the factor to 4 significant digits, so union descriptions are lossy).
    pub fn describe(&self) -> String {
        let g = |n: &Number| float::format_g(n.as_f64().unwrap_or(f64::NAN), 6);
        let reducer = |op: &str, items: &[ScoreExpr]| {
            let parts: Vec<String> = items.iter().map(Self::describe).collect();
            format!("{op}({})", parts.join(", "))
        };
        match self {
            ScoreExpr::Question(id) => id.clone(),
            ScoreExpr::Number(n) => g(n),
            ScoreExpr::Mean(items) => reducer("mean", items),
            ScoreExpr::Max(items) => reducer("max", items),
            ScoreExpr::Min(items) => reducer("min", items),
            ScoreExpr::Sum(items) => reducer("sum", items),
            ScoreExpr::Weighted(pairs) => {
                let parts: Vec<String> = pairs
                    .iter()
                    .map(|(w, e)| format!("{}*{}", g(w), e.describe()))
                    .collect();
                parts.join(" + ")
            }
            ScoreExpr::Scale(e, k) => format!(
                "{}*{}",
                e.describe(),
                float::format_g(k.as_f64().unwrap_or(f64::NAN), 4)
            ),
        }
    }
}

/// One operator object's expression.
fn parse_operator(op: &str, arg: &Value) -> Result<ScoreExpr, LabError> {
    let items = |what: &str| match arg {
        Value::Array(items) if !items.is_empty() => Ok(items),
        _ => Err(LabError::invalid(format!(
            "'{op}' needs a non-empty list of {what}, got {}",
            shown(arg)
        ))),
    };
    match op {
        "mean" | "max" | "min" | "sum" => {
            let items = items("expressions")?
                .iter()
                .map(ScoreExpr::parse)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(match op {
                "mean" => ScoreExpr::Mean(items),
                "max" => ScoreExpr::Max(items),
                "min" => ScoreExpr::Min(items),
                _ => ScoreExpr::Sum(items),
            })
        }
        "weighted" => {
            let pairs = items("[weight, expression] pairs")?
                .iter()
                .map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([Value::Number(w), e]) => Ok((w.clone(), ScoreExpr::parse(e)?)),
                    _ => Err(LabError::invalid(format!(
                        "'weighted' entries are [weight, expression] with a numeric weight, \
                         got {}",
                        shown(pair)
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(ScoreExpr::Weighted(pairs))
        }
        "scale" => match arg.as_array().map(Vec::as_slice) {
            Some([e, Value::Number(k)]) => {
                Ok(ScoreExpr::Scale(Box::new(ScoreExpr::parse(e)?), k.clone()))
            }
            _ => Err(LabError::invalid(format!(
                "'scale' needs [expression, factor] with a numeric factor, got {}",
                shown(arg)
            ))),
        },
        _ => Err(LabError::invalid(format!(
            "unknown score operator {}: use one of {}, weighted or scale",
            repr::repr_str(op),
            REDUCERS.join(", ")
        ))),
    }
}

/// Python's `sum()` of the items' values, or `None` if one has none.
fn python_sum<F: Fn(&str) -> Option<f64>>(items: &[ScoreExpr], answer: &F) -> Option<f64> {
    let mut total = float::Sum::new();
    for e in items {
        total.add(e.eval_by(answer)?);
    }
    Some(total.value())
}

/// Python's `max()` / `min()`: the first value no later value `beats`.
fn extreme<F: Fn(&str) -> Option<f64>>(
    items: &[ScoreExpr],
    answer: &F,
    beats: impl Fn(f64, f64) -> bool,
) -> Option<f64> {
    let mut best: Option<f64> = None;
    for e in items {
        let v = e.eval_by(answer)?;
        best = match best {
            Some(b) if !beats(v, b) => Some(b),
            _ => Some(v),
        };
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> ScoreExpr {
        match ScoreExpr::parse(&value) {
            Ok(expr) => expr,
            Err(message) => panic!("{value} should parse: {message}"),
        }
    }

    fn answers(pairs: &[(&str, f64)]) -> HashMap<String, f64> {
        pairs.iter().map(|(id, p)| ((*id).to_owned(), *p)).collect()
    }

    #[test]
    fn score_evaluation_of_every_operator() {
        let p = answers(&[("a", 0.2), ("b", 0.6), ("c", 1.0)]);
        let eval = |value: Value| parse(value).eval(&p);
        assert_eq!(eval(json!("a")), Some(0.2));
        assert_eq!(eval(json!(0.5)), Some(0.5));
        assert_eq!(eval(json!({"mean": ["a", "b"]})), Some(0.4));
        assert_eq!(eval(json!({"max": ["a", "b"]})), Some(0.6));
        assert_eq!(eval(json!({"min": ["a", "b"]})), Some(0.2));
        assert_eq!(eval(json!({"sum": ["a", "b"]})), Some(0.8));
        assert_eq!(eval(json!({"weighted": [[2, "a"], [1, "c"]]})), Some(1.4));
        assert_eq!(eval(json!({"scale": ["b", 2]})), Some(1.2));
        assert_eq!(
            eval(json!({"mean": [{"mean": ["a", "b"]}, "c"]})),
            Some(0.7)
        );
    }

    #[test]
    fn score_is_none_when_a_referenced_answer_is_missing() {
        let p = answers(&[("a", 0.2)]);
        for value in [
            json!({"mean": ["a", "b"]}),
            json!({"weighted": [[1, "a"], [1, "b"]]}),
            json!({"scale": ["b", 2]}),
            json!({"max": [{"min": ["a", 0.5]}, "b"]}),
        ] {
            assert_eq!(parse(value.clone()).eval(&p), None, "{value}");
        }
        assert_eq!(
            parse(json!({"mean": ["a", 0.4]})).eval(&p),
            Some(0.30000000000000004)
        );
    }

    #[test]
    fn malformed_expressions_are_rejected() {
        for (value, expected) in [
            (json!(true), "boolean"),
            (json!([1]), "list"),
            (json!({"mean": []}), "non-empty list"),
            (json!({"mean": "a"}), "non-empty list"),
            (json!({"weighted": [["x", "a"]]}), "numeric weight"),
            (json!({"weighted": [[true, "a"]]}), "numeric weight"),
            (json!({"scale": ["a"]}), "[expression, factor]"),
            (json!({"scale": ["a", false]}), "[expression, factor]"),
            (json!({"nope": ["a"]}), "unknown score operator 'nope'"),
            (json!({"mean": ["a"], "max": ["a"]}), "exactly one key"),
            (json!({}), "exactly one key"),
            (json!({"mean": ["a", [1]]}), "list"),
            (json!({"max": ["a", null]}), "null"),
            (json!({"sum": [{"scale": [true, 2]}]}), "boolean"),
        ] {
            match ScoreExpr::parse(&value) {
                Ok(expr) => panic!("{value} should be refused, parsed as {expr:?}"),
                Err(message) => {
                    assert!(message.to_string().contains(expected), "{value}: {message}")
                }
            }
        }
    }

    #[test]
    fn referenced_ids_in_first_use_order_without_duplicates_and_describe() {
        let expr = parse(json!({"mean": [{"mean": ["a", "b"]}, "a", {"scale": ["c", 2]}]}));
        assert_eq!(expr.referenced(), ["a", "b", "c"]);
        assert!(
            expr.describe().starts_with("mean(mean(a, b)"),
            "{}",
            expr.describe()
        );
        assert_eq!(expr.describe(), "mean(mean(a, b), a, c*2)");
        let weighted = parse(json!({"weighted": [[2, "a"], [0.5, {"max": ["b", 1e-05]}]]}));
        assert_eq!(weighted.referenced(), ["a", "b"]);
        assert_eq!(weighted.describe(), "2*a + 0.5*max(b, 1e-05)");
        let union = parse(json!({"max": [{"scale": ["a", 4.545454545]}, {"scale": ["b", 1.0]}]}));
        assert_eq!(union.describe(), "max(a*4.545, b*1)");
        assert_eq!(parse(json!(1234567)).describe(), "1.23457e+06");
    }

    #[test]
    fn to_json_gives_back_the_expression_as_written() {
        for value in [
            json!({"weighted": [[2, "a"], [2.0, "b"], [-1, {"sum": [1, 0.5]}]]}),
            json!({"scale": [{"min": ["a", "b"]}, 10]}),
            json!({"max": [{"scale": ["a", 4.0]}, "c"]}),
            json!(3),
            json!("q@f"),
        ] {
            let expr = parse(value.clone());
            assert_eq!(expr.to_json(), value);
            let text = skill_factory_pycompat::json::dumps_canonical(&expr.to_json());
            assert_eq!(text, skill_factory_pycompat::json::dumps_canonical(&value));
        }
        let text = skill_factory_pycompat::json::dumps_canonical(
            &parse(json!({"scale": ["a", 2.0]})).to_json(),
        );
        assert_eq!(text, r#"{"scale":["a",2.0]}"#);
    }

    #[test]
    fn mean_and_sum_add_like_python_3_12_and_max_keeps_the_first_extreme() {
        let p = answers(&[("a", 0.1)]);
        let tenths = parse(json!({"sum": ["a", "a", "a", "a", "a", "a", "a", "a", "a", "a"]}));
        assert_eq!(tenths.eval(&p), Some(1.0));
        let signed_zero = answers(&[("a", 0.0), ("b", -0.0)]);
        let max = parse(json!({"max": ["a", "b"]})).eval(&signed_zero);
        assert!(max.is_some_and(f64::is_sign_positive));
        let min = parse(json!({"min": ["b", "a"]})).eval(&signed_zero);
        assert!(min.is_some_and(f64::is_sign_negative));
        assert_eq!(ScoreExpr::Mean(Vec::new()).eval(&p), None);
        assert_eq!(ScoreExpr::Sum(Vec::new()).eval(&p), Some(0.0));
    }

    #[test]
    fn eval_by_reads_answers_from_any_lookup() {
        let expr = parse(json!({"max": ["a", "b"]}));
        let zero_if_missing = |id: &str| Some(if id == "a" { 0.3 } else { 0.0 });
        assert_eq!(expr.eval_by(&zero_if_missing), Some(0.3));
    }
}
