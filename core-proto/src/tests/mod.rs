//! The core worker's state driven by hand: no processes, no sockets, no clock.

use super::*;
use ares_common::codec::Value;
use ares_common::frame::FrameReader;
use ares_common::wire::{ActorInfo, ActorKey, PeerLocation, PeerMsg, TaskSpec, ToWorker};
use ares_common::{Address, Unrecoverable};

fn node() -> NodeId {
    NodeId([7; 16])
}

fn state() -> CoreState {
    CoreState::new(StateConfig {
        address: Address { node: node(), worker: WorkerId([1; 16]), endpoint: None },
        root: TaskId::root(uuid::Uuid::from_u128(42)),
        max_frame: 1 << 20,
        max_in_flight: 64,
        max_lineage_bytes: 1 << 20,
        inline: InlineRule { max_inline: 100 << 10 },
    })
}

fn cpu() -> ResourceSet {
    ResourceSet::new().with("CPU", 1.0)
}

fn submit_spec(function: &'static str) -> Submit {
    Submit {
        function,
        shape: cpu(),
        strategy: ares_common::Strategy::Default,
        max_retries: 1,
        target: Target::Pool,
        kind: TaskKind::Normal,
        keeps: Vec::new(),
        carried: Vec::new(),
        num_returns: 1,
    }
}

fn value(v: i64) -> Arg {
    Arg::Inline(v.encode().unwrap())
}

fn effects(st: &mut CoreState) -> Vec<Output> {
    std::iter::from_fn(|| st.poll()).collect()
}

fn pushes(bytes: &[u8]) -> Vec<TaskSpec> {
    let mut r = FrameReader::new(std::io::Cursor::new(bytes.to_vec()), 1 << 20);
    std::iter::from_fn(|| r.read::<ToWorker>().ok()).map(|ToWorker::Push(spec)| spec).collect()
}

fn lease_requests(effects: &[Output]) -> Vec<RequestId> {
    effects
        .iter()
        .filter_map(|e| match e {
            Output::ToRaylet(ToRaylet::RequestLease { request_id, .. }) => Some(*request_id),
            _ => None,
        })
        .collect()
}

fn grant(st: &mut CoreState, now: Instant, request_id: RequestId, lease: u64) -> ConnId {
    let worker_addr = Endpoint::Unix(format!("worker-{lease}"));
    let msg =
        FromRaylet::LeaseGranted { request_id, lease_id: LeaseId(lease), worker_id: WorkerId([9; 16]), worker_addr };
    st.handle_raylet(now, msg);
    effects(st)
        .into_iter()
        .find_map(|e| match e {
            Output::Connect { conn, .. } => Some(conn),
            _ => None,
        })
        .expect("a grant opens a connection")
}

fn sent(effects: &[Output], on: ConnId) -> Vec<TaskSpec> {
    effects
        .iter()
        .filter_map(|e| match e {
            Output::Send { conn, bytes } if *conn == on => Some(pushes(bytes)),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Grants the first lease request among the pending effects as `lease` and opens its
/// connection; returns the connection and what was pushed on it.
fn open_lease(st: &mut CoreState, now: Instant, lease: u64) -> (ConnId, Vec<TaskSpec>) {
    let requests = lease_requests(&effects(st));
    let conn = grant(st, now, *requests.first().expect("a lease was requested"), lease);
    st.handle_connected(now, conn);
    let pushed = sent(&effects(st), conn);
    (conn, pushed)
}

fn done(task_id: TaskId, v: i64) -> FromWorker {
    FromWorker::Done {
        task_id,
        outcome: Outcome::Inline(v.encode().unwrap().to_vec()),
        copies: Vec::new(),
        contained: Vec::new(),
    }
}

#[test]
fn a_task_leases_a_worker_is_pushed_completes_and_the_idle_lease_goes_back() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, submit_spec("f"), vec![value(1)]);
    assert!(matches!(st.status(rid), Some(Status::Pending)));
    let e = effects(&mut st);
    let requests = lease_requests(&e);
    assert_eq!(requests.len(), 1, "one queued task asks for one lease: {e:?}");

    let conn = grant(&mut st, t0, requests[0], 1);
    assert!(effects(&mut st).is_empty(), "nothing is pushed before the connection is open");
    st.handle_connected(t0, conn);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.len(), 1);
    assert_eq!(pushed[0].task_id, tid);
    assert_eq!(pushed[0].function, "f");

    let t1 = t0 + Duration::from_micros(30);
    st.handle_replies(t1, conn, vec![done(tid, 5)]);
    assert!(st.take_changed());
    match st.status(rid) {
        Some(Status::Ready(Location::Inline(b))) => assert_eq!(i64::decode(b).unwrap(), 5),
        other => panic!("{other:?}"),
    }
    // Idle for less than the timeout: kept; then returned.
    assert_eq!(st.poll_timeout(), Some(t1 + IDLE_LEASE_TIMEOUT));
    st.handle_timeout(t1 + IDLE_LEASE_TIMEOUT / 2);
    assert!(effects(&mut st).is_empty());
    st.handle_timeout(t1 + IDLE_LEASE_TIMEOUT);
    let e = effects(&mut st);
    assert!(e.iter().any(|e| matches!(e, Output::Close(c) if *c == conn)), "{e:?}");
    assert!(
        e.iter().any(|e| matches!(
            e,
            Output::ToRaylet(ToRaylet::ReturnLease { lease_id: LeaseId(1), worker_broken: false })
        ))
    );
    assert_eq!(st.poll_timeout(), None);
}

