//! Per-chunk steps: selections, renames, filters, new columns, conversions and missing
//! values, fused into one map (see `MapSpec`).

use polars::prelude::DataType;

use super::{DataFrame, DropNa, MAX_FUSED_INSTRS, Op};
use crate::error::{FrameError, Result};
use crate::expr::{Dtype, Expr, Scalar, Value, col, fill_dtype};
use crate::spec::{MapSpec, MapStep};

impl DataFrame {
    /// A new map node: `self`'s map with more steps when `self` is a map node (so a chain
    /// of per-chunk operations runs as one task), else a map of `self`.
    fn map(
        &self,
        add: impl FnOnce(&mut MapSpec, &mut Vec<(String, DataType)>, &mut Vec<Value>) -> Result<()>,
    ) -> Result<DataFrame> {
        let (input, mut spec, mut values) = match &self.node.op {
            Op::Map { input, spec, values } if spec.program.instrs.len() < MAX_FUSED_INSTRS => {
                (input.clone(), spec.clone(), values.clone())
            }
            _ => (self.clone(), MapSpec::default(), Vec::new()),
        };
        let mut schema = self.node.schema.clone();
        add(&mut spec, &mut schema, &mut values)?;
        Ok(DataFrame::new(Op::Map { input, spec, values }, schema))
    }

    /// Only `columns`, in this order (pandas' `df[[c1, c2]]`).
    pub fn select(&self, columns: &[&str]) -> Result<DataFrame> {
        let mut schema = Vec::with_capacity(columns.len());
        for c in columns {
            if schema.iter().any(|(n, _): &(String, DataType)| n == c) {
                return Err(FrameError::Invalid(format!("column {c:?} is selected twice")));
            }
            schema.push((c.to_string(), self.dtype(c)?.clone()));
        }
        self.map(|spec, s, _| {
            spec.steps.push(MapStep::Select(columns.iter().map(|c| c.to_string()).collect()));
            *s = schema;
            Ok(())
        })
    }

    /// Without `columns` (pandas' `drop(columns=..)`).
    pub fn drop(&self, columns: &[&str]) -> Result<DataFrame> {
        for c in columns {
            self.dtype(c)?;
        }
        let keep: Vec<String> = self.columns().into_iter().filter(|c| !columns.contains(&c.as_str())).collect();
        self.select(&keep.iter().map(|c| c.as_str()).collect::<Vec<_>>())
    }

    /// Columns renamed `(from, to)` (pandas' `rename(columns={from: to})`).
    pub fn rename(&self, pairs: &[(&str, &str)]) -> Result<DataFrame> {
        let mut schema = self.node.schema.clone();
        for (from, to) in pairs {
            self.dtype(from)?;
            if from != to && schema.iter().any(|(n, _)| n == to) {
                return Err(FrameError::Invalid(format!(
                    "cannot rename {from:?} to {to:?}: the frame has a column {to:?}"
                )));
            }
            if let Some(e) = schema.iter_mut().find(|(n, _)| n == from) {
                e.0 = to.to_string();
            }
        }
        self.map(|spec, s, _| {
            spec.steps.push(MapStep::Rename(pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()));
            *s = schema;
            Ok(())
        })
    }

    /// The rows where `mask` is true (pandas' `df[mask]`); a missing value counts as false.
    pub fn filter(&self, mask: Expr) -> Result<DataFrame> {
        let dt = mask.dtype(&self.node.schema)?;
        if dt != DataType::Boolean {
            return Err(FrameError::DType(format!("a filter needs a boolean expression, this one is {dt}")));
        }
        match self.sets_cut(&mask) {
            // The other terms' rows, then the `isin` terms over their cut sets.
            Some((rows, sets)) => rows.filter_rows(sets),
            None => self.filter_rows(mask),
        }
    }

    /// [`filter`](Self::filter) without cutting `isin` sets.
    fn filter_rows(&self, mask: Expr) -> Result<DataFrame> {
        if let Some(moved) = self.pushed_below_rows_op(&mask)? {
            return Ok(moved);
        }
        let base = match self.pushed_below_merge(&mask)? {
            // Every term filters a side below the merge, exactly: nothing is left to do
            // above it (and the merge stays one a later merge can be reordered past).
            Some((base, true)) => return Ok(base),
            Some((base, false)) => base,
            None => self.clone(),
        };
        base.map(|spec, _, values| {
            let at = spec.program.push(&mask, values);
            spec.steps.push(MapStep::Filter(at));
            Ok(())
        })
    }

