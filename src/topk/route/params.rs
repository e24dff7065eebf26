//! The launch parameters of the streaming families (main, and clus with its
//! QUAD sample). This is the one place these formulas live:
//! the GPU host side passes the resulting scalars to the kernels, and `cpu-ss`
//! runs its CPU model of the main family with the very same numbers.
//!
//! All divisions are truncating integer divisions on non-negative values;
//! products that can exceed 2^31 are done in 64 bits.

use serde::{Deserialize, Serialize};

use super::DeviceProfile;

/// Histogram bins of the streaming families (`NBS`).
pub const STREAM_BINS: usize = 256;
/// O(m²) rank gate of the main/clus crossing-bin refinement (`QUADC_CLUS`).
pub const RANK_REFINE_MAX: usize = 288;
/// Levels of key-space narrowing for a crossing bin.
pub const REFINE_LEVELS: u32 = 6;
/// Levels of key-space narrowing for the whole-set fallbacks.
pub const FALLBACK_LEVELS: u32 = 8;
/// Attempts of the non-split retry ladder (`NATT`).
pub const NON_SPLIT_ATTEMPTS: u32 = 3;
/// Global slab capacity per SPLIT row (`GCAP`).
pub const SPLIT_SLAB_CAP: usize = 16384;
/// Hint-bracket sentinels: used when the hints are degenerate or absent.
pub const SENTINEL_LO: f32 = -3.0e38;
pub const SENTINEL_HI: f32 = 3.0e38;
/// Window width used when the computed width is not positive.
pub const MIN_WINDOW_WIDTH: f32 = 1e-30;

/// Every launch quantity for one launch of main (or clus, see [`clus_params`]).
///
/// Fields are the launch scalars and the compile-time knobs the kernel
/// instance is built with; names follow the upstream symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainParams {
    /// SM count of the device the launch was planned for (`big`, BLK/MINB).
    pub sms: u32,
    /// BLK/MINB of a one-CTA-per-row launch chosen by wave efficiency
    /// ([`DeviceProfile::wave_aware_main`]) instead of the upstream batch bands.
    pub wave_aware: bool,
    /// The H200's measured sample schedule ([`DeviceProfile::measured_main_sample`]).
    pub measured_sample: bool,
    /// Rows in the launch (used for `big`, BLK/MINB and `tshg`).
    pub b: usize,
    /// Valid row length the sample geometry was derived for.
    pub n: usize,
    /// Row stride in elements (passed through).
    pub npad: usize,
    pub k: usize,
    /// CTAs per row (grid.x); for clus this is the cluster size.
    pub r: u32,
    /// `b·R ≤ SM count`: the launch fits one wave of one CTA per SM.
    pub big: bool,
    /// Staging capacity (survivors) per CTA.
    pub scap: usize,
    /// Crossing-bin candidate capacity.
    pub cmp: usize,
    /// Target number of survivors `count(x ≥ T)`.
    pub aim: usize,
    /// Expected sample points above the rung.
    pub sfac: usize,
    /// Whether the row is sampled at all (the sample gate).
    pub sampled: bool,
    /// `k > 1024 and not big and 2k < n ≤ SCAP`: sampled although it fits staging.
    pub small_dense: bool,
    /// Number of sample units (0 when not sampled).
    pub smp: usize,
    /// Stride between sample units, in units (pairs of float4 for main).
    pub ss2: usize,
    /// Sample values per unit: 8 (main PAIR geometry) or 16 (clus QUAD geometry).
    pub unit_values: usize,
    /// Sample-count target of the primary rung (≈ aim survivors).
    pub tgt: usize,
    /// Sample-count target of the upper anchor (≈ k-th value).
    pub tgt2: usize,
    /// float4 vectors per part.
    pub q: usize,
    /// float4 per thread per tile.
    pub u: u32,
    /// CTA size.
    pub blk: u32,
    /// Minimum CTAs per SM (`__launch_bounds__`).
    pub minb: u32,
    /// Hint slots per thread.
    pub kpt: u32,
    /// Multi-CTA row (R > 1).
    pub split: bool,
    /// TSH-floor staging in SPLIT.
    pub tshg: bool,
    /// Staging holds 8-byte (value, index) pairs (else 4-byte `bin<<22 | index`).
    pub vstg: bool,
    /// Dynamic shared memory bytes of the launch.
    pub smem_bytes: u32,
}

