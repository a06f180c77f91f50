//! Operations on rows: sorts, concatenation, first/last/top rows, duplicates, counts
//! and merges.

use polars::prelude::DataType;

use super::{DataFrame, Op};
use crate::error::{FrameError, Result};
use crate::expr::{BinOp, Dtype, Scalar};
use crate::spec::{Agg, How, JoinSpec, Method, SortSpec, TopSpec};

/// Rows at most that `head`/`tail` of a sort take from each chunk's own sort.
const TOP_OF_SORT: usize = 100_000;

impl DataFrame {
    /// Rows sorted by `by` (pandas' `sort_values`): `ascending` has one flag per key, or
    /// one for all. Missing values go last, as pandas' default `na_position="last"`.
    pub fn sort_values(&self, by: &[&str], ascending: &[bool]) -> Result<DataFrame> {
        if by.is_empty() {
            return Err(FrameError::Invalid("sort_values needs at least one column".into()));
        }
        for k in by {
            let dt = self.dtype(k)?;
            if !(crate::order::orderable(dt) || dt == &DataType::String) {
                return Err(FrameError::DType(format!("sorting by column {k:?} of dtype {dt} is not supported yet")));
            }
        }
        let descending: Vec<bool> = match ascending {
            [] => vec![false; by.len()],
            [a] => vec![!a; by.len()],
            many if many.len() == by.len() => many.iter().map(|a| !a).collect(),
            many => {
                return Err(FrameError::Invalid(format!(
                    "ascending has {} flags for {} sort columns: give one, or one per column",
                    many.len(),
                    by.len()
                )));
            }
        };
        let spec = SortSpec { by: by.iter().map(|k| k.to_string()).collect(), descending };
        Ok(DataFrame::new(Op::Sort { input: self.clone(), spec }, self.node.schema.clone()))
    }

    /// The rows of `frames` one after the other (pandas' `concat`, `axis=0`): every frame
    /// must have the same columns (in any order: the first frame's order is kept); a
    /// column of several numeric dtypes takes numpy's common one (int32 with int64 is
    /// int64, an integer with a float is float64). The result's chunks are the frames'
    /// chunks: nothing is copied.
    pub fn concat(frames: &[DataFrame]) -> Result<DataFrame> {
        let Some(first) = frames.first() else {
            return Err(FrameError::Invalid("concat needs at least one frame".into()));
        };
        let names = first.columns();
        let mut schema = first.node.schema.clone();
        for f in &frames[1..] {
            let mut theirs = f.columns();
            theirs.sort();
            let mut ours = names.clone();
            ours.sort();
            if theirs != ours {
                return Err(FrameError::Invalid(format!(
                    "concat: a frame has columns {:?} where the first has {:?}; give frames with the same columns",
                    f.columns(),
                    names
                )));
            }
            for (name, dt) in schema.iter_mut() {
                let other = f.dtype(name)?;
                if other == dt {
                    continue;
                }
                let num = |d: &DataType| d.is_primitive_numeric();
                *dt = match (num(dt), num(other)) {
                    (true, true) => crate::expr::arithmetic_dtype(crate::expr::BinOp::Add, dt, false, other, false)
                        .unwrap_or(DataType::Float64),
                    _ => {
                        return Err(FrameError::DType(format!(
                            "concat: column {name:?} is {dt} in one frame and {other} in another: astype one of them"
                        )));
                    }
                };
            }
        }
        let order: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        let mut parts = Vec::with_capacity(frames.len());
        for f in frames {
            let mut part = if f.columns() == names { f.clone() } else { f.select(&order)? };
            let casts: Vec<(&str, Dtype)> = schema
                .iter()
                .filter(|(n, d)| part.dtype(n).is_ok_and(|have| have != d))
                .filter_map(|(n, d)| crate::expr::Dtype::of(d).map(|d| (n.as_str(), d)))
                .collect();
            if !casts.is_empty() {
                part = part.astype(&casts)?;
            }
            parts.push(part);
        }
        Ok(DataFrame::new(Op::Concat(parts), schema))
    }

