//! Submission: a task's arguments counted and resolved, gathered lists merged, ready
//! tasks queued, and pushes built for the workers [`crate::leases::Leases`] picks.
//! Failing a task (and every task that waits on it) is here too.
//!
//! **Must not:** choose workers or nodes (that is `leases`); do IO.

use super::*;

impl CoreState {
    /// Submits a task as `task_id`; returns its return object (owned, one local handle).
    pub fn submit(&mut self, now: Instant, task_id: TaskId, s: Submit, args: Vec<Arg>) -> ObjectId {
        self.submit_with(now, task_id, s, args, None)
    }

    /// Like [`CoreState::submit`], failing the task at once with `early` if given (an
    /// argument could not be stored).
    pub fn submit_with(
        &mut self,
        now: Instant,
        task_id: TaskId,
        s: Submit,
        args: Vec<Arg>,
        early: Option<TaskError>,
    ) -> ObjectId {
        let return_id = ObjectId::for_return(task_id, 0);
        let num_returns = s.num_returns.max(1);
        for rid in returns_of(task_id, num_returns) {
            self.table.add_owned(rid, Status::Pending);
        }
        let mut slots = Vec::with_capacity(args.len());
        let mut arg_ids = Vec::new();
        let mut temps = Vec::new();
        let mut unmerged = 0;
        for a in args {
            match a {
                Arg::Inline(b) => slots.push(Slot::Inline(Arc::new(b))),
                Arg::Stored { id, len } => {
                    // A large by-value argument became an object of its own, as in Ray.
                    self.table.add_owned(id, Status::Ready(Location::stored(self.node(), len)));
                    temps.push(id);
                    arg_ids.push(id);
                    slots.push(Slot::Ref(id));
                }
                Arg::Ref(id) => {
                    arg_ids.push(id);
                    slots.push(Slot::Ref(id));
                }
                Arg::Gather { ids, combine } => {
                    arg_ids.extend_from_slice(&ids);
                    unmerged += 1;
                    slots.push(Slot::Gather { ids, combine, merged: None });
                }
            }
        }
        let mut failed = early;
        if let Some(e) = &self.stopped {
            failed = Some(e.clone());
        }
        self.table.add_submitted(&arg_ids);
        self.table.add_submitted(&s.carried);
        self.borrowed.add_submitted(&arg_ids);
        self.borrowed.add_submitted(&s.carried);
        let borrowing = !self.borrowed.is_empty();
        for id in arg_ids.iter().filter(|_| borrowing) {
            // A borrowed argument: its owner says where the value is.
            if self.table.status(*id).is_none()
                && let Some(owner) = self.borrowed.owner(*id)
            {
                self.hold_lookup(*id, owner);
            }
        }
        for id in &temps {
            // The task now holds its temporary argument; the handle is not needed.
            self.table.remove_local_ref(*id);
        }
        let mut unresolved = 0;
        for id in &arg_ids {
            match Values::new(&self.table, &self.lookups).status(*id) {
                Some(Status::Pending) => {
                    unresolved += 1;
                    self.tasks.wait_for(*id, task_id);
                }
                Some(Status::Failed(e)) if failed.is_none() => failed = Some((**e).clone()),
                None if failed.is_none() => {
                    failed = Some(TaskError::OwnerDied {
                        object: id.to_string(),
                        owner: "a runtime of this process that was shut down".into(),
                    })
                }
                _ => {}
            }
        }
        let mut keeps = s.keeps;
        keeps.retain(|a| match self.callers.get_mut(a) {
            Some(c) => {
                c.handles += 1;
                true
            }
            None => false,
        });
        let task = Task {
            function: Arc::from(s.function),
            args: slots,
            arg_ids,
            carried: s.carried,
            shape: s.shape.clone(),
            strategy: s.strategy,
            retries_left: s.max_retries,
            attempts: 0,
            unresolved,
            unmerged,
            target: s.target,
            kind: s.kind,
            keeps,
            num_returns,
            stale_on: Vec::new(),
        };
        self.tasks.insert(task_id, task);
        if let Target::Actor(a) = s.target {
            match self.callers.get_mut(&a) {
                Some(c) => c.queue.push_back(task_id),
                None => failed = failed.or_else(|| Some(actors::unknown_actor(a))),
            }
        }
        if let Some(e) = failed {
            self.fail_task(task_id, e);
        } else if unresolved == 0 {
            self.args_resolved(now, task_id);
        }
        self.flush_frees();
        return_id
    }

