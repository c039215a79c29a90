//! MLflow's REST API, the part a run needs: find or create an experiment
//! (`experiments/get-by-name`, `experiments/create`), create a run (`runs/create`), log
//! metrics, parameters and tags (`runs/log-batch`), end it (`runs/update`), and upload files
//! through the server's artifact proxy (`PUT /api/2.0/mlflow-artifacts/artifacts/<path>`,
//! which `mlflow server` serves by default). [`Sender`] sends a journal's calls in order
//! ([`super::pending`]), merging consecutive log batches into as few requests as MLflow's
//! limits allow, and marks in the journal what reached the server.
//!
//! Every request is retried under the model clients' policy
//! ([`skill_factory_llm::retry::retrying`]): a connection that fails, a timeout, a 429 or a
//! 5xx is tried again with jittered back-off honouring `Retry-After`; any other answer is
//! final. Credentials come from MLflow's own variables (`MLFLOW_TRACKING_TOKEN`, or
//! `MLFLOW_TRACKING_USERNAME` and `MLFLOW_TRACKING_PASSWORD`) or the address's userinfo, and
//! never appear in a message: addresses are shown through [`EndpointUrl::shown`].

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, Url};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skill_factory_llm::http::{build_http_client, error_chain};
use skill_factory_llm::retry::{
    Failed, GaveUp, RetryPolicy, retry_after, retryable_status, retrying,
};
use skill_factory_llm::url::EndpointUrl;

use super::pending::{Call, Journal, Metric, Param, Tag};

/// The longest one exchange may take (an artifact's upload included): a server that hangs
/// holds the tracker, never the run, but must not hold it forever.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// A run's attempts: a server that went away is found out within about two seconds, so the
/// calls after it go to the journal instead of a queue.
const POLICY: RetryPolicy = RetryPolicy {
    max_attempts: 4,
    base_delay: Duration::from_millis(250),
    max_delay: Duration::from_secs(2),
    max_retry_after: Duration::from_secs(10),
};

/// MLflow's limits on one `runs/log-batch` request: 100 parameters, 100 tags, 1000 entities
/// in all, so at most 800 metrics beside full parameters and tags.
const PARAMS_PER_REQUEST: usize = 100;
const TAGS_PER_REQUEST: usize = 100;
const METRICS_PER_REQUEST: usize = 800;

/// The variable of a bearer token for the server, as MLflow's own clients read it.
pub const TOKEN_ENV: &str = "MLFLOW_TRACKING_TOKEN";
/// The variable of a user name for the server (with [`PASSWORD_ENV`]).
pub const USERNAME_ENV: &str = "MLFLOW_TRACKING_USERNAME";
/// The variable of that user's password.
pub const PASSWORD_ENV: &str = "MLFLOW_TRACKING_PASSWORD";

/// The longest text MLflow keeps as a parameter's value.
pub const PARAM_VALUE_CHARS: usize = 6000;

/// The most characters of an answer an error quotes.
const EXCERPT_CHARS: usize = 200;

/// Why a request to MLflow failed.
#[derive(Debug, thiserror::Error)]
pub enum MlflowError {
    /// The address is not a URL, or the HTTP client cannot start.
    #[error("{0}")]
    Config(String),
    /// No answer: the server is down, unreachable or too slow.
    #[error("MLflow at {uri} could not be reached ({cause})")]
    Unreachable {
        /// The server, as shown.
        uri: String,
        /// Why, from the HTTP client.
        cause: String,
    },
    /// The server refused the request.
    #[error("MLflow at {uri} answered {route} with HTTP {status}: {message}")]
    Status {
        /// The server, as shown.
        uri: String,
        /// `POST /api/2.0/mlflow/runs/log-batch`.
        route: String,
        /// The HTTP status.
        status: u16,
        /// MLflow's `error_code` and `message`, or the start of the answer.
        message: String,
    },
    /// A 2xx answer that is not what MLflow answers: another server at that address.
    #[error(
        "{uri} answered {route} with {answer}, not MLflow's JSON: is the address an MLflow tracking server?"
    )]
    NotMlflow {
        /// The server, as shown.
        uri: String,
        /// The request.
        route: String,
        /// The start of the answer.
        answer: String,
    },
    /// Every attempt failed; the last one so.
    #[error("{last} (after {attempts} attempts)")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<MlflowError>,
    },
    /// The journal asks for something out of order (a call before its run exists).
    #[error("{0}")]
    Journal(String),
}