/// The device facts a main launch is planned from (kept in [`MainParams`] so
/// that [`MainParams::with_k`] and [`MainParams::for_row_len`] replan alike).
#[derive(Debug, Clone, Copy)]
struct Planner {
    sms: u32,
    wave_aware: bool,
    measured_sample: bool,
}

impl MainParams {
    fn planner(&self) -> Planner {
        Planner {
            sms: self.sms,
            wave_aware: self.wave_aware,
            measured_sample: self.measured_sample,
        }
    }

    /// Attempts of the admission ladder: SPLIT has exactly one.
    pub fn attempts(&self) -> u32 {
        if self.split {
            1
        } else {
            NON_SPLIT_ATTEMPTS
        }
    }

    /// Sample size in values (`S = unit_values·SMP`).
    pub fn sample_values(&self) -> usize {
        self.smp * self.unit_values
    }

    /// Parameters of the same launch for a different `k` (everything is
    /// recomputed; only b, R, npad and the device stay).
    pub fn with_k(&self, k: usize) -> MainParams {
        if k == self.k {
            return *self;
        }
        params_for_sms(self.b, self.n, self.npad, k, self.r, self.planner())
    }

    /// The per-row recomputation of the varlen kernels: the same
    /// launch (b, R, BLK, SCAP, CMP, smem are frozen) but the n-dependent
    /// schedule (aim, sample gate and geometry, targets, Q) for a row of
    /// length `n_row`.
    pub fn for_row_len(&self, n_row: usize) -> MainParams {
        if n_row == self.n {
            return *self;
        }
        let fresh = params_for_sms(self.b, n_row, self.npad, self.k, self.r, self.planner());
        MainParams {
            n: n_row,
            aim: fresh.aim,
            sampled: fresh.sampled,
            small_dense: fresh.small_dense,
            smp: fresh.smp,
            ss2: fresh.ss2,
            unit_values: fresh.unit_values,
            tgt: fresh.tgt,
            tgt2: fresh.tgt2,
            q: fresh.q,
            tshg: fresh.tshg,
            ..*self
        }
    }
}

/// `round(x) = int(0.5 + x)` computed in double, as the host does.
fn round_half_up(x: f64) -> usize {
    (0.5 + x) as usize
}

/// Smallest `u` ladder value for `per = Q >> 10` float4 per thread.
fn u_ladder(q: usize) -> u32 {
    match q >> 10 {
        p if p >= 8 => 8,
        p if p >= 4 => 4,
        p if p >= 2 => 2,
        _ => 1,
    }
}

/// Hint slots per thread for a CTA of `blk` threads (KPT).
pub fn kpt_for(k: usize, blk: u32) -> u32 {
    let blk = blk as usize;
    if k <= blk {
        1
    } else if k <= 2 * blk {
        2
    } else if k <= 4 * blk {
        4
    } else {
        8
    }
}

/// `aim` before the sqrt(C·n) floor and the clamps ("base"); the
/// kernels receive it to redo the schedule for rows of another length.
/// `measured`: [`DeviceProfile::measured_main_sample`] (big one-CTA rows of
/// k ≥ 1024 aim at 1.5k instead of 4k: the upstream 4k staged and emitted
/// far more survivors than the rung needs; with [`aim_floor_coef`]).
/// Evidence: docs/decisions.md (`measured_main_sample`).
pub fn aim_base(k: usize, r: u32, big: bool, measured: bool) -> usize {
    match (big, r) {
        (true, 1) if k >= 1024 && measured => 3 * k / 2,
        (true, 1) if k >= 1024 => 4 * k,
        (true, _) => 2 * k,
        (false, _) if k >= 1024 => 11 * k / 8,
        (false, _) => 3 * k / 2,
    }
}

/// The multi-CTA aim floor `amin` (0 for one CTA per row).
pub fn aim_min(k: usize, r: u32) -> usize {
    match r {
        0 | 1 => 0,
        2 => 3 * k,
        _ => 7 * k / 2,
    }
}

/// The coefficient C of the aim floor round(sqrt(C·n)): the upstream 6, or 32
/// for one-CTA-per-row launches with [`DeviceProfile::measured_main_sample`].
/// The floor bounds the sample (SFAC·n/aim values, each unit a scattered
/// 32-byte read) at SFAC·sqrt(n/C) values; with the upstream floor long rows
/// draw hundreds of scattered units whose lines the pass then reads from DRAM
/// again. Evidence: docs/decisions.md (`measured_main_sample`).
pub fn aim_floor_coef(r: u32, measured: bool) -> u32 {
    if measured && r <= 1 {
        32
    } else {
        6
    }
}

