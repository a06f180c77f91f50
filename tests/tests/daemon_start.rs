//! `ares start`: a node daemon in its own process, configured by flags and environment
//! variables, serving a driver that connects with an address.

use ares_common::RequestId;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ares_tests::{ares_bin, process_alive, wait_for};

#[ares::remote]
fn double(x: i64) -> i64 {
    2 * x
}

/// A fresh directory for one test, removed when the test ends (declare it before the
/// daemon that uses it, so the daemon goes first).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("ares-daemon-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

struct Daemon {
    child: Child,
    socket: String,
}

impl Daemon {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Daemon {
        Self::start_by(Command::new(ares_bin()), args, env)
    }

    /// Starts the daemon through `cmd`, which runs the `ares` binary with the arguments
    /// added here (`cmd` may be a wrapper that execs it).
    fn start_by(mut cmd: Command, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let exe = std::env::current_exe().unwrap();
        let program: Vec<&std::ffi::OsStr> = if args.contains(&"--worker-program") {
            Vec::new()
        } else {
            vec!["--worker-program".as_ref(), exe.as_os_str()]
        };
        // A test that dies by a signal (a SIGBUS, say) takes its daemon with it.
        // SAFETY: only an async-signal-safe prctl between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
                    .map_err(std::io::Error::from)
            });
        }
        let mut child = cmd
            .arg("start")
            .arg("--head")
            .args(["--block", "--port", "0", "--node-ip-address", "127.0.0.1"])
            .args(program)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the ares binary is built with the workspace");
        // The summary names the local socket; it ends with a `--` line.
        let mut socket = String::new();
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if let Some(s) = line.trim().strip_prefix("local socket:") {
                socket = s.trim().to_string();
            }
            if line == "--" {
                break;
            }
        }
        assert!(!socket.is_empty(), "the daemon printed its socket");
        Daemon { child, socket }
    }

    fn stop(mut self) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the daemon exits cleanly on SIGTERM: {status}");
        assert!(!Path::new(&self.socket).parent().unwrap().exists(), "session directory removed");
    }
}

impl Drop for Daemon {
    /// A failed test must not leave its daemon (and the daemon's workers) behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let _ = self.child.wait();
        }
    }
}

fn connect(socket: &str) {
    let mut cfg = ares::Config::default();
    cfg.address = Some(socket.to_string());
    ares::init_with(cfg).unwrap();
}

#[test]
fn flags_configure_the_daemon_and_a_driver_connects_by_address() {
    let _serial = ares_tests::serial();
    let spill = scratch("flags");
    let sessions = scratch("sessions");
    let d = Daemon::start(
        &[
            "--num-cpus",
            "2",
            "--object-store-memory",
            "96M",
            "--spill-dir",
            spill.to_str().unwrap(),
            "--session-root",
            sessions.to_str().unwrap(),
            "--min-spill-size",
            "1M",
        ],
        &[("ARES_OBJECT_STORE_MEMORY", "80M")], // the flag wins over the environment
    );
    assert!(d.socket.starts_with(sessions.to_str().unwrap()), "{}", d.socket);
    connect(&d.socket);
    assert_eq!(ares::raylet_address().unwrap(), d.socket);
    let refs: Vec<_> = (0..100).map(|i| ares::remote(double).call(i)).collect();
    assert_eq!(ares::get_all(&refs).unwrap().iter().sum::<i64>(), 2 * (0..100).sum::<i64>());
    let stats = ares::node_stats().unwrap();
    assert_eq!(stats.store_capacity, 96 << 20);
    assert_eq!(stats.total.get_units("CPU"), 2 * 10_000);
    // More than the pool: spilled into the flag's directory, read back intact.
    let held: Vec<_> = (0..4u8).map(|i| ares::put(vec![i; 30 << 20]).unwrap()).collect();
    assert!(ares::node_stats().unwrap().store_spilled_bytes_total > 0);
    let dirs: Vec<_> = std::fs::read_dir(&spill).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1, "one per-session spill directory under --spill-dir");
    for (i, h) in held.iter().enumerate() {
        assert!(ares::get_view(h).unwrap().iter().all(|b| *b == i as u8));
    }
    let workers = ares::node_stats().unwrap().workers;
    drop(held);
    ares::shutdown();
    d.stop();
    for w in workers {
        wait_for("the daemon's workers to exit", Duration::from_secs(30), || !process_alive(w.pid));
    }
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "spill directory removed at shutdown");
}

