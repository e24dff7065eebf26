//! The streaming family `main` (kernels/ss/main.cu): one CTA per row, or R
//! CTAs per row (SPLIT) whose survivors meet in the last arriver.
//!
//! Everything that decides a launch is a pure function of the shape, the
//! route's decision and the tuning ([`plan`]), unit-tested without a GPU. The
//! kernel receives the numbers of `route::main_params` as one by-value struct
//! ([`SsMainArgs`]).

use cudarc::driver::{DeviceRepr, LaunchConfig};

use crate::error::Result;
use crate::gpu::sources::{Defines, SS_MAIN};
use crate::gpu::{DeviceBatch, KernelBuild, Workspace};
use crate::topk::launcher::Launcher;
use crate::topk::route::params::{
    aim_base, aim_floor_coef, aim_min, on_one_cta_blk, SPLIT_SLAB_CAP,
};
use crate::topk::route::{main_params, DeviceProfile, Family, MainParams, RouteDecision};
use crate::topk::tuning::{Scope, Tuning};
use crate::topk::{admits, to_u32, Shape};

/// Most SPLIT rows one workspace serves (`MAXC`); the kernel indexes the
/// workspace by row, so a SPLIT launch never has more rows than this.
pub const SPLIT_MAX_ROWS: usize = 160;
/// Workspace of SPLIT launches: `g_don[160]` u64 | unused to byte 2048
/// (the upstream `g_off`, which the spin hand-off does without) |
/// `g_buf[160][GCAP]` 8-byte (value, index) words. Must match `SS_WS_*` in
/// `kernels/ss/main.cu`. A part arrives first, so `g_don`'s low word is also
/// the slab cursor; the slab words are their own flags, and the last arriver
/// zeroes `g_don` and every slab word it read. Zeroed once when allocated,
/// and again outside timing after an aborted launch.
pub const WORKSPACE_BYTES: usize = 2048 + SPLIT_MAX_ROWS * SPLIT_SLAB_CAP * 8;
/// Bytes one staged survivor or crossing candidate takes in shared memory.
/// The kernel always stages 8-byte (value, index) pairs (the upstream 4-byte
/// `bin<<22 | index` form for BLK 256 is not implemented).
const PAIR_BYTES: usize = 8;

/// `(BLK, U, SPLIT)` of every entry point compiled in `kernels/ss/main.cu`.
pub const ENTRY_SHAPES: &[(u32, u32, bool)] = &[
    (1024, 1, false),
    (1024, 2, false),
    (1024, 4, false),
    (1024, 8, false),
    (512, 8, false),
    (256, 8, false),
    (1024, 1, true),
    (1024, 2, true),
    (1024, 4, true),
    (1024, 8, true),
];

/// Entry point name of a compiled shape (see `kernels/ss/main.cu`).
pub fn entry_name(blk: u32, u: u32, split: bool) -> String {
    if split {
        format!("ss_main_split_u{u}")
    } else {
        format!("ss_main_b{blk}_u{u}")
    }
}

/// The kernel's by-value launch scalars: `SsMainParams` in `kernels/ss/main.cu`,
/// field for field (18 × u32, 72 bytes, no padding).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SsMainArgs {
    /// Row length the schedule fields were computed for; rows of another
    /// length (varlen) recompute them in-kernel with [`row_schedule`]'s formulas.
    pub n_plan: u32,
    pub npad: u32,
    pub k: u32,
    pub r: u32,
    pub scap: u32,
    pub cmp: u32,
    pub smp: u32,
    pub ss2: u32,
    pub tgt: u32,
    pub tgt2: u32,
    /// Informational: the kernel derives Q from `gridDim.x` so the slices
    /// always cover the row.
    pub q: u32,
    pub aim_base: u32,
    pub amin: u32,
    pub sfac: u32,
    pub small_dense_en: u32,
    pub tsh_en: u32,
    /// 0: the length array holds per-row lengths; ≥ 1: it holds a varlen
    /// launch's per-request `kv_lens` with `next_n` rows per request
    /// (`ss_row_len` in kernels/ss/common.cuh, src/topk/varlen).
    pub next_n: u32,
    /// Varlen compress ratio as a shift: 0 for ratio 1, 2 for ratio 4.
    pub cr_shift: u32,
    /// C of the aim floor round(sqrt(C·n)) ([`aim_floor_coef`]).
    pub floor_coef: u32,
    /// Sample unit of `8 << unit_shift` values, one scattered read each
    /// ([`crate::topk::route::params::main_sample_unit`]: 0 PAIR, 1 QUAD).
    pub unit_shift: u32,
}

