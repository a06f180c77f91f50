//! Actors with real worker processes: ordering, handles in tasks and other actors, named
//! actors seen from a second driver, restarts after kill -9, the restart budget, the end
//! of an actor when its handles go, its owner dies or it is killed, and concurrency.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ares::{ActorHandle, Error, TaskError};
use ares_tests::actors::{Counter, Gate, incr_via, linger_via};
use ares_tests::{Cluster, process_alive, wait_for};

const LONG: Duration = Duration::from_secs(60);

fn marker(name: &str) -> String {
    let p = std::env::temp_dir().join(format!("ares-actor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p.to_string_lossy().into_owned()
}

fn read_pid(marker: &str) -> u32 {
    wait_for("the call to record its pid", LONG, || std::path::Path::new(marker).exists());
    std::fs::read_to_string(marker).unwrap().trim().parse().unwrap()
}

fn kill9(pid: u32) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
}

fn actor_died(r: ares::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::Task(e @ TaskError::ActorDied { .. })) => e.to_string(),
        other => panic!("expected ActorDied, got {other:?}"),
    }
}

/// The pid of the worker that hosts `actor` now, if any.
fn host_pid(actor: ares::ActorId) -> Option<u32> {
    ares::node_stats().unwrap().workers.iter().find(|w| w.actor == Some(actor)).map(|w| w.pid)
}

fn driver(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .args(args)
        .env("ARES_ADDRESS", ares::raylet_address().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    line.trim().to_string()
}

#[test]
fn ten_thousand_calls_from_one_handle_run_in_order() {
    let _c = Cluster::default_2cpu();
    let log = ares::actor(Counter::new).spawn(0);
    let mut results = Vec::new();
    for i in 0..10_000u64 {
        // Every tenth argument is a future from a task, which must not let later calls
        // overtake the call waiting for it.
        if i % 10 == 0 {
            let arg = ares::remote(identity).call(i);
            results.push(log.call(Counter::append, arg));
        } else {
            results.push(log.call(Counter::append, i));
        }
    }
    ares::get_all(&results).unwrap();
    let seen = ares::get(&log.call(Counter::log, ())).unwrap();
    assert_eq!(seen, (0..10_000).collect::<Vec<u64>>());
}

#[ares::remote]
fn identity(x: u64) -> u64 {
    x
}

#[test]
fn handles_work_in_tasks_and_in_other_actors() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).spawn(0);
    let refs: Vec<_> = (0..20).map(|_| ares::remote(incr_via).call(counter.clone(), 1)).collect();
    let mut seen = ares::get_all(&refs).unwrap();
    seen.sort();
    assert_eq!(seen, (1..=20).collect::<Vec<i64>>(), "each task's call saw the one before it");
    let other = ares::actor(Counter::new).spawn(100);
    assert_eq!(ares::get(&other.call(Counter::incr_other, (counter.clone(), 5))).unwrap(), 25);
    assert_eq!(ares::get(&counter.call(Counter::get, ())).unwrap(), 25);
}

#[test]
fn a_task_keeps_the_actor_alive_after_the_driver_drops_its_handle() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).spawn(7);
    let pid = ares::get(&counter.call(Counter::pid, ())).unwrap();
    let gate = ares::remote(identity).call(0);
    // The task starts only once `gate` is ready; the driver's handle is gone by then.
    let r = ares::remote(incr_after).call(counter, gate);
    assert_eq!(ares::get(&r).unwrap(), 8);
    wait_for("the actor to end with its last borrower", LONG, || !process_alive(pid));
}

#[ares::remote]
fn incr_after(counter: ActorHandle<Counter>, _gate: u64) -> i64 {
    ares::get(&counter.call(Counter::incr, 1)).unwrap()
}