/// `aim` for the main/clus families, including the sqrt(C·n) floor,
/// the SPLIT minimum `amin` and the final `[k, SCAP/2]` clamps.
fn aim_for(n: usize, k: usize, r: u32, big: bool, scap: usize, measured: bool) -> usize {
    let coef = aim_floor_coef(r, measured) as f64;
    let aim = aim_base(k, r, big, measured)
        .max(round_half_up((coef * n as f64).sqrt()))
        .max(aim_min(k, r));
    aim.min(scap / 2).max(k)
}

/// Values per sample unit (one scattered read each) of a main launch: the
/// upstream PAIR (8), or with [`DeviceProfile::measured_main_sample`] a QUAD
/// (16, one 64-byte read) for one-CTA-per-row launches: the same sample values
/// in half the scattered reads, which pays where many rows compete for DRAM;
/// SPLIT launches (B ≤ 32), whose sample is a per-thread latency chain, keep
/// PAIRs: there the wider unit lost.
/// Evidence: docs/decisions.md (`measured_main_sample`).
pub fn main_sample_unit(r: u32, measured: bool) -> usize {
    if measured && r <= 1 {
        16
    } else {
        8
    }
}

/// SFAC: expected sample points above the rung.
fn sfac_for(k: usize, r: u32) -> usize {
    match r {
        1 if k >= 1024 => 64,
        1 => 32,
        2 => 32,
        _ if k > 1024 => 48,
        _ => 16,
    }
}

/// The launch parameters of a main launch with `r` CTAs per row on `dev`
/// (the device's SM count replaces the B200's 148 in `big`, and twice it
/// replaces 296 in the BLK/MINB choice). `r = 0` is treated as 1.
pub fn main_params(
    b: usize,
    n: usize,
    npad: usize,
    k: usize,
    r: u32,
    dev: &DeviceProfile,
) -> MainParams {
    let planner = Planner {
        sms: dev.sms,
        wave_aware: dev.wave_aware_main,
        measured_sample: dev.measured_main_sample,
    };
    params_for_sms(b, n, npad, k, r, planner)
}

fn params_for_sms(
    b: usize,
    n: usize,
    npad: usize,
    k: usize,
    r: u32,
    planner: Planner,
) -> MainParams {
    let Planner {
        sms: device_sms,
        wave_aware,
        measured_sample,
    } = planner;
    let r = r.max(1);
    let sms = device_sms as u64;
    let big = (b as u64) * (r as u64) <= sms;
    let scap = match (big, r) {
        (true, 1) => 16384,
        (true, _) => 8192,
        (false, _) if k > 1024 => 8192,
        (false, _) => 4096,
    };
    let cmp = match big {
        true if k > 1024 => 4096,
        true => 2048,
        false => 1024,
    };
    let aim = aim_for(n, k, r, big, scap, measured_sample);
    let sfac = sfac_for(k, r);
    let small_dense = k > 1024 && !big && n <= scap && n > 2 * k;
    let sampled = (n > scap || small_dense) && n / 4 >= 4;

    let unit_values = main_sample_unit(r, measured_sample);
    let (smp, ss2, tgt, tgt2) = if sampled {
        sample_schedule(sfac, n, aim, k, unit_values)
    } else {
        (0, 1, 0, 0)
    };

    let n4 = n >> 2;
    let q = n4.div_ceil(r as usize);
    let (blk, minb) = if big {
        (1024, 1)
    } else if wave_aware {
        wave_aware_blk(b, n, scap, cmp, sms)
    } else {
        spec_band(b, sms)
    };
    let u = if big { u_ladder(q) } else { 8 };
    let split = r > 1;
    let tshg = split && b > 15 && k <= 1024 && n4 <= 32768;
    let vstg = stages_values(split, blk);
    let smem_bytes = main_smem_bytes(scap, cmp, vstg);
    MainParams {
        sms: device_sms,
        wave_aware,
        measured_sample,
        b,
        n,
        npad,
        k,
        r,
        big,
        scap,
        cmp,
        aim,
        sfac,
        sampled,
        small_dense,
        smp,
        ss2,
        unit_values,
        tgt,
        tgt2,
        q,
        u,
        blk,
        minb,
        kpt: kpt_for(k, blk),
        split,
        tshg,
        vstg,
        smem_bytes,
    }
}

