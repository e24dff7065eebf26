//! Host wrappers of the GPU baseline arms (`radix`, `radix-mcta`, and the
//! ones other files add). Every baseline shares one arm implementation,
//! [`GpuBaselineArm`]; what differs per arm is a [`BaselineKernel`]: its CUDA
//! source, its launch plan (a pure function of the shape, unit-tested on the
//! CPU) and how it binds kernel arguments.
//!
//! Adding an arm = one file in `baselines/` with a unit struct that
//! implements [`BaselineKernel`], plus one line in [`KERNELS`].

pub mod filtered;
pub mod gvr1;
#[cfg(test)]
mod model;
pub mod radix;
pub mod radix_mcta;
pub mod sglang_v2;

use std::sync::Arc;

use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::sources::{Defines, KernelSource};
use crate::gpu::{CudaFunction, DeviceBatch, Gpu, Workspace};
use crate::grid::Batch;

/// Longest row any baseline accepts (the contract's n ≤ 2^20).
pub const MAX_ROW_LEN: usize = 1 << 20;

/// The K values the baselines are built and tested for.
pub const SUPPORTED_K: [usize; 3] = [512, 1024, 2048];

/// How one launch of an arm is shaped. Pure data so plans can be tested
/// without a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchPlan {
    /// `extern "C"` entry point.
    pub entry: &'static str,
    /// Tier name recorded as the arm's variant.
    pub tier: &'static str,
    /// CTAs in the (1-D) grid.
    pub grid: u32,
    /// Threads per CTA.
    pub block: u32,
    pub dyn_smem_bytes: u32,
    /// CTAs that cooperate on one row (1 = one CTA per row).
    pub ctas_per_row: u32,
    /// Row elements each cooperating CTA owns (0 = the whole row).
    pub chunk: u32,
    /// CTAs wait on each other through a software barrier, so the whole
    /// grid must be co-resident (`grid` ≤ SMs × CTAs per SM).
    pub grid_barrier: bool,
}

impl LaunchPlan {
    pub fn config(&self) -> crate::gpu::LaunchConfig {
        crate::gpu::LaunchConfig {
            grid_dim: (self.grid, 1, 1),
            block_dim: (self.block, 1, 1),
            shared_mem_bytes: self.dyn_smem_bytes,
        }
    }

    /// `tier` plus the launch shape, as recorded in result records.
    pub fn describe(&self) -> String {
        if self.ctas_per_row > 1 && self.chunk > 0 {
            format!(
                "{} ({} CTAs/row × {} keys, grid {})",
                self.tier, self.ctas_per_row, self.chunk, self.grid
            )
        } else if self.ctas_per_row > 1 {
            format!(
                "{} ({} CTAs/row, grid {})",
                self.tier, self.ctas_per_row, self.grid
            )
        } else {
            format!("{} (grid {})", self.tier, self.grid)
        }
    }
}

/// Everything a kernel's `launch` may touch.
pub struct LaunchCtx<'a> {
    pub gpu: &'a Gpu,
    pub function: &'a CudaFunction,
    /// The functions of [`BaselineKernel::extra_entries`], in that order.
    pub extra: &'a [CudaFunction],
    pub batch: &'a mut DeviceBatch,
    /// Zero-initialised scratch of at least `workspace_bytes(plan)` bytes.
    pub workspace: &'a mut Workspace,
    pub plan: &'a LaunchPlan,
}

/// One baseline kernel: the per-arm part of a GPU baseline.
pub trait BaselineKernel: Send + Sync {
    /// Arm name on the command line.
    fn arm_name(&self) -> &'static str;
    fn source(&self) -> KernelSource;
    /// `-D` specialisation this arm compiles (must also be listed in
    /// `gpu::sources::variants`).
    fn defines(&self) -> Defines {
        Vec::new()
    }
    /// The launch for `shape` on a device with `sms` SMs; `Err(reason)` if
    /// the arm cannot run the shape.
    fn plan(&self, shape: &Shape, sms: usize) -> std::result::Result<LaunchPlan, String>;
    /// Scratch bytes the plan needs, zeroed once at allocation. Kernels that
    /// use scratch must leave it zeroed when they finish (or write every
    /// word before any launch of the call reads it).
    fn workspace_bytes(&self, _plan: &LaunchPlan, _shape: &Shape) -> usize {
        0
    }
    /// Entry points of the same module the call launches besides
    /// `plan.entry` (loaded with it; `LaunchCtx::extra` in this order).
    fn extra_entries(&self, _plan: &LaunchPlan) -> Vec<&'static str> {
        Vec::new()
    }
    /// Enqueue the kernel(s) on `ctx.gpu.stream`; no synchronisation.
    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()>;
    /// What the last call did that only the device knows (e.g. how many
    /// rows took an exact fallback), read after the call has finished,
    /// outside any timed window. See [`Arm::call_note`].
    fn call_note(
        &self,
        _gpu: &Gpu,
        _workspace: &Workspace,
        _plan: &LaunchPlan,
    ) -> Result<Option<String>> {
        Ok(None)
    }
}

