//! `radix`: TensorRT-LLM-style one-CTA-per-row radix top-K (`kernels/radix.cu`).

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, RADIX};
use crate::gpu::PushKernelArg;

/// Threads per CTA; must match `RADIX_BLK` in `kernels/radix.cu`.
pub const BLOCK: u32 = 512;
pub const ENTRY: &str = "radix_topk";

pub const SPLIT_ENTRY: &str = "radix_topk_split";

/// Row length from which the split tier pays off, by batch size (the
/// upstream host dispatcher's thresholds; `None` = never split).
pub fn split_threshold(rows: usize) -> Option<usize> {
    match rows {
        r if r >= 128 => None,
        r if r >= 64 => Some(524 * 1024),
        r if r > 8 => Some(200_000),
        _ => Some(65 * 1024),
    }
}

/// CTAs per row in the split tier (upstream defaults: 10, more for tiny
/// batches of very long rows, keeping >= 30 000 elements per CTA at B = 1).
pub fn split_ctas_per_row(rows: usize, n: usize) -> usize {
    match rows {
        1 => (n / 30_000).clamp(2, 32),
        2 if n >= 400_000 => 16,
        4 if n >= 400_000 => 14,
        8 if n >= 500_000 => 12,
        _ => 10,
    }
}

/// Tier "per-row" (one CTA per row) unless the batch is small and its rows
/// long, then tier "split" (`ctas_per_row` CTAs per row plus an in-kernel
/// last-CTA merge of their candidates). Rows of a split launch that are too
/// short to split are done by one CTA inside the same launch.
pub fn plan(
    rows: usize,
    n_max: usize,
    _npad: usize,
    k: usize,
    _sms: usize,
) -> Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    let too_big = |what: &str| format!("{what} does not fit a 32-bit grid");
    let split = split_threshold(rows).is_some_and(|t| n_max >= t);
    if split {
        let bpr = split_ctas_per_row(rows, n_max);
        let grid = rows
            .checked_mul(bpr)
            .and_then(|g| u32::try_from(g).ok())
            .ok_or_else(|| too_big("rows × CTAs"))?;
        // Slices must hold more than k elements (see kernels/radix.cu).
        if n_max >= bpr * (k + 8) {
            return Ok(LaunchPlan {
                entry: SPLIT_ENTRY,
                tier: "split",
                grid,
                block: BLOCK,
                dyn_smem_bytes: 0,
                ctas_per_row: bpr as u32,
                chunk: 0,
                grid_barrier: false,
            });
        }
    }
    let grid = u32::try_from(rows).map_err(|_| too_big("rows"))?;
    Ok(LaunchPlan {
        entry: ENTRY,
        tier: "per-row",
        grid,
        block: BLOCK,
        dyn_smem_bytes: 0,
        ctas_per_row: 1,
        chunk: 0,
        grid_barrier: false,
    })
}

/// Workspace bytes of the split tier: done counters (padded to 16 bytes),
/// then candidate values and indices, `rows × ctas_per_row × k` each.
pub fn split_workspace_bytes(rows: usize, ctas_per_row: usize, k: usize) -> usize {
    (rows.div_ceil(4) * 4 + 2 * rows * ctas_per_row * k) * 4
}

pub fn plan_for(shape: &Shape, sms: usize) -> Result<LaunchPlan, String> {
    plan(shape.rows, shape.n, shape.npad, shape.k, sms)
}

/// The `radix` arm's kernel.
pub struct Radix;