#[test]
fn a_lease_whose_connection_is_slow_to_open_is_not_returned_as_idle() {
    // Over a lossy link a handshake can take a second (a lost packet's retransmission);
    // the lease waits for it rather than going back with its task still queued.
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    st.submit(t0, tid, submit_spec("f"), vec![value(1)]);
    let requests = lease_requests(&effects(&mut st));
    let conn = grant(&mut st, t0, requests[0], 1);
    assert_eq!(st.poll_timeout(), None, "no idle timer runs while the lease connects");
    let t1 = t0 + IDLE_LEASE_TIMEOUT * 10;
    st.handle_timeout(t1);
    let e = effects(&mut st);
    assert!(!e.iter().any(|e| matches!(e, Output::ToRaylet(ToRaylet::ReturnLease { .. }))), "{e:?}");
    st.handle_connected(t1, conn);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|t| t.task_id).collect::<Vec<_>>(), [tid]);
}

#[test]
fn the_same_events_give_the_same_ids_and_effects() {
    let run = || {
        let mut st = state();
        let t0 = Instant::now();
        let mut log = Vec::new();
        let a = st.next_task_id(None);
        let ra = st.submit(t0, a, submit_spec("f"), vec![value(1)]);
        let b = st.next_task_id(None);
        st.submit(t0, b, submit_spec("g"), vec![Arg::Ref(ra)]);
        let put = st.next_put_id(None);
        log.push(format!("{a:?} {b:?} {put:?}"));
        log.extend(effects(&mut st).iter().map(|e| format!("{e:?}")));
        log
    };
    assert_eq!(run(), run());
}

#[test]
fn a_rerun_task_names_its_children_and_puts_the_same() {
    let parent = TaskId::root(uuid::Uuid::from_u128(5)).child(3);
    let ids = || {
        let mut scope = TaskScope::new(parent);
        (scope.next_task(), scope.next_task(), scope.next_put(), scope.next_put())
    };
    let (a, b, p, q) = ids();
    assert_eq!((a, b, p, q), ids());
    assert_ne!(a, b);
    assert_ne!(p, q);
    assert_eq!(a, parent.child(0));
    assert_eq!(p, ObjectId::for_put(parent, 0));
    let mut st = state();
    let mut scope = TaskScope::new(parent);
    assert_eq!(st.next_task_id(Some(&mut scope)), a, "a task's submissions use its scope, not the root");
    assert_ne!(st.next_task_id(None), a);
}

#[test]
fn a_dependent_task_waits_for_its_argument_and_a_failure_propagates() {
    let mut st = state();
    let t0 = Instant::now();
    let a = st.next_task_id(None);
    let ra = st.submit(t0, a, submit_spec("f"), vec![value(1)]);
    let b = st.next_task_id(None);
    let rb = st.submit(t0, b, submit_spec("g"), vec![Arg::Ref(ra)]);
    let requests = lease_requests(&effects(&mut st));
    assert_eq!(requests.len(), 1, "only the ready task asks for a lease");
    let conn = grant(&mut st, t0, requests[0], 1);
    st.handle_connected(t0, conn);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|s| s.task_id).collect::<Vec<_>>(), vec![a]);

    let boom = TaskError::Application { function: "f".into(), message: "boom".into() };
    st.handle_replies(
        t0,
        conn,
        vec![FromWorker::Done {
            task_id: a,
            outcome: Outcome::Failed(boom.clone()),
            copies: Vec::new(),
            contained: Vec::new(),
        }],
    );
    assert!(matches!(st.status(ra), Some(Status::Failed(e)) if **e == boom));
    assert!(matches!(st.status(rb), Some(Status::Failed(e)) if **e == boom), "the dependent fails with the cause");
}

