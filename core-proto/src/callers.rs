//! The actors a core worker calls: per actor its [`Caller`] record (an in-order queue of
//! calls, handle count, hold registration, lookup retries, and for the owner its
//! construction and dedicated lease), and the connections to the actors' workers with
//! the calls pipelined on each. A sub-machine of [`crate::CoreState`], as [`Leases`] is
//! for tasks: the core state decides *what* a call carries and what an answer means;
//! this keeps *where* calls go and in which order.
//!
//! **Must not:** read task records or argument values (callers pass what it needs);
//! do IO.
//!
//! [`Leases`]: crate::leases::Leases

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use ares_common::det::DetMap;
use ares_common::{ActorId, Endpoint, LeaseId, NodeId, RequestId, ResourceSet, TaskError, TaskId, WorkerId};

use crate::{ConnId, Home};

/// Calls pushed to an actor's worker and not yet answered, at most.
pub(crate) const ACTOR_PIPELINE: usize = 4096;
/// Connection attempts of a borrower to an actor's advertised address before giving up.
pub(crate) const CONNECT_ATTEMPTS: u32 = 50;

/// What this process knows of one actor it calls.
pub(crate) struct Caller {
    pub(crate) class: Arc<str>,
    /// Calls not yet pushed, in submission order.
    pub(crate) queue: VecDeque<TaskId>,
    pub(crate) conn: Option<ConnId>,
    /// A borrower's lookup is under way (or waiting for its retry time).
    pub(crate) resolving: bool,
    /// Failed connection attempts of the current lookup.
    pub(crate) attempts: u32,
    /// When the next lookup may go (after a failed connection).
    pub(crate) retry_at: Option<Instant>,
    pub(crate) dead: Option<TaskError>,
    /// Live handle families plus tasks carrying a handle in their arguments.
    pub(crate) handles: usize,
    /// The directory counts this process as a holder.
    pub(crate) registered: bool,
    /// An `AddActorHold` is on its way.
    pub(crate) registering: bool,
    pub(crate) max_task_retries: u32,
    pub(crate) owned: Option<Owned>,
    /// The node whose directory keeps the actor, if not this process's own (its holds,
    /// lookups and releases go there).
    pub(crate) home: Home,
}

/// The owner's part of a [`Caller`].
pub(crate) struct Owned {
    pub(crate) create_tid: TaskId,
    /// For a detached actor, the resources it holds (reported with its construction).
    pub(crate) detached_shape: Option<ResourceSet>,
    /// The dedicated lease request out, if any.
    pub(crate) request: Option<RequestId>,
    /// The directory is deciding whether to restart the actor.
    pub(crate) deciding: bool,
}

impl Caller {
    pub(crate) fn new(class: Arc<str>) -> Self {
        Caller {
            class,
            queue: VecDeque::new(),
            conn: None,
            resolving: false,
            attempts: 0,
            retry_at: None,
            dead: None,
            handles: 1,
            registered: false,
            registering: false,
            max_task_retries: 0,
            owned: None,
            home: None,
        }
    }
}

/// A connection to the worker hosting an actor.
pub(crate) struct Conn {
    pub(crate) endpoint: Endpoint,
    /// The driver reported the connection open; nothing is pushed before.
    pub(crate) connected: bool,
    /// Replies arrived on it (a borrower's lookup found a working address).
    pub(crate) answered: bool,
    pub(crate) in_flight: VecDeque<(TaskId, Instant)>,
    pub(crate) actor: ActorId,
    /// The dedicated lease the owner holds for the actor's worker (callers that borrow
    /// the actor hold none).
    pub(crate) lease: Option<(LeaseId, WorkerId)>,
}

/// What to do with the call at the front of an actor's queue (see
/// [`Callers::push_calls`]).
pub(crate) enum Call {
    /// It is gone (it failed while queued): drop it and look at the next.
    Gone,
    /// Its arguments are not ready: it and every later call wait.
    NotReady,
    /// It was written to the connection's buffer.
    Pushed,
    /// It cannot be pushed and fails (its caller is told to fail it).
    Failed,
}

/// The actors a core worker calls (see the module docs).
#[derive(Default)]
pub(crate) struct Callers {
    actors: DetMap<ActorId, Caller>,
    conns: DetMap<ConnId, Conn>,
}

