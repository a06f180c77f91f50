//! The state word of one object, shared by the raylet's connection threads (pin, release,
//! seal, delete) and its spill thread, which copies objects to disk without holding the
//! raylet's lock. One `AtomicU64` per object; every transition is a compare-and-swap.
//!
//! ```text
//!            seal              begin_spill            finish_spill
//!  Created ───────▶ Sealed ───────────────▶ Spilling ─────────────▶ Spilled
//!                  ▲  │ ▲ pin/unpin             │ pin (aborts the spill)   │ begin_restore
//!                  │  │ └───────────────────────┘                          ▼
//!                  │  └─ evict (secondary, unpinned) ─▶ Freed          Restoring
//!                  └────────────────── finish_restore ───────────────────┘
//! ```
//!
//! Invariants (checked under loom in `tests`):
//! - an object with pins is `Sealed`: never spilling, spilled, evicted or freed;
//! - a spill completes only if nobody pinned the object since it began;
//! - `doomed` (deleted by its owner while busy) is seen by exactly one party, the one
//!   that then releases the memory.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

/// States of an object, as stored in bits 32..36 of the word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum SlotState {
    /// Allocated, being written by its creator.
    Created = 0,
    /// Complete and in memory.
    Sealed = 1,
    /// Being copied to disk by the spill thread.
    Spilling = 2,
    /// On disk only; its memory is released.
    Spilled = 3,
    /// Being read back from disk into memory.
    Restoring = 4,
    /// Gone.
    Freed = 5,
}

const PINS: u64 = 0xFFFF_FFFF;
const STATE_SHIFT: u32 = 32;
const STATE_MASK: u64 = 0xF << STATE_SHIFT;
const DOOMED: u64 = 1 << 36;

fn state_of(w: u64) -> SlotState {
    match (w & STATE_MASK) >> STATE_SHIFT {
        0 => SlotState::Created,
        1 => SlotState::Sealed,
        2 => SlotState::Spilling,
        3 => SlotState::Spilled,
        4 => SlotState::Restoring,
        _ => SlotState::Freed,
    }
}

fn with_state(w: u64, s: SlotState) -> u64 {
    (w & !STATE_MASK) | ((s as u64) << STATE_SHIFT)
}

/// The state word of one object.
#[derive(Debug)]
pub struct Slot {
    word: AtomicU64,
}

impl Default for Slot {
    fn default() -> Self {
        Slot::new()
    }
}

impl Slot {
    /// A freshly created (unsealed, unpinned) object.
    pub fn new() -> Self {
        Slot { word: AtomicU64::new(with_state(0, SlotState::Created)) }
    }

    /// The current state.
    pub fn state(&self) -> SlotState {
        state_of(self.word.load(Ordering::Acquire))
    }

    /// The current number of pins.
    pub fn pins(&self) -> u32 {
        (self.word.load(Ordering::Acquire) & PINS) as u32
    }

    /// Whether the owner deleted the object while it was busy.
    pub fn doomed(&self) -> bool {
        self.word.load(Ordering::Acquire) & DOOMED != 0
    }

    fn update(&self, mut f: impl FnMut(u64) -> Option<u64>) -> Result<u64, u64> {
        self.word.fetch_update(Ordering::AcqRel, Ordering::Acquire, &mut f)
    }

    /// `Created → Sealed`.
    pub fn seal(&self) -> bool {
        self.update(|w| (state_of(w) == SlotState::Created).then(|| with_state(w, SlotState::Sealed))).is_ok()
    }

    /// Takes a pin if the object is in memory and not deleted. Pinning an object that is
    /// being spilled cancels the spill. Returns the state that refused the pin otherwise
    /// (`Freed` for a deleted object).
    pub fn try_pin(&self) -> Result<(), SlotState> {
        self.update(|w| match state_of(w) {
            _ if w & DOOMED != 0 => None,
            SlotState::Sealed | SlotState::Spilling if w & PINS < PINS => Some(with_state(w, SlotState::Sealed) + 1),
            _ => None,
        })
        .map(|_| ())
        .map_err(|w| if w & DOOMED != 0 { SlotState::Freed } else { state_of(w) })
    }

    /// Releases one pin. Returns true if that was the last pin of a doomed object: the
    /// caller must now free it.
    pub fn unpin(&self) -> bool {
        let prev = self.update(|w| (w & PINS > 0).then(|| w - 1)).unwrap_or(0);
        prev & PINS == 1 && prev & DOOMED != 0
    }

    /// `Sealed (no pins, not doomed) → Spilling`.
    pub fn begin_spill(&self) -> bool {
        self.update(|w| {
            (state_of(w) == SlotState::Sealed && w & PINS == 0 && w & DOOMED == 0)
                .then(|| with_state(w, SlotState::Spilling))
        })
        .is_ok()
    }

    /// `Spilling → Spilled`, only if nobody pinned or deleted it meanwhile.
    pub fn finish_spill(&self) -> bool {
        self.update(|w| {
            (state_of(w) == SlotState::Spilling && w & DOOMED == 0).then(|| with_state(w, SlotState::Spilled))
        })
        .is_ok()
    }

    /// `Spilling (doomed) → Freed`: the owner deleted the object during its spill, and
    /// the spiller, the last party holding it, frees it.
    pub fn end_doomed_spill(&self) -> bool {
        self.update(|w| {
            (state_of(w) == SlotState::Spilling && w & DOOMED != 0).then(|| with_state(w, SlotState::Freed))
        })
        .is_ok()
    }

