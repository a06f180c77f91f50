//! The harness's faults, each on a small scripted program.

use ares_common::codec::Value;
use ares_ownership::Status;
use ares_sim::{Sim, SimArg, SimConfig, functions};

fn value(sim: &Sim, p: usize, id: ares_common::ObjectId) -> i64 {
    i64::decode(&sim.read(p, id).unwrap()).unwrap()
}

/// With every handle dropped: idle leases go back after their timeout, and then nothing
/// is left anywhere.
fn wind_down(sim: &mut Sim) {
    sim.advance(std::time::Duration::from_secs(1));
    sim.run_until_quiescent(100_000).unwrap();
    sim.check_clean().unwrap();
}

#[test]
fn tasks_run_and_everything_winds_down() {
    let mut sim = Sim::new(SimConfig::new(1));
    let d = sim.add_driver(0);
    let a = sim.submit(d, functions::ADD, vec![SimArg::Int(1), SimArg::Int(2)], 0);
    let b = sim.submit(d, functions::ADD, vec![SimArg::Ref(a), SimArg::Int(10)], 0);
    let l = sim.submit(d, functions::SUM_LIST, vec![SimArg::List(vec![a, b])], 0);
    sim.run_until_quiescent(100_000).unwrap();
    assert_eq!(value(&sim, d, b), 13);
    assert_eq!(value(&sim, d, l), 16);
    for id in [a, b, l] {
        sim.drop_ref(d, id);
    }
    wind_down(&mut sim);
}

#[test]
fn a_partition_between_a_driver_and_its_workers_is_survived_by_new_workers() {
    let mut sim = Sim::new(SimConfig::new(2));
    let d = sim.add_driver(0);
    sim.run_until_quiescent(100_000).unwrap();
    let old = sim.workers(0);
    assert_eq!(old.len(), 2);
    sim.partition(&[d], &old);
    let r = sim.submit(d, functions::ADD, vec![SimArg::Int(5)], 0);
    sim.run_until_quiescent(100_000).unwrap();
    assert_eq!(value(&sim, d, r), 5, "a refused connection gives the lease back and a new worker runs it");
    assert!(old.iter().any(|w| !sim.alive(*w)), "the unreachable worker was reaped");
    sim.heal();
    sim.drop_ref(d, r);
    wind_down(&mut sim);
}

#[test]
fn a_cut_connection_retries_the_task_and_without_retries_it_fails_worker_died() {
    for (retries, ok) in [(1, true), (0, false)] {
        let mut sim = Sim::new(SimConfig::new(3));
        let d = sim.add_driver(0);
        let r = sim.submit(d, functions::ADD, vec![SimArg::Int(7)], retries);
        // Deliver until the push is on its way, then cut every task connection.
        while sim.step() {
            if sim.workers(0).iter().any(|w| sim.state(d).open_conns() > 0 && sim.alive(*w)) {
                break;
            }
        }
        for w in sim.workers(0) {
            sim.cut(d, w);
        }
        sim.run_until_quiescent(100_000).unwrap();
        match sim.status(d, r) {
            Some(Status::Ready(_)) if ok => assert_eq!(value(&sim, d, r), 7),
            Some(Status::Failed(e)) if !ok => {
                assert!(matches!(*e, ares_common::TaskError::WorkerDied { .. }), "{e}")
            }
            other => panic!("retries {retries}: {other:?}"),
        }
    }
}

#[test]
fn killing_a_node_leaves_another_node_working() {
    let mut cfg = SimConfig::new(4);
    cfg.nodes = 2;
    let mut sim = Sim::new(cfg);
    let d0 = sim.add_driver(0);
    let d1 = sim.add_driver(1);
    let a = sim.submit(d1, functions::BIG, vec![SimArg::Int(3)], 0);
    sim.run_until_quiescent(100_000).unwrap();
    assert!(matches!(sim.status(d1, a), Some(Status::Ready(_))));
    sim.kill_node(1);
    assert!(!sim.alive(d1));
    let r = sim.submit(d0, functions::ADD, vec![SimArg::Int(1)], 0);
    sim.run_until_quiescent(100_000).unwrap();
    assert_eq!(value(&sim, d0, r), 1);
}

#[test]
fn the_head_tells_every_node_of_a_death_and_keeps_the_job_table() {
    let mut cfg = SimConfig::new(5);
    cfg.nodes = 3;
    let mut sim = Sim::new(cfg);
    let d0 = sim.add_driver(0);
    let d2 = sim.add_driver(2);
    sim.run_until_quiescent(100_000).unwrap();
    let alive = |sim: &Sim, n: usize| sim.view(n).iter().filter(|s| s.alive).count();
    assert_eq!((alive(&sim, 0), alive(&sim, 2)), (3, 3), "every node sees the whole cluster");
    assert_eq!(sim.head_jobs().iter().filter(|(_, running)| *running).count(), 2, "both drivers are jobs");
    sim.kill_node(2);
    let dead = sim.node_id(2);
    for n in [0, 1] {
        assert!(sim.view(n).iter().any(|s| s.node_id == dead && !s.alive), "node {n} was told node 2 died");
    }
    assert_eq!(sim.head_jobs().iter().filter(|(_, running)| *running).count(), 1, "node 2's driver ended with it");
    // Loads move with heartbeats: a task keeps running on the head's node.
    let r = sim.submit(d0, functions::ADD, vec![SimArg::Int(2)], 0);
    sim.run_until_quiescent(100_000).unwrap();
    assert_eq!(value(&sim, d0, r), 2);
    assert!(!sim.alive(d2));
}

