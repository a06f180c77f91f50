//! Lost objects rebuilt from their lineage, kept specs, and reads that find no copy.

use super::*;
use ares_common::wire::TaskSpec;

fn node_b() -> NodeId {
    NodeId([8; 16])
}

/// A lease for the queued tasks granted by node B's raylet (spilled back there), open.
fn lease_on_b(st: &mut CoreState, now: Instant, lease: u64) -> (ConnId, Vec<TaskSpec>) {
    let requests = lease_requests(&effects(st));
    let request_id = *requests.first().expect("a lease was requested");
    let addr: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    st.handle_raylet(now, FromRaylet::LeaseSpillback { request_id, node: node_b(), addr });
    effects(st);
    let worker_addr = Endpoint::Unix(format!("worker-{lease}"));
    let msg =
        FromRaylet::LeaseGranted { request_id, lease_id: LeaseId(lease), worker_id: WorkerId([9; 16]), worker_addr };
    st.handle_node(now, node_b(), msg);
    let conn = effects(st)
        .into_iter()
        .find_map(|e| match e {
            Output::Connect { conn, .. } => Some(conn),
            _ => None,
        })
        .expect("a grant opens a connection");
    st.handle_connected(now, conn);
    let pushed = sent(&effects(st), conn);
    (conn, pushed)
}

fn failed(task_id: TaskId, error: TaskError) -> FromWorker {
    FromWorker::Done { task_id, outcome: Outcome::Failed(error), copies: Vec::new(), contained: Vec::new() }
}

fn stored_done(task_id: TaskId) -> FromWorker {
    FromWorker::Done {
        task_id,
        outcome: Outcome::Shared { offset: 0, len: 1 << 20 },
        copies: Vec::new(),
        contained: Vec::new(),
    }
}

fn spec(function: &'static str, max_retries: u32) -> Submit {
    Submit { max_retries, ..submit_spec(function) }
}

#[test]
fn an_object_lost_with_its_node_is_rebuilt_by_running_its_task_again_under_the_same_id() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, spec("make", 2), vec![value(1)]);
    let (conn, pushed) = lease_on_b(&mut st, t0, 1);
    assert_eq!(pushed[0].task_id, tid);
    st.handle_replies(t0, conn, vec![stored_done(tid)]);
    assert!(matches!(st.status(rid), Some(Status::Ready(Location::Stored(s))) if s.primary == node_b()));
    assert_eq!(st.lineage_kept().0, 1, "the finished task's spec is kept while its output lives");
    // The budget counts the memory a kept spec holds, not an estimate of its wire size.
    let counted = st.lineage_kept().1 as usize;
    assert!(counted >= std::mem::size_of::<super::Task>() + 2 * std::mem::size_of::<TaskId>(), "{counted} bytes");

    // Node B dies: its worker and the only copy go; the task runs again.
    st.handle_raylet(t0, FromRaylet::NodeDied { node: node_b() });
    assert!(matches!(st.status(rid), Some(Status::Pending)), "{:?}", st.status(rid));
    assert!(st.take_changed(), "waiting gets see the object pending again");
    let (conn, pushed) = open_lease(&mut st, t0, 2);
    assert_eq!(pushed.len(), 1);
    assert_eq!((pushed[0].task_id, pushed[0].attempt), (tid, 1), "same task, next attempt");
    st.handle_replies(t0, conn, vec![done(tid, 5)]);
    assert!(matches!(st.status(rid), Some(Status::Ready(Location::Inline(_)))));

    // Dropping the output drops the spec.
    st.remove_local_ref(rid);
    assert_eq!(st.lineage_kept(), (0, 0));
}

#[test]
fn a_released_argument_is_rebuilt_first_recursively() {
    let mut st = state();
    let t0 = Instant::now();
    // a = make(); b = step(a); the driver keeps only b.
    let ta = st.next_task_id(None);
    let a = st.submit(t0, ta, spec("make", 2), vec![value(1)]);
    let tb = st.next_task_id(None);
    let b = st.submit(t0, tb, spec("step", 2), vec![Arg::Ref(a)]);
    st.remove_local_ref(a);
    let (conn, pushed) = lease_on_b(&mut st, t0, 1);
    assert_eq!(pushed.len(), 1);
    st.handle_replies(t0, conn, vec![stored_done(ta)]);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed[0].task_id, tb);
    st.handle_replies(t0, conn, vec![stored_done(tb)]);
    let e = effects(&mut st);
    assert!(
        e.iter().any(|e| matches!(e, Output::ToNode { msg: ToRaylet::DeleteObjects { object_ids }, .. }
            if object_ids.contains(&a))),
        "a's value is freed once b is made: {e:?}"
    );
    assert!(st.status(a).is_none(), "a is released: only b's kept spec refers to it");
    assert_eq!(st.lineage_kept().0, 2);

    st.handle_raylet(t0, FromRaylet::NodeDied { node: node_b() });
    assert!(matches!(st.status(b), Some(Status::Pending)));
    let (conn, pushed) = open_lease(&mut st, t0, 2);
    assert_eq!(pushed.iter().map(|p| p.task_id).collect::<Vec<_>>(), vec![ta], "a first: b waits for it");
    st.handle_replies(t0, conn, vec![done(ta, 1)]);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|p| p.task_id).collect::<Vec<_>>(), vec![tb]);
    st.handle_replies(t0, conn, vec![done(tb, 2)]);
    assert!(matches!(st.status(b), Some(Status::Ready(_))));
    st.remove_local_ref(b);
    effects(&mut st);
    assert_eq!(st.lineage_kept(), (0, 0), "the chain's specs go with its last output");
    assert_eq!(st.owned_len(), 0, "and so do the released entries");
}

