//! The node's store side: the [`StoreIndex`] and the control of spilling around it
//! (when to plan spills, the pause after a failed one, the time spent spilling and
//! restoring). A sub-machine of [`crate::node::Node`], which owns the owner bookkeeping
//! and the messages to clients; this part queues only [`StoreOutput`]s, which the node
//! hands on as its own outputs.
//!
//! **Must not:** know clients' roles, owners or leases; do IO.

use std::collections::VecDeque;
use std::time::Duration;

use ares_common::error::TaskError;
use ares_common::{ClientId, ObjectId};
use ares_object_store::{FileId, Pin, RestoreJob, SpillJob, SpillPolicy, StoreError, StoreIndex};

use crate::space::Progress;

/// What the store side asks its driver to do (through [`crate::node::Output`]).
#[derive(Debug)]
pub enum StoreOutput {
    /// Write these objects to a spill file (off the lock).
    Spill(SpillJob),
    /// Close this spill file: its last object is gone.
    RemoveSpillFile(FileId),
    /// Pool space was freed or a restore ended: wake waiters.
    SpaceFreed,
    /// Spilling failed and is paused: resume after this long.
    ResumeSpillAfter(Duration),
}

/// The store index and spilling's state (see the module docs).
pub struct StoreSide {
    index: StoreIndex,
    /// The last spill failure, while spilling fails.
    error: Option<String>,
    /// Spill failures in a row.
    failures: u32,
    /// Spilling is paused after a failure (until `resume_spill`).
    paused: bool,
    /// The node is shutting down: no more spilling to make room.
    stopping: bool,
    spill_time: Duration,
    restore_time: Duration,
    out: VecDeque<StoreOutput>,
}

impl StoreSide {
    /// An empty pool of `pool_size` bytes that spills as `policy` says.
    pub fn new(pool_size: u64, policy: SpillPolicy) -> Self {
        StoreSide {
            index: StoreIndex::with_policy(pool_size, policy),
            error: None,
            failures: 0,
            paused: false,
            stopping: false,
            spill_time: Duration::ZERO,
            restore_time: Duration::ZERO,
            out: VecDeque::new(),
        }
    }

    /// The index (read only).
    pub fn index(&self) -> &StoreIndex {
        &self.index
    }

    /// The next output to carry out.
    pub fn poll(&mut self) -> Option<StoreOutput> {
        self.out.pop_front()
    }

    /// Allocates `size` bytes for `id`, created by `client` (`primary`: the owner's copy,
    /// spillable; else an evictable secondary copy).
    pub fn create(&mut self, id: ObjectId, size: u64, client: ClientId, primary: bool) -> Result<u64, StoreError> {
        self.index.create(id, size, client, primary)
    }

    /// Takes back `client`'s unsealed `id`; whether there was one.
    pub fn abort_create(&mut self, id: ObjectId, client: ClientId) -> bool {
        let taken = self.index.abort_create(id, client);
        if taken {
            self.out.push_back(StoreOutput::SpaceFreed);
        }
        taken
    }

    /// Seals `client`'s `id`, then plans spilling if primaries passed the threshold.
    /// `Ok(true)`: it was freed at once (its owner had deleted it already).
    pub fn seal(&mut self, id: ObjectId, client: ClientId) -> Result<bool, StoreError> {
        let r = self.index.seal(id, client);
        self.request_space(0);
        r
    }

    /// Seals a copy whose creator needs no spill planning (a pulled, secondary copy).
    pub fn seal_copy(&mut self, id: ObjectId, client: ClientId) -> Result<bool, StoreError> {
        self.index.seal(id, client)
    }

    /// Pins `id` for `client` if it is in memory.
    pub fn pin(&mut self, id: ObjectId, client: ClientId) -> Result<Pin, StoreError> {
        self.index.pin(id, client)
    }

    /// Releases `client`'s pins of `ids`.
    pub fn release(&mut self, ids: impl IntoIterator<Item = ObjectId>, client: ClientId) {
        for id in ids {
            self.index.release(id, client);
        }
        self.freed();
    }

    /// Deletes `ids` (readers' pins keep the bytes until released).
    pub fn delete(&mut self, ids: impl IntoIterator<Item = ObjectId>) {
        for id in ids {
            self.index.delete(id);
        }
        self.freed();
    }

    /// `client`'s connection ended: its pins and unsealed creates go.
    pub fn client_gone(&mut self, client: ClientId) {
        self.index.client_gone(client);
    }

    /// Space may have been freed: spill files left empty are closed, waiters woken.
    pub fn freed(&mut self) {
        self.close_dead_files();
        self.out.push_back(StoreOutput::SpaceFreed);
    }

    fn close_dead_files(&mut self) {
        let dead = self.index.take_dead_files();
        self.out.extend(dead.into_iter().map(StoreOutput::RemoveSpillFile));
    }

