//! The Job Submission REST API of a Ray cluster's dashboard: upload a working_dir package,
//! submit a job, read its status and logs, stop and delete it.

use std::time::Duration;

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

/// A client of one cluster's dashboard.
#[derive(Debug, Clone)]
pub struct RayClient {
    /// The dashboard (credentials in it are shown as `***`).
    address: EndpointUrl,
    http: reqwest::Client,
}

impl RayClient {
    /// A client of the dashboard at `address` (`http://HOST:PORT`).
    pub fn new(address: &str) -> Result<Self, RayError> {
        let http = build_http_client().map_err(RayError::Client)?;
        Ok(RayClient {
            address: EndpointUrl::new(address.trim().trim_end_matches('/')),
            http,
        })
    }

    /// The dashboard's address as shown (credentials redacted).
    pub fn address(&self) -> &str {
        self.address.shown()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address.url())
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
        self.send(self.http.post(url).json(&body)).await.map(drop)
    }

    /// The job's status.
    pub async fn status(&self, id: &str) -> Result<JobStatus, RayError> {
        let text = self
            .send(self.http.get(self.url(&format!("/api/jobs/{id}"))))
            .await?;
        let value: Value =
            serde_json::from_str(&text).map_err(|source| RayError::StatusNotJson {
                id: id.to_string(),
                source,
            })?;
        Ok(JobStatus {
            status: value["status"].as_str().unwrap_or_default().to_string(),
            message: value["message"].as_str().unwrap_or_default().to_string(),
        })
    }

    /// Everything the job printed (with Ray's own lines).
    pub async fn logs(&self, id: &str) -> Result<String, RayError> {
        let text = self
            .send(self.http.get(self.url(&format!("/api/jobs/{id}/logs"))))
            .await?;
        let value: Value = serde_json::from_str(&text).map_err(|source| RayError::LogsNotJson {
            id: id.to_string(),
            source,
        })?;
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

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<String, RayError> {
        let cause = |e: reqwest::Error| self.address.redact(&error_chain(&e));
        let response = request
            .timeout(EXCHANGE_TIMEOUT)
            .send()
            .await
            .map_err(|e| RayError::Unreachable {
                address: self.address().to_string(),
                cause: cause(e),
            })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| RayError::BrokenAnswer {
            address: self.address().to_string(),
            cause: cause(e),
        })?;
        if status.is_success() {
            Ok(text)
        } else {
            let shown: String = text.chars().take(500).collect();
            Err(RayError::Refused {
                address: self.address().to_string(),
                status: status.as_u16(),
                body: self.address.redact(shown.trim()),
            })
        }
    }
}
