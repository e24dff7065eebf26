//! The register-resident family `reg` (kernels/ss/reg.cu), one CTA per row.
//!
//! The launch is a pure function of the shape and the route's decision
//! ([`plan`]): the route's [`RegPlan`] when it picks `reg` or `regimg`, else
//! the smallest compiled register shape whose capacity (BLK·VPT float4 plus
//! one tail scalar per thread, [`reg_capacity`]) holds the row, with the
//! route's rules for CMP / QC / DEG. Rows longer than 17,408 values are
//! refused. `regimg` shapes run the IMG entry (row image in shared memory for
//! the hint gather, 1024/1/2048).
//!
//! Per launch the host does the launch only (no reads, no syncs).

use cudarc::driver::{DeviceRepr, LaunchConfig};

use crate::error::Result;
use crate::gpu::sources::{Defines, SS_REG};
use crate::gpu::{DeviceBatch, KernelBuild};
use crate::topk::launcher::Launcher;
use crate::topk::route::dispatch::{
    reg_drop_few, reg_hints_first, reg_keep_bins, reg_mask_slots_32, reg_row_ahead, reg_stage_out,
    reg_stage_out_extra,
};
use crate::topk::route::params::{DRIVER_SMEM_PER_CTA, SMEM_PER_SM};
use crate::topk::route::{reg_capacity, route, DeviceProfile, Family, RegPlan, RouteDecision};
use crate::topk::tuning::{Scope, Tuning};
use crate::topk::{admits, to_u32, Shape};

/// One compiled entry point of `kernels/ss/reg.cu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegEntry {
    pub blk: u32,
    /// float4 per thread.
    pub vpt: u32,
    /// `__launch_bounds__` minimum blocks per SM.
    pub minb: u32,
    /// Histogram bins.
    pub nbh: u32,
    /// Row image in shared memory (`regimg`).
    pub img: bool,
}

impl RegEntry {
    /// Row capacity in float4 registers (the tail scalar comes on top).
    pub fn capacity4(&self) -> usize {
        self.blk as usize * self.vpt as usize
    }

    /// Longest row the entry holds in registers, in values.
    pub fn capacity(&self) -> usize {
        reg_capacity(self.blk, self.vpt)
    }

    /// Whether the entry compiles the drop-few path (rows of `n ≤ k +
    /// REG_DROP_MAX` keep all but their `n − k` smallest): all but the
    /// 32-register BLK 512 entries (`ss_reg_drops_few` in kernels/ss/reg.cu).
    pub fn drops_few(&self) -> bool {
        !(self.blk == 512 && self.minb >= 4)
    }

    pub fn name(&self) -> String {
        if self.img {
            format!("ss_regimg_b{}_v{}", self.blk, self.vpt)
        } else {
            entry_name(self.blk, self.vpt)
        }
    }

    /// Dynamic shared memory for a candidate capacity `cmp`: hist | ck | ci,
    /// the IMG row image (one word per value it holds) aliasing ck/ci.
    pub fn dyn_smem_bytes(&self, cmp: usize) -> usize {
        let tail = if self.img {
            (2 * cmp).max(self.capacity())
        } else {
            2 * cmp
        };
        (self.nbh as usize + tail) * 4
    }
}

/// Every entry compiled in `kernels/ss/reg.cu`: the register rungs, then the
/// regimg rung.
pub const REG_ENTRIES: &[RegEntry] = &[
    RegEntry {
        blk: 256,
        vpt: 1,
        minb: 8,
        nbh: 1024,
        img: false,
    },
    RegEntry {
        blk: 512,
        vpt: 1,
        minb: 4,
        nbh: 1024,
        img: false,
    },
    RegEntry {
        blk: 1024,
        vpt: 1,
        minb: 2,
        nbh: 2048,
        img: false,
    },
    RegEntry {
        blk: 512,
        vpt: 2,
        minb: 4,
        nbh: 1024,
        img: false,
    },
    RegEntry {
        blk: 1024,
        vpt: 4,
        minb: 1,
        nbh: 2048,
        img: false,
    },
    RegEntry {
        blk: 512,
        vpt: 4,
        minb: 2,
        nbh: 2048,
        img: false,
    },
    RegEntry {
        blk: 1024,
        vpt: 1,
        minb: 2,
        nbh: 2048,
        img: true,
    },
    // Not routed yet: a candidate for K = 2048 rows of 4K–8K values at one
    // row per SM (half the values per thread of 512/4).
    RegEntry {
        blk: 1024,
        vpt: 2,
        minb: 1,
        nbh: 2048,
        img: false,
    },
];

/// Entry point name of a compiled reg (not IMG) (BLK, VPT) shape.
pub fn entry_name(blk: u32, vpt: u32) -> String {
    format!("ss_reg_b{blk}_v{vpt}")
}

/// Bytes of static shared memory the kernel may use beside the dynamic
/// part (the upstream 512-byte prelude; `SsRegShared` is smaller).
pub const STATIC_SMEM_BYTES: u32 = 512;

/// The kernel's by-value launch scalars: `SsRegParams` in `kernels/ss/reg.cu`, field
/// for field (10 × u32, 40 bytes, no padding).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SsRegArgs {
    pub npad: u32,
    pub k: u32,
    /// Crossing-candidate capacity (sizes the dynamic shared memory).
    pub cmp: u32,
    /// O(m²) rank gate.
    pub qc: u32,
    /// 0: hint-free bracket (first k values of the row).
    pub use_hints: u32,
    /// 0: per-row lengths; ≥ 1: varlen `kv_lens` (see `SsMainArgs::next_n`).
    pub next_n: u32,
    /// Varlen compress ratio as a shift (0 or 2).
    pub cr_shift: u32,
    /// Emit form, an index of [`EMIT_FORMS`]: 1 per-bin cursors (CUR) or 0
    /// warp-aggregated slots, as the route plans (`RegPlan::cur`) or as
    /// the `reg.emit` knob forces.
    pub cur: u32,
    /// Next-wave L2 prefetch distance in rows (the launch's resident CTAs;
    /// 0 = off), set at stage time from the occupancy of the loaded entry.
    pub ahead: u32,
    /// The row length whose loads the kernel issues before each row's own
    /// length arrives (`SS_REG_ROW_AHEAD`; a row of another length loads
    /// again); 0 = none (`reg_row_ahead` of the route decides).
    pub row_guess: u32,
}

