//! A multi-host test bed on one machine. Each host is a network namespace of its own
//! with one interface (`eth0`, MTU 1500, an address in 198.18.0.0/24) and its own
//! loopback; the hosts are joined by a bridge that lives in a namespace of its own. The
//! addresses exist only inside namespaces the bed made, so no traffic leaves them, and
//! dropping the bed kills whatever still runs in them and deletes them. Needs root (CI
//! runs as root) and `ip` from iproute2.
//!
//! This kernel has no `sch_netem`, so impairments are done in user space: a host made
//! with [`Link::Wire`] reaches the bridge through a wire, a thread that moves its frames
//! between two interfaces with packet sockets and delays or drops them on the way
//! ([`TestBed::impair`]). Any host's link can be cut ([`TestBed::partition`]) and
//! restored ([`TestBed::heal`]).

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

/// How a host reaches the bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// A veth pair straight into the bridge: kernel speed, no impairment but cuts.
    Direct,
    /// Through a user-space wire that can delay and drop frames.
    Wire,
}

/// One host of the bed.
pub struct Host {
    /// The namespace's name (`ip netns exec <ns> …`).
    pub ns: String,
    /// Its address on the bridge.
    pub addr: Ipv4Addr,
    /// Its interface in the bridge's namespace, taken down to cut it off.
    port: String,
    impair: Arc<Impair>,
}

/// A wire's impairment, changed while it runs.
#[derive(Default)]
struct Impair {
    delay_us: AtomicU64,
    /// Frames dropped per million, each way.
    loss_ppm: AtomicU32,
}

struct Wire {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Namespaces, a bridge and the wires between them; removed when dropped.
pub struct TestBed {
    bridge_ns: String,
    hosts: Vec<Host>,
    wires: Vec<Wire>,
}

static BEDS: AtomicU32 = AtomicU32::new(0);
const PREFIX: &str = "ares-tb";

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip").args(args).output().context("running `ip` (iproute2)")?;
    ensure!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    Ok(())
}

impl TestBed {
    /// A bed of one host per entry of `links`, host `i` at 198.18.0.`i+1`.
    pub fn new(links: &[Link]) -> Result<Self> {
        ensure!(
            rustix::process::geteuid().is_root(),
            "the multi-host test bed makes network namespaces and needs root (CI runs as root)"
        );
        sweep_stale_beds();
        let tag = format!("{PREFIX}{}-{}", std::process::id(), BEDS.fetch_add(1, Ordering::Relaxed));
        let bridge_ns = format!("{tag}-br");
        let mut bed = TestBed { bridge_ns: bridge_ns.clone(), hosts: Vec::new(), wires: Vec::new() };
        ip(&["netns", "add", &bridge_ns])?;
        ip(&["-n", &bridge_ns, "link", "set", "lo", "up"])?;
        ip(&["-n", &bridge_ns, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &bridge_ns, "link", "set", "br0", "up"])?;
        for (i, link) in links.iter().enumerate() {
            let ns = format!("{tag}-h{i}");
            let addr = Ipv4Addr::new(198, 18, 0, i as u8 + 1);
            ip(&["netns", "add", &ns])?;
            let (h, w, b) = (format!("h{i}"), format!("w{i}"), format!("b{i}"));
            let impair = Arc::new(Impair::default());
            bed.hosts.push(Host { ns: ns.clone(), addr, port: b.clone(), impair: impair.clone() });
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            // `b<i>` is the bridge's port: the host's own veth end (direct), or the far end
            // of a second pair whose near end `w<i>` the wire feeds from `h<i>`.
            let near = if *link == Link::Direct { b.as_str() } else { h.as_str() };
            ip(&["link", "add", near, "netns", &bridge_ns, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
            ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
            // One segment per frame, so that a lost frame is one lost packet, as on a wire.
            ip(&["-n", &ns, "link", "set", "eth0", "mtu", "1500", "gso_max_segs", "1", "up"])?;
            if *link == Link::Wire {
                ip(&["link", "add", &w, "netns", &bridge_ns, "type", "veth", "peer", "name", &b, "netns", &bridge_ns])?;
                ip(&["-n", &bridge_ns, "link", "set", &h, "up"])?;
                ip(&["-n", &bridge_ns, "link", "set", &w, "up"])?;
                bed.wires.push(start_wire(&bridge_ns, &h, &w, impair, i as u64)?);
            }
            ip(&["-n", &bridge_ns, "link", "set", &b, "master", "br0"])?;
            ip(&["-n", &bridge_ns, "link", "set", &b, "up"])?;
        }
        Ok(bed)
    }

    /// The hosts, in the order they were asked for.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// `program` run inside host `i`'s namespace.
    pub fn command(&self, i: usize, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.hosts[i].ns]).arg(program);
        c
    }

