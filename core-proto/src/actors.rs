//! The caller side of actors. Every process that holds handles to an actor keeps one
//! [`Caller`]: an in-order queue of its calls and one connection to the actor's worker.
//! Calls are pushed from the front of the queue as soon as their arguments are ready,
//! never overtaking an earlier call, and the worker runs one connection's calls in
//! arrival order, so calls made from one process run in submission order.
//!
//! The owner (the process that spawned the actor) also leases the actor's dedicated
//! worker, constructs the actor there, and, when the process dies, asks the node's actor
//! directory whether to restart it. A borrower finds the worker through the directory.
//! The directory, not this process, decides when the actor dies (see
//! `ares_raylet_proto::actors`); this side reports holds and follows its decisions.
//!
//! ```text
//!  owner:    create_actor ─▶ RequestLease(dedicated) ─grant─▶ Connect ─connected─▶ push ActorCreate
//!            ─Done─▶ ActorStarted ─▶ calls …   conn lost ─▶ ActorWorkerLost ─restart─▶ RequestLease …
//!  borrower: first call ─▶ LookupActor ─found─▶ Connect ─connected─▶ calls …
//!            connect failed ─▶ LookupActor again after 2 ms × attempt (at most CONNECT_ATTEMPTS)
//! ```

use super::*;
use crate::callers::{CONNECT_ATTEMPTS, Call, Caller, Owned};
use ares_common::wire::ActorInfo;

/// What a spawn asks for (the directory registration is done by the driver first).
pub struct ActorSpawn {
    pub ctor: &'static str,
    pub class: Arc<str>,
    pub shape: ResourceSet,
    pub max_task_retries: u32,
    pub max_concurrency: u32,
    /// It outlives its owner: its construction is reported with `ActorStarted`, so the
    /// head can restart it elsewhere.
    pub detached: bool,
}

/// What [`CoreState::borrow_actor`] did.
#[derive(Debug, PartialEq)]
pub enum Borrow {
    /// The handle is counted and the directory knows this process holds the actor.
    Done,
    /// The handle is counted; the directory's answer to this process's hold is awaited
    /// ([`CoreState::hold_pending`]).
    Registering,
    /// Another handle's registration is under way and nothing was counted: wait until
    /// it is answered, then borrow again.
    Busy,
}

/// The error of a call on an actor this process has no record of.
pub(super) fn unknown_actor(a: ActorId) -> TaskError {
    TaskError::ActorDied {
        actor: a.to_string(),
        class: "?".into(),
        reason: "this process holds no handle to it".into(),
    }
}

pub(super) fn died(a: ActorId, class: &str, reason: &str) -> TaskError {
    TaskError::ActorDied { actor: a.to_string(), class: class.to_string(), reason: reason.to_string() }
}

impl CoreState {
    /// Starts constructing an actor owned by this process, already registered in the
    /// directory: leases a dedicated worker and pushes the construction `create_tid` there.
    #[allow(clippy::too_many_arguments)]
    pub fn create_actor(
        &mut self,
        now: Instant,
        id: ActorId,
        spawn: ActorSpawn,
        create_tid: TaskId,
        args: Vec<Arg>,
        keeps: Vec<ActorId>,
        carried: Vec<ObjectId>,
    ) {
        let mut c = Caller::new(spawn.class.clone());
        c.registered = true;
        c.max_task_retries = spawn.max_task_retries;
        let detached_shape = spawn.detached.then(|| spawn.shape.clone());
        c.owned = Some(Owned { create_tid, detached_shape, request: None, deciding: false });
        self.callers.insert(id, c);
        let submit = Submit {
            function: spawn.ctor,
            shape: spawn.shape,
            strategy: ares_common::Strategy::Default,
            max_retries: 0,
            target: Target::Create(id),
            kind: TaskKind::ActorCreate { actor_id: id, max_concurrency: spawn.max_concurrency },
            keeps,
            carried,
            num_returns: 1,
        };
        // The construction's return object is held by the actor's record until it dies.
        self.submit(now, create_tid, submit, args);
    }

