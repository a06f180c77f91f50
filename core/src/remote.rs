//! `ares::remote(f).call(..)`: typed task submission for functions of 0 to 6 arguments,
//! each given as a value, an `ObjectRef`, or (for a `Vec<T>` parameter) a list of refs.

use std::marker::PhantomData;
use std::sync::Arc;

use ares_common::codec::{Bytes, Value};
use ares_common::{NodeId, ResourceSet};

use crate::capture::{Captured, capture, without_borrowing};
use crate::core_worker::ArgSpec;
use crate::object_ref::{InPlace, InPlaceList, ObjectRef, RefInner};
use crate::state::{Submit, Target};

/// Per-call options: resources held while the task runs, its retry budget and where it
/// should run.
#[derive(Clone, Debug)]
pub struct TaskOptions {
    num_cpus: f64,
    resources: Vec<(String, f64)>,
    max_retries: u32,
    preferred_node: Option<NodeId>,
    spread: bool,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions { num_cpus: 1.0, resources: Vec::new(), max_retries: 3, preferred_node: None, spread: false }
    }
}

impl TaskOptions {
    /// Options with Ray's defaults: 1 CPU, 3 retries on worker death.
    pub fn new() -> Self {
        Self::default()
    }
    /// CPUs held while the task runs (fractions allowed; default 1).
    pub fn num_cpus(mut self, n: f64) -> Self {
        self.num_cpus = n;
        self
    }
    /// A custom resource held while the task runs, such as `("GPU", 1.0)`.
    pub fn resource(mut self, name: &str, amount: f64) -> Self {
        self.resources.push((name.to_string(), amount));
        self
    }
    /// How often the task is re-run if its worker dies (default 3).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }
    /// Run on `node` (Ray's `NodeAffinitySchedulingStrategy`). Hard (`soft == false`): only
    /// there, as a request for a sliver of the node's `node:<id>` resource, so a node
    /// that is not in the cluster makes the task `Infeasible`. Soft: there while it has
    /// room, elsewhere otherwise (the raylet asked first spills the request back to it).
    pub fn node_affinity(mut self, node: NodeId, soft: bool) -> Self {
        if soft {
            self.preferred_node = Some(node);
        } else {
            self.resources.push((node.resource_name(), 1.0 / ares_common::resources::UNITS as f64));
        }
        self
    }
    /// Spread tasks over the nodes with room, least loaded first (Ray's `"SPREAD"`).
    pub fn spread(mut self) -> Self {
        self.spread = true;
        self
    }

    /// Where in the cluster the task asks to run.
    fn strategy(&self) -> ares_common::Strategy {
        match (self.preferred_node, self.spread) {
            (Some(node), _) => ares_common::Strategy::NodeAffinity { node, soft: true },
            (None, true) => ares_common::Strategy::Spread,
            (None, false) => ares_common::Strategy::Default,
        }
    }

    /// The soft node preference, if any.
    pub fn preferred_node(&self) -> Option<NodeId> {
        self.preferred_node
    }

    fn shape(&self) -> ResourceSet {
        let mut s = ResourceSet::new().with("CPU", self.num_cpus);
        for (n, a) in &self.resources {
            s.set(n, *a);
        }
        s
    }
}

/// A function usable with [`remote`]: implemented for every `Fn` of up to 6 arguments.
pub trait RemoteFunc<Args>: Copy + 'static {
    /// The return type.
    type Output: Value;
}

/// An argument made ready for submission. Opaque.
pub struct PreparedArg {
    spec: Result<ArgSpec, String>,
    /// Values that follow `spec` on the wire: the elements of a list read in place
    /// (`InPlaceList<T>`), whose `spec` is their count.
    rest: Vec<ArgSpec>,
    holds: Vec<Arc<RefInner>>,
    captured: Captured,
}

/// What a submission keeps alive until the core worker has counted it: the futures
/// passed as arguments, and the refs and actor handles encoded inside argument values.
#[derive(Default)]
pub(crate) struct Keep {
    refs: Vec<Arc<RefInner>>,
    pub(crate) captured: Captured,
}

impl Keep {
    /// The actors whose handles the arguments carry (the task holds them until done).
    pub(crate) fn actor_ids(&self) -> Vec<ares_common::ActorId> {
        self.captured.actor_ids()
    }

    /// The refs that argument values carry, owned or borrowed (the task keeps them
    /// alive).
    pub(crate) fn carried(&self) -> Vec<ares_common::ObjectId> {
        self.captured.objects.iter().map(|(id, _)| *id).collect()
    }
}

/// Splits prepared arguments into specs, what to keep alive, and the first encoding error
/// (as `(argument index, reason)`).
pub(crate) fn prepare(args: Vec<PreparedArg>) -> (Vec<ArgSpec>, Keep, Option<(usize, String)>) {
    let mut specs = Vec::with_capacity(args.len());
    let mut keep = Keep::default();
    let mut error = None;
    for (i, a) in args.into_iter().enumerate() {
        keep.refs.extend(a.holds);
        keep.captured.extend(a.captured);
        match a.spec {
            Ok(s) => {
                specs.push(s);
                specs.extend(a.rest);
            }
            Err(reason) => {
                error.get_or_insert((i, reason));
            }
        }
    }
    (specs, keep, error)
}

