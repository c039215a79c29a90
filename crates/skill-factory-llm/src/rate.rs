//! A requests-per-minute limit (`requests_per_minute` in a provider block): a token bucket.
//!
//! Tokens refill at `per_minute / 60` a second and the bucket holds at most one second's
//! worth (at least one token), so requests go out evenly paced instead of a minute's quota
//! in one burst: a provider counting over any sliding minute never sees more than the limit.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Paces requests to at most `per_minute` a minute.
#[derive(Debug)]
pub struct RateLimit {
    per_second: f64,
    capacity: f64,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    refilled_at: Instant,
}

impl RateLimit {
    /// A limit of `per_minute` requests a minute (0 counts as 1; the provider registry
    /// rejects 0 with a message).
    pub fn per_minute(per_minute: u32) -> Self {
        let per_minute = f64::from(per_minute.max(1));
        let capacity = (per_minute / 60.0).floor().max(1.0);
        RateLimit {
            per_second: per_minute / 60.0,
            capacity,
            bucket: Mutex::new(Bucket {
                tokens: capacity,
                refilled_at: Instant::now(),
            }),
        }
    }

    /// The limit, in requests a minute.
    pub fn requests_per_minute(&self) -> f64 {
        self.per_second * 60.0
    }

    /// Waits until a request may go out, and takes its token.
    pub async fn acquire(&self) {
        loop {
            let wait = {
                let mut bucket = self.bucket.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                let elapsed = now.duration_since(bucket.refilled_at).as_secs_f64();
                bucket.tokens = (bucket.tokens + elapsed * self.per_second).min(self.capacity);
                bucket.refilled_at = now;
                if bucket.tokens >= 1.0 {
                    bucket.tokens -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - bucket.tokens) / self.per_second)
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_of_tokens_goes_out_at_once_then_requests_are_paced() {
        // 600 a minute: 10 a second, a burst of 10.
        let limit = RateLimit::per_minute(600);
        let started = Instant::now();
        for _ in 0..10 {
            limit.acquire().await;
        }
        assert!(started.elapsed() < Duration::from_millis(50));
        for _ in 0..5 {
            limit.acquire().await;
        }
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(450) && elapsed < Duration::from_millis(900),
            "5 more at 10/s take about half a second: {elapsed:?}"
        );
    }

    #[tokio::test]
    async fn slow_limits_allow_one_request_at_a_time() {
        let limit = RateLimit::per_minute(30);
        assert_eq!(limit.requests_per_minute(), 30.0);
        limit.acquire().await;
        let second = tokio::time::timeout(Duration::from_millis(100), limit.acquire()).await;
        assert!(second.is_err(), "30 a minute means one every 2 s");
    }
}
