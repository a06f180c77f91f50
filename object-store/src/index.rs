//! The store index: which objects the node holds, where (pool memory, a spill file, or
//! both while a spill is in flight), who pins them, and which to spill or evict next.
//! Plain data driven by the raylet under its lock, plus one [`Slot`] per object that the
//! spill thread shares without the lock. No IO here: spilling is *planned* here
//! ([`StoreIndex::plan_spill`]) and *performed* by [`crate::spill`].
//!
//! Object life: create → seal → (pin ↔ release)* → delete. Primary copies (created for
//! their owner) are never evicted, but are spilled to disk, coldest first, once pinned
//! primary bytes pass `spill_threshold` of the pool; a pin of a spilled object needs a
//! restore first. Secondary copies are evicted, least recently used first, when space is
//! needed. Deleting a pinned or spilling object defers the free to the last holder.

use std::sync::Arc;

use ares_common::det::DetMap;
use ares_common::{ClientId, ObjectId};
use offset_allocator::{Allocation, Allocator};

use crate::slot::{Slot, SlotState};

/// Granularity and alignment of allocations in the pool.
pub const BLOCK: u64 = 64;

/// Identifies one spill file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(pub u64);

/// Store failures.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// Not enough free space, even after eviction.
    #[error("object store full: needed {requested} bytes, pool capacity {capacity} bytes, {used} bytes in use")]
    Full {
        /// Bytes requested.
        requested: u64,
        /// Pool capacity.
        capacity: u64,
        /// Bytes in use.
        used: u64,
    },
    /// The object could never fit: it is larger than the whole pool.
    #[error("object of {size} bytes is larger than the whole pool ({capacity} bytes); raise object_store_memory")]
    TooLarge {
        /// Bytes requested.
        size: u64,
        /// Pool capacity.
        capacity: u64,
    },
    /// The object is not in the store.
    #[error("object {0} is not in the store")]
    NotFound(ObjectId),
    /// Only the creating client may seal an object.
    #[error("object {0} was not created by this client")]
    NotCreator(ObjectId),
    /// Another client is still writing an object of that ID, or it was deleted and is
    /// still held: a create may succeed once that ends.
    #[error("object {0} is being created by another client")]
    InProgress(ObjectId),
    /// The client asking is gone (the raylet checks; the index never returns it).
    #[error("the client asking is gone")]
    Abandoned,
    /// A pulled copy was asked for, and the primary copy of that ID is here.
    #[error("object {id} already exists ({size} bytes)")]
    Exists {
        /// The object.
        id: ObjectId,
        /// Its size.
        size: u64,
    },
}

/// Tuning of spilling.
#[derive(Clone, Debug)]
pub struct SpillPolicy {
    /// Spill when pinned primary bytes in memory exceed this fraction of the pool.
    pub threshold: f64,
    /// Fuse small objects into files of at least this many bytes (unless fewer remain).
    pub min_spill_size: u64,
    /// At most this many objects per spill file.
    pub max_file_objects: usize,
}

impl Default for SpillPolicy {
    fn default() -> Self {
        SpillPolicy { threshold: 0.8, min_spill_size: 100 << 20, max_file_objects: 1000 }
    }
}

#[derive(Clone, Copy, Debug)]
struct SpillLoc {
    file: FileId,
    offset: u64,
}

struct Entry {
    slot: Arc<Slot>,
    size: u64,
    mem: Option<(Allocation, u64)>,
    disk: Option<SpillLoc>,
    primary: bool,
    creator: ClientId,
    last_access: u64,
    /// A spill job holds its bytes: its memory is not released until the job ends.
    in_job: bool,
}

struct FileRec {
    live: u32,
}

/// What a pin found.
#[derive(Debug, PartialEq)]
pub enum Pin {
    /// Pinned; the bytes are at `offset` in the pool.
    InMemory {
        /// Offset in the pool.
        offset: u64,
        /// Size in bytes.
        size: u64,
    },
    /// Spilled: restore it first ([`StoreIndex::begin_restore`]).
    Spilled,
    /// A restore of it is in flight: wait and retry.
    Busy,
}

/// One object to copy to disk.
#[derive(Debug, Clone)]
pub struct SpillItem {
    /// The object.
    pub id: ObjectId,
    /// Its state word (the spill thread checks it has not been pinned meanwhile).
    pub slot: Arc<Slot>,
    /// Its offset in the pool.
    pub offset: u64,
    /// Its size.
    pub size: u64,
}

/// A batch of objects to write into one new spill file.
#[derive(Debug, Clone)]
pub struct SpillJob {
    /// The file to create.
    pub file: FileId,
    /// The objects, in file order.
    pub items: Vec<SpillItem>,
}

/// A restore to perform: read `size` bytes at `file_offset` of `file` into the pool at
/// `pool_offset`.
#[derive(Debug, Clone, PartialEq)]
pub struct RestoreJob {
    /// The spill file.
    pub file: FileId,
    /// Where the object starts in it.
    pub file_offset: u64,
    /// Where to put it in the pool.
    pub pool_offset: u64,
    /// Its size.
    pub size: u64,
}

/// What the raylet must do after a spill completed.
#[derive(Debug, Default, PartialEq)]
pub struct SpillOutcome {
    /// Objects now on disk, with their file and offset (for their owners).
    pub spilled: Vec<(ObjectId, FileId, u64)>,
    /// Files whose every object is gone: delete them.
    pub dead_files: Vec<FileId>,
}

