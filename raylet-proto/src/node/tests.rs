//! The node state machine's unit tests, driven message by message.

use super::*;
use crate::store_side::spill_pause;
use ares_common::{LeaseId, Strategy, TaskId};

pub(crate) fn node() -> Node {
    let cfg = NodeConfig {
        node_id: NodeId([1; 16]),
        resources: ResourceSet::new().with("CPU", 2.0),
        max_workers: 2,
        pool_size: 1 << 20,
        spill: SpillPolicy::default(),
        pool_path: "/proc/self/fd/3".into(),
        spread_threshold: 0.5,
    };
    let mut n = 0u8;
    Node::new(
        cfg,
        Box::new(move || {
            n += 1;
            WorkerId([n; 16])
        }),
    )
}

pub(crate) fn drain(n: &mut Node) -> Vec<Output> {
    std::iter::from_fn(|| n.poll()).collect()
}

pub(crate) fn oid(i: u64) -> ObjectId {
    ObjectId::for_return(TaskId::default().child(i), 0)
}

/// Prestarts `n`'s pool: the IDs of the workers it asked to start.
fn prestarted(n: &mut Node) -> Vec<WorkerId> {
    n.prestart();
    drain(n)
        .into_iter()
        .filter_map(|o| match o {
            Output::StartWorker(w) => Some(w),
            _ => None,
        })
        .collect()
}

/// A request for a lease of one CPU anywhere.
fn one_cpu(request_id: u64) -> ToRaylet {
    ToRaylet::RequestLease {
        request_id: RequestId(request_id),
        shape: ResourceSet::new().with("CPU", 1.0),
        dedicated: false,
        strategy: Strategy::Default,
        spilled: false,
    }
}

