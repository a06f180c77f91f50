//! The client half of the node's object store: create, seal, pin and release objects in
//! the shared-memory pool through the raylet, and write values straight into it.
//!
//! Every read of a stored value goes through a pin ([`Held`]): offsets change when the
//! store spills and restores, so nobody keeps one without a pin.

use std::sync::Arc;

use ares_common::codec::{Bytes, Value};
use ares_common::wire::{FromRaylet, ToRaylet};
use ares_common::{ObjectId, WorkerId};
use ares_object_store::Pool;

use crate::error::{Error, Result};
use crate::raylet_client::RayletClient;
use crate::state::InlineRule;

/// Objects this large have their pages mapped in one call before they are written
/// (see `Pool::populate_write`); smaller ones take their few faults.
const POPULATE_MIN: usize = 256 << 10;

/// Where [`StoreClient::store_value`] put a value.
pub(crate) enum Stored {
    /// Small: encoded in memory, to travel inline.
    Inline(Bytes),
    /// Large: sealed in the node's pool.
    Shared { offset: u64, len: u64 },
}

pub(crate) struct StoreClient {
    raylet: Arc<RayletClient>,
    pool: Pool,
    inline: InlineRule,
}

/// Bytes held for reading: shared inline bytes, or a pin in the node's store that is
/// released on drop.
pub(crate) struct Held {
    store: Arc<StoreClient>,
    id: ObjectId,
    what: HeldBytes,
}

enum HeldBytes {
    Inline(Arc<Bytes>),
    Pinned { offset: u64, len: u64 },
}

impl Held {
    /// Inline bytes of `id`, held by sharing them.
    pub(crate) fn inline(store: Arc<StoreClient>, id: ObjectId, bytes: Arc<Bytes>) -> Held {
        Held { store, id, what: HeldBytes::Inline(bytes) }
    }

    /// The held bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.what {
            HeldBytes::Inline(b) => &b[..],
            // SAFETY: pinned: sealed and in memory until the pin is released (on drop).
            HeldBytes::Pinned { offset, len } => unsafe { self.store.pool.slice(*offset, *len) }.unwrap_or(&[]),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if matches!(self.what, HeldBytes::Pinned { .. }) {
            self.store.release(vec![self.id]);
        }
    }
}

impl StoreClient {
    pub(crate) fn new(raylet: Arc<RayletClient>, pool: Pool, inline: InlineRule) -> Self {
        StoreClient { raylet, pool, inline }
    }

    /// Which values travel inline (the core state's rule).
    pub(crate) fn inline_rule(&self) -> InlineRule {
        self.inline
    }

    /// The mapped pool.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Encodes `value` inline if small, else straight into a new object in the pool.
    pub(crate) fn store_value<T: Value>(&self, id: ObjectId, value: &T, owner: WorkerId) -> Result<Stored> {
        let len = value.encoded_len().map_err(|e| Error::Encode(e.to_string()))?;
        if self.inline.inline(len) {
            return Ok(Stored::Inline(value.encode().map_err(|e| Error::Encode(e.to_string()))?));
        }
        let (offset, dst) = self.create_writable(id, len, owner)?;
        if let Err(e) = value.encode_into_slice(dst) {
            // Seal and delete the half-written object so its space comes back at once.
            let _ = self.seal(id);
            let _ = self.raylet.send(&ToRaylet::DeleteObjects { object_ids: vec![id] });
            return Err(Error::Encode(e.to_string()));
        }
        self.seal(id)?;
        Ok(Stored::Shared { offset, len: len as u64 })
    }

    /// Copies already encoded bytes into a new object in the pool.
    pub(crate) fn store_bytes(&self, id: ObjectId, bytes: &[u8], owner: WorkerId) -> Result<u64> {
        let (_, dst) = self.create_writable(id, bytes.len(), owner)?;
        dst.copy_from_slice(bytes);
        self.seal(id)?;
        Ok(bytes.len() as u64)
    }

    /// Creates object `id` of `len` bytes and returns its offset and bytes, mapped in one
    /// call when large (see [`POPULATE_MIN`]).
    #[allow(clippy::mut_from_ref)]
    fn create_writable(&self, id: ObjectId, len: usize, owner: WorkerId) -> Result<(u64, &mut [u8])> {
        let offset = self.create(id, len as u64, owner)?;
        if len >= POPULATE_MIN {
            self.pool.populate_write(offset, len as u64);
        }
        // SAFETY: a fresh allocation of ours, unsealed: nobody else reads or writes it.
        let dst =
            unsafe { self.pool.slice_mut(offset, len as u64) }.map_err(|e| Error::RayletUnavailable(e.to_string()))?;
        Ok((offset, dst))
    }

    fn create(&self, id: ObjectId, size: u64, owner: WorkerId) -> Result<u64> {
        match self.raylet.call(|request_id| ToRaylet::CreateObject { request_id, object_id: id, size, owner })? {
            FromRaylet::ObjectCreated { offset, .. } => Ok(offset),
            FromRaylet::CreateFailed { error, .. } => Err(Error::Task(error)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to create: {other:?}"))),
        }
    }

    /// Seals a created object; answered synchronously, so the creator reports it to its
    /// owner only once the store knows it.
    fn seal(&self, id: ObjectId) -> Result<()> {
        match self.raylet.call(|request_id| ToRaylet::SealObject { request_id, object_id: id })? {
            FromRaylet::Sealed { error: None, .. } => Ok(()),
            FromRaylet::Sealed { error: Some(e), .. } => {
                Err(Error::RayletUnavailable(format!("seal of {id} rejected: {e}")))
            }
            other => Err(Error::RayletUnavailable(format!("unexpected answer to seal: {other:?}"))),
        }
    }

    /// Pins `id` in the node's store (restoring it first if it was spilled); returns its
    /// current offset and size.
    pub(crate) fn pin(&self, id: ObjectId) -> Result<(u64, u64)> {
        match self.raylet.call(|request_id| ToRaylet::PinObject { request_id, object_id: id })? {
            FromRaylet::Pinned { offset, size, .. } => Ok((offset, size)),
            FromRaylet::PinFailed { error, .. } => Err(Error::Task(error)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to pin: {other:?}"))),
        }
    }

    /// Makes a copy of `id` in this node's store, pulled from the first of `from` that
    /// has it (no-op when it is here already; concurrent pulls of one object share one).
    pub(crate) fn pull(&self, id: ObjectId, from: &[ares_common::NodeId], owner: ares_common::WorkerId) -> Result<()> {
        let from = from.to_vec();
        match self.raylet.call(|request_id| ToRaylet::PullObject { request_id, object_id: id, from, owner })? {
            FromRaylet::Pulled { error: None, .. } => Ok(()),
            FromRaylet::Pulled { error: Some(e), .. } => Err(Error::Task(e)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to pull: {other:?}"))),
        }
    }

    /// Pins `id` for as long as the returned [`Held`] lives.
    pub(crate) fn hold(self: &Arc<Self>, id: ObjectId) -> Result<Held> {
        let (offset, len) = self.pin(id)?;
        Ok(Held { store: self.clone(), id, what: HeldBytes::Pinned { offset, len } })
    }

    /// Releases pins taken with [`StoreClient::pin`].
    pub(crate) fn release(&self, ids: Vec<ObjectId>) {
        if !ids.is_empty() {
            // If the raylet is gone, so is the pool: nothing left to release.
            let _ = self.raylet.send(&ToRaylet::ReleaseObjects { object_ids: ids });
        }
    }
}
