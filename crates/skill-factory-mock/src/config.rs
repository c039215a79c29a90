//! What a mock server does: where it listens, how slowly it answers, which requests fail and
//! how, and which answers it knows.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::MockError;
use crate::responder::{Answering, Variation};

/// A way a request can fail on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 429 with a `Retry-After` header.
    RateLimit,
    /// HTTP 429 without `Retry-After`, so the client picks its own back-off.
    RateLimitBare,
    /// HTTP 500.
    ServerError,
    /// No answer at all until the server stops (for timeout tests).
    Hang,
    /// HTTP 200 whose body is not valid JSON.
    Malformed,
    /// The connection is closed before a byte of the answer's body is sent.
    Reset,
    /// HTTP 200 announcing the whole body's length, then the connection closed halfway
    /// through it.
    CutBody,
    /// HTTP 200 whose body arrives one byte a second (a slowloris), so only a client timeout
    /// ends it.
    Slowloris,
}

impl Fault {
    /// Every fault, in the order of [`Fault::name`]'s names in `GET /stats`.
    pub const ALL: [Fault; 8] = [
        Fault::RateLimit,
        Fault::RateLimitBare,
        Fault::ServerError,
        Fault::Hang,
        Fault::Malformed,
        Fault::Reset,
        Fault::CutBody,
        Fault::Slowloris,
    ];

    /// The fault's name, as `GET /stats` counts it and [`FaultPlan`] names its fraction.
    pub fn name(self) -> &'static str {
        match self {
            Fault::RateLimit => "rate_limit",
            Fault::RateLimitBare => "rate_limit_bare",
            Fault::ServerError => "server_error",
            Fault::Hang => "hang",
            Fault::Malformed => "malformed",
            Fault::Reset => "reset",
            Fault::CutBody => "cut_body",
            Fault::Slowloris => "slowloris",
        }
    }
}

/// Faults injected at random but reproducibly: request number `n` fails the same way for the
/// same seed on every run, whatever the timing.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPlan {
    /// Fraction of requests answered 429 with `Retry-After`.
    pub rate_limit: f64,
    /// Fraction answered 429 without `Retry-After`.
    pub rate_limit_bare: f64,
    /// Fraction answered 500.
    pub server_error: f64,
    /// Fraction never answered.
    pub hang: f64,
    /// Fraction answered 200 with a broken body.
    pub malformed: f64,
    /// Fraction whose connection is closed without an answer.
    pub reset: f64,
    /// Fraction whose body is cut halfway.
    pub cut_body: f64,
    /// Fraction whose body trickles in a byte a second.
    pub slowloris: f64,
    /// Seconds sent in `Retry-After` with every 429 that has one.
    pub retry_after_secs: u64,
    /// Seed of the per-request choice.
    pub seed: u64,
}

impl Default for FaultPlan {
    fn default() -> Self {
        FaultPlan {
            rate_limit: 0.0,
            rate_limit_bare: 0.0,
            server_error: 0.0,
            hang: 0.0,
            malformed: 0.0,
            reset: 0.0,
            cut_body: 0.0,
            slowloris: 0.0,
            retry_after_secs: 1,
            seed: 0,
        }
    }
}

