//! Malformed and oversized frames close only the offending connection; the raylet keeps
//! serving everyone else.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use ares_tests::Cluster;

#[ares::remote]
fn inc(x: i64) -> i64 {
    x + 1
}

fn assert_closed(mut s: UnixStream) {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).expect("the raylet closes the connection (EOF), it does not hang");
    assert_eq!(n, 0, "expected EOF, got {n} bytes");
}

/// A frame header: `len` payload bytes of message type `kind`.
fn header(len: u32, kind: u16) -> Vec<u8> {
    [len.to_le_bytes().as_slice(), kind.to_le_bytes().as_slice()].concat()
}

#[test]
fn malformed_frame_closes_the_connection_and_the_raylet_keeps_serving() {
    let _c = Cluster::default_2cpu();
    let addr = ares::raylet_address().unwrap();
    let mut s = UnixStream::connect(&addr).unwrap();
    let junk = [0xA5u8; 48];
    s.write_all(&header(junk.len() as u32, 0)).unwrap();
    s.write_all(&junk).unwrap();
    assert_closed(s);
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
}

#[test]
fn oversized_frame_closes_the_connection_and_the_raylet_keeps_serving() {
    let _c = Cluster::default_2cpu();
    let addr = ares::raylet_address().unwrap();
    let mut s = UnixStream::connect(&addr).unwrap();
    s.write_all(&header(u32::MAX, 0)).unwrap();
    assert_closed(s);
    // A message type no one sends is refused as such.
    let mut s = UnixStream::connect(&addr).unwrap();
    s.write_all(&header(16, 999)).unwrap();
    assert_closed(s);
    // A truncated frame followed by a hang-up is also survived.
    let mut s = UnixStream::connect(&addr).unwrap();
    s.write_all(&header(100, 0)).unwrap();
    s.write_all(&[1, 2, 3]).unwrap();
    drop(s);
    let refs: Vec<_> = (0..100).map(|i| ares::remote(inc).call(i)).collect();
    assert_eq!(ares::get_all(&refs).unwrap().iter().sum::<i64>(), (1..=100).sum::<i64>());
}

#[test]
fn malformed_frame_to_a_worker_closes_only_that_connection() {
    let _c = Cluster::default_2cpu();
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
    ares_tests::wait_for("both workers to register", std::time::Duration::from_secs(30), || {
        ares::node_stats().unwrap().workers.len() == 2
    });
    let before: Vec<u32> = ares::node_stats().unwrap().workers.iter().map(|w| w.pid).collect();
    let addr = ares::raylet_address().unwrap();
    let dir = std::path::Path::new(&addr).parent().unwrap();
    let workers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("worker-"))
        .collect();
    assert!(!workers.is_empty());
    for w in &workers {
        let mut s = UnixStream::connect(w).unwrap();
        s.write_all(&header(16, 0)).unwrap();
        s.write_all(&[0xFF; 16]).unwrap();
        assert_closed(s);
        let mut s = UnixStream::connect(w).unwrap();
        s.write_all(&header(u32::MAX, 0)).unwrap();
        assert_closed(s);
    }
    // Every worker is still alive and serving.
    let refs: Vec<_> = (0..200).map(|i| ares::remote(inc).call(i)).collect();
    assert_eq!(ares::get_all(&refs).unwrap().iter().sum::<i64>(), (1..=200).sum::<i64>());
    let after: Vec<u32> = ares::node_stats().unwrap().workers.iter().map(|w| w.pid).collect();
    assert!(before.iter().all(|p| after.contains(p)), "workers {before:?} must survive, now {after:?}");
}

#[test]
fn session_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let _c = Cluster::default_2cpu();
    let addr = ares::raylet_address().unwrap();
    let dir = std::path::Path::new(&addr).parent().unwrap();
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

/// Registers as a driver on a new connection: whether the raylet answered (`false`: it
/// closed the connection instead).
fn register(addr: &str, n: u8) -> (UnixStream, bool) {
    use ares_common::frame::{FrameReader, write_msg};
    use ares_common::wire::{FromRaylet, ToRaylet};
    let s = UnixStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let hello = ToRaylet::RegisterDriver { pid: std::process::id(), worker_id: ares_common::WorkerId([n; 16]) };
    let sent = write_msg(&mut &s, &hello).is_ok();
    let answered =
        sent && matches!(FrameReader::new(&s, 1 << 20).read::<FromRaylet>(), Ok(FromRaylet::Registered { .. }));
    (s, answered)
}

#[test]
fn a_connection_must_register_first_and_soon() {
    let _c = Cluster::default_2cpu();
    let addr = ares::raylet_address().unwrap();
    // Silent: closed once the identify timeout (5 s) passes.
    assert_closed(UnixStream::connect(&addr).unwrap());
    // A request before registering: closed at once.
    let s = UnixStream::connect(&addr).unwrap();
    ares_common::frame::write_msg(
        &mut &s,
        &ares_common::wire::ToRaylet::GetStats { request_id: ares_common::RequestId(1) },
    )
    .unwrap();
    assert_closed(s);
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
}

#[test]
fn a_hello_sent_a_byte_at_a_time_is_cut_off_at_the_identify_timeout() {
    let mut cfg = ares::Config::default().num_cpus(2);
    // Long enough for the node's own workers to register under load.
    cfg.identify_timeout = Duration::from_secs(2);
    let _c = Cluster::start(cfg);
    let addr = ares::raylet_address().unwrap();
    let mut hello = Vec::new();
    let msg = ares_common::wire::ToRaylet::RegisterDriver { pid: 1, worker_id: ares_common::WorkerId([3; 16]) };
    ares_common::frame::write_msg(&mut hello, &msg).unwrap();
    // One byte every 200 ms: each read returns well within the timeout, but the whole
    // hello takes twice as long. The raylet closes the connection on its deadline.
    assert!(hello.len() >= 20, "{} bytes", hello.len());
    let mut s = UnixStream::connect(&addr).unwrap();
    let sent = hello.iter().position(|b| {
        std::thread::sleep(Duration::from_millis(200));
        s.write_all(&[*b]).is_err()
    });
    assert!(sent.is_some(), "the raylet took a {}-byte hello sent a byte at a time", hello.len());
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
}

#[test]
fn connections_past_the_cap_are_refused_and_the_raylet_keeps_serving() {
    let mut cfg = ares::Config::default().num_cpus(2);
    cfg.max_connections = 8;
    let _c = Cluster::start(cfg);
    assert_eq!(ares::get(&ares::remote(inc).call(1)).unwrap(), 2);
    ares_tests::wait_for("both workers to register", Duration::from_secs(30), || {
        ares::node_stats().unwrap().workers.len() == 2
    });
    // The driver and two workers hold 3 of the 8; of ten more, five are served.
    let conns: Vec<(UnixStream, bool)> = (0..10).map(|n| register(&addr_of(), n + 100)).collect();
    assert_eq!(conns.iter().filter(|(_, ok)| *ok).count(), 5);
    assert_eq!(ares::get(&ares::remote(inc).call(2)).unwrap(), 3);
    drop(conns);
    ares_tests::wait_for("a connection to be served again", Duration::from_secs(30), || register(&addr_of(), 99).1);
}

fn addr_of() -> String {
    ares::raylet_address().unwrap()
}
