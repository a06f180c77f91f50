//! The simulated worker process: it runs the functions of [`crate::functions`] on the
//! arguments a push carries (pulling and pinning stored ones as a real worker does), and
//! replies to the owner.
//!
//! **Must not:** decide anything the core worker's state decides (its `CoreState` runs
//! nested submissions and puts).

use super::*;

impl Sim {
    /// Runs the tasks in worker `w`'s inbox in order until one must store its result
    /// (the rest wait for that write, see [`Sim::step_write`]) or none is left. Replies
    /// of consecutive tasks on one connection go in one message.
    pub(crate) fn run_inbox(&mut self, w: ProcId) {
        let mut replies: Vec<FromWorker> = Vec::new();
        let mut conn = None;
        while self.procs[w].alive && !self.writes.contains_key(&w) {
            let Some((c, spec)) = self.procs[w].inbox.pop_front() else { break };
            if conn != Some(c) {
                self.send_replies(w, conn, std::mem::take(&mut replies));
                conn = Some(c);
            }
            let task_id = spec.task_id;
            let (mut copies, mut contained) = (Vec::new(), Vec::new());
            match self.execute(w, spec, &mut copies, &mut contained) {
                Ran::Done(outcome) => replies.push(FromWorker::Done { task_id, outcome, copies, contained }),
                Ran::Store { object, bytes, owner } => {
                    let outcome = Outcome::Shared { offset: 0, len: bytes.len() as u64 };
                    let reply = FromWorker::Done { task_id, outcome, copies, contained };
                    self.start_write(w, c, object, bytes, owner, reply);
                }
            }
        }
        self.send_replies(w, conn, replies);
    }

    /// Sends `replies` on task connection `conn`, if the worker lives.
    pub(crate) fn send_replies(&mut self, w: ProcId, conn: Option<usize>, replies: Vec<FromWorker>) {
        if let Some(c) = conn
            && self.procs[w].alive
            && !replies.is_empty()
        {
            self.push(Chan::Reply(c), Msg::Replies(replies));
        }
    }

    /// Makes sure the stored argument `id` is in worker `w`'s node, copying it from the
    /// first of `nodes` that serves it. Returns whether a copy was made.
    pub(crate) fn pull_arg(
        &mut self,
        w: ProcId,
        id: ObjectId,
        nodes: &[NodeId],
        owner: WorkerId,
    ) -> Result<bool, String> {
        let n = self.procs[w].node;
        if self.nodes[n].node.store().contains(id) {
            return Ok(false);
        }
        let mut why = Vec::new();
        for from in nodes {
            match self.copy_object(id, *from, n, Some(owner)) {
                Ok(()) => return Ok(true),
                Err(e) => why.push(format!("node {from}: {e}")),
            }
        }
        Err(format!("could not pull a copy: {}", why.join("; ")))
    }

