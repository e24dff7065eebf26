//! `filtered`: FlashInfer `top_k` on fp32, non-deterministic (docs/algorithm.md, "The baselines").
//!
//! FlashInfer does not always run FilteredTopK: its dispatcher
//! (`ShouldUseFilteredTopK`) sends small batches of long rows to its
//! multi-CTA radix instead, because one CTA per row leaves most SMs idle
//! there. This arm reproduces that choice ([`flashinfer_algo`]) so it is not
//! handicapped where upstream would not use the filter:
//!
//! * [`Algo::Filtered`]: `kernels/baselines/filtered.cu`, one 1024-thread CTA per row
//!   with 128 KiB of dynamic shared memory (two ping-pong buffers of
//!   candidate indices), so at most one CTA per SM;
//! * [`Algo::MultiCta`]: our model of FlashInfer's `RadixTopKKernel_Unified`,
//!   i.e. the `radix-mcta` arm's kernel and launch plan, reused as is.
//!
//! Both kernels live in one NVRTC module ([`DISPATCH_SOURCE`], the two files
//! concatenated at build time, no copied kernel code), so switching
//! algorithm between shapes only switches the entry point.
//!
//! Upstream lets a user force either kernel. Forcing the multi-CTA radix is
//! the `radix-mcta` arm; forcing FilteredTopK on every shape is the
//! `filtered-only` arm (certification and timing of that kernel alone).

use super::radix_mcta::{self, RadixMcta};
use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::KernelSource;
use crate::gpu::PushKernelArg;

/// Threads per CTA; must match `FT_BLK` in `kernels/baselines/filtered.cu`.
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

/// The module this arm builds: `filtered.cu` followed by `radix_mcta.cu`.
/// Both include `common.cuh` (guarded by `#pragma once`) and their own names
/// do not collide, so the concatenation is one valid translation unit; the
/// kernels are byte-for-byte the certified sources.
pub const DISPATCH_SOURCE: KernelSource = KernelSource {
    name: "baselines/filtered.cu+radix_mcta.cu",
    code: concat!(
        include_str!("../../../kernels/baselines/filtered.cu"),
        "\n",
        include_str!("../../../kernels/baselines/radix_mcta.cu")
    ),
};

/// Rows at or below this length always take FilteredTopK (fp32,
/// non-deterministic branch of `ShouldUseFilteredTopK`).
pub const FILTERED_MAX_ROW_LEN: usize = 32_768;
/// Longer rows take FilteredTopK only when `rows > n / ROW_LEN_PER_ROW`
/// (integer division, as upstream): the batch alone fills the device.
pub const ROW_LEN_PER_ROW: usize = 16_384;

/// The kernel FlashInfer `top_k` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Filtered,
    MultiCta,
}

/// Which kernel the arm runs: upstream's heuristic or a forced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgoChoice {
    Auto,
    Force(Algo),
}

/// FlashInfer's `ShouldUseFilteredTopK` for fp32, non-deterministic, no
/// tie-break: FilteredTopK iff `n_max <= 32768` or `rows > n_max / 16384`,
/// otherwise the multi-CTA radix.
pub fn flashinfer_algo(rows: usize, n_max: usize) -> Algo {
    if n_max <= FILTERED_MAX_ROW_LEN || rows > n_max / ROW_LEN_PER_ROW {
        Algo::Filtered
    } else {
        Algo::MultiCta
    }
}

/// Tier names recorded as the arm's variant: which kernel ran and why.
pub const TIER_FILTERED: &str = "filtered";
pub const TIER_MULTI_CTA: &str = "multi-cta (FlashInfer heuristic)";
pub const TIER_FILTERED_FORCED: &str = "filtered (forced)";
pub const TIER_MULTI_CTA_FORCED: &str = "multi-cta (forced)";
/// Upstream refuses its multi-CTA launch on small devices; we then stay on
/// FilteredTopK rather than refusing the shape.
pub const TIER_FILTERED_NO_MCTA: &str = "filtered (multi-cta does not fit the device)";

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
        tier: TIER_FILTERED,
        grid,
        block: BLOCK,
        dyn_smem_bytes: DYN_SMEM_BYTES as u32,
        ctas_per_row: 1,
        chunk: 0,
        grid_barrier: false,
    })
}

