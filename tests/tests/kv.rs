//! The key-value store on a node on its own (the node keeps it, as a head would): put,
//! get, delete, visible to tasks in worker processes, and bounded with errors that name
//! the bound. The cluster-wide store is tested in `cluster.rs`.

use ares_tests::Cluster;

#[ares::remote]
fn read_key(key: String) -> Option<Vec<u8>> {
    ares::kv_get(&key).expect("the worker's node answers")
}

#[test]
fn put_get_delete_and_bounds() -> anyhow::Result<()> {
    let _c = Cluster::default_2cpu();
    assert_eq!(ares::kv_get("model")?, None);
    ares::kv_put("model", b"v1")?;
    ares::kv_put("model", b"v2")?;
    assert_eq!(ares::kv_get("model")?, Some(b"v2".to_vec()));
    // A task in a worker process reads the same store.
    assert_eq!(ares::get(&ares::remote(read_key).call("model".to_string()))?, Some(b"v2".to_vec()));
    assert!(ares::kv_delete("model")?);
    assert!(!ares::kv_delete("model")?);
    assert_eq!(ares::kv_get("model")?, None);

    let too_big = vec![0u8; (1 << 20) + 1];
    match ares::kv_put("big", &too_big) {
        Err(ares::Error::Kv(reason)) => assert!(reason.contains("ares::put"), "{reason}"),
        other => panic!("expected a typed refusal, got {other:?}"),
    }
    match ares::kv_put("", b"x") {
        Err(ares::Error::Kv(reason)) => assert!(reason.contains("key"), "{reason}"),
        other => panic!("expected a typed refusal, got {other:?}"),
    }
    Ok(())
}
