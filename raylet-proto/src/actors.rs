//! The actor directory: which actors exist on the node, where each runs, who holds
//! handles to it, and whether it may be restarted. A pure state machine like
//! [`crate::policy`]: events in, [`ActorOutput`]s out, no IO.
//!
//! The owner does the mechanics (leasing a worker, constructing the actor, pushing
//! calls); the directory is the single arbiter of the actor's fate, so that an owner
//! and a `kill`, or a crash and the last handle being dropped, never disagree:
//!
//! ```text
//!  register ─▶ Pending ─started─▶ Alive ─worker died─▶ Lost ─owner asks─▶ Restarting ─started─▶ Alive
//!                 │                  │                   └─(no restarts left)─▶ Dead
//!                 └──── kill / last hold released / owner gone / constructor failed ────▶ Dead
//! ```
//!
//! Lookups of an actor that is not yet running wait until it runs or dies.

use ares_common::RequestId;
use std::collections::VecDeque;

use ares_common::ClientId;
use ares_common::det::DetMap;
use ares_common::error::TaskError;
use ares_common::wire::{ActorInfo, ActorKey};
use ares_common::{ActorId, Endpoint, LeaseId, WorkerId};

/// Dead actors remembered, so late callers learn why instead of "unknown actor".
const DEAD_REMEMBERED: usize = 10_000;

/// What the driver of the directory must do.
#[derive(Debug, PartialEq)]
pub enum ActorOutput {
    /// Answer a request: `None` is success.
    Reply {
        /// Who asked.
        client: ClientId,
        /// Their request.
        request_id: RequestId,
        /// Why it failed.
        error: Option<TaskError>,
    },
    /// Answer a lookup.
    Found {
        /// Who asked.
        client: ClientId,
        /// Their request.
        request_id: RequestId,
        /// The actor (its address as its owner reported it, for clients on this node).
        info: ActorInfo,
        /// The worker hosting it (clients on other nodes reach it at its QUIC address).
        worker: WorkerId,
    },
    /// A detached actor died for good (in a cluster the head forgets it).
    DetachedGone(ActorId),
    /// A named actor died: its name is free again (in a cluster the head is told).
    NameFreed {
        /// The name.
        name: String,
        /// The actor that held it.
        actor_id: ActorId,
    },
    /// Kill the actor's process (it is dead).
    KillWorker(WorkerId),
    /// The actor is detached: its lease no longer belongs to the owner's connection.
    DetachLease {
        /// The owner.
        client: ClientId,
        /// The lease.
        lease_id: LeaseId,
    },
}

#[derive(Debug)]
enum State {
    Pending,
    Alive {
        worker: WorkerId,
        addr: Endpoint,
    },
    /// Its process died; the owner has not yet asked whether to restart.
    Lost,
    Restarting,
}

#[derive(Debug)]
struct Entry {
    class: String,
    name: Option<String>,
    /// `None` once the owner is gone (a detached actor outlives it).
    owner: Option<ClientId>,
    detached: bool,
    max_restarts: u32,
    max_task_retries: u32,
    restarts: u32,
    state: State,
    holds: DetMap<ClientId, u32>,
    waiters: Vec<(ClientId, RequestId)>,
}

/// Registration parameters of one actor.
#[derive(Debug, Clone)]
pub struct NewActor {
    /// The actor.
    pub actor_id: ActorId,
    /// Its Rust type.
    pub class: String,
    /// Its name, if any.
    pub name: Option<String>,
    /// Whether it outlives its owner and handles.
    pub detached: bool,
    /// Restart budget (`u32::MAX`: unlimited).
    pub max_restarts: u32,
    /// How often a call interrupted by the process's death is re-run (every caller's).
    pub max_task_retries: u32,
}

/// The node's actors.
#[derive(Debug, Default)]
pub struct ActorDirectory {
    live: DetMap<ActorId, Entry>,
    names: DetMap<String, ActorId>,
    dead: DetMap<ActorId, (String, String)>,
    dead_order: VecDeque<ActorId>,
}

