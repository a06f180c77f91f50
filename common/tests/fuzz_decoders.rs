//! Fuzzing every decoder of bytes that come from outside the process, with proptest over
//! arbitrary bytes (cargo-fuzz needs a nightly toolchain, which CI does not have): the
//! frame reader over arbitrary streams, and each wire message type over arbitrary bytes
//! and over mutations (bit flips, truncations, extensions) of valid messages, which are
//! the seed corpus. Every input must decode or fail with an error; none may panic, and
//! no payload may exceed the reader's bound.
//!
//! The seeds are also committed as files (`tests/fuzz_corpus/*.bin`, one message each), so
//! that an external fuzzer can start from them and a change of the wire format shows up
//! as a test failure here: `ARES_FUZZ_WRITE_CORPUS=1 cargo test -p ares-common --test
//! fuzz_decoders` rewrites them.

use ares_common::RequestId;
use std::io::Cursor;

use ares_common::codec::Value;
use ares_common::error::FrameError;
use ares_common::frame::{Bound, CONTROL_FRAME, FrameReader, Kinds, Message};
use ares_common::wire::{
    ActorCounts, Demand, DetachedActor, FromHead, FromRaylet, FromWorker, NamedActor, NodeLoad, NodeSummary, Outcome,
    PeerLocation, PeerMsg, RestartSpec, ReturnValue, TaskKind, TaskSpec, ToHead, ToRaylet, ToWorker, WireArg,
};
use ares_common::{ActorId, Endpoint, NodeId, ObjectId, ResourceSet, TaskId, WorkerId};
use proptest::prelude::*;

fn uuid(n: u8) -> uuid::Uuid {
    uuid::Uuid::from_bytes([n; 16])
}

