//! The provider registry: which names a provider block may use, what each one speaks, where
//! it lives by default and which environment variable holds its key; and [`build_client`],
//! which turns a provider block into a ready client.
//!
//! Unlike the reference tool, every hosted provider reads its own key variable first, and
//! Azure gets its real URL scheme and `api-key` header. OpenRouter, Together, Groq and
//! DeepSeek fall back to `OPENAI_API_KEY`, as the reference read, with a warning naming their
//! own variable.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use crate::anthropic::{AnthropicClient, DEFAULT_ANTHROPIC_BASE_URL};
use crate::batch::{BatchApi, BatchOptions, BatchWire};
use crate::fake::{FakeModel, FakeScript};
use crate::http::{ApiKey, ClientOptions};
use crate::openai::{DEFAULT_AZURE_API_VERSION, OpenAiClient};
use crate::request::{ChatModel, LlmError};
use crate::retry::RetryPolicy;
use crate::schedule::Scheduler;
use crate::settings::{ProviderSettings, keys_set, seconds_key};

/// The provider used when a block names none, as in the reference tool.
pub const DEFAULT_PROVIDER: &str = "anthropic";

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI chat completions at `{base}/chat/completions` with a bearer key.
    OpenAi,
    /// OpenAI chat completions with Azure's deployment URL and `api-key` header.
    Azure,
    /// The in-process scripted fake.
    Fake,
    /// A GGUF model run in process by llama.cpp (`model` is the file).
    Local,
}

/// One supported provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderInfo {
    /// The name used in a provider block.
    pub name: &'static str,
    /// What it speaks.
    pub wire: WireFormat,
    /// Endpoint used when neither `base_url` nor `base_url_env` gives one.
    pub default_base_url: Option<&'static str>,
    /// Environment variable that may give the endpoint (below `base_url`, above the default).
    pub base_url_env: Option<&'static str>,
    /// Environment variable holding the key (below `api_key`).
    pub key_env: Option<&'static str>,
    /// Variable read when `key_env` is unset: `OPENAI_API_KEY` for the hosted providers the
    /// Python tool sent it to, so its users' setups keep working (with a warning). Only for
    /// providers whose endpoint is the block's `base_url` or their default, never one named
    /// by another variable, so the key goes only to a host the config chose.
    pub fallback_key_env: Option<&'static str>,
    /// A server on the user's own machine, which checks no key by default.
    pub local: bool,
}

const fn provider(
    name: &'static str,
    wire: WireFormat,
    default_base_url: Option<&'static str>,
    base_url_env: Option<&'static str>,
    key_env: Option<&'static str>,
    local: bool,
) -> ProviderInfo {
    ProviderInfo {
        name,
        wire,
        default_base_url,
        base_url_env,
        key_env,
        fallback_key_env: None,
        local,
    }
}

/// OpenAI's own API.
const OPENAI: ProviderInfo = provider(
    "openai",
    WireFormat::OpenAi,
    Some("https://api.openai.com/v1"),
    Some("OPENAI_BASE_URL"),
    Some("OPENAI_API_KEY"),
    false,
);

impl ProviderInfo {
    /// The same provider under another name.
    const fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The same provider, reading `variable` when its own key variable is unset.
    const fn falling_back_to(mut self, variable: &'static str) -> Self {
        self.fallback_key_env = Some(variable);
        self
    }
}

/// The key variable every OpenAI-style provider of the Python tool read.
const SHARED_OPENAI_KEY: &str = "OPENAI_API_KEY";