impl FaultPlan {
    /// Every fault with its fraction and its name in errors (with the mock binary's flag).
    fn fractions(&self) -> [(Fault, f64, &'static str); 8] {
        [
            (Fault::RateLimit, self.rate_limit, "rate_limit (--fail-429)"),
            (
                Fault::RateLimitBare,
                self.rate_limit_bare,
                "rate_limit_bare (--fail-429-bare)",
            ),
            (
                Fault::ServerError,
                self.server_error,
                "server_error (--fail-500)",
            ),
            (Fault::Hang, self.hang, "hang (--hang)"),
            (Fault::Malformed, self.malformed, "malformed (--malformed)"),
            (Fault::Reset, self.reset, "reset (--reset)"),
            (Fault::CutBody, self.cut_body, "cut_body (--cut-body)"),
            (Fault::Slowloris, self.slowloris, "slowloris (--slowloris)"),
        ]
    }

    /// Checks that every fraction is within [0, 1] and that together they stay within 1.
    pub fn validate(&self) -> Result<(), MockError> {
        let fractions = self.fractions();
        for (_, value, name) in fractions {
            if !(0.0..=1.0).contains(&value) {
                return Err(MockError::Config(format!(
                    "fault fraction {name} must be between 0 and 1, got {value}"
                )));
            }
        }
        let total: f64 = fractions.iter().map(|(_, v, _)| v).sum();
        if total > 1.0 + 1e-9 {
            return Err(MockError::Config(format!(
                "fault fractions add up to {total}, more than 1"
            )));
        }
        Ok(())
    }

    /// The fault for the `n`-th request (0-based), if any.
    pub fn choose(&self, n: u64) -> Option<Fault> {
        let draw = unit(splitmix64(
            self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ));
        let mut bound = 0.0;
        for (fault, fraction, _) in self.fractions() {
            bound += fraction;
            if draw < bound {
                return Some(fault);
            }
        }
        None
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Everything a mock server needs to start.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Wait before every answer (faults included, hangs aside).
    pub latency: Duration,
    /// Random but reproducible faults.
    pub faults: FaultPlan,
    /// Faults for the first requests, in order (request 0 gets the first); they take
    /// precedence over `faults`, so a test can say "fail once, then answer".
    pub fault_sequence: Vec<Fault>,
    /// Known answers: the last user message → the reply.
    pub answers: HashMap<String, String>,
    /// Whether a known answer depends on the skill in the system prompt.
    pub answering: Answering,
    /// Outcomes that flip like a sampled model's, and decoy optimizer replies.
    pub variation: Variation,
    /// When set, requests must carry this key (`Authorization: Bearer`, `x-api-key` or
    /// `api-key`); others get 401.
    pub require_api_key: Option<String>,
    /// How the batch routes behave (delay, failed requests).
    pub batches: crate::batch::BatchPlan,
    /// When set, every chat request is answered `307 Temporary Redirect` to this base URL
    /// plus the request's path (for tests that a client does not follow it with its key).
    pub redirect_to: Option<String>,
}

/// Reads an answers JSONL file (see [`parse_answers`]).
pub fn load_answers(path: &Path) -> Result<HashMap<String, String>, MockError> {
    let text = std::fs::read_to_string(path).map_err(|source| MockError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse_answers(&text, &path.display().to_string())
}

/// Parses answers JSONL: one object per line with `input` (the user message) and `output`
/// (the reply; `expected` is accepted too, so a dataset file works as is). Non-string values
/// are rendered as pretty JSON with two-space indent, the way datasets render them into the
/// prompt. Blank lines are skipped.
pub fn parse_answers(text: &str, origin: &str) -> Result<HashMap<String, String>, MockError> {
    let mut answers = HashMap::new();
    for_each_record(text, origin, |record, bad| {
        let input = record
            .get("input")
            .ok_or_else(|| bad("missing `input`".to_string()))?;
        let output = record
            .get("output")
            .or_else(|| record.get("expected"))
            .filter(|v| !v.is_null())
            .ok_or_else(|| bad("missing `output` (or `expected`)".to_string()))?;
        answers.insert(as_text(input), as_text(output));
        Ok(())
    })?;
    Ok(answers)
}

/// Calls `each` with every non-blank line of a JSONL text parsed, and a maker of the error
/// naming that line of `origin`.
pub(crate) fn for_each_record(
    text: &str,
    origin: &str,
    mut each: impl FnMut(&serde_json::Value, &dyn Fn(String) -> MockError) -> Result<(), MockError>,
) -> Result<(), MockError> {
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |detail: String| MockError::Answers {
            origin: origin.to_string(),
            line: index + 1,
            detail,
        };
        let record: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        each(&record, &bad)?;
    }
    Ok(())
}

fn as_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_choice_is_reproducible_and_close_to_the_fractions() {
        let plan = FaultPlan {
            rate_limit: 0.2,
            server_error: 0.1,
            seed: 7,
            ..FaultPlan::default()
        };
        let first: Vec<_> = (0..1000).map(|n| plan.choose(n)).collect();
        let again: Vec<_> = (0..1000).map(|n| plan.choose(n)).collect();
        assert_eq!(first, again);
        let count = |f: Fault| first.iter().filter(|c| **c == Some(f)).count();
        assert!(
            (150..250).contains(&count(Fault::RateLimit)),
            "{}",
            count(Fault::RateLimit)
        );
        assert!(
            (60..140).contains(&count(Fault::ServerError)),
            "{}",
            count(Fault::ServerError)
        );
        assert_eq!(count(Fault::Hang), 0);
        let other_seed = FaultPlan { seed: 8, ..plan };
        assert_ne!(
            first,
            (0..1000).map(|n| other_seed.choose(n)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn fractions_out_of_range_are_refused() {
        // Hangs and malformed bodies at these fractions, no other fault.
        let plan = |hang, malformed| FaultPlan {
            hang,
            malformed,
            ..FaultPlan::default()
        };
        assert!(plan(1.5, 0.0).validate().is_err());
        assert!(plan(0.6, 0.6).validate().is_err());
        assert!(plan(0.5, 0.5).validate().is_ok());
    }

    #[test]
    fn answers_accept_output_or_expected_and_render_json_values_like_datasets() {
        let text = "{\"input\": \"2+2?\", \"output\": \"4\"}\n\n{\"input\": {\"a\": 1}, \"expected\": {\"total\": 262.50}}\n";
        let answers = parse_answers(text, "a.jsonl").unwrap();
        assert_eq!(answers["2+2?"], "4");
        assert_eq!(answers["{\n  \"a\": 1\n}"], "{\n  \"total\": 262.5\n}");
    }

    #[test]
    fn bad_answer_lines_name_the_file_and_line() {
        let error = parse_answers(
            "{\"input\": \"x\", \"output\": \"y\"}\n{\"input\": \"x\"}\n",
            "a.jsonl",
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "a.jsonl:2: missing `output` (or `expected`)"
        );
    }
}