/// Valid encodings of each message kind a peer sends, named: the seeds mutations start
/// from.
fn named_seeds() -> Vec<(&'static str, Vec<u8>)> {
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
            WireArg::Shared {
                object_id: object,
                len: 1 << 20,
                nodes: vec![node],
                owner: ares_common::WorkerId([4; 16]),
            },
        ],
        attempt: 1,
        kind: TaskKind::Normal,
        num_returns: 1,
    };
    let named = NamedActor {
        actor_id: ActorId([5; 16]),
        class: "tests::Counter".into(),
        max_task_retries: 1,
        node,
        addr: Some("127.0.0.1:4001".parse().unwrap()),
    };
    let detached = DetachedActor {
        actor: named.clone(),
        name: Some("keeper".into()),
        max_restarts: 3,
        restarts: 1,
        restart: RestartSpec { spec: spec.clone(), shape: ResourceSet::new().with("CPU", 1.0) },
    };
    let load = NodeLoad {
        available: ResourceSet::new().with("CPU", 2.0),
        store_used: 1 << 20,
        store_capacity: 1 << 30,
        pending_leases: 2,
        actors: ActorCounts { pending: 1, alive: 2, restarting: 0 },
        demands: vec![Demand { shape: ResourceSet::new().with("CPU", 1.0), actor: false, count: 2 }],
        ..NodeLoad::default()
    };
    let summary = NodeSummary {
        node_id: node,
        pid: 9,
        host: "h".into(),
        addr: Some("127.0.0.1:4000".parse().unwrap()),
        head: true,
        alive: true,
        total: ResourceSet::new().with("CPU", 2.0),
        load: load.clone(),
        silent_ms: 5,
        died: Some("no heartbeat for over 10000 ms".into()),
    };
    let mut out = vec![
        (
            "to_raylet_register_driver",
            ToRaylet::RegisterDriver { pid: 42, worker_id: worker }.encode().unwrap().to_vec(),
        ),
        (
            "to_raylet_register_worker",
            ToRaylet::RegisterWorker {
                worker_id: worker,
                pid: 7,
                listen_addr: Endpoint::Unix("/tmp/ares-x/worker-1.sock".into()),
                remote_addr: Some(Endpoint::Quic { node, addr: "127.0.0.1:4000".parse().unwrap() }),
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        (
            "to_raylet_cancel",
            ToRaylet::CancelLeaseRequests { request_ids: vec![RequestId(1), RequestId(2), RequestId(3)] }
                .encode()
                .unwrap()
                .to_vec(),
        ),
        ("to_worker_push", ToWorker::Push(spec).encode().unwrap().to_vec()),
        (
            "from_worker_inline",
            FromWorker::Done {
                task_id: task,
                outcome: Outcome::Inline(vec![9; 16]),
                copies: vec![object],
                contained: vec![],
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        (
            "from_worker_shared",
            FromWorker::Done {
                task_id: task,
                outcome: Outcome::Shared { offset: 64, len: 1 << 30 },
                copies: vec![],
                contained: vec![],
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        (
            "from_worker_returns",
            FromWorker::Done {
                task_id: task,
                outcome: Outcome::Returns(vec![
                    ReturnValue::Inline(vec![1]),
                    ReturnValue::Shared { offset: 0, len: 8 },
                ]),
                copies: vec![],
                contained: vec![ares_common::wire::RefInValue {
                    id: object,
                    owner: ares_common::WorkerId([4; 16]),
                    node: ares_common::NodeId([5; 16]),
                    home: Some("127.0.0.1:7000".parse().unwrap()),
                }],
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        (
            "from_raylet_actor_elsewhere",
            FromRaylet::ActorElsewhere { request_id: RequestId(3), actor: named.clone() }.encode().unwrap().to_vec(),
        ),
        (
            "from_raylet_shutting_down",
            FromRaylet::ShuttingDown { reason: "stopping".into() }.encode().unwrap().to_vec(),
        ),
        (
            "to_head_register_node",
            ToHead::RegisterNode {
                node_id: node,
                pid: 9,
                host: "h".into(),
                addr: None,
                total: ResourceSet::new().with("CPU", 2.0),
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        ("to_head_heartbeat", ToHead::Heartbeat { load }.encode().unwrap().to_vec()),
        (
            "to_head_reserve_name",
            ToHead::ReserveActorName { request_id: RequestId(4), name: "keeper".into(), actor: named.clone() }
                .encode()
                .unwrap()
                .to_vec(),
        ),
        ("to_head_detached", ToHead::DetachedStarted { actor: Box::new(detached.clone()) }.encode().unwrap().to_vec()),
        ("from_head_view", FromHead::View { nodes: vec![summary] }.encode().unwrap().to_vec()),
        (
            "from_head_actor_name",
            FromHead::ActorName { request_id: RequestId(4), actor: Some(named), error: None }
                .encode()
                .unwrap()
                .to_vec(),
        ),
        ("from_head_restart", FromHead::RestartActor { actor: Box::new(detached) }.encode().unwrap().to_vec()),
        (
            "to_raylet_relay_add_borrower",
            ToRaylet::Relay {
                to: WorkerId([4; 16]),
                msg: PeerMsg::AddBorrower {
                    request: RequestId(5),
                    objects: vec![object, object],
                    borrower: WorkerId([6; 16]),
                },
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        (
            "from_raylet_relayed_location",
            FromRaylet::Relayed {
                from: WorkerId([4; 16]),
                msg: PeerMsg::Location { object, location: PeerLocation::Stored { len: 1 << 20, nodes: vec![node] } },
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
        ("from_raylet_peer_gone", FromRaylet::PeerGone { worker: WorkerId([4; 16]) }.encode().unwrap().to_vec()),
        ("to_raylet_drop_copies", ToRaylet::DropCopies { object_ids: vec![object] }.encode().unwrap().to_vec()),
        (
            "from_raylet_relayed_actors_lent",
            FromRaylet::Relayed {
                from: WorkerId([4; 16]),
                msg: PeerMsg::ActorsLent {
                    task: object.task,
                    actors: vec![ares_common::wire::LentActor {
                        id: ares_common::ActorId([7; 16]),
                        class: "Counter".into(),
                        max_task_retries: 1,
                        home_node: node,
                        home_addr: Some("127.0.0.1:7000".parse().unwrap()),
                    }],
                },
            }
            .encode()
            .unwrap()
            .to_vec(),
        ),
    ];
    out.retain(|(_, b)| !b.is_empty());
    out
}

/// The seeds' bytes.
fn seeds() -> Vec<Vec<u8>> {
    named_seeds().into_iter().map(|(_, b)| b).collect()
}

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus")
}

#[test]
fn the_committed_corpus_is_the_seeds() {
    let dir = corpus_dir();
    if std::env::var_os("ARES_FUZZ_WRITE_CORPUS").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in named_seeds() {
            std::fs::write(dir.join(format!("{name}.bin")), bytes).unwrap();
        }
    }
    let mut committed: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/fuzz_corpus is committed")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    committed.sort();
    let mut want: Vec<String> = named_seeds().iter().map(|(n, _)| format!("{n}.bin")).collect();
    want.sort();
    assert_eq!(committed, want, "the corpus lists every seed (ARES_FUZZ_WRITE_CORPUS=1 rewrites it)");
    for (name, bytes) in named_seeds() {
        let file = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        assert!(file == bytes, "{name}.bin is stale: the wire format changed (ARES_FUZZ_WRITE_CORPUS=1 rewrites it)");
    }
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
    for (name, s) in named_seeds() {
        assert!(
            ToRaylet::decode(&s).is_ok()
                || FromRaylet::decode(&s).is_ok()
                || ToWorker::decode(&s).is_ok()
                || FromWorker::decode(&s).is_ok()
                || ToHead::decode(&s).is_ok()
                || FromHead::decode(&s).is_ok(),
            "seed {name} is a valid message"
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
        seed in 0usize..64,
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
        announce in proptest::option::of((any::<u32>(), 0u16..40)),
    ) {
        // Optionally start with a frame header that announces any length of any type.
        let mut bytes = announce
            .map(|(n, kind)| [n.to_le_bytes().as_slice(), kind.to_le_bytes().as_slice()].concat())
            .unwrap_or_default();
        bytes.extend_from_slice(&stream);
        let max = 1024;
        let mut r = FrameReader::new(Cursor::new(bytes), max);
        for _ in 0..64 {
            match r.read_payload(Kinds::of::<ToRaylet>()) {
                Ok((kind, p)) => {
                    let bound = ToRaylet::describe(kind).map(|(_, b)| b);
                    prop_assert!(bound.is_some(), "a payload of an unknown type was returned");
                    let limit = if bound == Some(Bound::Control) { CONTROL_FRAME.min(max) } else { max };
                    prop_assert!(p.len() <= limit, "a payload over its type's bound was returned");
                    decode_all(p);
                }
                Err(FrameError::Closed) => break,
                Err(_) => break,
            }
        }
    }
}
