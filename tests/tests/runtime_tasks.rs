//! Tasks, futures as arguments, puts and gets on a real embedded cluster.

use std::collections::HashSet;
use std::time::Duration;

use ares_tests::Cluster;

#[ares::remote]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[ares::remote]
fn inc(x: i64) -> i64 {
    x + 1
}

#[ares::remote]
fn pid() -> u32 {
    std::process::id()
}

#[ares::remote]
fn sum_all(xs: Vec<i64>) -> i64 {
    xs.iter().sum()
}

#[ares::remote]
fn six(a: i64, b: i64, c: i64, d: String, e: Vec<u8>, f: bool) -> String {
    format!("{}-{d}-{}-{f}", a + b + c, e.len())
}

#[ares::remote]
fn make_bytes(n: u64, fill: u8) -> Vec<u8> {
    vec![fill; n as usize]
}

#[ares::remote]
fn checksum(v: Vec<u8>) -> u64 {
    v.iter().map(|b| *b as u64).sum()
}

#[ares::remote]
fn checksum_in_place(v: ares::InPlace<'_, Vec<u8>>) -> u64 {
    v.iter().map(|b| *b as u64).sum()
}

#[ares::remote]
fn lengths_in_place(xs: ares::InPlaceList<'_, Vec<u8>>, tag: String, first: ares::InPlace<'_, Vec<u8>>) -> String {
    let lens: Vec<String> =
        xs.iter().map(|x| format!("{}:{}", x.len(), x.iter().map(|b| *b as u64).sum::<u64>())).collect();
    format!("{tag} [{}] {}", lens.join(" "), first.len())
}

#[ares::remote]
fn wait_for_file(path: String) -> i64 {
    for _ in 0..6000 {
        if std::path::Path::new(&path).exists() {
            return 1;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    0
}

#[ares::remote]
fn echo(v: Vec<u8>) -> Vec<u8> {
    v
}

#[ares::remote]
fn total_len(a: Vec<Vec<u8>>, b: Vec<Vec<u8>>) -> u64 {
    a.iter().chain(b.iter()).map(|v| v.len() as u64).sum()
}

#[test]
fn pipelined_values_near_the_inline_limit_do_not_stall() -> anyhow::Result<()> {
    // Hundreds of KiB in flight each way per worker, more than a socket buffer holds:
    // neither side may block writing while the other waits to write back.
    let _c = Cluster::default_2cpu();
    let refs: Vec<_> = (0..2000u32).map(|i| ares::remote(echo).call(vec![(i % 251) as u8; 90 << 10])).collect();
    for (i, v) in ares::get_all(&refs)?.into_iter().enumerate() {
        assert_eq!(v.len(), 90 << 10);
        assert_eq!(v[0], (i % 251) as u8);
    }
    Ok(())
}

#[test]
fn a_push_over_the_frame_limit_is_a_typed_error_not_a_dead_worker() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let a = ares::put(vec![1u8; 40 << 20])?;
    let b = ares::put(vec![2u8; 40 << 20])?;
    let r = ares::remote(total_len).call(vec![a.clone()], vec![b.clone()]);
    match ares::get(&r) {
        Err(ares::Error::Task(ares::TaskError::Decode { reason, .. })) => {
            assert!(reason.contains("frame limit"), "{reason}")
        }
        other => panic!("expected a Decode error, got {other:?}"),
    }
    // The same lists one at a time fit, and the workers are all still there.
    let r = ares::remote(total_len).call(vec![a], Vec::<ares::ObjectRef<Vec<u8>>>::new());
    assert_eq!(ares::get(&r)?, 40 << 20);
    Ok(())
}

#[test]
fn readme_example() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let x = ares::remote(add).call(1, 2);
    let y = ares::remote(add).call(x.clone(), 10);
    assert_eq!(ares::get(&y)?, 13);
    assert_eq!(ares::get(&x)?, 3);
    let big = ares::put(vec![7u8; 64 << 20])?;
    let view = ares::get_view(&big)?;
    assert_eq!(view.len(), 64 << 20);
    assert!(view.iter().all(|b| *b == 7));
    // Zero copy: the view points into the shared-memory pool mapping, not the heap.
    let addr = view.as_ptr() as usize;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let in_pool = maps.lines().any(|l| {
        let Some((range, rest)) = l.split_once(' ') else { return false };
        let Some((lo, hi)) = range.split_once('-') else { return false };
        let (lo, hi) = (usize::from_str_radix(lo, 16).unwrap(), usize::from_str_radix(hi, 16).unwrap());
        lo <= addr && addr < hi && rest.contains("/dev/shm/ares-")
    });
    assert!(in_pool, "view at {addr:#x} is not inside the /dev/shm pool mapping");
    Ok(())
}