impl ActorDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The actor hosted by `worker`, if any.
    pub fn hosted_by(&self, worker: WorkerId) -> Option<ActorId> {
        self.live
            .iter()
            .find(|(_, e)| matches!(&e.state, State::Alive { worker: w, .. } if *w == worker))
            .map(|(id, _)| *id)
    }

    /// Live (not dead) actors.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Live actors by state.
    pub fn counts(&self) -> ares_common::wire::ActorCounts {
        let mut c = ares_common::wire::ActorCounts::default();
        for e in self.live.values() {
            match e.state {
                State::Pending => c.pending += 1,
                State::Alive { .. } => c.alive += 1,
                State::Lost | State::Restarting => c.restarting += 1,
            }
        }
        c
    }

    /// Whether no actor is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// `client` registers a new actor it owns, and holds it.
    pub fn register(&mut self, client: ClientId, request_id: RequestId, a: NewActor) -> Vec<ActorOutput> {
        if self.live.contains_key(&a.actor_id) || self.dead.contains_key(&a.actor_id) {
            let error = TaskError::ActorDied {
                actor: a.actor_id.to_string(),
                class: a.class,
                reason: "an actor with this ID was already registered".into(),
            };
            return vec![ActorOutput::Reply { client, request_id, error: Some(error) }];
        }
        if let Some(name) = &a.name {
            if self.names.contains_key(name) {
                let error = TaskError::ActorNameTaken { name: name.clone() };
                return vec![ActorOutput::Reply { client, request_id, error: Some(error) }];
            }
            self.names.insert(name.clone(), a.actor_id);
        }
        let entry = Entry {
            class: a.class,
            name: a.name,
            owner: Some(client),
            detached: a.detached,
            max_restarts: a.max_restarts,
            max_task_retries: a.max_task_retries,
            restarts: 0,
            state: State::Pending,
            holds: DetMap::from_iter([(client, 1)]),
            waiters: Vec::new(),
        };
        self.live.insert(a.actor_id, entry);
        vec![ActorOutput::Reply { client, request_id, error: None }]
    }

    /// The owner reports the actor constructed on `worker` under `lease_id`; the node
    /// knows who holds that lease (`lease_holder`) and whether the worker is alive. A
    /// report about a worker already dead makes the actor lost; one naming a lease the
    /// owner does not hold kills the actor.
    #[allow(clippy::too_many_arguments)]
    pub fn report_started(
        &mut self,
        client: ClientId,
        actor_id: ActorId,
        lease_id: LeaseId,
        worker: WorkerId,
        addr: Endpoint,
        lease_holder: Option<(ClientId, WorkerId)>,
        worker_alive: bool,
    ) -> Vec<ActorOutput> {
        if !worker_alive && lease_holder.is_none() {
            // The worker died before this report arrived (another connection).
            return self.started_on_dead_worker(client, actor_id);
        }
        if lease_holder != Some((client, worker)) {
            tracing::warn!(client = client.0, %actor_id, "ActorStarted names a lease the client does not hold");
            let error = TaskError::ActorDied {
                actor: actor_id.to_string(),
                class: "?".into(),
                reason: "its owner reported it running under a lease it does not hold".into(),
            };
            return self.create_failed(client, actor_id, &error);
        }
        self.started(client, actor_id, lease_id, worker, addr)
    }

    /// The owner constructed the actor on `worker` under `lease_id`.
    pub fn started(
        &mut self,
        client: ClientId,
        actor_id: ActorId,
        lease_id: LeaseId,
        worker: WorkerId,
        addr: Endpoint,
    ) -> Vec<ActorOutput> {
        let Some(e) = self.live.get_mut(&actor_id) else {
            // Killed while it was being constructed.
            return vec![ActorOutput::KillWorker(worker)];
        };
        if e.owner != Some(client) {
            return Vec::new();
        }
        e.state = State::Alive { worker, addr: addr.clone() };
        let info = ActorInfo { actor_id, class: e.class.clone(), addr, max_task_retries: e.max_task_retries };
        let mut out: Vec<ActorOutput> = e
            .waiters
            .drain(..)
            .map(|(client, request_id)| ActorOutput::Found { client, request_id, info: info.clone(), worker })
            .collect();
        if e.detached {
            out.push(ActorOutput::DetachLease { client, lease_id });
        }
        out
    }

    /// The owner reports the actor running on a worker whose death the node has already
    /// seen (the two reports travel on different connections): it is lost, and the
    /// owner's `worker_lost` decides what follows. Lookups keep waiting.
    fn started_on_dead_worker(&mut self, client: ClientId, actor_id: ActorId) -> Vec<ActorOutput> {
        if let Some(e) = self.live.get_mut(&actor_id).filter(|e| e.owner == Some(client)) {
            e.state = State::Lost;
        }
        Vec::new()
    }

    /// The actor's constructor failed.
    pub fn create_failed(&mut self, client: ClientId, actor_id: ActorId, error: &TaskError) -> Vec<ActorOutput> {
        if self.live.get(&actor_id).is_none_or(|e| e.owner != Some(client)) {
            return Vec::new();
        }
        self.kill(actor_id, format!("its constructor failed: {error}"))
    }

    /// A worker process ended. If it hosted an actor, the actor waits for its owner's
    /// decision, or dies if it has no owner left.
    pub fn worker_died(&mut self, worker: WorkerId) -> Vec<ActorOutput> {
        let Some(id) = self.hosted_by(worker) else {
            return Vec::new();
        };
        let e = self.live.get_mut(&id).expect("found");
        if e.owner.is_none() {
            return self.kill(
                id,
                "its process died and its owner, which would restart it, is gone (the head restarts a detached \
                 actor only when its node dies)"
                    .into(),
            );
        }
        e.state = State::Lost;
        Vec::new()
    }

    /// The owner lost the actor's process: restart it (a `None` reply) while the budget
    /// lasts, else it is dead.
    pub fn worker_lost(&mut self, client: ClientId, request_id: RequestId, actor_id: ActorId) -> Vec<ActorOutput> {
        let reply = |error| ActorOutput::Reply { client, request_id, error };
        let Some(e) = self.live.get_mut(&actor_id) else {
            return vec![reply(Some(self.dead_error(actor_id)))];
        };
        if e.owner != Some(client) {
            return vec![reply(Some(self.dead_error(actor_id)))];
        }
        if e.restarts < e.max_restarts {
            e.restarts += 1;
            // The owner may have lost only its connection: make sure the old process is
            // gone before a second instance starts.
            let old = match std::mem::replace(&mut e.state, State::Restarting) {
                State::Alive { worker, .. } => Some(worker),
                _ => None,
            };
            return old.map(ActorOutput::KillWorker).into_iter().chain([reply(None)]).collect();
        }
        let reason = match e.max_restarts {
            0 => "its process died and max_restarts is 0".to_string(),
            n => format!("its process died after {n} restart(s), the whole max_restarts budget"),
        };
        let mut out = self.kill(actor_id, reason);
        out.push(reply(Some(self.dead_error(actor_id))));
        out
    }

    /// `client` holds handles to the actor now.
    pub fn add_hold(&mut self, client: ClientId, request_id: RequestId, actor_id: ActorId) -> Vec<ActorOutput> {
        let error = match self.live.get_mut(&actor_id) {
            Some(e) => {
                *e.holds.entry(client).or_insert(0) += 1;
                None
            }
            None => Some(self.dead_error(actor_id)),
        };
        vec![ActorOutput::Reply { client, request_id, error }]
    }

    /// `client` dropped its handles. A non-detached actor nobody holds dies.
    pub fn release_hold(&mut self, client: ClientId, actor_id: ActorId) -> Vec<ActorOutput> {
        let Some(e) = self.live.get_mut(&actor_id) else {
            return Vec::new();
        };
        if let Some(n) = e.holds.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                e.holds.remove(&client);
            }
        }
        if e.holds.is_empty() && !e.detached {
            return self.kill(actor_id, "all handles to it were dropped".into());
        }
        Vec::new()
    }

    /// `ares::kill`: the actor dies now, whatever its restart budget.
    pub fn kill_request(&mut self, client: ClientId, request_id: RequestId, actor_id: ActorId) -> Vec<ActorOutput> {
        let mut out = if self.live.contains_key(&actor_id) {
            self.kill(actor_id, "it was killed with ares::kill".into())
        } else {
            Vec::new()
        };
        out.push(ActorOutput::Reply { client, request_id, error: None });
        out
    }

    /// Finds an actor; answers once it is running.
    pub fn lookup(&mut self, client: ClientId, request_id: RequestId, by: &ActorKey) -> Vec<ActorOutput> {
        let id = match by {
            ActorKey::Id(id) => *id,
            ActorKey::Name(name) => match self.names.get(name) {
                Some(id) => *id,
                None => {
                    let error = TaskError::ActorNotFound { name: name.clone() };
                    return vec![ActorOutput::Reply { client, request_id, error: Some(error) }];
                }
            },
        };
        let Some(e) = self.live.get_mut(&id) else {
            return vec![ActorOutput::Reply { client, request_id, error: Some(self.dead_error(id)) }];
        };
        match &e.state {
            State::Alive { worker, addr } => {
                let info = ActorInfo {
                    actor_id: id,
                    class: e.class.clone(),
                    addr: addr.clone(),
                    max_task_retries: e.max_task_retries,
                };
                vec![ActorOutput::Found { client, request_id, info, worker: *worker }]
            }
            State::Pending | State::Lost | State::Restarting => {
                e.waiters.push((client, request_id));
                Vec::new()
            }
        }
    }

    /// A client disconnected: its holds go, and the actors it owns die unless detached.
    pub fn client_gone(&mut self, client: ClientId) -> Vec<ActorOutput> {
        let mut out = Vec::new();
        let ids: Vec<ActorId> = self.live.keys().copied().collect();
        for id in ids {
            let e = self.live.get_mut(&id).expect("listed");
            e.waiters.retain(|(c, _)| *c != client);
            let held = e.holds.remove(&client).is_some();
            if e.owner == Some(client) {
                if e.detached {
                    e.owner = None;
                    if matches!(e.state, State::Lost | State::Restarting | State::Pending) {
                        out.extend(self.kill(id, "its owner died before it was running".into()));
                    }
                } else {
                    out.extend(self.kill(id, "its owner died".into()));
                }
            } else if held && e.holds.is_empty() && !e.detached {
                out.extend(self.kill(id, "all handles to it were dropped".into()));
            }
        }
        out
    }

    /// Kills every detached actor (the head has taken over their fate: see
    /// [`crate::node::Node::head_rejoined`]).
    pub fn kill_detached(&mut self, reason: &str) -> Vec<ActorOutput> {
        let ids: Vec<ActorId> = self.live.iter().filter(|(_, e)| e.detached).map(|(id, _)| *id).collect();
        ids.into_iter().flat_map(|id| self.kill(id, reason.to_string())).collect()
    }

    /// The error callers of a dead (or unknown) actor get.
    pub fn dead_error(&self, actor_id: ActorId) -> TaskError {
        let (class, reason) = self
            .dead
            .get(&actor_id)
            .cloned()
            .unwrap_or_else(|| ("?".into(), "no such actor is known on this node".into()));
        TaskError::ActorDied { actor: actor_id.to_string(), class, reason }
    }

    fn kill(&mut self, actor_id: ActorId, reason: String) -> Vec<ActorOutput> {
        let Some(e) = self.live.remove(&actor_id) else {
            return Vec::new();
        };
        let mut out_gone = None;
        let mut freed = None;
        if e.detached {
            out_gone = Some(ActorOutput::DetachedGone(actor_id));
        }
        if let Some(name) = &e.name {
            self.names.remove(name);
            freed = Some(ActorOutput::NameFreed { name: name.clone(), actor_id });
        }
        self.dead.insert(actor_id, (e.class.clone(), reason));
        self.dead_order.push_back(actor_id);
        if self.dead_order.len() > DEAD_REMEMBERED {
            let old = self.dead_order.pop_front().expect("non-empty");
            self.dead.remove(&old);
        }
        let error = self.dead_error(actor_id);
        let mut out: Vec<ActorOutput> = e
            .waiters
            .into_iter()
            .map(|(client, request_id)| ActorOutput::Reply { client, request_id, error: Some(error.clone()) })
            .collect();
        if let State::Alive { worker, .. } = e.state {
            out.push(ActorOutput::KillWorker(worker));
        }
        out.extend(out_gone);
        out.extend(freed);
        out
    }

    /// What the head needs to restart a running detached actor elsewhere: its class,
    /// name, retry budget for calls, restart budget and restarts used.
    pub fn detached_info(&self, actor_id: ActorId) -> Option<(String, Option<String>, u32, u32, u32)> {
        let e = self.live.get(&actor_id).filter(|e| e.detached && matches!(e.state, State::Alive { .. }))?;
        Some((e.class.clone(), e.name.clone(), e.max_task_retries, e.max_restarts, e.restarts))
    }

    /// The head moved a detached actor here (its node died): it is restarting, owned by
    /// nobody, until [`Self::adopted_started`] or [`Self::adoption_failed`]. Fails if the
    /// ID or the name is taken here.
    pub fn adopt(&mut self, a: NewActor, restarts: u32) -> Result<(), String> {
        if self.live.contains_key(&a.actor_id) {
            return Err("an actor with this ID is live on this node".into());
        }
        if let Some(name) = &a.name {
            if self.names.contains_key(name) {
                return Err(format!("the name `{name}` is taken on this node"));
            }
            self.names.insert(name.clone(), a.actor_id);
        }
        self.dead.remove(&a.actor_id);
        let entry = Entry {
            class: a.class,
            name: a.name,
            owner: None,
            detached: true,
            max_restarts: a.max_restarts,
            max_task_retries: a.max_task_retries,
            restarts,
            state: State::Restarting,
            holds: DetMap::default(),
            waiters: Vec::new(),
        };
        self.live.insert(a.actor_id, entry);
        Ok(())
    }

    /// The node constructed an adopted actor on `worker`: lookups waiting for it are
    /// answered. A worker that died meanwhile, or an actor killed meanwhile, is reaped.
    pub fn adopted_started(&mut self, actor_id: ActorId, worker: WorkerId, addr: Endpoint) -> Vec<ActorOutput> {
        let Some(e) = self.live.get_mut(&actor_id).filter(|e| e.owner.is_none()) else {
            return vec![ActorOutput::KillWorker(worker)];
        };
        e.state = State::Alive { worker, addr: addr.clone() };
        let info = ActorInfo { actor_id, class: e.class.clone(), addr, max_task_retries: e.max_task_retries };
        e.waiters
            .drain(..)
            .map(|(client, request_id)| ActorOutput::Found { client, request_id, info: info.clone(), worker })
            .collect()
    }

    /// Constructing an adopted actor failed: it is dead.
    pub fn adoption_failed(&mut self, actor_id: ActorId, reason: String) -> Vec<ActorOutput> {
        self.kill(actor_id, format!("restarting it after its node died failed: {reason}"))
    }

    /// Whether a live actor on this node has `name`.
    pub fn has_name(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(s: &str) -> Endpoint {
        Endpoint::Unix(s.into())
    }

    const OWNER: ClientId = ClientId(1);
    const OTHER: ClientId = ClientId(2);

    fn id(n: u8) -> ActorId {
        ActorId([n; 16])
    }
    fn w(n: u8) -> WorkerId {
        WorkerId([n; 16])
    }
    fn actor(n: u8, name: Option<&str>, detached: bool, max_restarts: u32) -> NewActor {
        NewActor {
            actor_id: id(n),
            class: "C".into(),
            name: name.map(Into::into),
            detached,
            max_restarts,
            max_task_retries: 0,
        }
    }
    fn ok(request_id: RequestId, client: ClientId) -> ActorOutput {
        ActorOutput::Reply { client, request_id, error: None }
    }
    fn failed(a: &[ActorOutput]) -> Vec<String> {
        a.iter()
            .filter_map(|a| match a {
                ActorOutput::Reply { error: Some(e), .. } => Some(e.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn names_are_unique_among_live_actors_and_free_again_on_death() {
        let mut d = ActorDirectory::new();
        assert_eq!(d.register(OWNER, RequestId(1), actor(1, Some("x"), false, 0)), vec![ok(RequestId(1), OWNER)]);
        let a = d.register(OTHER, RequestId(2), actor(2, Some("x"), false, 0));
        assert!(matches!(&a[..], [ActorOutput::Reply { error: Some(TaskError::ActorNameTaken { .. }), .. }]));
        assert!(d.has_name("x"));
        let freed = ActorOutput::NameFreed { name: "x".into(), actor_id: id(1) };
        assert_eq!(d.kill_request(OTHER, RequestId(3), id(1)), vec![freed, ok(RequestId(3), OTHER)]);
        assert!(!d.has_name("x"));
        assert_eq!(d.register(OTHER, RequestId(4), actor(2, Some("x"), false, 0)), vec![ok(RequestId(4), OTHER)]);
        let again = d.register(OTHER, RequestId(5), actor(1, None, false, 0));
        assert!(failed(&again)[0].contains("already registered"), "an ID is never reused");
    }

    #[test]
    fn lookups_wait_until_the_actor_runs() {
        let mut d = ActorDirectory::new();
        d.register(OWNER, RequestId(1), actor(1, Some("x"), false, 0));
        assert!(d.lookup(OTHER, RequestId(7), &ActorKey::Name("x".into())).is_empty());
        let a = d.started(OWNER, id(1), LeaseId(1), w(1), ep("sock"));
        assert!(
            matches!(&a[..], [ActorOutput::Found { client: OTHER, request_id: RequestId(7), info, worker }] if info.addr == ep("sock") && *worker == w(1))
        );
        assert!(matches!(&d.lookup(OTHER, RequestId(8), &ActorKey::Id(id(1)))[..], [ActorOutput::Found { .. }]));
        let a = d.lookup(OTHER, RequestId(9), &ActorKey::Name("y".into()));
        assert!(failed(&a)[0].contains("no live actor is named `y`"));
    }

    #[test]
    fn restarts_are_granted_up_to_the_budget_then_the_actor_dies() {
        let mut d = ActorDirectory::new();
        d.register(OWNER, RequestId(1), actor(1, None, false, 2));
        d.started(OWNER, id(1), LeaseId(1), w(1), ep("a"));
        // The owner lost only its connection: the old process is killed before a restart.
        assert_eq!(
            d.worker_lost(OWNER, RequestId(9), id(1)),
            vec![ActorOutput::KillWorker(w(1)), ok(RequestId(9), OWNER)]
        );
        d.started(OWNER, id(1), LeaseId(3), w(3), ep("c"));
        assert!(d.worker_died(w(3)).is_empty());
        assert_eq!(d.counts().restarting, 1, "lost, waiting for its owner");
        assert!(d.lookup(OTHER, RequestId(2), &ActorKey::Id(id(1))).is_empty(), "lookups wait for the decision");
        assert_eq!(d.worker_lost(OWNER, RequestId(3), id(1)), vec![ok(RequestId(3), OWNER)]);
        let a = d.started(OWNER, id(1), LeaseId(2), w(2), ep("b"));
        assert!(matches!(&a[..], [ActorOutput::Found { info, .. }] if info.addr == ep("b")));
        d.worker_died(w(2));
        let a = d.worker_lost(OWNER, RequestId(4), id(1));
        assert!(failed(&a).iter().all(|e| e.contains("after 2 restart(s)")), "{a:?}");
        assert_eq!(d.len(), 0);
        assert!(failed(&d.add_hold(OTHER, RequestId(5), id(1)))[0].contains("is dead"));
    }

    #[test]
    fn the_last_hold_ends_a_normal_actor_but_not_a_detached_one() {
        let mut d = ActorDirectory::new();
        d.register(OWNER, RequestId(1), actor(1, None, false, 0));
        d.started(OWNER, id(1), LeaseId(1), w(1), ep("a"));
        d.add_hold(OTHER, RequestId(2), id(1));
        assert!(d.release_hold(OWNER, id(1)).is_empty(), "a borrower still holds it");
        assert_eq!(d.release_hold(OTHER, id(1)), vec![ActorOutput::KillWorker(w(1))]);

        d.register(OWNER, RequestId(3), actor(2, Some("d"), true, 0));
        let a = d.started(OWNER, id(2), LeaseId(2), w(2), ep("b"));
        assert_eq!(a, vec![ActorOutput::DetachLease { client: OWNER, lease_id: LeaseId(2) }]);
        assert!(d.release_hold(OWNER, id(2)).is_empty());
        assert!(d.client_gone(OWNER).is_empty(), "a detached actor outlives its owner");
        assert!(matches!(&d.lookup(OTHER, RequestId(4), &ActorKey::Name("d".into()))[..], [ActorOutput::Found { .. }]));
        // With no owner left, nobody restarts it.
        assert!(failed(&d.worker_died(w(2))).is_empty());
        assert_eq!(d.len(), 0);
    }

    #[test]
    fn owner_death_kills_owned_actors_and_answers_waiters() {
        let mut d = ActorDirectory::new();
        d.register(OWNER, RequestId(1), actor(1, None, false, 5));
        d.started(OWNER, id(1), LeaseId(1), w(1), ep("a"));
        d.register(OWNER, RequestId(2), actor(2, None, false, 5));
        assert_eq!(d.counts(), ares_common::wire::ActorCounts { pending: 1, alive: 1, restarting: 0 });
        assert!(d.lookup(OTHER, RequestId(3), &ActorKey::Id(id(2))).is_empty());
        let a = d.client_gone(OWNER);
        assert!(a.contains(&ActorOutput::KillWorker(w(1))));
        assert!(failed(&a).iter().any(|e| e.contains("its owner died")), "{a:?}");
        assert!(d.is_empty());
    }

    #[test]
    fn a_start_reported_after_the_worker_died_waits_for_the_owner() {
        let mut d = ActorDirectory::new();
        d.register(OWNER, RequestId(1), actor(1, None, false, 1));
        assert!(d.worker_died(w(1)).is_empty(), "not known to host anything yet");
        assert!(d.started_on_dead_worker(OWNER, id(1)).is_empty());
        assert!(d.lookup(OTHER, RequestId(2), &ActorKey::Id(id(1))).is_empty(), "lookups wait");
        assert_eq!(d.worker_lost(OWNER, RequestId(3), id(1)), vec![ok(RequestId(3), OWNER)]);
        let a = d.started(OWNER, id(1), LeaseId(2), w(2), ep("b"));
        assert!(matches!(&a[..], [ActorOutput::Found { request_id: RequestId(2), .. }]));
    }

    #[test]
    fn a_kill_during_construction_kills_the_worker_when_it_reports() {
        let mut d = ActorDirectory::new();
        d.register(OWNER, RequestId(1), actor(1, None, false, 0));
        d.kill_request(OTHER, RequestId(2), id(1));
        assert_eq!(d.started(OWNER, id(1), LeaseId(1), w(1), ep("a")), vec![ActorOutput::KillWorker(w(1))]);
        let a = d.worker_lost(OWNER, RequestId(3), id(1));
        assert!(failed(&a)[0].contains("killed with ares::kill"));
    }

    #[test]
    fn an_adopted_detached_actor_answers_lookups_once_constructed_or_dies_naming_why() {
        let mut d = ActorDirectory::new();
        assert!(d.adopt(actor(1, Some("k"), true, 3), 1).is_ok());
        assert!(d.adopt(actor(1, Some("k"), true, 3), 1).is_err(), "not twice");
        assert!(d.has_name("k"));
        assert!(
            d.lookup(OTHER, RequestId(1), &ActorKey::Name("k".into())).is_empty(),
            "lookups wait while it restarts"
        );
        let a = d.adopted_started(id(1), w(5), ep("w5"));
        assert!(matches!(&a[..], [ActorOutput::Found { request_id: RequestId(1), worker, .. }] if *worker == w(5)));
        assert_eq!(d.detached_info(id(1)), Some(("C".into(), Some("k".into()), 0, 3, 1)));
        // Its process dying now ends it: nobody owns it here (the head restarts on node death only).
        let a = d.worker_died(w(5));
        assert!(a.contains(&ActorOutput::DetachedGone(id(1))), "{a:?}");
        assert!(!d.has_name("k"));

        d.adopt(actor(2, None, true, 3), 1).unwrap();
        assert!(d.lookup(OTHER, RequestId(2), &ActorKey::Id(id(2))).is_empty());
        let a = d.adoption_failed(id(2), "no worker".into());
        assert!(failed(&a)[0].contains("restarting it after its node died failed: no worker"), "{a:?}");
        assert!(a.contains(&ActorOutput::DetachedGone(id(2))));
        assert_eq!(d.adopted_started(id(2), w(6), ep("w6")), vec![ActorOutput::KillWorker(w(6))], "too late");
    }
}
