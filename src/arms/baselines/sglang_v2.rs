//! `sglang-v2`: our own implementation of the SGLang DeepSeek-V4 top-K "v2"
//! design, timed as upstream's users call it, plan + transform
//! (`kernels/baselines/sglang_v2.cu`; docs/baselines.md). Raw indices out:
//! upstream's page-table transform of the indices is left out, as for every
//! other arm.
//!
//! One call is up to three launches, all inside the timed call:
//!
//! 1. `sglang_v2_plan` (one 1024-thread CTA): the per-batch plan in the
//!    workspace — the long-row threshold, the (row, n) list of long rows, and
//!    the fallback counter reset to 0;
//! 2. `sglang_v2_cluster8`, when [`route`] sends long rows to clusters
//!    (max n > 65,536 and B ≤ 128): persistent clusters of 8 CTAs, grid
//!    (min(B, 30), 8), DSMEM all-reduce of 10-bit histograms;
//! 3. the per-row kernel chosen by max n: `sglang_v2_reg2` (n ≤ 8,192),
//!    `sglang_v2_reg4` (n ≤ 16,384) or `sglang_v2_stream`, skipping the rows
//!    the cluster kernel owns.
//!
//! Exact on every input: where upstream drops the ties beyond its 1,024-entry
//! buffer, a row whose threshold bin overflows takes an exact fallback
//! (8-bit narrowing rounds over the fp32 key before the collect). The kernels
//! count those rows in workspace word [`WS_FALLBACK_WORD`]; the arm reads it
//! after the call (outside the timed window) and reports it per case as the
//! call note `fallback rows N` (appended to the record's variant).

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, SGLANG_V2};
use crate::gpu::{Gpu, LaunchConfig, PushKernelArg, Workspace};

/// Threads per CTA of every entry; must match `SG_BLK`.
pub const BLOCK: u32 = 1024;
pub const ENTRY_PLAN: &str = "sglang_v2_plan";
pub const ENTRY_REG2: &str = "sglang_v2_reg2";
pub const ENTRY_REG4: &str = "sglang_v2_reg4";
pub const ENTRY_STREAM: &str = "sglang_v2_stream";
pub const ENTRY_CLUSTER: &str = "sglang_v2_cluster8";
/// Longest row of the 2-float4-per-thread register entry (2 × 4 × 1024).
pub const REG2_MAX_N: usize = 8192;
/// Longest row of the 4-float4-per-thread register entry (4 × 4 × 1024).
pub const REG4_MAX_N: usize = 16_384;
/// Long rows go to clusters when the batch's longest row exceeds this ...
pub const CLUSTER_MIN_N: usize = 65_536;
/// ... and the batch has at most this many rows.
pub const CLUSTER_MAX_ROWS: usize = 128;
/// CTAs per cluster (`__cluster_dims__(1, 8, 1)`); must match `SG_CL_SIZE`.
pub const CLUSTER_SIZE: u32 = 8;
/// Persistent clusters at most, and the long rows the plan's threshold aims
/// for; must match `SG_POOL`.
pub const CLUSTER_POOL: usize = 30;
/// The plan kernel's long-row threshold candidates, smallest first.
pub const THRESHOLD_CANDIDATES: [usize; 5] = [65_536, 98_304, 131_072, 196_608, 262_144];
/// Tie buffer entries; must match `SG_TIE_CAP`. A threshold bin above this
/// takes the exact fallback.
pub const TIE_CAP: usize = 1024;
/// Dynamic shared memory of every entry; must match `SG_SMEM_BYTES`.
pub const SMEM_BYTES: u32 = 24_832;
/// Workspace word holding the rows that took the exact fallback in the last
/// call; must match `SG_WS_FALLBACK`.
pub const WS_FALLBACK_WORD: usize = 0;
/// First workspace word of the plan: {threshold, long rows}, then (row, n)
/// per long row; must match `SG_WS_META`.
pub const WS_META_WORD: usize = 4;

/// Tier names recorded as the arm's variant.
pub const TIER_REG2: &str = "register2";
pub const TIER_REG4: &str = "register4";
pub const TIER_STREAM: &str = "streaming";
pub const TIER_CLUSTER: &str = "cluster8+streaming";

/// The per-row kernel, specialised by the batch's longest row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowPath {
    /// The row held in registers, 2 float4 per thread.
    Register2,
    /// The row held in registers, 4 float4 per thread.
    Register4,
    /// Two passes over the row in global memory.
    Streaming,
}

