//! The clustered register family `reg_clus` (kernels/ss/reg_clus.cu):
//! register-resident rows spread over a thread-block cluster of CS ∈ {2, 4,
//! 8} CTAs.
//!
//! The plan is a pure function of the shape, the device profile and the
//! route's decision, so it is unit-tested without a GPU; `launch` only
//! enqueues (no host reads, no synchronisation).

use cudarc::driver::{DeviceRepr, LaunchConfig};

use crate::error::Result;
use crate::gpu::sources::{Defines, SS_CLUS};
use crate::gpu::{DeviceBatch, KernelBuild};
use crate::topk::launcher::Launcher;
use crate::topk::route::{reg_clus_float4s, DeviceProfile, Family, RouteDecision};
use crate::topk::tuning::{Scope, Tuning};
use crate::topk::{admits, Shape};

/// Threads per CTA of every compiled reg_clus entry.
pub const REGCLUS_BLK: u32 = 1024;
/// float4 per thread of the compiled entries `ss_regclus_v{1,2,4}`.
pub const REGCLUS_VPT: [u32; 3] = [1, 2, 4];
/// Largest k the family serves: the grid's largest K. The kernel folds the
/// k hints (or first k values) in a block-strided loop, so k is not tied to
/// the block (the emulator runs k up to 4·BLK: tests/emu/ss_clus.rs), and the
/// crossing slots (CS·4096) do not depend on k.
pub const REGCLUS_MAX_K: usize = 2048;
/// Crossing-candidate slots per CTA (`RC_CAP(1024)` in kernels/ss/reg_clus.cu).
pub const REGCLUS_CAND_PER_CTA: u32 = 4 * REGCLUS_BLK;
/// Dynamic shared memory per CTA: prelude[128] | hist | mrg | hoff (1024
/// bins each) | ck | ci (u32 words) = `RC_SMEM_WORDS(1024)·4` in kernels/ss/reg_clus.cu.
pub const RC_SMEM_BYTES: u32 = (128 + 3 * 1024 + 2 * REGCLUS_CAND_PER_CTA) * 4;

/// Launch scalars of the reg_clus entries (`RcParams` in kernels/ss/reg_clus.cu: same
/// field order, all u32).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegClusArgs {
    pub npad: u32,
    pub k: u32,
    /// 1: bracket from the first k values, hints never read.
    pub hint_free: u32,
    /// 0: per-row lengths; ≥ 1: varlen `kv_lens` (see `SsMainArgs::next_n`).
    pub next_n: u32,
    /// Varlen compress ratio as a shift (0 or 2).
    pub cr_shift: u32,
}

// SAFETY: five plain u32 fields, #[repr(C)]: bit-identical to `RcParams`.
unsafe impl DeviceRepr for RegClusArgs {}

/// One clustered launch: grid (CS, rows), cluster (CS,1,1), block BLK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusLaunch {
    pub family: Family,
    pub entry: String,
    pub grid: (u32, u32, u32),
    /// CTAs per cluster (= per row).
    pub cluster: u32,
    pub block: u32,
    pub dyn_smem_bytes: u32,
    /// float4 per thread (reg_clus).
    pub vpt: u32,
    /// Whether the route itself picks this family for the shape (else the
    /// arm was forced onto it).
    pub routed: bool,
    pub args: RegClusArgs,
}

/// Clusters of at least this many CTAs find the crossing with the coarse
/// merge (kernels/ss/reg_clus.cu `RC_COARSE_MERGE`: two small DSMEM rounds
/// instead of reading every bin of every rank). H100, 2026-12-07e (per-form
/// geomeans of three runs and per-B groups of the 400-case one): rc8x1 +2.1 to
/// +2.8 %, rc8x2 +1.3 to +2.1 %, rc8x4 −0.2 to +0.5 %, rc4x2 / rc4x4 −3.3 to
/// −4.9 %, rc2x4 −5.7 to −6.3 %: the full merge's
/// DSMEM traffic grows with the cluster, the coarse merge's extra round trip
/// does not (likely reason; not profiled). A build-time define, so each
/// launch's module has one form.
const COARSE_MERGE_FROM_CS: u32 = 8;

