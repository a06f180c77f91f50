//! Completion: what a worker's reply means for the owner (return values recorded, copies
//! counted, stale copies deleted, waiting tasks released), and what a lost leased worker
//! costs the tasks that were on it (a retry, or their failure).
//!
//! **Must not:** choose workers or nodes (that is `leases`); do IO.

use super::*;

impl CoreState {
    pub(crate) fn on_lease_replies(&mut self, now: Instant, conn_id: ConnId, replies: Vec<FromWorker>) {
        let lease_node = self.leases.lease_of(conn_id).and_then(|(_, node)| node);
        let node = lease_node.unwrap_or(self.node());
        let mut stale = Vec::new();
        let mut touched = Touched::default();
        for FromWorker::Done { task_id, outcome, copies, contained } in replies {
            for id in copies {
                // A copy of a value that failed or went meanwhile (its node died, say)
                // belongs to nobody: delete it.
                if matches!(self.table.status(id), Some(Status::Failed(_)) | None) && self.borrowed.owner(id).is_none()
                {
                    stale.push(id);
                } else {
                    self.table.add_copy(id, node);
                }
            }
            if !contained.is_empty() {
                self.hold_returned(task_id, &contained);
            }
            self.leases.replied(conn_id, task_id, now);
            self.complete(now, task_id, outcome, node, &mut stale, &mut touched);
        }
        self.changed = true;
        if let Some((shape, _)) = self.leases.lease_of(conn_id) {
            // Its own queue first, then tasks that may borrow it (see `Leases::push_queued`).
            let anywhere = SchedKey { shape: shape.shape.clone(), strategy: Strategy::Default };
            for k in [shape.clone(), anywhere] {
                if !touched.shapes.contains(&k) && self.leases.has_queue(&k) {
                    touched.shapes.push(k);
                }
            }
        }
        self.dispatch_touched(now, touched);
        self.leases.settle(conn_id, now);
        if let Some(ended) = self.leases.take_if_due(conn_id, now) {
            self.give_back(now, conn_id, ended);
        }
        self.delete_stale_at(lease_node, stale);
    }

    /// Records one task's outcome (a stored result is on `node`), and makes the tasks
    /// waiting on its result ready.
    pub(crate) fn complete(
        &mut self,
        now: Instant,
        task_id: TaskId,
        outcome: Outcome,
        node: NodeId,
        stale: &mut Vec<ObjectId>,
        touched: &mut Touched,
    ) {
        let Some(task) = self.tasks.remove(&task_id) else {
            // Nobody waits for it any more (the runtime stopped, or another attempt
            // finished first): free what it made.
            stale.extend(self.unheld_returns(task_id, &outcome, Some(node)));
            return;
        };
        // One location per return value, or the task's failure.
        let attempts = task.attempts;
        match outcome {
            Outcome::Failed(TaskError::ArgumentUnavailable { index, function, object, reason, tried }) => {
                // A lost argument of ours is rebuilt and the task runs again.
                if let Some(task) = self.argument_unavailable(now, task_id, task, index, &tried, touched) {
                    if task.num_returns > 1 {
                        stale.extend(returns_of(task_id, task.num_returns));
                    }
                    self.tasks.insert(task_id, task);
                    let e = TaskError::ArgumentUnavailable { index, function, object, reason, tried };
                    self.fail_task(task_id, e);
                }
                return;
            }
            Outcome::Failed(e) => {
                if task.num_returns > 1 {
                    // The worker may have stored some return values before one failed.
                    stale.extend(returns_of(task_id, task.num_returns));
                }
                // Put the task back so fail_task handles it and its dependents alike.
                self.tasks.insert(task_id, task);
                self.fail_task(task_id, e);
                return;
            }
            Outcome::Returns(v) if v.len() != task.num_returns as usize || task.num_returns < 2 => {
                let e = TaskError::Decode {
                    function: task.function.to_string(),
                    what: "the return values".into(),
                    reason: format!("the worker sent {} return values for a task of {}", v.len(), task.num_returns),
                };
                stale.extend(stored_returns(task_id, &Outcome::Returns(v)));
                self.tasks.insert(task_id, task);
                self.fail_task(task_id, e);
                return;
            }
            Outcome::Inline(_) | Outcome::Shared { .. } if task.num_returns > 1 => {
                stale.extend(stored_returns(task_id, &outcome));
                let e = TaskError::Decode {
                    function: task.function.to_string(),
                    what: "the return values".into(),
                    reason: format!("the worker sent one return value for a task of {}", task.num_returns),
                };
                self.tasks.insert(task_id, task);
                self.fail_task(task_id, e);
                return;
            }
            // The common case: one return value, no allocation beyond its bytes.
            Outcome::Inline(v) => self.set_return(task_id, 0, inline_location(&v), attempts, stale, touched),
            Outcome::Shared { len, .. } => {
                self.set_return(task_id, 0, Location::stored(node, len), attempts, stale, touched)
            }
            Outcome::Returns(v) => {
                for (i, r) in v.into_iter().enumerate() {
                    let location = match r {
                        ReturnValue::Inline(b) => inline_location(&b),
                        ReturnValue::Shared { len, .. } => Location::stored(node, len),
                    };
                    self.set_return(task_id, i as u32, location, attempts, stale, touched);
                }
            }
        }
        for n in task.stale_on.iter().filter(|n| **n != node) {
            // An earlier attempt's copies on another node are not this value's.
            let ids: Vec<ObjectId> = returns_of(task_id, task.num_returns).collect();
            self.send_to(Some(*n), ToRaylet::DeleteObjects { object_ids: ids });
        }
        let keep = self.keeps_lineage(&task);
        if keep {
            self.hold_lineage_args(&task);
        }
        self.release_args(&task.arg_ids);
        let mut task = task;
        self.retire(&mut task);
        if keep {
            self.keep_lineage(task_id, task);
        }
    }