/// (BLK, MINB) of the one-CTA-per-row U = 8 entries for more rows than SMs
/// (their `__launch_bounds__` in kernels/ss/main.cu).
const ONE_CTA_512: (u32, u32) = (512, 2);
const ONE_CTA_256: (u32, u32) = (256, 4);

/// `p` (a one-CTA-per-row U 8 launch) on the `blk`-thread entry, 512 or 256:
/// its MINB and what depends on the block recomputed (a tuning override's
/// plan, the `main.blk` knob).
pub fn on_one_cta_blk(mut p: MainParams, blk: u32) -> MainParams {
    (p.blk, p.minb) = if blk == 512 { ONE_CTA_512 } else { ONE_CTA_256 };
    p.kpt = kpt_for(p.k, p.blk);
    p.vstg = stages_values(p.split, p.blk);
    p.smem_bytes = main_smem_bytes(p.scap, p.cmp, p.vstg);
    p
}

/// The upstream BLK band of a one-CTA-per-row launch of `b` rows: BLK 512 up to
/// 2·SMs rows, else 256.
fn spec_band(b: usize, sms: u64) -> (u32, u32) {
    if (b as u64) <= 2 * sms {
        ONE_CTA_512
    } else {
        ONE_CTA_256
    }
}

/// Whether a launch stages (value, index) pairs (`vstg`): SPLIT parts
/// and blocks of 512 threads or more.
fn stages_values(split: bool, blk: u32) -> bool {
    split || blk >= 512
}

/// The upstream staging footprint (8-byte staging slots where `vstg`, else 4).
fn main_smem_bytes(scap: usize, cmp: usize, vstg: bool) -> u32 {
    ((scap + 4) * if vstg { 8 } else { 4 } + (cmp + 1) * 8) as u32
}

/// Shared memory one SM hands out to resident CTAs (sm_90: 228 KiB).
pub const SMEM_PER_SM: usize = 233_472;
/// Shared memory the driver reserves per resident CTA beside its own.
pub const DRIVER_SMEM_PER_CTA: usize = 1024;
/// Per-CTA shared memory besides the staging: `SsShared` (~1.5 KiB, rounded
/// up) plus the driver's reserve.
const MAIN_CTA_SMEM_EXTRA: usize = 2 * 1024 + DRIVER_SMEM_PER_CTA;

/// Resident CTAs per SM of a one-CTA-per-row main launch: the entry's MINB
/// (its register budget) or what the staging leaves room for, whichever is
/// smaller. The staging is `(scap + 4 + cmp + 1)` 8-byte pairs — the
/// footprint `arms::ss::plan` launches with.
pub fn main_ctas_per_sm(minb: u32, scap: usize, cmp: usize) -> u32 {
    let per_cta = (scap + 4 + cmp + 1) * 8 + MAIN_CTA_SMEM_EXTRA;
    (SMEM_PER_SM / per_cta).clamp(1, minb as usize) as u32
}

/// Fraction of the resident slots the launch keeps busy, over its waves:
/// `rows / (waves · slots)`.
pub fn wave_efficiency(rows: usize, slots: u64) -> f64 {
    let slots = slots.max(1);
    let waves = (rows as u64).div_ceil(slots).max(1);
    rows as f64 / (waves * slots) as f64
}

/// Shortest row that a one-CTA-per-row launch of more than 2·SMs rows runs on
/// BLK 512 when both blocks fill their last waves alike: two of the BLK 512
/// entry's tiles (512 threads × 8 float4): a row of at least two tiles keeps
/// BLK 512's pipelined pass busy, while shorter rows pay for its bigger CTA
/// without using it (likely reason; not profiled). The grid has no row
/// between 16,387 and 32,771 values, so the bound is the tile count, not a
/// measured crossing.
/// Only launches of at least [`BLK512_TIE_MIN_WAVE_TENTHS`] BLK 512 waves: a
/// launch just past one wave runs a nearly empty second wave against BLK
/// 256's single one. Evidence: docs/decisions.md (BLK 512 on a wave tie).
pub const BLK512_TIE_MIN_N: usize = 2 * 512 * 8 * 4;

/// Fewest BLK 512 waves, in tenths, for [`BLK512_TIE_MIN_N`]'s tie rule: the
/// kernel's `SS_WAVE_MIN_TENTHS`, from which on BLK 512 staggers its first wave
/// (a launch of fewer waves runs its second wave nearly empty, unstaggered).
pub const BLK512_TIE_MIN_WAVE_TENTHS: u64 = 19;

