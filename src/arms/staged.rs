//! What every self-sampling family arm holds between `stage` and
//! `read_output`: the entry point its current plan launches and the staged
//! batch. The arms differ only in their plans and launch arguments.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, DeviceRepr, LaunchConfig};

use crate::error::{GvrError, Result};
use crate::gpu::sources::KernelSource;
use crate::gpu::{DeviceBatch, Gpu, KernelArgs};
use crate::grid::Batch;

/// Above this much dynamic shared memory a kernel must opt in.
const DEFAULT_DYN_SMEM: u32 = 48 * 1024;

pub struct StagedLaunch {
    gpu: Arc<Gpu>,
    /// Arm name, for error messages.
    arm: &'static str,
    /// (entry name, function) of the current plan.
    function: Option<(String, CudaFunction)>,
    batch: Option<DeviceBatch>,
}

impl StagedLaunch {
    pub fn new(gpu: Arc<Gpu>, arm: &'static str) -> StagedLaunch {
        StagedLaunch {
            gpu,
            arm,
            function: None,
            batch: None,
        }
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The error of a launch or read-back before any `stage`.
    pub fn not_staged(&self) -> GvrError {
        GvrError::Other(anyhow::anyhow!("arm {}: launch before stage", self.arm))
    }

    /// Make `entry` of `source` (built with `defines`) the current function,
    /// loading it only when it changes, and let it launch with `dyn_smem`
    /// bytes of dynamic shared memory (`Gpu::set_max_dynamic_smem` raises the
    /// cap to the device's limit, so one opt-in serves every later plan).
    pub fn load(
        &mut self,
        source: &KernelSource,
        defines: &[(&str, String)],
        entry: &str,
        dyn_smem: u32,
    ) -> Result<()> {
        let stale = self.function.as_ref().is_none_or(|(name, _)| name != entry);
        if stale {
            let module = self.gpu.module(source, defines)?;
            let function = self.gpu.function(&module, entry)?;
            self.function = Some((entry.to_string(), function));
        }
        if dyn_smem > DEFAULT_DYN_SMEM {
            if let Some((_, f)) = &self.function {
                self.gpu.set_max_dynamic_smem(f, dyn_smem as usize)?;
            }
        }
        Ok(())
    }

    /// Upload `batch` (the previous one is freed first).
    pub fn stage(&mut self, batch: &Batch) -> Result<()> {
        self.batch = None;
        self.batch = Some(DeviceBatch::upload(&self.gpu, batch)?);
        Ok(())
    }

    pub fn poison_output(&mut self) -> Result<()> {
        match self.batch.as_mut() {
            Some(batch) => batch.poison_output(),
            None => Err(self.not_staged()),
        }
    }

    /// The current (entry name, function) and the staged batch.
    pub fn parts(&mut self) -> Result<(&str, &CudaFunction, &mut DeviceBatch)> {
        let not_staged = self.not_staged();
        match (&self.function, self.batch.as_mut()) {
            (Some((name, function)), Some(batch)) => Ok((name.as_str(), function, batch)),
            _ => Err(not_staged),
        }
    }

    /// Launch the current entry over the staged batch as clusters of
    /// `cluster` CTAs along x, with the argument list the clustered families
    /// share: logits, row lengths, hints, output, then `params` by value.
    ///
    /// # Safety
    /// The entry's parameters must be exactly that list, `P` laid out as the
    /// kernel's params struct, and `config` (grid, block, dynamic shared
    /// memory) what the kernel's layout needs for the staged batch.
    pub unsafe fn launch_cluster<P: DeviceRepr + Copy>(
        &mut self,
        params: P,
        config: LaunchConfig,
        cluster: u32,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        let (_, function, batch) = self.parts()?;
        let mut args = KernelArgs::new();
        args.buffer(&gpu, &batch.logits)
            .buffer(&gpu, &batch.n)
            .buffer(&gpu, &batch.hints)
            .buffer(&gpu, &batch.output)
            .value(params);
        // SAFETY: forwarded from the caller.
        unsafe { gpu.launch_cluster(function, config, (cluster, 1, 1), &mut args) }
    }

    /// The `[rows, k]` output, after the stream has finished.
    pub fn read_output(&self) -> Result<Vec<i32>> {
        let batch = self.batch.as_ref().ok_or_else(|| self.not_staged())?;
        self.gpu.synchronize()?;
        batch.download_output()
    }
}