/// Something that can be passed where a task expects an `A`: an `A` itself, an
/// `ObjectRef<A>` (or a reference to one), or for `A = Vec<T>` a `Vec<ObjectRef<T>>`.
pub trait IntoArg<A> {
    /// Encodes the value, or records the futures to resolve before the task runs.
    fn into_arg(self) -> PreparedArg;
}

impl<A: Value> IntoArg<A> for A {
    fn into_arg(self) -> PreparedArg {
        let (encoded, captured) = capture(|| self.encode());
        PreparedArg {
            spec: encoded.map(ArgSpec::Value).map_err(|e| e.to_string()),
            rest: Vec::new(),
            holds: Vec::new(),
            captured,
        }
    }
}

impl<A> IntoArg<A> for ObjectRef<A> {
    fn into_arg(self) -> PreparedArg {
        PreparedArg {
            spec: Ok(ArgSpec::Ref(self.inner.id)),
            rest: Vec::new(),
            holds: vec![self.inner],
            captured: Captured::default(),
        }
    }
}

impl<A> IntoArg<A> for &ObjectRef<A> {
    fn into_arg(self) -> PreparedArg {
        PreparedArg {
            spec: Ok(ArgSpec::Ref(self.inner.id)),
            rest: Vec::new(),
            holds: vec![self.inner.clone()],
            captured: Captured::default(),
        }
    }
}

// A parameter read in place (`InPlace<'_, T>`) is passed as a `T` or a ref to one.
impl<T: Value> IntoArg<InPlace<'_, T>> for T {
    fn into_arg(self) -> PreparedArg {
        IntoArg::<T>::into_arg(self)
    }
}

impl<T: Value> IntoArg<InPlace<'_, T>> for ObjectRef<T> {
    fn into_arg(self) -> PreparedArg {
        IntoArg::<T>::into_arg(self)
    }
}

impl<T: Value> IntoArg<InPlace<'_, T>> for &ObjectRef<T> {
    fn into_arg(self) -> PreparedArg {
        IntoArg::<T>::into_arg(self)
    }
}

// A list read in place (`InPlaceList<'_, T>`) travels as its count, then one value per
// element, each resolved and pinned on its own: nothing is gathered or copied.
impl<T: Value> IntoArg<InPlaceList<'_, T>> for Vec<ObjectRef<T>> {
    fn into_arg(self) -> PreparedArg {
        let count = u32::try_from(self.len()).map_err(|_| format!("a list of {} refs is too long", self.len()));
        PreparedArg {
            spec: count.and_then(|n| n.encode().map(ArgSpec::Value).map_err(|e| e.to_string())),
            rest: self.iter().map(|r| ArgSpec::Ref(r.inner.id)).collect(),
            holds: self.into_iter().map(|r| r.inner).collect(),
            captured: Captured::default(),
        }
    }
}

/// Merges the elements of a list of refs into one encoded `Vec<T>`. Refs and actor
/// handles inside are decoded only to be re-encoded, so they are not counted again.
fn gather<T: Value>(parts: &[&[u8]]) -> Result<Bytes, String>
where
    Vec<T>: Value,
{
    without_borrowing(|| {
        let values: Result<Vec<T>, _> = parts.iter().map(|p| T::decode(p)).collect();
        values.map_err(|e| e.to_string())?.encode().map_err(|e| e.to_string())
    })
}

impl<T: Value> IntoArg<Vec<T>> for Vec<ObjectRef<T>>
where
    Vec<T>: Value,
{
    fn into_arg(self) -> PreparedArg {
        let ids = self.iter().map(|r| r.inner.id).collect();
        PreparedArg {
            spec: Ok(ArgSpec::Gather { ids, combine: gather::<T> }),
            rest: Vec::new(),
            holds: self.into_iter().map(|r| r.inner).collect(),
            captured: Captured::default(),
        }
    }
}

/// A remote function with its options; see [`remote`].
pub struct RemoteFn<F, Args> {
    opts: TaskOptions,
    _f: PhantomData<(F, fn(Args))>,
}

/// Prepares `f` (a function marked `#[ares::remote]`) for remote calls:
/// `ares::remote(add).call(1, 2)` returns an `ObjectRef` owned by this process.
pub fn remote<F, Args>(_f: F) -> RemoteFn<F, Args>
where
    F: RemoteFunc<Args>,
{
    RemoteFn { opts: TaskOptions::default(), _f: PhantomData }
}

