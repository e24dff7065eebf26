//! `radix`: TensorRT-LLM's production decode top-K dispatcher with every tier
//! that runs without hints (`kernels/baselines/radix.cu`; docs/algorithm.md, "The baselines").
//!
//! The upstream dispatcher tries, in this order (N = the batch's longest
//! valid row, B = rows):
//!
//! 1. the GVR heuristic tier: it needs the previous step's top-K indices
//!    ("hints"). The `radix` arm is hint-free by design, so this tier is
//!    skipped (the `gvr1` arm is that tier);
//! 2. **multi-pass** if B ≤ 32 and N ≥ 65 536, or B ≤ 64 and N ≥ 131 072, or
//!    B ≤ 256 and N ≥ 524 288: three launches of 512-thread CTAs over a grid
//!    (bpr, B), bpr = ⌈4·SMs / B⌉ capped at N / 2048 and at least 1, with
//!    per-row state, histograms and candidate lists in the workspace;
//! 3. **per-row** (one CTA per row) if N < the split threshold of B
//!    ([`split_threshold`]): 256 threads (**per-row-256**, upstream's
//!    "narrow" CTA) if B ≥ 256, B·N ≥ 4 Mi and N < [`narrow_limit`]`(B)`,
//!    else 512 threads;
//! 4. **split** (upstream's fused split-work): grid B × bpr
//!    ([`split_ctas_per_row`]), 1024 threads (**split-1024**) if N / bpr ≥
//!    30 000, else 512.
//!
//! Upstream's legacy two-launch split-work (tier 5) runs only when the caller
//! passes no done-counter scratch; we always pass it. Note that with the
//! multi-pass scratch supplied (as here: the registered arm is
//! [`Radix::PRODUCTION`]) tier 4 is never reached: every shape at or above the split
//! threshold of its B lies in the multi-pass zone. [`Radix::WITHOUT_MULTI_PASS`]
//! is the same dispatcher for a caller that supplies no multi-pass scratch; it
//! is not a registered arm, it exists so the tests run the split tiers.

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, RADIX};
use crate::gpu::PushKernelArg;

/// Threads per CTA of the per-row, split and multi-pass entries
/// (`RADIX_BLK` in `kernels/baselines/radix.cu`).
pub const BLOCK: u32 = 512;
/// Threads per CTA of the narrow per-row entry (`RADIX_BLK_NARROW`).
pub const BLOCK_NARROW: u32 = 256;
/// Threads per CTA of the wide split entry (`RADIX_BLK_WIDE`).
pub const BLOCK_WIDE: u32 = 1024;

pub const ENTRY: &str = "radix_topk";
pub const NARROW_ENTRY: &str = "radix_topk_narrow";
pub const SPLIT_ENTRY: &str = "radix_topk_split";
pub const SPLIT_WIDE_ENTRY: &str = "radix_topk_split_wide";
pub const MULTIPASS_ENTRY: &str = "radix_topk_multipass";

pub const TIER_PER_ROW: &str = "per-row";
pub const TIER_PER_ROW_256: &str = "per-row-256";
pub const TIER_SPLIT: &str = "split";
pub const TIER_SPLIT_1024: &str = "split-1024";
pub const TIER_MULTI_PASS: &str = "multi-pass";

/// Launches of the multi-pass tier per call (pass 0, 1, 2 of one entry).
pub const MULTIPASS_LAUNCHES: u32 = 3;
/// u32 words of per-row state of the multi-pass tier (`MP_STATE_WORDS`).
pub const MULTIPASS_STATE_WORDS: usize = 8;
/// Histogram bins (`RADIX_BINS`).
pub const BINS: usize = 2048;

/// Whether the caller hands the dispatcher the multi-pass scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scratch {
    /// Production: every tier's scratch is supplied (the `radix` arm).
    WithMultiPass,
    /// No multi-pass scratch: the multi-pass tier is never picked.
    WithoutMultiPass,
}

/// Upstream's multi-pass zones: (largest B, smallest N).
pub const MULTIPASS_ZONES: [(usize, usize); 3] = [(32, 65_536), (64, 131_072), (256, 524_288)];

