//! A small blocking client of a node's raylet socket for tools, tests and benchmarks:
//! pull an object into the node, read its statistics, pin and read an object, delete
//! a copy. Drivers use the core worker instead.

use std::io;
use std::os::unix::net::UnixStream;

use ares_common::frame::{FrameReader, write_msg};
use ares_common::wire::{FromRaylet, NodeStats, ToRaylet};
use ares_common::{NodeId, ObjectId, RequestId, WorkerId};
use ares_object_store::Pool;

/// A registered connection to one raylet.
pub struct ToolClient {
    stream: UnixStream,
    reader: FrameReader<UnixStream>,
    pool_path: String,
    pool_size: u64,
    next: RequestId,
}

fn unexpected(what: &str, got: FromRaylet) -> io::Error {
    io::Error::other(format!("expected {what}, the raylet answered {got:?}"))
}

impl ToolClient {
    /// Connects to the raylet at `socket` and registers as a driver.
    pub fn connect(socket: &str) -> io::Result<ToolClient> {
        let stream = UnixStream::connect(socket)?;
        let mut reader = FrameReader::new(stream.try_clone()?, 16 << 20);
        let worker_id = WorkerId::from_uuid(uuid::Uuid::new_v4());
        write_msg(&mut &stream, &ToRaylet::RegisterDriver { pid: std::process::id(), worker_id })?;
        match reader.read::<FromRaylet>().map_err(io::Error::other)? {
            FromRaylet::Registered { pool_path, pool_size, .. } => {
                Ok(ToolClient { stream, reader, pool_path, pool_size, next: RequestId(1) })
            }
            other => Err(unexpected("Registered", other)),
        }
    }

    fn send(&mut self, msg: &ToRaylet) -> io::Result<()> {
        write_msg(&mut &self.stream, msg)
    }

    fn recv(&mut self) -> io::Result<FromRaylet> {
        self.reader.read::<FromRaylet>().map_err(io::Error::other)
    }

    fn id(&mut self) -> RequestId {
        self.next = self.next.next();
        self.next
    }

    /// Asks `n` times at once for a copy of `object` from `from`; returns when every
    /// request is answered, with the first failure if any.
    pub fn pull(&mut self, object: ObjectId, from: &[NodeId], n: usize) -> io::Result<()> {
        for _ in 0..n {
            let request_id = self.id();
            let owner = ares_common::WorkerId::default();
            self.send(&ToRaylet::PullObject { request_id, object_id: object, from: from.to_vec(), owner })?;
        }
        let mut first_error = None;
        for _ in 0..n {
            match self.recv()? {
                FromRaylet::Pulled { error: None, .. } => {}
                FromRaylet::Pulled { error: Some(e), .. } => first_error = first_error.or(Some(e)),
                other => return Err(unexpected("Pulled", other)),
            }
        }
        first_error.map_or(Ok(()), |e| Err(io::Error::other(e.to_string())))
    }

    /// The node's statistics.
    pub fn stats(&mut self) -> io::Result<NodeStats> {
        let request_id = self.id();
        self.send(&ToRaylet::GetStats { request_id })?;
        match self.recv()? {
            FromRaylet::Stats { stats, .. } => Ok(stats),
            other => Err(unexpected("Stats", other)),
        }
    }

    /// Pins `object` (until this client disconnects): its offset and size in the pool.
    pub fn pin(&mut self, object: ObjectId) -> io::Result<(u64, u64)> {
        let request_id = self.id();
        self.send(&ToRaylet::PinObject { request_id, object_id: object })?;
        match self.recv()? {
            FromRaylet::Pinned { offset, size, .. } => Ok((offset, size)),
            other => Err(unexpected("Pinned", other)),
        }
    }

    /// Releases one pin on `object`.
    pub fn release(&mut self, object: ObjectId) -> io::Result<()> {
        self.send(&ToRaylet::ReleaseObjects { object_ids: vec![object] })
    }

    /// Deletes this node's copy of `object`.
    pub fn delete(&mut self, object: ObjectId) -> io::Result<()> {
        self.send(&ToRaylet::DeleteObjects { object_ids: vec![object] })
    }

    /// Maps the node's pool (read pinned objects through it).
    pub fn pool(&self) -> io::Result<Pool> {
        Pool::open(&self.pool_path, self.pool_size)
    }
}
