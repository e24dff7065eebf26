//! `ss` and `ss-main`: the self-sampling GVR V2 streaming "main" kernel
//! (`kernels/ss_main.cu`, GVR_V2_SPEC.md §3) on the GPU.
//!
//! - `ss-main` always runs main, with the split factor R of the spec's
//!   streaming block without cluster rounding (`route_streaming(...,
//!   force_main)`, §5.2/§5.3).
//! - `ss` (src/arms/ss_routed.rs) asks `route()` which family serves the
//!   shape and delegates to that family's arm; the shapes it runs on main
//!   (the route's main picks, and any pick whose family arm does not take
//!   the shape as routed) use this arm in `Mode::Routed`: the route's R for
//!   main picks, else the forced-main R, with the intended family in the
//!   variant, e.g. `main(for reg)/blk1024/r1`.
//!
//! Everything that decides a launch is a pure function of the shape
//! ([`plan`]), unit-tested without a GPU. The kernel receives the §3.0
//! numbers of `route::main_params` as one by-value struct ([`SsMainArgs`]).

use std::sync::Arc;

use super::staged::StagedLaunch;

use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::arms::{to_u32, Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::sources::{Defines, FLUSH, SS_MAIN};
use crate::gpu::{Gpu, KernelBuild, Workspace};
use crate::grid::Batch;
use crate::route::params::{aim_base, aim_floor_coef, aim_min, on_one_cta_blk, SPLIT_SLAB_CAP};
use crate::route::{main_params, route, DeviceProfile, Family, MainParams};

/// The K values the kernel is built and tested for (§1.2).
pub const SUPPORTED_K: [usize; 3] = [512, 1024, 2048];
/// Longest row of the contract.
pub const MAX_ROW_LEN: usize = 1 << 20;
/// Rows are `blockIdx.y`: at most 65,535 per launch.
pub const MAX_ROWS: usize = 65_535;
/// Most SPLIT rows one workspace serves (`MAXC`, §7); the kernel indexes the
/// workspace by row, so a SPLIT launch never has more rows than this.
pub const SPLIT_MAX_ROWS: usize = 160;
/// Workspace of SPLIT launches (§7): `g_don[160]` u64 | unused to byte 2048
/// (spec §7's `g_off`, which the spin hand-off does without) |
/// `g_buf[160][GCAP]` 8-byte (value, index) words. Must match `SS_WS_*` in
/// `kernels/ss_main.cu`. A part arrives first, so `g_don`'s low word is also
/// the slab cursor; the slab words are their own flags, and the last arriver
/// zeroes `g_don` and every slab word it read. Zeroed once when allocated,
/// and again outside timing after an aborted launch.
pub const WORKSPACE_BYTES: usize = 2048 + SPLIT_MAX_ROWS * SPLIT_SLAB_CAP * 8;
/// Bytes one staged survivor or crossing candidate takes in shared memory.
/// The kernel always stages 8-byte (value, index) pairs (the spec's 4-byte
/// `bin<<22 | index` form for BLK 256 is not implemented).
const PAIR_BYTES: usize = 8;

/// `(BLK, U, SPLIT)` of every entry point compiled in `ss_main.cu`.
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

/// Entry point name of a compiled shape (see `ss_main.cu`).
pub fn entry_name(blk: u32, u: u32, split: bool) -> String {
    if split {
        format!("ss_main_split_u{u}")
    } else {
        format!("ss_main_b{blk}_u{u}")
    }
}

/// The kernel's by-value launch scalars: `SsMainParams` in `ss_main.cu`,
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
    /// (`ss_row_len` in kernels/common.cuh, src/varlen).
    pub next_n: u32,
    /// Varlen compress ratio as a shift: 0 for ratio 1, 2 for ratio 4.
    pub cr_shift: u32,
    /// C of the aim floor round(sqrt(C·n)) ([`aim_floor_coef`]).
    pub floor_coef: u32,
    /// Sample unit of `8 << unit_shift` values, one scattered read each
    /// ([`crate::route::params::main_sample_unit`]: 0 PAIR, 1 QUAD).
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
        // The kernel adds the per-row gate n/4 <= 32768 (§3.0 tshg, §6.3).
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
/// §3.0 formulas redone from the frozen launch knobs. This is the Rust twin
/// of `ss_row_schedule` in `ss_main.cu` (line for line), tested against
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

/// Which arm is planning: `ss` follows the route, `ss-main` forces main.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Routed,
    ForcedMain,
}