impl Callers {
    pub(crate) fn get(&self, a: &ActorId) -> Option<&Caller> {
        self.actors.get(a)
    }

    pub(crate) fn get_mut(&mut self, a: &ActorId) -> Option<&mut Caller> {
        self.actors.get_mut(a)
    }

    pub(crate) fn insert(&mut self, a: ActorId, c: Caller) {
        self.actors.insert(a, c);
    }

    /// Forgets `a`; its connection, if any, is handed back to be closed.
    pub(crate) fn remove(&mut self, a: &ActorId) -> Option<(Caller, Option<(ConnId, Conn)>)> {
        let c = self.actors.remove(a)?;
        let conn = c.conn.and_then(|id| Some((id, self.conns.remove(&id)?)));
        Some((c, conn))
    }

    /// Takes `a`'s connection away from it.
    pub(crate) fn take_conn(&mut self, a: &ActorId) -> Option<(ConnId, Conn)> {
        let id = self.actors.get_mut(a)?.conn.take()?;
        Some((id, self.conns.remove(&id)?))
    }

    /// A connection to `a`'s worker at `endpoint` (with the owner's dedicated `lease`),
    /// to be opened as `conn`.
    pub(crate) fn open(&mut self, a: ActorId, conn: ConnId, endpoint: Endpoint, lease: Option<(LeaseId, WorkerId)>) {
        if let Some(c) = self.actors.get_mut(&a) {
            c.conn = Some(conn);
        }
        let c = Conn { endpoint, connected: false, answered: false, in_flight: VecDeque::new(), actor: a, lease };
        self.conns.insert(conn, c);
    }

    pub(crate) fn conn(&self, id: ConnId) -> Option<&Conn> {
        self.conns.get(&id)
    }