#[test]
fn a_lost_worker_retries_in_flight_tasks_then_fails_them_and_deletes_stray_copies() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, submit_spec("f"), vec![]);
    let (conn, pushed) = open_lease(&mut st, t0, 1);
    assert_eq!(pushed.len(), 1);

    st.handle_conn_closed(t0, conn, "connection closed");
    let e = effects(&mut st);
    assert!(e.iter().any(|e| matches!(e, Output::ToRaylet(ToRaylet::ReturnLease { worker_broken: true, .. }))));
    let requests = lease_requests(&e);
    assert_eq!(requests.len(), 1, "the retry asks for a new lease");
    assert!(matches!(st.status(rid), Some(Status::Pending)));

    let conn = grant(&mut st, t0, requests[0], 2);
    st.handle_connected(t0, conn);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed[0].attempt, 1);
    st.handle_conn_closed(t0, conn, "connection closed");
    match st.status(rid) {
        Some(Status::Failed(e)) if matches!(**e, TaskError::WorkerDied { attempts: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    let e = effects(&mut st);
    assert!(
        e.iter().any(
            |e| matches!(e, Output::ToRaylet(ToRaylet::DeleteObjects { object_ids }) if object_ids.contains(&rid))
        ),
        "a result the dead worker may have sealed is deleted: {e:?}"
    );
}

#[test]
fn a_connection_that_cannot_be_opened_gives_the_lease_back_and_asks_again() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, submit_spec("f"), vec![]);
    let requests = lease_requests(&effects(&mut st));
    let conn = grant(&mut st, t0, requests[0], 1);
    st.handle_connect_failed(t0, conn, "refused");
    let e = effects(&mut st);
    assert!(e.iter().any(|e| matches!(e, Output::ToRaylet(ToRaylet::ReturnLease { worker_broken: true, .. }))));
    assert_eq!(lease_requests(&e).len(), 1);
    assert!(matches!(st.status(rid), Some(Status::Pending)), "nothing ran, so no attempt was spent");
}

#[test]
fn short_tasks_are_pipelined_on_one_worker() {
    let mut st = state();
    let t0 = Instant::now();
    let first = st.next_task_id(None);
    st.submit(t0, first, submit_spec("f"), vec![]);
    let (conn, _) = open_lease(&mut st, t0, 1);
    // One reply 10 µs after the push teaches the state that tasks are short.
    st.handle_replies(t0 + Duration::from_micros(10), conn, vec![done(first, 0)]);
    effects(&mut st);
    let ids: Vec<TaskId> = (0..20)
        .map(|_| {
            let t = st.next_task_id(None);
            st.submit(t0, t, submit_spec("f"), vec![]);
            t
        })
        .collect();
    let pushed: Vec<TaskId> = sent(&effects(&mut st), conn).iter().map(|s| s.task_id).collect();
    assert_eq!(pushed, ids, "20 tasks of 10 µs fit the 500 µs pipeline target, in order");
}

