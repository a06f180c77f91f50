//! A process's connection to its raylet: synchronous calls (create an object, read
//! stats) correlated by request ID, fire-and-forget messages, and a reader thread that
//! hands unsolicited answers (lease grants) to the submitter.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use ares_common::error::FrameError;
use ares_common::wire::{FromRaylet, ToRaylet};
use ares_common::{Endpoint, RequestId};
use ares_net::{Connection, Receiver, Sender};
use hashbrown::HashMap;

use crate::error::{Error, Result};

pub(crate) struct RayletClient {
    out: Sender,
    pending: Mutex<HashMap<RequestId, mpsc::SyncSender<FromRaylet>>>,
    /// The next blocking call's request ID: from [`RequestId::FIRST_CALL`] up, where the
    /// core worker's state numbers its own requests (answers go to `on_event`) from 1.
    next_id: AtomicU64,
    /// Set (before `pending` is emptied) once the reader has stopped: no answer will come.
    closed: AtomicBool,
}

/// Bytes queued for the raylet before the connection is considered stuck.
const OUTBOX_LIMIT: usize = 256 << 20;

/// How long a call waits for its answer before it checks that the raylet still answers.
const PROBE_AFTER: Duration = Duration::from_secs(5);

/// How long the raylet may take to answer that check.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a raylet may take to answer a registration: a peer that accepted the
/// connection but never answers must not hold its caller for ever.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(30);

fn request_id(msg: &FromRaylet) -> Option<RequestId> {
    match msg {
        FromRaylet::Registered { .. }
        | FromRaylet::ObjectsSpilled { .. }
        | FromRaylet::NodeDied { .. }
        | FromRaylet::Relayed { .. }
        | FromRaylet::PeerGone { .. }
        | FromRaylet::ShuttingDown { .. } => None,
        FromRaylet::LeaseGranted { request_id, .. }
        | FromRaylet::LeaseSpillback { request_id, .. }
        | FromRaylet::LeaseInfeasible { request_id, .. }
        | FromRaylet::ObjectCreated { request_id, .. }
        | FromRaylet::CreateFailed { request_id, .. }
        | FromRaylet::Sealed { request_id, .. }
        | FromRaylet::Pinned { request_id, .. }
        | FromRaylet::PinFailed { request_id, .. }
        | FromRaylet::Stats { request_id, .. }
        | FromRaylet::Nodes { request_id, .. }
        | FromRaylet::Kv { request_id, .. }
        | FromRaylet::ActorReply { request_id, .. }
        | FromRaylet::ActorFound { request_id, .. }
        | FromRaylet::ActorElsewhere { request_id, .. }
        | FromRaylet::Pulled { request_id, .. } => Some(*request_id),
    }
}

fn unavailable(e: impl std::fmt::Display) -> Error {
    Error::RayletUnavailable(e.to_string())
}

impl RayletClient {
    /// Connects, registers with `hello` and returns the client, the registration answer
    /// and the reader half (to be handed to [`RayletClient::start_reader`]).
    pub(crate) fn connect(addr: &str, max_frame: usize, hello: ToRaylet) -> Result<(Arc<Self>, FromRaylet, Receiver)> {
        Self::connect_to(&Endpoint::Unix(addr.to_string()), max_frame, hello)
    }

    /// Like [`RayletClient::connect`], to any endpoint (another node's raylet over QUIC).
    pub(crate) fn connect_to(
        endpoint: &Endpoint,
        max_frame: usize,
        hello: ToRaylet,
    ) -> Result<(Arc<Self>, FromRaylet, Receiver)> {
        let conn = Connection::connect(endpoint).map_err(unavailable)?;
        let (out, mut reader) = conn.split::<FromRaylet>(max_frame, OUTBOX_LIMIT).map_err(unavailable)?;
        out.send(&hello).map_err(unavailable)?;
        let registered = reader.recv_timeout::<FromRaylet>(REGISTER_TIMEOUT).map_err(|e| {
            out.close();
            unavailable(format!("{endpoint} did not answer the registration: {e}"))
        })?;
        let client = Arc::new(RayletClient {
            out,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(RequestId::FIRST_CALL.0),
            closed: AtomicBool::new(false),
        });
        Ok((client, registered, reader))
    }

