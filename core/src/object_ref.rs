//! `ObjectRef<T>`, the typed future; `View<T>`, a zero-copy read of its value; and
//! `InPlace<T>` and `InPlaceList<T>`, task arguments read where they lie.
//!
//! A ref knows its owner's [`Address`] and encodes as (object ID, owner address, and
//! where the owner's node serves other nodes), so it can travel inside values: encoding
//! one records it (see [`crate::capture`]), and the submission or `put` carrying the
//! value keeps the object alive while the value needs it. Decoding one in the owner's
//! process gives an ordinary counted handle; in any other process it is a *borrowed*
//! ref, counted in the process's borrow table: the owner keeps the object while the
//! borrower holds it, and a `get` asks the owner where the value is.

use std::fmt;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;

use ares_common::codec::Value;
use ares_common::{Address, ObjectId};
use rkyv::rancor::{Fallible, Source};
use rkyv::with::{ArchiveWith, DeserializeWith, SerializeWith};
use rkyv::{Archive, Place, Serialize};

use crate::core_worker::CoreWorker;
use crate::store_client::Held;

/// One family of handles on an object: cloning an `ObjectRef` shares it; the last drop
/// removes one local reference in the owner's table.
pub(crate) struct RefInner {
    pub(crate) id: ObjectId,
    pub(crate) owner: Arc<Address>,
    pub(crate) cw: Arc<CoreWorker>,
    /// Where the owner's node serves other nodes (for a borrowed ref; an owned one asks
    /// its core worker when encoded).
    home: Option<SocketAddr>,
    counted: Counted,
}

/// Which table of this process counts a handle family.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counted {
    /// The ownership table (this process owns the object).
    Owned,
    /// The borrow table.
    Borrowed,
    /// Neither: a copy decoded only to be re-encoded, or of an object already gone.
    No,
}

impl Drop for RefInner {
    fn drop(&mut self) {
        match self.counted {
            Counted::Owned => self.cw.remove_local_ref(self.id),
            Counted::Borrowed => self.cw.remove_borrowed(self.id),
            Counted::No => {}
        }
    }
}

impl RefInner {
    /// Whether this process owns the object.
    pub(crate) fn owned(&self) -> bool {
        self.owner.worker == self.cw.worker_id()
    }
}

/// A future for a value of type `T`, owned by the process that created it. The value is
/// freed everywhere once every `ObjectRef` to it is dropped and no pending task or
/// stored value needs it.
#[derive(Archive, Serialize, rkyv::Deserialize)]
pub struct ObjectRef<T> {
    #[rkyv(with = RefCodec)]
    pub(crate) inner: Arc<RefInner>,
    _t: PhantomData<fn() -> T>,
}

impl<T> ObjectRef<T> {
    /// A handle on an object this process just made (its table counts one reference).
    pub(crate) fn new(id: ObjectId, cw: Arc<CoreWorker>) -> Self {
        let owner = cw.address();
        ObjectRef { inner: Arc::new(RefInner { id, owner, cw, home: None, counted: Counted::Owned }), _t: PhantomData }
    }

    /// The object's ID.
    pub fn id(&self) -> ObjectId {
        self.inner.id
    }