impl RowPath {
    pub fn entry(self) -> &'static str {
        match self {
            RowPath::Register2 => ENTRY_REG2,
            RowPath::Register4 => ENTRY_REG4,
            RowPath::Streaming => ENTRY_STREAM,
        }
    }
}

/// What one call launches besides the plan kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub row: RowPath,
    /// Persistent clusters (the cluster grid's x) when long rows go to the
    /// cluster kernel; the per-row kernel then skips them.
    pub clusters: Option<u32>,
}

/// The host routing of the design for `rows` rows of at most `n_max`.
pub fn route(rows: usize, n_max: usize) -> Route {
    let row = if n_max <= REG2_MAX_N {
        RowPath::Register2
    } else if n_max <= REG4_MAX_N {
        RowPath::Register4
    } else {
        RowPath::Streaming
    };
    let clustered = rows > 0 && n_max > CLUSTER_MIN_N && rows <= CLUSTER_MAX_ROWS;
    Route {
        row,
        clusters: clustered.then(|| rows.min(CLUSTER_POOL) as u32),
    }
}

/// The threshold the plan kernel picks for these row lengths (a model of
/// `sg_plan_body`, for tests): the smallest candidate with at most
/// [`CLUSTER_POOL`] rows longer, else the largest. Rows longer than it are
/// the cluster kernel's when the route has clusters.
pub fn long_threshold(lengths: &[usize]) -> usize {
    THRESHOLD_CANDIDATES
        .iter()
        .copied()
        .find(|&c| lengths.iter().filter(|&&n| n > c).count() <= CLUSTER_POOL)
        .unwrap_or(THRESHOLD_CANDIDATES[THRESHOLD_CANDIDATES.len() - 1])
}

/// The launch plan for a batch: `entry` is the per-row kernel (the plan
/// kernel and, on [`TIER_CLUSTER`], the cluster kernel run before it).
pub fn plan(rows: usize, n_max: usize) -> std::result::Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    let grid =
        u32::try_from(rows).map_err(|_| format!("rows = {rows} does not fit a 32-bit grid"))?;
    let r = route(rows, n_max);
    let tier = match (r.clusters, r.row) {
        (Some(_), _) => TIER_CLUSTER,
        (None, RowPath::Register2) => TIER_REG2,
        (None, RowPath::Register4) => TIER_REG4,
        (None, RowPath::Streaming) => TIER_STREAM,
    };
    Ok(LaunchPlan {
        entry: r.row.entry(),
        tier,
        grid,
        block: BLOCK,
        dyn_smem_bytes: SMEM_BYTES,
        ctas_per_row: 1,
        chunk: 0,
        grid_barrier: false,
    })
}

/// Workspace words of a call on `rows` rows.
pub fn workspace_words(rows: usize) -> usize {
    WS_META_WORD + 2 + 2 * rows
}

/// The `sglang-v2` arm's kernels.
pub struct SglangV2;

