//! The dashboard's HTTP server: the page (embedded, no CDN) and its JSON API.
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the page; `/assets/...` its script, styles and the vendored chart library |
//! | `GET /api/runs` | the runs list (kept up to date by a background walk, never per request) |
//! | `GET /api/run?path=` | a run's page: candidates, lineage, timeline, seed and best, report |
//! | `GET /api/run/tasks?path=&candidate=&split=&against=&only=&search=&offset=&limit=` | a page of the per-task table |
//! | `GET /api/run/diff?path=&a=&b=` | the line diff between two candidates |
//! | `GET /api/run/blame?path=` | where each line of the best skill came from |
//! | `GET /api/run/heatmap?path=&split=` | task x candidate scores |
//! | `GET /api/compare?a=&b=&ca=&cb=&split=` | two runs (or two candidates of one) task by task |
//! | `GET /api/stream?path=&after=` | the live stream ([`crate::live`]) |
//! | `GET /api/jobs`, `POST /api/jobs`, `POST /api/jobs/{id}/cancel` | background jobs ([`crate::jobs`]) |
//!
//! Every path a request names goes through [`skill_factory_io::path::resolve`]; every body through the
//! [`Scrubber`]; every response carries a Content-Security-Policy that allows only the page's
//! own files. On loopback the `Host` must be a loopback name (a page of another site cannot
//! reach the API by rebinding its DNS name); on any other host every request needs the token.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::FromRequestParts;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, extract::Path as UrlPath};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::assets;
use crate::diff::{self, Step};
use crate::index::Index;
use crate::jobs::{Jobs, Launch};
use crate::live::{self, Follow};
use crate::lock;
use crate::rollouts::{Query as TableQuery, Rollouts};
use crate::run::{RunError, RunPage};
use skill_factory_io::path::{Refused, resolve};
use skill_factory_io::secrets::Scrubber;
use skill_factory_runfolder::names::{EVENTS_FILE, RESULT_FILE, ROLLOUTS_FILE};

/// How often the runs root is walked for new and changed runs.
pub const REFRESH_EVERY: Duration = Duration::from_millis(500);

/// How many read runs are kept in memory.
const KEEP_RUNS: usize = 8;

/// The policy every response carries: the page's own script and styles, nothing inline,
/// no other origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How a dashboard is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// The runs root.
    pub root: PathBuf,
    /// The `skill-factory` binary jobs run.
    pub program: PathBuf,
    /// The folder launched configs must be under (and jobs run in).
    pub workdir: PathBuf,
    /// The token every request needs, when served beyond loopback.
    pub token: Option<String>,
}

/// A run read once, kept while its files are unchanged.
struct Loaded {
    stamp: Vec<(Option<SystemTime>, u64)>,
    page: RunPage,
    rollouts: Rollouts,
    /// The run page's JSON, blame and seed diff included: made once per read of the files,
    /// not per request (a running run's page is asked for again every second).
    json: Value,
}

/// The dashboard of one runs root.
pub struct Dashboard {
    root: PathBuf,
    /// The root as the user named it (the page shows this, not the resolved path).
    named: String,
    token: Option<String>,
    scrub: Scrubber,
    jobs: Arc<Jobs>,
    index: Mutex<Index>,
    /// The runs list as the API's JSON body, rebuilt when the index changes.
    runs_body: RwLock<Bytes>,
    runs_version: watch::Sender<u64>,
    loaded: Mutex<HashMap<(PathBuf, String), Arc<Loaded>>>,
}

/// An API error: a status and a message that says what to do.
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> ApiError {
        let status = match refused {
            Refused::Missing(_) => StatusCode::NOT_FOUND,
            Refused::OutsideRoot(_) => StatusCode::FORBIDDEN,
            Refused::Written { .. } => StatusCode::BAD_REQUEST,
        };
        ApiError(status, refused.to_string())
    }
}

impl From<RunError> for ApiError {
    fn from(error: RunError) -> ApiError {
        let status = match error {
            RunError::NotARun(_) => StatusCode::NOT_FOUND,
            RunError::Unreadable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        };
        ApiError(status, error.to_string())
    }
}

impl Dashboard {
    /// The dashboard of `options.root` (which must exist), with its index read.
    pub fn new(options: Options) -> std::io::Result<Arc<Dashboard>> {
        let named = options.root.display().to_string();
        let root = options.root.canonicalize()?;
        let workdir = options.workdir.canonicalize()?;
        let dashboard = Dashboard {
            jobs: Jobs::new(options.program, workdir, root.clone()),
            index: Mutex::new(Index::default()),
            runs_body: RwLock::new(Bytes::new()),
            runs_version: watch::channel(0).0,
            loaded: Mutex::new(HashMap::new()),
            scrub: Scrubber::from_env(),
            token: options.token,
            named,
            root,
        };
        dashboard.refresh(true);
        Ok(Arc::new(dashboard))
    }