/// Whether the multi-pass tier takes a batch of `rows` rows of length ≤ `n`.
pub fn multipass_eligible(rows: usize, n: usize) -> bool {
    MULTIPASS_ZONES
        .iter()
        .any(|&(max_rows, min_n)| rows <= max_rows && n >= min_n)
}

/// CTAs per row of the multi-pass tier: about four CTAs per SM over the
/// batch, each with at least 2048 values of the row.
pub fn multipass_ctas_per_row(rows: usize, n: usize, sms: usize) -> usize {
    (4 * sms).div_ceil(rows.max(1)).min(n / 2048).max(1)
}

/// Row length from which the split tier is used, by batch size (`None` =
/// never split).
pub fn split_threshold(rows: usize) -> Option<usize> {
    match rows {
        r if r >= 128 => None,
        r if r >= 64 => Some(524 * 1024),
        r if r > 8 => Some(200_000),
        _ => Some(65 * 1024),
    }
}

/// Rows shorter than this get the narrow (256-thread) per-row CTA in large
/// batches.
pub fn narrow_limit(rows: usize) -> usize {
    match rows {
        r if r >= 4096 => 200_000,
        r if r >= 1024 => 100_000,
        _ => 12_288,
    }
}

/// Whether the per-row tier runs the 256-thread CTA.
pub fn uses_narrow_block(rows: usize, n: usize) -> bool {
    rows >= 256 && (rows as u64) * (n as u64) >= 4 << 20 && n < narrow_limit(rows)
}

/// CTAs per row in the split tier: 10, more at the smallest batches of very
/// long rows (B = 1: up to 32 while every CTA keeps ≥ 30 000 values).
pub fn split_ctas_per_row(rows: usize, n: usize) -> usize {
    match rows {
        1 => (n / 30_000).clamp(10, 32),
        2 if n >= 400_000 => 16,
        4 if n >= 400_000 => 14,
        8 if n >= 500_000 => 12,
        _ => 10,
    }
}

/// The split tier runs 1024-thread CTAs once a slice holds ≥ 30 000 values.
pub fn split_uses_wide_block(n: usize, ctas_per_row: usize) -> bool {
    n / ctas_per_row >= 30_000
}

/// The production plan (every tier's scratch supplied).
pub fn plan(
    rows: usize,
    n_max: usize,
    npad: usize,
    k: usize,
    sms: usize,
) -> Result<LaunchPlan, String> {
    plan_with(rows, n_max, npad, k, sms, Scratch::WithMultiPass)
}

/// The dispatcher's tier for the batch, in upstream's priority order (see
/// the module documentation). `LaunchPlan::grid` counts the CTAs of one
/// launch (multi-pass: bpr × rows, launched as a 2-D grid three times).
pub fn plan_with(
    rows: usize,
    n_max: usize,
    _npad: usize,
    k: usize,
    sms: usize,
    scratch: Scratch,
) -> Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    let too_big = |what: &str| format!("{what} does not fit a 32-bit grid");
    let shared = |entry, tier, block, bpr: usize| -> Result<LaunchPlan, String> {
        let grid = rows
            .checked_mul(bpr)
            .and_then(|g| u32::try_from(g).ok())
            .ok_or_else(|| too_big("rows × CTAs"))?;
        Ok(LaunchPlan {
            entry,
            tier,
            grid,
            block,
            dyn_smem_bytes: 0,
            ctas_per_row: bpr as u32,
            chunk: 0,
            grid_barrier: false,
        })
    };
    // 1. GVR: needs hints; the radix arm has none.
    // 2. Multi-pass.
    if scratch == Scratch::WithMultiPass && multipass_eligible(rows, n_max) {
        let bpr = multipass_ctas_per_row(rows, n_max, sms);
        if rows > u16::MAX as usize {
            return Err(too_big("rows (grid y)"));
        }
        return shared(MULTIPASS_ENTRY, TIER_MULTI_PASS, BLOCK, bpr);
    }
    // 3. Single block per row.
    if split_threshold(rows).is_none_or(|t| n_max < t) {
        return if uses_narrow_block(rows, n_max) {
            shared(NARROW_ENTRY, TIER_PER_ROW_256, BLOCK_NARROW, 1)
        } else {
            shared(ENTRY, TIER_PER_ROW, BLOCK, 1)
        };
    }
    // 4. Fused split-work. Every slice of the longest row must hold more
    // than k values (kernels/baselines/radix.cu); upstream's thresholds
    // guarantee it for every supported k.
    let bpr = split_ctas_per_row(rows, n_max);
    if n_max < bpr * (k + 8) {
        return Err(format!(
            "split tier: {bpr} slices of a {n_max}-value row hold k = {k} or fewer values"
        ));
    }
    if split_uses_wide_block(n_max, bpr) {
        shared(SPLIT_WIDE_ENTRY, TIER_SPLIT_1024, BLOCK_WIDE, bpr)
    } else {
        shared(SPLIT_ENTRY, TIER_SPLIT, BLOCK, bpr)
    }
}

