//! Quitting at once kills every child still running: `kill_running_children` ends each
//! registered process group, grandchildren included. Alone in its own test binary, because it
//! kills every child of the process.

use std::collections::BTreeMap;
use std::time::Duration;

use skill_factory_io::process::{ChildSpec, Limits, Outcome, kill_running_children, run};

#[tokio::test]
async fn a_running_child_group_is_killed_by_kill_running_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild");
    let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
    let argv = ["sh".to_string(), "-c".to_string(), script];
    let env = BTreeMap::new();
    let started = std::time::Instant::now();
    let child = tokio::spawn(async move {
        run(ChildSpec {
            argv: &argv,
            stdin: None,
            cwd: None,
            env: &env,
            timeout: Duration::from_secs(60),
            limits: Limits::default(),
        })
        .await
    });
    while !pid_file.exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let grandchild: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(kill_running_children() >= 1);
    let outcome = child.await.unwrap();
    assert!(
        matches!(outcome, Outcome::Exited { code: -9, .. }),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // SAFETY: signal 0 only asks whether the process exists. A killed orphan may exist
    // as a zombie for a moment, until its new parent reaps it.
    let alive = || unsafe { libc::kill(grandchild, 0) } == 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while alive() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(), "the grandchild {grandchild} outlived the kill");
}