    fn top(&self, n: usize, tail: bool, order: Option<SortSpec>) -> DataFrame {
        // The first or last few rows of a sort not yet run: each chunk's own, sorted,
        // then theirs (as `nlargest` does), not a sort of every row across the cluster
        // first. (Many rows: the cluster's sort spreads the work.)
        if order.is_none()
            && n <= TOP_OF_SORT
            && !self.node.computed.any()
            && let Op::Sort { input, spec } = &self.node.op
        {
            let spec = TopSpec { n: n as u64, tail, order: Some(spec.clone()), sorted: true };
            return DataFrame::new(Op::Top { input: input.clone(), spec }, self.node.schema.clone());
        }
        // The same through a selection of columns that keeps the sort's keys.
        if order.is_none()
            && !self.node.computed.any()
            && let (Op::Map { spec: select, .. }, Some(sort)) = (&self.node.op, self.select_only_input())
            && let Op::Sort { spec: by, .. } = &sort.node.op
            && by.by.iter().all(|k| self.node.schema.iter().any(|(c, _)| c == k))
        {
            let top = sort.top(n, tail, None);
            if matches!(&top.node.op, Op::Top { spec, .. } if spec.sorted) {
                let op = Op::Map { input: top, spec: select.clone(), values: Vec::new() };
                return DataFrame::new(op, self.node.schema.clone());
            }
        }
        let spec = TopSpec { n: n as u64, tail, order, sorted: false };
        DataFrame::new(Op::Top { input: self.clone(), spec }, self.node.schema.clone())
    }

    /// The first `n` rows.
    pub fn head(&self, n: usize) -> DataFrame {
        self.top(n, false, None)
    }

    /// The last `n` rows.
    pub fn tail(&self, n: usize) -> DataFrame {
        self.top(n, true, None)
    }

    fn order(&self, by: &[&str], descending: bool) -> Result<SortSpec> {
        if by.is_empty() {
            return Err(FrameError::Invalid("give at least one column to order by".into()));
        }
        for k in by {
            let dt = self.dtype(k)?;
            if !(dt.is_primitive_numeric() || dt == &DataType::Boolean) {
                return Err(FrameError::DType(format!("column {k:?} has dtype {dt}, not a number")));
            }
        }
        Ok(SortSpec { by: by.iter().map(|k| k.to_string()).collect(), descending: vec![descending; by.len()] })
    }

    /// The `n` rows with the largest values of `by`, largest first; ties keep the earlier
    /// row (pandas' `nlargest(n, by)`, `keep="first"`).
    pub fn nlargest(&self, n: usize, by: &[&str]) -> Result<DataFrame> {
        Ok(self.top(n, false, Some(self.order(by, true)?)))
    }

    /// The `n` rows with the smallest values of `by`, smallest first.
    pub fn nsmallest(&self, n: usize, by: &[&str]) -> Result<DataFrame> {
        Ok(self.top(n, false, Some(self.order(by, false)?)))
    }

    /// Rows whose `subset` values (every column when empty) appeared in an earlier row
    /// dropped (pandas' `drop_duplicates(keep="first")`). Few distinct rows: combined in
    /// a tree, in the frame's order; many: hash-partitioned, each partition in the
    /// frame's order (as Mars' and Dask's shuffle methods do).
    pub fn drop_duplicates(&self, subset: &[&str]) -> Result<DataFrame> {
        for c in subset {
            self.dtype(c)?;
        }
        let subset = if subset.is_empty() { self.columns() } else { subset.iter().map(|c| c.to_string()).collect() };
        if self.distinct_on(&subset) {
            // Nothing to drop (an `isin` of a group-by's keys would shuffle them again).
            return Ok(self.clone());
        }
        Ok(DataFrame::new(Op::Unique { input: self.clone(), subset, method: Method::Auto }, self.node.schema.clone()))
    }

