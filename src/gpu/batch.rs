//! A host [`Batch`] staged on the device, plus zero-initialised scratch.
//!
//! Layout (what every kernel receives, byte-identical across arms):
//! - `logits`: f32 `[rows, npad]`, row stride `npad` (a multiple of 64);
//! - `n`: i32 `[rows]`, valid length of each row;
//! - `hints`: i32 `[rows, k]`, previous step's top-K (may hold -1 or junk);
//! - `output`: i32 `[rows, k]`, written by the arm.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use super::{driver_err, Gpu};
use crate::error::{GvrError, Result};
use crate::grid::Batch;
pub use crate::grid::UNWRITTEN;

/// Name used in input errors about a batch (it has no file of its own).
const BATCH_LABEL: &str = "<batch>";

pub struct DeviceBatch {
    pub gpu: Arc<Gpu>,
    pub rows: usize,
    pub npad: usize,
    pub k: usize,
    pub logits: CudaSlice<f32>,
    pub n: CudaSlice<i32>,
    pub hints: CudaSlice<i32>,
    pub output: CudaSlice<i32>,
}

/// Check that the host batch is internally consistent before any copy, so a
/// bad batch is an input error naming the field, never an out-of-bounds read.
fn validate(batch: &Batch) -> Result<()> {
    let bad = |field: &str, message: String| Err(GvrError::input(BATCH_LABEL, field, message));
    if batch.rows == 0 {
        return bad("rows", "a batch needs at least one row".into());
    }
    if batch.k == 0 {
        return bad("k", "k must be positive".into());
    }
    if batch.npad == 0 || !batch.npad.is_multiple_of(64) {
        return bad(
            "npad",
            format!("{} is not a positive multiple of 64", batch.npad),
        );
    }
    if batch.npad > i32::MAX as usize {
        return bad(
            "npad",
            format!("{} does not fit the kernels' i32 indices", batch.npad),
        );
    }
    let expected = batch.rows.checked_mul(batch.npad);
    if expected != Some(batch.logits.len()) {
        return bad(
            "logits",
            format!(
                "{} values for {} rows × npad {}",
                batch.logits.len(),
                batch.rows,
                batch.npad
            ),
        );
    }
    if batch.n.len() != batch.rows {
        return bad(
            "n",
            format!("{} lengths for {} rows", batch.n.len(), batch.rows),
        );
    }
    if let Some((row, len)) = batch
        .n
        .iter()
        .enumerate()
        .find(|(_, &len)| len as usize > batch.npad)
    {
        return bad(
            "n",
            format!("row {row}: n = {len} exceeds npad {}", batch.npad),
        );
    }
    if batch.rows.checked_mul(batch.k) != Some(batch.hints.len()) {
        return bad(
            "hints",
            format!(
                "{} hints for {} rows × k {}",
                batch.hints.len(),
                batch.rows,
                batch.k
            ),
        );
    }
    Ok(())
}

impl DeviceBatch {
    /// Copy `batch` to the device (synchronously: staging is never timed)
    /// and poison the output.
    ///
    /// When the campaign has shared this batch's inputs on the device
    /// ([`StagedInputs::share`]), they are copied device-to-device instead
    /// (~1 ms per GiB instead of a host upload of ~0.1 s per GiB per arm).
    pub fn upload(gpu: &Arc<Gpu>, batch: &Batch) -> Result<DeviceBatch> {
        validate(batch)?;
        let stream = &gpu.stream;
        let (logits, n, hints) = match gpu.shared_inputs_for(batch) {
            Some(shared) => (
                stream
                    .clone_dtod(&shared.logits)
                    .map_err(driver_err("copy shared logits"))?,
                stream
                    .clone_dtod(&shared.n)
                    .map_err(driver_err("copy shared n"))?,
                stream
                    .clone_dtod(&shared.hints)
                    .map_err(driver_err("copy shared hints"))?,
            ),
            None => {
                let n_i32: Vec<i32> = batch.n.iter().map(|&len| len as i32).collect();
                (
                    stream
                        .clone_htod(&batch.logits)
                        .map_err(driver_err("upload logits"))?,
                    stream.clone_htod(&n_i32).map_err(driver_err("upload n"))?,
                    stream
                        .clone_htod(&batch.hints)
                        .map_err(driver_err("upload hints"))?,
                )
            }
        };
        // SAFETY: poisoned right below, before anyone reads it.
        let output = unsafe { stream.alloc::<i32>(batch.rows * batch.k) }
            .map_err(driver_err("alloc output"))?;
        let mut staged = DeviceBatch {
            gpu: gpu.clone(),
            rows: batch.rows,
            npad: batch.npad,
            k: batch.k,
            logits,
            n,
            hints,
            output,
        };
        staged.poison_output()?;
        gpu.synchronize()?;
        Ok(staged)
    }

