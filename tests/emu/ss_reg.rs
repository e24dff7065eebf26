//! Runs the real `kernels/ss/reg.cu` source on the CPU and checks it exact,
//! and compiles it for sm_90a with NVRTC (no spills, no stack frame).
//!
//! The kernel is compiled with g++ against `tests/ss_emu/common.cuh` (every
//! CUDA thread a fiber switched at barriers and warp collectives; loads
//! bounds-checked so a read past a row's n aborts; dynamic shared memory
//! pre-filled with garbage) and driven by `tests/ss_emu/reg_main.cpp`. This
//! executes the kernel's own control flow, cursors and escapes. It does not
//! model the memory model or true interleaving between barriers; the GPU test
//! `ss_reg_gpu.rs` covers those on the H200.
//!
//! Skips (passes with a note) when g++ is not installed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::ss::batch;
use gvr_bench::arms::Shape;
use gvr_bench::exact::soak::VarlenLimits;
use gvr_bench::exact::{check_row, reference_topk, row_generators};
use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{declared_entries, SS_REG};
use gvr_bench::grid::Batch;
use gvr_bench::topk::cpu::{select_row_reg, RegCounts, RegModel};
use gvr_bench::topk::families::reg::{
    plan_reg, SsRegArgs, EMIT_FORM_DEFINE, EMIT_MASK_DEFINE, HINTS_FIRST_DEFINE, KEEP_BIN_DEFINE,
    NEXT_WAVE_DEFINE, REG_ENTRIES, ROW_AHEAD_DEFINE, STAGE_OUT_DEFINE, STATIC_SMEM_BYTES,
};
use gvr_bench::topk::route::dispatch::REG_DROP_MAX;
use gvr_bench::topk::route::{reg_capacity, DeviceProfile};

const DYN_SMEM_DECL: &str = "extern __shared__ __align__(16) u32 ss_reg_dyn[];";
/// The packed mask classify, a tuning knob of kernels/ss/knobs.cuh (source default 1; no plan sets it).
const MASK_PACKED_DEFINE: &str = "SS_REG_MASK_PACKED";
/// The next-wave prefetch as one request from thread 0, a tuning knob of kernels/ss/knobs.cuh (default 1).
const NEXT_WAVE_ONE_DEFINE: &str = "SS_NEXT_WAVE_ONE";

// SS_RTR_* of kernels/ss/reg.cu.
const SHORT: u32 = 1;
const DEG: u32 = 2;
const HINT: u32 = 4;
const FIRSTK: u32 = 8;
const ESC_GUARD: u32 = 16;
const ESC_TRASH: u32 = 32;
const ESC_CMP: u32 = 64;
const WHOLE: u32 = 128;
const RANK: u32 = 256;
const NARROW: u32 = 512;
const OVERSIZE: u32 = 1024;
const DROP: u32 = 2048;

/// Build the emulator once per source version; `None` if g++ is missing.
/// Built with the hint indices loaded ahead of the row (`SS_REG_HINTS_FIRST=1`,
/// as the host builds large hinted launches) and the row loaded ahead of its
/// length (`SS_REG_ROW_AHEAD=1`, as the host builds batch-uniform launches
/// of the 1-float4 entries; [`emu_check`] sets the guess for every entry): every test on this build covers
/// that load order; the build without them is the slots-only one below.
/// Also with the bins kept (`SS_REG_KEEP_BIN=1`, as the host builds every
/// launch but 512/1's at B ≤ SMs); the other modes: [`the_kept_bin_modes_are_exact_on_every_path`].
fn emulator() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_emulator(&main_build_defines(&[])))
        .as_deref()
}

/// The defines of [`emulator`]'s build, then `extra` (`-DNAME=VALUE`).
fn main_build_defines(extra: &[&str]) -> Vec<String> {
    let mut defines = vec![
        format!("-D{HINTS_FIRST_DEFINE}=1"),
        format!("-D{ROW_AHEAD_DEFINE}=1"),
        format!("-D{KEEP_BIN_DEFINE}=1"),
    ];
    defines.extend(extra.iter().map(|d| d.to_string()));
    defines
}

/// The emulator of the phase-probe build (`gvr-bench phases`), with the
/// load order of [`emulator`].
fn emulator_probed() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_emulator(&main_build_defines(&["-DSS_PHASE_PROBE=1"])))
        .as_deref()
}

/// The same source built with the slots emit form only (`SS_REG_EMIT_FORM=0`,
/// as the plan builds it for a slots launch): the `cur` word is
/// ignored. The hint indices and the row load after the row length here (the
/// source's default),
/// and the emitted indices go through shared memory where k <= NBH (the
/// `SS_REG_STAGE_OUT` knob).
fn slots_only_emulator() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            build_emulator(&[
                format!("-D{EMIT_FORM_DEFINE}=0"),
                format!("-D{STAGE_OUT_DEFINE}=1"),
            ])
        })
        .as_deref()
}

/// Slots only, staged in k extra words after ck | ci (`SS_REG_STAGE_OUT=2`,
/// the plan's build where `reg_stage_out_extra` holds): the launches add the words (`RegEmu::extra_words`).
fn stage_extra_emulator() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            build_emulator(&[
                format!("-D{EMIT_FORM_DEFINE}=0"),
                format!("-D{STAGE_OUT_DEFINE}=2"),
            ])
        })
        .as_deref()
}

/// Slots-only builds with `SS_REG_EMIT_MASK` = `mask` (through
/// `--knob SS_REG_EMIT_MASK=…`; the default builds are 1: slots from bit masks in
/// the 64-register entries): 0 the two-visit slots everywhere, 2 the mask
/// slots in the 32-register 512/2 too; with the emitted indices
/// straight to the output (`SS_REG_STAGE_OUT` 0), through the histogram (1)
/// or the extra words (2).
fn slots_emulator(mask: u32, staged: u32) -> Option<&'static Path> {
    static BUILT: [OnceLock<Option<PathBuf>>; 6] = [const { OnceLock::new() }; 6];
    assert!(mask == 0 || mask == 2, "mask {mask}");
    BUILT[(mask as usize / 2) * 3 + staged as usize]
        .get_or_init(|| {
            build_emulator(&[
                format!("-D{EMIT_MASK_DEFINE}={mask}"),
                format!("-D{EMIT_FORM_DEFINE}=0"),
                format!("-D{STAGE_OUT_DEFINE}={staged}"),
            ])
        })
        .as_deref()
}