    /// Records a call that failed before submission (its arguments could not be encoded).
    pub fn submit_failed(&mut self, task_id: TaskId, error: TaskError) -> ObjectId {
        self.submit_failed_n(task_id, 1, error)
    }

    /// [`CoreState::submit_failed`] for a task of `num_returns` return values; returns
    /// the first.
    pub fn submit_failed_n(&mut self, task_id: TaskId, num_returns: u32, error: TaskError) -> ObjectId {
        for rid in returns_of(task_id, num_returns) {
            self.table.add_owned(rid, Status::Failed(Box::new(error.clone())));
        }
        ObjectId::for_return(task_id, 0)
    }

    /// Every argument of `tid` is ready: merge its gathered lists, or queue it.
    pub(crate) fn args_resolved(&mut self, now: Instant, tid: TaskId) {
        let Some(task) = self.tasks.get(&tid) else {
            return;
        };
        if task.unmerged > 0 {
            self.emit_gathers(tid);
            return;
        }
        let mut touched = Touched::default();
        self.enqueue_ready(tid, &mut touched);
        self.dispatch_touched(now, touched);
    }

    /// Asks the driver to merge the gathered lists of `tid`, whose parts are all ready;
    /// the task is queued once the merges are back.
    pub(crate) fn emit_gathers(&mut self, tid: TaskId) {
        let Some(task) = self.tasks.get(&tid) else {
            return;
        };
        for (slot, s) in task.args.iter().enumerate() {
            if let Slot::Gather { ids, combine, merged: None } = s {
                let parts = ids
                    .iter()
                    .map(|id| match Values::new(&self.table, &self.lookups).status(*id) {
                        Some(Status::Ready(l)) => (*id, l.clone()),
                        // Submission counted the argument, so it is here and ready.
                        other => unreachable!("argument {id} of a resolved task is {other:?}"),
                    })
                    .collect();
                self.out.push_back(Output::Gather { task: tid, slot, parts, combine: *combine });
            }
        }
    }

    /// Puts a ready task where it will be pushed from, and notes which queue moved.
    pub(crate) fn enqueue_ready(&mut self, tid: TaskId, touched: &mut Touched) {
        let Some(t) = self.tasks.get(&tid) else {
            return;
        };
        match t.target {
            Target::Pool => {
                let shape = SchedKey { shape: t.shape.clone(), strategy: t.strategy.clone() };
                self.leases.enqueue(&shape, tid);
                if !touched.shapes.contains(&shape) {
                    touched.shapes.push(shape);
                }
            }
            Target::Actor(a) | Target::Create(a) => {
                if !touched.actors.contains(&a) {
                    touched.actors.push(a);
                }
            }
        }
    }

    /// The driver merged gathered argument `slot` of `task` (or failed to).
    pub fn handle_gathered(
        &mut self,
        now: Instant,
        task: TaskId,
        slot: usize,
        merged: std::result::Result<Bytes, String>,
    ) {
        let Some(t) = self.tasks.get_mut(&task) else {
            return;
        };
        let error = match merged {
            Ok(b) if b.len() + 1024 <= self.cfg.max_frame => {
                if let Some(Slot::Gather { merged: m @ None, .. }) = t.args.get_mut(slot) {
                    *m = Some(Arc::new(b));
                    t.unmerged -= 1;
                }
                None
            }
            Ok(b) => Some(format!("a gathered list of {} bytes exceeds the frame limit", b.len())),
            Err(reason) => Some(reason),
        };
        match error {
            Some(reason) => {
                let e =
                    TaskError::Decode { function: t.function.to_string(), what: format!("argument {slot}"), reason };
                self.fail_task(task, e);
            }
            None if t.ready() => {
                let mut touched = Touched::default();
                self.enqueue_ready(task, &mut touched);
                self.dispatch_touched(now, touched);
            }
            None => {}
        }
        self.flush_frees();
    }