impl SsRegArgs {
    /// The words of the kernel's `SsRegParams`, in order.
    pub fn words(&self) -> [u32; 10] {
        [
            self.npad,
            self.k,
            self.cmp,
            self.qc,
            self.use_hints,
            self.next_n,
            self.cr_shift,
            self.cur,
            self.ahead,
            self.row_guess,
        ]
    }
}

// SAFETY: `#[repr(C)]` plain-old-data of ten u32, byte-identical to the
// kernel's `SsRegParams` (same order, 4-byte fields, no padding).
unsafe impl DeviceRepr for SsRegArgs {}

/// Where the launch came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegSource {
    /// `route()` picked this family (Reg or RegImg).
    Routed(Family),
    /// The route picked another family; the smallest register shape that
    /// holds the row was chosen instead.
    Nearest(Family),
    /// The `reg.entry` knob named the entry (a tuning run).
    Forced,
}

/// The kernel's emit forms (`SsRegParams::cur` of reg.cu), by code.
pub const EMIT_FORMS: [&str; 2] = ["slots", "cur"];

/// The kernel's bound on n − k for the drop-few path (0: never; the
/// source's default is [`crate::topk::route::dispatch::REG_DROP_MAX`]).
pub const DROP_MAX_DEFINE: &str = "SS_REG_DROP_MAX";

/// `SS_REG_EMIT_MASK` of kernels/ss/reg.cu (also a tuning knob, which then
/// decides every build).
pub const EMIT_MASK_DEFINE: &str = "SS_REG_EMIT_MASK";

/// Share of the L2 that one wave's prefetched rows may fill (H200: 60 MiB;
/// the rows of the running wave stream through the rest).
const NEXT_WAVE_L2_SHARE: u64 = 2;

/// The `ahead` kernel scalar of a one-CTA-per-row launch: the CTAs the
/// device holds at once (`sms` SMs of `per_sm` each) when each SM holds one
/// CTA, the launch has a later wave and one wave of `row_bytes` rows fits in
/// its share of an `l2_bytes` L2; else 0 (no prefetch).
///
/// One CTA leaves the SM's loads idle through its in-SM chain (bracket,
/// histogram, scan, emit), which the prefetch fills, while a co-resident CTA
/// already fills them with its own row, so the entries of two or more CTAs
/// per SM lose with it (likely reason; not profiled).
/// Evidence: docs/decisions.md (`SS_NEXT_WAVE_PREFETCH`, next-wave `ahead`).
pub fn next_wave_ahead(rows: u64, per_sm: u64, sms: u64, row_bytes: u64, l2_bytes: u64) -> u32 {
    let resident = per_sm.saturating_mul(sms);
    let fits = resident.saturating_mul(row_bytes) <= l2_bytes / NEXT_WAVE_L2_SHARE;
    if per_sm != 1 || rows <= resident || !fits {
        return 0;
    }
    u32::try_from(resident).unwrap_or(0)
}

/// Compiles the next-wave prefetch into `kernels/ss/reg.cu` (1, the source's
/// default) or out of it (0, for launches whose `ahead` is 0).
pub const NEXT_WAVE_DEFINE: &str = "SS_NEXT_WAVE_PREFETCH";

/// The emit forms `kernels/ss/reg.cu` compiles: an index of [`EMIT_FORMS`]
/// (that form only; the `cur` word is then ignored) or [`EMIT_FORM_BOTH`].
pub const EMIT_FORM_DEFINE: &str = "SS_REG_EMIT_FORM";

/// 1: the kernel loads its first hint indices ahead of the row length and
/// the row (the source's default is 0).
pub const HINTS_FIRST_DEFINE: &str = "SS_REG_HINTS_FIRST";

/// 1: the kernel loads the row for `SsRegArgs::row_guess` before the row
/// length arrives (the source's default is 0).
pub const ROW_AHEAD_DEFINE: &str = "SS_REG_ROW_AHEAD";

/// 1: the slots emit gathers its indices in shared memory (the source's
/// default is 0).
pub const STAGE_OUT_DEFINE: &str = "SS_REG_STAGE_OUT";
/// Bins kept in the registers after the histogram (1; values needed later read
/// again from global memory): the plan's per-launch setting, [`RegLaunch::keep_bins`].
pub const KEEP_BIN_DEFINE: &str = "SS_REG_KEEP_BIN";

/// The emit form called `name` (its kernel code).
pub fn emit_form_named(name: &str) -> std::result::Result<u32, String> {
    EMIT_FORMS
        .iter()
        .position(|f| *f == name)
        .map(|code| code as u32)
        .ok_or_else(|| {
            format!(
                "reg.emit={name} is not an emit form (one of: {})",
                EMIT_FORMS.join(", ")
            )
        })
}

/// The entry called `name`, or why there is none.
pub fn entry_named(name: &str) -> std::result::Result<RegEntry, String> {
    REG_ENTRIES
        .iter()
        .find(|e| e.name() == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<String> = REG_ENTRIES.iter().map(RegEntry::name).collect();
            format!(
                "reg.entry={name} is not a compiled reg entry (one of: {})",
                names.join(", ")
            )
        })
}

/// Everything one launch needs, derived from the shape alone.
#[derive(Debug, Clone, PartialEq)]
pub struct RegLaunch {
    pub entry: RegEntry,
    pub plan: RegPlan,
    pub args: SsRegArgs,
    pub source: RegSource,
    /// (1, rows, 1): rows are `blockIdx.y`.
    pub grid: (u32, u32, u32),
    pub dyn_smem_bytes: u32,
    /// [`reg_stage_out`] holds for the batch and entry on the planned device.
    pub stage_out_fits: bool,
    /// [`reg_stage_out_extra`] holds and MINB CTAs still fit an SM with the
    /// k extra words.
    pub stage_extra_fits: bool,
    /// [`reg_drop_few`] holds for the batch on the planned device.
    pub drop_few_fits: bool,
    /// [`reg_keep_bins`] holds for the batch and entry on the planned device.
    pub keep_bins: bool,
}

impl RegLaunch {
    /// Whether the kernel loads the first hint indices ahead of the row: the
    /// launch reads hints, its entry holds 4 float4 per thread in registers
    /// only (the 32-register entries lose with it; the image entry gathers
    /// from shared memory) and [`reg_hints_first`] holds for its rows.
    /// Evidence: docs/decisions.md (`SS_REG_HINTS_FIRST`).
    pub fn hints_first(&self) -> bool {
        self.args.use_hints != 0
            && self.entry.vpt == 4
            && !self.entry.img
            && reg_hints_first(
                self.grid.1 as usize,
                self.args.npad as usize,
                self.args.k as usize,
            )
    }