// SAFETY: `#[repr(C)]` plain-old-data of twenty u32, byte-identical to the
// kernel's `SsMainParams` (same order, 4-byte fields, no padding).
unsafe impl DeviceRepr for SsMainArgs {}

/// The kernel scalars of a planned launch.
pub fn kernel_args(p: &MainParams) -> std::result::Result<SsMainArgs, String> {
    Ok(SsMainArgs {
        n_plan: to_u32(p.n, "n")?,
        npad: to_u32(p.npad, "npad")?,
        k: to_u32(p.k, "k")?,
        r: p.r,
        scap: to_u32(p.scap, "scap")?,
        cmp: to_u32(p.cmp, "cmp")?,
        smp: to_u32(p.smp, "smp")?,
        ss2: to_u32(p.ss2, "ss2")?,
        tgt: to_u32(p.tgt, "tgt")?,
        tgt2: to_u32(p.tgt2, "tgt2")?,
        q: to_u32(p.q, "q")?,
        aim_base: to_u32(aim_base(p.k, p.r, p.big, p.measured_sample), "aim_base")?,
        amin: to_u32(aim_min(p.k, p.r), "amin")?,
        sfac: to_u32(p.sfac, "sfac")?,
        small_dense_en: u32::from(p.k > 1024 && !p.big),
        // The kernel adds the per-row gate n/4 <= 32768 (tshg).
        tsh_en: u32::from(p.split && p.b > 15 && p.k <= 1024),
        next_n: 0,
        cr_shift: 0,
        floor_coef: aim_floor_coef(p.r, p.measured_sample),
        unit_shift: unit_shift_of(p.unit_values)?,
    })
}

/// `log2(values / 8)` of a main sample unit of 8 or 16 values.
fn unit_shift_of(values: usize) -> std::result::Result<u32, String> {
    match values {
        8 => Ok(0),
        16 => Ok(1),
        other => Err(format!(
            "main sample units hold 8 or 16 values, not {other}"
        )),
    }
}

/// The per-row sample schedule `(SMP, SS2, TGT, TGT2)` the kernel uses for a
/// row of length `n`: the launch's own numbers when `n == n_plan`, else the
/// Launch formulas redone from the frozen launch knobs. This is the Rust twin
/// of `ss_row_schedule` in `kernels/ss/main.cu` (line for line), tested against
/// `MainParams::for_row_len`.
pub fn row_schedule(a: &SsMainArgs, n: u32) -> (u32, u32, u32, u32) {
    if n == a.n_plan {
        return (a.smp, a.ss2, a.tgt, a.tgt2);
    }
    let k = a.k;
    let floor = (0.5 + (a.floor_coef as f64 * n as f64).sqrt()) as u32;
    let mut aim = a.aim_base.max(floor);
    if a.r > 1 {
        aim = aim.max(a.amin);
    }
    aim = aim.min(a.scap >> 1).max(k);
    let small_dense = a.small_dense_en != 0 && n <= a.scap && n > 2 * k;
    let sampled = (n > a.scap || small_dense) && (n >> 2) >= 4;
    if !sampled {
        return (0, 1, 0, 0);
    }
    let sel = (a.sfac as u64 * n as u64 / aim.max(1) as u64)
        .max(256)
        .min((n >> 1) as u64);
    let sh = a.unit_shift;
    let slots = ((n >> 2) >> (1 + sh)).max(1);
    let units = ((sel >> (3 + sh)) as u32).max(1).min(slots);
    let ss2 = (slots / units).max(1);
    let smp = (slots / ss2).max(1);
    let tgt = ((aim as u64 * smp as u64) << (3 + sh)) / n as u64;
    let tgt2 = ((k as u64 * smp as u64) << (3 + sh)) / n as u64;
    let (tgt, tgt2) = (tgt.max(1) as u32, tgt2.max(1) as u32);
    (smp, ss2, tgt, tgt2)
}