/// BLK/MINB of a one-CTA-per-row launch with more rows than SMs, for the
/// H200: upstream picks by batch band (BLK 512 up to 2·SMs rows, else 256),
/// which at K = 2048 puts B = 512 on BLK 256 at 3 CTAs/SM (staging-bound):
/// 1.29 waves of 396 slots, a mostly empty last wave. Take the shape whose
/// last wave is fuller (evidence: docs/decisions.md, `wave_aware_main`); on a
/// tie (within 2 %) keep the upstream band, except that rows of at least
/// [`BLK512_TIE_MIN_N`] values take BLK 512 in launches of at least
/// [`BLK512_TIE_MIN_WAVE_TENTHS`] of its waves.
fn wave_aware_blk(b: usize, n: usize, scap: usize, cmp: usize, sms: u64) -> (u32, u32) {
    let blk512_waves_tenths = b as u64 * 10 / (sms * ONE_CTA_512.1 as u64).max(1);
    let spec = if n >= BLK512_TIE_MIN_N && blk512_waves_tenths >= BLK512_TIE_MIN_WAVE_TENTHS {
        ONE_CTA_512
    } else {
        spec_band(b, sms)
    };
    let eff =
        |(_, minb): (u32, u32)| wave_efficiency(b, sms * main_ctas_per_sm(minb, scap, cmp) as u64);
    let other = if spec == ONE_CTA_512 {
        ONE_CTA_256
    } else {
        ONE_CTA_512
    };
    if eff(other) > eff(spec) * 1.02 {
        other
    } else {
        spec
    }
}

/// `sel = clamp(⌊SFAC·n/aim⌋, 256, ⌊n/2⌋)` with a 64-bit product; the lower
/// clamp is applied first, so `n/2` wins for tiny rows.
fn sample_select(sfac: usize, n: usize, aim: usize) -> usize {
    let raw = (sfac as u64 * n as u64 / aim.max(1) as u64) as usize;
    raw.max(256).min(n / 2)
}

/// `(SMP, SS2, TGT, TGT2)` of a sample of `sel` values in units of
/// `unit_values` (8 PAIR, 16 QUAD): the row's float4 are cut into unit slots,
/// SMP units are drawn SS2 slots apart, and the targets scale with the values
/// drawn. The kernels redo it for varlen rows; their Rust twins are
/// `arms::ss::row_schedule` and `arms::ss_clus_stream::row_schedule`.
fn sample_schedule(
    sfac: usize,
    n: usize,
    aim: usize,
    k: usize,
    unit_values: usize,
) -> (usize, usize, usize, usize) {
    let sel = sample_select(sfac, n, aim);
    let slots = ((n >> 2) / (unit_values / 4)).max(1);
    let units = (sel / unit_values).clamp(1, slots);
    let ss2 = (slots / units).max(1);
    let smp = (slots / ss2).max(1);
    let (tgt, tgt2) = sample_targets(aim, k, unit_values, smp, n);
    (smp, ss2, tgt, tgt2)
}

/// `TGT = max(⌊aim·V·SMP/n⌋, 1)`, `TGT2 = max(⌊k·V·SMP/n⌋, 1)` for V values per unit.
fn sample_targets(
    aim: usize,
    k: usize,
    unit_values: usize,
    smp: usize,
    n: usize,
) -> (usize, usize) {
    let n = n.max(1) as u64;
    let scaled = |x: usize| ((x as u64 * unit_values as u64 * smp as u64 / n) as usize).max(1);
    (scaled(aim), scaled(k))
}