/// The NVRTC defines `ss_main.cu` takes from the device it runs on: the SM
/// count, with which the many-rows entries find their CTA's place in the first
/// wave (the wave stagger, kernels/ss_main.cu `ss_wave_stagger`).
pub fn device_defines(sms: u32) -> Defines {
    vec![("SS_WAVE_SMS", sms.max(1).to_string())]
}

/// Split factor of the streaming block forced to main (§5.2 step 1 without
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
pub struct SsPlan {
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
}

impl SsPlan {
    /// Recorded variant: `main/blk512/r1`, or `main(for reg)/blk1024/r1`
    /// when main runs a shape the route gave to another family.
    pub fn variant(&self) -> String {
        let tail = format!("blk{}/r{}", self.params.blk, self.params.r);
        match self.intended {
            Family::Main => format!("main/{tail}"),
            other => format!("main(for {})/{tail}", other.name()),
        }
    }

    pub fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: self.grid,
            block_dim: (self.block, 1, 1),
            shared_mem_bytes: self.dyn_smem_bytes,
        }
    }
}

/// `Err(reason)` for shapes the kernel does not take.
pub fn admits(shape: &Shape) -> std::result::Result<(), String> {
    if !SUPPORTED_K.contains(&shape.k) {
        return Err(format!("k = {} is not one of {SUPPORTED_K:?}", shape.k));
    }
    if shape.n > MAX_ROW_LEN {
        return Err(format!("row length {} exceeds {MAX_ROW_LEN}", shape.n));
    }
    if shape.n > shape.npad {
        return Err(format!(
            "row length {} exceeds npad {}",
            shape.n, shape.npad
        ));
    }
    if shape.npad == 0 || !shape.npad.is_multiple_of(64) {
        return Err(format!(
            "npad = {} is not a positive multiple of 64",
            shape.npad
        ));
    }
    if u32::try_from(shape.npad).is_err() {
        return Err(format!("npad = {} does not fit 32 bits", shape.npad));
    }
    if shape.rows > MAX_ROWS {
        return Err(format!(
            "{} rows exceed one launch's {MAX_ROWS}",
            shape.rows
        ));
    }
    Ok(())
}

/// Tuning switch of `ss-main`: `GVR_SS_MAIN_R=R` launches every shape with
/// R CTAs per row (clamped to [1, SMs]; R > 1 only for ≤ 160 rows) instead
/// of the forced-main split, so one device run can sweep R (kernels/TUNING.md).
/// The variant records the R used; `ss` never reads it.
pub const MAIN_R_ENV: &str = "GVR_SS_MAIN_R";

/// Tuning switch of `ss-main`: `GVR_SS_MAIN_BLK=256` (or 512) launches every
/// one-CTA-per-row U = 8 shape (more rows than SMs, no split) on that block's
/// entry instead of the route's pick, so one device run can compare the two
/// blocks on the same inputs (kernels/TUNING.md 2026-12-06b). The variant's
/// `blk` says which ran; `ss` never reads it.
pub const MAIN_BLK_ENV: &str = "GVR_SS_MAIN_BLK";

/// The block [`MAIN_BLK_ENV`] asks for (unset: `None`).
pub fn main_blk_switch(value: Option<&str>) -> std::result::Result<Option<u32>, String> {
    value
        .map(|v| match v.trim() {
            "256" => Ok(256),
            "512" => Ok(512),
            _ => Err(format!(
                "{MAIN_BLK_ENV}={v}: the one-CTA-per-row block is 256 or 512"
            )),
        })
        .transpose()
}

/// `plan` moved to the `blk`-thread one-CTA-per-row entry where it is a
/// one-CTA-per-row U = 8 launch (not big, not split); other plans unchanged.
pub fn with_main_blk(mut plan: SsPlan, blk: Option<u32>) -> SsPlan {
    let Some(blk) = blk else { return plan };
    if plan.params.big || plan.params.split || plan.params.blk == blk {
        return plan;
    }
    plan.params = on_one_cta_blk(plan.params, blk);
    plan.entry = entry_name(blk, plan.params.u, false);
    plan.block = blk;
    plan
}

/// Tuning switch of `ss-main`: `GVR_SS_MAIN_DEFINES=SS_L2_DIST=1,SS_PFD=2`
/// builds `ss_main.cu` with those streaming-pass knobs (kernels/ss_main.cu
/// documents each), so one device run can compare them on the same inputs.
/// The variant records them; `ss` never reads it.
pub const MAIN_DEFINES_ENV: &str = "GVR_SS_MAIN_DEFINES";

