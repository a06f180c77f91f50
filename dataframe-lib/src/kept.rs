//! What a worker process keeps between chunk tasks: the hashed sets of `isin` and the
//! indexed broadcast sides of joins, each made once per process from what every task of
//! an operation shares, and found again by a key naming what it was made of. Bounded by
//! bytes, the least recently used dropped first. Owns no IO: the caller makes values.

use std::sync::{Arc, Mutex};

/// The least bytes an entry counts for (so that the entries are few).
pub(crate) const MIN_ENTRY: usize = 1 << 20;

/// A kept value: its key, itself and its bytes.
type Entry<V> = ([u8; 32], Arc<V>, usize);

/// Values of type `V` under 32-byte keys, at most `limit` bytes of them.
pub(crate) struct Kept<V> {
    /// The least recently used first.
    entries: Mutex<Vec<Entry<V>>>,
    limit: usize,
}

impl<V> Kept<V> {
    pub(crate) const fn new(limit: usize) -> Kept<V> {
        Kept { entries: Mutex::new(Vec::new()), limit }
    }

    /// The value under `key`, else the one `make` returns with its size in bytes (each
    /// entry counted as at least [`MIN_ENTRY`] bytes). A value larger than the limit is
    /// kept alone: the tasks of one operation share it, and making it for each would cost
    /// more than it does once. `make` runs without the lock held: two threads may both
    /// make a value, and the later one is kept.
    pub(crate) fn get_or_make<E>(
        &self,
        key: &[u8; 32],
        make: impl FnOnce() -> Result<(V, usize), E>,
    ) -> Result<Arc<V>, E> {
        {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = entries.iter().position(|(k, ..)| k == key) {
                let hit = entries.remove(i);
                let value = hit.1.clone();
                entries.push(hit);
                return Ok(value);
            }
        }
        let (value, bytes) = make()?;
        let (value, bytes) = (Arc::new(value), bytes.max(MIN_ENTRY));
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(k, ..)| k != key);
        while !entries.is_empty() && entries.iter().map(|(.., n)| n).sum::<usize>() + bytes > self.limit {
            entries.remove(0);
        }
        entries.push((*key, value.clone(), bytes));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first_and_a_value_beyond_the_limit_is_kept_alone() {
        let kept: Kept<u32> = Kept::new(10 * MIN_ENTRY);
        let made = std::cell::Cell::new(0);
        let get = |k: u8, v: u32, bytes: usize| {
            *kept
                .get_or_make::<()>(&[k; 32], || {
                    made.set(made.get() + 1);
                    Ok((v, bytes))
                })
                .unwrap()
        };
        let mb = MIN_ENTRY;
        assert_eq!(get(1, 10, 4 * mb), 10);
        assert_eq!(get(2, 20, 4 * mb), 20);
        assert_eq!(get(1, 99, 4 * mb), 10, "found again, not made");
        assert_eq!(made.get(), 2);
        // 3 needs room: 2 (least recently used) goes, 1 stays.
        assert_eq!(get(3, 30, 4 * mb), 30);
        assert_eq!(get(1, 99, 4 * mb), 10);
        assert_eq!(get(2, 21, 4 * mb), 21, "made again");
        assert_eq!(made.get(), 4);
        // Larger than the limit: kept alone, the others dropped.
        assert_eq!(get(4, 40, 11 * mb), 40);
        assert_eq!(get(4, 41, 11 * mb), 40, "kept");
        assert_eq!(get(2, 22, 4 * mb), 22, "dropped for it");
        assert_eq!(made.get(), 6);
        // A small value counts as MIN_ENTRY: ten of them fill the limit.
        for k in 10..30 {
            get(k, 0, 1);
        }
        assert_eq!(kept.entries.lock().unwrap().len(), 10);
    }
}
