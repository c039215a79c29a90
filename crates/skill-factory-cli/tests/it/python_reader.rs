//! The Python tool's own readers of run folders work on ours: its dashboard server
//! (`python -m skill_factory.ui`, which reads runs with `skill_factory.persistence.list_runs` and
//! `load_run`) lists the runs our `optimize` wrote and serves each one's `result.json`.
//!
//! The Python `skill-factory` 0.2.0 is not fetched here (tests never reach the network):
//! `scripts/setup-peer.sh` (run by `.ci/run`) installs it in a venv outside the clone, at
//! `${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/peer`, where this test finds it;
//! `SKILL_FACTORY_PEER_PYTHON` names another interpreter that has it. Without it this test fails
//! and says how to install it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::external_tool;
use crate::common::{artifacts, repo_root};

fn peer_python() -> PathBuf {
    external_tool::external_tool(
        "SKILL_FACTORY_PEER_PYTHON",
        "skill-factory-ci/peer/bin/python",
        "the Python skill-factory 0.2.0",
        "scripts/setup-peer.sh   (needs python3 with venv and pip)",
    )
}

/// Runs our `optimize` on an offline example into `runs`; returns the run folder.
fn optimize(example: &str, runs: &Path) -> PathBuf {
    let out = crate::common::bin()
        .arg("optimize")
        .arg("-c")
        .arg(
            repo_root()
                .join("examples")
                .join(example)
                .join("config.offline.yaml"),
        )
        .arg("-o")
        .arg(runs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::canonicalize(artifacts::artifacts(&stdout)).unwrap()
}

/// The Python dashboard over `runs` on a free loopback port; killed when dropped.
struct Dashboard {
    child: Child,
    url: String,
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn dashboard(runs: &Path) -> Dashboard {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Process::new(peer_python())
        .args(["-m", "skill_factory.ui", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--runs")
        .arg(runs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dashboard = Dashboard {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    while reqwest::get(&dashboard.url).await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the Python dashboard did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    dashboard
}

async fn get_json(url: &str) -> Value {
    let response = reqwest::get(url).await.unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_tools_dashboard_lists_and_shows_our_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = std::fs::canonicalize(tmp.path()).unwrap().join("runs");
    let folders = [
        optimize("invoice-extractor", &runs.join("invoice")),
        optimize("ticket-classifier", &runs.join("ticket")),
    ];
    let dashboard = dashboard(&runs).await;

    let page = reqwest::get(&dashboard.url).await.unwrap();
    assert!(page.status().is_success());
    let listed = get_json(&format!("{}/api/runs", dashboard.url)).await;
    let listed = listed["runs"].as_array().unwrap().clone();
    // Each run once: the `latest` link beside the timestamped folders is not a second run.
    assert_eq!(listed.len(), 2, "{listed:#?}");
    for folder in &folders {
        let ours: Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("result.json")).unwrap())
                .unwrap();
        let entry = listed
            .iter()
            .find(|run| run["dir"].as_str().map(PathBuf::from).as_deref() == Some(folder))
            .unwrap_or_else(|| panic!("{} is not listed: {listed:#?}", folder.display()));
        for key in ["optimizer", "baseline_score", "best_score", "improvement"] {
            assert_eq!(entry[key], ours[key], "{key} of {}", folder.display());
        }
        assert_eq!(
            entry["candidates"],
            ours["history"].as_array().unwrap().len()
        );
        assert_eq!(entry["name"], folder.file_name().unwrap().to_str().unwrap());

        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/run", dashboard.url),
            [("dir", folder.to_str().unwrap())],
        )
        .unwrap();
        let shown = get_json(url.as_str()).await;
        assert_eq!(shown, ours, "the dashboard serves our result.json as is");
        assert!(shown["best_score"].as_f64() > shown["baseline_score"].as_f64());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_tools_dashboard_lists_our_classifier_workspaces() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = std::fs::canonicalize(tmp.path()).unwrap().join("runs");
    let workspace = runs.join("pr-mismatch");
    let out = crate::common::bin()
        .args(["optimize", "-c"])
        .arg(repo_root().join("examples/pr-mismatch/config.offline.yaml"))
        .arg("-o")
        .arg(&workspace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::common::printed(&out));
    let ours: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(ours["kind"], "classifier");
    let dashboard = dashboard(&runs).await;
    let listed = get_json(&format!("{}/api/runs", dashboard.url)).await;
    let listed = listed["runs"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    for key in ["optimizer", "baseline_score", "best_score", "improvement"] {
        assert_eq!(listed[0][key], ours[key], "{key}");
    }
    let url = reqwest::Url::parse_with_params(
        &format!("{}/api/run", dashboard.url),
        [("dir", workspace.to_str().unwrap())],
    )
    .unwrap();
    assert_eq!(get_json(url.as_str()).await, ours);
}
