//! A host [`Batch`] staged on the device, plus zero-initialised scratch.
//!
//! Layout (what every kernel receives, byte-identical across arms):
//! - `logits`: f32 `[rows, npad]`, row stride `npad` (a multiple of 64);
//! - `n`: i32 `[rows]`, valid length of each row;
//! - `hints`: i32 `[rows, k]`, previous step's top-K (may hold -1 or junk);
//! - `output`: i32 `[rows, k]`, written by the arm.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtrMut};

use super::{driver_err, Gpu};
use crate::error::{GvrError, Result};
use crate::exact::UNWRITTEN;
use crate::grid::Batch;

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
    pub fn upload(gpu: &Arc<Gpu>, batch: &Batch) -> Result<DeviceBatch> {
        validate(batch)?;
        let stream = &gpu.stream;
        let n_i32: Vec<i32> = batch.n.iter().map(|&len| len as i32).collect();
        let logits = stream
            .clone_htod(&batch.logits)
            .map_err(driver_err("upload logits"))?;
        let n = stream.clone_htod(&n_i32).map_err(driver_err("upload n"))?;
        let hints = stream
            .clone_htod(&batch.hints)
            .map_err(driver_err("upload hints"))?;
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
}
