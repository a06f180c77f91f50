//! The tasks this process submitted that have not finished, and the dependency edges
//! between them: which task waits for which pending object. [`crate::CoreState`] asks
//! it what an object's readiness or failure sets going; it decides nothing about where a
//! task runs or what its push carries.
//!
//! **Must not:** touch the ownership table or emit outputs; do IO.

use ares_common::det::DetMap;
use ares_common::{ObjectId, TaskId};

use crate::tasks::{Task, returns_of};

/// What a task whose last pending argument resolved needs next.
#[derive(Debug, PartialEq)]
pub(crate) enum Next {
    /// Its gathered lists must be merged first.
    Merge,
    /// It can be queued.
    Queue,
}

#[derive(Default)]
pub(crate) struct Pending {
    tasks: DetMap<TaskId, Task>,
    /// For each pending object, the tasks that wait for it (a task once per argument).
    waiting: DetMap<ObjectId, Vec<TaskId>>,
}

impl Pending {
    pub(crate) fn get(&self, tid: &TaskId) -> Option<&Task> {
        self.tasks.get(tid)
    }

    pub(crate) fn get_mut(&mut self, tid: &TaskId) -> Option<&mut Task> {
        self.tasks.get_mut(tid)
    }

    pub(crate) fn contains(&self, tid: &TaskId) -> bool {
        self.tasks.contains_key(tid)
    }

    pub(crate) fn insert(&mut self, tid: TaskId, task: Task) {
        self.tasks.insert(tid, task);
    }

    /// Takes `tid` out; the edges of other tasks to its returns stay (see
    /// [`Pending::remove_with_dependents`] to fail them too).
    pub(crate) fn remove(&mut self, tid: &TaskId) -> Option<Task> {
        self.tasks.remove(tid)
    }

    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Every pending task, in a fixed order.
    pub(crate) fn ids(&self) -> Vec<TaskId> {
        self.tasks.keys().copied().collect()
    }

    /// `tid` waits for `id`. The caller counts it in the task's `unresolved`.
    pub(crate) fn wait_for(&mut self, id: ObjectId, tid: TaskId) {
        self.waiting.entry(id).or_default().push(tid);
    }

    /// The queued task `tid` found `ids` pending again (lost since it was queued and
    /// being rebuilt): it waits for them.
    pub(crate) fn wait_again(&mut self, tid: TaskId, ids: Vec<ObjectId>) {
        let Some(t) = self.tasks.get_mut(&tid) else {
            return;
        };
        t.unresolved += ids.len();
        for id in ids {
            self.wait_for(id, tid);
        }
    }

    /// The tasks that waited for `id`; none waits for it any more.
    pub(crate) fn take_waiters(&mut self, id: ObjectId) -> Vec<TaskId> {
        self.waiting.remove(&id).unwrap_or_default()
    }

    /// One argument of `tid` became ready: what the task needs next, once none is left.
    pub(crate) fn resolved_one(&mut self, tid: TaskId) -> Option<Next> {
        let t = self.tasks.get_mut(&tid)?;
        t.unresolved -= 1;
        match (t.unresolved, t.unmerged) {
            (0, 0) => Some(Next::Queue),
            (0, _) => Some(Next::Merge),
            _ => None,
        }
    }

    /// Takes out `tid` and, transitively, every task waiting for one of its return
    /// values, in the order they are reached: all of them fail together.
    pub(crate) fn remove_with_dependents(&mut self, tid: TaskId) -> Vec<(TaskId, Task)> {
        let mut stack = vec![tid];
        let mut out = Vec::new();
        while let Some(tid) = stack.pop() {
            let Some(task) = self.tasks.remove(&tid) else {
                continue;
            };
            for r in returns_of(tid, task.num_returns) {
                stack.extend(self.take_waiters(r));
            }
            out.push((tid, task));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{Slot, Target};
    use ares_common::wire::TaskKind;
    use ares_common::{ResourceSet, Strategy};
    use std::sync::Arc;

    fn task(args: &[ObjectId], num_returns: u32) -> Task {
        Task {
            function: Arc::from("f"),
            args: args.iter().map(|id| Slot::Ref(*id)).collect(),
            arg_ids: args.to_vec(),
            carried: Vec::new(),
            shape: ResourceSet::new(),
            strategy: Strategy::Default,
            retries_left: 0,
            attempts: 0,
            unresolved: args.len(),
            unmerged: 0,
            target: Target::Pool,
            kind: TaskKind::Normal,
            keeps: Vec::new(),
            num_returns,
            stale_on: Vec::new(),
        }
    }

    fn tid(n: u8) -> TaskId {
        TaskId::root(uuid::Uuid::from_bytes([n; 16]))
    }

    /// a → b (on a's second return) → c; d waits on nothing of theirs.
    fn chain() -> (Pending, [TaskId; 4]) {
        let ids = [tid(1), tid(2), tid(3), tid(4)];
        let [a, b, c, d] = ids;
        let mut p = Pending::default();
        p.insert(a, task(&[], 2));
        let a1 = ObjectId::for_return(a, 1);
        p.insert(b, task(&[a1], 1));
        p.wait_for(a1, b);
        let b0 = ObjectId::for_return(b, 0);
        p.insert(c, task(&[b0], 1));
        p.wait_for(b0, c);
        p.insert(d, task(&[], 1));
        (p, ids)
    }

    #[test]
    fn a_failure_takes_its_dependents_and_only_them() {
        let (mut p, [a, b, c, d]) = chain();
        let gone: Vec<TaskId> = p.remove_with_dependents(a).into_iter().map(|(t, _)| t).collect();
        assert_eq!(gone, vec![a, b, c]);
        assert_eq!(p.ids(), vec![d]);
        assert!(p.take_waiters(ObjectId::for_return(b, 0)).is_empty());
    }

    #[test]
    fn a_task_is_ready_when_its_last_argument_is() {
        let (mut p, [a, b, c, _]) = chain();
        let a1 = ObjectId::for_return(a, 1);
        assert_eq!(p.take_waiters(a1), vec![b]);
        assert_eq!(p.resolved_one(b), Some(Next::Queue));
        // c waits again for a value lost after it was queued.
        let b0 = ObjectId::for_return(b, 0);
        p.wait_again(c, vec![a1]);
        assert_eq!(p.get(&c).map(|t| t.unresolved), Some(2));
        assert_eq!(p.resolved_one(c), None);
        assert_eq!(p.take_waiters(b0), vec![c]);
        assert_eq!(p.take_waiters(a1), vec![c]);
        assert_eq!(p.resolved_one(c), Some(Next::Queue));
        p.get_mut(&c).expect("pending").unmerged = 1;
        p.wait_again(c, vec![a1]);
        assert_eq!(p.resolved_one(c), Some(Next::Merge));
    }
}
