//! The subcommands: start (head or member, background or blocking), status, stop.
//!
//! A daemon leaves two files in its session directory: `node.info` (its pid, role,
//! cluster address and local socket, one `key=value` per line) and `cluster.cred`
//! (mode 0600: the cluster's certificate, key and join secret). `ares status` and
//! `ares stop` on the same machine find the daemons through them.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ares_common::Config;
use ares_common::wire::{FromHead, NodeSummary, ToHead};
use ares_net::{Connection, Credentials, JoinToken, process_alive};
use ares_raylet::{Raylet, RayletConfig, Role};
use clap::Args;

/// The head's default port (UDP).
pub(crate) const DEFAULT_PORT: u16 = 6380;
/// The line after which a starting daemon's summary is complete.
const READY_END: &str = "--";

#[derive(Args, Clone)]
pub(crate) struct StartArgs {
    /// Start the head of a new cluster.
    #[arg(long, conflicts_with = "address")]
    head: bool,
    /// Join the cluster whose head is at HOST:PORT.
    #[arg(long, required_unless_present = "head")]
    address: Option<String>,
    /// The join token the head printed (or ARES_TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// UDP port of the head's cluster service (default 6380; 0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
    /// The address other nodes reach this one at (default: this machine's outward IP).
    #[arg(long)]
    node_ip_address: Option<std::net::IpAddr>,
    /// Stay in the foreground, logging to stderr, until SIGINT or SIGTERM.
    #[arg(long)]
    block: bool,
    /// Program the node starts as its workers (run with ARES_WORKER=1); drivers that
    /// connect must have their remote functions compiled into it. Default: this `ares`
    /// binary, whose workers run the built-in tensor and data frame kernels.
    #[arg(long)]
    worker_program: Option<PathBuf>,
    /// CPUs the node offers (default: all).
    #[arg(long)]
    num_cpus: Option<String>,
    /// Custom resources, as NAME=AMOUNT[,NAME=AMOUNT].
    #[arg(long)]
    resources: Option<String>,
    /// Pool size in bytes (suffixes K, M, G allowed).
    #[arg(long)]
    object_store_memory: Option<String>,
    /// Pool size as a fraction of RAM (default 0.3).
    #[arg(long)]
    object_store_memory_fraction: Option<String>,
    /// A spill directory (repeat for several; used round-robin).
    #[arg(long = "spill-dir")]
    spill_dir: Vec<PathBuf>,
    /// Spill once primary copies fill this fraction of the pool (default 0.8).
    #[arg(long)]
    spill_threshold: Option<String>,
    /// Fuse spilled objects into files of at least this size (default 100M).
    #[arg(long)]
    min_spill_size: Option<String>,
    /// At most this many objects per spill file (default 1000).
    #[arg(long)]
    max_spill_file_objects: Option<String>,
    /// How long a create waits for spilling to make room, in ms (default 10000).
    #[arg(long)]
    object_create_timeout_ms: Option<String>,
    /// How long the head waits for a silent node before declaring it dead, in ms
    /// (default 10000).
    #[arg(long)]
    node_timeout_ms: Option<String>,
    /// Utilisation under which the node keeps lease requests instead of spilling them
    /// back to other nodes (default 0.5).
    #[arg(long)]
    scheduler_spread_threshold: Option<String>,
    /// Where the shared-memory pool lives: a memory-backed filesystem (default /dev/shm).
    #[arg(long)]
    shm_dir: Option<String>,
    /// Reserve the whole pool's memory at start (default: as allocations first reach it).
    #[arg(long)]
    preallocate_object_store: bool,
    /// Client connections the node serves at once (default 16384).
    #[arg(long)]
    max_connections: Option<String>,
    /// Where session directories (sockets, logs) are made (default $XDG_RUNTIME_DIR/ares, else <tmp>/ares-<uid>).
    #[arg(long)]
    session_root: Option<String>,
}