    /// The runs root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks the root again; when anything changed, rebuilds the list's body and tells the
    /// live streams.
    fn refresh(&self, force: bool) {
        let mut index = lock(&self.index);
        if !index.refresh(&self.root) && !force {
            return;
        }
        let mut body = json!({
            "root": self.named,
            "runs": index.runs,
            "problems": index.problems,
        });
        self.scrub.json(&mut body);
        *self.runs_body.write().unwrap_or_else(|p| p.into_inner()) = Bytes::from(body.to_string());
        self.runs_version.send_modify(|n| *n += 1);
    }

    /// The runs list as the API's JSON body.
    pub fn runs(&self) -> Bytes {
        self.runs_body
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The run at `path` (relative to the root), read or taken from memory.
    fn run(&self, path: &str) -> Result<Arc<Loaded>, ApiError> {
        let dir = resolve(&self.root, path)?;
        let stamp: Vec<(Option<SystemTime>, u64)> = [RESULT_FILE, EVENTS_FILE, ROLLOUTS_FILE]
            .iter()
            .map(|name| {
                std::fs::metadata(dir.join(name))
                    .map(|m| (m.modified().ok(), m.len()))
                    .unwrap_or((None, 0))
            })
            .collect();
        // Keyed by the name asked for too: `tc/latest` and `tc/<run id>` are one folder, but
        // the page names the run (its path, its id) as it was asked for.
        let key = (dir, path.to_owned());
        if let Some(loaded) = lock(&self.loaded).get(&key)
            && loaded.stamp == stamp
        {
            return Ok(loaded.clone());
        }
        let page = RunPage::load(&key.0, path, &self.scrub)?;
        let rollouts = Rollouts::load(&key.0);
        let mut json = page.to_json();
        json["path"] = json!(path);
        json["rollouts"] = json!(rollouts.len());
        json["blame"] = json!(blame(&page));
        json["seed_diff"] = json!(diff::lines(&page.seed_text, &page.best_text));
        let loaded = Arc::new(Loaded {
            stamp,
            page,
            rollouts,
            json,
        });
        let mut cache = lock(&self.loaded);
        if cache.len() >= KEEP_RUNS {
            cache.clear();
        }
        cache.insert(key, loaded.clone());
        Ok(loaded)
    }

    /// The run page's JSON, as `/api/run` gives it and `ui export` embeds it.
    pub fn run_json(&self, path: &str) -> Result<Value, ApiError> {
        Ok(self.run(path)?.json.clone())
    }

    /// The diff between candidates `a` and `b` of the run at `path`.
    pub fn diff_json(&self, path: &str, a: usize, b: usize) -> Result<Value, ApiError> {
        let loaded = self.run(path)?;
        let text = |id: usize| {
            loaded.page.document(id).ok_or_else(|| {
                ApiError(
                    StatusCode::NOT_FOUND,
                    format!("the run has no document of candidate {id}"),
                )
            })
        };
        let (before, after) = (text(a)?, text(b)?);
        let lines = diff::lines(&before, &after);
        let count = |tag| lines.iter().filter(|l| l.tag == tag).count();
        Ok(json!({
            "a": a, "b": b,
            "inserted": count("insert"), "deleted": count("delete"),
            "lines": lines,
        }))
    }

    /// A page of the per-task table of the run at `path`.
    pub fn tasks_json(&self, path: &str, query: &TableQuery) -> Result<Value, ApiError> {
        let loaded = self.run(path)?;
        let mut body = loaded.rollouts.page(query, loaded.page.best);
        self.scrub.json(&mut body);
        Ok(body)
    }
}

/// Where each line of `page`'s best skill came from.
fn blame(page: &RunPage) -> Vec<diff::Origin> {
    let chain: Vec<Step> = page
        .lineage_of_best()
        .into_iter()
        .filter_map(|id| {
            let candidate = page.candidates.iter().find(|c| c.id == id)?;
            Some(Step {
                candidate: id,
                round: candidate.round,
                val: candidate.val_score,
                text: page.document(id)?,
            })
        })
        .collect();
    diff::blame(&chain)
}

/// The routes of `dashboard`.
pub fn router(dashboard: Arc<Dashboard>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/assets/{name}", get(asset))
        .route("/api/runs", get(runs))
        .route("/api/run", get(run))
        .route("/api/run/tasks", get(tasks))
        .route("/api/run/diff", get(run_diff))
        .route("/api/run/blame", get(run_blame))
        .route("/api/run/heatmap", get(heatmap))
        .route("/api/compare", get(compare))
        .route("/api/stream", get(stream))
        .route("/api/jobs", get(jobs).post(launch))
        .route("/api/jobs/{id}/cancel", post(cancel))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            dashboard.clone(),
            guard_request,
        ))
        .with_state(dashboard)
}

