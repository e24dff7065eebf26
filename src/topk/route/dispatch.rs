//! `route(b, n, npad, k)`: which self-sampling family serves a shape
//! (the upstream B200 dispatch; docs/algorithm.md, "Which family runs (the route)"), with the H200 changes:
//!
//! - every constant that is the SM count (148) is `dev.sms`; 74 and 296 (half
//!   and double waves) are `sms/2` and `2·sms`;
//! - a cluster shape is only chosen when `DeviceProfile::cluster_fits` says
//!   all `b` clusters are co-resident (the measured
//!   `cudaOccupancyMaxActiveClusters` row for 1024-thread, 1-CTA/SM
//!   kernels), which replaces the B200 "cs = 8 needs b ≤ 15" veto.
//!
//! The function is total and pure: any (b, n, npad, k) gets a decision.
//! `b = 0` is routed as one row (a zero-row launch is a no-op anyway).

use serde::Serialize;

use super::params::{clus_params, kpt_for, main_params, MainParams};
use super::DeviceProfile;

/// The self-sampling kernel families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Streaming, R CTAs per row (SPLIT when R > 1).
    Main,
    /// Register-resident, one CTA per row.
    Reg,
    /// Register-resident with the row image in shared memory.
    RegImg,
    /// Clustered streaming (CS CTAs per row).
    Clus,
    /// Clustered register-resident (CS CTAs per row).
    RegClus,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Main => "main",
            Family::Reg => "reg",
            Family::RegImg => "regimg",
            Family::Clus => "clus",
            Family::RegClus => "reg_clus",
        }
    }
}

/// The knobs of a register-resident plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RegPlan {
    /// float4 per thread held in registers.
    pub vpt: u32,
    /// Histogram bins.
    pub nbh: u32,
    /// Hint slots per thread.
    pub kpt: u32,
    /// Whole-row bracket (`n ≤ 4k + 64`).
    pub deg: bool,
    /// Cursor emit form.
    pub cur: bool,
    /// Crossing-candidate capacity.
    pub cmp: usize,
    /// O(m²) rank gate.
    pub qc: usize,
}

/// One dispatch decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RouteDecision {
    pub family: Family,
    /// CTAs per row: R for main (SPLIT when > 1), CS for clus / reg_clus, 1 for reg.
    pub ctas_per_row: u32,
    /// Cluster dimension of the launch (1 = no cluster).
    pub cluster: u32,
    pub blk: u32,
    pub minb: u32,
    /// Dynamic shared memory of the launch, bytes (incl. the reg families' 512 B prelude).
    pub smem_bytes: u32,
    /// The launch parameters (main and clus).
    pub params: Option<MainParams>,
    /// The register plan (reg, regimg, reg_clus).
    pub reg: Option<RegPlan>,
    /// Which rule picked the family (for logs and records).
    pub reason: &'static str,
}

impl RouteDecision {
    /// Short label as in the B200 route table, e.g. `reg512/1D`, `img`,
    /// `rc8x2`, `cl4`, `m1024R64`, `m256`.
    pub fn label(&self) -> String {
        match (self.family, self.reg) {
            (Family::Reg, Some(reg)) => format!(
                "reg{}/{}{}",
                self.blk,
                reg.vpt,
                if reg.deg { "D" } else { "" }
            ),
            (Family::RegImg, _) => "img".to_string(),
            (Family::RegClus, Some(reg)) => format!("rc{}x{}", self.cluster, reg.vpt),
            (Family::Clus, _) => format!("cl{}", self.cluster),
            (Family::Main, _) if self.ctas_per_row > 1 => {
                format!("m{}R{}", self.blk, self.ctas_per_row)
            }
            _ => format!("m{}", self.blk),
        }
    }
}

/// Bytes of the register families' static prelude (result slots, counters...).
const REG_PRELUDE_BYTES: u32 = 512;
/// reg_clus dynamic shared memory (hist | mrg | hoff | ck | ci).
const REG_CLUS_SMEM_BYTES: u32 = 45_056;
/// Most SPLIT rows one workspace serves (`MAXC`).
const SPLIT_MAX_ROWS: usize = 160;

/// Longest row a register entry of `blk` threads × `vpt` float4 holds: its
/// float4 registers plus one tail scalar per thread (the kernel reads
/// element 4·n4 + tid into it). The tail's BLK values matter for rows just
/// past a power of two, e.g. K = 2048 rows of 4·1024 + 15 values.
pub const fn reg_capacity(blk: u32, vpt: u32) -> usize {
    (4 * blk * vpt + blk) as usize
}

/// Float4s of the largest reg_clus cluster (CS 8 × 1024 threads × VPT 4).
const REG_CLUS_MAX_F4: usize = 8 * 1024 * 4;

/// Longest row reg_clus holds: the largest cluster's float4s plus one tail
/// scalar per thread of rank 0 (v32's 2^17 + 15 is 15 values past the float4s).
pub const REG_CLUS_MAX_N: usize = 4 * REG_CLUS_MAX_F4 + 1024;

/// Float4s a reg_clus cluster must hold for a row of `n` values: all of
/// them, except that a row past the largest cluster's float4s (at most
/// [`REG_CLUS_MAX_N`]) leaves the rest to rank 0's tail scalars.
pub fn reg_clus_float4s(n: usize) -> usize {
    let n4 = n >> 2;
    if n <= REG_CLUS_MAX_N {
        n4.min(REG_CLUS_MAX_F4)
    } else {
        n4
    }
}

/// K = 2048 rows whose float4s (n/4) lie in this band take clus with CS 8 on
/// the H200 (`DeviceProfile::k2048_clusters`); below it, reg_clus (the row
/// fits the cluster's registers); above it, main (once main stages its output,
/// one CTA per rank slice streams as fast as a cluster rank).
/// Evidence: docs/decisions.md (`k2048_clusters`).
const K2048_CLUS_BAND_F4: std::ops::RangeInclusive<usize> = 16_385..=24_576;
/// The longest K = 2048 row (in float4s) of the H200's reg_clus rung.
const K2048_REG_CLUS_MAX_F4: usize = *K2048_CLUS_BAND_F4.start() - 1;