    /// `self`, a sort or a group-by not yet run, with `mask` (or its `&` terms that read
    /// only the group-by's keys) applied to its input instead: a sort of the kept rows
    /// is the kept rows of the sort (it is stable), and a group's key decides alone
    /// whether it is kept, so fewer rows are sorted or aggregated. `None` when nothing
    /// moves.
    fn pushed_below_rows_op(&self, mask: &Expr) -> Result<Option<DataFrame>> {
        if self.node.computed.any() {
            return Ok(None);
        }
        let schema = self.node.schema.clone();
        match &self.node.op {
            Op::Sort { input, spec } => {
                let op = Op::Sort { input: input.filter(mask.clone())?, spec: spec.clone() };
                Ok(Some(DataFrame::new(op, schema)))
            }
            Op::GroupBy { input, spec, method } => {
                let mut terms = Vec::new();
                mask.and_terms(&mut terms);
                let on_keys = |t: &Expr| {
                    let mut cols = Vec::new();
                    t.columns(&mut cols);
                    !cols.is_empty() && cols.iter().all(|c| spec.keys.contains(c))
                };
                let (below, above): (Vec<&Expr>, Vec<&Expr>) = terms.into_iter().partition(|t| on_keys(t));
                let Some(below) = below.into_iter().cloned().reduce(|x, y| x & y) else { return Ok(None) };
                let op = Op::GroupBy { input: input.filter(below)?, spec: spec.clone(), method: *method };
                let moved = DataFrame::new(op, schema);
                match above.into_iter().cloned().reduce(|x, y| x & y) {
                    Some(rest) => moved.filter_rows(rest).map(Some),
                    None => Ok(Some(moved)),
                }
            }
            _ => Ok(None),
        }
    }

    /// For a `mask` with `isin` terms over this frame's columns (`a.isin(other)`, or its
    /// `~`): the rows its other terms keep, and its `isin` terms with each `other` cut to
    /// the values those rows have, when they filter rows and are likely the fewer: only
    /// those can match, and the set sent to every task is then what both have (TPC-H
    /// Q4's late line items, of the quarter's orders), not every value of the larger
    /// side. The cut's own set is optional (see `Value::optional`). `None`: nothing cut.
    fn sets_cut(&self, mask: &Expr) -> Option<(DataFrame, Expr)> {
        use crate::expr::UnOp;
        let mut terms = Vec::new();
        mask.and_terms(&mut terms);
        // `col.isin(set)` or its `~`: whether negated, the column, the set.
        let set_term = |t: &Expr| {
            let (not, inner) = match t {
                Expr::Unary(UnOp::Not, e) => (true, &**e),
                e => (false, e),
            };
            match inner {
                Expr::IsIn(a, set) => match &**a {
                    Expr::Col(c) => Some((not, c.clone(), set.clone())),
                    _ => None,
                },
                _ => None,
            }
        };
        let is_set = |t: &Expr| set_term(t).is_some();
        if !terms.iter().any(|t| is_set(t)) {
            return None;
        }
        // This frame as the mask's other terms leave it: the rows whose values matter.
        let rest = terms.iter().filter(|t| !is_set(t)).map(|t| (*t).clone()).reduce(|x, y| x & y);
        let rows = match rest {
            Some(rest) => self.filter_rows(rest).ok()?,
            None => self.clone(),
        };
        if !rows.selective() {
            return None;
        }
        let cut = |t: &Expr| -> Option<Expr> {
            let (not, c, set) = set_term(t)?;
            let other = DataFrame::of_value(&set);
            // A computed set is read as it is.
            if other.node.computed.any() || !Self::smaller(&rows, &other) {
                return None;
            }
            let b = other.node.schema[0].0.clone();
            let mine = rows.select(&[c.as_str()]).ok()?.as_value().ok()?.optional();
            let keep = Expr::IsIn(Box::new(crate::expr::col(&b)), mine.clone());
            // Below the set's own distinct step, so that only the kept values are made
            // distinct.
            let kept = match &other.node.op {
                Op::Unique { input, subset, method } => {
                    // Below a group-by that makes the column too, when there is one
                    // (TPC-H Q21's suppliers per order, of the orders that matter).
                    let cut = match input.groups_cut(&b, &mine, false) {
                        Some(cut) => cut,
                        None => input.filter(keep).ok()?,
                    };
                    DataFrame::new(
                        Op::Unique { input: cut, subset: subset.clone(), method: *method },
                        other.node.schema.clone(),
                    )
                }
                _ => other.filter(keep).ok()?,
            };
            let e = Expr::IsIn(Box::new(crate::expr::col(&c)), kept.as_value().ok()?);
            Some(if not { !e } else { e })
        };
        let sets: Vec<(&Expr, Option<Expr>)> = terms.iter().filter(|t| is_set(t)).map(|t| (*t, cut(t))).collect();
        if sets.iter().all(|(_, c)| c.is_none()) {
            return None;
        }
        let sets = sets.into_iter().map(|(t, c)| c.unwrap_or_else(|| t.clone())).reduce(|x, y| x & y)?;
        Some((rows, sets))
    }