    /// Whether the launch's slots emit gathers its indices in shared memory:
    /// it emits in the slots form and [`reg_stage_out`] holds for its batch
    /// and entry.
    pub fn stage_out(&self) -> bool {
        self.args.cur == 0 && self.stage_out_fits
    }

    /// Whether it stages in k extra words instead (k > NBH, where the
    /// entry's CTAs per SM still fit with them).
    pub fn stage_extra(&self) -> bool {
        self.args.cur == 0 && self.stage_extra_fits
    }

    /// Whether the launch's build compiles the mask slots into the
    /// 32-register entries (`SS_REG_EMIT_MASK` 2): the launch emits in the
    /// slots form and [`reg_mask_slots_32`] holds for its entry and k.
    pub fn mask_slots_32(&self) -> bool {
        self.args.cur == 0
            && reg_mask_slots_32(
                self.entry.blk,
                self.entry.vpt,
                self.args.k as usize,
                self.entry.nbh,
            )
    }

    /// Whether the launch takes the drop-few path for rows of k < n ≤ k + 4:
    /// its entry compiles the path and [`reg_drop_few`] holds for its batch.
    pub fn drop_few(&self) -> bool {
        self.entry.drops_few() && self.drop_few_fits
    }

    /// `SS_REG_STAGE_OUT` of the launch's build: 0 direct stores, 1 staged
    /// in the histogram, 2 staged in the extra words.
    pub fn stage_out_mode(&self) -> u32 {
        if self.stage_out() {
            1
        } else if self.stage_extra() {
            2
        } else {
            0
        }
    }

    /// Dynamic shared memory of the launch: the entry's, plus the k staging
    /// words of [`Self::stage_extra`].
    pub fn launch_smem_bytes(&self) -> u32 {
        self.dyn_smem_bytes
            + if self.stage_extra() {
                4 * self.args.k
            } else {
                0
            }
    }

    /// The defines the plan builds this launch with: the next-wave prefetch
    /// compiled in (`prefetch`) or out, only the emit form of `args.cur`,
    /// [`Self::hints_first`], the staging mode, the row-ahead loads, the mask
    /// slots, the drop-few bound and the kept bins.
    pub fn build_defines(&self, prefetch: bool) -> Defines {
        let mut defines = vec![
            (NEXT_WAVE_DEFINE, u32::from(prefetch).to_string()),
            (EMIT_FORM_DEFINE, self.args.cur.to_string()),
            (
                HINTS_FIRST_DEFINE,
                u32::from(self.hints_first()).to_string(),
            ),
            (STAGE_OUT_DEFINE, self.stage_out_mode().to_string()),
            (
                ROW_AHEAD_DEFINE,
                u32::from(self.args.row_guess != 0).to_string(),
            ),
        ];
        if self.mask_slots_32() {
            defines.push((EMIT_MASK_DEFINE, "2".to_string()));
        }
        if !self.drop_few() {
            defines.push((DROP_MAX_DEFINE, "0".to_string()));
        }
        if self.keep_bins {
            defines.push((KEEP_BIN_DEFINE, "1".to_string()));
        }
        defines
    }

    /// The build of this launch with the next-wave prefetch in or out, the
    /// tuning's macros for kernels/ss/reg.cu on top.
    pub fn build(&self, prefetch: bool, tuning: &Tuning) -> KernelBuild {
        KernelBuild {
            source: SS_REG,
            defines: tuning.over(&SS_REG, self.build_defines(prefetch)),
        }
    }

    /// Load the launch's build, and with the occupancy of the build without
    /// the prefetch decide the next-wave prefetch distance (`args.ahead`);
    /// where it prefetches, load the build with the prefetch. Launches that
    /// prefetch nothing run a build without it (the dead branch still costs
    /// one-wave batches; evidence: docs/decisions.md, `SS_NEXT_WAVE_PREFETCH`);
    /// one CTA per SM stays one with it.
    pub fn prepare(&mut self, launcher: &mut Launcher, tuning: &Tuning) -> Result<()> {
        let name = self.entry.name();
        launcher.load(&self.build(false, tuning), &name, self.launch_smem_bytes())?;
        let per_sm = launcher.resident_ctas_per_sm(self.entry.blk, self.launch_smem_bytes())?;
        let facts = &launcher.gpu().facts;
        self.args.ahead = next_wave_ahead(
            u64::from(self.grid.1),
            per_sm,
            u64::from(facts.sms),
            u64::from(self.args.npad) * 4,
            facts.l2_bytes,
        );
        if self.args.ahead > 0 {
            launcher.load(&self.build(true, tuning), &name, self.launch_smem_bytes())?;
        }
        Ok(())
    }
}

/// The knob scopes a register launch's variant names.
pub const SCOPES: [Scope; 2] = [Scope::AllFamilies, Scope::Reg];

/// The register plan knobs for a register shape chosen outside the route.
fn nearest_plan(b: usize, n: usize, k: usize, entry: &RegEntry, dev: &DeviceProfile) -> RegPlan {
    let deg = n <= 4 * k + 64;
    let wide = b <= dev.sms as usize;
    RegPlan {
        vpt: entry.vpt,
        nbh: entry.nbh,
        kpt: 1,
        deg,
        cur: crate::topk::route::dispatch::reg_cursor_emit(b, n, k, dev),
        cmp: if deg { n } else { n.min(2560) },
        qc: if wide { 96 } else { 1024 },
    }
}

/// The register launch for `shape` with production tuning, routing it first
/// (for callers without a decision: the CPU model, tests).
pub fn plan_reg(shape: &Shape, dev: &DeviceProfile) -> std::result::Result<RegLaunch, String> {
    admits(shape)?;
    let decision = route(shape.rows.max(1), shape.n, shape.npad, shape.k, dev);
    plan(shape, dev, &decision, &Tuning::default())
}