/// Rows from which K = 2048 rows of the 1024 x 4 entry emit slots from bit
/// masks even where they fill less than [`MASK_SLOTS_FILL_1024X4`] of it
/// ([`reg_cursor_emit`]).
const MASK_SLOTS_MIN_ROWS_PART_FILLED: usize = 32;
/// Rows up to which K <= 1,024 rows that fill the 1024 x 4 entry emit slots
/// from bit masks ([`reg_cursor_emit`]); beyond it they emit cursors.
const MASK_SLOTS_MAX_ROWS_SMALL_K: usize = 32;
/// Values from which a row fills the 1024 x 4 entry (three of a thread's
/// four float4 hold values): the mask classify visits every slot, so on a
/// part-filled entry it pays for empty ones (8K rows forced onto 1024/4 at
/// B <= 32: slots 0.937 of cursors), on a full one it wins (16K rows).
const MASK_SLOTS_FILL_1024X4: usize = 3 * 4 * 1024;

/// The reg emit form: `true` = per-bin cursors (CUR), `false` =
/// warp-aggregated slots. Upstream: CUR unless `n < 2k` and `b > SMs`. On
/// the H200, slots win where many elements are emitted under contention
/// (a large share of the row: K = 2048 rows of at most 2K + 64 values, K ≥
/// 1024 rows of at most K + 64; and, beyond one or two rows per SM, rows of
/// at most 4K + 64 or 2K + 64), because one warp-aggregated atomic replaces
/// many contended per-bin ones; where few are emitted, the slots' second
/// register visit and warp scan are pure latency, so cursors win. The
/// 4-float4 entries emit slots from bit masks in one visit, and since the
/// packed classify (`SS_REG_MASK_PACKED`) the masks win at K = 2048 at
/// every b on 512/4 and on rows that fill 1024/4 (from 32 rows on the
/// others), on 512/4 beyond one row per SM at every K, and on rows that
/// fill 1024/4 at K ≤ 1,024 up to 32 rows (at B 1–16 the cursors'
/// returned shared atomics are the wait: Nsight Compute counts the same
/// instructions in both forms at B = 1 and 8, the slots launch is 8 %
/// shorter and its emit waits 38 → 11 samples on shared-memory results); 1024/4 at K ≤ 1,024 beyond 32 rows, part-filled 1024/4 and
/// 1024/2 keep cursors.
/// Evidence: docs/decisions.md (`measured_reg_emit`, `SS_REG_EMIT_MASK`,
/// `reg_mask_slots_16k` rule).
pub fn reg_cursor_emit(b: usize, n: usize, k: usize, dev: &DeviceProfile) -> bool {
    let sms = dev.sms as usize;
    let beyond_one_row_per_sm = b > sms;
    if dev.measured_reg_emit {
        let quarter_emitted_cur = k < 2048 && n > 2 * k + 64 && b > 4 * sms;
        // Rows past the 1- and 2-float4 entries (n > 4·1024 + 1024) run on
        // 512/4 or 1024/4, whose slots come from bit masks (SS_REG_EMIT_MASK
        // of kernels/ss/reg.cu: one visit); K <= 1,024 rows of at most
        // 4·2048 + 1024 values at b <= 32 run on 1024/2 (`register_block`),
        // below MASK_SLOTS_FILL_1024X4.
        let four_float4 = n > reg_capacity(1024, 1).max(reg_capacity(512, 2));
        let fills_1024x4 = n > MASK_SLOTS_FILL_1024X4;
        let mask_slots = four_float4
            && ((k >= 2048
                && (n <= reg_capacity(512, 4)
                    || fills_1024x4
                    || b >= MASK_SLOTS_MIN_ROWS_PART_FILLED))
                || (n <= reg_capacity(512, 4) && beyond_one_row_per_sm)
                || (fills_1024x4 && b <= MASK_SLOTS_MAX_ROWS_SMALL_K));
        let slots = (k >= 2048 && n <= 2 * k + 64)
            || (k >= 1024 && n <= k + 64)
            || (k >= 1024 && n <= 4 * k + 64 && beyond_one_row_per_sm && !quarter_emitted_cur)
            || (k >= 512 && n <= 2 * k + 64 && b > 2 * sms)
            || mask_slots;
        !slots
    } else {
        !(n < 2 * k && beyond_one_row_per_sm)
    }
}

/// Rows a reg launch needs before its first hint indices load ahead of the
/// row (`SS_REG_HINTS_FIRST` of kernels/ss/reg.cu): with many rows in flight
/// the early hint loads overlap other CTAs' work; with few, they only delay
/// the row length (likely reason, not profiled), so small batches lose.
/// Evidence: docs/decisions.md (`reg_hints_first` rule, `SS_REG_HINTS_FIRST`).
pub const HINTS_FIRST_MIN_ROWS: usize = 64;

/// Whether a reg launch of `b` rows padded to `npad` loads its first hint
/// indices ahead of the row: only where a row can be hinted at all
/// (`npad > 4k + 64`; shorter rows take the whole-row bracket).
pub fn reg_hints_first(b: usize, npad: usize, k: usize) -> bool {
    b >= HINTS_FIRST_MIN_ROWS && npad > 4 * k + 64
}

/// Whether a batch-uniform reg launch of `b` rows on an entry of `vpt` float4
/// per thread (`img`: the row-image entry) loads each row before its length
/// arrives (`SS_REG_ROW_AHEAD` of kernels/ss/reg.cu): the entries of one
/// float4 per thread (not the image entry) at B ≤ 2·SMs. Loading the row
/// before its length hides the length's latency on one-float4 entries while
/// SMs are idle; at large B, and on the 2- and 4-float4 entries, the extra
/// live registers cost more than they hide (reason not profiled).
/// Evidence: docs/decisions.md (`reg_row_ahead` rule, `SS_REG_ROW_AHEAD`).
pub fn reg_row_ahead(b: usize, vpt: u32, img: bool, dev: &DeviceProfile) -> bool {
    vpt == 1 && !img && b <= 2 * dev.sms as usize
}

/// The kernel's bound on n − k for the drop-few path of the register family
/// (`SS_REG_DROP_MAX` of kernels/ss/reg.cu): rows of k < n ≤ k + 4 keep all
/// but their n − k smallest (pro's 1,027 values at K = 1,024).
pub const REG_DROP_MAX: usize = 4;

