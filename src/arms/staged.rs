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

/// Tuning switch of the register family's launches: `GVR_SS_NEXT_WAVE=on|off`
/// turns the next-wave L2 prefetch (`ss_prefetch_next_wave`,
/// kernels/ss_common.cuh) on or off against [`NEXT_WAVE_DEFAULT`]; a launch
/// that differs from the default says so in its variant (`+wave` / `+nowave`),
/// so one device run compares both on the same inputs.
pub const NEXT_WAVE_ENV: &str = "GVR_SS_NEXT_WAVE";

/// The next-wave prefetch when `GVR_SS_NEXT_WAVE` is unset. Off: issued
/// behind the row's loads it measured 0.994 (kernels/TUNING.md, 2026-12-03e);
/// the placement after the histogram has not been measured yet.
pub const NEXT_WAVE_DEFAULT: bool = false;

/// The variant suffix of a launch whose next-wave setting is not the default.
pub fn next_wave_suffix(on: bool) -> &'static str {
    match (on == NEXT_WAVE_DEFAULT, on) {
        (true, _) => "",
        (false, true) => "+wave",
        (false, false) => "+nowave",
    }
}

/// The next-wave setting `GVR_SS_NEXT_WAVE` asks for (unset: the default),
/// or a usage error naming the accepted values.
pub fn next_wave_from_env() -> Result<bool> {
    match std::env::var(NEXT_WAVE_ENV) {
        Err(_) => Ok(NEXT_WAVE_DEFAULT),
        Ok(v) if v == "on" => Ok(true),
        Ok(v) if v == "off" => Ok(false),
        Ok(v) => Err(GvrError::Usage(format!(
            "{NEXT_WAVE_ENV}={v} is not a setting; use on or off"
        ))),
    }
}

/// Share of the L2 that one wave's prefetched rows may fill (H200: 60 MiB;
/// the rows of the running wave stream through the rest).
const NEXT_WAVE_L2_SHARE: u64 = 2;

/// The `ahead` kernel scalar of a one-CTA-per-row launch: `resident` (the
/// CTAs the device holds at once) when the launch has a later wave and one
/// wave of `row_bytes` rows fits in its share of an `l2_bytes` L2, else 0
/// (no prefetch).
pub fn next_wave_ahead(rows: u64, resident: u64, row_bytes: u64, l2_bytes: u64) -> u32 {
    let fits = resident.saturating_mul(row_bytes) <= l2_bytes / NEXT_WAVE_L2_SHARE;
    if resident == 0 || rows <= resident || !fits {
        return 0;
    }
    u32::try_from(resident).unwrap_or(0)
}

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

    /// CTAs of the current entry the whole device holds at once with `block`
    /// threads and `dyn_smem` bytes of dynamic shared memory (the driver's
    /// occupancy calculator times the SM count).
    pub fn resident_ctas(&self, block: u32, dyn_smem: u32) -> Result<u64> {
        let (name, function) = self.function.as_ref().ok_or_else(|| self.not_staged())?;
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(block, dyn_smem as usize, None)
            .map_err(|e| GvrError::Kernel {
                name: name.clone(),
                message: format!("cuOccupancyMaxActiveBlocksPerMultiprocessor: {e:?}"),
            })?;
        Ok(u64::from(per_sm) * u64::from(self.gpu.facts.sms))
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

#[cfg(test)]
mod tests {
    use super::*;

    const L2: u64 = 60 << 20;

    #[test]
    fn only_a_non_default_next_wave_setting_marks_the_variant() {
        assert_eq!(next_wave_suffix(NEXT_WAVE_DEFAULT), "");
        let other = next_wave_suffix(!NEXT_WAVE_DEFAULT);
        assert_eq!(
            other,
            if NEXT_WAVE_DEFAULT {
                "+nowave"
            } else {
                "+wave"
            }
        );
    }

    #[test]
    fn next_wave_ahead_is_the_resident_count_only_when_a_later_wave_exists() {
        assert_eq!(next_wave_ahead(256, 132, 65_536, L2), 132);
        assert_eq!(next_wave_ahead(133, 132, 65_536, L2), 132);
        assert_eq!(next_wave_ahead(132, 132, 65_536, L2), 0, "one wave");
        assert_eq!(next_wave_ahead(1, 132, 65_536, L2), 0);
        assert_eq!(next_wave_ahead(256, 0, 65_536, L2), 0, "nothing resident");
    }

    #[test]
    fn next_wave_ahead_stays_off_when_a_wave_of_rows_overfills_its_l2_share() {
        // 528 resident rows of 64K floats (135 MB) cannot wait in a 60 MiB L2.
        assert_eq!(next_wave_ahead(1024, 528, 262_144, L2), 0);
        // At exactly half the L2 it still prefetches.
        assert_eq!(next_wave_ahead(1024, 480, L2 / 2 / 480, L2), 480);
        assert_eq!(next_wave_ahead(1024, 480, L2 / 2 / 480 + 1, L2), 0);
    }
}
