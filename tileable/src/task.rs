//! What a chunk graph holds: tasks of any library, and their results with the value type
//! erased, so tensor and frame chunk tasks live in one graph.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

/// A chunk task of some library: what kernel to run with which parameters. The graph
/// submits it once its inputs are submitted.
pub trait Task: Send + 'static {
    /// Submits the task with its inputs' results (in the order they were given to
    /// [`crate::Cx::add`]) and returns its result.
    fn submit(self: Box<Self>, inputs: Vec<Obj>, options: ares::TaskOptions) -> Obj;

    /// What the task does, for errors and progress (`"gemm"`, `"groupby partial"`).
    fn name(&self) -> String;
}

/// One `ObjectRef<T>` with `T` erased.
trait AnyRef: Send + Sync {
    fn wait(&self);
    fn is_ready(&self) -> bool;
    fn any(&self) -> &dyn Any;
}

impl<T: 'static> AnyRef for ares::ObjectRef<T> {
    fn wait(&self) {
        let _ = ares::wait(std::slice::from_ref(self), 1, None);
    }
    fn is_ready(&self) -> bool {
        !ares::wait(std::slice::from_ref(self), 1, Some(std::time::Duration::ZERO)).0.is_empty()
    }
    fn any(&self) -> &dyn Any {
        self
    }
}

/// A chunk task's result: one object, or one per partition (a task with several return
/// values, as a shuffle's map side). Cloning is cheap.
#[derive(Clone)]
pub struct Obj(Inner);

#[derive(Clone)]
enum Inner {
    One(Arc<dyn AnyRef>),
    /// `None` once the graph dropped the part: its readers were all submitted, and
    /// each holds its own reference (see [`Obj::drop_part`]).
    Parts(Arc<[Slot]>),
}

/// One partition of a result in parts.
type Slot = Mutex<Option<Arc<dyn AnyRef>>>;

fn slot(m: &Slot) -> Option<Arc<dyn AnyRef>> {
    m.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

impl Obj {
    /// A result of one object.
    pub fn new<T: 'static>(r: ares::ObjectRef<T>) -> Obj {
        Obj(Inner::One(Arc::new(r)))
    }

    /// A result of one object per partition.
    pub fn parts<T: 'static>(refs: Vec<ares::ObjectRef<T>>) -> Obj {
        Obj(Inner::Parts(refs.into_iter().map(|r| Mutex::new(Some(Arc::new(r) as Arc<dyn AnyRef>))).collect()))
    }

    /// The object, as made by [`Obj::new`] with this `T`. A task reading a result of
    /// another type is a bug in a library's tiling, so this panics naming both.
    pub fn get<T: 'static>(&self) -> ares::ObjectRef<T> {
        match &self.0 {
            Inner::One(r) => downcast(r),
            Inner::Parts(_) => panic!("a partitioned result read as one {}", std::any::type_name::<T>()),
        }
    }

    /// Partition `p`, as made by [`Obj::parts`] with this `T`.
    pub fn part<T: 'static>(&self, p: usize) -> ares::ObjectRef<T> {
        match &self.0 {
            Inner::Parts(v) => match slot(&v[p]) {
                Some(r) => downcast(&r),
                None => panic!("partition {p} read after the graph dropped it (a tiling bug)"),
            },
            Inner::One(_) => panic!("a result of one object read as partition {p}"),
        }
    }

    /// Lets go of partition `p` (its readers are submitted and hold their own
    /// references), so its object is freed as soon as they finish rather than with the
    /// last partition's reader. Shared by every clone.
    pub(crate) fn drop_part(&self, p: usize) {
        if let Inner::Parts(v) = &self.0 {
            v[p].lock().unwrap_or_else(PoisonError::into_inner).take();
        }
    }

    /// Whether it was made by [`Obj::new`] with this `T`.
    pub fn is<T: 'static>(&self) -> bool {
        matches!(&self.0, Inner::One(r) if r.any().is::<ares::ObjectRef<T>>())
    }

    /// Blocks until the task that makes it has finished (successfully or not: a failure
    /// surfaces where the result is read).
    pub fn wait(&self) {
        match &self.0 {
            Inner::One(r) => r.wait(),
            Inner::Parts(v) => v.iter().filter_map(slot).for_each(|r| r.wait()),
        }
    }

    /// Whether the task that makes it has finished, without waiting.
    pub fn is_ready(&self) -> bool {
        match &self.0 {
            Inner::One(r) => r.is_ready(),
            Inner::Parts(v) => v.iter().filter_map(slot).all(|r| r.is_ready()),
        }
    }
}

impl std::fmt::Debug for Obj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Inner::One(_) => write!(f, "Obj"),
            Inner::Parts(v) => write!(f, "Obj({} parts)", v.len()),
        }
    }
}

fn downcast<T: 'static>(r: &Arc<dyn AnyRef>) -> ares::ObjectRef<T> {
    match r.any().downcast_ref::<ares::ObjectRef<T>>() {
        Some(r) => r.clone(),
        None => panic!("a chunk result read as ObjectRef<{}>, which it is not", std::any::type_name::<T>()),
    }
}

/// A result no runtime backs, for the graph's own unit tests.
#[cfg(test)]
struct Fake;

#[cfg(test)]
impl AnyRef for Fake {
    fn wait(&self) {}
    fn is_ready(&self) -> bool {
        true
    }
    fn any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
impl Obj {
    pub(crate) fn fake() -> Obj {
        Obj(Inner::One(Arc::new(Fake)))
    }

    pub(crate) fn fake_parts(n: usize) -> Obj {
        Obj(Inner::Parts((0..n).map(|_| Mutex::new(Some(Arc::new(Fake) as Arc<dyn AnyRef>))).collect()))
    }

    /// Which partitions are still held.
    pub(crate) fn held_parts(&self) -> Vec<usize> {
        match &self.0 {
            Inner::Parts(v) => (0..v.len()).filter(|&p| slot(&v[p]).is_some()).collect(),
            Inner::One(_) => Vec::new(),
        }
    }
}
