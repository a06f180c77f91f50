//! Hash maps whose iteration order depends only on what was inserted, never on a random
//! seed. The pure state machines (ownership, scheduling, the core worker's state) use them
//! wherever they iterate, so the same events always produce the same effects in the same
//! order, which is what the deterministic simulation relies on.

/// The fixed hasher: foldhash with a constant seed (fast; not DoS-resistant, so keys
/// must not be chosen by a peer in a way that could make them collide on purpose:
/// IDs are hashes or counters).
pub type FixedState = foldhash::fast::FixedState;

/// A `hashbrown` map with [`FixedState`].
pub type DetMap<K, V> = hashbrown::HashMap<K, V, FixedState>;

/// A `hashbrown` set with [`FixedState`].
pub type DetSet<K> = hashbrown::HashSet<K, FixedState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_order_is_the_same_in_every_map_built_the_same_way() {
        let build = || {
            let mut m: DetMap<u64, u64> = DetMap::default();
            for i in 0..1000u64 {
                m.insert(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i);
            }
            m.into_iter().collect::<Vec<_>>()
        };
        assert_eq!(build(), build());
    }
}