#[test]
fn a_list_argument_is_merged_once_all_its_parts_are_ready() {
    fn concat(parts: &[&[u8]]) -> Result<Bytes, String> {
        let v: Vec<i64> = parts.iter().map(|p| i64::decode(p).unwrap()).collect();
        v.encode().map_err(|e| e.to_string())
    }
    let mut st = state();
    let t0 = Instant::now();
    let a = st.next_put_id(None);
    st.add_put(a, Location::Inline(Arc::new(1i64.encode().unwrap())), &[]);
    let p = st.next_task_id(None);
    let rp = st.submit(t0, p, submit_spec("f"), vec![]);
    let g = st.next_task_id(None);
    st.submit(t0, g, submit_spec("sum"), vec![Arg::Gather { ids: vec![a, rp], combine: concat }]);
    let e = effects(&mut st);
    assert!(!e.iter().any(|e| matches!(e, Output::Gather { .. })), "one part is pending");
    let conn = grant(&mut st, t0, lease_requests(&e)[0], 1);
    st.handle_connected(t0, conn);
    effects(&mut st);
    st.handle_replies(t0, conn, vec![done(p, 2)]);
    let (task, slot, parts, combine) = effects(&mut st)
        .into_iter()
        .find_map(|e| match e {
            Output::Gather { task, slot, parts, combine } => Some((task, slot, parts, combine)),
            _ => None,
        })
        .expect("both parts ready: merge");
    assert_eq!((task, slot), (g, 0));
    let bytes: Vec<Vec<u8>> = parts
        .iter()
        .map(|(_, l)| match l {
            Location::Inline(b) => b.to_vec(),
            Location::Stored(_) => unreachable!(),
        })
        .collect();
    let merged = combine(&bytes.iter().map(|b| &b[..]).collect::<Vec<_>>());
    st.handle_gathered(t0, task, slot, merged);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.len(), 1);
    match &pushed[0].args[0] {
        WireArg::Inline(b) => assert_eq!(Vec::<i64>::decode(b).unwrap(), vec![1, 2]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn freeing_a_stored_object_tells_the_raylet_and_an_inline_one_does_not() {
    let mut st = state();
    let stored = st.next_put_id(None);
    st.add_put(stored, Location::stored(node(), 1 << 20), &[]);
    let inline = st.next_put_id(None);
    st.add_put(inline, Location::Inline(Arc::new(Bytes::new())), &[]);
    st.remove_local_ref(inline);
    assert!(effects(&mut st).is_empty());
    st.remove_local_ref(stored);
    let e = effects(&mut st);
    assert!(
        matches!(&e[..], [Output::ToRaylet(ToRaylet::DeleteObjects { object_ids })] if *object_ids == vec![stored])
    );
}

#[test]
fn refs_carried_inside_arguments_live_until_the_task_is_done() {
    let mut st = state();
    let t0 = Instant::now();
    let inner = st.next_put_id(None);
    st.add_put(inner, Location::stored(node(), 10), &[]);
    let tid = st.next_task_id(None);
    let mut s = submit_spec("f");
    s.carried = vec![inner];
    st.submit(t0, tid, s, vec![value(0)]);
    st.remove_local_ref(inner);
    let requests = lease_requests(&effects(&mut st));
    assert!(st.status(inner).is_some(), "the task carries it");
    let conn = grant(&mut st, t0, requests[0], 1);
    st.handle_connected(t0, conn);
    effects(&mut st);
    st.handle_replies(t0, conn, vec![done(tid, 0)]);
    assert!(st.status(inner).is_none());
    let e = effects(&mut st);
    assert!(
        e.iter().any(
            |e| matches!(e, Output::ToRaylet(ToRaylet::DeleteObjects { object_ids }) if object_ids.contains(&inner))
        )
    );
}

#[test]
fn an_infeasible_shape_fails_its_queued_tasks() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, submit_spec("f"), vec![]);
    let request_id = lease_requests(&effects(&mut st))[0];
    let error = TaskError::Infeasible { requested: "CPU: 1".into(), available: "".into(), missing: "CPU: 1".into() };
    st.handle_raylet(t0, FromRaylet::LeaseInfeasible { request_id, error: error.clone() });
    assert!(matches!(st.status(rid), Some(Status::Failed(e)) if **e == error));
}

#[test]
fn a_push_over_the_frame_limit_fails_with_a_typed_error() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, submit_spec("f"), vec![Arg::Inline(vec![0u8; 2 << 20].encode().unwrap())]);
    let request = lease_requests(&effects(&mut st))[0];
    let conn = grant(&mut st, t0, request, 1);
    st.handle_connected(t0, conn);
    assert!(sent(&effects(&mut st), conn).is_empty());
    match st.status(rid) {
        Some(Status::Failed(e)) => match &**e {
            TaskError::Decode { reason, .. } => assert!(reason.contains("frame limit"), "{reason}"),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn stop_fails_everything_and_returns_the_leases() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, submit_spec("f"), vec![]);
    let (conn, _) = open_lease(&mut st, t0, 1);
    st.stop();
    assert!(matches!(st.status(rid), Some(Status::Failed(e)) if matches!(**e, TaskError::RuntimeShutdown)));
    let e = effects(&mut st);
    assert!(e.iter().any(|e| matches!(e, Output::Close(c) if *c == conn)));
    assert!(e.iter().any(|e| matches!(e, Output::ToRaylet(ToRaylet::ReturnLease { .. }))));
    let late = st.next_task_id(None);
    let r = st.submit(t0, late, submit_spec("f"), vec![]);
    assert!(matches!(st.status(r), Some(Status::Failed(e)) if matches!(**e, TaskError::RuntimeShutdown)));
}

