//! A frame chunk in the object store: an Arrow IPC file, and the conversions between it
//! and a polars `DataFrame`: copied out (in a driver), or mapped where it lies (in a
//! chunk task, whose input stays pinned while it runs).

use std::io::Cursor;
use std::sync::Arc;

use polars::prelude::{
    DataFrame, DataType, IntoColumn, IpcReader, IpcWriter, PlSmallStr, PolarsResult, SerReader, SerWriter, Series,
};

/// One chunk of a frame: its rows as an Arrow IPC file (uncompressed).
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct FrameChunk {
    /// Its rows (known without reading the file: a frame's length is their sum).
    pub rows: u64,
    /// The IPC file's bytes.
    pub ipc: Vec<u8>,
}

impl FrameChunk {
    /// `df` written as IPC.
    pub fn encode(df: &mut DataFrame) -> PolarsResult<FrameChunk> {
        // Room for the columns and the file's metadata up front: growing the vector as
        // the writer goes doubled the time of writing a 32 MB chunk (35 ms against 18).
        // A string column is written with a 16-byte view per row, which the estimate
        // leaves out.
        let views = df.columns().iter().filter(|c| matches!(c.dtype(), DataType::String | DataType::Binary)).count();
        let mut ipc = Vec::with_capacity(df.estimated_size() + 16 * views * df.height() + (64 << 10));
        IpcWriter::new(&mut ipc).finish(df)?;
        Ok(FrameChunk { rows: df.height() as u64, ipc })
    }
}

/// Reads a chunk's IPC bytes (in place in the store, or decoded) into a frame.
pub fn decode(ipc: &[u8]) -> PolarsResult<DataFrame> {
    IpcReader::new(Cursor::new(ipc)).finish()
}

/// Reads only `columns` of a chunk's IPC bytes (the others' buffers are not touched).
pub(crate) fn decode_columns(ipc: &[u8], columns: &[String]) -> PolarsResult<DataFrame> {
    IpcReader::new(Cursor::new(ipc)).with_columns(Some(columns.to_vec())).finish()
}

/// Reads an archived chunk where it lies.
pub fn decode_archived(c: &ArchivedFrameChunk) -> PolarsResult<DataFrame> {
    decode(c.ipc.as_slice())
}

/// Bytes of a pinned object, handed to polars' mmap reader as the owner of the columns it
/// makes. Only [`map_archived`] makes one, under its safety contract.
struct Pinned {
    ptr: *const u8,
    len: usize,
}

