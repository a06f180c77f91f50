//! The cluster's small key-value store (`ares::kv_put` / `kv_get` / `kv_delete`), kept by
//! the head (or by a node on its own). A pure module with fixed bounds: a peer cannot
//! make it grow past [`MAX_TOTAL_BYTES`], and every refusal says which bound and what to
//! do instead.

use std::collections::BTreeMap;

use ares_common::wire::KvOp;

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value, in bytes: the store is for small metadata, not data (use `put`).
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Bytes of keys and values held at most.
pub const MAX_TOTAL_BYTES: usize = 64 << 20;

/// The store. See the module docs.
#[derive(Debug, Default)]
pub struct KvStore {
    map: BTreeMap<String, Vec<u8>>,
    bytes: usize,
}

impl KvStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Applies `op`: a get answers the value (if any), a put or a delete the value it
    /// replaced or removed (if any). Errors name the bound that refused it.
    pub fn apply(&mut self, op: KvOp) -> Result<Option<Vec<u8>>, String> {
        match op {
            KvOp::Get { key } => Ok(self.map.get(&key).cloned()),
            KvOp::Delete { key } => {
                let old = self.map.remove(&key);
                if let Some(v) = &old {
                    self.bytes -= key.len() + v.len();
                }
                Ok(old)
            }
            KvOp::Put { key, value, overwrite } => {
                if key.is_empty() || key.len() > MAX_KEY_BYTES {
                    return Err(format!("a key must have 1 to {MAX_KEY_BYTES} bytes; this one has {}", key.len()));
                }
                if value.len() > MAX_VALUE_BYTES {
                    return Err(format!(
                        "a value of {} bytes is over the {MAX_VALUE_BYTES}-byte limit of the key-value store; \
                         store large values with ares::put and keep their reference instead",
                        value.len()
                    ));
                }
                let old_len = self.map.get(&key).map(|v| key.len() + v.len());
                if old_len.is_some() && !overwrite {
                    return Err(format!("key {key:?} exists and overwrite was not asked for"));
                }
                let after = self.bytes - old_len.unwrap_or(0) + key.len() + value.len();
                if after > MAX_TOTAL_BYTES {
                    return Err(format!(
                        "the key-value store is full ({} of {MAX_TOTAL_BYTES} bytes); delete keys first",
                        self.bytes
                    ));
                }
                self.bytes = after;
                Ok(self.map.insert(key, value))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &[u8], overwrite: bool) -> KvOp {
        KvOp::Put { key: k.into(), value: v.to_vec(), overwrite }
    }

    #[test]
    fn puts_gets_and_deletes_with_exact_accounting() {
        let mut s = KvStore::new();
        assert_eq!(s.apply(put("a", b"1", false)), Ok(None));
        assert_eq!(s.apply(KvOp::Get { key: "a".into() }), Ok(Some(b"1".to_vec())));
        assert!(s.apply(put("a", b"2", false)).unwrap_err().contains("exists"));
        assert_eq!(s.apply(put("a", b"22", true)), Ok(Some(b"1".to_vec())));
        assert_eq!(s.bytes, 3);
        assert_eq!(s.apply(KvOp::Delete { key: "a".into() }), Ok(Some(b"22".to_vec())));
        assert_eq!((s.bytes, s.len()), (0, 0));
        assert_eq!(s.apply(KvOp::Get { key: "a".into() }), Ok(None));
    }

    #[test]
    fn bounds_refuse_with_the_reason() {
        let mut s = KvStore::new();
        assert!(s.apply(put("", b"x", false)).unwrap_err().contains("1 to 1024"));
        assert!(s.apply(put(&"k".repeat(MAX_KEY_BYTES + 1), b"x", false)).is_err());
        assert!(s.apply(put("big", &vec![0; MAX_VALUE_BYTES + 1], false)).unwrap_err().contains("ares::put"));
        let v = vec![0u8; MAX_VALUE_BYTES];
        let mut n = 0;
        let err = loop {
            match s.apply(put(&format!("k{n}"), &v, false)) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
        };
        assert!(err.contains("full"), "{err}");
        assert!(s.bytes <= MAX_TOTAL_BYTES);
        assert_eq!(n, MAX_TOTAL_BYTES / (MAX_VALUE_BYTES + 2));
    }
}
