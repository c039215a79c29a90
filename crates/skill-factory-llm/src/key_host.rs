//! Keys bound to their provider's hosts.
//!
//! A key whose prefix says which provider issued it (`sk-ant-` Anthropic, `sk-or-`
//! OpenRouter, `gsk_` Groq, `sk-proj-`/`sk-svcacct-`/`sk-admin-` OpenAI) is never sent to the
//! API host of another known provider. Such a request could only fail, after giving the key
//! away: it happens when a shared variable (`OPENAI_API_KEY` read by `openrouter`, as the
//! Python tool did) holds another provider's key, or when a block's `base_url` was copied from
//! another provider's block. Hosts no provider owns (gateways, proxies, this machine) accept
//! any key, since the user chose them.

use crate::request::LlmError;

/// A provider that issues keys of a recognizable shape, and the domain of its API.
struct Issuer {
    provider: &'static str,
    domain: &'static str,
    prefixes: &'static [&'static str],
}

/// No two issuers' prefixes overlap, and a bare `sk-` is claimed by nobody: OpenAI (older
/// keys), DeepSeek and others all issue it. Together and DeepSeek own hosts but no prefix.
const ISSUERS: &[Issuer] = &[
    Issuer {
        provider: "Anthropic",
        domain: "anthropic.com",
        prefixes: &["sk-ant-"],
    },
    Issuer {
        provider: "OpenRouter",
        domain: "openrouter.ai",
        prefixes: &["sk-or-"],
    },
    Issuer {
        provider: "Groq",
        domain: "groq.com",
        prefixes: &["gsk_"],
    },
    Issuer {
        provider: "OpenAI",
        domain: "openai.com",
        prefixes: &["sk-proj-", "sk-svcacct-", "sk-admin-"],
    },
    Issuer {
        provider: "Together",
        domain: "together.xyz",
        prefixes: &[],
    },
    Issuer {
        provider: "DeepSeek",
        domain: "deepseek.com",
        prefixes: &[],
    },
];

fn owner_of_host(host: &str) -> Option<&'static Issuer> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    ISSUERS.iter().find(|issuer| {
        host == issuer.domain
            || host
                .strip_suffix(issuer.domain)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

fn issuer_of_key(key: &str) -> Option<&'static Issuer> {
    ISSUERS
        .iter()
        .find(|issuer| issuer.prefixes.iter().any(|p| key.starts_with(p)))
}

/// Refuses to send `key` (from `source`) to `base_url` when the key belongs to one known
/// provider and the host to another; the error names the variable, both providers and the fix.
pub(crate) fn check(key: &str, source: &str, base_url: &str) -> Result<(), LlmError> {
    let Some(host) = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
    else {
        return Ok(());
    };
    let (Some(owner), Some(issuer)) = (owner_of_host(&host), issuer_of_key(key)) else {
        return Ok(());
    };
    if owner.domain == issuer.domain {
        return Ok(());
    }
    Err(LlmError::Config(format!(
        "the key from {source} was issued by {key_owner} but would be sent to {host}, a host of {host_owner}; it was not sent. Give this provider its own key (its own variable, or api_key in the provider block), or fix base_url",
        key_owner = issuer.provider,
        host_owner = owner.provider,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_goes_to_its_own_provider_and_to_hosts_no_provider_owns() {
        for (key, url) in [
            ("sk-ant-api03-abc", "https://api.anthropic.com"),
            ("sk-or-v1-abc", "https://openrouter.ai/api/v1"),
            ("gsk_abc", "https://api.groq.com/openai/v1"),
            ("sk-proj-abc", "https://api.openai.com/v1"),
            ("sk-ant-api03-abc", "https://gateway.example.com/v1"),
            ("sk-ant-api03-abc", "http://127.0.0.1:9000/v1"),
            ("sk-plain", "https://openrouter.ai/api/v1"),
            ("sk-plain", "https://api.deepseek.com/v1"),
            ("0123abcd", "https://api.together.xyz/v1"),
            ("anything", "not a url"),
        ] {
            assert!(check(key, "VAR", url).is_ok(), "{key} → {url}");
        }
    }

    #[test]
    fn a_key_of_one_provider_is_not_sent_to_another_providers_host() {
        for (key, url, owner) in [
            ("sk-proj-abc", "https://openrouter.ai/api/v1", "OpenAI"),
            ("sk-ant-api03-abc", "https://api.openai.com/v1", "Anthropic"),
            (
                "sk-or-v1-abc",
                "https://API.Groq.com./openai/v1",
                "OpenRouter",
            ),
            ("gsk_abc", "https://api.together.xyz/v1", "Groq"),
            ("sk-ant-abc", "https://eu.api.deepseek.com/v1", "Anthropic"),
        ] {
            let error = check(key, "OPENAI_API_KEY", url).unwrap_err().to_string();
            assert!(
                error.contains("OPENAI_API_KEY")
                    && error.contains(owner)
                    && error.contains("it was not sent")
                    && error.contains("its own key"),
                "{error}"
            );
            assert!(!error.contains(key), "{error}");
        }
    }

    #[test]
    fn a_domain_is_matched_whole_not_as_a_suffix_of_another_name() {
        assert!(check("sk-ant-abc", "VAR", "https://notopenai.com/v1").is_ok());
        assert!(check("sk-ant-abc", "VAR", "https://openai.com.example/v1").is_ok());
    }
}
