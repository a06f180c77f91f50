//! Tiling of group-bys, distinct rows, merges and top rows: combine trees, hash
//! shuffles and broadcasts. A group-by's (or drop_duplicates') method is chosen as Mars'
//! `auto` does, from its first chunk: tiling waits for a probe of it, in the same graph.

use std::sync::Arc;

use ares_tileable::{Cx, Hints, Tiling, Trees};

use super::{Chunks, METHOD, STATE, Tiled, fused, key, probe, take_value, tile};
use crate::frame::DataFrame;
use crate::spec::{GroupSpec, How, JoinSpec, Method, Scan, ScanSpec, TopSpec};
use crate::tasks::{FrameTask, Pairing};

/// Partials combined by one task of a group-by tree.
const COMBINE: usize = 4;
/// A group-by (or a drop_duplicates) shuffles when the first chunk has more groups
/// (distinct rows) than this share of its rows: a tree would then carry nearly every row
/// up to one task.
const SHUFFLE_GROUPS_PER_ROW: f64 = 0.125;

/// A tree whatever the share when the chunks hold at most this many groups in all (at
/// the first chunk's count): one task can take them, and a shuffle's many small parts
/// would cost more.
const TREE_GROUPS: u64 = 1 << 20;
/// Bytes a shuffle partition holds about, at most (its reducer reads it at once).
const PARTITION_BYTES: u64 = 32 << 20;

/// A shuffle when the first chunk's `[rows, groups]` has many groups for its rows and
/// the `chunks` may hold many in all, else a tree.
fn by_share(counts: &[u64], chunks: usize) -> Method {
    let (rows, groups) = (counts.first().copied().unwrap_or(0).max(1), counts.get(1).copied().unwrap_or(0));
    let many = groups.saturating_mul(chunks as u64) > TREE_GROUPS;
    if many && groups as f64 > SHUFFLE_GROUPS_PER_ROW * rows as f64 { Method::Shuffle } else { Method::Tree }
}

/// The partitions of a shuffle of `chunks` chunks holding about `bytes` in all (0:
/// unknown): enough to keep each near [`PARTITION_BYTES`] (a sixteenth of the store,
/// if smaller) and every CPU busy, at most one per chunk. Fewer partitions than chunks
/// mean fewer, larger parts: a shuffle makes chunks × partitions of them.
fn partitions(cx: &Cx<'_>, chunks: usize, bytes: u64) -> u32 {
    let target = cx.store_capacity().map_or(PARTITION_BYTES, |c| (c / 16).clamp(1 << 20, PARTITION_BYTES));
    let by_size = if bytes == 0 { chunks } else { bytes.div_ceil(target) as usize };
    by_size.max(2 * cx.cpus()).min(chunks).max(1) as u32
}

/// Mars' `auto`: the method `probe` (a task on the first chunk of `c`, tiled from
/// `input`) finds, once it ran.
fn choose(
    cx: &mut Cx<'_>,
    df: &DataFrame,
    task: impl FnOnce() -> FrameTask,
    input: &DataFrame,
    c: &Chunks,
    depth: u32,
) -> Tiled<Method> {
    let p = match cx.take_state::<usize>(key(df), STATE) {
        Some(p) => p,
        None => {
            let (task, ins) = fused(cx, df, input, c, 0, task());
            probe(cx, task, ins, depth)
        }
    };
    match take_value::<Vec<u64>>(cx, p)? {
        Some(counts) => Ok(by_share(&counts, c.nodes.len())),
        None => {
            cx.put_state(key(df), STATE, p);
            Err(Tiling::Pending)
        }
    }
}

fn record(cx: &mut Cx<'_>, df: &DataFrame, m: Method) {
    cx.set_memo(key(df), METHOD, Arc::new(m), &[]);
}