/// Every supported provider, in the order `skill-factory list` shows them.
pub const PROVIDERS: &[ProviderInfo] = &[
    provider(
        "anthropic",
        WireFormat::Anthropic,
        Some(DEFAULT_ANTHROPIC_BASE_URL),
        None,
        Some("ANTHROPIC_API_KEY"),
        false,
    ),
    OPENAI,
    // The same block under the name of any server that speaks OpenAI's wire format.
    OPENAI.named("openai-compatible"),
    provider(
        "azure",
        WireFormat::Azure,
        None,
        Some("AZURE_OPENAI_ENDPOINT"),
        Some("AZURE_OPENAI_API_KEY"),
        false,
    ),
    provider(
        "openrouter",
        WireFormat::OpenAi,
        Some("https://openrouter.ai/api/v1"),
        None,
        Some("OPENROUTER_API_KEY"),
        false,
    )
    .falling_back_to(SHARED_OPENAI_KEY),
    provider(
        "together",
        WireFormat::OpenAi,
        Some("https://api.together.xyz/v1"),
        None,
        Some("TOGETHER_API_KEY"),
        false,
    )
    .falling_back_to(SHARED_OPENAI_KEY),
    provider(
        "groq",
        WireFormat::OpenAi,
        Some("https://api.groq.com/openai/v1"),
        None,
        Some("GROQ_API_KEY"),
        false,
    )
    .falling_back_to(SHARED_OPENAI_KEY),
    provider(
        "deepseek",
        WireFormat::OpenAi,
        Some("https://api.deepseek.com/v1"),
        None,
        Some("DEEPSEEK_API_KEY"),
        false,
    )
    .falling_back_to(SHARED_OPENAI_KEY),
    // vLLM's server reads the same variable for its optional `--api-key`.
    provider(
        "vllm",
        WireFormat::OpenAi,
        Some("http://localhost:8000/v1"),
        None,
        Some("VLLM_API_KEY"),
        true,
    ),
    provider(
        "lmstudio",
        WireFormat::OpenAi,
        Some("http://localhost:1234/v1"),
        None,
        None,
        true,
    ),
    provider(
        "ollama",
        WireFormat::OpenAi,
        Some("http://localhost:11434/v1"),
        None,
        None,
        true,
    ),
    provider("local", WireFormat::Local, None, None, None, true),
    provider("fake", WireFormat::Fake, None, None, None, true),
];

/// The supported provider names, in listing order.
pub fn provider_names() -> Vec<&'static str> {
    PROVIDERS.iter().map(|p| p.name).collect()
}

/// The providers whose batch API batch mode speaks (`batch: true`).
pub fn batch_provider_names() -> Vec<&'static str> {
    PROVIDERS
        .iter()
        .filter(|p| batch_wire(p).is_some())
        .map(|p| p.name)
        .collect()
}

/// The provider called `name` (case-insensitive, surrounding whitespace ignored).
pub fn find_provider(name: &str) -> Result<&'static ProviderInfo, LlmError> {
    let wanted = name.trim().to_lowercase();
    if let Some(found) = PROVIDERS.iter().find(|p| p.name == wanted) {
        return Ok(found);
    }
    let closest = PROVIDERS
        .iter()
        .map(|p| p.name)
        .min_by_key(|candidate| strsim::levenshtein(candidate, &wanted))
        .unwrap_or(DEFAULT_PROVIDER);
    Err(LlmError::Config(format!(
        "Unknown provider '{}'. Supported: {}. Did you mean '{closest}'?",
        name.trim(),
        provider_names().join(", ")
    )))
}

/// Builds the client a provider block describes. `default_model` is used when the block
/// names no model; `env` looks up environment variables (injected so that callers decide
/// whether `.env` was loaded, and tests need no process environment).
///
/// Precedence: the block's `base_url` > the provider's endpoint variable > its default; the
/// block's `api_key` > the provider's key variable > `not-needed` for local servers. A hosted
/// provider without a key is an error naming the variable to set.
pub fn build_client(
    settings: &ProviderSettings,
    default_model: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    build_client_in(settings, default_model, env, &Scheduler::default())
}

/// [`build_client`] for a client whose requests go through `scheduler`: the run-wide cap and
/// the provider gates it shares with the run's other clients.
pub fn build_client_in(
    settings: &ProviderSettings,
    default_model: &str,
    env: &dyn Fn(&str) -> Option<String>,
    scheduler: &Scheduler,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let info = block_provider(settings)?;
    let model = block_model(settings, default_model);
    let client: Arc<dyn ChatModel> = match info.wire {
        WireFormat::Fake => Arc::new(build_fake(settings, model.unwrap_or("fake"))?),
        WireFormat::Local => crate::local::build_local(settings, model)?,
        WireFormat::Anthropic => {
            let http = HttpParts::resolve(info, settings, model, env, scheduler)?;
            Arc::new(AnthropicClient::new(
                &http.base_url,
                http.key,
                http.model,
                http.options,
            )?)
        }
        WireFormat::OpenAi => {
            let http = HttpParts::resolve(info, settings, model, env, scheduler)?;
            Arc::new(OpenAiClient::new(
                info.name,
                &http.base_url,
                http.key,
                http.model,
                http.options,
            )?)
        }
        WireFormat::Azure => {
            let http = HttpParts::resolve(info, settings, model, env, scheduler)?;
            let deployment = non_empty(settings.deployment.as_deref()).unwrap_or(http.model);
            let version =
                non_empty(settings.api_version.as_deref()).unwrap_or(DEFAULT_AZURE_API_VERSION);
            Arc::new(OpenAiClient::azure(
                &http.base_url,
                deployment,
                version,
                http.key,
                http.model,
                http.options,
            )?)
        }
    };
    Ok(client)
}

