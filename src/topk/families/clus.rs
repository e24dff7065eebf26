//! The clustered streaming family `clus` (kernels/ss/clus.cu): main's
//! one-CTA-per-row algorithm with the row pass spread over a thread-block
//! cluster of CS ∈ {2, 4, 8} CTAs, histograms merged over DSMEM.
//!
//! - [`plan_routed`] admits exactly the shapes the route gives to
//!   `Family::Clus`, with the route's CS and `route::clus_params`;
//! - [`plan_forced`] also plans every other shape whose rows are long enough
//!   (`ss-clus`, for certification): the largest co-resident CS, else CS = 2
//!   in waves (correct: no cluster waits on another).
//!
//! The plan is a pure function of the shape and the device profile, so it is
//! unit-tested without a GPU; `launch` only enqueues.

use cudarc::driver::{DeviceRepr, LaunchConfig};

use crate::error::Result;
use crate::gpu::sources::{Defines, SS_CLUS_STREAM};
use crate::gpu::{DeviceBatch, KernelBuild};
use crate::topk::launcher::Launcher;
use crate::topk::route::params::{aim_base, aim_min};
use crate::topk::route::{clus_params, DeviceProfile, Family, MainParams, RouteDecision};
use crate::topk::tuning::{Scope, Tuning};
use crate::topk::{admits, to_u32, Shape};

/// Threads per CTA of every compiled clus entry.
pub const CLUS_BLK: u32 = 1024;
/// float4 per thread per chunk of the compiled entries `ss_clus_u{1,2,4,8}`.
pub const CLUS_U: [u32; 4] = [1, 2, 4, 8];
/// Cluster sizes the family is planned with.
pub const CLUS_SIZES: [u32; 3] = [2, 4, 8];
/// Bytes of the kernel's shared prelude (`CL_PRELUDE_BYTES`): hist[256] |
/// mrg[256] | red[64] | cross[3] | scalars, before the staging buffer.
pub const CLUS_PRELUDE_BYTES: u32 = 640 * 4;
/// Shortest row the forced plan takes: two chunks of the smallest entry.
pub const CLUS_FORCED_MIN_N: usize = 2 * 4 * CLUS_BLK as usize;

/// Launch scalars of the clus entries (`SsClusParams` in kernels/ss/clus.cu:
/// same field order, all u32, 56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusStreamArgs {
    /// Row length the schedule fields were computed for; rows of another
    /// length recompute them in-kernel ([`row_schedule`]).
    pub n_plan: u32,
    pub npad: u32,
    pub k: u32,
    pub scap: u32,
    pub cmp: u32,
    pub smp: u32,
    pub ss2: u32,
    pub tgt: u32,
    pub tgt2: u32,
    pub aim_base: u32,
    pub amin: u32,
    pub sfac: u32,
    /// 0: per-row lengths; ≥ 1: varlen `kv_lens` (see `SsMainArgs::next_n`).
    pub next_n: u32,
    /// Varlen compress ratio as a shift (0 or 2).
    pub cr_shift: u32,
}

// SAFETY: fourteen plain u32 fields, #[repr(C)]: bit-identical to `SsClusParams`.
unsafe impl DeviceRepr for ClusStreamArgs {}

/// One clus launch: grid (CS, rows), cluster (CS,1,1), block 1024.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusStreamLaunch {
    pub entry: String,
    pub grid: (u32, u32, u32),
    /// CTAs per cluster (= per row).
    pub cluster: u32,
    pub block: u32,
    pub dyn_smem_bytes: u32,
    /// float4 per thread per chunk.
    pub u: u32,
    /// Whether the route itself picks clus for the shape (else forced).
    pub routed: bool,
    /// The numbers the launch was derived from.
    pub params: MainParams,
    pub args: ClusStreamArgs,
}

/// Clusters of at least this many CTAs merge their histograms with every
/// thread's DSMEM loads instead of warp 0's (kernels/ss/clus.cu
/// `CL_MERGE_SPREAD`; H100: cl8 +5.8 to +8.1 %, cl4 −1.3 to +0.7 %, cl2 −1.5
/// to −2.7 %). A build-time define, so each launch's module has one form.
const MERGE_SPREAD_FROM_CS: u32 = 8;

