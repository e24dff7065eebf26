//! `radix-mcta`: single-pass multi-CTA radix top-K (`kernels/baselines/radix_mcta.cu`).
//!
//! A group of `ctas_per_row` CTAs serves one row at a time and groups loop
//! over rows. The CTAs of a group meet at a software barrier, so the whole
//! grid must be co-resident: the plan never launches more CTAs than the
//! device has SMs (the kernel always fits at least one CTA per SM).

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, RADIX_MCTA};
use crate::gpu::PushKernelArg;

/// Threads per CTA; must match `MCTA_BLK` in `kernels/baselines/radix_mcta.cu`.
pub const BLOCK: u32 = 1024;
pub const ENTRY: &str = "radix_mcta_topk";
/// u32 words of workspace per group; must match `MCTA_WS_WORDS`.
pub const WS_WORDS_PER_GROUP: usize = 1024;
/// Opt-in shared memory per block on sm_90 (H100/H200: 227 KiB).
pub const SMEM_OPTIN_BYTES: usize = 232_448;
/// Static shared memory of the kernel (≈1.2 KB measured with ptxas) plus headroom.
pub const STATIC_SMEM_RESERVE: usize = 2048;
/// Chunks are multiples of this many elements: keeps every CTA's first
/// float4 16-byte aligned (row stride is a multiple of 64 too).
pub const CHUNK_ALIGN: usize = 64;
/// Largest chunk a CTA can stage as u32 keys.
pub const MAX_CHUNK: usize =
    (SMEM_OPTIN_BYTES - STATIC_SMEM_RESERVE) / 4 / CHUNK_ALIGN * CHUNK_ALIGN;
/// Small-batch floor on the chunk, so a row is not spread thinner than this.
const MIN_SPLIT_CHUNK: usize = 8192;
/// A two-way split below this chunk costs more in barriers than it saves.
const MIN_TWO_WAY_CHUNK: usize = 32_768;

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// Launch shape for `rows` rows of at most `n_max` elements on `sms` SMs
/// (upstream's chunk rule, with the co-residency cap).
pub fn plan(
    rows: usize,
    n_max: usize,
    _npad: usize,
    _k: usize,
    sms: usize,
) -> Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    if sms == 0 {
        return Err("device reports no SMs".into());
    }
    let n = n_max.max(1);
    let min_cpg = n.div_ceil(MAX_CHUNK);
    let mut cpg = if rows == 0 || sms / rows <= 1 {
        // Large batch: as few CTAs per row as shared memory allows.
        min_cpg
    } else {
        // Small batch: spread a row over the SMs the batch leaves idle.
        let share = sms / rows;
        let chunk = n.div_ceil(share).max(MIN_SPLIT_CHUNK);
        if n.div_ceil(chunk) == 2 && chunk < MIN_TWO_WAY_CHUNK && n <= MAX_CHUNK {
            1
        } else {
            let chunk = chunk.next_power_of_two().min(MAX_CHUNK);
            n.div_ceil(chunk)
        }
    };
    cpg = cpg.max(min_cpg).max(1);
    let chunk = round_up(n.div_ceil(cpg), CHUNK_ALIGN).min(MAX_CHUNK);
    // Rounding the chunk up may leave trailing CTAs empty; drop them.
    let cpg = n.div_ceil(chunk);
    if cpg > sms {
        return Err(format!(
            "a row of {n_max} needs {cpg} co-resident CTAs of {MAX_CHUNK} keys, the device has {sms} SMs"
        ));
    }
    let groups = (sms / cpg).min(rows.max(1)).max(1);
    let to_u32 =
        |v: usize| u32::try_from(v).map_err(|_| format!("{v} does not fit a launch dimension"));
    Ok(LaunchPlan {
        entry: ENTRY,
        tier: if cpg == 1 { "mcta-1" } else { "mcta-split" },
        grid: to_u32(groups * cpg)?,
        block: BLOCK,
        dyn_smem_bytes: to_u32(chunk * 4)?,
        ctas_per_row: to_u32(cpg)?,
        chunk: to_u32(chunk)?,
        grid_barrier: true,
    })
}

pub fn plan_for(shape: &Shape, sms: usize) -> Result<LaunchPlan, String> {
    plan(shape.rows, shape.n, shape.npad, shape.k, sms)
}

/// Workspace words the plan needs (one block per group).
pub fn workspace_words(plan: &LaunchPlan) -> usize {
    (plan.grid / plan.ctas_per_row.max(1)) as usize * WS_WORDS_PER_GROUP
}

/// The `radix-mcta` arm's kernel.
pub struct RadixMcta;

