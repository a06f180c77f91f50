//! What a create or a restore that lacks pool space does next. A pure decision: the
//! caller tries to allocate, asks for spilling, and follows the [`Step`] it gets here.
//!
//! ```text
//!  Full ─(spilling freed memory at once, no spill in flight)─▶ RetryNow
//!   │ ─(a spill is under way or readers hold pins, before the deadline)─▶ Wait(≤ 100 ms)
//!   └─(nothing can free space, spilling just failed, the deadline passed, or the node
//!      is stopping)─▶ GiveUp
//! ```
//!
//! A failed spill pauses spilling for a while (see `Node`); a waiter then gives up at
//! once rather than wait out its deadline for spills that are not being attempted.

use std::time::{Duration, Instant};

/// The longest single wait: a waiter re-checks at least this often.
pub const MAX_WAIT_STEP: Duration = Duration::from_millis(100);

/// What the store looked like after the allocation failed and spilling was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Asking for space did something (spill jobs sent, or memory freed at once).
    pub acted: bool,
    /// Spill jobs are in flight.
    pub spilling: bool,
    /// Objects pinned by readers (their release may free or unpin space).
    pub pinned_objects: u64,
    /// The node is shutting down.
    pub stopping: bool,
    /// Spilling failed recently and is paused.
    pub spill_failed: bool,
}

/// The next step of a waiter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Try to allocate again now.
    RetryNow,
    /// Wait for space to be freed (or this long), then try again.
    Wait(Duration),
    /// Try once more and report the failure.
    GiveUp,
}

/// One create or restore waiting for space, until `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct SpaceWait {
    deadline: Instant,
}

impl SpaceWait {
    /// A wait started at `now` that lasts at most `timeout`.
    pub fn new(now: Instant, timeout: Duration) -> Self {
        SpaceWait { deadline: now + timeout }
    }

    /// The step after an allocation found the pool full at `now`.
    pub fn next(&self, now: Instant, p: Progress) -> Step {
        if !p.stopping && p.acted && !p.spilling {
            return Step::RetryNow; // memory was freed at once
        }
        // Only wait while something can still free space.
        let hope = p.spilling || (p.pinned_objects > 0 && !p.spill_failed);
        if !hope || now >= self.deadline || p.stopping {
            return Step::GiveUp;
        }
        Step::Wait((self.deadline - now).min(MAX_WAIT_STEP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_retries_waits_while_there_is_hope_and_gives_up_at_the_deadline() {
        let t0 = Instant::now();
        let w = SpaceWait::new(t0, Duration::from_secs(1));
        let freed = Progress { acted: true, ..Default::default() };
        assert_eq!(w.next(t0, freed), Step::RetryNow);
        let spilling = Progress { acted: true, spilling: true, ..Default::default() };
        assert_eq!(w.next(t0, spilling), Step::Wait(MAX_WAIT_STEP));
        assert_eq!(w.next(t0 + Duration::from_millis(950), spilling), Step::Wait(Duration::from_millis(50)));
        assert_eq!(w.next(t0 + Duration::from_secs(1), spilling), Step::GiveUp);
        let pinned = Progress { pinned_objects: 2, ..Default::default() };
        assert_eq!(w.next(t0, pinned), Step::Wait(MAX_WAIT_STEP));
        assert_eq!(w.next(t0, Progress::default()), Step::GiveUp, "nothing can free space");
        let stopping = Progress { acted: true, spilling: true, stopping: true, ..Default::default() };
        assert_eq!(w.next(t0, stopping), Step::GiveUp);
        let failed = Progress { pinned_objects: 2, spill_failed: true, ..Default::default() };
        assert_eq!(w.next(t0, failed), Step::GiveUp, "spilling is paused: nothing will make room soon");
    }
}
