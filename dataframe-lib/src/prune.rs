//! Row groups a Parquet read skips: a filter fused into the read (its map's leading
//! filters, before any step sets or renames a column) whose terms compare a column with
//! a constant cannot keep a row of a group whose recorded least and greatest values
//! rule the comparison out. Pure but for reading the file's footer.

use std::cmp::Ordering;

use polars::prelude::*;

use crate::expr::{BinOp, Instr, Program, Scalar};
use crate::spec::{MapSpec, MapStep};

/// `column op constant`, from a filter's terms.
struct Term {
    column: String,
    op: BinOp,
    value: Scalar,
    /// The constant's dtype (`None`: a literal, which takes the column's).
    dtype: Option<crate::expr::Dtype>,
}

/// Which of a file's `groups` row groups may hold a row that `map`'s leading filters
/// keep (all, when the filters have no term to check or the file no statistics).
pub(crate) fn row_groups(path: &str, groups: usize, map: &MapSpec) -> Vec<bool> {
    let mut terms = Vec::new();
    for step in &map.steps {
        match step {
            MapStep::Filter(at) => and_terms(&map.program, *at, &mut terms),
            MapStep::Select(_) => {}
            MapStep::Assign(..) | MapStep::Rename(_) => break,
        }
    }
    let mut keep = vec![true; groups];
    if terms.is_empty() {
        return keep;
    }
    let columns: Vec<&str> = terms.iter().map(|t| t.column.as_str()).collect();
    // A footer that cannot be read, or that disagrees: the groups are read as they are.
    let Ok(bounds) = crate::parquet::group_bounds(path, &columns) else { return keep };
    for (t, b) in terms.iter().zip(bounds) {
        if b.len() != groups {
            continue;
        }
        for (k, b) in keep.iter_mut().zip(b) {
            if let Some((lo, hi)) = b {
                *k &= may_hold(t, &lo, &hi);
            }
        }
    }
    keep
}

/// The `column op constant` terms of the conjunction at `at` (either side's order).
fn and_terms(p: &Program, at: u32, out: &mut Vec<Term>) {
    let ins = &p.instrs;
    let Instr::Binary(op, a, b) = &ins[at as usize] else { return };
    if *op == BinOp::And {
        and_terms(p, *a, out);
        and_terms(p, *b, out);
        return;
    }
    let mirrored = match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        BinOp::Eq => BinOp::Eq,
        _ => return,
    };
    let constant = |i: u32| match &ins[i as usize] {
        Instr::Const(Some(v), d) => Some((v.clone(), Some(*d))),
        Instr::Lit(v) => Some((v.clone(), None)),
        _ => None,
    };
    match (&ins[*a as usize], &ins[*b as usize]) {
        (Instr::Col(c), _) if let Some((value, dtype)) = constant(*b) => {
            out.push(Term { column: c.clone(), op: *op, value, dtype })
        }
        (_, Instr::Col(c)) if let Some((value, dtype)) = constant(*a) => {
            out.push(Term { column: c.clone(), op: mirrored, value, dtype })
        }
        _ => {}
    }
}

/// How a group's bound (one value, in the column's dtype) orders against the term's
/// constant, compared as the constant's dtype (physical numbers for dates and times) or,
/// for a literal, the column's.
fn order(bound: &Series, t: &Term) -> Option<Ordering> {
    // In the constant's dtype only if the bound converts exactly (a float bound cast to
    // an integer constant's dtype, or a time of day to a date's, would round, and the
    // comparison could then rule out a group that holds a kept row): else unknown.
    let b = match t.dtype {
        Some(d) => {
            let b = bound.strict_cast(&d.to_polars()).ok()?;
            let back = b.strict_cast(bound.dtype()).ok()?;
            if !back.equals_missing(bound) {
                return None;
            }
            b
        }
        None => bound.clone(),
    };
    match &t.value {
        Scalar::Str(v) => Some(b.str().ok()?.get(0)?.cmp(v.as_str())),
        Scalar::Int(v) => {
            let p = b.to_physical_repr();
            if p.dtype().is_integer() {
                Some(p.cast(&DataType::Int64).ok()?.i64().ok()?.get(0)?.cmp(v))
            } else {
                p.cast(&DataType::Float64).ok()?.f64().ok()?.get(0)?.partial_cmp(&(*v as f64))
            }
        }
        Scalar::Float(v) => b.to_physical_repr().cast(&DataType::Float64).ok()?.f64().ok()?.get(0)?.partial_cmp(v),
        Scalar::Bool(_) => None,
    }
}

/// Whether a group whose values lie in `[lo, hi]` may hold a row the term keeps.
fn may_hold(t: &Term, lo: &Series, hi: &Series) -> bool {
    let (Some(l), Some(h)) = (order(lo, t), order(hi, t)) else { return true };
    match t.op {
        BinOp::Lt => l == Ordering::Less,
        BinOp::Le => l != Ordering::Greater,
        BinOp::Gt => h == Ordering::Greater,
        BinOp::Ge => h != Ordering::Less,
        BinOp::Eq => l != Ordering::Greater && h != Ordering::Less,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Dtype;

    fn one(v: impl Into<Series>) -> Series {
        v.into()
    }

    fn term(op: BinOp, value: Scalar, dtype: Option<Dtype>) -> Term {
        Term { column: "x".into(), op, value, dtype }
    }

    /// A bound that does not convert exactly to the constant's dtype leaves the group in
    /// (a float group [0.2, 0.7] holds rows above the integer 0; a day's afternoon is
    /// after its date); exact ones decide.
    #[test]
    fn groups_are_ruled_out_only_by_exact_comparisons() {
        let (lo, hi) = (Series::new("x".into(), [0.2f64]), Series::new("x".into(), [0.7f64]));
        assert!(may_hold(&term(BinOp::Gt, Scalar::Int(0), Some(Dtype::Int64)), &lo, &hi));
        assert!(may_hold(&term(BinOp::Gt, Scalar::Int(0), None), &lo, &hi));
        assert!(!may_hold(&term(BinOp::Gt, Scalar::Int(1), None), &lo, &hi));
        assert!(!may_hold(&term(BinOp::Lt, Scalar::Float(0.1), None), &lo, &hi));
        let (lo, hi) = (one(Series::new("x".into(), [3i64])), one(Series::new("x".into(), [9i64])));
        assert!(!may_hold(&term(BinOp::Gt, Scalar::Int(9), Some(Dtype::Int64)), &lo, &hi));
        assert!(may_hold(&term(BinOp::Eq, Scalar::Int(5), Some(Dtype::Int64)), &lo, &hi));
        assert!(!may_hold(&term(BinOp::Eq, Scalar::Int(10), Some(Dtype::Int64)), &lo, &hi));
        // 2020-01-01 12:00 as a bound, the date 2020-01-01 (18262 days) as the constant.
        let noon = 18262i64 * 86_400_000_000_000 + 43_200_000_000_000;
        let t = |v: i64| Series::new("x".into(), [v]).cast(&DataType::Datetime(TimeUnit::Nanoseconds, None)).unwrap();
        assert!(may_hold(
            &term(BinOp::Gt, Scalar::Int(18262), Some(Dtype::Date)),
            &t(noon - 86_400_000_000_000),
            &t(noon)
        ));
        let (a, b) = (Series::new("x".into(), ["apple"]), Series::new("x".into(), ["fig"]));
        assert!(!may_hold(&term(BinOp::Lt, Scalar::Str("apple".into()), None), &a, &b));
        assert!(may_hold(&term(BinOp::Le, Scalar::Str("apple".into()), None), &a, &b));
    }
}
