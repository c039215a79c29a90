//! The page's files, embedded in the binary (no CDN: the dashboard works offline): the page,
//! its script and styles, and the vendored uPlot chart library (`assets/vendor/uplot/`,
//! unmodified, MIT).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::server::typed;

/// Every file the page loads: its name under `/assets/` (the page itself at `/`) and body.
pub const FILES: &[(&str, &str)] = &[
    ("index.html", include_str!("../assets/index.html")),
    ("app.js", include_str!("../assets/app.js")),
    ("app.css", include_str!("../assets/app.css")),
    (
        "uplot.js",
        include_str!("../assets/vendor/uplot/uPlot.iife.min.js"),
    ),
    (
        "uplot.css",
        include_str!("../assets/vendor/uplot/uPlot.min.css"),
    ),
];

/// The file called `name`.
pub fn get(name: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, body)| *body)
}

/// The file called `name` as a response, or a 404.
pub fn response(name: &str) -> Response {
    match get(name) {
        Some(body) => typed(name, body.as_bytes()),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}