// SAFETY: read-only bytes of a sealed object, pinned while the frames that hold this live
// (the contract of `map_archived`).
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl AsRef<[u8]> for Pinned {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: made from a live slice; see `map_archived`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Whether polars' mmap reader can map columns of this dtype: fixed-width values whose
/// buffers it checks for bounds and alignment (strings are not mapped: it does not
/// validate them).
fn mappable(dt: &DataType) -> bool {
    dt.is_primitive_numeric()
        || matches!(dt, DataType::Boolean | DataType::Date | DataType::Datetime(..) | DataType::Duration(_))
}

/// Reads an archived chunk (only `columns`, when given) where it lies: the columns of a
/// chunk of numbers, booleans and dates point into its bytes, without a copy (the
/// issue's "a same-node read maps rather than copies"); any other chunk, one not aligned
/// as IPC aligns its buffers, or one the mmap reader refuses, is copied out as
/// [`decode_archived`] does. The chunk's bytes were written by a task of this program;
/// the mmap reader checks the buffers' offsets against them, not every bitmap's length.
///
/// # Safety
///
/// The frame, and every frame or series made from it that may share its buffers, must
/// be dropped before `c`'s bytes are (a chunk task's input is pinned until the task
/// returns; its result is encoded into new bytes before that).
pub(crate) unsafe fn map_archived(c: &ArchivedFrameChunk, columns: Option<&[String]>) -> PolarsResult<DataFrame> {
    use polars_arrow::io::ipc::read::{Dictionaries, read_file_metadata};
    let bytes = c.ipc.as_slice();
    let copied = || match columns {
        Some(cols) => decode_columns(bytes, cols),
        None => decode(bytes),
    };
    let meta = read_file_metadata(&mut Cursor::new(bytes))?;
    let plain = meta.schema.iter_values().all(|f| mappable(&DataType::from_arrow_field(f)));
    // IPC pads every buffer to a multiple of 64 bytes from the file's start: a file
    // starting on 8 bytes has every value aligned and is read in place; any other is
    // copied (never handed to the mmap reader unaligned).
    let aligned = (bytes.as_ptr() as usize) % 8 == 0;
    if !plain || !aligned || meta.dictionaries.as_ref().is_some_and(|d| !d.is_empty()) {
        return copied();
    }
    let owner = Arc::new(Pinned { ptr: bytes.as_ptr(), len: bytes.len() });
    let mut out: Option<DataFrame> = None;
    for block in 0..meta.blocks.len() {
        // SAFETY: the bytes outlive the frame (this function's contract); the reader checks
        // each buffer's bounds and alignment, and every column is fixed-width.
        let batch = match unsafe {
            polars_arrow::mmap::mmap_unchecked(&meta, &Dictionaries::default(), owner.clone(), block)
        } {
            Ok(b) => b,
            Err(_) => return copied(),
        };
        let columns = meta
            .schema
            .iter_values()
            .zip(batch.into_arrays())
            .map(|(f, a)| Ok(Series::from_arrow(PlSmallStr::from(f.name.as_str()), a)?.into_column()))
            .collect::<PolarsResult<Vec<_>>>();
        let Ok(df) = columns.and_then(DataFrame::new_infer_height) else { return copied() };
        match out.as_mut() {
            Some(acc) => {
                if acc.vstack_mut_owned(df).is_err() {
                    return copied();
                }
            }
            None => out = Some(df),
        }
    }
    match (out, columns) {
        (Some(df), Some(cols)) => df.select(cols.iter().map(|c| c.as_str())),
        (Some(df), None) => Ok(df),
        (None, _) => copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::NamedFrom;

    fn archived(df: &mut DataFrame) -> rkyv::util::AlignedVec {
        rkyv::to_bytes::<rkyv::rancor::Error>(&FrameChunk::encode(df).unwrap()).unwrap()
    }

    #[test]
    fn numeric_chunks_are_mapped_in_place_and_others_copied() {
        let mut nums = DataFrame::new_infer_height(vec![
            Series::new("x".into(), (0..1000).map(|v| v as f64 / 3.0).collect::<Vec<_>>()).into_column(),
            Series::new("n".into(), (0..1000).map(|v| (v % 7 != 0).then_some(v as i64)).collect::<Vec<_>>())
                .into_column(),
        ])
        .unwrap();
        let bytes = archived(&mut nums);
        let c = rkyv::access::<ArchivedFrameChunk, rkyv::rancor::Error>(&bytes).unwrap();
        // SAFETY: `bytes` outlives every frame below.
        let mapped = unsafe { map_archived(c, None) }.unwrap();
        assert!(mapped.equals_missing(&nums));
        let values = mapped.column("x").unwrap().f64().unwrap().cont_slice().unwrap().as_ptr() as usize;
        let ipc = c.ipc.as_slice().as_ptr_range();
        assert!((ipc.start as usize..ipc.end as usize).contains(&values), "the column points into the chunk's bytes");
        let only = unsafe { map_archived(c, Some(&["n".to_string()])) }.unwrap();
        assert_eq!(only.get_column_names(), ["n"]);

        let mut words = DataFrame::new_infer_height(vec![
            Series::new("w".into(), ["a", "bb", "ccc"]).into_column(),
            Series::new("x".into(), [1.0, 2.0, 3.0]).into_column(),
        ])
        .unwrap();
        let bytes = archived(&mut words);
        let c = rkyv::access::<ArchivedFrameChunk, rkyv::rancor::Error>(&bytes).unwrap();
        let copied = unsafe { map_archived(c, Some(&["w".to_string()])) }.unwrap();
        assert!(copied.equals_missing(&words.select(["w"]).unwrap()));
    }
}
