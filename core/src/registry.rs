//! The registries of remote functions and of actor constructors and methods (filled at
//! link time by `#[ares::remote]` and `#[ares::actor]`) and the context an invoker runs in.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock, RwLock};

use ares_common::codec::Value;
use ares_common::wire::Outcome;
use ares_common::{ObjectId, TaskId};
use hashbrown::HashMap;

use crate::core_worker::CoreWorker;
use crate::error::TaskError;
use crate::store_client::Stored;

/// Decodes arguments, runs the function, encodes the result.
pub type Invoker = fn(&TaskContext<'_>, &[&[u8]]) -> Outcome;

/// One registered function.
pub struct RemoteFunction {
    /// Its stable name (`type_name` of the function item).
    pub name: fn() -> &'static str,
    /// Its invoker.
    pub invoke: Invoker,
}

/// Every function marked `#[ares::remote]` in the executable.
#[linkme::distributed_slice]
pub static REMOTE_FUNCTIONS: [RemoteFunction];

fn table() -> &'static HashMap<&'static str, Invoker> {
    static TABLE: OnceLock<HashMap<&'static str, Invoker>> = OnceLock::new();
    TABLE.get_or_init(|| REMOTE_FUNCTIONS.iter().map(|f| ((f.name)(), f.invoke)).collect())
}

/// The invoker registered under `name`.
pub(crate) fn lookup(name: &str) -> Option<Invoker> {
    table().get(name).copied()
}

/// A constructed actor: the value behind a `Mutex`, or behind an `RwLock` if the type is
/// `Sync` (so `&self` methods may run in parallel when `max_concurrency > 1`).
pub struct ActorInstance {
    cell: Box<dyn Any + Send + Sync>,
    parallel: bool,
}

impl ActorInstance {
    /// Whether `&self` methods may run at the same time.
    pub(crate) fn parallel(&self) -> bool {
        self.parallel
    }
}

/// Picks how to store an actor by whether its type is `Sync` (autoref specialization: the
/// macro calls `(&Probe::<T>::new()).wrap(v)`; [`WrapSync`] applies if `T: Sync`, else the
/// method of [`WrapSend`] on `&Probe<T>` is found one autoref later).
pub struct Probe<T>(PhantomData<T>);

impl<T> Probe<T> {
    /// A probe for `T`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Probe(PhantomData)
    }
}

/// Stores a `Sync` actor behind an `RwLock`.
pub trait WrapSync<T> {
    /// Wraps `v`.
    fn wrap(&self, v: T) -> ActorInstance;
}

impl<T: Send + Sync + 'static> WrapSync<T> for Probe<T> {
    fn wrap(&self, v: T) -> ActorInstance {
        ActorInstance { cell: Box::new(RwLock::new(v)), parallel: true }
    }
}

/// Stores any other actor behind a `Mutex`.
pub trait WrapSend<T> {
    /// Wraps `v`.
    fn wrap(&self, v: T) -> ActorInstance;
}

impl<T: Send + 'static> WrapSend<T> for &Probe<T> {
    fn wrap(&self, v: T) -> ActorInstance {
        ActorInstance { cell: Box::new(Mutex::new(v)), parallel: false }
    }
}

/// Runs `f` on the actor with shared access.
pub fn with_ref<T: Send + 'static, R>(inst: &ActorInstance, f: impl FnOnce(&T) -> R) -> R {
    if let Some(l) = inst.cell.downcast_ref::<RwLock<T>>() {
        f(&l.read().unwrap_or_else(|p| p.into_inner()))
    } else if let Some(m) = inst.cell.downcast_ref::<Mutex<T>>() {
        f(&m.lock().unwrap_or_else(|p| p.into_inner()))
    } else {
        panic!("the actor hosted here is not a {}", std::any::type_name::<T>())
    }
}

/// Runs `f` on the actor with exclusive access.
pub fn with_mut<T: Send + 'static, R>(inst: &ActorInstance, f: impl FnOnce(&mut T) -> R) -> R {
    if let Some(l) = inst.cell.downcast_ref::<RwLock<T>>() {
        f(&mut l.write().unwrap_or_else(|p| p.into_inner()))
    } else if let Some(m) = inst.cell.downcast_ref::<Mutex<T>>() {
        f(&mut m.lock().unwrap_or_else(|p| p.into_inner()))
    } else {
        panic!("the actor hosted here is not a {}", std::any::type_name::<T>())
    }
}

