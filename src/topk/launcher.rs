//! The loaded entry point of a family's current plan, and the argument list
//! every self-sampling family launches with: logits, row lengths, hints,
//! output, the family's by-value parameters, then the workspace where the
//! entry takes one. The arms stage the batch; this only loads and launches.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig};

use crate::error::{GvrError, Result};
use crate::gpu::{DeviceBatch, Gpu, KernelArgs, KernelBuild};

/// Above this much dynamic shared memory a kernel must opt in.
const DEFAULT_DYN_SMEM: u32 = 48 * 1024;

/// What a loaded function was built from: its entry point and the defines of
/// its module (one arm loads one source). Two builds of one entry with
/// different defines (the register family's next-wave prefetch compiled in or
/// out) are different functions.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BuildKey {
    entry: String,
    defines: Vec<(String, String)>,
}

impl BuildKey {
    fn new(entry: &str, defines: &[(&str, String)]) -> BuildKey {
        BuildKey {
            entry: entry.to_string(),
            defines: defines
                .iter()
                .map(|(name, value)| (name.to_string(), value.clone()))
                .collect(),
        }
    }
}

pub struct Launcher {
    gpu: Arc<Gpu>,
    /// Arm name, for error messages.
    arm: String,
    /// The current plan's function and what it was built from.
    function: Option<(BuildKey, CudaFunction)>,
}

impl Launcher {
    pub fn new(gpu: Arc<Gpu>, arm: &str) -> Launcher {
        Launcher {
            gpu,
            arm: arm.to_string(),
            function: None,
        }
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The error of a launch before any `load`.
    pub fn not_loaded(&self) -> GvrError {
        GvrError::Other(anyhow::anyhow!("arm {}: launch before stage", self.arm))
    }

    /// Make `entry` of `build` the current function, loading it only when
    /// it changes, and let it launch with `dyn_smem` bytes of dynamic shared
    /// memory (`Gpu::set_max_dynamic_smem` raises the cap to the device's
    /// limit, so one opt-in serves every later plan).
    pub fn load(&mut self, build: &KernelBuild, entry: &str, dyn_smem: u32) -> Result<()> {
        let wanted = BuildKey::new(entry, &build.defines);
        if self.function.as_ref().is_none_or(|(key, _)| *key != wanted) {
            let module = self.gpu.module(&build.source, &build.defines)?;
            let function = self.gpu.function(&module, entry)?;
            self.function = Some((wanted, function));
        }
        if dyn_smem > DEFAULT_DYN_SMEM {
            if let Some((_, f)) = &self.function {
                self.gpu.set_max_dynamic_smem(f, dyn_smem as usize)?;
            }
        }
        Ok(())
    }

    /// CTAs of the current entry one SM holds at once with `block` threads
    /// and `dyn_smem` bytes of dynamic shared memory (the driver's occupancy
    /// calculator).
    pub fn resident_ctas_per_sm(&self, block: u32, dyn_smem: u32) -> Result<u64> {
        let (key, function) = self.function.as_ref().ok_or_else(|| self.not_loaded())?;
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(block, dyn_smem as usize, None)
            .map_err(|e| GvrError::Kernel {
                name: key.entry.clone(),
                message: format!("cuOccupancyMaxActiveBlocksPerMultiprocessor: {e:?}"),
            })?;
        Ok(u64::from(per_sm))
    }

    /// Launch the current entry over `batch` with the argument list the
    /// top-K families share: logits, row lengths, hints, output, then
    /// `params` by value, then `workspace` where the entry takes one (main's
    /// SPLIT counters); as clusters of `cluster` CTAs along x where given.
    /// A failed launch is reported under the entry's name.
    ///
    /// # Safety
    /// The entry's parameters must be exactly that list, `P` laid out as the
    /// kernel's params struct, the workspace as large as the kernel uses, and
    /// `config` (grid, block, dynamic shared memory) what the kernel's layout
    /// needs for the staged batch.
    pub unsafe fn launch_rows<P: DeviceRepr + Copy>(
        &self,
        batch: &mut DeviceBatch,
        params: P,
        config: LaunchConfig,
        cluster: Option<u32>,
        workspace: Option<&CudaSlice<u8>>,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        let (key, function) = self.function.as_ref().ok_or_else(|| self.not_loaded())?;
        let entry = key.entry.as_str();
        let mut args = KernelArgs::new();
        args.buffer(&gpu, &batch.logits)
            .buffer(&gpu, &batch.n)
            .buffer(&gpu, &batch.hints)
            .buffer(&gpu, &batch.output)
            .value(params);
        if let Some(workspace) = workspace {
            args.buffer(&gpu, workspace);
        }
        // SAFETY: forwarded from the caller.
        let launched = unsafe {
            match cluster {
                Some(cluster) => gpu.launch_cluster(function, config, (cluster, 1, 1), &mut args),
                None => gpu.launch_raw(function, config, &mut args),
            }
        };
        launched.map_err(|e| match e {
            GvrError::Kernel { message, .. } => GvrError::Kernel {
                name: entry.to_string(),
                message,
            },
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_key_changes_with_the_entry_or_any_define() {
        let on = [("SS_NEXT_WAVE_PREFETCH", "1".to_string())];
        let off = [("SS_NEXT_WAVE_PREFETCH", "0".to_string())];
        let base = BuildKey::new("ss_reg_b1024_v4", &on);
        assert_eq!(base, BuildKey::new("ss_reg_b1024_v4", &on));
        assert_ne!(base, BuildKey::new("ss_reg_b1024_v4", &off));
        assert_ne!(base, BuildKey::new("ss_reg_b1024_v4", &[]));
        assert_ne!(base, BuildKey::new("ss_reg_b512_v4", &on));
    }
}
