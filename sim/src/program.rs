//! Random programs over a [`Sim`], and what must hold after each: every `get` resolves
//! to the value a model of the program predicts, or fails with an error the program or
//! its faults explain; and once every handle is dropped, nothing is left anywhere.
//!
//! A program is drawn from the seed: drivers submit tasks (whose arguments are literals,
//! futures and lists of futures), put small and large values, read, drop handles, lend
//! refs to other drivers (which register with the owner, read through it and drop them),
//! spawn counter actors, call them, drop and kill them (calls must return 1, 2, 3… in
//! order for each life of an actor, and restart no more often than allowed),
//! while messages are delivered in a random order, time passes, and workers and owners
//! are killed. Reads of a dead owner's objects must fail with `OwnerDied`, and the dead
//! owner's objects must be gone from the store.

use std::time::Duration;

use ares_common::codec::Value;
use ares_common::{ActorId, ObjectId, TaskError};
use ares_ownership::Status;

use crate::{BIG, ProcId, Sim, SimArg, SimConfig, functions};

/// The shape of a random program.
#[derive(Clone, Debug)]
pub struct ProgramConfig {
    /// Operations drawn.
    pub ops: usize,
    /// Drivers, all on node 0.
    pub drivers: usize,
    /// Probability that an operation is followed by killing a random worker.
    pub kill_prob: f64,
    /// Probability that an operation is followed by killing a random driver (an owner),
    /// while another is left.
    pub owner_kill_prob: f64,
    /// Probability that an operation is followed by a borrowing one (lend, read, drop).
    pub borrow_prob: f64,
    /// Probability that an operation is followed by killing a node other than the
    /// drivers' (node 0), while one is left.
    pub node_kill_prob: f64,
    /// Probability that an operation is followed by an actor operation (spawn, call,
    /// drop, kill).
    pub actor_prob: f64,
    /// The simulated cluster.
    pub sim: SimConfig,
}

impl ProgramConfig {
    /// The default program for `seed`: some seeds kill workers, some break connections.
    pub fn for_seed(seed: u64) -> Self {
        let mut sim = SimConfig::new(seed);
        // Vary the faults with the seed, so a run over many seeds covers each mix.
        sim.break_prob = if seed % 5 == 3 { 0.02 } else { 0.0 };
        sim.max_delay_us = [0, 50, 2_000][(seed % 3) as usize];
        // One, two or three nodes; tasks spread over them.
        sim.nodes = 1 + (seed / 3 % 3) as usize;
        // Some runs have a small pool that spills: reads restore, creates wait for room.
        if seed % 8 == 6 {
            sim.pool_size = 64 << 10;
            sim.spill_threshold = 0.5;
        }
        ProgramConfig {
            ops: 100,
            drivers: 2 + (seed % 2) as usize,
            kill_prob: if seed % 4 == 1 { 0.03 } else { 0.0 },
            owner_kill_prob: if seed % 6 == 5 { 0.02 } else { 0.0 },
            borrow_prob: 0.2,
            node_kill_prob: if seed % 7 == 2 { 0.02 } else { 0.0 },
            actor_prob: 0.15,
            sim,
        }
    }
}

/// What the run did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Operations run.
    pub ops: usize,
    /// `get`s checked at the end.
    pub gets: usize,
    /// Messages delivered.
    pub delivered: u64,
    /// Workers killed.
    pub kills: u32,
    /// Task connections broken.
    pub breaks: u32,
    /// Borrowed reads checked.
    pub borrowed_reads: usize,
    /// Owners killed.
    pub owners_killed: usize,
    /// Nodes killed.
    pub nodes_killed: usize,
    /// Bytes spilled.
    pub spilled_bytes: u64,
    /// Objects restored from spill files.
    pub restored: u64,
    /// Actors spawned.
    pub actors: usize,
    /// Actor calls checked.
    pub actor_calls: usize,
    /// Creates of one object that were in flight at once (attempts of one task).
    pub create_races: u32,
}

/// An actor a driver spawned, and the calls it made, in order.
#[derive(Clone, Debug)]
struct Actor {
    owner: ProcId,
    id: ActorId,
    max_restarts: u32,
    calls: Vec<ObjectId>,
    /// The owner still holds its handle.
    held: bool,
    /// The owner killed it.
    killed: bool,
}

