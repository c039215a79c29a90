//! Where System One requests go: the hosts, their default models and key variables, and the
//! checks that keep a key and a state from going anywhere they should not.
//!
//! Key precedence: `api_key` in the settings, then `SKILL_FACTORY_SYSTEMONE_KEY`, then the
//! provider's own variable. Two rules the reference tool does not have:
//! * a provider's own variable (`TYPESAFE_API_KEY`, ...) is only sent to that provider's own
//!   host: with a `base_url` on another host it is not used, so a key cannot follow a typo'd
//!   or copied endpoint (an explicit `api_key` or `SKILL_FACTORY_SYSTEMONE_KEY` still is);
//! * redirects are never followed (see [`super::client`]).

use std::fmt;
use std::time::Duration;

use reqwest::Url;

use super::SystemOneError;
use crate::http::ApiKey;

/// The variable whose key wins over every provider's own variable.
pub const OVERRIDE_KEY_ENV: &str = "SKILL_FACTORY_SYSTEMONE_KEY";

/// The Cloudflare account variable, used when the settings give no `account_id`.
pub const CLOUDFLARE_ACCOUNT_ENV: &str = "CLOUDFLARE_ACCOUNT_ID";

/// The provider used when the settings name none.
pub const DEFAULT_SYSTEMONE_PROVIDER: &str = "typesafe";

/// One host serving System One decision models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemOneProvider {
    /// The name used in `provider:`.
    pub name: &'static str,
    /// The endpoint (`{account_id}` and `{model}` are filled in); `None` for `custom`.
    pub url: Option<&'static str>,
    /// The model asked when the settings name none.
    pub default_model: &'static str,
    /// The variable holding its key.
    pub key_env: Option<&'static str>,
    /// Whether a request without a key is refused before it is sent.
    pub key_required: bool,
    /// Extra headers it expects (names in lower case).
    pub headers: &'static [(&'static str, &'static str)],
}

/// Every provider, in the order `skill-factory list` shows them.
pub const SYSTEMONE_PROVIDERS: &[SystemOneProvider] = &[
    SystemOneProvider {
        name: "typesafe",
        url: Some("https://api.typesafe.ai/v1/systemone"),
        default_model: "jev-latest",
        key_env: Some("TYPESAFE_API_KEY"),
        key_required: true,
        headers: &[],
    },
    SystemOneProvider {
        name: "openrouter",
        url: Some("https://openrouter.ai/api/alpha/decisions"),
        default_model: "typesafe/jev-1.13",
        key_env: Some("OPENROUTER_API_KEY"),
        key_required: true,
        headers: &[("x-title", "skill-factory")],
    },
    SystemOneProvider {
        name: "vercel",
        url: Some("https://ai-gateway.vercel.sh/typesafe/v1/systemone"),
        default_model: "typesafe-ai/jev",
        key_env: Some("AI_GATEWAY_API_KEY"),
        key_required: true,
        headers: &[],
    },
    SystemOneProvider {
        name: "cloudflare",
        url: Some("https://api.cloudflare.com/client/v4/accounts/{account_id}/ai/run/{model}"),
        default_model: "typesafe/jev",
        key_env: Some("CLOUDFLARE_API_TOKEN"),
        key_required: true,
        headers: &[],
    },
    SystemOneProvider {
        name: "ollama",
        url: Some("http://localhost:11434/v1/systemone"),
        default_model: "nimble",
        key_env: None,
        key_required: false,
        headers: &[],
    },
    SystemOneProvider {
        name: "custom",
        url: None,
        default_model: "jev-latest",
        key_env: None,
        key_required: false,
        headers: &[],
    },
];

/// The names of every provider, in order.
pub fn systemone_provider_names() -> Vec<&'static str> {
    SYSTEMONE_PROVIDERS.iter().map(|p| p.name).collect()
}

