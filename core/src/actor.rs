//! Actors: `ares::actor(Counter::new).spawn(10)` starts a `Counter` in a worker process
//! of its own and returns an [`ActorHandle`] owned by this process;
//! `handle.call(Counter::incr, 5)` runs a method there and returns an `ObjectRef`.
//!
//! Calls made through the handles of one process run in the order they were made.
//! Handles can be cloned, and passed to tasks and other actors (they encode as the actor's
//! ID); a process that decodes one becomes a borrower and calls the actor directly. A
//! non-detached actor lives while some process holds a handle to it and its owner lives.
//!
//! ```no_run
//! struct Counter { n: i64 }
//!
//! #[ares::actor]
//! impl Counter {
//!     fn new(start: i64) -> Self { Counter { n: start } }
//!     fn incr(&mut self, by: i64) -> i64 { self.n += by; self.n }
//!     fn add(&mut self, a: i64, b: i64) -> i64 { self.n += a + b; self.n }
//! }
//!
//! fn main() -> anyhow::Result<()> {
//!     ares::init()?;
//!     let counter = ares::actor(Counter::new).max_restarts(1).spawn(10);
//!     assert_eq!(ares::get(&counter.call(Counter::incr, 5))?, 15);
//!     assert_eq!(ares::get(&counter.call(Counter::add, (1, 2)))?, 18);
//!     ares::kill(&counter)?;
//!     ares::shutdown();
//!     Ok(())
//! }
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use ares_common::codec::Value;
use ares_common::{ActorId, NodeId, ResourceSet};
use rkyv::rancor::{Fallible, Source};
use rkyv::with::{ArchiveWith, DeserializeWith, SerializeWith};
use rkyv::{Archive, Place, Serialize};

use crate::core_worker::{ArgSpec, CoreWorker, SpawnSpec};
use crate::error::{Error, Result, TaskError};
use crate::object_ref::ObjectRef;
use crate::remote::{IntoArg, Keep, PreparedArg};
use crate::state::ActorSpawn;
use crate::state::Home;

/// One process's family of handles on an actor: the last drop tells the core worker.
pub(crate) struct HandleInner {
    pub(crate) id: ActorId,
    pub(crate) class: Arc<str>,
    pub(crate) max_task_retries: u32,
    /// The node whose directory keeps the actor, if not this process's.
    pub(crate) home: Home,
    pub(crate) cw: Arc<CoreWorker>,
    /// Whether the core worker counts this family (not for copies decoded only to be
    /// re-encoded, see `capture::without_borrowing`).
    counted: bool,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        if self.counted {
            self.cw.actor_handle_dropped(self.id);
        }
    }
}

/// A handle to an actor of type `A`. Cloning shares it; it encodes as the actor's ID, so
/// it can be an argument of tasks and actor calls.
#[derive(Archive, Serialize, rkyv::Deserialize)]
pub struct ActorHandle<A> {
    #[rkyv(with = HandleCodec)]
    inner: Arc<HandleInner>,
    _a: PhantomData<fn() -> A>,
}

impl<A> Clone for ActorHandle<A> {
    fn clone(&self) -> Self {
        ActorHandle { inner: self.inner.clone(), _a: PhantomData }
    }
}

impl<A> fmt::Debug for ActorHandle<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorHandle<{}>({})", self.inner.class, self.inner.id)
    }
}

impl<A> ActorHandle<A> {
    /// The actor's ID.
    pub fn id(&self) -> ActorId {
        self.inner.id
    }

    /// Calls `method` on the actor with `args`: `()` for none, a value (or `ObjectRef`)
    /// for one, a tuple for several. Calls through this process's handles run in order.
    pub fn call<F, Args, M>(&self, _method: F, args: impl IntoArgs<Args>) -> ObjectRef<F::Output>
    where
        F: ActorMethod<A, Args, M>,
    {
        let cw = &self.inner.cw;
        let function = std::any::type_name::<F>();
        let (specs, keep, error) = prepare_args(args.into_args(), function);
        let id = match error {
            None => cw.submit_actor_call(self.inner.id, function, specs, keep.actor_ids(), keep.carried()),
            Some(e) => cw.submit_failed(e),
        };
        drop(keep);
        ObjectRef::new(id, cw.clone())
    }
}

/// Prepares arguments, turning an encoding error into the task's error.
fn prepare_args(args: Vec<PreparedArg>, function: &str) -> (Vec<ArgSpec>, Keep, Option<TaskError>) {
    let (specs, keep, error) = crate::remote::prepare(args);
    let error = error.map(|(i, reason)| TaskError::Decode {
        function: function.to_string(),
        what: format!("argument {i}"),
        reason,
    });
    (specs, keep, error)
}