#[test]
fn environment_variables_configure_the_daemon() {
    let _serial = ares_tests::serial();
    let sessions = scratch("env");
    let d = Daemon::start(
        &["--num-cpus", "1"],
        &[("ARES_OBJECT_STORE_MEMORY", "80M"), ("ARES_SESSION_ROOT", sessions.to_str().unwrap())],
    );
    connect(&d.socket);
    assert_eq!(ares::node_stats().unwrap().store_capacity, 80 << 20);
    assert_eq!(ares::get(&ares::remote(double).call(21)).unwrap(), 42);
    ares::shutdown();
    d.stop();
}

#[test]
fn objects_of_a_driver_that_dies_are_freed() {
    let _serial = ares_tests::serial();
    let sessions = scratch("owner-death");
    let d = Daemon::start(&["--num-cpus", "1", "--session-root", sessions.to_str().unwrap()], &[]);
    connect(&d.socket);
    let base = ares::node_stats().unwrap();
    let mut other = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .args(["daemon-put", &d.socket])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(other.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "put");
    assert_eq!(ares::node_stats().unwrap().store_objects, base.store_objects + 1);
    other.kill().unwrap();
    other.wait().unwrap();
    // Its owner is gone, so nobody can ever read it: the node frees it.
    wait_for("the dead driver's object to be freed", Duration::from_secs(30), || {
        let s = ares::node_stats().unwrap();
        s.store_objects == base.store_objects && s.store_used == base.store_used
    });
    ares::shutdown();
    d.stop();
}

#[ares::remote]
fn sleepy(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    ms
}

/// A driver waits on a daemon that is then stopped with `signal`: every waiting and later
/// call fails with `RayletUnavailable`, and the daemon's workers exit.
fn calls_fail_typed_when_the_daemon_goes(signal: rustix::process::Signal, name: &str) {
    let _serial = ares_tests::serial();
    let sessions = scratch(name);
    let mut d = Daemon::start(&["--num-cpus", "1", "--session-root", sessions.to_str().unwrap()], &[]);
    connect(&d.socket);
    assert_eq!(ares::get(&ares::remote(double).call(2)).unwrap(), 4);
    let running = ares::remote(sleepy).call(600_000);
    let queued = ares::remote(sleepy).call(1); // waits for the only CPU
    let workers = ares::node_stats().unwrap().workers;
    // A get already waiting when the daemon goes.
    let waiting = std::thread::spawn(move || {
        let e = ares::get(&running).unwrap_err();
        (e, std::time::Instant::now())
    });
    std::thread::sleep(Duration::from_millis(100)); // let it block
    let pid = rustix::process::Pid::from_raw(d.child.id() as i32).unwrap();
    let killed = std::time::Instant::now();
    rustix::process::kill_process(pid, signal).unwrap();
    let socket = d.socket.clone();
    let gone = |e: ares::Error| match e {
        ares::Error::Task(ares::TaskError::RayletUnavailable { socket: s, reason }) => {
            assert_eq!(s, socket);
            reason
        }
        ares::Error::RayletUnavailable(reason) => reason,
        other => panic!("expected RayletUnavailable, got {other}"),
    };
    let (e, failed_at) = waiting.join().unwrap();
    let reason = gone(e);
    let took = failed_at.duration_since(killed);
    assert!(took < Duration::from_secs(2), "{name}: the waiting get failed only after {took:?}");
    if signal == rustix::process::Signal::TERM {
        assert!(reason.contains("stopping"), "a stopped daemon says so: {reason}");
    }
    d.child.wait().unwrap();
    gone(ares::get(&queued).unwrap_err());
    // Later calls fail at once, with the same error: tasks, puts large and small, waits,
    // actors, stats.
    gone(ares::get(&ares::remote(double).call(1)).unwrap_err());
    gone(ares::put(vec![7u8; 1 << 20]).unwrap_err());
    let small = ares::put(5u64);
    assert!(small.is_err() || ares::get(&small.unwrap()).unwrap() == 5, "a small put stays in this process");
    let (ready, _) = ares::wait(&[ares::remote(double).call(2)], 1, Some(Duration::from_secs(5)));
    assert_eq!(ready.len(), 1, "a failed task counts as ready");
    gone(ares::actor(ares_tests::actors::Counter::new).try_spawn(1).unwrap_err());
    gone(ares::node_stats().unwrap_err());
    // The daemon's workers do not linger.
    for w in workers {
        wait_for("the daemon's workers to exit", Duration::from_secs(30), || !process_alive(w.pid));
    }
    ares::shutdown();
}

