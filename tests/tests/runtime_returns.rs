//! Tasks of several return values (`num_returns`) on a real embedded cluster: each
//! element of the function's `Vec` result is an object of its own.

use std::time::Duration;

use ares_tests::{Cluster, wait_for};

#[ares::remote]
fn min_max_sum(v: Vec<i64>) -> Vec<i64> {
    vec![*v.iter().min().unwrap(), *v.iter().max().unwrap(), v.iter().sum()]
}

#[ares::remote]
fn blocks(n: u32, size: u64) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![i as u8; size as usize]).collect()
}

#[ares::remote]
fn count_up(n: u32) -> Vec<u32> {
    (0..n).collect()
}

#[ares::remote]
fn first_byte(v: Vec<u8>) -> u8 {
    v[0]
}

#[ares::remote]
fn answer() -> i64 {
    42
}

#[test]
fn each_return_value_is_an_object_of_its_own() {
    let _c = Cluster::default_2cpu();
    let r = ares::remote(min_max_sum).num_returns(3).call(vec![4, -2, 9]);
    assert_eq!(r.len(), 3);
    assert_eq!(ares::get_all(&r).unwrap(), vec![-2, 9, 11]);
    // One of them passed on as an argument, the others dropped first.
    let [lo, hi, sum]: [ares::ObjectRef<i64>; 3] = r.try_into().ok().unwrap();
    drop(lo);
    drop(sum);
    let again = ares::remote(min_max_sum).num_returns(3).call(vec![1, 2]);
    assert_eq!(ares::get(&again[2]).unwrap(), 3);
    assert_eq!(ares::get(&hi).unwrap(), 9);
}

#[test]
fn large_return_values_are_stored_and_freed_one_by_one() {
    let _c = Cluster::default_2cpu();
    let base = ares::node_stats().unwrap().store_objects;
    let r = ares::remote(blocks).num_returns(3).call(3, 1 << 20);
    for (i, b) in r.iter().enumerate() {
        let view = ares::get_view(b).unwrap();
        assert!(view.len() == 1 << 20 && view.iter().all(|x| *x == i as u8), "return value {i}");
    }
    assert_eq!(ares::node_stats().unwrap().store_objects, base + 3, "three objects in the store");
    // A task reads one straight from the store.
    assert_eq!(ares::get(&ares::remote(first_byte).call(&r[2])).unwrap(), 2);
    let mut r = r;
    r.truncate(1);
    wait_for("the dropped return values to be freed", Duration::from_secs(10), || {
        ares::node_stats().unwrap().store_objects == base + 1
    });
    drop(r);
    wait_for("the last one too", Duration::from_secs(10), || ares::node_stats().unwrap().store_objects == base);
}

#[test]
fn a_result_of_the_wrong_length_fails_every_return_value_naming_both() {
    let _c = Cluster::default_2cpu();
    let r = ares::remote(count_up).num_returns(4).call(3);
    for x in &r {
        let e = ares::get(x).unwrap_err().to_string();
        assert!(e.contains("returned 3 values; num_returns is 4"), "{e}");
    }
    // A task that waits on one of them fails too.
    let dependent = ares::remote(first_byte).call(ares::remote(blocks).num_returns(2).call(1, 8).remove(0));
    assert!(ares::get(&dependent).unwrap_err().to_string().contains("returned 1 values; num_returns is 2"));
    // One return value is the default, and still works for a Vec.
    assert_eq!(ares::get(&ares::remote(count_up).call(3)).unwrap(), vec![0, 1, 2]);
    assert_eq!(ares::get(&ares::remote(answer).call()).unwrap(), 42);
}

#[test]
fn three_thousand_return_values() {
    let _c = Cluster::default_2cpu();
    let r = ares::remote(count_up).num_returns(3000).call(3000);
    let got = ares::get_all(&r).unwrap();
    assert!(got.iter().enumerate().all(|(i, v)| *v == i as u32));
}
