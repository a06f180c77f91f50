//! Chunk kernels of the row-set operations: first/last/top rows, duplicate removal and
//! joins. Pure functions of polars frames, like `kernels`.

use polars::prelude::*;

use crate::kernels::concat;
use crate::spec::{How, JoinSpec, SortSpec, TopSpec};

fn sort_options(spec: &SortSpec) -> SortMultipleOptions {
    SortMultipleOptions::new()
        .with_order_descending_multi(spec.descending.clone())
        .with_nulls_last(true)
        .with_maintain_order(true)
        .with_multithreaded(false)
}

/// The first (or last) `n` rows of `frames` taken in order, after a stable sort when the
/// spec has one (rows missing a sort value left out, as pandas' `nlargest` does).
/// Applied to each chunk and again to the survivors, it gives the whole frame's answer.
pub(crate) fn top(spec: &TopSpec, frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut df = concat(frames)?;
    if let Some(order) = &spec.order {
        df = crate::kernels::drop_missing(&df, &order.by)?;
        df = df.sort(order.by.iter().map(|k| k.as_str()), sort_options(order))?;
    }
    let n = usize::try_from(spec.n).unwrap_or(usize::MAX).min(df.height());
    Ok(if spec.tail { df.tail(Some(n)) } else { df.head(Some(n)) })
}

/// The rows of `frames` (in order) whose `subset` values were not seen in an earlier
/// row: pandas' `drop_duplicates(keep="first")`. Missing values equal each other.
pub(crate) fn unique(subset: &[String], frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let df = concat(frames)?;
    df.unique_stable(Some(subset), UniqueKeepStrategy::First, None)
}

/// The columns of one side, overlapping non-key names suffixed as pandas does.
fn suffixed(df: DataFrame, both: &[String], suffix: &str) -> PolarsResult<DataFrame> {
    let mut df = df;
    for c in both {
        df.rename(c, format!("{c}{suffix}").into())?;
    }
    Ok(df)
}

/// `left` merged with `right` on the spec's keys (pandas' `merge(on=..)`): keys once,
/// then the left's other columns, then the right's. Missing keys match each other, as
/// pandas' do. Matched rows come in the left's order (the right's for a right join).
pub(crate) fn join(spec: &JoinSpec, left: Vec<DataFrame>, right: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let (left, right) = (suffixed(concat(left)?, &spec.both, "_x")?, suffixed(concat(right)?, &spec.both, "_y")?);
    let how = match spec.how {
        How::Inner => JoinType::Inner,
        How::Left => JoinType::Left,
        How::Right => JoinType::Right,
        How::Outer => JoinType::Full,
    };
    let order = match spec.how {
        How::Right => MaintainOrderJoin::RightLeft,
        _ => MaintainOrderJoin::LeftRight,
    };
    let args = JoinArgs {
        nulls_equal: true,
        coalesce: JoinCoalesce::CoalesceColumns,
        maintain_order: order,
        ..JoinArgs::new(how)
    };
    let out = left.join(&right, &spec.on, &spec.on, args, None)?;
    // Keys first, then the left's columns, then the right's (polars puts a right
    // join's keys among the right's columns).
    let mut names: Vec<String> = spec.on.clone();
    for c in left.get_column_names().into_iter().chain(right.get_column_names()) {
        if !names.iter().any(|n| n == c.as_str()) {
            names.push(c.to_string());
        }
    }
    out.select(names.iter().map(|n| n.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_rows_of_the_survivors_are_the_top_rows_of_all() {
        let a = df!("v" => [3i64, 9, 1], "t" => ["a", "b", "c"]).unwrap();
        let b = df!("v" => [9i64, 4], "t" => ["d", "e"]).unwrap();
        let order = Some(SortSpec { by: vec!["v".into()], descending: vec![true] });
        let spec = TopSpec { n: 2, tail: false, order };
        let parts = vec![top(&spec, vec![a.clone()]).unwrap(), top(&spec, vec![b.clone()]).unwrap()];
        let out = top(&spec, parts).unwrap();
        // Ties keep the earlier row first, as pandas' keep="first".
        let t: Vec<&str> = out.column("t").unwrap().str().unwrap().iter().flatten().collect();
        assert_eq!(t, ["b", "d"]);
        let tail = top(&TopSpec { n: 10, tail: true, order: None }, vec![a, b]).unwrap();
        assert_eq!(tail.height(), 5);
    }

    #[test]
    fn joins_suffix_overlaps_and_match_missing_keys() {
        let l = df!("k" => [Some(1i64), None, Some(2)], "v" => [10i64, 20, 30]).unwrap();
        let r = df!("k" => [Some(2i64), None, Some(5)], "v" => [200i64, 300, 500]).unwrap();
        let spec = JoinSpec { on: vec!["k".into()], how: How::Inner, both: vec!["v".into()] };
        let out = join(&spec, vec![l.clone()], vec![r.clone()]).unwrap();
        assert_eq!(out.get_column_names(), ["k", "v_x", "v_y"]);
        let vx: Vec<i64> = out.column("v_x").unwrap().i64().unwrap().into_no_null_iter().collect();
        assert_eq!(vx, [20, 30]);
        let outer = join(&JoinSpec { how: How::Outer, ..spec }, vec![l], vec![r]).unwrap();
        assert_eq!(outer.height(), 4);
    }
}
