//! Borrowers, with real workers: a process that receives an `ObjectRef` inside a value
//! reads it by asking the owner, keeps the object alive for as long as it holds the ref
//! (however many hands the ref passed through), and learns with `OwnerDied` when the
//! owner is gone.

use std::time::{Duration, Instant};

use ares::{ActorHandle, Error, ObjectRef, TaskError, TaskOptions};
use ares_tests::{Cluster, wait_for};

type Refs = Vec<ObjectRef<Vec<u8>>>;

/// Keeps refs it was given, past the call that gave them.
#[derive(Default)]
pub struct Holder {
    refs: Refs,
    /// Refs kept without reading them.
    pending: Refs,
}

fn render(r: ares::Result<Vec<u8>>) -> String {
    match r {
        Ok(v) => format!("ok {}", v[0]),
        Err(Error::Task(TaskError::OwnerDied { owner, .. })) => format!("owner died: {owner}"),
        Err(e) => format!("other error: {e}"),
    }
}

#[ares::actor]
impl Holder {
    pub fn new() -> Self {
        Holder::default()
    }

    /// Keeps `refs`; returns the sum of their first bytes, read here.
    pub fn keep(&mut self, refs: Refs) -> u64 {
        self.refs.extend(refs);
        self.sum()
    }

    /// Reads every kept ref again, read or not before.
    pub fn sum(&self) -> u64 {
        self.refs.iter().chain(&self.pending).map(|r| ares::get(r).map_or(0, |v| v[0] as u64 + v.len() as u64)).sum()
    }

    /// Reads the first kept ref: its first byte, or the error, rendered.
    pub fn read_first(&self) -> String {
        render(ares::get(&self.refs[0]))
    }

    /// Keeps `refs` without reading them.
    pub fn keep_pending(&mut self, refs: Refs) {
        self.pending.extend(refs);
    }

    /// Reads the first ref kept unread (waiting for it if it is not ready).
    pub fn read_pending(&self) -> String {
        render(ares::get(&self.pending[0]))
    }

    /// Drops every kept ref.
    pub fn forget(&mut self) {
        self.refs.clear();
        self.pending.clear();
    }
}

/// Reads refs received inside a value: (length, first byte) of each.
#[ares::remote]
fn read_all(refs: Refs) -> Vec<(u64, u8)> {
    refs.iter().map(|r| ares::get(r).map(|v| (v.len() as u64, v[0])).unwrap()).collect()
}

/// Passes `refs` down `depth` levels of nested tasks; the last gives them to `holder`,
/// which keeps them unread. Returns the depth reached.
#[ares::remote]
fn pass_down(refs: Refs, holder: ActorHandle<Holder>, depth: u32) -> u64 {
    if depth == 0 {
        ares::get(&holder.call(Holder::keep_pending, refs)).unwrap();
        return 0;
    }
    ares::get(&ares::remote(pass_down).call(refs, holder, depth - 1)).unwrap()
}

/// Passes each borrowed ref on as a direct argument of a nested task.
#[ares::remote]
fn first_byte(v: Vec<u8>) -> u8 {
    v[0]
}

#[ares::remote]
fn forward_direct(refs: Refs) -> Vec<u8> {
    let calls: Vec<_> = refs.iter().map(|r| ares::remote(first_byte).call(r)).collect();
    calls.iter().map(|c| ares::get(c).unwrap()).collect()
}

/// Waits for `gate`, then returns `n` bytes of `byte`.
#[ares::remote]
fn slow_value(gate: String, byte: u8, n: u64) -> Vec<u8> {
    while !std::path::Path::new(&gate).exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    vec![byte; n as usize]
}

