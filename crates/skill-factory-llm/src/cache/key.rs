//! The cache key: a SHA-256 of a canonical serialization of everything that changes a model's
//! answer, and nothing that does not (the API key, timeouts and retries are left out).

use std::fmt;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::request::ChatRequest;
use crate::systemone::Question;

/// Bumped whenever the serialization below changes, or the wire formats change in a way that
/// changes answers to the same request: old entries then simply stop matching.
pub const KEY_FORMAT: u32 = 1;

/// The identity of one model request.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// The key of `request` sent to `model` of `provider` at `endpoint`.
    ///
    /// Requests that go out as the same bytes get the same key: an absent system prompt and
    /// an empty one are the same (neither is sent), as are temperatures 0 and -0. The sample
    /// index is part of the key, so that repeated samples of one request at temperature > 0
    /// are cached apart yet replay deterministically.
    pub fn new(provider: &str, endpoint: &str, model: &str, request: &ChatRequest) -> Self {
        let system = request.system.as_deref().filter(|s| !s.is_empty());
        let messages: Vec<[&str; 2]> = request
            .messages
            .iter()
            .map(|m| [m.role.as_str(), m.content.as_str()])
            .collect();
        let temperature = if request.temperature == 0.0 {
            0.0
        } else {
            request.temperature
        };
        // A JSON array in a fixed order: unambiguous (every string is quoted and escaped) and
        // the same on every platform.
        let canonical = json!([
            "skill-factory chat",
            KEY_FORMAT,
            provider,
            endpoint,
            model,
            temperature,
            request.max_tokens,
            request.stop,
            system,
            messages,
            request.sample_index,
        ]);
        Self::of(&canonical)
    }

    /// The key of one System One request: every `(id, question)` asked about `state` of
    /// `model` at `provider`'s `endpoint`. Kept apart from chat keys by its first element.
    pub fn decision(
        provider: &str,
        endpoint: &str,
        model: &str,
        state: &str,
        questions: &[(String, Question)],
    ) -> Self {
        let questions: Vec<(&str, serde_json::Value)> = questions
            .iter()
            .map(|(id, question)| (id.as_str(), question.wire()))
            .collect();
        Self::of(&json!([
            "skill-factory systemone",
            KEY_FORMAT,
            provider,
            endpoint,
            model,
            state,
            questions,
        ]))
    }

    /// The SHA-256 of a canonical JSON value.
    fn of(canonical: &serde_json::Value) -> Self {
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&digest);
        CacheKey(bytes)
    }

    /// A key from its 32 bytes (as stored).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        CacheKey(bytes)
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key written as [`CacheKey::to_hex`] writes it; `None` for other text.
    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes: [u8; 32] = hex::decode(text).ok()?.try_into().ok()?;
        Some(CacheKey(bytes))
    }

    /// Lower-case hex, as shown in recordings and logs.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({})", self.to_hex())
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Message, Role};

    fn base() -> ChatRequest {
        ChatRequest {
            system: Some("Be brief.".into()),
            messages: vec![Message::user("hello")],
            temperature: 0.7,
            max_tokens: 64,
            stop: vec!["END".into()],
            sample_index: 0,
        }
    }

    fn key(request: &ChatRequest) -> CacheKey {
        CacheKey::new("openai", "http://x/v1/chat/completions", "gpt", request)
    }

    #[test]
    fn every_field_that_changes_the_answer_changes_the_key() {
        let reference = key(&base());
        let variants: Vec<(&str, CacheKey)> = vec![
            (
                "provider",
                CacheKey::new("groq", "http://x/v1/chat/completions", "gpt", &base()),
            ),
            (
                "endpoint",
                CacheKey::new("openai", "http://y/v1/chat/completions", "gpt", &base()),
            ),
            (
                "model",
                CacheKey::new("openai", "http://x/v1/chat/completions", "gpt-2", &base()),
            ),
            (
                "temperature",
                key(&ChatRequest {
                    temperature: 0.8,
                    ..base()
                }),
            ),
            (
                "max_tokens",
                key(&ChatRequest {
                    max_tokens: 65,
                    ..base()
                }),
            ),
            (
                "stop",
                key(&ChatRequest {
                    stop: vec![],
                    ..base()
                }),
            ),
            (
                "system",
                key(&ChatRequest {
                    system: Some("Be long.".into()),
                    ..base()
                }),
            ),
            (
                "messages",
                key(&ChatRequest {
                    messages: vec![Message::user("hello!")],
                    ..base()
                }),
            ),
            (
                "roles",
                key(&ChatRequest {
                    messages: vec![Message {
                        role: Role::Assistant,
                        content: "hello".into(),
                    }],
                    ..base()
                }),
            ),
            (
                "sample_index",
                key(&ChatRequest {
                    sample_index: 1,
                    ..base()
                }),
            ),
        ];
        for (field, variant) in &variants {
            assert_ne!(*variant, reference, "{field} must change the key");
        }
        assert_eq!(
            key(&base()),
            reference,
            "the key is a pure function of the request"
        );
    }

    #[test]
    fn requests_sent_as_the_same_bytes_share_a_key() {
        let none = ChatRequest {
            system: None,
            temperature: 0.0,
            ..base()
        };
        let empty = ChatRequest {
            system: Some(String::new()),
            temperature: -0.0,
            ..base()
        };
        assert_eq!(key(&none), key(&empty));
    }

    #[test]
    fn text_boundaries_cannot_collide() {
        // "ab" + "c" and "a" + "bc" must differ: every part is a separate JSON string.
        let one = ChatRequest {
            system: Some("ab".into()),
            messages: vec![Message::user("c")],
            ..base()
        };
        let two = ChatRequest {
            system: Some("a".into()),
            messages: vec![Message::user("bc")],
            ..base()
        };
        assert_ne!(key(&one), key(&two));
    }

    #[test]
    fn keys_are_stable_across_builds() {
        // A changed serialization must bump KEY_FORMAT, or every user's cache goes cold.
        let request = ChatRequest::single(Some("s".into()), "u", 0.0, 16);
        assert_eq!(
            CacheKey::new(
                "anthropic",
                "https://api.anthropic.com/v1/messages",
                "m",
                &request
            )
            .to_hex(),
            STABLE_KEY
        );
    }

    /// SHA-256 of `["skill-factory chat",1,"anthropic","https://api.anthropic.com/v1/messages",
    /// "m",0.0,16,[],"s",[["user","u"]],0]`, computed outside Rust.
    const STABLE_KEY: &str = "0c1eaab2387a04cf5ea5a340399936367ab8418222f0eba13e60bea6a71463ae";
}