/// The clus launch: main's launch numbers with R = CS, then
/// the QUAD sample geometry (one 64-byte line = 16 values per unit) when
/// `n > SCAP`, a fixed BLK 1024 / MINB 1 and the clus shared-memory layout.
pub fn clus_params(
    b: usize,
    n: usize,
    npad: usize,
    k: usize,
    cs: u32,
    dev: &DeviceProfile,
) -> MainParams {
    let mut p = main_params(b, n, npad, k, cs, dev);
    if n > p.scap {
        let (smp, ss2, tgt, tgt2) = sample_schedule(p.sfac, n, p.aim, k, 16);
        p.sampled = true;
        p.smp = smp;
        p.ss2 = ss2;
        p.unit_values = 16;
        p.tgt = tgt;
        p.tgt2 = tgt2;
    }
    p.blk = 1024;
    p.minb = 1;
    p.kpt = kpt_for(k, 1024);
    p.split = false;
    p.tshg = false;
    p.vstg = true;
    p.smem_bytes = (2048 + (p.scap + 4) * 8 + p.cmp * 8) as u32;
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cta_rows_sample_in_quads_on_the_measured_profile_only() {
        let h200 = DeviceProfile::h200();
        let one = main_params(256, 262_127, 262_144, 1024, 1, &h200);
        assert_eq!((one.unit_values, one.r), (16, 1));
        assert!(one.smp * one.ss2 * 16 <= one.n);
        let split = main_params(8, 262_127, 262_144, 1024, 4, &h200);
        assert_eq!(split.unit_values, 8);
        let spec = DeviceProfile {
            measured_main_sample: false,
            ..h200
        };
        assert_eq!(
            main_params(256, 262_127, 262_144, 1024, 1, &spec).unit_values,
            8
        );
        // The sample still draws its SFAC·n/aim values, in units of 16.
        let sel = sample_select(one.sfac, one.n, one.aim);
        assert!(one.sample_values() <= sel && one.sample_values() + 2 * 16 > sel);
    }

    /// One row of the worked-example table (B200 constants).
    struct Worked {
        b: usize,
        n: usize,
        k: usize,
        r: u32,
        blk: u32,
        u: u32,
        minb: u32,
        kpt: u32,
        scap: usize,
        cmp: usize,
        aim: usize,
        sfac: usize,
        smp: usize,
        ss2: usize,
        tgt: usize,
        tgt2: usize,
        q: usize,
        smem: u32,
        tshg: bool,
    }

    #[rustfmt::skip]
    fn table() -> Vec<Worked> {
        let w = |b, n, k, r, blk, u, minb, kpt, scap, cmp, aim, sfac, smp, ss2, tgt, tgt2, q, smem, tshg| Worked {
            b, n, k, r, blk, u, minb, kpt, scap, cmp, aim, sfac, smp, ss2, tgt, tgt2, q, smem, tshg,
        };
        vec![
            w(1, 131072, 2048, 32, 1024, 1, 1, 2, 8192, 4096, 4096, 48, 192, 85, 48, 24, 1024, 98_344, false),
            w(1, 1048576, 1024, 148, 1024, 1, 1, 1, 8192, 2048, 3584, 16, 585, 224, 15, 4, 1772, 81_960, false),
            w(16, 131072, 512, 9, 1024, 2, 1, 1, 8192, 2048, 1792, 16, 146, 112, 15, 4, 3641, 81_960, true),
            w(20, 262144, 2048, 7, 1024, 8, 1, 2, 8192, 4096, 4096, 48, 385, 85, 48, 24, 9363, 98_344, false),
            w(256, 262144, 2048, 1, 512, 8, 2, 4, 8192, 1024, 2816, 64, 744, 44, 63, 46, 65536, 73_768, false),
            w(512, 131072, 1024, 1, 256, 8, 4, 4, 4096, 1024, 1408, 64, 744, 22, 63, 46, 32768, 24_600, false),
            w(512, 6144, 2048, 1, 256, 8, 4, 8, 8192, 1024, 2816, 64, 32, 24, 117, 85, 1536, 40_984, false),
        ]
    }

    #[test]
    fn reproduces_worked_examples_on_b200() {
        let dev = DeviceProfile::b200();
        for w in table() {
            let p = main_params(w.b, w.n, w.n, w.k, w.r, &dev);
            let ctx = format!("(b={}, n={}, k={}, R={})", w.b, w.n, w.k, w.r);
            let got = (p.blk, p.u, p.minb, p.kpt, p.scap, p.cmp, p.aim);
            let want = (w.blk, w.u, w.minb, w.kpt, w.scap, w.cmp, w.aim);
            assert_eq!(got, want, "launch shape {ctx}");
            let got = (p.sfac, p.smp, p.ss2, p.tgt, p.tgt2, p.q);
            let want = (w.sfac, w.smp, w.ss2, w.tgt, w.tgt2, w.q);
            assert_eq!(got, want, "sample schedule {ctx}");
            assert_eq!(
                p.smem_bytes, w.smem,
                "smem for (b={}, n={}, k={})",
                w.b, w.n, w.k
            );
            assert_eq!(p.tshg, w.tshg, "tshg for (b={}, n={}, k={})", w.b, w.n, w.k);
            assert_eq!(p.split, w.r > 1);
            assert!(p.sampled);
        }
    }

    #[test]
    fn small_dense_row_is_sampled_and_flagged() {
        let p = main_params(512, 6144, 6144, 2048, 1, &DeviceProfile::b200());
        assert!(p.small_dense && p.sampled);
        let p = main_params(512, 4096, 4096, 2048, 1, &DeviceProfile::b200());
        assert!(
            !p.small_dense && !p.sampled,
            "n = 2k is not small-dense and fits staging"
        );
    }

    #[test]
    fn reproduces_clus_worked_example_on_b200() {
        let p = clus_params(64, 65536, 65536, 1024, 2, &DeviceProfile::b200());
        let got = (
            p.scap,
            p.cmp,
            p.aim,
            p.sfac,
            p.smp,
            p.ss2,
            p.tgt,
            p.tgt2,
            p.q,
            p.u,
            p.smem_bytes,
        );
        assert_eq!(got, (8192, 2048, 3072, 32, 42, 97, 31, 10, 8192, 8, 84_000));
        assert_eq!(p.unit_values, 16);
    }

    #[test]
    fn sample_never_reads_past_the_row() {
        let dev = DeviceProfile::h200();
        for &k in &[512usize, 1024, 2048] {
            for &b in &[1usize, 7, 64, 133, 300, 1024] {
                for n in (0..70_000)
                    .step_by(997)
                    .chain([16, 17, 31, 32, 33, 8191, 8192, 16385])
                {
                    let p = main_params(b, n, n, k, 1, &dev);
                    assert!(
                        p.smp * p.ss2 * p.unit_values <= n,
                        "b={b} n={n} k={k}: {p:?}"
                    );
                    assert!(p.aim >= k);
                    if p.sampled {
                        assert!(p.tgt >= 1 && p.tgt2 >= 1 && p.smp >= 1);
                    }
                }
            }
        }
    }

    #[test]
    fn h200_uses_its_own_sm_count_for_big() {
        let h = DeviceProfile::h200();
        assert!(main_params(132, 1 << 17, 1 << 17, 1024, 1, &h).big);
        assert!(!main_params(133, 1 << 17, 1 << 17, 1024, 1, &h).big);
        assert!(main_params(148, 1 << 17, 1 << 17, 1024, 1, &DeviceProfile::b200()).big);
        // 2 × SMs rows is the last BLK-512 batch, except that rows of two
        // BLK 512 tiles keep BLK 512 on a tie from 1.9 of its waves on.
        assert_eq!(main_params(264, 1 << 14, 1 << 14, 1024, 1, &h).blk, 512);
        assert_eq!(main_params(265, 1 << 14, 1 << 14, 1024, 1, &h).blk, 256);
        assert_eq!(main_params(265, 1 << 17, 1 << 17, 1024, 1, &h).blk, 256);
        assert_eq!(main_params(512, 1 << 17, 1 << 17, 1024, 1, &h).blk, 512);
    }

    #[test]
    fn h200_sample_schedule_differs_from_the_spec_only_where_measured() {
        let (h, b) = (DeviceProfile::h200(), DeviceProfile::b200());
        // Big one-CTA K = 2048 row: 1.5k instead of 4k.
        assert_eq!(main_params(128, 32_783, 32_832, 2048, 1, &h).aim, 3072);
        assert_eq!(main_params(128, 32_783, 32_832, 2048, 1, &b).aim, 8192);
        // Non-big one-CTA K = 512 rows: the sqrt(32·n) floor (2,896 at
        // 262,127, clamped to SCAP/2), the upstream sqrt(6n) = 1,254.
        assert_eq!(main_params(512, 262_127, 262_144, 512, 1, &h).aim, 2048);
        assert_eq!(main_params(512, 131_075, 131_136, 512, 1, &h).aim, 2048);
        assert_eq!(main_params(512, 65_538, 65_600, 512, 1, &h).aim, 1448);
        assert_eq!(main_params(512, 262_127, 262_144, 512, 1, &b).aim, 1254);
        // SPLIT keeps the upstream numbers.
        for r in [2, 8, 33] {
            assert_eq!(aim_floor_coef(r, true), 6);
            let (ph, pb) = (
                main_params(4, 131_087, 131_136, 2048, r, &h),
                main_params(4, 131_087, 131_136, 2048, r, &b),
            );
            assert_eq!((ph.aim, ph.smp, ph.tgt), (pb.aim, pb.smp, pb.tgt));
        }
    }

    #[test]
    fn for_row_len_keeps_the_launch_and_redoes_the_schedule() {
        let h = DeviceProfile::h200();
        let launch = main_params(4, 200_000, 200_064, 2048, 1, &h);
        let row = launch.for_row_len(50_000);
        assert_eq!(
            (row.blk, row.scap, row.cmp, row.smem_bytes),
            (launch.blk, launch.scap, launch.cmp, launch.smem_bytes)
        );
        assert_eq!(
            row,
            MainParams {
                npad: 200_064,
                ..main_params(4, 50_000, 200_064, 2048, 1, &h)
            }
        );
    }
}