/// Usage figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes of pool memory held by objects (rounded up to blocks).
    pub used: u64,
    /// Objects known (in memory or on disk).
    pub objects: u64,
    /// Bytes of objects pinned by a reader right now.
    pub pinned_bytes: u64,
    /// Objects pinned by a reader right now.
    pub pinned_objects: u64,
    /// Bytes of objects on disk only.
    pub spilled_bytes: u64,
    /// Objects on disk only.
    pub spilled_objects: u64,
    /// Bytes written to spill files since start.
    pub spilled_bytes_total: u64,
    /// Bytes restored from spill files since start.
    pub restored_bytes_total: u64,
    /// Objects restored since start.
    pub restored_objects_total: u64,
    /// Live spill files.
    pub spill_files: u64,
}

/// The index of one node's pool.
pub struct StoreIndex {
    alloc: Allocator,
    capacity: u64,
    used: u64,
    primary_in_memory: u64,
    objects: DetMap<ObjectId, Entry>,
    pins: DetMap<ClientId, DetMap<ObjectId, u32>>,
    files: DetMap<FileId, FileRec>,
    next_file: u64,
    tick: u64,
    policy: SpillPolicy,
    spilling_bytes: u64,
    /// Bytes freed without IO by the last `plan_spill` (restored objects still on disk).
    dropped_copies: u64,
    /// Spill files whose last object is gone, for the raylet to close.
    dead_files: Vec<FileId>,
    stats: StoreStats,
}

fn blocks(size: u64) -> u64 {
    size.div_ceil(BLOCK).max(1)
}

impl StoreIndex {
    /// An empty index for a pool of `capacity` bytes with the default spill policy.
    pub fn new(capacity: u64) -> Self {
        Self::with_policy(capacity, SpillPolicy::default())
    }

    /// An empty index for a pool of `capacity` bytes.
    pub fn with_policy(capacity: u64, policy: SpillPolicy) -> Self {
        let units = (capacity / BLOCK).min(u32::MAX as u64) as u32;
        StoreIndex {
            alloc: Allocator::with_max_allocs(units, 1 << 20),
            capacity: units as u64 * BLOCK,
            used: 0,
            primary_in_memory: 0,
            objects: DetMap::default(),
            pins: DetMap::default(),
            files: DetMap::default(),
            next_file: 1,
            tick: 0,
            policy,
            spilling_bytes: 0,
            dropped_copies: 0,
            dead_files: Vec::new(),
            stats: StoreStats::default(),
        }
    }