impl BaselineKernel for SglangV2 {
    fn arm_name(&self) -> &'static str {
        "sglang-v2"
    }

    fn source(&self) -> KernelSource {
        SGLANG_V2
    }

    fn plan(&self, shape: &Shape, _sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan(shape.rows, shape.n)
    }

    /// The plan kernel writes every word the call reads before anything
    /// reads it, so the scratch needs no zeroing; the call leaves the plan
    /// and the fallback count behind (read by [`SglangV2::call_note`]).
    fn workspace_bytes(&self, _plan: &LaunchPlan, shape: &Shape) -> usize {
        workspace_words(shape.rows) * 4
    }

    /// `extra[0]` the plan kernel, `extra[1]` the cluster kernel.
    fn extra_entries(&self, _plan: &LaunchPlan) -> Vec<&'static str> {
        vec![ENTRY_PLAN, ENTRY_CLUSTER]
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        let batch = ctx.batch;
        let rows = arg_u32(batch.rows, "rows")?;
        let npad = arg_u32(batch.npad, "npad")?;
        let k = arg_u32(batch.k, "k")?;
        let (plan_fn, cluster_fn) = match ctx.extra {
            [p, c, ..] => (p, c),
            _ => {
                return Err(crate::error::GvrError::Other(anyhow::anyhow!(
                    "sglang-v2: the plan and cluster entries were not loaded"
                )))
            }
        };
        let ws = ctx.workspace.ensure(workspace_words(batch.rows) * 4)?;
        let clustered = ctx.plan.tier == TIER_CLUSTER;
        let config = |grid: (u32, u32, u32)| LaunchConfig {
            grid_dim: grid,
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: SMEM_BYTES,
        };

        // 1. The plan.
        let mut args = ctx.gpu.stream.launch_builder(plan_fn);
        args.arg(&batch.n).arg(&*ws).arg(&rows).arg(&npad);
        // SAFETY: matches `sglang_v2_plan(const i32* row_n, u32* ws, u32
        // rows, u32 npad)`; the workspace holds workspace_words(rows) u32.
        unsafe { args.launch(config((1, 1, 1))) }.map_err(launch_err(ENTRY_PLAN))?;

        // 2. The persistent clusters over the long rows.
        if clustered {
            let clusters = batch.rows.min(CLUSTER_POOL) as u32;
            let mut args = ctx.gpu.stream.launch_builder(cluster_fn);
            args.arg(&batch.logits)
                .arg(&*ws)
                .arg(&mut batch.output)
                .arg(&npad)
                .arg(&k);
            // SAFETY: matches `sglang_v2_cluster8(const float* logits, u32*
            // ws, i32* out, u32 npad, u32 k)`. The entry declares
            // `__cluster_dims__(1, 8, 1)`, so the ordinary launch forms the
            // clusters; grid y is exactly the cluster size. Rows and lengths
            // come from the plan the previous launch wrote on this stream.
            unsafe { args.launch(config((clusters, CLUSTER_SIZE, 1))) }
                .map_err(launch_err(ENTRY_CLUSTER))?;
        }

        // 3. The per-row kernel.
        let skip_long = u32::from(clustered);
        let mut args = ctx.gpu.stream.launch_builder(ctx.function);
        args.arg(&batch.logits)
            .arg(&batch.n)
            .arg(&*ws)
            .arg(&mut batch.output)
            .arg(&rows)
            .arg(&npad)
            .arg(&k)
            .arg(&skip_long);
        // SAFETY: matches `sglang_v2_{reg2,reg4,stream}(const float* logits,
        // const i32* row_n, u32* ws, i32* out, u32 rows, u32 npad, u32 k, u32
        // skip_long)` (pointers to [rows*npad] f32, [rows] i32, the
        // workspace, [rows*k] i32); one CTA per staged row.
        unsafe { args.launch(config((rows, 1, 1))) }.map_err(launch_err(ctx.plan.entry))?;
        Ok(())
    }

    fn call_note(
        &self,
        _gpu: &Gpu,
        workspace: &Workspace,
        _plan: &LaunchPlan,
    ) -> Result<Option<String>> {
        let rows = workspace.read_u32(WS_FALLBACK_WORD)?;
        Ok(Some(fallback_note(rows)))
    }
}