    pub(crate) fn execute(
        &mut self,
        w: ProcId,
        spec: TaskSpec,
        copies: &mut Vec<ObjectId>,
        contained: &mut Vec<ares_common::wire::RefInValue>,
    ) -> Ran {
        // The same argument reading as a real worker's (`pin_args`); the sim's "pin"
        // copies the bytes out (see `read_pinned`).
        let here = self.procs[w].state.node();
        let pinned = pin_args(&mut SimStore { sim: self, w }, &spec, here, copies);
        let mut stored = match pinned {
            Ok(got) => got.pins.into_iter(),
            Err(ArgFailure::Unavailable(e)) => return Ran::failed(e),
            Err(ArgFailure::Other { error, .. }) => return Ran::failed(error),
        };
        let args: Vec<Vec<u8>> = spec
            .args
            .iter()
            .map(|a| match a {
                WireArg::Inline(v) => v.clone(),
                WireArg::Shared { .. } => stored.next().expect("one pin per stored argument"),
            })
            .collect();
        let int = |i: usize| args.get(i).and_then(|b| i64::decode(b).ok());
        let app = |message: String| Ran::failed(TaskError::Application { function: spec.function.clone(), message });
        let value: Vec<u8> = match (&spec.kind, spec.function.as_str()) {
            (TaskKind::ActorCreate { actor_id, .. }, functions::COUNTER) => {
                self.procs[w].actors.insert(*actor_id, 0);
                0i64.encode().expect("encodes").to_vec()
            }
            (TaskKind::ActorCall { actor_id }, functions::NEXT) => match self.procs[w].actors.get_mut(actor_id) {
                Some(count) => {
                    *count += 1;
                    count.encode().expect("encodes").to_vec()
                }
                None => return app(format!("this worker hosts no actor {actor_id}")),
            },
            (TaskKind::ActorCreate { .. } | TaskKind::ActorCall { .. }, other) => {
                return Ran::failed(TaskError::FunctionNotFound { name: other.to_string() });
            }
            (_, function) => match function {
                functions::ADD => {
                    let sum: Option<i64> = (0..args.len()).map(int).sum();
                    match sum {
                        Some(v) => v.encode().expect("encodes").to_vec(),
                        None => return app("add takes i64 arguments".into()),
                    }
                }
                functions::BIG => vec![int(0).unwrap_or(0) as u8; BIG].encode().expect("encodes").to_vec(),
                functions::MEASURE => match args.first().and_then(|b| Vec::<u8>::decode(b).ok()) {
                    Some(v) => (v.len() as i64 + i64::from(v.first().copied().unwrap_or(0)))
                        .encode()
                        .expect("encodes")
                        .to_vec(),
                    None => return app("measure takes bytes".into()),
                },
                functions::SUM_LIST => match args.first().and_then(|b| Vec::<i64>::decode(b).ok()) {
                    Some(v) => v.iter().sum::<i64>().encode().expect("encodes").to_vec(),
                    None => return app("sum_list takes a list".into()),
                },
                functions::FAIL => return app(format!("boom {}", int(0).unwrap_or(0))),
                functions::SPAWN => {
                    let n = int(0).unwrap_or(0);
                    let now = self.now();
                    let s = Submit {
                        function: functions::ADD,
                        shape: ResourceSet::new().with("CPU", 1.0),
                        strategy: ares_common::Strategy::Default,
                        max_retries: 0,
                        target: Target::Pool,
                        kind: TaskKind::Normal,
                        keeps: Vec::new(),
                        carried: Vec::new(),
                        num_returns: 1,
                    };
                    let st = &mut self.procs[w].state;
                    let mut scope = TaskScope::new(spec.task_id);
                    let tid = st.next_task_id(Some(&mut scope));
                    let child = st.submit(now, tid, s, vec![Arg::Inline(n.encode().expect("encodes"))]);
                    st.remove_local_ref(child);
                    self.pump(w);
                    n.encode().expect("encodes").to_vec()
                }
                functions::MAKE_REFS => {
                    let n = int(0).unwrap_or(0);
                    let mut scope = TaskScope::new(spec.task_id);
                    let (me, node) = (self.procs[w].state.worker_id(), self.procs[w].state.node());
                    let mut ids = Vec::new();
                    for i in 0..n {
                        let id = self.procs[w].state.next_put_id(Some(&mut scope));
                        let bytes = vec![(n + i) as u8; BIG].encode().expect("encodes").to_vec();
                        if let Err(e) = self.store_sync(w, id, &bytes, me) {
                            return Ran::failed(e);
                        }
                        self.procs[w].state.add_put(id, Location::stored(node, bytes.len() as u64), &[]);
                        ids.push(id);
                    }
                    let refs: Vec<ares_common::wire::RefInValue> = ids
                        .iter()
                        .map(|id| ares_common::wire::RefInValue { id: *id, owner: me, node, home: None })
                        .collect();
                    // The caller will hold them: counted as its borrower before the task's
                    // own handles go, as a real worker does before replying.
                    let st = &mut self.procs[w].state;
                    st.lend(spec.owner, &refs);
                    for id in &ids {
                        st.remove_local_ref(*id);
                    }
                    self.pump(w);
                    contained.extend(refs);
                    ids.encode().expect("encodes").to_vec()
                }
                other => return Ran::failed(TaskError::FunctionNotFound { name: other.to_string() }),
            },
        };
        if self.procs[w].state.inline_rule().inline(value.len()) {
            return Ran::Done(Outcome::Inline(value));
        }
        Ran::Store { object: ObjectId::for_return(spec.task_id, 0), bytes: value, owner: spec.owner }
    }
}

/// How a simulated task run ended.
pub(crate) enum Ran {
    /// With this outcome, to reply at once.
    Done(Outcome),
    /// With a value to store as `object` (owned by `owner`) before replying.
    Store { object: ObjectId, bytes: Vec<u8>, owner: WorkerId },
}

impl Ran {
    fn failed(e: TaskError) -> Ran {
        Ran::Done(Outcome::Failed(e))
    }
}

/// A simulated worker's node store as [`pin_args`] reaches it: a pull copies the object
/// from another node, a pin reads its bytes (pinning and releasing it at once).
struct SimStore<'a> {
    sim: &'a mut Sim,
    w: ProcId,
}

impl ArgStore for SimStore<'_> {
    type Pin = Vec<u8>;
    type Error = TaskError;

    fn pull(&mut self, id: ObjectId, nodes: &[NodeId], owner: WorkerId) -> Result<(), TaskError> {
        match self.sim.pull_arg(self.w, id, nodes, owner) {
            Ok(_) => Ok(()),
            Err(reason) => Err(TaskError::ObjectLost { object: reason }),
        }
    }

    fn pin(&mut self, id: ObjectId) -> Result<Vec<u8>, TaskError> {
        self.sim.read_pinned(self.w, id)
    }

    fn release(&mut self, _: Vec<ObjectId>) {}

    fn lost(e: &TaskError) -> Option<String> {
        match e {
            TaskError::ObjectLost { object } => Some(object.clone()),
            _ => None,
        }
    }
}
