//! The varlen top-K on the GPU: one plan, one kernel launch per call (plus
//! the optional values gather), nothing read back to the host — so a call
//! can be captured into a CUDA graph and replayed while `kv_lens` grows on
//! the device.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig};

use super::plan::VarlenPlan;
use crate::error::{GvrError, Result};
use crate::gpu::launch::KernelArgs;
use crate::gpu::sources::SS_VALUES;
use crate::gpu::{Gpu, Workspace};
use crate::topk::families::FamilyLaunch;
use crate::topk::{Plan, Tuning};

/// Device buffers of one call. `kv_lens` has one entry per request;
/// `hints` (when the plan reads hints) is request-level `[requests, k]`;
/// `indices` and `values` are `[rows, k]`.
pub struct VarlenIo<'a> {
    pub logits: &'a CudaSlice<f32>,
    pub kv_lens: &'a CudaSlice<i32>,
    pub hints: Option<&'a CudaSlice<i32>>,
    pub indices: &'a mut CudaSlice<i32>,
    pub values: Option<&'a mut CudaSlice<f32>>,
}

/// A planned, compiled varlen launcher.
pub struct VarlenTopK {
    gpu: Arc<Gpu>,
    plan: VarlenPlan,
    function: CudaFunction,
    values: CudaFunction,
    /// Zeroed once at construction (never during capture); SPLIT kernels
    /// restore it to zero themselves.
    workspace: Workspace,
}

const VALUES_BLOCK: u32 = 256;

/// Bytes of workspace a plan launches with (a small dummy for non-SPLIT plans).
fn workspace_len(plan: &VarlenPlan) -> usize {
    plan.workspace_bytes().max(256)
}

fn usage(message: String) -> GvrError {
    GvrError::Usage(format!("varlen top-K: {message}"))
}

impl VarlenTopK {
    /// Compile the plan's entry point and allocate its workspace. Do this
    /// before capturing a graph: it allocates and may compile.
    pub fn new(gpu: &Arc<Gpu>, plan: VarlenPlan) -> Result<VarlenTopK> {
        // Varlen register launches never prefetch the next wave (ahead = 0;
        // the kernel's prefetch takes per-row lengths only): they run the
        // build without it, as `ss-reg` does for such launches.
        let launch = plan.launch.launch();
        let build = launch.builds(&Tuning::production()).swap_remove(0);
        let (entry, smem) = (launch.entry(), launch.config().shared_mem_bytes);
        let module = gpu.module(&build.source, &build.defines)?;
        let function = gpu.function(&module, &entry)?;
        if smem > 48 * 1024 {
            gpu.set_max_dynamic_smem(&function, smem as usize)?;
        }
        let values_module = gpu.module(&SS_VALUES, &[])?;
        let values = gpu.function(&values_module, "ss_gather_values")?;
        // Allocated here, never in `launch` (a capture must not allocate); main
        // entries take the pointer even when not SPLIT, so there is always one.
        let mut workspace = Workspace::new(gpu);
        workspace.ensure(workspace_len(&plan))?;
        Ok(VarlenTopK {
            gpu: gpu.clone(),
            plan,
            function,
            values,
            workspace,
        })
    }

    pub fn plan(&self) -> &VarlenPlan {
        &self.plan
    }

    /// Check every buffer against the plan (sizes only: nothing is read).
    fn check(&self, io: &VarlenIo<'_>) -> Result<()> {
        let s = &self.plan.shape;
        let need = |what: &str, have: usize, want: usize| {
            if have < want {
                Err(usage(format!(
                    "{what} holds {have} elements, the launch needs {want}"
                )))
            } else {
                Ok(())
            }
        };
        need("logits", io.logits.len(), s.rows * s.npad)?;
        if io.kv_lens.len() != s.requests() {
            return Err(usage(format!(
                "kv_lens holds {} entries for {} requests ({} rows / next_n {})",
                io.kv_lens.len(),
                s.requests(),
                s.rows,
                s.next_n
            )));
        }
        match (self.plan.hints, io.hints) {
            (true, Some(h)) => need("hints", h.len(), s.requests() * s.k)?,
            (true, None) => {
                return Err(usage(
                    "the plan reads request-level hints and none were given".into(),
                ))
            }
            (false, Some(_)) => {
                return Err(usage(
                    "hints given to a hint-free plan (plan with hints instead)".into(),
                ))
            }
            (false, None) => {}
        }
        need("indices", io.indices.len(), s.rows * s.k)?;
        if let Some(v) = io.values.as_ref() {
            need("values", v.len(), s.rows * s.k)?;
        }
        Ok(())
    }

    /// Enqueue the top-K (and the values gather) on the GPU's stream. No
    /// host read, no allocation: safe inside a CUDA-graph capture.
    pub fn launch(&mut self, io: &mut VarlenIo<'_>) -> Result<()> {
        self.check(io)?;
        let s = self.plan.shape;
        let gpu = &self.gpu;
        let mut args = KernelArgs::new();
        args.buffer(gpu, io.logits).buffer(gpu, io.kv_lens);
        match io.hints {
            Some(h) => args.buffer(gpu, h),
            None => args.null(),
        };
        args.buffer(gpu, io.indices);
        // SAFETY (every family): the argument lists match the entry points —
        // (f32 logits [rows*npad], i32 lens, i32 hints or null, i32 out
        // [rows*k], by-value params[, workspace]) — with `lens` read as
        // per-request kv_lens (params.next_n ≥ 1) and hints request-level;
        // every buffer size was checked above; grid/block/smem/cluster come
        // from the family plan the params were built for.
        match &self.plan.launch {
            Plan::Main(p) => {
                args.value(p.args);
                let ws = self.workspace.ensure(workspace_len(&self.plan))?;
                args.buffer(gpu, ws);
                unsafe { gpu.launch_raw(&self.function, p.config(), &mut args) }?;
            }
            Plan::Reg(p) => {
                args.value(p.args);
                unsafe { gpu.launch_raw(&self.function, p.config(), &mut args) }?;
            }
            Plan::Clus(p) => {
                args.value(p.args);
                unsafe {
                    gpu.launch_cluster(&self.function, p.config(), (p.cluster, 1, 1), &mut args)
                }?;
            }
            Plan::RegClus(p) => {
                args.value(p.args);
                unsafe {
                    gpu.launch_cluster(&self.function, p.config(), (p.cluster, 1, 1), &mut args)
                }?;
            }
        }
        if let Some(values) = io.values.as_deref_mut() {
            let total = (s.rows * s.k) as u64;
            let blocks = total.div_ceil(VALUES_BLOCK as u64).min(4 * 1024) as u32;
            let mut v = KernelArgs::new();
            v.buffer(gpu, io.logits)
                .buffer(gpu, io.indices)
                .buffer(gpu, values)
                .value(s.rows as u32)
                .value(s.npad as u32)
                .value(s.k as u32);
            let cfg = LaunchConfig {
                grid_dim: (blocks.max(1), 1, 1),
                block_dim: (VALUES_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: ss_gather_values(const float*, const i32*, float*, u32
            // rows, u32 npad, u32 k) over buffers checked above.
            unsafe { gpu.launch_raw(&self.values, cfg, &mut v) }?;
        }
        Ok(())
    }
}
