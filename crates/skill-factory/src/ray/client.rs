//! The Job Submission REST API of a Ray cluster's dashboard: upload a working_dir package,
//! submit a job, read its status and logs, stop and delete it.
//!
//! The address is read once into a URL with no trailing slash on its path, so `http://host:8265/`
//! and `http://host:8265` ask the same `/api/...` routes. What comes back is checked for what
//! a dashboard answers: a route that must answer JSON and does not, or an error page in HTML
//! (Ray's own errors are plain text), is another server, said with a short excerpt of its
//! answer rather than the whole page.

use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};
use skill_factory_llm::http::{build_http_client, error_chain};
use skill_factory_llm::url::EndpointUrl;

use super::RayError;

/// The longest one exchange with the dashboard may take (an upload of a project package
/// included); a dashboard that hangs must not hold a rollout forever.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(120);

/// A job's state, as Ray names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    /// `PENDING`, `RUNNING`, `STOPPED`, `SUCCEEDED` or `FAILED`.
    pub status: String,
    /// Ray's explanation, for a job that failed before its entrypoint ran.
    pub message: String,
}

impl JobStatus {
    /// True once the job will not change any more.
    pub fn ended(&self) -> bool {
        matches!(self.status.as_str(), "STOPPED" | "SUCCEEDED" | "FAILED")
    }
}

/// The most characters of an answer an error quotes.
const EXCERPT_CHARS: usize = 160;

/// A client of one cluster's dashboard.
#[derive(Debug, Clone)]
pub struct RayClient {
    /// The dashboard, normalized: its path without a trailing slash.
    base: Url,
    /// The same, as shown (credentials in it are shown as `***`).
    address: EndpointUrl,
    http: reqwest::Client,
}

impl RayClient {
    /// A client of the dashboard at `address` (`http://HOST:PORT`, with or without a path
    /// and a trailing slash).
    pub fn new(address: &str) -> Result<Self, RayError> {
        let http = build_http_client().map_err(RayError::Client)?;
        let mut base = Url::parse(address.trim()).map_err(|problem| RayError::Address {
            problem: problem.to_string(),
        })?;
        let path = base.path().trim_end_matches('/').to_string();
        base.set_path(&path);
        Ok(RayClient {
            address: EndpointUrl::new(base.as_str()),
            base,
            http,
        })
    }

    /// The dashboard's address as shown (credentials redacted), without a trailing slash.
    pub fn address(&self) -> &str {
        self.address.shown().trim_end_matches('/')
    }

    /// The URL of the dashboard's route `path` (`/api/jobs/`), before any query the address
    /// carries.
    fn url(&self, path: &str) -> String {
        let mut url = self.base.clone();
        url.set_path(&format!("{}{path}", self.base.path().trim_end_matches('/')));
        url.into()
    }

    /// Uploads a working_dir package as `gcs://<name>` (`name` is `_ray_pkg_<hash>.zip`).
    pub async fn upload(&self, name: &str, zip: Vec<u8>) -> Result<(), RayError> {
        let url = self.url(&format!("/api/packages/gcs/{name}"));
        self.send(self.http.put(url).body(zip)).await.map(drop)
    }

    /// Submits a job and returns its submission id (`id`, which the caller chose).
    pub async fn submit(
        &self,
        id: &str,
        entrypoint: &str,
        package: &str,
        num_cpus: f64,
    ) -> Result<(), RayError> {
        let body = json!({
            "submission_id": id,
            "entrypoint": entrypoint,
            "runtime_env": {"working_dir": format!("gcs://{package}")},
            "entrypoint_num_cpus": num_cpus,
            "metadata": {"started_by": "skill-factory"},
        });
        let url = self.url("/api/jobs/");
        self.json(self.http.post(url).json(&body)).await.map(drop)
    }

    /// The job's status.
    pub async fn status(&self, id: &str) -> Result<JobStatus, RayError> {
        let value = self
            .json(self.http.get(self.url(&format!("/api/jobs/{id}"))))
            .await?;
        Ok(JobStatus {
            status: value["status"].as_str().unwrap_or_default().to_string(),
            message: value["message"].as_str().unwrap_or_default().to_string(),
        })
    }