    /// `self` with the parts of `mask` that read one side of the merge under it applied
    /// to that side first, as a database pushes a filter below a join: the `&` terms of
    /// `mask` that read only the left's columns (or keys) filter the left before an inner
    /// or left merge, the right's the right before an inner or right merge; a term of
    /// both sides gives each what it implies of it alone. With whether every term moved
    /// whole (else the whole mask still runs after the merge, where a pushed term is
    /// true). `None` when nothing moves: `self` is no merge, nor a map over one whose
    /// steps leave the columns the terms read as the merge made them.
    fn pushed_below_merge(&self, mask: &Expr) -> Result<Option<(DataFrame, bool)>> {
        use crate::spec::How;
        let (join, map) = match &self.node.op {
            Op::Join { .. } => (self, None),
            Op::Map { input, spec, values } if matches!(input.node.op, Op::Join { .. }) => {
                (input, Some((spec, values)))
            }
            _ => return Ok(None),
        };
        let Op::Join { left, right, spec: js } = &join.node.op else { return Ok(None) };
        // A computed merge is read, not run again below a filter.
        if join.node.computed.any() || self.node.computed.any() {
            return Ok(None);
        }
        // Columns the map's steps set or rename: a term reading one is not the merge's.
        let mut touched: Vec<&String> = Vec::new();
        for step in map.map_or(&[][..], |(spec, _)| &spec.steps[..]) {
            match step {
                MapStep::Assign(name, _) => touched.push(name),
                MapStep::Rename(pairs) => touched.extend(pairs.iter().flat_map(|(a, b)| [a, b])),
                MapStep::Select(_) | MapStep::Filter(_) => {}
            }
        }
        let (left_cols, right_cols) = (left.columns(), right.columns());
        let (to_left, to_right) = (matches!(js.how, How::Inner | How::Left), matches!(js.how, How::Inner | How::Right));
        let mut terms = Vec::new();
        mask.and_terms(&mut terms);
        let (mut lf, mut rf): (Vec<Expr>, Vec<Expr>) = (Vec::new(), Vec::new());
        let key = |c: &String| js.on.contains(c);
        // Whether a term may move below the merge to the side whose columns `side` holds.
        let movable = |t: &Expr, side: &[String]| {
            let mut cols = Vec::new();
            t.columns(&mut cols);
            // A semi-join (`isin` of a frame) stays where it was written: below a merge it
            // would probe more rows, and a database would plan it as a join of its own.
            !cols.is_empty()
                && !t.has_semi_join()
                && cols.iter().all(|c| !touched.contains(&c) && !js.both.contains(c) && (key(c) || side.contains(c)))
        };
        let mut whole = true;
        for t in terms {
            let mut cols = Vec::new();
            t.columns(&mut cols);
            if cols.is_empty() || t.has_semi_join() || cols.iter().any(|c| touched.contains(&c) || js.both.contains(c))
            {
                whole = false;
                continue;
            }
            if cols.iter().all(key) {
                // Keys: equal on both sides of a matched row; a left (right) merge's keys
                // are the left's (right's).
                if to_left {
                    lf.push(t.clone());
                }
                if to_right {
                    rf.push(t.clone());
                }
            } else if to_left && cols.iter().all(|c| key(c) || left_cols.contains(c)) {
                lf.push(t.clone());
            } else if to_right && cols.iter().all(|c| key(c) || right_cols.contains(c)) {
                rf.push(t.clone());
            } else {
                // A term of both sides (`(l1 & r1) | (l2 & r2)`): each side gets what it
                // implies of that side alone (`l1 | l2`), the term itself staying above.
                whole = false;
                if to_left && let Some(d) = t.implied(&|e| movable(e, &left_cols)) {
                    lf.push(d);
                }
                if to_right && let Some(d) = t.implied(&|e| movable(e, &right_cols)) {
                    rf.push(d);
                }
            }
        }
        if lf.is_empty() && rf.is_empty() {
            return Ok(None);
        }
        let apply = |side: &DataFrame, terms: &[Expr]| -> Result<DataFrame> {
            terms.iter().try_fold(side.clone(), |d, t| d.filter(t.clone()))
        };
        let (l, r) = (apply(left, &lf)?, apply(right, &rf)?);
        let join = DataFrame::joined(l, r, js.clone(), join.node.schema.clone());
        let moved = match map {
            None => join,
            Some((spec, values)) => DataFrame::new(
                Op::Map { input: join, spec: spec.clone(), values: values.clone() },
                self.node.schema.clone(),
            ),
        };
        Ok(Some((moved, whole)))
    }

