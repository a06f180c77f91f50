//! What a chunk task is told to do: the aggregation and sort descriptions sent with it.

/// An aggregation of one column per group (pandas' names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Agg {
    /// `sum` (0 for a group of nulls only, as pandas).
    Sum,
    /// `count`: the non-null values.
    Count,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `mean` (of the non-null values).
    Mean,
}

impl Agg {
    /// pandas' name.
    pub fn name(self) -> &'static str {
        match self {
            Agg::Sum => "sum",
            Agg::Count => "count",
            Agg::Min => "min",
            Agg::Max => "max",
            Agg::Mean => "mean",
        }
    }

    /// The partial results a chunk keeps for it, each combined by the given rule.
    pub(crate) fn partials(self) -> &'static [Agg] {
        match self {
            Agg::Sum => &[Agg::Sum],
            Agg::Count => &[Agg::Count],
            Agg::Min => &[Agg::Min],
            Agg::Max => &[Agg::Max],
            Agg::Mean => &[Agg::Sum, Agg::Count],
        }
    }
}

/// How a group-by combines its chunks' partial results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Choose from the first chunk's number of groups (Mars' `auto`).
    Auto,
    /// Partials combined in a tree into one chunk: few groups.
    Tree,
    /// Partials hash-partitioned by key, one reducer per partition: many groups.
    Shuffle,
}

/// A group-by aggregation.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct GroupSpec {
    /// Key columns.
    pub keys: Vec<String>,
    /// `(column, aggregation)`, in output order.
    pub aggs: Vec<(String, Agg)>,
    /// The output column of each aggregation.
    pub names: Vec<String>,
}

impl GroupSpec {
    /// The partial column of aggregation `i`'s part `p`.
    pub(crate) fn partial_name(i: usize, p: Agg) -> String {
        format!("__ares_{i}_{}", p.name())
    }
}

/// A sort by one or more columns.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SortSpec {
    /// Sort keys, most significant first.
    pub by: Vec<String>,
    /// Descending, per key.
    pub descending: Vec<bool>,
}
