//! Fuzzing every decoder of bytes that come from outside the process, with proptest over
//! arbitrary bytes (cargo-fuzz needs a nightly toolchain, which CI does not have): the
//! frame reader over arbitrary streams, and each wire message type over arbitrary bytes
//! and over mutations (bit flips, truncations, extensions) of valid messages, which are
//! the seed corpus. Every input must decode or fail with an error; none may panic, and
//! no payload may exceed the reader's bound.

use std::io::Cursor;

use ares_common::codec::Value;
use ares_common::error::FrameError;
use ares_common::frame::FrameReader;
use ares_common::wire::{
    FromHead, FromRaylet, FromWorker, Outcome, TaskKind, TaskSpec, ToHead, ToRaylet, ToWorker, WireArg,
};
use ares_common::{Endpoint, NodeId, ObjectId, TaskId, WorkerId};
use proptest::prelude::*;

fn uuid(n: u8) -> uuid::Uuid {
    uuid::Uuid::from_bytes([n; 16])
}

/// Valid encodings of each message kind a peer sends: the seeds mutations start from.
fn seeds() -> Vec<Vec<u8>> {
    let worker = WorkerId::from_uuid(uuid(1));
    let task = TaskId::root(uuid(2));
    let object = ObjectId { task, index: 3 };
    let node = NodeId::from_uuid(uuid(4));
    let spec = TaskSpec {
        task_id: task,
        function: "bench::noop".into(),
        owner: worker,
        args: vec![
            WireArg::Inline(vec![1, 2, 3, 4]),
            WireArg::Shared { object_id: object, len: 1 << 20, nodes: vec![node] },
        ],
        attempt: 1,
        kind: TaskKind::Normal,
        num_returns: 1,
    };
    let mut out = vec![
        ToRaylet::RegisterDriver { pid: 42, worker_id: worker }.encode().unwrap().to_vec(),
        ToRaylet::RegisterWorker {
            worker_id: worker,
            pid: 7,
            listen_addr: Endpoint::Unix("/tmp/ares-x/worker-1.sock".into()),
            remote_addr: Some(Endpoint::Quic { node, addr: "127.0.0.1:4000".parse().unwrap() }),
        }
        .encode()
        .unwrap()
        .to_vec(),
        ToRaylet::CancelLeaseRequests { request_ids: vec![1, 2, 3] }.encode().unwrap().to_vec(),
        ToWorker::Push(spec).encode().unwrap().to_vec(),
        FromWorker::Done { task_id: task, outcome: Outcome::Inline(vec![9; 16]), copies: vec![object] }
            .encode()
            .unwrap()
            .to_vec(),
        FromWorker::Done { task_id: task, outcome: Outcome::Shared { offset: 64, len: 1 << 30 }, copies: vec![] }
            .encode()
            .unwrap()
            .to_vec(),
    ];
    out.retain(|b| !b.is_empty());
    out
}

/// Decodes `bytes` as every message type; only errors are allowed to come back.
fn decode_all(bytes: &[u8]) {
    let _ = ToRaylet::decode(bytes);
    let _ = FromRaylet::decode(bytes);
    let _ = ToWorker::decode(bytes);
    let _ = FromWorker::decode(bytes);
    let _ = ToHead::decode(bytes);
    let _ = FromHead::decode(bytes);
}

#[test]
fn the_seeds_decode() {
    for s in seeds() {
        assert!(
            ToRaylet::decode(&s).is_ok() || ToWorker::decode(&s).is_ok() || FromWorker::decode(&s).is_ok(),
            "a seed is a valid message"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        decode_all(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic_a_decoder(
        seed in 0usize..16,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in proptest::option::of(any::<usize>()),
        tail in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let seeds = seeds();
        let mut b = seeds[seed % seeds.len()].clone();
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x;
        }
        if let Some(c) = cut {
            b.truncate(c % (b.len() + 1));
        }
        b.extend_from_slice(&tail);
        decode_all(&b);
    }

    #[test]
    fn the_frame_reader_bounds_every_payload(
        stream in proptest::collection::vec(any::<u8>(), 0..4096),
        announce in proptest::option::of(any::<u32>()),
    ) {
        // Optionally start with a frame header that announces any length at all.
        let mut bytes = announce.map(|n| n.to_le_bytes().to_vec()).unwrap_or_default();
        bytes.extend_from_slice(&stream);
        let max = 1024;
        let mut r = FrameReader::new(Cursor::new(bytes), max);
        for _ in 0..64 {
            match r.read_payload() {
                Ok(p) => {
                    prop_assert!(p.len() <= max, "a payload over the bound was returned");
                    decode_all(p);
                }
                Err(FrameError::Closed) => break,
                Err(_) => break,
            }
        }
    }
}
