//! The simulated stores: every read, create and copy goes through the raylet node's own
//! store ops ([`ares_raylet_proto::store_ops`]), step by step as its server runs them.
//!
//! **Must not:** touch a node's store index but through its ops and messages.

use super::*;

/// A worker's return value on its way into its node's store. The create advances one op
/// step per sim event, so what a real raylet interleaves with it (another attempt's create
/// of the same ID, the owner's delete, the worker's death) comes between its steps, and
/// the worker's next tasks wait until it replied.
pub(crate) struct Write {
    conn: usize,
    pub(crate) node: usize,
    client: ClientId,
    object: ObjectId,
    bytes: Vec<u8>,
    /// The create op and the event it is advanced with next; `None` once room was made
    /// (the worker writes the bytes and seals next).
    create: Option<(CreateOp, OpEvent)>,
    /// The virtual time the next step runs at (a wait for room ends then).
    at: Duration,
    /// What the worker replies once the value is sealed.
    reply: FromWorker,
}

impl Sim {
    /// Worker `w` begins storing the result of the task it ran (from task connection
    /// `conn`); `reply` goes to the owner once it is sealed.
    pub(crate) fn start_write(
        &mut self,
        w: ProcId,
        conn: usize,
        object: ObjectId,
        bytes: Vec<u8>,
        owner: WorkerId,
        reply: FromWorker,
    ) {
        // Its earlier messages reach the raylet first, on the same connection.
        self.flush(Chan::ToNode(w));
        if self.writes.values().any(|o| o.object == object) {
            self.create_races += 1;
        }
        // The connection may break while the worker writes: the owner retries the task
        // elsewhere while this attempt's create goes on, as when a link drops.
        if self.cfg.break_prob > 0.0 && self.rng.chance(self.cfg.break_prob) {
            self.break_conn(conn);
        }
        let (node, client) = (self.procs[w].node, self.procs[w].client);
        let op = CreateOp::new(self.now(), STORE_TIMEOUT, client, object, bytes.len() as u64, owner);
        let create = Some((op, OpEvent::Go));
        self.writes.insert(w, Write { conn, node, client, object, bytes, create, at: self.tick, reply });
    }

    /// Runs the next step of worker `w`'s write; once it ended, the worker goes on with
    /// its inbox.
    pub(crate) fn step_write(&mut self, w: ProcId) {
        let Some(mut write) = self.writes.remove(&w) else { return };
        self.tick = self.tick.max(write.at);
        let (n, alive) = (write.node, self.procs[w].alive);
        match write.create.take() {
            Some((mut op, event)) => {
                // The raylet runs the op on even if the worker died (it sees the
                // connection closed, as its server does).
                let now = self.now();
                let next = match op.advance(&mut self.nodes[n].node, now, !alive, event) {
                    OpStep::Wait(d) => {
                        write.at = self.tick + d;
                        Some(OpEvent::Go)
                    }
                    OpStep::Reserve { .. } => Some(OpEvent::Reserved(Ok(()))),
                    OpStep::Read(_) => Some(OpEvent::Read { result: Ok(()), took: Duration::ZERO }),
                    OpStep::Done(CreateOutcome::Created { .. }) => None,
                    OpStep::Done(CreateOutcome::Failed(e)) => {
                        let FromWorker::Done { task_id, copies, contained, .. } = write.reply;
                        let reply = FromWorker::Done { task_id, outcome: Outcome::Failed(e), copies, contained };
                        self.pump_node(n);
                        self.send_replies(w, Some(write.conn), vec![reply]);
                        return self.run_inbox(w);
                    }
                    // The worker is gone: nothing was allocated, nobody is answered.
                    OpStep::Done(CreateOutcome::Abandoned) => {
                        self.pump_node(n);
                        return self.run_inbox(w);
                    }
                };
                self.pump_node(n);
                let going = next.is_some() || alive;
                if let Some(event) = next {
                    write.create = Some((op, event));
                }
                // Created, with the worker dead: its disconnect aborts the create.
                if going {
                    self.writes.insert(w, write);
                } else {
                    self.run_inbox(w);
                }
            }
            None => {
                if alive {
                    self.seal(n, write.client, write.object, write.bytes);
                    self.send_replies(w, Some(write.conn), vec![write.reply]);
                }
                self.run_inbox(w);
            }
        }
    }