#[test]
fn a_named_actor_is_found_from_a_second_driver() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).name("shared").spawn(5);
    assert_eq!(ares::get(&counter.call(Counter::incr, 1)).unwrap(), 6);
    let mut other = driver(&["actor-get", "shared", "10"]);
    assert_eq!(first_line(&mut other), "16");
    assert!(other.wait().unwrap().success());
    assert_eq!(ares::get(&counter.call(Counter::get, ())).unwrap(), 16);

    match ares::actor(Counter::new).name("shared").try_spawn(0) {
        Err(Error::Task(TaskError::ActorNameTaken { name })) => assert_eq!(name, "shared"),
        other => panic!("expected ActorNameTaken, got {other:?}"),
    }
    let dup = ares::actor(Counter::new).name("shared").spawn(0);
    assert!(matches!(ares::get(&dup.call(Counter::get, ())), Err(Error::Task(TaskError::ActorNameTaken { .. }))));
    // A name too long for the control messages that carry it is refused, typed, and the
    // connection to the node stays up.
    let long = "n".repeat(ares_common::wire::MAX_ACTOR_NAME + 1);
    let too_long = |r: Result<_, Error>| matches!(r, Err(Error::Task(TaskError::ActorNameTooLong { .. })));
    assert!(too_long(ares::actor(Counter::new).name(&long).try_spawn(0).map(|_| ())));
    assert!(too_long(ares::get_actor::<Counter>(&"n".repeat(100_000)).map(|_| ())));
    assert_eq!(ares::get(&counter.call(Counter::get, ())).unwrap(), 16);
    assert!(matches!(ares::get_actor::<Counter>("nobody"), Err(Error::Task(TaskError::ActorNotFound { .. }))));
    match ares::get_actor::<Gate>("shared") {
        Err(Error::Task(TaskError::ActorTypeMismatch { actual, .. })) => assert!(actual.ends_with("Counter")),
        other => panic!("expected ActorTypeMismatch, got {other:?}"),
    }
    let again = ares::get_actor::<Counter>("shared").unwrap();
    assert_eq!(again.id(), counter.id());
}

#[test]
fn kill_9_with_a_restart_left_gives_a_fresh_actor_then_the_budget_runs_out() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).max_restarts(1).spawn(100);
    assert_eq!(ares::get(&counter.call(Counter::incr, 5)).unwrap(), 105);
    let first = ares::get(&counter.call(Counter::pid, ())).unwrap();
    kill9(first);
    wait_for("the actor to be restarted", LONG, || host_pid(counter.id()).is_some_and(|p| p != first));
    assert_eq!(ares::get(&counter.call(Counter::incr, 1)).unwrap(), 101, "the restart ran the constructor again");
    let second = ares::get(&counter.call(Counter::pid, ())).unwrap();
    assert_ne!(first, second);

    kill9(second);
    wait_for("the second process to die", LONG, || !process_alive(second));
    // Whether this call was sent before the owner noticed the death or after, it fails.
    let msg = actor_died(ares::get(&counter.call(Counter::get, ())));
    assert!(msg.contains("died"), "{msg}");
    let msg = actor_died(ares::get(&counter.call(Counter::get, ())));
    assert!(msg.contains("restart"), "the error names the spent budget: {msg}");
}

#[test]
fn a_call_running_when_the_process_dies_fails_unless_retryable() {
    let _c = Cluster::default_2cpu();
    let plain = ares::actor(Counter::new).max_restarts(1).spawn(1);
    let m = marker("plain");
    let r = plain.call(Counter::hang_once, m.clone());
    kill9(read_pid(&m));
    let msg = actor_died(ares::get(&r));
    assert!(msg.contains("while this call was running"), "{msg}");
    assert_eq!(ares::get(&plain.call(Counter::get, ())).unwrap(), 1, "calls after the restart succeed");

    let retried = ares::actor(Counter::new).max_restarts(1).max_task_retries(1).spawn(2);
    let m2 = marker("retried");
    let r = retried.call(Counter::hang_once, m2.clone());
    kill9(read_pid(&m2));
    assert_eq!(ares::get(&r).unwrap(), 2, "the retryable call re-ran on the new process");
    let _ = (std::fs::remove_file(&m), std::fs::remove_file(&m2));
}

#[test]
fn dropping_the_last_handle_ends_the_process_and_returns_its_resources() {
    let _c = Cluster::start(ares::Config::default().num_cpus(2));
    let counter = ares::actor(Counter::new).num_cpus(1.0).spawn(0);
    let pid = ares::get(&counter.call(Counter::pid, ())).unwrap();
    assert_eq!(ares::node_stats().unwrap().available.get_units("CPU"), 10_000, "the actor holds one CPU");
    let clone = counter.clone();
    drop(counter);
    assert!(process_alive(pid), "a clone still holds it");
    drop(clone);
    wait_for("the actor process to exit", LONG, || !process_alive(pid));
    wait_for("its CPU to return", LONG, || ares::node_stats().unwrap().available.get_units("CPU") == 20_000);
}