/// The checks every request passes: host, token, origin; and the headers every response gets.
async fn guard_request(
    State(dashboard): State<Arc<Dashboard>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut set_cookie = None;
    let refusal = match &dashboard.token {
        None if !is_loopback_host(&host) => Some(ApiError(
            StatusCode::FORBIDDEN,
            format!("the Host {host:?} is not a loopback name: open the dashboard at 127.0.0.1"),
        )),
        None => None,
        Some(token) => {
            let given = token_of(headers, request.uri().query());
            match given {
                Some((given, from_query)) if given == *token => {
                    set_cookie = from_query.then(|| format!("sf_token={token}; HttpOnly; SameSite=Strict; Path=/"));
                    None
                }
                _ => Some(ApiError(
                    StatusCode::UNAUTHORIZED,
                    "this dashboard needs its token: open the address it printed when it started (…/?token=…)".into(),
                )),
            }
        }
    };
    let cross_origin = request.method() != Method::GET
        && headers
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok())
            .is_some_and(|origin| origin.split("://").nth(1) != Some(host.as_str()));
    let mut response = match refusal {
        Some(refusal) => refusal.into_response(),
        None if cross_origin => ApiError(
            StatusCode::FORBIDDEN,
            "a request from another origin is refused".into(),
        )
        .into_response(),
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Some(cookie) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

/// Whether `host` (a `Host` header) names this machine's loopback: `localhost` or a loopback
/// address written as one (any of 127.0.0.0/8, `[::1]`), as `--host 127.0.0.2` prints it. A
/// name that merely resolves to loopback is refused: that is what a rebinding page sends.
fn is_loopback_host(host: &str) -> bool {
    let name = host
        .rsplit_once(':')
        .filter(|(name, port)| !name.ends_with(':') && port.chars().all(|c| c.is_ascii_digit()))
        .map_or(host, |(name, _)| name);
    let bare = name
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(name);
    name == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// The token a request carries, and whether it came in the query (the first visit).
fn token_of(headers: &HeaderMap, query: Option<&str>) -> Option<(String, bool)> {
    if let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    {
        return Some((bearer.to_string(), false));
    }
    if let Some(cookie) = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("sf_token="))
    {
        return Some((cookie.to_string(), false));
    }
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .map(|token| (token.to_string(), true))
}

async fn page() -> Response {
    assets::response("index.html")
}

async fn asset(UrlPath(name): UrlPath<String>) -> Response {
    assets::response(&name)
}

async fn not_found() -> ApiError {
    ApiError(StatusCode::NOT_FOUND, "not found".into())
}

/// A request's query string, or a JSON error that says which parameter is wrong.
struct Params<T>(T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(query)| Params(query))
            .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))
    }
}