/// Owns two objects (one ready, one pending on `gate`), gives them to `holder`, writes
/// its pid to `pid_file` and waits to be killed.
#[ares::remote]
fn own_and_share(holder: ActorHandle<Holder>, gate: String, pid_file: String) -> u64 {
    let ready = ares::put(vec![5u8; 1 << 20]).unwrap();
    let pending = ares::remote(slow_value).call(gate, 6, 10);
    ares::get(&holder.call(Holder::keep, vec![ready])).unwrap();
    let pending_holder = holder.call(Holder::keep_pending, vec![pending.clone()]);
    ares::get(&pending_holder).unwrap();
    let tmp = format!("{pid_file}.tmp");
    std::fs::write(&tmp, std::process::id().to_string()).unwrap();
    std::fs::rename(&tmp, &pid_file).unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn temp(name: &str) -> String {
    let p = std::env::temp_dir().join(format!("ares-borrow-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p.to_string_lossy().into_owned()
}

fn objects() -> u64 {
    ares::node_stats().unwrap().store_objects
}

#[test]
fn a_worker_reads_refs_it_received_inside_a_value_small_and_stored() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let small = ares::put(vec![7u8; 10])?;
    let large = ares::put(vec![9u8; 1 << 20])?;
    let gate = temp("read-gate");
    let computed = ares::remote(slow_value).call(gate.clone(), 4, 3);
    std::fs::write(&gate, "go")?;
    let got = ares::get(&ares::remote(read_all).call(vec![small.clone(), large.clone(), computed.clone()]))?;
    assert_eq!(got, vec![(10, 7), (1 << 20, 9), (3, 4)]);
    // Borrowed refs passed on as direct arguments of nested tasks resolve through the owner.
    let firsts = ares::get(&ares::remote(forward_direct).call(vec![small, large, computed]))?;
    assert_eq!(firsts, vec![7, 9, 4]);
    std::fs::remove_file(&gate)?;
    Ok(())
}

#[test]
fn a_ref_passed_down_three_levels_lives_until_the_last_borrower_drops_it() -> anyhow::Result<()> {
    let _c = Cluster::start(ares::Config::default().num_cpus(4));
    let base = objects();
    let holder = ares::actor(Holder::new).spawn();
    let x = ares::put(vec![3u8; 1 << 20])?;
    let id = x.id();
    ares::get(&ares::remote(pass_down).call(vec![x.clone()], holder.clone(), 3))?;
    drop(x);
    // The driver, and every task the ref passed through, let go; the actor still holds it.
    assert_eq!(objects(), base + 1, "object {id} must live while the actor borrows it");
    assert_eq!(ares::get(&holder.call(Holder::sum, ()))?, 3 + (1 << 20), "the borrower still reads it");
    ares::get(&holder.call(Holder::forget, ()))?;
    // The borrower's report travels apart from the call's reply: wait for it.
    wait_for("the object to be freed after its last borrower dropped it", Duration::from_secs(10), || {
        objects() == base
    });
    Ok(())
}

#[test]
fn borrowers_of_a_killed_owner_get_owner_died_within_two_seconds() -> anyhow::Result<()> {
    let _c = Cluster::start(ares::Config::default().num_cpus(4));
    let holder = ares::actor(Holder::new).spawn();
    let (gate, pid_file) = (temp("owner-gate"), temp("owner-pid"));
    let owner = ares::remote(own_and_share).options(TaskOptions::new().max_retries(0)).call(
        holder.clone(),
        gate.clone(),
        pid_file.clone(),
    );
    wait_for("the owner to share its objects", Duration::from_secs(30), || std::path::Path::new(&pid_file).exists());
    assert_eq!(ares::get(&holder.call(Holder::read_first, ()))?, "ok 5", "read through the live owner");
    // A read of the pending object waits in the actor while the owner is killed.
    let waiting = holder.call(Holder::read_pending, ());
    std::thread::sleep(Duration::from_millis(200));
    let pid: i32 = std::fs::read_to_string(&pid_file)?.parse()?;
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid).unwrap(), rustix::process::Signal::KILL)?;
    let killed = Instant::now();
    let answer = ares::get(&waiting)?;
    let waited = killed.elapsed();
    assert!(answer.starts_with("owner died: "), "{answer}");
    assert!(waited < Duration::from_secs(2), "the waiting read took {waited:?} to fail");
    // Later reads fail at once too, naming the owner.
    let later = ares::get(&holder.call(Holder::read_first, ()))?;
    assert!(later.starts_with("owner died: worker "), "{later}");
    assert!(matches!(ares::get(&owner), Err(Error::Task(TaskError::WorkerDied { .. }))));
    std::fs::remove_file(&pid_file)?;
    let _ = std::fs::remove_file(&gate);
    Ok(())
}

