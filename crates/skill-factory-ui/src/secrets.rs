//! Keeping keys out of every response: the run folders should not hold any (the run's
//! `config.yaml` is written without them), but a folder copied from elsewhere or a model that
//! echoed a key might, so every body the dashboard sends passes through a [`Scrubber`].
//!
//! Hidden: the value of every field whose name looks secret (`api_key`, `token`, `password`,
//! ...), every occurrence of a secret-looking environment variable's value of the server's
//! own process (the keys it would pass to a job it launches), and `sk-...` shaped keys.

use serde_json::Value;

/// What a hidden value is replaced with.
pub const HIDDEN: &str = "[hidden]";

/// Shortest environment value treated as a secret (shorter ones would hide common words).
const SHORTEST_SECRET: usize = 8;

/// Hides secrets in the dashboard's responses.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// Secret values to hide wherever they appear, longest first.
    values: Vec<String>,
}

/// Whether a field or variable called `name` holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "auth",
    ]
    .iter()
    .any(|word| name.contains(word))
        && !matches!(
            name.as_str(),
            "tokens" | "input_tokens" | "output_tokens" | "max_tokens" | "max_skill_tokens"
        )
        && !name.ends_with("_tokens")
        && !name.starts_with("max_")
}

impl Scrubber {
    /// A scrubber of the secret-looking variables of this process's environment.
    pub fn from_env() -> Scrubber {
        Scrubber::of(
            std::env::vars()
                .filter(|(name, _)| looks_secret(name))
                .map(|(_, value)| value),
        )
    }

    /// A scrubber of these secret values.
    pub fn of(values: impl IntoIterator<Item = String>) -> Scrubber {
        let mut values: Vec<String> = values
            .into_iter()
            .filter(|value| value.len() >= SHORTEST_SECRET)
            .collect();
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        values.dedup();
        Scrubber { values }
    }

    /// `text` with every secret in it hidden.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), HIDDEN);
            }
        }
        hide_key_shapes(&out)
    }

    /// `value` with every secret-named field and every secret in a string hidden.
    pub fn json(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                let clean = self.text(text);
                if clean != *text {
                    *text = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.json(item)),
            Value::Object(map) => {
                for (name, item) in map.iter_mut() {
                    if looks_secret(name) && (item.is_string() || item.is_number()) {
                        *item = Value::from(HIDDEN);
                    } else {
                        self.json(item);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `text` with every `sk-` key (OpenAI's, Anthropic's `sk-ant-`, OpenRouter's `sk-or-`) hidden:
/// `sk-` then at least 20 letters, digits, `-` or `_`.
fn hide_key_shapes(text: &str) -> String {
    const LEAST: usize = 20;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("sk-") {
        let after = &rest[at + 3..];
        let run = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(after.len());
        let starts_word = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        if run >= LEAST && starts_word {
            out.push_str(HIDDEN);
        } else {
            out.push_str(&rest[at..at + 3 + run]);
        }
        rest = &after[run..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_fields_env_values_and_key_shapes_are_hidden_and_counts_are_not() {
        let scrub = Scrubber::of(["hunter2-very-secret".to_string(), "short".to_string()]);
        let mut value = json!({
            "api_key": "abc", "env": {"MY_TOKEN": "zzz", "LANG": "C"},
            "usage": {"input_tokens": 12, "max_tokens": 5},
            "output": "the key is hunter2-very-secret and sk-proj-ABCDEFGHIJKLMNOPQRSTUV0123, short",
            "note": "task-1 ask-me sk-short",
        });
        scrub.json(&mut value);
        assert_eq!(value["api_key"], HIDDEN);
        assert_eq!(value["env"]["MY_TOKEN"], HIDDEN);
        assert_eq!(value["env"]["LANG"], "C");
        assert_eq!(value["usage"]["input_tokens"], 12);
        assert_eq!(value["usage"]["max_tokens"], 5);
        assert_eq!(
            value["output"], "the key is [hidden] and [hidden], short",
            "values under 8 characters are not secrets"
        );
        assert_eq!(value["note"], "task-1 ask-me sk-short");
    }
}