    pub(crate) fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.conns.get_mut(&id)
    }

    /// Removes connection `id` (it ended); its actor no longer uses it.
    pub(crate) fn remove_conn(&mut self, id: ConnId) -> Option<Conn> {
        let conn = self.conns.remove(&id)?;
        if let Some(c) = self.actors.get_mut(&conn.actor)
            && c.conn == Some(id)
        {
            c.conn = None;
        }
        Some(conn)
    }

    /// Open connections to actors' workers.
    pub(crate) fn conn_count(&self) -> usize {
        self.conns.len()
    }

    /// Forgets every actor; their connections are handed back to be closed.
    pub(crate) fn clear(&mut self) -> Vec<ConnId> {
        self.actors.clear();
        self.conns.drain().map(|(id, _)| id).collect()
    }

    /// Actors whose directory is on `node`.
    pub(crate) fn homed_at(&self, node: NodeId) -> Vec<ActorId> {
        self.actors.iter().filter(|(_, c)| c.home.is_some_and(|(n, _)| n == node)).map(|(a, _)| *a).collect()
    }

    /// Actors whose lookup may go again at `now` (their retry time is cleared).
    pub(crate) fn due_lookups(&mut self, now: Instant) -> Vec<ActorId> {
        self.actors
            .iter_mut()
            .filter(|(_, c)| c.retry_at.is_some_and(|t| t <= now))
            .map(|(a, c)| {
                c.retry_at = None;
                *a
            })
            .collect()
    }

    /// The earliest lookup retry.
    pub(crate) fn next_retry(&self) -> Option<Instant> {
        self.actors.values().filter_map(|c| c.retry_at).min()
    }

    /// One more handle on each of `actors` this process calls; returns those counted.
    pub(crate) fn count_handles(&mut self, actors: impl IntoIterator<Item = ActorId>) -> Vec<ActorId> {
        actors.into_iter().filter(|a| self.actors.get_mut(a).map(|c| c.handles += 1).is_some()).collect()
    }

    /// Whether nothing here uses `a` any more: no handle, no call queued (`live` says
    /// which tasks still exist; the IDs of calls that failed while queued are pruned),
    /// none running but its construction, and no hold registration on its way.
    pub(crate) fn unused(&mut self, a: ActorId, live: impl Fn(&TaskId) -> bool) -> bool {
        let Some(c) = self.actors.get_mut(&a) else {
            return false;
        };
        while c.queue.front().is_some_and(|t| !live(t)) {
            c.queue.pop_front();
        }
        let queued = c.queue.iter().any(&live);
        let create = c.owned.as_ref().map(|o| o.create_tid);
        let busy = c
            .conn
            .and_then(|id| self.conns.get(&id))
            .is_some_and(|conn| conn.in_flight.iter().any(|(t, _)| Some(*t) != create));
        !(c.handles > 0 || queued || busy || c.registering)
    }

    /// Pushes calls from the front of `a`'s queue on its open connection, in order,
    /// while the pipeline has room: `push(tid, buf)` says what became of each (writing
    /// a pushed call's frame to `buf`). Returns the connection and the bytes to send, if
    /// any were written.
    pub(crate) fn push_calls(
        &mut self,
        a: ActorId,
        now: Instant,
        mut push: impl FnMut(TaskId, &mut Vec<u8>) -> Call,
    ) -> Option<(ConnId, Vec<u8>)> {
        let c = self.actors.get_mut(&a)?;
        let conn_id = c.conn?;
        let conn = self.conns.get_mut(&conn_id).filter(|c| c.connected)?;
        let mut buf = Vec::new();
        while conn.in_flight.len() < ACTOR_PIPELINE {
            let Some(&tid) = c.queue.front() else {
                break;
            };
            match push(tid, &mut buf) {
                Call::NotReady => break,
                Call::Gone | Call::Failed => {
                    c.queue.pop_front();
                }
                Call::Pushed => {
                    c.queue.pop_front();
                    conn.in_flight.push_back((tid, now));
                }
            }
        }
        (!buf.is_empty()).then_some((conn_id, buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(i: u64) -> TaskId {
        TaskId::default().child(i)
    }

    #[test]
    fn calls_go_in_order_and_a_call_not_ready_holds_back_the_ones_behind_it() {
        let (mut c, a, t0) = (Callers::default(), ActorId([1; 16]), Instant::now());
        c.insert(a, Caller::new("A".into()));
        c.get_mut(&a).unwrap().queue.extend([tid(0), tid(1), tid(2), tid(3)]);
        assert!(c.push_calls(a, t0, |_, _| panic!("no connection yet")).is_none());
        c.open(a, ConnId(5), Endpoint::Unix("/w".into()), None);
        assert!(c.push_calls(a, t0, |_, _| panic!("not connected yet")).is_none());
        c.conn_mut(ConnId(5)).unwrap().connected = true;
        let mut seen = Vec::new();
        let sent = c.push_calls(a, t0, |t, buf| {
            seen.push(t);
            match t {
                t if t == tid(0) => Call::Gone,
                t if t == tid(1) => {
                    buf.push(1);
                    Call::Pushed
                }
                _ => Call::NotReady,
            }
        });
        assert_eq!(seen, vec![tid(0), tid(1), tid(2)]);
        assert_eq!(sent, Some((ConnId(5), vec![1])));
        assert_eq!(c.get(&a).unwrap().queue, VecDeque::from([tid(2), tid(3)]));
        assert!(!c.unused(a, |_| true), "a handle and queued calls");
        c.get_mut(&a).unwrap().handles = 0;
        assert!(!c.unused(a, |t| *t != tid(2) && *t != tid(3)), "a call is still running");
        c.conn_mut(ConnId(5)).unwrap().in_flight.clear();
        assert!(c.unused(a, |t| *t != tid(2) && *t != tid(3)));
        assert!(c.get(&a).unwrap().queue.is_empty(), "gone calls are pruned");
    }

    #[test]
    fn a_removed_connection_leaves_its_actor_and_lookups_come_due() {
        let (mut c, a, t0) = (Callers::default(), ActorId([1; 16]), Instant::now());
        c.insert(a, Caller::new("A".into()));
        c.open(a, ConnId(5), Endpoint::Unix("/w".into()), None);
        assert!(c.remove_conn(ConnId(5)).is_some());
        assert_eq!(c.get(&a).unwrap().conn, None);
        c.get_mut(&a).unwrap().retry_at = Some(t0);
        assert_eq!(c.next_retry(), Some(t0));
        assert_eq!(c.due_lookups(t0), vec![a]);
        assert_eq!(c.next_retry(), None);
        assert_eq!(c.count_handles([a, ActorId([2; 16])]), vec![a]);
        assert_eq!(c.get(&a).unwrap().handles, 2);
    }
}