/// How to reach a System One model. Its `Debug` output hides the key.
#[derive(Clone, PartialEq)]
pub struct SystemOneSettings {
    /// Provider name, case-insensitive (default `typesafe`).
    pub provider: Option<String>,
    /// Model asked (default: the provider's); also the `m` of cached answers.
    pub model: Option<String>,
    /// Key; wins over every environment variable.
    pub api_key: Option<String>,
    /// Endpoint URL; wins over the provider's (required for `custom`).
    pub base_url: Option<String>,
    /// Cloudflare account id (default: `CLOUDFLARE_ACCOUNT_ID`).
    pub account_id: Option<String>,
    /// Longest wait for one attempt (default 60 s).
    pub timeout: Duration,
    /// Attempts after the first one, for 429, 5xx and network failures (default 4).
    pub max_retries: u32,
    /// Back-off before retry n (0-based) is `retry_delay × 2^n` (default 1 s).
    pub retry_delay: Duration,
}

impl Default for SystemOneSettings {
    fn default() -> Self {
        SystemOneSettings {
            provider: None,
            model: None,
            api_key: None,
            base_url: None,
            account_id: None,
            timeout: Duration::from_secs(60),
            max_retries: 4,
            retry_delay: Duration::from_secs(1),
        }
    }
}

impl fmt::Debug for SystemOneSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemOneSettings")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<hidden>"))
            .field("base_url", &self.base_url)
            .field("account_id", &self.account_id)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_delay", &self.retry_delay)
            .finish()
    }
}

/// Resolved settings: the exact URL, model, key and headers of every request.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The provider's name.
    pub provider: &'static str,
    /// Where requests are POSTed.
    pub url: String,
    /// The model asked.
    pub model: String,
    /// The key sent as a bearer token, if any.
    pub key: Option<ApiKey>,
    /// Extra headers.
    pub headers: &'static [(&'static str, &'static str)],
}

/// Finds a provider by name (case-insensitive, surrounding blanks ignored).
pub fn find_systemone_provider(name: &str) -> Option<&'static SystemOneProvider> {
    let wanted = name.trim().to_ascii_lowercase();
    SYSTEMONE_PROVIDERS.iter().find(|p| p.name == wanted)
}

impl SystemOneSettings {
    /// Resolves the provider, URL, model and key, reading variables through `env` (empty
    /// values count as unset). Fails with a message that says what to set.
    pub fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Endpoint, SystemOneError> {
        let env = |key: &str| env(key).filter(|v| !v.trim().is_empty());
        let name = self
            .provider
            .as_deref()
            .unwrap_or(DEFAULT_SYSTEMONE_PROVIDER);
        let provider = find_systemone_provider(name).ok_or_else(|| {
            SystemOneError::Config(format!(
                "unknown System One provider '{}'; supported: {}",
                name.trim(),
                systemone_provider_names().join(", ")
            ))
        })?;
        let model = self
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| provider.default_model.to_string());
        let template = match (self.base_url.as_deref(), provider.url) {
            (Some(base), _) if !base.trim().is_empty() => base.trim().to_string(),
            (_, Some(url)) => url.to_string(),
            _ => {
                return Err(SystemOneError::Config(format!(
                    "System One provider '{}' needs a base_url: the full URL of the endpoint, e.g. http://127.0.0.1:8080/v1/systemone",
                    provider.name
                )));
            }
        };
        let mut url = template.replace("{model}", &model);
        if url.contains("{account_id}") {
            let account = self
                .account_id
                .clone()
                .filter(|a| !a.trim().is_empty())
                .or_else(|| env(CLOUDFLARE_ACCOUNT_ENV))
                .ok_or_else(|| {
                    SystemOneError::Config(format!(
                        "System One provider '{}' needs an account_id: set {CLOUDFLARE_ACCOUNT_ENV} or systemone.account_id",
                        provider.name
                    ))
                })?;
            url = url.replace("{account_id}", account.trim());
        }
        let parsed = check_transport(&url)?;
        let key = self.key(provider, &parsed, &env)?;
        if let Some(key) = &key {
            key.check_host(&url)
                .map_err(|e| SystemOneError::Config(e.to_string()))?;
        }
        Ok(Endpoint {
            provider: provider.name,
            url,
            model,
            key,
            headers: provider.headers,
        })
    }

    fn key(
        &self,
        provider: &SystemOneProvider,
        url: &Url,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ApiKey>, SystemOneError> {
        if let Some(key) = self.api_key.as_ref().filter(|k| !k.trim().is_empty()) {
            return Ok(Some(ApiKey::new(key.trim(), "systemone.api_key")));
        }
        if let Some(key) = env(OVERRIDE_KEY_ENV) {
            return Ok(Some(ApiKey::new(key.trim(), OVERRIDE_KEY_ENV)));
        }
        let own_host = provider
            .url
            .and_then(|u| Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_string));
        let same_host = own_host.as_deref() == url.host_str();
        if let Some(var) = provider.key_env {
            if same_host && let Some(key) = env(var) {
                return Ok(Some(ApiKey::new(key.trim(), var)));
            }
            if provider.key_required {
                let hint = if same_host {
                    format!("set {var} (or systemone.api_key)")
                } else {
                    format!(
                        "{var} is only sent to {}; to send a key to {}, set systemone.api_key or {OVERRIDE_KEY_ENV}",
                        own_host.as_deref().unwrap_or("the provider's own host"),
                        url.host_str().unwrap_or("this base_url")
                    )
                };
                return Err(SystemOneError::Config(format!(
                    "no key for {}: {hint}",
                    provider.name
                )));
            }
        }
        Ok(None)
    }
}