/// Decodes arguments and constructs an actor.
pub(crate) type ConstructInvoker = fn(&TaskContext<'_>, &[&[u8]]) -> Result<ActorInstance, Outcome>;
/// Decodes arguments, runs a method on the actor, encodes the result.
pub(crate) type MethodInvoker = fn(&TaskContext<'_>, &ActorInstance, &[&[u8]]) -> Outcome;

/// One registered actor constructor.
pub struct ActorConstructor {
    /// Its stable name (`type_name` of the function item).
    pub name: fn() -> &'static str,
    /// Its invoker.
    pub construct: fn(&TaskContext<'_>, &[&[u8]]) -> Result<ActorInstance, Outcome>,
}

/// One registered actor method.
pub struct ActorMethodEntry {
    /// Its stable name (`type_name` of the function item).
    pub name: fn() -> &'static str,
    /// Its invoker.
    pub invoke: fn(&TaskContext<'_>, &ActorInstance, &[&[u8]]) -> Outcome,
}

/// Every constructor of an impl block marked `#[ares::actor]` in the executable.
#[linkme::distributed_slice]
pub static ACTOR_CONSTRUCTORS: [ActorConstructor];

/// Every method of an impl block marked `#[ares::actor]` in the executable.
#[linkme::distributed_slice]
pub static ACTOR_METHODS: [ActorMethodEntry];

/// The constructor registered under `name`.
pub(crate) fn lookup_constructor(name: &str) -> Option<ConstructInvoker> {
    static TABLE: OnceLock<HashMap<&'static str, ConstructInvoker>> = OnceLock::new();
    TABLE.get_or_init(|| ACTOR_CONSTRUCTORS.iter().map(|f| ((f.name)(), f.construct)).collect()).get(name).copied()
}

/// The method registered under `name`.
pub(crate) fn lookup_method(name: &str) -> Option<MethodInvoker> {
    static TABLE: OnceLock<HashMap<&'static str, MethodInvoker>> = OnceLock::new();
    TABLE.get_or_init(|| ACTOR_METHODS.iter().map(|f| ((f.name)(), f.invoke)).collect()).get(name).copied()
}

/// What an invoker may use while running one task.
pub struct TaskContext<'a> {
    pub(crate) cw: &'a CoreWorker,
    pub(crate) task_id: TaskId,
    pub(crate) function: &'a str,
    pub(crate) owner: ares_common::WorkerId,
}
impl TaskContext<'_> {
    /// Decodes argument `i` as a `T`.
    pub fn decode_arg<T: Value>(&self, args: &[&[u8]], i: usize) -> Result<T, Outcome> {
        let decode_error = |reason: String| {
            Outcome::Failed(TaskError::Decode {
                function: self.function.to_string(),
                what: format!("argument {i}"),
                reason,
            })
        };
        let bytes = args.get(i).ok_or_else(|| decode_error(format!("only {} arguments were sent", args.len())))?;
        T::decode(bytes).map_err(|e| decode_error(e.to_string()))
    }

    /// The outcome of a function that panicked.
    pub fn panicked(&self, panic: Box<dyn Any + Send>) -> Outcome {
        Outcome::Failed(TaskError::Application { function: self.function.to_string(), message: panic_message(&panic) })
    }

    /// Turns the function's result (or its panic) into an outcome: inline when small,
    /// in the node's pool when large.
    pub fn finish<R: Value>(&self, result: std::thread::Result<R>) -> Outcome {
        match result {
            Err(panic) => self.panicked(panic),
            Ok(value) => match self.cw.store.store_value(ObjectId::for_return(self.task_id, 0), &value, self.owner) {
                Ok(Stored::Inline(bytes)) => Outcome::Inline(bytes.to_vec()),
                Ok(Stored::Shared { offset, len }) => Outcome::Shared { offset, len },
                Err(crate::Error::Task(e)) => Outcome::Failed(e),
                Err(e) => Outcome::Failed(TaskError::Decode {
                    function: self.function.to_string(),
                    what: "the return value".into(),
                    reason: e.to_string(),
                }),
            },
        }
    }
}

/// Renders a panic payload.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
