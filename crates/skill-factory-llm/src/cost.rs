//! What a call costs: a price table per known model, in US dollars per million input and
//! output tokens, which a provider block can override with `pricing:`.
//!
//! The table holds list prices of the hosted providers' common models (Anthropic, OpenAI,
//! DeepSeek, Google, Mistral) at the time of writing; prices change, so a run that must be
//! exact sets `pricing: {input_per_mtok, output_per_mtok}` in its provider blocks. Servers on
//! the user's machine (vLLM, LM Studio, Ollama) and the scripted fake cost nothing. A model
//! the table does not know has no price: its tokens are counted and the report says that its
//! cost is unknown, rather than guessing.

use serde::{Deserialize, Serialize};

use crate::request::{LlmError, TokenUsage};

/// The price of a model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Dollars per million prompt tokens.
    pub input_per_mtok: f64,
    /// Dollars per million completion tokens.
    pub output_per_mtok: f64,
}

impl Pricing {
    /// A model that costs nothing (local servers, the fake).
    pub const FREE: Pricing = Pricing {
        input_per_mtok: 0.0,
        output_per_mtok: 0.0,
    };

    /// The cost in dollars of the tokens of one call.
    pub fn cost(&self, usage: TokenUsage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }

    /// The price of the same model through a provider's batch API: half, at both providers.
    pub fn batch(self) -> Pricing {
        Pricing {
            input_per_mtok: self.input_per_mtok / 2.0,
            output_per_mtok: self.output_per_mtok / 2.0,
        }
    }

    /// Why a price from a config cannot be used, if it cannot: a
    /// [`LlmError::Config`], since the provider block that holds the price is at fault.
    pub fn check(&self) -> Result<(), LlmError> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if ok(self.input_per_mtok) && ok(self.output_per_mtok) {
            Ok(())
        } else {
            Err(LlmError::Config(format!(
                "pricing needs two prices of 0 or more in dollars per million tokens, got input_per_mtok {} and output_per_mtok {}",
                self.input_per_mtok, self.output_per_mtok
            )))
        }
    }
}

/// Providers that run on the user's own machine: their calls cost nothing.
const FREE_PROVIDERS: &[&str] = &["fake", "local", "vllm", "lmstudio", "ollama"];

/// `(model id prefix, input $/MTok, output $/MTok)`. The longest matching prefix wins, so a
/// dated snapshot (`claude-3-5-haiku-20241022`) finds its family, and a more specific entry
/// (`gpt-4o-mini`) beats a shorter one (`gpt-4o`).
const PRICES: &[(&str, f64, f64)] = &[
    // Anthropic
    ("claude-opus-4-0", 15.0, 75.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-2025", 15.0, 75.0),
    ("claude-opus", 5.0, 25.0),
    ("claude-3-opus", 15.0, 75.0),
    ("claude-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-haiku", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude-3-haiku", 0.25, 1.25),
    // OpenAI
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.4),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("o3", 2.0, 8.0),
    ("o3-mini", 1.1, 4.4),
    ("o4-mini", 1.1, 4.4),
    // Others
    ("deepseek-chat", 0.27, 1.1),
    ("deepseek-reasoner", 0.55, 2.19),
    ("gemini-2.5-pro", 1.25, 10.0),
    ("gemini-2.5-flash", 0.3, 2.5),
    ("mistral-large", 2.0, 6.0),
    ("mistral-small", 0.1, 0.3),
];

/// The list price of `model` on `provider`, if known.
///
/// Local providers and the fake are free. Router prefixes (`anthropic/claude-sonnet-4` on
/// OpenRouter) are ignored, and model ids are compared case-insensitively.
pub fn known_pricing(provider: &str, model: &str) -> Option<Pricing> {
    if FREE_PROVIDERS.contains(&provider.trim().to_lowercase().as_str()) {
        return Some(Pricing::FREE);
    }
    let model = model.trim().to_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model);
    PRICES
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, input, output)| Pricing {
            input_per_mtok: input,
            output_per_mtok: output,
        })
}

/// The price to charge: the provider block's `pricing` when given, else the table's.
pub fn pricing_for(configured: Option<Pricing>, provider: &str, model: &str) -> Option<Pricing> {
    configured.or_else(|| known_pricing(provider, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(provider: &str, model: &str) -> Option<(f64, f64)> {
        known_pricing(provider, model).map(|p| (p.input_per_mtok, p.output_per_mtok))
    }

    #[test]
    fn the_longest_matching_prefix_sets_the_price() {
        assert_eq!(price("openai", "gpt-4o-mini-2024-07-18"), Some((0.15, 0.6)));
        assert_eq!(price("openai", "gpt-4o-2024-08-06"), Some((2.5, 10.0)));
        assert_eq!(
            price("anthropic", "claude-3-5-haiku-20241022"),
            Some((0.8, 4.0))
        );
        assert_eq!(
            price("anthropic", "claude-haiku-4-5-20251001"),
            Some((1.0, 5.0))
        );
        assert_eq!(
            price("anthropic", "claude-opus-4-1-20250805"),
            Some((15.0, 75.0))
        );
        assert_eq!(price("anthropic", "claude-opus-4-5"), Some((5.0, 25.0)));
    }

    #[test]
    fn router_prefixes_and_case_are_ignored() {
        assert_eq!(
            price("openrouter", "Anthropic/Claude-Sonnet-4"),
            Some((3.0, 15.0))
        );
    }

    #[test]
    fn local_servers_and_the_fake_are_free_and_unknown_models_have_no_price() {
        assert_eq!(price("ollama", "llama3.1:8b"), Some((0.0, 0.0)));
        assert_eq!(price("fake", "anything"), Some((0.0, 0.0)));
        assert_eq!(price("together", "meta-llama/Llama-3-70b"), None);
    }

    #[test]
    fn a_configured_price_wins_over_the_table() {
        let own = Pricing {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
        };
        assert_eq!(pricing_for(Some(own), "openai", "gpt-4o"), Some(own));
        assert_eq!(
            pricing_for(None, "openai", "gpt-4o").map(|p| p.input_per_mtok),
            Some(2.5)
        );
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let p = Pricing {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        };
        let usage = TokenUsage {
            input_tokens: 1_000_000,
            output_tokens: 200_000,
        };
        assert!((p.cost(usage) - 6.0).abs() < 1e-12);
    }

    #[test]
    fn negative_or_non_finite_prices_are_refused() {
        let bad = Pricing {
            input_per_mtok: -1.0,
            output_per_mtok: 1.0,
        };
        assert!(bad.check().is_err());
        assert!(Pricing::FREE.check().is_ok());
    }
}
