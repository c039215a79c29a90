//! Retrying a model call: which failures are worth another attempt, and how long to wait.
//!
//! Rate limits (429), request timeouts (408), server errors (5xx), timeouts, broken connections
//! and malformed 2xx bodies are retried; any other 4xx fails at once, because sending the same
//! request again cannot fix a bad key or an unknown model. Waits grow exponentially with full
//! jitter (so that many clients hitting one limit do not retry in lock-step), unless the server
//! said how long to wait with `Retry-After`.
//!
//! The loop is ours, not `backon`'s: its jitter adds up to one more delay on top of the delay
//! (waits in `[d, 2d)`) where full jitter draws from `[0, d)`, and the `Retry-After` override
//! and the attempt count of [`LlmError::Exhausted`] would still be code of ours around it, so
//! it would add a dependency without removing the policy.
//!
//! The engine's other HTTP clients (the MLflow tracker) retry through the same loop,
//! [`retrying`], with errors of their own: the policy is this module's, whatever is called.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::request::LlmError;

/// How many times a call is attempted and how long to wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (`max_retries` in a provider block); 0 counts as 1.
    pub max_attempts: u32,
    /// Upper bound of the first back-off; it doubles with each further attempt.
    pub base_delay: Duration,
    /// Longest back-off drawn when the server gave no `Retry-After`.
    pub max_delay: Duration,
    /// Longest wait granted to a server's `Retry-After`, so one header cannot stall a run.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `failed_attempts + 1`, given how many attempts already failed
    /// and the server's `Retry-After`, if any.
    pub fn delay(&self, failed_attempts: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_retry_after);
        }
        let exponent = failed_attempts.saturating_sub(1).min(30);
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        ceiling.mul_f64(random_unit())
    }
}

/// One failed attempt: the error, and how long the server asked us to wait before the next.
#[derive(Debug)]
pub(crate) struct AttemptError {
    pub(crate) error: LlmError,
    pub(crate) retry_after: Option<Duration>,
}

impl From<LlmError> for AttemptError {
    fn from(error: LlmError) -> Self {
        AttemptError {
            error,
            retry_after: None,
        }
    }
}

/// Whether an HTTP status is worth another attempt: rate limits (429), request timeouts (408)
/// and server errors (5xx).
pub fn retryable_status(status: u16) -> bool {
    status == 429 || status >= 500 || status == 408
}

/// One failed attempt of any call: its error, whether another attempt may succeed, and how
/// long the server asked to wait before it.
#[derive(Debug)]
pub struct Failed<E> {
    /// What went wrong.
    pub error: E,
    /// Whether the same request may succeed later (a timeout, a 503), unlike a refusal (a 400).
    pub retryable: bool,
    /// The server's `Retry-After`, if it sent one ([`retry_after`]).
    pub retry_after: Option<Duration>,
}

/// Why [`retrying`] gave up.
#[derive(Debug, PartialEq)]
pub enum GaveUp<E> {
    /// An attempt failed in a way another attempt cannot fix.
    Refused(E),
    /// Every attempt the policy allows failed; the last one so.
    Exhausted {
        /// Attempts made, the first included.
        attempts: u32,
        /// The error of the last attempt.
        last: E,
    },
}

/// Runs `attempt` until it succeeds, fails in a way not worth retrying, or the policy's
/// attempts are spent, waiting [`RetryPolicy::delay`] between attempts; `what` names the call
/// in the debug log.
pub async fn retrying<T, E, F, Fut>(
    policy: &RetryPolicy,
    what: &str,
    mut attempt: F,
) -> Result<T, GaveUp<E>>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failed<E>>>,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut made = 0;
    loop {
        made += 1;
        let failure = match attempt().await {
            Ok(value) => return Ok(value),
            Err(failure) => failure,
        };
        if !failure.retryable {
            return Err(GaveUp::Refused(failure.error));
        }
        if made >= max_attempts {
            return Err(GaveUp::Exhausted {
                attempts: made,
                last: failure.error,
            });
        }
        let wait = policy.delay(made, failure.retry_after);
        tracing::debug!(what, attempt = made, wait_ms = wait.as_millis() as u64, error = %failure.error, "retrying");
        tokio::time::sleep(wait).await;
    }
}

