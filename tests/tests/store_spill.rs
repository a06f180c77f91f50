//! Spilling and restoring with a real store, real processes and real files: more data
//! than the pool holds, read back byte-identical; pins and creations of dead processes
//! reclaimed; spill failures reported clearly.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ares::{Error, TaskError};
use ares_tests::{Cluster, wait_for};

const MIB: usize = 1 << 20;

/// A scratch spill root, removed when dropped.
struct SpillRoot(PathBuf);

impl std::ops::Deref for SpillRoot {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for SpillRoot {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for SpillRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spill_root(name: &str) -> SpillRoot {
    let d = std::env::temp_dir().join(format!("ares-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    SpillRoot(d)
}

fn files_under(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten().map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 }).sum()
}

fn config(pool: usize, spill: &Path) -> ares::Config {
    let mut cfg = ares::Config::default().num_cpus(2).object_store_memory(pool as u64).spill_dir(spill);
    // Small values go to the store too, so small objects are spilled (and fused) as well.
    cfg.max_inline_bytes = 512;
    cfg.min_spill_size = 8 << 20;
    cfg
}

/// Deterministic contents that differ per object and per position.
fn contents(i: usize, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for chunk in v.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    v
}

#[ares::remote]
fn hold_then_block(data: Vec<u8>, marker: String) -> u64 {
    std::fs::write(&marker, std::process::id().to_string()).unwrap();
    std::thread::sleep(Duration::from_secs(120));
    data.len() as u64
}

#[test]
fn three_times_the_pool_reads_back_identical_and_frees_everything() -> anyhow::Result<()> {
    let spill = spill_root("3x");
    let _c = Cluster::start(config(256 * MIB, &spill));
    let sizes = [1 << 10, 64 << 10, MIB, 8 * MIB, 64 * MIB, 3 << 10, 300 << 10, 16 * MIB];
    let (mut refs, mut sums, mut total) = (Vec::new(), Vec::new(), 0usize);
    let mut i = 0;
    while total < 3 * 256 * MIB {
        let size = sizes[i % sizes.len()];
        let data = contents(i, size);
        sums.push(blake3::hash(&data));
        refs.push(ares::put(data)?);
        total += size;
        i += 1;
    }
    let s = ares::node_stats()?;
    assert!(s.store_spilled_objects > 0 && s.store_spill_files > 0, "{s:?}");
    // The owner was told where its spilled objects went: files under the spill dir.
    let urls: Vec<String> = refs.iter().filter_map(ares::spill_location).collect();
    assert!(!urls.is_empty());
    let prefix = format!("file://{}/ares-spill-", spill.display());
    assert!(urls.iter().all(|u| u.starts_with(&prefix) && u.contains("offset=")), "{:?}", &urls[..1]);
    assert!(s.store_used <= s.store_capacity);
    for (r, sum) in refs.iter().zip(&sums) {
        let v = ares::get_view(r)?;
        assert_eq!(blake3::hash(&v), *sum, "object {:?} differs after spill and restore", r.id());
    }
    let s = ares::node_stats()?;
    assert!(s.store_restored_objects_total > 0, "{s:?}");
    drop(refs);
    // Restores above may have started spill jobs; an object in a job is deleted once the
    // job ends, so the store empties a moment after the drop, not at it.
    let mut s = ares::node_stats()?;
    wait_for("the store and the spill directory to empty", Duration::from_secs(30), || {
        s = ares::node_stats().unwrap();
        (s.store_used, s.store_objects, s.store_spill_files, s.store_spilled_bytes) == (0, 0, 0, 0)
            && files_under(&spill) == 0
    });
    assert_eq!(files_under(&spill), 0, "spill files left behind: {s:?}");
    Ok(())
}

#[test]
fn readers_run_while_spilling_is_under_way() -> anyhow::Result<()> {
    let spill = spill_root("readers");
    let _c = Cluster::start(config(128 * MIB, &spill));
    let first: Vec<_> = (0..24).map(|i| contents(i, 4 * MIB)).collect();
    let sums: Vec<_> = first.iter().map(|d| blake3::hash(d)).collect();
    let refs: Vec<_> = first.into_iter().map(ares::put).collect::<Result<_, _>>()?;
    std::thread::scope(|s| -> anyhow::Result<()> {
        let readers: Vec<_> = (0..2)
            .map(|t| {
                let (refs, sums) = (&refs, &sums);
                s.spawn(move || -> anyhow::Result<()> {
                    for round in 0..3 {
                        for k in 0..refs.len() {
                            let j = (k * 7 + t + round) % refs.len();
                            assert_eq!(blake3::hash(&ares::get_view(&refs[j])?), sums[j]);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        // Meanwhile, more data than the pool forces spilling.
        let more: Vec<_> = (100..140).map(|i| ares::put(contents(i, 4 * MIB))).collect::<Result<_, _>>()?;
        for r in readers {
            r.join().expect("reader panicked")?;
        }
        assert!(ares::node_stats()?.store_spilled_bytes_total > 0);
        drop(more);
        Ok(())
    })?;
    Ok(())
}

#[test]
fn a_killed_worker_releases_its_pins() -> anyhow::Result<()> {
    let spill = spill_root("pin-kill");
    let _c = Cluster::start(config(256 * MIB, &spill));
    let marker = spill.join("pid").to_string_lossy().into_owned();
    let big = ares::put(vec![3u8; 8 * MIB])?;
    let r = ares::remote(hold_then_block).options(ares::TaskOptions::new().max_retries(0)).call(&big, marker.clone());
    wait_for("the task to start", Duration::from_secs(60), || Path::new(&marker).exists());
    assert_eq!(ares::node_stats()?.store_pinned_objects, 1, "the running task pins its argument");
    let pid: i32 = std::fs::read_to_string(&marker)?.trim().parse()?;
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid).unwrap(), rustix::process::Signal::KILL)?;
    assert!(matches!(ares::get(&r), Err(Error::Task(TaskError::WorkerDied { .. }))));
    wait_for("the dead worker's pin to be released", Duration::from_secs(30), || {
        ares::node_stats().unwrap().store_pinned_objects == 0
    });
    Ok(())
}

#[test]
fn a_process_killed_between_create_and_seal_has_its_space_reclaimed() -> anyhow::Result<()> {
    let spill = spill_root("create-kill");
    let _c = Cluster::start(config(256 * MIB, &spill));
    let base = ares::node_stats()?.store_used;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ares-test-driver"))
        .args(["raw-create", &ares::raylet_address()?])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line)?;
    assert_eq!(line.trim(), "created");
    assert!(ares::node_stats()?.store_used >= base + (10 << 20) as u64);
    // A second client makes the same object (a retried task makes its result again under
    // the same ID) while the first still holds it unsealed: it waits for the first rather
    // than failing, and gets the object once the first is killed.
    let (second, created) = raw_create_waiting(&ares::raylet_address()?)?;
    child.kill()?;
    child.wait()?;
    let reply = created.recv_timeout(Duration::from_secs(30))?;
    assert!(reply.starts_with("ObjectCreated"), "the second create failed: {reply}");
    drop(second);
    wait_for("the unsealed objects to be reclaimed", Duration::from_secs(30), || {
        ares::node_stats().unwrap().store_used == base
    });
    Ok(())
}

#[test]
fn a_create_from_a_process_that_is_gone_never_takes_the_copy_being_written() -> anyhow::Result<()> {
    use ares_common::frame::write_msg;
    use ares_common::wire::{FromRaylet, ToRaylet};
    let spill = spill_root("ghost-create");
    let _c = Cluster::start(config(256 * MIB, &spill));
    let socket = ares::raylet_address()?;
    // A retry writes the object; the killed attempt's create of the same ID is read by
    // the raylet meanwhile or after the kill (each connection has its own reader).
    let (retry, mut retry_r) = ares_tests::raw_create(&socket, 7)?;
    anyhow::ensure!(matches!(retry_r.read::<FromRaylet>()?, FromRaylet::ObjectCreated { .. }));
    let (dead, _answer) = raw_create_waiting(&socket)?;
    dead.shutdown(std::net::Shutdown::Both)?;
    let object_id = ares_common::ObjectId::for_put(ares_common::TaskId::root(Default::default()), 0);
    write_msg(&mut &retry, &ToRaylet::SealObject { request_id: ares_common::RequestId(2), object_id })?;
    match retry_r.read::<FromRaylet>()? {
        FromRaylet::Sealed { error: None, .. } => {}
        other => anyhow::bail!("the seal failed: {other:?}"),
    }
    // The sealed copy is there to read: the dead process's create neither doomed it
    // (its seal would have freed it) nor replaced it.
    write_msg(&mut &retry, &ToRaylet::PinObject { request_id: ares_common::RequestId(3), object_id })?;
    match retry_r.read::<FromRaylet>()? {
        FromRaylet::Pinned { size, .. } => assert_eq!(size, 10 << 20),
        other => anyhow::bail!("the sealed copy is gone: {other:?}"),
    }
    Ok(())
}

/// Asks the raylet at `socket` (as a raw client, on a thread) to create the object
/// `raw-create` makes; the answer, as its debug text, arrives on the channel. The
/// connection stays open until the stream returned is dropped.
fn raw_create_waiting(
    socket: &str,
) -> anyhow::Result<(std::os::unix::net::UnixStream, std::sync::mpsc::Receiver<String>)> {
    let (s, mut r) = ares_tests::raw_create(socket, 8)?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(match r.read::<ares_common::wire::FromRaylet>() {
            Ok(m) => format!("{m:?}"),
            Err(e) => format!("error: {e}"),
        });
    });
    Ok((s, rx))
}

#[test]
fn an_unwritable_spill_dir_is_reported_and_data_stays_intact() -> anyhow::Result<()> {
    let spill = spill_root("unwritable");
    let mut cfg = config(64 * MIB, &spill);
    // Long: a put that cannot be spilled for must fail at once, not wait this out.
    cfg.object_create_timeout = Duration::from_secs(30);
    let _c = Cluster::start(cfg);
    // Replace the session's spill directory by a plain file: every spill now fails
    // (this works as root too, unlike removing write permission).
    let session_dir = std::fs::read_dir(&spill)?.flatten().map(|e| e.path()).next().expect("spill dir made at start");
    std::fs::remove_dir_all(&session_dir)?;
    std::fs::write(&session_dir, b"not a directory")?;
    let data: Vec<_> = (0..3).map(|i| contents(i, 20 * MIB)).collect();
    let refs: Vec<_> = data.iter().map(ares::put_ref).collect::<Result<_, _>>()?;
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let err = ares::put(contents(9, 20 * MIB)).unwrap_err().to_string();
        assert!(err.contains("spilling failed") && err.contains(&*session_dir.to_string_lossy()), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "failed only after {:?}", started.elapsed());
    }
    assert!(ares::node_stats()?.store_spill_error.is_some());
    for (r, d) in refs.iter().zip(&data) {
        assert!(ares::get_view(r)?[..] == d[..], "objects in memory stay intact");
    }
    // The directory is back: spilling resumes after its pause, and puts fit again.
    std::fs::remove_file(&session_dir)?;
    std::fs::create_dir(&session_dir)?;
    let mut extra = Vec::new();
    ares_tests::wait_for("a put to fit once spilling works again", Duration::from_secs(60), || {
        match ares::put(contents(9, 20 * MIB)) {
            Ok(r) => {
                extra.push(r);
                true
            }
            Err(_) => false,
        }
    });
    assert!(ares::node_stats()?.store_spill_error.is_none());
    for (r, d) in refs.iter().zip(&data) {
        assert!(ares::get_view(r)?[..] == d[..], "spilled and read back intact");
    }
    drop(extra);
    Ok(())
}
