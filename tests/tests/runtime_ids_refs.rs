//! Deterministic IDs and refs inside values, with real workers.
//!
//! - A task that runs twice (its first worker is killed) names the task it submits and
//!   the object it puts the same both times.
//! - An `ObjectRef` inside a value keeps its object alive as long as the value needs it:
//!   inside a `put` value, and inside a task's argument while the task runs.

use std::time::Duration;

use ares::ObjectRef;
use ares_tests::Cluster;

#[ares::remote]
fn inc(x: i64) -> i64 {
    x + 1
}

/// Submits a child and puts a value, and reports both IDs. The first attempt writes them
/// to `marker` and kills its own process, so the owner runs the task again.
#[ares::remote]
fn nested_ids(marker: String) -> String {
    let child = ares::remote(inc).call(41);
    let put = ares::put(7i64).unwrap();
    assert_eq!(ares::get(&child).unwrap(), 42, "a nested get works");
    let ids = format!("{} {}", child.id(), put.id());
    if !std::path::Path::new(&marker).exists() {
        let tmp = format!("{marker}.tmp");
        std::fs::write(&tmp, &ids).unwrap();
        std::fs::rename(&tmp, &marker).unwrap();
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL).unwrap();
    }
    ids
}

fn marker(name: &str) -> String {
    let p = std::env::temp_dir().join(format!("ares-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p.to_string_lossy().into_owned()
}

#[test]
fn a_task_run_again_names_its_children_and_puts_the_same() {
    let _c = Cluster::default_2cpu();
    let m = marker("ids-rerun");
    let again = ares::get(&ares::remote(nested_ids).call(m.clone())).expect("retried after its worker died");
    let first = std::fs::read_to_string(&m).unwrap();
    assert_eq!(first, again, "the re-run must make the same child and put IDs");
    // Another task (another parent) names its children differently.
    let m2 = marker("ids-other");
    std::fs::write(&m2, "done").unwrap();
    let other = ares::get(&ares::remote(nested_ids).call(m2.clone())).unwrap();
    assert_ne!(other, again);
    std::fs::remove_file(&m).unwrap();
    std::fs::remove_file(&m2).unwrap();
}

/// Reports what a worker sees of refs it received inside a value: their owner, and
/// their values (read by asking the owner). Waits for `gate` first.
#[ares::remote]
fn inspect_refs(refs: Vec<ObjectRef<Vec<u8>>>, gate: String) -> Vec<String> {
    while !std::path::Path::new(&gate).exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    refs.iter()
        .map(|r| match ares::get(r) {
            Ok(v) => format!("owner {} / {} bytes", r.owner().worker, v.len()),
            Err(e) => format!("unexpected: {e}"),
        })
        .collect()
}

#[test]
fn refs_inside_a_put_value_live_as_long_as_it_and_read_back_in_the_owner() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let base = ares::node_stats()?;
    let a = ares::put(vec![1u8; 1 << 20])?;
    let b = ares::put(vec![2u8; 1 << 20])?;
    let outer = ares::put(vec![a.clone(), b.clone()])?;
    drop((a, b));
    // Only the outer value holds them now.
    assert_eq!(ares::node_stats()?.store_objects, base.store_objects + 2);
    let inner: Vec<ObjectRef<Vec<u8>>> = ares::get(&outer)?;
    assert_eq!(ares::get_view(&inner[0])?[0], 1);
    assert_eq!(ares::get(&inner[1])?.len(), 1 << 20);
    drop(outer);
    // The decoded handles still hold them.
    assert_eq!(ares::node_stats()?.store_objects, base.store_objects + 2);
    drop(inner);
    let after = ares::node_stats()?;
    assert_eq!(after.store_objects, base.store_objects);
    assert_eq!(after.store_used, base.store_used);
    Ok(())
}

#[test]
fn a_ref_inside_an_argument_lives_until_the_task_is_done_and_names_its_owner() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let base = ares::node_stats()?;
    let gate = marker("ref-arg-gate");
    let r = ares::put(vec![3u8; 1 << 20])?;
    let me = r.owner().clone();
    let out = ares::remote(inspect_refs).call(vec![r.clone()], gate.clone());
    drop(r);
    // The driver dropped its handle, but the running task carries the ref.
    assert_eq!(ares::node_stats()?.store_objects, base.store_objects + 1);
    std::fs::write(&gate, "go")?;
    let seen = ares::get(&out)?;
    assert_eq!(seen, vec![format!("owner {} / {} bytes", me.worker, 1 << 20)]);
    // Freed once the worker's borrow ends: the worker reports that through the raylet,
    // not with its reply, so it may reach the owner just after the result does.
    ares_tests::wait_for("the borrowed object to be freed", std::time::Duration::from_secs(30), || {
        ares::node_stats().unwrap().store_objects == base.store_objects
    });
    std::fs::remove_file(&gate)?;
    Ok(())
}