/// Tuning switch of `ss-main`: `GVR_SS_MAIN_SAMPLE=aim8=16,amin8=16,sfac=64`
/// replaces the §3.0 sample knobs of every launch and redoes the schedule
/// from them, so one device run can compare survivor targets on the same
/// inputs: aim8 is `aim_base` in eighths of k; amin8 the SPLIT aim floor in
/// eighths of k; sfac the sample points expected above the rung; floor the C
/// of the aim floor round(sqrt(C·n)), which caps the sample
/// at about SFAC·sqrt(n/C) values; unit the values per scattered sample read
/// (8, or above 8 for 16) (`floor=6,unit=8` and `aim8=32,floor=6,unit=8` give
/// the spec's schedule back). Host-only: the kernel is the same build. The
/// variant records them; `ss` never reads it.
pub const MAIN_SAMPLE_ENV: &str = "GVR_SS_MAIN_SAMPLE";

/// The knobs [`MAIN_SAMPLE_ENV`] may set, with their admitted value ranges.
const SAMPLE_KNOBS: [TuningKnob; 5] = [
    ("aim8", 8, 64),
    ("amin8", 8, 64),
    ("sfac", 8, 512),
    ("floor", 1, 1024),
    ("unit", 8, 16),
];

/// Parse `NAME=INT[,NAME=INT...]` of [`SAMPLE_KNOBS`]; an empty spec is no knob.
pub fn parse_sample_knobs(spec: &str) -> std::result::Result<Defines, String> {
    parse_knobs(MAIN_SAMPLE_ENV, "the main launch", &SAMPLE_KNOBS, spec)
}

/// The value of knob `name` among parsed knobs (`None`: not given).
pub fn knob_value(knobs: &Defines, name: &str) -> Option<u32> {
    knobs
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse::<u32>().ok())
}

/// The sample scalars a sample switch (`GVR_SS_MAIN_SAMPLE`,
/// `GVR_SS_CLUS_SAMPLE`) replaces, from its knobs for a launch of `k`.
pub struct SampleOverride {
    pub aim_base: Option<u32>,
    pub amin: Option<u32>,
    pub sfac: Option<u32>,
}

impl SampleOverride {
    pub fn from_knobs(knobs: &Defines, k: u32) -> SampleOverride {
        let eighths =
            |name: &str| knob_value(knobs, name).map(|x| (k as u64 * x as u64 / 8) as u32);
        SampleOverride {
            aim_base: eighths("aim8"),
            amin: eighths("amin8"),
            sfac: knob_value(knobs, "sfac"),
        }
    }
}

