//! Borrowers in the simulation: a process receives a ref owned by another (as a task
//! argument or inside a value it read would give it), registers with the owner through
//! the raylet's relay, reads it by asking the owner, and drops it; owners die under them.

use ares_common::{ObjectId, TaskError};
use ares_ownership::{Location, Owner, Status};

use crate::{ProcId, Sim};

impl Sim {
    /// Process `to` receives a ref to `id`, owned by `owner`, inside something that keeps
    /// the object alive until `to` is registered (a task's arguments, a value being read):
    /// `to` becomes a borrower and registers with the owner before this returns, as a
    /// worker does before its reply and a `get` before it returns.
    pub fn lend(&mut self, owner: ProcId, id: ObjectId, to: ProcId, max_steps: u64) -> Result<(), String> {
        let o = &self.procs[owner].state;
        let owner = Owner { worker: o.worker_id(), node: o.node() };
        let st = &mut self.procs[to].state;
        st.add_borrowed(id, owner, None);
        if st.register_borrows() {
            self.pump(to);
            self.run_while(max_steps, |sim| sim.procs[to].alive && sim.procs[to].state.registering())?;
        }
        self.pump(to);
        Ok(())
    }

    /// Process `p` drops its handle on the borrowed `id`.
    pub fn drop_borrowed(&mut self, p: ProcId, id: ObjectId) {
        if self.procs[p].alive {
            self.procs[p].state.remove_borrowed(id);
            self.pump(p);
        }
    }

    /// Process `p` reads the borrowed `id`: asks its owner (through the relay) and waits
    /// for the answer, then reads the bytes (inline, or from its node's store). The outer
    /// `Err` is a simulation failure (no answer within `max_steps`).
    pub fn read_borrowed(
        &mut self,
        p: ProcId,
        id: ObjectId,
        max_steps: u64,
    ) -> Result<Result<Vec<u8>, TaskError>, String> {
        if !self.procs[p].state.begin_lookup(id) {
            return Err(format!("process {p} does not borrow {id}"));
        }
        self.pump(p);
        let pending = |sim: &Sim| matches!(sim.procs[p].state.lookup_status(id), Some(Status::Pending));
        self.run_while(max_steps, pending).map_err(|e| format!("read of borrowed {id}: {e}"))?;
        let status = self.procs[p].state.lookup_status(id).cloned();
        self.procs[p].state.end_lookup(id);
        self.pump(p);
        Ok(match status {
            Some(Status::Ready(Location::Inline(b))) => Ok(b.to_vec()),
            Some(Status::Ready(Location::Stored(s))) => {
                // A copy on another node is pulled here first, and the owner told.
                let nodes: Vec<_> = s.nodes().collect();
                let me = self.procs[p].state.worker_id();
                match self.pull_arg(p, id, &nodes, me) {
                    Ok(copied) => {
                        if copied {
                            let here = self.procs[p].state.node();
                            self.procs[p].state.add_copy(id, here);
                            self.pump(p);
                        }
                        self.read_pinned(p, id)
                    }
                    Err(why) => Err(TaskError::ObjectLost { object: format!("{id} ({why})") }),
                }
            }
            Some(Status::Failed(e)) => Err(*e),
            other => return Err(format!("read of borrowed {id} ended as {other:?}")),
        })
    }

    /// Borrowed refs process `p` holds.
    pub fn borrowed_len(&self, p: ProcId) -> usize {
        self.procs[p].state.borrowed_len()
    }

    /// Delivers messages and fires timers while `cond` holds; fails after `max_steps` or
    /// if nothing is left to happen while it still holds.
    fn run_while(&mut self, max_steps: u64, cond: impl Fn(&Sim) -> bool) -> Result<(), String> {
        for _ in 0..max_steps {
            if !cond(self) {
                return Ok(());
            }
            if !self.step() && !self.fire_next_timer() {
                return Err("nothing left to happen, and still waiting".into());
            }
        }
        if cond(self) { Err(format!("still waiting after {max_steps} steps")) } else { Ok(()) }
    }
}
