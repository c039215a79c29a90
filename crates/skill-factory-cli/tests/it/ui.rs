//! `skill-factory ui`: the dashboard serves the runs under its root on loopback, and refuses
//! an address other machines could reach.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::common::{bin, process, run};

/// Kills the dashboard when the test ends, passed or not.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_dashboard_lists_a_real_run_folder_over_http() {
    let root = tempfile::tempdir().unwrap();
    let run_dir = root.path().join("receipt-total/20261201-193444");
    std::fs::create_dir_all(&run_dir).unwrap();
    let gallery = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../gallery/receipt-total/result.json"
    );
    std::fs::copy(gallery, run_dir.join("result.json")).unwrap();
    let mut child = process()
        .args(["ui", "--port", "0", "--runs"])
        .arg(root.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let served = Served(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|url| url.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let runs: serde_json::Value = reqwest::get(format!("{url}/api/runs"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"][0]["config_name"], "receipt-total", "{runs}");
    assert_eq!(runs["runs"][0]["path"], "receipt-total/20261201-193444");
    let page = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(page.contains("<title>Skill Factory runs</title>"));
    drop(served);
}

#[test]
fn another_host_or_a_missing_runs_folder_is_refused_with_the_fix() {
    let root = tempfile::tempdir().unwrap();
    let refused = run(bin()
        .args(["ui", "--host", "0.0.0.0", "--runs"])
        .arg(root.path()));
    assert_eq!(refused.code, Some(2));
    assert!(
        refused.stderr.contains("--host 0.0.0.0") && refused.stderr.contains("SSH tunnel"),
        "{}",
        refused.stderr
    );
    let missing = run(bin().args(["ui", "--runs"]).arg(root.path().join("nope")));
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("no such folder"),
        "{}",
        missing.stderr
    );
}
