//! L2 eviction between cold reps, and the small utility kernels of
//! `kernels/harness/flush.cu` the timer and the self-check need.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{driver_err, sources, Gpu};
use crate::error::{GvrError, Result};

/// Threads per block of the flush kernel; the grid is a few blocks per SM
/// with a grid-stride loop, enough to saturate HBM write bandwidth.
const FLUSH_THREADS: u32 = 512;
const FLUSH_BLOCKS_PER_SM: u32 = 4;

pub struct L2Flusher {
    gpu: Arc<Gpu>,
    buffer: CudaSlice<u8>,
    /// Number of 16-byte stores one flush issues.
    words16: u64,
    salt: u32,
    flush_l2: CudaFunction,
    spin: CudaFunction,
    noop: CudaFunction,
}

impl L2Flusher {
    /// Allocate the flush buffer once (`bytes`, rounded down to 16 B) and
    /// load the utility kernels.
    pub fn new(gpu: &Arc<Gpu>, bytes: usize) -> Result<L2Flusher> {
        let words16 = (bytes / 16) as u64;
        if words16 == 0 {
            return Err(GvrError::Usage(format!(
                "flush size {bytes} B is too small (need >= 16 B)"
            )));
        }
        if (bytes as u64) < 2 * gpu.facts.l2_bytes {
            tracing::warn!(
                "flush buffer {} MiB is less than twice the L2 ({} MiB): cold reps may not be cold",
                bytes >> 20,
                gpu.facts.l2_bytes >> 20
            );
        }
        let module = gpu.module(&sources::FLUSH, &[])?;
        // SAFETY: the buffer is only ever written by the flush kernel; its
        // contents are never read.
        let buffer = unsafe { gpu.stream.alloc::<u8>(words16 as usize * 16) }
            .map_err(driver_err("allocating the L2 flush buffer"))?;
        Ok(L2Flusher {
            gpu: gpu.clone(),
            buffer,
            words16,
            salt: 0,
            flush_l2: gpu.function(&module, "flush_l2")?,
            spin: gpu.function(&module, "flush_spin")?,
            noop: gpu.function(&module, "flush_noop_probe")?,
        })
    }

    pub fn bytes(&self) -> usize {
        self.words16 as usize * 16
    }

    /// Enqueue one full write of the flush buffer.
    pub fn flush(&mut self) -> Result<()> {
        self.salt = self.salt.wrapping_add(0x9e37_79b9);
        let config = LaunchConfig {
            grid_dim: (self.gpu.facts.sms.max(1) * FLUSH_BLOCKS_PER_SM, 1, 1),
            block_dim: (FLUSH_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let stream = self.gpu.stream.clone();
        let mut launch = stream.launch_builder(&self.flush_l2);
        launch
            .arg(&mut self.buffer)
            .arg(&self.words16)
            .arg(&self.salt);
        // SAFETY: argument list matches `flush_l2(uint4*, u64, u32)`; the
        // buffer holds `words16` 16-byte words.
        unsafe { launch.launch(config) }.map_err(kernel_err("flush_l2"))?;
        Ok(())
    }

    /// Enqueue a single-thread busy-wait of `cycles` SM clocks.
    pub fn spin(&self, cycles: u64) -> Result<()> {
        let stream = self.gpu.stream.clone();
        let mut launch = stream.launch_builder(&self.spin);
        launch.arg(&cycles);
        // SAFETY: argument list matches `flush_spin(u64)`.
        unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }
            .map_err(kernel_err("flush_spin"))?;
        Ok(())
    }

    /// Enqueue the empty probe kernel.
    pub fn noop(&self) -> Result<()> {
        let stream = self.gpu.stream.clone();
        let mut launch = stream.launch_builder(&self.noop);
        // SAFETY: `flush_noop_probe()` takes no arguments.
        unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }
            .map_err(kernel_err("flush_noop_probe"))?;
        Ok(())
    }
}

fn kernel_err(name: &'static str) -> impl Fn(cudarc::driver::DriverError) -> GvrError {
    move |e| GvrError::Kernel {
        name: name.to_string(),
        message: format!("launch failed: {e:?}"),
    }
}