/// The NVRTC defines `kernels/ss/main.cu` takes from the device it runs on: the SM
/// count, with which the many-rows entries find their CTA's place in the first
/// wave (the wave stagger, kernels/ss/main.cu `ss_wave_stagger`).
pub fn device_defines(sms: u32) -> Defines {
    vec![("SS_WAVE_SMS", sms.max(1).to_string())]
}

/// Split factor of the streaming block forced to main (without
/// the cluster rounding, as `route_streaming(..., force_main)`), with the
/// device's SM count for 148 and the `MAXC` row cap of the workspace.
pub fn forced_main_r(b: usize, n: usize, k: usize, dev: &DeviceProfile) -> u32 {
    let b = b.max(1);
    let sms = dev.sms as usize;
    let n4 = n >> 2;
    let r = if b <= 32 {
        (sms / b).min(n4.div_ceil(1024)).max(1)
    } else if b <= sms / 2 && n4 >= 16384 && k <= 1024 {
        2
    } else {
        1
    };
    if r > 1 && b > SPLIT_MAX_ROWS {
        1
    } else {
        r as u32
    }
}

/// Everything one launch needs, derived from the shape alone.
#[derive(Debug, Clone, PartialEq)]
pub struct MainLaunch {
    pub params: MainParams,
    pub args: SsMainArgs,
    pub entry: String,
    /// (R, rows, 1).
    pub grid: (u32, u32, u32),
    pub block: u32,
    pub dyn_smem_bytes: u32,
    /// 0 for one CTA per row.
    pub workspace_bytes: usize,
    /// The family the route intended (always `Main` for `ss-main`).
    pub intended: Family,
    /// SMs of the device planned for (the wave stagger's `SS_WAVE_SMS`).
    pub sms: u32,
}

impl MainLaunch {}

/// The one-CTA-per-row block a `main.blk` knob asks for.
fn blk_knob(tuning: &Tuning) -> Option<u32> {
    tuning.int("main.blk").map(|b| b as u32)
}

/// `plan` moved to the `blk`-thread one-CTA-per-row entry where it is a
/// one-CTA-per-row U = 8 launch (not big, not split); other plans unchanged.
pub fn with_main_blk(mut plan: MainLaunch, blk: Option<u32>) -> MainLaunch {
    let Some(blk) = blk else { return plan };
    if plan.params.big || plan.params.split || plan.params.blk == blk {
        return plan;
    }
    plan.params = on_one_cta_blk(plan.params, blk);
    plan.entry = entry_name(blk, plan.params.u, false);
    plan.block = blk;
    plan
}

/// `args` with the sample knobs of `tuning` (`main.aim8`, `main.amin8`,
/// `main.sfac`, `main.floor`, `main.unit`) replaced and the launch's schedule
/// redone from them.
pub fn with_sample_knobs(mut args: SsMainArgs, tuning: &Tuning) -> SsMainArgs {
    let eighths = |name: &str| {
        tuning
            .int(name)
            .map(|x| (args.k as u64 * x as u64 / 8) as u32)
    };
    let (aim, amin) = (eighths("main.aim8"), eighths("main.amin8"));
    let sfac = tuning.int("main.sfac").map(|v| v as u32);
    let floor = tuning.int("main.floor").map(|v| v as u32);
    let unit = tuning.int("main.unit");
    if aim.is_none() && amin.is_none() && sfac.is_none() && floor.is_none() && unit.is_none() {
        return args;
    }
    args.aim_base = aim.unwrap_or(args.aim_base);
    if args.r > 1 {
        args.amin = amin.unwrap_or(args.amin);
    }
    args.sfac = sfac.unwrap_or(args.sfac);
    args.floor_coef = floor.unwrap_or(args.floor_coef);
    if let Some(values) = unit {
        // SPLIT entries always sample in PAIRs (kernels/ss/main.cu).
        args.unit_shift = u32::from(values > 8 && args.r <= 1);
    }
    if args.smp > 0 {
        // Only sampled launches have a schedule to redo (the sample gate
        // does not depend on these knobs).
        let recompute = SsMainArgs {
            n_plan: u32::MAX,
            ..args
        };
        (args.smp, args.ss2, args.tgt, args.tgt2) = row_schedule(&recompute, args.n_plan);
    }
    args
}

