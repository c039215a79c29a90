//! The dashboard in a real browser: `crates/skill-factory-ui/browser/*.test.mjs` (node:test,
//! playwright-core driving Debian's Chromium, axe-core for accessibility) run against this
//! build's binary. The scripts set up their own runs and server from `SKILL_FACTORY_BIN`;
//! screenshots go to `SKILL_FACTORY_SCREENSHOTS` (default `target/ui-screenshots/`).
//!
//! The browser and the npm packages are not fetched here (tests never reach the network):
//! `scripts/setup-browser.sh --install` (run by `.ci/run`) installs Chromium with apt and the
//! packages at `${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/browser/node_modules`, where
//! this test finds them; `SKILL_FACTORY_BROWSER_MODULES` names another folder.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{external_tool::external_tool, repo_root, scrub};

#[test]
fn the_dashboard_works_in_headless_chromium() {
    let modules = external_tool(
        "SKILL_FACTORY_BROWSER_MODULES",
        "skill-factory-ci/browser/node_modules",
        "playwright-core and axe-core (npm) with Debian's Chromium",
        "scripts/setup-browser.sh --install   (Chromium from apt needs root; the packages need npm)",
    );
    let screenshots = std::env::var_os("SKILL_FACTORY_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/ui-screenshots"));
    let mut node = Command::new("node");
    scrub(&mut node);
    let child = node
        .args(["--test", "--test-concurrency=1"])
        .arg(repo_root().join("crates/skill-factory-ui/browser"))
        .env("SKILL_FACTORY_BIN", env!("CARGO_BIN_EXE_skill-factory"))
        .env("SKILL_FACTORY_REPO", repo_root())
        .env("SKILL_FACTORY_BROWSER_MODULES", &modules)
        .env("SKILL_FACTORY_SCREENSHOTS", &screenshots)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run node (install Node.js 20): {error}"));
    // A watchdog, not a polling loop: the output is read to its end while the tests run, so a
    // full pipe never stalls them.
    let pid = child.id() as libc::pid_t;
    let (finished, watch) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if watch.recv_timeout(Duration::from_secs(600)).is_err() {
            // SAFETY: signals our own child, which has not been reaped (we have not sent on
            // `finished` yet).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().unwrap();
    let _ = finished.send(());
    watchdog.join().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("# fail 0"), "{printed}");
    assert!(
        screenshots.join("run.png").is_file(),
        "the run page's screenshot is written: {printed}"
    );
}