/// The launch FlashInfer `top_k` would make for `rows` rows of at most
/// `n_max` elements on `sms` SMs, under `choice`.
pub fn dispatch_plan(
    rows: usize,
    n_max: usize,
    npad: usize,
    k: usize,
    sms: usize,
    choice: AlgoChoice,
) -> Result<LaunchPlan, String> {
    let multi_cta = |tier: &'static str| {
        radix_mcta::plan(rows, n_max, npad, k, sms).map(|p| LaunchPlan { tier, ..p })
    };
    match choice {
        AlgoChoice::Force(Algo::Filtered) => plan(rows, n_max, k).map(|p| LaunchPlan {
            tier: TIER_FILTERED_FORCED,
            ..p
        }),
        AlgoChoice::Force(Algo::MultiCta) => multi_cta(TIER_MULTI_CTA_FORCED),
        AlgoChoice::Auto => match flashinfer_algo(rows, n_max) {
            Algo::Filtered => plan(rows, n_max, k),
            Algo::MultiCta => multi_cta(TIER_MULTI_CTA).or_else(|_| {
                plan(rows, n_max, k).map(|p| LaunchPlan {
                    tier: TIER_FILTERED_NO_MCTA,
                    ..p
                })
            }),
        },
    }
}

/// The `filtered` arm (FlashInfer's choice between its two kernels) and the
/// `filtered-only` arm (FilteredTopK on every shape).
pub struct Filtered {
    pub choice: AlgoChoice,
}

impl Filtered {
    /// The `filtered` arm.
    pub const DISPATCHED: Filtered = Filtered {
        choice: AlgoChoice::Auto,
    };
    /// The `filtered-only` arm.
    pub const ONLY: Filtered = Filtered {
        choice: AlgoChoice::Force(Algo::Filtered),
    };
}