    /// Copies the stored `object` from node `from` into node `to`'s store as a secondary
    /// copy, as a pull does.
    pub(crate) fn copy_object(
        &mut self,
        object: ObjectId,
        from: NodeId,
        to: usize,
        owner: Option<WorkerId>,
    ) -> Result<(), String> {
        let src = self.node_index(from).ok_or("no such node")?;
        if !self.nodes[src].alive {
            return Err("the node is dead".into());
        }
        if !self.nodes[src].node.store().contains(object) {
            return Err("the source does not hold it".into());
        }
        // As a real transfer: the source pins its copy (restoring it if spilled) for the
        // time of the copy, and counts the bytes it served when it lets go.
        match self.run_store_op(src, PinOp::new(self.now(), STORE_TIMEOUT, TRANSFER_CLIENT, object)) {
            PinOutcome::Pinned { .. } => {}
            PinOutcome::Failed(e) => return Err(format!("the source could not serve it: {e}")),
        }
        let result = self.copy_pinned(object, src, to, owner);
        let served = self.nodes[src].data.get(&object).map_or(0, |b| b.len() as u64);
        self.nodes[src].node.release_served(object, served);
        self.pump_node(src);
        result
    }

    /// The destination's half of [`Sim::copy_object`], with the source's copy pinned.
    pub(crate) fn copy_pinned(
        &mut self,
        object: ObjectId,
        src: usize,
        to: usize,
        owner: Option<WorkerId>,
    ) -> Result<(), String> {
        let bytes = self.nodes[src].data.get(&object).cloned().ok_or("the source has no bytes")?;
        if self.nodes[to].node.store().contains(object) {
            return Ok(());
        }
        let op = CopyOp::new(self.now(), STORE_TIMEOUT, object, bytes.len() as u64, owner);
        match self.run_store_op(to, op) {
            CopyOutcome::Created { .. } => {}
            CopyOutcome::Exists => return Ok(()),
            CopyOutcome::Failed(e) => return Err(e.to_string()),
        }
        self.nodes[to].data.insert(object, bytes);
        self.nodes[to].node.finish_copy(object, true);
        self.pump_node(to);
        Ok(())
    }

    /// Pins `id` on `p`'s node, copies its bytes and releases it, as a reader would.
    pub(crate) fn read_pinned(&mut self, p: ProcId, id: ObjectId) -> Result<Vec<u8>, TaskError> {
        self.flush(Chan::ToNode(p));
        let (n, client) = (self.procs[p].node, self.procs[p].client);
        let lost = || TaskError::ObjectLost { object: id.to_string() };
        if !self.nodes[n].alive {
            return Err(lost());
        }
        match self.run_store_op(n, PinOp::new(self.now(), STORE_TIMEOUT, client, id)) {
            PinOutcome::Pinned { .. } => {}
            PinOutcome::Failed(_) => return Err(lost()),
        }
        let bytes = self.nodes[n].data.get(&id).cloned().ok_or_else(lost);
        self.nodes[n].node.handle(client, ToRaylet::ReleaseObjects { object_ids: vec![id] });
        self.pump_node(n);
        bytes
    }

    /// Creates and seals `id` with `bytes` in `p`'s node, owned by `owner`.
    pub(crate) fn store_sync(
        &mut self,
        p: ProcId,
        id: ObjectId,
        bytes: &[u8],
        owner: WorkerId,
    ) -> Result<(), TaskError> {
        self.flush(Chan::ToNode(p));
        let (n, client) = (self.procs[p].node, self.procs[p].client);
        let op = CreateOp::new(self.now(), STORE_TIMEOUT, client, id, bytes.len() as u64, owner);
        match self.run_store_op(n, op) {
            CreateOutcome::Created { .. } => {
                self.seal(n, client, id, bytes.to_vec());
                Ok(())
            }
            CreateOutcome::Failed(e) => Err(e),
            // The node reaped this process: the real one would never hear back.
            CreateOutcome::Abandoned => Err(TaskError::ObjectLost { object: format!("{id} (the creator was reaped)") }),
        }
    }

    /// The creator wrote `bytes` into the room its create made on node `n`: it seals.
    fn seal(&mut self, n: usize, client: ClientId, id: ObjectId, bytes: Vec<u8>) {
        let sn = &mut self.nodes[n];
        sn.data.insert(id, bytes);
        sn.node.handle(client, ToRaylet::SealObject { request_id: ares_common::RequestId(0), object_id: id });
        self.pump_node(n);
    }

    /// Runs a store op on node `n` to its end, as the raylet's driver does: page
    /// reservations always succeed, a wait passes at once on the op's own clock (the sim
    /// does not move while one process waits, so a wait ends at its deadline), and a
    /// restore read succeeds (the bytes never left `data`).
    pub(crate) fn run_store_op<O: Op>(&mut self, n: usize, mut op: O) -> O::Outcome {
        let (mut now, mut event) = (self.now(), OpEvent::Go);
        loop {
            match op.advance(&mut self.nodes[n].node, now, false, event) {
                OpStep::Wait(d) => {
                    self.pump_node(n);
                    now += d;
                    event = OpEvent::Go;
                }
                OpStep::Reserve { .. } => event = OpEvent::Reserved(Ok(())),
                OpStep::Read(_) => event = OpEvent::Read { result: Ok(()), took: Duration::ZERO },
                OpStep::Done(outcome) => {
                    self.pump_node(n);
                    return outcome;
                }
            }
        }
    }
}