    /// Whether no two rows can have the same `subset` values, as the frame is built: a
    /// group-by's keys, distinct rows, and the rows of either filtered, sorted or cut
    /// (columns outside `subset` assigned or dropped, but none of it changed).
    fn distinct_on(&self, subset: &[String]) -> bool {
        match &self.node.op {
            Op::GroupBy { spec, .. } => spec.keys.iter().all(|k| subset.contains(k)),
            Op::Unique { subset: s, .. } => s.iter().all(|k| subset.contains(k)),
            Op::Sort { input, .. } | Op::Top { input, .. } => input.distinct_on(subset),
            Op::Map { input, spec, .. } => {
                spec.steps.iter().all(|step| match step {
                    crate::spec::MapStep::Select(_) | crate::spec::MapStep::Filter(_) => true,
                    crate::spec::MapStep::Assign(name, _) => !subset.contains(name),
                    crate::spec::MapStep::Rename(_) => false,
                }) && input.distinct_on(subset)
            }
            _ => false,
        }
    }

    /// `drop_duplicates` combined by a chosen method.
    pub fn drop_duplicates_by(&self, subset: &[&str], method: Method) -> Result<DataFrame> {
        let d = self.drop_duplicates(subset)?;
        let Op::Unique { input, subset, .. } = &d.node.op else { unreachable!("drop_duplicates makes a unique node") };
        Ok(DataFrame::new(Op::Unique { input: input.clone(), subset: subset.clone(), method }, d.node.schema.clone()))
    }

    /// How often each value of `column` occurs, most frequent first (pandas'
    /// `df[column].value_counts()`): columns `column` and `count`; missing values are not
    /// counted. Equal counts come in no set order.
    pub fn value_counts(&self, column: &str) -> Result<DataFrame> {
        let counts = self.group_by(&[column])?.agg_named(&[(column, Agg::Size, "count")])?;
        counts.sort_values(&["count"], &[false])
    }

    /// `self` merged with `right` on equal values of the `on` columns (pandas'
    /// `merge(right, on=.., how=..)`): the keys once, then the left's other columns, then
    /// the right's; a name on both sides becomes `name_x` and `name_y`. Missing keys match
    /// each other, as in pandas. A side of one chunk is sent whole to every chunk of the
    /// other (a broadcast join, in the other side's order); otherwise both sides are
    /// hash-partitioned by key (a shuffle join, rows in no set order).
    pub fn merge(&self, right: &DataFrame, on: &[&str], how: How) -> Result<DataFrame> {
        if on.is_empty() {
            return Err(FrameError::Invalid("merge needs at least one key column in `on`".into()));
        }
        let kind = |d: &DataType| {
            if d.is_integer() || d == &DataType::Boolean {
                "integer"
            } else if d.is_float() {
                "float"
            } else {
                "other"
            }
        };
        let mut schema = Vec::new();
        for k in on {
            let (l, r) = (self.dtype(k)?, right.dtype(k)?);
            if l != r && (kind(l) != kind(r) || kind(l) == "other") {
                return Err(FrameError::DType(format!(
                    "merge key {k:?} is {l} on the left and {r} on the right: astype one side to match"
                )));
            }
            let d = if l == r {
                l.clone()
            } else if l.is_float() {
                DataType::Float64
            } else {
                DataType::Int64
            };
            schema.push((k.to_string(), d));
        }
        let on: Vec<String> = on.iter().map(|k| k.to_string()).collect();
        let both: Vec<String> =
            self.columns().into_iter().filter(|c| !on.contains(c) && right.columns().contains(c)).collect();
        for (side, suffix) in [(self, "_x"), (right, "_y")] {
            for (n, d) in &side.node.schema {
                if on.contains(n) {
                    continue;
                }
                let name = if both.contains(n) { format!("{n}{suffix}") } else { n.clone() };
                schema.push((name, d.clone()));
            }
        }
        // A group-by merged on one of its keys with a side that filters its rows keeps
        // only the groups whose key that side has: its input is cut to those keys first
        // (a semi-join below the aggregation, as databases plan it).
        let (mut l, mut r) = (self.clone(), right.clone());
        if matches!(how, How::Inner | How::Left)
            && l.selective()
            && let Some(cut) = r.groups_cut_by(&l, &on)
        {
            r = cut;
        }
        if matches!(how, How::Inner | How::Right)
            && r.selective()
            && let Some(cut) = l.groups_cut_by(&r, &on)
        {
            l = cut;
        }
        let spec = JoinSpec { on, how, both, keep_left: false };
        Ok(DataFrame::joined(l, r, spec, schema))
    }