/// A ref lent to another driver.
#[derive(Clone, Debug)]
struct Borrow {
    holder: ProcId,
    r: Ref,
}

const STEPS: u64 = 2_000_000;

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Int,
    Bytes,
    /// A list of refs a worker returned: `int` of them, to `big(int + i)` values.
    Refs,
}

#[derive(Clone, Debug)]
enum Expect {
    /// The encoded value.
    Value(Vec<u8>),
    /// One of these errors (rendered).
    Fails(Vec<String>),
}

#[derive(Clone, Debug)]
struct Ref {
    owner: ProcId,
    id: ObjectId,
    kind: Kind,
    expect: Expect,
    int: i64,
}

fn enc<T: Value>(v: &T) -> Vec<u8> {
    v.encode().expect("encodes").to_vec()
}

/// Runs the program drawn from `cfg` and checks it.
pub fn run(cfg: &ProgramConfig) -> Result<Summary, String> {
    let mut sim = Sim::new(cfg.sim.clone());
    let drivers: Vec<ProcId> = (0..cfg.drivers).map(|_| sim.add_driver(0)).collect();
    let mut refs: Vec<Ref> = Vec::new();
    let mut gets: Vec<Ref> = Vec::new();
    let mut borrows: Vec<Borrow> = Vec::new();
    let mut dead: Vec<ProcId> = Vec::new();
    let mut borrowed_reads = 0;
    let mut live_nodes: Vec<usize> = (0..cfg.sim.nodes).collect();
    let mut nodes_killed = 0;
    let mut actors: Vec<Actor> = Vec::new();
    for _ in 0..cfg.ops {
        let live: Vec<ProcId> = drivers.iter().copied().filter(|d| !dead.contains(d)).collect();
        let d = live[sim.rng().below(live.len() as u64) as usize];
        let mine: Vec<usize> = (0..refs.len()).filter(|i| refs[*i].owner == d).collect();
        let pick = |sim: &mut Sim, kind: Kind| -> Option<Ref> {
            let of: Vec<&usize> = mine.iter().filter(|i| refs[**i].kind == kind).collect();
            (!of.is_empty()).then(|| refs[*of[sim.rng().below(of.len() as u64) as usize]].clone())
        };
        let retries = sim.rng().below(3) as u32;
        // Where the op's task prefers to run (a soft preference, as the tensor library's
        // placement), or anywhere.
        let pick_node = sim.rng().below(live_nodes.len() as u64 + 1) as usize;
        let strategy = match live_nodes.get(pick_node) {
            Some(&n) if cfg.sim.nodes > 1 => ares_common::Strategy::NodeAffinity { node: sim.node_id(n), soft: true },
            _ => ares_common::Strategy::Default,
        };
        let submit =
            |sim: &mut Sim, f: &'static str, args: Vec<SimArg>| sim.submit_on(d, f, args, retries, strategy.clone());
        match sim.rng().below(100) {
            0..25 => {
                let n = 1 + sim.rng().below(3);
                let mut args = Vec::new();
                let mut sum = 0i64;
                let mut errors = Vec::new();
                for _ in 0..n {
                    match pick(&mut sim, Kind::Int).filter(|_| sim.rng().chance(0.6)) {
                        Some(r) => {
                            args.push(SimArg::Ref(r.id));
                            sum += r.int;
                            if let Expect::Fails(e) = &r.expect {
                                errors.extend(e.iter().cloned());
                            }
                        }
                        None => {
                            let v = sim.rng().below(100) as i64;
                            args.push(SimArg::Int(v));
                            sum += v;
                        }
                    }
                }
                let id = submit(&mut sim, functions::ADD, args);
                let expect = if errors.is_empty() { Expect::Value(enc(&sum)) } else { Expect::Fails(errors) };
                refs.push(Ref { owner: d, id, kind: Kind::Int, expect, int: sum });
            }
            25..33 => {
                let n = sim.rng().below(200) as i64;
                let id = submit(&mut sim, functions::BIG, vec![SimArg::Int(n)]);
                refs.push(Ref {
                    owner: d,
                    id,
                    kind: Kind::Bytes,
                    expect: Expect::Value(enc(&vec![n as u8; BIG])),
                    int: n,
                });
            }
            33..41 => {
                let Some(r) = pick(&mut sim, Kind::Bytes) else { continue };
                let id = submit(&mut sim, functions::MEASURE, vec![SimArg::Ref(r.id)]);
                let v = BIG as i64 + i64::from(r.int as u8);
                let expect = match &r.expect {
                    Expect::Fails(e) => Expect::Fails(e.clone()),
                    Expect::Value(_) => Expect::Value(enc(&v)),
                };
                refs.push(Ref { owner: d, id, kind: Kind::Int, expect, int: v });
            }
            41..47 => {
                let n = 1 + sim.rng().below(4);
                let parts: Vec<Ref> = (0..n).filter_map(|_| pick(&mut sim, Kind::Int)).collect();
                if parts.is_empty() {
                    continue;
                }
                let sum: i64 = parts.iter().map(|r| r.int).sum();
                let errors: Vec<String> = parts
                    .iter()
                    .filter_map(|r| match &r.expect {
                        Expect::Fails(e) => Some(e.clone()),
                        Expect::Value(_) => None,
                    })
                    .flatten()
                    .collect();
                let id =
                    submit(&mut sim, functions::SUM_LIST, vec![SimArg::List(parts.iter().map(|r| r.id).collect())]);
                let expect = if errors.is_empty() { Expect::Value(enc(&sum)) } else { Expect::Fails(errors) };
                refs.push(Ref { owner: d, id, kind: Kind::Int, expect, int: sum });
            }
            47..51 => {
                let k = sim.rng().below(10) as i64;
                let id = submit(&mut sim, functions::FAIL, vec![SimArg::Int(k)]);
                let e = TaskError::Application { function: functions::FAIL.into(), message: format!("boom {k}") };
                refs.push(Ref { owner: d, id, kind: Kind::Int, expect: Expect::Fails(vec![e.to_string()]), int: 0 });
            }
            51..55 => {
                let n = sim.rng().below(50) as i64;
                let id = submit(&mut sim, functions::SPAWN, vec![SimArg::Int(n)]);
                refs.push(Ref { owner: d, id, kind: Kind::Int, expect: Expect::Value(enc(&n)), int: n });
            }
            55..63 => {
                let v = sim.rng().below(1000) as i64;
                let id = sim.put(d, &enc(&v)).map_err(|e| format!("put of a small value failed: {e}"))?;
                refs.push(Ref { owner: d, id, kind: Kind::Int, expect: Expect::Value(enc(&v)), int: v });
            }
            63..67 => {
                let n = sim.rng().below(200) as i64;
                let bytes = enc(&vec![n as u8; BIG]);
                let id = sim.put(d, &bytes).map_err(|e| format!("put of a large value failed: {e}"))?;
                refs.push(Ref { owner: d, id, kind: Kind::Bytes, expect: Expect::Value(bytes), int: n });
            }
            67..77 => {
                if let Some(&i) = mine.get(sim.rng().below(mine.len().max(1) as u64) as usize) {
                    gets.push(refs.remove(i));
                }
            }
            77..87 => {
                if let Some(&i) = mine.get(sim.rng().below(mine.len().max(1) as u64) as usize) {
                    let r = refs.remove(i);
                    sim.drop_ref(r.owner, r.id);
                }
            }
            87..90 => {
                // A task returns refs to objects its worker puts.
                let n = 1 + sim.rng().below(3) as i64;
                let id = submit(&mut sim, functions::MAKE_REFS, vec![SimArg::Int(n)]);
                let inner: Vec<ObjectId> = (0..n as u32).map(|i| ObjectId::for_put(id.task, i)).collect();
                refs.push(Ref { owner: d, id, kind: Kind::Refs, expect: Expect::Value(enc(&inner)), int: n });
            }
            90..97 => {
                let n = 1 + sim.rng().below(20);
                for _ in 0..n {
                    sim.step();
                }
            }
            _ => {
                let us = sim.rng().below(200_000);
                sim.advance(Duration::from_micros(us));
            }
        }
        if live_nodes.len() > 1 && cfg.node_kill_prob > 0.0 && sim.rng().chance(cfg.node_kill_prob) {
            // A node other than the drivers' dies with its workers and stored copies.
            let victim = live_nodes[1 + sim.rng().below(live_nodes.len() as u64 - 1) as usize];
            sim.kill_node(victim);
            live_nodes.retain(|n| *n != victim);
            nodes_killed += 1;
        }
        if cfg.kill_prob > 0.0 && sim.rng().chance(cfg.kill_prob) {
            let ws = sim.workers(0);
            if !ws.is_empty() {
                let w = ws[sim.rng().below(ws.len() as u64) as usize];
                sim.kill_process(w);
            }
        }
        if cfg.actor_prob > 0.0 && sim.rng().chance(cfg.actor_prob) {
            actor_op(&mut sim, d, &mut actors);
        }
        if sim.rng().chance(cfg.borrow_prob) {
            borrowed_reads += borrow_op(&mut sim, &live, &refs, &mut borrows, &dead)?;
        }
        if live.len() > 1 && cfg.owner_kill_prob > 0.0 && sim.rng().chance(cfg.owner_kill_prob) {
            // An owner dies: its handles go with it; what it lent stays with the borrowers.
            let victim = live[sim.rng().below(live.len() as u64) as usize];
            sim.kill_process(victim);
            dead.push(victim);
            refs.retain(|r| r.owner != victim);
            gets.retain(|r| r.owner != victim);
            borrows.retain(|b| b.holder != victim);
            actors.retain(|a| a.owner != victim);
        }
    }
    sim.run_until_quiescent(STEPS)?;
    for g in &gets {
        check_get(&sim, g)?;
    }
    for r in refs.iter().filter(|r| r.kind == Kind::Refs) {
        check_nested(&mut sim, r)?;
        borrowed_reads += 1;
    }
    // Every borrowed ref still held resolves, through its owner or to its owner's death.
    for b in &borrows {
        let got = sim.read_borrowed(b.holder, b.r.id, STEPS)?;
        check_borrowed(&sim, b, got, &dead)?;
        borrowed_reads += 1;
    }
    let mut actor_calls = 0;
    for a in &actors {
        actor_calls += check_actor(&sim, a)?;
    }
    for a in &actors {
        if a.held {
            sim.drop_actor(a.owner, a.id);
        }
        for c in &a.calls {
            sim.drop_ref(a.owner, *c);
        }
    }
    for b in &borrows {
        sim.drop_borrowed(b.holder, b.r.id);
    }
    for r in refs.iter().chain(gets.iter()) {
        sim.drop_ref(r.owner, r.id);
    }
    sim.run_until_quiescent(STEPS)?;
    // Idle leases go back after their timeout.
    sim.advance(Duration::from_secs(1));
    sim.run_until_quiescent(STEPS)?;
    sim.check_clean()?;
    let (spilled_bytes, restored) = sim.spills_and_restores();
    Ok(Summary {
        ops: cfg.ops,
        gets: gets.len(),
        delivered: sim.delivered,
        kills: sim.kills,
        breaks: sim.breaks,
        borrowed_reads,
        owners_killed: dead.len(),
        nodes_killed,
        spilled_bytes,
        restored,
        actors: actors.len(),
        actor_calls,
        create_races: sim.create_races,
    })
}