    /// Everything the job printed (with Ray's own lines).
    pub async fn logs(&self, id: &str) -> Result<String, RayError> {
        let value = self
            .json(self.http.get(self.url(&format!("/api/jobs/{id}/logs"))))
            .await?;
        Ok(value["logs"].as_str().unwrap_or_default().to_string())
    }

    /// Asks Ray to stop the job (SIGTERM, then SIGKILL after a few seconds).
    pub async fn stop(&self, id: &str) -> Result<(), RayError> {
        let url = self.url(&format!("/api/jobs/{id}/stop"));
        self.send(self.http.post(url)).await.map(drop)
    }

    /// Deletes the record of an ended job, so a run's thousands of jobs do not pile up in the
    /// dashboard.
    pub async fn delete(&self, id: &str) -> Result<(), RayError> {
        let url = self.url(&format!("/api/jobs/{id}"));
        self.send(self.http.delete(url)).await.map(drop)
    }

    /// The JSON a route answers; a server that answers something else is no Ray dashboard.
    async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, RayError> {
        let (route, text) = self.send(request).await?;
        serde_json::from_str(&text).map_err(|_| RayError::NotRay {
            address: self.address().to_string(),
            request: route,
            status: 200,
            answer: self.excerpt(&text),
        })
    }

    /// What an error quotes of an answer: the title of an HTML page, else its start on one
    /// line, cut at [`EXCERPT_CHARS`]; redacted.
    fn excerpt(&self, text: &str) -> String {
        // ASCII lowercasing keeps every byte where it was, so the offsets hold in `text`.
        let lower = text.to_ascii_lowercase();
        let title = lower.find("<title>").and_then(|at| {
            let start = at + "<title>".len();
            let end = start + lower[start..].find("</title>")?;
            Some(&text[start..end])
        });
        let shown = title
            .unwrap_or(text)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if shown.is_empty() {
            return "an empty answer".to_string();
        }
        let mut cut: String = shown.chars().take(EXCERPT_CHARS).collect();
        if cut.len() < shown.len() {
            cut.push('…');
        }
        let what = match (title, looks_like_html(text)) {
            (Some(_), _) => "an HTML page titled",
            (None, true) => "an HTML page",
            (None, false) => "text",
        };
        format!("{what} «{}»", self.address.redact(&cut))
    }

    /// Sends `request`; returns its route (`GET /api/jobs/ID`) and the text of a successful
    /// answer.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<(String, String), RayError> {
        let cause = |e: reqwest::Error| self.address.redact(&error_chain(&e));
        let unreachable = |e| RayError::Unreachable {
            address: self.address().to_string(),
            cause: cause(e),
        };
        let request = request
            .timeout(EXCHANGE_TIMEOUT)
            .build()
            .map_err(unreachable)?;
        let route = format!("{} {}", request.method(), request.url().path());
        let response = self.http.execute(request).await.map_err(unreachable)?;
        let status = response.status();
        let text = response.text().await.map_err(|e| RayError::BrokenAnswer {
            address: self.address().to_string(),
            cause: cause(e),
        })?;
        if status.is_success() {
            return Ok((route, text));
        }
        let request = route;
        if looks_like_html(&text) {
            // Ray's dashboard answers its errors in plain text: a page is another server.
            return Err(RayError::NotRay {
                address: self.address().to_string(),
                request,
                status: status.as_u16(),
                answer: self.excerpt(&text),
            });
        }
        Err(RayError::Refused {
            address: self.address().to_string(),
            request,
            status: status.as_u16(),
            body: self.excerpt(&text),
        })
    }
}