    /// Delays every frame to and from host `i` by `delay` and drops `loss` (a fraction) of
    /// them each way. The host must have been made with [`Link::Wire`].
    pub fn impair(&self, i: usize, delay: Duration, loss: f64) {
        let im = &self.hosts[i].impair;
        im.delay_us.store(delay.as_micros() as u64, Ordering::Relaxed);
        im.loss_ppm.store((loss * 1e6) as u32, Ordering::Relaxed);
    }

    /// Cuts host `i` off the bridge (its port goes down): nothing reaches it or leaves it.
    pub fn partition(&self, i: usize) -> Result<()> {
        ip(&["-n", &self.bridge_ns, "link", "set", &self.hosts[i].port, "down"])
    }

    /// Restores a host cut off by [`TestBed::partition`].
    pub fn heal(&self, i: usize) -> Result<()> {
        ip(&["-n", &self.bridge_ns, "link", "set", &self.hosts[i].port, "up"])
    }
}

impl Drop for TestBed {
    fn drop(&mut self) {
        for w in &mut self.wires {
            w.stop.store(true, Ordering::Relaxed);
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
        let mut all: Vec<String> = self.hosts.iter().map(|h| h.ns.clone()).collect();
        all.push(self.bridge_ns.clone());
        remove_namespaces(&all);
    }
}

/// Kills every process still inside `names` and deletes the namespaces.
fn remove_namespaces(names: &[String]) {
    for ns in names {
        let pids = Command::new("ip").args(["netns", "pids", ns]).output();
        for pid in pids.iter().flat_map(|o| {
            String::from_utf8_lossy(&o.stdout).into_owned().lines().map(str::to_owned).collect::<Vec<_>>()
        }) {
            if let Some(pid) = pid.trim().parse().ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
    for ns in names {
        let _ = ip(&["netns", "del", ns]);
    }
}

/// Deletes the namespaces of beds whose test process is gone (killed before it could).
fn sweep_stale_beds() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    let stale: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| {
            let pid = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok());
            pid.is_some_and(|p| p != std::process::id() && !crate::process_alive(p))
        })
        .map(str::to_owned)
        .collect();
    remove_namespaces(&stale);
}

const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// Frames queued on one side at most; beyond that the wire drops, as a full queue does.
const MAX_QUEUED: usize = 20_000;

/// A packet socket on interface `name` of the calling thread's namespace that reads the
/// frames arriving there (not its own sends). With the virtio-net header, offloaded
/// frames (checksum to fill in, segmentation) pass through unchanged.
fn packet_socket(name: &str) -> Result<OwnedFd> {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket calls on a descriptor this function owns; every pointer passed
    // points to a live local of the size given.
    unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto as i32);
        ensure!(fd >= 0, "packet socket: {}", std::io::Error::last_os_error());
        let fd = OwnedFd::from_raw_fd(fd);
        let one: libc::c_int = 1;
        for opt in [PACKET_VNET_HDR, PACKET_IGNORE_OUTGOING] {
            let r = libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                opt,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            );
            ensure!(r == 0, "packet socket option {opt}: {}", std::io::Error::last_os_error());
        }
        let cname = std::ffi::CString::new(name)?;
        let index = libc::if_nametoindex(cname.as_ptr());
        ensure!(index != 0, "no interface {name}: {}", std::io::Error::last_os_error());
        let mut sa: libc::sockaddr_ll = std::mem::zeroed();
        sa.sll_family = libc::AF_PACKET as u16;
        sa.sll_protocol = proto;
        sa.sll_ifindex = index as i32;
        let r = libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        );
        ensure!(r == 0, "binding to {name}: {}", std::io::Error::last_os_error());
        Ok(fd)
    }
}