    /// Fails `task_id` for good with `error`, and with it every task waiting on it.
    pub(crate) fn fail_task(&mut self, task_id: TaskId, error: TaskError) {
        let mut failed_creates = Vec::new();
        let mut failed_calls = Vec::new();
        for (tid, task) in self.tasks.remove_with_dependents(task_id) {
            for r in returns_of(tid, task.num_returns) {
                self.table.set_failed(r, error.clone());
            }
            self.release_args(&task.arg_ids);
            match task.target {
                Target::Create(a) => {
                    // The actor's record held the construction's result.
                    self.table.remove_local_ref(ObjectId::for_return(tid, 0));
                    failed_creates.push(a);
                }
                Target::Actor(a) if !failed_calls.contains(&a) => failed_calls.push(a),
                _ => {}
            }
            self.retire(&mut { task });
        }
        self.changed = true;
        // At shutdown the node ends owned actors itself, and detached ones must live on.
        if self.stopped.is_none() {
            for a in failed_creates {
                self.create_failed(a, &error);
            }
        }
        // A failed call may have been the last thing keeping this process's hold.
        for a in failed_calls {
            self.maybe_release(a);
        }
    }

    /// Drops what a finished task kept alive: the refs and actor handles its arguments
    /// carried.
    pub(crate) fn retire(&mut self, task: &mut Task) {
        let carried = std::mem::take(&mut task.carried);
        self.table.remove_submitted(&carried);
        self.borrowed.remove_submitted(&carried);
        for a in std::mem::take(&mut task.keeps) {
            self.drop_handle(a);
        }
    }

    pub(crate) fn dispatch_touched(&mut self, now: Instant, touched: Touched) {
        for shape in &touched.shapes {
            self.dispatch(now, shape);
        }
        for a in touched.actors {
            self.dispatch_actor(now, a);
        }
    }

    /// Pushes queued tasks of `shape` to its leased workers and asks for more leases if
    /// tasks remain queued ([`Leases`] picks the workers; this builds the pushes).
    pub(crate) fn dispatch(&mut self, now: Instant, shape: &SchedKey) {
        let mut failures = Vec::new();
        let mut unready: Vec<(TaskId, Vec<ObjectId>)> = Vec::new();
        let mut out: Vec<(ConnId, Vec<u8>)> = Vec::new();
        let values = Values::new(&self.table, &self.lookups);
        let (tasks, owner, max_frame) = (&self.tasks, self.cfg.address.worker, self.cfg.max_frame);
        self.leases.push_queued(shape, now, |conn_id, tid| {
            let Some(task) = tasks.get(&tid) else {
                return false;
            };
            let payload = match resolve(&values, owner, tid, task)
                .and_then(|spec| encode_push(spec, max_frame).map_err(Unready::Failed))
            {
                Ok(p) => p,
                Err(Unready::Failed(e)) => {
                    failures.push((tid, e));
                    return false;
                }
                Err(Unready::Pending(ids)) => {
                    // An argument was lost since the task was queued and is being rebuilt.
                    unready.push((tid, ids));
                    return false;
                }
            };
            let buf = match out.iter_mut().find(|(c, _)| *c == conn_id) {
                Some((_, b)) => b,
                None => {
                    out.push((conn_id, Vec::new()));
                    &mut out.last_mut().expect("just pushed").1
                }
            };
            payload.write_to(buf);
            true
        });
        for (conn, bytes) in out {
            // The driver never blocks on this: a reader thread may be dispatching here.
            self.out.push_back(Output::Send { conn, bytes });
        }
        let here = self.cfg.address.node;
        let arg_node = |tid: TaskId| tasks.get(&tid).and_then(|t| args_node(&values, here, t));
        self.leases.request_leases(shape, now, &self.raylets, arg_node, &mut self.next_request, &mut self.out);
        for (tid, ids) in unready {
            self.tasks.wait_again(tid, ids);
        }
        for (tid, e) in failures {
            self.fail_task(tid, e);
        }
    }
}