/// The kernel define that picks the coarse merge.
const COARSE_MERGE_DEFINE: &str = "RC_COARSE_MERGE";

impl ClusLaunch {
    /// The defines the plan builds this launch with: the merge form for its
    /// cluster size.
    pub fn build_defines(&self) -> Defines {
        super::cluster_size_define(self.cluster, COARSE_MERGE_FROM_CS, COARSE_MERGE_DEFINE)
    }

    /// The build of this launch, the tuning's macros for kernels/ss/reg_clus.cu
    /// on top (an `RC_COARSE_MERGE` knob replaces the cluster size's form).
    pub fn build(&self, tuning: &Tuning) -> KernelBuild {
        KernelBuild {
            source: SS_CLUS,
            defines: tuning.over(&SS_CLUS, self.build_defines()),
        }
    }
}

/// The knob scopes a reg_clus launch's variant names.
pub const SCOPES: [Scope; 2] = [Scope::AllFamilies, Scope::RegClus];

/// Entry point of a reg_clus plan with `vpt` float4 per thread.
pub fn regclus_entry(vpt: u32) -> String {
    format!("ss_regclus_v{vpt}")
}

/// CTAs of `vpt` float4 per thread needed for `n` values: the smallest power
/// of two, at least 2, whose registers hold the row's float4s (the rest, up
/// to one value per thread, sits in rank 0's tail scalars).
fn cluster_for(n: usize, vpt: u32) -> usize {
    let per_cta = (REGCLUS_BLK * vpt) as usize;
    reg_clus_float4s(n)
        .div_ceil(per_cta)
        .next_power_of_two()
        .max(2)
}

/// The reg_clus launch for `shape` on `dev`: the route's (CS, VPT) when the
/// route picks reg_clus; otherwise (the arm forced) the first VPT of 1/2/4
/// whose cluster of ≤ `dev.max_cluster` CTAs holds the row and is
/// co-resident for all rows, else the fewest CTAs per row (largest VPT)
/// whose single cluster fits — clusters then run in waves, which is correct
/// because no cluster waits on another.
pub fn plan(
    shape: &Shape,
    dev: &DeviceProfile,
    decision: &RouteDecision,
) -> std::result::Result<ClusLaunch, String> {
    admits(shape)?;
    if shape.k > REGCLUS_MAX_K {
        return Err(format!(
            "reg_clus serves k <= {REGCLUS_MAX_K}, not k = {}",
            shape.k
        ));
    }
    if RC_SMEM_BYTES > dev.smem_optin {
        return Err(format!(
            "{RC_SMEM_BYTES} B of shared memory exceed the device's {}",
            dev.smem_optin
        ));
    }
    let b = shape.rows.max(1);
    let max_cs = dev.max_cluster.min(8) as usize;
    let (cs, vpt, routed) = match (decision.family, decision.reg) {
        (Family::RegClus, Some(reg)) => (decision.cluster as usize, reg.vpt, true),
        _ => {
            let resident = REGCLUS_VPT.iter().find_map(|&v| {
                let cs = cluster_for(shape.n, v);
                (cs <= max_cs && dev.cluster_fits(cs as u32, b)).then_some((cs, v))
            });
            let waves = || {
                REGCLUS_VPT.iter().rev().find_map(|&v| {
                    let cs = cluster_for(shape.n, v);
                    (cs <= max_cs && dev.cluster_fits(cs as u32, 1)).then_some((cs, v))
                })
            };
            let (cs, v) = resident.or_else(waves).ok_or_else(|| {
                format!(
                    "a row of {} values needs more than {max_cs} CTAs of {REGCLUS_BLK}×4 float4",
                    shape.n
                )
            })?;
            (cs, v, false)
        }
    };
    if !REGCLUS_VPT.contains(&vpt) || !(2..=8).contains(&cs) || !cs.is_power_of_two() {
        return Err(format!("no compiled reg_clus shape for CS {cs}, VPT {vpt}"));
    }
    let rows =
        u32::try_from(shape.rows).map_err(|_| format!("{} rows do not fit 32 bits", shape.rows))?;
    Ok(ClusLaunch {
        family: Family::RegClus,
        entry: regclus_entry(vpt),
        grid: (cs as u32, rows, 1),
        cluster: cs as u32,
        block: REGCLUS_BLK,
        dyn_smem_bytes: RC_SMEM_BYTES,
        vpt,
        routed,
        args: RegClusArgs {
            npad: shape.npad as u32, // ss_admits checked it fits 32 bits
            k: shape.k as u32,
            hint_free: 0,
            next_n: 0,
            cr_shift: 0,
        },
    })
}