impl StartArgs {
    fn config(&self) -> Result<Config> {
        let mut cfg = Config::from_env()?;
        let flags = [
            ("num_cpus", &self.num_cpus),
            ("resources", &self.resources),
            ("object_store_memory", &self.object_store_memory),
            ("object_store_memory_fraction", &self.object_store_memory_fraction),
            ("spill_threshold", &self.spill_threshold),
            ("min_spill_size", &self.min_spill_size),
            ("max_spill_file_objects", &self.max_spill_file_objects),
            ("object_create_timeout_ms", &self.object_create_timeout_ms),
            ("node_timeout_ms", &self.node_timeout_ms),
            ("scheduler_spread_threshold", &self.scheduler_spread_threshold),
            ("max_connections", &self.max_connections),
            ("session_root", &self.session_root),
            ("shm_dir", &self.shm_dir),
            ("token", &self.token),
        ];
        for (name, value) in flags {
            if let Some(v) = value {
                cfg.set(name, v).map_err(|e| anyhow!("--{}: bad value {v:?}: {e}", name.replace('_', "-")))?;
            }
        }
        if !self.spill_dir.is_empty() {
            cfg.spill_dirs = self.spill_dir.clone();
        }
        if self.preallocate_object_store {
            cfg.preallocate_object_store = true;
        }
        Ok(cfg)
    }
}

/// Blocks SIGINT and SIGTERM in every thread (call before starting any) and returns a
/// function that waits for one of them.
fn block_stop_signals() -> impl FnOnce() -> i32 {
    // SAFETY: plain libc signal-set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        move || {
            let mut sig = 0;
            libc::sigwait(&set, &mut sig);
            sig
        }
    }
}

/// The address other machines most likely reach this one at: the source address of a
/// route to the outside (no packet is sent), else loopback.
fn outward_ip() -> std::net::IpAddr {
    ip_toward(([192, 0, 2, 1], 9).into())
}

/// This host's address on the route to `peer` (no packet is sent); loopback if none.
fn ip_toward(peer: SocketAddr) -> std::net::IpAddr {
    let unspecified: SocketAddr = if peer.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let probe = || -> std::io::Result<std::net::IpAddr> {
        let s = std::net::UdpSocket::bind(unspecified)?;
        s.connect(peer)?;
        Ok(s.local_addr()?.ip())
    };
    probe().unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
}

fn parse_addr(s: &str) -> Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .with_context(|| format!("--address {s:?}: expected HOST:PORT"))?
        .next()
        .ok_or_else(|| anyhow!("--address {s:?}: the host has no address"))
}

fn parse_token(cfg: &Config) -> Result<JoinToken> {
    let t = cfg.token.as_deref().ok_or_else(|| {
        anyhow!(
            "joining a cluster needs its join token: pass --token (or set ARES_TOKEN) as `ares start --head` printed it"
        )
    })?;
    t.parse::<JoinToken>().map_err(|e| anyhow!("--token: {e}"))
}

