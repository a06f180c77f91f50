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
    for t in &terms {
        // A footer that cannot be read or that disagrees: the groups are read as they are.
        let Ok(bounds) = crate::parquet::group_bounds(path, &t.column) else { continue };
        if bounds.len() != groups {
            continue;
        }
        for (k, b) in keep.iter_mut().zip(bounds) {
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
    let b = match t.dtype {
        Some(d) => bound.cast(&d.to_polars()).ok()?,
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