/// Workspace bytes of the split tiers: done counters (padded to 16 bytes),
/// then candidate values and indices, `rows × ctas_per_row × k` each. Only
/// the counters must be zero between calls (they restore themselves).
pub fn split_workspace_bytes(rows: usize, ctas_per_row: usize, k: usize) -> usize {
    (rows.div_ceil(4) * 4 + 2 * rows * ctas_per_row * k) * 4
}

/// Leading u32 words of the multi-pass workspace that must be zero at the
/// start of a call (per-row state and histograms); pass 2 leaves them zero.
pub fn multipass_zeroed_words(rows: usize) -> usize {
    rows * (MULTIPASS_STATE_WORDS + BINS)
}

/// Workspace bytes of the multi-pass tier: the zeroed words, then two
/// candidate lists of `rows × npad` indices (written before they are read).
pub fn multipass_workspace_bytes(rows: usize, npad: usize) -> usize {
    (multipass_zeroed_words(rows) + 2 * rows * npad) * 4
}

/// Workspace bytes of `plan` for a batch of `rows` rows of stride `npad`.
pub fn workspace_bytes_of(plan: &LaunchPlan, rows: usize, npad: usize, k: usize) -> usize {
    match plan.entry {
        SPLIT_ENTRY | SPLIT_WIDE_ENTRY => {
            split_workspace_bytes(rows, plan.ctas_per_row as usize, k)
        }
        MULTIPASS_ENTRY => multipass_workspace_bytes(rows, npad),
        _ => 0,
    }
}

pub fn plan_for(shape: &Shape, sms: usize, scratch: Scratch) -> Result<LaunchPlan, String> {
    plan_with(shape.rows, shape.n, shape.npad, shape.k, sms, scratch)
}

/// The dispatcher as a baseline kernel: [`Radix::PRODUCTION`] is the `radix`
/// arm; [`Radix::WITHOUT_MULTI_PASS`] is the dispatcher for a caller without
/// multi-pass scratch (tiers per-row, per-row-256, split, split-1024), not a
/// registered arm: the tests build it to run the split tiers, which the
/// production dispatcher never picks.
pub struct Radix {
    pub scratch: Scratch,
}

impl Radix {
    pub const PRODUCTION: Radix = Radix {
        scratch: Scratch::WithMultiPass,
    };
    pub const WITHOUT_MULTI_PASS: Radix = Radix {
        scratch: Scratch::WithoutMultiPass,
    };
}

impl BaselineKernel for Radix {
    fn arm_name(&self) -> &'static str {
        match self.scratch {
            Scratch::WithMultiPass => "radix",
            Scratch::WithoutMultiPass => "radix-without-multipass",
        }
    }

    fn source(&self) -> KernelSource {
        RADIX
    }

    fn plan(&self, shape: &Shape, sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan_for(shape, sms, self.scratch)
    }

    fn workspace_bytes(&self, plan: &LaunchPlan, shape: &Shape) -> usize {
        workspace_bytes_of(plan, shape.rows, shape.npad, shape.k)
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        launch(ctx)
    }
}

