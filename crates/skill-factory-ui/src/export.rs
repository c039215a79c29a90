//! `skill-factory ui export RUN_DIR -o report.html`: a run page as one self-contained HTML
//! file (no server, no network), to attach to a pull request or an email.
//!
//! The file holds the page's styles, the chart library, the page's script and the run's data
//! (the run page, the best and seed candidates' per-task rows, and the diff of each candidate
//! against its parent) inline; its Content-Security-Policy allows exactly those inline blocks,
//! by hash, and nothing else. The data is JSON inside a `<script type="application/json">`
//! with every `<` written as `\u003c`, so no text of a run can close the block.

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::assets;
use crate::rollouts::Query;
use crate::server::{ApiError, Dashboard};

/// Most per-task rows kept per (candidate, split) in an export.
const MOST_ROWS: usize = 500;

/// The data the exported page reads instead of the API.
pub fn data(dashboard: &Dashboard, path: &str) -> Result<Value, ApiError> {
    let run = dashboard.run_json(path)?;
    let best = run["best"].as_u64().unwrap_or(0) as usize;
    let mut tables = serde_json::Map::new();
    for candidate in [0, best] {
        for split in ["val", "test"] {
            let query = Query {
                candidate: Some(candidate),
                split: Some(split.into()),
                limit: Some(MOST_ROWS),
                ..Query::default()
            };
            tables.insert(
                format!("{candidate}/{split}"),
                dashboard.tasks_json(path, &query)?,
            );
        }
    }
    let mut diffs = serde_json::Map::new();
    if let Some(candidates) = run["candidates"].as_array() {
        for candidate in candidates {
            let id = candidate["id"].as_u64().unwrap_or(0) as usize;
            if let Some(parent) = candidate["parents"][0].as_u64()
                && let Ok(diff) = dashboard.diff_json(path, parent as usize, id)
            {
                diffs.insert(format!("{parent}/{id}"), diff);
            }
        }
    }
    Ok(json!({"run": run, "tables": tables, "diffs": diffs}))
}

/// How the `<title>` of every exported page starts (the run's path follows), so a command
/// can tell a page of ours where it is about to write one.
const PAGE_TITLE: &str = "Skill Factory run ";

/// Whether `bytes` are a page [`html`] wrote: its head holds the title.
pub fn is_page(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    String::from_utf8_lossy(head).contains(&format!("<title>{PAGE_TITLE}"))
}

/// The exported page of the run at `path`.
pub fn html(dashboard: &Dashboard, path: &str) -> Result<String, ApiError> {
    let data = data(dashboard, path)?.to_string().replace('<', "\\u003c");
    let asset = |name| assets::get(name).unwrap_or_default();
    let styles = format!("{}\n{}", asset("uplot.css"), asset("app.css"));
    let scripts = [asset("uplot.js"), asset("app.js")];
    let hash = |text: &str| {
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
        )
    };
    let policy = format!(
        "default-src 'none'; script-src {} {}; style-src {}; img-src data:; base-uri 'none'; form-action 'none'",
        hash(scripts[0]),
        hash(scripts[1]),
        hash(&styles),
    );
    let title = format!("{PAGE_TITLE}{path}")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{styles}</style>\n</head>\n\
         <body>\n<div id=\"app\"></div>\n\
         <script type=\"application/json\" id=\"sf-export\">{data}</script>\n\
         <script>{}</script>\n<script>{}</script>\n</body>\n</html>\n",
        scripts[0], scripts[1]
    ))
}