#[test]
fn kill_ends_the_actor_at_once() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).max_restarts(5).spawn(0);
    let pid = ares::get(&counter.call(Counter::pid, ())).unwrap();
    ares::kill(&counter).unwrap();
    let msg = actor_died(ares::get(&counter.call(Counter::get, ())));
    assert!(msg.contains("killed with ares::kill"), "{msg}");
    wait_for("the actor process to exit", LONG, || !process_alive(pid));
}

#[test]
fn the_owner_dying_ends_its_actor_but_not_a_detached_one() {
    let _c = Cluster::default_2cpu();
    let mut owner = driver(&["actor-owner", "-", "0"]);
    let pid: u32 = first_line(&mut owner).parse().unwrap();
    assert!(process_alive(pid));
    owner.kill().unwrap();
    owner.wait().unwrap();
    wait_for("the owned actor to die with its owner", LONG, || !process_alive(pid));

    let mut owner = driver(&["actor-owner", "kept", "1"]);
    let pid: u32 = first_line(&mut owner).parse().unwrap();
    owner.kill().unwrap();
    owner.wait().unwrap();
    let kept = ares::get_actor::<Counter>("kept").unwrap();
    assert_eq!(ares::get(&kept.call(Counter::incr, 3)).unwrap(), 3, "the detached actor outlived its owner");
    assert_eq!(ares::get(&kept.call(Counter::pid, ())).unwrap(), pid);
    drop(kept);
    let kept = ares::get_actor::<Counter>("kept").unwrap();
    assert_eq!(ares::get(&kept.call(Counter::get, ())).unwrap(), 3, "dropping handles does not end it");
    ares::kill(&kept).unwrap();
    wait_for("the detached actor to exit after kill", LONG, || !process_alive(pid));
    assert!(matches!(ares::get_actor::<Counter>("kept"), Err(Error::Task(TaskError::ActorNotFound { .. }))));
}

#[test]
fn shutdown_ends_every_actor_process_detached_ones_included() {
    let c = Cluster::default_2cpu();
    let kept = ares::actor(Counter::new).name("kept-at-shutdown").detached().spawn(0);
    let plain = ares::actor(Counter::new).spawn(0);
    let pids = [ares::get(&kept.call(Counter::pid, ())).unwrap(), ares::get(&plain.call(Counter::pid, ())).unwrap()];
    drop(c);
    wait_for("actor processes to exit with the embedded node", LONG, || pids.iter().all(|p| !process_alive(*p)));
    // Handles kept past shutdown fail cleanly.
    assert!(ares::get(&plain.call(Counter::get, ())).is_err());
}

#[test]
fn failures_are_typed() {
    let _c = Cluster::default_2cpu();
    let broken = ares::actor(Counter::broken).spawn("no parts".to_string());
    let msg = actor_died(ares::get(&broken.call(Counter::get, ())));
    assert!(msg.contains("construction failed") && msg.contains("no parts"), "{msg}");

    let counter = ares::actor(Counter::new).spawn(3);
    match ares::get(&counter.call(Counter::fail, "oops".to_string())) {
        Err(Error::Task(TaskError::Application { message, .. })) => assert_eq!(message, "oops"),
        other => panic!("expected an application error, got {other:?}"),
    }
    assert_eq!(ares::get(&counter.call(Counter::get, ())).unwrap(), 3, "a panicking method leaves the actor up");
    for (method, r) in [
        ("unregistered", counter.call(Counter::unregistered, ())),
        ("local_only", counter.call(Counter::local_only, ())),
    ] {
        match ares::get(&r) {
            Err(Error::Task(TaskError::FunctionNotFound { name })) => assert!(name.ends_with(method), "{name}"),
            other => panic!("expected FunctionNotFound, got {other:?}"),
        }
    }
    assert_eq!(ares::get(&counter.call(Counter::typed_get, ())).unwrap(), 3, "typed receivers are registered");
    let huge = ares::actor(Counter::new).num_cpus(64.0).spawn(0);
    let msg = actor_died(ares::get(&huge.call(Counter::get, ())));
    assert!(msg.contains("infeasible"), "{msg}");
}

/// Waits for the file `go` to appear, then panics.
#[ares::remote]
fn fails_on(go: String) -> i64 {
    while !std::path::Path::new(&go).exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no value")
}

#[ares::remote]
fn incr_all(counters: Vec<ActorHandle<Counter>>) -> i64 {
    counters.iter().map(|c| ares::get(&c.call(Counter::incr, 1)).unwrap()).sum()
}