    /// The merge of `left` and `right` by `spec`, its columns `schema`; an inner merge
    /// whose right side filters rows is planned as [`DataFrame::reassociated`] says.
    pub(crate) fn joined(
        left: DataFrame,
        right: DataFrame,
        spec: JoinSpec,
        schema: Vec<(String, DataType)>,
    ) -> DataFrame {
        match Self::reassociated(&left, &right, &spec, &schema) {
            Some(moved) => moved,
            None => DataFrame::new(Op::Join { left, right, spec }, schema),
        }
    }

    /// `left` (an inner merge of `a1` and `a2`) merged with a `right` that filters rows,
    /// with `right` merged first with the side that holds its keys, so the rows it drops
    /// are dropped before the other merge: `(a1 ⋈ right) ⋈ a2` when `a1` holds them (and
    /// `a2` filters nothing), and `a1 ⋈ (a2 ⋈ right)` when `a2` (a table, not a merge)
    /// does and `right` is likely the smaller of `right` and `a1`: a filtered dimension
    /// meets its table before the facts do, as a database orders the joins of a star
    /// (TPC-H Q7's nations), but a filtered fact table is not joined to a dimension
    /// before the dimension's own filter has cut it (Q5's orders). The same columns, in
    /// the same order, as the merge written. `None` where that does not hold: other
    /// merges, sides sharing other columns (suffixes would move), keys split between
    /// `a1` and `a2`, a merge already computed.
    fn reassociated(
        left: &DataFrame,
        right: &DataFrame,
        spec: &JoinSpec,
        schema: &[(String, DataType)],
    ) -> Option<DataFrame> {
        let plain = |s: &JoinSpec| s.how == How::Inner && !s.keep_left && s.both.is_empty();
        if !plain(spec) || !right.selective() {
            return None;
        }
        // The merge under the left's column selections (the Python layer's reorderings).
        let merge_below = |d: &DataFrame| {
            let mut d = d.clone();
            while let Some(input) = d.select_only_input() {
                d = input;
            }
            matches!(d.node.op, Op::Join { .. }).then_some(d)
        };
        let inner = merge_below(left)?;
        let Op::Join { left: a1, right: a2, spec: a } = &inner.node.op else { return None };
        // A computed merge is read, not planned again.
        if !plain(a) || left.node.computed.any() || inner.node.computed.any() {
            return None;
        }
        let (c1, c2) = (a1.columns(), a2.columns());
        if right.columns().iter().any(|c| !spec.on.contains(c) && (c1.contains(c) || c2.contains(c))) {
            return None;
        }
        let has = |cols: &[String]| spec.on.iter().all(|k| cols.contains(k));
        let on: Vec<&str> = spec.on.iter().map(String::as_str).collect();
        let a_on: Vec<&str> = a.on.iter().map(String::as_str).collect();
        // Past a side that filters too, the two would trade places without end.
        let moved = if has(&c1) && !has(&c2) && !a2.selective() {
            a1.merge(right, &on, How::Inner).ok()?.merge(a2, &a_on, How::Inner).ok()?
        } else if has(&c2) && !has(&c1) && merge_below(a2).is_none() && Self::smaller(right, a1) {
            a1.merge(&a2.merge(right, &on, How::Inner).ok()?, &a_on, How::Inner).ok()?
        } else {
            return None;
        };
        let names: Vec<&str> = schema.iter().map(|(n, _)| n.as_str()).collect();
        let moved = moved.select(&names).ok()?;
        (moved.node.schema == *schema).then_some(moved)
    }

    /// Whether `a` likely has fewer rows than `b`, by [`DataFrame::rows_guess`]; `false`
    /// when either is unknown.
    pub(super) fn smaller(a: &DataFrame, b: &DataFrame) -> bool {
        matches!((a.rows_guess(), b.rows_guess()), (Some(x), Some(y)) if x < y)
    }