impl BaselineKernel for RadixMcta {
    fn arm_name(&self) -> &'static str {
        "radix-mcta"
    }

    fn source(&self) -> KernelSource {
        RADIX_MCTA
    }

    fn plan(&self, shape: &Shape, sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan_for(shape, sms)
    }

    fn workspace_bytes(&self, plan: &LaunchPlan, _shape: &Shape) -> usize {
        workspace_words(plan) * 4
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        let batch = ctx.batch;
        let rows = arg_u32(batch.rows, "rows")?;
        let npad = arg_u32(batch.npad, "npad")?;
        let k = arg_u32(batch.k, "k")?;
        let cpg = ctx.plan.ctas_per_row;
        let chunk = ctx.plan.chunk;
        let workspace = ctx.workspace.ensure(workspace_words(ctx.plan) * 4)?;
        let mut args = ctx.gpu.stream.launch_builder(ctx.function);
        args.arg(&batch.logits)
            .arg(&batch.n)
            .arg(&batch.hints)
            .arg(&mut batch.output)
            .arg(&rows)
            .arg(&npad)
            .arg(&k)
            .arg(&cpg)
            .arg(&chunk)
            .arg(workspace);
        // SAFETY: the argument list matches `radix_mcta_topk` in
        // kernels/baselines/radix_mcta.cu; the workspace holds one zeroed block per
        // group. A cooperative launch makes the driver refuse a grid that
        // cannot be co-resident instead of letting the software barrier hang.
        unsafe { args.launch_cooperative(ctx.plan.config()) }.map_err(launch_err(ENTRY))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMS: usize = 132;

    fn check(rows: usize, n: usize, sms: usize) -> LaunchPlan {
        let p = plan(rows, n, round_up(n.max(1), 64), 2048, sms)
            .unwrap_or_else(|e| panic!("{rows}x{n}: {e}"));
        let cpg = p.ctas_per_row as usize;
        let chunk = p.chunk as usize;
        assert!(
            p.grid as usize <= sms,
            "{rows}x{n}: grid {} > {sms} SMs (co-residency)",
            p.grid
        );
        assert_eq!(p.grid as usize % cpg, 0, "grid is whole groups");
        assert!(chunk.is_multiple_of(CHUNK_ALIGN) && chunk > 0 && chunk <= MAX_CHUNK);
        assert!(
            chunk * cpg >= n,
            "{rows}x{n}: chunks {cpg}x{chunk} do not cover the row"
        );
        assert!(
            chunk * (cpg - 1) < n.max(1),
            "{rows}x{n}: a CTA would be empty on the longest row"
        );
        assert_eq!(p.dyn_smem_bytes as usize, chunk * 4);
        assert!(p.dyn_smem_bytes as usize + STATIC_SMEM_RESERVE <= SMEM_OPTIN_BYTES);
        let groups = p.grid as usize / cpg;
        assert!(groups >= 1 && groups <= rows.max(1));
        p
    }

    #[test]
    fn every_shape_fits_and_is_co_resident() {
        let mut rows = 1usize;
        while rows <= 8192 {
            for n in [
                0usize,
                1,
                63,
                512,
                2048,
                8191,
                16_384,
                65_535,
                65_536,
                131_072,
                262_127,
                524_288,
                1 << 20,
            ] {
                for k in [512usize, 1024, 2048] {
                    let p = check(rows, n, SMS);
                    let q = plan(rows, n, round_up(n.max(1), 64), k, SMS).unwrap();
                    assert_eq!(p, q, "plan does not depend on k");
                }
            }
            rows = if rows < 16 { rows + 1 } else { rows * 2 };
        }
    }

    #[test]
    fn small_batches_split_long_rows_large_batches_do_not() {
        assert!(check(1, 262_144, SMS).ctas_per_row > 1);
        assert_eq!(check(1024, 32_768, SMS).ctas_per_row, 1);
        // Longest contract row needs ceil(2^20 / MAX_CHUNK) CTAs even at large batch.
        assert_eq!(
            check(1024, 1 << 20, SMS).ctas_per_row as usize,
            (1usize << 20).div_ceil(MAX_CHUNK)
        );
    }

    #[test]
    fn two_way_split_of_a_short_row_becomes_one_cta() {
        // sms/rows = 2 and n = 40K: chunk 20K < 32K, so one CTA stages the row.
        assert_eq!(check(66, 40_000, SMS).ctas_per_row, 1);
    }

    #[test]
    fn small_devices_refuse_rows_they_cannot_hold() {
        assert!(plan(1, 1 << 20, 1 << 20, 2048, 8).is_err());
        assert!(plan(1, 1000, 1024, 512, 0).is_err());
        check(1, 1 << 20, 19);
    }

    #[test]
    fn workspace_covers_every_group() {
        let p = check(1, 262_144, SMS);
        assert_eq!(workspace_words(&p), WS_WORDS_PER_GROUP);
        let p = check(1024, 4096, SMS);
        assert_eq!(workspace_words(&p), SMS * WS_WORDS_PER_GROUP);
    }
}
