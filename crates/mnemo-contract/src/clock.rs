//! Time is injected. `SystemClock` is the one place in Mnemo that reads the wall clock.
use std::sync::atomic::{AtomicI64, Ordering};

use crate::time::Timestamp;

/// A source of "now".
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The real clock: the only code that reads the wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Timestamp(ms)
    }
}

/// A simulated clock for tests, scenarios and `--at`: it moves only when told.
#[derive(Debug, Default)]
pub struct SimClock(AtomicI64);

impl SimClock {
    /// A clock stopped at `t`.
    pub fn new(t: Timestamp) -> Self {
        SimClock(AtomicI64::new(t.0))
    }
    /// Move to `t`.
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
    /// Move forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}