    /// A rough count of the frame's rows, for ordering merges: a Parquet file's from its
    /// footer, a tenth of them kept by an equality with a string and a third by another
    /// filter, an inner merge the larger side's
    /// share of it that the smaller table's filters keep (other merges as many as the
    /// larger side), a group-by a tenth of its input; `None` where unknown (CSV,
    /// tensors).
    fn rows_guess(&self) -> Option<f64> {
        Some(match &self.node.op {
            Op::ReadParquet(src) => src.groups.iter().map(|g| g.1 as f64).sum(),
            Op::Local(parts) => parts.iter().map(|p| p.height() as f64).sum(),
            Op::Map { input, spec, .. } => {
                use crate::expr::Instr;
                // Equality with a string keeps a tenth (one category of a handful or
                // more: a nation, a status), another filter a third.
                let text = |i: &u32| matches!(spec.program.instrs.get(*i as usize), Some(Instr::Lit(Scalar::Str(_))));
                let kept: f64 = spec
                    .steps
                    .iter()
                    .filter_map(|s| match s {
                        crate::spec::MapStep::Filter(at) => Some(match spec.program.instrs.get(*at as usize) {
                            Some(Instr::Binary(BinOp::Eq, a, b)) if text(a) || text(b) => 0.1,
                            _ => 1.0 / 3.0,
                        }),
                        _ => None,
                    })
                    .product();
                input.rows_guess()? * kept
            }
            Op::Join { left, right, spec } => {
                let (l, r) = (left.rows_guess()?, right.rows_guess()?);
                if spec.how != How::Inner {
                    return Some(l.max(r));
                }
                // A merge on a key of the side from the smaller table (a dimension) keeps
                // of the other side the share of that table its filters kept, as a
                // foreign key meets its table's key.
                let (lb, rb) = (left.rows_unfiltered()?, right.rows_unfiltered()?);
                if rb <= lb { l * (r / rb.max(1.0)).min(1.0) } else { r * (l / lb.max(1.0)).min(1.0) }
            }
            Op::GroupBy { input, .. } => input.rows_guess()? / 10.0,
            Op::Sort { input, .. } | Op::Unique { input, .. } | Op::Explode { input, .. } => input.rows_guess()?,
            Op::Concat(parts) => parts.iter().map(|p| p.rows_guess()).sum::<Option<f64>>()?,
            _ => return None,
        })
    }

    /// [`rows_guess`](Self::rows_guess) as if no filter dropped rows: the size of the
    /// table a frame is drawn from.
    fn rows_unfiltered(&self) -> Option<f64> {
        Some(match &self.node.op {
            Op::Map { input, .. } | Op::Sort { input, .. } | Op::Unique { input, .. } => input.rows_unfiltered()?,
            Op::Join { left, right, .. } => left.rows_unfiltered()?.max(right.rows_unfiltered()?),
            _ => self.rows_guess()?,
        })
    }

