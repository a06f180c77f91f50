//! `ObjectRef<T>`, the typed future, and `View<T>`, a zero-copy read of its value.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use crate::core_worker::CoreWorker;
use crate::core_worker::Held;
use ares_common::ObjectId;
use ares_common::codec::Value;

/// One family of handles on an object: cloning an `ObjectRef` shares it; the last drop
/// removes one local reference in the owner's table.
pub(crate) struct RefInner {
    pub(crate) id: ObjectId,
    pub(crate) cw: Arc<CoreWorker>,
}

impl Drop for RefInner {
    fn drop(&mut self) {
        self.cw.remove_local_ref(self.id);
    }
}

/// A future for a value of type `T`, owned by the process that created it. The value is
/// freed everywhere once every `ObjectRef` to it is dropped and no pending task needs it.
pub struct ObjectRef<T> {
    pub(crate) inner: Arc<RefInner>,
    _t: PhantomData<fn() -> T>,
}

impl<T> ObjectRef<T> {
    pub(crate) fn new(id: ObjectId, cw: Arc<CoreWorker>) -> Self {
        ObjectRef { inner: Arc::new(RefInner { id, cw }), _t: PhantomData }
    }

    /// The object's ID.
    pub fn id(&self) -> ObjectId {
        self.inner.id
    }
}

impl<T> Clone for ObjectRef<T> {
    fn clone(&self) -> Self {
        ObjectRef { inner: self.inner.clone(), _t: PhantomData }
    }
}

impl<T> fmt::Debug for ObjectRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectRef<{}>({})", std::any::type_name::<T>(), self.inner.id)
    }
}

/// A validated, zero-copy view of an object's archived value. For a value in the node's
/// shared-memory store this reads the pool in place; the object stays alive while the
/// view exists.
pub struct View<T: Value> {
    archived: *const T::Archived,
    _held: Held,
    _hold: ObjectRef<T>,
} // SAFETY: the view only hands out shared references to immutable, sealed bytes that stay
// mapped and allocated while `_hold` keeps the object (and its core worker) alive.
unsafe impl<T: Value> Send for View<T> where T::Archived: Sync {}
// SAFETY: as above.
unsafe impl<T: Value> Sync for View<T> where T::Archived: Sync {}

impl<T: Value> View<T> {
    pub(crate) fn new(hold: ObjectRef<T>, held: Held) -> crate::Result<Self> {
        let archived = T::access(held.bytes())
            .map_err(|e| crate::Error::Decode { object: hold.id().to_string(), reason: e.to_string() })?
            as *const T::Archived;
        Ok(View { archived, _held: held, _hold: hold })
    }
}

impl<T: Value> Deref for View<T> {
    type Target = T::Archived;
    fn deref(&self) -> &T::Archived {
        // SAFETY: validated at construction; the bytes outlive `self` (see the Send impl).
        unsafe { &*self.archived }
    }
}