/// Enqueue the plan's launch(es): one for the per-row and split tiers,
/// three (pass 0, 1, 2 of `radix_topk_multipass`, grid (bpr, rows)) for the
/// multi-pass tier.
fn launch(ctx: LaunchCtx<'_>) -> Result<()> {
    let batch = ctx.batch;
    let rows = arg_u32(batch.rows, "rows")?;
    let npad = arg_u32(batch.npad, "npad")?;
    let k = arg_u32(batch.k, "k")?;
    let plan = ctx.plan;
    let bpr = plan.ctas_per_row;
    let entry = plan.entry;
    let bytes = workspace_bytes_of(plan, batch.rows, batch.npad, batch.k);
    match entry {
        MULTIPASS_ENTRY => {
            let workspace = &*ctx.workspace.ensure(bytes)?;
            let config = crate::gpu::LaunchConfig {
                grid_dim: (bpr, rows, 1),
                block_dim: (plan.block, 1, 1),
                shared_mem_bytes: 0,
            };
            for pass in 0..MULTIPASS_LAUNCHES {
                let mut args = ctx.gpu.stream.launch_builder(ctx.function);
                args.arg(&batch.logits)
                    .arg(&batch.n)
                    .arg(&batch.hints)
                    .arg(&mut batch.output)
                    .arg(&rows)
                    .arg(&npad)
                    .arg(&k)
                    .arg(&pass)
                    .arg(workspace);
                // SAFETY: the argument list matches `radix_topk_multipass` in
                // kernels/baselines/radix.cu (pointers to [rows*npad] f32,
                // [rows] i32, [rows*k] i32, [rows*k] i32, four u32, then a
                // workspace of multipass_workspace_bytes whose leading
                // multipass_zeroed_words are zero: zeroed at allocation and
                // left zero by pass 2 of every call). Grid (bpr, rows).
                unsafe { args.launch(config) }.map_err(launch_err(entry))?;
            }
        }
        SPLIT_ENTRY | SPLIT_WIDE_ENTRY => {
            let workspace = &*ctx.workspace.ensure(bytes)?;
            let mut args = ctx.gpu.stream.launch_builder(ctx.function);
            args.arg(&batch.logits)
                .arg(&batch.n)
                .arg(&batch.hints)
                .arg(&mut batch.output)
                .arg(&rows)
                .arg(&npad)
                .arg(&k)
                .arg(&bpr)
                .arg(workspace);
            // SAFETY: matches `radix_topk_split` / `radix_topk_split_wide`
            // (the per-row arguments, then bpr and a workspace of
            // split_workspace_bytes whose done counters are zero). The grid
            // is bpr CTAs per staged row.
            unsafe { args.launch(plan.config()) }.map_err(launch_err(entry))?;
        }
        _ => {
            let mut args = ctx.gpu.stream.launch_builder(ctx.function);
            args.arg(&batch.logits)
                .arg(&batch.n)
                .arg(&batch.hints)
                .arg(&mut batch.output)
                .arg(&rows)
                .arg(&npad)
                .arg(&k);
            // SAFETY: matches `radix_topk` / `radix_topk_narrow` (pointers to
            // [rows*npad] f32, [rows] i32, [rows*k] i32, [rows*k] i32, three
            // u32). The grid is one CTA per staged row.
            unsafe { args.launch(plan.config()) }.map_err(launch_err(entry))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMS: usize = 132;

    /// Upstream's decode dispatcher (TensorRT-LLM) written out as
    /// tables, independently of the plan code: (tier, threads, CTAs per row).
    mod upstream {
        /// Multi-pass zones: B ≤ rows and N ≥ n.
        pub const MULTI_PASS: [(usize, usize); 3] = [(32, 65_536), (64, 131_072), (256, 524_288)];
        /// Split threshold by smallest B of each band (`None` = never).
        pub const SPLIT_FROM: [(usize, Option<usize>); 4] = [
            (128, None),
            (64, Some(536_576)),
            (9, Some(200_000)),
            (1, Some(66_560)),
        ];
        /// Narrow limit by smallest B of each band.
        pub const NARROW_BELOW: [(usize, usize); 3] =
            [(4096, 200_000), (1024, 100_000), (1, 12_288)];

        pub fn band<T: Copy>(table: &[(usize, T)], rows: usize) -> T {
            table
                .iter()
                .find(|(from, _)| rows >= *from)
                .expect("band")
                .1
        }

        pub fn tier(
            rows: usize,
            n: usize,
            sms: usize,
            with_mp: bool,
        ) -> (&'static str, u32, usize) {
            if with_mp && MULTI_PASS.iter().any(|&(b, m)| rows <= b && n >= m) {
                let mut bpr = (4 * sms).div_ceil(rows);
                if bpr > n / 2048 {
                    bpr = n / 2048;
                }
                return ("multi-pass", 512, bpr.max(1));
            }
            let split = band(&SPLIT_FROM, rows);
            if split.is_none_or(|t| n < t) {
                let narrow =
                    rows >= 256 && rows * n >= 4 * 1024 * 1024 && n < band(&NARROW_BELOW, rows);
                return if narrow {
                    ("per-row-256", 256, 1)
                } else {
                    ("per-row", 512, 1)
                };
            }
            let mut bpr = 10;
            if rows == 1 {
                let target = 32.min(n / 30_000);
                if target > bpr {
                    bpr = target;
                }
            } else if rows == 2 && n >= 400_000 {
                bpr = 16;
            } else if rows == 4 && n >= 400_000 {
                bpr = 14;
            } else if rows == 8 && n >= 500_000 {
                bpr = 12;
            }
            if n / bpr >= 30_000 {
                ("split-1024", 1024, bpr)
            } else {
                ("split", 512, bpr)
            }
        }
    }

    fn check_shape(rows: usize, n: usize, k: usize, scratch: Scratch) -> LaunchPlan {
        let with_mp = scratch == Scratch::WithMultiPass;
        let p = plan_with(rows, n, n.div_ceil(64) * 64, k, SMS, scratch)
            .unwrap_or_else(|e| panic!("B={rows} N={n} k={k}: {e}"));
        let (tier, block, bpr) = upstream::tier(rows, n, SMS, with_mp);
        assert_eq!(
            (p.tier, p.block, p.ctas_per_row as usize),
            (tier, block, bpr),
            "B={rows} N={n} k={k} {scratch:?}"
        );
        assert_eq!(p.grid as usize, rows * bpr, "B={rows} N={n}");
        assert!(!p.grid_barrier && p.dyn_smem_bytes == 0 && p.chunk == 0);
        let entry = match p.tier {
            TIER_PER_ROW => ENTRY,
            TIER_PER_ROW_256 => NARROW_ENTRY,
            TIER_SPLIT => SPLIT_ENTRY,
            TIER_SPLIT_1024 => SPLIT_WIDE_ENTRY,
            TIER_MULTI_PASS => MULTIPASS_ENTRY,
            other => panic!("unknown tier {other}"),
        };
        assert_eq!(p.entry, entry);
        if p.entry == SPLIT_ENTRY || p.entry == SPLIT_WIDE_ENTRY {
            // Every slice of the longest row holds more than k values.
            assert!(n >= bpr * (k + 8), "B={rows} N={n} k={k}: bpr {bpr}");
        }
        p
    }

    /// Every grid shape (B × every N up to 262 147 × k), against the table.
    #[test]
    fn every_grid_shape_follows_the_upstream_dispatcher() {
        let batches = [1usize, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
        let mut seen = std::collections::BTreeMap::<(&str, usize), usize>::new();
        for rows in batches {
            for n in 1..=262_147usize {
                for k in [512usize, 1024, 2048] {
                    for scratch in [Scratch::WithMultiPass, Scratch::WithoutMultiPass] {
                        let p = check_shape(rows, n, k, scratch);
                        if scratch == Scratch::WithMultiPass && k == 2048 {
                            *seen.entry((p.tier, rows)).or_default() += 1;
                        }
                    }
                }
            }
        }
        // Where each production tier runs on the grid.
        let count = |tier, rows| seen.get(&(tier, rows)).copied().unwrap_or(0);
        for rows in [1, 2, 4, 8, 16, 32] {
            assert_eq!(count(TIER_MULTI_PASS, rows), 262_147 - 65_535, "B={rows}");
        }
        assert_eq!(count(TIER_MULTI_PASS, 64), 262_147 - 131_071);
        for rows in [128, 256, 512, 1024] {
            assert_eq!(count(TIER_MULTI_PASS, rows), 0, "B={rows}");
        }
        assert_eq!(count(TIER_PER_ROW_256, 512), 12_288 - 8_192);
        assert_eq!(count(TIER_PER_ROW_256, 1024), 100_000 - 4_096);
        assert_eq!(count(TIER_PER_ROW_256, 256), 0);
        let split: usize = seen
            .iter()
            .filter(|((tier, _), _)| tier.starts_with("split"))
            .map(|(_, c)| c)
            .sum();
        assert_eq!(
            split, 0,
            "the split tiers are unreachable with multi-pass scratch"
        );
    }

    /// Long rows past the grid (up to the contract's 2^20) and other batch
    /// sizes, sampled.
    #[test]
    fn long_rows_and_odd_batches_follow_the_upstream_dispatcher() {
        let ns = [
            262_148usize,
            399_999,
            400_000,
            499_999,
            500_000,
            524_287,
            524_288,
            536_575,
            536_576,
            600_000,
            960_000,
            1 << 20,
        ];
        for rows in (1..=300).chain([511, 1000, 2048, 4095, 4096, 5000, 8192]) {
            for &n in &ns {
                for scratch in [Scratch::WithMultiPass, Scratch::WithoutMultiPass] {
                    check_shape(rows, n, 2048, scratch);
                }
            }
            for n in [
                1usize, 2048, 4095, 4096, 12_287, 12_288, 65_535, 65_536, 99_999, 100_000, 131_071,
                131_072, 199_999, 200_000,
            ] {
                check_shape(rows, n, 512, Scratch::WithMultiPass);
            }
        }
    }

    #[test]
    fn tier_spot_checks() {
        let tier = |rows, n| plan(rows, n, n, 2048, SMS).unwrap();
        // Multi-pass: bpr = ⌈528 / B⌉ capped at N / 2048.
        let p = tier(1, 65_536);
        assert_eq!((p.tier, p.ctas_per_row, p.grid), (TIER_MULTI_PASS, 32, 32));
        assert_eq!(tier(1, 262_144).ctas_per_row, 128);
        assert_eq!(tier(1, 1 << 20).ctas_per_row, 512);
        assert_eq!(tier(32, 65_536).ctas_per_row, 17);
        assert_eq!(tier(64, 131_072).ctas_per_row, 9);
        assert_eq!(tier(256, 524_288).ctas_per_row, 3);
        assert_eq!(tier(1, 65_535).tier, TIER_PER_ROW);
        assert_eq!(tier(33, 131_071).tier, TIER_PER_ROW);
        assert_eq!(tier(33, 131_072).tier, TIER_MULTI_PASS);
        assert_eq!(tier(65, 524_287).tier, TIER_PER_ROW);
        assert_eq!(tier(257, 1 << 20).tier, TIER_PER_ROW);
        // Narrow CTAs: B ≥ 256, B·N ≥ 4 Mi, N below the band's limit.
        assert_eq!(tier(512, 8_192).tier, TIER_PER_ROW_256);
        assert_eq!(tier(512, 8_191).tier, TIER_PER_ROW);
        assert_eq!(tier(512, 12_288).tier, TIER_PER_ROW);
        assert_eq!(tier(1024, 99_999).block, BLOCK_NARROW);
        assert_eq!(tier(4096, 199_999).tier, TIER_PER_ROW_256);
        assert_eq!(tier(4096, 1_000).tier, TIER_PER_ROW);
        // Without multi-pass scratch the split tiers appear.
        let split = |rows, n| plan_with(rows, n, n, 2048, SMS, Scratch::WithoutMultiPass).unwrap();
        let p = split(1, 262_144);
        assert_eq!((p.tier, p.ctas_per_row, p.block), (TIER_SPLIT, 10, 512));
        let p = split(1, 1 << 20);
        assert_eq!(
            (p.tier, p.ctas_per_row, p.block),
            (TIER_SPLIT_1024, 32, 1024)
        );
        let p = split(1, 960_000);
        assert_eq!((p.tier, p.ctas_per_row), (TIER_SPLIT_1024, 32));
        assert_eq!(split(1, 330_000).ctas_per_row, 11);
        assert_eq!(split(2, 400_000).ctas_per_row, 16);
        assert_eq!(split(4, 1 << 20).tier, TIER_SPLIT_1024);
        assert_eq!(split(8, 500_000).ctas_per_row, 12);
        assert_eq!(split(16, 200_000).ctas_per_row, 10);
        assert_eq!(split(16, 199_999).tier, TIER_PER_ROW);
        assert_eq!(split(128, 1 << 20).tier, TIER_PER_ROW);
    }

    #[test]
    fn describe_names_the_tier_and_shape() {
        assert_eq!(
            plan(1, 262_144, 262_144, 2048, SMS).unwrap().describe(),
            "multi-pass (128 CTAs/row, grid 128)"
        );
        assert_eq!(
            plan(1024, 8_229, 8_256, 2048, SMS).unwrap().describe(),
            "per-row-256 (grid 1024)"
        );
        let p = plan_with(1, 1 << 20, 1 << 20, 512, SMS, Scratch::WithoutMultiPass).unwrap();
        assert_eq!(p.describe(), "split-1024 (32 CTAs/row, grid 32)");
    }

    #[test]
    fn workspaces_are_aligned_and_sized() {
        assert_eq!(split_workspace_bytes(1, 8, 2048), (4 + 2 * 8 * 2048) * 4);
        assert_eq!(split_workspace_bytes(5, 10, 512) % 16, 0);
        assert_eq!(multipass_zeroed_words(3), 3 * (8 + 2048));
        assert_eq!(
            multipass_workspace_bytes(3, 65_536),
            (3 * (8 + 2048) + 2 * 3 * 65_536) * 4
        );
        let p = plan(4, 100_000, 100_032, 1024, SMS).unwrap();
        assert_eq!(
            workspace_bytes_of(&p, 4, 100_032, 1024),
            multipass_workspace_bytes(4, 100_032)
        );
        let p = plan(1024, 4_000, 4_032, 1024, SMS).unwrap();
        assert_eq!(workspace_bytes_of(&p, 1024, 4_032, 1024), 0);
    }

    #[test]
    fn rejects_rows_longer_than_the_contract() {
        assert!(plan(1, MAX_ROW_LEN + 1, MAX_ROW_LEN + 64, 512, SMS).is_err());
    }

    #[test]
    fn the_kernel_declares_every_entry_and_the_host_constants_match() {
        let entries = crate::gpu::sources::declared_entries(RADIX.code);
        for entry in [
            ENTRY,
            NARROW_ENTRY,
            SPLIT_ENTRY,
            SPLIT_WIDE_ENTRY,
            MULTIPASS_ENTRY,
        ] {
            assert!(entries.iter().any(|e| e == entry), "{entry}: {entries:?}");
        }
        for (define, value) in [
            ("RADIX_BLK_NARROW", BLOCK_NARROW as usize),
            ("RADIX_BLK", BLOCK as usize),
            ("RADIX_BLK_WIDE", BLOCK_WIDE as usize),
            ("RADIX_BINS", BINS),
            ("MP_STATE_WORDS", MULTIPASS_STATE_WORDS),
        ] {
            let line = format!("#define {define} {value}");
            assert!(
                RADIX
                    .code
                    .lines()
                    .any(|l| l.trim() == line || l.starts_with(&format!("{line} "))),
                "kernels/baselines/radix.cu lacks `{line}`"
            );
        }
    }
}