#[test]
fn ten_thousand_tasks() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let refs: Vec<_> = (0..10_000i64).map(|i| ares::remote(add).call(i, 1)).collect();
    let got = ares::get_all(&refs)?;
    assert_eq!(got, (1..=10_000i64).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn chain_of_a_thousand_futures() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let mut r = ares::remote(inc).call(0);
    for _ in 1..1000 {
        r = ares::remote(inc).call(r);
    }
    assert_eq!(ares::get(&r)?, 1000);
    Ok(())
}

#[test]
fn futures_as_arguments_mixed_with_values_and_lists() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let a = ares::put(5i64)?;
    let b = ares::remote(add).call(&a, 2);
    let c = ares::remote(add).call(b.clone(), a.clone());
    assert_eq!(ares::get(&c)?, 12);
    let parts: Vec<_> = (0..100i64).map(|i| ares::remote(inc).call(i)).collect();
    assert_eq!(ares::get(&ares::remote(sum_all).call(parts))?, (1..=100).sum::<i64>());
    let s = ares::remote(six).call(1, &a, 3, "x".to_string(), vec![1u8; 4], true);
    assert_eq!(ares::get(&s)?, "9-x-4-true");
    Ok(())
}

#[test]
fn large_values_go_through_shared_memory_both_ways() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    // A large result is sealed in the pool by the worker; a large by-value argument is
    // put there by the owner.
    let big = ares::remote(make_bytes).call(3 << 20, 3);
    assert_eq!(ares::get(&ares::remote(checksum).call(&big))?, 3 * (3 << 20));
    assert_eq!(ares::get_view(&big)?.len(), 3 << 20);
    assert_eq!(ares::get(&ares::remote(checksum).call(vec![2u8; 1 << 20]))?, 2 << 20);
    let stats = ares::node_stats()?;
    assert!(stats.store_objects >= 1, "{stats:?}");
    Ok(())
}

#[test]
fn arguments_read_in_place_match_decoded_ones_from_the_pool_and_inline() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    // A large value lies in the pool (read where it is); a small one travels inline.
    let big = ares::remote(make_bytes).call(3 << 20, 3);
    let small = ares::put(vec![7u8; 10])?;
    assert_eq!(ares::get(&ares::remote(checksum_in_place).call(&big))?, 3 * (3 << 20));
    assert_eq!(ares::get(&ares::remote(checksum_in_place).call(&small))?, 70);
    assert_eq!(ares::get(&ares::remote(checksum_in_place).call(vec![2u8; 5]))?, 10);
    // A list takes several argument values; the parameters after it still get theirs.
    let list = vec![big.clone(), small.clone(), ares::remote(make_bytes).call(1 << 20, 1)];
    let got = ares::get(&ares::remote(lengths_in_place).call(list, "t".to_string(), &small))?;
    assert_eq!(got, format!("t [{}:{} 10:70 {}:{}] 10", 3 << 20, 3 * (3 << 20), 1 << 20, 1 << 20));
    let empty = ares::get(&ares::remote(lengths_in_place).call(Vec::new(), "e".to_string(), &big))?;
    assert_eq!(empty, format!("e [] {}", 3 << 20));
    Ok(())
}