/// `ares::wait` for `n` of refs received inside a value: how many were ready.
#[ares::remote]
fn count_ready(refs: Refs, n: u64) -> u64 {
    let (ready, _) = ares::wait(&refs, n as usize, Some(Duration::from_secs(60)));
    ready.len() as u64
}

#[test]
fn wait_on_borrowed_refs_asks_their_owner() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let gate = temp("wait-gate");
    let done = ares::put(vec![1u8; 4])?;
    let pending = ares::remote(slow_value).call(gate.clone(), 2, 4);
    // Waiting for one returns the ready one; the pending one cannot be ready while its
    // gate is closed (before, borrowed refs all counted as ready).
    assert_eq!(ares::get(&ares::remote(count_ready).call(vec![done.clone(), pending.clone()], 1))?, 1);
    std::fs::write(&gate, "go")?;
    assert_eq!(ares::get(&ares::remote(count_ready).call(vec![done, pending], 2))?, 2);
    std::fs::remove_file(&gate)?;
    Ok(())
}

/// Puts `n` stored values of `byte` in this worker and returns their refs.
#[ares::remote]
fn make_refs(n: u64, byte: u8) -> Refs {
    (0..n).map(|i| ares::put(vec![byte + i as u8; 1 << 20]).unwrap()).collect()
}

/// Returns the refs it was given (owned by the caller) beside one it made.
#[ares::remote]
fn echo_refs(refs: Refs) -> Refs {
    let mut out = refs;
    out.push(ares::put(vec![8u8; 1 << 20]).unwrap());
    out
}

#[test]
fn refs_returned_by_a_task_live_while_the_return_object_does() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let base = objects();
    // The worker owns the two objects; the driver holds the return value.
    let r = ares::remote(make_refs).call(2, 1);
    let inner = ares::get(&r)?;
    assert_eq!(inner.len(), 2);
    assert_eq!(ares::get(&inner[1])?[0], 2, "read through the worker that owns it");
    drop(inner);
    // The task is done and its handles gone: the return object keeps the objects.
    assert_eq!(objects(), base + 2, "the return object holds its refs");
    let again = ares::get(&r)?;
    assert_eq!(ares::get(&again[0])?[0], 1);
    drop((again, r));
    wait_for("the returned refs to be freed with their return object", Duration::from_secs(10), || objects() == base);

    // A return value never read is freed with its refs too.
    let r = ares::remote(make_refs).call(3, 4);
    ares::wait(std::slice::from_ref(&r), 1, None);
    drop(r);
    wait_for("unread returned refs to be freed", Duration::from_secs(10), || objects() == base);

    // Refs the caller owns, returned back, are its own again.
    let mine = ares::put(vec![6u8; 1 << 20])?;
    let r = ares::remote(echo_refs).call(vec![mine.clone()]);
    let back = ares::get(&r)?;
    assert_eq!(back[0].id(), mine.id());
    assert_eq!((ares::get(&back[0])?[0], ares::get(&back[1])?[0]), (6, 8));
    drop((mine, back));
    assert_eq!(objects(), base + 2, "the return object holds both");
    drop(r);
    wait_for("the echoed refs to be freed", Duration::from_secs(10), || objects() == base);
    Ok(())
}

#[test]
fn refs_owned_elsewhere_inside_a_put_value_live_while_the_put_object_does() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let base = objects();
    let r = ares::remote(make_refs).call(2, 3);
    let borrowed = ares::get(&r)?;
    // The driver borrows the worker's objects and nests them in a put of its own.
    let outer = ares::put(borrowed.clone())?;
    drop((borrowed, r));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(objects(), base + 2, "the put object holds the refs inside it");
    let inner = ares::get(&outer)?;
    assert_eq!(ares::get(&inner[1])?[0], 4);
    // A task reading the put object reads the refs inside through their owner.
    assert_eq!(ares::get(&ares::remote(read_all).call(inner.clone()))?, vec![(1 << 20, 3), (1 << 20, 4)]);
    drop((inner, outer));
    wait_for("the nested refs to be freed with the put object", Duration::from_secs(10), || objects() == base);
    Ok(())
}