/// A group-by: per-chunk partials (with the input's pending map applied), combined in a
/// tree or hash-shuffled to one reducer per partition.
pub(super) fn group_by(
    cx: &mut Cx<'_>,
    df: &DataFrame,
    input: &DataFrame,
    spec: &GroupSpec,
    method: Method,
    depth: u32,
) -> Tiled<Chunks> {
    let mut needed: Vec<String> = spec.keys.clone();
    needed.extend(spec.aggs.iter().map(|(c, _)| c.clone()));
    let c = tile(cx, input, Some(&needed))?;
    // One chunk has nothing to shuffle (and a task of one return value could not split
    // its list: see `RemoteFn::num_returns`); no keys make one group.
    let method = match method {
        _ if c.nodes.len() < 2 || spec.keys.is_empty() => Method::Tree,
        Method::Auto | Method::Broadcast => {
            choose(cx, df, || FrameTask::Probe(spec.clone(), c.pre.clone()), input, &c, depth)?
        }
        m => m,
    };
    record(cx, df, method);
    let part = c.bytes / 2;
    let nodes = match method {
        Method::Shuffle => {
            let parts = partitions(cx, c.nodes.len(), c.total());
            let maps: Vec<usize> = (0..c.nodes.len())
                .map(|k| {
                    let (task, ins) =
                        fused(cx, df, input, &c, k, FrameTask::PartialSplit(spec.clone(), c.pre.clone(), parts));
                    cx.add(task, ins, Hints::new(depth, part).parts(parts))
                })
                .collect();
            (0..parts as usize)
                .map(|p| {
                    let hints = Hints::new(depth, part).level(1).reads(p as u32, parts);
                    cx.add(FrameTask::Finish(spec.clone(), Some(p)), maps.clone(), hints)
                })
                .collect()
        }
        _ => {
            let mut trees = Trees::new(1, COMBINE);
            for k in 0..c.nodes.len() {
                let (task, ins) = fused(cx, df, input, &c, k, FrameTask::Partial(spec.clone(), c.pre.clone()));
                let leaf = cx.add(task, ins, Hints::new(depth, part));
                trees.push(cx.graph_mut(), 0, leaf, depth, || Box::new(FrameTask::Combine(spec.clone())));
            }
            let root = trees.root(cx.graph_mut(), 0, depth, || Box::new(FrameTask::Combine(spec.clone())));
            vec![cx.add(FrameTask::Finish(spec.clone(), None), vec![root], Hints::new(depth, part).level(u32::MAX))]
        }
    };
    Ok(Chunks { sources: None, nodes, pre: None, bytes: part })
}

/// A running aggregation within groups: chunk `i`'s task reads the chunk and the
/// combined partials of chunks `0..i` (a chain of combines, each adding one chunk's
/// partial; for a shift, the last rows of each group so far), so the result keeps the
/// input's rows and chunks.
pub(super) fn scan(cx: &mut Cx<'_>, input: &DataFrame, spec: &ScanSpec, depth: u32) -> Tiled<Chunks> {
    let c = tile(cx, input, None)?;
    let g = &spec.group;
    if let Scan::Lead(_) = spec.kind {
        // Chunk `i` reads the first rows of each group in the chunks after it: this chunk's
        // before the later ones', from the last chunk back.
        let mut suffix: Option<usize> = None;
        let mut nodes = vec![0; c.nodes.len()];
        for (i, &n) in c.nodes.iter().enumerate().rev() {
            let ins: Vec<usize> = std::iter::once(n).chain(suffix).collect();
            nodes[i] = cx.add(FrameTask::Scan(spec.clone(), c.pre.clone()), ins.clone(), Hints::new(depth, c.bytes));
            if i > 0 {
                let hint = Hints::new(depth, c.bytes / 2);
                suffix = Some(cx.add(FrameTask::GroupTail(spec.clone(), c.pre.clone()), ins, hint));
            }
        }
        return Ok(Chunks { sources: None, nodes, pre: None, bytes: c.bytes });
    }
    let mut prefix: Option<usize> = None;
    let mut nodes = Vec::with_capacity(c.nodes.len());
    for (i, &n) in c.nodes.iter().enumerate() {
        let ins = std::iter::once(n).chain(prefix).collect();
        nodes.push(cx.add(FrameTask::Scan(spec.clone(), c.pre.clone()), ins, Hints::new(depth, c.bytes)));
        if i + 1 < c.nodes.len() {
            let hint = Hints::new(depth, c.bytes / 2);
            prefix = Some(if spec.kind.tail().is_some() {
                // The last rows of each group so far: this chunk's after the earlier ones'.
                let ins = std::iter::once(n).chain(prefix).collect();
                cx.add(FrameTask::GroupTail(spec.clone(), c.pre.clone()), ins, hint)
            } else {
                let part = cx.add(FrameTask::Partial(g.clone(), c.pre.clone()), vec![n], hint);
                match prefix {
                    None => part,
                    Some(p) => cx.add(FrameTask::Combine(g.clone()), vec![p, part], hint),
                }
            });
        }
    }
    Ok(Chunks { sources: None, nodes, pre: None, bytes: c.bytes })
}

