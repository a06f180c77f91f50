//! The registries of remote functions and of actor constructors and methods (filled at
//! link time by `#[ares::remote]` and `#[ares::actor]`) and the context an invoker runs in.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock, RwLock};

use ares_common::codec::Value;
use ares_common::wire::{Outcome, ReturnValue};
use ares_common::{ObjectId, TaskId};
use hashbrown::HashMap;

use crate::core_worker::CoreWorker;
use crate::error::TaskError;
use crate::object_ref::{InPlace, InPlaceList};
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

/// A parameter type of a remote function or actor method: any [`Value`], decoded; an
/// [`InPlace`] view of one; or an [`InPlaceList`] of values, each read in place.
pub trait FromArg<'b>: Sized {
    /// Reads the parameter from the argument values at `args[*next..]` (aligned),
    /// advancing `next` past those it used.
    fn from_args(args: &[&'b [u8]], next: &mut usize) -> Result<Self, String>;
}

/// The next argument value.
fn take<'b>(args: &[&'b [u8]], next: &mut usize) -> Result<&'b [u8], String> {
    let bytes = args.get(*next).ok_or_else(|| format!("only {} argument values were sent", args.len()))?;
    *next += 1;
    Ok(bytes)
}

impl<T: Value> FromArg<'_> for T {
    fn from_args(args: &[&[u8]], next: &mut usize) -> Result<Self, String> {
        T::decode(take(args, next)?).map_err(|e| e.to_string())
    }
}

impl<'b, T: Value> FromArg<'b> for InPlace<'b, T> {
    fn from_args(args: &[&'b [u8]], next: &mut usize) -> Result<Self, String> {
        InPlace::access(take(args, next)?).map_err(|e| e.to_string())
    }
}

impl<'b, T: Value> FromArg<'b> for InPlaceList<'b, T> {
    fn from_args(args: &[&'b [u8]], next: &mut usize) -> Result<Self, String> {
        let n = u32::decode(take(args, next)?).map_err(|e| format!("the list's length: {e}"))? as usize;
        // The count is checked against what was sent before anything is sized by it.
        let left = args.len() - *next;
        if n > left {
            return Err(format!("a list of {n} values, but only {left} argument values follow"));
        }
        let items: Result<Vec<_>, String> =
            (0..n).map(|_| InPlace::access(take(args, next)?).map_err(|e| e.to_string())).collect();
        Ok(InPlaceList { items: items? })
    }
}

/// What an invoker may use while running one task.
pub struct TaskContext<'a> {
    pub(crate) cw: &'a CoreWorker,
    pub(crate) task_id: TaskId,
    pub(crate) function: &'a str,
    pub(crate) owner: ares_common::WorkerId,
    /// Return values asked for (`TaskSpec::num_returns`).
    pub(crate) num_returns: u32,
}
impl TaskContext<'_> {
    /// Decodes parameter `i` as a `T` (or reads it in place, for an [`InPlace`]) from the
    /// argument values at `args[*next..]`.
    pub fn decode_arg<'b, T: FromArg<'b>>(&self, args: &[&'b [u8]], next: &mut usize, i: usize) -> Result<T, Outcome> {
        let decode_error = |reason: String| {
            Outcome::Failed(TaskError::Decode {
                function: self.function.to_string(),
                what: format!("argument {i}"),
                reason,
            })
        };
        T::from_args(args, next).map_err(decode_error)
    }

    /// The outcome of a function that panicked.
    pub fn panicked(&self, panic: Box<dyn Any + Send>) -> Outcome {
        Outcome::Failed(TaskError::Application { function: self.function.to_string(), message: panic_message(&panic) })
    }

    /// The outcome of a task asked for several return values whose function returns one.
    fn not_a_list(&self) -> Outcome {
        Outcome::Failed(TaskError::Decode {
            function: self.function.to_string(),
            what: "the return values".into(),
            reason: format!(
                "num_returns is {}, but the function does not return a Vec to split into that many values",
                self.num_returns
            ),
        })
    }

    /// Splits a `Vec` result into `num_returns` objects, each inline when small or in
    /// the node's pool when large (a result of the wrong length fails the task).
    fn finish_each<T: Value>(&self, result: std::thread::Result<Vec<T>>) -> Outcome
    where
        Vec<T>: Value,
    {
        let values = match result {
            Err(panic) => return self.panicked(panic),
            Ok(v) if self.num_returns <= 1 => return self.finish(Ok(v)),
            Ok(v) => v,
        };
        if values.len() != self.num_returns as usize {
            return Outcome::Failed(TaskError::Decode {
                function: self.function.to_string(),
                what: "the return values".into(),
                reason: format!("it returned {} values; num_returns is {}", values.len(), self.num_returns),
            });
        }
        let mut out = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            match self.store_return(i as u32, v) {
                Ok(r) => out.push(r),
                // Those already stored are deleted by the owner, which sees the failure.
                Err(e) => return Outcome::Failed(task_error(e, self.function, format!("return value {i}"))),
            }
        }
        Outcome::Returns(out)
    }

    /// Stores return value `index`: inline when small, in the node's pool when large.
    fn store_return<R: Value>(&self, index: u32, value: &R) -> crate::Result<ReturnValue> {
        Ok(match self.cw.store.store_value(ObjectId::for_return(self.task_id, index), value, self.owner)? {
            Stored::Inline(bytes) => ReturnValue::Inline(bytes.to_vec()),
            Stored::Shared { offset, len } => ReturnValue::Shared { offset, len },
        })
    }

    /// Turns the function's result (or its panic) into an outcome: inline when small,
    /// in the node's pool when large.
    pub fn finish<R: Value>(&self, result: std::thread::Result<R>) -> Outcome {
        match result.map(|value| self.store_return(0, &value)) {
            Err(panic) => self.panicked(panic),
            Ok(Ok(ReturnValue::Inline(bytes))) => Outcome::Inline(bytes),
            Ok(Ok(ReturnValue::Shared { offset, len })) => Outcome::Shared { offset, len },
            Ok(Err(e)) => Outcome::Failed(task_error(e, self.function, "the return value")),
        }
    }
}