fn spawn(st: &mut CoreState, t0: Instant, actor: ActorId) -> (TaskId, RequestId) {
    let create = st.next_task_id(None);
    let spawn = ActorSpawn {
        ctor: "Counter::new",
        class: Arc::from("Counter"),
        shape: ResourceSet::new(),
        max_task_retries: 0,
        max_concurrency: 1,
        detached: false,
    };
    st.create_actor(t0, actor, spawn, create, vec![value(10)], Vec::new(), Vec::new());
    let e = effects(st);
    let request = e
        .iter()
        .find_map(|e| match e {
            Output::ToRaylet(ToRaylet::RequestLease { request_id, dedicated: true, .. }) => Some(*request_id),
            _ => None,
        })
        .expect("an actor leases a dedicated worker");
    (create, request)
}

#[test]
fn an_owner_constructs_its_actor_then_calls_run_in_order_and_a_loss_asks_the_directory() {
    let mut st = state();
    let t0 = Instant::now();
    let actor = ActorId([3; 16]);
    let (create, request) = spawn(&mut st, t0, actor);
    let calls: Vec<ObjectId> = (0..3)
        .map(|i| {
            let t = st.next_task_id(None);
            st.submit_actor_call(t0, t, actor, "Counter::incr", vec![value(i)], Vec::new(), Vec::new())
        })
        .collect();
    assert!(effects(&mut st).is_empty(), "calls wait for the actor's worker");
    let conn = grant(&mut st, t0, request, 1);
    st.handle_connected(t0, conn);
    let pushed = sent(&effects(&mut st), conn);
    let kinds: Vec<_> = pushed.iter().map(|s| s.function.as_str()).collect();
    assert_eq!(kinds, vec!["Counter::new", "Counter::incr", "Counter::incr", "Counter::incr"]);
    assert_eq!(pushed[0].task_id, create);
    assert_eq!(pushed[1..].iter().map(|s| ObjectId::for_return(s.task_id, 0)).collect::<Vec<_>>(), calls);

    st.handle_replies(
        t0,
        conn,
        vec![FromWorker::Done {
            task_id: create,
            outcome: Outcome::Inline(vec![]),
            copies: Vec::new(),
            contained: Vec::new(),
        }],
    );
    let e = effects(&mut st);
    assert!(
        e.iter().any(|e| matches!(e, Output::ToRaylet(ToRaylet::ActorStarted { actor_id, .. }) if *actor_id == actor))
    );

    // The process dies with the calls in flight: they fail (not retryable), and the
    // owner asks the directory whether to restart.
    st.handle_conn_closed(t0, conn, "connection closed");
    for c in &calls {
        assert!(matches!(st.status(*c), Some(Status::Failed(e)) if matches!(**e, TaskError::ActorDied { .. })));
    }
    let e = effects(&mut st);
    let lost = e
        .iter()
        .find_map(|e| match e {
            Output::ToRaylet(ToRaylet::ActorWorkerLost { request_id, .. }) => Some(*request_id),
            _ => None,
        })
        .expect("the owner asks the directory");
    // Restart: a new dedicated lease, and the construction is pushed again.
    st.handle_raylet(t0, FromRaylet::ActorReply { request_id: lost, error: None });
    let e = effects(&mut st);
    let again = e
        .iter()
        .find_map(|e| match e {
            Output::ToRaylet(ToRaylet::RequestLease { request_id, dedicated: true, .. }) => Some(*request_id),
            _ => None,
        })
        .expect("restarting leases a new worker");
    let conn = grant(&mut st, t0, again, 2);
    st.handle_connected(t0, conn);
    assert_eq!(sent(&effects(&mut st), conn)[0].task_id, create);
}