/// Whether a reg launch of `b` rows of at most `n` values on an entry of
/// `blk` threads and `vpt` float4 per thread (`img`: the row-image entry)
/// builds the drop-few path, at B ≤ 2·SMs: where its longest row is within
/// [`REG_DROP_MAX`] of k (a launch of longer rows is built without the code,
/// so it runs as before; its shorter rows near k take the chain), and always
/// on the 1024/1 entry (not the image one: not measured). Dropping the
/// n − k smallest is shorter than the bracket chain; at B > 2·SMs, where
/// eight CTAs share an SM, the extra code costs more than the chain it
/// saves. The 1024/1 entry runs faster with the code built in although its
/// rows never take the path: same registers, so code layout, not a spill.
/// Evidence: docs/decisions.md (`reg_drop_few` rule, `SS_REG_DROP_MAX`).
pub fn reg_drop_few(
    b: usize,
    n: usize,
    k: usize,
    (blk, vpt, img): (u32, u32, bool),
    dev: &DeviceProfile,
) -> bool {
    let near_k = n > k && n - k <= REG_DROP_MAX;
    let layout_gain = blk == 1024 && vpt == 1 && !img;
    (near_k || layout_gain) && b <= 2 * dev.sms as usize
}

/// Whether a reg launch keeps each value's bin in its register after the
/// histogram and reads a value needed later again from the row in global
/// memory (`SS_REG_KEEP_BIN` 1 of kernels/ss/reg.cu): every entry but the
/// image entry (whose own image fills that role) and 512/1 at B ≤ SMs. The
/// emit then compares bins instead of computing them again (−17 % of its
/// instructions on 16K × K 2,048); on 512/1 with a row or less per SM the
/// gain is nil and the crossing values' second read sits on the row's chain
/// (0.978 at B = 1; reason not profiled).
/// Evidence: docs/decisions.md (`reg_keep_bins` rule, `SS_REG_KEEP_BIN`).
pub fn reg_keep_bins(b: usize, blk: u32, vpt: u32, img: bool, dev: &DeviceProfile) -> bool {
    let small_512_1 = blk == 512 && vpt == 1 && b <= dev.sms as usize;
    !img && !small_512_1
}

/// Whether a slots-form reg launch gathers its emitted indices in shared
/// memory and copies them out coalesced (`SS_REG_STAGE_OUT` of
/// kernels/ss/reg.cu): where each thread emits about four or more (k ≥ 4 ×
/// BLK) in a batch beyond one row per SM, and the histogram holds the k
/// indices (k ≤ NBH). Staging turns scattered index stores into one
/// coalesced copy, which pays once a thread has about four to emit and the
/// SMs are busy; with about two per thread, or few rows, the extra shared
/// memory pass and barrier cost more than the coalescing saves.
/// Evidence: docs/decisions.md (`reg_stage_out` / `reg_stage_out_extra` rules,
/// `SS_REG_STAGE_OUT`).
pub fn reg_stage_out(b: usize, k: usize, blk: u32, nbh: u32, dev: &DeviceProfile) -> bool {
    b > dev.sms as usize && k >= 4 * blk as usize && k <= nbh as usize
}

/// The same batches and emit counts with k > NBH, staged in k extra words of
/// dynamic shared memory (`SS_REG_STAGE_OUT` 2), for the same reason as
/// [`reg_stage_out`]. Evidence: docs/decisions.md (`reg_stage_out` /
/// `reg_stage_out_extra` rules, `SS_REG_STAGE_OUT`).
pub fn reg_stage_out_extra(b: usize, k: usize, blk: u32, nbh: u32, dev: &DeviceProfile) -> bool {
    b > dev.sms as usize && k >= 4 * blk as usize && k > nbh as usize
}

/// Whether a slots-form reg launch on an entry of `blk` threads, `vpt`
/// float4 per thread and `nbh` bins also emits from bit masks in the
/// 32-register build (`SS_REG_EMIT_MASK` 2 of kernels/ss/reg.cu): the 512/2
/// entry where its k indices fit the histogram (k ≤ NBH). One register
/// visit for the masks saves the second slots visit where the 512/2 entry
/// has registers to spare; on 256/1, and past NBH, the mask bookkeeping
/// costs more than the visit it saves.
/// Evidence: docs/decisions.md (`reg_mask_slots_32` rule, `SS_REG_EMIT_MASK`).
pub fn reg_mask_slots_32(blk: u32, vpt: u32, k: usize, nbh: u32) -> bool {
    blk == 512 && vpt == 2 && k <= nbh as usize
}

/// Route one launch shape on `dev` (register rungs first, then the streaming block).
pub fn route(b: usize, n: usize, npad: usize, k: usize, dev: &DeviceProfile) -> RouteDecision {
    let b = b.max(1);
    register_block(b, n, k, dev).unwrap_or_else(|| streaming_block(b, n, npad, k, dev))
}