/// The provider a block names (`anthropic` when it names none).
fn block_provider(settings: &ProviderSettings) -> Result<&'static ProviderInfo, LlmError> {
    let name = settings
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_PROVIDER);
    find_provider(name)
}

/// The model a block names, else `default_model`, when either is not blank.
fn block_model<'a>(settings: &'a ProviderSettings, default_model: &'a str) -> Option<&'a str> {
    non_empty(settings.model.as_deref()).or_else(|| non_empty(Some(default_model)))
}

/// Whether the provider a block names has a batch API that batch mode speaks.
pub fn has_batch_api(settings: &ProviderSettings) -> bool {
    block_provider(settings).is_ok_and(|info| batch_wire(info).is_some())
}

fn batch_wire(info: &ProviderInfo) -> Option<BatchWire> {
    match (info.wire, info.name) {
        (WireFormat::Anthropic, _) => Some(BatchWire::Anthropic),
        (WireFormat::OpenAi, "openai" | "openai-compatible") => Some(BatchWire::OpenAi),
        _ => None,
    }
}

/// The batch API of the provider a block with `batch: true` names, and how to gather and
/// poll its batches; an error for a provider without one.
pub fn build_batch_api(
    settings: &ProviderSettings,
    default_model: &str,
    env: &dyn Fn(&str) -> Option<String>,
    scheduler: &Scheduler,
) -> Result<(BatchApi, BatchOptions), LlmError> {
    let info = block_provider(settings)?;
    let Some(wire) = batch_wire(info) else {
        return Err(LlmError::Config(format!(
            "`batch: true`, but {} has no batch API that batch mode speaks (it speaks those of {}): remove `batch`, or use one of those providers",
            info.name,
            batch_provider_names().join(", ")
        )));
    };
    let http = HttpParts::resolve(
        info,
        settings,
        block_model(settings, default_model),
        env,
        scheduler,
    )?;
    let mut options = BatchOptions::default();
    if let Some(seconds) = settings.batch_poll {
        options.polls.first = seconds_key("batch_poll", seconds)?;
        options.polls.longest = options.polls.longest.max(options.polls.first);
    }
    let api = BatchApi::new(wire, info.name, &http.base_url, http.key, http.model)?;
    Ok((api, options))
}

/// What every HTTP client needs, resolved and checked from a provider block.
struct HttpParts<'a> {
    model: &'a str,
    base_url: String,
    key: ApiKey,
    options: ClientOptions,
}