/// The archived form of a handle.
#[derive(Archive, Serialize, rkyv::Deserialize)]
#[doc(hidden)]
pub struct HandleWire {
    actor_id: ActorId,
    class: String,
    max_task_retries: u32,
    /// The node whose actor directory keeps the actor (its owner's node) and where
    /// that node serves QUIC (`None` outside a cluster).
    home_node: NodeId,
    home_addr: Option<std::net::SocketAddr>,
}

impl HandleWire {
    fn of(h: &HandleInner) -> Self {
        let (home_node, home_addr) = match h.home {
            Some((node, addr)) => (node, Some(addr)),
            None => (h.cw.node(), h.cw.own_node_addr()),
        };
        HandleWire {
            actor_id: h.id,
            class: h.class.to_string(),
            max_task_retries: h.max_task_retries,
            home_node,
            home_addr,
        }
    }
}

/// Encodes a handle as its actor's ID; decoding one makes this process a borrower.
#[doc(hidden)]
pub struct HandleCodec;

impl ArchiveWith<Arc<HandleInner>> for HandleCodec {
    type Archived = ArchivedHandleWire;
    type Resolver = HandleWireResolver;

    fn resolve_with(field: &Arc<HandleInner>, resolver: Self::Resolver, out: Place<Self::Archived>) {
        HandleWire::of(field).resolve(resolver, out);
    }
}

impl<S: Fallible + ?Sized> SerializeWith<Arc<HandleInner>, S> for HandleCodec
where
    HandleWire: Serialize<S>,
{
    fn serialize_with(field: &Arc<HandleInner>, s: &mut S) -> std::result::Result<Self::Resolver, S::Error> {
        let wire = HandleWire::of(field);
        let lent = ares_common::wire::LentActor {
            id: wire.actor_id,
            class: wire.class.clone(),
            max_task_retries: wire.max_task_retries,
            home_node: wire.home_node,
            home_addr: wire.home_addr,
        };
        crate::capture::record_actor(lent, field.clone());
        wire.serialize(s)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BorrowFailed(String);

impl<D: Fallible + ?Sized> DeserializeWith<ArchivedHandleWire, Arc<HandleInner>, D> for HandleCodec
where
    D::Error: Source,
{
    fn deserialize_with(a: &ArchivedHandleWire, _: &mut D) -> std::result::Result<Arc<HandleInner>, D::Error> {
        let id = ActorId(a.actor_id.0);
        let cw = crate::runtime::current().map_err(|e| D::Error::new(BorrowFailed(e.to_string())))?;
        let class: Arc<str> = Arc::from(a.class.as_str());
        let retries = a.max_task_retries.to_native();
        let node = NodeId(a.home_node.0);
        let home = match a.home_addr.as_ref() {
            Some(addr) if node != cw.node() => Some((node, addr.as_socket_addr())),
            _ => None,
        };
        if crate::capture::passive() {
            return Ok(Arc::new(HandleInner { id, class, max_task_retries: retries, home, cw, counted: false }));
        }
        Ok(borrow(cw, id, class, retries, home))
    }
}

/// A new handle family in this process (registering it with the actor's directory if
/// it is the first).
fn borrow(cw: Arc<CoreWorker>, id: ActorId, class: Arc<str>, max_task_retries: u32, home: Home) -> Arc<HandleInner> {
    cw.actor_borrow(id, class.clone(), max_task_retries, home);
    Arc::new(HandleInner { id, class, max_task_retries, home, cw, counted: true })
}

/// Arguments of an actor call: `()`, one argument, or a tuple of up to 6.
pub trait IntoArgs<Args> {
    /// Prepares each argument.
    fn into_args(self) -> Vec<PreparedArg>;
}

impl IntoArgs<()> for () {
    fn into_args(self) -> Vec<PreparedArg> {
        Vec::new()
    }
}

impl<A0, T: IntoArg<A0>> IntoArgs<(A0,)> for T {
    fn into_args(self) -> Vec<PreparedArg> {
        vec![self.into_arg()]
    }
}

macro_rules! tuple_args {
    ($($a:ident $t:ident $v:ident),*) => {
        impl<$($a, $t: IntoArg<$a>,)*> IntoArgs<($($a,)*)> for ($($t,)*) {
            fn into_args(self) -> Vec<PreparedArg> {
                let ($($v,)*) = self;
                vec![$($v.into_arg()),*]
            }
        }
    };
}
tuple_args!(A0 T0 a0, A1 T1 a1);
tuple_args!(A0 T0 a0, A1 T1 a1, A2 T2 a2);
tuple_args!(A0 T0 a0, A1 T1 a1, A2 T2 a2, A3 T3 a3);
tuple_args!(A0 T0 a0, A1 T1 a1, A2 T2 a2, A3 T3 a3, A4 T4 a4);
tuple_args!(A0 T0 a0, A1 T1 a1, A2 T2 a2, A3 T3 a3, A4 T4 a4, A5 T5 a5);

/// Marks a method taking `&self`.
pub enum ByRef {}
/// Marks a method taking `&mut self`.
pub enum ByMut {}

/// A method of actor type `A` usable with [`ActorHandle::call`]: any `fn(&A, ..)` or
/// `fn(&mut A, ..)` of up to 6 arguments from an impl block marked `#[ares::actor]`.
pub trait ActorMethod<A, Args, M>: Copy + 'static {
    /// The return type.
    type Output: Value;
}

/// A constructor usable with [`actor`]: any `fn(..) -> A` of up to 6 arguments from an
/// impl block marked `#[ares::actor]`.
pub trait ActorCtor<Args>: Copy + 'static {
    /// The actor type.
    type Actor: Send + 'static;
}