#[test]
fn objects_that_cannot_be_rebuilt_fail_saying_why() {
    let t0 = Instant::now();
    // A put object on node B.
    let mut st = state();
    let put = st.next_put_id(None);
    st.add_put(put, Location::stored(node_b(), 10), &[]);
    // A task with no retries, and one kept under a budget too small for it.
    let t1 = st.next_task_id(None);
    let r1 = st.submit(t0, t1, spec("once", 0), vec![value(1)]);
    let (conn, _) = lease_on_b(&mut st, t0, 1);
    st.handle_replies(t0, conn, vec![stored_done(t1)]);
    st.handle_raylet(t0, FromRaylet::NodeDied { node: node_b() });
    match st.status(put) {
        Some(Status::Failed(e)) => assert!(matches!(**e, TaskError::ObjectLost { .. }), "{e}"),
        other => panic!("{other:?}"),
    }
    match st.status(r1) {
        Some(Status::Failed(e)) => {
            assert!(matches!(**e, TaskError::ObjectUnrecoverable { reason: Unrecoverable::NotRetriable, .. }), "{e}")
        }
        other => panic!("{other:?}"),
    }

    let mut st = CoreState::new(StateConfig { max_lineage_bytes: 100, ..state().cfg });
    let t1 = st.next_task_id(None);
    let r1 = st.submit(t0, t1, spec("big-spec", 3), vec![value(1)]);
    let (conn, _) = lease_on_b(&mut st, t0, 1);
    st.handle_replies(t0, conn, vec![stored_done(t1)]);
    assert_eq!(st.lineage_kept(), (0, 0), "over the budget: dropped at once");
    st.handle_raylet(t0, FromRaylet::NodeDied { node: node_b() });
    match st.status(r1) {
        Some(Status::Failed(e)) => {
            assert!(matches!(**e, TaskError::ObjectUnrecoverable { reason: Unrecoverable::LineageEvicted, .. }), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_task_whose_argument_could_not_be_read_waits_for_it_to_be_rebuilt() {
    let mut st = state();
    let t0 = Instant::now();
    let ta = st.next_task_id(None);
    let a = st.submit(t0, ta, spec("make", 2), vec![value(1)]);
    let (conn_b, _) = lease_on_b(&mut st, t0, 1);
    st.handle_replies(t0, conn_b, vec![stored_done(ta)]);
    st.handle_timeout(t0 + IDLE_LEASE_TIMEOUT);
    effects(&mut st);
    // A task on this node takes `a`; its worker cannot pull it (B is gone, though the
    // head has not said so yet).
    let tb = st.next_task_id(None);
    let here = ares_common::Strategy::NodeAffinity { node: node(), soft: true };
    let b = st.submit(t0, tb, Submit { strategy: here, ..spec("use", 1) }, vec![Arg::Ref(a)]);
    let (conn, pushed) = open_lease(&mut st, t0, 2);
    assert_eq!(pushed[0].task_id, tb);
    let lost = TaskError::ArgumentUnavailable {
        function: "use".into(),
        index: 0,
        object: a.to_string(),
        reason: "could not pull a copy".into(),
        tried: vec![node_b()],
    };
    st.handle_replies(t0, conn, vec![failed(tb, lost)]);
    assert!(matches!(st.status(a), Some(Status::Pending)), "a is rebuilt");
    assert!(matches!(st.status(b), Some(Status::Pending)), "b waits for it, not failed");
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|p| p.task_id).collect::<Vec<_>>(), vec![ta]);
    st.handle_replies(t0, conn, vec![done(ta, 1)]);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|p| (p.task_id, p.attempt)).collect::<Vec<_>>(), vec![(tb, 1)]);
    st.handle_replies(t0, conn, vec![done(tb, 2)]);
    assert!(matches!(st.status(b), Some(Status::Ready(_))));
}