#[test]
fn every_waiting_and_later_call_fails_typed_when_the_daemon_is_killed() {
    calls_fail_typed_when_the_daemon_goes(rustix::process::Signal::KILL, "daemon-kill");
}

#[test]
fn every_waiting_and_later_call_fails_typed_when_the_daemon_is_stopped() {
    calls_fail_typed_when_the_daemon_goes(rustix::process::Signal::TERM, "daemon-term");
}

#[test]
fn a_bad_flag_is_named_in_the_error() {
    let out = Command::new(ares_bin())
        .args(["start", "--head", "--worker-program", "/bin/true", "--object-store-memory", "12Q"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--object-store-memory") && err.contains("unknown size unit"), "{err}");
}

#[test]
fn a_missing_shm_dir_is_named_and_leaves_nothing_behind() {
    let sessions = scratch("bad-shm");
    let out = Command::new(ares_bin())
        .args(["start", "--head", "--block", "--port", "0", "--node-ip-address", "127.0.0.1"])
        .args(["--worker-program", "/bin/true", "--shm-dir", "/nonexistent-ares-shm", "--session-root"])
        .arg(&*sessions)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-ares-shm") && err.contains("--shm-dir"), "{err}");
    assert_eq!(std::fs::read_dir(&sessions).unwrap().count(), 0, "no session directory left behind");
}

#[test]
fn an_unsafe_session_root_is_refused_naming_the_path() {
    use std::os::unix::fs::PermissionsExt;
    let open = scratch("root-0777");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let link = std::env::temp_dir().join(format!("ares-daemon-root-link-{}", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&open, &link).unwrap();
    for (root, why) in [(&*open, "chmod 700"), (link.as_path(), "symbolic link")] {
        let out = Command::new(ares_bin())
            .args(["start", "--head", "--port", "0", "--node-ip-address", "127.0.0.1", "--session-root"])
            .arg(root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "started under {}", root.display());
        assert!(err.contains(root.to_str().unwrap()) && err.contains(why), "{err}");
    }
    // Nothing was made under the refused root.
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_dir_all(&open);
}

#[test]
fn a_worker_program_that_never_registers_fails_the_task_typed_and_soon() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("silent-worker");
    let program = dir.join("silent-worker");
    std::fs::write(&program, "#!/bin/sh\necho 'boom: libfoo.so not found' >&2\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = Daemon::start(
        &["--num-cpus", "1", "--worker-program", program.to_str().unwrap()],
        &[("ARES_WORKER_REGISTER_TIMEOUT_MS", "3000")],
    );
    connect(&d.socket);
    match ares::get(&ares::remote(double).call(2)) {
        Err(ares::Error::Task(ares::TaskError::WorkerStartFailed { message })) => {
            assert!(message.contains("did not register") && message.contains("silent-worker"), "{message}");
            assert!(message.contains("its last output: boom: libfoo.so not found"), "{message}");
        }
        other => panic!("expected WorkerStartFailed, got {other:?}"),
    }
    ares::shutdown();
    d.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_worker_program_that_exits_at_once_fails_the_task_with_its_output() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("failing-worker");
    let program = dir.join("failing-worker");
    std::fs::write(&program, "#!/bin/sh\necho 'cannot open shared object libbar.so' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = Daemon::start(&["--num-cpus", "1", "--worker-program", program.to_str().unwrap()], &[]);
    connect(&d.socket);
    match ares::get(&ares::remote(double).call(2)) {
        Err(ares::Error::Task(ares::TaskError::WorkerStartFailed { message })) => {
            assert!(message.contains("exit status: 3") && message.contains("libbar.so"), "{message}");
        }
        other => panic!("expected WorkerStartFailed, got {other:?}"),
    }
    ares::shutdown();
    d.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn configuration_out_of_range_is_refused_naming_the_option() {
    let err = ares::init_with(ares::Config::default().num_cpus(1_000_000_000)).unwrap_err().to_string();
    assert!(err.contains("num_cpus") && err.contains("1000000000") && err.contains("4096"), "{err}");
    let out = Command::new(ares_bin())
        .args(["start", "--head", "--worker-program", "/bin/true", "--object-store-memory", "0"])
        .env("RUST_BACKTRACE", "1")
        .env_remove("ARES_LOG")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && text.contains("object-store-memory") && text.contains("1 MiB"), "{text}");
    // One line an operator acts on, no backtrace even when the shell asks for them.
    assert!(text.starts_with("ares: ") && text.trim_end().lines().count() == 1, "{text}");
    // A pool larger than the shared-memory filesystem: refused with both sizes.
    let shm = rustix::fs::statvfs("/dev/shm").unwrap();
    let too_big = (shm.f_blocks * shm.f_frsize + (1 << 30)).to_string();
    let mut cfg = ares::Config::default().num_cpus(1);
    cfg.object_store_memory = Some(too_big.parse().unwrap());
    let err = ares::init_with(cfg).unwrap_err().to_string();
    assert!(err.contains(&too_big) && err.contains("/dev/shm") && err.contains("bytes free"), "{err}");
}

/// Peak resident memory of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status");
    kb << 10
}

#[test]
fn a_thousand_connections_announcing_huge_frames_cost_the_daemon_little() {
    use std::io::{ErrorKind, Read, Write};
    use std::os::unix::net::UnixStream;
    let _serial = ares_tests::serial();
    // 1 000 sockets here and as many in the daemon: raise the soft limit if it is low.
    let (soft, hard) = {
        let l = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        (l.current.unwrap_or(u64::MAX), l.maximum.unwrap_or(u64::MAX))
    };
    if soft < 2048 {
        let want = hard.min(4096);
        let _ = rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit { current: Some(want), maximum: Some(hard) },
        );
    }
    let sessions = scratch("huge-frames");
    let d = Daemon::start(
        &["--num-cpus", "1", "--object-store-memory", "32M", "--session-root", sessions.to_str().unwrap()],
        &[],
    );
    let pid = d.child.id();
    use ares_common::frame::Message;
    let delete_kind =
        (0..).find(|k| ares_common::wire::ToRaylet::describe(*k).is_some_and(|(n, _)| n == "DeleteObjects")).unwrap();
    // 500 strangers announce 1 GiB and 60 MiB frames before saying who they are, and 500
    // registered clients announce 60 MiB: each sends 4 bytes and stalls.
    let mut conns = Vec::new();
    for i in 0..1000u32 {
        let mut s = UnixStream::connect(&d.socket).unwrap();
        if i >= 500 {
            let hello = ares_common::wire::ToRaylet::RegisterDriver {
                pid: 1,
                worker_id: ares_common::WorkerId([(i % 251) as u8; 16]),
            };
            ares_common::frame::write_msg(&mut s, &hello).unwrap();
        }
        // A bulk message type (a batch of deletes), so the type's bound is the frame's.
        let announced: u32 = if i % 2 == 0 { 1 << 30 } else { 60 << 20 };
        let mut frame = announced.to_le_bytes().to_vec();
        frame.extend_from_slice(&delete_kind.to_le_bytes());
        frame.extend_from_slice(&[1, 2, 3, 4]);
        match s.write_all(&frame) {
            Ok(()) => {}
            // A stranger may be refused (and closed) as soon as its header arrives, before
            // the rest is written: the refusal is what this test wants.
            Err(e) if i < 500 && matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {}
            Err(e) => panic!("client {i}: {e}"),
        }
        conns.push(s);
    }
    // A normal driver runs alongside meanwhile.
    connect(&d.socket);
    let refs: Vec<_> = (0..200).map(|i| ares::remote(double).call(i)).collect();
    assert_eq!(ares::get_all(&refs).unwrap().iter().sum::<i64>(), 2 * (0..200).sum::<i64>());
    // The strangers were refused at their first frame (over the hello bound).
    for s in conns.iter_mut().take(500) {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 16];
        match s.read(&mut buf) {
            Ok(0) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            other => panic!("a stranger's oversized first frame closes its connection, got {other:?}"),
        }
    }
    // The issue's bar is 200 MB; this one is tighter (about 50 MiB here), so that growing
    // buffers by a whole step per announced frame again (about 175 MiB) would fail it.
    let peak = peak_rss(pid);
    assert!(peak < 100 << 20, "the daemon peaked at {} MiB", peak >> 20);
    ares::shutdown();
    drop(conns);
    d.stop();
}