impl super::FamilyLaunch for ClusLaunch {
    /// Recorded variant, e.g. `reg_clus/rc4x2`.
    fn variant(&self) -> String {
        format!(
            "{}/rc{}x{}{}",
            self.family.name(),
            self.cluster,
            self.vpt,
            if self.routed { "" } else { " (forced)" }
        )
    }
    fn scopes(&self) -> &'static [Scope] {
        &SCOPES
    }
    fn builds(&self, tuning: &Tuning) -> Vec<KernelBuild> {
        vec![self.build(tuning)]
    }
    fn entry(&self) -> String {
        self.entry.clone()
    }
    fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: self.grid,
            block_dim: (self.block, 1, 1),
            shared_mem_bytes: self.dyn_smem_bytes,
        }
    }
    /// Enqueue the launch over `batch`.
    fn launch(
        &self,
        launcher: &Launcher,
        batch: &mut DeviceBatch,
        _workspace: &mut crate::gpu::Workspace,
    ) -> Result<()> {
        if self.grid.1 == 0 {
            return Ok(());
        }
        // SAFETY: the argument list matches `ss_regclus_v*` in
        // kernels/ss/reg_clus.cu: f32 [rows*npad], i32 [rows], i32 [rows*k],
        // i32 [rows*k] output, the by-value RcParams (RegClusArgs, same
        // layout). Grid (CS, rows) with clusters of (CS,1,1), 1024 threads,
        // RC_SMEM_BYTES of dynamic shared memory (the kernel's layout).
        unsafe { launcher.launch_rows(batch, self.args, self.config(), Some(self.cluster), None) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topk::families::FamilyLaunch;
    use crate::topk::route::route;

    fn plan_regclus(s: &Shape, dev: &DeviceProfile) -> std::result::Result<ClusLaunch, String> {
        admits(s)?;
        plan(s, dev, &route(s.rows.max(1), s.n, s.npad, s.k, dev))
    }
    use crate::gpu::sources::declared_entries;
    use crate::topk::route::REG_CLUS_MAX_N;

    fn shape(rows: usize, n: usize, k: usize) -> Shape {
        Shape {
            rows,
            n,
            npad: n.div_ceil(64) * 64,
            k,
        }
    }

    #[test]
    fn args_struct_matches_the_kernel_params() {
        assert_eq!(std::mem::size_of::<RegClusArgs>(), 20);
        let fields =
            crate::gpu::sources::u32_struct_fields(SS_CLUS.code, "RcParams").expect("all u32");
        assert_eq!(fields, ["npad", "k", "hint_free", "next_n", "cr_shift"]);
    }

    #[test]
    fn smem_and_entries_match_the_kernel() {
        assert_eq!(RC_SMEM_BYTES, 45_568);
        // The route's figure: 45,056 B of arrays + the 512 B prelude.
        let d = route(1, 32_768, 32_768, 512, &DeviceProfile::h200());
        assert_eq!(d.smem_bytes, RC_SMEM_BYTES);
        let declared = declared_entries(SS_CLUS.code);
        for v in REGCLUS_VPT {
            assert!(declared.contains(&regclus_entry(v)), "{declared:?}");
        }
    }

    #[test]
    fn every_routed_regclus_shape_is_planned_as_routed() {
        let dev = DeviceProfile::h200();
        let mut planned = 0;
        for b in [1usize, 2, 4, 8, 15, 16, 30, 31, 33, 64, 66] {
            for n in (16_384..=131_072)
                .step_by(4_093)
                .chain([16_385, 65_536, 131_072])
            {
                for k in [512usize, 1024, 2048] {
                    let s = shape(b, n, k);
                    let d = route(b, n, s.npad, k, &dev);
                    if d.family != Family::RegClus {
                        continue;
                    }
                    let p = plan_regclus(&s, &dev).expect("routed shape admitted");
                    assert!(p.routed);
                    assert_eq!((p.cluster, p.vpt), (d.cluster, d.reg.unwrap().vpt));
                    assert_eq!((p.grid, p.block), ((d.cluster, b as u32, 1), 1024));
                    assert!(dev.cluster_fits(p.cluster, b), "{b} rows of {}", p.cluster);
                    // The cluster's registers hold the row's float4s.
                    assert!((n >> 2) <= (p.cluster * 1024 * p.vpt) as usize);
                    planned += 1;
                }
            }
        }
        assert!(planned > 50, "only {planned} reg_clus shapes seen");
    }

    #[test]
    fn forced_plans_hold_the_row_and_fit_a_cluster() {
        let dev = DeviceProfile::h200();
        // Not routed to reg_clus (batch too wide): still a valid launch, in waves.
        let p = plan_regclus(&shape(64, 100_000, 512), &dev).unwrap();
        assert!(!p.routed);
        assert_eq!((p.cluster, p.vpt), (8, 4));
        // Short rows: the smallest cluster.
        let p = plan_regclus(&shape(1, 300, 512), &dev).unwrap();
        assert_eq!((p.cluster, p.vpt), (2, 1));
        // 8·1024·4 float4 = 131,072 values plus one tail value per thread
        // of rank 0 is the limit (v32's 131,087 fits).
        assert!(plan_regclus(&shape(1, 131_075, 512), &dev).is_ok());
        let p = plan_regclus(&shape(1, 131_087, 2048), &dev).unwrap();
        assert_eq!((p.cluster, p.vpt), (8, 4));
        assert!(plan_regclus(&shape(1, REG_CLUS_MAX_N, 512), &dev).is_ok());
        assert!(plan_regclus(&shape(1, REG_CLUS_MAX_N + 1, 512), &dev).is_err());
        assert!(plan_regclus(&shape(1, 50_000, 2048), &dev).is_ok());
        assert!(plan_regclus(&shape(1, 50_000, 4096), &dev).is_err());
        assert!(plan_regclus(&shape(1, 50_000, 100), &dev).is_err()); // k not supported by ss
    }

    #[test]
    fn clusters_of_eight_build_the_coarse_merge_unless_a_knob_says_otherwise() {
        let dev = DeviceProfile::h200();
        let eight = plan_regclus(&shape(1, 32_768, 512), &dev).unwrap();
        let four = plan_regclus(&shape(16, 32_768, 512), &dev).unwrap();
        let two = plan_regclus(&shape(32, 32_768, 512), &dev).unwrap();
        assert_eq!((eight.cluster, four.cluster, two.cluster), (8, 4, 2));
        let tuned = |knobs: &[&str]| {
            let knobs: Vec<String> = knobs.iter().map(|s| s.to_string()).collect();
            Tuning::from_args(None, &knobs).unwrap()
        };
        let coarse = vec![("RC_COARSE_MERGE", "1".to_string())];
        assert_eq!(eight.build(&Tuning::default()).defines, coarse);
        assert_eq!(four.build(&Tuning::default()).defines, vec![]);
        assert_eq!(two.build(&Tuning::default()).defines, vec![]);
        // A knob replaces the cluster size's choice, in both directions.
        let off = vec![("RC_COARSE_MERGE", "0".to_string())];
        assert_eq!(eight.build(&tuned(&["RC_COARSE_MERGE=0"])).defines, off);
        assert_eq!(two.build(&tuned(&["RC_COARSE_MERGE=1"])).defines, coarse);
        // Other knobs keep it.
        let local = ("RC_LOCAL_REFINE", "0".to_string());
        assert_eq!(
            eight.build(&tuned(&["RC_LOCAL_REFINE=0"])).defines,
            vec![coarse[0].clone(), local.clone()]
        );
        assert_eq!(
            two.build(&tuned(&["RC_LOCAL_REFINE=0"])).defines,
            vec![local]
        );
    }

    #[test]
    fn variant_names_the_shape() {
        let p = plan_regclus(&shape(1, 32_768, 512), &DeviceProfile::h200()).unwrap();
        assert_eq!(p.variant(), format!("reg_clus/rc{}x{}", p.cluster, p.vpt));
    }
}
