//! The integration tests of `skill-factory-mock`, in one binary.

mod batches;
mod server;
mod systemone;

/// `GET /stats`'s fault counts of a server that injected none.
fn no_faults() -> serde_json::Value {
    serde_json::json!({"rate_limit": 0, "rate_limit_bare": 0, "server_error": 0, "hang": 0,
        "malformed": 0, "reset": 0, "cut_body": 0, "slowloris": 0})
}