    /// Plans spilling if primaries pass the threshold or `need` bytes did not fit.
    /// Returns whether anything was done (spill jobs queued, or memory freed at once).
    pub fn request_space(&mut self, need: u64) -> bool {
        if self.paused {
            return false;
        }
        let jobs = self.index.plan_spill(need);
        let dropped = self.index.freed_by_last_plan() > 0;
        let sent = !jobs.is_empty();
        self.out.extend(jobs.into_iter().map(StoreOutput::Spill));
        self.close_dead_files();
        sent || dropped
    }

    /// The node is shutting down: waits for room end, and no new spill round starts.
    pub fn set_stopping(&mut self) {
        self.stopping = true;
    }

    /// Whether the node is shutting down.
    pub fn stopping(&self) -> bool {
        self.stopping
    }

    /// Where a waiter for `need` bytes stands after an allocation failed: asks for
    /// spilling (unless the node is stopping), then describes what might still free
    /// space.
    pub fn progress(&mut self, need: u64) -> Progress {
        let stopping = self.stopping;
        let acted = !stopping && self.request_space(need);
        Progress {
            acted,
            spilling: self.index.spilling(),
            pinned_objects: self.index.stats().pinned_objects,
            stopping,
            spill_failed: self.paused,
        }
    }

    /// The pause after a spill failure is over: plan spilling again if still needed.
    pub fn resume_spill(&mut self) {
        self.paused = false;
        self.request_space(0);
        self.out.push_back(StoreOutput::SpaceFreed);
    }

    /// Allocates memory to restore a spilled object into.
    pub fn begin_restore(&mut self, id: ObjectId) -> Result<RestoreJob, StoreError> {
        self.index.begin_restore(id)
    }

    /// The restore's read ended after `took`; pins the object for `client` if it
    /// succeeded.
    pub fn finish_restore(
        &mut self,
        id: ObjectId,
        client: ClientId,
        ok: bool,
        took: Duration,
    ) -> Result<Pin, StoreError> {
        self.restore_time += took;
        let r = self.index.finish_restore(id, client, ok);
        self.out.push_back(StoreOutput::SpaceFreed);
        r
    }

    /// The error for a create or restore that cannot get space.
    pub fn no_space(&self, e: StoreError) -> TaskError {
        match (e, &self.error) {
            (StoreError::TooLarge { size, capacity }, _) => TaskError::ObjectTooLarge { size, capacity },
            (StoreError::Full { requested, capacity, used }, Some(err)) => {
                TaskError::SpillFailed { requested, capacity, used, error: err.clone() }
            }
            (StoreError::Full { requested, capacity, used }, None) => {
                TaskError::ObjectStoreFull { requested, capacity, used }
            }
            (other, _) => TaskError::ObjectLost { object: other.to_string() },
        }
    }

    /// A spill job was never run (the node is stopping): its objects stay in memory.
    pub fn spill_abandoned(&mut self, job: &SpillJob) {
        self.index.finish_spill(job, Err("the raylet is shutting down".into()));
        self.close_dead_files();
    }

    /// The spill thread wrote (or failed to write) a job in `took`: records where each
    /// object went and plans the next round if still over the threshold (unless the
    /// node is stopping). Returns the objects now on disk (ID, file, offset), for
    /// their owners to hear of.
    pub fn spill_finished(
        &mut self,
        job: &SpillJob,
        written: Result<&[u64], String>,
        took: Duration,
    ) -> Vec<(ObjectId, FileId, u64)> {
        self.spill_time += took;
        let ok = written.is_ok();
        let outcome = self.index.finish_spill(job, written.clone());
        match written {
            Ok(_) => {
                if self.failures > 0 {
                    tracing::info!(failures = self.failures, "spilling works again");
                }
                self.error = None;
                self.failures = 0;
            }
            Err(e) => {
                self.failures += 1;
                // Only the failure that starts a pause is logged (a job already in flight
                // may fail too): at most one line per pause, and pauses grow to 10 s.
                if !self.paused {
                    let pause = spill_pause(self.failures);
                    tracing::error!(
                        failures = self.failures,
                        "spilling failed: {e}; retrying in {pause:?}, and until then a put that needs room fails at once"
                    );
                    self.paused = true;
                    self.out.push_back(StoreOutput::ResumeSpillAfter(pause));
                }
                self.error = Some(e);
            }
        }
        self.out.extend(outcome.dead_files.into_iter().map(StoreOutput::RemoveSpillFile));
        self.close_dead_files();
        // Still over the threshold (objects kept arriving)? Plan the next round.
        if ok && !self.stopping {
            self.request_space(0);
        }
        self.out.push_back(StoreOutput::SpaceFreed);
        outcome.spilled
    }

    /// Time spent writing spill files.
    pub fn spill_time(&self) -> Duration {
        self.spill_time
    }

    /// Time spent reading spilled objects back.
    pub fn restore_time(&self) -> Duration {
        self.restore_time
    }

    /// The last spill failure, while spilling fails.
    pub fn spill_error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// How long spilling pauses after `failures` failures in a row: 100 ms, doubling, at
/// most 10 s.
pub(crate) fn spill_pause(failures: u32) -> Duration {
    let ms = 100u64.saturating_mul(1 << failures.saturating_sub(1).min(7));
    Duration::from_millis(ms.min(10_000))
}