#[cfg(test)]
mod wave_tests {
    use super::*;
    use crate::topk::route::DeviceProfile;

    #[test]
    fn staging_bounds_k2048_blk256_to_three_ctas_per_sm() {
        assert_eq!(main_ctas_per_sm(4, 8192, 1024), 3);
        assert_eq!(main_ctas_per_sm(4, 4096, 1024), 4);
        assert_eq!(main_ctas_per_sm(2, 8192, 1024), 2);
    }

    #[test]
    fn wave_efficiency_counts_the_last_wave() {
        assert!((wave_efficiency(512, 396) - 512.0 / 792.0).abs() < 1e-12);
        assert!((wave_efficiency(264, 264) - 1.0).abs() < 1e-12);
        assert!((wave_efficiency(1, 264) - 1.0 / 264.0).abs() < 1e-12);
    }

    #[test]
    fn h200_blk_follows_the_fuller_last_wave_and_the_tie_rule() {
        let h200 = DeviceProfile::h200();
        let b200 = DeviceProfile::b200();
        for b in [133usize, 256, 264, 265, 512, 1024, 2048, 8192] {
            for k in [512usize, 1024, 2048] {
                let n = 131_072;
                let spec = main_params(b, n, n, k, 1, &b200);
                let ours = main_params(b, n, n, k, 1, &h200);
                assert!(!spec.wave_aware && ours.wave_aware);
                let expect = if k == 2048 && (b == 512 || b == 1024) {
                    512
                } else if k == 2048 && b > 264 {
                    // Whichever fills its last wave better, never a tie-break flip.
                    ours.blk
                } else if b <= 264 || b * 10 >= 19 * 264 {
                    // 131,072 values: BLK 512 wherever it fills its waves as
                    // well, from 1.9 of its waves on.
                    512
                } else {
                    256
                };
                assert_eq!(ours.blk, expect, "b={b} k={k}");
                assert_eq!(ours.minb, if ours.blk == 512 { 2 } else { 4 });
                assert_eq!(ours.u, 8);
            }
        }
        // The B200 profile keeps the upstream bands (the worked-example tables).
        assert_eq!(main_params(512, 131_072, 131_072, 2048, 1, &b200).blk, 256);
    }