macro_rules! method_arity {
    ($($a:ident),*) => {
        impl<F, A, R, $($a,)*> ActorMethod<A, ($($a,)*), ByRef> for F
        where
            F: Fn(&A, $($a),*) -> R + Copy + 'static,
            R: Value,
        {
            type Output = R;
        }
        impl<F, A, R, $($a,)*> ActorMethod<A, ($($a,)*), ByMut> for F
        where
            F: Fn(&mut A, $($a),*) -> R + Copy + 'static,
            R: Value,
        {
            type Output = R;
        }
        impl<F, A, $($a,)*> ActorCtor<($($a,)*)> for F
        where
            F: Fn($($a),*) -> A + Copy + 'static,
            A: Send + 'static,
        {
            type Actor = A;
        }
    };
}
method_arity!();
method_arity!(A0);
method_arity!(A0, A1);
method_arity!(A0, A1, A2);
method_arity!(A0, A1, A2, A3);
method_arity!(A0, A1, A2, A3, A4);
method_arity!(A0, A1, A2, A3, A4, A5);

/// Options of an actor, set on its builder.
#[derive(Clone, Debug)]
struct ActorOptions {
    num_cpus: f64,
    resources: Vec<(String, f64)>,
    name: Option<String>,
    detached: bool,
    max_restarts: u32,
    max_task_retries: u32,
    max_concurrency: u32,
}

/// Prepares an actor from its constructor (a function of a `#[ares::actor]` impl block
/// returning `Self`); [`ActorBuilder::spawn`] starts it.
pub fn actor<F, Args>(_ctor: F) -> ActorBuilder<F, Args>
where
    F: ActorCtor<Args>,
{
    ActorBuilder {
        opts: ActorOptions {
            num_cpus: 0.0,
            resources: Vec::new(),
            name: None,
            detached: false,
            max_restarts: 0,
            max_task_retries: 0,
            max_concurrency: 1,
        },
        _f: PhantomData,
    }
}

/// An actor about to be started; see [`actor`].
pub struct ActorBuilder<F, Args> {
    opts: ActorOptions,
    _f: PhantomData<(F, fn(Args))>,
}

impl<F: ActorCtor<Args>, Args> ActorBuilder<F, Args> {
    /// CPUs the actor holds for its whole life (default 0, as in Ray: an actor takes a
    /// process, not a core, unless asked).
    pub fn num_cpus(mut self, n: f64) -> Self {
        self.opts.num_cpus = n;
        self
    }
    /// A custom resource the actor holds for its whole life, such as `("GPU", 1.0)`.
    pub fn resource(mut self, name: &str, amount: f64) -> Self {
        self.opts.resources.push((name.to_string(), amount));
        self
    }
    /// Registers the actor under `name` on the node, so [`get_actor`] finds it from any
    /// driver. Names are unique among live actors.
    pub fn name(mut self, name: &str) -> Self {
        self.opts.name = Some(name.to_string());
        self
    }
    /// The actor outlives its owner and its handles; only [`kill`] ends it.
    pub fn detached(mut self) -> Self {
        self.opts.detached = true;
        self
    }
    /// How often the actor is restarted (with its constructor's arguments) when its
    /// process dies; `u32::MAX` is unlimited. Default 0.
    pub fn max_restarts(mut self, n: u32) -> Self {
        self.opts.max_restarts = n;
        self
    }
    /// How often a call running when the process died is re-run on the restarted actor
    /// (default 0: it fails `ActorDied`). Only for methods that are safe to repeat.
    pub fn max_task_retries(mut self, n: u32) -> Self {
        self.opts.max_task_retries = n;
        self
    }
    /// Lets up to `n` calls run at once on threads of the actor's process. Needs a
    /// `Sync` actor; `&mut self` methods still run alone. Calls then finish out of order.
    pub fn max_concurrency(mut self, n: u32) -> Self
    where
        F::Actor: Sync,
    {
        self.opts.max_concurrency = n.max(1);
        self
    }