/// `e` as a task's error: its own when it is one, else a `Decode` error naming `what` of
/// `function` (an argument or a return value that could not be handled).
pub(crate) fn task_error(e: crate::Error, function: &str, what: impl Into<String>) -> TaskError {
    match e {
        crate::Error::Task(t) => t,
        other => TaskError::Decode { function: function.to_string(), what: what.into(), reason: other.to_string() },
    }
}

/// Picks how a remote function's result becomes its outcome by its type (autoref
/// specialization, as [`Probe`]): the macro calls `(&Returns::<R>::new()).finish(ctx, r)`;
/// [`FinishEach`] applies to a `Vec<T>` (split into `num_returns` objects when asked),
/// [`FinishWhole`] to any other `R` (one object).
pub struct Returns<R>(PhantomData<R>);

impl<R> Returns<R> {
    /// A probe for `R`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Returns(PhantomData)
    }
}

/// The outcome of a `Vec` result.
pub trait FinishEach<R> {
    /// Stores `r` as one object, or as `num_returns` objects.
    fn finish(&self, ctx: &TaskContext<'_>, r: std::thread::Result<R>) -> Outcome;
}

impl<T: Value> FinishEach<Vec<T>> for Returns<Vec<T>>
where
    Vec<T>: Value,
{
    fn finish(&self, ctx: &TaskContext<'_>, r: std::thread::Result<Vec<T>>) -> Outcome {
        ctx.finish_each(r)
    }
}

/// The outcome of any other result.
pub trait FinishWhole<R> {
    /// Stores `r` as one object (a task asked for several fails).
    fn finish(&self, ctx: &TaskContext<'_>, r: std::thread::Result<R>) -> Outcome;
}

impl<R: Value> FinishWhole<R> for &Returns<R> {
    fn finish(&self, ctx: &TaskContext<'_>, r: std::thread::Result<R>) -> Outcome {
        if ctx.num_returns > 1 {
            return ctx.not_a_list();
        }
        ctx.finish(r)
    }
}

/// Renders a panic payload.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else if let Some(f) = panic.downcast_ref::<crate::TaskFailure>() {
        f.0.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded<T: Value>(v: &T) -> ares_common::codec::Bytes {
        v.encode().unwrap()
    }

    #[test]
    fn a_list_longer_than_the_values_sent_is_refused_before_allocating() {
        let count = encoded(&1_000_000_000u32);
        let one = encoded(&vec![1u8, 2]);
        let args: Vec<&[u8]> = vec![&count, &one];
        let err = InPlaceList::<Vec<u8>>::from_args(&args, &mut 0).err().expect("refused");
        assert!(err.contains("1000000000") && err.contains("only 1"), "{err}");
    }

    #[test]
    fn parameters_take_argument_values_in_order() {
        let (count, a, b, tag) =
            (encoded(&2u32), encoded(&vec![1u8]), encoded(&vec![2u8, 3]), encoded(&"x".to_string()));
        let args: Vec<&[u8]> = vec![&count, &a, &b, &tag];
        let mut next = 0;
        let list = InPlaceList::<Vec<u8>>::from_args(&args, &mut next).unwrap();
        assert_eq!(list.iter().map(|v| v.len()).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(String::from_args(&args, &mut next).unwrap(), "x");
        assert_eq!(next, 4);
        let missing = u8::from_args(&args, &mut next).expect_err("nothing left");
        assert!(missing.contains("only 4 argument values"), "{missing}");
        // A count that is not a u32 (one byte) names the list's length.
        let bad = InPlaceList::<Vec<u8>>::from_args(&[&encoded(&7u8)], &mut 0).err().expect("refused");
        assert!(bad.contains("length"), "{bad}");
    }
}
