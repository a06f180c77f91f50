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
fn full_pool_is_a_typed_error_and_keeps_existing_objects_intact() -> anyhow::Result<()> {
    let _c = Cluster::start(ares::Config::default().num_cpus(2).object_store_memory(64 << 20));
    let held: Vec<_> = (0..3u8).map(|i| ares::put(vec![i + 1; 20 << 20])).collect::<Result<_, _>>()?;
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
    assert!(msg.contains("object store full") && msg.contains("object_store_memory"), "{msg}");
    for (i, r) in held.iter().enumerate() {
        let v = ares::get_view(r)?;
        assert!(v.iter().all(|b| *b == i as u8 + 1), "object {i} was corrupted");
    }
    drop(held);
    // Space is back once the holders are gone.
    let r = ares::put(vec![5u8; 40 << 20])?;
    assert_eq!(ares::get_view(&r)?[123], 5);
    Ok(())
}