    fn touch(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn full(&self, requested: u64) -> StoreError {
        StoreError::Full { requested, capacity: self.capacity, used: self.used }
    }

    /// Allocates `size` bytes, evicting unpinned secondary copies (LRU) if needed.
    fn allocate(&mut self, size: u64) -> Result<(Allocation, u64), StoreError> {
        let n = blocks(size);
        if n * BLOCK > self.capacity {
            return Err(StoreError::TooLarge { size, capacity: self.capacity });
        }
        if self.objects.len() >= (1 << 20) - 2 {
            return Err(self.full(size));
        }
        loop {
            if let Some(a) = self.alloc.allocate(n as u32) {
                self.used += n * BLOCK;
                return Ok((a, a.offset as u64 * BLOCK));
            }
            // Evict the least recently used unpinned secondary copy, then retry.
            let victim = self
                .objects
                .iter()
                .filter(|(_, e)| !e.primary && !e.in_job && e.mem.is_some())
                .filter(|(_, e)| e.slot.state() == SlotState::Sealed && e.slot.pins() == 0)
                .min_by_key(|(_, e)| e.last_access)
                .map(|(id, _)| *id);
            let Some(id) = victim else { return Err(self.full(size)) };
            let e = self.objects.get(&id).expect("listed");
            if e.slot.evict() {
                let e = self.objects.remove(&id).expect("listed");
                self.release_memory(&e);
            }
        }
    }

    fn release_memory(&mut self, e: &Entry) {
        if let Some((a, _)) = e.mem {
            self.free_allocation(a, e.size, e.primary);
        }
    }

    /// Gives an allocation back: its pool space and its share of the usage figures
    /// (`counted_primary`: whether it was counted in `primary_in_memory`).
    fn free_allocation(&mut self, a: Allocation, size: u64, counted_primary: bool) {
        self.used -= blocks(size) * BLOCK;
        if counted_primary {
            self.primary_in_memory -= size;
        }
        self.alloc.free(a);
    }

    /// Allocates `size` bytes for `id` on behalf of `client`; returns the offset.
    /// `primary` copies are kept for their owner; secondary ones may be evicted.
    ///
    /// Attempts of one task make the same IDs. For an ID the store holds already:
    /// - a sealed primary, for a secondary (a pulled copy): `Exists`, nothing to copy;
    /// - a copy being written, held (pinned, spilling, restoring) or deleted but still
    ///   held: `InProgress`, untouched (wait for its seal, its creator's end or the
    ///   release). Dooming it would free a copy being written at its own seal, after
    ///   its creator reported it stored;
    /// - else a sealed copy: replaced (a retry's or a rebuild's value, made after the
    ///   earlier attempt's), all or nothing: it is freed only once the new space is
    ///   allocated, so a create that fails leaves it as it was.
    pub fn create(&mut self, id: ObjectId, size: u64, client: ClientId, primary: bool) -> Result<u64, StoreError> {
        let replaced = match self.objects.get(&id) {
            None => false,
            Some(e) if e.primary && !primary && !e.slot.doomed() && e.slot.state() != SlotState::Created => {
                return Err(StoreError::Exists { id, size: e.size });
            }
            Some(e) => {
                let busy = e.slot.doomed()
                    || e.in_job
                    || e.slot.pins() > 0
                    || matches!(e.slot.state(), SlotState::Created | SlotState::Restoring | SlotState::Spilling);
                if busy {
                    return Err(StoreError::InProgress(id));
                }
                true
            }
        };
        let (a, offset) = self.allocate(size)?;
        if replaced {
            self.free_entry(id);
        }
        if primary {
            self.primary_in_memory += size;
        }
        let last_access = self.touch();
        self.objects.insert(
            id,
            Entry {
                slot: Arc::new(Slot::new()),
                size,
                mem: Some((a, offset)),
                disk: None,
                primary,
                creator: client,
                last_access,
                in_job: false,
            },
        );
        Ok(offset)
    }

    /// Whether `id` is held here as a secondary copy (pulled; evictable).
    pub fn is_secondary(&self, id: ObjectId) -> bool {
        self.objects.get(&id).is_some_and(|e| !e.primary)
    }

    /// Marks `id` complete. Returns true if it was freed at once because its owner had
    /// already deleted it.
    pub fn seal(&mut self, id: ObjectId, client: ClientId) -> Result<bool, StoreError> {
        let e = self.objects.get(&id).ok_or(StoreError::NotFound(id))?;
        if e.creator != client {
            return Err(StoreError::NotCreator(id));
        }
        if e.slot.state() != SlotState::Created {
            return Ok(false); // already sealed: sealing is idempotent
        }
        if e.slot.doomed() {
            self.free_entry(id);
            return Ok(true);
        }
        e.slot.seal();
        Ok(false)
    }

    /// Pins `id` for `client` if it is in memory.
    pub fn pin(&mut self, id: ObjectId, client: ClientId) -> Result<Pin, StoreError> {
        let tick = self.touch();
        let e = self.objects.get_mut(&id).ok_or(StoreError::NotFound(id))?;
        match e.slot.try_pin() {
            Ok(()) => {
                e.last_access = tick;
                let (offset, size) = (e.mem.expect("a pinnable object is in memory").1, e.size);
                *self.pins.entry(client).or_default().entry(id).or_default() += 1;
                Ok(Pin::InMemory { offset, size })
            }
            Err(SlotState::Spilled) => Ok(Pin::Spilled),
            Err(SlotState::Restoring) => Ok(Pin::Busy),
            Err(_) => Err(StoreError::NotFound(id)),
        }
    }

    /// Releases one pin of `client` on `id`. Unknown pins are ignored.
    pub fn release(&mut self, id: ObjectId, client: ClientId) {
        let Some(mine) = self.pins.get_mut(&client) else { return };
        let Some(n) = mine.get_mut(&id) else { return };
        *n -= 1;
        if *n == 0 {
            mine.remove(&id);
        }
        self.unpin(id);
    }

    /// Drops one pin; frees the object if it was the last pin of a deleted one (unless a
    /// spill job still holds its bytes: then the job's end frees it).
    fn unpin(&mut self, id: ObjectId) {
        let last_of_doomed = self.objects.get(&id).is_some_and(|e| e.slot.unpin() && !e.in_job);
        if last_of_doomed {
            self.free_entry(id);
        }
    }

    /// Removes `id` for good: its slot is marked freed, its memory released and its disk
    /// copy dropped (closing the spill file when it was the file's last object).
    fn free_entry(&mut self, id: ObjectId) {
        let Some(e) = self.objects.remove(&id) else { return };
        // On disk only, or being read back: counted in the spilled figures until now.
        let counted_spilled = e.mem.is_none() || e.slot.state() == SlotState::Restoring;
        e.slot.free();
        self.release_memory(&e);
        self.drop_disk_copy(&e, counted_spilled);
    }

    /// Spill files whose every object is gone since the last call: close them.
    pub fn take_dead_files(&mut self) -> Vec<FileId> {
        std::mem::take(&mut self.dead_files)
    }

    /// The owner deleted `id`: frees it now, or when its last pin, its spill, its restore
    /// or its creation ends. Unknown IDs are ignored.
    pub fn delete(&mut self, id: ObjectId) {
        let Some(e) = self.objects.get(&id) else { return };
        if e.in_job {
            // The spill thread may be copying its bytes: finish_spill frees it.
            e.slot.doom();
            return;
        }
        if e.slot.delete() {
            self.free_entry(id);
        }
        // Otherwise doomed: the pin holder, restorer or creator frees it.
    }

    fn drop_disk_copy(&mut self, e: &Entry, counted_spilled: bool) {
        let Some(loc) = e.disk else { return };
        if counted_spilled {
            self.stats.spilled_bytes = self.stats.spilled_bytes.saturating_sub(e.size);
            self.stats.spilled_objects = self.stats.spilled_objects.saturating_sub(1);
        }
        let Some(f) = self.files.get_mut(&loc.file) else { return };
        f.live = f.live.saturating_sub(1);
        if f.live == 0 {
            self.files.remove(&loc.file);
            self.dead_files.push(loc.file);
        }
    }

    /// A client disconnected: its pins are released and its unsealed creations
    /// reclaimed (its creator will never seal them).
    pub fn client_gone(&mut self, client: ClientId) {
        if let Some(mine) = self.pins.remove(&client) {
            for (id, n) in mine {
                for _ in 0..n {
                    self.unpin(id);
                }
            }
        }
        let unsealed: Vec<ObjectId> = self
            .objects
            .iter()
            .filter(|(_, e)| e.creator == client && e.slot.state() == SlotState::Created)
            .map(|(id, _)| *id)
            .collect();
        for id in unsealed {
            self.free_entry(id);
        }
    }

    /// Takes back an object `client` created and has not sealed (its pages could not be
    /// reserved, say): its space is free again at once. Returns whether it was.
    pub fn abort_create(&mut self, id: ObjectId, client: ClientId) -> bool {
        let mine = self.objects.get(&id).is_some_and(|e| e.creator == client && e.slot.state() == SlotState::Created);
        if mine {
            self.free_entry(id);
        }
        mine
    }

    /// Whether the store knows `id`.
    pub fn contains(&self, id: ObjectId) -> bool {
        self.objects.contains_key(&id)
    }

    /// Whether primary bytes in memory (not counting spills in flight) exceed the
    /// threshold, or an allocation of `need > 0` bytes just failed.
    pub fn wants_spill(&self, need: u64) -> bool {
        let resident = self.primary_in_memory.saturating_sub(self.spilling_bytes);
        need > 0 || resident as f64 > self.policy.threshold * self.capacity as f64
    }

    /// Picks cold, unpinned, sealed primary objects to spill until resident primary
    /// bytes fall to the threshold (and, after a failed allocation of `need` bytes, at
    /// least `need` more bytes are on their way out), fused into files of at least
    /// `min_spill_size` bytes or `max_file_objects` objects.
    pub fn plan_spill(&mut self, need: u64) -> Vec<SpillJob> {
        self.dropped_copies = 0;
        if !self.wants_spill(need) {
            return Vec::new();
        }
        let resident = self.primary_in_memory.saturating_sub(self.spilling_bytes);
        let target = (self.policy.threshold * self.capacity as f64) as u64;
        let over_threshold = resident.saturating_sub(target);
        // A failed allocation of `need` bytes frees at least that much (free space may be
        // fragmented, so the arithmetic shortfall alone can be zero).
        let over_capacity = if need == 0 { 0 } else { blocks(need) * BLOCK };
        // Two shortfalls: primary bytes over the threshold, and pool blocks for `need`.
        let (mut over_threshold, mut over_capacity) = (over_threshold, over_capacity);
        let mut candidates: Vec<(u64, ObjectId)> = self
            .objects
            .iter()
            .filter(|(_, e)| e.primary && e.mem.is_some() && !e.in_job)
            .filter(|(_, e)| e.slot.state() == SlotState::Sealed && e.slot.pins() == 0 && !e.slot.doomed())
            .map(|(id, e)| (e.last_access, *id))
            .collect();
        candidates.sort_unstable();
        let mut jobs = Vec::new();
        let mut current: Vec<SpillItem> = Vec::new();
        let mut current_bytes = 0;
        for (_, id) in candidates {
            // Once the shortfall is covered, only fill the file being built up to the
            // minimum spill size: fewer, larger writes (as Ray's min_spilling_size).
            let covered = over_threshold == 0 && over_capacity == 0;
            if covered && (current.is_empty() || current_bytes >= self.policy.min_spill_size) {
                break;
            }
            let e = self.objects.get_mut(&id).expect("listed");
            if !e.slot.begin_spill() {
                continue;
            }
            if e.disk.is_some() {
                // Restored earlier and still on disk: dropping the memory copy is enough.
                e.slot.finish_spill();
                let (a, _) = e.mem.take().expect("in memory");
                let size = e.size;
                self.free_allocation(a, size, true);
                self.stats.spilled_bytes += size;
                self.stats.spilled_objects += 1;
                self.dropped_copies += size;
                over_threshold = over_threshold.saturating_sub(size);
                over_capacity = over_capacity.saturating_sub(blocks(size) * BLOCK);
                continue;
            }
            e.in_job = true;
            let item = SpillItem { id, slot: e.slot.clone(), offset: e.mem.expect("in memory").1, size: e.size };
            over_threshold = over_threshold.saturating_sub(e.size);
            over_capacity = over_capacity.saturating_sub(blocks(e.size) * BLOCK);
            self.spilling_bytes += e.size;
            current_bytes += e.size;
            current.push(item);
            if current_bytes >= self.policy.min_spill_size || current.len() >= self.policy.max_file_objects {
                jobs.push(self.new_job(std::mem::take(&mut current)));
                current_bytes = 0;
            }
        }
        if !current.is_empty() {
            jobs.push(self.new_job(current));
        }
        jobs
    }

    fn new_job(&mut self, items: Vec<SpillItem>) -> SpillJob {
        let file = FileId(self.next_file);
        self.next_file += 1;
        self.files.insert(file, FileRec { live: 0 });
        SpillJob { file, items }
    }

    /// Records the end of a spill job. `offsets[i]` is where item `i` landed in the file,
    /// or the whole job failed with `Err`. Objects pinned or deleted meanwhile keep (or
    /// lose) their memory as their slot says.
    pub fn finish_spill(&mut self, job: &SpillJob, offsets: Result<&[u64], String>) -> SpillOutcome {
        let mut out = SpillOutcome::default();
        for (i, item) in job.items.iter().enumerate() {
            self.spilling_bytes -= item.size;
            // The job held the entry (create refuses to replace held entries), so this is
            // still the object the job was planned for.
            if let Some(e) = self.objects.get_mut(&item.id) {
                e.in_job = false;
            }
            let written = offsets.as_ref().ok().map(|o| o[i]);
            if let Some(file_offset) = written.filter(|_| item.slot.finish_spill()) {
                let e = self.objects.get_mut(&item.id).expect("a spilling object stays indexed");
                let (a, _) = e.mem.take().expect("a spilling object is in memory");
                e.disk = Some(SpillLoc { file: job.file, offset: file_offset });
                let (size, primary) = (e.size, e.primary);
                self.free_allocation(a, size, primary);
                self.files.get_mut(&job.file).expect("job file").live += 1;
                self.stats.spilled_bytes += size;
                self.stats.spilled_objects += 1;
                self.stats.spilled_bytes_total += size;
                out.spilled.push((item.id, job.file, file_offset));
                continue;
            }
            // Not spilled: the write failed, a reader pinned it meanwhile, or its owner
            // deleted it. A deleted object nobody pins is freed now; otherwise it is back in
            // memory (Sealed), and a later unpin frees it if it was deleted.
            if !item.slot.end_doomed_spill() {
                item.slot.abort_spill();
            }
            let free_now = self
                .objects
                .get(&item.id)
                .is_some_and(|e| (e.slot.state() == SlotState::Freed || e.slot.doomed()) && e.slot.pins() == 0);
            if free_now {
                self.free_entry(item.id);
            }
        }
        if self.files.get(&job.file).is_some_and(|f| f.live == 0) {
            self.files.remove(&job.file);
            self.dead_files.push(job.file);
        }
        out.dead_files = self.take_dead_files();
        out
    }

    /// Starts restoring spilled `id`: allocates its memory. The caller reads the bytes
    /// and then calls [`StoreIndex::finish_restore`].
    pub fn begin_restore(&mut self, id: ObjectId) -> Result<RestoreJob, StoreError> {
        let (size, loc) = match self.objects.get(&id) {
            Some(e) if e.slot.state() == SlotState::Spilled => (e.size, e.disk.expect("spilled objects are on disk")),
            Some(_) => return Err(StoreError::InProgress(id)),
            None => return Err(StoreError::NotFound(id)),
        };
        let (a, pool_offset) = self.allocate(size)?;
        let e = self.objects.get_mut(&id).expect("present");
        if !e.slot.begin_restore() {
            self.free_allocation(a, size, false);
            return Err(StoreError::InProgress(id));
        }
        e.mem = Some((a, pool_offset));
        if e.primary {
            self.primary_in_memory += size;
        }
        Ok(RestoreJob { file: loc.file, file_offset: loc.offset, pool_offset, size })
    }

    /// Ends a restore. On success the object is in memory (its disk copy is kept until
    /// it is deleted, so a later spill is free) and pinned for `client`.
    pub fn finish_restore(&mut self, id: ObjectId, client: ClientId, ok: bool) -> Result<Pin, StoreError> {
        let e = self.objects.get_mut(&id).ok_or(StoreError::NotFound(id))?;
        if e.slot.state() != SlotState::Restoring {
            return Err(StoreError::InProgress(id));
        }
        if e.slot.doomed() {
            // Deleted while it was being read back: nobody wants it any more.
            self.free_entry(id);
            return Err(StoreError::NotFound(id));
        }
        if !ok {
            let mem = e.mem.take();
            let (size, primary) = (e.size, e.primary);
            // Back to Spilled: Restoring → Sealed → Spilling → Spilled keeps the slot legal.
            e.slot.finish_restore();
            e.slot.begin_spill();
            e.slot.finish_spill();
            if let Some((a, _)) = mem {
                self.free_allocation(a, size, primary);
            }
            return Err(StoreError::NotFound(id));
        }
        e.slot.finish_restore();
        let size = e.size;
        self.stats.spilled_bytes = self.stats.spilled_bytes.saturating_sub(size);
        self.stats.spilled_objects = self.stats.spilled_objects.saturating_sub(1);
        self.stats.restored_bytes_total += size;
        self.stats.restored_objects_total += 1;
        self.pin(id, client)
    }

    /// Offset and size of a sealed object in memory.
    pub fn lookup(&self, id: ObjectId) -> Option<(u64, u64)> {
        self.objects.get(&id).filter(|e| e.slot.state() == SlotState::Sealed).and_then(|e| e.mem.map(|m| (m.1, e.size)))
    }

    /// Bytes the last [`StoreIndex::plan_spill`] freed at once, without a job: restored
    /// objects whose disk copy was still there.
    pub fn freed_by_last_plan(&self) -> u64 {
        self.dropped_copies
    }

    /// The size of a known object.
    pub fn size_of(&self, id: ObjectId) -> Option<u64> {
        self.objects.get(&id).map(|e| e.size)
    }

    /// Whether spills are in flight.
    pub fn spilling(&self) -> bool {
        self.spilling_bytes > 0
    }

    /// Usage figures.
    pub fn stats(&self) -> StoreStats {
        let mut s = self.stats;
        s.capacity = self.capacity;
        s.used = self.used;
        s.objects = self.objects.len() as u64;
        s.spill_files = self.files.len() as u64;
        for e in self.objects.values() {
            if e.slot.pins() > 0 {
                s.pinned_objects += 1;
                s.pinned_bytes += e.size;
            }
        }
        s
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use ares_common::TaskId;

    fn oid(n: u32) -> ObjectId {
        ObjectId::for_return(TaskId::root(uuid::Uuid::from_u128(n as u128 + 1)), 0)
    }
    const C: ClientId = ClientId(1);

    /// A store of `capacity` bytes holding `n` sealed primary objects of 1000 bytes each.
    fn sealed_store(capacity: u64, policy: SpillPolicy, n: u32) -> StoreIndex {
        let mut s = StoreIndex::with_policy(capacity, policy);
        for i in 0..n {
            s.create(oid(i), 1000, C, true).unwrap();
            s.seal(oid(i), C).unwrap();
        }
        s
    }

    /// Spills everything at once into one file per job.
    fn spill_all() -> SpillPolicy {
        SpillPolicy { threshold: 0.0, min_spill_size: 1 << 30, max_file_objects: 10 }
    }

    fn small_policy() -> SpillPolicy {
        SpillPolicy { threshold: 0.5, min_spill_size: 1000, max_file_objects: 2 }
    }

    #[test]
    fn create_seal_pin_release_delete_returns_to_empty() {
        let mut s = StoreIndex::new(1 << 20);
        let a = s.create(oid(1), 1000, C, true).unwrap();
        let b = s.create(oid(2), 1000, C, true).unwrap();
        assert_ne!(a, b);
        assert_eq!(a % BLOCK, 0);
        assert!(s.pin(oid(1), C).is_err(), "unsealed objects cannot be pinned");
        assert!(!s.seal(oid(1), C).unwrap());
        assert_eq!(s.pin(oid(1), ClientId(2)).unwrap(), Pin::InMemory { offset: a, size: 1000 });
        assert_eq!(s.stats().pinned_objects, 1);
        s.delete(oid(1));
        assert_eq!(s.stats().objects, 2, "a pinned object outlives its delete");
        s.release(oid(1), ClientId(2));
        s.seal(oid(2), C).unwrap();
        s.delete(oid(2));
        assert_eq!(s.stats().used, 0);
        assert_eq!(s.stats().objects, 0);
    }

    #[test]
    fn full_and_too_large_are_typed_errors_with_sizes() {
        let mut s = StoreIndex::new(1 << 20);
        assert_eq!(s.create(oid(1), 2 << 20, C, true), Err(StoreError::TooLarge { size: 2 << 20, capacity: 1 << 20 }));
        s.create(oid(2), 600 << 10, C, true).unwrap();
        let err = s.create(oid(3), 600 << 10, C, true).unwrap_err();
        assert!(matches!(err, StoreError::Full { requested, .. } if requested == 600 << 10));
    }

    #[test]
    fn dead_clients_lose_pins_and_unsealed_objects() {
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(1), 100, C, true).unwrap();
        s.seal(oid(1), C).unwrap();
        s.pin(oid(1), ClientId(7)).unwrap();
        s.pin(oid(1), ClientId(7)).unwrap();
        s.create(oid(2), 100, ClientId(7), true).unwrap();
        s.client_gone(ClientId(7));
        let st = s.stats();
        assert_eq!((st.pinned_objects, st.objects), (0, 1));
        s.delete(oid(1));
        assert_eq!(s.stats().used, 0);
    }

    #[test]
    fn secondaries_are_evicted_lru_primaries_never() {
        let mut s = StoreIndex::new(4096);
        for i in 0..4 {
            s.create(oid(i), 1024, C, i == 0).unwrap();
            s.seal(oid(i), C).unwrap();
        }
        s.pin(oid(2), C).unwrap(); // touched: now the most recent
        s.release(oid(2), C);
        s.create(oid(9), 1024, C, true).unwrap();
        assert!(s.lookup(oid(0)).is_some(), "primary kept");
        assert!(s.lookup(oid(1)).is_none(), "least recently used secondary evicted");
        assert!(s.lookup(oid(2)).is_some() && s.lookup(oid(3)).is_some());
    }

    #[test]
    fn spill_fuses_cold_objects_and_restore_brings_them_back() {
        let mut s = sealed_store(10_000, small_policy(), 6);
        s.pin(oid(0), C).unwrap(); // hot and pinned: not a candidate
        let jobs = s.plan_spill(0);
        let ids: Vec<_> = jobs.iter().flat_map(|j| j.items.iter().map(|i| i.id)).collect();
        assert!(!ids.contains(&oid(0)));
        assert!(jobs.iter().all(|j| j.items.len() <= 2), "at most max_file_objects per file");
        assert!(s.plan_spill(0).is_empty(), "objects being spilled are not planned twice");
        let mut spilled = Vec::new();
        for j in &jobs {
            let offs: Vec<u64> = j
                .items
                .iter()
                .scan(0, |acc, it| {
                    let o = *acc;
                    *acc += it.size;
                    Some(o)
                })
                .collect();
            spilled.extend(s.finish_spill(j, Ok(&offs)).spilled);
        }
        assert_eq!(spilled.len(), ids.len());
        assert!(s.stats().spilled_objects as usize == ids.len());
        let victim = ids[0];
        assert_eq!(s.pin(victim, C).unwrap(), Pin::Spilled);
        let job = s.begin_restore(victim).unwrap();
        assert_eq!(s.pin(victim, C).unwrap(), Pin::Busy);
        assert!(
            matches!(s.finish_restore(victim, C, true).unwrap(), Pin::InMemory { offset, .. } if offset == job.pool_offset)
        );
        assert_eq!(s.stats().restored_objects_total, 1);
        // Deleting everything frees memory and every spill file.
        s.release(victim, C);
        s.release(oid(0), C);
        for i in 0..6 {
            s.delete(oid(i));
        }
        assert_eq!(s.take_dead_files().len(), jobs.len());
        let st = s.stats();
        assert_eq!((st.used, st.objects, st.spill_files, st.spilled_bytes), (0, 0, 0, 0));
    }

    #[test]
    fn pin_or_delete_during_spill_and_failed_spills_keep_data_safe() {
        let mut s = sealed_store(10_000, spill_all(), 3);
        let jobs = s.plan_spill(0);
        assert_eq!(jobs.len(), 1);
        // A reader pins object 0 and the owner deletes object 1 while the file is written.
        let pinned = jobs[0].items[0].id;
        let deleted = jobs[0].items[1].id;
        assert!(matches!(s.pin(pinned, C).unwrap(), Pin::InMemory { .. }));
        s.delete(deleted);
        let out = s.finish_spill(&jobs[0], Ok(&[0, 1000, 2000]));
        assert_eq!(out.spilled.len(), 1);
        assert!(s.lookup(pinned).is_some(), "the pinned object stayed in memory");
        assert!(s.pin(deleted, C).is_err(), "the deleted object is gone");
        // A failed spill leaves everything in memory.
        s.release(pinned, C);
        let jobs = s.plan_spill(0);
        let ids: Vec<_> = jobs[0].items.iter().map(|i| i.id).collect();
        s.finish_spill(&jobs[0], Err("disk full".into()));
        for id in ids {
            assert!(s.lookup(id).is_some());
        }
    }

    #[test]
    fn a_create_never_dooms_a_copy_being_written_and_replaces_a_sealed_one() {
        let (first, second) = (ClientId(7), ClientId(8));
        // Another create of an object being written waits; the writer's seal keeps it.
        let mut s = StoreIndex::new(1 << 20);
        let at = s.create(oid(1), 100, first, true).unwrap();
        assert_eq!(s.create(oid(1), 100, second, true), Err(StoreError::InProgress(oid(1))));
        assert_eq!(s.seal(oid(1), first), Ok(false), "not freed by the other create");
        assert_eq!(s.pin(oid(1), ClientId(9)), Ok(Pin::InMemory { offset: at, size: 100 }));
        s.client_gone(second);
        assert_eq!(s.lookup(oid(1)), Some((at, 100)), "the other creator's end frees nothing");
        // A sealed copy is replaced by a later create once nobody holds it.
        assert_eq!(s.create(oid(1), 100, second, true), Err(StoreError::InProgress(oid(1))));
        s.release(oid(1), ClientId(9));
        s.create(oid(1), 100, second, true).unwrap();
        s.seal(oid(1), second).unwrap();

        // All or nothing: a replacement that finds no room leaves the sealed copy as is.
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(3), 600 << 10, first, true).unwrap();
        s.seal(oid(3), first).unwrap();
        assert!(matches!(s.create(oid(3), 600 << 10, second, true), Err(StoreError::Full { .. })));
        assert!(s.pin(oid(3), ClientId(9)).is_ok(), "still sealed and readable");

        // A spilled copy is replaced too, and its disk copy dropped.
        let mut s = sealed_store(10_000, spill_all(), 2);
        let jobs = s.plan_spill(0);
        s.finish_spill(&jobs[0], Ok(&[0, 1000]));
        s.create(oid(0), 1000, second, true).unwrap();
        assert_eq!(s.stats().spilled_objects, 1);

        // A dead creator's unsealed copy goes with its connection; then the create goes.
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(1), 100, first, true).unwrap();
        assert_eq!(s.create(oid(1), 100, second, true), Err(StoreError::InProgress(oid(1))));
        s.client_gone(first);
        s.create(oid(1), 100, second, true).unwrap();
        s.seal(oid(1), second).unwrap();