impl<'a> HttpParts<'a> {
    fn resolve(
        info: &ProviderInfo,
        settings: &ProviderSettings,
        model: Option<&'a str>,
        env: &dyn Fn(&str) -> Option<String>,
        scheduler: &Scheduler,
    ) -> Result<Self, LlmError> {
        reject_fake_keys(info, settings)?;
        let model = model.ok_or_else(|| {
            LlmError::Config(format!(
                "no model for provider '{}': set `model` in the provider block",
                info.name
            ))
        })?;
        let options = client_options(settings, scheduler)?;
        let base_url = resolve_base_url(info, settings, env)?;
        let key = resolve_key(info, settings, &base_url, env)?;
        key.check_host(&base_url)?;
        Ok(HttpParts {
            model,
            base_url,
            key,
            options,
        })
    }
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// The endpoint: the block's `base_url`, else the provider's variable, else its default.
pub(crate) fn resolve_base_url(
    info: &ProviderInfo,
    settings: &ProviderSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, LlmError> {
    let from_env = info
        .base_url_env
        .and_then(|var| non_empty(env(var).as_deref()).map(|v| (v.to_string(), var)));
    let (url, origin) = match (
        non_empty(settings.base_url.as_deref()),
        from_env,
        info.default_base_url,
    ) {
        (Some(url), _, _) => (
            url.to_string(),
            "base_url in the provider block".to_string(),
        ),
        (None, Some((url, var)), _) => (url, var.to_string()),
        (None, None, Some(default)) => (default.to_string(), "the provider's default".to_string()),
        (None, None, None) => {
            let variable = info
                .base_url_env
                .map(|v| format!(" or the {v} environment variable"))
                .unwrap_or_default();
            return Err(LlmError::Config(format!(
                "provider '{}' needs an endpoint: set base_url in the provider block (e.g. https://NAME.openai.azure.com){variable}",
                info.name
            )));
        }
    };
    match reqwest::Url::parse(&url) {
        Ok(parsed)
            if matches!(parsed.scheme(), "http" | "https") && parsed.host_str().is_some() =>
        {
            Ok(url.trim_end_matches('/').to_string())
        }
        _ => Err(LlmError::Config(format!(
            "the endpoint for provider '{}' from {origin} is not an http(s) URL: '{url}' (expected something like https://api.openai.com/v1)",
            info.name
        ))),
    }
}

/// True for a URL on this machine (localhost, 127.x.x.x, ::1): such servers get the
/// placeholder key when none is set.
pub(crate) fn is_loopback(url: &str) -> bool {
    let Some(host) = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
    else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The key: the block's `api_key`, else the provider's variable, else the placeholder for
/// local servers; a hosted provider without one is an error saying what to set.
pub(crate) fn resolve_key(
    info: &ProviderInfo,
    settings: &ProviderSettings,
    base_url: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ApiKey, LlmError> {
    if let Some(key) = non_empty(settings.api_key.as_deref()) {
        return Ok(ApiKey::new(key, "api_key in the provider block"));
    }
    if let Some(var) = info.key_env
        && let Some(key) = non_empty(env(var).as_deref())
    {
        return Ok(ApiKey::new(key, var));
    }
    if let (Some(own), Some(var)) = (info.key_env, info.fallback_key_env)
        && let Some(key) = non_empty(env(var).as_deref())
    {
        warn_fallback_once(info.name, own, var, base_url);
        return Ok(ApiKey::new(key, var));
    }
    if info.local || is_loopback(base_url) {
        return Ok(ApiKey::placeholder());
    }
    let variable = info.key_env.unwrap_or("the provider's key variable");
    Err(LlmError::Config(format!(
        "no API key for provider '{}': set {variable} in the environment (or .env), or api_key in the provider block",
        info.name
    )))
}

/// Says once per provider and process (every role of a run may build a client for it) that
/// its key came from the shared variable, and which one to set instead.
fn warn_fallback_once(provider: &'static str, own: &str, shared: &str, base_url: &str) {
    static WARNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let first = WARNED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(provider);
    if first {
        let host = reqwest::Url::parse(base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned))
            .unwrap_or_else(|| base_url.to_owned());
        tracing::warn!(
            "provider '{provider}': {own} is not set, so {shared} is sent to {host}, as the \
             Python skill-factory did; set {own} to your {provider} key to stop this warning"
        );
    }
}

/// Timeouts, attempts, concurrency cap and pace from the block, checked.
fn client_options(
    settings: &ProviderSettings,
    scheduler: &Scheduler,
) -> Result<ClientOptions, LlmError> {
    let mut options = ClientOptions {
        scheduler: scheduler.clone(),
        ..ClientOptions::default()
    };
    if let Some(seconds) = settings.timeout {
        options.timeout = seconds_key("timeout", seconds)?;
    }
    if let Some(attempts) = settings.max_retries {
        if attempts == 0 {
            return Err(LlmError::Config(
                "provider key `max_retries` counts attempts, the first included: it must be at least 1".to_string(),
            ));
        }
        options.retry = RetryPolicy {
            max_attempts: attempts,
            ..RetryPolicy::default()
        };
    }
    if let Some(max) = settings.max_concurrency {
        if max == 0 {
            return Err(LlmError::Config(
                "provider key `max_concurrency` must be at least 1 (leave it out for no per-provider cap)".to_string(),
            ));
        }
        options.max_concurrency = Some(max);
    }
    if let Some(per_minute) = settings.requests_per_minute {
        if per_minute == 0 {
            return Err(LlmError::Config(
                "provider key `requests_per_minute` must be at least 1 (leave it out for no pace)"
                    .to_string(),
            ));
        }
        options.requests_per_minute = Some(per_minute);
    }
    if let Some(seconds) = settings.call_timeout {
        options.call_timeout = Some(seconds_key("call_timeout", seconds)?);
    }
    Ok(options)
}

/// Script keys on a real provider are a leftover from switching away from `fake`; saying so
/// beats silently ignoring them.
fn reject_fake_keys(info: &ProviderInfo, settings: &ProviderSettings) -> Result<(), LlmError> {
    let Some(present) = keys_set(&settings.fake_keys()) else {
        return Ok(());
    };
    Err(LlmError::Config(format!(
        "provider keys {present} only apply to the fake provider, but this block uses '{}': remove them or set name: fake",
        info.name
    )))
}

/// The fake from inline `responses`/`rules` plus the `script` file (already resolved to a
/// path by the config layer): inline rules first, inline responses win over the script's.
fn build_fake(settings: &ProviderSettings, model: &str) -> Result<FakeModel, LlmError> {
    if settings.responses.is_none() && settings.rules.is_none() && settings.script.is_none() {
        return Err(LlmError::Config(
            "the fake provider needs something to answer with: give the provider block `responses`, `rules` or `script`"
                .to_string(),
        ));
    }
    let mut fake = FakeModel::new(model);
    if let Some(responses) = &settings.responses {
        fake = fake.with_responses(responses.clone());
    }
    if let Some(rules) = &settings.rules {
        fake = fake.with_rules(rules.clone(), "the provider block")?;
    }
    if let Some(path) = non_empty(settings.script.as_deref()) {
        let text = std::fs::read_to_string(path).map_err(|e| {
            LlmError::Config(format!(
                "cannot read the fake provider's script '{path}': {e}"
            ))
        })?;
        fake = fake.with_script(FakeScript::parse(&text, path)?, path)?;
    }
    Ok(fake)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn block(name: &str) -> ProviderSettings {
        ProviderSettings {
            name: Some(name.to_string()),
            model: Some("m".to_string()),
            ..ProviderSettings::default()
        }
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |var: &str| map.get(var).cloned()
    }

    fn endpoint(settings: &ProviderSettings, env: &dyn Fn(&str) -> Option<String>) -> String {
        build_client(settings, "", env)
            .map(|c| c.endpoint().to_string())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn providers_are_listed_in_the_reference_order_then_local_and_fake() {
        assert_eq!(
            provider_names(),
            [
                "anthropic",
                "openai",
                "openai-compatible",
                "azure",
                "openrouter",
                "together",
                "groq",
                "deepseek",
                "vllm",
                "lmstudio",
                "ollama",
                "local",
                "fake"
            ]
        );
    }

    #[test]
    fn names_are_case_insensitive_and_trimmed() {
        assert_eq!(
            find_provider("  OpenRouter ").map(|p| p.name),
            Ok("openrouter")
        );
    }

    #[test]
    fn unknown_names_list_the_supported_ones_and_the_closest() {
        let error = find_provider("opnai").unwrap_err().to_string();
        assert!(
            error.starts_with(
                "Unknown provider 'opnai'. Supported: anthropic, openai, openai-compatible"
            ),
            "{error}"
        );
        assert!(error.ends_with("Did you mean 'openai'?"), "{error}");
    }

    #[test]
    fn each_provider_posts_to_its_default_endpoint() {
        let keys = env_of(&[
            ("ANTHROPIC_API_KEY", "a-key-123456"),
            ("OPENAI_API_KEY", "o-key-123456"),
            ("OPENROUTER_API_KEY", "r-key"),
            ("TOGETHER_API_KEY", "t-key"),
            ("GROQ_API_KEY", "g-key"),
            ("DEEPSEEK_API_KEY", "d-key"),
        ]);
        let expected = [
            ("anthropic", "https://api.anthropic.com/v1/messages"),
            ("openai", "https://api.openai.com/v1/chat/completions"),
            (
                "openai-compatible",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "openrouter",
                "https://openrouter.ai/api/v1/chat/completions",
            ),
            ("together", "https://api.together.xyz/v1/chat/completions"),
            ("groq", "https://api.groq.com/openai/v1/chat/completions"),
            ("deepseek", "https://api.deepseek.com/v1/chat/completions"),
            ("vllm", "http://localhost:8000/v1/chat/completions"),
            ("lmstudio", "http://localhost:1234/v1/chat/completions"),
            ("ollama", "http://localhost:11434/v1/chat/completions"),
        ];
        for (name, url) in expected {
            assert_eq!(endpoint(&block(name), &keys), url, "provider {name}");
        }
    }

    #[test]
    fn each_hosted_provider_reads_its_own_key_variable() {
        let cases = [
            ("anthropic", "ANTHROPIC_API_KEY"),
            ("openai", "OPENAI_API_KEY"),
            ("openai-compatible", "OPENAI_API_KEY"),
            ("azure", "AZURE_OPENAI_API_KEY"),
            ("openrouter", "OPENROUTER_API_KEY"),
            ("together", "TOGETHER_API_KEY"),
            ("groq", "GROQ_API_KEY"),
            ("deepseek", "DEEPSEEK_API_KEY"),
        ];
        for (name, var) in cases {
            let info = find_provider(name).unwrap();
            let only_own = env_of(&[(var, "the-right-key")]);
            let key = resolve_key(info, &block(name), "https://example.com/v1", &only_own).unwrap();
            assert_eq!(
                (key.value(), key.source()),
                ("the-right-key", var),
                "provider {name}"
            );

            // Every other provider's variable set (but the one it falls back to), its own
            // missing: an error naming its own.
            let others: Vec<(&str, &str)> = cases
                .iter()
                .filter(|(_, v)| *v != var && Some(*v) != info.fallback_key_env)
                .map(|(_, v)| (*v, "someone-elses-key"))
                .collect();
            let error = resolve_key(
                info,
                &block(name),
                "https://example.com/v1",
                &env_of(&others),
            )
            .unwrap_err();
            let text = error.to_string();
            assert!(
                text.contains(var) && text.contains("api_key"),
                "provider {name}: {text}"
            );
            assert!(!text.contains("someone-elses-key"));
        }
    }

    #[test]
    fn the_providers_the_python_tool_sent_openai_api_key_to_fall_back_to_it() {
        let shared = env_of(&[("OPENAI_API_KEY", "the-openai-key")]);
        for name in ["openrouter", "together", "groq", "deepseek"] {
            let info = find_provider(name).unwrap();
            let key = resolve_key(info, &block(name), "https://example.com/v1", &shared).unwrap();
            assert_eq!(
                (key.value(), key.source()),
                ("the-openai-key", "OPENAI_API_KEY"),
                "provider {name}"
            );
            // Its own variable, when set, wins.
            let own = info.key_env.unwrap();
            let both = env_of(&[("OPENAI_API_KEY", "the-openai-key"), (own, "its-own-key")]);
            let key = resolve_key(info, &block(name), "https://example.com/v1", &both).unwrap();
            assert_eq!(key.value(), "its-own-key", "provider {name}");
        }
        // Providers the Python tool did not send it to never get it.
        for name in ["anthropic", "azure"] {
            let info = find_provider(name).unwrap();
            assert!(
                resolve_key(info, &block(name), "https://example.com/v1", &shared).is_err(),
                "provider {name}"
            );
        }
    }

    #[test]
    fn config_key_and_base_url_win_over_the_environment() {
        let env = env_of(&[
            ("OPENAI_API_KEY", "env-key"),
            ("OPENAI_BASE_URL", "http://env.example/v1"),
        ]);
        let settings = ProviderSettings {
            api_key: Some("block-key".into()),
            base_url: Some("https://block.example/v1/".into()),
            ..block("openai")
        };
        let info = find_provider("openai").unwrap();
        assert_eq!(
            resolve_base_url(info, &settings, &env).unwrap(),
            "https://block.example/v1"
        );
        let key = resolve_key(info, &settings, "https://block.example/v1", &env).unwrap();
        assert_eq!(key.value(), "block-key");
    }

    #[test]
    fn openai_and_openai_compatible_honour_openai_base_url() {
        let env = env_of(&[
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ]);
        for name in ["openai", "openai-compatible"] {
            assert_eq!(
                endpoint(&block(name), &env),
                "http://127.0.0.1:9/v1/chat/completions"
            );
        }
        // Hosted providers with their own endpoint ignore it.
        let env = env_of(&[
            ("GROQ_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ]);
        let groq = endpoint(&block("groq"), &env);
        assert_eq!(groq, "https://api.groq.com/openai/v1/chat/completions");
    }

    #[test]
    fn local_servers_get_the_placeholder_key_when_none_is_set() {
        let nothing = env_of(&[]);
        for name in ["vllm", "lmstudio", "ollama"] {
            let key = resolve_key(
                find_provider(name).unwrap(),
                &block(name),
                "http://gpu-box:8000/v1",
                &nothing,
            )
            .unwrap();
            assert_eq!(key.value(), "not-needed", "provider {name}");
        }
        for url in [
            "http://localhost:8080/v1",
            "http://127.0.0.1:8080/v1",
            "http://[::1]:8080/v1",
        ] {
            for name in ["openai", "anthropic"] {
                let key =
                    resolve_key(find_provider(name).unwrap(), &block(name), url, &nothing).unwrap();
                assert_eq!(key.value(), "not-needed", "{url}");
            }
        }
        assert!(!is_loopback("https://localhost.example.com/v1"));
    }

    #[test]
    fn azure_builds_the_deployment_url_with_the_api_version() {
        let env = env_of(&[
            ("AZURE_OPENAI_API_KEY", "az-key"),
            ("AZURE_OPENAI_ENDPOINT", "https://team.openai.azure.com/"),
        ]);
        assert_eq!(
            endpoint(&block("azure"), &env),
            "https://team.openai.azure.com/openai/deployments/m/chat/completions?api-version=2024-10-21"
        );
        let settings = ProviderSettings {
            base_url: Some("https://other.openai.azure.com".into()),
            deployment: Some("prod-gpt".into()),
            api_version: Some("2025-01-01-preview".into()),
            ..block("azure")
        };
        assert_eq!(
            endpoint(&settings, &env),
            "https://other.openai.azure.com/openai/deployments/prod-gpt/chat/completions?api-version=2025-01-01-preview"
        );
    }

    #[test]
    fn azure_without_an_endpoint_says_how_to_give_one() {
        let error = build_client(
            &block("azure"),
            "",
            &env_of(&[("AZURE_OPENAI_API_KEY", "k")]),
        )
        .err()
        .unwrap();
        let text = error.to_string();
        assert!(
            text.contains("base_url") && text.contains("AZURE_OPENAI_ENDPOINT"),
            "{text}"
        );
    }

    #[test]
    fn a_block_without_name_is_anthropic_and_without_model_uses_the_default() {
        let env = env_of(&[("ANTHROPIC_API_KEY", "k")]);
        let client = build_client(&ProviderSettings::default(), "claude-sonnet-5", &env).unwrap();
        assert_eq!(
            (client.provider(), client.model()),
            ("anthropic", "claude-sonnet-5")
        );
        let error = build_client(&ProviderSettings::default(), " ", &env)
            .err()
            .unwrap();
        assert!(error.to_string().contains("set `model`"), "{error}");
    }

    #[test]
    fn bad_numbers_and_urls_are_config_errors_naming_the_key() {
        let env = env_of(&[("OPENAI_API_KEY", "k")]);
        let cases = [
            (
                ProviderSettings {
                    timeout: Some(0.0),
                    ..block("openai")
                },
                "timeout",
            ),
            (
                ProviderSettings {
                    max_retries: Some(0),
                    ..block("openai")
                },
                "max_retries",
            ),
            (
                ProviderSettings {
                    max_concurrency: Some(0),
                    ..block("openai")
                },
                "max_concurrency",
            ),
            (
                ProviderSettings {
                    base_url: Some("api.openai.com/v1".into()),
                    ..block("openai")
                },
                "base_url",
            ),
            (
                ProviderSettings {
                    requests_per_minute: Some(0),
                    ..block("openai")
                },
                "requests_per_minute",
            ),
            (
                ProviderSettings {
                    call_timeout: Some(-1.0),
                    ..block("openai")
                },
                "call_timeout",
            ),
            (
                ProviderSettings {
                    responses: Some(vec![]),
                    ..block("openai")
                },
                "name: fake",
            ),
        ];
        for (settings, needle) in cases {
            let error = build_client(&settings, "", &env).err().unwrap();
            assert!(matches!(error, LlmError::Config(_)));
            assert!(error.to_string().contains(needle), "{needle}: {error}");
        }
    }

    #[test]
    fn the_fake_needs_something_to_answer_with() {
        let error = build_client(&block("fake"), "", &env_of(&[]))
            .err()
            .unwrap();
        assert!(error.to_string().contains("responses"), "{error}");
        let fake = build_client(
            &ProviderSettings {
                responses: Some(vec!["hi".into()]),
                ..block("FAKE")
            },
            "",
            &env_of(&[]),
        );
        assert_eq!(
            fake.map(|f| f.provider().to_string()),
            Ok("fake".to_string())
        );
    }
}
