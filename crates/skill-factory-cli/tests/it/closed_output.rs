//! A closed stdout or stderr (`skill-factory evaluate ... | head -1`) ends the process quietly,
//! killed by SIGPIPE like any Unix filter, never with Rust's "failed printing to stdout" panic
//! (exit 101).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn example_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/invoice-extractor/config.offline.yaml")
}

/// A pipe whose reading end is closed before the binary starts, so its first write fails with
/// EPIPE every time (no race with a reader such as `head` that exits on its own schedule).
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

fn run(args: &[&str], stdout: Stdio, stderr: Stdio) -> Output {
    crate::common::process()
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .expect("skill-factory runs")
}

fn assert_killed_by_sigpipe(output: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGPIPE),
        "{what}: ended with {} instead of SIGPIPE; stderr: {stderr}",
        output.status
    );
}

#[test]
fn commands_end_quietly_when_stdout_is_closed() {
    let config = example_config();
    let config = config.to_str().expect("a UTF-8 path");
    for args in [
        vec!["evaluate", "-c", config],
        vec!["evaluate", "-c", config, "--json"],
        vec!["list"],
        vec!["install", "--list-agents"],
    ] {
        let output = run(&args, closed_pipe(), Stdio::piped());
        assert_killed_by_sigpipe(&output, &args.join(" "));
    }
}

#[test]
fn an_error_ends_quietly_when_stderr_is_closed() {
    let output = run(
        &["evaluate", "-c", "no-such-config.yaml"],
        Stdio::piped(),
        closed_pipe(),
    );
    assert!(output.stdout.is_empty());
    assert_killed_by_sigpipe(&output, "evaluate with a missing config");
}