#[test]
fn a_borrower_looks_the_actor_up_and_retries_a_refused_connection_later() {
    let mut st = state();
    let t0 = Instant::now();
    let actor = ActorId([4; 16]);
    assert_eq!(st.borrow_actor(actor, Arc::from("Counter"), 0, None), Borrow::Registering);
    assert!(st.hold_pending(actor));
    let e = effects(&mut st);
    let hold = e
        .iter()
        .find_map(|e| match e {
            Output::ToRaylet(ToRaylet::AddActorHold { request_id, .. }) => Some(*request_id),
            _ => None,
        })
        .unwrap();
    assert_eq!(st.borrow_actor(actor, Arc::from("Counter"), 0, None), Borrow::Busy, "one registration at a time");
    st.handle_raylet(t0, FromRaylet::ActorReply { request_id: hold, error: None });
    assert!(!st.hold_pending(actor));
    assert!(st.take_changed(), "waiters for the hold wake");
    assert_eq!(st.borrow_actor(actor, Arc::from("Counter"), 0, None), Borrow::Done);

    let t = st.next_task_id(None);
    let call = st.submit_actor_call(t0, t, actor, "Counter::incr", vec![value(1)], Vec::new(), Vec::new());
    let lookup = |e: &[Output]| {
        e.iter()
            .find_map(|e| match e {
                Output::ToRaylet(ToRaylet::LookupActor { request_id, by: ActorKey::Id(a) }) if *a == actor => {
                    Some(*request_id)
                }
                _ => None,
            })
            .expect("a borrower looks the actor up")
    };
    let request_id = lookup(&effects(&mut st));
    let info = |addr: &str| ActorInfo {
        actor_id: actor,
        class: "Counter".into(),
        addr: Endpoint::Unix(addr.into()),
        max_task_retries: 0,
    };
    st.handle_raylet(t0, FromRaylet::ActorFound { request_id, info: info("old") });
    let conn = match &effects(&mut st)[..] {
        [Output::Connect { conn, .. }] => *conn,
        other => panic!("{other:?}"),
    };
    st.handle_connect_failed(t0, conn, "refused");
    assert!(effects(&mut st).is_empty(), "the next lookup waits a little");
    assert!(st.take_timer_changed());
    let due = st.poll_timeout().expect("a retry is scheduled");
    assert!(due > t0);
    st.handle_timeout(due);
    let request_id = lookup(&effects(&mut st));
    st.handle_raylet(t0, FromRaylet::ActorFound { request_id, info: info("new") });
    let conn = match &effects(&mut st)[..] {
        [Output::Connect { conn, endpoint }] => {
            assert_eq!(*endpoint, Endpoint::Unix("new".into()));
            *conn
        }
        other => panic!("{other:?}"),
    };
    st.handle_connected(t0, conn);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|s| ObjectId::for_return(s.task_id, 0)).collect::<Vec<_>>(), vec![call]);
}

#[test]
fn losing_the_raylet_fails_a_hold_being_registered() {
    let mut st = state();
    let actor = ActorId([5; 16]);
    assert_eq!(st.borrow_actor(actor, Arc::from("Counter"), 0, None), Borrow::Registering);
    effects(&mut st);
    st.handle_raylet_lost("sock", "the connection closed");
    assert!(!st.hold_pending(actor), "a waiter for the hold is released");
}

#[test]
fn losing_the_raylet_fails_waiting_tasks_and_every_later_one() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let waiting = st.submit(t0, tid, submit_spec("f"), vec![value(1)]);
    assert_eq!(lease_requests(&effects(&mut st)).len(), 1, "it waits for a lease");
    st.handle_raylet_lost("/run/ares/raylet.sock", "the connection closed");
    let unavailable = |s: Option<&Status>| matches!(s, Some(Status::Failed(e)) if matches!(**e, TaskError::RayletUnavailable { ref socket, .. } if socket == "/run/ares/raylet.sock"));
    assert!(unavailable(st.status(waiting)), "{:?}", st.status(waiting));
    assert!(st.take_changed(), "waiters are woken");
    let tid = st.next_task_id(None);
    let later = st.submit(t0, tid, submit_spec("g"), vec![value(2)]);
    assert!(unavailable(st.status(later)), "{:?}", st.status(later));
    assert!(lease_requests(&effects(&mut st)).is_empty(), "nothing is asked of a raylet that is gone");
}

