//! Reading a System One response: all or nothing.
//!
//! A response counts only if it holds a valid answer for *every* question asked: a `choice`
//! answer whose `probabilities.true` is a number (not a boolean) in [0, 1]. Anything less
//! fails the whole request, so no partial opinion is ever cached. The served model name is
//! kept only if it looks like a model id, so that response text never reaches a report
//! unchecked; otherwise the requested model stands in.

use std::collections::BTreeMap;

use serde_json::Value;

/// The longest model name accepted from a response.
const MAX_MODEL_NAME_CHARS: usize = 100;

/// The answers of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// P(true) of every question asked, by question id.
    pub probabilities: BTreeMap<String, f64>,
    /// The model version that answered (e.g. `jev-1.13.0`), or the requested model when the
    /// response named none acceptable.
    pub served_model: String,
    /// Input tokens billed, when the host reported them.
    pub input_tokens: Option<u64>,
    /// Whether the answers were replayed from the model cache (they cost nothing).
    pub cached: bool,
}

/// Why a response does not hold a valid answer to every question asked. The client reports it
/// as [`super::SystemOneError::InvalidAnswer`] with the key redacted, so the parts that come
/// from the response are kept as text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// The body is JSON, but not an object.
    #[error("the response is not a JSON object")]
    NotAnObject,
    /// A Cloudflare envelope with `success: false`.
    #[error("the host reported an error: {message}")]
    Host {
        /// The first message of its `errors`, or `no message`.
        message: String,
    },
    /// No `answers` object, so not a single question was answered.
    #[error("the response has no 'answers' object")]
    NoAnswers,
    /// A question asked is missing from the answers.
    #[error("no answer for question '{id}'")]
    Missing {
        /// The question id.
        id: String,
    },
    /// The answer is of another type than `choice`.
    #[error("the answer to '{id}' is not a choice (type {})", shown_kind(.kind.as_deref()))]
    NotAChoice {
        /// The question id.
        id: String,
        /// Its `type`, when it has a text one.
        kind: Option<String>,
    },
    /// `probabilities.true` is missing or not a number (a boolean or a string is no P(true)).
    #[error("the answer to '{id}' has no numeric probabilities.true (got {})", .got.as_deref().unwrap_or("nothing"))]
    NoProbability {
        /// The question id.
        id: String,
        /// The JSON text of what stands there, when anything does.
        got: Option<String>,
    },
    /// P(true) is a number outside [0, 1].
    #[error("P(true) of '{id}' is {p}, outside [0, 1]")]
    OutOfRange {
        /// The question id.
        id: String,
        /// The number given.
        p: f64,
    },
}

/// A `type` as the message quotes it; `missing` is not quoted, so it cannot pass for a type.
fn shown_kind(kind: Option<&str>) -> String {
    kind.map_or_else(|| "missing".to_string(), |k| format!("'{k}'"))
}

/// Reads a response body already parsed as JSON. `ids` are the question ids asked; the error
/// says what is wrong (the caller prefixes `invalid answer: `).
pub fn parse_answers(
    body: &Value,
    ids: &[String],
    requested_model: &str,
) -> Result<Answers, AnswerError> {
    let body = unwrap_envelope(body)?;
    let Some(answers) = body.get("answers").and_then(Value::as_object) else {
        return Err(AnswerError::NoAnswers);
    };
    let mut probabilities = BTreeMap::new();
    for id in ids {
        let Some(answer) = answers.get(id) else {
            return Err(AnswerError::Missing { id: id.clone() });
        };
        let kind = answer.get("type").and_then(Value::as_str);
        if kind != Some("choice") {
            return Err(AnswerError::NotAChoice {
                id: id.clone(),
                kind: kind.map(str::to_string),
            });
        }
        let p = answer.pointer("/probabilities/true");
        let Some(p) = p.filter(|v| v.is_number()).and_then(Value::as_f64) else {
            return Err(AnswerError::NoProbability {
                id: id.clone(),
                got: p.map(Value::to_string),
            });
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(AnswerError::OutOfRange { id: id.clone(), p });
        }
        probabilities.insert(id.clone(), p);
    }
    let served_model = body
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| looks_like_model_id(m))
        .unwrap_or(requested_model)
        .to_string();
    let input_tokens = body
        .pointer("/usage/input_tokens")
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n as u64);
    Ok(Answers {
        probabilities,
        served_model,
        input_tokens,
        cached: false,
    })
}