    fn start(&self, args: Vec<PreparedArg>) -> Result<ActorHandle<F::Actor>> {
        let cw = crate::runtime::current()?;
        let ctor = std::any::type_name::<F>();
        let class: Arc<str> = Arc::from(std::any::type_name::<F::Actor>());
        let (specs, keep, error) = prepare_args(args, ctor);
        if let Some(e) = error {
            return Err(Error::Task(e));
        }
        let mut shape = ResourceSet::new().with("CPU", self.opts.num_cpus);
        for (n, a) in &self.opts.resources {
            shape.set(n, *a);
        }
        let id = ActorId::from_uuid(uuid::Uuid::new_v4());
        let spawn = SpawnSpec {
            state: ActorSpawn {
                ctor,
                class: class.clone(),
                shape,
                max_task_retries: self.opts.max_task_retries,
                max_concurrency: self.opts.max_concurrency,
                detached: self.opts.detached,
            },
            name: self.opts.name.clone(),
            detached: self.opts.detached,
            max_restarts: self.opts.max_restarts,
        };
        cw.create_actor(id, spawn, specs, keep.actor_ids(), keep.carried())?;
        drop(keep);
        let max_task_retries = self.opts.max_task_retries;
        Ok(ActorHandle {
            inner: Arc::new(HandleInner { id, class, max_task_retries, home: None, cw, counted: true }),
            _a: PhantomData,
        })
    }

    fn start_or_dead(&self, args: Vec<PreparedArg>) -> ActorHandle<F::Actor> {
        match self.start(args) {
            Ok(h) => h,
            Err(e) => {
                let cw = crate::runtime::current().unwrap_or_else(|e| panic!("ares::actor(..).spawn(..): {e}"));
                let id = ActorId::from_uuid(uuid::Uuid::new_v4());
                let class: Arc<str> = Arc::from(std::any::type_name::<F::Actor>());
                let error = match e {
                    Error::Task(t) => t,
                    other => TaskError::ActorDied {
                        actor: id.to_string(),
                        class: class.to_string(),
                        reason: other.to_string(),
                    },
                };
                cw.dead_actor(id, class.clone(), error);
                let inner = HandleInner { id, class, max_task_retries: 0, home: None, cw, counted: true };
                ActorHandle { inner: Arc::new(inner), _a: PhantomData }
            }
        }
    }
}

macro_rules! spawn_arity {
    ($($a:ident $v:ident),*) => {
        impl<F, $($a,)*> ActorBuilder<F, ($($a,)*)>
        where
            F: ActorCtor<($($a,)*)>,
        {
            /// Starts the actor; this process owns it. If it cannot be registered (its
            /// name is taken), every call on the handle fails with that error; use
            /// `try_spawn` to see it at once.
            #[allow(clippy::too_many_arguments)]
            pub fn spawn(&self, $($v: impl IntoArg<$a>),*) -> ActorHandle<F::Actor> {
                self.start_or_dead(vec![$($v.into_arg()),*])
            }

            /// Starts the actor, or says why it cannot be (for example
            /// [`TaskError::ActorNameTaken`]).
            #[allow(clippy::too_many_arguments)]
            pub fn try_spawn(&self, $($v: impl IntoArg<$a>),*) -> Result<ActorHandle<F::Actor>> {
                self.start(vec![$($v.into_arg()),*])
            }
        }
    };
}
spawn_arity!();
spawn_arity!(A0 a0);
spawn_arity!(A0 a0, A1 a1);
spawn_arity!(A0 a0, A1 a1, A2 a2);
spawn_arity!(A0 a0, A1 a1, A2 a2, A3 a3);
spawn_arity!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4);
spawn_arity!(A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5);

/// Kills the actor now, whatever its restart budget: calls in flight and later calls fail
/// with `ActorDied`. Works on detached actors, from any process holding a handle.
pub fn kill<A>(handle: &ActorHandle<A>) -> Result<()> {
    handle.inner.cw.kill_actor(handle.inner.id, handle.inner.home)
}

/// Finds the live actor registered under `name` (names are unique in the cluster, so
/// from any driver on any node) and returns a handle to it; this process becomes a
/// borrower.
pub fn get_actor<A: 'static>(name: &str) -> Result<ActorHandle<A>> {
    let cw = crate::runtime::current()?;
    let (actor_id, class, max_task_retries, home) = cw.lookup_actor_by_name(name)?;
    let requested = std::any::type_name::<A>();
    if class != requested {
        return Err(Error::Task(TaskError::ActorTypeMismatch {
            name: name.to_string(),
            actual: class,
            requested: requested.to_string(),
        }));
    }
    let inner = borrow(cw, actor_id, Arc::from(class.as_str()), max_task_retries, home);
    Ok(ActorHandle { inner, _a: PhantomData })
}
