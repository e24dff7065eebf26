//! Pure dispatch for the self-sampling families and the shared
//! ladder/parameter math (used by the GPU host side and by `cpu-ss`).
//!
//! - [`params`]: the launch parameters of main / clus.
//! - [`dispatch`]: `route()`, the family choice with the H200 adaptations.
//! - [`DeviceProfile`]: the device facts both depend on (SM count, shared
//!   memory, cluster co-residency).
//!
//! The evidence for every rung and rule is a row of docs/decisions.md; the
//! reports it cites have left the tree (`git show c583e85:reports/…` reads
//! them).

pub mod dispatch;
pub mod params;

pub use dispatch::{
    reg_capacity, reg_clus_float4s, route, Family, RegPlan, RouteDecision, REG_CLUS_MAX_N,
};
pub use params::{clus_params, main_params, MainParams};

use serde::Serialize;

/// Device facts the dispatch depends on. Everything the upstream code
/// hard-codes for a 148-SM B200 is derived from these instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DeviceProfile {
    pub name: &'static str,
    /// Streaming multiprocessors (replaces 148; 74 and 296 become sms/2, 2·sms).
    pub sms: u32,
    /// Opt-in dynamic shared memory per block, bytes.
    pub smem_optin: u32,
    /// Largest portable cluster size.
    pub max_cluster: u32,
    /// Largest cluster size with the non-portable attribute.
    pub max_cluster_nonportable: u32,
    /// Measured `cudaOccupancyMaxActiveClusters` for a 1024-thread, 1-CTA/SM
    /// kernel, indexed by log2(cluster size) for sizes 1, 2, 4, 8, 16.
    /// `None`: fall back to the upstream B200 rule (b·cs ≤ SMs, and no
    /// 8-CTA clusters beyond 15 rows).
    pub max_active_clusters: Option<[u32; 5]>,
    /// Pick BLK/MINB of one-CTA-per-row main launches by wave efficiency
    /// (`route::params::wave_aware_blk`) rather than by the B200 batch bands.
    pub wave_aware_main: bool,
    /// K = 2048 rows of up to `reg_capacity(1024, 4)` values take the
    /// register family at every batch size, in its smallest CTA that holds
    /// the row (512/2, 512/4, then 1024/4), except that rows 1024/1 holds
    /// take it while the batch has at most one row per SM: the smallest CTA
    /// puts the most rows per SM in flight, and a register-resident row beats
    /// main's streaming; not in the B200 route. Evidence: docs/decisions.md
    /// (`reg_k2048_rungs`).
    pub reg_k2048_rungs: bool,
    /// K <= 1024 rows of `reg_capacity(512, 2)` < n <= `reg_capacity(512, 4)`
    /// values in a batch of SMs < b <= 2·SMs rows take reg 512/4 instead of
    /// main: two register CTAs per SM fill main's ragged second wave; not in
    /// the B200 route. Evidence: docs/decisions.md (`reg_512x4_second_wave`).
    pub reg_512x4_second_wave: bool,
    /// The upstream regimg rung (row image in shared memory for the hint
    /// gather). Off on the H200: on the rows that rung takes, writing the
    /// image costs more than the hint gather it speeds up, so plain reg 1024/1
    /// wins at every B (likely reason; not profiled). Evidence:
    /// docs/decisions.md (`regimg_rung`).
    pub regimg_rung: bool,
    /// Longest per-rank slice (float4, `n4 / CS`) the clus family takes; a
    /// longer one runs main with the streaming block's R instead, since clus
    /// ranks stream without main's register pipelining (`None`: the B200
    /// route, no limit). Evidence: docs/decisions.md (`clus_max_rank_f4`).
    pub clus_max_rank_f4: Option<usize>,
    /// The reg emit form by emitted share and contention
    /// (`dispatch::reg_cursor_emit`) instead of the upstream
    /// `CUR = not (n < 2k and b > SMs)`. Evidence: docs/decisions.md
    /// (`measured_reg_emit`).
    pub measured_reg_emit: bool,
    /// K = 2048 rows of 16K < n <= 64K values (n4 <= 16,384) take the
    /// reg_clus rung where it fits, and rows of 64K < n <= 96K values (n4 <=
    /// 24,576) take clus with CS 8 where 8-CTA clusters are co-resident,
    /// instead of main SPLIT, whose global hand-off they avoid while the
    /// clusters are co-resident (upstream serves K = 2048 with main only).
    /// Evidence: docs/decisions.md (`k2048_clusters`).
    pub k2048_clusters: bool,
    /// The reg_clus rung needs at least this many SMs per row (`SMs / b`):
    /// the upstream 2, or 4 on the H200, where a 2-CTA cluster's merge costs
    /// more than one CTA per row of main once the batch fills the SMs
    /// (b = 64; likely reason, not profiled), though it still wins at b = 32.
    /// Evidence: docs/decisions.md (`reg_clus_min_sms_per_row`).
    pub reg_clus_min_sms_per_row: u32,
    /// K <= 1024 rows of `reg_capacity(1024, 1)` < n <= `reg_capacity(1024, 2)`
    /// values at b <= 32 take reg 1024/2 instead of 1024/4, which they would
    /// leave partly idle. Evidence: docs/decisions.md (`reg_1024x2_rung`).
    pub reg_1024x2_rung: bool,
    /// The main sample schedule tuned on the H200 instead of upstream's
    /// (evidence: docs/decisions.md, `measured_main_sample`): one-CTA-per-row
    /// launches floor aim at
    /// round(sqrt(32·n)) (with the upstream sqrt(6n), rows of 128K–256K values
    /// drew 500–1,400 scattered sample units), and big one-CTA rows of
    /// k ≥ 1024 aim at 1.5k survivors (the upstream 4k staged and emitted
    /// 8,192 per K = 2048 row). [`params::aim_base`], [`params::aim_floor_coef`].
    pub measured_main_sample: bool,
}