/// [`retrying`] for a model call: an error not worth retrying comes back as it is, spent
/// attempts as [`LlmError::Exhausted`], which names them and the last error.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    provider: &str,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, AttemptError>>,
{
    let outcome = retrying(policy, provider, || {
        let attempted = attempt();
        async move {
            attempted.await.map_err(|failure| Failed {
                retryable: failure.error.is_retryable(),
                error: failure.error,
                retry_after: failure.retry_after,
            })
        }
    })
    .await;
    outcome.map_err(|gave_up| match gave_up {
        GaveUp::Refused(error) => error,
        GaveUp::Exhausted { attempts, last } => LlmError::Exhausted {
            provider: provider.to_string(),
            attempts,
            last: Box::new(last),
        },
    })
}

/// The wait a response asks for: `retry-after-ms` (OpenAI's finer variant) or `Retry-After`
/// as delta-seconds or an HTTP date. Unparseable values are ignored rather than trusted.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return seconds(ms / 1000.0);
    }
    parse_retry_after(text("retry-after")?, now)
}

/// Parses a `Retry-After` value: delta-seconds (integer or decimal) or an HTTP date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`); a date in the past means "now".
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return seconds(secs);
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::from(date.with_timezone(&chrono::Utc));
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn seconds(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// A uniformly distributed number in [0, 1) for jitter. `RandomState` is randomly seeded per
/// process; mixing in a counter gives a fresh value per call without a `rand` dependency.
fn random_unit() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    fn fast_policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            max_retry_after: Duration::from_millis(5),
        }
    }

    fn status(code: u16) -> AttemptError {
        AttemptError::from(LlmError::Status {
            provider: "openai".into(),
            status: code,
            body: "nope".into(),
        })
    }

    #[test]
    fn retry_after_accepts_delta_seconds_and_decimals() {
        let now = SystemTime::UNIX_EPOCH;
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 0.25 ", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_accepts_http_dates_relative_to_now() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 07:27:50 GMT
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        let later = now + Duration::from_secs(60);
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", later),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_ms_header_wins_over_retry_after() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "7".parse().unwrap());
        headers.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(
            retry_after(&headers, SystemTime::now()),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn backoff_is_jittered_below_a_doubling_ceiling_capped_at_max_delay() {
        let policy = RetryPolicy::default();
        for failed in 1..=10 {
            let ceiling =
                Duration::from_millis(500 * (1 << (failed - 1))).min(Duration::from_secs(20));
            for _ in 0..50 {
                assert!(policy.delay(failed, None) <= ceiling);
            }
        }
        let draws: Vec<Duration> = (0..20).map(|_| policy.delay(3, None)).collect();
        assert!(
            draws.iter().any(|d| *d != draws[0]),
            "jitter should vary: {draws:?}"
        );
    }

    #[test]
    fn server_retry_after_is_honoured_up_to_its_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(60)
        );
    }

    #[tokio::test]
    async fn retryable_failures_are_retried_until_success() {
        let calls = AtomicU32::new(0);
        let result = with_retries(&fast_policy(4), "openai", || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(status(503))
            } else {
                Ok("done")
            }
        })
        .await;
        assert_eq!(result, Ok("done"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn client_errors_fail_on_the_first_attempt() {
        for code in [400, 401, 403, 404] {
            let calls = AtomicU32::new(0);
            let result: Result<(), _> = with_retries(&fast_policy(4), "openai", || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(status(code))
            })
            .await;
            assert!(matches!(result, Err(LlmError::Status { status, .. }) if status == code));
            assert_eq!(
                calls.load(Ordering::SeqCst),
                1,
                "HTTP {code} must not be retried"
            );
        }
    }

    #[tokio::test]
    async fn spent_attempts_report_their_count_and_the_last_error() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast_policy(3), "groq", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(status(500))
        })
        .await;
        let error = result.unwrap_err();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(
            error.to_string(),
            "groq request failed after 3 attempts: openai returned HTTP 500: nope"
        );
        assert!(matches!(error.last(), LlmError::Status { status: 500, .. }));
    }

    #[tokio::test]
    async fn zero_attempts_still_makes_one() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast_policy(0), "openai", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(status(429))
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(result.unwrap_err().to_string().contains("after 1 attempt:"));
    }
}
