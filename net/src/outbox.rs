//! The non-blocking outgoing side of a connection.

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// An ordered outgoing byte queue on a Unix stream that never blocks its caller.
///
/// `send` writes at once with `MSG_DONTWAIT`; whatever the socket cannot take is queued
/// and written by a short-lived flusher thread. So a thread that also has to read from
/// the same peer (or holds a lock a reader needs) can never be stuck behind a peer that
/// is itself blocked writing to us. Bytes are delivered in `send` order. If more than
/// `limit` bytes are queued the peer is not reading: the stream is closed.
pub struct Outbox {
    stream: Arc<UnixStream>,
    state: std::sync::Mutex<OutboxState>,
    limit: usize,
}

#[derive(Default)]
struct OutboxState {
    pending: Vec<u8>,
    flushing: bool,
    closed: bool,
}

impl Outbox {
    /// An outbox writing to `stream` (shared with the connection's reader: one file
    /// descriptor per connection).
    pub fn new(stream: impl Into<Arc<UnixStream>>, limit: usize) -> Arc<Outbox> {
        Arc::new(Outbox { stream: stream.into(), state: Default::default(), limit })
    }

    /// The stream written to.
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Queues `bytes` for the peer; fails only if the connection is closed.
    pub fn send(self: &std::sync::Arc<Self>, bytes: &[u8]) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.closed {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"));
        }
        let mut rest = bytes;
        if !st.flushing {
            while !rest.is_empty() {
                match rustix::net::send(&*self.stream, rest, rustix::net::SendFlags::DONTWAIT) {
                    Ok(n) => rest = &rest[n..],
                    Err(rustix::io::Errno::INTR) => {}
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(e) => {
                        st.closed = true;
                        drop(st);
                        self.close();
                        return Err(e.into());
                    }
                }
            }
            if rest.is_empty() {
                return Ok(());
            }
        }
        st.pending.extend_from_slice(rest);
        if st.pending.len() > self.limit {
            st.closed = true;
            drop(st);
            tracing::warn!(limit = self.limit, "peer is not reading; closing the connection");
            self.close();
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "peer is not reading"));
        }
        if !st.flushing {
            st.flushing = true;
            let me = self.clone();
            if std::thread::Builder::new().name("ares-outbox-flush".into()).spawn(move || me.flush_loop()).is_err() {
                st.flushing = false;
                st.closed = true;
                drop(st);
                self.close();
                return Err(io::Error::other("could not start a flusher thread"));
            }
        }
        Ok(())
    }

    fn flush_loop(&self) {
        loop {
            let chunk = {
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if st.pending.is_empty() || st.closed {
                    st.flushing = false;
                    return;
                }
                std::mem::take(&mut st.pending)
            };
            if (&*self.stream).write_all(&chunk).is_err() {
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                st.closed = true;
                st.flushing = false;
                drop(st);
                self.close();
                return;
            }
        }
    }

    /// Whether the peer has closed its end (or the connection broke): a non-blocking
    /// check, for a thread that is not reading the connection right now.
    pub fn peer_closed(&self) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut fds = [PollFd::new(&*self.stream, PollFlags::RDHUP)];
        match poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })) {
            Ok(0) => false,
            Ok(_) => fds[0].revents().intersects(PollFlags::RDHUP | PollFlags::HUP | PollFlags::ERR),
            Err(_) => false,
        }
    }

    /// Closes both directions of the stream (wakes its reader).
    pub fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn outbox_never_blocks_and_keeps_order() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let out = Outbox::new(a, 1 << 30);
        // Far more than a socket buffer holds, while nobody reads yet.
        let total: usize = 8 << 20;
        let mut sent = Vec::with_capacity(total);
        for i in 0..(total / 4096) {
            let chunk = vec![(i % 251) as u8; 4096];
            out.send(&chunk).unwrap();
            sent.extend_from_slice(&chunk);
        }
        let mut got = vec![0u8; total];
        b.read_exact(&mut got).unwrap();
        assert!(got == sent);
    }

    #[test]
    fn outbox_closes_when_the_peer_does_not_read() {
        let (a, _b) = UnixStream::pair().unwrap();
        let out = Outbox::new(a, 1 << 20);
        let chunk = vec![0u8; 64 << 10];
        let failed = (0..200).any(|_| out.send(&chunk).is_err());
        assert!(failed, "the limit must close a connection whose peer never reads");
    }
}