/// One actor operation of driver `d`: spawn (up to two actors held), call one of its
/// actors, drop a handle, or kill an actor.
fn actor_op(sim: &mut Sim, d: ProcId, actors: &mut Vec<Actor>) {
    let held: Vec<usize> = (0..actors.len()).filter(|i| actors[*i].owner == d && actors[*i].held).collect();
    let pick = |sim: &mut Sim| held.get(sim.rng().below(held.len().max(1) as u64) as usize).copied();
    match sim.rng().below(20) {
        0..3 if held.len() < 2 => {
            let max_restarts = [0, 1, 3][sim.rng().below(3) as usize];
            let id = sim.spawn_actor(d, max_restarts);
            actors.push(Actor { owner: d, id, max_restarts, calls: Vec::new(), held: true, killed: false });
        }
        3..18 => {
            if let Some(i) = pick(sim) {
                for _ in 0..1 + sim.rng().below(3) {
                    let call = sim.call_actor(d, actors[i].id);
                    actors[i].calls.push(call);
                }
            }
        }
        18 => {
            if let Some(i) = pick(sim) {
                sim.drop_actor(d, actors[i].id);
                actors[i].held = false;
            }
        }
        19 => {
            if let Some(i) = pick(sim) {
                sim.kill_actor(d, actors[i].id);
                actors[i].killed = true;
            }
        }
        _ => {}
    }
}