/// The main launch for `shape`: with `routed` (the route's decision for the
/// shape) the route's R where it picks main, else the forced-main R with the
/// intended family recorded; without it (`ss-main`) always the forced-main
/// R. `main.r`, `main.blk` and the sample knobs of `tuning` apply on top.
pub fn plan(
    shape: &Shape,
    dev: &DeviceProfile,
    routed: Option<&RouteDecision>,
    tuning: &Tuning,
) -> std::result::Result<MainLaunch, String> {
    admits(shape)?;
    let b = shape.rows.max(1);
    let (intended, mut r) = match routed {
        None => (Family::Main, forced_main_r(b, shape.n, shape.k, dev)),
        Some(decision) => match decision.family {
            Family::Main => (Family::Main, decision.ctas_per_row),
            other => (other, forced_main_r(b, shape.n, shape.k, dev)),
        },
    };
    if let Some(knob) = tuning.int("main.r") {
        r = if b <= SPLIT_MAX_ROWS {
            (knob as u32).clamp(1, dev.sms.max(1))
        } else {
            1
        };
    }
    let params = main_params(b, shape.n, shape.npad, shape.k, r, dev);
    if params.split && (params.blk != 1024 || b > SPLIT_MAX_ROWS) {
        // Cannot happen with the route's R (R > 1 implies b·R ≤ SMs); kept
        // as a refusal rather than a wrong launch.
        return Err(format!(
            "SPLIT plan with BLK {} and {b} rows is not compiled",
            params.blk
        ));
    }
    let entry = entry_name(params.blk, params.u, params.split);
    if !ENTRY_SHAPES.contains(&(params.blk, params.u, params.split)) {
        return Err(format!("no compiled entry point {entry}"));
    }
    let dyn_smem = (params.scap + 4 + params.cmp + 1) * PAIR_BYTES;
    if dyn_smem > dev.smem_optin as usize {
        return Err(format!(
            "{dyn_smem} B of shared memory exceed the device's {}",
            dev.smem_optin
        ));
    }
    let launch = MainLaunch {
        args: kernel_args(&params)?,
        entry,
        grid: (params.r, to_u32(shape.rows, "rows")?, 1),
        block: params.blk,
        dyn_smem_bytes: to_u32(dyn_smem, "shared memory")?,
        workspace_bytes: if params.split { WORKSPACE_BYTES } else { 0 },
        intended,
        sms: dev.sms,
        params,
    };
    let mut launch = with_main_blk(launch, blk_knob(tuning));
    launch.args = with_sample_knobs(launch.args, tuning);
    Ok(launch)
}

/// The knob scopes a main launch's variant names.
pub const SCOPES: [Scope; 2] = [Scope::AllFamilies, Scope::Main];

impl MainLaunch {
    /// The build this launch runs: the device's SM count, then the tuning's
    /// macros for kernels/ss/main.cu.
    pub fn build(&self, tuning: &Tuning) -> KernelBuild {
        KernelBuild {
            source: SS_MAIN,
            defines: tuning.over(&SS_MAIN, device_defines(self.sms)),
        }
    }
}