/// The registry: one line per baseline arm.
static KERNELS: &[&dyn BaselineKernel] = &[
    &radix::Radix::PRODUCTION,
    &radix_mcta::RadixMcta,
    &filtered::Filtered::DISPATCHED,
    &filtered::Filtered::ONLY,
    &gvr1::Gvr1 { hint_offset: 0 },
    &sglang_v2::SglangV2,
];

/// Names of every baseline arm this module builds.
pub fn arm_names() -> Vec<&'static str> {
    KERNELS.iter().map(|k| k.arm_name()).collect()
}

/// Build the baseline arm `name`; `None` if it is not one of ours.
pub fn create(name: &str, gpu: Arc<Gpu>) -> Option<Result<Box<dyn Arm>>> {
    let kernel = KERNELS.iter().copied().find(|k| k.arm_name() == name)?;
    Some(Ok(Box::new(GpuBaselineArm::new(kernel, gpu))))
}

/// K values outside the supported set are refused (reported unsupported).
pub fn admits_k(k: usize) -> std::result::Result<(), String> {
    if SUPPORTED_K.contains(&k) {
        Ok(())
    } else {
        Err(format!("k = {k} is not one of {SUPPORTED_K:?}"))
    }
}

/// A GPU baseline arm: stages through `DeviceBatch`, plans per shape, builds
/// its module lazily through the GPU runtime's cache.
pub struct GpuBaselineArm {
    kernel: &'static dyn BaselineKernel,
    gpu: Arc<Gpu>,
    /// (entry, function) of the last plan's entry point.
    function: Option<(&'static str, CudaFunction)>,
    /// (names, functions) of the last plan's extra entry points.
    extra: (Vec<&'static str>, Vec<CudaFunction>),
    /// Largest dynamic shared memory the function is allowed so far.
    smem_allowed: u32,
    batch: Option<DeviceBatch>,
    plan: Option<LaunchPlan>,
    workspace: Workspace,
}

impl GpuBaselineArm {
    pub fn new(kernel: &'static dyn BaselineKernel, gpu: Arc<Gpu>) -> GpuBaselineArm {
        let workspace = Workspace::new(&gpu);
        GpuBaselineArm {
            kernel,
            gpu,
            function: None,
            extra: (Vec::new(), Vec::new()),
            smem_allowed: 0,
            batch: None,
            plan: None,
            workspace,
        }
    }

    fn sms(&self) -> usize {
        self.gpu.facts.sms as usize
    }

    fn ensure_function(&mut self, plan: &LaunchPlan) -> Result<()> {
        let extra_names = self.kernel.extra_entries(plan);
        let stale = self
            .function
            .as_ref()
            .is_none_or(|(entry, _)| *entry != plan.entry)
            || self.extra.0 != extra_names;
        if stale {
            let module = self
                .gpu
                .module(&self.kernel.source(), &self.kernel.defines())?;
            let function = self.gpu.function(&module, plan.entry)?;
            let extra = extra_names
                .iter()
                .map(|name| self.gpu.function(&module, name))
                .collect::<Result<Vec<_>>>()?;
            self.function = Some((plan.entry, function));
            self.extra = (extra_names, extra);
            self.smem_allowed = 0;
        }
        // Above the 48 KiB default a kernel must opt in to its dynamic smem.
        if plan.dyn_smem_bytes > self.smem_allowed {
            if let Some((_, f)) = &self.function {
                self.gpu
                    .set_max_dynamic_smem(f, plan.dyn_smem_bytes as usize)?;
            }
            for f in &self.extra.1 {
                self.gpu
                    .set_max_dynamic_smem(f, plan.dyn_smem_bytes as usize)?;
            }
            self.smem_allowed = plan.dyn_smem_bytes;
        }
        Ok(())
    }

    fn not_staged(&self) -> GvrError {
        GvrError::Other(anyhow::anyhow!(
            "arm {}: launch before stage",
            self.kernel.arm_name()
        ))
    }
}

impl Arm for GpuBaselineArm {
    fn name(&self) -> &str {
        self.kernel.arm_name()
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        admits_k(shape.k)?;
        if shape.n > MAX_ROW_LEN {
            return Err(format!("row length {} exceeds {MAX_ROW_LEN}", shape.n));
        }
        self.kernel.plan(shape, self.sms()).map(|_| ())
    }

    fn variant(&self, shape: &Shape) -> Option<String> {
        self.kernel
            .plan(shape, self.sms())
            .ok()
            .map(|p| p.describe())
    }

    fn builds(&self, shape: &Shape) -> Vec<crate::gpu::KernelBuild> {
        match self.admits(shape) {
            Ok(()) => vec![crate::gpu::KernelBuild {
                source: self.kernel.source(),
                defines: self.kernel.defines(),
            }],
            Err(_) => Vec::new(),
        }
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        let shape = Shape::of(batch);
        self.admits(&shape).map_err(|reason| {
            GvrError::Usage(format!(
                "arm {} does not admit this batch: {reason}",
                self.kernel.arm_name()
            ))
        })?;
        let plan = self
            .kernel
            .plan(&shape, self.sms())
            .map_err(GvrError::Usage)?;
        self.ensure_function(&plan)?;
        self.workspace
            .ensure(self.kernel.workspace_bytes(&plan, &shape))?;
        self.batch = None; // free the previous batch before uploading the next
        self.batch = Some(DeviceBatch::upload(&self.gpu, batch)?);
        self.plan = Some(plan);
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        // Also re-zero the scratch: a kernel that was aborted mid-row (a
        // trapped barrier) must not leave stale counters for the next launch.
        self.workspace.zero()?;
        match self.batch.as_mut() {
            Some(batch) => batch.poison_output(),
            None => Err(self.not_staged()),
        }
    }

    fn launch(&mut self) -> Result<()> {
        let plan = self.plan.ok_or_else(|| self.not_staged())?;
        if plan.grid == 0 {
            return Ok(());
        }
        // Disjoint field borrows: nothing is cloned inside the timed call.
        let (Some((_, function)), Some(batch)) = (&self.function, self.batch.as_mut()) else {
            return Err(GvrError::Other(anyhow::anyhow!(
                "arm {}: launch before stage",
                self.kernel.arm_name()
            )));
        };
        self.kernel.launch(LaunchCtx {
            gpu: &self.gpu,
            function,
            extra: &self.extra.1,
            batch,
            workspace: &mut self.workspace,
            plan: &plan,
        })
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        let batch = self.batch.as_ref().ok_or_else(|| self.not_staged())?;
        self.gpu.synchronize()?;
        batch.download_output()
    }

    fn call_note(&mut self) -> Option<String> {
        let plan = self.plan?;
        let note = self
            .gpu
            .synchronize()
            .and_then(|_| self.kernel.call_note(&self.gpu, &self.workspace, &plan));
        match note {
            Ok(note) => note,
            Err(e) => Some(format!("call note unread: {e}")),
        }
    }
}

/// Convert a u32-sized launch argument, naming it on overflow.
pub(crate) fn arg_u32(value: usize, what: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| {
        GvrError::Usage(format!(
            "{what} = {value} does not fit a 32-bit kernel argument"
        ))
    })
}

/// Map a launch error to `GvrError::Kernel` naming the entry point.
pub(crate) fn launch_err(entry: &str) -> impl Fn(cudarc::driver::DriverError) -> GvrError + '_ {
    move |e| GvrError::Kernel {
        name: entry.to_string(),
        message: format!("launch failed: {e:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_include_both_radix_arms() {
        let names = arm_names();
        assert!(
            names.contains(&"radix") && names.contains(&"radix-mcta"),
            "{names:?}"
        );
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }

    #[test]
    fn only_the_supported_k_are_admitted() {
        for k in SUPPORTED_K {
            admits_k(k).unwrap();
        }
        for k in [0, 1, 256, 513, 4096] {
            assert!(admits_k(k).is_err(), "k = {k}");
        }
    }

    #[test]
    fn describe_names_the_tier() {
        let shape = Shape {
            rows: 1,
            n: 262_144,
            npad: 262_144,
            k: 2048,
        };
        let p = radix_mcta::RadixMcta.plan(&shape, 132).unwrap();
        assert!(p.describe().starts_with("mcta-split"), "{}", p.describe());
        let p = radix::Radix::PRODUCTION.plan(&shape, 132).unwrap();
        assert_eq!(p.describe(), "multi-pass (128 CTAs/row, grid 128)");
        let p = radix::Radix::PRODUCTION
            .plan(
                &Shape {
                    rows: 1024,
                    ..shape
                },
                132,
            )
            .unwrap();
        assert_eq!(p.describe(), "per-row (grid 1024)");
    }
}