/// An actor's calls, in order, against the model: each returns 1 more than the call
/// before (more, if calls failed in between: a broken connection may lose a call that
/// ran), or 1 when the actor started a new life, at most `max_restarts` times; a call
/// fails only with `ActorDied`, and only where a fault or a kill explains it. Returns
/// the calls checked.
fn check_actor(sim: &Sim, a: &Actor) -> Result<usize, String> {
    let explained = a.killed || sim.kills + sim.breaks + sim.node_kills > 0;
    let (mut prev, mut broke, mut restarts) = (None::<i64>, false, 0u32);
    for (k, id) in a.calls.iter().enumerate() {
        match sim.status(a.owner, *id) {
            None => return Err(format!("call {k} of actor {}: its owner no longer tracks it", a.id)),
            Some(Status::Pending) => return Err(format!("call {k} of actor {} never resolved", a.id)),
            Some(Status::Ready(_)) => {
                let v = i64::decode(&sim.read(a.owner, *id)?).map_err(|e| e.to_string())?;
                // After a failed call the actor may have lived on (only the connection
                // broke, the call having run or not): later calls still count up.
                let next = if broke { prev.is_none_or(|p| v > p) } else { prev.unwrap_or(0) == v - 1 };
                if v == 1 && (prev.is_some() || broke) {
                    restarts += u32::from(prev.is_some_and(|p| p >= 1));
                } else if !next {
                    return Err(format!(
                        "call {k} of actor {} returned {v} after {prev:?} (a call failed since: {broke}): \
                         calls ran out of order",
                        a.id
                    ));
                }
                prev = Some(v);
                broke = false;
            }
            Some(Status::Failed(e)) => match *e {
                TaskError::ActorDied { .. } if explained => broke = true,
                e => return Err(format!("call {k} of actor {} failed with `{e}` and nothing explains it", a.id)),
            },
        }
    }
    if restarts > a.max_restarts {
        return Err(format!("actor {} started over {restarts} times; max_restarts is {}", a.id, a.max_restarts));
    }
    Ok(a.calls.len())
}