        // A pulled secondary copy gives way to a primary; a primary stands against a copy.
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(2), 100, C, false).unwrap();
        s.seal(oid(2), C).unwrap();
        s.create(oid(2), 100, second, true).unwrap();
        assert!(!s.is_secondary(oid(2)));
        s.seal(oid(2), second).unwrap();
        assert_eq!(s.create(oid(2), 100, C, false), Err(StoreError::Exists { id: oid(2), size: 100 }));
    }

    #[test]
    fn review_regressions_stray_seal_failed_spill_busy_recreate_restore_delete() {
        // A seal from another client never frees someone else's object.
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(1), 100, C, true).unwrap();
        s.seal(oid(1), C).unwrap();
        s.pin(oid(1), ClientId(2)).unwrap();
        s.delete(oid(1));
        assert_eq!(s.seal(oid(1), ClientId(3)), Err(StoreError::NotCreator(oid(1))));
        assert!(!s.seal(oid(1), C).unwrap(), "a second seal is a no-op");
        assert_eq!(s.stats().objects, 1, "still pinned by client 2");
        // Re-creating an object deleted while someone holds it waits for the release.
        assert_eq!(s.create(oid(1), 100, C, true), Err(StoreError::InProgress(oid(1))));
        s.release(oid(1), ClientId(2));
        assert_eq!(s.stats().objects, 0);

        // A failed spill job frees objects deleted during it.
        let mut s = sealed_store(10_000, spill_all(), 2);
        let jobs = s.plan_spill(0);
        s.delete(oid(0));
        s.finish_spill(&jobs[0], Err("disk full".into()));
        assert_eq!(s.stats().objects, 1);
        assert!(s.lookup(oid(1)).is_some());
        s.delete(oid(1));
        assert_eq!((s.stats().used, s.stats().objects), (0, 0));
        assert!(s.take_dead_files().len() <= 1);

        // A restored object deleted while pinned drops its disk copy at the last release,
        // and one deleted during its restore is freed when the restore ends.
        let mut s = sealed_store(10_000, spill_all(), 2);
        let jobs = s.plan_spill(0);
        s.finish_spill(&jobs[0], Ok(&[0, 1000]));
        assert_eq!(s.stats().spilled_objects, 2);
        s.begin_restore(oid(0)).unwrap();
        s.finish_restore(oid(0), C, true).unwrap();
        s.delete(oid(0));
        s.release(oid(0), C);
        s.begin_restore(oid(1)).unwrap();
        s.delete(oid(1));
        assert!(s.finish_restore(oid(1), C, true).is_err());
        let st = s.stats();
        assert_eq!((st.used, st.objects, st.spill_files, st.spilled_objects), (0, 0, 0, 0), "{st:?}");
        assert_eq!(s.take_dead_files().len(), 1);
    }

    /// Random operation sequences (a deterministic xorshift drives them) against the
    /// index, as a client, the spill thread and owners would issue them in any order.
    /// After every step the accounting must add up; at the end, once every pin is
    /// released, every job finished and every object deleted, nothing may remain.
    #[test]
    fn random_operation_sequences_keep_the_accounting_exact() {
        for seed in 1..=300u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut rnd = move |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let policy = SpillPolicy { threshold: 0.5, min_spill_size: 3000, max_file_objects: 3 };
            let mut s = StoreIndex::with_policy(64 * 1024, policy);
            let mut jobs: Vec<SpillJob> = Vec::new();
            let mut restoring: Vec<(ObjectId, ClientId)> = Vec::new();
            let clients = [ClientId(1), ClientId(2), ClientId(3)];
            for _ in 0..200 {
                let id = oid(rnd(12) as u32);
                let c = clients[rnd(3) as usize];
                match rnd(11) {
                    0 | 1 => {
                        let _ = s.create(id, 1 + rnd(9000), c, rnd(4) != 0);
                    }
                    2 => {
                        let _ = s.seal(id, c);
                    }
                    3 => {
                        if let Ok(Pin::Spilled) = s.pin(id, c) {
                            if s.begin_restore(id).is_ok() {
                                restoring.push((id, c));
                            }
                        }
                    }
                    4 => s.release(id, c),
                    5 => s.delete(id),
                    6 => jobs.extend(s.plan_spill(if rnd(2) == 0 { 0 } else { 1 + rnd(9000) })),
                    7 if !jobs.is_empty() => {
                        let j = jobs.remove(rnd(jobs.len() as u64) as usize);
                        if rnd(4) == 0 {
                            s.finish_spill(&j, Err("disk full".into()));
                        } else {
                            let offs: Vec<u64> = (0..j.items.len() as u64).map(|i| i * 10_000).collect();
                            s.finish_spill(&j, Ok(&offs));
                        }
                    }
                    8 if !restoring.is_empty() => {
                        let (rid, rc) = restoring.remove(rnd(restoring.len() as u64) as usize);
                        let _ = s.finish_restore(rid, rc, rnd(5) != 0);
                    }
                    9 => s.client_gone(c),
                    _ => {}
                }
                let st = s.stats();
                assert!(st.used <= st.capacity, "seed {seed}: {st:?}");
                assert!(s.primary_in_memory <= st.used, "seed {seed}");
                let in_memory: u64 = s.objects.values().filter_map(|e| e.mem.map(|_| blocks(e.size) * BLOCK)).sum();
                assert_eq!(in_memory, st.used, "seed {seed}: memory accounting");
                let live: u32 = s.files.values().map(|f| f.live).sum();
                let on_disk = s.objects.values().filter(|e| e.disk.is_some()).count() as u32;
                assert_eq!(live, on_disk, "seed {seed}: spill file accounting");
            }
            // Wind down: finish everything, release every pin, delete every object.
            for (rid, rc) in restoring.drain(..) {
                let _ = s.finish_restore(rid, rc, true);
            }
            for j in jobs.drain(..) {
                s.finish_spill(&j, Ok(&vec![0; j.items.len()]));
            }
            for c in clients {
                s.client_gone(c);
            }
            for i in 0..12 {
                s.delete(oid(i));
            }
            s.take_dead_files();
            let st = s.stats();
            assert_eq!((st.used, st.objects, st.spill_files, st.spilled_bytes), (0, 0, 0, 0), "seed {seed}: {st:?}");
            assert_eq!(s.primary_in_memory, 0, "seed {seed}");
        }
    }
}
