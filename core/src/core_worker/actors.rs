//! The caller side of actors. Every process that holds handles to an actor keeps one
//! [`Caller`]: an in-order queue of its calls and one direct connection to the actor's
//! worker. Calls are pushed from the front of the queue as soon as their arguments are
//! ready, never overtaking an earlier call, and the worker runs one connection's calls in
//! arrival order, so calls made from one process run in submission order.
//!
//! The owner (the process that spawned the actor) also leases the actor's dedicated
//! worker, constructs the actor there, and, when the process dies, asks the node's actor
//! directory whether to restart it. A borrower finds the worker through the directory.
//! The directory, not this process, decides when the actor dies (see
//! `ares_raylet::actors`); this side reports holds and follows its decisions.

use super::*;
use ares_common::wire::{ActorInfo, ActorKey};

/// Calls pushed to an actor's worker and not yet answered, at most.
const ACTOR_PIPELINE: usize = 4096;
/// Connection attempts of a borrower to an actor's advertised address before giving up.
const CONNECT_ATTEMPTS: u32 = 50;

/// What a spawn asks for.
pub(crate) struct ActorSpawn {
    pub(crate) ctor: &'static str,
    pub(crate) class: Arc<str>,
    pub(crate) shape: ResourceSet,
    pub(crate) name: Option<String>,
    pub(crate) detached: bool,
    pub(crate) max_restarts: u32,
    pub(crate) max_task_retries: u32,
    pub(crate) max_concurrency: u32,
}

pub(super) struct Caller {
    class: Arc<str>,
    /// Calls not yet pushed, in submission order.
    pub(super) queue: VecDeque<TaskId>,
    conn: Option<u64>,
    /// A borrower's lookup thread is running.
    resolving: bool,
    dead: Option<TaskError>,
    /// Live handle families plus tasks carrying a handle in their arguments.
    pub(super) handles: usize,
    /// The directory counts this process as a holder.
    registered: bool,
    /// An `AddActorHold` is on its way.
    registering: bool,
    max_task_retries: u32,
    owned: Option<Owned>,
}

struct Owned {
    create_tid: TaskId,
    request: Option<u64>,
    /// The directory is deciding whether to restart the actor.
    deciding: bool,
}

pub(super) struct ActorConn {
    actor: ActorId,
    out: Sender,
    in_flight: VecDeque<TaskId>,
    lease: Option<(LeaseId, WorkerId)>,
    addr: Endpoint,
}

impl Caller {
    fn new(class: Arc<str>) -> Self {
        Caller {
            class,
            queue: VecDeque::new(),
            conn: None,
            resolving: false,
            dead: None,
            handles: 1,
            registered: false,
            registering: false,
            max_task_retries: 0,
            owned: None,
        }
    }
}

/// The error of a call on an actor this process has no record of.
pub(super) fn unknown_actor(a: ActorId) -> TaskError {
    TaskError::ActorDied {
        actor: a.to_string(),
        class: "?".into(),
        reason: "this process holds no handle to it".into(),
    }
}

fn died(a: ActorId, class: &str, reason: &str) -> TaskError {
    TaskError::ActorDied { actor: a.to_string(), class: class.to_string(), reason: reason.to_string() }
}

fn reply_error(r: Result<FromRaylet>) -> Option<TaskError> {
    match r {
        Ok(FromRaylet::ActorReply { error, .. }) => error,
        Ok(other) => Some(TaskError::ActorDied {
            actor: "?".into(),
            class: "?".into(),
            reason: format!("unexpected answer from the raylet: {other:?}"),
        }),
        Err(e) => Some(TaskError::ActorDied { actor: "?".into(), class: "?".into(), reason: e.to_string() }),
    }
}