#[test]
fn a_late_result_of_an_attempt_counted_lost_does_not_delete_the_live_value() {
    let mut st = state();
    let t0 = Instant::now();
    let tid = st.next_task_id(None);
    let rid = st.submit(t0, tid, spec("blob", 2), vec![value(1)]);
    let (c1, pushed) = open_lease(&mut st, t0, 1);
    assert_eq!(pushed[0].task_id, tid);
    // Pushing the next task to the worker failed: its attempt counts as lost and the task
    // runs again on another worker, which stores the same ID in the same store.
    st.handle_conn_closed(t0, c1, "broken pipe");
    let (c2, pushed) = open_lease(&mut st, t0, 2);
    assert_eq!((pushed[0].task_id, pushed[0].attempt), (tid, 1));
    st.handle_replies(t0, c2, vec![stored_done(tid)]);
    assert!(matches!(st.status(rid), Some(Status::Ready(_))));
    effects(&mut st);
    // The first worker had replied too, and its reply is read after all.
    st.handle_replies(t0, c1, vec![stored_done(tid)]);
    let e = effects(&mut st);
    let deleted = e
        .iter()
        .any(|e| matches!(e, Output::ToRaylet(ToRaylet::DeleteObjects { object_ids }) if object_ids.contains(&rid)));
    assert!(!deleted, "the live value was deleted: {e:?}");
    assert!(matches!(st.status(rid), Some(Status::Ready(_))));
}

#[test]
fn a_copy_gone_from_this_nodes_store_is_rebuilt_not_reported_lost() {
    let mut st = state();
    let t0 = Instant::now();
    let ta = st.next_task_id(None);
    let a = st.submit(t0, ta, spec("make", 3), vec![value(1)]);
    let (conn, _) = open_lease(&mut st, t0, 1);
    st.handle_replies(t0, conn, vec![stored_done(ta)]);
    assert!(matches!(st.status(a), Some(Status::Ready(Location::Stored(s))) if s.primary == node()));
    // A worker of this node cannot pin its argument here (this node's only copy is
    // gone): it tried this node's copy, not the others', so the object is rebuilt.
    let tb = st.next_task_id(None);
    let b = st.submit(t0, tb, spec("use", 1), vec![Arg::Ref(a)]);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed[0].task_id, tb);
    let lost = TaskError::ArgumentUnavailable {
        function: "use".into(),
        index: 0,
        object: a.to_string(),
        reason: format!("object {a} is not in the object store"),
        tried: vec![node()],
    };
    st.handle_replies(t0, conn, vec![failed(tb, lost)]);
    assert!(matches!(st.status(a), Some(Status::Pending)), "a is rebuilt: {:?}", st.status(a));
    assert!(matches!(st.status(b), Some(Status::Pending)), "b waits for it, not failed");
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|p| (p.task_id, p.attempt)).collect::<Vec<_>>(), vec![(ta, 1)]);
    st.handle_replies(t0, conn, vec![stored_done(ta)]);
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|p| (p.task_id, p.attempt)).collect::<Vec<_>>(), vec![(tb, 1)]);
    st.handle_replies(t0, conn, vec![done(tb, 2)]);
    assert!(matches!(st.status(b), Some(Status::Ready(_))));

    // The owner's own read of `a` finds this node's copy gone too: rebuilt again.
    let Some(Status::Ready(Location::Stored(s))) = st.status(a).cloned() else { panic!("{:?}", st.status(a)) };
    assert_eq!(s.tried_from(node()), vec![node()]);
    assert!(st.read_failed(t0, a, &s, node()), "a is rebuilt: read it again");
    assert!(matches!(st.status(a), Some(Status::Pending)), "a is pending again");
    let pushed = sent(&effects(&mut st), conn);
    assert_eq!(pushed.iter().map(|p| (p.task_id, p.attempt)).collect::<Vec<_>>(), vec![(ta, 2)]);
    // A copy elsewhere is pulled from each holder in turn: all of them were tried.
    let mut elsewhere = ares_ownership::Stored::on(node_b(), 10);
    elsewhere.secondary.push(NodeId([6; 16]));
    assert_eq!(elsewhere.tried_from(node()), vec![node_b(), NodeId([6; 16])]);
}

#[test]
fn a_read_uses_the_copy_on_its_own_node_and_pulls_only_when_there_is_none() {
    let inline = Location::Inline(Arc::new(Bytes::new()));
    assert!(matches!(plan_read(&inline, node()), ReadPlan::Inline(_)));
    let mut s = ares_ownership::Stored::on(node_b(), 10);
    let elsewhere = Location::Stored(Box::new(s.clone()));
    assert!(matches!(plan_read(&elsewhere, node()), ReadPlan::Pull(from) if from == vec![node_b()]));
    s.secondary.push(node());
    let here = Location::Stored(Box::new(s));
    assert!(matches!(plan_read(&here, node()), ReadPlan::Local), "a secondary copy here is read here");
}