#[test]
fn a_borrower_of_an_actor_homed_on_another_node_asks_that_node_and_fails_when_it_is_lost() {
    let mut st = state();
    let t0 = Instant::now();
    let actor = ActorId([6; 16]);
    let home = NodeId([9; 16]);
    let addr: std::net::SocketAddr = "127.0.0.1:7009".parse().unwrap();
    assert_eq!(st.borrow_actor(actor, Arc::from("Counter"), 0, Some((home, addr))), Borrow::Registering);
    let hold = match &effects(&mut st)[..] {
        [Output::ToNode { node, addr: a, msg: ToRaylet::AddActorHold { request_id, actor_id } }] => {
            assert_eq!((*node, *a, *actor_id), (home, addr, actor));
            *request_id
        }
        other => panic!("the hold goes to the actor's home node: {other:?}"),
    };
    st.handle_node(t0, home, FromRaylet::ActorReply { request_id: hold, error: None });
    assert!(!st.hold_pending(actor));
    let t = st.next_task_id(None);
    let call = st.submit_actor_call(t0, t, actor, "Counter::incr", vec![value(1)], Vec::new(), Vec::new());
    assert!(
        matches!(&effects(&mut st)[..], [Output::ToNode { node, msg: ToRaylet::LookupActor { .. }, .. }] if *node == home),
        "the lookup goes there too"
    );
    // The home node's connection ends (its directory dropped our hold with it): the call
    // fails, naming the node, instead of waiting for an answer that will not come.
    st.handle_node_lost(t0, home, "connection reset");
    match st.status(call) {
        Some(Status::Failed(e)) => assert!(e.to_string().contains("lost the connection to node"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_task_of_several_return_values_fills_each_and_a_wrong_count_fails_them_all() {
    use ares_common::wire::ReturnValue;
    let mut st = state();
    let t0 = Instant::now();
    let (a, b) = (st.next_task_id(None), st.next_task_id(None));
    let three = Submit { num_returns: 3, ..submit_spec("f") };
    st.submit(t0, a, three, vec![value(1)]);
    let two = Submit { num_returns: 2, ..submit_spec("f") };
    st.submit(t0, b, two, vec![value(1)]);
    let (conn, pushed) = open_lease(&mut st, t0, 1);
    assert_eq!(pushed[0].num_returns, 3);
    let inline = |v: i64| ReturnValue::Inline(v.encode().unwrap().to_vec());
    let returns = vec![inline(7), ReturnValue::Shared { offset: 0, len: 100 }, inline(9)];
    let reply =
        FromWorker::Done { task_id: a, outcome: Outcome::Returns(returns), copies: Vec::new(), contained: Vec::new() };
    st.handle_replies(t0, conn, vec![reply]);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!((pushed[0].task_id, pushed[0].num_returns), (b, 2));
    let wrong = FromWorker::Done {
        task_id: b,
        outcome: Outcome::Returns(vec![inline(1)]),
        copies: Vec::new(),
        contained: Vec::new(),
    };
    st.handle_replies(t0, conn, vec![wrong]);
    match st.status(ObjectId::for_return(a, 0)) {
        Some(Status::Ready(Location::Inline(v))) => assert_eq!(i64::decode(v).unwrap(), 7),
        other => panic!("{other:?}"),
    }
    assert!(matches!(st.status(ObjectId::for_return(a, 1)), Some(Status::Ready(Location::Stored(_)))));
    assert!(matches!(st.status(ObjectId::for_return(a, 2)), Some(Status::Ready(Location::Inline(_)))));
    // A failure after some values were stored deletes them from the store.
    let (c, d) = (st.next_task_id(None), st.next_task_id(None));
    st.submit(t0, c, Submit { num_returns: 2, ..submit_spec("f") }, vec![value(1)]);
    st.submit(t0, d, Submit { num_returns: 1, ..submit_spec("f") }, vec![value(1)]);
    effects(&mut st);
    let failed = |t| FromWorker::Done {
        task_id: t,
        outcome: Outcome::Failed(TaskError::RuntimeShutdown),
        copies: vec![],
        contained: vec![],
    };
    st.handle_replies(t0, conn, vec![failed(c), failed(d)]);
    let deleted: Vec<ObjectId> = effects(&mut st)
        .into_iter()
        .flat_map(|e| match e {
            Output::ToRaylet(ToRaylet::DeleteObjects { object_ids }) => object_ids,
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(deleted, vec![ObjectId::for_return(c, 0), ObjectId::for_return(c, 1)]);
    for i in 0..2 {
        match st.status(ObjectId::for_return(b, i)) {
            Some(Status::Failed(e)) => assert!(e.to_string().contains("sent 1 return values for a task of 2"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}

fn relays(effects: &[Output]) -> Vec<(WorkerId, PeerMsg)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Output::ToRaylet(ToRaylet::Relay { to, msg }) => Some((*to, msg.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn an_owner_answers_a_borrower_when_the_value_is_ready_and_keeps_it_while_borrowed() {
    let t0 = Instant::now();
    let mut st = state();
    let borrower = WorkerId([5; 16]);
    let rid = st.submit(t0, TaskId::root(uuid::Uuid::from_u128(1)).child(0), submit_spec("f"), vec![value(1)]);
    let (conn, pushed) = open_lease(&mut st, t0, 1);
    // Asked while pending: answered once the task reports.
    st.handle_raylet(t0, FromRaylet::Relayed { from: borrower, msg: PeerMsg::GetLocation { object: rid } });
    assert!(relays(&effects(&mut st)).is_empty());
    let req = PeerMsg::AddBorrower { request: RequestId(9), objects: vec![rid], borrower };
    st.handle_raylet(t0, FromRaylet::Relayed { from: borrower, msg: req });
    assert_eq!(
        relays(&effects(&mut st)),
        vec![(borrower, PeerMsg::BorrowersAdded { request: RequestId(9), missing: vec![] })]
    );
    st.handle_replies(t0, conn, vec![done(pushed[0].task_id, 42)]);
    let answered = relays(&effects(&mut st));
    assert!(
        matches!(&answered[..], [(w, PeerMsg::Location { object, location: PeerLocation::Inline(_) })] if *w == borrower && *object == rid),
        "{answered:?}"
    );
    // The owner drops its handle; the borrower still holds the object.
    st.remove_local_ref(rid);
    assert!(st.status(rid).is_some());
    st.handle_raylet(t0, FromRaylet::PeerGone { worker: borrower });
    assert!(st.status(rid).is_none(), "a dead borrower holds nothing");
    // An object the owner no longer has is reported missing, and unknown to a reader.
    st.handle_raylet(t0, FromRaylet::Relayed { from: borrower, msg: PeerMsg::GetLocation { object: rid } });
    let req = PeerMsg::AddBorrower { request: RequestId(10), objects: vec![rid], borrower };
    st.handle_raylet(t0, FromRaylet::Relayed { from: borrower, msg: req });
    assert_eq!(
        relays(&effects(&mut st)),
        vec![
            (borrower, PeerMsg::Location { object: rid, location: PeerLocation::Unknown }),
            (borrower, PeerMsg::BorrowersAdded { request: RequestId(10), missing: vec![rid] }),
        ]
    );
}

#[test]
fn a_borrower_asks_the_owner_registers_reports_the_ref_gone_and_fails_on_owner_death() {
    let t0 = Instant::now();
    let mut st = state();
    let owner = Owner { worker: WorkerId([3; 16]), node: node() };
    let (x, y) = (
        ObjectId::for_put(TaskId::root(uuid::Uuid::from_u128(3)), 0),
        ObjectId::for_put(TaskId::root(uuid::Uuid::from_u128(3)), 1),
    );
    st.add_borrowed(x, owner, None);
    st.add_borrowed(y, owner, None);
    assert!(st.begin_lookup(x));
    assert!(st.begin_lookup(x), "a second reader shares the question");
    assert_eq!(relays(&effects(&mut st)), vec![(owner.worker, PeerMsg::GetLocation { object: x })]);
    assert!(matches!(st.lookup_status(x), Some(Status::Pending)));
    let loc = PeerLocation::Stored { len: 10, nodes: vec![NodeId([8; 16])] };
    st.handle_raylet(
        t0,
        FromRaylet::Relayed { from: owner.worker, msg: PeerMsg::Location { object: x, location: loc } },
    );
    assert!(matches!(st.lookup_status(x), Some(Status::Ready(Location::Stored(s))) if s.primary == NodeId([8; 16])));
    st.end_lookup(x);
    st.end_lookup(x);
    assert!(st.lookup_status(x).is_none());
    // Registration: one message per owner, answered before letting go.
    assert!(st.register_borrows());
    let sent = relays(&effects(&mut st));
    let [(to, PeerMsg::AddBorrower { request, objects, .. })] = &sent[..] else { panic!("{sent:?}") };
    assert_eq!((*to, objects.len()), (owner.worker, 2));
    let request = *request;
    st.handle_raylet(
        t0,
        FromRaylet::Relayed { from: owner.worker, msg: PeerMsg::BorrowersAdded { request, missing: vec![] } },
    );
    assert!(!st.registering());
    st.remove_borrowed(x);
    assert_eq!(relays(&effects(&mut st)), vec![(owner.worker, PeerMsg::RefRemoved { objects: vec![x] })]);
    // The owner dies while a read waits: the read fails with OwnerDied, and dropping the
    // ref afterwards sends nothing.
    assert!(st.begin_lookup(y));
    effects(&mut st);
    st.handle_raylet(t0, FromRaylet::PeerGone { worker: owner.worker });
    assert!(matches!(st.lookup_status(y), Some(Status::Failed(e)) if matches!(**e, TaskError::OwnerDied { .. })));
    st.end_lookup(y);
    st.remove_borrowed(y);
    assert!(relays(&effects(&mut st)).is_empty());
}

mod lineage;