impl super::FamilyLaunch for MainLaunch {
    /// Recorded variant: `main/blk512/r1`, or `main(for reg)/blk1024/r1`
    /// when main runs a shape the route gave to another family.
    fn variant(&self) -> String {
        let tail = format!("blk{}/r{}", self.params.blk, self.params.r);
        match self.intended {
            Family::Main => format!("main/{tail}"),
            other => format!("main(for {})/{tail}", other.name()),
        }
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
    fn workspace_bytes(&self) -> usize {
        self.workspace_bytes
    }
    /// Enqueue the launch over `batch`.
    fn launch(
        &self,
        launcher: &Launcher,
        batch: &mut DeviceBatch,
        workspace: &mut Workspace,
    ) -> Result<()> {
        if self.grid.1 == 0 {
            return Ok(());
        }
        let workspace = workspace.ensure(self.workspace_bytes)?;
        // SAFETY: the argument list matches the `ss_main_*` entry points in
        // kernels/ss/main.cu: f32 [rows*npad], i32 [rows], i32 [rows*k],
        // i32 [rows*k], the by-value SsMainParams (SsMainArgs, same layout),
        // and a zeroed workspace of WORKSPACE_BYTES for SPLIT plans (unused
        // otherwise). Grid (R, rows), BLK threads, the planned dynamic smem.
        unsafe { launcher.launch_rows(batch, self.args, self.config(), None, Some(&*workspace)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topk::families::FamilyLaunch;
    use crate::topk::route::route;
    use crate::topk::{MAX_ROWS, MAX_ROW_LEN, SUPPORTED_K};

    /// Which arm plans: `ss` follows the route, `ss-main` forces main.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Routed,
        ForcedMain,
    }

    fn plan_m(
        mode: Mode,
        s: &Shape,
        dev: &DeviceProfile,
    ) -> std::result::Result<MainLaunch, String> {
        admits(s)?;
        let t = Tuning::default();
        match mode {
            Mode::Routed => plan(
                s,
                dev,
                Some(&route(s.rows.max(1), s.n, s.npad, s.k, dev)),
                &t,
            ),
            Mode::ForcedMain => plan(s, dev, None, &t),
        }
    }

    fn tuned(knobs: &[&str]) -> Tuning {
        let mut t = Tuning::default();
        for k in knobs {
            t.set_assignment(k).unwrap();
        }
        t
    }

    fn shape(rows: usize, n: usize, k: usize) -> Shape {
        Shape {
            rows,
            n,
            npad: n.div_ceil(64).max(1) * 64,
            k,
        }
    }

    #[test]
    fn args_struct_is_twenty_packed_u32() {
        assert_eq!(std::mem::size_of::<SsMainArgs>(), 80);
        assert_eq!(std::mem::align_of::<SsMainArgs>(), 4);
    }

    #[test]
    fn kernel_constants_match_the_workspace_layout() {
        let code = SS_MAIN.code;
        for needle in [
            "#define SS_MAXC 160u",
            "#define SS_GCAP 16384u",
            "#define SS_WS_SLAB_OFFSET 2048u",
        ] {
            assert!(code.contains(needle), "ss_main.cu lacks `{needle}`");
        }
        assert_eq!(SPLIT_SLAB_CAP, 16384);
        assert_eq!(WORKSPACE_BYTES, 20_973_568, "the SPLIT workspace size");
    }

    #[test]
    fn kernel_params_struct_lists_the_fields_in_order() {
        // Field order of SsMainParams in the kernel must equal SsMainArgs.
        let fields =
            crate::gpu::sources::u32_struct_fields(SS_MAIN.code, "SsMainParams").expect("all u32");
        assert_eq!(
            fields,
            [
                "n_plan",
                "npad",
                "k",
                "r",
                "scap",
                "cmp",
                "smp",
                "ss2",
                "tgt",
                "tgt2",
                "q",
                "aim_base",
                "amin",
                "sfac",
                "small_dense_en",
                "tsh_en",
                "next_n",
                "cr_shift",
                "floor_coef",
                "unit_shift"
            ]
        );
    }

    #[test]
    fn split_launches_carry_the_spec_floor() {
        assert!(SS_MAIN
            .code
            .contains("__dsqrt_rn((double)p.floor_coef * (double)n)"));
        assert_eq!(aim_floor_coef(2, true), 6);
        let split = plan_m(
            Mode::ForcedMain,
            &shape(8, 131_087, 2048),
            &DeviceProfile::h200(),
        )
        .unwrap();
        assert!(split.args.r > 1);
        assert_eq!(split.args.floor_coef, 6);
    }

    #[test]
    fn entry_names_follow_the_shapes() {
        assert_eq!(entry_name(512, 8, false), "ss_main_b512_u8");
        assert_eq!(entry_name(1024, 4, true), "ss_main_split_u4");
    }

    #[test]
    fn row_schedule_equals_the_spec_formulas_for_every_row_length() {
        let dev = DeviceProfile::h200();
        for k in SUPPORTED_K {
            for (b, r) in [
                (1usize, 1u32),
                (1, 132),
                (1, 2),
                (16, 8),
                (20, 6),
                (64, 2),
                (132, 1),
                (256, 1),
                (512, 1),
            ] {
                let launch_n = 262_144usize;
                let launch = main_params(b, launch_n, launch_n, k, r, &dev);
                let args = kernel_args(&launch).unwrap();
                let mut ns: Vec<usize> = (0..80).map(|i| 1 + i * 3_313).collect();
                ns.extend([
                    k,
                    k + 1,
                    2 * k,
                    2 * k + 1,
                    4096,
                    8191,
                    8192,
                    8193,
                    16384,
                    16385,
                    launch_n,
                ]);
                for n in ns.into_iter().filter(|&n| n <= launch_n) {
                    let want = launch.for_row_len(n);
                    let got = row_schedule(&args, n as u32);
                    assert_eq!(
                        got,
                        (
                            want.smp as u32,
                            want.ss2 as u32,
                            want.tgt as u32,
                            want.tgt2 as u32
                        ),
                        "b={b} r={r} k={k} n={n}"
                    );
                    // The sample never reads past the row (float4 pairs).
                    assert!(got.0 as usize * got.1 as usize * 8 <= n, "b={b} n={n}");
                }
            }
        }
    }

    #[test]
    fn forced_main_r_follows_the_streaming_block() {
        let dev = DeviceProfile::h200();
        assert_eq!(forced_main_r(1, 1 << 20, 1024, &dev), 132);
        assert_eq!(forced_main_r(1, 131_072, 2048, &dev), 32);
        assert_eq!(forced_main_r(4, 131_072, 512, &dev), 32);
        assert_eq!(forced_main_r(16, 131_072, 512, &dev), 8);
        assert_eq!(forced_main_r(1, 2048, 512, &dev), 1);
        assert_eq!(forced_main_r(64, 65_536, 1024, &dev), 2);
        assert_eq!(forced_main_r(64, 65_536, 2048, &dev), 1);
        assert_eq!(
            forced_main_r(67, 1 << 20, 512, &dev),
            1,
            "more than SMs/2 rows"
        );
        assert_eq!(
            forced_main_r(0, 1 << 20, 512, &dev),
            132,
            "0 rows plans as one"
        );
    }

    #[test]
    fn sample_knobs_redo_the_schedule_and_the_defaults_change_nothing() {
        let dev = DeviceProfile::h200();
        let base = plan_m(Mode::ForcedMain, &shape(128, 32_783, 2048), &dev).unwrap();
        // The H200 defaults of this big one-CTA-per-row launch: aim 1.5k,
        // SFAC 64, floor sqrt(32·n).
        let same = tuned(&["main.aim8=12", "main.sfac=64", "main.floor=32"]);
        assert_eq!(with_sample_knobs(base.args, &same), base.args);
        let spec = with_sample_knobs(base.args, &tuned(&["main.aim8=32", "main.floor=6"]));
        assert_eq!((spec.aim_base, spec.floor_coef), (8192, 6));
        assert!(
            spec.smp < base.args.smp,
            "a higher aim draws a smaller sample"
        );
        let want = row_schedule(&SsMainArgs { n_plan: 0, ..spec }, 32_783);
        assert_eq!((spec.smp, spec.ss2, spec.tgt, spec.tgt2), want);
        // amin only moves SPLIT launches.
        let split = plan_m(Mode::ForcedMain, &shape(8, 131_087, 2048), &dev).unwrap();
        assert!(split.args.r > 1);
        let low = with_sample_knobs(split.args, &tuned(&["main.amin8=16"]));
        assert_eq!(low.amin, 4096);
        assert_eq!(
            with_sample_knobs(base.args, &tuned(&["main.amin8=16"])),
            base.args
        );
        assert!(Tuning::default().set("main.aim", "16").is_err());
        assert!(Tuning::default().set("main.aim8", "4").is_err());
    }

    #[test]
    fn ss_main_plans_match_main_params() {
        let dev = DeviceProfile::h200();
        let p = plan_m(Mode::ForcedMain, &shape(256, 262_144, 2048), &dev).unwrap();
        assert_eq!(
            (p.block, p.grid, p.entry.as_str()),
            (512, (1, 256, 1), "ss_main_b512_u8")
        );
        assert_eq!(p.variant(), "main/blk512/r1");
        assert_eq!(p.workspace_bytes, 0);
        assert_eq!(p.dyn_smem_bytes as usize, (8192 + 4 + 1024 + 1) * 8);

        let p = plan_m(Mode::ForcedMain, &shape(1, 131_072, 2048), &dev).unwrap();
        assert_eq!((p.grid, p.block), ((32, 1, 1), 1024));
        assert!(p.params.split && p.entry.starts_with("ss_main_split_u"));
        assert_eq!(p.workspace_bytes, WORKSPACE_BYTES);
        assert_eq!(p.variant(), "main/blk1024/r32");

        let p = plan_m(Mode::ForcedMain, &shape(1024, 16_384, 512), &dev).unwrap();
        assert_eq!((p.block, p.entry.as_str()), (256, "ss_main_b256_u8"));
        let p = plan_m(Mode::ForcedMain, &shape(1024, 65_536, 512), &dev).unwrap();
        assert_eq!((p.block, p.entry.as_str()), (512, "ss_main_b512_u8"));
    }

    #[test]
    fn the_block_switch_moves_only_one_cta_u8_launches() {
        let dev = DeviceProfile::h200();
        let routed = plan_m(Mode::ForcedMain, &shape(256, 65_536, 2048), &dev).unwrap();
        assert_eq!(routed.block, 512);
        let moved = with_main_blk(routed.clone(), Some(256));
        assert_eq!(
            (moved.block, moved.entry.as_str(), moved.params.minb),
            (256, "ss_main_b256_u8", 4)
        );
        // Everything that depends on the block is the planner's own for it.
        let mut expect = routed.params;
        (expect.blk, expect.minb) = (256, 4);
        (expect.kpt, expect.vstg) = (crate::topk::route::params::kpt_for(2048, 256), false);
        expect.smem_bytes = moved.params.smem_bytes;
        assert_eq!(moved.params, expect);
        assert!(moved.params.smem_bytes < routed.params.smem_bytes);
        assert_eq!(moved.variant(), "main/blk256/r1");
        assert_eq!((moved.args, moved.grid), (routed.args, routed.grid));
        assert_eq!(with_main_blk(routed.clone(), None), routed);
        let back = with_main_blk(moved, Some(512));
        assert_eq!((back.block, back.entry.as_str()), (512, "ss_main_b512_u8"));
        // SPLIT and big (B <= SMs) launches keep their BLK 1024 entries.
        for s in [shape(1, 131_072, 2048), shape(64, 65_536, 2048)] {
            let p = plan_m(Mode::ForcedMain, &s, &dev).unwrap();
            assert_eq!(with_main_blk(p.clone(), Some(256)), p);
        }
        // The knob reaches the planner.
        let s = shape(256, 65_536, 2048);
        let p = plan(&s, &dev, None, &tuned(&["main.blk=256"])).unwrap();
        assert_eq!(p.entry, "ss_main_b256_u8");
        assert!(Tuning::default().set("main.blk", "1024").is_err());
    }

    #[test]
    fn the_r_knob_sets_every_launchs_split_within_the_workspace() {
        let dev = DeviceProfile::h200();
        let p = plan(&shape(8, 131_087, 2048), &dev, None, &tuned(&["main.r=4"])).unwrap();
        assert_eq!((p.grid.0, p.params.r), (4, 4));
        let p = plan(
            &shape(200, 131_087, 2048),
            &dev,
            None,
            &tuned(&["main.r=4"]),
        )
        .unwrap();
        assert_eq!(p.grid.0, 1, "more rows than the workspace serves split");
    }

    #[test]
    fn the_device_defines_name_the_sm_count_and_never_zero() {
        assert_eq!(
            device_defines(132),
            vec![("SS_WAVE_SMS", "132".to_string())]
        );
        assert_eq!(device_defines(0), vec![("SS_WAVE_SMS", "1".to_string())]);
        // A knob cannot set it: the host owns it.
        assert!(Tuning::default().set("SS_WAVE_SMS", "8").is_err());
        // The kernel takes it as an #ifndef default, so the host's value wins.
        assert!(crate::gpu::sources::SS_KNOBS.contains("#ifndef SS_WAVE_SMS\n#define SS_WAVE_SMS "));
    }

    #[test]
    fn ss_records_the_family_the_route_intended() {
        let dev = DeviceProfile::h200();
        let p = plan_m(Mode::Routed, &shape(1, 2048, 512), &dev).unwrap();
        assert_eq!(p.intended, Family::Reg);
        assert_eq!(p.variant(), "main(for reg)/blk1024/r1");
        let p = plan_m(Mode::Routed, &shape(31, 65_536, 512), &dev).unwrap();
        assert_eq!(p.intended, Family::Clus);
        assert!(
            p.variant().starts_with("main(for clus)/blk1024/r"),
            "{}",
            p.variant()
        );
        // Where the route picks main, ss and ss-main plan the same launch.
        let s = shape(1, 1 << 20, 1024);
        let routed = plan_m(Mode::Routed, &s, &dev).unwrap();
        assert_eq!(routed.intended, Family::Main);
        assert_eq!(routed, plan_m(Mode::ForcedMain, &s, &dev).unwrap());
    }

    #[test]
    fn every_plan_is_launchable_and_covers_the_row() {
        let dev = DeviceProfile::h200();
        let mut bs: Vec<usize> = vec![
            1, 2, 3, 15, 16, 17, 31, 32, 33, 65, 66, 67, 131, 132, 133, 263, 264, 265, 1000, 1024,
        ];
        bs.sort();
        let ns = [
            0usize,
            1,
            511,
            512,
            513,
            2047,
            2049,
            4096,
            6144,
            16_385,
            65_536,
            131_075,
            262_144,
            1 << 20,
        ];
        for mode in [Mode::Routed, Mode::ForcedMain] {
            for k in SUPPORTED_K {
                for &b in &bs {
                    for &n in &ns {
                        let s = shape(b, n, k);
                        let p = plan_m(mode, &s, &dev)
                            .unwrap_or_else(|e| panic!("{mode:?} b={b} n={n} k={k}: {e}"));
                        let ctx = format!("{mode:?} b={b} n={n} k={k}: {p:?}");
                        assert!(
                            ENTRY_SHAPES.contains(&(p.params.blk, p.params.u, p.params.split)),
                            "{ctx}"
                        );
                        assert!(p.dyn_smem_bytes <= dev.smem_optin, "{ctx}");
                        assert_eq!(p.grid.0, p.params.r, "{ctx}");
                        assert_eq!(p.grid.1 as usize, b, "{ctx}");
                        assert_eq!(p.block, p.params.blk, "{ctx}");
                        // R CTAs of ⌈n4/R⌉ float4 cover every float4 of the row.
                        let n4 = n >> 2;
                        assert!(
                            p.params.r as usize * n4.div_ceil(p.params.r as usize) >= n4,
                            "{ctx}"
                        );
                        if p.params.split {
                            assert!(
                                b <= SPLIT_MAX_ROWS && p.workspace_bytes == WORKSPACE_BYTES,
                                "{ctx}"
                            );
                            assert!(b as u64 * p.params.r as u64 <= dev.sms as u64, "{ctx}");
                        }
                        assert_eq!(p.args.k as usize, k);
                        assert_eq!(p.args.n_plan as usize, n);
                    }
                }
            }
        }
    }

    #[test]
    fn unsupported_shapes_are_refused_with_a_reason() {
        let dev = DeviceProfile::h200();
        let err = plan_m(Mode::Routed, &shape(1, 4096, 256), &dev).unwrap_err();
        assert!(err.contains("k = 256"), "{err}");
        let err = plan_m(Mode::ForcedMain, &shape(1, MAX_ROW_LEN + 64, 512), &dev).unwrap_err();
        assert!(err.contains("exceeds"), "{err}");
        let err = plan_m(Mode::ForcedMain, &shape(MAX_ROWS + 1, 4096, 512), &dev).unwrap_err();
        assert!(err.contains("rows"), "{err}");
        let bad_pad = Shape {
            rows: 1,
            n: 100,
            npad: 100,
            k: 512,
        };
        assert!(plan_m(Mode::ForcedMain, &bad_pad, &dev)
            .unwrap_err()
            .contains("npad"));
    }
}