impl CoreWorker {
    /// Registers a new actor owned by this process and starts constructing it.
    pub(crate) fn create_actor(
        &self,
        id: ActorId,
        spawn: ActorSpawn,
        args: Vec<ArgSpec>,
        keeps: Vec<ActorId>,
    ) -> Result<()> {
        let answer = self.raylet.call(|request_id| ToRaylet::RegisterActor {
            request_id,
            actor_id: id,
            class: spawn.class.to_string(),
            name: spawn.name.clone(),
            detached: spawn.detached,
            max_restarts: spawn.max_restarts,
            max_task_retries: spawn.max_task_retries,
        });
        if let Some(e) = reply_error(answer) {
            return Err(Error::Task(e));
        }
        let create_tid = self.root.child(self.task_counter.fetch_add(1, Ordering::Relaxed));
        {
            let mut tasks = self.lock_tasks();
            let mut c = Caller::new(spawn.class.clone());
            c.registered = true;
            c.max_task_retries = spawn.max_task_retries;
            c.owned = Some(Owned { create_tid, request: None, deciding: false });
            tasks.callers.insert(id, c);
        }
        let submit = Submit {
            function: spawn.ctor,
            shape: spawn.shape,
            max_retries: 0,
            target: Target::Create(id),
            kind: TaskKind::ActorCreate { actor_id: id, max_concurrency: spawn.max_concurrency },
            keeps,
        };
        // The construction's return object is held by the actor's record until it dies.
        self.submit_as(create_tid, submit, args);
        Ok(())
    }

    /// Records a handle to an actor that could not be spawned: its calls fail with `error`.
    pub(crate) fn dead_actor(&self, id: ActorId, class: Arc<str>, error: TaskError) {
        let mut c = Caller::new(class);
        c.dead = Some(error);
        self.lock_tasks().callers.insert(id, c);
    }

    /// Submits a method call; returns its return object (owned, one local handle).
    pub(crate) fn submit_actor_call(
        &self,
        actor: ActorId,
        function: &'static str,
        args: Vec<ArgSpec>,
        keeps: Vec<ActorId>,
    ) -> ObjectId {
        let max_retries = self.lock_tasks().callers.get(&actor).map_or(0, |c| c.max_task_retries);
        let submit = Submit {
            function,
            shape: ResourceSet::new(),
            max_retries,
            target: Target::Actor(actor),
            kind: TaskKind::ActorCall { actor_id: actor },
            keeps,
        };
        self.submit(submit, args)
    }

    /// A handle family on `id` was decoded in this process: count it, and tell the
    /// directory this process holds the actor if it did not already. Returns once the
    /// directory has counted the hold: the task that carried the handle may finish next
    /// and let the sender's hold go.
    pub(crate) fn actor_borrow(&self, id: ActorId, class: Arc<str>, max_task_retries: u32) {
        let register = {
            let mut tasks = self.lock_tasks();
            // Another thread is registering this process's hold: it is not counted yet, so
            // wait for it, as this decode must not return before the hold is counted.
            tasks = self
                .actor_cv
                .wait_while(tasks, |t| t.callers.get(&id).is_some_and(|c| c.registering))
                .unwrap_or_else(|p| p.into_inner());
            match tasks.callers.get_mut(&id) {
                Some(c) => {
                    c.handles += 1;
                    let need = !c.registered && !c.registering && c.dead.is_none();
                    c.registering |= need;
                    need
                }
                None => {
                    let mut c = Caller::new(class);
                    c.registering = true;
                    c.max_task_retries = max_task_retries;
                    tasks.callers.insert(id, c);
                    true
                }
            }
        };
        if !register {
            return;
        }
        // Not under `tasks`: the raylet answers a client's messages in order, and one of
        // ours may be waiting for store space.
        let error = reply_error(self.raylet.call(|request_id| ToRaylet::AddActorHold { request_id, actor_id: id }));
        let mut tasks = self.lock_tasks();
        self.actor_cv.notify_all();
        let mut frees = Vec::new();
        match tasks.callers.get_mut(&id) {
            Some(c) => {
                c.registering = false;
                match error {
                    None if c.dead.is_none() => c.registered = true,
                    None => {
                        let _ = self.raylet.send(&ToRaylet::ReleaseActorHold { actor_id: id });
                    }
                    Some(e) => self.kill_caller(&mut tasks, id, e, &mut frees),
                }
                self.maybe_release(&mut tasks, id, &mut frees);
            }
            None if error.is_none() => {
                let _ = self.raylet.send(&ToRaylet::ReleaseActorHold { actor_id: id });
            }
            None => {}
        }
        drop(tasks);
        self.free(frees);
    }