/// The call note of a call in which `rows` rows took the exact fallback.
pub fn fallback_note(rows: u32) -> String {
    format!("fallback rows {rows}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_path_follows_the_longest_row() {
        for (n, path) in [
            (0usize, RowPath::Register2),
            (2048, RowPath::Register2),
            (8192, RowPath::Register2),
            (8193, RowPath::Register4),
            (16_384, RowPath::Register4),
            (16_385, RowPath::Streaming),
            (65_536, RowPath::Streaming),
            (1 << 20, RowPath::Streaming),
        ] {
            for rows in [1usize, 64, 129, 4096] {
                assert_eq!(route(rows, n).row, path, "{rows}x{n}");
            }
        }
    }

    #[test]
    fn clusters_only_for_small_batches_of_long_rows() {
        assert_eq!(route(1, 65_536).clusters, None);
        assert_eq!(route(1, 65_537).clusters, Some(1));
        assert_eq!(route(30, 262_144).clusters, Some(30));
        assert_eq!(route(31, 262_144).clusters, Some(30));
        assert_eq!(route(128, 1 << 20).clusters, Some(30));
        assert_eq!(route(129, 1 << 20).clusters, None);
        assert_eq!(route(0, 1 << 20).clusters, None);
        // Clustered batches stream their other rows.
        assert_eq!(route(64, 131_072).row, RowPath::Streaming);
    }

    #[test]
    fn plan_names_the_tier_and_the_per_row_entry() {
        let cases = [
            ((1024usize, 4000usize), (ENTRY_REG2, TIER_REG2)),
            ((7, 16_000), (ENTRY_REG4, TIER_REG4)),
            ((129, 70_000), (ENTRY_STREAM, TIER_STREAM)),
            ((64, 40_000), (ENTRY_STREAM, TIER_STREAM)),
            ((8, 262_144), (ENTRY_STREAM, TIER_CLUSTER)),
        ];
        for ((rows, n), (entry, tier)) in cases {
            let p = plan(rows, n).unwrap();
            assert_eq!((p.entry, p.tier), (entry, tier), "{rows}x{n}");
            assert_eq!(p.grid as usize, rows);
            assert_eq!((p.block, p.dyn_smem_bytes), (BLOCK, SMEM_BYTES));
            assert_eq!((p.ctas_per_row, p.chunk, p.grid_barrier), (1, 0, false));
        }
        assert_eq!(
            plan(8, 262_144).unwrap().describe(),
            "cluster8+streaming (grid 8)"
        );
        assert!(plan(1, MAX_ROW_LEN + 1).is_err());
        plan(1, MAX_ROW_LEN).unwrap();
    }

    #[test]
    fn threshold_is_the_smallest_candidate_within_the_pool() {
        assert_eq!(long_threshold(&[]), 65_536);
        assert_eq!(long_threshold(&[1 << 20; 30]), 65_536);
        let mut lens = vec![70_000; 31];
        assert_eq!(long_threshold(&lens), 98_304);
        lens.extend([100_000; 30]);
        assert_eq!(
            long_threshold(&lens),
            98_304,
            "30 rows above 98,304 fit the pool"
        );
        lens.push(100_000);
        assert_eq!(long_threshold(&lens), 131_072);
        assert_eq!(long_threshold(&[300_000; 31]), 262_144, "none qualifies");
        assert_eq!(long_threshold(&[262_144; 40]), 262_144);
    }

    #[test]
    fn workspace_holds_the_plan() {
        assert_eq!(workspace_words(1), WS_META_WORD + 4);
        assert_eq!(
            SglangV2.workspace_bytes(&plan(100, 70_000).unwrap(), &shape(100, 70_000)),
            4 * (WS_META_WORD + 2 + 200)
        );
    }

    fn shape(rows: usize, n: usize) -> Shape {
        Shape {
            rows,
            n,
            npad: n.div_ceil(64).max(1) * 64,
            k: 2048,
        }
    }

    /// The host constants must match the kernel's `#define`s.
    #[test]
    fn constants_match_the_kernel_source() {
        let define = |name: &str| -> u64 {
            let line = SGLANG_V2
                .code
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("#define {name} missing"));
            let value = line.split_whitespace().nth(2).unwrap();
            value.trim_end_matches('u').parse().unwrap()
        };
        assert_eq!(define("SG_BLK"), BLOCK as u64);
        assert_eq!(define("SG_CL_SIZE"), CLUSTER_SIZE as u64);
        assert_eq!(define("SG_TIE_CAP"), TIE_CAP as u64);
        assert_eq!(define("SG_SMEM_BYTES"), SMEM_BYTES as u64);
        assert_eq!(define("SG_WS_FALLBACK"), WS_FALLBACK_WORD as u64);
        assert_eq!(define("SG_WS_META"), WS_META_WORD as u64);
        assert_eq!(define("SG_POOL"), CLUSTER_POOL as u64);
        assert_eq!(define("SG_NCAND"), THRESHOLD_CANDIDATES.len() as u64);
        for c in THRESHOLD_CANDIDATES {
            assert!(SGLANG_V2.code.contains(&format!("{c}u")), "candidate {c}");
        }
        let entries = crate::gpu::sources::declared_entries(SGLANG_V2.code);
        for e in [
            ENTRY_PLAN,
            ENTRY_REG2,
            ENTRY_REG4,
            ENTRY_STREAM,
            ENTRY_CLUSTER,
        ] {
            assert!(entries.contains(&e.to_string()), "{e} missing: {entries:?}");
        }
        // The cluster entry's compile-time shape is the launch's.
        let line = SGLANG_V2
            .code
            .lines()
            .find(|l| l.contains("__cluster_dims__"))
            .unwrap();
        assert!(
            line.contains("__cluster_dims__(1, SG_CL_SIZE, 1)"),
            "{line}"
        );
    }

    #[test]
    fn registered_under_its_arm_name() {
        assert!(super::super::arm_names().contains(&"sglang-v2"));
        assert_eq!(fallback_note(3), "fallback rows 3");
    }
}