fn build_emulator(defines: &[String]) -> Option<PathBuf> {
    crate::support::ss::dyn_smem_kernel_emulator(
        "ss-reg-emu",
        ("ss_reg.cu", SS_REG.code),
        DYN_SMEM_DECL,
        "u32* ss_reg_dyn;",
        ("main.cpp", include_str!("../ss_emu/reg_main.cpp")),
        defines,
    )
}

/// One emulated launch.
#[derive(Debug, Clone, Copy)]
struct RegEmu {
    /// Index in reg_main.cpp's table (0..REG_ENTRIES.len() = REG_ENTRIES, 16.. small CTAs).
    entry: u32,
    block: u32,
    nbh: u32,
    args: SsRegArgs,
    /// Rows actually emulated (a prefix of the batch).
    rows: usize,
    /// Dynamic shared memory words beyond the entry's (the staging words of
    /// `SS_REG_STAGE_OUT=2`).
    extra_words: usize,
}

/// Small stress CTAs of reg_main.cpp: (id, BLK, VPT, NBH).
/// Id 7 stages the row image (IMG) with 4·64·4 + 4 words.
const SMALL: [(u32, u32, u32, u32); 3] = [(16, 64, 1, 256), (17, 64, 4, 256), (18, 128, 2, 512)];

impl RegEmu {
    /// The launch `ss-reg` plans for the batch.
    fn planned(b: &Batch, rows: usize) -> RegEmu {
        let p = plan_reg(&Shape::of(b), &DeviceProfile::h200()).expect("plan");
        RegEmu {
            entry: REG_ENTRIES.iter().position(|e| *e == p.entry).unwrap() as u32,
            block: p.entry.blk,
            nbh: p.entry.nbh,
            args: p.args,
            rows,
            extra_words: 0,
        }
    }

    /// Entry `id` with the route's CMP / QC for the batch's longest row.
    fn forced(id: u32, b: &Batch, rows: usize) -> RegEmu {
        let (block, nbh) = if (id as usize) < REG_ENTRIES.len() {
            let e = REG_ENTRIES[id as usize];
            (e.blk, e.nbh)
        } else {
            let s = SMALL.iter().find(|s| s.0 == id).expect("small entry");
            (s.1, s.3)
        };
        let n = b.n_max();
        let deg = n <= 4 * b.k + 64;
        RegEmu {
            entry: id,
            block,
            nbh,
            args: SsRegArgs {
                npad: b.npad as u32,
                k: b.k as u32,
                cmp: if deg { n } else { n.min(2560) } as u32,
                qc: 96,
                use_hints: 1,
                next_n: 0,
                cr_shift: 0,
                cur: 1,
                ahead: 0,
                row_guess: 0,
            },
            rows,
            extra_words: 0,
        }
    }

    /// hist | ck | ci, or the IMG image when it is larger than ck | ci.
    fn dyn_smem(&self) -> u32 {
        let cmp = self.args.cmp as usize;
        let bytes = match REG_ENTRIES.get(self.entry as usize) {
            Some(e) => e.dyn_smem_bytes(cmp),
            None if self.entry == 17 => (self.nbh as usize + (2 * cmp).max(self.capacity())) * 4,
            None => (self.nbh as usize + 2 * cmp) * 4,
        };
        (bytes + 4 * self.extra_words) as u32
    }

    fn capacity(&self) -> usize {
        let vpt = if (self.entry as usize) < REG_ENTRIES.len() {
            REG_ENTRIES[self.entry as usize].vpt
        } else {
            SMALL.iter().find(|s| s.0 == self.entry).unwrap().2
        };
        reg_capacity(self.block, vpt)
    }

    /// The entry compiles the drop-few path (the small test entries, of
    /// BLK 64 and 128, all do).
    fn drops_few(&self) -> bool {
        REG_ENTRIES
            .get(self.entry as usize)
            .is_none_or(|e| e.drops_few())
    }
}

/// Run the launch in both emit forms (per-bin cursors and warp-aggregated
/// slots: the path is the same, only the order of the output differs); check
/// every emulated row of each; return the rows' trace bits. The slots run
/// also prefetches the next row as a next-wave launch would (the emulator
/// bounds-checks both ends of every prefetched range). Where the build loads
/// rows ahead of their length, the cursor run guesses the batch's longest
/// row (as `ss-reg` plans) and the slots run the row stride, so rows of
/// other lengths discard loads that reach past their n (which the emulator
/// poisons).
fn emu_check(exe: &Path, b: &Batch, launch: &RegEmu, label: &str) -> Vec<u32> {
    let mut traces = Vec::new();
    for cur in [1, 0] {
        let mut form = *launch;
        form.args.cur = cur;
        form.args.ahead = 1 - cur;
        form.args.row_guess = if cur == 1 { b.n_max() } else { b.npad } as u32;
        let bits = emu_check_form(exe, b, &form, &format!("{label} cur {cur}"));
        if !traces.is_empty() {
            assert_eq!(bits, traces, "{label}: the emit form changed the path");
        }
        traces = bits;
    }
    traces
}

fn emu_check_form(exe: &Path, b: &Batch, launch: &RegEmu, label: &str) -> Vec<u32> {
    let a = &launch.args;
    let dyn_smem = launch.dyn_smem();
    let header = [
        0x55EE_0002u32,
        launch.entry,
        b.rows as u32,
        launch.block,
        dyn_smem,
        b.npad as u32,
        b.k as u32,
        launch.rows as u32,
    ];
    let words: Vec<u32> = header.iter().chain(&a.words()).copied().collect();
    let (out, trace) = crate::support::ss::run_emulator(exe, label, &words, b);
    let (out, trace) = (out.as_slice(), trace.as_slice());
    let model = RegModel {
        nbh: launch.nbh,
        capacity: launch.capacity(),
        cmp: a.cmp as usize,
        qc: a.qc as usize,
        use_hints: a.use_hints != 0,
        drops_few: launch.drops_few(),
    };
    for r in 0..launch.rows {
        let label = format!("{label} row {r}");
        check_row_any(b, r, &out[r * b.k..(r + 1) * b.k], &label);
        // The CPU model takes the same path (same bracket, bins, escapes).
        let mut counts = RegCounts::default();
        let modelled = select_row_reg(b.row(r), b.hints(r), b.k, &model, &mut counts);
        check_row_any(b, r, &modelled, &format!("{label} (model)"));
        assert_eq!(
            trace[r] as u32,
            counts.trace_bits(),
            "{label} (n = {}): kernel path bits vs the model's {counts:?}",
            b.n[r]
        );
    }
    trace[..launch.rows].iter().map(|&t| t as u32).collect()
}