pub(crate) fn start(args: StartArgs) -> Result<()> {
    let cfg = args.config()?;
    if !args.head {
        // Fail here, not in the background, on a malformed address or token.
        parse_addr(args.address.as_deref().unwrap_or_default())?;
        parse_token(&cfg)?;
    }
    if !args.block {
        return start_in_background(&cfg);
    }
    let program = match &args.worker_program {
        Some(p) => std::fs::canonicalize(p).with_context(|| format!("--worker-program {}", p.display()))?,
        None => std::env::current_exe().context("finding this executable")?,
    };
    let wait = block_stop_signals();
    ares_raylet::raise_fd_limit(cfg.max_connections);
    // A member announces the address its packets to the head leave from (right on a host
    // without a default route); a head, the one toward the default route.
    let head_addr = if args.head { None } else { Some(parse_addr(args.address.as_deref().unwrap_or_default())?) };
    let ip = args.node_ip_address.unwrap_or_else(|| head_addr.map_or_else(outward_ip, ip_toward));
    let mut rcfg = RayletConfig::embedded(cfg.clone()).context("finding this executable")?;
    rcfg.worker_program = program;
    let creds = if args.head {
        let secret: [u8; 16] = *uuid::Uuid::new_v4().as_bytes();
        let creds = Credentials::generate(secret).context("making the cluster certificate")?;
        let port = args.port.unwrap_or(DEFAULT_PORT);
        rcfg.cluster = Some(Role::Head { bind: SocketAddr::new(bind_ip(ip), port), ip, creds: creds.clone() });
        Some(creds)
    } else {
        let head = head_addr.expect("a member has the head's address");
        let token = parse_token(&cfg)?;
        ares_net::set_join_token(token);
        rcfg.cluster = Some(Role::Member { head, token, ip });
        None
    };
    let mut raylet = Raylet::start(rcfg).map_err(|e| anyhow!("starting the node: {e}"))?;
    let session = raylet.session_dir().to_path_buf();
    let cluster_addr = match (&creds, raylet.cluster_addr()) {
        (Some(_), Some(a)) => SocketAddr::new(ip, a.port()),
        _ => parse_addr(args.address.as_deref().unwrap_or_default())?,
    };
    let role = if args.head { "head" } else { "member" };
    let info = ares_net::DaemonInfo {
        dir: session.clone(),
        pid: std::process::id(),
        role: role.to_string(),
        node: raylet.node_id().to_string(),
        cluster: Some(cluster_addr.to_string()),
        socket: Some(raylet.socket_path().to_string()),
        spill: cfg.effective_spill_dirs(),
        alive: true,
    };
    info.write().context("writing node.info")?;
    print_started(role, &raylet, cluster_addr, creds.as_ref().map(Credentials::token), &session);
    let sig = wait();
    tracing::info!("signal {sig}, shutting down");
    raylet.shutdown();
    Ok(())
}

/// Binding to the advertised IP would refuse loopback clients on a LAN address, so a
/// routable address binds every interface (access is by token anyway).
fn bind_ip(ip: std::net::IpAddr) -> std::net::IpAddr {
    if ip.is_loopback() { ip } else { std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED) }
}

fn print_started(role: &str, raylet: &Raylet, addr: SocketAddr, token: Option<JoinToken>, session: &Path) {
    let mut out = std::io::stdout().lock();
    let node = raylet.node_id();
    let _ = writeln!(out, "ares: {role} node {node} started (pid {})", std::process::id());
    let _ = writeln!(out, "  cluster address: {addr}");
    if let Some(t) = token {
        let _ = writeln!(out, "  join token:      {t}");
    }
    let _ = writeln!(out, "  local socket:    {}", raylet.socket_path());
    let _ = writeln!(out, "  session dir:     {} (daemon.log holds the logs)", session.display());
    if let Some(t) = token {
        let _ = writeln!(out);
        let _ = writeln!(out, "To add a node:      ares start --address {addr} --token {t}");
    }
    // A driver goes through the daemon on its own machine, as a Ray driver does.
    let _ = writeln!(
        out,
        "Connect a driver:   ARES_ADDRESS={addr} ./your_program   (on a machine running a node of this cluster)"
    );
    let _ = writeln!(out, "Cluster status:     ares status");
    let _ = writeln!(out, "Stop this machine:  ares stop");
    let _ = writeln!(out, "{READY_END}");
    let _ = out.flush();
}

