//! Keeping secrets out of what Skill Factory shows and writes: one rule for which names hold
//! secrets ([`looks_secret`]) and one [`Scrubber`] that hides their values. The dashboard
//! passes every body it sends through one; model clients hide their key and the credentials
//! of their endpoint in every error; the run's `config.yaml` withholds secret-named `env`
//! values.
//!
//! Hidden: the value of every field whose name looks secret (`api_key`, `token`, `password`,
//! ...), every occurrence of a value the scrubber was given (a key, a URL's credentials, the
//! secret-looking variables of this process's environment), and `sk-...` shaped keys.

use serde_json::Value;

/// What a hidden value is replaced with.
pub const HIDDEN: &str = "***";

/// Shortest value hidden because its name looks secret (shorter ones would hide common words).
const SHORTEST_GUESSED: usize = 8;

/// Shortest value hidden because of where it stands (a URL's password, a query's key):
/// shorter ones would hide single letters.
const SHORTEST_KNOWN: usize = 4;

/// Hides secrets in the dashboard's responses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scrubber {
    /// Secret values to hide wherever they appear, longest first.
    values: Vec<String>,
}

/// Whether a field or variable called `name` holds a secret (`OPENAI_API_KEY`, `api_key`,
/// `GITHUB_TOKEN`, `password`, `SESSION_COOKIE`); token counts (`input_tokens`, `max_tokens`)
/// and limits (`max_...`) do not.
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
        "cookie",
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

    /// A scrubber of values guessed to be secret (by their names): those of 8 bytes or more.
    pub fn of(values: impl IntoIterator<Item = String>) -> Scrubber {
        Scrubber::at_least(values, SHORTEST_GUESSED)
    }

    /// A scrubber of values known to be credentials by where they stand (a key, a URL's
    /// password or query values): those of 4 bytes or more.
    pub fn credentials(values: impl IntoIterator<Item = String>) -> Scrubber {
        Scrubber::at_least(values, SHORTEST_KNOWN)
    }

    fn at_least(values: impl IntoIterator<Item = String>, shortest: usize) -> Scrubber {
        let mut values: Vec<String> = values
            .into_iter()
            .filter(|value| value.len() >= shortest)
            .collect();
        // Longest first, so a secret containing another is hidden whole.
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Scrubber { values }
    }

    /// Whether nothing but key shapes would be hidden.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
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
            value["output"], "the key is *** and ***, short",
            "values under 8 characters are not secrets"
        );
        assert_eq!(value["note"], "task-1 ask-me sk-short");
        assert!(looks_secret("SESSION_COOKIE") && looks_secret("OPENAI_API_KEY"));
        assert!(!looks_secret("MAX_TOKENS") && !looks_secret("output_tokens"));
        let url = Scrubber::credentials(["pw12".to_string(), "x".to_string()]);
        assert_eq!(url.text("user:pw12 x"), "user:*** x");
    }
}
