//! Endpoint URLs: an API path joined onto a base properly, and the URL as it may be shown.
//!
//! A `base_url` can carry credentials (`http://user:PASS@host/v1?key=KEY`). Requests go to the
//! URL as given; everything that is shown or written (error texts, the run's `config.yaml`,
//! recordings, cache keys) uses [`EndpointUrl::shown`], with the userinfo and the values of query
//! parameters replaced by `***`. This is the one place that parses URLs for credentials; they
//! are hidden in texts by [`skill_factory_io::secrets::Scrubber`], as everything secret is.

use reqwest::Url;
use skill_factory_io::secrets::{HIDDEN, Scrubber};

/// Query parameters whose values are never secrets, and stay readable in a shown URL.
const PUBLIC_PARAMETERS: [&str; 1] = ["api-version"];

/// Where a client sends its requests, and how that place may be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl {
    url: String,
    shown: String,
    secrets: Scrubber,
}

impl EndpointUrl {
    /// `path` (segments joined by `/`, no leading `/`) appended to the path of `base`, before
    /// its query string, plus the `query` pairs; a base that is not a URL is joined as text.
    pub fn join(base: &str, path: &str, query: &[(&str, &str)]) -> EndpointUrl {
        let url = match Url::parse(base) {
            Ok(mut url) if !url.cannot_be_a_base() => {
                if let Ok(mut segments) = url.path_segments_mut() {
                    segments.pop_if_empty();
                    segments.extend(path.split('/').filter(|s| !s.is_empty()));
                }
                for (name, value) in query {
                    url.query_pairs_mut().append_pair(name, value);
                }
                url.to_string()
            }
            _ => format!("{}/{path}", base.trim_end_matches('/')),
        };
        EndpointUrl::new(url)
    }

    /// An endpoint at `url` as it is.
    pub fn new(url: impl Into<String>) -> EndpointUrl {
        let url = url.into();
        let (shown, secrets) = redact(&url);
        EndpointUrl {
            url,
            shown,
            secrets: Scrubber::credentials(secrets),
        }
    }

    /// The URL requests go to, credentials included: never show or write it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL as it may be shown or written: userinfo and query values redacted.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` (an error message that may quote the URL) with the URL and every credential of
    /// it redacted.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.text(&text.replace(&self.url, &self.shown))
    }
}

/// The URL as it may be shown, and the credentials it holds (each as written in the URL and
/// decoded, for redacting texts that quote it either way).
fn redact(url: &str) -> (String, Vec<String>) {
    let Ok(mut parsed) = Url::parse(url) else {
        return (url.to_string(), Vec::new());
    };
    let mut secrets = Vec::new();
    let mut remember = |raw: &str| {
        secrets.push(raw.to_string());
        if let Ok(decoded) = percent_decode(raw)
            && decoded != raw
        {
            secrets.push(decoded);
        }
    };
    if !parsed.username().is_empty() {
        remember(parsed.username());
        let _ = parsed.set_username(HIDDEN);
    }
    if let Some(password) = parsed.password() {
        remember(password);
        let _ = parsed.set_password(Some(HIDDEN));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
        let mut query = parsed.query_pairs_mut();
        query.clear();
        for (name, value) in &pairs {
            if PUBLIC_PARAMETERS.contains(&name.as_str()) {
                query.append_pair(name, value);
            } else {
                remember(value);
                query.append_pair(name, HIDDEN);
            }
        }
        drop(query);
    }
    (parsed.to_string(), secrets)
}

/// `%XX` sequences decoded; `Err` for text that does not decode to UTF-8.
fn percent_decode(text: &str) -> Result<String, ()> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_goes_before_the_query_and_slashes_are_not_doubled() {
        let endpoint = EndpointUrl::join("http://h:8/v1?key=K", "chat/completions", &[]);
        assert_eq!(endpoint.url(), "http://h:8/v1/chat/completions?key=K");
        let endpoint = EndpointUrl::join("https://h/v1/", "chat/completions", &[]);
        assert_eq!(endpoint.url(), "https://h/v1/chat/completions");
        let azure = EndpointUrl::join(
            "https://n.openai.azure.com",
            "openai/deployments/d/chat/completions",
            &[("api-version", "2024-10-21")],
        );
        assert_eq!(
            azure.url(),
            "https://n.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(azure.shown(), azure.url(), "api-version is no secret");
    }

    #[test]
    fn userinfo_and_query_values_are_redacted_wherever_the_url_is_shown() {
        let endpoint = EndpointUrl::join(
            "http://user:p%40ss@127.0.0.1:9/v1?key=SECRETKEY&team=t42",
            "chat/completions",
            &[],
        );
        assert_eq!(
            endpoint.shown(),
            "http://***:***@127.0.0.1:9/v1/chat/completions?key=***&team=***"
        );
        let error = format!(
            "error sending request for url ({}): p@ss rejected, SECRETKEY unknown",
            endpoint.url()
        );
        let shown = endpoint.redact(&error);
        for secret in ["p%40ss", "p@ss", "SECRETKEY", "t42", "user:"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains(endpoint.shown()), "{shown}");
    }

    #[test]
    fn a_plain_url_is_shown_as_it_is() {
        let endpoint = EndpointUrl::new("https://api.openai.com/v1/chat/completions");
        assert_eq!(endpoint.shown(), endpoint.url());
        assert_eq!(endpoint.redact("no url here"), "no url here");
    }
}