/// One borrowing operation: lend a live owner's ref to another driver, read a borrowed
/// ref (checked against the model), or drop one. Returns the reads checked.
fn borrow_op(
    sim: &mut Sim,
    live: &[ProcId],
    refs: &[Ref],
    borrows: &mut Vec<Borrow>,
    dead: &[ProcId],
) -> Result<usize, String> {
    match sim.rng().below(4) {
        3 => {
            // Read a ref inside a returned list, through the worker that owns it.
            let lists: Vec<&Ref> = refs.iter().filter(|r| r.kind == Kind::Refs && !dead.contains(&r.owner)).collect();
            if lists.is_empty() {
                return Ok(0);
            }
            let r = lists[sim.rng().below(lists.len() as u64) as usize].clone();
            check_nested(sim, &r)?;
            Ok(1)
        }
        0 if !refs.is_empty() && live.len() > 1 => {
            let r = refs[sim.rng().below(refs.len() as u64) as usize].clone();
            let others: Vec<ProcId> = live.iter().copied().filter(|p| *p != r.owner).collect();
            let holder = others[sim.rng().below(others.len() as u64) as usize];
            sim.lend(r.owner, r.id, holder, STEPS)?;
            borrows.push(Borrow { holder, r });
            Ok(0)
        }
        1 if !borrows.is_empty() => {
            let b = borrows[sim.rng().below(borrows.len() as u64) as usize].clone();
            let got = sim.read_borrowed(b.holder, b.r.id, STEPS)?;
            check_borrowed(sim, &b, got, dead)?;
            Ok(1)
        }
        2 if !borrows.is_empty() => {
            let b = borrows.remove(sim.rng().below(borrows.len() as u64) as usize);
            sim.drop_borrowed(b.holder, b.r.id);
            Ok(0)
        }
        _ => Ok(0),
    }
}

