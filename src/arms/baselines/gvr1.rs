//! `gvr1`: GVR V1 Guess-Verify-Refine with previous-step hints
//! (`kernels/baselines/gvr1.cu`).
//!
//! One 512-thread CTA per row, or — for small batches of long rows, where
//! one CTA per row leaves most SMs idle — a thread-block cluster of CS ∈
//! {2, 4, 8} CTAs per row that split the row and all-reduce their counts
//! through DSMEM (the tiered TRT-LLM V1). 48 KiB of dynamic
//! shared memory hold the candidate buffer (keys + indices), so the kernel
//! needs the opt-in path (static smem adds ≈ 8.6 KB).

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, GVR1};
use crate::gpu::PushKernelArg;

/// Threads per CTA; must match `G1_BLK` in `kernels/baselines/gvr1.cu`.
pub const BLOCK: u32 = 512;
/// Per-row entry (one CTA per row).
pub const ENTRY: &str = "gvr1_topk";
/// Cluster-tier entries, `(cluster size, entry, tier name)`; each entry
/// declares its size with `__cluster_dims__` in `kernels/baselines/gvr1.cu`.
pub const CLUSTER_ENTRIES: [(u32, &str, &str); 3] = [
    (8, "gvr1_topk_c8", "cluster CS=8"),
    (4, "gvr1_topk_c4", "cluster CS=4"),
    (2, "gvr1_topk_c2", "cluster CS=2"),
];
/// Fewest row elements a cluster CTA should own: below this a count pass is
/// so short that the cluster barrier of each exchange dominates.
pub const MIN_SLICE: usize = 8192;
/// Candidate capacity; must match `G1_CAP`.
pub const CANDIDATE_CAP: usize = 6144;
/// Dynamic shared memory: `CANDIDATE_CAP` u32 keys + as many i32 indices.
pub const DYN_SMEM_BYTES: usize = 2 * CANDIDATE_CAP * 4;
/// Static shared memory of the kernel (8608 B per ptxas) plus headroom.
pub const STATIC_SMEM_RESERVE: usize = 12 * 1024;
/// Opt-in shared memory per block on sm_90 (H100/H200: 227 KiB).
pub const SMEM_OPTIN_BYTES: usize = 232_448;

/// Clusters of `cluster_size` CTAs that can be co-resident on a device with
/// `sms` SMs at one CTA per SM (measured 66 / 30 / 15 for
/// CS = 2 / 4 / 8 on the 132-SM H200: GPC granularity loses a few SMs at
/// CS ≥ 4). Scaled by SM count for other devices.
pub fn co_resident_clusters(cluster_size: u32, sms: usize) -> usize {
    match cluster_size {
        0 | 1 => sms,
        2 => sms / 2,
        4 => sms * 30 / 132,
        8 => sms * 15 / 132,
        _ => 0,
    }
}

/// The cluster size for `rows` rows of at most `n_max` elements, `None` for
/// the per-row tier: the largest CS whose clusters for every row are
/// co-resident in one wave and whose slices keep ≥ `MIN_SLICE` elements.
/// Batches that already fill the GPU with one CTA per row never qualify
/// (rows > SMs / 2 fails CS = 2).
pub fn cluster_size_for(rows: usize, n_max: usize, sms: usize) -> Option<u32> {
    if rows == 0 {
        return None;
    }
    CLUSTER_ENTRIES
        .iter()
        .map(|&(cs, _, _)| cs)
        .find(|&cs| rows <= co_resident_clusters(cs, sms) && n_max >= cs as usize * MIN_SLICE)
}

