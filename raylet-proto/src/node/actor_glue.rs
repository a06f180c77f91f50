//! The node's glue around actors: messages about actors, what the actor directory asks
//! for, and the head's part in them (names reserved cluster-wide, detached actors it
//! restarts here). The decisions are the [`ActorDirectory`]'s and the [`HeadLink`]'s;
//! this file routes between them, the lease policy and the clients.
//!
//! [`ActorDirectory`]: crate::actors::ActorDirectory
//! [`HeadLink`]: crate::head_link::HeadLink

use super::*;

impl Node {
    /// `client` registers actor `a`. A name is the cluster's: the head reserves it first
    /// (a name taken on this node is refused without asking).
    pub(super) fn register_actor(&mut self, client: ClientId, request_id: RequestId, a: NewActor) {
        match a.name.clone() {
            Some(name) if self.head.in_cluster() && !self.actors.has_name(&name) => {
                let actor = NamedActor {
                    actor_id: a.actor_id,
                    class: a.class.clone(),
                    max_task_retries: a.max_task_retries,
                    node: self.cfg.node_id,
                    addr: None,
                };
                self.forward(client, request_id, ForwardedOp::Register(a), |id| ToHead::ReserveActorName {
                    request_id: id,
                    name,
                    actor,
                });
            }
            _ => {
                let actions = self.actors.register(client, request_id, a);
                self.apply_actors(actions);
            }
        }
    }

    /// An owner reports its actor constructed on `worker`.
    pub(super) fn actor_started(
        &mut self,
        client: ClientId,
        actor_id: ActorId,
        lease_id: LeaseId,
        worker_id: WorkerId,
        addr: Endpoint,
        restart: Option<RestartSpec>,
    ) {
        let holder = self.policy.lease_of(lease_id);
        let alive = self.clients.has_worker(worker_id);
        let actions = self.actors.report_started(client, actor_id, lease_id, worker_id, addr, holder, alive);
        self.apply_actors(actions);
        // The head can restart a detached actor elsewhere if this node dies.
        if let (Some(restart), true) = (restart, self.head.in_cluster())
            && let Some((class, name, max_task_retries, max_restarts, restarts)) = self.actors.detached_info(actor_id)
        {
            let actor = NamedActor { actor_id, class, max_task_retries, node: self.cfg.node_id, addr: None };
            let d = DetachedActor { actor, name, max_restarts, restarts, restart };
            self.out.push_back(Output::ToHead(ToHead::DetachedStarted { actor: Box::new(d) }));
        }
    }

    /// `client` looks an actor up; a name not known here is asked of the head.
    pub(super) fn lookup_actor(&mut self, client: ClientId, request_id: RequestId, by: ActorKey) {
        match by {
            ActorKey::Name(name) if self.head.in_cluster() && !self.actors.has_name(&name) => {
                let what = ForwardedOp::LookupName(name.clone());
                self.forward(client, request_id, what, |id| ToHead::LookupActorName { request_id: id, name });
            }
            by => {
                let actions = self.actors.lookup(client, request_id, &by);
                self.apply_actors(actions);
            }
        }
    }

    pub(super) fn apply_actors(&mut self, actions: Vec<ActorOutput>) {
        for a in actions {
            match a {
                ActorOutput::Reply { client, request_id, error } => {
                    self.send(client, FromRaylet::ActorReply { request_id, error })
                }
                ActorOutput::Found { client, request_id, mut info, worker } => {
                    if self.clients.is_remote(client) {
                        // A caller on another node reaches the worker over QUIC.
                        match self.clients.worker_addr(worker, client) {
                            Some(addr) => info.addr = addr,
                            None => {
                                let reason = "its worker serves no QUIC address for other nodes".to_string();
                                let error = TaskError::ActorDied {
                                    actor: info.actor_id.to_string(),
                                    class: info.class,
                                    reason,
                                };
                                self.send(client, FromRaylet::ActorReply { request_id, error: Some(error) });
                                continue;
                            }
                        }
                    }
                    self.send(client, FromRaylet::ActorFound { request_id, info })
                }
                ActorOutput::DetachedGone(actor_id) => {
                    if self.head.in_cluster() {
                        self.out.push_back(Output::ToHead(ToHead::DetachedGone { actor_id }));
                    }
                }
                ActorOutput::NameFreed { name, actor_id } => {
                    if self.head.in_cluster() {
                        self.out.push_back(Output::ToHead(ToHead::ReleaseActorName { name, actor_id }));
                    }
                }
                ActorOutput::KillWorker(w) => self.reap(w),
                ActorOutput::DetachLease { client, lease_id } => self.policy.detach(client, lease_id),
            }
        }
    }