    /// `Spilling → Sealed`, when the copy to disk failed.
    pub fn abort_spill(&self) {
        let _ = self.update(|w| (state_of(w) == SlotState::Spilling).then(|| with_state(w, SlotState::Sealed)));
    }

    /// `Spilled → Restoring`.
    pub fn begin_restore(&self) -> bool {
        self.update(|w| (state_of(w) == SlotState::Spilled).then(|| with_state(w, SlotState::Restoring))).is_ok()
    }

    /// `Restoring → Sealed`.
    pub fn finish_restore(&self) -> bool {
        self.update(|w| (state_of(w) == SlotState::Restoring).then(|| with_state(w, SlotState::Sealed))).is_ok()
    }

    /// `Sealed (no pins) → Freed`: drops an unpinned copy to make room.
    pub fn evict(&self) -> bool {
        self.update(|w| (state_of(w) == SlotState::Sealed && w & PINS == 0).then(|| with_state(w, SlotState::Freed)))
            .is_ok()
    }

    /// The owner deletes the object. If nobody holds it and no spill is copying it, it
    /// becomes `Freed` at once and `true` is returned: the caller frees it. Otherwise it
    /// is marked doomed, and the last unpin or the end of the spill frees it.
    pub fn delete(&self) -> bool {
        let prev = self
            .update(|w| match state_of(w) {
                SlotState::Freed => None,
                // An unsealed object is still being written: its creator's seal frees it.
                SlotState::Sealed | SlotState::Spilled if w & PINS == 0 => Some(with_state(w, SlotState::Freed)),
                _ => Some(w | DOOMED),
            })
            .unwrap_or_else(|w| w);
        matches!(state_of(prev), SlotState::Sealed | SlotState::Spilled) && prev & PINS == 0
    }

    /// Marks the object deleted without changing its state: whoever holds it last
    /// frees it.
    pub fn doom(&self) {
        let _ = self.update(|w| Some(w | DOOMED));
    }

    /// Marks an object freed after the last unpin of a doomed object. Returns false if
    /// it was already freed.
    pub fn free(&self) -> bool {
        self.update(|w| (state_of(w) != SlotState::Freed).then(|| with_state(w, SlotState::Freed))).is_ok()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn life_cycle() {
        let s = Slot::new();
        assert_eq!(s.try_pin(), Err(SlotState::Created), "unsealed objects cannot be read");
        assert!(s.seal());
        assert!(s.try_pin().is_ok());
        assert!(!s.begin_spill(), "pinned objects are not spilled");
        assert!(!s.unpin());
        assert!(s.begin_spill());
        assert!(s.try_pin().is_ok(), "a reader cancels a spill in progress");
        assert!(!s.finish_spill());
        assert_eq!(s.state(), SlotState::Sealed);
        assert!(!s.unpin());
        assert!(s.begin_spill() && s.finish_spill());
        assert_eq!(s.try_pin(), Err(SlotState::Spilled));
        assert!(s.begin_restore() && s.finish_restore());
        assert!(s.try_pin().is_ok());
        assert!(!s.delete(), "a pinned object is only doomed");
        assert!(s.unpin(), "the last unpin of a doomed object frees it");
    }

    #[test]
    fn delete_during_spill_is_left_to_the_spiller() {
        let s = Slot::new();
        s.seal();
        assert!(s.begin_spill());
        assert!(!s.delete());
        assert!(s.doomed());
        assert_eq!(s.try_pin(), Err(SlotState::Freed), "deleted objects cannot be pinned");
        assert!(!s.finish_spill(), "a doomed spill does not complete");
        assert!(s.end_doomed_spill());
        assert_eq!(s.state(), SlotState::Freed);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! `RUSTFLAGS="--cfg loom" cargo test -p ares-object-store --release --lib`
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;

    /// A reader, the spill thread and the owner's delete race on one object.
    #[test]
    fn pin_spill_and_delete_race_safely() {
        // Three threads of CAS loops: bound preemptions (as tokio does) to keep the
        // exploration to seconds; every interleaving with up to 3 preemptions is checked.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let slot = Arc::new(Slot::new());
            assert!(slot.seal());
            let frees = Arc::new(AtomicUsize::new(0));

            let (s, f) = (slot.clone(), frees.clone());
            let reader = loom::thread::spawn(move || {
                if s.try_pin().is_ok() {
                    // While pinned, the bytes are in memory and stay there.
                    assert_eq!(s.state(), SlotState::Sealed);
                    if s.unpin() && s.free() {
                        f.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
            let (s, f) = (slot.clone(), frees.clone());
            let spiller = loom::thread::spawn(move || {
                if s.begin_spill() {
                    if s.finish_spill() {
                        assert_eq!(s.pins(), 0);
                    } else if s.end_doomed_spill() {
                        f.fetch_add(1, Ordering::SeqCst);
                    } else {
                        // A reader cancelled the spill: the object is in memory, pinned.
                        s.abort_spill();
                    }
                }
            });
            let (s, f) = (slot.clone(), frees.clone());
            let owner = loom::thread::spawn(move || {
                if s.delete() {
                    f.fetch_add(1, Ordering::SeqCst);
                }
            });
            reader.join().unwrap();
            spiller.join().unwrap();
            owner.join().unwrap();
            // Exactly one party freed the object, or it ended spilled/freed by delete.
            let n = frees.load(Ordering::SeqCst);
            assert!(n <= 1, "freed {n} times");
            assert_eq!(slot.state(), SlotState::Freed);
            assert_eq!(slot.pins(), 0);
            assert_eq!(n, 1);
        });
    }
}