/// Threads of process `pid` now.
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).expect("Threads:")
}

/// Raises this process's soft open-file limit to at least `want` (failing the test, with
/// the limits named, if the hard limit is lower).
fn need_fds(want: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let l = getrlimit(Resource::Nofile);
    let (soft, hard) = (l.current.unwrap_or(u64::MAX), l.maximum.unwrap_or(u64::MAX));
    assert!(hard >= want, "this test needs {want} open files; the hard limit is {hard} (raise it with ulimit -Hn)");
    if soft < want {
        setrlimit(Resource::Nofile, Rlimit { current: Some(want), maximum: l.maximum }).unwrap();
    }
}

#[test]
fn ten_thousand_idle_connections_cost_the_daemon_no_thread_each() {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    let _serial = ares_tests::serial();
    const N: usize = 10_000;
    need_fds(N as u64 + 1024);
    let sessions = scratch("idle-conns");
    let d = Daemon::start(
        &["--num-cpus", "1", "--object-store-memory", "32M", "--session-root", sessions.to_str().unwrap()],
        &[],
    );
    let pid = d.child.id();
    let baseline = threads(pid);
    // 10 000 clients register, as drivers do, and then say nothing.
    let mut conns = Vec::with_capacity(N);
    for i in 0..N {
        let mut s = UnixStream::connect(&d.socket).unwrap();
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
        let hello = ares_common::wire::ToRaylet::RegisterDriver { pid: 1, worker_id: ares_common::WorkerId(id) };
        ares_common::frame::write_msg(&mut s, &hello).unwrap();
        conns.push(s);
    }
    // Once they are quiet, they hold no thread of the daemon's.
    let few = baseline + 20;
    ares_tests::wait_for("the idle connections to give their threads up", Duration::from_secs(120), || {
        threads(pid) <= few
    });
    // A normal driver runs alongside.
    connect(&d.socket);
    let refs: Vec<_> = (0..200).map(|i| ares::remote(double).call(i)).collect();
    assert_eq!(ares::get_all(&refs).unwrap().iter().sum::<i64>(), 2 * (0..200).sum::<i64>());
    // The idle connections are still served: a request on any of them is answered.
    for (i, s) in conns.iter_mut().enumerate().step_by(97) {
        let req = ares_common::wire::ToRaylet::GetStats { request_id: RequestId(i as u64) };
        ares_common::frame::write_msg(s, &req).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut r = ares_common::frame::FrameReader::new(&*s, 1 << 20);
        // Its registration was answered first.
        use ares_common::wire::FromRaylet;
        assert!(matches!(r.read::<FromRaylet>(), Ok(FromRaylet::Registered { .. })), "connection {i}");
        match r.read::<FromRaylet>() {
            Ok(FromRaylet::Stats { request_id, .. }) => assert_eq!(request_id, RequestId(i as u64)),
            other => panic!("connection {i} got {other:?}"),
        }
    }
    ares::shutdown();
    // The daemon's end closes every one of them.
    drop(conns.split_off(1));
    d.stop();
    // (after its registration answer and its notice that it is stopping)
    conns[0].set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut rest = Vec::new();
    assert!(conns[0].read_to_end(&mut rest).is_ok(), "the stopped daemon closed its connections");
}