    /// Records a handle to an actor that could not be spawned: its calls fail with `error`.
    pub fn dead_actor(&mut self, id: ActorId, class: Arc<str>, error: TaskError) {
        let mut c = Caller::new(class);
        c.dead = Some(error);
        self.callers.insert(id, c);
    }

    /// How often a call of `actor` interrupted by its process's death is re-run.
    pub fn actor_max_task_retries(&self, actor: ActorId) -> u32 {
        self.callers.get(&actor).map_or(0, |c| c.max_task_retries)
    }

    /// Submits a method call as `task_id`; returns its return object.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_actor_call(
        &mut self,
        now: Instant,
        task_id: TaskId,
        actor: ActorId,
        function: &'static str,
        args: Vec<Arg>,
        keeps: Vec<ActorId>,
        carried: Vec<ObjectId>,
    ) -> ObjectId {
        let submit = Submit {
            function,
            shape: ResourceSet::new(),
            strategy: ares_common::Strategy::Default,
            max_retries: self.actor_max_task_retries(actor),
            target: Target::Actor(actor),
            kind: TaskKind::ActorCall { actor_id: actor },
            keeps,
            carried,
            num_returns: 1,
        };
        self.submit(now, task_id, submit, args)
    }

    /// A handle family on `id` was decoded in this process: count it, and tell the
    /// directory this process holds the actor if it did not already. The decode must not
    /// return before the hold is counted (the task that carried the handle may finish
    /// next and let the sender's hold go), so the driver waits while
    /// [`CoreState::hold_pending`] says so.
    pub fn borrow_actor(&mut self, id: ActorId, class: Arc<str>, max_task_retries: u32, home: Home) -> Borrow {
        let need = match self.callers.get_mut(&id) {
            Some(c) if c.registering => return Borrow::Busy,
            Some(c) => {
                c.handles += 1;
                let need = !c.registered && c.dead.is_none();
                c.registering |= need;
                need
            }
            None => {
                let mut c = Caller::new(class);
                c.registering = true;
                c.max_task_retries = max_task_retries;
                c.home = home;
                self.callers.insert(id, c);
                true
            }
        };
        if !need {
            return Borrow::Done;
        }
        let request_id = self.request_id();
        self.requests.insert(request_id, Request::AddHold(id));
        self.send_dir(id, ToRaylet::AddActorHold { request_id, actor_id: id });
        Borrow::Registering
    }

    /// Sends `msg` to the directory that keeps `a`: its home node's raylet, or this
    /// node's.
    fn send_dir(&mut self, a: ActorId, msg: ToRaylet) {
        match self.callers.get(&a).and_then(|c| c.home) {
            Some((node, addr)) => self.out.push_back(Output::ToNode { node, addr, msg }),
            None => self.send_raylet(msg),
        }
    }

    /// The connection to `node`'s raylet ended: actors whose directory is there cannot
    /// be held or found any more (that node dropped this process's holds with the
    /// connection), so their calls fail.
    pub(super) fn actor_home_lost(&mut self, node: NodeId, reason: &str) {
        for a in self.callers.homed_at(node) {
            let waiting: Vec<RequestId> = self
                .requests
                .iter()
                .filter(|(_, r)| matches!(r, Request::AddHold(x) | Request::Lookup(x) if *x == a))
                .map(|(id, _)| *id)
                .collect();
            for id in waiting {
                self.requests.remove(&id);
            }
            let class = self.callers.get(&a).map(|c| c.class.to_string()).unwrap_or_default();
            let error = died(a, &class, &format!("lost the connection to node {node}, which keeps it ({reason})"));
            if let Some(c) = self.callers.get_mut(&a) {
                c.registering = false;
                c.registered = false;
                c.resolving = false;
            }
            self.kill_caller(a, error);
            self.maybe_release(a);
        }
    }

    /// Whether this process's hold on `id` awaits the directory's answer.
    pub fn hold_pending(&self, id: ActorId) -> bool {
        self.callers.get(&id).is_some_and(|c| c.registering)
    }

    pub(super) fn on_hold_added(&mut self, id: ActorId, error: Option<TaskError>) {
        self.changed = true;
        // Workers that lent this process the handle can let their holds go now.
        for (worker, via) in self.hold_acks.remove(&id).unwrap_or_default() {
            self.relay(via, worker, ares_common::wire::PeerMsg::ActorsHeld { actors: vec![id] });
        }
        match self.callers.get_mut(&id) {
            Some(c) => {
                c.registering = false;
                match error {
                    None if c.dead.is_none() => c.registered = true,
                    None => self.send_dir(id, ToRaylet::ReleaseActorHold { actor_id: id }),
                    Some(e) => self.kill_caller(id, e),
                }
                self.maybe_release(id);
            }
            None if error.is_none() => self.send_raylet(ToRaylet::ReleaseActorHold { actor_id: id }),
            None => {}
        }
    }

    /// The value of the owned object `outer` holds handles to `actors`: this process
    /// keeps holding them while the object lives (a process that reads the handles
    /// registers its own hold first).
    pub fn hold_actors_in(&mut self, outer: ObjectId, actors: &[ActorId]) {
        let held = self.callers.count_handles(actors.iter().copied());
        if held.is_empty() {
            return;
        }
        if self.table.tracks(outer) {
            self.actors_in_values.entry(outer).or_default().extend(held);
        } else {
            for a in held {
                self.drop_handle(a);
            }
            self.flush_frees();
        }
    }

    /// One handle on `a` fewer; releases this process's hold if nothing else uses it.
    pub(super) fn drop_handle(&mut self, a: ActorId) {
        if let Some(c) = self.callers.get_mut(&a) {
            c.handles = c.handles.saturating_sub(1);
            self.maybe_release(a);
        }
    }

    /// This worker's task `task` returns values holding handles to `actors` to `caller`:
    /// this process keeps holding them until the caller answers `ActorsHeld` (or is
    /// gone), and tells it through this node's raylet, where the caller leased the
    /// worker and so is known.
    pub fn lend_actors(&mut self, caller: WorkerId, task: TaskId, actors: Vec<ares_common::wire::LentActor>) {
        let lent = self.callers.count_handles(actors.iter().map(|a| a.id));
        if lent.is_empty() {
            return;
        }
        let node = self.node();
        if self.relay(node, caller, ares_common::wire::PeerMsg::ActorsLent { task, actors }) {
            self.lent_actors.entry(caller).or_default().extend(lent);
        } else {
            for a in lent {
                self.drop_handle(a);
            }
        }
        self.flush_frees();
    }

    /// A worker (`from`, through `via`) lent this process handles to `actors` inside the
    /// return values of `task`: hold each while the return objects live, and tell the
    /// worker once the hold is counted.
    pub(super) fn on_actors_lent(
        &mut self,
        from: WorkerId,
        via: NodeId,
        task: TaskId,
        actors: Vec<ares_common::wire::LentActor>,
    ) {
        let n = self.tasks.get(&task).map_or(1, |t| t.num_returns);
        let holder = returns_of(task, n).find(|r| self.table.tracks(*r));
        let mut held_now = Vec::new();
        for a in actors {
            let home = match a.home_addr {
                Some(addr) if a.home_node != self.node() => Some((a.home_node, addr)),
                _ => None,
            };
            match self.borrow_actor(a.id, Arc::from(a.class.as_str()), a.max_task_retries, home) {
                Borrow::Done => held_now.push(a.id),
                Borrow::Registering => self.hold_acks.entry(a.id).or_default().push((from, via)),
                Borrow::Busy => {
                    // A registration is already on its way: count this handle and ack
                    // with it.
                    if let Some(c) = self.callers.get_mut(&a.id) {
                        c.handles += 1;
                    }
                    self.hold_acks.entry(a.id).or_default().push((from, via));
                }
            }
            match holder {
                Some(r) => self.actors_in_values.entry(r).or_default().push(a.id),
                // The return objects are gone already: nothing keeps the handle.
                None => self.drop_handle(a.id),
            }
        }
        if !held_now.is_empty() {
            self.relay(via, from, ares_common::wire::PeerMsg::ActorsHeld { actors: held_now });
        }
    }

    /// The caller `from` holds `actors` itself now: the holds lent to it go.
    pub(super) fn on_actors_held(&mut self, from: WorkerId, actors: Vec<ActorId>) {
        for a in actors {
            let Some(lent) = self.lent_actors.get_mut(&from) else { return };
            let Some(pos) = lent.iter().position(|x| *x == a) else { continue };
            lent.swap_remove(pos);
            if lent.is_empty() {
                self.lent_actors.remove(&from);
            }
            self.drop_handle(a);
        }
    }

    /// `worker` is gone: the holds lent to it go.
    pub(super) fn lent_to_gone(&mut self, worker: WorkerId) {
        for a in self.lent_actors.remove(&worker).unwrap_or_default() {
            self.drop_handle(a);
        }
    }

    /// One handle family (or task carrying a handle) on `id` fewer.
    pub fn actor_handle_dropped(&mut self, id: ActorId) {
        self.drop_handle(id);
        self.flush_frees();
    }

    /// The directory ended the actor at this process's request (`ares::kill`): its calls
    /// fail from now on.
    pub fn actor_killed(&mut self, id: ActorId) {
        if let Some(c) = self.callers.get(&id) {
            let e = died(id, &c.class, "it was killed with ares::kill");
            self.kill_caller(id, e);
        }
        self.flush_frees();
    }

    /// Lets the directory know this process no longer holds `a` once nothing here uses
    /// it, and forgets it once it is also dead (an owner keeps managing a live actor
    /// that borrowers or its detachment keep alive).
    pub(super) fn maybe_release(&mut self, a: ActorId) {
        let tasks = &self.tasks;
        if !self.callers.unused(a, |t| tasks.contains(t)) {
            return;
        }
        let c = self.callers.get_mut(&a).expect("present");
        if c.registered && c.dead.is_none() {
            c.registered = false;
            self.send_dir(a, ToRaylet::ReleaseActorHold { actor_id: a });
        }
        let c = self.callers.get(&a).expect("present");
        if c.owned.is_some() && c.dead.is_none() {
            return;
        }
        let (c, conn) = self.callers.remove(&a).expect("present");
        if let Some((conn_id, conn)) = conn {
            self.out.push_back(Output::Close(conn_id));
            if let Some((lease_id, _)) = conn.lease {
                self.send_raylet(ToRaylet::ReturnLease { lease_id, worker_broken: true });
            }
        }
        if let Some(o) = c.owned {
            self.drop_create(o.create_tid);
        }
    }

    /// Forgets an actor's construction task (its arguments and handles are released).
    fn drop_create(&mut self, create_tid: TaskId) {
        if let Some(task) = self.tasks.remove(&create_tid) {
            self.release_args(&task.arg_ids);
            // Its result never resolves (the construction stays "running" while the actor
            // lives): end it, or the table would keep it pending for ever.
            let rid = ObjectId::for_return(create_tid, 0);
            if matches!(self.table.status(rid), Some(Status::Pending)) {
                let actor = match task.target {
                    Target::Create(a) => a.to_string(),
                    _ => "?".into(),
                };
                let reason = "its actor ended; a construction has no value to read".into();
                self.table.set_failed(rid, TaskError::ActorDied { actor, class: task.function.to_string(), reason });
            }
            self.table.remove_local_ref(rid);
            self.retire(&mut { task });
        }
    }

    /// The actor is dead for good: every queued and running call fails with `error`.
    pub(super) fn kill_caller(&mut self, a: ActorId, error: TaskError) {
        let Some(c) = self.callers.get_mut(&a) else {
            return;
        };
        if c.dead.is_some() {
            return;
        }
        c.dead = Some(error.clone());
        c.retry_at = None;
        let unregister = std::mem::take(&mut c.registered);
        let owned = c.owned.as_mut().map(|o| (o.create_tid, o.request.take()));
        if unregister {
            // Harmless if the directory already declared it dead; needed if only we did.
            self.send_dir(a, ToRaylet::ReleaseActorHold { actor_id: a });
        }
        if let Some((_, Some(request_id))) = owned {
            self.requests.remove(&request_id);
            self.send_raylet(ToRaylet::CancelLeaseRequests { request_ids: vec![request_id] });
        }
        if let Some((conn_id, conn)) = self.callers.take_conn(&a) {
            self.out.push_back(Output::Close(conn_id));
            if let Some((lease_id, _)) = conn.lease {
                self.send_raylet(ToRaylet::ReturnLease { lease_id, worker_broken: true });
            }
            for (tid, _) in conn.in_flight {
                if owned.is_none_or(|(create, _)| create != tid) {
                    self.fail_task(tid, error.clone());
                }
            }
        }
        if let Some((create, _)) = owned {
            self.drop_create(create);
        }
        self.fail_queued_calls(a);
        self.maybe_release(a);
    }

    /// A construction task failed before or while running (an argument failed, or the
    /// constructor panicked): the actor is dead.
    pub(super) fn create_failed(&mut self, a: ActorId, error: &TaskError) {
        self.send_raylet(ToRaylet::ActorCreateFailed { actor_id: a, error: error.clone() });
        let class = self.callers.get(&a).map_or_else(|| "?".into(), |c| c.class.to_string());
        self.kill_caller(a, died(a, &class, &format!("its construction failed: {error}")));
    }

    /// No node can ever hold the actor's resources.
    pub(super) fn actor_infeasible(&mut self, a: ActorId, error: TaskError) {
        if let Some(o) = self.callers.get_mut(&a).and_then(|c| c.owned.as_mut()) {
            o.request = None;
        }
        self.create_failed(a, &error);
    }

    /// Fails every queued call of a dead actor.
    fn fail_queued_calls(&mut self, a: ActorId) {
        let Some(c) = self.callers.get_mut(&a) else {
            return;
        };
        let Some(e) = c.dead.clone() else {
            return;
        };
        let queued: Vec<TaskId> = c.queue.drain(..).collect();
        for tid in queued {
            self.fail_task(tid, e.clone());
        }
    }

    /// Pushes the ready front of `a`'s queue to its worker; if there is no connection,
    /// asks for a lease (owner) or looks the actor up (borrower).
    pub(super) fn dispatch_actor(&mut self, now: Instant, a: ActorId) {
        let Some(c) = self.callers.get_mut(&a) else {
            return;
        };
        if c.dead.is_some() {
            self.fail_queued_calls(a);
            return;
        }
        if c.conn.is_none() {
            match &mut c.owned {
                Some(o) if o.request.is_none() && !o.deciding => {
                    let Some(create) = self.tasks.get(&o.create_tid).filter(|t| t.ready()) else {
                        return;
                    };
                    let request_id = self.next_request;
                    self.next_request = self.next_request.next();
                    let shape = create.shape.clone();
                    o.request = Some(request_id);
                    self.requests.insert(request_id, Request::ActorLease(a));
                    self.send_raylet(ToRaylet::RequestLease {
                        request_id,
                        shape,
                        dedicated: true,
                        strategy: ares_common::Strategy::Default,
                        spilled: false,
                    });
                }
                Some(_) => {}
                None => {
                    if !c.resolving && !c.queue.is_empty() {
                        c.resolving = true;
                        c.attempts = 0;
                        self.lookup(a);
                    }
                }
            }
            return;
        }
        let mut failures = Vec::new();
        let values = Values::new(&self.table, &self.lookups);
        let (tasks, owner, max_frame) = (&self.tasks, self.cfg.address.worker, self.cfg.max_frame);
        let sent = self.callers.push_calls(a, now, |tid, buf| {
            let Some(task) = tasks.get(&tid) else {
                return Call::Gone;
            };
            if !task.ready() {
                return Call::NotReady;
            }
            match resolve_now(&values, owner, tid, task).and_then(|spec| encode_push(spec, max_frame)) {
                Ok(payload) => {
                    payload.write_to(buf);
                    Call::Pushed
                }
                Err(e) => {
                    failures.push((tid, e));
                    Call::Failed
                }
            }
        });
        if let Some((conn, bytes)) = sent {
            // The connection's reader sees a break and reports it.
            self.out.push_back(Output::Send { conn, bytes });
        }
        for (tid, e) in failures {
            self.fail_task(tid, e);
        }
    }

    /// A borrower asks the directory where the actor runs (the answer waits while it is
    /// constructed or restarted).
    fn lookup(&mut self, a: ActorId) {
        let request_id = self.request_id();
        self.requests.insert(request_id, Request::Lookup(a));
        self.send_dir(a, ToRaylet::LookupActor { request_id, by: ares_common::wire::ActorKey::Id(a) });
    }

    /// The raylet connection (to `socket`) ended for `reason`: requests about actors
    /// will not be answered, and every pending and later task fails with
    /// `RayletUnavailable` (its workers and stored values went with it).
    pub fn handle_raylet_lost(&mut self, socket: &str, reason: &str) {
        // The daemon said why it went, if it could.
        let goodbye = self.raylets.take_goodbye();
        let reason = goodbye.as_deref().unwrap_or(reason);
        // Nobody is left to answer or cancel lease requests.
        self.leases.withdraw_requests();
        let requests: Vec<(RequestId, Request)> = self.requests.drain().collect();
        for (_, r) in requests {
            match r {
                Request::AddHold(a) => self.on_hold_added(a, Some(died(a, "?", "lost the connection to the raylet"))),
                Request::Lookup(a) => self.resolve_failed(a, died(a, "?", "lost the connection to the raylet")),
                Request::WorkerLost(a) | Request::ActorLease(a) => {
                    self.kill_caller(a, died(a, "?", "lost the connection to the raylet"))
                }
            }
        }
        self.stop_with(TaskError::RayletUnavailable { socket: socket.to_string(), reason: reason.to_string() });
        self.changed = true;
        self.flush_frees();
    }

    /// Lookups whose retry time has come.
    pub(super) fn run_due_lookups(&mut self, now: Instant) {
        for a in self.callers.due_lookups(now) {
            self.lookup(a);
        }
    }

    pub(super) fn on_actor_found(&mut self, a: ActorId, info: ActorInfo) {
        let wanted = self.callers.get(&a).is_some_and(|c| c.dead.is_none() && c.conn.is_none());
        if !wanted {
            if let Some(c) = self.callers.get_mut(&a) {
                c.resolving = false;
            }
            return;
        }
        let conn = self.conn_id();
        self.out.push_back(Output::Connect { conn, endpoint: info.addr.clone() });
        self.callers.open(a, conn, info.addr, None);
    }

    /// The connection to `a`'s worker is open: the owner constructs the actor on a
    /// fresh lease; everyone pushes the queued calls.
    pub(super) fn actor_connected(&mut self, now: Instant, a: ActorId, conn_id: ConnId, owned_lease: bool) {
        if owned_lease {
            let Some(create_tid) = self.callers.get(&a).and_then(|c| c.owned.as_ref()).map(|o| o.create_tid) else {
                return;
            };
            let task = self.tasks.get(&create_tid).expect("a live actor keeps its construction");
            match resolve_now(
                &super::Values::new(&self.table, &self.lookups),
                self.cfg.address.worker,
                create_tid,
                task,
            )
            .and_then(|spec| encode_push(spec, self.cfg.max_frame))
            {
                Ok(payload) => {
                    let conn = self.callers.conn_mut(conn_id).expect("connected");
                    let mut buf = Vec::new();
                    payload.write_to(&mut buf);
                    conn.in_flight.push_back((create_tid, now));
                    self.out.push_back(Output::Send { conn: conn_id, bytes: buf });
                }
                Err(e) => {
                    self.create_failed(a, &e);
                    return;
                }
            }
        } else if let Some(c) = self.callers.get_mut(&a) {
            c.resolving = false;
        }
        self.dispatch_actor(now, a);
        self.maybe_release(a);
    }

    /// The connection to `a`'s worker (already removed from its caller) could not be
    /// opened.
    pub(super) fn actor_connect_failed(
        &mut self,
        now: Instant,
        a: ActorId,
        lease: Option<(LeaseId, WorkerId)>,
        endpoint: &Endpoint,
        reason: &str,
    ) {
        let Some(c) = self.callers.get_mut(&a) else {
            return;
        };
        if let Some((lease_id, _)) = lease {
            let class = c.class.to_string();
            self.send_raylet(ToRaylet::ReturnLease { lease_id, worker_broken: true });
            let reason = format!("could not connect to its worker at {endpoint}: {reason}");
            self.create_failed(a, &died(a, &class, &reason));
            return;
        }
        // The directory has not yet seen the old process die: ask again soon.
        c.attempts += 1;
        if c.attempts >= CONNECT_ATTEMPTS {
            let e = died(a, "?", &format!("could not connect to {endpoint}: {reason}"));
            self.resolve_failed(a, e);
            return;
        }
        let at = now + Duration::from_millis(2 * u64::from(c.attempts));
        c.retry_at = Some(at);
        self.timer_changed = true;
    }

    pub(super) fn resolve_failed(&mut self, a: ActorId, error: TaskError) {
        if let Some(c) = self.callers.get_mut(&a) {
            c.resolving = false;
            self.kill_caller(a, error);
        }
    }

    /// The owner got its actor's dedicated worker: connect, then construct the actor.
    pub(super) fn on_actor_lease(&mut self, a: ActorId, lease_id: LeaseId, worker_id: WorkerId, endpoint: Endpoint) {
        let stopped = self.stopped.is_some();
        match self.callers.get_mut(&a) {
            Some(c) if c.dead.is_none() && !stopped => {
                c.owned.as_mut().expect("only owners lease").request = None;
                let conn = ConnId(self.next_conn);
                self.next_conn += 1;
                self.out.push_back(Output::Connect { conn, endpoint: endpoint.clone() });
                self.callers.open(a, conn, endpoint, Some((lease_id, worker_id)));
            }
            _ => self.send_raylet(ToRaylet::ReturnLease { lease_id, worker_broken: true }),
        }
    }

    pub(super) fn on_actor_replies(&mut self, now: Instant, conn_id: ConnId, replies: Vec<FromWorker>) {
        let mut stale = Vec::new();
        let mut touched = Touched::default();
        let Some(a) = self.callers.conn(conn_id).map(|c| c.actor) else {
            return;
        };
        for FromWorker::Done { task_id, outcome, copies, contained } in replies {
            if !contained.is_empty() {
                self.hold_returned(task_id, &contained);
            }
            let here = self.node();
            for id in copies {
                self.table.add_copy(id, here);
            }
            let Some(conn) = self.callers.conn_mut(conn_id) else {
                // The actor was declared dead meanwhile; its calls already failed, but
                // large results they made are in the store.
                if matches!(outcome, Outcome::Shared { .. }) {
                    stale.push(ObjectId::for_return(task_id, 0));
                }
                continue;
            };
            conn.answered = true;
            if let Some(pos) = conn.in_flight.iter().position(|(t, _)| *t == task_id) {
                conn.in_flight.remove(pos);
            }
            let is_create =
                self.callers.get(&a).and_then(|c| c.owned.as_ref()).is_some_and(|o| o.create_tid == task_id);
            if is_create {
                self.on_created(a, conn_id, outcome);
            } else {
                self.complete(now, task_id, outcome, self.node(), &mut stale, &mut touched);
            }
        }
        if let Some(c) = self.callers.get_mut(&a)
            && c.conn == Some(conn_id)
        {
            c.attempts = 0;
        }
        self.changed = true;
        if !touched.actors.contains(&a) {
            touched.actors.push(a);
        }
        self.dispatch_touched(now, touched);
        self.maybe_release(a);
        self.delete_stale(stale);
    }

    fn on_created(&mut self, a: ActorId, conn_id: ConnId, outcome: Outcome) {
        if let Outcome::Failed(e) = outcome {
            self.create_failed(a, &e);
            return;
        }
        let Some(conn) = self.callers.conn(conn_id) else { return };
        if let Some((lease_id, worker_id)) = conn.lease {
            let addr = conn.endpoint.clone();
            let restart = self.restart_spec(a);
            self.send_raylet(ToRaylet::ActorStarted { actor_id: a, lease_id, worker_id, addr, restart });
        }
    }

    /// A detached actor's construction as pushed, if every argument is inline: the head
    /// can run it again on another node (stored arguments die with their owner).
    fn restart_spec(&self, a: ActorId) -> Option<ares_common::wire::RestartSpec> {
        let o = self.callers.get(&a)?.owned.as_ref()?;
        let shape = o.detached_shape.clone()?;
        let task = self.tasks.get(&o.create_tid)?;
        let spec =
            resolve_now(&super::Values::new(&self.table, &self.lookups), self.cfg.address.worker, o.create_tid, task)
                .ok()?;
        let inline = spec.args.iter().all(|arg| matches!(arg, WireArg::Inline(_)));
        inline.then_some(ares_common::wire::RestartSpec { spec, shape })
    }

    /// The connection to an actor's worker broke: its process died, or was killed.
    pub(super) fn on_actor_conn_lost(&mut self, now: Instant, conn_id: ConnId, reason: &str) {
        let Some(conn) = self.callers.remove_conn(conn_id) else {
            return;
        };
        let (a, lease) = (conn.actor, conn.lease);
        tracing::debug!(actor = %a, "lost the actor's worker: {reason}");
        let Some(c) = self.callers.get(&a) else {
            return;
        };
        let class = c.class.clone();
        let create = c.owned.as_ref().map(|o| o.create_tid);
        // Calls that may have run are retried only if marked retryable, in their order.
        let calls = conn.in_flight.into_iter().map(|(t, _)| t).filter(|t| Some(*t) != create);
        let reason = "its process died while this call was running \
                      (set max_task_retries to re-run calls that are safe to repeat)";
        let (requeue, _) = self.retry_or_fail(calls, |_| died(a, &class, reason));
        if let Some(c) = self.callers.get_mut(&a) {
            for tid in requeue.into_iter().rev() {
                c.queue.push_front(tid);
            }
        }
        let is_owner = self.callers.get(&a).is_some_and(|c| c.owned.is_some() && c.dead.is_none());
        if is_owner {
            if let Some((lease_id, _)) = lease {
                self.send_raylet(ToRaylet::ReturnLease { lease_id, worker_broken: true });
            }
            // The directory arbitrates between a restart and a kill or release that may
            // have caused this; `deciding` keeps new calls from leasing meanwhile.
            if let Some(o) = self.callers.get_mut(&a).and_then(|c| c.owned.as_mut()) {
                o.deciding = true;
            }
            let request_id = self.request_id();
            self.requests.insert(request_id, Request::WorkerLost(a));
            self.send_raylet(ToRaylet::ActorWorkerLost { request_id, actor_id: a });
            return;
        }
        self.dispatch_actor(now, a);
        self.maybe_release(a);
    }

    /// The directory answered whether the owner's lost actor restarts (`None`: it does).
    pub(super) fn on_restart_decided(&mut self, now: Instant, a: ActorId, error: Option<TaskError>) {
        if let Some(o) = self.callers.get_mut(&a).and_then(|c| c.owned.as_mut()) {
            o.deciding = false;
        }
        if let Some(e) = error {
            self.kill_caller(a, e);
        }
        self.dispatch_actor(now, a);
        self.maybe_release(a);
    }
}