    /// Fill the output with `exact::UNWRITTEN` (enqueued on the stream).
    pub fn poison_output(&mut self) -> Result<()> {
        let len = self.output.len();
        let stream = self.gpu.stream.clone();
        let (ptr, _guard) = self.output.device_ptr_mut(&stream);
        // SAFETY: `ptr` addresses `len` i32 slots owned by `self.output`.
        let status = unsafe {
            cudarc::driver::sys::cuMemsetD32Async(ptr, UNWRITTEN as u32, len, stream.cu_stream())
        };
        if status != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
            return Err(GvrError::Gpu(format!(
                "cuMemsetD32Async (poison output): {status:?}"
            )));
        }
        Ok(())
    }

    /// The `[rows, k]` output; waits for the stream.
    pub fn download_output(&self) -> Result<Vec<i32>> {
        self.gpu
            .stream
            .clone_dtoh(&self.output)
            .map_err(driver_err("download output"))
    }
}

/// Identity of a host batch while it is alive: the addresses and lengths of
/// its buffers. Only compared while a [`SharedInputs`] guard holds the batch
/// (an `Arc`), so no other batch can reuse the addresses meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchIdentity {
    logits: (usize, usize),
    n: (usize, usize),
    hints: (usize, usize),
    rows: usize,
    npad: usize,
    k: usize,
}

impl BatchIdentity {
    pub fn of(batch: &Batch) -> BatchIdentity {
        BatchIdentity {
            logits: (batch.logits.as_ptr() as usize, batch.logits.len()),
            n: (batch.n.as_ptr() as usize, batch.n.len()),
            hints: (batch.hints.as_ptr() as usize, batch.hints.len()),
            rows: batch.rows,
            npad: batch.npad,
            k: batch.k,
        }
    }
}

/// One device copy of a case's inputs (logits, n, hints), made once per
/// case and copied device-to-device into each arm's [`DeviceBatch`].
pub struct StagedInputs {
    identity: BatchIdentity,
    pub logits: CudaSlice<f32>,
    pub n: CudaSlice<i32>,
    pub hints: CudaSlice<i32>,
    /// Rows actually sent from the host (the rest were replicated on the device).
    pub uploaded_rows: usize,
}

/// The device copies that build `rows` rows from the first `period` ones by
/// doubling: `(source row, destination row, rows)`; every copy reads rows
/// already in place and never overlaps its destination.
pub fn replication_copies(period: usize, rows: usize) -> Vec<(usize, usize, usize)> {
    let mut copies = Vec::new();
    let mut filled = period.min(rows);
    while filled > 0 && filled < rows {
        let count = filled.min(rows - filled);
        copies.push((0, filled, count));
        filled += count;
    }
    copies
}