/// `args` with the sample knobs of `knobs` (from [`parse_sample_knobs`])
/// replaced and the launch's schedule redone from them.
pub fn with_sample_knobs(mut args: SsMainArgs, knobs: &Defines) -> SsMainArgs {
    if knobs.is_empty() {
        return args;
    }
    let o = SampleOverride::from_knobs(knobs, args.k);
    args.aim_base = o.aim_base.unwrap_or(args.aim_base);
    if args.r > 1 {
        args.amin = o.amin.unwrap_or(args.amin);
    }
    args.sfac = o.sfac.unwrap_or(args.sfac);
    args.floor_coef = knob_value(knobs, "floor").unwrap_or(args.floor_coef);
    if let Some(values) = knob_value(knobs, "unit") {
        // SPLIT entries always sample in PAIRs (kernels/ss_main.cu).
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

/// A kernel knob a tuning switch may set: (define name, lowest, highest value).
pub type TuningKnob = (&'static str, i64, i64);

/// The knobs [`MAIN_DEFINES_ENV`] may set, with their admitted value ranges.
const TUNABLE_DEFINES: [TuningKnob; 15] = [
    ("SS_MAIN_SAMPLE_AHEAD", 0, 1),
    ("SS_L2_DIST", 0, 8),
    ("SS_L2_START", 0, 8),
    ("SS_L2_START_SPLIT", 0, 1),
    ("SS_PFD", -1, 8),
    ("SS_WALK_SYNC", 0, 1),
    ("SS_ROW_U", 1, 8),
    ("SS_MAIN_STAGE_OUT", 0, 2),
    ("SS_THRESHOLD_TRIM", 0, 3),
    ("SS_SCAN_FORM", 0, 3),
    ("SS_WAVE_STAGGER", 0, 200_000),
    ("SS_WAVE_STAGGER_256", 0, 200_000),
    ("SS_WAVE_MIN_TENTHS", 10, 100),
    ("SS_WAVE_FULL_N", 0, 1 << 20),
    ("SS_SLAB_WAIT_BATCH", 1, 8),
];

/// `ss-main`'s tuning switches from the values of [`MAIN_R_ENV`] and
/// [`MAIN_DEFINES_ENV`] (unset: `None`): the R override and the kernel knobs.
pub fn main_switches(
    r: Option<&str>,
    defines: Option<&str>,
) -> std::result::Result<(Option<u32>, Defines), String> {
    let r = r
        .map(|value| {
            value
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("{MAIN_R_ENV}={value}: R must be a whole number"))
        })
        .transpose()?;
    let defines = defines
        .map(parse_tuning_defines)
        .transpose()?
        .unwrap_or_default();
    Ok((r, defines))
}

/// Parse `NAME=INT[,NAME=INT...]` of [`TUNABLE_DEFINES`]; an empty spec is no knob.
pub fn parse_tuning_defines(spec: &str) -> std::result::Result<Defines, String> {
    parse_knobs(MAIN_DEFINES_ENV, "ss_main.cu", &TUNABLE_DEFINES, spec)
}

/// A variant name with the kernel knobs it was built with: `… +NAME=VALUE`.
pub fn with_knobs(mut variant: String, knobs: &Defines) -> String {
    for (name, value) in knobs {
        variant.push_str(&format!(" +{name}={value}"));
    }
    variant
}

/// [`parse_knobs`] of a tuning switch's value when it is set (unset: no knob).
pub fn parse_optional_knobs(
    env: &str,
    file: &str,
    knobs: &[TuningKnob],
    spec: Option<&str>,
) -> std::result::Result<Defines, String> {
    spec.map(|spec| parse_knobs(env, file, knobs, spec))
        .transpose()
        .map(Option::unwrap_or_default)
}

/// Parse the value `spec` of the tuning switch `env` (`NAME=INT[,NAME=INT...]`)
/// into defines of `file`, each one of `knobs` and inside its range.
pub fn parse_knobs(
    env: &str,
    file: &str,
    knobs: &[TuningKnob],
    spec: &str,
) -> std::result::Result<Defines, String> {
    let mut out = Defines::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| format!("{env}: `{item}` is not NAME=VALUE"))?;
        let &(known, lo, hi) = knobs
            .iter()
            .find(|(n, _, _)| *n == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = knobs.iter().map(|d| d.0).collect();
                format!(
                    "{env}: `{}` is not a tuning knob of {file} (one of: {})",
                    name.trim(),
                    names.join(", ")
                )
            })?;
        let v: i64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v| (lo..=hi).contains(v))
            .ok_or_else(|| {
                format!(
                    "{env}: {known} takes an integer in [{lo}, {hi}], got `{}`",
                    value.trim()
                )
            })?;
        if out.iter().any(|(n, _)| *n == known) {
            return Err(format!("{env}: {known} is given twice"));
        }
        out.push((known, v.to_string()));
    }
    Ok(out)
}

/// The launch for `shape` on `dev`.
pub fn plan(mode: Mode, shape: &Shape, dev: &DeviceProfile) -> std::result::Result<SsPlan, String> {
    plan_with_r(mode, shape, dev, None)
}

/// [`plan`], with `ss-main`'s R replaced by `r_override` when given.
pub fn plan_with_r(
    mode: Mode,
    shape: &Shape,
    dev: &DeviceProfile,
    r_override: Option<u32>,
) -> std::result::Result<SsPlan, String> {
    admits(shape)?;
    let b = shape.rows.max(1);
    let (intended, r) = match mode {
        Mode::ForcedMain => {
            let r = match r_override {
                Some(r) if b <= SPLIT_MAX_ROWS => r.clamp(1, dev.sms.max(1)),
                Some(_) => 1,
                None => forced_main_r(b, shape.n, shape.k, dev),
            };
            (Family::Main, r)
        }
        Mode::Routed => {
            let decision = route(b, shape.n, shape.npad, shape.k, dev);
            match decision.family {
                Family::Main => (Family::Main, decision.ctas_per_row),
                other => (other, forced_main_r(b, shape.n, shape.k, dev)),
            }
        }
    };
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
    Ok(SsPlan {
        args: kernel_args(&params)?,
        entry,
        grid: (params.r, to_u32(shape.rows, "rows")?, 1),
        block: params.blk,
        dyn_smem_bytes: to_u32(dyn_smem, "shared memory")?,
        workspace_bytes: if params.split { WORKSPACE_BYTES } else { 0 },
        intended,
        params,
    })
}

/// The device profile the arm plans for: the H200 profile of `route`, with
/// the SM count of the device actually opened.
pub fn profile_for(gpu: &Gpu) -> DeviceProfile {
    DeviceProfile {
        sms: gpu.facts.sms.max(1),
        ..DeviceProfile::h200()
    }
}