/// Cloudflare Workers AI wraps results as `{result, success, errors}`.
fn unwrap_envelope(body: &Value) -> Result<&Value, AnswerError> {
    let Some(object) = body.as_object() else {
        return Err(AnswerError::NotAnObject);
    };
    if object.get("success") == Some(&Value::Bool(false)) {
        let message = object
            .get("errors")
            .and_then(Value::as_array)
            .and_then(|errors| errors.first())
            .map(|first| match first.get("message").and_then(Value::as_str) {
                Some(message) => message.to_string(),
                None => first
                    .as_str()
                    .map_or_else(|| first.to_string(), str::to_string),
            })
            .unwrap_or_else(|| "no message".to_string());
        return Err(AnswerError::Host { message });
    }
    match object.get("result") {
        Some(result) if !object.contains_key("answers") => Ok(result),
        _ => Ok(body),
    }
}

/// `[A-Za-z0-9]` then up to 99 of `[A-Za-z0-9._:/@-]`.
fn looks_like_model_id(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    first_ok
        && name.chars().count() <= MAX_MODEL_NAME_CHARS
        && chars.all(|c| c.is_ascii_alphanumeric() || "._:/@-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn choice(p: Value) -> Value {
        json!({"type": "choice", "choice": "true", "probabilities": {"true": p, "false": 0.1}})
    }

    #[test]
    fn probabilities_model_and_usage_are_read() {
        let body = json!({
            "model": "jev-1.13.0",
            "answers": {"a": choice(json!(0.9)), "b": choice(json!(0))},
            "usage": {"input_tokens": 12, "output_tokens": 3}
        });
        let answers = parse_answers(&body, &ids(&["a", "b"]), "jev-latest").unwrap();
        assert_eq!(answers.probabilities["a"], 0.9);
        assert_eq!(answers.probabilities["b"], 0.0);
        assert_eq!(answers.served_model, "jev-1.13.0");
        assert_eq!(answers.input_tokens, Some(12));
    }

    #[test]
    fn cloudflare_envelope_is_unwrapped() {
        let body = json!({"result": {"answers": {"a": choice(json!(0.25))}}, "success": true, "errors": []});
        let answers = parse_answers(&body, &ids(&["a"]), "typesafe/jev").unwrap();
        assert_eq!(answers.probabilities["a"], 0.25);
        assert_eq!(answers.served_model, "typesafe/jev");
        assert_eq!(answers.input_tokens, None);
    }

    #[test]
    fn cloudflare_failure_reports_the_first_message() {
        let body = json!({"result": null, "success": false, "errors": [{"code": 1, "message": "quota exceeded"}]});
        let error = parse_answers(&body, &ids(&["a"]), "m").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the host reported an error: quota exceeded"
        );
    }

    #[test]
    fn partial_or_malformed_answers_are_rejected_whole() {
        let bad = [
            json!({}),
            json!({"answers": {}}),
            json!({"answers": {"a": {"type": "noul", "noul": 0.4}, "b": choice(json!(0.5))}}),
            json!({"answers": {"a": choice(json!(1.5)), "b": choice(json!(0.5))}}),
            json!({"answers": {"a": choice(json!(true)), "b": choice(json!(0.5))}}),
            json!({"answers": {"a": choice(json!("0.5")), "b": choice(json!(0.5))}}),
            json!({"answers": {"a": choice(json!(0.5))}}),
            json!([1, 2]),
        ];
        for body in bad {
            assert!(
                parse_answers(&body, &ids(&["a", "b"]), "m").is_err(),
                "{body}"
            );
        }
    }

    #[test]
    fn untrusted_model_names_are_not_echoed() {
        for served in ["jev 1.13", "jev\n1.13", "-jev", "", &"j".repeat(101)] {
            let body = json!({"model": served, "answers": {"a": choice(json!(0.5))}});
            let answers = parse_answers(&body, &ids(&["a"]), "jev-latest").unwrap();
            assert_eq!(answers.served_model, "jev-latest", "{served:?}");
        }
        let body =
            json!({"model": "typesafe/jev-1.13.0@eu:v2", "answers": {"a": choice(json!(0.5))}});
        assert_eq!(
            parse_answers(&body, &ids(&["a"]), "x")
                .unwrap()
                .served_model,
            "typesafe/jev-1.13.0@eu:v2"
        );
    }
}
