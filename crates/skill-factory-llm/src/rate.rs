//! A requests-per-minute limit (`requests_per_minute` in a provider block), on `governor`'s
//! GCRA limiter.
//!
//! One request is let through every `60 / per_minute` seconds, and a burst of at most one
//! second's worth (at least one request) may go out at once, so requests go out evenly paced
//! instead of a minute's quota in one burst: a provider counting over any sliding minute never
//! sees more than the limit. The wait is a tokio sleep, so it runs on the run's own timer and
//! is dropped with the call that waits.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Paces requests to at most `per_minute` a minute.
#[derive(Debug)]
pub struct RateLimit {
    per_minute: u32,
    limiter: DefaultDirectRateLimiter,
    clock: DefaultClock,
}

impl RateLimit {
    /// A limit of `per_minute` requests a minute (0 counts as 1; the provider registry
    /// rejects 0 with a message).
    pub fn per_minute(per_minute: u32) -> Self {
        let per_minute = per_minute.max(1);
        let burst = NonZeroU32::new(per_minute / 60).unwrap_or(NonZeroU32::MIN);
        let interval = Duration::from_secs(60) / per_minute;
        // A minute divided by a u32 is at least 13 ns, never the zero period `with_period`
        // refuses; the fallback is only there to need no panic.
        let quota = Quota::with_period(interval)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(burst);
        let clock = DefaultClock::default();
        RateLimit {
            per_minute,
            limiter: RateLimiter::direct_with_clock(quota, clock.clone()),
            clock,
        }
    }

    /// The limit, in requests a minute.
    pub fn requests_per_minute(&self) -> f64 {
        f64::from(self.per_minute)
    }

    /// Waits until a request may go out, and takes its turn.
    pub async fn acquire(&self) {
        while let Err(not_until) = self.limiter.check() {
            tokio::time::sleep(not_until.wait_time_from(self.clock.now())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

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