/// First, last or top rows: each chunk's, then the survivors' in a tree.
pub(super) fn top(
    cx: &mut Cx<'_>,
    input: &DataFrame,
    spec: &TopSpec,
    needed: Option<&[String]>,
    depth: u32,
) -> Tiled<Chunks> {
    let by = spec.order.as_ref().map_or(&[][..], |o| &o.by[..]);
    let (cols, pre) = super::through(input, needed, by);
    let c = tile(cx, input, cols.as_deref())?;
    let mut trees = Trees::new(1, COMBINE);
    for &r in &c.nodes {
        let leaf = cx.add(FrameTask::Top(spec.clone(), c.pre.clone()), vec![r], Hints::new(depth, 0));
        trees.push(cx.graph_mut(), 0, leaf, depth, || Box::new(FrameTask::Top(spec.clone(), None)));
    }
    let root = trees.root(cx.graph_mut(), 0, depth, || Box::new(FrameTask::Top(spec.clone(), None)));
    Ok(Chunks { sources: None, nodes: vec![root], pre, bytes: 0 })
}

/// Distinct rows: in a tree (few), or hash-partitioned (many).
pub(super) fn unique(
    cx: &mut Cx<'_>,
    df: &DataFrame,
    input: &DataFrame,
    subset: &[String],
    method: Method,
    depth: u32,
) -> Tiled<Chunks> {
    let c = tile(cx, input, None)?;
    let method = match method {
        _ if c.nodes.len() < 2 => Method::Tree,
        Method::Auto | Method::Broadcast => {
            choose(cx, df, || FrameTask::UniqueProbe(subset.to_vec(), c.pre.clone()), input, &c, depth)?
        }
        m => m,
    };
    record(cx, df, method);
    let nodes = if method == Method::Shuffle {
        let parts = partitions(cx, c.nodes.len(), c.total());
        let maps: Vec<usize> = (0..c.nodes.len())
            .map(|k| {
                let (task, ins) =
                    fused(cx, df, input, &c, k, FrameTask::KeySplit(subset.to_vec(), parts, true, c.pre.clone()));
                cx.add(task, ins, Hints::new(depth, c.bytes).parts(parts))
            })
            .collect();
        (0..parts as usize)
            .map(|p| {
                let task = FrameTask::Unique(subset.to_vec(), Some(p), None);
                cx.add(task, maps.clone(), Hints::new(depth, c.bytes).level(1).reads(p as u32, parts))
            })
            .collect()
    } else {
        let mut trees = Trees::new(1, COMBINE);
        for &r in &c.nodes {
            let leaf = cx.add(FrameTask::Unique(subset.to_vec(), None, c.pre.clone()), vec![r], Hints::new(depth, 0));
            trees.push(cx.graph_mut(), 0, leaf, depth, || Box::new(FrameTask::Unique(subset.to_vec(), None, None)));
        }
        vec![trees.root(cx.graph_mut(), 0, depth, || Box::new(FrameTask::Unique(subset.to_vec(), None, None)))]
    };
    Ok(Chunks { sources: None, nodes, pre: None, bytes: c.bytes })
}

/// The most bytes a broadcast side may hold (each task of the other side reads it all),
/// and at most this share of the store (each task holds it at once).
const BROADCAST_BYTES: u64 = 256 << 20;
const BROADCAST_STORE_SHARE: u64 = 8;

/// Whether sending all of `small` to every task of `big` costs less than shuffling both:
/// each worker process that runs one of `big`'s tasks indexes `small` once (and keeps
/// the index for its other tasks: `tasks::BUILDS`), where a shuffle writes and reads
/// every row of both sides (about four times a read's cost per byte), from the chunks'
/// byte estimates (upper bounds: filters are not counted). Chunks of unknown size (0:
/// computed earlier) are never broadcast.
fn broadcast_pays(cx: &Cx<'_>, big: &Chunks, small: &Chunks) -> bool {
    if big.bytes == 0 || small.bytes == 0 {
        return false;
    }
    let (b, s) = (big.total(), small.total());
    let most = cx.store_capacity().map_or(BROADCAST_BYTES, |c| (c / BROADCAST_STORE_SHARE).min(BROADCAST_BYTES));
    let builds = cx.cpus().min(big.nodes.len()) as u64;
    s <= most && s.saturating_mul(builds) <= 4 * (b + s)
}

