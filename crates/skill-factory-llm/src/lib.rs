//! Model clients of Skill Factory.
//!
//! One request shape ([`ChatRequest`]) and one answer shape ([`ChatResponse`]) for every model
//! the tool talks to, behind the [`ChatModel`] trait: the OpenAI chat-completions wire format
//! (OpenAI, Azure, OpenRouter, Together, Groq, DeepSeek, vLLM, LM Studio, Ollama, any compatible
//! endpoint), the Anthropic Messages API, and a scripted fake for offline runs. Retries, back-off,
//! timeouts and concurrency limits live here so that callers only see an answer or an error
//! that says why.
//!
//! This crate knows nothing about skills, tasks or metrics; it depends on no other Skill Factory
//! crate.

pub mod request;
pub mod settings;

pub use request::{ChatModel, ChatRequest, ChatResponse, LlmError, Message, Role, StopReason, TokenUsage};
pub use settings::ProviderSettings;
