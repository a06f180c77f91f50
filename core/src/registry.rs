//! The registry of remote functions (filled at link time by `#[ares::remote]`) and the
//! context an invoker runs in.

use std::sync::OnceLock;

use ares_common::codec::Value;
use ares_common::wire::Outcome;
use ares_common::{ObjectId, TaskId};
use hashbrown::HashMap;

use crate::core_worker::CoreWorker;
use crate::error::TaskError;

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

    /// Turns the function's result (or its panic) into an outcome: inline when small,
    /// in the node's pool when large.
    pub fn finish<R: Value>(&self, result: std::thread::Result<R>) -> Outcome {
        match result {
            Err(panic) => Outcome::Failed(TaskError::Application {
                function: self.function.to_string(),
                message: panic_message(&panic),
            }),
            Ok(value) => match self.cw.store_value(ObjectId::for_return(self.task_id, 0), &value, self.owner) {
                Ok(crate::core_worker::Stored::Inline(bytes)) => Outcome::Inline(bytes.to_vec()),
                Ok(crate::core_worker::Stored::Shared { offset, len }) => Outcome::Shared { offset, len },
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