    /// Runs the reader on its own thread. Answers to [`RayletClient::call`] go to their
    /// callers; everything else to `on_event`; `on_close` runs when the connection ends.
    pub(crate) fn start_reader(
        self: &Arc<Self>,
        mut reader: Receiver,
        on_event: impl Fn(FromRaylet) + Send + 'static,
        on_close: impl FnOnce(String) + Send + 'static,
    ) -> std::io::Result<()> {
        let me = self.clone();
        // Unsolicited messages are handled on their own thread, so this reader never
        // waits for a lock a caller of `call` may hold while it waits for us.
        let (events_tx, events_rx) = mpsc::channel::<FromRaylet>();
        std::thread::Builder::new().name("ares-raylet-events".into()).spawn(move || {
            while let Ok(msg) = events_rx.recv() {
                on_event(msg);
            }
        })?;
        std::thread::Builder::new().name("ares-raylet-client".into()).spawn(move || {
            let reason = loop {
                match reader.recv::<FromRaylet>() {
                    Ok(msg) => {
                        let waiter = request_id(&msg).and_then(|id| me.pending.lock().unwrap().remove(&id));
                        match waiter {
                            Some(tx) => {
                                let _ = tx.send(msg);
                            }
                            None => {
                                let _ = events_tx.send(msg);
                            }
                        }
                    }
                    Err(FrameError::Closed) => break "the connection closed".to_string(),
                    Err(e) => {
                        tracing::warn!("raylet connection failed: {e}");
                        break e.to_string();
                    }
                }
            };
            // Fail every waiting call, and every later one.
            me.closed.store(true, Ordering::SeqCst);
            me.out.close();
            me.pending.lock().unwrap().clear();
            on_close(reason);
        })?;
        Ok(())
    }

    /// Sends one message.
    pub(crate) fn send(&self, msg: &ToRaylet) -> Result<()> {
        self.out.send(msg).map_err(unavailable)
    }

    /// Sends the request built by `make` and waits for its answer. A long wait is fine
    /// (room being made for a create, a pull under way) while the raylet is there: after
    /// [`PROBE_AFTER`] without an answer the call asks the raylet for its stats, and
    /// fails with `RayletUnavailable` if that goes unanswered for [`PROBE_TIMEOUT`] (the
    /// raylet is stopped or stuck; a dead one closes the connection, which fails the
    /// call at once).
    pub(crate) fn call(&self, make: impl FnOnce(RequestId) -> ToRaylet) -> Result<FromRaylet> {
        let (id, rx) = self.ask(make)?;
        // Most answers come within microseconds: poll before blocking (see
        // `ares_net::SPIN_BEFORE_BLOCKING` for why).
        let start = Instant::now();
        while start.elapsed() < Duration::from_micros(50) {
            match rx.try_recv() {
                Ok(msg) => return Ok(msg),
                Err(mpsc::TryRecvError::Disconnected) => return Err(unavailable("the raylet closed the connection")),
                Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
        loop {
            match rx.recv_timeout(PROBE_AFTER) {
                Ok(msg) => return Ok(msg),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(unavailable("the raylet closed the connection"));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = self.probe() {
                        self.pending.lock().unwrap().remove(&id);
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Registers a waiter for a new request ID and sends the request built by `make`.
    fn ask(&self, make: impl FnOnce(RequestId) -> ToRaylet) -> Result<(RequestId, mpsc::Receiver<FromRaylet>)> {
        let id = RequestId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = mpsc::sync_channel(1);
        self.pending.lock().unwrap().insert(id, tx);
        if self.closed.load(Ordering::SeqCst) {
            self.pending.lock().unwrap().remove(&id);
            return Err(unavailable("the raylet connection is closed"));
        }
        if let Err(e) = self.send(&make(id)) {
            self.pending.lock().unwrap().remove(&id);
            return Err(e);
        }
        Ok((id, rx))
    }

    /// Whether the raylet still answers: a stats request, answered within [`PROBE_TIMEOUT`].
    fn probe(&self) -> Result<()> {
        let (id, rx) = self.ask(|request_id| ToRaylet::GetStats { request_id })?;
        match rx.recv_timeout(PROBE_TIMEOUT) {
            Ok(_) => Ok(()),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(unavailable("the raylet closed the connection")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.pending.lock().unwrap().remove(&id);
                Err(unavailable(format!(
                    "the raylet has not answered for {:?} (stopped or stuck?); check the node's daemon.log",
                    PROBE_AFTER + PROBE_TIMEOUT
                )))
            }
        }
    }

    /// Closes the connection (wakes the reader thread).
    pub(crate) fn close(&self) {
        self.out.close();
    }

    /// Closes the connection once the messages sent before are delivered.
    pub(crate) fn close_flushed(&self) {
        self.out.close_flushed();
    }
}
