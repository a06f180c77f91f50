//! A cluster of real node daemons on 127.0.0.1: `ares start --head` in the background,
//! two nodes joining it over QUIC with the join token, `ares status`, a node killed
//! with SIGKILL declared dead, refused strangers, and `ares stop` leaving nothing.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use ares_tests::daemons::{
    Node, StopOnDrop, ares_env, daemon_log, field, node_lines, start_node, status, stop_and_check_clean, text,
};
use ares_tests::{ares_bin, wait_for};

fn ares(args: &[&str]) -> Output {
    ares_env(args, &[])
}

/// Kills a helper process when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(root: &Path, extra: &[&str]) -> (Node, String) {
    start_env(root, extra, &[])
}

/// Starts a daemon with `env` added to its environment (`ARES_*` options).
fn start_env(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> (Node, String) {
    let mut cmd = Command::new(ares_bin());
    cmd.envs(env.iter().copied());
    start_node(cmd, root, extra)
}

/// A head and `members` members on 127.0.0.1, each started with the `common` flags,
/// under `<tmp>/ares-<name>-<pid>/node<i>`. Dropping it stops what is still running.
struct TestCluster {
    base: PathBuf,
    roots: Vec<PathBuf>,
    nodes: Vec<Node>,
    /// The head's cluster address and the join token.
    addr: String,
    token: String,
    _stop: StopOnDrop,
}

fn cluster(name: &str, members: usize, common: &[&str]) -> TestCluster {
    cluster_env(name, members, common, &[])
}

/// [`cluster`] with `env` in every daemon's environment.
fn cluster_env(name: &str, members: usize, common: &[&str], env: &[(&str, &str)]) -> TestCluster {
    let base = std::env::temp_dir().join(format!("ares-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let roots: Vec<PathBuf> = (1..=members + 1).map(|i| base.join(format!("node{i}"))).collect();
    let stop = StopOnDrop(roots.clone());
    let mut head_args = vec!["--head", "--port", "0", "--node-ip-address", "127.0.0.1"];
    head_args.extend_from_slice(common);
    let (head, summary) = start_env(&roots[0], &head_args, env);
    let (addr, token) = (field(&summary, "cluster address:"), field(&summary, "join token:"));
    let mut nodes = vec![head];
    for r in &roots[1..] {
        let mut args = vec!["--address", addr.as_str(), "--token", token.as_str(), "--node-ip-address", "127.0.0.1"];
        args.extend_from_slice(common);
        nodes.push(start_env(r, &args, env).0);
    }
    TestCluster { base, roots, nodes, addr, token, _stop: stop }
}

#[test]
fn three_daemons_form_a_cluster_and_a_killed_one_is_declared_dead() {
    let base = std::env::temp_dir().join(format!("ares-cluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let roots: Vec<PathBuf> = (1..=3).map(|i| base.join(format!("node{i}"))).collect();
    let _stop = StopOnDrop(roots.clone());
    let (head, summary) = start(
        &roots[0],
        &["--head", "--port", "0", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--node-timeout-ms", "2000"],
    );
    let addr = field(&summary, "cluster address:");
    let token = field(&summary, "join token:");
    assert!(summary.contains(&format!("ares start --address {addr} --token {token}")), "{summary}");
    let addr_parsed: SocketAddr = addr.parse().unwrap();
    let (n2, _) = start(&roots[1], &["--address", &addr, "--token", &token, "--num-cpus", "2"]);
    let (n3, _) = start(&roots[2], &["--address", &addr, "--token", &token, "--num-cpus", "3"]);
    let nodes = [&head, &n2, &n3];

    // Registration is synchronous: both members are listed as soon as `start` returns.
    let s = status(&roots[0]);
    let lines = node_lines(&s);
    assert_eq!(lines.len(), 3, "{s}");
    assert!(lines.iter().all(|l| l.contains(" alive ")), "{s}");
    for cpus in ["0.0/1.0", "0.0/2.0", "0.0/3.0"] {
        assert!(lines.iter().any(|l| l.contains(cpus)), "{cpus} missing:\n{s}");
    }
    assert!(s.contains("0.0/6.0 CPU"), "{s}");

    // A driver joins with the head's address through its own machine's node (here: the
    // node whose session root it is given), and with `auto`.
    let driver = |address: &str, root: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
            .arg("squares")
            .env("ARES_ADDRESS", address)
            .env("ARES_SESSION_ROOT", root)
            .output()
            .unwrap();
        assert!(out.status.success(), "driver failed:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let want: i64 = (0..100).map(|i| i * i).sum();
    let via = driver(&addr, &roots[1]);
    assert!(via.starts_with(&format!("{want} {}", roots[1].display())), "{via}");
    let via = driver("auto", &roots[0]);
    assert!(via.starts_with(&format!("{want} {}", roots[0].display())), "{via}");
    let out = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .arg("squares")
        .env("ARES_ADDRESS", "127.0.0.1:1")
        .env("ARES_SESSION_ROOT", &roots[1])
        .output()
        .unwrap();
    assert!(!out.status.success() && text(&out).contains("join one first"), "{}", text(&out));

    // Strangers: a wrong secret, a token for another cluster's certificate, no token.
    let wrong = format!("{}{}", "0".repeat(32), &token[32..]);
    let out = ares(&[
        "start",
        "--address",
        &addr,
        "--token",
        &wrong,
        "--worker-program",
        "/bin/true",
        "--session-root",
        base.join("x").to_str().unwrap(),
    ]);
    assert!(!out.status.success() && text(&out).contains("wrong join token"), "{}", text(&out));
    let out = ares(&["status", "--address", &addr, "--token", &format!("{}{}", &token[..32], "0".repeat(32))]);
    assert!(!out.status.success() && text(&out).contains("certificate"), "{}", text(&out));
    let out = ares(&["start", "--address", &addr, "--worker-program", "/bin/true"]);
    assert!(!out.status.success() && text(&out).contains("--token"), "{}", text(&out));

    // Bad bytes on the QUIC port: a garbage datagram, and a malformed frame from a peer
    // that holds the token. The head keeps serving.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.send_to(&[0xFF; 1200], addr_parsed).unwrap();
    ares_net::install_crypto_provider();
    let (tx, mut rx) = ares_net::Connection::connect_quic(addr_parsed, &token.parse().unwrap())
        .unwrap()
        .split::<ares_common::wire::FromHead>(1 << 20, 1 << 20)
        .unwrap();
    let mut junk = Vec::new();
    ares_common::frame::write_frame(&mut junk, 0, &[0xAB; 64]).unwrap();
    tx.send_framed(&junk).unwrap();
    assert!(rx.recv::<ares_common::wire::FromHead>().is_err(), "the head closes a connection that sends junk");
    assert_eq!(node_lines(&status(&roots[0])).len(), 3);

    // SIGKILL a member: the head declares it dead after the node timeout.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(n3.pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    wait_for("the killed node to be declared dead", Duration::from_secs(60), || {
        node_lines(&status(&roots[0])).iter().filter(|l| l.contains(" dead ")).count() == 1
    });
    let s = status(&roots[0]);
    assert!(s.contains("Nodes: 2 alive, 1 dead"), "{s}");
    assert!(s.contains("0.0/3.0 CPU"), "only live nodes' resources count:\n{s}");
    assert!(s.contains("(no lease requests waiting)") && s.contains("Actors: 0 alive"), "{s}");
    // The API says so too, from a driver on another node (its view comes from the head).
    // (Members learn of it with the head's next view, every 100 ms.)
    wait_for("ares::nodes() to report the dead node", Duration::from_secs(10), || {
        drive(&roots[1], &["nodes"]).trim() == "2 1"
    });

    // `ares stop` on each machine (here: each session root) leaves nothing behind,
    // including what the killed daemon left.
    stop_and_check_clean(&nodes);
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn an_object_on_one_node_is_pulled_once_into_another_and_read_intact() {
    // A short identify timeout: a node's pull connection must not be taken for a client
    // that never registers (which closed it, and a pull in flight with it, 5 s after the
    // first pull). Short, but not so short that a loaded machine's own slowness in
    // reading a hello makes a driver or worker late.
    let identify = Duration::from_millis(1000);
    let c = cluster_env(
        "pull",
        1,
        &["--num-cpus", "1", "--object-store-memory", "256M"],
        // The pull's transports are logged at debug.
        &[("ARES_IDENTIFY_TIMEOUT_MS", "1000"), ("ARES_LOG", "info,ares_raylet::object_manager=debug")],
    );
    let (ra, rb) = (&c.roots[0], &c.roots[1]);
    let socket_b = ares_net::daemons(rb)[0].socket.clone().expect("node.info names the socket");

    // A driver on node A puts 64 MiB and keeps it.
    let mut holder = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
            .args(["hold-put", "64"])
            .env("ARES_ADDRESS", "auto")
            .env("ARES_SESSION_ROOT", ra)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.0.stdout.take().unwrap()), &mut line).unwrap();
    let held: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(held.len(), 4, "{line}");

    // Ten requests at once on node B: one transfer, and the copy reads back intact.
    let out = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .args(["pull", &socket_b, held[0], held[1], held[2], "10"])
        .output()
        .unwrap();
    assert!(out.status.success(), "pull failed:\n{}", text(&out));
    let got = String::from_utf8_lossy(&out.stdout);
    let got: Vec<&str> = got.split_whitespace().collect();
    assert_eq!(got[0], held[3], "the pulled value's bytes differ");
    assert_eq!(got[1], "1", "ten concurrent requests share one pull");
    let pulled: u64 = got[2].parse().unwrap();
    assert!(pulled > 64 << 20, "{pulled} bytes pulled");
    // All but the first MiB moved over the bulk plane (TLS over TCP), in 8 MiB chunks.
    let log_b = daemon_log(rb);
    assert!(log_b.contains("pull ended: 8 chunks over the bulk plane, 0 over QUIC streams"), "{log_b}");
    std::thread::sleep(identify * 4);
    let log = daemon_log(ra);
    assert!(!log.contains("did not register"), "node A closed node B's pull connection:\n{log}");

    // A pull from a node that is not in the cluster fails with a typed error naming it.
    let out = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .args(["pull", &socket_b, held[0], "7", held[2], "1"])
        .output()
        .unwrap();
    assert!(!out.status.success() && text(&out).contains("could not pull"), "{}", text(&out));

    drop(holder);
    stop_and_check_clean(&c.nodes.iter().collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&c.base);
}

/// The test driver with `args`, through the node under `root`.
fn driver(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"));
    cmd.args(args).env("ARES_ADDRESS", "auto").env("ARES_SESSION_ROOT", root);
    cmd
}

/// Runs the test driver in `mode` against the cluster through the node under `root`.
fn drive(root: &Path, args: &[&str]) -> String {
    let out = driver(root, args).output().unwrap();
    assert!(out.status.success(), "driver {args:?} failed:\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tasks_spill_back_to_every_node_and_read_objects_made_on_others() {
    let c = cluster("spill", 2, &["--num-cpus", "1", "--object-store-memory", "256M"]);
    let roots = &c.roots;

    // The driver's node has one CPU: with it taken, lease requests spill back to the
    // other two nodes, and the tasks run on all three.
    let nodes = drive(&roots[0], &["spread", "30", "50", "3"]);
    let nodes: Vec<&str> = nodes.split_whitespace().collect();
    assert_eq!(nodes.len(), 3, "tasks ran on {nodes:?}");

    // The key-value store is the cluster's: a driver on one node writes, a driver on
    // another reads; the head's job table lists both drivers as finished.
    drive(&roots[1], &["kv-put", "colour", "blue"]);
    assert_eq!(drive(&roots[2], &["kv-get", "colour"]).trim(), "blue");
    assert_eq!(drive(&roots[0], &["kv-get", "shape"]).trim(), "-");
    // A request no node can hold is refused at once, and counted.
    assert_eq!(drive(&roots[1], &["infeasible"]).trim(), "infeasible");
    // A driver's end reaches the head a moment after its process is gone; counts come
    // with the next heartbeat.
    wait_for("the job table to list 5 finished drivers", Duration::from_secs(10), || {
        let s = status(&roots[0]);
        s.contains("Jobs: 0 running, 5 finished") && s.contains("1 request(s) refused as infeasible")
    });

    // 64 MiB made by a task on one node, hashed by ten tasks held to another, and read
    // by the driver on a third: every copy is intact, and the consumers' node pulled it
    // once.
    let out = drive(&roots[0], &["consume", "64", "10"]);
    let mut lines = out.lines();
    let pair: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let (maker, consumer) = (pair[0], pair[1]);
    assert_ne!(maker, consumer);
    let data: Vec<u8> = (0..64usize << 20).map(|i| (i * 31 % 251) as u8).collect();
    let want = blake3::hash(&data).to_hex().to_string();
    assert_eq!(lines.next().unwrap(), want, "the driver read other bytes");
    let consumers: Vec<Vec<&str>> =
        lines.take_while(|l| *l != "freed").map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(consumers.len(), 10, "{out}");
    assert!(out.lines().any(|l| l == "freed"), "every copy is freed once the value is dropped:\n{out}");
    for c in &consumers {
        assert_eq!(c[0], want, "a consumer read other bytes: {out}");
        assert_eq!(c[1], consumer, "a consumer ran elsewhere: {out}");
        assert_eq!(c[2], "1", "the consumers' node pulled more than once: {out}");
    }

    stop_and_check_clean(&c.nodes.iter().collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&c.base);
}

#[test]
fn named_actors_and_handles_work_from_every_node() {
    let c = cluster("actors", 2, &["--num-cpus", "1"]);
    let out = drive(&c.roots[0], &["actors-across"]);
    let line = |key: &str| {
        out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in:\n{out}")).to_string()
    };
    let nodes: Vec<String> = line("nodes: ").split_whitespace().map(str::to_string).collect();
    // Found by name from a task on a second node, called through a handle from a third.
    assert_eq!(line("by name: "), format!("16 {}", nodes[0]), "{out}");
    assert_eq!(line("by handle: "), format!("116 {}", nodes[1]), "{out}");
    // Names are the cluster's: another node cannot take it while the actor lives.
    assert!(line("taken: ").contains("already exists"), "{out}");
    assert_eq!(line("value: "), "116", "{out}");
    // A kill through a handle on another node ends it, and frees the name everywhere.
    assert_eq!(line("kill: "), "killed", "{out}");
    assert_eq!(line("after kill: "), "dead", "{out}");
    assert_eq!(line("again: "), "spawned", "{out}");
    stop_and_check_clean(&c.nodes.iter().collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&c.base);
}

#[test]
fn a_detached_actor_whose_node_dies_is_restarted_by_the_head_on_another() {
    let c = cluster("detached", 2, &["--num-cpus", "1", "--node-timeout-ms", "2000"]);
    let spawned = drive(&c.roots[2], &["detached-spawn", "keeper"]);
    let spawned: Vec<&str> = spawned.split_whitespace().collect();
    assert_eq!(spawned[0], "11", "{spawned:?}");
    let first_node = spawned[1].to_string();
    // The head learns of it once it runs.
    wait_for("the head to list the detached actor", Duration::from_secs(10), || {
        status(&c.roots[0]).contains("; 1 detached")
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(c.nodes[2].pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    wait_for("the killed node to be declared dead", Duration::from_secs(60), || {
        status(&c.roots[0]).contains("Nodes: 2 alive, 1 dead")
    });
    // Found by name from another node, constructed again from its arguments (its state
    // is new, as a restarted actor's is in Ray) on a live node.
    let called = drive(&c.roots[1], &["detached-call", "keeper"]);
    let called: Vec<&str> = called.split_whitespace().collect();
    assert_eq!(called[0], "10", "{called:?}");
    assert_ne!(called[1], first_node, "it runs elsewhere now");
    assert!(status(&c.roots[0]).contains("; 1 detached"), "still kept for its next restart (none left)");
    stop_and_check_clean(&c.nodes.iter().collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&c.base);
}

/// Processes whose executable is `exe`.
fn processes_running(exe: &Path) -> Vec<u32> {
    let exe = std::fs::canonicalize(exe).unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe))
        .collect()
}

#[test]
fn the_pi_example_runs_on_a_two_node_cluster_and_stop_leaves_nothing() {
    // target/<profile>/ares → target/<profile>/examples/pi (scripts/test-all builds it).
    let pi = ares_bin().with_file_name("examples").join("pi");
    assert!(pi.exists(), "{} is missing: cargo build -p ares --examples", pi.display());
    let c = cluster("pi", 1, &["--num-cpus", "1", "--worker-program", pi.to_str().unwrap()]);

    // The user's program, unchanged, with the cluster's address (through this machine's
    // node): 200 tasks on a node of one CPU spill to the other.
    let out = Command::new(&pi)
        .args(["200", "200000"])
        .env("ARES_ADDRESS", &c.addr)
        .env("ARES_TOKEN", &c.token)
        .env("ARES_SESSION_ROOT", &c.roots[0])
        .output()
        .unwrap();
    assert!(out.status.success(), "pi failed:\n{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    let estimate: f64 = said.split_whitespace().nth(2).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    assert!((estimate - std::f64::consts::PI).abs() < 0.01, "{said}");
    assert!(processes_running(&pi).len() >= 2, "workers run on both nodes");

    stop_and_check_clean(&c.nodes.iter().collect::<Vec<_>>());
    wait_for("the workers to exit", Duration::from_secs(10), || processes_running(&pi).is_empty());
    let _ = std::fs::remove_dir_all(&c.base);
}

#[test]
fn a_killed_head_fails_its_drivers_at_once_while_a_members_driver_finishes() {
    let c = cluster("headkill", 1, &["--num-cpus", "1"]);
    // A driver through each node, running rounds of tasks over both.
    let rounds = |root: &Path, n: &str| {
        let mut d = KillOnDrop(
            driver(root, &["rounds", n, "4", "50", "2"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut out = std::io::BufReader::new(d.0.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert_eq!(line.trim(), "round 0", "the driver through {} did not start", root.display());
        (d, out)
    };
    let (mut on_head, mut head_out) = rounds(&c.roots[0], "100000");
    let (mut on_member, mut member_out) = rounds(&c.roots[1], "30");

    // The head dies mid-job. Its driver fails at once with a typed error that says what
    // happened and what to do.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(c.nodes[0].pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let killed = std::time::Instant::now();
    let status = on_head.0.wait().unwrap();
    let waited = killed.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(on_head.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut head_out, &mut rest).unwrap();
    assert!(!status.success() && !rest.contains("done"), "the head's driver went on:\n{rest}\n{err}");
    assert!(err.contains("the node daemon at") && err.contains("is gone"), "{err}");
    assert!(waited <= Duration::from_secs(2), "the head's driver took {waited:?} to fail:\n{err}");

    // The member's driver finishes every round, right (it checks each).
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut member_out, &mut rest).unwrap();
    let status = on_member.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(on_member.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success() && rest.trim_end().ends_with("done 30"), "{rest}\n{err}");

    // The member keeps trying to reach the head; `ares stop` on each machine leaves
    // nothing, the killed head's leftovers included.
    stop_and_check_clean(&c.nodes.iter().collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&c.base);
}

#[test]
fn a_member_stopped_right_after_it_started_is_seen_leaving_at_once() {
    // A node timeout far past this test: only the member's goodbye can make it "stopped"
    // (a lost goodbye would leave it to QUIC's idle timeout: "connection closed").
    let c = cluster("leave", 1, &["--num-cpus", "1", "--node-timeout-ms", "600000"]);
    stop_and_check_clean(&[&c.nodes[1]]);
    wait_for("the head to list the member as dead", Duration::from_secs(30), || {
        status(&c.roots[0]).contains("Nodes: 1 alive, 1 dead")
    });
    let s = status(&c.roots[0]);
    assert!(s.contains("; dead: stopped"), "{s}");
    stop_and_check_clean(&[&c.nodes[0]]);
    let _ = std::fs::remove_dir_all(&c.base);
}

/// Runs the test driver in `mode` through the node under `root`; once it prints `ready`,
/// kills the daemon `victim` with SIGKILL and lets the driver go on. Returns the rest of
/// its output, once it exited successfully.
fn drive_through_a_kill(root: &Path, mode: &str, victim: &Node) -> String {
    let mut driver = KillOnDrop(
        driver(root, &[mode]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap(),
    );
    let mut out = std::io::BufReader::new(driver.0.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(victim.pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    std::io::Write::write_all(driver.0.stdin.as_mut().unwrap(), b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(driver.0.wait().unwrap().success(), "the driver failed:\n{rest}");
    rest
}

#[test]
fn intermediate_results_lost_with_a_killed_node_are_rebuilt_and_the_job_completes() {
    let c = cluster("rebuild", 2, &["--num-cpus", "1", "--node-timeout-ms", "1000", "--object-store-memory", "128M"]);
    // Stage one is done, its blocks spread over the three nodes; one member dies with
    // its blocks before stage two reads them.
    let killed = &c.nodes[2];
    let rest = drive_through_a_kill(&c.roots[0], "two-stage", killed);
    // Every sum and block was right (the driver checks); the killed node's blocks, and
    // only those, were made a second time on a live node.
    let made: Vec<&str> = rest.lines().filter_map(|l| l.strip_prefix("made ")).collect();
    assert_eq!(made.len(), 12, "{rest}");
    let remade = made.iter().filter(|m| m.contains(',')).count();
    assert_eq!(remade, 4, "the 4 blocks on the killed node are rebuilt, the others not:\n{rest}");
    assert!(rest.lines().any(|l| l == "freed"), "the live stores return to empty:\n{rest}");
    stop_and_check_clean(&[&c.nodes[0], &c.nodes[1], killed]);
    let _ = std::fs::remove_dir_all(&c.base);
}

#[test]
fn tasks_on_a_killed_node_run_again_elsewhere_and_its_objects_fail_typed() {
    let c = cluster("loss", 1, &["--num-cpus", "1", "--node-timeout-ms", "2000"]);
    let (a, b) = (&c.nodes[0], &c.nodes[1]);

    // The tasks wait or run on the other node; it dies with its workers.
    let rest = drive_through_a_kill(&c.roots[0], "node-loss", b);
    let ran: Vec<&str> = rest.lines().filter_map(|l| l.strip_prefix("ran ")).collect();
    assert_eq!(ran, ["here"; 4], "{rest}");
    let lost = rest.lines().find_map(|l| l.strip_prefix("lost ")).unwrap_or_else(|| panic!("{rest}"));
    // Its only copy died with the node; rebuilding it re-runs its task, which is held to
    // the dead node: no live node can run it.
    assert!(lost.contains("infeasible") && lost.contains("node:"), "{lost}");

    // What the killed daemon left is cleaned by `ares stop` on its machine.
    stop_and_check_clean(&[a, b]);
    let _ = std::fs::remove_dir_all(&c.base);
}

/// Resumes a process stopped with SIGSTOP when dropped, so that it can be stopped.
struct ContinueOnDrop(u32);

impl Drop for ContinueOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.to_string()]).status();
    }
}

#[test]
fn a_node_that_never_answers_stalls_only_what_is_sent_to_it() {
    use std::io::BufRead;
    let c = cluster("silent", 0, &["--num-cpus", "1"]);
    let member_root = c.base.join("node2");
    let _stop = StopOnDrop(vec![member_root.clone()]);
    let args = ["--address", c.addr.as_str(), "--token", c.token.as_str(), "--node-ip-address", "127.0.0.1"];
    let (member, _) = start(&member_root, &[&args[..], &["--num-cpus", "1", "--resources", "silent=1"]].concat());
    wait_for("the head to list two live nodes", Duration::from_secs(30), || {
        node_lines(&status(&c.roots[0])).iter().filter(|l| l.contains(" alive ")).count() == 2
    });

    // Stopped, the member's UDP socket takes the driver's handshake and never answers
    // (until it is resumed below, well within the 10 s after which the head would
    // declare it dead).
    assert!(Command::new("kill").args(["-STOP", &member.pid.to_string()]).status().unwrap().success());
    let resume = ContinueOnDrop(member.pid);
    let stderr = c.base.join("driver.err");
    let mut driver = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
            .arg("silent-node")
            .env("ARES_ADDRESS", "auto")
            .env("ARES_SESSION_ROOT", &c.roots[0])
            .env("ARES_LOG", "ares::state=debug")
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut lines = std::io::BufReader::new(driver.0.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the driver printed nothing").unwrap();
    // The unrelated tasks finished while the dial to the stopped node was still under
    // way: it had not failed (a handshake with a silent peer fails only at the 10 s
    // idle timeout, and the driver logs the loss of the node when it does).
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(first.starts_with("unrelated done "), "driver said {first:?}; its log:\n{err}");
    let done = err.find("unrelated done").expect("the driver logs the line too");
    assert!(
        !err[..done].contains("lost the raylet of another node"),
        "the unrelated tasks waited for the dial to the stopped node to fail:\n{err}"
    );
    eprintln!("the slowest unrelated task took {} ms", first.trim_start_matches("unrelated done "));

    // Resumed, the node answers the handshake; the lease request queued meanwhile is
    // sent, and the task that needs the node runs there.
    drop(resume);
    let second = lines.next().expect("the driver ended early").unwrap();
    let status = driver.0.wait().unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success() && second.starts_with("silent ran "), "driver said {second:?}; its log:\n{err}");
    assert!(!err.contains("lost the raylet of another node"), "the node was taken for lost:\n{err}");

    stop_and_check_clean(&[&c.nodes[0], &member]);
    let _ = std::fs::remove_dir_all(&c.base);
}

/// A raylet that is stopped (not dead: its socket stays open) fails a call waiting on it
/// with a typed error once it leaves a probe unanswered, instead of holding the caller
/// for ever.
#[test]
fn a_call_to_a_stopped_raylet_fails_typed_instead_of_hanging() {
    use std::io::{BufRead, Write};
    let c = cluster("frozen", 0, &["--num-cpus", "1"]);
    let mut driver = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
            .arg("frozen-raylet")
            .env("ARES_ADDRESS", "auto")
            .env("ARES_SESSION_ROOT", &c.roots[0])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = std::io::BufReader::new(driver.0.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().expect("the driver printed nothing").unwrap(), "ready");
    assert!(Command::new("kill").args(["-STOP", &c.nodes[0].pid.to_string()]).status().unwrap().success());
    let resume = ContinueOnDrop(c.nodes[0].pid);
    writeln!(driver.0.stdin.take().unwrap(), "go").unwrap();
    // Without the probe this line never comes (the test would hang until CI's timeout).
    let said = lines.next().expect("the driver ended without a word").unwrap();
    assert!(said.starts_with("unavailable after ") && said.contains("has not answered"), "driver said {said:?}");
    assert!(driver.0.wait().unwrap().success());
    drop(resume);
    stop_and_check_clean(&[&c.nodes[0]]);
    let _ = std::fs::remove_dir_all(&c.base);
}