    /// Whether `target` is this frame or one it is computed from.
    fn reads(&self, target: &DataFrame) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![self.clone()];
        while let Some(d) = todo.pop() {
            if std::sync::Arc::ptr_eq(&d.node, &target.node) {
                return true;
            }
            if !seen.insert(std::sync::Arc::as_ptr(&d.node)) {
                continue;
            }
            todo.extend(d.inputs());
        }
        false
    }

    /// Whether the frame drops rows of what it reads (a filter, or an inner merge of
    /// such a frame): a side worth cutting a group-by by.
    pub(super) fn selective(&self) -> bool {
        match &self.node.op {
            Op::Map { input, spec, .. } => {
                spec.steps.iter().any(|s| matches!(s, crate::spec::MapStep::Filter(_))) || input.selective()
            }
            Op::Sort { input, .. } => input.selective(),
            Op::Join { left, right, spec } => spec.how == How::Inner && (left.selective() || right.selective()),
            _ => false,
        }
    }

    /// This frame with the group-by that makes one of the `on` columns (a key of it,
    /// under maps that keep, rename or copy the column) reading only the rows whose key
    /// `other` has; `None` when no `on` column is such a key. The set is optional: too
    /// large to send to every task, it is dropped (see `Value::optional`).
    fn groups_cut_by(&self, other: &DataFrame, on: &[String]) -> Option<DataFrame> {
        on.iter().find_map(|k| {
            let set = other.select(&[k.as_str()]).ok()?.as_value().ok()?.optional();
            self.groups_cut(k, &set, true)
        })
    }

    /// `self` with the group-by that makes column `key` reading only the rows whose key
    /// is in `set` (see [`DataFrame::groups_cut_by`]). With `guard`, a set computed
    /// from the group-by's own input is refused: it would cost a pass and cut nothing
    /// (a frame merged with its own aggregate); a caller that knows the set's frame
    /// drops rows passes `false`.
    pub(super) fn groups_cut(&self, key: &str, set: &crate::expr::Value, guard: bool) -> Option<DataFrame> {
        use crate::expr::Expr;
        // A computed group-by is read as it is.
        if self.node.computed.any() {
            return None;
        }
        let op = match &self.node.op {
            Op::GroupBy { input, spec, method } if spec.keys.iter().any(|k| k == key) => {
                // A set computed from the group-by's own rows (a frame merged with its
                // own aggregate) would cost a pass and cut nothing.
                let mut base = input;
                while let Op::Map { input, .. } = &base.node.op {
                    base = input;
                }
                if guard && DataFrame::of_value(set).reads(base) {
                    return None;
                }
                let cut = input.filter(Expr::IsIn(Box::new(crate::expr::col(key)), set.clone())).ok()?;
                Op::GroupBy { input: cut, spec: spec.clone(), method: *method }
            }
            Op::Map { input, spec, values } => {
                let cut = input.groups_cut(&spec.source_of(key)?, set, guard)?;
                Op::Map { input: cut, spec: spec.clone(), values: values.clone() }
            }
            _ => return None,
        };
        Some(DataFrame::new(op, self.node.schema.clone()))
    }

    /// Each element of the lists in `column` a row of its own, the other columns
    /// repeated (pandas' `explode`): an empty or missing list gives one row with a
    /// missing value, and a column that holds no lists is left as it is. Rows keep their
    /// order; each chunk is exploded by its own task.
    pub fn explode(&self, column: &str) -> Result<DataFrame> {
        let DataType::List(inner) = self.dtype(column)?.clone() else {
            // A column of single values is its own explosion, as in pandas.
            return Ok(self.clone());
        };
        let schema = self
            .node
            .schema
            .iter()
            .map(|(n, d)| (n.clone(), if n == column { (*inner).clone() } else { d.clone() }))
            .collect();
        Ok(DataFrame::new(Op::Explode { input: self.clone(), column: column.to_string() }, schema))
    }

    /// A left merge that keeps this frame's chunks and row order (the right side goes to
    /// every chunk, whatever its size), so its columns can be set on this frame: a
    /// lookup of each row's keys in `right` (which should hold each key once).
    pub(crate) fn merge_keeping_rows(&self, right: &DataFrame, on: &[&str]) -> Result<DataFrame> {
        let merged = self.merge(right, on, How::Left)?;
        let Op::Join { left, right, spec } = &merged.node.op else {
            return Err(FrameError::Invalid("a merge that is not a join".into()));
        };
        let spec = JoinSpec { keep_left: true, ..spec.clone() };
        Ok(DataFrame::new(Op::Join { left: left.clone(), right: right.clone(), spec }, merged.node.schema.clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::expr::col;
    use crate::frame::DataFrame;

    /// 400 rows of an integer key `k` in 0..10 and a float `f`, in chunks of 100.
    fn keyed(seed: u64) -> DataFrame {
        let k = ares_tensor::random::randint(0, 10, &[400], &[100], seed).unwrap();
        let f = ares_tensor::random::rand(&[400], &[100], seed + 1).unwrap();
        DataFrame::from_tensors(&[("k", &k), ("f", &f)]).unwrap()
    }

    #[test]
    fn a_group_by_is_cut_by_a_filtered_side_where_the_merge_drops_its_other_groups() {
        use super::Op;
        use crate::expr::Instr;
        use crate::spec::How;
        let (df, other) = (keyed(1), keyed(3));
        let g = df.group_by(&["k"]).unwrap().select(&["f"]).unwrap().sum().unwrap();
        let cut = |m: &DataFrame| {
            let Op::Join { right, .. } = &m.node.op else { panic!("a merge") };
            let Op::GroupBy { input, .. } = &right.node.op else { panic!("a group-by on the right") };
            matches!(&input.node.op, Op::Map { spec, .. } if spec.program.instrs.iter().any(|i| matches!(i, Instr::IsIn(..))))
        };
        let filtered = other.filter(col("f").gt(0.5)).unwrap().select(&["k"]).unwrap();
        assert!(cut(&filtered.merge(&g, &["k"], How::Inner).unwrap()));
        assert!(cut(&filtered.merge(&g, &["k"], How::Left).unwrap()));
        // A right merge keeps every group; an unfiltered side cuts nothing; nor does a
        // side computed from the group-by's own input.
        assert!(!cut(&filtered.merge(&g, &["k"], How::Right).unwrap()));
        assert!(!cut(&other.select(&["k"]).unwrap().merge(&g, &["k"], How::Inner).unwrap()));
        let own = df.filter(col("f").gt(0.5)).unwrap().select(&["k"]).unwrap();
        assert!(!cut(&own.merge(&g, &["k"], How::Inner).unwrap()));
    }

    #[test]
    fn a_filtered_dimension_is_merged_with_its_table_before_the_facts() {
        use polars::prelude::df;

        use super::Op;
        use crate::spec::How;
        let local = |df: polars::prelude::DataFrame| DataFrame::from_polars(df, 1000).unwrap();
        let facts = local(
            df!("f" => (0..1000i64).collect::<Vec<_>>(), "d" => (0..1000i64).map(|i| i % 50).collect::<Vec<_>>())
                .unwrap(),
        );
        let dims = local(
            df!("d" => (0..50i64).collect::<Vec<_>>(), "n" => (0..50i64).map(|i| i % 5).collect::<Vec<_>>()).unwrap(),
        );
        let names = local(df!("n" => (0..5i64).collect::<Vec<_>>(), "name" => ["a", "b", "c", "d", "e"]).unwrap());
        let chain = facts.merge(&dims, &["d"], How::Inner).unwrap();
        let picked = names.filter(col("name").eq("b")).unwrap();
        let top_sides = |d: &DataFrame| {
            let mut d = d.clone();
            while let Op::Map { input, .. } = &d.node.op {
                d = input.clone();
            }
            let Op::Join { left, right, spec } = &d.node.op else { panic!("a merge") };
            (left.columns(), right.columns(), spec.on.clone())
        };
        let m = chain.merge(&picked, &["n"], How::Inner).unwrap();
        // facts ⋈ (dims ⋈ names), the columns as written.
        assert_eq!(
            top_sides(&m),
            (vec!["f".into(), "d".into()], vec!["n".into(), "d".into(), "name".into()], vec!["d".into()])
        );
        assert_eq!(m.columns(), ["n", "d", "f", "name"]);
        // Not when the filtered side is the larger (a fact table), nor unfiltered.
        let big = chain.merge(&names, &["n"], How::Inner).unwrap();
        assert_eq!(top_sides(&big).2, vec!["n".to_string()]);
        let cut_facts = facts.filter(col("f").gt(5)).unwrap();
        let m = picked.merge(&dims, &["n"], How::Inner).unwrap().merge(&cut_facts, &["d"], How::Inner).unwrap();
        assert_eq!(top_sides(&m).2, vec!["d".to_string()]);
        // Earlier in a chain, past a side that filters nothing: (dims ⋈ facts) ⋈ names.
        let m = dims.merge(&names, &["n"], How::Inner).unwrap().merge(&cut_facts, &["d"], How::Inner).unwrap();
        assert_eq!(top_sides(&m).2, vec!["n".to_string()]);
        assert_eq!(m.columns(), ["d", "n", "name", "f"]);
        // A filter of both sides' columns gives each side what it implies alone.
        let both =
            big.filter((col("f").lt(10) & col("name").eq("a")) | (col("f").gt(990) & col("name").eq("e"))).unwrap();
        let text = both.explain();
        assert!(text.matches("filter").count() >= 3, "{text}");
    }

    #[test]
    fn an_isin_set_is_cut_to_the_values_of_the_smaller_filtered_frame() {
        use polars::prelude::df;

        use super::Op;
        use crate::expr::Expr;
        let local = |df: polars::prelude::DataFrame| DataFrame::from_polars(df, 100).unwrap();
        let orders =
            local(df!("o" => (0..100i64).collect::<Vec<_>>(), "d" => (0..100i64).collect::<Vec<_>>()).unwrap());
        let items = local(df!("l" => (0..1000i64).map(|i| i / 10).collect::<Vec<_>>()).unwrap());
        let set = || items.drop_duplicates(&["l"]).unwrap().as_value().unwrap();
        let set_input = |f: &DataFrame| {
            let Op::Map { values, .. } = &f.node.op else { panic!("a filter") };
            let Op::Unique { input, .. } = &DataFrame::of_value(values.last().unwrap()).node.op else {
                panic!("a distinct set")
            };
            input.clone()
        };
        let quarter = orders.filter(col("d").lt(30)).unwrap();
        let f = quarter.filter(Expr::IsIn(Box::new(col("o")), set())).unwrap();
        // The set's rows are cut (a filter below its distinct step) by the orders' values.
        assert!(matches!(&set_input(&f).node.op, Op::Map { values, .. } if values.len() == 1));
        // Not for a frame that filters nothing.
        let f = orders.filter(Expr::IsIn(Box::new(col("o")), set())).unwrap();
        assert!(Arc::ptr_eq(&set_input(&f).node, &items.node));
    }

    #[test]
    fn filters_on_a_group_bys_keys_and_after_a_sort_run_before_them() {
        use super::Op;
        let df = keyed(1);
        let g = df.group_by(&["k"]).unwrap().select(&["f"]).unwrap().sum().unwrap();
        let on_keys = g.filter(col("k").gt(3) & col("f").gt(1.0)).unwrap();
        // The key's term below the group-by, the sum's above it.
        let Op::Map { input, .. } = &on_keys.node.op else { panic!("the sum's filter above") };
        let Op::GroupBy { input, .. } = &input.node.op else { panic!("a group-by") };
        assert!(matches!(&input.node.op, Op::Map { .. }));
        let sorted = df.sort_values(&["f"], &[true]).unwrap().filter(col("k").lt(5)).unwrap();
        let Op::Sort { input, .. } = &sorted.node.op else { panic!("the sort on top") };
        assert!(matches!(&input.node.op, Op::Map { .. }));
    }

    #[test]
    fn rows_distinct_as_built_are_not_made_distinct_again() {
        let df = keyed(1);
        let g = df.group_by(&["k"]).unwrap().select(&["f"]).unwrap().sum().unwrap();
        let kept = g.filter(col("f").gt(1.0)).unwrap().select(&["k"]).unwrap();
        let same = |d: &DataFrame, on: &[&str]| Arc::ptr_eq(&d.drop_duplicates(on).unwrap().node, &d.node);
        assert!(same(&g, &["k"]) && same(&g, &["k", "f"]) && same(&kept, &["k"]));
        // A key changed, another column only, or rows that were never distinct: dropped.
        let changed = g.assign(&[("k", col("k") % 2i64)]).unwrap();
        assert!(!same(&changed, &["k"]) && !same(&g, &["f"]) && !same(&df, &["k"]));
        let d = df.drop_duplicates(&["k"]).unwrap();
        assert!(same(&d, &["k"]) && same(&d.sort_values(&["f"], &[true]).unwrap(), &["k", "f"]));
    }
}
