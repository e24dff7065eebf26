//! What every self-sampling family arm holds between `stage` and
//! `read_output`: the entry point its current plan launches and the staged
//! batch. The arms differ only in their plans and by-value parameters: every
//! one launches through [`StagedLaunch::launch_rows`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig};

use crate::error::{GvrError, Result};
use crate::gpu::sources::KernelSource;
use crate::gpu::{DeviceBatch, Gpu, KernelArgs};
use crate::grid::Batch;

/// Above this much dynamic shared memory a kernel must opt in.
const DEFAULT_DYN_SMEM: u32 = 48 * 1024;

/// An on/off tuning switch of a family's launches, read from the
/// environment (`on` / `off`) against a default. A launch whose setting is not
/// the default names it in its variant, so one device run compares both on
/// the same inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TuningSwitch {
    pub env: &'static str,
    pub default: bool,
    /// Variant suffixes of a non-default setting, on and off.
    pub on_suffix: &'static str,
    pub off_suffix: &'static str,
}

impl TuningSwitch {
    /// The setting the environment asks for (unset: the default), or a usage
    /// error naming the accepted values.
    pub fn from_env(&self) -> Result<bool> {
        match std::env::var(self.env) {
            Err(_) => Ok(self.default),
            Ok(v) => self.parse(&v),
        }
    }

    fn parse(&self, value: &str) -> Result<bool> {
        match value {
            "on" => Ok(true),
            "off" => Ok(false),
            v => Err(GvrError::Usage(format!(
                "{}={v} is not a setting; use on or off",
                self.env
            ))),
        }
    }

    /// The variant suffix of `on`: empty at the default.
    pub fn suffix(&self, on: bool) -> &'static str {
        match (on == self.default, on) {
            (true, _) => "",
            (false, true) => self.on_suffix,
            (false, false) => self.off_suffix,
        }
    }
}

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

pub struct StagedLaunch {
    gpu: Arc<Gpu>,
    /// Arm name, for error messages.
    arm: &'static str,
    /// The current plan's function and what it was built from.
    function: Option<(BuildKey, CudaFunction)>,
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
        let wanted = BuildKey::new(entry, defines);
        if self.function.as_ref().is_none_or(|(key, _)| *key != wanted) {
            let module = self.gpu.module(source, defines)?;
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
        let (key, function) = self.function.as_ref().ok_or_else(|| self.not_staged())?;
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(block, dyn_smem as usize, None)
            .map_err(|e| GvrError::Kernel {
                name: key.entry.clone(),
                message: format!("cuOccupancyMaxActiveBlocksPerMultiprocessor: {e:?}"),
            })?;
        Ok(u64::from(per_sm))
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
            (Some((key, function)), Some(batch)) => Ok((key.entry.as_str(), function, batch)),
            _ => Err(not_staged),
        }
    }

    /// Launch the current entry over the staged batch with the argument list
    /// the top-K families share: logits, row lengths, hints, output, then
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
        &mut self,
        params: P,
        config: LaunchConfig,
        cluster: Option<u32>,
        workspace: Option<&CudaSlice<u8>>,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        let (entry, function, batch) = self.parts()?;
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

    const DEMO: TuningSwitch = TuningSwitch {
        env: "GVR_DEMO_SWITCH",
        default: false,
        on_suffix: "+demo",
        off_suffix: "+nodemo",
    };

    #[test]
    fn a_switch_takes_on_or_off_only() {
        assert!(DEMO.parse("on").unwrap());
        assert!(!DEMO.parse("off").unwrap());
        for bad in ["ON", "1", "true", ""] {
            let err = DEMO.parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("GVR_DEMO_SWITCH") && err.contains("use on or off"),
                "{err}"
            );
        }
    }
}
