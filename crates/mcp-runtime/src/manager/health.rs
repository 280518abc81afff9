//! Reconnect policy: back-off between attempts and a crash-storm breaker. Pure
//! bookkeeping, so the rules can be tested without processes or clocks.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Delays before successive reconnect attempts; the number of entries is the number of tries.
pub const BACKOFF: [Duration; 5] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(4),
];

/// More than this many reconnects inside [`STORM_WINDOW`] trips the breaker.
pub const STORM_LIMIT: usize = 5;
/// The window of the crash-storm breaker.
pub const STORM_WINDOW: Duration = Duration::from_secs(30);

/// Reconnect history of one server.
#[derive(Debug, Default, Clone)]
pub struct ReconnectBudget {
    /// When recent reconnects started (within the storm window).
    recent: VecDeque<Instant>,
}

/// What to do after an unexpected disconnect.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Start attempt number `attempt` after `delay`.
    Retry {
        /// 1-based.
        attempt: u32,
        /// Back-off.
        delay: Duration,
    },
    /// Stop reconnecting automatically.
    Suspend(String),
}

impl ReconnectBudget {
    /// Decide about attempt `attempt` (1-based) of one outage, recording it when allowed.
    pub fn next(&mut self, attempt: u32, now: Instant) -> Decision {
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > STORM_WINDOW)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= STORM_LIMIT {
            return Decision::Suspend(format!(
                "crash storm: more than {STORM_LIMIT} reconnects in {} s; reconnect it by hand",
                STORM_WINDOW.as_secs()
            ));
        }
        let Some(delay) = BACKOFF.get(attempt.saturating_sub(1) as usize) else {
            return Decision::Suspend(format!(
                "gave up after {} reconnect attempts",
                BACKOFF.len()
            ));
        };
        self.recent.push_back(now);
        Decision::Retry {
            attempt,
            delay: *delay,
        }
    }

    /// Forget the history (a manual reconnect).
    pub fn reset(&mut self) {
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_then_gives_up() {
        let mut budget = ReconnectBudget::default();
        let start = Instant::now();
        let delays: Vec<Duration> = (1..=5)
            .map(|attempt| {
                // Spread over more than the storm window so only the attempt limit applies.
                let now = start + STORM_WINDOW * attempt;
                match budget.next(attempt, now) {
                    Decision::Retry { delay, .. } => delay,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert_eq!(delays, BACKOFF);
        assert!(matches!(
            budget.next(6, start + STORM_WINDOW * 7),
            Decision::Suspend(_)
        ));
    }

    #[test]
    fn crash_storm_trips_the_breaker_and_reset_clears_it() {
        let mut budget = ReconnectBudget::default();
        let now = Instant::now();
        // Five quick outages, each recovered at the first attempt.
        for _ in 0..STORM_LIMIT {
            assert!(matches!(budget.next(1, now), Decision::Retry { .. }));
        }
        assert!(
            matches!(budget.next(1, now), Decision::Suspend(reason) if reason.contains("storm"))
        );
        budget.reset();
        assert!(matches!(budget.next(1, now), Decision::Retry { .. }));
    }

    #[test]
    fn old_reconnects_leave_the_window() {
        let mut budget = ReconnectBudget::default();
        let start = Instant::now();
        for _ in 0..STORM_LIMIT {
            budget.next(1, start);
        }
        let later = start + STORM_WINDOW + Duration::from_secs(1);
        assert!(matches!(budget.next(1, later), Decision::Retry { .. }));
    }
}