/// Build the `ss` or `ss-main` arm (registry entry point).
pub fn create(name: &str, gpu: Option<Arc<Gpu>>) -> Result<Box<dyn Arm>> {
    let mode = match name {
        "ss" => Mode::Routed,
        "ss-main" => Mode::ForcedMain,
        other => {
            return Err(GvrError::Usage(format!(
                "arm `{other}` is not built by arms::ss"
            )))
        }
    };
    // ss-main's tuning switches, read before anything else so that a value
    // that does not parse is the error the user sees, not ignored.
    let (r_override, blk_override, tuning, sample) = if mode == Mode::ForcedMain {
        let (r, tuning) = main_switches(
            std::env::var(MAIN_R_ENV).ok().as_deref(),
            std::env::var(MAIN_DEFINES_ENV).ok().as_deref(),
        )
        .map_err(GvrError::Usage)?;
        let sample = parse_optional_knobs(
            MAIN_SAMPLE_ENV,
            "the main launch",
            &SAMPLE_KNOBS,
            std::env::var(MAIN_SAMPLE_ENV).ok().as_deref(),
        )
        .map_err(GvrError::Usage)?;
        let blk = main_blk_switch(std::env::var(MAIN_BLK_ENV).ok().as_deref())
            .map_err(GvrError::Usage)?;
        (r, blk, tuning, sample)
    } else {
        (None, None, Vec::new(), Vec::new())
    };
    let gpu = gpu.ok_or_else(|| {
        GvrError::Usage(format!(
            "arm `{name}` runs on the GPU, and this run has none (CPU arms: cpu-ref, cpu-ss)"
        ))
    })?;
    if mode == Mode::Routed {
        // `ss` hands each shape to the family the route picks.
        return Ok(Box::new(
            super::ss_routed::SsRouted::new(gpu).with_reg_env_tuning()?,
        ));
    }
    if !tuning.is_empty() {
        tracing::warn!("{MAIN_DEFINES_ENV}: ss-main builds its kernel with {tuning:?}");
    }
    if !sample.is_empty() {
        tracing::warn!("{MAIN_SAMPLE_ENV}: ss-main plans its launches with {sample:?}");
    }
    if let Some(blk) = blk_override {
        tracing::warn!("{MAIN_BLK_ENV}: ss-main launches one-CTA-per-row U 8 shapes on BLK {blk}");
    }
    let mut arm = SsMain::new(mode, gpu);
    arm.r_override = r_override;
    arm.blk_override = blk_override;
    arm.tuning = tuning;
    arm.sample = sample;
    Ok(Box::new(arm))
}

/// The GPU arm.
pub struct SsMain {
    mode: Mode,
    device: DeviceProfile,
    staged: StagedLaunch,
    plan: Option<SsPlan>,
    workspace: Workspace,
    /// Set by `GVR_SS_SLOWDOWN=1`: a wasted read pass before every launch.
    slowdown: Option<Slowdown>,
    /// `GVR_SS_MAIN_R` (ss-main only): R for every shape.
    r_override: Option<u32>,
    /// `GVR_SS_MAIN_BLK` (ss-main only): the one-CTA-per-row block.
    blk_override: Option<u32>,
    /// `GVR_SS_MAIN_DEFINES` (ss-main only): pass knobs added to the mode's defines.
    tuning: Defines,
    /// `GVR_SS_MAIN_SAMPLE` (ss-main only): the launch's sample knobs.
    sample: Defines,
}

/// Environment switch that makes `ss` deliberately slower, so the nightly
/// gate can prove it catches a regression (scripts/nightly.sh).
pub const SLOWDOWN_ENV: &str = "GVR_SS_SLOWDOWN";

/// The wasted pass: `flush_slowdown_read` over the staged logits.
struct Slowdown {
    function: CudaFunction,
    sink: CudaSlice<u8>,
}

impl Slowdown {
    fn from_env(gpu: &Arc<Gpu>) -> Result<Option<Slowdown>> {
        if std::env::var(SLOWDOWN_ENV).as_deref() != Ok("1") {
            return Ok(None);
        }
        tracing::warn!("{SLOWDOWN_ENV}=1: the ss arm adds a wasted read pass to every launch");
        let module = gpu.module(&FLUSH, &[])?;
        Ok(Some(Slowdown {
            function: gpu.function(&module, "flush_slowdown_read")?,
            sink: gpu.zeroed::<u8>(16)?,
        }))
    }
}

