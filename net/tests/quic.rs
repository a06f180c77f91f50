//! QUIC connections over real UDP sockets on loopback: the join token admits a peer,
//! a wrong one or a wrong certificate is refused, and bad frames close only their own
//! connection.

use ares_common::RequestId;
use std::io;
use std::time::Duration;

use ares_common::NodeId;
use ares_common::error::FrameError;
use ares_common::frame::{self, Message};
use ares_common::wire::ToRaylet;
use ares_net::{Connection, Credentials, JoinToken, Listener};

const MAX_FRAME: usize = 1 << 20;

fn listener(secret: u8) -> (Listener, Credentials) {
    ares_net::install_crypto_provider();
    let creds = Credentials::generate([secret; 16]).unwrap();
    let l = Listener::bind_quic(NodeId::default(), "127.0.0.1:0".parse().unwrap(), &creds).unwrap();
    (l, creds)
}

fn addr(l: &Listener) -> std::net::SocketAddr {
    l.endpoint().quic_addr().expect("a QUIC listener")
}

#[test]
fn a_peer_with_the_token_exchanges_messages_both_ways() {
    let (l, creds) = listener(7);
    let token = creds.token();
    let parsed: JoinToken = token.to_string().parse().unwrap();
    assert_eq!(parsed, token);
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let (tx, mut rx) = l.accept().unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
            for _ in 0..100 {
                let m: ToRaylet = rx.recv().unwrap();
                tx.send(&m).unwrap();
            }
        });
        let (tx, mut rx) =
            Connection::connect_quic(addr(&l), &token).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        for i in 0..100 {
            tx.send(&ToRaylet::GetStats { request_id: RequestId(i) }).unwrap();
        }
        for i in 0..100 {
            match rx.recv::<ToRaylet>().unwrap() {
                ToRaylet::GetStats { request_id } => assert_eq!(request_id, RequestId(i)),
                other => panic!("unexpected {other:?}"),
            }
        }
        server.join().unwrap();
    });
}

#[test]
fn a_wrong_secret_or_certificate_is_refused_and_the_listener_keeps_serving() {
    let (l, creds) = listener(1);
    let good = creds.token();
    let other = Credentials::generate([1; 16]).unwrap().token(); // same secret, other cert
    let wrong_secret: JoinToken = format!("{}{}", "ab".repeat(16), &good.to_string()[32..]).parse().unwrap();
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let (_tx, mut rx) = l.accept().unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
            rx.recv::<ToRaylet>()
        });
        let e = Connection::connect_quic(addr(&l), &wrong_secret).err().expect("a wrong secret is refused");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains("wrong join token"), "{e}");
        let e = Connection::connect_quic(addr(&l), &other).err().expect("a wrong certificate is refused");
        assert!(e.to_string().contains("certificate"), "{e}");
        let (tx, _rx) =
            Connection::connect_quic(addr(&l), &good).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        tx.send(&ToRaylet::GetStats { request_id: ares_common::RequestId(42) }).unwrap();
        // Only the good client ever reached accept().
        assert!(matches!(server.join().unwrap(), Ok(ToRaylet::GetStats { request_id: ares_common::RequestId(42) })));
    });
}

#[test]
fn without_a_token_connecting_says_how_to_get_one() {
    let (l, _creds) = listener(3);
    let ep = l.endpoint().clone();
    // This test binary never sets a process-wide token.
    let e = Connection::connect(&ep).err().expect("no token, no connection");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("ARES_TOKEN"), "{e}");
}

