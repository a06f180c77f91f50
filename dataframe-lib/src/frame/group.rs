//! Group-bys and whole-frame reductions, `nunique` and `describe`.

use polars::prelude::DataType;

use super::{DataFrame, Op};
use crate::error::{FrameError, Result};
use crate::spec::{Agg, GroupSpec, How, Method, Rank, Scan};

impl DataFrame {
    /// Groups rows by `keys` (pandas' `df.groupby(keys)`).
    pub fn group_by(&self, keys: &[&str]) -> Result<GroupBy> {
        if keys.is_empty() {
            return Err(FrameError::Invalid("groupby needs at least one key column".into()));
        }
        for k in keys {
            self.dtype(k)?;
        }
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let selected = self.columns().into_iter().filter(|c| !keys.contains(c)).collect();
        Ok(GroupBy { frame: self.clone(), keys, selected, method: Method::Auto })
    }

    /// A running `kind` of `column` over the whole frame in row order, appended as
    /// `name` (pandas' `cumsum`, `shift`, `rolling(..).sum()` and the like of a column):
    /// a group scan with one group.
    pub fn scan(&self, column: &str, kind: crate::spec::Scan, name: &str) -> Result<DataFrame> {
        GroupBy { frame: self.clone(), keys: Vec::new(), selected: Vec::new(), method: Method::Tree }
            .scan(column, kind, name)
    }

    /// Each row's rank of `column` over the whole frame, appended as `name` (pandas'
    /// `rank`; see [`GroupBy::rank`]).
    pub fn rank(&self, column: &str, method: Rank, ascending: bool, pct: bool, name: &str) -> Result<DataFrame> {
        GroupBy { frame: self.clone(), keys: Vec::new(), selected: Vec::new(), method: Method::Auto }
            .rank(column, method, ascending, pct, name)
    }

    /// Named whole-frame aggregations (pandas' `agg({column: func})`): a frame of one row.
    pub fn agg(&self, aggs: &[(&str, Agg)]) -> Result<DataFrame> {
        GroupBy { frame: self.clone(), keys: Vec::new(), selected: Vec::new(), method: Method::Tree }.agg(aggs)
    }

    /// `agg` applied to every column (only the numeric ones when `numeric_only`), each
    /// result named as its column: pandas' `df.sum()` and the like, as a frame of one row
    /// rather than a Series indexed by column name.
    pub fn reduce(&self, agg: Agg, numeric_only: bool) -> Result<DataFrame> {
        let cols: Vec<(&str, Agg)> = self
            .node
            .schema
            .iter()
            .filter(|(_, d)| !numeric_only || d.is_primitive_numeric() || d == &DataType::Boolean)
            .map(|(n, _)| (n.as_str(), agg))
            .collect();
        self.agg(&cols)
    }

    /// `sum` of every column.
    pub fn sum(&self) -> Result<DataFrame> {
        self.reduce(Agg::Sum, false)
    }

    /// `mean` of every column.
    pub fn mean(&self) -> Result<DataFrame> {
        self.reduce(Agg::Mean, false)
    }

    /// `count` of every column's present values.
    pub fn count(&self) -> Result<DataFrame> {
        self.reduce(Agg::Count, false)
    }

    /// `min` of every column.
    pub fn min(&self) -> Result<DataFrame> {
        self.reduce(Agg::Min, false)
    }

    /// `max` of every column.
    pub fn max(&self) -> Result<DataFrame> {
        self.reduce(Agg::Max, false)
    }

    /// `std` (ddof=1) of every column.
    pub fn std(&self) -> Result<DataFrame> {
        self.reduce(Agg::Std, false)
    }

    /// `var` (ddof=1) of every column.
    pub fn var(&self) -> Result<DataFrame> {
        self.reduce(Agg::Var, false)
    }