/// The register-resident rungs, or `None` to fall through to streaming.
fn register_block(b: usize, n: usize, k: usize, dev: &DeviceProfile) -> Option<RouteDecision> {
    let sms = dev.sms as usize;
    let wide = b <= sms;
    let n4 = n >> 2;
    let deg = n <= 4 * k + 64;
    let cmp = if deg { n } else { n.min(2560) };
    let qc = if b > sms { 1024 } else { 96 };
    let cur = reg_cursor_emit(b, n, k, dev);

    let reg = |blk: u32, vpt: u32, minb: u32, nbh: u32, reason: &'static str| {
        let kpt = if deg { 1 } else { kpt_for(k, blk).min(4) };
        let plan = RegPlan {
            vpt,
            nbh,
            kpt,
            deg,
            cur,
            cmp,
            qc,
        };
        RouteDecision {
            family: Family::Reg,
            ctas_per_row: 1,
            cluster: 1,
            blk,
            minb,
            smem_bytes: REG_PRELUDE_BYTES + ((nbh as usize + 2 * cmp) * 4) as u32,
            params: None,
            reg: Some(plan),
            reason,
        }
    };

    // The rungs hold the row in registers: capacity = the upstream n/4 bound
    // plus one tail scalar per thread (`reg_capacity`).
    if n <= reg_capacity(256, 1) {
        return Some(reg(256, 1, 8, 1024, "reg: n <= 4·256 + 256"));
    }
    if n <= reg_capacity(512, 1) {
        return Some(reg(512, 1, 4, 1024, "reg: n <= 4·512 + 512"));
    }
    if dev.reg_k2048_rungs && k > 1024 {
        // The smallest CTA that holds a K = 2048 row wins: a smaller CTA puts
        // more rows per SM in flight (likely reason; not profiled). 1024/1
        // only while the batch fits one wave (b <= SMs); beyond it 512/2,
        // which stages its emit in extra words, avoids a second wave.
        // Evidence: docs/decisions.md (`reg_k2048_rungs`).
        if n <= reg_capacity(1024, 1) && b <= sms {
            return Some(reg(
                1024,
                1,
                2,
                2048,
                "reg (H200, measured): K = 2048, n <= 4·1024 + 1024, b <= SMs",
            ));
        }
        if n <= reg_capacity(512, 2) {
            return Some(reg(
                512,
                2,
                4,
                1024,
                "reg (H200, measured): K = 2048, n <= 4·1024 + 512, b > SMs",
            ));
        }
        if n <= reg_capacity(512, 4) {
            return Some(reg(
                512,
                4,
                2,
                2048,
                "reg (H200, measured): K = 2048, n <= 4·2048 + 512",
            ));
        }
        if n <= reg_capacity(1024, 4) {
            return Some(reg(
                1024,
                4,
                1,
                2048,
                "reg (H200, measured): K = 2048, n <= 4·4096 + 1024",
            ));
        }
    }
    if dev.regimg_rung && n <= reg_capacity(1024, 1) && wide && !deg && k <= 1024 {
        let image_words = (2 * cmp).max((n + 3) & !3);
        let plan = RegPlan {
            vpt: 1,
            nbh: 2048,
            kpt: 1,
            deg,
            cur: true,
            cmp,
            qc,
        };
        return Some(RouteDecision {
            family: Family::RegImg,
            ctas_per_row: 1,
            cluster: 1,
            blk: 1024,
            minb: 2,
            smem_bytes: REG_PRELUDE_BYTES + ((2048 + image_words) * 4) as u32,
            params: None,
            reg: Some(plan),
            reason: "regimg: n <= 4·1024 + 1024, wide batch, not DEG, k <= 1024",
        });
    }
    if n <= reg_capacity(1024, 1) && wide {
        return Some(reg(1024, 1, 2, 2048, "reg: n <= 4·1024 + 1024, wide batch"));
    }
    if n <= reg_capacity(512, 2) && !wide {
        return Some(reg(512, 2, 4, 1024, "reg: n <= 4·1024 + 512, narrow batch"));
    }
    if dev.reg_512x4_second_wave && n <= reg_capacity(512, 4) && !wide && b <= 2 * sms {
        // Between one and two rows per SM, two 512-thread register CTAs per
        // SM fill what would be main's ragged second wave (likely; not
        // profiled); beyond 2·SMs main wins.
        // Evidence: docs/decisions.md (`reg_512x4_second_wave`).
        return Some(reg(
            512,
            4,
            2,
            2048,
            "reg (H200, measured): n <= 4·2048 + 512, SMs < b <= 2·SMs",
        ));
    }
    // K = 2048 takes reg_clus only up to 64K values at b <= 16: holding the
    // row in cluster registers beats main SPLIT while the clusters are
    // co-resident; from 64K clus streams better, and main since it stages its
    // K = 2048 output. Evidence: docs/decisions.md (`k2048_clusters`).
    let k_fits = k <= 1024 || (dev.k2048_clusters && n4 <= K2048_REG_CLUS_MAX_F4 && b <= 16);
    if n4 > 4096 && n <= REG_CLUS_MAX_N && k_fits {
        if let Some(decision) = reg_clus_rung(b, reg_clus_float4s(n), dev) {
            return Some(decision);
        }
    }
    // At b <= 32 rows of 5K–9K values run faster on 1024/2, which they fill,
    // than on 1024/4, whose extra float4 registers sit idle (likely reason;
    // not profiled); the gain fades by B 64 and turns at B 128.
    // Evidence: docs/decisions.md (`reg_1024x2_rung`).
    if dev.reg_1024x2_rung && k <= 1024 && n <= reg_capacity(1024, 2) && b <= 32 {
        return Some(reg(
            1024,
            2,
            1,
            2048,
            "reg (H200, measured): k <= 1024, n <= 4·2048 + 1024, b <= 32",
        ));
    }
    if n <= reg_capacity(1024, 4) && wide {
        return Some(reg(1024, 4, 1, 2048, "reg: n <= 4·4096 + 1024, wide batch"));
    }
    None
}

/// The reg_clus rung: the smallest co-resident cluster whose registers hold the row.
fn reg_clus_rung(b: usize, n4: usize, dev: &DeviceProfile) -> Option<RouteDecision> {
    let available = dev.sms as usize / b;
    if available < (dev.reg_clus_min_sms_per_row as usize).max(2) {
        return None;
    }
    let largest = 1usize << (usize::BITS - 1 - available.leading_zeros());
    let max_cs = largest.min(dev.max_cluster as usize);
    if max_cs < 2 {
        return None;
    }
    for vpt in [1usize, 2, 4] {
        let per_cta = 1024 * vpt;
        let cs = n4.div_ceil(per_cta).next_power_of_two().max(1);
        if cs > max_cs || !dev.cluster_fits(cs as u32, b) {
            continue;
        }
        if cs < 2 {
            return None;
        }
        let plan = RegPlan {
            vpt: vpt as u32,
            nbh: 1024,
            kpt: 1,
            deg: false,
            cur: true,
            cmp: 4096,
            qc: 96,
        };
        return Some(RouteDecision {
            family: Family::RegClus,
            ctas_per_row: cs as u32,
            cluster: cs as u32,
            blk: 1024,
            minb: 1,
            smem_bytes: REG_CLUS_SMEM_BYTES + REG_PRELUDE_BYTES,
            params: None,
            reg: Some(plan),
            reason: "reg_clus: 16K < n <= 128K, co-resident cluster holds the row",
        });
    }
    None
}

/// The clus launch of `cs` 1024-thread CTAs per row.
fn clus_decision(
    b: usize,
    n: usize,
    npad: usize,
    k: usize,
    cs: u32,
    reason: &'static str,
    dev: &DeviceProfile,
) -> RouteDecision {
    let params = clus_params(b, n, npad, k, cs, dev);
    RouteDecision {
        family: Family::Clus,
        ctas_per_row: cs,
        cluster: cs,
        blk: 1024,
        minb: 1,
        smem_bytes: params.smem_bytes,
        params: Some(params),
        reg: None,
        reason,
    }
}