/// The kernel define that picks the spread merge.
const MERGE_SPREAD_DEFINE: &str = "CL_MERGE_SPREAD";

impl ClusStreamLaunch {
    /// The defines the plan builds this launch with: the merge form for its
    /// cluster size.
    pub fn build_defines(&self) -> Defines {
        super::cluster_size_define(self.cluster, MERGE_SPREAD_FROM_CS, MERGE_SPREAD_DEFINE)
    }

    /// The build of this launch, the tuning's macros for kernels/ss/clus.cu
    /// on top (a `CL_MERGE_SPREAD` knob replaces the cluster size's form).
    pub fn build(&self, tuning: &Tuning) -> KernelBuild {
        KernelBuild {
            source: SS_CLUS_STREAM,
            defines: tuning.over(&SS_CLUS_STREAM, self.build_defines()),
        }
    }
}

/// Entry point of a clus plan with `u` float4 per thread per chunk.
pub fn clus_entry(u: u32) -> String {
    format!("ss_clus_u{u}")
}

/// Dynamic shared memory of a clus launch: prelude | staging (scap + 4
/// pairs, the last ones a trash slot) | ck64 (cmp pairs).
pub fn clus_smem_bytes(scap: usize, cmp: usize) -> usize {
    CLUS_PRELUDE_BYTES as usize + (scap + 4) * 8 + cmp * 8
}

/// The per-row QUAD sample schedule `(SMP, SS2, TGT, TGT2)` the kernel uses
/// for a row of length `n`: the launch's numbers when `n == n_plan`, else
/// the launch formulas redone from the frozen launch knobs; then the
/// kernel's guard (no sample unless `SMP·SS2 ≤ (n/4)/4`). Rust twin of
/// `cl_row_schedule` in kernels/ss/clus.cu, line for line.
pub fn row_schedule(a: &ClusStreamArgs, n: u32) -> (u32, u32, u32, u32) {
    let quarter = (n >> 2) >> 2;
    let (mut smp, mut ss2, mut tgt, mut tgt2) = (0u32, 1u32, 0u32, 0u32);
    if n == a.n_plan {
        (smp, ss2, tgt, tgt2) = (a.smp, a.ss2.max(1), a.tgt, a.tgt2);
    } else if n > a.scap && (n >> 2) >= 4 {
        let k = a.k;
        let floor6 = (0.5 + (6.0 * n as f64).sqrt()) as u32;
        let aim = a.aim_base.max(floor6).max(a.amin).min(a.scap >> 1).max(k);
        let sel = (a.sfac as u64 * n as u64 / aim.max(1) as u64)
            .max(256)
            .min((n >> 1) as u64);
        let q1 = quarter.max(1);
        let quads = ((sel >> 4) as u32).clamp(1, q1);
        ss2 = (q1 / quads).max(1);
        smp = (q1 / ss2).max(1);
        tgt = (aim as u64 * 16 * smp as u64 / n as u64).max(1) as u32;
        tgt2 = (k as u64 * 16 * smp as u64 / n as u64).max(1) as u32;
    }
    if smp == 0 || tgt == 0 || smp as u64 * ss2 as u64 > quarter as u64 {
        (smp, tgt, tgt2) = (0, 0, 0);
    }
    (smp, ss2, tgt, tgt2)
}