/// The run a journal's calls go into, once `runs/create` made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRef {
    /// The experiment's id.
    pub experiment_id: String,
    /// The run's id.
    pub run_id: String,
    /// Where MLflow keeps the run's artifacts (`mlflow-artifacts:/1/<run>/artifacts` when the
    /// server proxies them).
    pub artifact_uri: String,
}

/// A client of one MLflow tracking server.
#[derive(Debug)]
pub struct MlflowClient {
    http: reqwest::Client,
    /// The server's address, its path without a trailing slash (but the root's `/`).
    base: String,
    /// The same, as it may be shown.
    endpoint: EndpointUrl,
    /// `Authorization` from MLflow's variables, if they say one.
    auth: Option<HeaderValue>,
    /// How the last attempt went.
    trouble: Trouble,
}

/// Whether a client's last attempt failed in a way a retry is for (no answer, a 5xx, a 429),
/// and how, for others to watch: a run that ended stops waiting for its tracker as soon as
/// the server is seen failing, before the retries are spent.
#[derive(Debug, Clone, Default)]
pub struct Trouble(Arc<Mutex<Option<String>>>);

impl Trouble {
    /// The last attempt's failure; `None` when it succeeded, was refused, or none was made.
    pub fn now(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, failure: Option<String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = failure;
    }
}