/// The streaming block: split factor, cluster rounding, then clus or main.
fn streaming_block(
    b: usize,
    n: usize,
    npad: usize,
    k: usize,
    dev: &DeviceProfile,
) -> RouteDecision {
    let sms = dev.sms as usize;
    let n4 = n >> 2;
    // K = 2048 rows of 64K–96K values: eight co-resident cluster ranks merge
    // through DSMEM instead of main SPLIT's global hand-off (likely reason;
    // not profiled); at 128K values main is faster. Evidence:
    // docs/decisions.md (`k2048_clusters`).
    if dev.k2048_clusters
        && k > 1024
        && K2048_CLUS_BAND_F4.contains(&n4)
        && dev.max_cluster >= 8
        && dev.cluster_fits(8, b)
    {
        let reason = "clus (H200, measured): K = 2048, 64K < n <= 96K, co-resident 8-CTA clusters";
        return clus_decision(b, n, npad, k, 8, reason, dev);
    }
    let (mut r, mut reason) = if b <= 32 {
        let r = (sms / b).min(n4.div_ceil(1024)).max(1);
        (r, "main: b <= 32 splits the row over the SMs")
    } else if b <= sms / 2 && n4 >= 16384 && k <= 1024 {
        (2, "main: half-wave batch of long rows, R = 2")
    } else {
        (1, "main: one CTA per row")
    };

    if (2..=8).contains(&r) && k <= 1024 {
        let mut cs = 1usize << (usize::BITS - 1 - r.leading_zeros());
        cs = cs.min(dev.max_cluster as usize);
        while cs >= 2 && !dev.cluster_fits(cs as u32, b) {
            cs /= 2;
        }
        // Clus ranks stream their slice without main's register pipelining,
        // so past ~32K values per rank main with R CTAs per row is faster.
        // Evidence: docs/decisions.md (`clus_max_rank_f4`).
        let slice_too_long = cs >= 2
            && dev
                .clus_max_rank_f4
                .is_some_and(|lim| n4.div_ceil(cs) > lim);
        if slice_too_long {
            reason = "main: per-rank clus slice above the H200 limit";
        } else if cs >= 2 {
            let reason = "clus: 2 <= R <= 8, k <= 1024, co-resident cluster";
            return clus_decision(b, n, npad, k, cs as u32, reason, dev);
        } else {
            // No co-resident cluster of two: one CTA per row is always admissible.
            r = 1;
            reason = "main: no co-resident cluster for R in 2..=8";
        }
    }
    if r > 1 && b > SPLIT_MAX_ROWS {
        r = 1;
        reason = "main: more rows than the SPLIT workspace holds";
    }
    let params = main_params(b, n, npad, k, r as u32, dev);
    RouteDecision {
        family: Family::Main,
        ctas_per_row: params.r,
        cluster: 1,
        blk: params.blk,
        minb: params.minb,
        smem_bytes: params.smem_bytes,
        params: Some(params),
        reg: None,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The B200 route table (B200 constants), `-` entries (n ≤ k) left out.
    #[rustfmt::skip]
    const B200_TABLE: &[(usize, usize, [&str; 9])] = &[
        (512, 1,    ["reg512/1D", "img", "reg1024/4", "reg1024/4", "rc8x1", "rc8x2", "rc8x4", "m1024R64", "m1024R148"]),
        (512, 16,   ["reg512/1D", "img", "reg1024/4", "reg1024/4", "rc4x2", "rc4x4", "m1024R9", "m1024R9", "m1024R9"]),
        (512, 32,   ["reg512/1D", "img", "reg1024/4", "reg1024/4", "rc4x2", "rc4x4", "cl4", "cl4", "cl4"]),
        (512, 64,   ["reg512/1D", "img", "reg1024/4", "reg1024/4", "rc2x4", "cl2", "cl2", "cl2", "cl2"]),
        (512, 148,  ["reg512/1D", "img", "reg1024/4", "reg1024/4", "m1024", "m1024", "m1024", "m1024", "m1024"]),
        (512, 256,  ["reg512/1D", "reg512/2", "m512", "m512", "m512", "m512", "m512", "m512", "m512"]),
        (512, 512,  ["reg512/1D", "reg512/2", "m256", "m256", "m256", "m256", "m256", "m256", "m256"]),
        (1024, 1,   ["reg512/1D", "reg1024/1D", "reg1024/4", "reg1024/4", "rc8x1", "rc8x2", "rc8x4", "m1024R64", "m1024R148"]),
        (1024, 64,  ["reg512/1D", "reg1024/1D", "reg1024/4", "reg1024/4", "rc2x4", "cl2", "cl2", "cl2", "cl2"]),
        (1024, 256, ["reg512/1D", "reg512/2D", "m512", "m512", "m512", "m512", "m512", "m512", "m512"]),
        (2048, 1,   ["-", "reg1024/1D", "reg1024/4D", "reg1024/4", "m1024R8", "m1024R16", "m1024R32", "m1024R64", "m1024R148"]),
        (2048, 32,  ["-", "reg1024/1D", "reg1024/4D", "reg1024/4", "m1024R4", "m1024R4", "m1024R4", "m1024R4", "m1024R4"]),
        (2048, 64,  ["-", "reg1024/1D", "reg1024/4D", "reg1024/4", "m1024", "m1024", "m1024", "m1024", "m1024"]),
        (2048, 256, ["-", "reg512/2D", "m512", "m512", "m512", "m512", "m512", "m512", "m512"]),
    ];
    const TABLE_N: [usize; 9] = [
        2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576,
    ];

    #[test]
    fn mask_slots_32_only_on_512_2_with_k_in_the_histogram() {
        assert!(reg_mask_slots_32(512, 2, 1024, 1024));
        assert!(reg_mask_slots_32(512, 2, 512, 1024));
        assert!(!reg_mask_slots_32(512, 2, 1025, 1024));
        assert!(!reg_mask_slots_32(512, 2, 2048, 1024));
        for (blk, vpt) in [
            (256, 1),
            (512, 1),
            (1024, 1),
            (512, 4),
            (1024, 2),
            (1024, 4),
        ] {
            assert!(!reg_mask_slots_32(blk, vpt, 1024, 1024), "{blk}/{vpt}");
        }
    }

    #[test]
    fn hints_first_needs_enough_rows_and_rows_that_can_be_hinted() {
        assert!(reg_hints_first(HINTS_FIRST_MIN_ROWS, 16_399, 2048));
        assert!(!reg_hints_first(HINTS_FIRST_MIN_ROWS - 1, 16_399, 2048));
        // npad <= 4k + 64: every row takes the whole-row bracket.
        assert!(!reg_hints_first(1024, 8256, 2048));
        assert!(reg_hints_first(1024, 8257, 2048));
    }

    #[test]
    fn rows_load_ahead_of_their_length_on_one_float4_entries_up_to_two_waves() {
        let h = DeviceProfile::h200();
        assert!(reg_row_ahead(1, 1, false, &h));
        assert!(reg_row_ahead(264, 1, false, &h));
        assert!(
            !reg_row_ahead(265, 1, false, &h),
            "256/1 lost 4-8 % at B >= 512"
        );
        assert!(
            !reg_row_ahead(1, 2, false, &h),
            "1024/2 lost 5-6 % at B 1-8"
        );
        assert!(!reg_row_ahead(1, 4, false, &h));
        assert!(
            !reg_row_ahead(1, 1, true, &h),
            "the image entry: not measured"
        );
    }

    #[test]
    fn the_drop_few_code_is_built_near_k_and_on_the_1024_1_entry_up_to_two_waves() {
        let h = DeviceProfile::h200();
        let (e256, e1024, img) = ((256, 1, false), (1024, 1, false), (1024, 1, true));
        assert!(reg_drop_few(8, 1027, 1024, e256, &h));
        assert!(reg_drop_few(8, 1024 + REG_DROP_MAX, 1024, e256, &h));
        assert!(!reg_drop_few(8, 1025 + REG_DROP_MAX, 1024, e256, &h));
        assert!(
            !reg_drop_few(8, 1024, 1024, e256, &h),
            "n = k: nothing to drop"
        );
        assert!(
            !reg_drop_few(265, 1027, 1024, e256, &h),
            "1.5-3.6 % slower at B 512 / 1,024"
        );
        assert!(
            reg_drop_few(8, 4099, 1024, e1024, &h),
            "1024/1 runs faster with the code built in"
        );
        assert!(reg_drop_few(264, 4099, 2048, e1024, &h));
        assert!(!reg_drop_few(265, 4099, 2048, e1024, &h));
        assert!(
            !reg_drop_few(8, 4099, 1024, img, &h),
            "the image entry: not measured"
        );
    }

    #[test]
    fn reg_emit_form_follows_the_spec_on_b200_and_the_measurement_on_h200() {
        let (h, b2) = (DeviceProfile::h200(), DeviceProfile::b200());
        // Spec: CUR unless n < 2k and b > SMs (148).
        assert!(!reg_cursor_emit(149, 2047, 1024, &b2));
        assert!(reg_cursor_emit(148, 2047, 1024, &b2));
        assert!(reg_cursor_emit(149, 2048, 1024, &b2));
        // H200: slots for K = 2048 rows of <= 2K + 64 values at any b ...
        for b in [1, 64, 132, 133, 1024] {
            assert!(!reg_cursor_emit(b, 4111, 2048, &h), "b {b}");
            assert!(!reg_cursor_emit(b, 4160, 2048, &h), "b {b}");
        }
        assert!(reg_cursor_emit(1, 4161, 2048, &h));
        // ... and K >= 1024 rows of <= 4K + 64 values beyond one row per SM.
        assert!(!reg_cursor_emit(256, 4160, 1024, &h));
        assert!(reg_cursor_emit(256, 4161, 1024, &h));
        assert!(reg_cursor_emit(128, 2051, 1024, &h));
        // ... except K < 2048 rows of > 2K + 64 values beyond four rows per SM.
        assert!(!reg_cursor_emit(528, 4099, 1024, &h));
        assert!(reg_cursor_emit(529, 4099, 1024, &h));
        assert!(!reg_cursor_emit(529, 2112, 1024, &h));
        assert!(!reg_cursor_emit(1024, 8207, 2048, &h));
        // K >= 1024 rows of <= K + 64 values: slots at any b.
        for b in [1, 64, 132] {
            assert!(!reg_cursor_emit(b, 1027, 1024, &h), "b {b}");
            assert!(!reg_cursor_emit(b, 1088, 1024, &h), "b {b}");
            assert!(reg_cursor_emit(b, 1089, 1024, &h), "b {b}");
        }
        // K = 512: slots only for rows of <= 2K + 64 beyond two rows per SM.
        for (b, n, cur) in [
            (1, 1027, true),
            (264, 1027, true),
            (265, 1027, false),
            (1024, 1088, false),
            (1024, 1089, true),
            (1024, 2051, true),
        ] {
            assert_eq!(reg_cursor_emit(b, n, 512, &h), cur, "b {b} n {n}");
        }
        // The 4-float4 entries' mask slots: K = 2048 rows of 512/4 and of a
        // filled 1024/4 at any b (a part-filled 1024/4 from 32 rows); 512/4
        // beyond one row per SM at any K; K <= 1,024 rows that fill 1024/4 up
        // to 32 rows (not 1024/2's rows, <= 4·2048 + 1024 values).
        for b in [1, 16, 31, 32, 132, 133, 1024] {
            assert!(!reg_cursor_emit(b, 8207, 2048, &h), "b {b}");
            assert!(!reg_cursor_emit(b, 8704, 2048, &h), "b {b}");
            assert!(!reg_cursor_emit(b, 12_289, 2048, &h), "b {b}");
            assert!(!reg_cursor_emit(b, 16_399, 2048, &h), "b {b}");
        }
        assert!(reg_cursor_emit(31, 8705, 2048, &h));
        assert!(reg_cursor_emit(31, 12_288, 2048, &h));
        assert!(!reg_cursor_emit(32, 8705, 2048, &h));
        assert!(reg_cursor_emit(1, 4608, 2048, &h));
        assert!(reg_cursor_emit(132, 8195, 1024, &h));
        assert!(!reg_cursor_emit(133, 8195, 1024, &h));
        assert!(!reg_cursor_emit(256, 8195, 512, &h));
        for (b, n, k, cur) in [
            (1, 16_387, 1024, false),
            (32, 16_387, 1024, false),
            (33, 16_387, 1024, true),
            (1024, 16_387, 1024, true),
            (1, 16_387, 512, false),
            (32, 16_387, 512, false),
            (64, 16_387, 512, true),
            (1, 9216, 1024, true),
            (1, 9217, 1024, true),
            (1, 12_288, 1024, true),
            (1, 12_289, 1024, false),
            (32, 12_289, 512, false),
            (16, 8195, 1024, true),
            (16, 8195, 512, true),
        ] {
            assert_eq!(reg_cursor_emit(b, n, k, &h), cur, "b {b} n {n} k {k}");
        }
        // The route's reg plan carries the rule.
        let plan = route(256, 4111, 4112, 2048, &h).reg.expect("reg");
        assert!(!plan.cur);
    }

    #[test]
    fn reproduces_the_b200_family_table() {
        let dev = DeviceProfile::b200();
        for &(k, b, labels) in B200_TABLE {
            for (n, want) in TABLE_N.iter().zip(labels) {
                if want == "-" {
                    continue;
                }
                let got = route(b, *n, *n, k, &dev).label();
                assert_eq!(got, want, "k={k} b={b} n={n}");
            }
        }
    }

    #[test]
    fn reproduces_the_worked_example_families() {
        let dev = DeviceProfile::b200();
        let d = route(16, 131072, 131072, 512, &dev);
        assert_eq!((d.family, d.ctas_per_row), (Family::Main, 9));
        assert!(d.params.is_some_and(|p| p.tshg));
        let d = route(512, 6144, 6144, 2048, &dev);
        assert_eq!((d.family, d.blk), (Family::Main, 256));
        assert!(d.params.is_some_and(|p| p.small_dense));
        let d = route(64, 65536, 65536, 1024, &dev);
        assert_eq!(
            (d.family, d.cluster, d.smem_bytes),
            (Family::Clus, 2, 84_000)
        );
    }

    #[test]
    fn h200_never_picks_a_non_resident_cluster() {
        let dev = DeviceProfile::h200();
        // 31 rows of 4-CTA clusters do not fit (30 max on H200) although 31·4 ≤ 132.
        let d = route(31, 65536, 65536, 512, &dev);
        assert_eq!(d.family, Family::Clus);
        assert_eq!(d.cluster, 2, "{d:?}");
        let d = route(30, 100_000, 100_032, 512, &dev);
        assert_eq!((d.family, d.cluster), (Family::Clus, 4), "{d:?}");
        // Per-rank slices above 32K values stream through main (H200 rung).
        let d = route(31, 131072, 131072, 512, &dev);
        assert_eq!((d.family, d.ctas_per_row), (Family::Main, 4), "{d:?}");
        let d = route(40, 131072, 131072, 512, &dev);
        assert_eq!((d.family, d.ctas_per_row), (Family::Main, 2), "{d:?}");
        // One row of a 1M-element row splits over all 132 SMs.
        let d = route(1, 1 << 20, 1 << 20, 1024, &dev);
        assert_eq!((d.family, d.ctas_per_row), (Family::Main, 132));
    }

    fn sweep_ns(k: usize) -> Vec<usize> {
        let mut ns = vec![
            0,
            1,
            2,
            3,
            4,
            5,
            k - 1,
            k,
            k + 1,
            1027,
            4 * k + 64,
            4 * k + 65,
            16384,
            16385,
        ];
        let mut p = 1usize;
        while p <= 1 << 20 {
            ns.extend([p.saturating_sub(1), p, p + 1, p + 3]);
            p <<= 1;
        }
        ns.extend((0..40).map(|i| 1 + i * 26_111));
        ns
    }

    fn sweep_bs() -> Vec<usize> {
        let mut bs = vec![
            0, 3, 15, 16, 17, 31, 33, 65, 66, 67, 73, 75, 131, 133, 147, 149, 263, 265, 297, 1000,
        ];
        bs.extend((0..=13).map(|e| 1usize << e));
        bs
    }

    #[test]
    fn route_is_total_admissible_and_deterministic() {
        for dev in [DeviceProfile::h200(), DeviceProfile::b200()] {
            for k in [512usize, 1024, 2048] {
                for n in sweep_ns(k) {
                    for b in sweep_bs() {
                        let d = route(b, n, n, k, &dev);
                        let ctx = format!("{} b={b} n={n} k={k}: {d:?}", dev.name);
                        assert!(d.smem_bytes <= dev.smem_optin, "{ctx}");
                        assert!([256, 512, 1024].contains(&d.blk), "{ctx}");
                        assert!(
                            d.cluster <= dev.max_cluster_nonportable && d.cluster.is_power_of_two(),
                            "{ctx}"
                        );
                        if d.cluster > 1 {
                            assert!(dev.cluster_fits(d.cluster, b.max(1)), "{ctx}");
                        }
                        assert!(d.ctas_per_row >= 1 && d.ctas_per_row <= dev.sms, "{ctx}");
                        match d.family {
                            Family::Main | Family::Clus => {
                                let p = d.params.expect("streaming decision carries params");
                                assert_eq!(p.r, d.ctas_per_row, "{ctx}");
                                assert!(p.smp * p.ss2 * p.unit_values <= n, "{ctx}");
                                assert!(p.kpt <= 8 && k <= 8 * p.blk as usize, "{ctx}");
                            }
                            Family::Reg | Family::RegImg | Family::RegClus => {
                                let reg = d.reg.expect("register decision carries a plan");
                                let capacity = if d.family == Family::RegClus {
                                    4 * d.ctas_per_row as usize * d.blk as usize * reg.vpt as usize
                                } else {
                                    reg_capacity(d.blk, reg.vpt)
                                };
                                assert!(n <= capacity + 3, "register capacity: {ctx}");
                            }
                        }
                        assert_eq!(route(b, n, n, k, &dev), d, "determinism: {ctx}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod h200_rung_tests {
    use super::*;

    #[test]
    fn k2048_rows_take_the_smallest_register_cta_on_the_h200_only() {
        let h200 = DeviceProfile::h200();
        let b200 = DeviceProfile::b200();
        // (n, (BLK, VPT)) at every batch size: the v32 grid lengths and the
        // capacity edges.
        let rungs = [
            (5121usize, (512u32, 4u32)),
            (8207, (512, 4)),
            (8704, (512, 4)),
            (8705, (1024, 4)),
            (16_399, (1024, 4)),
            (17_408, (1024, 4)),
        ];
        for b in [1usize, 7, 64, 132, 133, 256, 264, 265, 512, 1024, 8192] {
            for (n, shape) in rungs {
                let npad = n.div_ceil(64) * 64;
                let d = route(b, n, npad, 2048, &h200);
                assert_eq!(d.family, Family::Reg, "b={b} n={n}");
                assert_eq!((d.blk, d.reg.unwrap().vpt), shape, "b={b} n={n}");
            }
            // Rows that 1024/1 holds: that CTA while the batch has at most
            // one row per SM, else the smallest CTA that holds the row.
            let one_per_sm = b <= 132;
            for (n, shape) in [
                (4111, if one_per_sm { (1024, 1) } else { (512, 2) }),
                (4608, if one_per_sm { (1024, 1) } else { (512, 2) }),
                (4609, if one_per_sm { (1024, 1) } else { (512, 4) }),
                (5120, if one_per_sm { (1024, 1) } else { (512, 4) }),
            ] {
                let d = route(b, n, n.div_ceil(64) * 64, 2048, &h200);
                assert_eq!(d.family, Family::Reg, "b={b} n={n}");
                assert_eq!((d.blk, d.reg.unwrap().vpt), shape, "b={b} n={n}");
            }
            // One value past the register capacity: clustered registers
            // while a cluster fits the batch, else streaming.
            let past = route(b, 17_409, 17_472, 2048, &h200).family;
            let clustered = if b <= 16 {
                Family::RegClus
            } else {
                Family::Main
            };
            assert_eq!(past, clustered, "b={b}");
            // K <= 1024: reg 1024/2 up to 32 rows, 1024/4 up to one row per
            // SM, 512/4 in the second-wave band SMs < b <= 2·SMs, then main.
            let d = route(b, 8195, 8256, 1024, &h200);
            let expected = match b {
                ..=32 => (Family::Reg, 1024, Some(2)),
                33..=132 => (Family::Reg, 1024, Some(4)),
                133..=264 => (Family::Reg, 512, Some(4)),
                _ => (Family::Main, d.blk, None),
            };
            assert_eq!((d.family, d.blk, d.reg.map(|r| r.vpt)), expected, "b={b}");
            // One value past 1024/2's capacity: 1024/4.
            let d = route(b.min(32), 9217, 9280, 512, &h200);
            assert_eq!((d.blk, d.reg.map(|r| r.vpt)), (1024, Some(4)));
        }
        // The B200 route keeps the upstream rungs.
        let shape = |d: RouteDecision| (d.family, d.blk, d.reg.map(|r| r.vpt));
        let b200_8k = route(1, 8207, 8256, 2048, &b200);
        assert_eq!(shape(b200_8k), (Family::Reg, 1024, Some(4)));
        assert_eq!(route(512, 16_399, 16_448, 2048, &b200).family, Family::Main);
        assert_eq!(route(256, 8195, 8256, 1024, &b200).family, Family::Main);
        assert_eq!(
            shape(route(8, 8195, 8256, 1024, &b200)),
            (Family::Reg, 1024, Some(4))
        );
    }

    #[test]
    fn reg_clus_needs_four_sms_per_row_on_the_h200() {
        let h200 = DeviceProfile::h200();
        let b200 = DeviceProfile::b200();
        let shape = |d: RouteDecision| (d.family, d.cluster, d.ctas_per_row);
        for k in [512usize, 1024] {
            // flash / pro N = 32,771 (isl 128K, compress ratio 4).
            assert_eq!(
                shape(route(32, 32_771, 32_832, k, &h200)),
                (Family::RegClus, 2, 2)
            );
            for b in [34usize, 64, 66] {
                assert_eq!(
                    shape(route(b, 32_771, 32_832, k, &h200)),
                    (Family::Main, 1, 1),
                    "b={b}"
                );
            }
            // The upstream rung: clusters of two while two SMs per row remain.
            assert_eq!(
                shape(route(64, 32_771, 32_832, k, &b200)),
                (Family::RegClus, 2, 2)
            );
        }
    }

    #[test]
    fn k2048_rows_of_32k_to_96k_take_clusters_at_small_batch_on_the_h200_only() {
        let h200 = DeviceProfile::h200();
        let b200 = DeviceProfile::b200();
        let shape = |d: RouteDecision| (d.family, d.cluster, d.reg.map(|r| r.vpt));
        for b in [1usize, 2, 4, 8, 16, 32, 64] {
            // N = 32,783: reg_clus while its rung fits (8 x 2 up to 15 rows, then 4 x 4).
            let expected = match b {
                ..=8 => (Family::RegClus, 8, Some(2)),
                16 => (Family::RegClus, 4, Some(4)),
                _ => (Family::Main, 1, None),
            };
            let d = route(b, 32_783, 32_832, 2048, &h200);
            assert_eq!(shape(d), expected, "b={b} n=32783");
            // N = 65,551 (n4 above 16,384): clus with 8-CTA clusters while they are co-resident.
            let d = route(b, 65_551, 65_600, 2048, &h200);
            let expected = if b <= 15 {
                (Family::Clus, 8, None)
            } else {
                (Family::Main, 1, None)
            };
            assert_eq!(shape(d), expected, "b={b} n=65551");
            if d.family == Family::Clus {
                assert!(h200.cluster_fits(d.cluster, b));
            }
            // Past n4 = 24,576: main (SPLIT up to 32 rows).
            let d = route(b, 131_087, 131_136, 2048, &h200);
            assert_eq!(shape(d), (Family::Main, 1, None), "b={b}");
            assert_eq!(d.ctas_per_row > 1, b <= 32, "b={b}");
            assert_eq!(route(b, 132_097, 132_160, 2048, &h200).family, Family::Main);
            // The B200 route serves K = 2048 with main only.
            assert_eq!(route(b, 32_783, 32_832, 2048, &b200).family, Family::Main);
            assert_eq!(route(b, 65_551, 65_600, 2048, &b200).family, Family::Main);
        }
    }
}