impl StagedInputs {
    /// Upload `batch`'s inputs. `row_period`: the caller's promise that row
    /// `r` equals row `r mod row_period` (replicated rows, see
    /// `Batch::row_period`); only those first rows cross PCIe, the rest are
    /// copied on the device. A promise the rows do not keep is ignored (the
    /// full batch is uploaded, with a warning).
    pub fn upload(gpu: &Arc<Gpu>, batch: &Batch, row_period: usize) -> Result<StagedInputs> {
        validate(batch)?;
        let stream = &gpu.stream;
        let period = if batch.repeats_with_period(row_period) {
            row_period
        } else {
            if row_period < batch.rows {
                tracing::warn!(
                    "batch rows do not repeat with period {row_period}; uploading all {} rows",
                    batch.rows
                );
            }
            batch.rows
        };
        let npad = batch.npad;
        // SAFETY: every element is written below (upload + replication)
        // before the stream synchronises and anyone reads it.
        let mut logits = unsafe { stream.alloc::<f32>(batch.rows * npad) }
            .map_err(driver_err("alloc shared logits"))?;
        stream
            .memcpy_htod(
                &batch.logits[..period * npad],
                &mut logits.slice_mut(0..period * npad),
            )
            .map_err(driver_err("upload shared logits"))?;
        let row_bytes = npad * std::mem::size_of::<f32>();
        {
            let (base, _guard) = logits.device_ptr(stream);
            for (src, dst, count) in replication_copies(period, batch.rows) {
                // SAFETY: both ranges lie inside `logits` (dst + count <=
                // rows) and do not overlap (src + count <= dst).
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        base + (dst * row_bytes) as u64,
                        base + (src * row_bytes) as u64,
                        count * row_bytes,
                        stream.cu_stream(),
                    )
                }
                .map_err(driver_err("replicate shared rows"))?;
            }
        }
        let n_i32: Vec<i32> = batch.n.iter().map(|&len| len as i32).collect();
        let n = stream
            .clone_htod(&n_i32)
            .map_err(driver_err("upload shared n"))?;
        let hints = stream
            .clone_htod(&batch.hints)
            .map_err(driver_err("upload shared hints"))?;
        gpu.synchronize()?;
        Ok(StagedInputs {
            identity: BatchIdentity::of(batch),
            logits,
            n,
            hints,
            uploaded_rows: period,
        })
    }

    /// Upload `batch` and offer it to every `DeviceBatch::upload` of the
    /// same batch until the returned guard drops.
    pub fn share(gpu: &Arc<Gpu>, batch: Arc<Batch>, row_period: usize) -> Result<SharedInputs> {
        let staged = Arc::new(StagedInputs::upload(gpu, &batch, row_period)?);
        gpu.set_shared_inputs(Some(Arc::clone(&staged)));
        Ok(SharedInputs {
            gpu: Arc::clone(gpu),
            batch,
            staged,
        })
    }

    pub fn identity(&self) -> BatchIdentity {
        self.identity
    }
}

/// Keeps a case's shared device inputs registered (and its host batch
/// alive); unregisters on drop.
pub struct SharedInputs {
    gpu: Arc<Gpu>,
    batch: Arc<Batch>,
    staged: Arc<StagedInputs>,
}

impl SharedInputs {
    pub fn uploaded_rows(&self) -> usize {
        self.staged.uploaded_rows
    }

    pub fn batch(&self) -> &Arc<Batch> {
        &self.batch
    }
}

impl Drop for SharedInputs {
    fn drop(&mut self) {
        self.gpu.clear_shared_inputs(self.staged.identity);
    }
}

/// Grow-only device scratch for arms that need zero-initialised global
/// memory (counters, histograms). `zero()` is an enqueued memset, so an arm
/// that must clear scratch per call does it inside `launch` and the cost is
/// timed like any other required device work.
pub struct Workspace {
    gpu: Arc<Gpu>,
    buffer: Option<CudaSlice<u8>>,
}

impl Workspace {
    pub fn new(gpu: &Arc<Gpu>) -> Workspace {
        Workspace {
            gpu: gpu.clone(),
            buffer: None,
        }
    }

    /// At least `bytes` of zeroed scratch (reallocates only when growing).
    pub fn ensure(&mut self, bytes: usize) -> Result<&mut CudaSlice<u8>> {
        let too_small = self.buffer.as_ref().is_none_or(|b| b.len() < bytes);
        if too_small {
            self.buffer = Some(self.gpu.zeroed::<u8>(bytes.max(256))?);
        }
        self.buffer
            .as_mut()
            .ok_or_else(|| GvrError::Other(anyhow::anyhow!("workspace missing after allocation")))
    }

    /// Enqueue a memset of the whole scratch to zero.
    pub fn zero(&mut self) -> Result<()> {
        let stream = self.gpu.stream.clone();
        if let Some(buffer) = self.buffer.as_mut() {
            stream
                .memset_zeros(buffer)
                .map_err(driver_err("zero workspace"))?;
        }
        Ok(())
    }