#[test]
fn a_call_whose_argument_failed_does_not_keep_the_actor_alive() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).spawn(0);
    let pid = ares::get(&counter.call(Counter::pid, ())).unwrap();
    let go = marker("fail-later");
    let r = counter.call(Counter::incr, ares::remote(fails_on).call(go.clone()));
    // The handle goes while the call still waits for its argument, which then fails.
    drop(counter);
    std::fs::write(&go, "").unwrap();
    assert!(matches!(ares::get(&r), Err(Error::Task(TaskError::Application { .. }))));
    wait_for("the actor process to exit", LONG, || !process_alive(pid));
    let _ = std::fs::remove_file(&go);
}

#[test]
fn a_handle_inside_a_put_value_keeps_its_actor_alive_while_the_object_lives() {
    let _c = Cluster::default_2cpu();
    let counter = ares::actor(Counter::new).spawn(5);
    let pid = ares::get(&counter.call(Counter::pid, ())).unwrap();
    let boxed = ares::put(counter).unwrap();
    // The driver's only handle is inside the object now.
    std::thread::sleep(Duration::from_millis(200));
    assert!(process_alive(pid), "the put object holds the actor");
    // A task reads the handle out of the object and calls through it.
    assert_eq!(ares::get(&ares::remote(incr_all).call(vec![boxed.clone()])).unwrap(), 6);
    let back: ActorHandle<Counter> = ares::get(&boxed).unwrap();
    assert_eq!(ares::get(&back.call(Counter::get, ())).unwrap(), 6);
    drop((back, boxed));
    wait_for("the actor to end with the last object holding it", LONG, || !process_alive(pid));
}

/// Spawns a counter in this worker and returns its handle.
#[ares::remote]
fn spawn_counter(start: i64) -> ActorHandle<Counter> {
    ares::actor(Counter::new).spawn(start)
}

#[test]
fn a_handle_returned_by_a_task_keeps_its_actor_alive_while_the_return_object_lives() {
    let _c = Cluster::default_2cpu();
    let r = ares::remote(spawn_counter).call(5);
    ares::wait(std::slice::from_ref(&r), 1, None);
    // The task is over and its own handle gone; only the return object holds the actor.
    std::thread::sleep(Duration::from_millis(300));
    let counter = ares::get(&r).unwrap();
    assert_eq!(ares::get(&counter.call(Counter::incr, 1)).unwrap(), 6, "the actor outlived the task");
    let pid = ares::get(&counter.call(Counter::pid, ())).unwrap();
    drop(counter);
    std::thread::sleep(Duration::from_millis(200));
    assert!(process_alive(pid), "the return object still holds it");
    drop(r);
    wait_for("the actor to end with the return object", LONG, || !process_alive(pid));
}

#[test]
fn handles_inside_a_list_of_futures_reach_the_task() {
    let _c = Cluster::default_2cpu();
    let a = ares::actor(Counter::new).spawn(10);
    let b = ares::actor(Counter::new).spawn(20);
    // The owner merges the list before the push: the handles inside are decoded there.
    let refs = vec![ares::put(a.clone()).unwrap(), ares::put(b.clone()).unwrap()];
    assert_eq!(ares::get(&ares::remote(incr_all).call(refs)).unwrap(), 32);
    assert_eq!(ares::get(&a.call(Counter::get, ())).unwrap(), 11);
}

#[test]
fn without_max_concurrency_calls_from_many_processes_run_one_at_a_time() {
    let _c = Cluster::default_2cpu();
    // `Gate` is `Sync`, so only the runtime keeps its calls apart.
    let gate = ares::actor(Gate::new).spawn();
    let tasks: Vec<_> = (0..2).map(|_| ares::remote(linger_via).call(gate.clone(), 20)).collect();
    let mine: Vec<_> = (0..20).map(|_| gate.call(Gate::linger, ())).collect();
    let most = ares::get_all(&tasks).unwrap().into_iter().chain(ares::get_all(&mine).unwrap()).max();
    assert_eq!(most, Some(1), "two calls were inside the actor at once");
}

#[test]
fn max_concurrency_runs_calls_in_parallel() {
    let _c = Cluster::default_2cpu();
    let gate = ares::actor(Gate::new).max_concurrency(4).spawn();
    let refs: Vec<_> = (0..4).map(|_| gate.call(Gate::meet, 4u32)).collect();
    assert_eq!(ares::get_all(&refs).unwrap(), vec![true; 4], "four calls were inside at once");
}
