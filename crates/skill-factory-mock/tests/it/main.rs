//! The integration tests of `skill-factory-mock`, in one binary.

mod agents;
mod batches;
mod server;
mod systemone;

/// `GET /stats`'s fault counts of a server that injected none.
fn no_faults() -> serde_json::Value {
    serde_json::json!({"rate_limit": 0, "rate_limit_bare": 0, "server_error": 0, "hang": 0,
        "malformed": 0, "reset": 0, "cut_body": 0, "slowloris": 0})
}

/// `sf-mock-server` started with `args`, and the first line it printed (its address).
fn spawn_binary(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sf-mock-server"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    (child, line)
}