    /// Distinct present values of every column (pandas' `nunique`): a frame of one row.
    /// Each column's count is its own duplicate removal and count; the one-row results
    /// are put side by side through a merge on a constant key.
    pub fn nunique(&self) -> Result<DataFrame> {
        const KEY: &str = "__ares_one";
        let mut out: Option<DataFrame> = None;
        for c in self.columns() {
            let one = self
                .select(&[&c])?
                .drop_duplicates(&[&c])?
                .agg(&[(&c, Agg::Count)])?
                .assign(&[(KEY, crate::expr::lit(0i64))])?;
            out = Some(match out {
                None => one,
                Some(acc) => acc.merge(&one, &[KEY], How::Inner)?,
            });
        }
        match out {
            Some(f) => f.drop(&[KEY]),
            None => Err(FrameError::Invalid("nunique of a frame without columns".into())),
        }
    }

    /// pandas' `describe()`: count, mean, std, min, 25%, 50%, 75% and max of every
    /// numeric column (booleans left out, as pandas does), one row each, named in a
    /// first column `statistic` (pandas' index). Percentiles are exact, interpolated as
    /// numpy's `percentile`; missing values are skipped.
    pub fn describe(&self) -> Result<DataFrame> {
        self.describe_percentiles(&[0.25, 0.5, 0.75])
    }

    /// `describe` with other percentiles (fractions in `[0, 1]`, listed in ascending
    /// order; as in pandas 3, only those given: pandas 2 also added the median).
    pub fn describe_percentiles(&self, percentiles: &[f64]) -> Result<DataFrame> {
        let columns: Vec<String> =
            self.node.schema.iter().filter(|(_, d)| d.is_primitive_numeric()).map(|(n, _)| n.clone()).collect();
        if columns.is_empty() {
            return Err(FrameError::DType(
                "describe summarises numeric columns and the frame has none (strings and booleans are not described)"
                    .into(),
            ));
        }
        if columns.iter().any(|c| c == "statistic") {
            return Err(FrameError::Invalid(
                "describe names its rows in a first column \"statistic\", and the frame has a column of that name: \
                 rename it first"
                    .into(),
            ));
        }
        if let Some(q) = percentiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
            return Err(FrameError::Invalid(format!("percentiles must lie between 0 and 1, got {q}")));
        }
        let mut qs = percentiles.to_vec();
        qs.sort_by(f64::total_cmp);
        if qs.windows(2).any(|w| w[0] == w[1]) {
            return Err(FrameError::Invalid("percentiles cannot contain duplicates".into()));
        }
        let mut schema = vec![("statistic".to_string(), DataType::String)];
        schema.extend(columns.iter().map(|c| (c.clone(), DataType::Float64)));
        Ok(DataFrame::new(Op::Describe { input: self.clone(), columns, percentiles: qs }, schema))
    }
}

/// A frame grouped by key columns, and the columns to aggregate.
#[derive(Clone, Debug)]
pub struct GroupBy {
    frame: DataFrame,
    keys: Vec<String>,
    selected: Vec<String>,
    method: Method,
}

impl GroupBy {
    /// Aggregates only `columns` (pandas' `df.groupby(k)[[c1, c2]]`).
    pub fn select(mut self, columns: &[&str]) -> Result<GroupBy> {
        for c in columns {
            self.frame.dtype(c)?;
        }
        self.selected = columns.iter().map(|c| c.to_string()).collect();
        Ok(self)
    }

    /// Combines partials in a tree or by a shuffle (default: chosen from the first
    /// chunk's number of groups).
    pub fn method(mut self, m: Method) -> GroupBy {
        self.method = m;
        self
    }

    /// Each selected column aggregated by `agg`, named as the column.
    pub fn aggregate(&self, agg: Agg) -> Result<DataFrame> {
        let aggs: Vec<(String, Agg)> = self.selected.iter().map(|c| (c.clone(), agg)).collect();
        self.agg(&aggs.iter().map(|(c, a)| (c.as_str(), *a)).collect::<Vec<_>>())
    }