/// Starts `ares start ... --block` as a detached child (own process group, no
/// terminal), relays its summary, and moves its output to `daemon.log` in its session.
fn start_in_background(cfg: &Config) -> Result<()> {
    let exe = std::env::current_exe().context("finding this executable")?;
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.push("--block".into());
    ares_net::check_session_root(&cfg.session_root)?;
    let log_dir = cfg.session_root.join("logs");
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    let log_path = log_dir.join(format!("daemon-{}.log", std::process::id()));
    let log = std::fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let mut child = Command::new(exe)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the daemon")?;
    // The log is named by the daemon's pid, the one `ares status` shows (the file stays
    // open in the child across the rename).
    let named = log_dir.join(format!("daemon-{}.log", child.id()));
    let log_path = match std::fs::rename(&log_path, &named) {
        Ok(()) => named,
        Err(_) => log_path,
    };
    let mut summary = String::new();
    let mut lines = BufReader::new(child.stdout.take().expect("piped"));
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            let how = match child.wait() {
                Ok(status) => exit_text(status),
                Err(e) => format!("could not be waited for: {e}"),
            };
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!("the daemon did not start (it {how}); its log ({}):\n{log}", log_path.display());
        }
        if line.trim_end() == READY_END {
            break;
        }
        summary.push_str(&line);
    }
    // The daemon's later output would go to a closed pipe: it writes nothing more to
    // stdout, and its log stays in `log_path`; link it from the session directory.
    if let Some(dir) = summary.lines().find_map(|l| l.trim().strip_prefix("session dir:")) {
        let dir = dir.trim().split(" (").next().unwrap_or_default();
        let _ = std::os::unix::fs::symlink(&log_path, Path::new(dir).join("daemon.log"));
    }
    print!("{summary}");
    Ok(())
}

/// How a process ended, in words ("exited with code 1", "was killed by signal 9").
fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".into(),
    }
}

#[derive(Args)]
pub(crate) struct StatusArgs {
    /// The head's HOST:PORT (default: ARES_ADDRESS, else the head running on this machine).
    #[arg(long)]
    address: Option<String>,
    /// The join token (default: ARES_TOKEN, else the local head's).
    #[arg(long)]
    token: Option<String>,
    /// Where this machine's daemons keep their session directories (default $XDG_RUNTIME_DIR/ares, else <tmp>/ares-<uid>).
    #[arg(long)]
    session_root: Option<String>,
    /// List every node that was ever declared dead (by default those dead for over a
    /// minute are only counted).
    #[arg(long)]
    all: bool,
}

fn session_root(flag: &Option<String>) -> Result<PathBuf> {
    let mut cfg = Config::from_env()?;
    if let Some(r) = flag {
        cfg.session_root = PathBuf::from(r);
    }
    Ok(cfg.session_root)
}

pub(crate) fn status(args: StatusArgs) -> Result<()> {
    let env = Config::from_env()?;
    let root = session_root(&args.session_root)?;
    let flag_or_env = |flag: &Option<String>, env: Option<String>| flag.clone().or(env);
    let (addr, token) = match flag_or_env(&args.address, env.address.clone().filter(|a| a.contains(':'))) {
        Some(a) => {
            let t = flag_or_env(&args.token, env.token.clone())
                .ok_or_else(|| anyhow!("--address needs the cluster's join token: pass --token or set ARES_TOKEN"))?;
            (parse_addr(&a)?, t.parse::<JoinToken>()?)
        }
        None => {
            let head = ares_net::daemons(&root).into_iter().find(|d| d.alive && d.role == "head").ok_or_else(|| {
                anyhow!("no head node runs on this machine (under {}): pass --address and --token", root.display())
            })?;
            let creds = Credentials::load(&head.dir.join("cluster.cred"))?;
            let addr = head
                .cluster
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| anyhow!("{}: node.info names no cluster address", head.dir.display()))?;
            (addr, creds.token())
        }
    };
    let conn = Connection::connect_quic(addr, &token).map_err(|e| anyhow!("reaching the head at {addr}: {e}"))?;
    let (tx, mut rx) = conn.split::<FromHead>(16 << 20, 1 << 20)?;
    tx.send(&ToHead::GetStatus { request_id: ares_common::RequestId(1) })?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match rx.recv_timeout::<FromHead>(deadline.saturating_duration_since(Instant::now())) {
            Ok(FromHead::Status { nodes, node_timeout_ms, jobs, detached, .. }) => {
                print!("{}", render_status(addr, &nodes, node_timeout_ms, &jobs, detached, args.all));
                tx.close();
                // Tell the head before exiting, or it waits out the idle timeout.
                ares_net::drain_outgoing(Duration::from_millis(500));
                return Ok(());
            }
            Ok(_) if Instant::now() < deadline => {}
            Ok(other) => bail!("the head answered {other:?}"),
            Err(e) => bail!("the head at {addr} closed the connection: {e}"),
        }
    }
}

