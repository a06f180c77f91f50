//! The README example: tasks, futures as arguments, and a zero-copy read of a large put.

#[ares::remote]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() -> anyhow::Result<()> {
    ares::init()?; // embedded one-node cluster; in a worker process this never returns to main
    let x = ares::remote(add).call(1, 2); // ObjectRef<i64>, owned by this process
    let y = ares::remote(add).call(x.clone(), 10); // futures as arguments, resolved before the task runs
    assert_eq!(ares::get(&y)?, 13);
    let big = ares::put(vec![7u8; 64 << 20])?; // large value: lives in the node's shared-memory store
    let view = ares::get_view(&big)?; // read in place, no copy of the 64 MiB
    assert_eq!(view.len(), 64 << 20);
    println!("add(add(1, 2), 10) = {}; viewed {} MiB in place", ares::get(&y)?, view.len() >> 20);
    drop(view);
    ares::shutdown();
    Ok(())
}
