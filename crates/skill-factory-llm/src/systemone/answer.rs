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

/// Reads a response body already parsed as JSON. `ids` are the question ids asked; the error
/// says what is wrong (the caller prefixes `invalid answer: `).
pub fn parse_answers(
    body: &Value,
    ids: &[String],
    requested_model: &str,
) -> Result<Answers, String> {
    let body = unwrap_envelope(body)?;
    let Some(answers) = body.get("answers").and_then(Value::as_object) else {
        return Err("the response has no 'answers' object".to_string());
    };
    let mut probabilities = BTreeMap::new();
    for id in ids {
        let Some(answer) = answers.get(id) else {
            return Err(format!("no answer for question '{id}'"));
        };
        let kind = answer.get("type").and_then(Value::as_str);
        if kind != Some("choice") {
            return Err(format!(
                "the answer to '{id}' is not a choice (type {})",
                kind.map_or_else(|| "missing".to_string(), |k| format!("'{k}'"))
            ));
        }
        let p = answer.pointer("/probabilities/true");
        let Some(p) = p.filter(|v| v.is_number()).and_then(Value::as_f64) else {
            return Err(format!(
                "the answer to '{id}' has no numeric probabilities.true (got {})",
                p.map_or_else(|| "nothing".to_string(), Value::to_string)
            ));
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(format!("P(true) of '{id}' is {p}, outside [0, 1]"));
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
fn unwrap_envelope(body: &Value) -> Result<&Value, String> {
    let Some(object) = body.as_object() else {
        return Err("the response is not a JSON object".to_string());
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
        return Err(format!("the host reported an error: {message}"));
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
        assert_eq!(error, "the host reported an error: quota exceeded");
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
