//! A driver program for the exit tests: starts a cluster, prints its worker pids and
//! raylet socket on one line, then exits in the way its first argument names:
//! `exit` (shutdown, then return), `return` (return without shutdown), `panic`, or
//! `wait` (block until killed by a signal).

use std::io::Write;
use std::time::Duration;

#[ares::remote]
fn square(x: i64) -> i64 {
    x * x
}

/// `raw-create <raylet socket>`: registers as a client, creates a 10 MiB object, says
/// so, and then waits to be killed before sealing it.
fn raw_create(socket: &str) -> anyhow::Result<()> {
    use ares_common::wire::FromRaylet;
    let (_s, mut r) = ares_tests::raw_create(socket, 7)?;
    anyhow::ensure!(matches!(r.read::<FromRaylet>()?, FromRaylet::ObjectCreated { .. }));
    println!("created");
    std::io::stdout().flush()?;
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

use ares_common::hex::encode as hex;

fn unhex<const N: usize>(s: &str) -> anyhow::Result<[u8; N]> {
    ares_common::hex::decode_array(s).ok_or_else(|| anyhow::anyhow!("expected {} hex digits, got {s:?}", 2 * N))
}

/// `hold-put <MiB>`: joins the cluster at `ARES_ADDRESS`, puts that many MiB of known
/// bytes, prints `<task> <index> <node> <blake3 of the bytes>` and waits to be killed.
fn hold_put() -> anyhow::Result<()> {
    let mib: usize = std::env::args().nth(2).unwrap_or_default().parse()?;
    ares::init()?;
    let data: Vec<u8> = (0..mib << 20).map(|i| (i * 31 % 251) as u8).collect();
    let hash = blake3::hash(&data);
    let r = ares::put(data)?;
    let id = r.id();
    let node = ares::node_stats()?.node_id;
    println!("{} {} {} {}", hex(&id.task.0), id.index, hex(&node.0), hash.to_hex());
    std::io::stdout().flush()?;
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `pull <raylet socket> <task> <index> <node> <n>`: asks that raylet `n` times at once
/// to pull the object from the node, then pins the copy and prints `<blake3 of the
/// value's bytes> <pulls started> <bytes pulled>`.
fn pull() -> anyhow::Result<()> {
    use ares_common::codec::Value;
    let arg = |i| std::env::args().nth(i).unwrap_or_default();
    let object_id = ares_common::ObjectId { task: ares_common::TaskId(unhex(&arg(3))?), index: arg(4).parse()? };
    let from = ares_common::NodeId(unhex(&arg(5))?);
    let n: usize = arg(6).parse()?;
    let mut c = ares_raylet::tool_client::ToolClient::connect(&arg(2))?;
    c.pull(object_id, &[from], n)?;
    let stats = c.stats()?;
    let (offset, size) = c.pin(object_id)?;
    let pool = c.pool()?;
    // SAFETY: pinned above and never released by this process.
    let bytes = unsafe { pool.slice(offset, size)? };
    let value = <Vec<u8> as Value>::access(bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("{} {} {}", blake3::hash(value.as_slice()).to_hex(), stats.pulls_started, stats.pulled_bytes);
    Ok(())
}

/// The node a task runs on, after `ms` milliseconds of work, with `x * x`.
#[ares::remote]
fn square_where(x: i64, ms: u64) -> (i64, String) {
    std::thread::sleep(Duration::from_millis(ms));
    (x * x, ares::node_stats().map(|s| hex(&s.node_id.0)).unwrap_or_default())
}

/// `x * x` and the node it ran on; on node `doomed` (hex) it first waits for that node to
/// be killed (at most two minutes), so no run there can finish first, however slow the
/// killer is.
#[ares::remote]
fn square_unless_on(x: i64, doomed: String) -> (i64, String) {
    let here = ares::node_stats().map(|s| hex(&s.node_id.0)).unwrap_or_default();
    if here == doomed {
        std::thread::sleep(Duration::from_secs(120));
    }
    (x * x, here)
}

/// Fails with `ares::fail` (quietly), or panics.
#[ares::remote]
fn fail_or_panic(quiet: bool) {
    if quiet {
        ares::fail("the data does not parse: line 3");
    }
    panic!("an unexpected panic");
}

/// The blake3 hash of the bytes, where it ran, and that node's pulls so far.
#[ares::remote]
fn hash_where(data: Vec<u8>) -> (String, String, u64) {
    let stats = ares::node_stats().expect("the worker's node answers");
    (blake3::hash(&data).to_hex().to_string(), hex(&stats.node_id.0), stats.pulls_started)
}

/// Objects in the store of the node a task runs on.
#[ares::remote]
fn stored_here() -> u64 {
    ares::node_stats().map(|s| s.store_objects).unwrap_or(u64::MAX)
}

/// A vector of `mib` MiB of known bytes, made by a task.
#[ares::remote]
fn make_bytes(mib: usize) -> Vec<u8> {
    (0..mib << 20).map(|i| (i * 31 % 251) as u8).collect()
}

/// Block `i` of the two-stage job: 1 MiB of bytes known from `i`. Records in the
/// cluster's key-value store that it was made on this node (`made-<i>-<node>`).
#[ares::remote]
fn make_block(i: u64) -> Vec<u8> {
    let _ = ares::kv_put(&format!("made-{i}-{}", here()), b"1");
    block_bytes(i)
}

fn block_bytes(i: u64) -> Vec<u8> {
    (0..1u64 << 20).map(|j| ((j * 7 + i * 13) % 251) as u8).collect()
}

/// Stage two: the sum of a block's bytes.
#[ares::remote]
fn block_sum(b: Vec<u8>) -> u64 {
    b.iter().map(|x| *x as u64).sum()
}

/// This task's node, as hex.
fn here() -> String {
    ares::node_stats().map(|s| hex(&s.node_id.0)).unwrap_or_default()
}

/// Finds the counter named `name` (from wherever this runs) and adds `by`: `<value>
/// <node>`, or `error: <why>`.
#[ares::remote]
fn named_incr(name: String, by: i64) -> String {
    use ares_tests::actors::Counter;
    match ares::get_actor::<Counter>(&name).and_then(|c| ares::get(&c.call(Counter::incr, by))) {
        Ok(v) => format!("{v} {}", here()),
        Err(e) => format!("error: {e}"),
    }
}

/// Adds `by` through a handle passed as an argument: `<value> <node>`, or `error: <why>`.
#[ares::remote]
fn handle_incr(c: ares::ActorHandle<ares_tests::actors::Counter>, by: i64) -> String {
    match ares::get(&c.call(ares_tests::actors::Counter::incr, by)) {
        Ok(v) => format!("{v} {}", here()),
        Err(e) => format!("error: {e}"),
    }
}

/// Spawns a counter named `name` and calls it once: `spawned`, or `error: <why>`.
#[ares::remote]
fn spawn_named(name: String) -> String {
    use ares_tests::actors::Counter;
    match ares::actor(Counter::new).name(&name).try_spawn(0).and_then(|c| ares::get(&c.call(Counter::get, ()))) {
        Ok(_) => "spawned".into(),
        Err(e) => format!("error: {e}"),
    }
}

/// Kills the actor through a handle passed as an argument.
#[ares::remote]
fn kill_via(c: ares::ActorHandle<ares_tests::actors::Counter>) -> String {
    match ares::kill(&c) {
        Ok(()) => "killed".into(),
        Err(e) => format!("error: {e}"),
    }
}

/// `actors-across`: joins the cluster at `ARES_ADDRESS` (3 nodes) and spawns a counter
/// named `shared` here; tasks held to the other two nodes find it by name, call it
/// through a handle passed to them, fail to take its name, and kill it; then the name
/// is free on every node. Prints one line per step.
fn actors_across() -> anyhow::Result<()> {
    use ares_tests::actors::Counter;
    ares::init()?;
    wait_for_nodes(3)?;
    let me = ares::node_id()?;
    let mut others: Vec<ares::NodeId> =
        ares::nodes()?.into_iter().filter(|n| n.alive && n.node_id != me).map(|n| n.node_id).collect();
    others.sort();
    let on = |n: ares::NodeId| ares::TaskOptions::new().node_affinity(n, false);
    let c = ares::actor(Counter::new).name("shared").spawn(10);
    anyhow::ensure!(ares::get(&c.call(Counter::incr, 1))? == 11);
    println!("by name: {}", ares::get(&ares::remote(named_incr).options(on(others[0])).call("shared".to_string(), 5))?);
    println!("by handle: {}", ares::get(&ares::remote(handle_incr).options(on(others[1])).call(c.clone(), 100))?);
    println!("taken: {}", ares::get(&ares::remote(spawn_named).options(on(others[0])).call("shared".to_string()))?);
    println!("value: {}", ares::get(&c.call(Counter::get, ()))?);
    println!("kill: {}", ares::get(&ares::remote(kill_via).options(on(others[1])).call(c.clone()))?);
    match ares::get(&c.call(Counter::get, ())) {
        Err(ares::Error::Task(ares::TaskError::ActorDied { .. })) => println!("after kill: dead"),
        other => println!("after kill: {other:?}"),
    }
    // The name is freed on the head a moment after the kill (the owner's node tells it).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let again = loop {
        let r = ares::get(&ares::remote(spawn_named).options(on(others[0])).call("shared".to_string()))?;
        if r == "spawned" || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    println!("again: {again}");
    println!("nodes: {} {}", hex(&others[0].0), hex(&others[1].0));
    ares::shutdown();
    Ok(())
}

/// `detached-spawn <name>`: joins the cluster at `ARES_ADDRESS`, spawns a detached
/// counter named `name` (from 10, one restart allowed), adds 1 and prints `<value>
/// <node>`; the actor outlives this driver.
fn detached_spawn() -> anyhow::Result<()> {
    use ares_tests::actors::Counter;
    let name = std::env::args().nth(2).unwrap_or_default();
    ares::init()?;
    let c = ares::actor(Counter::new).name(&name).detached().max_restarts(1).try_spawn(10)?;
    println!("{} {}", ares::get(&c.call(Counter::incr, 1))?, ares::get(&c.call(Counter::node, ()))?);
    ares::shutdown();
    Ok(())
}

/// `detached-call <name>`: joins the cluster at `ARES_ADDRESS`, finds the counter named
/// `name` (retrying while it restarts elsewhere, up to 60 s) and prints `<value> <node>`.
fn detached_call() -> anyhow::Result<()> {
    use ares_tests::actors::Counter;
    let name = std::env::args().nth(2).unwrap_or_default();
    ares::init()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (value, node) = loop {
        let got = ares::get_actor::<Counter>(&name)
            .and_then(|c| Ok((ares::get(&c.call(Counter::get, ()))?, ares::get(&c.call(Counter::node, ()))?)));
        match got {
            Ok(v) => break v,
            Err(e) if std::time::Instant::now() > deadline => anyhow::bail!("`{name}` never came back: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    println!("{value} {node}");
    ares::shutdown();
    Ok(())
}

/// Waits until this node's view of the cluster lists `n` live nodes serving.
fn wait_for_nodes(n: usize) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while ares::nodes()?.iter().filter(|s| s.alive && s.addr.is_some()).count() < n {
        anyhow::ensure!(std::time::Instant::now() < deadline, "the cluster view never listed {n} nodes");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// `spread <n> <ms> <nodes>`: joins the cluster at `ARES_ADDRESS`, waits until its node
/// knows `nodes` nodes, runs `n` tasks of `ms` milliseconds, checks their squares and
/// prints the distinct nodes they ran on.
fn spread() -> anyhow::Result<()> {
    let arg = |i: usize| std::env::args().nth(i).unwrap_or_default();
    let (n, ms): (i64, u64) = (arg(2).parse()?, arg(3).parse()?);
    ares::init()?;
    wait_for_nodes(arg(4).parse()?)?;
    let refs: Vec<_> = (0..n).map(|i| ares::remote(square_where).call(i, ms)).collect();
    let mut nodes = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let (sq, node) = ares::get(r)?;
        anyhow::ensure!(sq == (i * i) as i64, "task {i} returned {sq}");
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    nodes.sort();
    println!("{}", nodes.join(" "));
    ares::shutdown();
    Ok(())
}

/// `rounds <rounds> <per> <ms> <nodes>`: joins the cluster at `ARES_ADDRESS`, waits
/// until its node knows `nodes` nodes, then runs `rounds` rounds of `per` tasks of `ms`
/// milliseconds, checking their squares and printing `round <r>` after each (flushed),
/// and `done <rounds>` at the end.
fn rounds() -> anyhow::Result<()> {
    let arg = |i: usize| std::env::args().nth(i).unwrap_or_default();
    let (rounds, per, ms): (u64, i64, u64) = (arg(2).parse()?, arg(3).parse()?, arg(4).parse()?);
    ares::init()?;
    wait_for_nodes(arg(5).parse()?)?;
    for r in 0..rounds {
        let refs: Vec<_> = (0..per).map(|i| ares::remote(square_where).call(i, ms)).collect();
        for (i, r) in refs.iter().enumerate() {
            let (sq, _) = ares::get(r)?;
            anyhow::ensure!(sq == (i * i) as i64, "task {i} returned {sq}");
        }
        println!("round {r}");
        std::io::stdout().flush()?;
    }
    println!("done {rounds}");
    ares::shutdown();
    Ok(())
}

/// `tensor <nodes>`: joins the cluster at `ARES_ADDRESS`, waits until its node knows
/// `nodes` nodes, and runs two tiled tensor jobs whose answers are exact: the sum of
/// `2x + 1` over `x` in 0..4·10⁶ (in 40 chunks), and the sum of `A @ A` for `A` a 600 ×
/// 600 matrix of ones in 150 × 150 blocks (blocks cross nodes). Prints both.
fn tensor_job() -> anyhow::Result<()> {
    use ares_tensor::{Session, arange, ones};
    let nodes: usize = std::env::args().nth(2).unwrap_or_default().parse()?;
    ares_tensor::link_kernels();
    ares::init()?;
    wait_for_nodes(nodes)?;
    let s = Session::new();
    let n = 4_000_000u64;
    let x = arange(0.0, n as f64, 1.0, 100_000)?;
    let odd = s.scalar(&((&x * 2.0) + 1.0).sum())?;
    anyhow::ensure!(odd == (n * n) as f64, "sum of 2x+1 gave {odd}, expected {}", n * n);
    let m = 600u64;
    let a = ones(&[m, m], &[150, 150])?;
    let product = s.scalar(&a.matmul(&a)?.sum())?;
    anyhow::ensure!(product == (m * m * m) as f64, "sum of A @ A gave {product}, expected {}", m * m * m);
    println!("{odd} {product}");
    ares::shutdown();
    Ok(())
}

/// `consume <MiB> <n>`: joins the cluster at `ARES_ADDRESS`; a task held to the first
/// other node (by ID) makes the bytes, `n` tasks held to the second hash them, and the
/// driver reads them too. Prints `<maker> <consumer>`, the hash of the bytes the driver
/// read, then per consumer `<hash> <node> <pulls started there>`.
fn consume() -> anyhow::Result<()> {
    let arg = |i: usize| std::env::args().nth(i).unwrap_or_default();
    let mib: usize = arg(2).parse()?;
    let n: usize = arg(3).parse()?;
    ares::init()?;
    wait_for_nodes(3)?;
    let here = ares::node_id()?;
    let mut others: Vec<ares::NodeId> =
        ares::nodes()?.into_iter().filter(|s| s.alive && s.node_id != here).map(|s| s.node_id).collect();
    others.sort();
    anyhow::ensure!(others.len() >= 2, "need two other nodes, found {}", others.len());
    let (maker, consumer) = (others[0], others[1]);
    println!("{} {}", hex(&maker.0), hex(&consumer.0));
    let on = |node| ares::TaskOptions::new().node_affinity(node, false);
    let data = ares::remote(make_bytes).options(on(maker)).call(mib);
    let uses: Vec<_> = (0..n).map(|_| ares::remote(hash_where).options(on(consumer)).call(&data)).collect();
    let read = ares::get(&data)?;
    println!("{}", blake3::hash(&read).to_hex());
    for u in &uses {
        let (h, node, pulls) = ares::get(u)?;
        println!("{h} {node} {pulls}");
    }
    // Dropping the last reference frees every copy: the primary on the maker and the
    // ones pulled to the consumers' node and to this one.
    drop((data, uses));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let there = |node| ares::get(&ares::remote(stored_here).options(on(node)).call());
        let left = (there(maker)?, there(consumer)?, ares::node_stats()?.store_objects);
        if left == (0, 0, 0) {
            break;
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "copies left (maker, consumer, here): {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("freed");
    ares::shutdown();
    Ok(())
}

/// `two-stage`: joins the cluster at `ARES_ADDRESS` (three nodes). Stage one makes 12
/// blocks of 1 MiB, block `i` preferring node `i % 3` (by ID order); the driver prints
/// `ready` and waits for a line on stdin (the test kills a node holding blocks). Stage
/// two sums every block in a task; the driver checks the sums and reads every block
/// itself. Prints `made <i> <nodes>` (the nodes each block was made on) and `freed`
/// once every live node's store is empty after the job's refs are dropped.
fn two_stage() -> anyhow::Result<()> {
    ares::init()?;
    wait_for_nodes(3)?;
    let mut nodes: Vec<ares::NodeId> = ares::nodes()?.into_iter().filter(|s| s.alive).map(|s| s.node_id).collect();
    nodes.sort();
    let n = 12u64;
    let prefer = |i: u64| ares::TaskOptions::new().node_affinity(nodes[(i % 3) as usize], true);
    let blocks: Vec<_> = (0..n).map(|i| ares::remote(make_block).options(prefer(i)).call(i)).collect();
    ares::wait(&blocks, blocks.len(), None);
    println!("ready");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let sums: Vec<_> = blocks.iter().map(|b| ares::remote(block_sum).call(b)).collect();
    for (i, s) in sums.iter().enumerate() {
        let want: u64 = block_bytes(i as u64).iter().map(|x| *x as u64).sum();
        anyhow::ensure!(ares::get(s)? == want, "the sum of block {i} is wrong");
    }
    for (i, b) in blocks.iter().enumerate() {
        anyhow::ensure!(ares::get(b)? == block_bytes(i as u64), "block {i} read back wrong");
    }
    for i in 0..n {
        let mut made = Vec::new();
        for node in &nodes {
            if ares::kv_get(&format!("made-{i}-{}", hex(&node.0)))?.is_some() {
                made.push(hex(&node.0));
            }
        }
        println!("made {i} {}", made.join(","));
    }
    drop((sums, blocks));
    let live: Vec<ares::NodeId> = ares::nodes()?.into_iter().filter(|s| s.alive).map(|s| s.node_id).collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let on = |node| ares::TaskOptions::new().node_affinity(node, false);
        let left: Vec<u64> = live
            .iter()
            .map(|n| ares::get(&ares::remote(stored_here).options(on(*n)).call()))
            .collect::<ares::Result<_>>()?;
        if left.iter().all(|l| *l == 0) {
            break;
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "objects left on the live nodes: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("freed");
    ares::shutdown();
    Ok(())
}

/// `node-loss`: joins the cluster at `ARES_ADDRESS` (two nodes). Makes 1 MiB on the other
/// node and four tasks that prefer it (and there wait for its death), prints `ready`, and
/// waits for a line on stdin (the test kills the other node first). Then prints where each task ran
/// (`ran <node>`) and the error of reading the 1 MiB (`lost <error>`).
fn node_loss() -> anyhow::Result<()> {
    ares::init()?;
    wait_for_nodes(2)?;
    let here = ares::node_id()?;
    let other = ares::nodes()?.into_iter().map(|n| n.node_id).find(|n| *n != here).expect("two nodes");
    let hard = ares::TaskOptions::new().node_affinity(other, false);
    let data = ares::remote(make_bytes).options(hard).call(1);
    ares::wait(std::slice::from_ref(&data), 1, None);
    let soft = ares::TaskOptions::new().node_affinity(other, true);
    let slow: Vec<_> =
        (0..4).map(|i| ares::remote(square_unless_on).options(soft.clone()).call(i, hex(&other.0))).collect();
    println!("ready");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    for (i, r) in slow.iter().enumerate() {
        let (sq, node) = ares::get(r)?;
        anyhow::ensure!(sq == (i * i) as i64, "task {i} returned {sq}");
        println!("ran {}", if node == hex(&here.0) { "here" } else { "other" });
    }
    match ares::get(&data) {
        Ok(v) => println!("read {} bytes", v.len()),
        Err(e) => println!("lost {e}"),
    }
    ares::shutdown();
    Ok(())
}

/// Actor modes, against the raylet at `ARES_ADDRESS`:
/// - `actor-get <name> <by>`: finds the named counter, adds `by`, prints the new value;
/// - `actor-owner <name|-> <detached:0|1>`: spawns a counter (named unless `-`), prints
///   the pid of its process, then waits to be killed.
fn actor_mode(mode: &str) -> anyhow::Result<()> {
    use ares_tests::actors::Counter;
    let arg = |i| std::env::args().nth(i).unwrap_or_default();
    ares::init()?;
    match mode {
        "get" => {
            let counter = ares::get_actor::<Counter>(&arg(2))?;
            let by: i64 = arg(3).parse()?;
            println!("{}", ares::get(&counter.call(Counter::incr, by))?);
            ares::shutdown();
            Ok(())
        }
        "owner" => {
            let mut b = ares::actor(Counter::new);
            if arg(2) != "-" {
                b = b.name(&arg(2));
            }
            if arg(3) == "1" {
                b = b.detached();
            }
            let counter = b.try_spawn(0)?;
            println!("{}", ares::get(&counter.call(Counter::pid, ()))?);
            std::io::stdout().flush()?;
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        other => anyhow::bail!("unknown actor mode {other}"),
    }
}

/// `silent-node`: joins the cluster at `ARES_ADDRESS`, whose other node (the one with
/// resource `silent`) has been stopped with SIGSTOP, so that its UDP socket takes
/// datagrams and never answers. Asks for a task only that node can run (the lease
/// request is spilled back there, and this process dials it), then runs 50 unrelated
/// tasks one after another and prints `unrelated done <slowest ms>`. Then waits for the
/// first task (the test resumes the node on that line) and prints `silent ran <node>`.
fn silent_node() -> anyhow::Result<()> {
    ares::init()?;
    wait_for_nodes(2)?;
    let here = hex(&ares::node_id()?.0);
    let silent = ares::remote(square_where).options(ares::TaskOptions::new().resource("silent", 1.0)).call(7, 0);
    // Time for the request to reach this node's raylet and come back spilled; if it
    // took longer, the tasks below would just not test the stall.
    std::thread::sleep(Duration::from_millis(500));
    let mut slowest = Duration::ZERO;
    for i in 0..50i64 {
        let t = std::time::Instant::now();
        anyhow::ensure!(ares::get(&ares::remote(square).call(i))? == i * i, "task {i} returned a wrong square");
        slowest = slowest.max(t.elapsed());
    }
    eprintln!("unrelated done");
    println!("unrelated done {:.1}", slowest.as_secs_f64() * 1e3);
    std::io::stdout().flush()?;
    let (sq, node) = ares::get(&silent)?;
    anyhow::ensure!(sq == 49 && node != here, "the silent node's task gave {sq} on {node}");
    println!("silent ran {node}");
    ares::shutdown();
    Ok(())
}

/// Attached to the daemon at ARES_ADDRESS: prints `ready`, waits for a line on stdin
/// (the test stops the daemon with SIGSTOP first), then puts a value that goes to the
/// store and prints `unavailable after <s> s: <error>` when the create fails as it
/// should (the stopped raylet never answers).
fn frozen_raylet() -> anyhow::Result<()> {
    ares::init()?;
    println!("ready");
    std::io::stdout().flush()?;
    std::io::stdin().read_line(&mut String::new())?;
    let started = std::time::Instant::now();
    match ares::put(vec![7u8; 1 << 20]) {
        Err(e @ ares::Error::RayletUnavailable(_)) => {
            println!("unavailable after {} s: {e}", started.elapsed().as_secs());
        }
        other => anyhow::bail!("expected RayletUnavailable, got {:?}", other.map(|r| r.id())),
    }
    std::io::stdout().flush()?;
    ares::shutdown();
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "exit".into());
    if mode == "frozen-raylet" {
        return frozen_raylet();
    }
    if mode == "raw-create" {
        return raw_create(&std::env::args().nth(2).unwrap_or_default());
    }
    if mode == "daemon-put" {
        // Connects to a running daemon, puts a large value, says so, and waits to be killed.
        let mut cfg = ares::Config::default();
        cfg.address = std::env::args().nth(2);
        ares::init_with(cfg)?;
        let _kept = ares::put(vec![1u8; 20 << 20])?;
        println!("put");
        std::io::stdout().flush()?;
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    if let Some(rest) = mode.strip_prefix("actor-") {
        return actor_mode(rest);
    }
    if mode == "hold-put" {
        return hold_put();
    }
    if mode == "fail" {
        // A task that fails with ares::fail and one that panics: prints both errors.
        ares::init_with(ares::Config::default().num_cpus(1))?;
        for quiet in [true, false] {
            match ares::get(&ares::remote(fail_or_panic).call(quiet)) {
                Err(e) => println!("{e}"),
                Ok(()) => anyhow::bail!("the task succeeded"),
            }
        }
        ares::shutdown();
        return Ok(());
    }
    if mode == "pull" {
        return pull();
    }
    if mode == "kv-put" || mode == "kv-get" {
        // Joins the cluster at ARES_ADDRESS; puts `<key> <value>`, or prints the value
        // under `<key>` (`-` if there is none).
        let arg = |i: usize| std::env::args().nth(i).unwrap_or_default();
        ares::init()?;
        if mode == "kv-put" {
            ares::kv_put(&arg(2), arg(3).as_bytes())?;
        } else {
            let v = ares::kv_get(&arg(2))?;
            println!("{}", v.map_or_else(|| "-".to_string(), |v| String::from_utf8_lossy(&v).into_owned()));
        }
        ares::shutdown();
        return Ok(());
    }
    if mode == "spread" {
        return spread();
    }
    if mode == "rounds" {
        return rounds();
    }
    if mode == "silent-node" {
        return silent_node();
    }
    if mode == "infeasible" {
        // Joins the cluster at ARES_ADDRESS and asks for more CPUs than any node has.
        ares::init()?;
        let r = ares::remote(square).options(ares::TaskOptions::new().num_cpus(64.0)).call(3);
        match ares::get(&r) {
            Err(ares::Error::Task(ares::TaskError::Infeasible { .. })) => println!("infeasible"),
            other => anyhow::bail!("expected Infeasible, got {other:?}"),
        }
        ares::shutdown();
        return Ok(());
    }
    if mode == "node-loss" {
        return node_loss();
    }
    if mode == "two-stage" {
        return two_stage();
    }
    if mode == "detached-spawn" {
        return detached_spawn();
    }
    if mode == "detached-call" {
        return detached_call();
    }
    if mode == "actors-across" {
        return actors_across();
    }
    if mode == "nodes" {
        // Joins the cluster at ARES_ADDRESS and prints `<alive nodes> <dead nodes>` as
        // `ares::nodes()` reports them.
        ares::init()?;
        let nodes = ares::nodes()?;
        let alive = nodes.iter().filter(|n| n.alive).count();
        println!("{alive} {}", nodes.len() - alive);
        ares::shutdown();
        return Ok(());
    }
    if mode == "consume" {
        return consume();
    }
    if mode == "tensor" {
        return tensor_job();
    }
    if mode == "squares" {
        // Joins the cluster named by ARES_ADDRESS, prints the sum of 100 squares computed
        // as tasks and the socket it went through.
        ares::init()?;
        let refs: Vec<_> = (0..100).map(|i| ares::remote(square).call(i)).collect();
        println!("{} {}", ares::get_all(&refs)?.iter().sum::<i64>(), ares::raylet_address()?);
        ares::shutdown();
        return Ok(());
    }
    ares::init_with(ares::Config::default().num_cpus(2))?;
    let refs: Vec<_> = (0..100).map(|i| ares::remote(square).call(i)).collect();
    anyhow::ensure!(ares::get_all(&refs)?.iter().sum::<i64>() == (0..100).map(|i| i * i).sum::<i64>());
    let _big = ares::put(vec![1u8; 8 << 20])?;
    let workers = loop {
        let stats = ares::node_stats()?;
        if stats.workers.len() == 2 {
            break stats.workers;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let pids: Vec<String> = workers.iter().map(|w| w.pid.to_string()).collect();
    println!("{} {}", pids.join(","), ares::raylet_address()?);
    std::io::stdout().flush()?;
    match mode.as_str() {
        "exit" => ares::shutdown(),
        "return" => {}
        "panic" => panic!("the driver panics on purpose"),
        "wait" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        other => anyhow::bail!("unknown mode {other}"),
    }
    Ok(())
}
