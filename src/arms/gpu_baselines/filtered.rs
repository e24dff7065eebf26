//! `filtered`: SGLang / FlashInfer FilteredTopK (`kernels/filtered.cu`).
//!
//! One 1024-thread CTA per row with 128 KiB of dynamic shared memory (two
//! ping-pong buffers of candidate indices), so at most one CTA per SM.

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, FILTERED};
use crate::gpu::PushKernelArg;

/// Threads per CTA; must match `FT_BLK` in `kernels/filtered.cu`.
pub const BLOCK: u32 = 1024;
pub const ENTRY: &str = "filtered_topk";
/// Candidate indices per ping-pong buffer; must match `FT_CAP`.
pub const CANDIDATE_CAP: usize = 16_384;
/// Dynamic shared memory: two buffers of `CANDIDATE_CAP` i32 indices.
pub const DYN_SMEM_BYTES: usize = 2 * CANDIDATE_CAP * 4;
/// Static shared memory of the kernel (2208 B per ptxas) plus headroom.
pub const STATIC_SMEM_RESERVE: usize = 4096;
/// Opt-in shared memory per block on sm_90 (H100/H200: 227 KiB).
pub const SMEM_OPTIN_BYTES: usize = 232_448;

/// One CTA per row; refuses rows beyond the contract and grids beyond u32.
pub fn plan(rows: usize, n_max: usize, k: usize) -> Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    if k > 2048 {
        return Err(format!("k = {k} exceeds the filtered kernel's 2048"));
    }
    let grid =
        u32::try_from(rows).map_err(|_| format!("rows = {rows} does not fit a 32-bit grid"))?;
    Ok(LaunchPlan {
        entry: ENTRY,
        tier: "per-row",
        grid,
        block: BLOCK,
        dyn_smem_bytes: DYN_SMEM_BYTES as u32,
        ctas_per_row: 1,
        chunk: 0,
        grid_barrier: false,
    })
}

/// The `filtered` arm's kernel.
pub struct Filtered;

impl BaselineKernel for Filtered {
    fn arm_name(&self) -> &'static str {
        "filtered"
    }

    fn source(&self) -> KernelSource {
        FILTERED
    }

    fn plan(&self, shape: &Shape, _sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan(shape.rows, shape.n, shape.k)
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        let batch = ctx.batch;
        let rows = arg_u32(batch.rows, "rows")?;
        let npad = arg_u32(batch.npad, "npad")?;
        let k = arg_u32(batch.k, "k")?;
        let mut args = ctx.gpu.stream.launch_builder(ctx.function);
        args.arg(&batch.logits)
            .arg(&batch.n)
            .arg(&batch.hints)
            .arg(&mut batch.output)
            .arg(&rows)
            .arg(&npad)
            .arg(&k);
        // SAFETY: the argument list matches `filtered_topk` in
        // kernels/filtered.cu (pointers to [rows*npad] f32, [rows] i32,
        // [rows*k] i32 hints, [rows*k] i32 output, then rows, npad, k as u32).
        // The grid is one CTA per staged row; the dynamic smem size was
        // opted in by the arm before staging.
        unsafe { args.launch(ctx.plan.config()) }.map_err(launch_err(ctx.plan.entry))?;
        Ok(())
    }
}

#[cfg(test)]
mod model;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cta_per_row_with_opt_in_smem() {
        for rows in [0usize, 1, 7, 1024, 70_000] {
            for k in [512usize, 1024, 2048] {
                let p = plan(rows, 262_144, k).unwrap();
                assert_eq!(p.grid as usize, rows);
                assert_eq!((p.block, p.ctas_per_row), (BLOCK, 1));
                assert_eq!(p.entry, ENTRY);
                assert!(!p.grid_barrier);
                assert!(p.dyn_smem_bytes as usize + STATIC_SMEM_RESERVE <= SMEM_OPTIN_BYTES);
                assert!(p.dyn_smem_bytes > 48 * 1024, "needs the opt-in path");
            }
        }
        assert_eq!(plan(3, 1000, 512).unwrap().describe(), "per-row (grid 3)");
    }

    #[test]
    fn refuses_what_the_kernel_cannot_do() {
        assert!(plan(1, MAX_ROW_LEN + 1, 512).is_err());
        assert!(plan(1, 1000, 4096).is_err());
        plan(1, MAX_ROW_LEN, 2048).unwrap();
    }

    /// The host constants must match the kernel's `#define`s.
    #[test]
    fn constants_match_the_kernel_source() {
        let define = |name: &str| -> u64 {
            let line = FILTERED
                .code
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("#define {name} missing"));
            let value = line.split_whitespace().nth(2).unwrap();
            value.trim_end_matches('u').parse().unwrap()
        };
        assert_eq!(define("FT_BLK"), BLOCK as u64, "FT_BLK");
        assert_eq!(define("FT_CAP"), CANDIDATE_CAP as u64, "FT_CAP");
        assert!(crate::gpu::sources::declared_entries(FILTERED.code).contains(&ENTRY.to_string()));
    }

    #[test]
    fn registered_under_its_arm_name() {
        assert!(super::super::arm_names().contains(&"filtered"));
    }
}