/// Refuses URLs that would send a state (and a key) in clear text to another machine.
fn check_transport(url: &str) -> Result<Url, SystemOneError> {
    let parsed = Url::parse(url).map_err(|e| {
        SystemOneError::Config(format!(
            "System One URL '{url}' is not a valid URL ({e}); write it in full, e.g. https://api.typesafe.ai/v1/systemone"
        ))
    })?;
    let loopback = matches!(
        parsed.host_str(),
        Some("localhost" | "127.0.0.1" | "::1" | "[::1]")
    );
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        "http" => Err(SystemOneError::Config(format!(
            "refusing to send a state over plain HTTP to a remote host ({url}); use https://, or a loopback address (localhost, 127.0.0.1, ::1)"
        ))),
        other => Err(SystemOneError::Config(format!(
            "System One URL '{url}' uses the scheme '{other}'; use https://"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(
        settings: &SystemOneSettings,
        vars: &[(&str, &str)],
    ) -> Result<Endpoint, SystemOneError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        settings.resolve(&|k| vars.get(k).cloned())
    }

    fn named(provider: &str) -> SystemOneSettings {
        SystemOneSettings {
            provider: Some(provider.into()),
            ..SystemOneSettings::default()
        }
    }

    #[test]
    fn typesafe_is_the_default_with_its_url_model_and_key_variable() {
        let e = resolve(
            &SystemOneSettings::default(),
            &[("TYPESAFE_API_KEY", "ts_key_123")],
        )
        .unwrap();
        assert_eq!(e.provider, "typesafe");
        assert_eq!(e.url, "https://api.typesafe.ai/v1/systemone");
        assert_eq!(e.model, "jev-latest");
        assert_eq!(e.key.unwrap().source(), "TYPESAFE_API_KEY");
    }

    #[test]
    fn missing_key_names_the_variable_to_set() {
        let error = resolve(&SystemOneSettings::default(), &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no key for typesafe: set TYPESAFE_API_KEY (or systemone.api_key)"
        );
    }

    #[test]
    fn explicit_key_beats_the_override_variable_which_beats_the_provider_variable() {
        let vars = [
            ("TYPESAFE_API_KEY", "provider"),
            (OVERRIDE_KEY_ENV, "override"),
        ];
        let mut settings = SystemOneSettings::default();
        assert_eq!(
            resolve(&settings, &vars).unwrap().key.unwrap().source(),
            OVERRIDE_KEY_ENV
        );
        settings.api_key = Some("explicit".into());
        assert_eq!(
            resolve(&settings, &vars).unwrap().key.unwrap().source(),
            "systemone.api_key"
        );
    }

    #[test]
    fn a_provider_variable_is_not_sent_to_another_host() {
        let settings = SystemOneSettings {
            base_url: Some("https://proxy.example.com/v1/systemone".into()),
            ..SystemOneSettings::default()
        };
        let error = resolve(&settings, &[("TYPESAFE_API_KEY", "ts_key_123")]).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with(
                "no key for typesafe: TYPESAFE_API_KEY is only sent to api.typesafe.ai"
            ),
            "{text}"
        );
        assert!(!text.contains("ts_key_123"));
    }

    #[test]
    fn every_provider_has_its_url_model_and_variable() {
        let cases = [
            (
                "openrouter",
                "OPENROUTER_API_KEY",
                "https://openrouter.ai/api/alpha/decisions",
                "typesafe/jev-1.13",
            ),
            (
                "vercel",
                "AI_GATEWAY_API_KEY",
                "https://ai-gateway.vercel.sh/typesafe/v1/systemone",
                "typesafe-ai/jev",
            ),
        ];
        for (name, var, url, model) in cases {
            let e = resolve(&named(name), &[(var, "secret-key-1")]).unwrap();
            assert_eq!((e.url.as_str(), e.model.as_str()), (url, model), "{name}");
            assert_eq!(e.key.unwrap().source(), var);
        }
        assert_eq!(
            resolve(
                &named("openrouter"),
                &[("OPENROUTER_API_KEY", "k-12345678")]
            )
            .unwrap()
            .headers,
            &[("x-title", "skill-factory")]
        );
    }

    #[test]
    fn cloudflare_fills_in_the_account_and_model_and_needs_an_account() {
        let e = resolve(
            &named("cloudflare"),
            &[
                ("CLOUDFLARE_API_TOKEN", "cf-token-1"),
                (CLOUDFLARE_ACCOUNT_ENV, "acc42"),
            ],
        )
        .unwrap();
        assert_eq!(
            e.url,
            "https://api.cloudflare.com/client/v4/accounts/acc42/ai/run/typesafe/jev"
        );
        let error = resolve(
            &named("cloudflare"),
            &[("CLOUDFLARE_API_TOKEN", "cf-token-1")],
        )
        .unwrap_err();
        assert!(error.to_string().contains("account_id"), "{error}");
    }

    #[test]
    fn ollama_needs_no_key_and_defaults_to_nimble() {
        let e = resolve(&named("ollama"), &[]).unwrap();
        assert_eq!(
            (e.url.as_str(), e.model.as_str()),
            ("http://localhost:11434/v1/systemone", "nimble")
        );
        assert!(e.key.is_none());
    }

    #[test]
    fn custom_needs_a_base_url_and_no_key() {
        let error = resolve(&named("custom"), &[]).unwrap_err();
        assert!(error.to_string().contains("base_url"), "{error}");
        let mut settings = named("custom");
        settings.base_url = Some("http://127.0.0.1:9/v1/systemone".into());
        let e = resolve(&settings, &[]).unwrap();
        assert_eq!(e.model, "jev-latest");
        assert!(e.key.is_none());
    }

    #[test]
    fn unknown_provider_lists_the_supported_ones() {
        let error = resolve(&named("nope"), &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown System One provider 'nope'; supported: typesafe, openrouter, vercel, cloudflare, ollama, custom"
        );
    }

    #[test]
    fn plain_http_is_refused_except_to_loopback() {
        for url in ["http://example.com/v1/systemone", "http://10.0.0.2/x"] {
            let mut settings = named("custom");
            settings.base_url = Some(url.into());
            let error = resolve(&settings, &[]).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("refusing to send a state over plain HTTP"),
                "{error}"
            );
        }
        for url in [
            "http://localhost:1/x",
            "http://127.0.0.1:1/x",
            "http://[::1]:1/x",
        ] {
            let mut settings = named("custom");
            settings.base_url = Some(url.into());
            assert!(resolve(&settings, &[]).is_ok(), "{url}");
        }
    }

    #[test]
    fn settings_debug_hides_the_key() {
        let settings = SystemOneSettings {
            api_key: Some("ts_very_secret".into()),
            ..SystemOneSettings::default()
        };
        assert!(!format!("{settings:?}").contains("ts_very_secret"));
    }
}