    pub fn bytes(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.len())
    }

    /// u32 word `word` of the scratch, read after the stream's work so far
    /// (a synchronous copy: never inside a timed window).
    pub fn read_u32(&self, word: usize) -> Result<u32> {
        let buffer = self
            .buffer
            .as_ref()
            .ok_or_else(|| GvrError::Other(anyhow::anyhow!("workspace read before allocation")))?;
        let at = word * 4;
        if at + 4 > buffer.len() {
            return Err(GvrError::Other(anyhow::anyhow!(
                "workspace word {word} is past its {} bytes",
                buffer.len()
            )));
        }
        let bytes = self
            .gpu
            .stream
            .clone_dtoh(&buffer.slice(at..at + 4))
            .map_err(driver_err("read workspace"))?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(rows: usize, npad: usize, k: usize) -> Batch {
        Batch {
            rows,
            npad,
            k,
            logits: vec![0.0; rows * npad],
            n: vec![npad as u32; rows],
            hints: vec![-1; rows * k],
            varlen: None,
        }
    }

    fn field_of(result: Result<()>) -> String {
        match result {
            Err(GvrError::Input { field, .. }) => field,
            other => panic!("expected an input error, got {other:?}"),
        }
    }

    #[test]
    fn consistent_batch_passes() {
        validate(&batch(2, 128, 4)).unwrap();
    }

    #[test]
    fn inconsistent_batches_name_the_field() {
        let mut b = batch(2, 128, 4);
        b.npad = 100;
        assert_eq!(field_of(validate(&b)), "npad");
        let mut b = batch(2, 128, 4);
        b.logits.pop();
        assert_eq!(field_of(validate(&b)), "logits");
        let mut b = batch(2, 128, 4);
        b.n[1] = 129;
        assert_eq!(field_of(validate(&b)), "n");
        let mut b = batch(2, 128, 4);
        b.hints.push(0);
        assert_eq!(field_of(validate(&b)), "hints");
        assert_eq!(field_of(validate(&batch(0, 128, 4))), "rows");
        assert_eq!(field_of(validate(&batch(1, 128, 0))), "k");
    }

    #[test]
    fn replication_doubles_without_overlap_and_covers_every_row() {
        for period in 1..6 {
            for rows in period..70 {
                let copies = replication_copies(period, rows);
                let mut filled = period;
                for &(src, dst, count) in &copies {
                    assert_eq!(dst, filled, "copies must extend the filled prefix");
                    assert!(src + count <= dst, "overlap: {copies:?}");
                    // Periodicity is preserved: dst rows map to src rows mod period.
                    assert_eq!(dst % period, src % period);
                    filled += count;
                }
                assert_eq!(filled, rows, "period {period} rows {rows}: {copies:?}");
                assert!(copies.len() <= 1 + (rows as f64 / period as f64).log2().ceil() as usize);
            }
        }
        assert!(replication_copies(4, 4).is_empty());
        assert!(replication_copies(8, 3).is_empty());
    }

    #[test]
    fn repeat_check_accepts_replicas_and_rejects_a_changed_row() {
        let rows: Vec<Vec<f32>> = (0..6)
            .map(|r| (0..100).map(|i| ((r % 3) * 1000 + i) as f32).collect())
            .collect();
        let mut b = Batch::from_rows(&rows, 128, 4, f32::MIN);
        assert!(b.repeats_with_period(3));
        assert!(b.repeats_with_period(6));
        assert!(!b.repeats_with_period(2));
        assert!(!b.repeats_with_period(0));
        assert!(!b.repeats_with_period(7));
        // A different hint in a replica breaks the promise.
        b.hints[5 * 4] = 9;
        assert!(!b.repeats_with_period(3));
        let mut b = Batch::from_rows(&rows, 128, 4, f32::MIN);
        b.n[4] = 99;
        assert!(!b.repeats_with_period(3));
    }

    #[test]
    fn identity_tells_batches_apart() {
        let a = batch(2, 128, 4);
        let b = a.clone();
        assert_eq!(BatchIdentity::of(&a), BatchIdentity::of(&a));
        assert_ne!(BatchIdentity::of(&a), BatchIdentity::of(&b));
    }
}
