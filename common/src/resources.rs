//! Resource quantities (CPUs and custom resources) in fixed point, so that accounting is
//! exact: 1.0 = 10 000 units, as in Ray.

use std::fmt;

/// Fixed-point units per whole resource.
pub const UNITS: u64 = 10_000;

/// A set of named resource amounts, kept sorted by name so that equal shapes compare and
/// hash equal. Zero amounts are not stored.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Debug))]
pub struct ResourceSet {
    entries: Vec<(String, u64)>,
}

impl ResourceSet {
    /// The heap memory the set holds (its entries and their names).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(String, u64)>()
            + self.entries.iter().map(|(n, _)| n.capacity()).sum::<usize>()
    }

    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` to `amount` whole units (fractions allowed, negative or NaN treated as 0).
    pub fn with(mut self, name: &str, amount: f64) -> Self {
        self.set(name, amount);
        self
    }

    /// Sets `name` to `amount` (whole units, fractional allowed).
    pub fn set(&mut self, name: &str, amount: f64) {
        let units = if amount.is_finite() && amount > 0.0 { (amount * UNITS as f64).round() as u64 } else { 0 };
        self.set_units(name, units);
    }

    /// Sets `name` to a raw fixed-point amount.
    pub fn set_units(&mut self, name: &str, units: u64) {
        match self.entries.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) if units == 0 => {
                self.entries.remove(i);
            }
            Ok(i) => self.entries[i].1 = units,
            Err(_) if units == 0 => {}
            Err(i) => self.entries.insert(i, (name.to_string(), units)),
        }
    }

    /// The fixed-point amount of `name` (0 when absent).
    pub fn get_units(&self, name: &str) -> u64 {
        self.entries.binary_search_by(|(n, _)| n.as_str().cmp(name)).map(|i| self.entries[i].1).unwrap_or(0)
    }

    /// Iterates over `(name, units)` pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries.iter().map(|(n, u)| (n.as_str(), *u))
    }

    /// Whether no resource is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether every amount in `self` is at most the one in `other`.
    pub fn is_subset_of(&self, other: &ResourceSet) -> bool {
        self.iter().all(|(n, u)| other.get_units(n) >= u)
    }

    /// The resources of `self` that `other` lacks, with the missing amounts.
    pub fn shortfall(&self, other: &ResourceSet) -> ResourceSet {
        let mut out = ResourceSet::new();
        for (n, u) in self.iter() {
            let have = other.get_units(n);
            if have < u {
                out.set_units(n, u - have);
            }
        }
        out
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &ResourceSet) {
        for (n, u) in other.iter() {
            let cur = self.get_units(n);
            self.set_units(n, cur + u);
        }
    }

    /// Subtracts `other` from `self`, saturating at zero.
    pub fn sub(&mut self, other: &ResourceSet) {
        for (n, u) in other.iter() {
            let cur = self.get_units(n);
            self.set_units(n, cur.saturating_sub(u));
        }
    }
}

impl fmt::Debug for ResourceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ResourceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{")?;
        for (i, (n, u)) in self.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{n}: {}", u as f64 / UNITS as f64)?;
        }
        write!(f, "}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_canonical() {
        let a = ResourceSet::new().with("CPU", 1.0).with("GPU", 0.5);
        let b = ResourceSet::new().with("GPU", 0.5).with("CPU", 1.0).with("X", 0.0);
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "{CPU: 1, GPU: 0.5}");
    }

    #[test]
    fn subset_and_shortfall() {
        let node = ResourceSet::new().with("CPU", 2.0);
        let want = ResourceSet::new().with("CPU", 1.0).with("GPU", 1.0);
        assert!(!want.is_subset_of(&node));
        assert_eq!(want.shortfall(&node), ResourceSet::new().with("GPU", 1.0));
        let mut avail = node.clone();
        avail.sub(&ResourceSet::new().with("CPU", 1.5));
        assert_eq!(avail.get_units("CPU"), 5_000);
        avail.add(&ResourceSet::new().with("CPU", 1.5));
        assert_eq!(avail, node);
    }
}