/// Tie-aware exact for NaN-free rows; for rows with NaN (order is
/// implementation-specific) every slot must still hold a unique index
/// in [0, n).
fn check_row_any(b: &Batch, r: usize, out: &[i32], label: &str) {
    let row = b.row(r);
    if row.len() <= b.k || !row.iter().any(|x| x.is_nan()) {
        if let Err(reason) = check_row(row, b.k, out) {
            panic!("{label} (n = {}): {reason}", row.len());
        }
        return;
    }
    let mut seen = HashSet::new();
    for &i in out {
        assert!(
            i >= 0 && (i as usize) < row.len() && seen.insert(i),
            "{label}: NaN row slot {i} (n = {})",
            row.len()
        );
    }
}

/// Constructed rows beyond the shared generators: ties at the threshold,
/// −inf tails (with fewer than k finite values too), NaN, extremes whose
/// width overflows.
fn special_rows(rng: &mut ChaCha8Rng, n: usize, k: usize) -> Vec<(&'static str, Vec<f32>)> {
    let spread: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % n.max(1)) as f32 / n.max(1) as f32)
        .collect();
    let mut ties = spread.clone();
    // The k-th largest value repeated 150 times around the threshold.
    let kth = {
        let mut s = spread.clone();
        s.sort_by(|a, b| b.total_cmp(a));
        s[k.min(n) - 1]
    };
    for x in ties.iter_mut() {
        if (*x - kth).abs() < 75.0 / n as f32 {
            *x = kth;
        }
    }
    let neg_inf_tail: Vec<f32> = (0..n)
        .map(|i| {
            if i < n / 2 {
                spread[i]
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    let few_finite: Vec<f32> = (0..n)
        .map(|i| {
            if i % 7 == 0 && i < k {
                spread[i]
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    let nan: Vec<f32> = (0..n)
        .map(|i| if i % 5 == 0 { f32::NAN } else { spread[i] })
        .collect();
    let extremes: Vec<f32> = (0..n)
        .map(|_| match rng.random_range(0..4) {
            0 => f32::MAX,
            1 => -f32::MAX,
            2 => f32::INFINITY,
            _ => rng.random_range(-1.0f32..1.0),
        })
        .collect();
    vec![
        ("ties_at_threshold", ties),
        ("neg_inf_tail", neg_inf_tail),
        ("few_finite", few_finite),
        ("nan", nan),
        ("extremes", extremes),
        ("all_neg_inf", vec![f32::NEG_INFINITY; n]),
    ]
}

/// Hint list number `mode` for a row: perfect, random, absent, one index
/// repeated, out of range, only the very top (bracket too high → trash bin).
fn hints_for(row: &[f32], k: usize, mode: usize, rng: &mut ChaCha8Rng) -> Vec<i32> {
    let n = row.len().max(1) as i32;
    match mode % 6 {
        0 => reference_topk(row, k),
        1 => (0..k).map(|_| rng.random_range(0..n)).collect(),
        2 => vec![-1; k],
        3 => vec![rng.random_range(0..n); k],
        4 => (0..k as i32)
            .map(|i| match i % 3 {
                0 => n + i,
                1 => i32::MAX - i,
                _ => -i - 2,
            })
            .collect(),
        _ => {
            let top = reference_topk(row, 8.min(row.len()));
            (0..k).map(|i| top[i % top.len().max(1)]).collect()
        }
    }
}

/// Rows of length `n` from every generator and construction, hint mode
/// rotating with the row (shifted by `shift`).
fn adversarial_batch(n: usize, k: usize, shift: usize, seed: u64) -> Batch {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows: Vec<Vec<f32>> = row_generators()
        .iter()
        .map(|g| (g.generate)(&mut rng as &mut dyn RngCore, n))
        .collect();
    rows.extend(special_rows(&mut rng, n, k).into_iter().map(|(_, r)| r));
    let hints: Vec<Vec<i32>> = rows
        .iter()
        .enumerate()
        .map(|(r, row)| hints_for(row, k, r + shift, &mut rng))
        .collect();
    batch(&rows, &hints, k)
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn every_compiled_entry_is_exact_on_adversarial_rows() {
    let Some(exe) = emulator() else { return };
    adversarial_rows_in_every_entry(exe);
}

/// Every entry of REG_ENTRIES on adversarial rows of several lengths and k;
/// every path of the chain must be taken.
fn adversarial_rows_in_every_entry(exe: &Path) {
    let mut seen = 0u32;
    for (id, e) in REG_ENTRIES.iter().enumerate() {
        let cap = e.capacity();
        for (j, k) in [512usize, 1024, 2048].into_iter().enumerate() {
            if k >= cap {
                continue;
            }
            // Full capacity (a tail scalar in every thread), 15 past the
            // float4 registers (the v32 N = 2^j + 15 rows), the DEG
            // boundary, and a length that is not a multiple of 4 in between.
            let mut ns = vec![cap, 4 * e.capacity4() + 15, ((k + cap) / 2) | 1];
            if 4 * k + 65 <= cap {
                ns.extend([4 * k + 64, 4 * k + 65]);
            }
            for (i, n) in ns.into_iter().enumerate() {
                let b = adversarial_batch(n, k, i + j, 1000 + id as u64 * 31 + i as u64);
                let launch = RegEmu::forced(id as u32, &b, b.rows);
                let label = format!("{} n={n} k={k}", e.name());
                for bits in emu_check(exe, &b, &launch, &label) {
                    seen |= bits;
                }
            }
        }
    }
    for (bit, name) in [
        (DEG, "DEG bracket"),
        (HINT, "hint bracket"),
        (FIRSTK, "first-k bracket"),
        (ESC_GUARD, "guard escape"),
        (ESC_TRASH, "trash-bin escape"),
        (WHOLE, "whole crossing bin"),
        (RANK, "rank refine"),
        (NARROW, "narrowing refine"),
    ] {
        assert!(seen & bit != 0, "no row took the {name} path ({seen:#x})");
    }
}

/// Each (entry id, n, k) forced on an adversarial batch (n capped at the
/// entry's capacity), with `extra_words` of dynamic shared memory beyond the
/// entry's, run in both emit forms by `emu_check`.
fn check_forced_shapes(
    exe: &Path,
    shapes: &[(u32, usize, usize)],
    extra_words: bool,
    label: &str,
    seed: u64,
) -> u32 {
    let mut seen = 0u32;
    for &(id, n, k) in shapes {
        let e = REG_ENTRIES[id as usize];
        let n = n.min(e.capacity());
        let b = adversarial_batch(n, k, id as usize, seed + id as u64);
        let mut launch = RegEmu::forced(id, &b, b.rows);
        if extra_words {
            launch.extra_words = k;
        }
        for bits in emu_check(
            exe,
            &b,
            &launch,
            &format!("{label} {} n={n} k={k}", e.name()),
        ) {
            seen |= bits;
        }
    }
    seen
}

/// (entry id, n, k): every entry of REG_ENTRIES once at least, staged by
/// `SS_REG_STAGE_OUT` 1 where k <= NBH (all but 512/2 at k = 2048, NBH 1024).
const EVERY_ENTRY_SHAPES: [(u32, usize, usize); 9] = [
    (0, 2049, 512),
    (1, 2051, 1024),
    (2, 4111, 2048),
    (3, 4111, 2048),
    (4, 16_387, 2048),
    (5, 8_195, 1024),
    (5, 8_207, 2048),
    (6, 4099, 512),
    (7, 8_195, 1024),
];

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn a_one_form_build_is_exact_whatever_the_cur_word_says() {
    // emu_check runs each launch with cur = 1 and cur = 0; in a slots-only
    // build both take the slots emit, and both must be exact.
    let Some(exe) = slots_only_emulator() else {
        return;
    };
    for id in 0..REG_ENTRIES.len() as u32 {
        assert!(
            EVERY_ENTRY_SHAPES.iter().any(|s| s.0 == id),
            "entry {id} not covered"
        );
    }
    check_forced_shapes(exe, &EVERY_ENTRY_SHAPES, false, "slots-only", 4242);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn staging_in_extra_words_is_exact_for_any_k() {
    // Mode 2 stages every slots launch in k words after ck | ci, k above or
    // below NBH alike (the host builds it only for k > NBH).
    let Some(exe) = stage_extra_emulator() else {
        return;
    };
    let shapes = [
        (3u32, 4111usize, 2048usize),
        (3, 4099, 1024),
        (0, 1027, 1024),
        (5, 8_207, 2048),
    ];
    check_forced_shapes(exe, &shapes, true, "stage-extra", 777);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_knob_slots_emits_are_exact_in_every_staging() {
    let mut seen = 0u32;
    for (mask, staged) in [0u32, 2]
        .into_iter()
        .flat_map(|m| [0u32, 1, 2].map(|st| (m, st)))
    {
        let Some(exe) = slots_emulator(mask, staged) else {
            return;
        };
        let label = format!("slots mask {mask} staged {staged}");
        let seed = 5151 + 3 * mask as u64 + staged as u64;
        seen |= check_forced_shapes(exe, &EVERY_ENTRY_SHAPES, staged == 2, &label, seed);
    }
    // The crossing bin whole to the output, and as candidates for both refines.
    for (bit, name) in [
        (WHOLE, "whole crossing bin"),
        (RANK, "rank refine"),
        (NARROW, "narrowing refine"),
    ] {
        assert!(seen & bit != 0, "no row took the {name} path ({seen:#x})");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn hint_free_mode_and_varlen_rows_are_exact() {
    let Some(exe) = emulator() else { return };
    let k = 512;
    let lens = [
        0usize,
        1,
        3,
        k - 1,
        k,
        k + 1,
        k + 3,
        1500,
        2113,
        2114,
        3001,
        4099,
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let generators = row_generators();
    let rows: Vec<Vec<f32>> = lens
        .iter()
        .enumerate()
        .map(|(r, &n)| (generators[r % generators.len()].generate)(&mut rng as &mut dyn RngCore, n))
        .collect();
    let hints: Vec<Vec<i32>> = rows
        .iter()
        .enumerate()
        .map(|(r, row)| hints_for(row, k, r, &mut rng))
        .collect();
    let b = batch(&rows, &hints, k);
    let mut seen = 0;
    for use_hints in [1, 0] {
        // A wide batch of n_max 4099, k = 512, through the regimg entry (the
        // B200 route's pick; the H200 route takes reg 1024/1 there).
        let img = REG_ENTRIES.iter().position(|e| e.img).unwrap() as u32;
        let mut launch = RegEmu::forced(img, &b, b.rows);
        launch.args.use_hints = use_hints;
        for bits in emu_check(exe, &b, &launch, &format!("varlen hints={use_hints}")) {
            seen |= bits;
        }
        if use_hints == 0 {
            assert!(seen & FIRSTK != 0);
        }
    }
    assert!(
        seen & SHORT != 0 && seen & DEG != 0 && seen & DROP != 0,
        "{seen:#x}"
    );
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn rows_a_few_past_k_drop_their_smallest_in_every_entry() {
    // k < n <= k + REG_DROP_MAX: all but the n - k smallest, in every entry that
    // compiles the path, on the adversarial rows (ties at the drop line,
    // -inf tails, NaN, extremes, all -inf); one value more takes the chain.
    let Some(exe) = emulator() else { return };
    let mut dropped = 0;
    for (id, e) in REG_ENTRIES.iter().enumerate() {
        for (j, k) in [512usize, 1024, 2048].into_iter().enumerate() {
            if k + REG_DROP_MAX + 1 > e.capacity() {
                continue;
            }
            for d in [1, 3, REG_DROP_MAX, REG_DROP_MAX + 1] {
                let n = k + d;
                let b = adversarial_batch(n, k, j + d, 7000 + 97 * id as u64 + d as u64);
                let launch = RegEmu::forced(id as u32, &b, b.rows);
                let label = format!("{} n={n} k={k}", e.name());
                for bits in emu_check(exe, &b, &launch, &label) {
                    let expected = d <= REG_DROP_MAX && e.drops_few();
                    assert_eq!(bits & DROP != 0, expected, "{label}: path bits {bits:#x}");
                    dropped += usize::from(expected);
                }
            }
        }
    }
    assert!(dropped > 0);
}

/// `count` rows of k + 1 to `cap` values: one of each certify generator,
/// then special rows (ties, infinities, flat runs) for the rest.
fn mixed_rows(rng: &mut ChaCha8Rng, cap: usize, k: usize, count: usize) -> Vec<Vec<f32>> {
    let generators = row_generators();
    (0..count)
        .map(|r| {
            let n = rng.random_range(k + 1..=cap);
            if r < generators.len() {
                (generators[r].generate)(rng as &mut dyn RngCore, n)
            } else {
                let specials = special_rows(rng, n, k);
                specials[r % specials.len()].1.clone()
            }
        })
        .collect()
}

/// Hints for each row, the hint mode cycling with the row and `round`.
fn cycled_hints(rows: &[Vec<f32>], k: usize, round: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<i32>> {
    rows.iter()
        .enumerate()
        .map(|(r, row)| hints_for(row, k, r + round, rng))
        .collect()
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn tiny_capacities_force_every_escape_and_stay_exact() {
    let Some(exe) = emulator() else { return };
    tiny_capacities(exe);
}

/// Small CTAs (64/128 threads), CMP and QC far below upstream's, random
/// k: crossing bins above CMP, rank vs narrowing, rows longer than the
/// register capacity (through a per-row n the plan never makes).
fn tiny_capacities(exe: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let mut seen = 0u32;
    for &(id, blk, vpt, _) in &SMALL {
        for round in 0..6 {
            let cap = reg_capacity(blk, vpt);
            let k = [1usize, 7, 16, 37, 100, 200][round];
            if k + 1 >= cap {
                continue;
            }
            let rows = mixed_rows(&mut rng, cap, k, 14);
            let hints = cycled_hints(&rows, k, round, &mut rng);
            let b = batch(&rows, &hints, k);
            for (cmp, qc) in [(4u32, 0u32), (40, 8), (4096, 4096), (2, 1000)] {
                let mut launch = RegEmu::forced(id, &b, b.rows);
                launch.args.cmp = cmp;
                launch.args.qc = qc;
                launch.args.use_hints = (round % 2) as u32;
                let label = format!("small {id} k={k} cmp={cmp} qc={qc} #{round}");
                for bits in emu_check(exe, &b, &launch, &label) {
                    seen |= bits;
                }
            }
        }
    }
    // Rows longer than the CTA's register capacity: exact from global memory.
    let long = row_generators()[0].generate;
    let rows: Vec<Vec<f32>> = (0..3)
        .map(|i| long(&mut rng as &mut dyn RngCore, 900 + i * 333))
        .collect();
    let b = batch(&rows, &[], 50);
    let launch = RegEmu::forced(16, &b, b.rows);
    assert!(b.n_max() > launch.capacity());
    for bits in emu_check(exe, &b, &launch, "oversize rows") {
        assert_eq!(bits, OVERSIZE, "{bits:#x}");
    }
    for (bit, name) in [
        (ESC_CMP, "CMP escape"),
        (RANK, "rank refine"),
        (NARROW, "narrowing refine"),
        (WHOLE, "whole bin"),
    ] {
        assert!(seen & bit != 0, "no row took the {name} path ({seen:#x})");
    }
}

/// `SS_REG_KEEP_BIN` (issue 48): the histogram keeps each value's bin in its
/// register and the emit reads bins; a crossing candidate's key and the late
/// escape's row are read again from the row in global memory (1, production);
/// 0 computes bins again (512/1's launches at B ≤ SMs). `SS_REG_MASK_PACKED`
/// (1, production) keeps two bins per register for the mask emit; 0 one. Mode 0 with the
/// load order of [`emulator`] (which builds mode 1 for every other test), and
/// the packed classify in a slots-only build, on the adversarial rows of every
/// entry and the tiny capacities that force every escape; then the modes in
/// slots-only builds in each staging and mask setting on every entry's shape.
/// The model's path bits must not move.
#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_kept_bin_modes_are_exact_on_every_path() {
    let builds: [&[(&str, &str)]; 2] = [
        &[(KEEP_BIN_DEFINE, "0"), (ROW_AHEAD_DEFINE, "1")],
        &[
            (KEEP_BIN_DEFINE, "1"),
            (MASK_PACKED_DEFINE, "1"),
            (EMIT_FORM_DEFINE, "0"),
        ],
    ];
    for build in builds {
        let defines: Vec<String> = build
            .iter()
            .chain(&[(HINTS_FIRST_DEFINE, "1")])
            .map(|(name, value)| format!("-D{name}={value}"))
            .collect();
        let Some(exe) = build_emulator(&defines) else {
            return;
        };
        adversarial_rows_in_every_entry(&exe);
        tiny_capacities(&exe);
    }
    for (mode, packed) in [(0u32, 0u32), (1, 0), (1, 1)] {
        // (The packed builds: the mask emits in each staging, not the two-visit one.)
        let settings: &[(u32, u32)] = if packed == 1 {
            &[(1, 1), (2, 2), (1, 0)]
        } else {
            &[(1, 1), (0, 0), (2, 2)]
        };
        for &(mask, staged) in settings {
            let Some(exe) = build_emulator(&[
                format!("-D{KEEP_BIN_DEFINE}={mode}"),
                format!("-D{MASK_PACKED_DEFINE}={packed}"),
                format!("-D{EMIT_MASK_DEFINE}={mask}"),
                format!("-D{EMIT_FORM_DEFINE}=0"),
                format!("-D{STAGE_OUT_DEFINE}={staged}"),
            ]) else {
                return;
            };
            let label = format!("keep {mode} packed {packed} slots mask {mask} staged {staged}");
            check_forced_shapes(
                &exe,
                &EVERY_ENTRY_SHAPES,
                staged == 2,
                &label,
                7070 + mask as u64,
            );
        }
    }
}

/// `SS_NEXT_WAVE_ONE` (issue 48): production sends the next wave's row as one
/// request from thread 0 on the one-CTA-per-SM entries ([`emulator`]'s build;
/// the other entries send shares); 0 sends one share per warp everywhere,
/// built here. The slots runs of [`emu_check`] prefetch the next row (`ahead`
/// 1), and the emulator bounds-checks both ends of every request against the
/// valid float4 prefix of that row in every build (a request one float4
/// longer fails); the output must stay exact on the adversarial rows of every
/// entry.
#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_per_warp_next_wave_prefetch_stays_in_the_row() {
    let Some(exe) = build_emulator(&main_build_defines(&[&format!(
        "-D{NEXT_WAVE_ONE_DEFINE}=0"
    )])) else {
        return;
    };
    adversarial_rows_in_every_entry(&exe);
}

/// `SS_REG_RANK_WARP` (issue 48, tuning): the rank refine of a small crossing
/// bin with one warp per candidate and a ballot per 32 others, in every entry
/// but 1024/1 ([`emulator`]'s build with the knob). The adversarial rows of every entry must take the
/// rank refine (`adversarial_rows_in_every_entry` asserts every path), and
/// the tiny capacities run it with `qc` 4,096, so bins of many candidates
/// (several ballots per candidate, several candidates per warp, ties broken
/// by slot) must stay exact.
#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_warp_rank_refine_is_exact_on_every_path() {
    let Some(exe) = build_emulator(&main_build_defines(&["-DSS_REG_RANK_WARP=1"])) else {
        return;
    };
    adversarial_rows_in_every_entry(&exe);
    tiny_capacities(&exe);
}

/// The phases a reg row passes, from its path-trace bits.
fn expected_reg_marks(bits: u32) -> Vec<&'static str> {
    if bits & (SHORT | DROP | OVERSIZE) != 0 {
        vec!["length", "finish"]
    } else if bits & ESC_GUARD != 0 {
        vec!["length", "threshold", "finish"]
    } else if bits & (ESC_TRASH | ESC_CMP) != 0 {
        vec!["length", "threshold", "pass", "verify", "finish"]
    } else {
        vec!["length", "threshold", "pass", "verify", "emit", "finish"]
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_phase_probe_marks_every_path_in_order() {
    // The probe build stays exact and on the model's path; every row's CTA
    // passes the marks its path implies, in order, with one histogram pass
    // where it builds a histogram.
    let Some(exe) = emulator_probed() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let mut seen = 0u32;
    for &(id, blk, vpt, _) in &SMALL {
        let cap = reg_capacity(blk, vpt);
        for (round, k) in [7usize, 37, 100].into_iter().enumerate() {
            let mut rows = mixed_rows(&mut rng, cap, k, 10);
            rows.push(vec![1.0; k]); // short
            rows.push((0..k + 2).map(|i| i as f32).collect()); // drop-few
            rows.push((0..cap + 9).map(|i| i as f32).collect()); // oversize
            let hints = cycled_hints(&rows, k, round, &mut rng);
            let b = batch(&rows, &hints, k);
            for (cmp, qc) in [(4u32, 0u32), (4096, 4096)] {
                let mut launch = RegEmu::forced(id, &b, b.rows);
                launch.args.cmp = cmp;
                launch.args.qc = qc;
                launch.args.row_guess = b.n_max() as u32;
                let label = format!("probe small {id} k={k} cmp={cmp}");
                let bits = emu_check_form(exe, &b, &launch, &label);
                let (summary, ctas) = crate::support::ss::last_probed_launch(&label);
                assert_eq!(summary.ctas, b.rows, "{label}: a stamp row per row");
                for (r, cta) in ctas.iter().enumerate() {
                    assert_eq!(cta.cta, r, "{label}");
                    assert_eq!(
                        cta.marks,
                        expected_reg_marks(bits[r]),
                        "{label} row {r} ({:#x})",
                        bits[r]
                    );
                    assert_eq!(
                        cta.passes,
                        cta.marks.contains(&"pass") as u64,
                        "{label} row {r}"
                    );
                    seen |= bits[r];
                }
            }
        }
    }
    for (bit, name) in [
        (SHORT, "short"),
        (DROP, "drop-few"),
        (OVERSIZE, "oversize"),
        (ESC_CMP, "CMP escape"),
        (WHOLE | RANK | NARROW, "emit"),
    ] {
        assert!(seen & bit != 0, "no row took the {name} path ({seen:#x})");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn random_rows_match_the_reference() {
    // Randomized: lengths, k, value distributions (with heavy duplication)
    // and hints, on the real entries, checked against the exact reference.
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    for trial in 0..5 {
        let id = trial % REG_ENTRIES.len();
        let e = REG_ENTRIES[id];
        let cap = e.capacity();
        let k = [512usize, 1024, 2048]
            .into_iter()
            .filter(|&k| k < cap)
            .nth(trial % 2)
            .unwrap_or(512);
        let rows: Vec<Vec<f32>> = (0..4)
            .map(|_| {
                let n = rng.random_range(k + 1..=cap);
                let levels = rng.random_range(1..2000);
                (0..n)
                    .map(|_| rng.random_range(0..levels) as f32 * 0.25 - 100.0)
                    .collect()
            })
            .collect();
        let hints: Vec<Vec<i32>> = rows
            .iter()
            .enumerate()
            .map(|(r, row)| hints_for(row, k, r + trial, &mut rng))
            .collect();
        let b = batch(&rows, &hints, k);
        emu_check(
            exe,
            &b,
            &RegEmu::forced(id as u32, &b, b.rows),
            &format!("random {} k={k} #{trial}", e.name()),
        );
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_hazard_rows_are_exact() {
    // Randomized rounds (crate::support::ss::soak_seeds: a few on CI, any number with
    // GVR_EMU_SOAK): certify generators with hazards laid over them, every
    // hint mode, lengths from empty to past the register capacity, on a
    // compiled entry (k of the arm) or a small stress CTA (any k, tiny
    // CMP / QC); both emit forms exact and on the model's path.
    let Some(exe) = emulator() else { return };
    for seed in crate::support::ss::soak_seeds(4, 0x50A4_0002) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let small = rng.random_bool(0.5);
        let id = if small {
            SMALL[rng.random_range(0..SMALL.len())].0
        } else {
            rng.random_range(0..REG_ENTRIES.len()) as u32
        };
        let cap = if small {
            let s = SMALL.iter().find(|s| s.0 == id).unwrap();
            reg_capacity(s.1, s.2)
        } else {
            REG_ENTRIES[id as usize].capacity()
        };
        let k = if small {
            rng.random_range(1..cap)
        } else {
            let ks: Vec<usize> = [512usize, 1024, 2048]
                .into_iter()
                .filter(|&k| k < cap)
                .collect();
            ks[rng.random_range(0..ks.len())]
        };
        let lengths: Vec<usize> = (0..3)
            .map(|_| match rng.random_range(0..8) {
                0 => rng.random_range(0..=k),
                1 => cap + rng.random_range(1..=cap / 8),
                _ => rng.random_range(k + 1..=cap),
            })
            .collect();
        let (b, labels) = crate::support::ss::soak_batch(&mut rng, k, &lengths, false);
        let mut launch = RegEmu::forced(id, &b, b.rows);
        launch.args.use_hints = rng.random_range(0..2);
        if small {
            launch.args.cmp = [2u32, 4, 40, 4096][rng.random_range(0..4)];
            launch.args.qc = [0u32, 8, 1000, 4096][rng.random_range(0..4)];
        }
        let a = &launch.args;
        let label = format!(
            "soak seed {seed}: entry {id} k={k} cmp={} qc={} hints={} rows {labels:?}",
            a.cmp, a.qc, a.use_hints
        );
        emu_check(exe, &b, &launch, &label);
    }
}

#[test]
#[cfg_attr(
    any(no_gxx, no_nvrtc),
    ignore = "needs g++ and libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; LD_LIBRARY_PATH)"
)]
fn ss_reg_entries_compile_without_spills() {
    let declared = declared_entries(SS_REG.code);
    let mut names: Vec<String> = REG_ENTRIES.iter().map(|e| e.name()).collect();
    names.sort();
    let mut got = declared.clone();
    got.sort();
    assert_eq!(got, names, "declared entries vs REG_ENTRIES");
    if !crate::support::nvrtc::nvrtc_or_skip() {
        return;
    }
    // Every build the host loads: the next-wave prefetch in or out, times
    // both emit forms or one, times the hint indices and the row ahead of the
    // row length or not (the row alone ahead in the batch-uniform entry, the
    // hints alone in varlen launches: the last build); then slots-only builds
    // with the staged emit (in the histogram, in the extra words). The last
    // fifteen add knobs (the two-visit slots, then the mask
    // slots in the 32-register 512/2 too, in each staging and both forms:
    // the host builds 512/2's slots launches so, `reg_mask_slots_32`; then
    // the bins not kept in three builds: 512/1's launches at B <= SMs; then
    // the unpacked mask classify, `SS_REG_MASK_PACKED` 0, in each staging; then
    // the per-warp next-wave prefetch, `SS_NEXT_WAVE_ONE` 0; then the warp rank
    // refine, `SS_REG_RANK_WARP`).
    // Every other build keeps the bins as the plan does (`SS_REG_KEEP_BIN` 1).
    let knobs = reg_macros(&["SS_REG_HINT_NC=1", "SS_REG_EMIT_MASK=0"]);
    let wide_mask = reg_macros(&["SS_REG_EMIT_MASK=2"]);
    let keep0 = reg_macros(&["SS_REG_KEEP_BIN=0"]);
    let unpacked = reg_macros(&[&format!("{MASK_PACKED_DEFINE}=0")]);
    let shares = reg_macros(&[&format!("{NEXT_WAVE_ONE_DEFINE}=0")]);
    let rank_warp = reg_macros(&["SS_REG_RANK_WARP=1"]);
    for (prefetch, form, (first, row_ahead), staged, tuned) in [0u32, 1]
        .into_iter()
        .flat_map(|p| [(p, 2u32), (p, 1), (p, 0)])
        .flat_map(|(p, f)| [(0u32, 0u32), (0, 1), (1, 1)].map(|a| (p, f, a, 0u32, false)))
        .chain([
            (0, 0, (0, 1), 1, false),
            (0, 0, (0, 1), 2, false),
            (1, 0, (1, 0), 1, true),
            (0, 0, (0, 1), 2, true),
            (0, 0, (0, 0), 0, true),
        ])
        .map(|(p, f, a, st, tuned)| (p, f, a, st, tuned.then_some(&knobs)))
        .chain([
            (0, 0, (0, 1), 1, Some(&wide_mask)),
            (0, 0, (0, 1), 2, Some(&wide_mask)),
            (1, 0, (1, 0), 0, Some(&wide_mask)),
            (0, 2, (0, 0), 0, Some(&wide_mask)),
            (0, 2, (0, 1), 0, Some(&keep0)),
            (0, 1, (0, 1), 0, Some(&keep0)),
            (0, 0, (0, 1), 0, Some(&keep0)),
            (0, 0, (0, 1), 0, Some(&unpacked)),
            (1, 0, (1, 0), 1, Some(&unpacked)),
            (0, 0, (0, 1), 2, Some(&unpacked)),
            (1, 2, (1, 1), 0, Some(&shares)),
            (0, 0, (0, 1), 2, Some(&rank_warp)),
        ])
    {
        let mut defines = vec![
            (NEXT_WAVE_DEFINE, prefetch.to_string()),
            (EMIT_FORM_DEFINE, form.to_string()),
            (HINTS_FIRST_DEFINE, first.to_string()),
            (ROW_AHEAD_DEFINE, row_ahead.to_string()),
            (STAGE_OUT_DEFINE, staged.to_string()),
        ];
        // The plan keeps bins unless the build's knobs say otherwise.
        if !tuned.is_some_and(|knobs| knobs.iter().any(|(n, _)| *n == KEEP_BIN_DEFINE)) {
            defines.push((KEEP_BIN_DEFINE, "1".to_string()));
        }
        if let Some(knobs) = tuned {
            defines.extend(knobs.iter().cloned());
        }
        let value = format!(
            "{prefetch}, {EMIT_FORM_DEFINE}={form}, {HINTS_FIRST_DEFINE}={first}, {ROW_AHEAD_DEFINE}={row_ahead}, {STAGE_OUT_DEFINE}={staged}, knobs {tuned:?}"
        );
        let report = compile_report(&SS_REG, &defines, DEFAULT_ARCH).expect("ss_reg.cu compiles");
        // (Shown with a failure below: the build it happened in.)
        println!("build: {NEXT_WAVE_DEFINE}={value}");
        for e in REG_ENTRIES {
            let info = crate::support::nvrtc::assert_entry_fits(
                &report,
                &e.name(),
                e.blk,
                STATIC_SMEM_BYTES as usize,
            );
            // MINB CTAs of BLK threads must fit the 64K-register file too.
            assert!(
                info.registers as u64 * e.blk as u64 * e.minb as u64 <= 65_536,
                "{} ({NEXT_WAVE_DEFINE}={value}): {} registers for MINB {}",
                e.name(),
                info.registers,
                e.minb
            );
        }
        // Out-of-line device functions (ss_narrow_emit) report their own spills.
        crate::support::nvrtc::assert_no_spill_in_log(
            &report.log,
            &format!("ss_reg.cu ({NEXT_WAVE_DEFINE}={value})"),
        );
    }
}

#[test]
#[ignore = "diagnostic: prints the ptxas log of ss_reg.cu"]
fn dump_ss_reg_ptxas_log() {
    // SS_REG_DUMP_DEFINES="SS_REG_EMIT_FORM=0 SS_REG_STAGE_OUT=2": that build's log.
    let spec = std::env::var("SS_REG_DUMP_DEFINES").unwrap_or_default();
    let defines: Vec<(&str, String)> = spec
        .split_whitespace()
        .filter_map(|d| d.split_once('='))
        .map(|(name, value)| (name, value.to_string()))
        .collect();
    let report = compile_report(&SS_REG, &defines, DEFAULT_ARCH).expect("compiles");
    println!("{}", report.log);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn production_varlen_calls_are_exact_in_the_kernel_source() {
    // The varlen entry on the register family: kv_lens per
    // request in the length array, next_n rows per request, compress ratio,
    // request-level hints or hint-free; zero-window, short, DEG and
    // bracketed rows in one launch. Rows are checked exact (the CPU model
    // takes per-row hints, so path bits are not compared here).
    let Some(exe) = emulator() else { return };
    let k = 512;
    for (next_n, cr) in [(1u32, 1u32), (2, 1), (3, 4), (4, 4)] {
        // The DEG (whole-row bracket) edge is at 4k + 64.
        let widths = [
            k as u32 / 2,
            k as u32,
            k as u32 + 1,
            4 * k as u32 + 64,
            4 * k as u32 + 65,
            16_000,
        ];
        let kv_lens = crate::support::ss::varlen_kv(next_n, cr, &widths);
        let slice =
            crate::support::ss::varlen_emu_case(k, next_n, cr, &kv_lens, 909 + next_n as u64);
        // Also on a column-sliced arena view (the upstream checklist's sliced-arena case): the launch planned
        // for the slice, the arena's 256-rounded stride, foreign columns +3e38.
        let arena = slice.in_arena();
        for (view, case) in [("slice", &slice), ("arena", &arena)] {
            let (check, input) = (&case.check, &case.input);
            for use_hints in [1u32, 0] {
                let mut launch = RegEmu::planned(&slice.check, check.rows);
                launch.args.npad = input.npad as u32;
                launch.args.use_hints = use_hints;
                launch.args.next_n = next_n;
                launch.args.cr_shift = cr.trailing_zeros();
                launch.args.cur = use_hints; // both emit forms, alternating with the hint mode
                let label = format!(
                    "varlen {view} next_n {next_n} cr {cr} hints {use_hints} cur {}",
                    launch.args.cur
                );
                emu_check_varlen(exe, case, &launch, &label);
            }
        }
    }
}

/// Run a varlen launch (its next_n / cr_shift already set) on `case.input`
/// and check every row of `case.check` (rows with their own lengths).
fn emu_check_varlen(
    exe: &Path,
    case: &crate::support::ss::VarlenEmuCase,
    launch: &RegEmu,
    label: &str,
) {
    let (check, input) = (&case.check, &case.input);
    let header = [
        0x55EE_0002u32,
        launch.entry,
        input.rows as u32,
        launch.block,
        launch.dyn_smem(),
        input.npad as u32,
        input.k as u32,
        launch.rows as u32,
    ];
    let words: Vec<u32> = header.iter().chain(&launch.args.words()).copied().collect();
    let (out, _) = crate::support::ss::run_emulator(exe, label, &words, input);
    let k = check.k;
    for r in 0..check.rows {
        check_row_any(
            check,
            r,
            &out[r * k..(r + 1) * k],
            &format!("{label} row {r}"),
        );
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_varlen_calls_are_exact() {
    // Randomized production varlen calls (certify's varlen soak batches,
    // 1–8 requests, last rows up to 17,000 wide) on the planned reg launch,
    // request-level hints or hint-free, both emit forms.
    let Some(exe) = emulator() else { return };
    let limits = VarlenLimits {
        requests: 8,
        width: 17_000,
    };
    for (case, name) in
        crate::support::ss::varlen_soak_rounds(0x50A4_0012, [512, 1024, 2048], limits)
    {
        let v = case.check.varlen.clone().expect("varlen");
        for use_hints in [1u32, 0] {
            let mut launch = RegEmu::planned(&case.check, case.check.rows);
            launch.args.use_hints = use_hints;
            launch.args.next_n = v.next_n;
            launch.args.cr_shift = v.compress_ratio.trailing_zeros();
            launch.args.cur = use_hints;
            let label = format!("{name} hints {use_hints} cur {use_hints}");
            emu_check_varlen(exe, &case, &launch, &label);
        }
    }
}

/// The kernel macros of reg.cu that `--knob` assignments set.
fn reg_macros(knobs: &[&str]) -> Vec<(&'static str, String)> {
    let mut t = gvr_bench::topk::Tuning::default();
    for k in knobs {
        t.set_assignment(k).expect("a register knob");
    }
    t.macros_for(&SS_REG)
}