#[test]
fn workers_are_reused_one_per_cpu() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let refs: Vec<_> = (0..200).map(|_| ares::remote(pid).call()).collect();
    let pids: HashSet<u32> = ares::get_all(&refs)?.into_iter().collect();
    assert!(!pids.is_empty() && pids.len() <= 2, "{pids:?}");
    assert!(!pids.contains(&std::process::id()), "tasks must run in worker processes");
    // The pool is prestarted to one worker per CPU and never grows past it.
    ares_tests::wait_for("both workers to register", Duration::from_secs(30), || {
        ares::node_stats().unwrap().workers.len() == 2
    });
    let refs: Vec<_> = (0..200).map(|_| ares::remote(pid).call()).collect();
    ares::get_all(&refs)?;
    assert_eq!(ares::node_stats()?.workers.len(), 2);
    Ok(())
}

#[test]
fn wait_splits_ready_and_pending() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let dir = std::env::temp_dir().join(format!("ares-wait-{}", std::process::id()));
    let marker = dir.to_string_lossy().into_owned();
    let blocked = ares::remote(wait_for_file).call(marker.clone());
    let done = ares::remote(add).call(1, 1);
    ares::get(&done)?;
    let refs = vec![done.clone(), blocked.clone()];
    // The blocked task cannot finish before the marker exists, whatever the timing.
    let (ready, pending) = ares::wait(&refs, 2, Some(Duration::from_millis(50)));
    assert_eq!((ready.len(), pending.len()), (1, 1));
    assert_eq!(pending[0].id(), blocked.id());
    std::fs::write(&marker, b"go")?;
    let (ready, pending) = ares::wait(&refs, 2, None);
    assert_eq!((ready.len(), pending.len()), (2, 0));
    assert_eq!(ares::get(&blocked)?, 1);
    std::fs::remove_file(&marker)?;
    Ok(())
}

#[test]
fn options_with_fractional_and_custom_resources() -> anyhow::Result<()> {
    let _c = Cluster::start(ares::Config::default().num_cpus(2).resource("accel", 1.0));
    let opts = ares::TaskOptions::new().num_cpus(0.5).resource("accel", 1.0).max_retries(0);
    let refs: Vec<_> = (0..20).map(|i| ares::remote(add).options(opts.clone()).call(i, i)).collect();
    assert_eq!(ares::get_all(&refs)?.iter().sum::<i64>(), 2 * (0..20).sum::<i64>());
    Ok(())
}

/// Fibonacci by nested tasks: every task but the leaves waits in `get` for two children.
#[ares::remote]
fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = (ares::remote(fib).call(n - 1), ares::remote(fib).call(n - 2));
    ares::get(&a).unwrap() + ares::get(&b).unwrap()
}

/// A chain of nested tasks, each waiting for the next with `wait` then `get`.
#[ares::remote]
fn chain(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let next = ares::remote(chain).call(n - 1);
    ares::wait(std::slice::from_ref(&next), 1, None);
    ares::get(&next).unwrap() + 1
}

#[test]
fn nested_tasks_deeper_than_the_cpus_complete() {
    // Two CPUs; the chain holds 8 tasks blocked at once and the tree up to 7 levels. A
    // task blocked in `get` or `wait` lends its CPU (the pool starts more workers), so
    // neither deadlocks.
    let _c = Cluster::default_2cpu();
    assert_eq!(ares::get(&ares::remote(chain).call(8)).unwrap(), 8);
    assert_eq!(ares::get(&ares::remote(fib).call(8)).unwrap(), 21);
    // Every lent CPU comes back once the idle leases are returned.
    ares_tests::wait_for("every CPU to be free", Duration::from_secs(10), || {
        let stats = ares::node_stats().unwrap();
        stats.available.get_units("CPU") == stats.total.get_units("CPU")
    });
}
