//! Which parts of the pool have their pages reserved in the shared-memory filesystem.
//!
//! The pool file is sparse: a page gets memory when it is first written. If the
//! filesystem (tmpfs) is full by then, that write is a SIGBUS in whichever process made
//! it: a worker, a driver, or the raylet restoring a spilled object. So before an
//! allocation is handed out, the raylet reserves (`fallocate`) the extents under it that
//! were never reserved; a reservation that fails fails the create with a typed error
//! instead. Extents stay reserved for the pool's life (freed objects' pages are reused),
//! so the cost is paid once per extent, on first use, not for the whole pool at start.
//!
//! Plain data: the raylet does the IO with its lock released, marking the extents it is
//! reserving as in flight so that others whose allocations share them wait.

/// Granularity of reservations (a huge page).
pub const EXTENT: u64 = 2 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Unreserved,
    Reserving,
    Reserved,
}

/// What a caller must do before it may hand out `[offset, offset + len)`.
#[derive(Debug, PartialEq, Eq)]
pub enum Reserve {
    /// Every page under it is reserved.
    Ready,
    /// Another caller is reserving part of it: wait for [`Reservations::end`] and ask
    /// again.
    Wait,
    /// Reserve these byte ranges (offset, length), then call [`Reservations::end`].
    Do(Vec<(u64, u64)>),
}

/// The reservation state of every extent of a pool.
pub struct Reservations {
    extents: Vec<State>,
    capacity: u64,
}

impl Reservations {
    /// A pool of `capacity` bytes with nothing reserved.
    pub fn new(capacity: u64) -> Self {
        Reservations { extents: vec![State::Unreserved; capacity.div_ceil(EXTENT) as usize], capacity }
    }

    fn extents_of(&self, offset: u64, len: u64) -> std::ops::Range<usize> {
        let end = offset.saturating_add(len.max(1)).min(self.capacity);
        (offset / EXTENT) as usize..(end.div_ceil(EXTENT) as usize).min(self.extents.len())
    }

    /// What to do before handing out `[offset, offset + len)`. The unreserved extents
    /// under it are returned as runs and marked in flight.
    pub fn begin(&mut self, offset: u64, len: u64) -> Reserve {
        let range = self.extents_of(offset, len);
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut busy = false;
        for i in range {
            match self.extents[i] {
                State::Reserved => {}
                State::Reserving => busy = true,
                State::Unreserved => {
                    self.extents[i] = State::Reserving;
                    let start = i as u64 * EXTENT;
                    let len = EXTENT.min(self.capacity - start);
                    match runs.last_mut() {
                        Some((o, l)) if *o + *l == start => *l += len,
                        _ => runs.push((start, len)),
                    }
                }
            }
        }
        match (runs.is_empty(), busy) {
            (false, _) => Reserve::Do(runs),
            (true, true) => Reserve::Wait,
            (true, false) => Reserve::Ready,
        }
    }

    /// The reservation of `runs` (from [`Reservations::begin`]) ended; if it failed they
    /// are unreserved again, so a later allocation tries anew.
    pub fn end(&mut self, runs: &[(u64, u64)], ok: bool) {
        for &(offset, len) in runs {
            for i in self.extents_of(offset, len) {
                self.extents[i] = if ok { State::Reserved } else { State::Unreserved };
            }
        }
    }

    /// Bytes reserved so far.
    pub fn reserved_bytes(&self) -> u64 {
        let size = |i: usize| EXTENT.min(self.capacity - i as u64 * EXTENT);
        (0..self.extents.len()).filter(|i| self.extents[*i] == State::Reserved).map(size).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_are_reserved_once_and_shared_ones_wait() {
        let mb = 1 << 20;
        // 9 MiB: four whole extents and a 1 MiB tail.
        let mut r = Reservations::new(9 * mb);
        // An object across the first two extents: both to reserve, as one run.
        let Reserve::Do(runs) = r.begin(mb, 2 * mb) else { panic!() };
        assert_eq!(runs, vec![(0, 4 * mb)]);
        // Another object in the second extent waits for that reservation.
        assert_eq!(r.begin(3 * mb, 100), Reserve::Wait);
        // One reaching into the third reserves only the third.
        let Reserve::Do(more) = r.begin(3 * mb, 2 * mb) else { panic!() };
        assert_eq!(more, vec![(4 * mb, 2 * mb)]);
        r.end(&runs, true);
        r.end(&more, true);
        assert_eq!(r.begin(0, 6 * mb), Reserve::Ready);
        assert_eq!(r.reserved_bytes(), 6 * mb);
        // The tail run is cut at the pool's end.
        let Reserve::Do(tail) = r.begin(8 * mb + 5, 10) else { panic!() };
        assert_eq!(tail, vec![(8 * mb, mb)]);
        // A failed reservation leaves its extents to try again.
        r.end(&tail, false);
        assert_eq!(r.begin(8 * mb, mb), Reserve::Do(vec![(8 * mb, mb)]));
        r.end(&[(8 * mb, mb)], true);
        assert_eq!(r.reserved_bytes(), 7 * mb);
        // Only the unreserved extent between reserved ones.
        let Reserve::Do(split) = r.begin(5 * mb, 3 * mb + 1) else { panic!() };
        assert_eq!(split, vec![(6 * mb, 2 * mb)]);
        r.end(&split, true);
        assert_eq!(r.reserved_bytes(), 9 * mb);
    }

    #[test]
    fn ranges_past_the_pool_are_clamped() {
        let mut r = Reservations::new(3 << 20);
        assert_eq!(r.begin(u64::MAX - 1, 10), Reserve::Ready);
        let Reserve::Do(runs) = r.begin(0, u64::MAX) else { panic!() };
        assert_eq!(runs, vec![(0, 3 << 20)]);
    }
}