impl MlflowClient {
    /// A client of the server at `uri` (`http(s)://HOST:PORT`, maybe with a path), with the
    /// credentials `env` gives in MLflow's variables.
    pub fn new(uri: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, MlflowError> {
        let mut url = Url::parse(uri.trim()).map_err(|problem| {
            MlflowError::Config(format!(
                "the MLflow address is not a URL ({problem}); write it as http://HOST:PORT"
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(MlflowError::Config(
                "the MLflow address is not an http:// or https:// URL".to_owned(),
            ));
        }
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&path);
        // As the URL writes itself (`http://h:5000/`), so that redacting a text that quotes
        // it finds it whole.
        let base = url.to_string();
        let http = build_http_client().map_err(|e| MlflowError::Config(e.to_string()))?;
        Ok(MlflowClient {
            http,
            endpoint: EndpointUrl::new(base.clone()),
            base,
            auth: authorization(env)?,
            trouble: Trouble::default(),
        })
    }

    /// A handle on how this client's last attempt went.
    pub fn trouble(&self) -> Trouble {
        self.trouble.clone()
    }

    /// The server's address as it may be shown.
    pub fn uri(&self) -> &str {
        self.endpoint.shown().trim_end_matches('/')
    }

    /// The id of the experiment called `name`, created when there is none.
    pub async fn experiment(&self, name: &str) -> Result<String, MlflowError> {
        let found = self
            .json(
                Method::GET,
                "api/2.0/mlflow/experiments/get-by-name",
                &[("experiment_name", name)],
                None,
            )
            .await;
        match found {
            Ok(answer) => return id_of(self, &answer["experiment"], "experiment_id"),
            Err(error) if !missing(&error) => return Err(error),
            Err(_) => {}
        }
        let created = self
            .json(
                Method::POST,
                "api/2.0/mlflow/experiments/create",
                &[],
                Some(json!({ "name": name })),
            )
            .await;
        match created {
            Ok(answer) => id_of(self, &answer, "experiment_id"),
            // Another client made it in between.
            Err(MlflowError::Status { message, .. })
                if message.starts_with("RESOURCE_ALREADY_EXISTS") =>
            {
                let answer = self
                    .json(
                        Method::GET,
                        "api/2.0/mlflow/experiments/get-by-name",
                        &[("experiment_name", name)],
                        None,
                    )
                    .await?;
                id_of(self, &answer["experiment"], "experiment_id")
            }
            Err(error) => Err(error),
        }
    }

    /// Creates a run in an experiment, once. A create whose answer was lost (a timeout, a
    /// dropped connection) may have made the run all the same, so before every attempt but the
    /// first, and before a push's first (`looked`: the journal holds a create that was never
    /// answered), the experiment is searched for the run of this name and start time, which is
    /// taken instead of making a second.
    pub async fn create_run(
        &self,
        experiment_id: &str,
        run_name: &str,
        start_time: i64,
        tags: &[Tag],
        looked: bool,
    ) -> Result<RunRef, MlflowError> {
        let find = || self.find_run(experiment_id, run_name, start_time);
        if looked && let Some(run) = find().await? {
            return Ok(run);
        }
        let url = EndpointUrl::join(&self.base, "api/2.0/mlflow/runs/create", &[]);
        let body = json!({
            "experiment_id": experiment_id,
            "run_name": run_name,
            "start_time": start_time,
            "tags": tags,
        });
        let body = Body::Json(serde_json::to_vec(&body).unwrap_or_default());
        let found = || async {
            // A search that fails leaves the retry to make the run.
            find().await.ok().flatten().map(|run| {
                json!({"run": {"info": {
                    "experiment_id": run.experiment_id,
                    "run_id": run.run_id,
                    "artifact_uri": run.artifact_uri,
                }}})
                .to_string()
            })
        };
        let (route, text) = self.send_or(Method::POST, url, body, Some(&found)).await?;
        let answer: Value = serde_json::from_str(&text).map_err(|_| MlflowError::NotMlflow {
            uri: self.uri().to_owned(),
            route,
            answer: self.excerpt(&text),
        })?;
        self.run_ref(&answer["run"]["info"])
    }

    /// The run of experiment `experiment_id` named `run_name` that started at `start_time`, if
    /// the server has one. A name MLflow's filter cannot quote is never looked for.
    async fn find_run(
        &self,
        experiment_id: &str,
        run_name: &str,
        start_time: i64,
    ) -> Result<Option<RunRef>, MlflowError> {
        if run_name.contains(['\'', '"', '\\']) {
            return Ok(None);
        }
        let answer = self
            .json(
                Method::POST,
                "api/2.0/mlflow/runs/search",
                &[],
                Some(json!({
                    "experiment_ids": [experiment_id],
                    "filter": format!("attributes.run_name = '{run_name}' AND attributes.start_time = {start_time}"),
                    "max_results": 1,
                })),
            )
            .await?;
        match answer["runs"].as_array().and_then(|runs| runs.first()) {
            Some(run) => self.run_ref(&run["info"]).map(Some),
            None => Ok(None),
        }
    }

    /// The run `run_id`, when the server has it.
    pub async fn run(&self, run_id: &str) -> Result<Option<RunRef>, MlflowError> {
        match self
            .json(
                Method::GET,
                "api/2.0/mlflow/runs/get",
                &[("run_id", run_id)],
                None,
            )
            .await
        {
            Ok(answer) => self.run_ref(&answer["run"]["info"]).map(Some),
            Err(error) if missing(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn run_ref(&self, info: &Value) -> Result<RunRef, MlflowError> {
        Ok(RunRef {
            experiment_id: id_of(self, info, "experiment_id")?,
            run_id: id_of(self, info, "run_id")?,
            artifact_uri: info["artifact_uri"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// Logs metrics, parameters and tags into a run (within MLflow's limits per request).
    pub async fn log_batch(
        &self,
        run_id: &str,
        (metrics, params, tags): (&[Metric], &[Param], &[Tag]),
    ) -> Result<(), MlflowError> {
        self.json(
            Method::POST,
            "api/2.0/mlflow/runs/log-batch",
            &[],
            Some(json!({
                "run_id": run_id,
                "metrics": metrics,
                "params": params,
                "tags": tags,
            })),
        )
        .await
        .map(drop)
    }

    /// Ends a run: `FINISHED`, `FAILED` or `KILLED`.
    pub async fn end_run(
        &self,
        run_id: &str,
        status: &str,
        end_time: i64,
    ) -> Result<(), MlflowError> {
        self.json(
            Method::POST,
            "api/2.0/mlflow/runs/update",
            &[],
            Some(json!({ "run_id": run_id, "status": status, "end_time": end_time })),
        )
        .await
        .map(drop)
    }

    /// Uploads `bytes` as the run's artifact `path`, through the server's artifact proxy;
    /// `Ok(false)` when the run's artifacts are kept where only MLflow's own client writes
    /// (a folder or a bucket named by `--default-artifact-root`).
    pub async fn put_artifact(
        &self,
        artifact_uri: &str,
        path: &str,
        bytes: Vec<u8>,
    ) -> Result<bool, MlflowError> {
        let url = if let Some(rest) = artifact_uri.strip_prefix("mlflow-artifacts:") {
            // `mlflow-artifacts:/1/<run>/artifacts`, or with the proxy's host named
            // (`mlflow-artifacts://host:port/1/...`): this server's proxy either way.
            let at = match rest.strip_prefix("//") {
                Some(hosted) => hosted.find('/').map_or("", |slash| &hosted[slash..]),
                None => rest,
            };
            EndpointUrl::join(
                &self.base,
                &format!(
                    "api/2.0/mlflow-artifacts/artifacts/{}/{path}",
                    at.trim_matches('/')
                ),
                &[],
            )
        } else if artifact_uri.starts_with("http://") || artifact_uri.starts_with("https://") {
            EndpointUrl::join(artifact_uri, path, &[])
        } else {
            return Ok(false);
        };
        self.send(Method::PUT, url, Body::Bytes(bytes)).await?;
        Ok(true)
    }

    /// A JSON request to `route` (with `query`), and its JSON answer.
    async fn json(
        &self,
        method: Method,
        route: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Result<Value, MlflowError> {
        let url = EndpointUrl::join(&self.base, route, query);
        let body = match body {
            Some(value) => Body::Json(serde_json::to_vec(&value).unwrap_or_default()),
            None => Body::None,
        };
        let (route, text) = self.send(method, url, body).await?;
        serde_json::from_str(&text).map_err(|_| MlflowError::NotMlflow {
            uri: self.uri().to_owned(),
            route,
            answer: self.excerpt(&text),
        })
    }

    /// Sends one request under the retry policy; its route and the text of its answer.
    async fn send(
        &self,
        method: Method,
        url: EndpointUrl,
        body: Body,
    ) -> Result<(String, String), MlflowError> {
        self.send_or(
            method,
            url,
            body,
            None::<&fn() -> std::future::Ready<Option<String>>>,
        )
        .await
    }

    /// [`Self::send`], where before each retry `instead` may give the answer a lost attempt
    /// would have given (what the server holds since), which ends the retries.
    async fn send_or<F, Fut>(
        &self,
        method: Method,
        url: EndpointUrl,
        body: Body,
        instead: Option<&F>,
    ) -> Result<(String, String), MlflowError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<String>>,
    {
        let path = Url::parse(url.url())
            .map(|u| u.path().to_owned())
            .unwrap_or_default();
        let route = format!("{method} {path}");
        let tried = std::sync::atomic::AtomicBool::new(false);
        let outcome = retrying(&POLICY, "MLflow", || async {
            if tried.swap(true, std::sync::atomic::Ordering::SeqCst)
                && let Some(instead) = instead
                && let Some(text) = instead().await
            {
                return Ok(text);
            }
            let attempted = self.attempt(method.clone(), &url, &body, &route).await;
            // Only what a retry is for is trouble: an answer such as "no such experiment"
            // is the server working.
            self.trouble.set(
                attempted
                    .as_ref()
                    .err()
                    .filter(|failed| failed.retryable)
                    .map(|failed| failed.error.to_string()),
            );
            attempted
        })
        .await;
        outcome
            .map(|text| (route.clone(), text))
            .map_err(|gave_up| match gave_up {
                GaveUp::Refused(error) => error,
                GaveUp::Exhausted { attempts, last } => MlflowError::Exhausted {
                    attempts,
                    last: Box::new(last),
                },
            })
    }

    async fn attempt(
        &self,
        method: Method,
        url: &EndpointUrl,
        body: &Body,
        route: &str,
    ) -> Result<String, Failed<MlflowError>> {
        let unreachable = |e: reqwest::Error| Failed {
            error: MlflowError::Unreachable {
                uri: self.uri().to_owned(),
                cause: self.endpoint.redact(&error_chain(&e)),
            },
            retryable: true,
            retry_after: None,
        };
        let mut request = self
            .http
            .request(method, url.url())
            .timeout(EXCHANGE_TIMEOUT);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        request = match body {
            Body::None => request,
            Body::Json(bytes) => request
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(bytes.clone()),
            Body::Bytes(bytes) => request.body(bytes.clone()),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let wait = retry_after(response.headers(), SystemTime::now());
        let text = response.text().await.map_err(unreachable)?;
        if status.is_success() {
            return Ok(text);
        }
        Err(Failed {
            error: MlflowError::Status {
                uri: self.uri().to_owned(),
                route: route.to_owned(),
                status: status.as_u16(),
                message: self.message(&text),
            },
            retryable: retryable_status(status.as_u16()),
            retry_after: wait,
        })
    }

    /// MLflow's `ERROR_CODE: message` of an error answer, else its start.
    fn message(&self, text: &str) -> String {
        match serde_json::from_str::<Value>(text) {
            Ok(value) if value["error_code"].is_string() => self.endpoint.redact(&format!(
                "{}: {}",
                value["error_code"].as_str().unwrap_or_default(),
                clip(value["message"].as_str().unwrap_or_default())
            )),
            _ => self.excerpt(text),
        }
    }

    /// The start of an answer on one line, redacted.
    fn excerpt(&self, text: &str) -> String {
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            return "an empty answer".to_owned();
        }
        format!("«{}»", self.endpoint.redact(&clip(&line)))
    }
}

/// A request's body, kept whole so each attempt sends it again.
enum Body {
    None,
    Json(Vec<u8>),
    Bytes(Vec<u8>),
}

/// `text` cut at [`EXCERPT_CHARS`] characters.
fn clip(text: &str) -> String {
    let mut cut: String = text.chars().take(EXCERPT_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// Whether the server said the thing asked for does not exist (an experiment, a run).
fn missing(error: &MlflowError) -> bool {
    matches!(error, MlflowError::Status { status, message, .. }
        if *status == 404 || message.starts_with("RESOURCE_DOES_NOT_EXIST"))
}

/// The id at `key` of an answer's object, which MLflow always sends.
fn id_of(client: &MlflowClient, object: &Value, key: &str) -> Result<String, MlflowError> {
    object[key]
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| MlflowError::NotMlflow {
            uri: client.uri().to_owned(),
            route: format!("a request for {key}"),
            answer: client.excerpt(&object.to_string()),
        })
}

/// The `Authorization` header MLflow's variables ask for: a bearer token, or a user and a
/// password.
fn authorization(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<HeaderValue>, MlflowError> {
    use base64::Engine as _;
    let text = if let Some(token) = env(TOKEN_ENV) {
        format!("Bearer {token}")
    } else if let (Some(user), Some(password)) = (env(USERNAME_ENV), env(PASSWORD_ENV)) {
        let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {pair}")
    } else {
        return Ok(None);
    };
    let mut value = HeaderValue::from_str(&text).map_err(|_| {
        MlflowError::Config(
            "MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/PASSWORD holds a character not allowed in an HTTP header (a line break?); set it again".to_owned(),
        )
    })?;
    value.set_sensitive(true);
    Ok(Some(value))
}

/// What a [`Sender`] did besides sending: things a person should hear once.
#[derive(Debug, Default)]
pub struct Sent {
    /// Calls that reached the server (or needed nothing from it).
    pub calls: usize,
    /// Artifacts left out, with why.
    pub notes: Vec<String>,
}

/// Sends a journal's calls in order into one run, and marks each that reached the server.
pub struct Sender<'a> {
    client: &'a MlflowClient,
    journal: &'a Journal,
    /// The run folder, where artifacts are read from.
    folder: &'a Path,
    /// The run, once created (or found, when a push resumes).
    run: Option<RunRef>,
    /// Whether its start may have been sent before without an answer (a push): the run is
    /// looked for before it is created.
    replay: bool,
    /// What happened so far.
    pub sent: Sent,
}

/// Consecutive log batches merged into one request.
#[derive(Default)]
struct Batch {
    metrics: Vec<Metric>,
    params: Vec<Param>,
    tags: Vec<Tag>,
    /// The last call merged in.
    through: Option<u64>,
    calls: usize,
}

impl Batch {
    fn fits(&self, metrics: usize, params: usize, tags: usize) -> bool {
        self.metrics.len() + metrics <= METRICS_PER_REQUEST
            && self.params.len() + params <= PARAMS_PER_REQUEST
            && self.tags.len() + tags <= TAGS_PER_REQUEST
    }
}

impl<'a> Sender<'a> {
    /// A sender into `run` (`None`: the first call creates it); `replay` when the calls were
    /// journaled earlier (a push), so their start may have reached the server unanswered.
    pub fn new(
        client: &'a MlflowClient,
        journal: &'a Journal,
        folder: &'a Path,
        run: Option<RunRef>,
        replay: bool,
    ) -> Self {
        Sender {
            client,
            journal,
            folder,
            run,
            replay,
            sent: Sent::default(),
        }
    }

    /// The run the calls went into.
    pub fn run(&self) -> Option<&RunRef> {
        self.run.as_ref()
    }

    /// Sends `calls` (numbered) in order; stops at the first that fails.
    pub async fn send(&mut self, calls: &[(u64, Call)]) -> Result<(), MlflowError> {
        let mut batch = Batch::default();
        for (seq, call) in calls {
            match call {
                Call::LogBatch {
                    metrics,
                    params,
                    tags,
                } => {
                    if !batch.fits(metrics.len(), params.len(), tags.len()) {
                        self.flush(&mut batch).await?;
                    }
                    if batch.fits(metrics.len(), params.len(), tags.len()) {
                        batch.metrics.extend_from_slice(metrics);
                        batch.params.extend_from_slice(params);
                        batch.tags.extend_from_slice(tags);
                        batch.through = Some(*seq);
                        batch.calls += 1;
                    } else {
                        self.one(call).await?;
                        self.delivered(*seq, 1);
                    }
                }
                other => {
                    self.flush(&mut batch).await?;
                    self.one(other).await?;
                    self.delivered(*seq, 1);
                }
            }
        }
        self.flush(&mut batch).await
    }

    /// Sends what `batch` holds, if anything, and empties it.
    async fn flush(&mut self, batch: &mut Batch) -> Result<(), MlflowError> {
        let Some(through) = batch.through else {
            return Ok(());
        };
        let run_id = self.run_id()?;
        self.client
            .log_batch(&run_id, (&batch.metrics, &batch.params, &batch.tags))
            .await?;
        self.delivered(through, batch.calls);
        *batch = Batch::default();
        Ok(())
    }

    /// A log batch larger than one request: in as many as MLflow's limits need.
    async fn log_in_parts(
        &mut self,
        metrics: &[Metric],
        params: &[Param],
        tags: &[Tag],
    ) -> Result<(), MlflowError> {
        let run_id = self.run_id()?;
        let parts = metrics
            .len()
            .div_ceil(METRICS_PER_REQUEST)
            .max(params.len().div_ceil(PARAMS_PER_REQUEST))
            .max(tags.len().div_ceil(TAGS_PER_REQUEST));
        let part = |items_per: usize, i: usize, len: usize| {
            (i * items_per).min(len)..((i + 1) * items_per).min(len)
        };
        for i in 0..parts {
            self.client
                .log_batch(
                    &run_id,
                    (
                        &metrics[part(METRICS_PER_REQUEST, i, metrics.len())],
                        &params[part(PARAMS_PER_REQUEST, i, params.len())],
                        &tags[part(TAGS_PER_REQUEST, i, tags.len())],
                    ),
                )
                .await?;
        }
        Ok(())
    }

    /// One call on its own (a log batch too large to merge: in parts).
    async fn one(&mut self, call: &Call) -> Result<(), MlflowError> {
        match call {
            Call::StartRun {
                experiment,
                run_name,
                start_time,
                tags,
            } => {
                let experiment_id = self.client.experiment(experiment).await?;
                let run = self
                    .client
                    .create_run(&experiment_id, run_name, *start_time, tags, self.replay)
                    .await?;
                self.run = Some(run);
            }
            Call::LogArtifact { path } => {
                let run = self.run.clone().ok_or_else(no_run)?;
                let file = self.folder.join(path);
                let bytes = match std::fs::read(&file) {
                    Ok(bytes) => bytes,
                    Err(error) => {
                        self.sent.notes.push(format!(
                            "{} was not uploaded: it cannot be read ({error})",
                            file.display()
                        ));
                        return Ok(());
                    }
                };
                if !self
                    .client
                    .put_artifact(&run.artifact_uri, path, bytes)
                    .await?
                {
                    let note = format!(
                        "MLflow keeps this run's artifacts at {}, which only its own client writes to, so they were not uploaded; a server started without --default-artifact-root (artifacts under --artifacts-destination) takes them for experiments made from then on",
                        self.client.endpoint.redact(&run.artifact_uri)
                    );
                    if !self.sent.notes.contains(&note) {
                        self.sent.notes.push(note);
                    }
                }
            }
            Call::EndRun { status, end_time } => {
                let run_id = self.run_id()?;
                self.client.end_run(&run_id, status, *end_time).await?;
            }
            Call::LogBatch {
                metrics,
                params,
                tags,
            } => self.log_in_parts(metrics, params, tags).await?,
        }
        Ok(())
    }

    fn run_id(&self) -> Result<String, MlflowError> {
        self.run
            .as_ref()
            .map(|run| run.run_id.clone())
            .ok_or_else(no_run)
    }

    /// Marks every call up to `through` as delivered, into the current run.
    fn delivered(&mut self, through: u64, calls: usize) {
        self.sent.calls += calls;
        if let Some(run) = &self.run {
            self.journal.delivered(through, run);
        }
    }
}

fn no_run() -> MlflowError {
    MlflowError::Journal(
        "the journal's calls start before its start_run call, so there is no run to send them to"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Reads one HTTP request, head and body, from `stream`; its request line.
    async fn request(stream: &mut TcpStream) -> String {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&bytes[..end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if bytes.len() >= end + 4 + length {
                    return head.lines().next().unwrap_or_default().to_owned();
                }
            }
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the client closed mid-request");
            bytes.extend_from_slice(&chunk[..read]);
        }
    }

    #[tokio::test]
    async fn a_create_whose_answer_is_lost_is_found_before_a_retry_makes_a_second() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut seen = Vec::new();
            // The create reaches the server, which makes the run; the answer never comes back.
            let (mut stream, _) = listener.accept().await.unwrap();
            seen.push(request(&mut stream).await);
            drop(stream);
            // Before retrying, the client looks for the run, and the server has it.
            let (mut stream, _) = listener.accept().await.unwrap();
            seen.push(request(&mut stream).await);
            let body = r#"{"runs": [{"info": {"experiment_id": "1", "run_id": "r1", "artifact_uri": "mlflow-artifacts:/1/r1/artifacts"}}]}"#;
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(answer.as_bytes()).await.unwrap();
            seen
        });
        let client = MlflowClient::new(&format!("http://{address}"), &|_| None).unwrap();
        let run = client
            .create_run("1", "20260304-050607", 1_772_600_767_000, &[], false)
            .await
            .unwrap();
        assert_eq!(run.run_id, "r1");
        assert_eq!(run.artifact_uri, "mlflow-artifacts:/1/r1/artifacts");
        assert_eq!(
            server.await.unwrap(),
            [
                "POST /api/2.0/mlflow/runs/create HTTP/1.1",
                "POST /api/2.0/mlflow/runs/search HTTP/1.1"
            ]
        );
    }
}