    /// Columns set to expressions, in order (pandas' `assign(name=expr)`): an existing
    /// column is replaced where it stands, a new one is appended; each expression sees
    /// the columns the ones before it set.
    pub fn assign(&self, columns: &[(&str, Expr)]) -> Result<DataFrame> {
        self.map(|spec, schema, values| {
            for (name, e) in columns {
                let dt = e.dtype(schema)?;
                let at = spec.program.push(e, values);
                spec.steps.push(MapStep::Assign(name.to_string(), at));
                match schema.iter_mut().find(|(n, _)| n == name) {
                    Some(entry) => entry.1 = dt,
                    None => schema.push((name.to_string(), dt)),
                }
            }
            Ok(())
        })
    }

    /// Columns converted to dtypes (pandas' `astype({column: dtype})`).
    pub fn astype(&self, types: &[(&str, Dtype)]) -> Result<DataFrame> {
        let cols: Vec<(&str, Expr)> = types.iter().map(|(c, d)| (*c, col(c).cast(*d))).collect();
        self.assign(&cols)
    }

    /// Missing values replaced by `value` in every column of a matching kind (numbers
    /// for a number, strings for a string, booleans for a boolean): pandas would make
    /// the other columns `object`; they are left as they are here.
    pub fn fillna(&self, value: impl Into<Scalar>) -> Result<DataFrame> {
        self.fillna_in(value, &self.column_names())
    }

    /// [`fillna`](Self::fillna) over `columns` only; the others (index labels, say) are
    /// kept as they are.
    pub fn fillna_in(&self, value: impl Into<Scalar>, columns: &[&str]) -> Result<DataFrame> {
        let v = value.into();
        let mut cols: Vec<(&str, Expr)> = Vec::new();
        for &c in columns {
            if fill_dtype(self.dtype(c)?, &v).is_some() {
                cols.push((c, col(c).fill_na(v.clone())));
            }
        }
        self.assign(&cols)
    }

    /// Missing values replaced per column (pandas' `fillna({column: value})`).
    pub fn fillna_columns(&self, values: &[(&str, Scalar)]) -> Result<DataFrame> {
        let cols: Vec<(&str, Expr)> = values.iter().map(|(c, v)| (*c, col(c).fill_na(v.clone()))).collect();
        self.assign(&cols)
    }

    /// Rows with missing values in `subset` (every column when empty) dropped.
    pub fn dropna(&self, subset: &[&str], how: DropNa) -> Result<DataFrame> {
        let all = self.columns();
        let cols: Vec<&str> =
            if subset.is_empty() { all.iter().map(|c| c.as_str()).collect() } else { subset.to_vec() };
        let mut keep: Option<Expr> = None;
        for c in cols {
            self.dtype(c)?;
            let present = col(c).not_na();
            keep = Some(match (keep, how) {
                (None, _) => present,
                (Some(k), DropNa::Any) => k & present,
                (Some(k), DropNa::All) => k | present,
            });
        }
        match keep {
            Some(k) => self.filter(k),
            None => Ok(self.clone()),
        }
    }

    /// Whether each value is missing (null, or NaN), column by column.
    pub fn isna(&self) -> Result<DataFrame> {
        self.isna_in(&self.column_names())
    }

    /// Whether each value is present.
    pub fn notna(&self) -> Result<DataFrame> {
        self.notna_in(&self.column_names())
    }

    /// [`isna`](Self::isna) of `columns`; the others (index labels, say) are kept as they
    /// are.
    pub fn isna_in(&self, columns: &[&str]) -> Result<DataFrame> {
        self.each_in(columns, Expr::is_na)
    }

    /// [`notna`](Self::notna) of `columns`; the others are kept as they are.
    pub fn notna_in(&self, columns: &[&str]) -> Result<DataFrame> {
        self.each_in(columns, Expr::not_na)
    }

    fn each_in(&self, columns: &[&str], f: impl Fn(Expr) -> Expr) -> Result<DataFrame> {
        let mut cols: Vec<(&str, Expr)> = Vec::with_capacity(columns.len());
        for &c in columns {
            self.dtype(c)?;
            cols.push((c, f(col(c))));
        }
        self.assign(&cols)
    }
}