#[test]
fn workers_register_and_a_lease_is_granted_with_their_address() {
    let mut n = node();
    let started = prestarted(&mut n);
    assert_eq!(started, vec![WorkerId([1; 16]), WorkerId([2; 16])], "worker IDs come from the driver");
    let (driver, worker) = (ClientId(1), ClientId(2));
    n.connected(driver);
    n.connected(worker);
    n.handle(driver, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    let addr = Endpoint::Unix("w1.sock".into());
    n.handle(
        worker,
        ToRaylet::RegisterWorker { worker_id: started[0], pid: 2, listen_addr: addr.clone(), remote_addr: None },
    );
    drain(&mut n);
    n.handle(driver, one_cpu(5));
    match &drain(&mut n)[..] {
        [Output::Send(c, FromRaylet::LeaseGranted { request_id: RequestId(5), worker_addr, worker_id, .. })] => {
            assert_eq!(*c, driver);
            assert_eq!(*worker_addr, addr);
            assert_eq!(*worker_id, started[0]);
        }
        other => panic!("{other:?}"),
    }
    // A second registration on the same connection breaks the protocol.
    n.handle(worker, ToRaylet::RegisterWorker { worker_id: started[1], pid: 2, listen_addr: addr, remote_addr: None });
    assert!(matches!(&drain(&mut n)[..], [Output::Close(c)] if *c == worker));
}

#[test]
fn a_worker_returned_broken_is_reaped_and_fenced_until_its_end_is_read() {
    let mut n = node();
    let started = prestarted(&mut n);
    let (driver, worker) = (ClientId(1), ClientId(2));
    n.connected(driver);
    n.connected(worker);
    n.handle(driver, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    let addr = Endpoint::Unix("w1.sock".into());
    n.handle(worker, ToRaylet::RegisterWorker { worker_id: started[0], pid: 2, listen_addr: addr, remote_addr: None });
    n.handle(driver, one_cpu(5));
    let lease_id = drain(&mut n)
        .into_iter()
        .find_map(|o| match o {
            Output::Send(_, FromRaylet::LeaseGranted { lease_id, .. }) => Some(lease_id),
            _ => None,
        })
        .expect("a lease");
    assert!(!n.gone(worker));
    // Its owner says the worker broke: it is killed, and what it sent before the kill
    // (a create read late, say) is dropped until its connection's end is read.
    n.handle(driver, ToRaylet::ReturnLease { lease_id, worker_broken: true });
    assert!(drain(&mut n).iter().any(|o| matches!(o, Output::ReapWorker(w) if *w == started[0])));
    assert!(n.gone(worker) && !n.gone(driver));
    n.disconnected(worker);
    assert!(!n.gone(worker), "the fence ends with the connection");
}

#[test]
fn a_reader_drops_only_its_own_pulled_copies_and_they_go_when_it_does() {
    let mut n = node();
    let (reader, other) = (ClientId(1), ClientId(2));
    n.connected(reader);
    n.connected(other);
    n.handle(reader, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    n.handle(other, ToRaylet::RegisterDriver { pid: 2, worker_id: WorkerId([8; 16]) });
    // Copies pulled for the reader (it named itself their owner), and a primary.
    for i in 1..=3 {
        n.try_create_copy(oid(i), 100, Some(WorkerId([9; 16]))).unwrap();
        n.finish_copy(oid(i), true);
    }
    n.try_create(other, oid(4), 100, WorkerId([9; 16])).unwrap();
    n.handle(other, ToRaylet::SealObject { request_id: RequestId(1), object_id: oid(4) });
    drain(&mut n);
    // Another process cannot drop them; the reader drops its copy, not the primary.
    n.handle(other, ToRaylet::DropCopies { object_ids: vec![oid(1)] });
    assert!(n.store().contains(oid(1)));
    n.handle(reader, ToRaylet::DropCopies { object_ids: vec![oid(1), oid(4)] });
    assert!(!n.store().contains(oid(1)));
    assert!(n.store().contains(oid(4)), "a primary is not a pulled copy");
    // The reader's death takes its other copies.
    n.disconnected(reader);
    assert!(!n.store().contains(oid(2)) && !n.store().contains(oid(3)));
}

#[test]
fn an_owner_that_disconnects_has_its_objects_freed() {
    let mut n = node();
    let (owner, other) = (ClientId(1), ClientId(2));
    n.connected(owner);
    n.connected(other);
    n.handle(owner, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    n.handle(other, ToRaylet::RegisterDriver { pid: 2, worker_id: WorkerId([8; 16]) });
    // The other process created the object, but the first owns it.
    n.try_create(other, oid(1), 100, WorkerId([9; 16])).unwrap();
    n.handle(other, ToRaylet::SealObject { request_id: RequestId(1), object_id: oid(1) });
    n.try_create(other, oid(2), 100, WorkerId([8; 16])).unwrap();
    n.handle(other, ToRaylet::SealObject { request_id: RequestId(2), object_id: oid(2) });
    drain(&mut n);
    assert_eq!(n.store().stats().objects, 2);
    n.disconnected(owner);
    assert!(!n.store().contains(oid(1)));
    assert!(n.store().contains(oid(2)));
}

#[test]
fn a_started_report_is_checked_against_the_lease() {
    let mut n = node();
    n.prestart();
    drain(&mut n);
    let (owner, worker) = (ClientId(1), ClientId(2));
    n.connected(owner);
    n.connected(worker);
    n.handle(owner, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    let addr = Endpoint::Unix("w.sock".into());
    n.handle(
        worker,
        ToRaylet::RegisterWorker { worker_id: WorkerId([1; 16]), pid: 2, listen_addr: addr.clone(), remote_addr: None },
    );
    let actor = ares_common::ActorId([4; 16]);
    n.handle(
        owner,
        ToRaylet::RegisterActor {
            request_id: RequestId(1),
            actor_id: actor,
            class: "C".into(),
            name: None,
            detached: false,
            max_restarts: 0,
            max_task_retries: 0,
        },
    );
    drain(&mut n);
    // A lease the owner does not hold: the actor is killed.
    n.handle(
        owner,
        ToRaylet::ActorStarted {
            actor_id: actor,
            lease_id: LeaseId(77),
            worker_id: WorkerId([1; 16]),
            addr,
            restart: None,
        },
    );
    drain(&mut n);
    n.handle(owner, ToRaylet::LookupActor { request_id: RequestId(3), by: ares_common::wire::ActorKey::Id(actor) });
    match &drain(&mut n)[..] {
        [Output::Send(_, FromRaylet::ActorReply { request_id: RequestId(3), error: Some(e) })] => {
            assert!(e.to_string().contains("lease it does not hold"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_full_pool_asks_for_spilling_and_reports_a_typed_error() {
    let mut n = node();
    let c = ClientId(1);
    n.connected(c);
    n.handle(c, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    let e = n.try_create(c, oid(1), 2 << 20, WorkerId([9; 16])).unwrap_err();
    assert!(matches!(n.store_side().no_space(e), TaskError::ObjectTooLarge { .. }));
    n.try_create(c, oid(2), 900 << 10, WorkerId([9; 16])).unwrap();
    // Past the spill threshold: sealing plans a spill of the primary.
    n.handle(c, ToRaylet::SealObject { request_id: RequestId(1), object_id: oid(2) });
    assert!(drain(&mut n).iter().any(|o| matches!(o, Output::Spill(_))));
    let e = n.try_create(c, oid(3), 500 << 10, WorkerId([9; 16])).unwrap_err();
    let p = n.store_side().progress(500 << 10);
    assert!(p.spilling, "a waiter has hope while the spill runs");
    assert!(matches!(n.store_side().no_space(e), TaskError::ObjectStoreFull { .. }));
}

/// The first spill job among the node's pending outputs.
pub(crate) fn next_spill(n: &mut Node) -> Option<SpillJob> {
    drain(n).into_iter().find_map(|o| match o {
        Output::Spill(j) => Some(j),
        _ => None,
    })
}

#[test]
fn a_failed_spill_pauses_spilling_and_waiters_give_up_until_it_resumes() {
    let mut n = node();
    let c = ClientId(1);
    n.connected(c);
    n.handle(c, ToRaylet::RegisterDriver { pid: 1, worker_id: WorkerId([9; 16]) });
    n.try_create(c, oid(2), 900 << 10, WorkerId([9; 16])).unwrap();
    n.handle(c, ToRaylet::SealObject { request_id: RequestId(1), object_id: oid(2) });
    let job = next_spill(&mut n).expect("past the threshold: a spill");
    n.spill_finished(&job, Err("spill dir /x: read-only".into()), Duration::ZERO, |_| String::new());
    let out = drain(&mut n);
    assert!(out.iter().any(|o| matches!(o, Output::ResumeSpillAfter(d) if *d == Duration::from_millis(100))));
    // Paused: asking for room plans nothing (no busy loop), and a waiter gives up at once.
    let e = n.try_create(c, oid(3), 500 << 10, WorkerId([9; 16])).unwrap_err();
    let p = n.store_side().progress(500 << 10);
    assert!(p.spill_failed && !p.spilling && !p.acted, "{p:?}");
    assert!(!drain(&mut n).iter().any(|o| matches!(o, Output::Spill(_))));
    match n.store_side().no_space(e) {
        TaskError::SpillFailed { error, .. } => assert!(error.contains("/x: read-only")),
        other => panic!("{other:?}"),
    }
    // The pause ends: spilling is tried again; a second failure pauses twice as long.
    n.store_side().resume_spill();
    let job = next_spill(&mut n).expect("spilling is planned again");
    n.spill_finished(&job, Err("still read-only".into()), Duration::ZERO, |_| String::new());
    assert!(drain(&mut n).iter().any(|o| matches!(o, Output::ResumeSpillAfter(d) if *d == Duration::from_millis(200))));
    assert_eq!(spill_pause(30), Duration::from_secs(10), "at most 10 s");
    // Room returns: the next spill works and clears the error.
    n.store_side().resume_spill();
    let job = next_spill(&mut n).unwrap();
    let offsets = vec![0u64; job.items.len()];
    n.spill_finished(&job, Ok(&offsets), Duration::ZERO, |_| "f".into());
    assert!(!n.store_side().progress(0).spill_failed);
}

#[test]
fn a_node_taken_back_after_being_declared_dead_drops_other_nodes_owners_and_reports_its_drivers() {
    let mut n = node();
    n.set_cluster_token("t".into());
    let started = prestarted(&mut n);
    let (driver, worker, remote) = (ClientId(1), ClientId(2), ClientId(3));
    n.connected(driver);
    n.connected(worker);
    n.connected_remote(remote);
    n.handle(driver, ToRaylet::RegisterDriver { pid: 41, worker_id: WorkerId([9; 16]) });
    n.handle(remote, ToRaylet::RegisterDriver { pid: 7, worker_id: WorkerId([8; 16]) });
    let addr = Endpoint::Unix("w1.sock".into());
    n.handle(worker, ToRaylet::RegisterWorker { worker_id: started[0], pid: 2, listen_addr: addr, remote_addr: None });
    // An owner on another node leases the worker here.
    n.handle(remote, one_cpu(5));
    assert!(
        drain(&mut n).iter().any(|o| matches!(o, Output::Send(c, FromRaylet::LeaseGranted { .. }) if *c == remote))
    );
    let job_started = |out: &[Output]| -> Vec<(WorkerId, u32)> {
        out.iter()
            .filter_map(|o| match o {
                Output::ToHead(ToHead::JobStarted { job, pid }) => Some((*job, *pid)),
                _ => None,
            })
            .collect()
    };

    // Back after a lost link, never declared dead: only the job table is refreshed.
    n.head_rejoined(false);
    let out = drain(&mut n);
    assert_eq!(job_started(&out), vec![(WorkerId([9; 16]), 41)], "{out:?}");
    assert!(!out.iter().any(|o| matches!(o, Output::Close(_))), "{out:?}");

    // Declared dead meanwhile: the other node's owner had retried its task elsewhere, so
    // its connection is closed, and once its end is read its lease's worker is reaped.
    // One that connected after the link was lost stays.
    n.head_lost();
    let later = ClientId(4);
    n.connected_remote(later);
    drain(&mut n);
    n.head_rejoined(true);
    let out = drain(&mut n);
    assert!(out.iter().any(|o| matches!(o, Output::Close(c) if *c == remote)), "{out:?}");
    assert!(!out.iter().any(|o| matches!(o, Output::Close(c) if *c != remote)), "the others stay: {out:?}");
    assert_eq!(job_started(&out), vec![(WorkerId([9; 16]), 41)], "{out:?}");
    n.disconnected(remote);
    let out = drain(&mut n);
    assert!(out.iter().any(|o| matches!(o, Output::ReapWorker(w) if *w == started[0])), "{out:?}");
}
