//! The tensor API of a session: executing, fetching and viewing tensors. The session
//! itself (ID, settings, cancel, progress, results) is the engine's
//! ([`ares_tileable::Session`]); this is the face tensors show of it.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ares::ObjectRef;
use ares_tileable::{Cx, Progress, TileResult};
use ndarray::{ArrayD, IxDyn};

use crate::data::{Chunk, Elem};
use crate::kernel::Program;
use crate::tensor::{Result, Tensor, TensorError, grid_indices};
use crate::tile;

/// Where tensors are computed. Chunks computed in one session are not seen by another;
/// a clone is the same session. The same session computes frames
/// (`ares_dataframe::Session` wraps the same [`ares_tileable::Session`]).
#[derive(Clone, Debug, Default)]
pub struct Session(ares_tileable::Session);

impl From<ares_tileable::Session> for Session {
    fn from(s: ares_tileable::Session) -> Self {
        Session(s)
    }
}

impl Session {
    /// A session with the default settings (8 chunk tasks in flight, combine 4 at a time).
    pub fn new() -> Self {
        Self::default()
    }

    /// The engine's session under this one.
    pub fn tileable(&self) -> &ares_tileable::Session {
        &self.0
    }

    /// At most `n` chunk tasks submitted and not finished (memory is bounded by about
    /// `n` × the chunk size).
    pub fn max_in_flight(self, n: usize) -> Self {
        Session(self.0.max_in_flight(n))
    }

    /// Partials combined by one task of a tree reduction (at least 2).
    pub fn combine_size(self, n: usize) -> Self {
        Session(self.0.combine_size(n))
    }

    /// Calls `f` as chunk tasks finish (for a progress bar). The total grows when a
    /// boolean mask's lengths are known and tiling goes on.
    pub fn on_progress(self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Session(self.0.on_progress(f))
    }

    /// This session (same results, same settings) watching `flag`: once it is set, a
    /// computation submits no further chunk task, waits for those in flight, frees its
    /// intermediates and fails with [`TensorError::Cancelled`] (Ctrl-C in Python).
    pub fn cancelled_by(&self, flag: Arc<AtomicBool>) -> Session {
        Session(self.0.cancelled_by(flag))
    }

    /// Computes `t` and keeps its chunks (in the stores of the nodes that made them)
    /// until `t` is dropped. Intermediate chunks are freed as soon as their consumers
    /// have run.
    pub fn execute(&self, t: &Tensor) -> Result<()> {
        let refs = materialize(self, t)?;
        // Wait for every chunk, where it is; a failed chunk task is this call's error.
        for r in refs.iter() {
            ares::ready(r)?;
        }
        Ok(())
    }

    /// Computes `t` and returns the refs of its chunks, row-major (kept on `t` for this
    /// session).
    pub fn chunk_refs(&self, t: &Tensor) -> Result<Vec<ObjectRef<Chunk>>> {
        Ok(materialize(self, t)?.as_ref().clone())
    }

    /// Computes `t` and assembles it into one ndarray of `T`.
    pub fn fetch<T: Elem>(&self, t: &Tensor) -> Result<ArrayD<T>> {
        let refs = materialize(self, t)?;
        let shape: Vec<usize> = t.shape().iter().map(|&d| d as usize).collect();
        let mut out = ArrayD::<T>::from_elem(IxDyn(&shape), T::from_f64(0.0));
        for (g, r) in grid_indices(t.chunks()).iter().zip(refs.iter()) {
            let chunk = ares::get(r)?;
            let a = chunk.to_array::<T>();
            let mut view = out.view_mut();
            for (d, &i) in g.iter().enumerate() {
                let start: u64 = t.chunks()[d][..i].iter().sum();
                let len = t.chunks()[d][i];
                view.slice_axis_inplace(ndarray::Axis(d), ndarray::Slice::from(start as usize..(start + len) as usize));
            }
            let dim = view.raw_dim();
            view.assign(&a.into_shape_with_order(dim).expect("chunk shape matches its slot"));
        }
        Ok(out)
    }

    /// Computes `t` and, when its result is one chunk, returns a zero-copy view of that
    /// chunk as stored (it keeps the object alive while it lives); `None` for a result of
    /// several chunks, which [`Session::fetch`] assembles.
    pub fn view(&self, t: &Tensor) -> Result<Option<ares::View<Chunk>>> {
        let refs = materialize(self, t)?;
        match &refs[..] {
            [one] => Ok(Some(ares::get_view(one)?)),
            _ => Ok(None),
        }
    }

    /// Whether `t` was computed in this session (its chunks are held): a check, never a
    /// computation.
    pub fn is_computed(&self, t: &Tensor) -> bool {
        t.node.result.get(&self.0).is_some()
    }

    /// Computes a 0-d (or single-element) tensor and returns its value as a float64.
    pub fn scalar(&self, t: &Tensor) -> Result<f64> {
        let a = self.fetch::<f64>(t)?;
        Ok(a.iter().next().copied().unwrap_or(f64::NAN))
    }
}

impl Tensor {
    /// Computes the tensor in `session` and keeps its chunks until it is dropped (Mars'
    /// `t.execute(session)`).
    pub fn execute(&self, session: &Session) -> Result<()> {
        session.execute(self)
    }

    /// Computes the tensor in `session` and returns it as an ndarray of `T` (cast if needed).
    pub fn fetch<T: Elem>(&self, session: &Session) -> Result<ArrayD<T>> {
        session.fetch(self)
    }
}

/// Computes every chunk of `t` (cached on the tensor for this session) as one graph;
/// returns their refs, row-major.
pub(crate) fn materialize(session: &Session, t: &Tensor) -> Result<Arc<Vec<ObjectRef<Chunk>>>> {
    if let Some(r) = t.node.result.get(&session.0) {
        return Ok(r);
    }
    let outs = ares_tileable::run::<TensorError>(&session.0, t, |cx| tile::chunk_nodes(cx, t))?;
    let refs: Arc<Vec<ObjectRef<Chunk>>> = Arc::new(outs.iter().map(|o| o.get::<Chunk>()).collect());
    t.node.result.set(&session.0, refs.clone());
    Ok(refs)
}

/// Tiles `t` into `cx`'s graph (for another library tiling an expression that reads a
/// tensor, such as a frame made of tensor columns): its chunk nodes, row-major, each as
/// stored (results `ObjectRef<Chunk>`).
pub fn tile_chunks(cx: &mut Cx<'_>, t: &Tensor) -> TileResult<Vec<usize>, TensorError> {
    tile::chunk_nodes(cx, t)
}

/// The program that makes each chunk of `t` (row-major) from nothing stored, when `t` is
/// built only of creation and element-wise operations (random numbers, constants,
/// ranges, arithmetic, casts, `where`) and was not computed in `cx`'s session; `None`
/// otherwise. Another library evaluates them in its own chunk tasks ([`Program::run`]
/// with no inputs) instead of storing `t`'s chunks first: fusion across libraries, as a
/// data frame made from random tensors is.
pub fn chunk_programs(cx: &mut Cx<'_>, t: &Tensor) -> TileResult<Option<Vec<Program>>, TensorError> {
    tile::standalone_programs(cx, t)
}