#[test]
fn bad_frames_close_only_their_connection() {
    let (l, creds) = listener(9);
    let token = creds.token();
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let mut seen = Vec::new();
            for _ in 0..4 {
                let (_tx, mut rx) = l.accept().unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
                seen.push(rx.recv::<ToRaylet>());
            }
            seen
        });
        // Garbage that is not a valid message.
        let (tx, _rx) =
            Connection::connect_quic(addr(&l), &token).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        let mut bytes = Vec::new();
        frame::write_frame(&mut bytes, 0, &[0xAB; 40]).unwrap();
        tx.send_framed(&bytes).unwrap();
        // A header announcing 1 GiB of a bulk type, followed by 4 bytes: refused before
        // reading.
        let kind = |name: &str| (0..).find(|k| ToRaylet::describe(*k).is_some_and(|(n, _)| n == name)).unwrap();
        let header = |len: u32, kind: u16| [len.to_le_bytes().as_slice(), kind.to_le_bytes().as_slice()].concat();
        let (tx2, _rx2) =
            Connection::connect_quic(addr(&l), &token).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        let mut huge = header(1 << 30, kind("DeleteObjects"));
        huge.extend_from_slice(&[0; 4]);
        tx2.send_framed(&huge).unwrap();
        // A control message announcing 100 KiB, under the frame limit but over its type's.
        let (tx4, _rx4) =
            Connection::connect_quic(addr(&l), &token).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        let mut big_pin = header(100 << 10, kind("PinObject"));
        big_pin.extend_from_slice(&[0; 4]);
        tx4.send_framed(&big_pin).unwrap();
        // A well-behaved client after both.
        let (tx3, _rx3) =
            Connection::connect_quic(addr(&l), &token).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        tx3.send(&ToRaylet::GetStats { request_id: ares_common::RequestId(5) }).unwrap();
        // Accept order follows the handshakes, not the calls above: look for each outcome.
        let seen = server.join().unwrap();
        assert!(seen.iter().any(|r| matches!(r, Err(FrameError::Malformed { .. }))), "{seen:?}");
        assert!(seen.iter().any(|r| matches!(r, Err(FrameError::TooLarge { len, .. }) if *len == 1 << 30)), "{seen:?}");
        assert!(
            seen.iter().any(|r| matches!(r, Err(FrameError::TooLarge { what, max, .. })
                if what == "ToRaylet::PinObject" && *max == frame::CONTROL_FRAME as u64)),
            "{seen:?}"
        );
        assert!(
            seen.iter().any(|r| matches!(r, Ok(ToRaylet::GetStats { request_id: ares_common::RequestId(5) }))),
            "{seen:?}"
        );
    });
}

#[test]
fn a_quiet_peer_times_out_and_bulk_streams_carry_bytes_both_ways() {
    ares_net::install_crypto_provider();
    let creds = Credentials::generate([4; 16]).unwrap();
    // Every further stream gets its bytes back (a length, then that many bytes).
    let echo: ares_net::StreamHandler = std::sync::Arc::new(|mut s: ares_net::RawStream| {
        let mut len = [0u8; 8];
        s.read_exact(&mut len).unwrap();
        let mut buf = vec![0u8; u64::from_le_bytes(len) as usize];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
        s.finish().unwrap();
    });
    let l =
        Listener::bind_quic_with(NodeId::default(), "127.0.0.1:0".parse().unwrap(), &creds, true, Some(echo)).unwrap();
    std::thread::scope(|sc| {
        let server = sc.spawn(|| l.accept().unwrap());
        let (_tx, mut rx) =
            Connection::connect_quic(addr(&l), &creds.token()).unwrap().split::<ToRaylet>(MAX_FRAME, 1 << 20).unwrap();
        let _conn = server.join().unwrap();
        let e = rx.recv_timeout::<ToRaylet>(Duration::from_millis(200)).expect_err("nothing was sent");
        assert!(matches!(&e, FrameError::Io(io) if io.kind() == io::ErrorKind::TimedOut), "{e:?}");
    });
    let peer = ares_net::QuicPeer::connect_with(addr(&l), &creds.token()).unwrap();
    let data: Vec<u8> = (0..20 << 20).map(|i| (i % 253) as u8).collect();
    let mut s = peer.open_stream().unwrap();
    s.write_all(&(data.len() as u64).to_le_bytes()).unwrap();
    s.write_all(&data).unwrap();
    let mut back = vec![0u8; data.len()];
    s.read_exact(&mut back).unwrap();
    assert!(back == data, "the echoed bytes differ");
}