/// The register launch for `shape` given the route's `decision`: the route's
/// plan when it picks reg / regimg, else the smallest register shape that
/// holds the row; `reg.entry` and `reg.emit` of `tuning` override the entry
/// and the emit form. The row is loaded ahead of its length where
/// [`reg_row_ahead`] says so.
pub fn plan(
    shape: &Shape,
    dev: &DeviceProfile,
    decision: &RouteDecision,
    tuning: &Tuning,
) -> std::result::Result<RegLaunch, String> {
    admits(shape)?;
    let forced = tuning.get("reg.entry").map(entry_named).transpose()?;
    let b = shape.rows.max(1);
    let n = shape.n;
    let (entry, plan, source) = match (forced, decision.family, decision.reg) {
        (Some(entry), _, _) => (
            entry,
            nearest_plan(b, n, shape.k, &entry, dev),
            RegSource::Forced,
        ),
        (None, family @ (Family::Reg | Family::RegImg), Some(plan)) => {
            let entry = REG_ENTRIES
                .iter()
                .find(|e| {
                    e.blk == decision.blk
                        && e.vpt == plan.vpt
                        && e.nbh == plan.nbh
                        && e.img == (family == Family::RegImg)
                })
                .ok_or_else(|| {
                    format!(
                        "route picked {} BLK {} VPT {} NBH {}, which is not compiled",
                        family.name(),
                        decision.blk,
                        plan.vpt,
                        plan.nbh
                    )
                })?;
            (*entry, plan, RegSource::Routed(family))
        }
        (None, family, _) => {
            let wide = b <= dev.sms as usize;
            // Smallest capacity that holds the row; at equal capacity the
            // wide batch takes BLK 1024 (route rung 4), the narrow one 512/2 (rung 5).
            let entry = REG_ENTRIES
                .iter()
                .filter(|e| !e.img && e.capacity() >= n)
                .filter(|e| e.capacity4() != 1024 || (e.blk == 1024) == wide)
                .min_by_key(|e| e.capacity())
                .ok_or_else(|| {
                    format!(
                        "row of {n} values exceeds the register capacity of {} values",
                        REG_ENTRIES
                            .iter()
                            .map(RegEntry::capacity)
                            .max()
                            .unwrap_or(0)
                    )
                })?;
            (
                *entry,
                nearest_plan(b, shape.n, shape.k, entry, dev),
                RegSource::Nearest(family),
            )
        }
    };
    if n > entry.capacity() {
        return Err(format!(
            "row of {n} values exceeds {}'s capacity of {}",
            entry.name(),
            entry.capacity()
        ));
    }
    let dyn_smem = entry.dyn_smem_bytes(plan.cmp);
    if dyn_smem + STATIC_SMEM_BYTES as usize > dev.smem_optin as usize {
        return Err(format!(
            "{dyn_smem} B of shared memory (+{STATIC_SMEM_BYTES} static) exceed the device's {}",
            dev.smem_optin
        ));
    }
    let cur = match tuning.get("reg.emit") {
        Some(name) => emit_form_named(name)?,
        None => plan.cur as u32,
    };
    let row_guess = if reg_row_ahead(shape.rows, entry.vpt, entry.img, dev) {
        // The batch-uniform entry: the rows' lengths are the shape's n (the
        // longest; a shorter row loads again).
        to_u32(shape.n, "n")?
    } else {
        0
    };
    Ok(RegLaunch {
        entry,
        args: SsRegArgs {
            npad: to_u32(shape.npad, "npad")?,
            k: to_u32(shape.k, "k")?,
            cmp: to_u32(plan.cmp, "cmp")?,
            qc: to_u32(plan.qc, "qc")?,
            use_hints: 1,
            next_n: 0,
            cr_shift: 0,
            cur,
            ahead: 0,
            row_guess,
        },
        plan,
        source,
        grid: (1, to_u32(shape.rows, "rows")?, 1),
        dyn_smem_bytes: to_u32(dyn_smem, "shared memory")?,
        stage_out_fits: reg_stage_out(b, shape.k, entry.blk, entry.nbh, dev),
        drop_few_fits: reg_drop_few(b, n, shape.k, (entry.blk, entry.vpt, entry.img), dev),
        stage_extra_fits: reg_stage_out_extra(b, shape.k, entry.blk, entry.nbh, dev)
            && entry.minb as usize
                * (dyn_smem + 4 * shape.k + STATIC_SMEM_BYTES as usize + DRIVER_SMEM_PER_CTA)
                <= SMEM_PER_SM,
        keep_bins: reg_keep_bins(b, entry.blk, entry.vpt, entry.img, dev),
    })
}