impl BaselineKernel for Radix {
    fn arm_name(&self) -> &'static str {
        "radix"
    }

    fn source(&self) -> KernelSource {
        RADIX
    }

    fn plan(&self, shape: &Shape, sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan_for(shape, sms)
    }

    fn workspace_bytes(&self, plan: &LaunchPlan, shape: &Shape) -> usize {
        if plan.entry == SPLIT_ENTRY {
            split_workspace_bytes(shape.rows, plan.ctas_per_row as usize, shape.k)
        } else {
            0
        }
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        let batch = ctx.batch;
        let rows = arg_u32(batch.rows, "rows")?;
        let npad = arg_u32(batch.npad, "npad")?;
        let k = arg_u32(batch.k, "k")?;
        let bpr = ctx.plan.ctas_per_row;
        let split = ctx.plan.entry == SPLIT_ENTRY;
        let workspace_bytes = split_workspace_bytes(batch.rows, bpr as usize, batch.k);
        let workspace = if split {
            Some(ctx.workspace.ensure(workspace_bytes)?)
        } else {
            None
        };
        let mut args = ctx.gpu.stream.launch_builder(ctx.function);
        args.arg(&batch.logits)
            .arg(&batch.n)
            .arg(&batch.hints)
            .arg(&mut batch.output)
            .arg(&rows)
            .arg(&npad)
            .arg(&k);
        if let Some(workspace) = workspace {
            args.arg(&bpr).arg(workspace);
        }
        // SAFETY: the argument lists match `radix_topk` / `radix_topk_split`
        // in kernels/radix.cu (pointers to [rows*npad] f32, [rows] i32,
        // [rows*k] i32, [rows*k] i32, three u32; the split entry adds bpr and
        // a zeroed workspace of split_workspace_bytes). The grid is one CTA
        // (per-row) or bpr CTAs (split) per staged row.
        unsafe { args.launch(ctx.plan.config()) }.map_err(launch_err(ctx.plan.entry))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_has_a_consistent_plan() {
        let mut rows = 1usize;
        while rows <= 8192 {
            for n in [
                0usize,
                1,
                512,
                2049,
                65_535,
                66_560,
                200_000,
                262_127,
                524_288,
                1 << 20,
            ] {
                for k in [512usize, 1024, 2048] {
                    let p = plan(rows, n, n.div_ceil(64) * 64, k, 132).unwrap();
                    let bpr = p.ctas_per_row as usize;
                    assert_eq!(p.grid as usize, rows * bpr, "{rows}x{n}");
                    assert!(!p.grid_barrier && p.dyn_smem_bytes == 0);
                    match p.entry {
                        ENTRY => assert_eq!(bpr, 1),
                        SPLIT_ENTRY => {
                            assert!((2..=32).contains(&bpr), "{rows}x{n}: bpr {bpr}");
                            // Every slice of the longest row holds more than k elements.
                            assert!(n >= bpr * (k + 8), "{rows}x{n}x{k}: bpr {bpr}");
                            assert!(rows < 128);
                        }
                        other => panic!("unknown entry {other}"),
                    }
                }
            }
            rows = if rows < 16 { rows + 1 } else { rows * 2 };
        }
    }

    #[test]
    fn split_tier_follows_the_upstream_thresholds() {
        assert_eq!(
            plan(1, 65 * 1024 - 1, 66_560, 2048, 132).unwrap().tier,
            "per-row"
        );
        let p = plan(1, 262_144, 262_144, 2048, 132).unwrap();
        assert_eq!((p.tier, p.ctas_per_row), ("split", 8));
        assert_eq!(
            plan(1, 1 << 20, 1 << 20, 512, 132).unwrap().ctas_per_row,
            32
        );
        assert_eq!(
            plan(16, 199_999, 200_000, 2048, 132).unwrap().tier,
            "per-row"
        );
        assert_eq!(
            plan(16, 200_000, 200_000, 2048, 132).unwrap().ctas_per_row,
            10
        );
        assert_eq!(
            plan(2, 400_000, 400_000, 2048, 132).unwrap().ctas_per_row,
            16
        );
        assert_eq!(
            plan(128, 1 << 20, 1 << 20, 2048, 132).unwrap().tier,
            "per-row"
        );
        // B = 1, n = 70K, k = 2048: 2 slices of 35K > k + 8.
        assert_eq!(plan(1, 70_000, 70_016, 2048, 132).unwrap().ctas_per_row, 2);
    }

    #[test]
    fn split_workspace_is_aligned_and_sized() {
        assert_eq!(split_workspace_bytes(1, 8, 2048), (4 + 2 * 8 * 2048) * 4);
        assert_eq!(split_workspace_bytes(5, 10, 512) % 16, 0);
    }

    #[test]
    fn rejects_rows_longer_than_the_contract() {
        assert!(plan(1, MAX_ROW_LEN + 1, MAX_ROW_LEN + 64, 512, 132).is_err());
    }
}