impl<F, Args> RemoteFn<F, Args>
where
    F: RemoteFunc<Args>,
{
    /// Sets the options of calls made through this handle.
    pub fn options(mut self, opts: TaskOptions) -> Self {
        self.opts = opts;
        self
    }

    /// Splits the function's `Vec` result into `n` objects, as Ray's `num_returns`: the
    /// call returns `n` refs, each to one element, freed and passed on separately. A
    /// result of another length fails every one of them, naming both lengths.
    ///
    /// ```no_run
    /// #[ares::remote]
    /// fn min_max(v: Vec<i64>) -> Vec<i64> {
    ///     vec![*v.iter().min().unwrap(), *v.iter().max().unwrap()]
    /// }
    /// # fn main() -> anyhow::Result<()> {
    /// # ares::init()?;
    /// let refs = ares::remote(min_max).num_returns(2).call(vec![3, 1, 4]);
    /// assert_eq!((ares::get(&refs[0])?, ares::get(&refs[1])?), (1, 4));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `n` is 0 (a task has at least one return value) or 1: as in Ray, one return
    /// value is the whole `Vec` (the task spec cannot yet say "split into one"), so a
    /// ref to its only element would read a list as an element. Call without
    /// `num_returns` and take the list, or ask for two or more.
    pub fn num_returns(self, n: u32) -> MultiFn<F, Args> {
        assert!(n > 0, "num_returns(0): a task has at least one return value");
        assert!(
            n > 1,
            "num_returns(1) would return the whole Vec as one object, not its only element: call without num_returns"
        );
        MultiFn { inner: self, n }
    }

    fn submit(&self, args: Vec<PreparedArg>) -> ObjectRef<F::Output> {
        let (cw, id) = self.submit_n(args, 1);
        ObjectRef::new(id, cw)
    }

    /// Submits the task for `num_returns` return values; returns the first one's ID.
    fn submit_n(
        &self,
        args: Vec<PreparedArg>,
        num_returns: u32,
    ) -> (Arc<crate::core_worker::CoreWorker>, ares_common::ObjectId) {
        let cw = crate::runtime::current().unwrap_or_else(|e| panic!("ares::remote(..).call(..): {e}"));
        let function = std::any::type_name::<F>();
        let (specs, keep, encode_error) = prepare(args);
        let submit = Submit {
            function,
            shape: self.opts.shape(),
            strategy: self.opts.strategy(),
            max_retries: self.opts.max_retries,
            target: Target::Pool,
            kind: ares_common::wire::TaskKind::Normal,
            keeps: keep.actor_ids(),
            carried: keep.carried(),
            num_returns,
        };
        let id = match encode_error {
            None => cw.submit(submit, specs),
            Some((i, reason)) => cw.submit_failed_n(
                num_returns,
                crate::TaskError::Decode { function: function.to_string(), what: format!("argument {i}"), reason },
            ),
        };
        drop(keep);
        (cw, id)
    }
}

/// A remote function whose `Vec` result becomes several objects; see
/// [`RemoteFn::num_returns`].
pub struct MultiFn<F, Args> {
    inner: RemoteFn<F, Args>,
    n: u32,
}

impl<F, Args> MultiFn<F, Args>
where
    F: RemoteFunc<Args>,
{
    fn submit<T>(&self, args: Vec<PreparedArg>) -> Vec<ObjectRef<T>> {
        let (cw, first) = self.inner.submit_n(args, self.n);
        (0..self.n).map(|i| ObjectRef::new(ares_common::ObjectId::for_return(first.task, i), cw.clone())).collect()
    }
}

macro_rules! arity {
    ($($a:ident $v:ident),*) => {
        impl<F, R, $($a,)*> RemoteFunc<($($a,)*)> for F
        where
            F: Fn($($a),*) -> R + Copy + 'static,
            R: Value,
        {
            type Output = R;
        }

        impl<F, $($a,)*> RemoteFn<F, ($($a,)*)>
        where
            F: RemoteFunc<($($a,)*)>,
        {
            /// Submits the task; arguments may be values or `ObjectRef`s (resolved
            /// before the task runs).
            #[allow(clippy::too_many_arguments)]
            pub fn call(&self, $($v: impl IntoArg<$a>),*) -> ObjectRef<F::Output> {
                self.submit(vec![$($v.into_arg()),*])
            }
        }

        impl<F, T, $($a,)*> MultiFn<F, ($($a,)*)>
        where
            F: RemoteFunc<($($a,)*), Output = Vec<T>>,
        {
            /// Submits the task; returns one ref per element of its result.
            #[allow(clippy::too_many_arguments)]
            pub fn call(&self, $($v: impl IntoArg<$a>),*) -> Vec<ObjectRef<T>> {
                self.submit(vec![$($v.into_arg()),*])
            }
        }
    };
}

arity!();
arity!(A0 a0);
arity!(A0 a0, A1 a1);
arity!(A0 a0, A1 a1, A2 a2);
arity!(A0 a0, A1 a1, A2 a2, A3 a3);
arity!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4);
arity!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5);