/// Starts the wire between `a` (the host's side) and `b` (the bridge's side) in
/// namespace `ns`; it runs until stopped.
fn start_wire(ns: &str, a: &str, b: &str, impair: Arc<Impair>, seed: u64) -> Result<Wire> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ns, a, b, stopped) = (ns.to_owned(), a.to_owned(), b.to_owned(), stop.clone());
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        // Namespaces are per thread: this one moves into the bridge's namespace for good,
        // and its sockets stay there.
        let sockets = (|| -> Result<[OwnedFd; 2]> {
            let f = std::fs::File::open(format!("/run/netns/{ns}"))?;
            // SAFETY: setns on a descriptor opened just above; it affects this thread only.
            if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                bail!("entering {ns}: {}", std::io::Error::last_os_error());
            }
            Ok([packet_socket(&a)?, packet_socket(&b)?])
        })();
        match sockets {
            Ok(s) => {
                let _ = ready_tx.send(Ok(()));
                run_wire(&s, &impair, &stopped, seed);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        }
    });
    ready_rx.recv().context("the wire thread died")??;
    Ok(Wire { stop, thread: Some(thread) })
}

/// Moves frames both ways until `stop`: each read frame is dropped with the loss
/// probability or queued until its delay passed, then written to the other side.
fn run_wire(fds: &[OwnedFd; 2], impair: &Impair, stop: &AtomicBool, seed: u64) {
    let mut queues: [VecDeque<(Instant, Vec<u8>)>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut buf = vec![0u8; 256 << 10];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        for (side, q) in queues.iter_mut().enumerate() {
            while q.front().is_some_and(|(at, _)| *at <= now) {
                let (_, frame) = q.pop_front().unwrap();
                // A full or downed interface loses the frame, as a wire would.
                // SAFETY: `frame` is a live buffer of the length given.
                let _ = unsafe { libc::send(fds[1 - side].as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            }
        }
        let next = queues.iter().filter_map(|q| q.front().map(|(at, _)| *at)).min();
        let wait = next
            .map_or(Duration::from_millis(50), |at| at.saturating_duration_since(now))
            .min(Duration::from_millis(50));
        let mut pfds = [
            libc::pollfd { fd: fds[0].as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: fds[1].as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let ts = libc::timespec { tv_sec: wait.as_secs() as i64, tv_nsec: wait.subsec_nanos() as i64 };
        // SAFETY: `pfds` and `ts` are live locals; no signal mask is passed.
        if unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null()) } <= 0 {
            continue;
        }
        let delay = Duration::from_micros(impair.delay_us.load(Ordering::Relaxed));
        let loss = impair.loss_ppm.load(Ordering::Relaxed) as u64;
        for (side, p) in pfds.iter().enumerate() {
            if p.revents & libc::POLLIN == 0 {
                continue;
            }
            loop {
                // SAFETY: `buf` is a live buffer of the length given.
                let n =
                    unsafe { libc::recv(fds[side].as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
                if n < 0 {
                    break;
                }
                let n = n as usize;
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if n > buf.len() || rng % 1_000_000 < loss || queues[side].len() >= MAX_QUEUED {
                    continue;
                }
                queues[side].push_back((Instant::now() + delay, buf[..n].to_vec()));
            }
        }
    }
}
