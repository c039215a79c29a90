//! The dashboard's HTTP server: the page (embedded, no CDN) and its JSON API, on loopback.
//!
//! Routes so far: `GET /` (the runs list page) and `GET /api/runs` (the index: runs newest
//! first, and the result files that could not be read, each with its path and reason). The
//! index is read again at most once a second however many requests come, so a page that polls
//! does not reread a thousand result files per request.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::json;
use tokio::net::TcpListener;

use crate::index::Index;

/// The runs list page.
const PAGE: &str = include_str!("page.html");

/// How long a read of the index serves requests before the folder is read again.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// The dashboard of one runs root.
pub struct Dashboard {
    root: PathBuf,
    /// The last read of the index, as the API's JSON body, and when it was made.
    index: Mutex<Option<(Instant, Bytes)>>,
}

impl Dashboard {
    /// The dashboard of the run folders under `root`.
    pub fn new(root: PathBuf) -> Arc<Dashboard> {
        Arc::new(Dashboard {
            root,
            index: Mutex::new(None),
        })
    }

    /// The runs list as the API's JSON body, read again when the last read is older than a
    /// second; serialized once per read, so the requests in between share it.
    pub fn runs(&self) -> Bytes {
        let mut cached = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((read_at, body)) = cached.as_ref()
            && read_at.elapsed() < FRESH_FOR
        {
            return body.clone();
        }
        let index = Index::scan(&self.root);
        let body = Bytes::from(
            json!({
                "root": self.root.display().to_string(),
                "runs": index.runs,
                "problems": index.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
            .to_string(),
        );
        *cached = Some((Instant::now(), body.clone()));
        body
    }
}

/// The routes, for `dashboard`.
pub fn router(dashboard: Arc<Dashboard>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/runs", get(runs))
        .with_state(dashboard)
}

async fn page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(PAGE))
}

async fn runs(State(dashboard): State<Arc<Dashboard>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        dashboard.runs(),
    )
}

/// Serves `dashboard` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, dashboard: Arc<Dashboard>) -> std::io::Result<()> {
    axum::serve(listener, router(dashboard)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    async fn started(root: &std::path::Path) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Dashboard::new(root.to_path_buf())));
        format!("http://{address}")
    }

    fn run(root: &std::path::Path, folder: &str, name: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let result = json!({
            "optimizer": "gepa", "baseline_score": 0.0, "best_score": 1.0,
            "run_id": folder, "config_name": name, "started_at": folder, "stop_reason": "perfect",
        });
        std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    }

    #[tokio::test]
    async fn the_api_lists_the_runs_and_a_new_run_appears_without_a_restart() {
        let root = tempfile::tempdir().unwrap();
        run(root.path(), "a/2026-12-01", "<b>bold</b>");
        let base = started(root.path()).await;
        let get = |url: String| async move {
            reqwest::get(url)
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        };
        let first = get(format!("{base}/api/runs")).await;
        assert_eq!(
            first["runs"][0]["config_name"], "<b>bold</b>",
            "data, escaped by the page"
        );
        assert_eq!(first["runs"][0]["status"], "done");
        run(root.path(), "a/2026-12-02", "later");
        tokio::time::sleep(FRESH_FOR + Duration::from_millis(100)).await;
        let second = get(format!("{base}/api/runs")).await;
        assert_eq!(second["runs"].as_array().unwrap().len(), 2);
        assert_eq!(second["runs"][0]["config_name"], "later", "newest first");
    }

    #[tokio::test]
    async fn the_page_is_served_from_the_binary_and_writes_text_not_html() {
        let root = tempfile::tempdir().unwrap();
        let base = started(root.path()).await;
        let page = reqwest::get(format!("{base}/")).await.unwrap();
        assert_eq!(page.status(), 200);
        let text = page.text().await.unwrap();
        assert!(text.contains("/api/runs"), "the page reads the API");
        assert!(
            !text.contains("innerHTML"),
            "user strings go in as text nodes only"
        );
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "no CDN: works offline"
        );
    }
}