impl BaselineKernel for Filtered {
    fn arm_name(&self) -> &'static str {
        match self.choice {
            AlgoChoice::Auto => "filtered",
            AlgoChoice::Force(Algo::Filtered) => "filtered-only",
            AlgoChoice::Force(Algo::MultiCta) => "filtered-mcta",
        }
    }

    fn source(&self) -> KernelSource {
        DISPATCH_SOURCE
    }

    fn plan(&self, shape: &Shape, sms: usize) -> std::result::Result<LaunchPlan, String> {
        dispatch_plan(shape.rows, shape.n, shape.npad, shape.k, sms, self.choice)
    }

    fn workspace_bytes(&self, plan: &LaunchPlan, shape: &Shape) -> usize {
        if plan.entry == radix_mcta::ENTRY {
            RadixMcta.workspace_bytes(plan, shape)
        } else {
            0
        }
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        if ctx.plan.entry == radix_mcta::ENTRY {
            // Same module, same arguments and workspace as the radix-mcta arm.
            return RadixMcta.launch(ctx);
        }
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
        // kernels/baselines/filtered.cu (pointers to [rows*npad] f32, [rows] i32,
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
    use crate::gpu::sources::{declared_entries, FILTERED, RADIX_MCTA};

    const SMS: usize = 132;

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
        assert_eq!(plan(3, 1000, 512).unwrap().describe(), "filtered (grid 3)");
    }

    #[test]
    fn refuses_what_the_kernel_cannot_do() {
        assert!(plan(1, MAX_ROW_LEN + 1, 512).is_err());
        assert!(plan(1, 1000, 4096).is_err());
        plan(1, MAX_ROW_LEN, 2048).unwrap();
    }

    #[test]
    fn heuristic_short_rows_always_filter() {
        for rows in [0usize, 1, 2, 16, 1024] {
            for n in [0usize, 1, 2048, 16_384, 32_767, 32_768] {
                assert_eq!(flashinfer_algo(rows, n), Algo::Filtered, "{rows}x{n}");
            }
        }
    }

    #[test]
    fn heuristic_long_rows_filter_only_when_rows_exceed_n_over_16k() {
        // (n, largest batch that still goes multi-CTA = n / 16384, floored)
        for (n, last_multi) in [
            (32_769usize, 2usize),
            (49_151, 2),
            (49_152, 3),
            (65_536, 4),
            (131_072, 8),
            (262_144, 16),
            (1 << 20, 64),
        ] {
            for rows in 1..=last_multi {
                assert_eq!(flashinfer_algo(rows, n), Algo::MultiCta, "{rows}x{n}");
            }
            assert_eq!(
                flashinfer_algo(last_multi + 1, n),
                Algo::Filtered,
                "{}x{n}",
                last_multi + 1
            );
        }
    }

    #[test]
    fn heuristic_on_the_shapes_where_filtered_lost_to_torch() {
        // Filtered lost to torch.topk at these row lengths for B <= 16
        // (reports/h200/2026-12-02, sample600). Upstream moves B <= 8 to
        // multi-CTA...
        for rows in [1usize, 2, 4, 8] {
            for n in [131_075usize, 131_087, 163_775, 262_127] {
                assert_eq!(flashinfer_algo(rows, n), Algo::MultiCta, "{rows}x{n}");
            }
        }
        // ...but keeps FilteredTopK at B = 16 (163775 / 16384 = 9 and
        // 262127 / 16384 = 15 are both < 16), as FlashInfer itself would.
        for n in [163_775usize, 262_127] {
            assert_eq!(flashinfer_algo(16, n), Algo::Filtered, "16x{n}");
        }
    }

    #[test]
    fn auto_dispatch_runs_the_radix_mcta_plan_on_small_batches_of_long_rows() {
        let p = dispatch_plan(1, 131_072, 131_072, 2048, SMS, AlgoChoice::Auto).unwrap();
        let mcta = radix_mcta::plan(1, 131_072, 131_072, 2048, SMS).unwrap();
        assert_eq!(
            p,
            LaunchPlan {
                tier: TIER_MULTI_CTA,
                ..mcta
            }
        );
        assert_eq!(p.entry, radix_mcta::ENTRY);
        assert!(p.describe().starts_with(TIER_MULTI_CTA), "{}", p.describe());
        assert!(p.ctas_per_row > 1, "a single row is spread over SMs");

        let p = dispatch_plan(17, 262_144, 262_144, 2048, SMS, AlgoChoice::Auto).unwrap();
        assert_eq!(p, plan(17, 262_144, 2048).unwrap());
        let p = dispatch_plan(1, 32_768, 32_768, 512, SMS, AlgoChoice::Auto).unwrap();
        assert_eq!((p.entry, p.tier), (ENTRY, TIER_FILTERED));
    }

    #[test]
    fn forced_choices_ignore_the_heuristic() {
        let force_filtered = AlgoChoice::Force(Algo::Filtered);
        let p = dispatch_plan(1, 262_144, 262_144, 2048, SMS, force_filtered).unwrap();
        assert_eq!((p.entry, p.tier, p.grid), (ENTRY, TIER_FILTERED_FORCED, 1));
        let force_multi = AlgoChoice::Force(Algo::MultiCta);
        let p = dispatch_plan(1024, 4096, 4096, 512, SMS, force_multi).unwrap();
        assert_eq!(
            (p.entry, p.tier),
            (radix_mcta::ENTRY, TIER_MULTI_CTA_FORCED)
        );
        assert!(dispatch_plan(1, 1000, 1024, 4096, SMS, force_filtered).is_err());
    }

    #[test]
    fn small_devices_fall_back_to_filtered_unless_multi_cta_is_forced() {
        // 2^20 keys need 19 co-resident CTAs; 8 SMs cannot hold them.
        let n = 1 << 20;
        let p = dispatch_plan(1, n, n, 2048, 8, AlgoChoice::Auto).unwrap();
        assert_eq!((p.entry, p.tier), (ENTRY, TIER_FILTERED_NO_MCTA));
        assert!(dispatch_plan(1, n, n, 2048, 8, AlgoChoice::Force(Algo::MultiCta)).is_err());
    }

    #[test]
    fn workspace_only_for_the_multi_cta_kernel() {
        let shape = Shape {
            rows: 1,
            n: 262_144,
            npad: 262_144,
            k: 2048,
        };
        let mcta = dispatch_plan(1, shape.n, shape.npad, 2048, SMS, AlgoChoice::Auto).unwrap();
        assert_eq!(
            Filtered::DISPATCHED.workspace_bytes(&mcta, &shape),
            radix_mcta::workspace_words(&mcta) * 4
        );
        assert!(Filtered::DISPATCHED.workspace_bytes(&mcta, &shape) > 0);
        let filt = plan(1, shape.n, 2048).unwrap();
        assert_eq!(Filtered::DISPATCHED.workspace_bytes(&filt, &shape), 0);
    }

    /// The module is exactly the two certified sources, so it declares both
    /// entry points and no kernel code is copied.
    #[test]
    fn dispatch_source_is_the_two_kernel_files() {
        assert_eq!(
            DISPATCH_SOURCE.code,
            format!("{}\n{}", FILTERED.code, RADIX_MCTA.code)
        );
        let entries = declared_entries(DISPATCH_SOURCE.code);
        assert!(entries.contains(&ENTRY.to_string()), "{entries:?}");
        assert!(
            entries.contains(&radix_mcta::ENTRY.to_string()),
            "{entries:?}"
        );
        assert_eq!(Filtered::DISPATCHED.source(), DISPATCH_SOURCE);
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
        assert!(declared_entries(FILTERED.code).contains(&ENTRY.to_string()));
    }

    #[test]
    fn registered_under_its_arm_name() {
        assert!(super::super::arm_names().contains(&"filtered"));
    }
}