fn gib(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{b} B") } else { format!("{v:.1} {}", U[i]) }
}

fn units(u: u64) -> f64 {
    u as f64 / ares_common::resources::UNITS as f64
}

/// How long after it was last heard from a dead node stays listed (beyond the node
/// timeout); older ones are only counted unless `--all` is given.
const DEAD_LISTED_MS: u64 = 60_000;

/// The status report, laid out like `ray status`: nodes, then usage, then demands.
/// `all`: list every dead node, not only those that died in the last minute.
pub(crate) fn render_status(
    addr: SocketAddr,
    nodes: &[NodeSummary],
    node_timeout_ms: u64,
    jobs: &[ares_common::wire::JobSummary],
    detached: u32,
    all: bool,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let alive = nodes.iter().filter(|n| n.alive).count();
    let listed = |n: &&NodeSummary| all || n.alive || n.silent_ms <= node_timeout_ms + DEAD_LISTED_MS;
    let hidden = nodes.len() - nodes.iter().filter(listed).count();
    let _ = writeln!(s, "======== Cluster status (head {addr}) ========");
    let _ = write!(
        s,
        "Nodes: {alive} alive, {} dead (declared dead after {node_timeout_ms} ms of silence)",
        nodes.len() - alive
    );
    match hidden {
        0 => s.push('\n'),
        n => {
            let _ = writeln!(s, "; {n} dead for over a minute not listed (`ares status --all` lists them)");
        }
    }
    let _ = writeln!(
        s,
        "  {:<34} {:<6} {:<22} {:<14} {:<26} {:>10} {:>7} {:>6}",
        "NODE", "STATE", "ADDRESS", "CPU used/total", "STORE used/capacity", "SPILLED", "WORKERS", "ACTORS"
    );
    for n in nodes.iter().filter(listed) {
        let id = format!("{}{}", n.node_id, if n.head { " (head)" } else { "" });
        let state = if n.alive { "alive" } else { "dead" };
        let addr = n.addr.map_or_else(|| format!("{} pid {}", n.host, n.pid), |a| a.to_string());
        let total = units(n.total.get_units("CPU"));
        let used = if n.alive { total - units(n.load.available.get_units("CPU")) } else { 0.0 };
        let store = format!("{} / {}", gib(n.load.store_used), gib(n.load.store_capacity));
        let _ = writeln!(
            s,
            "  {:<34} {:<6} {:<22} {:<14} {:<26} {:>10} {:>7} {:>6}",
            id,
            state,
            addr,
            format!("{used:.1}/{total:.1}"),
            store,
            gib(n.load.store_spilled),
            n.load.workers,
            n.load.actors.alive
        );
        if let Some(why) = &n.died {
            let _ = writeln!(s, "    last heard from {:.0} s ago; dead: {why}", n.silent_ms as f64 / 1000.0);
        }
    }
    let _ = writeln!(s, "Resources (alive nodes):");
    let mut names: Vec<String> = nodes.iter().flat_map(|n| n.total.iter().map(|(k, _)| k.to_string())).collect();
    names.sort();
    names.dedup();
    for name in names.iter().filter(|n| !n.starts_with("node:")) {
        let live = nodes.iter().filter(|n| n.alive);
        let total: u64 = live.clone().map(|n| n.total.get_units(name)).sum();
        let avail: u64 = live.map(|n| n.load.available.get_units(name)).sum();
        let _ = writeln!(s, "  {:.1}/{:.1} {name}", units(total.saturating_sub(avail)), units(total));
    }
    let used: u64 = nodes.iter().filter(|n| n.alive).map(|n| n.load.store_used).sum();
    let cap: u64 = nodes.iter().filter(|n| n.alive).map(|n| n.load.store_capacity).sum();
    let _ = writeln!(s, "  {} / {} object store", gib(used), gib(cap));
    let live = || nodes.iter().filter(|n| n.alive);
    let pending: u32 = live().map(|n| n.load.pending_leases).sum();
    let infeasible: u32 = live().map(|n| n.load.infeasible_leases).sum();
    let _ = writeln!(s, "Demands:");
    // Shapes summed over the nodes, as `ray status` lists them.
    let mut demands: Vec<(String, bool, u32)> = Vec::new();
    for d in live().flat_map(|n| n.load.demands.iter()) {
        let shape = d.shape.to_string();
        match demands.iter_mut().find(|(s, a, _)| *s == shape && *a == d.actor) {
            Some(e) => e.2 += d.count,
            None => demands.push((shape, d.actor, d.count)),
        }
    }
    demands.sort_by_key(|d| std::cmp::Reverse(d.2));
    if pending == 0 {
        let _ = writeln!(s, "  (no lease requests waiting)");
    }
    for (shape, actor, count) in &demands {
        let what = if *actor { "actor" } else { "task" };
        let _ = writeln!(s, "  {shape}: {count} {what} lease request(s) waiting");
    }
    let listed: u32 = demands.iter().map(|d| d.2).sum();
    if pending > listed {
        let _ = writeln!(s, "  (and {} more of other shapes)", pending - listed);
    }
    let _ = writeln!(
        s,
        "  {infeasible} request(s) refused as infeasible so far (no node could ever hold them; the caller got Infeasible)"
    );
    let a = live().fold(ares_common::wire::ActorCounts::default(), |mut a, n| {
        a.pending += n.load.actors.pending;
        a.alive += n.load.actors.alive;
        a.restarting += n.load.actors.restarting;
        a
    });
    let _ = writeln!(
        s,
        "Actors: {} alive, {} pending creation, {} restarting; {detached} detached, restarted by the head if their \
         node dies",
        a.alive, a.pending, a.restarting
    );
    let running = jobs.iter().filter(|j| j.running).count();
    let _ = writeln!(s, "Jobs: {running} running, {} finished", jobs.len() - running);
    for j in jobs {
        let state = if j.running { "running" } else { "finished" };
        let _ = writeln!(s, "  job {:<14} {:<9} driver pid {} via node {}", j.job.to_string(), state, j.pid, j.node);
    }
    s
}