/// A merge: a small side is broadcast to every chunk of the other (when that keeps the
/// other side's unmatched rows right; see [`broadcast_pays`]), else both sides are
/// shuffled by key.
pub(super) fn join(
    cx: &mut Cx<'_>,
    df: &DataFrame,
    left: &DataFrame,
    right: &DataFrame,
    spec: &JoinSpec,
    needed: Option<&[String]>,
    depth: u32,
) -> Tiled<Chunks> {
    // Each side is asked for the keys, the columns its consumer reads, and the
    // overlapping ones (always both, so that their suffixes stay as named).
    let side = |input: &DataFrame| -> Option<Vec<String>> {
        let needed = needed?;
        let mut cols = spec.on.clone();
        for c in input.columns() {
            if !spec.on.contains(&c) && (spec.both.contains(&c) || needed.contains(&c)) {
                cols.push(c);
            }
        }
        Some(cols)
    };
    let (ln, rn) = (side(left), side(right));
    let (l, r) = match (tile(cx, left, ln.as_deref()), tile(cx, right, rn.as_deref())) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(Tiling::Failed(e)), _) | (_, Err(Tiling::Failed(e))) => return Err(Tiling::Failed(e)),
        _ => return Err(Tiling::Pending),
    };
    let bytes = l.bytes + r.bytes;
    let pre = (l.pre.clone(), r.pre.clone());
    let task = |pairing| FrameTask::Join(spec.clone(), 1, pairing, pre.clone());
    // Which side may go to every task of the other: the smaller, when both may.
    let right_may = matches!(spec.how, How::Inner | How::Left)
        && (r.nodes.len() == 1 || spec.keep_left || broadcast_pays(cx, &l, &r));
    let left_may = matches!(spec.how, How::Inner | How::Right)
        && !spec.keep_left
        && (l.nodes.len() == 1 || broadcast_pays(cx, &r, &l));
    let (nodes, method) = if l.nodes.len() == 1 && r.nodes.len() == 1 {
        (vec![cx.add(task(Pairing::One), vec![l.nodes[0], r.nodes[0]], Hints::new(depth, bytes))], Method::Broadcast)
    } else if right_may && !(left_may && l.total() < r.total()) {
        // Every task reads the whole right side (its chunks mapped and joined together).
        let nodes = (0..l.nodes.len())
            .map(|k| {
                let (task, mut ins) = fused(cx, df, left, &l, k, task(Pairing::RightToEach));
                ins.extend(r.nodes.iter().copied());
                cx.add(task, ins, Hints::new(depth, bytes))
            })
            .collect();
        (nodes, Method::Broadcast)
    } else if left_may {
        let nodes = r
            .nodes
            .iter()
            .map(|&ri| {
                let ins = l.nodes.iter().copied().chain(std::iter::once(ri)).collect();
                cx.add(
                    FrameTask::Join(spec.clone(), l.nodes.len(), Pairing::LeftToEach, pre.clone()),
                    ins,
                    Hints::new(depth, bytes),
                )
            })
            .collect();
        (nodes, Method::Broadcast)
    } else {
        let known = l.bytes > 0 && r.bytes > 0;
        let bytes = if known { l.total().saturating_add(r.total()) } else { 0 };
        let parts = partitions(cx, l.nodes.len().max(r.nodes.len()), bytes);
        let mut split = |input: &DataFrame, c: &Chunks| -> Vec<usize> {
            (0..c.nodes.len())
                .map(|k| {
                    let (task, ins) =
                        fused(cx, df, input, c, k, FrameTask::KeySplit(spec.on.clone(), parts, false, c.pre.clone()));
                    cx.add(task, ins, Hints::new(depth, c.bytes).parts(parts))
                })
                .collect()
        };
        let (ls, rs) = (split(left, &l), split(right, &r));
        let nodes = (0..parts as usize)
            .map(|p| {
                let ins = ls.iter().chain(&rs).copied().collect();
                let task = FrameTask::Join(spec.clone(), ls.len(), Pairing::Partition(p), (None, None));
                cx.add(task, ins, Hints::new(depth, bytes).level(1).reads(p as u32, parts))
            })
            .collect();
        (nodes, Method::Shuffle)
    };
    record(cx, df, method);
    Ok(Chunks { sources: None, nodes, pre: None, bytes })
}