/// A daemon on a private tmpfs (see [`daemon_on_a_small_tmpfs`]) and its directories.
struct OnTmpfs {
    daemon: Daemon,
    /// The mount point, as this process sees it.
    shm: Scratch,
    _sessions: Scratch,
    /// The mount point as the daemon sees it: its tmpfs.
    theirs: PathBuf,
}

/// A daemon whose shared-memory filesystem is a private 64 MiB tmpfs, mounted in a mount
/// namespace of its own (so nothing else on the machine sees it), with a 48 MiB pool.
fn daemon_on_a_small_tmpfs(name: &str, extra: &[&str]) -> OnTmpfs {
    let sessions = scratch(&format!("{name}-sessions"));
    let shm = scratch(&format!("{name}-mnt"));
    let mut cmd = Command::new("unshare");
    if !rustix::process::geteuid().is_root() {
        cmd.args(["--user", "--map-root-user"]);
    }
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=64m ares-test "$0" && exec "$@""#)
        .arg(&shm)
        .arg(ares_bin());
    let mut args = vec![
        "--num-cpus",
        "1",
        "--object-store-memory",
        "48M",
        "--shm-dir",
        shm.to_str().unwrap(),
        "--session-root",
        sessions.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let daemon = Daemon::start_by(cmd, &args, &[]);
    let theirs = PathBuf::from(format!("/proc/{}/root{}", daemon.child.id(), shm.display()));
    OnTmpfs { daemon, shm, _sessions: sessions, theirs }
}

/// Bytes in use on the filesystem at `dir`.
fn used_bytes(dir: &Path) -> u64 {
    let s = rustix::fs::statvfs(dir).unwrap();
    (s.f_blocks - s.f_bfree) * s.f_frsize
}

#[test]
fn a_full_shared_memory_filesystem_fails_puts_typed_not_with_a_sigbus() {
    let _serial = ares_tests::serial();
    let OnTmpfs { daemon: d, shm, theirs, _sessions } = daemon_on_a_small_tmpfs("shm-full", &[]);
    // The pool is sparse until used.
    assert!(used_bytes(&theirs) < 8 << 20, "{} bytes used at start", used_bytes(&theirs));
    connect(&d.socket);
    // Another program fills 40 of the 64 MiB after the pool (48 MiB) was made.
    let filler = theirs.join("filler");
    std::fs::write(&filler, vec![1u8; 40 << 20]).unwrap();
    // A put whose pages the filesystem cannot hold fails, typed and naming it, instead
    // of killing this process with a SIGBUS while it writes the value.
    let err = ares::put(vec![7u8; 30 << 20]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(shm.to_str().unwrap()) && msg.contains("no room"), "{msg}");
    assert!(matches!(err, ares::Error::Task(ares_common::error::TaskError::SharedMemoryFull { .. })), "{err:?}");
    // What still fits is stored.
    let small = ares::put(vec![3u8; 4 << 20]).unwrap();
    assert!(ares::get_view(&small).unwrap().iter().all(|b| *b == 3));
    // Once the space is back, the large put works and reads back intact.
    std::fs::remove_file(&filler).unwrap();
    let big = ares::put(vec![7u8; 30 << 20]).unwrap();
    assert!(ares::get_view(&big).unwrap().iter().all(|b| *b == 7));
    drop((small, big));
    ares::shutdown();
    d.stop();
}

#[test]
fn a_preallocated_pool_holds_its_memory_from_the_start() {
    let _serial = ares_tests::serial();
    let OnTmpfs { daemon: d, shm: _shm, theirs, _sessions } =
        daemon_on_a_small_tmpfs("shm-prealloc", &["--preallocate-object-store"]);
    // The whole pool is taken at start, so another program cannot have it.
    assert!(used_bytes(&theirs) >= 48 << 20, "{} bytes used at start", used_bytes(&theirs));
    let filler = theirs.join("filler");
    assert!(std::fs::write(&filler, vec![1u8; 40 << 20]).is_err(), "only 16 MiB are left for others");
    let _ = std::fs::remove_file(&filler);
    connect(&d.socket);
    let big = ares::put(vec![7u8; 40 << 20]).unwrap();
    assert!(ares::get_view(&big).unwrap().iter().all(|b| *b == 7));
    drop(big);
    ares::shutdown();
    d.stop();
}