impl SsMain {
    pub fn new(mode: Mode, gpu: Arc<Gpu>) -> SsMain {
        SsMain {
            mode,
            device: profile_for(&gpu),
            workspace: Workspace::new(&gpu),
            staged: StagedLaunch::new(gpu, mode_arm_name(mode)),
            plan: None,
            slowdown: None,
            r_override: None,
            blk_override: None,
            tuning: Vec::new(),
            sample: Vec::new(),
        }
    }

    fn plan(&self, shape: &Shape) -> std::result::Result<SsPlan, String> {
        let mut plan = with_main_blk(
            plan_with_r(self.mode, shape, &self.device, self.r_override)?,
            self.blk_override,
        );
        plan.args = with_sample_knobs(plan.args, &self.sample);
        Ok(plan)
    }

    fn arm_name(&self) -> &'static str {
        mode_arm_name(self.mode)
    }

    /// The defines of this arm's one `ss_main.cu` build (every entry).
    fn build_defines(&self) -> Defines {
        let mut defines = device_defines(self.device.sms);
        defines.extend(self.tuning.iter().cloned());
        defines
    }
}

/// The arm name each mode is registered as.
fn mode_arm_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Routed => "ss",
        Mode::ForcedMain => "ss-main",
    }
}

impl Arm for SsMain {
    fn name(&self) -> &str {
        self.arm_name()
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        self.plan(shape).map(|_| ())
    }

    fn variant(&self, shape: &Shape) -> Option<String> {
        let slowed = std::env::var(SLOWDOWN_ENV).as_deref() == Ok("1");
        self.plan(shape).ok().map(|p| {
            let mut v = with_knobs(with_knobs(p.variant(), &self.tuning), &self.sample);
            if slowed {
                v.push_str(" +slowdown");
            }
            v
        })
    }

    fn builds(&self, shape: &Shape) -> Vec<KernelBuild> {
        match self.plan(shape) {
            Ok(_) => vec![KernelBuild {
                source: SS_MAIN,
                defines: self.build_defines(),
            }],
            Err(_) => Vec::new(),
        }
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        let shape = Shape::of(batch);
        let plan = self.plan(&shape).map_err(|reason| {
            GvrError::Usage(format!(
                "arm {} does not admit this batch: {reason}",
                self.arm_name()
            ))
        })?;
        self.staged.load(
            &SS_MAIN,
            &self.build_defines(),
            &plan.entry,
            plan.dyn_smem_bytes,
        )?;
        if self.slowdown.is_none() {
            self.slowdown = Slowdown::from_env(self.staged.gpu())?;
        }
        // Allocated (zeroed) once and kept: the kernel restores it to zero.
        self.workspace.ensure(plan.workspace_bytes)?;
        self.staged.stage(batch)?;
        self.plan = Some(plan);
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        // Re-zero the workspace outside timing: a launch aborted mid-row
        // would otherwise leave nonzero counters behind (§7).
        self.workspace.zero()?;
        self.staged.poison_output()
    }