/// Reads a returned list of refs and every ref inside it (the caller holds them while
/// the list lives): the model's values, or errors a fault explains.
fn check_nested(sim: &mut Sim, r: &Ref) -> Result<(), String> {
    let Some(Status::Ready(_)) = sim.status(r.owner, r.id) else {
        return Ok(()); // not ready yet, or failed: check_get judges it at the end
    };
    let outer = sim.read(r.owner, r.id)?;
    let inner: Vec<ObjectId> = Vec::<ObjectId>::decode(&outer).map_err(|e| e.to_string())?;
    if !matches!(&r.expect, Expect::Value(v) if *v == outer) {
        return Err(format!("the list returned as {} is not the model's", r.id));
    }
    for (i, id) in inner.iter().enumerate() {
        let want = enc(&vec![(r.int + i as i64) as u8; BIG]);
        match sim.read_borrowed(r.owner, *id, STEPS)? {
            Ok(v) if v == want => {}
            Ok(v) => return Err(format!("ref {id} inside {} read {} bytes unlike the model", r.id, v.len())),
            // Its owner, the worker, was killed (alone or with its node).
            Err(TaskError::OwnerDied { .. } | TaskError::ObjectLost { .. }) if sim.kills + sim.node_kills > 0 => {}
            Err(e) => return Err(format!("ref {id} inside {} failed: {e}", r.id)),
        }
    }
    Ok(())
}

/// A borrower's read: the model's value or error while the owner lives, `OwnerDied`
/// once it is dead.
fn check_borrowed(sim: &Sim, b: &Borrow, got: Result<Vec<u8>, TaskError>, dead: &[ProcId]) -> Result<(), String> {
    let id = b.r.id;
    if dead.contains(&b.r.owner) {
        return match got {
            Err(TaskError::OwnerDied { .. }) => Ok(()),
            other => Err(format!("borrowed read of {id} after its owner died gave {other:?}, not OwnerDied")),
        };
    }
    match (got, &b.r.expect) {
        (Ok(v), Expect::Value(want)) if v == *want => Ok(()),
        (Ok(v), expect) => Err(format!("borrowed read of {id} gave {} bytes; the model expects {expect:?}", v.len())),
        (Err(e), Expect::Fails(list)) if list.contains(&e.to_string()) => Ok(()),
        (Err(TaskError::WorkerDied { .. }), _) if sim.kills + sim.breaks > 0 => Ok(()),
        // A node died with it, and it could not be rebuilt, or died again while read.
        (
            Err(
                TaskError::ObjectUnrecoverable { .. }
                | TaskError::ArgumentUnavailable { .. }
                | TaskError::ObjectLost { .. },
            ),
            _,
        ) if sim.node_kills > 0 => Ok(()),
        (Err(e), expect) => Err(format!("borrowed read of {id} failed with `{e}`; the model expects {expect:?}")),
    }
}

fn check_get(sim: &Sim, g: &Ref) -> Result<(), String> {
    match (sim.status(g.owner, g.id), &g.expect) {
        (None, _) => Err(format!("get of {}: its owner no longer tracks it", g.id)),
        (Some(Status::Pending), _) => Err(format!("get of {} never resolved", g.id)),
        (Some(Status::Ready(_)), Expect::Value(want)) => {
            let got = sim.read(g.owner, g.id)?;
            if got != *want {
                return Err(format!("get of {} returned {} bytes unlike the model's {}", g.id, got.len(), want.len()));
            }
            Ok(())
        }
        (Some(Status::Ready(_)), Expect::Fails(e)) => {
            Err(format!("get of {} gave a value where the model expects one of {e:?}", g.id))
        }
        (Some(Status::Failed(e)), expect) => {
            let died = matches!(*e, TaskError::WorkerDied { .. });
            // A dead node explains an object that could not be rebuilt (its task had no
            // retries left) and a task whose argument died with it.
            let lost = matches!(*e, TaskError::ObjectUnrecoverable { .. } | TaskError::ArgumentUnavailable { .. })
                && sim.node_kills > 0;
            let allowed = match expect {
                Expect::Fails(list) => list.contains(&e.to_string()),
                Expect::Value(_) => false,
            };
            // A killed worker or a broken connection explains WorkerDied, for the task or
            // one it depends on.
            if allowed || lost || (died && sim.kills + sim.breaks > 0) {
                Ok(())
            } else {
                Err(format!("get of {} failed with `{e}` (kills: {}), the model expects {expect:?}", g.id, sim.kills))
            }
        }
    }
}
