//! The shared-memory store: values are freed when their last reference goes, and a full
//! pool is a typed error that corrupts nothing.

use ares::{Error, TaskError};
use ares_tests::Cluster;

#[ares::remote]
fn make_bytes(n: u64, fill: u8) -> Vec<u8> {
    vec![fill; n as usize]
}

#[test]
fn dropped_values_are_freed_from_the_store() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    let base = ares::node_stats()?;
    for i in 0..200u32 {
        let r = ares::put(vec![(i % 251) as u8; 10 << 20])?;
        let v = ares::get_view(&r)?;
        assert_eq!(v[(10 << 20) - 1], (i % 251) as u8);
    }
    // Task results in the store are freed the same way.
    for i in 0..20u8 {
        let r = ares::remote(make_bytes).call(5 << 20, i);
        assert_eq!(ares::get_view(&r)?[0], i);
    }
    let after = ares::node_stats()?;
    assert_eq!(after.store_used, base.store_used, "store usage must return to its baseline");
    assert_eq!(after.store_objects, base.store_objects);
    Ok(())
}

#[test]
fn full_pool_with_nothing_spillable_fails_within_the_bound_and_corrupts_nothing() -> anyhow::Result<()> {
    let mut cfg = ares::Config::default().num_cpus(2).object_store_memory(64 << 20);
    cfg.object_create_timeout = std::time::Duration::from_secs(2);
    let _c = Cluster::start(cfg);
    let held: Vec<_> = (0..3u8).map(|i| ares::put(vec![i + 1; 20 << 20])).collect::<Result<_, _>>()?;
    // Readers pin all three, so none can be spilled to make room.
    let views: Vec<_> = held.iter().map(ares::get_view).collect::<Result<_, _>>()?;
    match ares::put(vec![9u8; 20 << 20]) {
        Err(Error::Task(TaskError::ObjectStoreFull { requested, capacity, used })) => {
            assert!(requested >= 20 << 20);
            assert_eq!(capacity, 64 << 20);
            assert!(used >= 60 << 20);
        }
        other => panic!("expected ObjectStoreFull, got {other:?}"),
    }
    let too_big = ares::remote(make_bytes).call(100 << 20, 1);
    let msg = ares::get(&too_big).unwrap_err().to_string();
    assert!(msg.contains("larger than the whole object store") && msg.contains("object_store_memory"), "{msg}");
    for (i, v) in views.iter().enumerate() {
        assert!(v.iter().all(|b| *b == i as u8 + 1), "object {i} was corrupted");
    }
    drop(views);
    // Unpinned, they can be spilled: the same put now succeeds, and all data survives.
    let r = ares::put(vec![5u8; 20 << 20])?;
    assert_eq!(ares::get_view(&r)?[123], 5);
    for (i, h) in held.iter().enumerate() {
        assert!(ares::get_view(h)?.iter().all(|b| *b == i as u8 + 1), "object {i} was corrupted");
    }
    Ok(())
}