    /// One handle family (or task carrying a handle) on `id` fewer.
    pub(crate) fn actor_handle_dropped(&self, id: ActorId) {
        let mut tasks = self.lock_tasks();
        let mut frees = Vec::new();
        if let Some(c) = tasks.callers.get_mut(&id) {
            c.handles = c.handles.saturating_sub(1);
            self.maybe_release(&mut tasks, id, &mut frees);
        }
        drop(tasks);
        self.free(frees);
    }

    /// `ares::kill`: the directory ends the actor; its calls fail from now on.
    pub(crate) fn kill_actor(&self, id: ActorId) -> Result<()> {
        let error = reply_error(self.raylet.call(|request_id| ToRaylet::KillActor { request_id, actor_id: id }));
        if let Some(e) = error {
            return Err(Error::Task(e));
        }
        let mut tasks = self.lock_tasks();
        let mut frees = Vec::new();
        if let Some(c) = tasks.callers.get(&id) {
            let e = died(id, &c.class, "it was killed with ares::kill");
            self.kill_caller(&mut tasks, id, e, &mut frees);
        }
        drop(tasks);
        self.free(frees);
        Ok(())
    }

    /// Finds a live actor by name (waits while it is being constructed or restarted).
    pub(crate) fn lookup_actor_by_name(&self, name: &str) -> Result<ActorInfo> {
        match self.raylet.call(|request_id| ToRaylet::LookupActor { request_id, by: ActorKey::Name(name.into()) })? {
            FromRaylet::ActorFound { info, .. } => Ok(info),
            FromRaylet::ActorReply { error: Some(e), .. } => Err(Error::Task(e)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to an actor lookup: {other:?}"))),
        }
    }

    /// Drops what `task` kept alive: the actor handles its arguments carried.
    pub(super) fn retire(&self, tasks: &mut Tasks, task: Task, frees: &mut Vec<Free>) {
        for a in task.keeps {
            if let Some(c) = tasks.callers.get_mut(&a) {
                c.handles = c.handles.saturating_sub(1);
                self.maybe_release(tasks, a, frees);
            }
        }
    }

    /// Lets the directory know this process no longer holds `a` once nothing here uses
    /// it, and forgets it once it is also dead (an owner keeps managing a live actor
    /// that borrowers or its detachment keep alive).
    pub(super) fn maybe_release(&self, tasks: &mut Tasks, a: ActorId, frees: &mut Vec<Free>) {
        let Tasks { tasks: all, callers, conns, .. } = &mut *tasks;
        let Some(c) = callers.get_mut(&a) else {
            return;
        };
        // Calls that failed while queued leave their IDs behind.
        while c.queue.front().is_some_and(|t| !all.contains_key(t)) {
            c.queue.pop_front();
        }
        let queued = c.queue.iter().any(|t| all.contains_key(t));
        let busy = c.conn.and_then(|id| conns.get(&id)).is_some_and(|conn| {
            let create = c.owned.as_ref().map(|o| o.create_tid);
            conn.in_flight.iter().any(|t| Some(*t) != create)
        });
        if c.handles > 0 || queued || busy || c.registering {
            return;
        }
        if c.registered && c.dead.is_none() {
            c.registered = false;
            let _ = self.raylet.send(&ToRaylet::ReleaseActorHold { actor_id: a });
        }
        if c.owned.is_some() && c.dead.is_none() {
            return;
        }
        let c = tasks.callers.remove(&a).expect("present");
        if let Some(conn) = c.conn.and_then(|id| tasks.conns.remove(&id)) {
            conn.out.close();
            if let Some((lease_id, _)) = conn.lease {
                let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
            }
        }
        if let Some(o) = c.owned {
            self.drop_create(tasks, o.create_tid, frees);
        }
    }

    /// Forgets an actor's construction task (its arguments and handles are released).
    fn drop_create(&self, tasks: &mut Tasks, create_tid: TaskId, frees: &mut Vec<Free>) {
        if let Some(task) = tasks.tasks.remove(&create_tid) {
            {
                let mut table = self.table.lock();
                frees.extend(table.remove_submitted(&task.arg_ids));
                frees.extend(table.remove_local_ref(ObjectId::for_return(create_tid, 0)));
            }
            self.retire(tasks, task, frees);
        }
    }

    /// The actor is dead for good: every queued and running call fails with `error`.
    pub(super) fn kill_caller(&self, tasks: &mut Tasks, a: ActorId, error: TaskError, frees: &mut Vec<Free>) {
        let Some(c) = tasks.callers.get_mut(&a) else {
            return;
        };
        if c.dead.is_some() {
            return;
        }
        c.dead = Some(error.clone());
        if std::mem::take(&mut c.registered) {
            // Harmless if the directory already declared it dead; needed if only we did.
            let _ = self.raylet.send(&ToRaylet::ReleaseActorHold { actor_id: a });
        }
        let conn = c.conn.take();
        let owned = c.owned.as_mut().map(|o| (o.create_tid, o.request.take()));
        if let Some((_, Some(request_id))) = owned {
            tasks.actor_requests.remove(&request_id);
            let _ = self.raylet.send(&ToRaylet::CancelLeaseRequests { request_ids: vec![request_id] });
        }
        if let Some(conn) = conn.and_then(|id| tasks.conns.remove(&id)) {
            conn.out.close();
            if let Some((lease_id, _)) = conn.lease {
                let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
            }
            for tid in conn.in_flight {
                if owned.is_none_or(|(create, _)| create != tid) {
                    self.fail_task(tasks, tid, error.clone(), frees);
                }
            }
        }
        if let Some((create, _)) = owned {
            self.drop_create(tasks, create, frees);
        }
        self.dispatch_actor(tasks, a, frees);
        self.maybe_release(tasks, a, frees);
    }

    /// A construction task failed before or while running (an argument failed, or the
    /// constructor panicked): the actor is dead.
    pub(super) fn create_failed(&self, tasks: &mut Tasks, a: ActorId, error: &TaskError, frees: &mut Vec<Free>) {
        let _ = self.raylet.send(&ToRaylet::ActorCreateFailed { actor_id: a, error: error.clone() });
        let class = tasks.callers.get(&a).map_or_else(|| "?".into(), |c| c.class.to_string());
        self.kill_caller(tasks, a, died(a, &class, &format!("its construction failed: {error}")), frees);
    }

    /// No node can ever hold the actor's resources.
    pub(super) fn actor_infeasible(&self, tasks: &mut Tasks, a: ActorId, error: TaskError, frees: &mut Vec<Free>) {
        if let Some(o) = tasks.callers.get_mut(&a).and_then(|c| c.owned.as_mut()) {
            o.request = None;
        }
        self.create_failed(tasks, a, &error, frees);
    }

    /// Pushes the ready front of `a`'s queue to its worker; if there is no connection,
    /// asks for a lease (owner) or looks the actor up (borrower).
    pub(super) fn dispatch_actor(&self, tasks: &mut Tasks, a: ActorId, frees: &mut Vec<Free>) {
        let Some(c) = tasks.callers.get_mut(&a) else {
            return;
        };
        if let Some(e) = c.dead.clone() {
            let queued: Vec<TaskId> = c.queue.drain(..).collect();
            for tid in queued {
                self.fail_task(tasks, tid, e.clone(), frees);
            }
            return;
        }
        let Some(conn_id) = c.conn else {
            match &mut c.owned {
                Some(o) if o.request.is_none() && !o.deciding => {
                    let Some(create) = tasks.tasks.get(&o.create_tid).filter(|t| t.unresolved == 0) else {
                        return;
                    };
                    let request_id = self.raylet.next_request_id();
                    let shape = create.shape.clone();
                    if self.raylet.send(&ToRaylet::RequestLease { request_id, shape, dedicated: true }).is_ok() {
                        o.request = Some(request_id);
                        tasks.actor_requests.insert(request_id, a);
                    }
                }
                Some(_) => {}
                None => {
                    if !c.resolving && !c.queue.is_empty() {
                        c.resolving = true;
                        if let Err(e) = self.spawn_resolver(a) {
                            let class = c.class.clone();
                            let reason = format!("could not start a lookup thread: {e}");
                            self.kill_caller(tasks, a, died(a, &class, &reason), frees);
                        }
                    }
                }
            }
            return;
        };
        let Tasks { tasks: all, callers, conns, .. } = &mut *tasks;
        let c = callers.get_mut(&a).expect("checked");
        let Some(conn) = conns.get_mut(&conn_id) else {
            return;
        };
        let mut buf = Vec::new();
        let mut failures = Vec::new();
        while conn.in_flight.len() < ACTOR_PIPELINE {
            let Some(&tid) = c.queue.front() else {
                break;
            };
            let Some(task) = all.get_mut(&tid) else {
                // Failed while queued.
                c.queue.pop_front();
                continue;
            };
            if task.unresolved > 0 {
                break;
            }
            c.queue.pop_front();
            match self.resolve(tid, task).and_then(|spec| self.encode_push(spec)) {
                Ok(payload) => {
                    frame::write_frame(&mut buf, &payload).expect("writing to a Vec cannot fail");
                    conn.in_flight.push_back(tid);
                }
                Err(e) => failures.push((tid, e)),
            }
        }
        if !buf.is_empty() {
            if let Err(e) = conn.out.send_framed(&buf) {
                // The connection's reader sees the break and handles the calls.
                tracing::debug!("push to actor failed: {e}");
            }
        }
        for (tid, e) in failures {
            self.fail_task(tasks, tid, e, frees);
        }
    }

    /// Encodes a push, refusing one over the frame limit.
    pub(super) fn encode_push(&self, spec: TaskSpec) -> std::result::Result<Bytes, TaskError> {
        let function = spec.function.clone();
        let payload = frame::encode(&ToWorker::Push(spec));
        if payload.len() > self.max_frame {
            let reason = format!(
                "the task's arguments encode to {} bytes, over the frame limit of {} bytes; \
                 pass large values as ObjectRefs",
                payload.len(),
                self.max_frame
            );
            return Err(TaskError::Decode { function, what: "arguments".into(), reason });
        }
        Ok(payload)
    }

    /// Connects to a worker and starts the reader of its replies.
    fn open_actor_conn(&self, tasks: &mut Tasks, a: ActorId, addr: &Endpoint) -> std::io::Result<u64> {
        let (out, reader) = Connection::connect(addr)?.split(self.max_frame, OUTBOX_LIMIT)?;
        let conn_id = tasks.next_conn;
        tasks.next_conn += 1;
        spawn_conn_reader(self.me.clone(), ConnKey::Actor(conn_id), reader)?;
        let conn = ActorConn { actor: a, out, in_flight: VecDeque::new(), lease: None, addr: addr.clone() };
        tasks.conns.insert(conn_id, conn);
        Ok(conn_id)
    }

    /// The owner got its actor's dedicated worker: construct the actor, then push calls.
    pub(super) fn on_actor_lease(&self, request_id: u64, lease_id: LeaseId, worker_id: WorkerId, addr: &Endpoint) {
        let mut tasks = self.lock_tasks();
        let Some(a) = tasks.actor_requests.remove(&request_id) else {
            // Withdrawn (the actor was killed) after the grant was sent.
            let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
            return;
        };
        let create_tid = match tasks.callers.get_mut(&a) {
            Some(c) if c.dead.is_none() && !self.stopped.load(Ordering::SeqCst) => {
                let o = c.owned.as_mut().expect("only owners lease");
                o.request = None;
                o.create_tid
            }
            _ => {
                let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
                return;
            }
        };
        let mut frees = Vec::new();
        match self.open_actor_conn(&mut tasks, a, addr) {
            Ok(conn_id) => {
                tasks.conns.get_mut(&conn_id).expect("just added").lease = Some((lease_id, worker_id));
                tasks.callers.get_mut(&a).expect("checked").conn = Some(conn_id);
                let task = tasks.tasks.get_mut(&create_tid).expect("a live actor keeps its construction");
                match self.resolve(create_tid, task).and_then(|spec| self.encode_push(spec)) {
                    Ok(payload) => {
                        let conn = tasks.conns.get_mut(&conn_id).expect("just added");
                        let mut buf = Vec::new();
                        frame::write_frame(&mut buf, &payload).expect("writing to a Vec cannot fail");
                        conn.in_flight.push_back(create_tid);
                        let _ = conn.out.send_framed(&buf);
                        self.dispatch_actor(&mut tasks, a, &mut frees);
                    }
                    Err(e) => self.create_failed(&mut tasks, a, &e, &mut frees),
                }
            }
            Err(e) => {
                let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
                let class = tasks.callers.get(&a).map_or_else(|| "?".into(), |c| c.class.to_string());
                let reason = format!("could not connect to its worker at {addr}: {e}");
                self.create_failed(&mut tasks, a, &died(a, &class, &reason), &mut frees);
            }
        }
        drop(tasks);
        self.free(frees);
    }

    pub(super) fn on_actor_replies(&self, conn_id: u64, replies: Vec<FromWorker>) {
        let mut tasks = self.lock_tasks();
        let mut frees = Vec::new();
        let mut stale = Vec::new();
        let mut touched = Touched::default();
        let Some(a) = tasks.conns.get(&conn_id).map(|c| c.actor) else {
            // The actor was declared dead meanwhile; its calls already failed, but large
            // results they made are in the store.
            drop(tasks);
            let made = replies.into_iter().filter_map(|FromWorker::Done { task_id, outcome }| {
                matches!(outcome, Outcome::Shared { .. }).then(|| ObjectId::for_return(task_id, 0))
            });
            self.delete_stale(made.collect());
            return;
        };
        for FromWorker::Done { task_id, outcome } in replies {
            let Some(conn) = tasks.conns.get_mut(&conn_id) else {
                // The actor was declared dead meanwhile; its calls already failed.
                if matches!(outcome, Outcome::Shared { .. }) {
                    stale.push(ObjectId::for_return(task_id, 0));
                }
                continue;
            };
            if let Some(pos) = conn.in_flight.iter().position(|t| *t == task_id) {
                conn.in_flight.remove(pos);
            }
            let is_create =
                tasks.callers.get(&a).and_then(|c| c.owned.as_ref()).is_some_and(|o| o.create_tid == task_id);
            if is_create {
                self.on_created(&mut tasks, a, conn_id, outcome, &mut frees);
            } else {
                self.complete(&mut tasks, task_id, outcome, &mut frees, &mut stale, &mut touched);
            }
        }
        self.table.notify();
        if !touched.actors.contains(&a) {
            touched.actors.push(a);
        }
        self.dispatch_touched(&mut tasks, touched, &mut frees);
        self.maybe_release(&mut tasks, a, &mut frees);
        drop(tasks);
        self.free(frees);
        self.delete_stale(stale);
    }

    fn on_created(&self, tasks: &mut Tasks, a: ActorId, conn_id: u64, outcome: Outcome, frees: &mut Vec<Free>) {
        if let Outcome::Failed(e) = outcome {
            self.create_failed(tasks, a, &e, frees);
            return;
        }
        let conn = &tasks.conns[&conn_id];
        if let Some((lease_id, worker_id)) = conn.lease {
            let addr = conn.addr.clone();
            let _ = self.raylet.send(&ToRaylet::ActorStarted { actor_id: a, lease_id, worker_id, addr });
        }
    }

    /// The connection to an actor's worker broke: its process died, or was killed.
    pub(super) fn on_actor_conn_lost(&self, conn_id: u64, reason: String) {
        let mut tasks = self.lock_tasks();
        let Some(conn) = tasks.conns.remove(&conn_id) else {
            return;
        };
        conn.out.close();
        let a = conn.actor;
        tracing::debug!(actor = %a, "lost the actor's worker: {reason}");
        let mut frees = Vec::new();
        let Some(c) = tasks.callers.get_mut(&a) else {
            return;
        };
        if c.conn == Some(conn_id) {
            c.conn = None;
        }
        let class = c.class.clone();
        let create = c.owned.as_ref().map(|o| o.create_tid);
        // Calls that may have run are retried only if marked retryable, in their order.
        let mut requeue = Vec::new();
        for tid in conn.in_flight {
            if Some(tid) == create {
                continue;
            }
            let Some(task) = tasks.tasks.get_mut(&tid) else {
                continue;
            };
            task.attempts += 1;
            if task.retries_left > 0 && !self.stopped.load(Ordering::SeqCst) {
                task.retries_left -= 1;
                requeue.push(tid);
            } else {
                let reason = "its process died while this call was running \
                              (set max_task_retries to re-run calls that are safe to repeat)";
                self.fail_task(&mut tasks, tid, died(a, &class, reason), &mut frees);
            }
        }
        if let Some(c) = tasks.callers.get_mut(&a) {
            for tid in requeue.into_iter().rev() {
                c.queue.push_front(tid);
            }
        }
        let is_owner = tasks.callers.get(&a).is_some_and(|c| c.owned.is_some() && c.dead.is_none());
        if is_owner {
            if let Some((lease_id, _)) = conn.lease {
                let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
            }
            // The directory arbitrates between a restart and a kill or release that may
            // have caused this. Asked without `tasks` held (the raylet may be busy with
            // another request of ours); `deciding` keeps new calls from leasing meanwhile.
            if let Some(o) = tasks.callers.get_mut(&a).and_then(|c| c.owned.as_mut()) {
                o.deciding = true;
            }
            drop(tasks);
            let answer = self.raylet.call(|request_id| ToRaylet::ActorWorkerLost { request_id, actor_id: a });
            tasks = self.lock_tasks();
            if let Some(o) = tasks.callers.get_mut(&a).and_then(|c| c.owned.as_mut()) {
                o.deciding = false;
            }
            if let Some(e) = reply_error(answer) {
                self.kill_caller(&mut tasks, a, e, &mut frees);
            }
        }
        self.dispatch_actor(&mut tasks, a, &mut frees);
        self.maybe_release(&mut tasks, a, &mut frees);
        drop(tasks);
        self.free(frees);
    }

    fn spawn_resolver(&self, a: ActorId) -> std::io::Result<()> {
        let weak = self.me.clone();
        std::thread::Builder::new().name("ares-actor-lookup".into()).spawn(move || {
            if let Some(cw) = weak.upgrade() {
                cw.resolve_actor(a);
            }
        })?;
        Ok(())
    }

    /// A borrower finds the actor's worker through the directory (waiting while it is
    /// constructed or restarted) and connects to it.
    fn resolve_actor(&self, a: ActorId) {
        let mut last_error = String::new();
        for attempt in 0..CONNECT_ATTEMPTS {
            let answer = self.raylet.call(|request_id| ToRaylet::LookupActor { request_id, by: ActorKey::Id(a) });
            let info = match answer {
                Ok(FromRaylet::ActorFound { info, .. }) => info,
                other => {
                    let e = reply_error(other).unwrap_or_else(|| died(a, "?", "the lookup found nothing"));
                    return self.resolve_failed(a, e);
                }
            };
            let mut tasks = self.lock_tasks();
            let wanted = tasks.callers.get(&a).is_some_and(|c| c.dead.is_none() && c.conn.is_none());
            if !wanted {
                if let Some(c) = tasks.callers.get_mut(&a) {
                    c.resolving = false;
                }
                return;
            }
            match self.open_actor_conn(&mut tasks, a, &info.addr) {
                Ok(conn_id) => {
                    // In the same locked section as the connect, so a reader that sees the
                    // connection die at once finds it recorded and starts a new lookup.
                    let c = tasks.callers.get_mut(&a).expect("checked");
                    c.conn = Some(conn_id);
                    c.resolving = false;
                    let mut frees = Vec::new();
                    self.dispatch_actor(&mut tasks, a, &mut frees);
                    self.maybe_release(&mut tasks, a, &mut frees);
                    drop(tasks);
                    self.free(frees);
                    return;
                }
                // The directory has not yet seen the old process die: ask again soon.
                Err(e) => last_error = format!("could not connect to {}: {e}", info.addr),
            }
            drop(tasks);
            std::thread::sleep(Duration::from_millis(2 * u64::from(attempt + 1)));
        }
        self.resolve_failed(a, died(a, "?", &last_error));
    }

    fn resolve_failed(&self, a: ActorId, error: TaskError) {
        let mut tasks = self.lock_tasks();
        let mut frees = Vec::new();
        if let Some(c) = tasks.callers.get_mut(&a) {
            c.resolving = false;
            self.kill_caller(&mut tasks, a, error, &mut frees);
        }
        drop(tasks);
        self.free(frees);
    }

    /// Closes every actor connection (at shutdown).
    pub(super) fn close_actor_conns(&self, tasks: &mut Tasks) {
        for (_, conn) in tasks.conns.drain() {
            conn.out.close();
        }
        tasks.callers.clear();
        tasks.actor_requests.clear();
    }
}
