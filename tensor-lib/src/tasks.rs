//! The chunk tasks: the `#[ares::remote]` kernels workers run, and [`TensorTask`], the
//! graph's task that submits them. The only module that calls `ares::remote`.

use ares::{InPlace, InPlaceList, ObjectRef};
use ares_tileable::Obj;
use ndarray::{ArrayD, IxDyn};

use crate::data::{Chunk, ChunkRef, DType, numel};
use crate::kernel::{Partial, Program, ReduceOp, sort};

/// How a chunk task reduces its fused result.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ReduceSpec {
    /// The reduction.
    pub op: ReduceOp,
    /// Axes reduced within the chunk; empty means all.
    pub axes: Vec<u32>,
    /// Where the chunk starts in the reduced tensor (positions of argmin/argmax are global).
    pub offset: Vec<u64>,
}

fn run_map(p: Program, inputs: &[ChunkRef<'_>]) -> Chunk {
    ares_tileable::keep_freed_memory();
    p.run(inputs).unwrap_or_else(|e| ares::fail(e.to_string()))
}

fn run_reduce(p: Program, r: ReduceSpec, inputs: &[ChunkRef<'_>]) -> Partial {
    ares_tileable::keep_freed_memory();
    if r.axes.is_empty() {
        return p.run_reduce(r.op, inputs).unwrap_or_else(|e| ares::fail(e.to_string()));
    }
    let chunk = p.run(inputs).unwrap_or_else(|e| ares::fail(e.to_string()));
    let mut part = reduce_axes(&chunk, r.op, &r.axes);
    if let [axis] = r.axes[..] {
        let base = r.offset.get(axis as usize).copied().unwrap_or(0) as i64;
        part.map_idx(|_, i| i + base);
    }
    part
}

/// Reduces `chunk` over `axes`, keeping them as dimensions of 1.
fn reduce_axes(chunk: &Chunk, op: ReduceOp, axes: &[u32]) -> Partial {
    let nd = chunk.shape.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !axes.contains(&(*d as u32))).collect();
    let reduced: Vec<usize> = (0..nd).filter(|d| axes.contains(&(*d as u32))).collect();
    let perm: Vec<usize> = kept.iter().chain(&reduced).copied().collect();
    let shape: Vec<usize> = chunk.shape.iter().map(|&d| d as usize).collect();
    let idx = ArrayD::from_shape_vec(IxDyn(&shape), (0..numel(&chunk.shape)).collect::<Vec<usize>>())
        .expect("shape matches")
        .permuted_axes(IxDyn(&perm));
    let order: Vec<usize> = idx.iter().copied().collect();
    let group: usize = reduced.iter().map(|&d| shape[d]).product();
    let out_shape: Vec<u64> = (0..nd).map(|d| if reduced.contains(&d) { 1 } else { chunk.shape[d] }).collect();
    Partial::of_groups(op, chunk.data.gather(&order), group, out_shape)
}

/// Referenced by [`crate::link_kernels`]: every kernel of this module is registered in
/// the same object file as `map0`.
pub(crate) fn link() {
    std::hint::black_box(map0 as fn(Program) -> Chunk);
}

// Chunk inputs are read in place from the store (`InPlace`): a kernel copies only the
// blocks it works on, not each input whole first.
#[ares::remote]
fn map0(p: Program) -> Chunk {
    run_map(p, &[])
}
#[ares::remote]
fn map1(p: Program, a: InPlace<'_, Chunk>) -> Chunk {
    run_map(p, &[(&*a).into()])
}
#[ares::remote]
fn map2(p: Program, a: InPlace<'_, Chunk>, b: InPlace<'_, Chunk>) -> Chunk {
    run_map(p, &[(&*a).into(), (&*b).into()])
}
#[ares::remote]
fn map3(p: Program, a: InPlace<'_, Chunk>, b: InPlace<'_, Chunk>, c: InPlace<'_, Chunk>) -> Chunk {
    run_map(p, &[(&*a).into(), (&*b).into(), (&*c).into()])
}
#[ares::remote]
fn map4(
    p: Program,
    a: InPlace<'_, Chunk>,
    b: InPlace<'_, Chunk>,
    c: InPlace<'_, Chunk>,
    d: InPlace<'_, Chunk>,
) -> Chunk {
    run_map(p, &[(&*a).into(), (&*b).into(), (&*c).into(), (&*d).into()])
}
#[ares::remote]
fn mapn(p: Program, inputs: InPlaceList<'_, Chunk>) -> Chunk {
    let refs: Vec<ChunkRef<'_>> = inputs.iter().map(|c| ChunkRef::Archived(c)).collect();
    run_map(p, &refs)
}
#[ares::remote]
fn reduce0(p: Program, r: ReduceSpec) -> Partial {
    run_reduce(p, r, &[])
}
#[ares::remote]
fn reduce1(p: Program, r: ReduceSpec, a: InPlace<'_, Chunk>) -> Partial {
    run_reduce(p, r, &[(&*a).into()])
}
#[ares::remote]
fn reduce2(p: Program, r: ReduceSpec, a: InPlace<'_, Chunk>, b: InPlace<'_, Chunk>) -> Partial {
    run_reduce(p, r, &[(&*a).into(), (&*b).into()])
}
#[ares::remote]
fn reducen(p: Program, r: ReduceSpec, inputs: InPlaceList<'_, Chunk>) -> Partial {
    let refs: Vec<ChunkRef<'_>> = inputs.iter().map(|c| ChunkRef::Archived(c)).collect();
    run_reduce(p, r, &refs)
}

/// `Σₖ aₖ · bₖ` of 2-d chunks given as `[acc,] a₀, b₀, a₁, b₁, …` (with an odd count,
/// the first is an accumulator added to the sum), one `flags` per pair (`linalg::TRANS_A`,
/// …). One task sums over several chunks of the shared dimension, so the partial sums
/// between them never go through the store.
#[ares::remote]
fn gemm(operands: InPlaceList<'_, Chunk>, flags: Vec<u8>) -> Chunk {
    ares_tileable::keep_freed_memory();
    let (acc, rest) = match operands.len() % 2 {
        1 => (Some(ChunkRef::Archived(&operands[0])), &operands[1..]),
        _ => (None, &operands[..]),
    };
    assert_eq!(rest.len(), 2 * flags.len(), "gemm takes a pair of chunks per flag");
    let pairs: Vec<_> =
        rest.chunks(2).zip(&flags).map(|(p, &f)| (ChunkRef::Archived(&p[0]), ChunkRef::Archived(&p[1]), f)).collect();
    crate::linalg::gemm(acc, &pairs)
}

/// Combines partials of one output chunk.
#[ares::remote]
fn combine(parts: Vec<Partial>) -> Partial {
    let mut it = parts.into_iter();
    let mut acc = it.next().expect("combine gets at least one partial");
    for p in it {
        acc.combine(&p);
    }
    acc
}

/// Turns a partial into the output chunk, of `shape`.
#[ares::remote]
fn finish(p: Partial, x_dtype: DType, shape: Vec<u64>) -> Chunk {
    let mut c = p.finish(x_dtype);
    c.shape = shape;
    c
}

/// A sample of an unsorted 1-d chunk (a sample sort's first pass), read in place.
#[ares::remote]
fn sort_sample(count: u32, chunk: InPlace<'_, Chunk>) -> Chunk {
    sort::sample(ChunkRef::Archived(&chunk), count as usize)
}

/// An unsorted 1-d chunk cut at `bounds` into one piece per range, read in place; with
/// `offset` (the chunk's first position), the positions' pieces follow the values'.
#[ares::remote]
fn sort_split(bounds: Chunk, descending: bool, offset: Option<i64>, chunk: InPlace<'_, Chunk>) -> Vec<Chunk> {
    ares_tileable::keep_freed_memory();
    let x = ChunkRef::Archived(&chunk);
    if x.shape().len() != 1 || x.shape()[0] as usize != x.len() {
        ares::fail("a sort split of a chunk that is not 1-d");
    }
    sort::split(x, &bounds.data, descending, offset)
}

/// One range's pieces sorted into one chunk: its values, or with `arg` their positions
/// (the pieces' second half with `positions`, else counted from 0: the pieces are then
/// whole chunks in order).
#[ares::remote]
fn sort_merge(dtype: DType, descending: bool, arg: bool, positions: bool, pieces: InPlaceList<'_, Chunk>) -> Chunk {
    ares_tileable::keep_freed_memory();
    let all: Vec<ChunkRef<'_>> = pieces.iter().map(|c| ChunkRef::Archived(c)).collect();
    match (arg, positions) {
        (false, _) => sort::merge(&all, sort::Positions::None, dtype, descending),
        (true, false) => sort::merge(&all, sort::Positions::Count, dtype, descending),
        (true, true) => {
            let (values, positions) = all.split_at(all.len() / 2);
            sort::merge(values, sort::Positions::Pieces(positions), dtype, descending)
        }
    }
}

/// What a tensor chunk task runs. Its result is an `ObjectRef<Chunk>`, except for
/// [`TensorTask::Reduce`] and [`TensorTask::Combine`], whose results are partials.
pub(crate) enum TensorTask {
    Map(Program),
    Reduce(Program, ReduceSpec),
    Combine,
    Finish(DType, Vec<u64>),
    /// `[acc +] Σ aₖ · bₖ`, one flags byte per pair (see [`gemm`]).
    Gemm(Vec<u8>),
    /// A sample of about this many elements of an unsorted 1-d chunk.
    SortSample(u32),
    /// An unsorted chunk cut at the bounds into `ranges` pieces; with `offset` (for an
    /// argsort: the chunk's first position), as many pieces of positions after them.
    SortSplit {
        bounds: Chunk,
        descending: bool,
        ranges: u32,
        offset: Option<i64>,
    },
    /// Range `range` of every split sorted (values, or positions with `arg`); with
    /// `range` None, whole chunks sorted together.
    SortMerge {
        dtype: DType,
        descending: bool,
        arg: bool,
        range: Option<(u32, u32)>,
    },
}

impl ares_tileable::Task for TensorTask {
    fn submit(self: Box<Self>, ins: Vec<Obj>, o: ares::TaskOptions) -> Obj {
        let chunks = || ins.iter().map(|o| o.get::<Chunk>()).collect::<Vec<_>>();
        match *self {
            TensorTask::Map(p) => {
                let c = chunks();
                Obj::new(match &c[..] {
                    [] => ares::remote(map0).options(o).call(p),
                    [a] => ares::remote(map1).options(o).call(p, a),
                    [a, b] => ares::remote(map2).options(o).call(p, a, b),
                    [a, b, x] => ares::remote(map3).options(o).call(p, a, b, x),
                    [a, b, x, y] => ares::remote(map4).options(o).call(p, a, b, x, y),
                    _ => ares::remote(mapn).options(o).call(p, c),
                })
            }
            TensorTask::Reduce(p, r) => {
                let c = chunks();
                Obj::new(match &c[..] {
                    [] => ares::remote(reduce0).options(o).call(p, r),
                    [a] => ares::remote(reduce1).options(o).call(p, r, a),
                    [a, b] => ares::remote(reduce2).options(o).call(p, r, a, b),
                    _ => ares::remote(reducen).options(o).call(p, r, c),
                })
            }
            TensorTask::Combine => {
                let parts: Vec<ObjectRef<Partial>> = ins.iter().map(|o| o.get::<Partial>()).collect();
                Obj::new(ares::remote(combine).options(o).call(parts))
            }
            TensorTask::Finish(dtype, shape) => {
                Obj::new(ares::remote(finish).options(o).call(ins[0].get::<Partial>(), dtype, shape))
            }
            TensorTask::Gemm(flags) => Obj::new(ares::remote(gemm).options(o).call(chunks(), flags)),
            TensorTask::SortSample(count) => {
                Obj::new(ares::remote(sort_sample).options(o).call(count, ins[0].get::<Chunk>()))
            }
            TensorTask::SortSplit { bounds, descending, ranges, offset } => {
                let objects = if offset.is_some() { 2 * ranges } else { ranges };
                let chunk = ins[0].get::<Chunk>();
                Obj::parts(
                    ares::remote(sort_split).options(o).num_returns(objects).call(bounds, descending, offset, chunk),
                )
            }
            TensorTask::SortMerge { dtype, descending, arg, range } => {
                let pieces: Vec<ObjectRef<Chunk>> = match range {
                    None => chunks(),
                    Some((r, ranges)) => {
                        let mut v: Vec<ObjectRef<Chunk>> = ins.iter().map(|i| i.part::<Chunk>(r as usize)).collect();
                        if arg {
                            v.extend(ins.iter().map(|i| i.part::<Chunk>((ranges + r) as usize)));
                        }
                        v
                    }
                };
                let positions = arg && range.is_some();
                Obj::new(ares::remote(sort_merge).options(o).call(dtype, descending, arg, positions, pieces))
            }
        }
    }

    fn name(&self) -> String {
        match self {
            TensorTask::Map(p) => format!("tensor map ({} ops)", p.nodes.len()),
            TensorTask::Reduce(_, r) => format!("tensor {:?} reduction", r.op),
            TensorTask::Combine => "tensor combine".into(),
            TensorTask::Finish(..) => "tensor finish".into(),
            TensorTask::Gemm(flags) => format!("gemm ({} products)", flags.len()),
            TensorTask::SortSample(_) => "sort sample".into(),
            TensorTask::SortSplit { .. } => "sort split".into(),
            TensorTask::SortMerge { .. } => "sort merge".into(),
        }
    }
}