#[test]
fn a_killed_owner_frees_what_it_owned_on_its_node() {
    let mut sim = Sim::new(SimConfig::new(5));
    let d = sim.add_driver(0);
    let keep = sim.add_driver(0);
    let big = sim.put(d, &vec![9u8; 64 << 10]).unwrap();
    let mine = sim.put(keep, &vec![1u8; 64 << 10]).unwrap();
    sim.run_until_quiescent(100_000).unwrap();
    sim.kill_process(d);
    sim.run_until_quiescent(100_000).unwrap();
    assert!(sim.read(keep, mine).is_ok());
    let _ = big;
    sim.drop_ref(keep, mine);
    sim.run_until_quiescent(100_000).unwrap();
    sim.check_clean().unwrap();
}

#[test]
fn a_task_spills_to_another_node_and_what_was_lost_with_it_is_rebuilt() {
    let mut cfg = SimConfig::new(5);
    cfg.nodes = 3;
    let mut sim = Sim::new(cfg);
    let d = sim.add_driver(0);
    sim.run_until_quiescent(100_000).unwrap();
    let on = |n: usize, sim: &Sim| ares_common::Strategy::NodeAffinity { node: sim.node_id(n), soft: true };
    // A stored value made on node 1, and a task on node 2 reading it from there.
    let big = sim.submit_on(d, functions::BIG, vec![SimArg::Int(7)], 2, on(1, &sim));
    let measured = sim.submit_on(d, functions::MEASURE, vec![SimArg::Ref(big)], 2, on(2, &sim));
    sim.run_until_quiescent(100_000).unwrap();
    match sim.status(d, big) {
        Some(Status::Ready(ares_ownership::Location::Stored(s))) => {
            assert_eq!(s.primary, sim.node_id(1), "made on node 1");
            assert_eq!(s.secondary, vec![sim.node_id(2)], "the reader's node holds a copy");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(value(&sim, d, measured), ares_sim::BIG as i64 + 7);
    // Node 2 dies: the copy there goes, the primary stays.
    sim.kill_node(2);
    sim.run_until_quiescent(100_000).unwrap();
    assert!(matches!(sim.status(d, big), Some(Status::Ready(_))));
    // Node 1 dies with the only copy: the task runs again elsewhere, same value.
    sim.kill_node(1);
    sim.run_until_quiescent(100_000).unwrap();
    match sim.status(d, big) {
        Some(Status::Ready(ares_ownership::Location::Stored(s))) => assert_eq!(s.primary, sim.node_id(0)),
        other => panic!("{other:?}"),
    }
    assert_eq!(sim.read(d, big).unwrap(), vec![7u8; ares_sim::BIG].encode().unwrap().to_vec());
    for id in [big, measured] {
        sim.drop_ref(d, id);
    }
    wind_down(&mut sim);
}

#[test]
fn actor_calls_run_in_order_restart_once_and_then_fail_actor_died() {
    let mut sim = Sim::new(SimConfig::new(11));
    let d = sim.add_driver(0);
    let a = sim.spawn_actor(d, 1);
    let first: Vec<_> = (0..3).map(|_| sim.call_actor(d, a)).collect();
    sim.run_until_quiescent(100_000).unwrap();
    let got: Vec<i64> = first.iter().map(|r| value(&sim, d, *r)).collect();
    assert_eq!(got, vec![1, 2, 3], "one caller's calls run in submission order");
    // Its process dies: the directory restarts it once, with a fresh state.
    let w = sim.actor_worker(a).expect("a live worker hosts it");
    sim.kill_process(w);
    sim.run_until_quiescent(100_000).unwrap();
    let again = sim.call_actor(d, a);
    sim.run_until_quiescent(100_000).unwrap();
    assert_eq!(value(&sim, d, again), 1, "the restarted actor starts over");
    let w2 = sim.actor_worker(a).expect("restarted on a new worker");
    assert_ne!(w, w2);
    // The second death is past max_restarts: calls fail with ActorDied.
    sim.kill_process(w2);
    sim.run_until_quiescent(100_000).unwrap();
    let late = sim.call_actor(d, a);
    sim.run_until_quiescent(100_000).unwrap();
    match sim.status(d, late) {
        Some(Status::Failed(e)) => assert!(matches!(*e, ares_common::TaskError::ActorDied { .. }), "{e}"),
        other => panic!("a call on a dead actor gave {other:?}"),
    }
    sim.drop_actor(d, a);
    for r in first.into_iter().chain([again, late]) {
        sim.drop_ref(d, r);
    }
    wind_down(&mut sim);
}

#[test]
fn a_dropped_actor_runs_its_queued_calls_then_its_worker_is_reaped_and_a_killed_one_fails_them() {
    let mut sim = Sim::new(SimConfig::new(12));
    let d = sim.add_driver(0);
    let a = sim.spawn_actor(d, 0);
    let calls: Vec<_> = (0..4).map(|_| sim.call_actor(d, a)).collect();
    sim.drop_actor(d, a);
    sim.run_until_quiescent(100_000).unwrap();
    let got: Vec<i64> = calls.iter().map(|r| value(&sim, d, *r)).collect();
    assert_eq!(got, vec![1, 2, 3, 4]);
    assert_eq!(sim.actor_worker(a), None, "nobody holds it: its worker is gone");
    let b = sim.spawn_actor(d, 3);
    let before = sim.call_actor(d, b);
    sim.run_until_quiescent(100_000).unwrap();
    sim.kill_actor(d, b);
    let after = sim.call_actor(d, b);
    sim.run_until_quiescent(100_000).unwrap();
    assert_eq!(value(&sim, d, before), 1);
    assert!(matches!(sim.status(d, after), Some(Status::Failed(_))), "a killed actor is not restarted");
    assert_eq!(sim.actor_worker(b), None);
    sim.drop_actor(d, b);
    for r in calls.into_iter().chain([before, after]) {
        sim.drop_ref(d, r);
    }
    wind_down(&mut sim);
}