/// The kernel scalars of a clus launch with `cs` CTAs per row.
pub fn kernel_args(p: &MainParams, cs: u32) -> std::result::Result<ClusStreamArgs, String> {
    let mut args = ClusStreamArgs {
        n_plan: to_u32(p.n, "n")?,
        npad: to_u32(p.npad, "npad")?,
        k: to_u32(p.k, "k")?,
        scap: to_u32(p.scap, "scap")?,
        cmp: to_u32(p.cmp, "cmp")?,
        smp: to_u32(p.smp, "smp")?,
        ss2: to_u32(p.ss2, "ss2")?,
        tgt: to_u32(p.tgt, "tgt")?,
        tgt2: to_u32(p.tgt2, "tgt2")?,
        aim_base: to_u32(aim_base(p.k, cs, p.big, p.measured_sample), "aim_base")?,
        amin: to_u32(aim_min(p.k, cs), "amin")?,
        sfac: to_u32(p.sfac, "sfac")?,
        next_n: 0,
        cr_shift: 0,
    };
    if p.sampled && p.unit_values != 16 {
        // `clus_params` keeps main's PAIR geometry for a small-dense row
        // (k > 1024, not big, n ≤ SCAP; never a routed shape): the kernel
        // samples QUAD units only, so give it its own schedule for n.
        let recompute = ClusStreamArgs {
            n_plan: u32::MAX,
            ..args
        };
        (args.smp, args.ss2, args.tgt, args.tgt2) = row_schedule(&recompute, args.n_plan);
    }
    if !p.sampled {
        (args.smp, args.ss2, args.tgt, args.tgt2) = (0, 1, 0, 0);
    }
    Ok(args)
}

/// The launch with `cs` CTAs per row.
fn launch_for(
    shape: &Shape,
    dev: &DeviceProfile,
    cs: u32,
    routed: bool,
    tuning: &Tuning,
) -> std::result::Result<ClusStreamLaunch, String> {
    let b = shape.rows.max(1);
    let params = clus_params(b, shape.n, shape.npad, shape.k, cs, dev);
    if !CLUS_U.contains(&params.u) {
        return Err(format!("no compiled clus entry for U = {}", params.u));
    }
    let smem = clus_smem_bytes(params.scap, params.cmp);
    if smem > dev.smem_optin as usize {
        return Err(format!(
            "{smem} B of shared memory exceed the device's {}",
            dev.smem_optin
        ));
    }
    Ok(ClusStreamLaunch {
        entry: clus_entry(params.u),
        grid: (cs, to_u32(shape.rows, "rows")?, 1),
        cluster: cs,
        block: CLUS_BLK,
        dyn_smem_bytes: to_u32(smem, "shared memory")?,
        u: params.u,
        routed,
        args: with_sample_knobs(kernel_args(&params, cs)?, tuning),
        params,
    })
}

/// The knob scopes a clus launch's variant names.
pub const SCOPES: [Scope; 2] = [Scope::AllFamilies, Scope::Clus];

/// The clus launch for a shape the route gives to `Family::Clus` (with the
/// route's CS); every other shape is refused with a reason.
pub fn plan_routed(
    shape: &Shape,
    dev: &DeviceProfile,
    decision: &RouteDecision,
    tuning: &Tuning,
) -> std::result::Result<ClusStreamLaunch, String> {
    admits(shape)?;
    if decision.family != Family::Clus {
        return Err(format!(
            "the route picks {} ({}) for this shape, not clus",
            decision.label(),
            decision.reason
        ));
    }
    launch_for(shape, dev, decision.cluster, true, tuning)
}

/// The clus launch for any shape with rows of at least
/// [`CLUS_FORCED_MIN_N`] values: the routed plan when the route picks clus,
/// else the largest CS of 8/4/2 (≤ `dev.max_cluster`) whose clusters are
/// all co-resident, else CS = 2 (clusters then run in waves).
pub fn plan_forced(
    shape: &Shape,
    dev: &DeviceProfile,
    decision: &RouteDecision,
    tuning: &Tuning,
) -> std::result::Result<ClusStreamLaunch, String> {
    if let Ok(plan) = plan_routed(shape, dev, decision, tuning) {
        return Ok(plan);
    }
    admits(shape)?;
    if shape.n < CLUS_FORCED_MIN_N {
        return Err(format!(
            "rows of {} values are too short for a clustered stream (at least {CLUS_FORCED_MIN_N})",
            shape.n
        ));
    }
    let b = shape.rows.max(1);
    let cs = CLUS_SIZES
        .iter()
        .rev()
        .copied()
        .find(|&cs| cs <= dev.max_cluster && dev.cluster_fits(cs, b))
        .unwrap_or(2);
    launch_for(shape, dev, cs, false, tuning)
}