/// Whether an answer is an HTML page (or an XML document), not Ray's JSON or plain text.
fn looks_like_html(text: &str) -> bool {
    text.trim_start().starts_with('<')
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A server on 127.0.0.1 that answers every request with `status` and `body`, and keeps
    /// each request's line (`GET /api/jobs/x HTTP/1.1`).
    fn server(status: &'static str, body: String) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let seen = lines.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                seen.lock().unwrap().push(line.trim_end().to_string());
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    if header.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap();
                    }
                }
                let mut request_body = vec![0; length];
                reader.read_exact(&mut request_body).unwrap();
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (port, lines)
    }

    #[tokio::test]
    async fn an_address_with_or_without_a_trailing_slash_asks_the_same_routes() {
        let (port, lines) = server("200 OK", r#"{"status": "RUNNING"}"#.to_string());
        for address in [
            format!("http://127.0.0.1:{port}"),
            format!("http://127.0.0.1:{port}/"),
            format!(" http://127.0.0.1:{port}// "),
        ] {
            let client = RayClient::new(&address).unwrap();
            assert_eq!(client.address(), format!("http://127.0.0.1:{port}"));
            assert_eq!(client.status("job-1").await.unwrap().status, "RUNNING");
        }
        let behind = RayClient::new(&format!("http://127.0.0.1:{port}/ray/")).unwrap();
        behind.status("job-1").await.unwrap();
        let lines = lines.lock().unwrap().clone();
        assert_eq!(
            lines,
            [
                "GET /api/jobs/job-1 HTTP/1.1",
                "GET /api/jobs/job-1 HTTP/1.1",
                "GET /api/jobs/job-1 HTTP/1.1",
                "GET /ray/api/jobs/job-1 HTTP/1.1",
            ]
        );
    }

    #[tokio::test]
    async fn a_server_that_is_not_ray_is_named_with_a_short_excerpt_of_its_answer() {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><TITLE>Welcome to nginx!</TITLE></head><body>{}</body></html>",
            "<p>filler</p>".repeat(5_000)
        );
        for (status, code) in [("404 Not Found", 404), ("200 OK", 200)] {
            let (port, _) = server(status, page.clone());
            let client = RayClient::new(&format!("http://user:secret@127.0.0.1:{port}/")).unwrap();
            let error = client.status("job-1").await.unwrap_err().to_string();
            assert!(error.starts_with("not a Ray dashboard: "), "{error}");
            for part in [
                &format!("GET /api/jobs/job-1 with HTTP {code}"),
                "an HTML page titled «Welcome to nginx!»",
                "answers JSON",
                "harness.executor.address",
            ] {
                assert!(error.contains(part), "{part:?} missing: {error}");
            }
            assert!(error.len() < 600, "{} characters: {error}", error.len());
            assert!(
                !error.contains("filler") && !error.contains("secret"),
                "{error}"
            );
        }
        // A plain answer where JSON belongs: its start, cut.
        let (port, _) = server("200 OK", "It works! ".repeat(100));
        let client = RayClient::new(&format!("http://127.0.0.1:{port}")).unwrap();
        let error = client.logs("job-1").await.unwrap_err().to_string();
        assert!(
            error.contains("GET /api/jobs/job-1/logs with HTTP 200 and text «It works! It works!")
                && error.contains("…»"),
            "{error}"
        );
        assert!(error.len() < 500, "{error}");
        // Ray's own refusals are plain text, and stay refusals.
        let (port, _) = server("400 Bad Request", "Job job-1 does not exist".into());
        let client = RayClient::new(&format!("http://127.0.0.1:{port}")).unwrap();
        let error = client.stop("job-1").await.unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "the Ray dashboard at http://127.0.0.1:{port} answered POST /api/jobs/job-1/stop with HTTP 400: text «Job job-1 does not exist»"
            )
        );
    }

    #[tokio::test]
    async fn an_unreachable_dashboard_is_named_without_a_doubled_slash() {
        // A port that was just free: nothing listens on it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = RayClient::new(&format!("http://127.0.0.1:{port}/")).unwrap();
        let error = client.status("job-1").await.unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "could not reach the Ray dashboard at http://127.0.0.1:{port} ("
            )),
            "{error}"
        );
        assert!(!error.contains("//api"), "{error}");
        let bad = RayClient::new("http://exa mple:8265")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("is not a URL"), "{bad}");
    }
}