    /// The head answered a request this node forwarded, or moved a detached actor here.
    pub fn head_answered(&mut self, msg: FromHead) {
        if let FromHead::RestartActor { actor } = msg {
            self.adopt(*actor);
            return;
        }
        let Some(Forwarded { client, request_id, what }) = self.head.answered(&msg) else {
            // The client left meanwhile (a reserved name was released then).
            return;
        };
        match (what, msg) {
            (ForwardedOp::Kv, FromHead::Kv { value, error, .. }) => {
                self.send(client, FromRaylet::Kv { request_id, value, error })
            }
            (ForwardedOp::Register(a), FromHead::ActorName { error: None, .. }) => {
                let (name, actor_id) = (a.name.clone(), a.actor_id);
                let actions = self.actors.register(client, request_id, a);
                let refused = matches!(&actions[..], [ActorOutput::Reply { error: Some(_), .. }]);
                if let (true, Some(name)) = (refused, name) {
                    self.out.push_back(Output::ToHead(ToHead::ReleaseActorName { name, actor_id }));
                }
                self.apply_actors(actions);
            }
            (ForwardedOp::Register(_) | ForwardedOp::LookupName(_), FromHead::ActorName { error: Some(e), .. }) => {
                self.send(client, FromRaylet::ActorReply { request_id, error: Some(e) })
            }
            (ForwardedOp::LookupName(name), FromHead::ActorName { actor: Some(actor), .. }) => {
                if actor.node == self.cfg.node_id {
                    // Registered here since this node looked.
                    let actions = self.actors.lookup(client, request_id, &ActorKey::Name(name));
                    self.apply_actors(actions);
                } else {
                    self.send(client, FromRaylet::ActorElsewhere { request_id, actor });
                }
            }
            (what, msg) => tracing::warn!(?what, "the head answered {msg:?}; dropped"),
        }
    }

    /// The head restarts detached actor `d` here (its node died): lease a dedicated
    /// worker for it as the node itself, then construct it there.
    fn adopt(&mut self, d: DetachedActor) {
        let actor_id = d.actor.actor_id;
        let a = NewActor {
            actor_id,
            class: d.actor.class.clone(),
            name: d.name.clone(),
            detached: true,
            max_restarts: d.max_restarts,
            max_task_retries: d.actor.max_task_retries,
        };
        if let Err(reason) = self.actors.adopt(a, d.restarts) {
            tracing::warn!(actor = %actor_id, "cannot restart a detached actor here: {reason}");
            self.out.push_back(Output::ToHead(ToHead::DetachedGone { actor_id }));
            return;
        }
        tracing::info!(actor = %actor_id, class = %d.actor.class, "restarting a detached actor whose node died");
        let request_id = self.head.adopt(actor_id, d.restart.spec);
        let actions = self.policy.request(NODE_CLIENT, request_id, d.restart.shape, true);
        self.apply(actions);
    }

    /// A detached actor's construction on `worker` (see [`Output::ConstructActor`])
    /// ended: `Err` says why it failed.
    pub fn actor_constructed(
        &mut self,
        actor_id: ActorId,
        lease_id: LeaseId,
        worker: WorkerId,
        result: Result<(), String>,
    ) {
        let addr = self.clients.worker_addr(worker, NODE_CLIENT);
        let actions = match (result, addr) {
            (Ok(()), Some(addr)) => self.actors.adopted_started(actor_id, worker, addr),
            (result, _) => {
                let reason = result.err().unwrap_or_else(|| "its worker exited".into());
                let actions = self.policy.return_lease(NODE_CLIENT, lease_id, true);
                self.apply(actions);
                self.actors.adoption_failed(actor_id, reason)
            }
        };
        self.apply_actors(actions);
    }

    /// The link to the head is back (see [`crate::cluster`]). If the head had declared
    /// this node dead meanwhile (`rejoined`), other nodes' owners have retried what they
    /// ran here and given up what they kept here, and the head has restarted this node's
    /// detached actors elsewhere: their connections here are closed (which reaps the
    /// workers they leased and drops their pins and objects) and the detached actors
    /// here are killed, so that nothing runs twice. Either way the node's drivers are
    /// reported again.
    pub fn head_rejoined(&mut self, rejoined: bool) {
        // Those that connected since may know of the death and stay (they close on it).
        let before = self.remote_at_head_loss.take().unwrap_or_default();
        if rejoined {
            let remote: Vec<ClientId> = before.into_iter().filter(|c| self.clients.is_remote(*c)).collect();
            tracing::warn!(
                closed = remote.len(),
                "this node had been declared dead: the connections of other nodes' owners are closed"
            );
            self.out.extend(remote.into_iter().map(Output::Close));
            let actions = self.actors.kill_detached("its node was declared dead and the head restarted it elsewhere");
            self.apply_actors(actions);
        }
        for (job, pid) in self.clients.local_drivers() {
            self.out.push_back(Output::ToHead(ToHead::JobStarted { job, pid }));
        }
    }

    /// The link to the head is gone: requests waiting for it fail.
    pub fn head_lost(&mut self) {
        if self.remote_at_head_loss.is_none() {
            self.remote_at_head_loss = Some(self.clients.remote_clients());
        }
        for Forwarded { client, request_id, what } in self.head.lost() {
            let reason = "the connection to the head is gone".to_string();
            match what {
                ForwardedOp::Kv => {
                    let error = Some("the cluster's head is unreachable".to_string());
                    self.send(client, FromRaylet::Kv { request_id, value: None, error });
                }
                ForwardedOp::Register(_) | ForwardedOp::LookupName(_) => {
                    let error = Some(TaskError::HeadUnavailable { reason });
                    self.send(client, FromRaylet::ActorReply { request_id, error });
                }
            }
        }
    }
}