impl DeviceProfile {
    /// Our H200 (measured): 132 SMs, 232,448 B opt-in shared memory,
    /// portable clusters of 8 (16 non-portable), and the measured co-residency
    /// row "≥ 120,000 B, 1 CTA/SM": 132 / 66 / 30 / 15 / 7 clusters.
    pub fn h200() -> DeviceProfile {
        DeviceProfile {
            name: "H200",
            sms: 132,
            smem_optin: 232_448,
            max_cluster: 8,
            max_cluster_nonportable: 16,
            max_active_clusters: Some([132, 66, 30, 15, 7]),
            wave_aware_main: true,
            reg_k2048_rungs: true,
            reg_512x4_second_wave: true,
            regimg_rung: false,
            clus_max_rank_f4: Some(8192),
            measured_reg_emit: true,
            k2048_clusters: true,
            reg_clus_min_sms_per_row: 4,
            reg_1024x2_rung: true,
            measured_main_sample: true,
        }
    }

    /// The B200 constants of the upstream code (148 SMs), for reproducing the
    /// upstream worked examples.
    pub fn b200() -> DeviceProfile {
        DeviceProfile {
            name: "B200",
            sms: 148,
            smem_optin: 232_448,
            max_cluster: 8,
            max_cluster_nonportable: 16,
            max_active_clusters: None,
            wave_aware_main: false,
            reg_k2048_rungs: false,
            reg_512x4_second_wave: false,
            regimg_rung: true,
            clus_max_rank_f4: None,
            measured_reg_emit: false,
            k2048_clusters: false,
            reg_clus_min_sms_per_row: 2,
            reg_1024x2_rung: false,
            measured_main_sample: false,
        }
    }

    /// Whether `rows` clusters of `cs` 1024-thread CTAs (one CTA per SM) can
    /// all be resident at once. The route never picks a cluster shape that
    /// fails this (measured: 8-CTA clusters top out at 15 on the
    /// H200, 4-CTA ones at 30 although 4·33 ≤ 132).
    pub fn cluster_fits(&self, cs: u32, rows: usize) -> bool {
        if cs == 0 || !cs.is_power_of_two() || cs > self.max_cluster_nonportable {
            return false;
        }
        let rows = rows as u64;
        if rows * cs as u64 > self.sms as u64 {
            return false;
        }
        match self.max_active_clusters {
            Some(table) => {
                let slot = cs.trailing_zeros() as usize;
                table.get(slot).is_some_and(|&max| rows <= max as u64)
            }
            None => !(cs == 8 && rows > 15),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h200_cluster_residency_follows_the_measured_table() {
        let h = DeviceProfile::h200();
        assert!(h.cluster_fits(8, 15) && !h.cluster_fits(8, 16));
        assert!(h.cluster_fits(4, 30) && !h.cluster_fits(4, 31));
        assert!(h.cluster_fits(2, 66) && !h.cluster_fits(2, 67));
        assert!(!h.cluster_fits(3, 1) && !h.cluster_fits(32, 1));
    }

    #[test]
    fn b200_keeps_the_upstream_veto() {
        let b = DeviceProfile::b200();
        assert!(b.cluster_fits(8, 15) && !b.cluster_fits(8, 16));
        assert!(b.cluster_fits(4, 37) && !b.cluster_fits(4, 38));
    }
}