    #[test]
    fn rows_of_two_blk512_tiles_break_ties_toward_blk512() {
        let h200 = DeviceProfile::h200();
        for (b, k) in [(512usize, 512usize), (1024, 1024), (800, 512), (1000, 1024)] {
            let blk = |n: usize| main_params(b, n, n, k, 1, &h200).blk;
            assert_eq!(blk(BLK512_TIE_MIN_N - 4), 256, "b={b} k={k}");
            assert_eq!(blk(16_387), 256, "b={b} k={k}");
            assert_eq!(blk(BLK512_TIE_MIN_N), 512, "b={b} k={k}");
            assert_eq!(blk(65_538), 512, "b={b} k={k}");
        }
        // A clearly fuller last wave still decides: K 2,048 at 300 rows holds
        // one wave of BLK 256 (3 per SM, 396 slots) against 1.14 of BLK 512.
        assert_eq!(main_params(300, 65_536, 65_536, 2048, 1, &h200).blk, 256);
        // Fewer than 1.9 BLK 512 waves keep the upstream band on a tie (502
        // rows are 1.90 waves of 264 slots).
        for b in [265usize, 300, 501] {
            assert_eq!(
                main_params(b, 65_538, 65_538, 512, 1, &h200).blk,
                256,
                "b={b}"
            );
        }
        assert_eq!(main_params(502, 65_538, 65_538, 512, 1, &h200).blk, 512);
        // Up to 2·SMs rows the band was BLK 512 already.
        assert_eq!(main_params(200, 16_387, 16_387, 512, 1, &h200).blk, 512);
    }
}