/// One CTA per row, or one cluster per row (see [`cluster_size_for`]). The
/// kernel's candidate cap must leave room above k for the verify search
/// (k ≤ cap / 2 keeps the aim strictly inside [k, cap]).
pub fn plan(rows: usize, n_max: usize, k: usize, sms: usize) -> Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    if k == 0 || 2 * k > CANDIDATE_CAP {
        return Err(format!(
            "k = {k} leaves no search room under the candidate cap {CANDIDATE_CAP}"
        ));
    }
    let (cluster_size, entry, tier) = match cluster_size_for(rows, n_max, sms) {
        Some(cs) => CLUSTER_ENTRIES
            .iter()
            .copied()
            .find(|&(size, _, _)| size == cs)
            .ok_or_else(|| format!("no cluster entry for CS = {cs}"))?,
        None => (1, ENTRY, "per-row"),
    };
    let grid = rows
        .checked_mul(cluster_size as usize)
        .and_then(|g| u32::try_from(g).ok())
        .ok_or_else(|| format!("rows = {rows} × {cluster_size} CTAs does not fit a 32-bit grid"))?;
    Ok(LaunchPlan {
        entry,
        tier,
        grid,
        block: BLOCK,
        dyn_smem_bytes: DYN_SMEM_BYTES as u32,
        ctas_per_row: cluster_size,
        // Slices are cut per row in the kernel (rows may be shorter than n_max).
        chunk: 0,
        grid_barrier: false,
    })
}

/// The `gvr1` arm's kernel. `hint_offset` is added to every hint before the
/// gather (upstream shifts by `row % next_n + 1`; our harness passes raw
/// previous-step indices, so the registered arm uses 0).
pub struct Gvr1 {
    pub hint_offset: i32,
}

