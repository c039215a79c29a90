//! Model clients of Skill Factory.
//!
//! One request shape ([`ChatRequest`]) and one answer shape ([`ChatResponse`]) for every model
//! the tool talks to, behind the [`ChatModel`] trait: the OpenAI chat-completions wire format
//! (OpenAI, Azure, OpenRouter, Together, Groq, DeepSeek, vLLM, LM Studio, Ollama, any compatible
//! endpoint), the Anthropic Messages API, and a scripted fake for offline runs. Retries, back-off,
//! timeouts and concurrency limits live here so that callers only see an answer or an error
//! that says why. [`build_client`] turns a provider block of a run config into a client.
//!
//! This crate knows nothing about skills, tasks or metrics; it depends on no other Skill Factory
//! crate.

pub mod anthropic;
pub mod fake;
pub mod http;
pub mod limit;
pub mod openai;
pub mod providers;
pub mod request;
pub mod retry;
pub mod settings;

pub use anthropic::AnthropicClient;
pub use fake::{FakeModel, FakeScript};
pub use http::{ApiKey, ClientOptions};
pub use limit::ConcurrencyLimit;
pub use openai::OpenAiClient;
pub use providers::{
    PROVIDERS, ProviderInfo, WireFormat, build_client, find_provider, provider_names,
};
pub use request::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Message, Role, StopReason, TokenUsage,
};
pub use retry::RetryPolicy;
pub use settings::{FakeRule, ProviderSettings};