    /// The return values an attempt of `task_id` stored (on `node`, if known) that are
    /// not the values the owner holds. Two attempts store the same ID in the same node's
    /// store, the later in place of the earlier, so deleting a late attempt's result
    /// there would delete the live value (an attempt counted lost, its connection
    /// closed, may still have replied).
    pub(crate) fn unheld_returns(&self, task_id: TaskId, outcome: &Outcome, node: Option<NodeId>) -> Vec<ObjectId> {
        stored_returns(task_id, outcome)
            .into_iter()
            .filter(|id| {
                !matches!(self.table.status(*id),
                    Some(Status::Ready(Location::Stored(s))) if node.is_none_or(|n| s.nodes().any(|m| m == n)))
            })
            .collect()
    }

    /// A task that took these arguments finished or failed for good.
    pub(crate) fn release_args(&mut self, ids: &[ObjectId]) {
        self.release_lookups(ids);
        self.table.remove_submitted(ids);
        self.borrowed.remove_submitted(ids);
    }

    /// Return value `index` of `task_id` is at `location`: record it and make the tasks
    /// waiting on it ready.
    pub(crate) fn set_return(
        &mut self,
        task_id: TaskId,
        index: u32,
        location: Location,
        attempts: u32,
        stale: &mut Vec<ObjectId>,
        touched: &mut Touched,
    ) {
        let rid = ObjectId::for_return(task_id, index);
        if attempts > 0 && matches!(location, Location::Inline(_)) {
            // An earlier attempt may have sealed a copy before its worker died.
            stale.push(rid);
        }
        self.table.set_ready(rid, location);
        for tid in self.tasks.take_waiters(rid) {
            self.arg_ready(tid, touched);
        }
    }

    /// Deletes store copies no owner record points at; deleting an unknown ID is a no-op.
    pub(crate) fn delete_stale(&mut self, ids: Vec<ObjectId>) {
        self.delete_stale_at(None, ids);
    }

    /// Like [`CoreState::delete_stale`], in the store of `node` (`None`: this node's).
    pub(crate) fn delete_stale_at(&mut self, node: Option<NodeId>, ids: Vec<ObjectId>) {
        if !ids.is_empty() {
            self.send_to(node, ToRaylet::DeleteObjects { object_ids: ids });
        }
    }

    pub(crate) fn on_lease_lost(&mut self, now: Instant, conn_id: ConnId, reason: &str) {
        let Some(leases::Ended { lease_id, key: shape, node, in_flight }) = self.leases.remove(conn_id) else {
            return;
        };
        tracing::debug!("lost leased worker: {reason}");
        self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: true });
        let lost_on = node.unwrap_or(self.node());
        for t in &in_flight {
            if let Some(task) = self.tasks.get_mut(t) {
                if !task.stale_on.contains(&lost_on) {
                    task.stale_on.push(lost_on);
                }
                // Its worker may have pulled stored arguments there before it was lost.
                for id in &task.arg_ids {
                    self.table.add_maybe_copy(*id, lost_on);
                }
            }
        }
        let (retry, failed) = self.retry_or_fail(in_flight, |task| TaskError::WorkerDied {
            function: task.function.to_string(),
            attempts: task.attempts,
        });
        // The dead worker may have sealed results before dying.
        let stale = failed;
        self.leases.requeue_front(&shape, retry);
        self.dispatch(now, &shape);
        self.delete_stale_at(node, stale);
    }

    /// Counts an attempt for each task that was in flight on a lost connection: those
    /// with retries left are returned (in order) to be queued again, the others fail with
    /// `error(task)` and their return objects are returned second.
    pub(crate) fn retry_or_fail(
        &mut self,
        in_flight: impl IntoIterator<Item = TaskId>,
        error: impl Fn(&Task) -> TaskError,
    ) -> (Vec<TaskId>, Vec<ObjectId>) {
        let (mut retry, mut failed) = (Vec::new(), Vec::new());
        for tid in in_flight {
            let Some(task) = self.tasks.get_mut(&tid) else {
                continue;
            };
            task.attempts += 1;
            if task.retries_left > 0 && self.stopped.is_none() {
                task.retries_left -= 1;
                retry.push(tid);
            } else {
                let e = error(task);
                failed.extend(returns_of(tid, task.num_returns));
                self.fail_task(tid, e);
            }
        }
        (retry, failed)
    }
}
