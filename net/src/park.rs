//! Parking idle connections: a server thread whose Unix connection has gone quiet hands
//! the [`Receiver`] to one epoll thread and ends, and that thread hands it back (through
//! the `resume` callback given with it) once bytes or the peer's end arrive. So idle
//! connections cost a file descriptor and a map entry, not a thread each, while a busy
//! connection keeps its thread and its low-latency blocking reads.
//!
//! QUIC receivers are not parked (their frames arrive through the async runtime, whose
//! tasks already cost no thread); [`Parker::park`] gives them back to the caller.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{EventfdFlags, epoll};

use crate::Receiver;

/// What to do with a parked receiver once it is readable (or its parker stops).
pub type Resume = Box<dyn FnOnce(Receiver) + Send>;

/// The epoll data that marks the wake-up eventfd rather than a parked connection.
const WAKE: u64 = u64::MAX;

struct Inner {
    epoll: OwnedFd,
    wake: OwnedFd,
    parked: Mutex<HashMap<u64, (Receiver, Resume)>>,
    next: AtomicU64,
    stop: AtomicBool,
}

/// One epoll thread holding idle receivers (see the module doc).
pub struct Parker {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Parker {
    /// Starts the parker's thread, named `name`.
    pub fn start(name: &str) -> io::Result<Parker> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let wake = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        epoll::add(&epoll, &wake, epoll::EventData::new_u64(WAKE), epoll::EventFlags::IN)?;
        let inner = Arc::new(Inner {
            epoll,
            wake,
            parked: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let run = inner.clone();
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || run.run())?;
        Ok(Parker { inner, thread: Mutex::new(Some(thread)) })
    }

    /// Parks `rx` until it is readable, then calls `resume` with it (on the parker's
    /// thread: `resume` should hand the receiver to a thread of its own and return).
    /// Gives both back when `rx` cannot be parked (a QUIC receiver, or a stopped parker).
    pub fn park(&self, rx: Receiver, resume: Resume) -> Result<(), (Receiver, Resume)> {
        let Some(fd) = rx.unix_fd() else { return Err((rx, resume)) };
        let key = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let mut parked = self.inner.parked.lock().unwrap_or_else(|p| p.into_inner());
        // Checked under the lock: the thread sets `stop` before it takes the lock to
        // resume what is parked, so nothing parked after that is left behind.
        if self.inner.stop.load(Ordering::SeqCst) {
            return Err((rx, resume));
        }
        // One shot: the connection is taken out of the set before anyone reads it.
        let flags = epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::ONESHOT;
        if epoll::add(&self.inner.epoll, fd, epoll::EventData::new_u64(key), flags).is_err() {
            return Err((rx, resume));
        }
        parked.insert(key, (rx, resume));
        Ok(())
    }

    /// How many receivers are parked now.
    pub fn parked(&self) -> usize {
        self.inner.parked.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Stops the thread, resuming every parked receiver first (their owners then see the
    /// connections' ends as they would have). Later [`Parker::park`] calls give back.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&self.inner.wake, &1u64.to_ne_bytes());
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            // A resume may drop the last owner of this parker on the parker's own thread.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Parker {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    fn run(&self) {
        let mut events = Vec::with_capacity(256);
        while !self.stop.load(Ordering::SeqCst) {
            events.clear();
            match epoll::wait(&self.epoll, rustix::buffer::spare_capacity(&mut events), None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    tracing::error!("the connection parker failed: {e}");
                    // Without a working epoll nobody would resume these: do it now.
                    self.stop.store(true, Ordering::SeqCst);
                    break;
                }
            }
            for ev in &events {
                let key = ev.data.u64();
                if key == WAKE {
                    continue;
                }
                let entry = self.parked.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
                if let Some((rx, resume)) = entry {
                    if let Some(fd) = rx.unix_fd() {
                        let _ = epoll::delete(&self.epoll, fd);
                    }
                    resume(rx);
                }
            }
        }
        let all: Vec<(Receiver, Resume)> =
            self.parked.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, v)| v).collect();
        for (rx, resume) in all {
            if let Some(fd) = rx.unix_fd() {
                let _ = epoll::delete(&self.epoll, fd);
            }
            resume(rx);
        }
    }
}

/// How long a server thread waits on a quiet connection before parking it.
pub const PARK_AFTER: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Connection;
    use ares_common::wire::ToRaylet;
    use std::sync::mpsc;

    #[test]
    fn a_parked_receiver_comes_back_when_its_peer_writes_or_goes() {
        let parker = Parker::start("test-parker").unwrap();
        let (tx, rx) = mpsc::channel();
        let mut peers = Vec::new();
        for i in 0..50u64 {
            let (a, b) = Connection::pair().unwrap();
            let (_, r) = b.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
            let tx = tx.clone();
            let resume: Resume = Box::new(move |r| tx.send((i, r)).unwrap());
            assert!(parker.park(r, resume).is_ok());
            peers.push(a.split::<ToRaylet>(1 << 20, 1 << 20).unwrap());
        }
        assert_eq!(parker.parked(), 50);
        // Nothing is readable yet: nothing comes back.
        assert!(rx.try_recv().is_err());
        peers[7].0.send(&ToRaylet::GetStats { request_id: ares_common::RequestId(7) }).unwrap();
        let (i, mut r) = rx.recv().unwrap();
        assert_eq!(i, 7);
        assert!(matches!(r.recv::<ToRaylet>(), Ok(ToRaylet::GetStats { request_id: ares_common::RequestId(7) })));
        // A peer that goes wakes its receiver too, which then reads the end.
        peers[9].0.close();
        let (i, mut r) = rx.recv().unwrap();
        assert_eq!(i, 9);
        assert!(matches!(r.recv::<ToRaylet>(), Err(ares_common::error::FrameError::Closed)));
        assert_eq!(parker.parked(), 48);
        // Stopping resumes the rest.
        parker.stop();
        let mut rest: Vec<u64> = rx.try_iter().map(|(i, _)| i).collect();
        rest.sort();
        assert_eq!(rest, (0..50).filter(|i| *i != 7 && *i != 9).collect::<Vec<_>>());
        let (_, r) = Connection::pair().unwrap().1.split::<ToRaylet>(1024, 1024).unwrap();
        assert!(parker.park(r, Box::new(|_| {})).is_err(), "a stopped parker gives receivers back");
    }
}