impl BaselineKernel for Gvr1 {
    fn arm_name(&self) -> &'static str {
        "gvr1"
    }

    fn source(&self) -> KernelSource {
        GVR1
    }

    fn plan(&self, shape: &Shape, sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan(shape.rows, shape.n, shape.k, sms)
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        let batch = ctx.batch;
        let rows = arg_u32(batch.rows, "rows")?;
        let npad = arg_u32(batch.npad, "npad")?;
        let k = arg_u32(batch.k, "k")?;
        let hint_offset = self.hint_offset;
        let mut args = ctx.gpu.stream.launch_builder(ctx.function);
        args.arg(&batch.logits)
            .arg(&batch.n)
            .arg(&batch.hints)
            .arg(&mut batch.output)
            .arg(&rows)
            .arg(&npad)
            .arg(&k)
            .arg(&hint_offset);
        // SAFETY: the argument list matches `gvr1_topk` in kernels/baselines/gvr1.cu
        // (pointers to [rows*npad] f32, [rows] i32, [rows*k] i32 hints,
        // [rows*k] i32 output, then rows, npad, k as u32 and hint_offset as
        // i32). Hints are only dereferenced through an unsigned range check
        // against the row length. Grid = rows × ctas_per_row: the cluster
        // entries declare their cluster size with `__cluster_dims__`, so the
        // ordinary launch forms the clusters and the grid is a multiple of
        // it. The dynamic smem size was opted in by the arm before staging.
        unsafe { args.launch(ctx.plan.config()) }.map_err(launch_err(ctx.plan.entry))?;
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod model;

#[cfg(test)]
mod tests {
    use super::*;

    const H200_SMS: usize = 132;

    #[test]
    fn full_batches_and_short_rows_get_one_cta_per_row() {
        for (rows, n) in [
            (0usize, 131_072usize),
            (67, 131_072),
            (1024, 131_072),
            (70_000, 8192),
            (1, 16_383),
            (8, 5000),
        ] {
            for k in [512usize, 1024, 2048] {
                let p = plan(rows, n, k, H200_SMS).unwrap();
                assert_eq!(p.grid as usize, rows, "rows {rows} n {n}");
                assert_eq!((p.block, p.ctas_per_row), (BLOCK, 1));
                assert_eq!((p.entry, p.tier), (ENTRY, "per-row"));
                assert!(!p.grid_barrier);
                assert!(p.dyn_smem_bytes as usize + STATIC_SMEM_RESERVE <= SMEM_OPTIN_BYTES);
            }
        }
        assert_eq!(
            plan(2, 5000, 2048, H200_SMS).unwrap().describe(),
            "per-row (grid 2)"
        );
    }

    #[test]
    fn small_batches_of_long_rows_get_a_cluster_per_row() {
        // (rows, n) -> cluster size on the H200.
        let expected = [
            ((1usize, 65_536usize), 8u32),
            ((1, 262_144), 8),
            ((15, 70_000), 8),
            ((16, 262_144), 4), // 16 clusters of 8 are not co-resident
            ((30, 65_536), 4),
            ((31, 65_536), 2),
            ((64, 65_536), 2),
            ((66, 1 << 20), 2),
            ((1, 65_535), 4), // 8 slices would fall under MIN_SLICE
            ((4, 16_384), 2),
        ];
        for ((rows, n), cs) in expected {
            let p = plan(rows, n, 2048, H200_SMS).unwrap();
            assert_eq!(p.ctas_per_row, cs, "rows {rows} n {n}");
            assert_eq!(p.grid as usize, rows * cs as usize);
            assert_eq!(p.block, BLOCK);
            assert!(p.entry.ends_with(&format!("_c{cs}")), "{}", p.entry);
            assert_eq!(p.tier, format!("cluster CS={cs}"));
            // One wave: every row's cluster is co-resident.
            assert!(rows <= co_resident_clusters(cs, H200_SMS));
            assert!(n / cs as usize >= MIN_SLICE);
        }
        assert_eq!(
            plan(1, 262_144, 512, H200_SMS).unwrap().describe(),
            "cluster CS=8 (8 CTAs/row, grid 8)"
        );
    }

    /// The cases measured slower than torch.topk (B <= 64, N >= 65K) must
    /// all leave the per-row tier.
    #[test]
    fn the_underfilled_region_is_clustered() {
        for rows in [1usize, 2, 4, 8, 16, 32, 48, 64] {
            for n in [65_536usize, 131_072, 262_144, 1 << 20] {
                let p = plan(rows, n, 1024, H200_SMS).unwrap();
                assert!(p.ctas_per_row > 1, "rows {rows} n {n}: {}", p.describe());
            }
        }
    }

    #[test]
    fn co_residency_follows_the_measured_h200_table() {
        assert_eq!(co_resident_clusters(2, 132), 66);
        assert_eq!(co_resident_clusters(4, 132), 30);
        assert_eq!(co_resident_clusters(8, 132), 15);
        assert_eq!(co_resident_clusters(16, 132), 0);
        assert_eq!(cluster_size_for(0, 1 << 20, 132), None);
        assert_eq!(cluster_size_for(1, 1 << 20, 0), None);
    }

    #[test]
    fn refuses_what_the_kernel_cannot_do() {
        assert!(plan(1, MAX_ROW_LEN + 1, 512, H200_SMS).is_err());
        assert!(plan(1, 1000, 4096, H200_SMS).is_err());
        assert!(plan(1, 1000, 0, H200_SMS).is_err());
        plan(1, MAX_ROW_LEN, 2048, H200_SMS).unwrap();
        assert!(plan(usize::MAX / 2, 1000, 512, H200_SMS).is_err());
    }

    /// The host constants must match the kernel's `#define`s.
    #[test]
    fn constants_match_the_kernel_source() {
        let define = |name: &str| -> u64 {
            let line = GVR1
                .code
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("#define {name} missing"));
            let value = line.split_whitespace().nth(2).unwrap();
            value.trim_end_matches('u').parse().unwrap()
        };
        assert_eq!(define("G1_BLK"), BLOCK as u64, "G1_BLK");
        assert_eq!(define("G1_CAP"), CANDIDATE_CAP as u64, "G1_CAP");
        let entries = crate::gpu::sources::declared_entries(GVR1.code);
        assert!(entries.contains(&ENTRY.to_string()));
        for (cs, entry, _) in CLUSTER_ENTRIES {
            assert!(entries.contains(&entry.to_string()), "{entry} missing");
            // The entry's compile-time cluster size is the plan's CTAs/row.
            let declaration = GVR1
                .code
                .lines()
                .position(|l| l.contains(&format!("{entry}(")))
                .unwrap();
            let previous = GVR1.code.lines().nth(declaration - 1).unwrap();
            assert!(
                previous.contains(&format!("__cluster_dims__({cs}, 1, 1)")),
                "{entry}: {previous}"
            );
        }
    }

    #[test]
    fn registered_under_its_arm_name() {
        assert!(super::super::arm_names().contains(&"gvr1"));
    }
}