fn json_body(body: Value) -> Response {
    ([(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

async fn runs(State(dashboard): State<Arc<Dashboard>>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        dashboard.runs(),
    )
        .into_response()
}

/// `?path=`.
#[derive(Deserialize)]
struct RunPath {
    #[serde(default)]
    path: String,
}

async fn run(
    State(dashboard): State<Arc<Dashboard>>,
    Params(query): Params<RunPath>,
) -> Result<Response, ApiError> {
    // Serialized from the kept page, not cloned from it.
    let loaded = dashboard.run(&query.path)?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        loaded.json.to_string(),
    )
        .into_response())
}

async fn tasks(
    State(dashboard): State<Arc<Dashboard>>,
    Params(query): Params<TableQuery>,
) -> Result<Response, ApiError> {
    Ok(json_body(dashboard.tasks_json(&query.path, &query)?))
}

#[derive(Deserialize)]
struct DiffQuery {
    #[serde(default)]
    path: String,
    a: usize,
    b: usize,
}

async fn run_diff(
    State(dashboard): State<Arc<Dashboard>>,
    Params(query): Params<DiffQuery>,
) -> Result<Response, ApiError> {
    Ok(json_body(dashboard.diff_json(
        &query.path,
        query.a,
        query.b,
    )?))
}

async fn run_blame(
    State(dashboard): State<Arc<Dashboard>>,
    Params(query): Params<RunPath>,
) -> Result<Response, ApiError> {
    let loaded = dashboard.run(&query.path)?;
    Ok(json_body(
        json!({"best": loaded.page.best, "lines": loaded.json["blame"]}),
    ))
}

#[derive(Deserialize)]
struct HeatmapQuery {
    #[serde(default)]
    path: String,
    split: Option<String>,
}

async fn heatmap(
    State(dashboard): State<Arc<Dashboard>>,
    Params(query): Params<HeatmapQuery>,
) -> Result<Response, ApiError> {
    let loaded = dashboard.run(&query.path)?;
    Ok(json_body(
        loaded
            .rollouts
            .heatmap(query.split.as_deref().unwrap_or("val")),
    ))
}

#[derive(Deserialize)]
struct CompareQuery {
    #[serde(default)]
    a: String,
    #[serde(default)]
    b: String,
    ca: Option<usize>,
    cb: Option<usize>,
    split: Option<String>,
}

async fn compare(
    State(dashboard): State<Arc<Dashboard>>,
    Params(query): Params<CompareQuery>,
) -> Result<Response, ApiError> {
    let (a, b) = (dashboard.run(&query.a)?, dashboard.run(&query.b)?);
    let (ca, cb) = (
        query.ca.unwrap_or(a.page.best),
        query.cb.unwrap_or(b.page.best),
    );
    let split = query.split.as_deref().unwrap_or("val");
    let mut body = a.rollouts.compare(ca, &b.rollouts, cb, split);
    body["a"] = json!({"path": query.a, "candidate": ca, "summary": a.page.summary});
    body["b"] = json!({"path": query.b, "candidate": cb, "summary": b.page.summary});
    dashboard.scrub.json(&mut body);
    Ok(json_body(body))
}

#[derive(Deserialize)]
struct StreamQuery {
    path: Option<String>,
    #[serde(default)]
    after: u64,
}

async fn stream(
    State(dashboard): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Params(query): Params<StreamQuery>,
) -> Result<Response, ApiError> {
    let events = match query.path.as_deref().filter(|p| !p.is_empty()) {
        Some(path) => Some(resolve(&dashboard.root, path)?.join(EVENTS_FILE)),
        None => None,
    };
    // A reconnecting browser says where it was; that wins over the page's first `after`.
    let after = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .and_then(|id| id.parse().ok())
        .unwrap_or(query.after);
    let follow = Follow {
        events,
        after,
        runs: dashboard.runs_version.subscribe(),
        jobs: dashboard.jobs.clone(),
        scrub: dashboard.scrub.clone(),
    };
    Ok(Sse::new(live::stream(follow))
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn jobs(State(dashboard): State<Arc<Dashboard>>) -> Response {
    json_body(json!(dashboard.jobs.list()))
}

async fn launch(
    State(dashboard): State<Arc<Dashboard>>,
    launch: Result<Json<Launch>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(launch) = launch.map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("{}: send {{\"command\": \"optimize\" or \"evaluate\", \"config\": \"path/to/config.yaml\"}} as application/json", e.body_text()),
        )
    })?;
    let job = dashboard
        .jobs
        .start(launch)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok((StatusCode::ACCEPTED, Json(json!(job))).into_response())
}

async fn cancel(
    State(dashboard): State<Arc<Dashboard>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let job = dashboard
        .jobs
        .cancel(&id)
        .map_err(|e| ApiError(StatusCode::NOT_FOUND, e.to_string()))?;
    Ok(json_body(json!(job)))
}

/// Serves `dashboard` on `listener` until the process ends, walking the root for changes in
/// the background.
pub async fn serve(listener: TcpListener, dashboard: Arc<Dashboard>) -> std::io::Result<()> {
    let walker = dashboard.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(REFRESH_EVERY).await;
            let dashboard = walker.clone();
            // The walk reads the disk: off the threads that answer requests.
            if tokio::task::spawn_blocking(move || dashboard.refresh(false))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    axum::serve(
        listener,
        router(dashboard).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}

/// A response with `body` and the content type of `name`.
pub(crate) fn typed(name: &str, body: &'static [u8]) -> Response {
    let kind = match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "application/octet-stream",
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_address_is_a_loopback_host_and_a_name_resolving_to_one_is_not() {
        for host in [
            "127.0.0.1:8765",
            "127.0.0.2:8765",
            "127.1.2.3",
            "localhost:80",
            "[::1]:8765",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8765",
            "127.0.0.1.evil.example",
            "10.0.0.1:8765",
            "[::2]:80",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn one_run_asked_by_two_names_is_named_as_each_asked() {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("tc/20261203T000000Z");
        std::fs::create_dir_all(&run).unwrap();
        let result = r#"{"optimizer": "gepa", "baseline_score": 0.1, "best_score": 0.2}"#;
        std::fs::write(run.join(RESULT_FILE), result).unwrap();
        std::os::unix::fs::symlink("20261203T000000Z", root.path().join("tc/latest")).unwrap();
        let dashboard = Dashboard::new(Options {
            root: root.path().to_path_buf(),
            program: PathBuf::from("skill-factory"),
            workdir: root.path().to_path_buf(),
            token: None,
        })
        .unwrap();
        for path in ["tc/latest", "tc/20261203T000000Z", "tc/latest"] {
            let json = dashboard.run_json(path).unwrap();
            assert_eq!(json["path"], path);
            assert_eq!(json["summary"]["path"], path);
        }
    }
}