impl super::FamilyLaunch for RegLaunch {
    /// Recorded variant: `reg/blk1024/v4`, `regimg/blk1024/v1`, or
    /// `reg(for main)/blk1024/v4` when the route would have picked another family.
    fn variant(&self) -> String {
        let mut tail = format!("blk{}/v{}", self.entry.blk, self.entry.vpt);
        if self.args.cur != u32::from(self.plan.cur) {
            tail += &format!("+emit={}", EMIT_FORMS[self.args.cur as usize]);
        }
        match self.source {
            RegSource::Routed(family) => format!("{}/{tail}", family.name()),
            RegSource::Nearest(other) => format!("reg(for {})/{tail}", other.name()),
            RegSource::Forced if self.entry.img => format!("regimg(forced)/{tail}"),
            RegSource::Forced => format!("reg(forced)/{tail}"),
        }
    }
    fn scopes(&self) -> &'static [Scope] {
        &SCOPES
    }
    fn builds(&self, tuning: &Tuning) -> Vec<KernelBuild> {
        vec![self.build(false, tuning), self.build(true, tuning)]
    }
    fn entry(&self) -> String {
        self.entry.name()
    }
    fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: self.grid,
            block_dim: (self.entry.blk, 1, 1),
            shared_mem_bytes: self.launch_smem_bytes(),
        }
    }
    fn prepare(&mut self, launcher: &mut Launcher, tuning: &Tuning) -> Result<()> {
        RegLaunch::prepare(self, launcher, tuning)
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
        // SAFETY: the argument list matches the `ss_reg_*` entry points in
        // kernels/ss/reg.cu: f32 [rows*npad], i32 [rows], i32 [rows*k],
        // i32 [rows*k], the by-value SsRegParams (SsRegArgs, same layout).
        // Grid (1, rows), BLK threads, (NBH + 2·cmp)·4 bytes of dynamic smem
        // (plus k staging words where the plan stages there), which the plan
        // checked against the device's opt-in limit.
        unsafe { launcher.launch_rows(batch, self.args, self.config(), None, None) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topk::families::FamilyLaunch;
    use crate::topk::SUPPORTED_K;

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

    const L2: u64 = 60 << 20;

    #[test]
    fn next_wave_ahead_is_the_resident_count_only_when_a_later_wave_exists() {
        assert_eq!(next_wave_ahead(256, 1, 132, 65_536, L2), 132);
        assert_eq!(next_wave_ahead(133, 1, 132, 65_536, L2), 132);
        assert_eq!(next_wave_ahead(132, 1, 132, 65_536, L2), 0, "one wave");
        assert_eq!(next_wave_ahead(1, 1, 132, 65_536, L2), 0);
        assert_eq!(
            next_wave_ahead(256, 0, 132, 65_536, L2),
            0,
            "nothing resident"
        );
    }

    #[test]
    fn next_wave_ahead_stays_off_where_a_second_cta_shares_the_sm() {
        assert_eq!(next_wave_ahead(1024, 2, 132, 16_384, L2), 0);
        assert_eq!(next_wave_ahead(1024, 4, 132, 16_384, L2), 0);
        assert_eq!(next_wave_ahead(1024, 1, 132, 16_384, L2), 132);
    }

    #[test]
    fn next_wave_ahead_stays_off_when_a_wave_of_rows_overfills_its_l2_share() {
        // 132 resident rows of 256K floats (138 MB) cannot wait in a 60 MiB L2.
        assert_eq!(next_wave_ahead(1024, 1, 132, 1 << 20, L2), 0);
        // At exactly half the L2 it still prefetches.
        assert_eq!(next_wave_ahead(1024, 1, 132, L2 / 2 / 132, L2), 132);
        assert_eq!(next_wave_ahead(1024, 1, 132, L2 / 2 / 132 + 1, L2), 0);
    }

    #[test]
    fn the_drop_few_path_follows_the_entry_the_batch_and_the_knob() {
        let dev = DeviceProfile::h200();
        let off = (DROP_MAX_DEFINE, "0".to_string());
        let drop_defines = |l: &RegLaunch| {
            l.build_defines(false)
                .into_iter()
                .filter(|(name, _)| *name == DROP_MAX_DEFINE)
                .collect::<Vec<_>>()
        };
        // 256/1 at B <= 2 SMs, rows within k + 4: the source's default bound.
        let launch = plan_reg(&shape(8, 1027, 1024), &dev).unwrap();
        assert_eq!(launch.entry.blk, 256);
        assert!(launch.drop_few() && drop_defines(&launch).is_empty());
        assert!(!launch.variant().contains('+'), "{}", launch.variant());
        // A knob decides alone, and appears once.
        let built = launch.build(false, &tuned(&["SS_REG_DROP_MAX=2"])).defines;
        let set: Vec<_> = built
            .iter()
            .filter(|(n, _)| *n == DROP_MAX_DEFINE)
            .collect();
        assert_eq!(set, [&(DROP_MAX_DEFINE, "2".to_string())]);
        // Beyond 2 SMs of rows, and in an entry without the path: built out.
        let big = plan_reg(&shape(512, 1027, 1024), &dev).unwrap();
        assert!(!big.drop_few());
        assert_eq!(drop_defines(&big), std::slice::from_ref(&off));
        // Rows longer than k + REG_DROP_MAX: built without the code, but on
        // the 1024/1 entry, which runs faster with it (route::dispatch).
        let long = plan_reg(&shape(8, 8195, 1024), &dev).unwrap();
        assert_ne!((long.entry.blk, long.entry.vpt), (1024, 1));
        assert!(long.entry.drops_few() && !long.drop_few());
        assert_eq!(drop_defines(&long), std::slice::from_ref(&off));
        let quarter = plan_reg(&shape(8, 4099, 1024), &dev).unwrap();
        assert_eq!((quarter.entry.blk, quarter.entry.vpt), (1024, 1));
        assert!(quarter.drop_few() && drop_defines(&quarter).is_empty());
        let wide = plan_reg(&shape(8, 2052, 2048), &dev).unwrap();
        assert_eq!((wide.entry.blk, wide.entry.vpt), (512, 1));
        assert!(!wide.entry.drops_few() && !wide.drop_few());
        assert_eq!(drop_defines(&wide), [off]);
    }

    #[test]
    fn a_launch_builds_with_its_prefetch_and_emit_defines() {
        let mut launch = plan_reg(&shape(256, 16_387, 2048), &DeviceProfile::h200()).unwrap();
        let planned_cur = launch.args.cur;
        for cur in [0u32, 1] {
            launch.args.cur = cur;
            assert_eq!(
                launch.build_defines(true),
                [
                    (NEXT_WAVE_DEFINE, "1".to_string()),
                    (EMIT_FORM_DEFINE, cur.to_string()),
                    (HINTS_FIRST_DEFINE, "1".to_string()),
                    (STAGE_OUT_DEFINE, "0".to_string()),
                    (ROW_AHEAD_DEFINE, "0".to_string()),
                    (DROP_MAX_DEFINE, "0".to_string()),
                    (KEEP_BIN_DEFINE, "1".to_string())
                ]
            );
        }
        launch.args.cur = planned_cur;
        assert!(!launch.variant().contains('+'), "{}", launch.variant());
        launch.args.use_hints = 0; // hint-free: nothing to load ahead
        assert_eq!(
            launch.build_defines(false),
            [
                (NEXT_WAVE_DEFINE, "0".to_string()),
                (EMIT_FORM_DEFINE, planned_cur.to_string()),
                (HINTS_FIRST_DEFINE, "0".to_string()),
                (STAGE_OUT_DEFINE, "0".to_string()),
                (ROW_AHEAD_DEFINE, "0".to_string()),
                (DROP_MAX_DEFINE, "0".to_string()),
                (KEEP_BIN_DEFINE, "1".to_string())
            ]
        );
        // A row length to load ahead builds the kernel that does.
        launch.args.row_guess = 16_387;
        assert!(launch
            .build_defines(false)
            .contains(&(ROW_AHEAD_DEFINE, "1".to_string())));
        // The kernel source defaults every define under these names.
        for define in [
            NEXT_WAVE_DEFINE,
            EMIT_FORM_DEFINE,
            HINTS_FIRST_DEFINE,
            STAGE_OUT_DEFINE,
            ROW_AHEAD_DEFINE,
            KEEP_BIN_DEFINE,
        ] {
            assert!(
                crate::gpu::sources::SS_KNOBS.contains(&format!("#ifndef {define}\n")),
                "{define}"
            );
        }
        assert!(crate::gpu::sources::SS_KNOBS.contains(&format!("#define {EMIT_FORM_DEFINE} 2\n")));
        assert!(
            crate::gpu::sources::SS_KNOBS.contains(&format!("#define {HINTS_FIRST_DEFINE} 0\n"))
        );
        assert!(crate::gpu::sources::SS_KNOBS.contains(&format!("#define {STAGE_OUT_DEFINE} 0\n")));
        assert!(crate::gpu::sources::SS_KNOBS.contains(&format!("#define {KEEP_BIN_DEFINE} 0\n")));
    }

    #[test]
    fn bins_are_kept_where_the_rule_says_and_a_knob_replaces_the_plan() {
        let dev = DeviceProfile::h200();
        let keep = |l: &RegLaunch, tuning: &Tuning| {
            l.build(false, tuning)
                .defines
                .into_iter()
                .filter(|(name, _)| *name == KEEP_BIN_DEFINE)
                .collect::<Vec<_>>()
        };
        let on = (KEEP_BIN_DEFINE, "1".to_string());
        // 512/1 keeps them only beyond one row per SM.
        let small = plan_reg(&shape(8, 2052, 2048), &dev).unwrap();
        assert_eq!((small.entry.blk, small.entry.vpt), (512, 1));
        assert!(!small.keep_bins && keep(&small, &Tuning::default()).is_empty());
        let big = plan_reg(&shape(512, 2052, 2048), &dev).unwrap();
        assert_eq!((big.entry.blk, big.entry.vpt), (512, 1));
        assert!(big.keep_bins);
        assert_eq!(keep(&big, &Tuning::default()), std::slice::from_ref(&on));
        // Every other register entry at every batch size.
        let one = plan_reg(&shape(1, 16_387, 2048), &dev).unwrap();
        assert_eq!((one.entry.blk, one.entry.vpt), (1024, 4));
        assert_eq!(keep(&one, &Tuning::default()), std::slice::from_ref(&on));
        // A knob replaces the plan's value, once.
        let off = tuned(&["SS_REG_KEEP_BIN=0"]);
        assert_eq!(keep(&one, &off), [(KEEP_BIN_DEFINE, "0".to_string())]);
        // The image entry never: its own image fills that role.
        assert!(!reg_keep_bins(1, 1024, 1, true, &dev));
    }

    #[test]
    fn reg_knobs_reach_the_build_and_the_variant() {
        let t = tuned(&["SS_REG_HINT_NC=1", "SS_L2_DIST=1"]);
        let launch = plan_reg(&shape(256, 16_387, 2048), &DeviceProfile::h200()).unwrap();
        let defines = launch.build(false, &t).defines;
        assert!(defines.contains(&("SS_REG_HINT_NC", "1".to_string())));
        assert!(
            !defines.iter().any(|(n, _)| *n == "SS_L2_DIST"),
            "a main knob"
        );
        assert_eq!(t.label(&SCOPES), " +SS_REG_HINT_NC=1");
    }

    #[test]
    fn the_entry_and_emit_knobs_override_the_plan() {
        let dev = DeviceProfile::h200();
        let s = shape(256, 4096, 512);
        let d = route(256, 4096, s.npad, 512, &dev);
        let p = plan(
            &s,
            &dev,
            &d,
            &tuned(&["reg.entry=ss_reg_b1024_v4", "reg.emit=cur"]),
        )
        .unwrap();
        assert_eq!((p.entry.blk, p.entry.vpt, p.args.cur), (1024, 4, 1));
        assert_eq!(p.source, RegSource::Forced);
        assert!(
            p.variant().starts_with("reg(forced)/blk1024/v4"),
            "{}",
            p.variant()
        );
    }

    #[test]
    fn every_knob_entry_name_is_a_compiled_entry() {
        let mut names: Vec<String> = REG_ENTRIES.iter().map(RegEntry::name).collect();
        let mut knob: Vec<String> = crate::topk::tuning::REG_ENTRY_NAMES
            .iter()
            .map(|s| s.to_string())
            .collect();
        names.sort();
        knob.sort();
        assert_eq!(names, knob);
    }

    #[test]
    fn the_drop_few_default_matches_the_route() {
        let line = format!(
            "#define SS_REG_DROP_MAX {}u\n",
            crate::topk::route::dispatch::REG_DROP_MAX
        );
        assert!(
            crate::gpu::sources::SS_KNOBS.contains(&line),
            "knobs.cuh lacks `{line}`"
        );
    }

    #[test]
    fn mask_slots_32_builds_follow_the_rule_and_the_knob() {
        let dev = DeviceProfile::h200();
        let mask = (EMIT_MASK_DEFINE, "2".to_string());
        // 512/2 slots launches of K 1,024 (B 256-512 of 4,111): the mask build.
        let mut launch = plan_reg(&shape(256, 4111, 1024), &dev).unwrap();
        assert_eq!((launch.entry.blk, launch.entry.vpt), (512, 2));
        launch.args.cur = 0;
        assert!(launch.build_defines(false).contains(&mask));
        // A knob's value decides alone (one definition of the macro).
        let defines = launch.build(false, &tuned(&["SS_REG_EMIT_MASK=0"])).defines;
        let set: Vec<_> = defines
            .iter()
            .filter(|(n, _)| *n == EMIT_MASK_DEFINE)
            .collect();
        assert_eq!(set, [&(EMIT_MASK_DEFINE, "0".to_string())]);
        // Cursors launches, k > NBH and other entries keep the default build.
        launch.args.cur = 1;
        assert!(!launch.build_defines(false).contains(&mask));
        let mut wide_k = plan_reg(&shape(512, 4111, 2048), &dev).unwrap();
        assert_eq!((wide_k.entry.blk, wide_k.entry.vpt), (512, 2));
        wide_k.args.cur = 0;
        assert!(!wide_k.build_defines(false).contains(&mask));
        let mut short = plan_reg(&shape(512, 1027, 1024), &dev).unwrap();
        assert_eq!((short.entry.blk, short.entry.vpt), (256, 1));
        short.args.cur = 0;
        assert!(!short.build_defines(false).contains(&mask));
    }

    #[test]
    fn hints_first_follows_the_rule_and_the_hint_mode() {
        let dev = DeviceProfile::h200();
        let mut launch = plan_reg(&shape(256, 16_387, 2048), &dev).unwrap();
        assert!(launch.hints_first());
        launch.args.use_hints = 0;
        assert!(!launch.hints_first(), "hint-free launches load no hints");
        // Below the row threshold, for rows that cannot be hinted, and in the
        // 32-register entries (1024/1 at 64 rows, 512/2 at 512).
        for (rows, n, k) in [
            (32, 16_387, 2048),
            (256, 8_207, 2048),
            (64, 4_099, 512),
            (512, 4_099, 512),
        ] {
            let launch = plan_reg(&shape(rows, n, k), &dev).unwrap();
            assert!(!launch.hints_first(), "rows {rows} n {n} k {k}");
        }
    }

    #[test]
    fn emit_forms_parse_by_name_and_reject_others() {
        assert_eq!(emit_form_named("slots"), Ok(0));
        assert_eq!(emit_form_named("cur"), Ok(1));
        let err = emit_form_named("ballot").unwrap_err();
        assert!(
            err.contains("reg.emit=ballot") && err.contains("slots, cur"),
            "{err}"
        );
    }

    #[test]
    fn args_struct_is_ten_packed_u32_in_kernel_order() {
        assert_eq!(std::mem::size_of::<SsRegArgs>(), 40);
        let fields =
            crate::gpu::sources::u32_struct_fields(SS_REG.code, "SsRegParams").expect("all u32");
        assert_eq!(
            fields,
            [
                "npad",
                "k",
                "cmp",
                "qc",
                "use_hints",
                "next_n",
                "cr_shift",
                "cur",
                "ahead",
                "row_guess"
            ]
        );
        let a = SsRegArgs {
            npad: 1,
            k: 2,
            cmp: 3,
            qc: 4,
            use_hints: 5,
            next_n: 6,
            cr_shift: 7,
            cur: 8,
            ahead: 9,
            row_guess: 10,
        };
        assert_eq!(a.words(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn every_entry_is_declared_with_its_launch_bounds() {
        let code = SS_REG.code;
        for e in REG_ENTRIES {
            let decl = format!("__launch_bounds__({}, {}) {}(", e.blk, e.minb, e.name());
            assert!(code.contains(&decl), "missing `{decl}`");
            // The body's MINB (its barrier choices) is the launch bound's.
            let body = format!(
                "ss_reg_body<{}, {}, {}, {}, {}>",
                e.blk, e.vpt, e.nbh, e.img, e.minb
            );
            assert!(code.contains(&body), "missing `{body}`");
        }
    }

    #[test]
    fn slots_launches_stage_their_output_where_each_thread_emits_four() {
        let dev = DeviceProfile::h200();
        let sms = dev.sms as usize;
        // (b, n, k) -> SS_REG_STAGE_OUT (0 direct, 1 in the histogram, 2 in
        // extra words), each launch in the slots form (the route's form in
        // all but the one-wave batch)
        for (b, n, k, mode) in [
            (sms + 1, 8207, 2048, 1), // 512/4: k = 4·BLK
            (1024, 1027, 1024, 1),    // 256/1: k = 4·BLK
            (sms, 8207, 2048, 0),     // one row per SM
            (1024, 1027, 512, 0),     // 256/1: k = 2·BLK
            (1024, 2051, 1024, 0),    // 512/1: k = 2·BLK
            (1024, 4111, 2048, 2),    // 512/2: k > NBH
            (1024, 16_399, 2048, 0),  // 1024/4: k = 2·BLK
        ] {
            let mut launch = plan_reg(&shape(b, n, k), &dev).unwrap();
            launch.args.cur = 0;
            assert_eq!(launch.stage_out(), mode == 1, "b={b} n={n} k={k}");
            assert_eq!(launch.stage_extra(), mode == 2, "b={b} n={n} k={k}");
            assert_eq!(launch.stage_out_mode(), mode, "b={b} n={n} k={k}");
            let define = launch
                .build_defines(false)
                .into_iter()
                .find(|(name, _)| *name == STAGE_OUT_DEFINE)
                .map(|(_, value)| value);
            assert_eq!(define, Some(mode.to_string()));
            let mut cursors = launch.clone();
            cursors.args.cur = 1;
            assert_eq!(
                cursors.stage_out_mode(),
                0,
                "the cursor form keeps its histogram"
            );
        }
    }

    #[test]
    fn rows_of_k_above_nbh_stage_in_extra_words() {
        let dev = DeviceProfile::h200();
        let launch = plan_reg(&shape(1024, 4111, 2048), &dev).unwrap();
        assert_eq!(
            (launch.entry.blk, launch.entry.vpt, launch.entry.nbh),
            (512, 2, 1024)
        );
        assert_eq!(launch.args.cur, 0, "slots form");
        assert!(launch.stage_extra_fits && !launch.stage_out_fits);
        assert_eq!(launch.stage_out_mode(), 2, "on by default");
        assert_eq!(launch.launch_smem_bytes(), launch.dyn_smem_bytes + 4 * 2048);
        assert_eq!(launch.config().shared_mem_bytes, launch.launch_smem_bytes());
        assert_eq!(
            launch.variant(),
            "reg/blk512/v2",
            "the default adds no suffix"
        );
        // Four 512/2 CTAs per SM still fit with the extra 8 KB each.
        let per_cta = launch.launch_smem_bytes() as usize + 512 + DRIVER_SMEM_PER_CTA;
        assert!(4 * per_cta <= SMEM_PER_SM);
        // Where k <= NBH the histogram stages (mode 1) whatever the switch.
        let fits = plan_reg(&shape(1024, 8207, 2048), &dev).unwrap();
        assert_eq!(fits.stage_out_mode(), 1);
        assert_eq!(fits.launch_smem_bytes(), fits.dyn_smem_bytes);
        // About two indices per thread: never.
        let mut two = plan_reg(&shape(1024, 4099, 1024), &dev).unwrap();
        two.args.cur = 0;
        assert_eq!(two.stage_out_mode(), 0);
    }

    #[test]
    fn routed_shapes_take_the_route_plan() {
        let dev = DeviceProfile::h200();
        // (b, n, k) → (blk, vpt, variant) from the register rungs.
        let cases = [
            (1, 1024, 512, (256, 1), "reg/blk256/v1"),
            (1, 2048, 512, (512, 1), "reg/blk512/v1"),
            (1, 4096, 512, (1024, 1), "reg/blk1024/v1"), // regimg on the B200 only
            (1, 4096, 1024, (1024, 1), "reg/blk1024/v1"),
            (256, 4096, 512, (512, 2), "reg/blk512/v2"),
            (64, 16_384, 2048, (1024, 4), "reg/blk1024/v4"),
        ];
        for (b, n, k, (blk, vpt), variant) in cases {
            let p = plan_reg(&shape(b, n, k), &dev).unwrap();
            let d = route(b, n, shape(b, n, k).npad, k, &dev);
            assert_eq!((p.entry.blk, p.entry.vpt), (blk, vpt), "b={b} n={n} k={k}");
            assert_eq!(p.variant(), variant);
            assert_eq!(Some(p.plan), d.reg);
            assert_eq!(p.entry.minb, d.minb);
            // Dynamic smem = the route's smem minus the static prelude (the
            // IMG image is sized for any row the entry holds, so never less).
            assert_eq!(p.entry.img, d.family == Family::RegImg);
            if d.family == Family::Reg {
                assert_eq!(p.dyn_smem_bytes + STATIC_SMEM_BYTES, d.smem_bytes);
            } else {
                assert!(p.dyn_smem_bytes + STATIC_SMEM_BYTES >= d.smem_bytes);
            }
            assert_eq!(p.grid, (1, b as u32, 1));
        }
    }

    #[test]
    fn regimg_is_routed_where_the_profile_keeps_its_rung_and_can_be_forced() {
        let b200 = DeviceProfile::b200();
        let p = plan_reg(&shape(1, 4096, 512), &b200).unwrap();
        assert_eq!(p.variant(), "regimg/blk1024/v1");
        assert!(p.entry.img);
        let h200 = DeviceProfile::h200();
        let s = shape(16, 4096, 512);
        let d = route(16, 4096, s.npad, 512, &h200);
        let p = plan(&s, &h200, &d, &tuned(&["reg.entry=ss_regimg_b1024_v1"])).unwrap();
        assert_eq!(p.variant(), "regimg(forced)/blk1024/v1");
        assert!(p.dyn_smem_bytes as usize >= (p.entry.nbh as usize + 4096) * 4);
        let err = entry_named("ss_reg_b64_v1").unwrap_err();
        assert!(err.contains("ss_reg_b512_v4"), "{err}");
    }

    #[test]
    fn other_families_get_the_smallest_register_shape_that_holds_the_row() {
        let dev = DeviceProfile::h200();
        // 256 rows of 16K: route says main; capacity 4096 float4 + 1024 holds it.
        let p = plan_reg(&shape(256, 16_384, 512), &dev).unwrap();
        assert_eq!((p.entry.blk, p.entry.vpt), (1024, 4));
        assert_eq!(p.source, RegSource::Nearest(Family::Main));
        assert_eq!(p.variant(), "reg(for main)/blk1024/v4");
        assert_eq!((p.plan.cmp, p.plan.qc, p.plan.deg), (2560, 1024, false));
        // 1 row of 16K+: route says reg_clus, still fits (in the tail scalars).
        let p = plan_reg(&shape(1, 17_408, 512), &dev).unwrap();
        assert_eq!(p.entry.vpt, 4);
        // A row past 2K float4 but within 8,704 values: the BLK 512 entry.
        let p = plan_reg(&shape(256, 8_207, 512), &dev).unwrap();
        assert_eq!((p.entry.blk, p.entry.vpt), (512, 4));
        // Longer rows are refused with a reason.
        let err = plan_reg(&shape(1, 17_409, 512), &dev).unwrap_err();
        assert!(err.contains("capacity"), "{err}");
        let err = plan_reg(&shape(1, 1 << 20, 1024), &dev).unwrap_err();
        assert!(err.contains("capacity"), "{err}");
    }

    #[test]
    fn every_admitted_plan_is_launchable_and_holds_the_row() {
        let dev = DeviceProfile::h200();
        let bs = [0usize, 1, 2, 31, 64, 131, 132, 133, 256, 1000, 1024];
        let mut ns: Vec<usize> = vec![0, 1, 3, 511, 512, 513, 1023, 1027, 2049, 4160, 4161];
        ns.extend((0..40).map(|i| 1 + i * 421));
        ns.extend([8255, 8256, 8257, 8319, 16_380, 16_383, 16_384, 16_387]);
        ns.extend([4111, 5120, 8207, 8704, 16_399, 17_408]);
        ns.retain(|&n| n <= reg_capacity(1024, 4));
        for k in SUPPORTED_K {
            for &b in &bs {
                for &n in &ns {
                    let s = shape(b, n, k);
                    let p = plan_reg(&s, &dev).unwrap_or_else(|e| panic!("b={b} n={n} k={k}: {e}"));
                    let ctx = format!("b={b} n={n} k={k}: {p:?}");
                    assert!(REG_ENTRIES.contains(&p.entry), "{ctx}");
                    assert!(n <= p.entry.capacity(), "{ctx}");
                    assert!(
                        p.dyn_smem_bytes + STATIC_SMEM_BYTES <= dev.smem_optin,
                        "{ctx}"
                    );
                    assert!(
                        p.dyn_smem_bytes as usize >= (p.entry.nbh as usize + 2 * p.plan.cmp) * 4,
                        "{ctx}"
                    );
                    if p.entry.img {
                        assert!(p.dyn_smem_bytes as usize >= (p.entry.nbh as usize + n) * 4);
                    }
                    assert_eq!(p.plan.deg, n <= 4 * k + 64, "{ctx}");
                    assert!(p.plan.cmp <= n, "{ctx}");
                    assert_eq!(p.args.k as usize, k);
                    assert_eq!(p.args.cmp as usize, p.plan.cmp);
                }
            }
        }
    }

    #[test]
    fn shapes_the_kernel_cannot_take_are_refused() {
        let dev = DeviceProfile::h200();
        assert!(plan_reg(&shape(1, 4096, 256), &dev)
            .unwrap_err()
            .contains("k = 256"));
        let bad_pad = Shape {
            rows: 1,
            n: 100,
            npad: 100,
            k: 512,
        };
        assert!(plan_reg(&bad_pad, &dev).unwrap_err().contains("npad"));
    }
}
