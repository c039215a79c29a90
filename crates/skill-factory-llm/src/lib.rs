//! Model clients of Skill Factory.
//!
//! One request shape ([`ChatRequest`]) and one answer shape ([`ChatResponse`]) for every model
//! the tool talks to, behind the [`ChatModel`] trait: the OpenAI chat-completions wire format
//! (OpenAI, Azure, OpenRouter, Together, Groq, DeepSeek, vLLM, LM Studio, Ollama, any compatible
//! endpoint), the Anthropic Messages API, a GGUF model run in process by llama.cpp (`local`,
//! cargo feature `local`), and a scripted fake for offline runs. Retries, back-off,
//! timeouts and concurrency limits live here so that callers only see an answer or an error
//! that says why. [`build_client`] turns a provider block of a run config into a client;
//! [`ModelLayers`] builds all the clients of one run so that they share one scheduler (a
//! run-wide cap, adaptive per-provider limits) and one persistent cache ([`cache`]), and can
//! record or replay their traffic ([`record`]).
//!
//! This crate knows nothing about skills, tasks or metrics; of the other Skill Factory crates it
//! depends only on `skill-factory-pycompat` (the JSON text of `answers.jsonl` and of question
//! hashes).

#![warn(missing_docs)]

pub mod anthropic;
pub mod batch;
pub mod budget;
pub mod cache;
pub mod cost;
pub mod fake;
pub mod http;
mod key_host;
pub mod layers;
pub mod limit;
pub mod local;
pub mod openai;
pub mod providers;
pub mod rate;
pub mod record;
pub mod request;
pub mod retry;
pub mod schedule;
pub mod settings;
pub mod systemone;
pub mod url;

pub use anthropic::AnthropicClient;
pub use budget::{
    BudgetLimit, BudgetLimits, BudgetedModel, Call, Exhaustion, Ledger, Reserve, Spend,
};
pub use cache::{CacheError, CacheKey, CacheMode, CacheStats, CacheStore, CachedModel};
pub use cost::{Pricing, known_pricing, pricing_for};
pub use fake::{FakeModel, FakeScript};
pub use http::{ApiKey, ClientOptions, ResponseError};
pub use layers::ModelLayers;
pub use limit::{AdaptiveLimit, Outcome};
pub use openai::OpenAiClient;
pub use providers::{
    PROVIDERS, ProviderInfo, WireFormat, build_client, build_client_in, find_provider,
    provider_names,
};
pub use record::{RECORD_ENV, REPLAY_ENV, RecordError, Recorder, Replay};
pub use request::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Message, Role, StopReason, TokenUsage,
};
pub use retry::RetryPolicy;
pub use schedule::Scheduler;
pub use settings::{FakeRule, ProviderSettings};