/// `args` with the sample knobs of `tuning` (`clus.aim8`, `clus.amin8`,
/// `clus.sfac`) replaced and the schedule redone from them.
pub fn with_sample_knobs(mut args: ClusStreamArgs, tuning: &Tuning) -> ClusStreamArgs {
    let eighths = |name: &str| {
        tuning
            .int(name)
            .map(|x| (args.k as u64 * x as u64 / 8) as u32)
    };
    let (aim, amin) = (eighths("clus.aim8"), eighths("clus.amin8"));
    let sfac = tuning.int("clus.sfac").map(|v| v as u32);
    if aim.is_none() && amin.is_none() && sfac.is_none() {
        return args;
    }
    args.aim_base = aim.unwrap_or(args.aim_base);
    args.amin = amin.unwrap_or(args.amin);
    args.sfac = sfac.unwrap_or(args.sfac);
    if args.smp > 0 {
        let recompute = ClusStreamArgs {
            n_plan: u32::MAX,
            ..args
        };
        (args.smp, args.ss2, args.tgt, args.tgt2) = row_schedule(&recompute, args.n_plan);
    }
    args
}
impl super::FamilyLaunch for ClusStreamLaunch {
    /// Recorded variant, e.g. `clus/cl4/u8`.
    fn variant(&self) -> String {
        format!(
            "clus/cl{}/u{}{}",
            self.cluster,
            self.u,
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
        // SAFETY: the argument list matches `ss_clus_u*` in kernels/ss/clus.cu:
        // f32 [rows*npad], i32 [rows] per-row lengths (next_n = 0), i32
        // [rows*k] hints, i32 [rows*k] output, the by-value SsClusParams
        // (ClusStreamArgs, same layout). Grid (CS, rows) with clusters of
        // (CS,1,1), 1024 threads, the planned dynamic shared memory (prelude
        // + staging + ck64, the kernel's layout).
        unsafe { launcher.launch_rows(batch, self.args, self.config(), Some(self.cluster), None) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topk::families::FamilyLaunch;
    use crate::topk::route::route;

    fn decide(s: &Shape, dev: &DeviceProfile) -> RouteDecision {
        route(s.rows.max(1), s.n, s.npad, s.k, dev)
    }

    fn plan_clus_stream(
        s: &Shape,
        dev: &DeviceProfile,
    ) -> std::result::Result<ClusStreamLaunch, String> {
        admits(s)?;
        plan_routed(s, dev, &decide(s, dev), &Tuning::default())
    }

    fn plan_clus_stream_forced(
        s: &Shape,
        dev: &DeviceProfile,
    ) -> std::result::Result<ClusStreamLaunch, String> {
        admits(s)?;
        plan_forced(s, dev, &decide(s, dev), &Tuning::default())
    }

    fn tuned(knobs: &[&str]) -> Tuning {
        let mut t = Tuning::default();
        for k in knobs {
            t.set_assignment(k).unwrap();
        }
        t
    }
    use crate::gpu::sources::declared_entries;

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
        assert_eq!(std::mem::size_of::<ClusStreamArgs>(), 56);
        let fields = crate::gpu::sources::u32_struct_fields(SS_CLUS_STREAM.code, "SsClusParams")
            .expect("all u32");
        assert_eq!(
            fields,
            [
                "n_plan", "npad", "k", "scap", "cmp", "smp", "ss2", "tgt", "tgt2", "aim_base",
                "amin", "sfac", "next_n", "cr_shift"
            ]
        );
        assert!(SS_CLUS_STREAM
            .code
            .contains(&format!("#define CL_PRELUDE {}u", CLUS_PRELUDE_BYTES / 4)));
    }

    #[test]
    fn entries_are_declared() {
        let declared = declared_entries(SS_CLUS_STREAM.code);
        for u in CLUS_U {
            assert!(declared.contains(&clus_entry(u)), "{declared:?}");
        }
        assert_eq!(declared.len(), CLUS_U.len());
    }

    /// Shapes the H200 route gives to clus (b, n, k).
    fn routed_shapes() -> Vec<(usize, usize, usize)> {
        let dev = DeviceProfile::h200();
        let mut out = Vec::new();
        for b in [
            1usize, 2, 4, 8, 15, 16, 17, 20, 24, 30, 31, 32, 33, 40, 64, 66, 67,
        ] {
            for n in [
                16_384usize,
                40_000,
                65_536,
                100_003,
                131_072,
                131_075,
                262_144,
                500_001,
                1 << 20,
            ] {
                for k in [512usize, 1024, 2048] {
                    let s = shape(b, n, k);
                    if route(b, n, s.npad, k, &dev).family == Family::Clus {
                        out.push((b, n, k));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_routed_clus_shape_is_planned_as_routed() {
        let dev = DeviceProfile::h200();
        let shapes = routed_shapes();
        assert!(shapes.len() > 30, "only {} clus shapes", shapes.len());
        let mut sizes = std::collections::BTreeSet::new();
        for (b, n, k) in shapes {
            let s = shape(b, n, k);
            let d = route(b, n, s.npad, k, &dev);
            let p = plan_clus_stream(&s, &dev).expect("routed shape admitted");
            assert!(p.routed);
            assert_eq!(p.cluster, d.cluster);
            assert_eq!((p.grid, p.block), ((d.cluster, b as u32, 1), 1024));
            assert!(dev.cluster_fits(p.cluster, b));
            let rp = d.params.unwrap();
            assert_eq!(p.params, rp);
            // QUAD geometry straight from clus_params for the planned n.
            assert!(rp.unit_values == 16 || !rp.sampled, "{rp:?}");
            let a = p.args;
            assert_eq!(
                (a.smp, a.ss2, a.tgt, a.tgt2),
                (rp.smp as u32, rp.ss2 as u32, rp.tgt as u32, rp.tgt2 as u32)
            );
            assert_eq!(row_schedule(&a, n as u32), (a.smp, a.ss2, a.tgt, a.tgt2));
            assert!(
                p.dyn_smem_bytes as usize == clus_smem_bytes(rp.scap, rp.cmp)
                    && p.dyn_smem_bytes <= dev.smem_optin
            );
            assert!(CLUS_U.contains(&p.u) && p.entry == clus_entry(p.u));
            sizes.insert(p.cluster);
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [2, 4, 8]);
    }

    #[test]
    fn row_schedule_equals_clus_params_for_every_row_length() {
        // Varlen: a row of another length gets clus_params' QUAD schedule
        // for its own n (same launch: b, CS, SCAP frozen).
        let dev = DeviceProfile::h200();
        for (b, n, k) in routed_shapes() {
            let s = shape(b, n, k);
            let p = plan_clus_stream(&s, &dev).unwrap();
            for n_row in [
                1usize,
                k,
                k + 1,
                4_099,
                p.params.scap,
                p.params.scap + 1,
                p.params.scap + 17,
                30_011,
                n - 1,
                n / 3 + 5,
            ] {
                let fresh = clus_params(b, n_row, s.npad, k, p.cluster, &dev);
                let got = row_schedule(&p.args, n_row as u32);
                let want = if fresh.sampled {
                    assert_eq!(fresh.unit_values, 16);
                    (
                        fresh.smp as u32,
                        fresh.ss2 as u32,
                        fresh.tgt as u32,
                        fresh.tgt2 as u32,
                    )
                } else {
                    (0, 1, 0, 0)
                };
                assert_eq!(got, want, "b={b} n={n} k={k} n_row={n_row}");
                // The sample never reads past the valid float4 prefix.
                let (smp, ss2, _, _) = got;
                assert!(4 * smp as usize * ss2 as usize * 4 <= (n_row >> 2) * 4);
            }
        }
    }

    #[test]
    fn other_shapes_are_refused_unless_forced() {
        let dev = DeviceProfile::h200();
        // Register rows, main SPLIT rows (b = 1), k = 2048 and wide batches.
        for (b, n, k) in [
            (64, 8_192, 512),
            (1, 262_144, 1024),
            (32, 262_144, 2048),
            (256, 131_072, 512),
        ] {
            let s = shape(b, n, k);
            let err = plan_clus_stream(&s, &dev).unwrap_err();
            assert!(err.contains("not clus"), "{err}");
            let p = plan_clus_stream_forced(&s, &dev).expect("forced plan");
            assert!(!p.routed);
            assert!(p.variant().ends_with("(forced)"));
            assert!(CLUS_SIZES.contains(&p.cluster));
            if dev.cluster_fits(8, b) {
                assert_eq!(p.cluster, 8);
            }
            // Forced k = 2048 wide batches: QUAD schedule or none.
            let (smp, ss2, _, _) = (p.args.smp, p.args.ss2, 0, 0);
            assert!(smp as usize * ss2 as usize <= (n >> 2) >> 2);
        }
        // Wide batch: no co-resident cluster, CS 2 in waves.
        let p = plan_clus_stream_forced(&shape(256, 131_072, 512), &dev).unwrap();
        assert_eq!(p.cluster, 2);
        // Too short, bad k, n > npad.
        assert!(plan_clus_stream_forced(&shape(8, 4_000, 512), &dev).is_err());
        assert!(plan_clus_stream_forced(&shape(8, 100_000, 100), &dev).is_err());
        let mut bad = shape(8, 100_000, 512);
        bad.npad = 64;
        assert!(plan_clus_stream_forced(&bad, &dev).is_err());
    }

    #[test]
    fn forced_small_dense_plan_samples_quad_units() {
        // k = 2048, not big (b·CS > SMs), n ≤ SCAP: clus_params keeps main's
        // PAIR small-dense sample; the kernel args hold a QUAD schedule (or
        // none) instead.
        let dev = DeviceProfile::h200();
        let s = shape(200, 8_192, 2048);
        let p = plan_clus_stream_forced(&s, &dev).unwrap();
        assert!(p.params.small_dense && p.params.unit_values == 8);
        assert_eq!((p.args.smp, p.args.tgt), (0, 0));
    }

    #[test]
    fn clus_sample_knobs_redo_the_quad_schedule() {
        let dev = DeviceProfile::h200();
        let shape = Shape {
            rows: 8,
            n: 131_075,
            npad: 131_136,
            k: 1024,
        };
        let plan = plan_clus_stream_forced(&shape, &dev).unwrap();
        let base = plan.args;
        assert_eq!(with_sample_knobs(base, &Tuning::default()), base);
        let low = with_sample_knobs(base, &tuned(&["clus.aim8=16", "clus.amin8=16"]));
        assert_eq!((low.aim_base, low.amin), (2048, 2048));
        assert!(
            low.amin < base.amin && low.smp > base.smp,
            "{base:?} {low:?}"
        );
        let want = row_schedule(&ClusStreamArgs { n_plan: 0, ..low }, 131_075);
        assert_eq!((low.smp, low.ss2, low.tgt, low.tgt2), want);
    }

    #[test]
    fn clusters_of_eight_build_the_spread_merge_unless_a_knob_says_otherwise() {
        let dev = DeviceProfile::h200();
        let eight = plan_clus_stream_forced(&shape(8, 131_072, 512), &dev).unwrap();
        let two = plan_clus_stream_forced(&shape(256, 131_072, 512), &dev).unwrap();
        assert_eq!((eight.cluster, two.cluster), (8, 2));
        let spread = vec![("CL_MERGE_SPREAD", "1".to_string())];
        assert_eq!(eight.build(&Tuning::default()).defines, spread);
        assert_eq!(two.build(&Tuning::default()).defines, vec![]);
        // A knob replaces the cluster size's choice, in both directions.
        let off = vec![("CL_MERGE_SPREAD", "0".to_string())];
        assert_eq!(eight.build(&tuned(&["CL_MERGE_SPREAD=0"])).defines, off);
        assert_eq!(two.build(&tuned(&["CL_MERGE_SPREAD=1"])).defines, spread);
        // Other knobs keep it.
        let l2 = vec![("CL_L2_NEXT", "0".to_string())];
        assert_eq!(
            eight.build(&tuned(&["CL_L2_NEXT=0"])).defines,
            vec![spread[0].clone(), l2[0].clone()]
        );
        assert_eq!(two.build(&tuned(&["CL_L2_NEXT=0"])).defines, l2);
    }

    #[test]
    fn variant_names_the_shape() {
        let dev = DeviceProfile::h200();
        let (b, n, k) = routed_shapes()[0];
        let p = plan_clus_stream(&shape(b, n, k), &dev).unwrap();
        assert_eq!(p.variant(), format!("clus/cl{}/u{}", p.cluster, p.u));
    }
}