    /// `sum` of each selected column.
    pub fn sum(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Sum)
    }

    /// `mean` of each selected column.
    pub fn mean(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Mean)
    }

    /// `count` of each selected column's non-missing values.
    pub fn count(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Count)
    }

    /// `min` of each selected column.
    pub fn min(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Min)
    }

    /// `max` of each selected column.
    pub fn max(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Max)
    }

    /// `std` (ddof=1) of each selected column.
    pub fn std(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Std)
    }

    /// `var` (ddof=1) of each selected column.
    pub fn var(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Var)
    }

    /// `first` present value of each selected column.
    pub fn first(&self) -> Result<DataFrame> {
        self.aggregate(Agg::First)
    }

    /// `last` present value of each selected column.
    pub fn last(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Last)
    }

    /// Rows per group, in a column named `size` (pandas' `groupby(..).size()`).
    pub fn size(&self) -> Result<DataFrame> {
        self.agg_named(&[(&self.keys[0], Agg::Size, "size")])
    }

    /// Distinct present values of each selected column per group (pandas'
    /// `groupby(..).nunique()`), named as the column.
    pub fn nunique(&self) -> Result<DataFrame> {
        let named: Vec<(&str, &str)> = self.selected.iter().map(|c| (c.as_str(), c.as_str())).collect();
        self.nunique_named(&named)
    }

    /// `nunique` of `(column, output name)` pairs: per column, the rows without
    /// duplicates of (keys, column) counted per group; several columns' results merged on
    /// the keys, and sorted by them as every group-by result is.
    pub fn nunique_named(&self, columns: &[(&str, &str)]) -> Result<DataFrame> {
        if columns.is_empty() {
            return Err(FrameError::Invalid("nunique: no column to count".into()));
        }
        let keys: Vec<&str> = self.keys.iter().map(|k| k.as_str()).collect();
        let mut out: Option<DataFrame> = None;
        for (c, name) in columns {
            self.frame.dtype(c)?;
            if keys.contains(name) {
                return Err(FrameError::Invalid(format!("two output columns would be named {name:?}")));
            }
            let mut schema: Vec<(String, DataType)> = Vec::with_capacity(keys.len() + 1);
            for k in &keys {
                schema.push((k.to_string(), self.frame.dtype(k)?.clone()));
            }
            schema.push((name.to_string(), DataType::Int64));
            let spec = GroupSpec {
                keys: self.keys.clone(),
                aggs: vec![(c.to_string(), Agg::NUnique)],
                names: vec![name.to_string()],
            };
            let one = DataFrame::new(Op::GroupBy { input: self.frame.clone(), spec, method: self.method }, schema);
            out = Some(match out {
                None => one,
                Some(acc) => acc.merge(&one, &keys, How::Inner)?,
            });
        }
        let out = out.expect("at least one column");
        if columns.len() > 1 { out.sort_values(&keys, &[true]) } else { Ok(out) }
    }

    /// Named aggregations (pandas' `agg({column: func})`): one output column per pair,
    /// named as the column when it is aggregated once, else `column_func`.
    pub fn agg(&self, aggs: &[(&str, Agg)]) -> Result<DataFrame> {
        let named: Vec<(&str, Agg, String)> = aggs
            .iter()
            .map(|(c, a)| {
                let once = aggs.iter().filter(|(x, _)| x == c).count() == 1;
                (*c, *a, if once { c.to_string() } else { format!("{c}_{}", a.name()) })
            })
            .collect();
        self.agg_named(&named.iter().map(|(c, a, n)| (*c, *a, n.as_str())).collect::<Vec<_>>())
    }

    /// Aggregations with the output column's name (pandas' named aggregation,
    /// `agg(out=(column, func))`).
    /// A running `kind` of `column` within the groups, in row order, appended to the frame
    /// as `name` (pandas' `groupby(keys)[column].cumsum()` and the like, aligned with the
    /// frame's rows): the frame keeps its rows and chunks. Each chunk's result starts
    /// from the combined partials of the chunks before it. Rows with a missing key get
    /// a missing result (pandas' `dropna=True`); a missing value gets a missing result
    /// and leaves the running value as it was.
    pub fn scan(&self, column: &str, kind: crate::spec::Scan, name: &str) -> Result<DataFrame> {
        use crate::spec::{Scan, ScanSpec};
        let dt = self.frame.dtype(column)?.clone();
        let duration = crate::temporal::is_duration(&dt);
        // Times run by their physical values: extremes of dates and times, sums of
        // durations, as pandas' cummin/cummax/cumsum do.
        let number = dt.is_primitive_numeric()
            || (dt == DataType::Boolean && kind == Scan::Sum)
            || (duration && kind == Scan::Sum)
            || ((crate::expr::is_temporal(&dt) || duration) && matches!(kind, Scan::Min | Scan::Max));
        if matches!(kind, Scan::Shift(0) | Scan::Lead(0)) {
            return Err(FrameError::Invalid("a shift of 0 rows is the column itself: select it".into()));
        }
        if let Scan::Rolling(window, least, _) = kind
            && (window == 0 || least > window)
        {
            return Err(FrameError::Invalid(format!(
                "rolling: the window must be at least 1 row and min_periods at most the window (got {window} and \
                 {least})"
            )));
        }
        if !matches!(kind, Scan::Count | Scan::Shift(_) | Scan::Lead(_)) && !number {
            return Err(FrameError::DType(format!(
                "{kind:?} within groups: column {column:?} has dtype {dt}; it needs numbers"
            )));
        }
        if self.keys.iter().any(|k| k == name) {
            return Err(FrameError::Invalid(format!("a group scan cannot be named like its key {name:?}")));
        }
        let out = match kind {
            Scan::Count => DataType::Int64,
            Scan::Sum if dt.is_float() => DataType::Float64,
            Scan::Sum if duration => dt,
            Scan::Sum => DataType::Int64,
            Scan::Min | Scan::Max | Scan::Shift(_) | Scan::Lead(_) => dt,
            Scan::Rolling(..) => DataType::Float64,
        };
        let mut schema: Vec<(String, DataType)> =
            self.frame.node.schema.iter().filter(|(n, _)| n != name).cloned().collect();
        schema.push((name.to_string(), out));
        let group = GroupSpec {
            keys: self.keys.clone(),
            aggs: vec![(column.to_string(), kind.agg())],
            names: vec![name.to_string()],
        };
        let spec = ScanSpec { group, kind, name: name.to_string() };
        Ok(DataFrame::new(Op::GroupScan { input: self.frame.clone(), spec }, schema))
    }

    /// Each row's rank of `column` within its group, appended to the frame as `name`
    /// (pandas' `groupby(keys)[column].rank(method, ascending, pct)`; no keys: over the
    /// whole column), float64, missing for a missing value or key. The frame keeps its
    /// rows and chunks. The distinct (keys, value) pairs are counted and sorted, running
    /// counts give each pair its ranks, and every chunk looks its rows' pairs up (a left
    /// merge that sends the pairs to every chunk).
    pub fn rank(&self, column: &str, method: Rank, ascending: bool, pct: bool, name: &str) -> Result<DataFrame> {
        use crate::expr::{Expr, col, lit};
        let dt = self.frame.dtype(column)?.clone();
        let orderable = dt.is_primitive_numeric()
            || dt == DataType::Boolean
            || dt == DataType::String
            || crate::expr::is_temporal(&dt)
            || crate::temporal::is_duration(&dt);
        if !orderable {
            return Err(FrameError::DType(format!("rank: column {column:?} has dtype {dt}, which has no order")));
        }
        if self.frame.columns().iter().any(|c| c == name) || self.keys.iter().any(|k| k == name) {
            return Err(FrameError::Invalid(format!("rank: the frame already has a column {name:?}")));
        }
        let (n, cum, dense, within, total) =
            ("__ares_rank_n", "__ares_rank_cum", "__ares_rank_dense", "__ares_rank_within", "__ares_rank_total");
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        let mut pair: Vec<&str> = keys.clone();
        pair.push(column);
        // The distinct pairs (missing keys and values dropped, as a group-by drops them)
        // with their rows, in rank order within each group.
        let counted = GroupBy {
            frame: self.frame.select(&pair)?,
            keys: pair.iter().map(|c| c.to_string()).collect(),
            selected: Vec::new(),
            method: self.method,
        }
        .agg_named(&[(column, Agg::Size, n)])?;
        let mut order = vec![true; keys.len()];
        order.push(ascending);
        let sorted = counted.sort_values(&pair, &order)?;
        let scan = |f: &DataFrame, c: &str, kind: Scan, out: &str| -> Result<DataFrame> {
            if keys.is_empty() { f.scan(c, kind, out) } else { f.group_by(&keys)?.scan(c, kind, out) }
        };
        let mut table = scan(&sorted, n, Scan::Sum, cum)?;
        if method == Rank::Dense {
            table = scan(&table, n, Scan::Count, dense)?;
        }
        let (nf, cf) = (col(n).cast(crate::expr::Dtype::Float64), col(cum).cast(crate::expr::Dtype::Float64));
        let rank: Expr = match method {
            Rank::Average => cf.clone() - (nf - lit(1.0)) / lit(2.0),
            Rank::Min | Rank::First => cf.clone() - nf + lit(1.0),
            Rank::Max => cf.clone(),
            Rank::Dense => col(dense).cast(crate::expr::Dtype::Float64) + lit(1.0),
        };
        let mut table = table.assign(&[(name, rank)])?;
        let mut looked: Vec<&str> = pair.clone();
        looked.push(name);
        if pct {
            // Divided by the group's values (its distinct ones, for dense ranks).
            let of = if method == Rank::Dense { (name, Agg::Max) } else { (n, Agg::Sum) };
            table = if keys.is_empty() {
                let t = table.agg(&[of])?.rename(&[(of.0, total)])?;
                table.assign(&[(total, Expr::Value(t.select(&[total])?.as_value()?))])?
            } else {
                let t = table.group_by(&keys)?.agg_named(&[(of.0, of.1, total)])?;
                table.merge(&t, &keys, How::Inner)?
            };
            looked.push(total);
        }
        let table = table.select(&looked)?;
        let mut left = self.frame.clone();
        let mut value = col(name);
        if method == Rank::First {
            // Ties in row order: each row's place among its pair's rows.
            let pairs = pair.iter().map(|c| c.to_string()).collect();
            left = GroupBy { frame: left, keys: pairs, selected: Vec::new(), method: self.method }.scan(
                column,
                Scan::Count,
                within,
            )?;
            value = value + col(within).cast(crate::expr::Dtype::Float64);
        }
        if pct {
            value = value / col(total).cast(crate::expr::Dtype::Float64);
        }
        let out = left.merge_keeping_rows(&table, &pair)?.assign(&[(name, value)])?;
        let mut keep = self.frame.columns();
        keep.push(name.to_string());
        out.select(&keep.iter().map(String::as_str).collect::<Vec<_>>())
    }

    pub fn agg_named(&self, aggs: &[(&str, Agg, &str)]) -> Result<DataFrame> {
        if aggs.is_empty() {
            return Err(FrameError::Invalid("no aggregation given".into()));
        }
        if aggs.iter().any(|(_, a, _)| *a == Agg::NUnique) {
            return Err(FrameError::Invalid("nunique is its own group-by: use nunique_named".into()));
        }
        let mut schema: Vec<(String, DataType)> = Vec::new();
        for k in &self.keys {
            schema.push((k.clone(), self.frame.dtype(k)?.clone()));
        }
        let mut names = Vec::with_capacity(aggs.len());
        for (c, a, name) in aggs {
            let dt = self.frame.dtype(c)?;
            let number = dt.is_primitive_numeric() || dt == &DataType::Boolean;
            let orderable =
                number || dt == &DataType::String || crate::expr::is_temporal(dt) || crate::temporal::is_duration(dt);
            if (a.numeric() && !number) || (matches!(a, Agg::Min | Agg::Max) && !orderable) {
                return Err(FrameError::DType(format!(
                    "{}: column {c:?} has dtype {dt}; select the numeric columns (or reduce with numeric_only)",
                    a.name()
                )));
            }
            if schema.iter().any(|(n, _)| n == name) {
                return Err(FrameError::Invalid(format!("two output columns would be named {name:?}")));
            }
            let out = match a {
                Agg::Mean | Agg::Std | Agg::Var => DataType::Float64,
                Agg::Count | Agg::Size => DataType::Int64,
                Agg::Sum if dt.is_integer() || dt == &DataType::Boolean => DataType::Int64,
                Agg::Sum => DataType::Float64,
                _ => dt.clone(),
            };
            schema.push((name.to_string(), out));
            names.push(name.to_string());
        }
        let spec = GroupSpec {
            keys: self.keys.clone(),
            aggs: aggs.iter().map(|(c, a, _)| (c.to_string(), *a)).collect(),
            names,
        };
        Ok(DataFrame::new(Op::GroupBy { input: self.frame.clone(), spec, method: self.method }, schema))
    }
}