    fn launch(&mut self) -> Result<()> {
        let Some(plan) = self.plan.as_ref() else {
            return Err(self.staged.not_staged());
        };
        if plan.grid.1 == 0 {
            return Ok(());
        }
        if let Some(slow) = self.slowdown.as_mut() {
            let gpu = self.staged.gpu().clone();
            let (_, _, batch) = self.staged.parts()?;
            let words16 = (batch.logits.len() / 4) as u64;
            let mut waste = gpu.stream.launch_builder(&slow.function);
            waste.arg(&batch.logits).arg(&words16).arg(&mut slow.sink);
            let cfg = LaunchConfig {
                grid_dim: (self.device.sms * 4, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: flush_slowdown_read(const uint4*, u64 words16, uint4*):
            // the logits buffer holds rows*npad f32 (npad a multiple of 64, so
            // a whole number of 16-byte words) and the sink holds 16 bytes.
            unsafe { waste.launch(cfg) }.map_err(|e| GvrError::Kernel {
                name: "flush_slowdown_read".into(),
                message: format!("launch failed: {e:?}"),
            })?;
        }
        let workspace = self.workspace.ensure(plan.workspace_bytes)?;
        // SAFETY: the argument list matches the `ss_main_*` entry points in
        // kernels/ss_main.cu: f32 [rows*npad], i32 [rows], i32 [rows*k],
        // i32 [rows*k], the by-value SsMainParams (SsMainArgs, same layout),
        // and a zeroed workspace of WORKSPACE_BYTES for SPLIT plans (unused
        // otherwise). Grid (R, rows), BLK threads, the planned dynamic smem.
        unsafe {
            self.staged
                .launch_rows(plan.args, plan.config(), None, Some(&*workspace))
        }
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        self.staged.read_output()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(WORKSPACE_BYTES, 20_973_568, "spec §7 size");
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
        let split = plan(
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
        let base = plan(Mode::ForcedMain, &shape(128, 32_783, 2048), &dev).unwrap();
        // The H200 defaults of this big one-CTA-per-row launch: aim 1.5k,
        // SFAC 64, floor sqrt(32·n).
        let same = parse_sample_knobs("aim8=12,sfac=64,floor=32").unwrap();
        assert_eq!(with_sample_knobs(base.args, &same), base.args);
        let spec = with_sample_knobs(base.args, &parse_sample_knobs("aim8=32,floor=6").unwrap());
        assert_eq!((spec.aim_base, spec.floor_coef), (8192, 6));
        assert!(
            spec.smp < base.args.smp,
            "a higher aim draws a smaller sample"
        );
        let want = row_schedule(&SsMainArgs { n_plan: 0, ..spec }, 32_783);
        assert_eq!((spec.smp, spec.ss2, spec.tgt, spec.tgt2), want);
        // amin only moves SPLIT launches.
        let split = plan(Mode::ForcedMain, &shape(8, 131_087, 2048), &dev).unwrap();
        assert!(split.args.r > 1);
        let low = with_sample_knobs(split.args, &parse_sample_knobs("amin8=16").unwrap());
        assert_eq!(low.amin, 4096);
        assert_eq!(
            with_sample_knobs(base.args, &parse_sample_knobs("amin8=16").unwrap()),
            base.args
        );
        assert!(parse_sample_knobs("aim=16").is_err());
        assert!(parse_sample_knobs("aim8=4").is_err());
    }

    #[test]
    fn ss_main_plans_match_main_params() {
        let dev = DeviceProfile::h200();
        let p = plan(Mode::ForcedMain, &shape(256, 262_144, 2048), &dev).unwrap();
        assert_eq!(
            (p.block, p.grid, p.entry.as_str()),
            (512, (1, 256, 1), "ss_main_b512_u8")
        );
        assert_eq!(p.variant(), "main/blk512/r1");
        assert_eq!(p.workspace_bytes, 0);
        assert_eq!(p.dyn_smem_bytes as usize, (8192 + 4 + 1024 + 1) * 8);

        let p = plan(Mode::ForcedMain, &shape(1, 131_072, 2048), &dev).unwrap();
        assert_eq!((p.grid, p.block), ((32, 1, 1), 1024));
        assert!(p.params.split && p.entry.starts_with("ss_main_split_u"));
        assert_eq!(p.workspace_bytes, WORKSPACE_BYTES);
        assert_eq!(p.variant(), "main/blk1024/r32");

        let p = plan(Mode::ForcedMain, &shape(1024, 16_384, 512), &dev).unwrap();
        assert_eq!((p.block, p.entry.as_str()), (256, "ss_main_b256_u8"));
        let p = plan(Mode::ForcedMain, &shape(1024, 65_536, 512), &dev).unwrap();
        assert_eq!((p.block, p.entry.as_str()), (512, "ss_main_b512_u8"));
    }

    #[test]
    fn the_block_switch_moves_only_one_cta_u8_launches() {
        let dev = DeviceProfile::h200();
        let routed = plan(Mode::ForcedMain, &shape(256, 65_536, 2048), &dev).unwrap();
        assert_eq!(routed.block, 512);
        let moved = with_main_blk(routed.clone(), Some(256));
        assert_eq!(
            (moved.block, moved.entry.as_str(), moved.params.minb),
            (256, "ss_main_b256_u8", 4)
        );
        // Everything that depends on the block is the planner's own for it.
        let mut expect = routed.params;
        (expect.blk, expect.minb) = (256, 4);
        (expect.kpt, expect.vstg) = (crate::route::params::kpt_for(2048, 256), false);
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
            let p = plan(Mode::ForcedMain, &s, &dev).unwrap();
            assert_eq!(with_main_blk(p.clone(), Some(256)), p);
        }
        assert_eq!(main_blk_switch(None).unwrap(), None);
        assert_eq!(main_blk_switch(Some(" 256")).unwrap(), Some(256));
        assert!(main_blk_switch(Some("1024"))
            .unwrap_err()
            .contains(MAIN_BLK_ENV));
    }

    #[test]
    fn main_switches_refuse_values_that_do_not_parse() {
        assert_eq!(main_switches(None, None).unwrap(), (None, vec![]));
        assert_eq!(
            main_switches(Some(" 8 "), Some("SS_L2_DIST=1")).unwrap(),
            (Some(8), vec![("SS_L2_DIST", "1".to_string())])
        );
        assert!(main_switches(Some("eight"), None)
            .unwrap_err()
            .contains(MAIN_R_ENV));
        assert!(main_switches(None, Some("SS_BINS=1"))
            .unwrap_err()
            .contains("not a tuning knob"));
    }

    #[test]
    fn the_device_defines_name_the_sm_count_and_never_zero() {
        assert_eq!(
            device_defines(132),
            vec![("SS_WAVE_SMS", "132".to_string())]
        );
        assert_eq!(device_defines(0), vec![("SS_WAVE_SMS", "1".to_string())]);
        // A tuning switch cannot set it: the host owns it.
        assert!(parse_tuning_defines("SS_WAVE_SMS=8").is_err());
        // The kernel takes it as an #ifndef default, so the host's value wins.
        assert!(crate::gpu::sources::SS_KNOBS.contains("#ifndef SS_WAVE_SMS\n#define SS_WAVE_SMS "));
    }

    #[test]
    fn tuning_defines_parse_known_knobs_and_refuse_the_rest() {
        assert_eq!(parse_tuning_defines("").unwrap(), vec![]);
        assert_eq!(
            parse_tuning_defines("SS_L2_DIST=1, SS_PFD=-1").unwrap(),
            vec![
                ("SS_L2_DIST", "1".to_string()),
                ("SS_PFD", "-1".to_string())
            ]
        );
        for (bad, says) in [
            ("SS_L2_DIST", "NAME=VALUE"),
            ("SS_BINS=512", "not a tuning knob"),
            ("SS_L2_DIST=9", "[0, 8]"),
            ("SS_PFD=x", "integer"),
            ("SS_PFD=1,SS_PFD=2", "twice"),
        ] {
            let err = parse_tuning_defines(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        // Every knob is an #ifndef default of the kernel or its header, so the define takes effect.
        let header = crate::gpu::sources::HEADERS
            .iter()
            .find(|(name, _)| *name == "ss/knobs.cuh")
            .map(|(_, text)| *text)
            .unwrap();
        for (name, _, _) in TUNABLE_DEFINES {
            let default = format!("#ifndef {name}\n#define {name} ");
            assert!(
                SS_MAIN.code.contains(&default) || header.contains(&default),
                "{name}"
            );
        }
    }

    #[test]
    fn ss_records_the_family_the_route_intended() {
        let dev = DeviceProfile::h200();
        let p = plan(Mode::Routed, &shape(1, 2048, 512), &dev).unwrap();
        assert_eq!(p.intended, Family::Reg);
        assert_eq!(p.variant(), "main(for reg)/blk1024/r1");
        let p = plan(Mode::Routed, &shape(31, 65_536, 512), &dev).unwrap();
        assert_eq!(p.intended, Family::Clus);
        assert!(
            p.variant().starts_with("main(for clus)/blk1024/r"),
            "{}",
            p.variant()
        );
        // Where the route picks main, ss and ss-main plan the same launch.
        let s = shape(1, 1 << 20, 1024);
        let routed = plan(Mode::Routed, &s, &dev).unwrap();
        assert_eq!(routed.intended, Family::Main);
        assert_eq!(routed, plan(Mode::ForcedMain, &s, &dev).unwrap());
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
                        let p = plan(mode, &s, &dev)
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
        let err = plan(Mode::Routed, &shape(1, 4096, 256), &dev).unwrap_err();
        assert!(err.contains("k = 256"), "{err}");
        let err = plan(Mode::ForcedMain, &shape(1, MAX_ROW_LEN + 64, 512), &dev).unwrap_err();
        assert!(err.contains("exceeds"), "{err}");
        let err = plan(Mode::ForcedMain, &shape(MAX_ROWS + 1, 4096, 512), &dev).unwrap_err();
        assert!(err.contains("rows"), "{err}");
        let bad_pad = Shape {
            rows: 1,
            n: 100,
            npad: 100,
            k: 512,
        };
        assert!(plan(Mode::ForcedMain, &bad_pad, &dev)
            .unwrap_err()
            .contains("npad"));
    }

    #[test]
    fn create_without_gpu_is_a_usage_error() {
        for name in ["ss", "ss-main"] {
            let err = create(name, None).err().expect("no GPU");
            assert_eq!(err.exit_code(), 2, "{err}");
            assert!(err.to_string().contains("GPU"), "{err}");
        }
        assert!(create("radix", None).is_err());
    }
}
