//! The session: where tileables are computed. It has an ID (results computed in one
//! session are not seen by another), the settings of its runs, a cancel flag and a
//! progress callback; [`Results`] keeps what a session computed on the tileable itself.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How far one run of chunk tasks has got (reported as tasks finish).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Chunk tasks finished.
    pub done: usize,
    /// Chunk tasks known so far in this run (it grows when tiling resumes after a
    /// step whose shape depends on data, such as a boolean mask).
    pub total: usize,
}

/// A progress callback.
pub type ProgressFn = dyn Fn(Progress) + Send + Sync;

/// How a session runs its graphs.
#[derive(Clone)]
pub struct Settings {
    /// Chunk tasks submitted and not yet finished, at most (memory is bounded by about
    /// this many times the chunk size).
    pub max_in_flight: usize,
    /// Partials combined by one task of a tree reduction (Mars uses 4).
    pub combine_size: usize,
    /// Share of the local object store that the inputs and outputs of the chunk tasks in
    /// flight may take together (the rest is room for spilling and restoring).
    pub store_share: f64,
    /// Called as tasks finish.
    pub progress: Option<Arc<ProgressFn>>,
    /// Set from another thread to stop submitting between chunk tasks.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { max_in_flight: 8, combine_size: 4, store_share: 0.75, progress: None, cancel: None }
    }
}

impl Settings {
    /// Whether the cancel flag is set.
    pub fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Where tileables (tensors, frames, and expressions mixing both) are computed. A clone
/// is the same session: it sees the same computed results.
#[derive(Clone)]
pub struct Session {
    id: u64,
    settings: Settings,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("max_in_flight", &self.settings.max_in_flight)
            .field("combine_size", &self.settings.combine_size)
            .finish_non_exhaustive()
    }
}

impl Default for Session {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Session { id: NEXT.fetch_add(1, Ordering::Relaxed), settings: Settings::default() }
    }
}

impl Session {
    /// A new session with the default settings (8 chunk tasks in flight, combine 4 at a
    /// time).
    pub fn new() -> Self {
        Self::default()
    }

    /// The session's ID.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// How it runs its graphs.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// This session with at most `n` chunk tasks submitted and not finished.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.settings.max_in_flight = n.max(1);
        self
    }

    /// This session combining `n` partials per task of a tree reduction (at least 2).
    pub fn combine_size(mut self, n: usize) -> Self {
        self.settings.combine_size = n.max(2);
        self
    }

    /// This session calling `f` as chunk tasks finish (for a progress bar).
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.settings.progress = Some(Arc::new(f));
        self
    }

    /// This session (same results, same settings) watching `flag`: once it is set, a
    /// run submits no further chunk task, waits for those in flight, frees its
    /// intermediates and fails with [`crate::Error::Cancelled`].
    pub fn cancelled_by(&self, flag: Arc<AtomicBool>) -> Session {
        let mut s = self.clone();
        s.settings.cancel = Some(flag);
        s
    }
}

/// What sessions computed for one tileable, kept on it: dropping the tileable frees them.
pub struct Results<V> {
    by_session: Mutex<Vec<(u64, V)>>,
}

impl<V> Default for Results<V> {
    fn default() -> Self {
        Results { by_session: Mutex::new(Vec::new()) }
    }
}

impl<V> std::fmt::Debug for Results<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.by_session.lock().map(|g| g.len()).unwrap_or(0);
        write!(f, "Results({n} sessions)")
    }
}

impl<V: Clone> Results<V> {
    /// What `session` computed, if it did.
    pub fn get(&self, session: &Session) -> Option<V> {
        let g = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        g.iter().find(|(id, _)| *id == session.id).map(|(_, v)| v.clone())
    }

    /// Records what `session` computed (replacing what it had).
    pub fn set(&self, session: &Session, v: V) {
        let mut g = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|(id, _)| *id != session.id);
        g.push((session.id, v));
    }

    /// Whether some session computed it.
    pub fn any(&self) -> bool {
        !self.by_session.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    /// Forgets what `session` computed (a failed result is not kept).
    pub fn remove(&self, session: &Session) {
        self.by_session.lock().unwrap_or_else(|p| p.into_inner()).retain(|(id, _)| *id != session.id);
    }
}