#[derive(Args)]
pub(crate) struct StopArgs {
    /// Where this machine's daemons keep their session directories (default $XDG_RUNTIME_DIR/ares, else <tmp>/ares-<uid>).
    #[arg(long)]
    session_root: Option<String>,
    /// Seconds to wait for a clean exit before killing a daemon.
    #[arg(long, default_value_t = 15)]
    grace: u64,
}

pub(crate) fn stop(args: StopArgs) -> Result<()> {
    let root = session_root(&args.session_root)?;
    let all = ares_net::daemons(&root);
    // The session root is the default spill directory.
    let spill_roots: Vec<PathBuf> = all.iter().flat_map(|d| d.spill.clone()).chain([root.clone()]).collect();
    let daemons: Vec<ares_net::DaemonInfo> = all.into_iter().filter(|d| d.alive).collect();
    for d in &daemons {
        if let Some(pid) = rustix::process::Pid::from_raw(d.pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(args.grace);
    let alive = |d: &ares_net::DaemonInfo| process_alive(d.pid);
    while daemons.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for d in daemons.iter().filter(|d| alive(d)) {
        eprintln!("ares: daemon {} did not exit within {}s; killing it", d.pid, args.grace);
        if let Some(pid) = rustix::process::Pid::from_raw(d.pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    // Whatever daemons killed earlier left behind goes too (their spill directories
    // first: their paths are in the session directories). Logs under <root>/logs stay
    // for a post-mortem, as Ray's do.
    let still: Vec<u32> = daemons.iter().filter(|d| alive(d)).map(|d| d.pid).collect();
    for _ in 0..100 {
        if still.iter().all(|p| !process_alive(*p)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for r in &spill_roots {
        ares_object_store::spill::remove_stale(r);
    }
    ares_net::remove_stale_session_dirs(&root);
    match daemons.len() {
        0 => println!("ares: no node daemon runs under {}", root.display()),
        n => println!("ares: stopped {n} node daemon(s)"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::wire::{ActorCounts, Demand, NodeLoad};
    use ares_common::{NodeId, ResourceSet};

    fn node(n: u8, alive: bool, load: NodeLoad) -> NodeSummary {
        NodeSummary {
            node_id: NodeId([n; 16]),
            pid: 100 + n as u32,
            host: "h".into(),
            addr: Some(format!("127.0.0.1:{}", 7000 + n as u16).parse().unwrap()),
            head: n == 1,
            alive,
            total: ResourceSet::new().with("CPU", 2.0),
            load,
            silent_ms: 0,
            died: None,
        }
    }

    #[test]
    fn status_sums_demands_by_shape_and_counts_actors_by_state() {
        let one = ResourceSet::new().with("CPU", 1.0);
        let gpu = ResourceSet::new().with("CPU", 1.0).with("GPU", 1.0);
        let a = NodeLoad {
            pending_leases: 5,
            demands: vec![
                Demand { shape: one.clone(), actor: false, count: 3 },
                Demand { shape: gpu.clone(), actor: true, count: 2 },
            ],
            actors: ActorCounts { pending: 1, alive: 2, restarting: 0 },
            ..NodeLoad::default()
        };
        let b = NodeLoad {
            pending_leases: 9,
            demands: vec![Demand { shape: one.clone(), actor: false, count: 4 }],
            actors: ActorCounts { pending: 0, alive: 1, restarting: 1 },
            ..NodeLoad::default()
        };
        // A dead node's last report is not counted.
        let dead = NodeLoad { actors: ActorCounts { alive: 50, ..ActorCounts::default() }, ..b.clone() };
        let s = render_status(
            "127.0.0.1:7001".parse().unwrap(),
            &[node(1, true, a), node(2, true, b), node(3, false, dead)],
            10_000,
            &[],
            1,
            false,
        );
        assert!(s.contains("{CPU: 1}: 7 task lease request(s) waiting"), "{s}");
        assert!(s.contains("{CPU: 1, GPU: 1}: 2 actor lease request(s) waiting"), "{s}");
        assert!(s.contains("(and 5 more of other shapes)"), "{s}");
        assert!(s.contains("Actors: 3 alive, 1 pending creation, 1 restarting; 1 detached"), "{s}");
        assert!(s.contains("Nodes: 2 alive, 1 dead"), "{s}");
    }

    #[test]
    fn dead_nodes_show_why_and_leave_the_listing_after_a_minute_unless_all_is_asked() {
        let dead = |n: u8, silent_ms: u64, why: &str| NodeSummary {
            silent_ms,
            died: Some(why.into()),
            ..node(n, false, NodeLoad::default())
        };
        let nodes = [
            node(1, true, NodeLoad::default()),
            dead(2, 12_000, "no heartbeat for over 10000 ms"),
            dead(3, 10_000 + DEAD_LISTED_MS + 1, "stopped"),
        ];
        let render = |all| render_status("127.0.0.1:7001".parse().unwrap(), &nodes, 10_000, &[], 0, all);
        let s = render(false);
        assert!(s.contains("Nodes: 1 alive, 2 dead"), "{s}");
        assert!(s.contains("1 dead for over a minute not listed (`ares status --all` lists them)"), "{s}");
        assert!(
            s.contains(&NodeId([2; 16]).to_string()) && s.contains("last heard from 12 s ago; dead: no heartbeat"),
            "{s}"
        );
        assert!(!s.contains(&NodeId([3; 16]).to_string()) && !s.contains("stopped"), "{s}");
        let s = render(true);
        assert!(!s.contains("not listed"), "{s}");
        assert!(
            s.contains(&NodeId([3; 16]).to_string()) && s.contains("last heard from 70 s ago; dead: stopped"),
            "{s}"
        );
    }
}