    /// The process that owns the object.
    pub fn owner(&self) -> &Address {
        &self.inner.owner
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

/// The archived form of a ref.
#[derive(Archive, Serialize, rkyv::Deserialize)]
#[doc(hidden)]
pub struct RefWire {
    id: ObjectId,
    owner: Address,
    /// Where the owner's node serves other nodes, in a cluster.
    home: Option<SocketAddr>,
}

impl RefInner {
    fn wire(&self) -> RefWire {
        let home = if self.owned() { self.cw.own_node_addr() } else { self.home };
        RefWire { id: self.id, owner: (*self.owner).clone(), home }
    }
}

/// Encodes a ref as (object ID, owner address) and records it; see the module docs.
#[doc(hidden)]
pub struct RefCodec;

impl ArchiveWith<Arc<RefInner>> for RefCodec {
    type Archived = ArchivedRefWire;
    type Resolver = RefWireResolver;

    fn resolve_with(field: &Arc<RefInner>, resolver: Self::Resolver, out: Place<Self::Archived>) {
        field.wire().resolve(resolver, out);
    }
}

impl<S: Fallible + ?Sized> SerializeWith<Arc<RefInner>, S> for RefCodec
where
    RefWire: Serialize<S>,
{
    fn serialize_with(field: &Arc<RefInner>, s: &mut S) -> Result<Self::Resolver, S::Error> {
        let wire = field.wire();
        let r = ares_common::wire::RefInValue {
            id: wire.id,
            owner: wire.owner.worker,
            node: wire.owner.node,
            home: wire.home,
        };
        crate::capture::record_object(r, field.clone());
        wire.serialize(s)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NoRuntime(String);

impl<D: Fallible + ?Sized> DeserializeWith<ArchivedRefWire, Arc<RefInner>, D> for RefCodec
where
    D::Error: Source,
{
    fn deserialize_with(a: &ArchivedRefWire, d: &mut D) -> Result<Arc<RefInner>, D::Error> {
        let id: ObjectId = rkyv::Deserialize::deserialize(&a.id, d)?;
        let owner: Address = rkyv::Deserialize::deserialize(&a.owner, d)?;
        let home: Option<SocketAddr> = rkyv::Deserialize::deserialize(&a.home, d)?;
        let cw = crate::runtime::current().map_err(|e| D::Error::new(NoRuntime(e.to_string())))?;
        let mine = owner.worker == cw.worker_id();
        // In the owner a decoded ref is one more handle family, unless the object is
        // already gone or the copy is only re-encoded; elsewhere it is borrowed.
        let counted = if crate::capture::passive() {
            Counted::No
        } else if mine {
            if cw.add_local_ref(id) { Counted::Owned } else { Counted::No }
        } else {
            cw.add_borrowed(id, &owner, home);
            crate::capture::record_borrowed();
            Counted::Borrowed
        };
        let owner = if mine { cw.address() } else { Arc::new(owner) };
        Ok(Arc::new(RefInner { id, owner, cw, home, counted }))
    }
}

/// A validated, zero-copy view of an object's archived value. For a value in the node's
/// shared-memory store this reads the pool in place; the object stays alive while the
/// view exists.
pub struct View<T: Value> {
    archived: *const T::Archived,
    _held: Held,
    _hold: ObjectRef<T>,
}

// SAFETY: the view only hands out shared references to immutable, sealed bytes that stay
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

/// A task argument read where it lies (the node's shared-memory store, or the task's
/// message for a small one), validated but not deserialized: declare a remote
/// function's parameter as `InPlace<'_, T>` instead of `T` to skip copying a large
/// value out of the store. The caller passes an `ObjectRef<T>` or a `T` as usual.
pub struct InPlace<'a, T: Value> {
    archived: &'a T::Archived,
}

impl<'a, T: Value> InPlace<'a, T> {
    /// Validates `bytes`, which the worker hands over aligned (pool allocations and
    /// copies of inline arguments both are).
    pub(crate) fn access(bytes: &'a [u8]) -> Result<Self, ares_common::codec::CodecError> {
        if (bytes.as_ptr() as usize) % ares_common::codec::ALIGN != 0 {
            return Err(<ares_common::codec::CodecError as Source>::new(Misaligned));
        }
        Ok(InPlace { archived: T::access(bytes)? })
    }
}

/// The error of an argument whose bytes are not aligned for reading in place.
#[derive(Debug)]
struct Misaligned;

impl fmt::Display for Misaligned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the argument's bytes are not {}-byte aligned", ares_common::codec::ALIGN)
    }
}

impl std::error::Error for Misaligned {}

impl<T: Value> Deref for InPlace<'_, T> {
    type Target = T::Archived;
    fn deref(&self) -> &T::Archived {
        self.archived
    }
}

/// A parameter that takes a list of values, each read in place as [`InPlace`] does:
/// declare it as `InPlaceList<'_, T>` and pass a `Vec<ObjectRef<T>>`. Each element is
/// resolved, pinned and mapped on its own, never gathered into one value.
pub struct InPlaceList<'a, T: Value> {
    pub(crate) items: Vec<InPlace<'a, T>>,
}

impl<'a, T: Value> Deref for InPlaceList<'a, T> {
    type Target = [InPlace<'a, T>];
    fn deref(&self) -> &[InPlace<'a, T>] {
        &self.items
    }
}
