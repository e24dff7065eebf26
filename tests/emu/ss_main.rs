//! Runs the real `kernels/ss/main.cu` source on the CPU and checks it exact.
//!
//! The kernel is compiled with g++ against `tests/ss_emu/common.cuh`, a host
//! emulation of the CUDA subset it uses (every CUDA thread a fiber, switched
//! at barriers and warp collectives; loads bounds-checked so a read past a
//! row's n, outside the redirect rule, aborts; shared memory pre-filled with
//! garbage; SPLIT parts of a row run in a shuffled order; the workspace must
//! come back zeroed). This executes the kernel's own control flow, slot
//! arithmetic and fallbacks, not a transcription of them. It does not model
//! the memory model (fences, L1 staleness) or true thread interleaving
//! between barriers; the GPU tests in `tests/gpu/ss_main.rs` cover those on the H200.
//!
//! Skips (passes with a note) when g++ is not installed.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::ss::{batch, model_row, path_cases, planned, spread};
use gvr_bench::arms::Shape;
use gvr_bench::capture::format::npad_for;
use gvr_bench::exact::check_row;
use gvr_bench::exact::soak::VarlenLimits;
use gvr_bench::exact::{check_batch, row_generators};
use gvr_bench::gpu::sources::SS_MAIN;
use gvr_bench::grid::Batch;
use gvr_bench::topk::cpu::{select_row, PathCounts};
use gvr_bench::topk::families::main::{self, MainLaunch, ENTRY_SHAPES};
use gvr_bench::topk::route::DeviceProfile;
use gvr_bench::topk::route::MainParams;
use gvr_bench::topk::Tuning;

const DYN_SMEM_DECL: &str = "extern __shared__ __align__(16) u64 ss_dyn[];";
/// The kernel's static shared memory: one object per CTA, which the
/// concurrent-parts emulator must keep apart.
const STATIC_SMEM_DECL: &str = "__shared__ __align__(16) SsShared s;";

/// The emulator of the kernel as the `ss` / `ss-main` arms build it.
fn emulator() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| build_emulator(&[])).as_deref()
}

/// The emulator of the phase-probe build (`gvr-bench phases`).
fn emulator_probed() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_emulator(&["-DSS_PHASE_PROBE=1".to_string()]))
        .as_deref()
}

/// Build the emulator with extra g++ `-D` flags (once per source version and
/// flags: cached under cargo's test temp dir, keyed by a hash of both);
/// `None` if g++ is missing.
fn build_emulator(defines: &[String]) -> Option<PathBuf> {
    crate::support::ss::dyn_smem_kernel_emulator(
        "ss-emu",
        ("ss_main.cu", SS_MAIN.code),
        DYN_SMEM_DECL,
        "u64* ss_dyn;",
        ("main.cpp", include_str!("../ss_emu/main.cpp")),
        defines,
    )
}

/// The emulator with the parts of a SPLIT row scheduled together
/// (`EMU_CONCURRENT_PARTS`, main.cpp) and extra g++ `-D` flags: each part's
/// shared memory (the kernel's two declarations) lives in its own region.
fn build_concurrent_emulator(defines: &[String]) -> Option<PathBuf> {
    if !crate::support::ss::gxx_available("ss_main.cu") {
        return None;
    }
    for decl in [DYN_SMEM_DECL, STATIC_SMEM_DECL] {
        assert_eq!(
            SS_MAIN.code.matches(decl).count(),
            1,
            "ss_main.cu: `{decl}` moved"
        );
    }
    let code = SS_MAIN
        .code
        .replace(DYN_SMEM_DECL, "#define ss_dyn emu_cta_dyn()")
        .replace(
            STATIC_SMEM_DECL,
            "SsShared& s = *emu_cta_static<SsShared>();",
        );
    let mut flags = vec!["-DEMU_CONCURRENT_PARTS".to_string()];
    flags.extend_from_slice(defines);
    Some(crate::support::ss::kernel_emulator(
        "ss-emu-parts",
        true,
        ("ss_main.cu", code.as_str()),
        ("main.cpp", include_str!("../ss_emu/main.cpp")),
        &flags,
    ))
}

/// Entry id of a (BLK, U, SPLIT) shape in main.cpp's table.
fn entry_id(plan: &MainLaunch) -> u32 {
    let key = (plan.params.blk, plan.params.u, plan.params.split);
    ENTRY_SHAPES
        .iter()
        .position(|&s| s == key)
        .expect("planned entry is compiled") as u32
}

/// One emulated launch: everything the kernel receives.
#[derive(Clone)]
struct EmuLaunch {
    entry: u32,
    grid_x: u32,
    block: u32,
    args: main::SsMainArgs,
    /// Rows actually emulated (a prefix of the batch).
    rows: usize,
}

impl EmuLaunch {
    /// The small-CTA stress entry (BLK 64, U 2) with one CTA per row.
    fn use_small_non_split_cta(&mut self) {
        self.entry = 10;
        self.grid_x = 1;
        self.block = 64;
        self.args.r = 1;
        self.args.scap = 2048;
        self.args.cmp = 256;
    }

    fn planned(b: &Batch, rows: usize) -> EmuLaunch {
        EmuLaunch::planned_on(b, rows, None)
    }

    /// [`EmuLaunch::planned`] with the `main.blk` knob's block applied.
    fn planned_on(b: &Batch, rows: usize, blk: Option<u32>) -> EmuLaunch {
        let plan = main::plan(
            &Shape::of(b),
            &DeviceProfile::h200(),
            None,
            &Tuning::default(),
        )
        .expect("plan");
        let plan = main::with_main_blk(plan, blk);
        EmuLaunch {
            entry: entry_id(&plan),
            grid_x: plan.grid.0,
            block: plan.block,
            args: plan.args,
            rows,
        }
    }
}

/// Run the launch on the emulator; check the emulated rows exact; return
/// each emulated row's path-trace bits.
fn emu_check(exe: &Path, b: &Batch, launch: &EmuLaunch, label: &str) -> Vec<u32> {
    emu_check_as(exe, b, b, launch, label)
}

/// [`emu_check`] with the kernel's inputs in `input` (for a varlen launch:
/// kv_lens in the length array, request-level hints) and the rows checked
/// as `check` (the same logits with each row's own length).
fn emu_check_as(
    exe: &Path,
    input: &Batch,
    check: &Batch,
    launch: &EmuLaunch,
    label: &str,
) -> Vec<u32> {
    let b = input;
    let words = launch_words(b, launch);
    let (out, trace) = crate::support::ss::run_emulator(exe, label, &words, b);
    let (out, trace) = (out.as_slice(), trace.as_slice());
    // Check the emulated prefix as a batch of its own.
    let rows = launch.rows;
    let prefix = Batch {
        rows,
        npad: check.npad,
        k: check.k,
        logits: check.logits[..rows * check.npad].to_vec(),
        n: check.n[..rows].to_vec(),
        hints: check.hints[..rows * check.k].to_vec(),
        varlen: None,
    };
    let status = check_batch(&prefix, &out[..rows * b.k]);
    assert!(status.is_exact(), "{label}: {status:?}");
    trace[..rows].iter().map(|&t| t as u32).collect()
}

/// The emulator's input header and launch scalars of `launch` over `b`.
fn launch_words(b: &Batch, launch: &EmuLaunch) -> Vec<u32> {
    let a = &launch.args;
    let dyn_smem = (a.scap as usize + 4 + a.cmp as usize + 1) * 8;
    let header = [
        0x55EE_0001u32,
        launch.entry,
        launch.grid_x,
        b.rows as u32,
        launch.block,
        dyn_smem as u32,
        b.rows as u32,
        b.npad as u32,
        b.k as u32,
        launch.rows as u32,
    ];
    let params = [
        a.n_plan,
        a.npad,
        a.k,
        a.r,
        a.scap,
        a.cmp,
        a.smp,
        a.ss2,
        a.tgt,
        a.tgt2,
        a.q,
        a.aim_base,
        a.amin,
        a.sfac,
        a.small_dense_en,
        a.tsh_en,
        a.next_n,
        a.cr_shift,
        a.floor_coef,
        a.unit_shift,
    ];
    header.iter().chain(&params).copied().collect()
}

/// The kernel's SS_TR_* bits a row must report for the CPU model's path
/// counts of that row (same decisions, same order).
fn expected_trace(c: &PathCounts) -> u32 {
    let bits = [
        (c.unsampled + c.degenerate_sample > 0, 1),
        (c.retries > 0, 2),
        (c.whole_row_fallback > 0, 4),
        (c.degen_a > 0, 8),
        (c.degen_b_overflow > 0, 16),
        (c.staging_resweep > 0, 32),
        (c.whole_bin > 0, 64),
        (c.rank_refine > 0, 128),
        (c.narrow_refine > 0, 256),
        (c.split_part_resweep > 0, 512),
        (c.split_slab_overflow > 0, 1024),
    ];
    bits.iter().filter(|(on, _)| *on).map(|(_, bit)| bit).sum()
}

/// Model row `r` with `params` (exactness checked) → its path counts.
fn model(b: &Batch, r: usize, params: &MainParams) -> PathCounts {
    let mut counts = PathCounts::default();
    let out = select_row(b.row(r), b.hints(r), b.k, params, &mut counts);
    if let Err(reason) = check_row(b.row(r), b.k, &out) {
        panic!("model inexact on row {r}: {reason}; {counts:?}");
    }
    counts
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn every_constructed_path_is_exact_in_the_kernel_source() {
    let Some(exe) = emulator() else { return };
    for case in path_cases() {
        let counts = model_row(&case.batch, 0);
        assert!((case.expect)(&counts), "{}: {counts:?}", case.label);
    }
    constructed_paths_follow_the_model(exe, "default build");
}

/// Every constructed path on `exe`'s planned launch: exact (emu_check), and
/// the kernel's path bits are the CPU model's.
fn constructed_paths_follow_the_model(exe: &Path, build: &str) {
    for case in path_cases() {
        let counts = model_row(&case.batch, 0);
        let trace = emu_check(
            exe,
            &case.batch,
            &EmuLaunch::planned(&case.batch, 1),
            case.label,
        );
        assert_eq!(
            trace[0],
            expected_trace(&counts),
            "{} ({build}): kernel path bits vs the model's {counts:?}",
            case.label
        );
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_phase_probe_marks_every_path_in_order_and_counts_its_passes() {
    // The probe build on every constructed path: still exact and on the
    // model's path; every probed CTA's marks in order (summarize refuses
    // clocks that run backwards); the pass count is the model's 1 + retries;
    // a SPLIT row has exactly one finisher, the last CTA to leave.
    let Some(exe) = emulator_probed() else { return };
    let mut split_rows = 0;
    for case in path_cases() {
        let b = &case.batch;
        let launch = EmuLaunch::planned(b, 1);
        let counts = model_row(b, 0);
        let trace = emu_check(exe, b, &launch, case.label);
        assert_eq!(
            trace[0],
            expected_trace(&counts),
            "{}: path bits",
            case.label
        );
        let (summary, passed) = crate::support::ss::last_probed_launch(case.label);
        let label = case.label;
        assert_eq!(
            summary.ctas, launch.grid_x as usize,
            "{label}: one stamp row per CTA of row 0"
        );
        assert_eq!(
            summary.grid_ctas,
            Some(launch.grid_x as u64 * b.rows as u64),
            "{label}: CTA 0 records the grid"
        );
        for marks in passed.iter().map(|c| &c.marks) {
            assert_eq!(marks.first(), Some(&"length"), "{label}: {marks:?}");
            assert_eq!(marks.last(), Some(&"finish"), "{label}: {marks:?}");
            if b.n[0] as usize > b.k {
                for phase in ["sample", "threshold", "pass"] {
                    assert!(
                        marks.contains(&phase),
                        "{label}: {phase} missing from {marks:?}"
                    );
                }
            }
        }
        let degen = counts.whole_row_fallback + counts.degen_a + counts.degen_b_overflow > 0;
        let split = launch.grid_x > 1;
        let finisher = if split {
            split_rows += 1;
            let handed: Vec<usize> = (0..passed.len())
                .filter(|&i| passed[i].marks.contains(&"hand-off"))
                .collect();
            assert_eq!(handed.len(), 1, "{label}: one last arriver");
            assert_eq!(summary.passes_max, 1, "{label}: SPLIT parts pass once");
            assert_eq!(
                summary.critical.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
                passed[handed[0]].marks,
                "{label}"
            );
            assert_eq!(
                passed[handed[0]].marks.contains(&"verify"),
                counts.split_slab_overflow == 0,
                "{label}: the finisher verifies unless its slab overflowed"
            );
            &passed[handed[0]].marks
        } else {
            assert_eq!(
                summary.passes_max,
                1 + counts.retries,
                "{label}: passes vs {counts:?}"
            );
            assert!(passed[0].marks.contains(&"verify"), "{label}");
            &passed[0].marks
        };
        assert_eq!(
            finisher.contains(&"emit"),
            !degen,
            "{label}: emit mark vs {counts:?}"
        );
    }
    assert!(split_rows > 0, "the constructed paths include SPLIT rows");
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn a_split_part_resweep_keeps_the_rows_tail() {
    // Part 0 of a SPLIT row owns the n mod 4 tail. When its staging
    // overflows, it re-sweeps its slice into the slab and must re-read the
    // tail too: here the tail holds the row's three largest values and part
    // 0's slice a plateau of ties far above SCAP (the soak found a mutation
    // that dropped it; no fixed row reached that path with the tail on top).
    let Some(exe) = emulator() else { return };
    let k = 512;
    for n in [6_001usize, 6_002, 6_003] {
        let mut row: Vec<f32> = (0..n).map(|i| -((i % 97) as f32) - 10.0).collect();
        row[..n / 3].fill(5.0);
        for x in &mut row[4 * (n / 4)..] {
            *x = 10.0;
        }
        let b = batch(&[row.clone(), row], &[], k);
        let launch = small_cta_launch(&b, (11, 3, 256, 64), n);
        let label = format!("part re-sweep, tail on top, n={n}");
        let trace = emu_check(exe, &b, &launch, &label);
        for bits in trace {
            assert_ne!(bits & 512, 0, "{label}: no part re-swept ({bits:#x})");
        }
    }
}

/// Small-CTA launches `(entry id, R, SCAP, CMP)` of main.cpp's stress table:
/// tiny capacities force staging overflow, crossing bins above CMP and slab
/// hand-offs on ordinary rows; BLK 64 with U = 8 (ids 13, 14) makes every
/// row many tiles long, so the pipelined pass crosses tile boundaries,
/// prefetches ahead and ends in a partial tile plus the n mod 4 tail.
const SMALL_CTA_LAUNCHES: [(u32, u32, u32, u32); 9] = [
    (10, 1, 64, 16),
    (10, 1, 1024, 300),
    (10, 1, 8192, 2048),
    (11, 3, 256, 64),
    (11, 5, 4096, 600),
    (12, 2, 2048, 2048),
    (13, 1, 96, 40),
    (13, 1, 8192, 2048),
    (14, 4, 2048, 512),
];

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn small_ctas_with_tiny_buffers_stay_exact() {
    // Exactness must not depend on SCAP / CMP / BLK, through the real kernel
    // body (64- and 128-thread CTAs).
    let Some(exe) = emulator() else { return };
    small_cta_sweep(exe, &SMALL_CTA_LAUNCHES);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_start_prefetch_variants_stay_exact() {
    // Macro builds (`--knob SS_L2_START=…`): no start prefetch, and two tiles without the SPLIT
    // entries': same sweep, prefetch ranges bounds-checked by the emulator
    // (the default build runs in the tests above).
    for defines in [
        vec!["-DSS_L2_START=0".to_string()],
        vec![
            "-DSS_L2_START=2".to_string(),
            "-DSS_L2_START_SPLIT=0".to_string(),
        ],
    ] {
        let Some(exe) = build_emulator(&defines) else {
            return;
        };
        small_cta_sweep(&exe, &SMALL_CTA_LAUNCHES);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_threshold_trim_variants_stay_exact() {
    // SS_THRESHOLD_TRIM: the threshold phase with its middle barrier (the
    // untrimmed form), and the trimmed threshold phase on the one-CTA
    // entries too.
    for defines in [
        vec!["-DSS_THRESHOLD_TRIM=0".to_string()],
        vec!["-DSS_THRESHOLD_TRIM=3".to_string()],
    ] {
        let Some(exe) = build_emulator(&defines) else {
            return;
        };
        small_cta_sweep(&exe, &SMALL_CTA_LAUNCHES);
        constructed_paths_follow_the_model(&exe, &defines.join(" "));
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn split_parts_running_together_stay_exact() {
    // A row's SPLIT parts interleaved at every barrier and spin (the order of
    // the parts reshuffled every pass): parts arrive while others are still
    // passing or writing, and the finisher's wait on each slab word must end,
    // with an exact row and a zero workspace after every launch; with the
    // default batch of four words per wait (SS_SLAB_WAIT_BATCH) and with one
    // and three (a batch that does not divide a thread's words). The SPLIT launches of the
    // small-CTA table, the constructed paths (staging and slab overflow
    // among them), soak rounds and varlen launches (rows every part leaves
    // at once among them).
    let split_launches: Vec<_> = SMALL_CTA_LAUNCHES
        .into_iter()
        .filter(|&(_, grid_x, _, _)| grid_x > 1)
        .collect();
    assert!(split_launches.len() >= 3, "{split_launches:?}");
    for defines in [
        vec![],
        vec!["-DSS_SLAB_WAIT_BATCH=1".to_string()],
        vec!["-DSS_SLAB_WAIT_BATCH=3".to_string()],
    ] {
        let Some(exe) = build_concurrent_emulator(&defines) else {
            return;
        };
        small_cta_sweep(&exe, &split_launches);
        constructed_paths_follow_the_model(&exe, &format!("concurrent parts {defines:?}"));
        soak_hazard_rounds(&exe, crate::support::ss::soak_seeds(2, 0x50A4_0003));
        production_varlen_calls(&exe);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_parallel_crossing_scan_gives_the_same_outputs_bit_for_bit() {
    // SS_SCAN_FORM (kernels/ss/common.cuh `ss_scan256`): the crossing of
    // each target found by counting instead of a walk; the default build
    // counts on the SPLIT entries only. Every field it returns must equal the
    // walk's, so the kernel's outputs (index order included) and path bits
    // are the same with the walk everywhere (0) and the count everywhere (3)
    // on every launch of the sweep, and both builds still follow the model
    // on the constructed paths.
    same_outputs_as_the_default_build("SS_SCAN_FORM=0");
    same_outputs_as_the_default_build("SS_SCAN_FORM=3");
}

/// The emulator built with `define` (`NAME=V[,NAME=V…]`) against the default build on the small-CTA
/// sweep at four (k, n): identical outputs and path bits on every launch, then
/// the constructed paths and the sweep against the model.
fn same_outputs_as_the_default_build(define: &str) {
    let Some(plain) = emulator() else { return };
    let flags: Vec<String> = define.split(',').map(|d| format!("-D{d}")).collect();
    let Some(variant) = build_emulator(&flags) else {
        return;
    };
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(0x5CA4);
    let mut dense_sample = Tuning::default();
    dense_sample.set("main.sfac", "512").expect("knob");
    dense_sample.set("main.aim8", "8").expect("knob");
    let mut launches = 0;
    for (k, n) in [
        (512usize, 700usize),
        (512, 6_001),
        (1024, 12_345),
        (2048, 20_000),
    ] {
        for g in &generators {
            let rows: Vec<Vec<f32>> = (0..2)
                .map(|_| (g.generate)(&mut rng as &mut dyn RngCore, n))
                .collect();
            let b = batch(&rows, &[], k);
            for &spec in &SMALL_CTA_LAUNCHES {
                let launch = small_cta_launch(&b, spec, n);
                // The planned sample, and a dense one (several pairs per
                // thread of these small CTAs: fuller sample histograms for
                // the scans).
                let mut dense = launch.clone();
                dense.args = main::with_sample_knobs(dense.args, &dense_sample);
                for (form, l) in [("planned", &launch), ("dense", &dense)] {
                    let words = launch_words(&b, l);
                    let label = format!("{define}: {} n={n} k={k} launch {spec:?} {form}", g.name);
                    let a = crate::support::ss::run_emulator(plain, &label, &words, &b);
                    let c = crate::support::ss::run_emulator(&variant, &label, &words, &b);
                    assert_eq!(a, c, "{label}: outputs or path bits differ");
                    launches += 1;
                }
            }
        }
    }
    assert!(launches > 0);
    constructed_paths_follow_the_model(&variant, define);
    small_cta_sweep(&variant, &SMALL_CTA_LAUNCHES);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_output_forms_stay_exact() {
    // SS_MAIN_STAGE_OUT: 1 stages every row's indices in the staging buffer
    // past the list (the tiny capacities of the sweep leave no room: the
    // direct form runs there too), 0 never does. The default rule (2) runs
    // in the tests above: staged at k = 512 on the sweep's BLK 64 / 128, and
    // at k = 2,048 on the path cases' planned launches.
    for form in ["0", "1"] {
        let Some(exe) = build_emulator(&[format!("-DSS_MAIN_STAGE_OUT={form}")]) else {
            return;
        };
        small_cta_sweep(&exe, &SMALL_CTA_LAUNCHES);
        constructed_paths_follow_the_model(&exe, &format!("SS_MAIN_STAGE_OUT={form}"));
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_whole_next_tile_prefetch_stays_exact() {
    // SS_PFD 8 (`--knob SS_PFD=8`): every one-CTA entry carries its whole
    // next tile across the walk; the stress table's BLK 64 × U 8 rows are
    // many tiles long, and hazard rounds of 600 rows run on both many-rows
    // blocks (the `main.blk` knob). The prefetched float4 are classified with
    // the tile they belong to, so the path bits stay the model's.
    let Some(exe) = build_emulator(&["-DSS_PFD=8".to_string()]) else {
        return;
    };
    small_cta_sweep(&exe, &SMALL_CTA_LAUNCHES);
    for (i, &k) in gvr_bench::topk::SUPPORTED_K.iter().enumerate() {
        for blk in [256, 512] {
            let seed = 0xB256_0000 + 2 * i as u64 + u64::from(blk == 512);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            soak_planned_round_on(&exe, &mut rng, k, seed, 600, Some(blk));
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_hazard_rows_are_exact() {
    // Randomized rounds (crate::support::ss::soak_seeds: a few on CI, any number with
    // GVR_EMU_SOAK): certify generators with hazards laid over them, every
    // hint mode, mixed lengths, on a small-CTA launch of the stress table or
    // on the launch `ss-main` plans for a batch of 1 to 600 rows; exact, and
    // the kernel's path bits equal the model's on every emulated row.
    let Some(exe) = emulator() else { return };
    soak_hazard_rounds(exe, crate::support::ss::soak_seeds(4, 0x50A4_0001));
}

/// One hazard round per seed: a random K, then a small-CTA launch of the
/// stress table or the launch `ss-main` plans (exact, paths as the model's).
fn soak_hazard_rounds(exe: &Path, seeds: Vec<u64>) {
    for seed in seeds {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let k =
            gvr_bench::topk::SUPPORTED_K[rng.random_range(0..gvr_bench::topk::SUPPORTED_K.len())];
        if rng.random_bool(0.5) {
            soak_small_cta_round(exe, &mut rng, k, seed);
        } else {
            soak_planned_round(exe, &mut rng, k, seed);
        }
    }
}

/// `b` on the launch the plan makes for it: exact output (checked by
/// `emu_check`) and, per row, the phase trace the CPU model predicts.
fn check_planned_launch(exe: &Path, b: &Batch, label: &str) {
    let launch = EmuLaunch::planned(b, b.rows);
    let trace = emu_check(exe, b, &launch, label);
    let params = planned(b);
    for (r, &bits) in trace.iter().enumerate() {
        let counts = model(b, r, &params);
        assert_eq!(bits, expected_trace(&counts), "{label} row {r}: {counts:?}");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_suites_sampling_adversaries_are_exact_in_the_kernel_source() {
    // certify's hint-free rows whose top values hide where a strided sample
    // does not look, and sorted rows, on the launch `ss-main` plans (SPLIT
    // for these few long rows) and on one CTA per row.
    let Some(exe) = emulator() else { return };
    for k in gvr_bench::topk::SUPPORTED_K {
        for case in gvr_bench::exact::sampling_adversaries(k) {
            let b = &case.batch;
            let label = format!("{} k={k}", case.name);
            check_planned_launch(exe, b, &label);
        }
    }
}

/// One soak round on a small-CTA launch: rows of one length (the launch's
/// schedule is that length's), capacities from the stress table.
fn soak_small_cta_round(exe: &Path, rng: &mut ChaCha8Rng, k: usize, seed: u64) {
    let spec = SMALL_CTA_LAUNCHES[rng.random_range(0..SMALL_CTA_LAUNCHES.len())];
    let n = rng.random_range(1..=24_000usize);
    let (b, labels) = crate::support::ss::soak_batch(rng, k, &[n, n, n], false);
    let launch = small_cta_launch(&b, spec, n);
    let (entry, grid_x, scap, cmp) = spec;
    let label = format!(
        "soak seed {seed}: entry={entry} R={grid_x} scap={scap} cmp={cmp} k={k} rows {labels:?}"
    );
    let trace = emu_check(exe, &b, &launch, &label);
    let params = small_cta_model_params(&b, &launch, n);
    for (r, &bits) in trace.iter().enumerate() {
        let counts = model(&b, r, &params);
        assert_eq!(bits, expected_trace(&counts), "{label} row {r}: {counts:?}");
    }
}

/// The stress-table launch `(entry id, R, SCAP, CMP)` for rows of length `n`
/// of `b`: the planned launch's other scalars, the TSH floor off, and for
/// SPLIT entries (which sample in PAIRs) the row's schedule redone for the
/// launch's own SCAP.
fn small_cta_launch(
    b: &Batch,
    (entry, grid_x, scap, cmp): (u32, u32, u32, u32),
    n: usize,
) -> EmuLaunch {
    let mut launch = EmuLaunch::planned(b, b.rows);
    launch.entry = entry;
    launch.grid_x = grid_x;
    launch.block = if entry == 12 { 128 } else { 64 };
    launch.args.scap = scap;
    launch.args.cmp = cmp;
    launch.args.r = grid_x;
    launch.args.tsh_en = 0;
    if grid_x > 1 {
        let pairs = main::SsMainArgs {
            n_plan: u32::MAX,
            unit_shift: 0,
            ..launch.args
        };
        let a = &mut launch.args;
        (a.smp, a.ss2, a.tgt, a.tgt2) = main::row_schedule(&pairs, n as u32);
        a.unit_shift = 0;
    }
    launch
}

/// The CPU model's parameters for a [`small_cta_launch`] on rows of length
/// `n`: the same capacities, split and sample, so it takes the same paths.
fn small_cta_model_params(b: &Batch, launch: &EmuLaunch, n: usize) -> MainParams {
    let a = &launch.args;
    MainParams {
        scap: a.scap as usize,
        cmp: a.cmp as usize,
        r: launch.grid_x,
        q: (n >> 2).div_ceil(launch.grid_x as usize),
        split: launch.grid_x > 1,
        tshg: false,
        smp: a.smp as usize,
        ss2: a.ss2 as usize,
        tgt: a.tgt as usize,
        tgt2: a.tgt2 as usize,
        unit_values: 8 << a.unit_shift,
        // The launch samples iff its schedule has units (the plan's gate
        // was for its own capacities).
        sampled: a.smp > 0,
        ..planned(b)
    }
}

/// One soak round on the planned launch of a batch of 1 to 600 rows (BLK
/// 1024 / 512 / 256, SPLIT when few): up to four distinct rows of mixed
/// lengths emulated, the rest copies that size the plan.
fn soak_planned_round(exe: &Path, rng: &mut ChaCha8Rng, k: usize, seed: u64) {
    let batch_rows = [1usize, 2, 4, 8, 64, 200, 600][rng.random_range(0..7)];
    soak_planned_round_on(exe, rng, k, seed, batch_rows, None);
}

/// One planned round of `batch_rows` rows, on `blk`'s one-CTA entry where
/// the plan is a one-CTA-per-row U = 8 launch (the `main.blk` knob).
fn soak_planned_round_on(
    exe: &Path,
    rng: &mut ChaCha8Rng,
    k: usize,
    seed: u64,
    batch_rows: usize,
    blk: Option<u32>,
) {
    let longest_cap = (16_000_000 / batch_rows).min(300_000);
    let longest = (rng.random_range(1.0f64..(longest_cap as f64).ln()).exp() as usize).max(1);
    let distinct = batch_rows.min(4);
    let lengths: Vec<usize> = (0..distinct)
        .map(|r| {
            if r == 0 {
                longest
            } else {
                rng.random_range(0..=longest)
            }
        })
        .collect();
    let (rows, labels) = crate::support::ss::soak_batch(rng, k, &lengths, false);
    let all_rows: Vec<Vec<f32>> = (0..batch_rows)
        .map(|r| rows.row(r % distinct).to_vec())
        .collect();
    let all_hints: Vec<Vec<i32>> = (0..batch_rows)
        .map(|r| rows.hints(r % distinct).to_vec())
        .collect();
    let b = batch(&all_rows, &all_hints, k);
    let launch = EmuLaunch::planned_on(&b, distinct, blk);
    let label = format!(
        "soak seed {seed}: planned BLK {} R={} for {batch_rows} rows, k={k}, rows {labels:?}",
        launch.block, launch.grid_x
    );
    let trace = emu_check(exe, &b, &launch, &label);
    let params = planned(&b);
    for (r, &bits) in trace.iter().enumerate() {
        let counts = model(&b, r, &params);
        assert_eq!(bits, expected_trace(&counts), "{label} row {r}: {counts:?}");
    }
}

fn small_cta_sweep(exe: &Path, launches: &[(u32, u32, u32, u32)]) {
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let k = 512;
    for (i, n) in [700usize, 6_001, 12_345].into_iter().enumerate() {
        for g in &generators {
            let rows: Vec<Vec<f32>> = (0..2)
                .map(|_| (g.generate)(&mut rng as &mut dyn RngCore, n))
                .collect();
            let b = batch(&rows, &[], k);
            for &spec in launches {
                let launch = small_cta_launch(&b, spec, n);
                let (entry, grid_x, scap, cmp) = spec;
                let label = format!(
                    "{} n={n} entry={entry} R={grid_x} scap={scap} cmp={cmp} #{i}",
                    g.name
                );
                let trace = emu_check(exe, &b, &launch, &label);
                let params = small_cta_model_params(&b, &launch, n);
                for (r, &bits) in trace.iter().enumerate() {
                    let counts = model(&b, r, &params);
                    assert_eq!(bits, expected_trace(&counts), "{label} row {r}: {counts:?}");
                }
            }
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn varlen_rows_and_hints_are_exact_in_the_kernel_source() {
    let Some(exe) = emulator() else { return };
    let k = 512;
    let lens = [0usize, 1, k - 1, k, k + 1, 3 * k + 5, 9_001, 17, 20_000];
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let rows: Vec<Vec<f32>> = lens
        .iter()
        .enumerate()
        .map(|(r, &n)| (generators[r % generators.len()].generate)(&mut rng as &mut dyn RngCore, n))
        .collect();
    // Hints: the row's own top indices, junk, duplicates, -1.
    let hints: Vec<Vec<i32>> = lens
        .iter()
        .enumerate()
        .map(|(r, &n)| match r % 3 {
            0 => (0..k as i32).map(|i| i * 3 % n.max(1) as i32).collect(),
            1 => vec![7; k],
            _ => (0..k as i32).map(|i| i * 1_000_003 - 50).collect(),
        })
        .collect();
    let b = batch(&rows, &hints, k);
    // 9 rows → SPLIT with per-row schedules (n differs from the planned n).
    let launch = EmuLaunch::planned(&b, lens.len());
    assert!(launch.grid_x > 1, "varlen batch should split");
    let trace = emu_check(exe, &b, &launch, "varlen split");
    let params = planned(&b);
    for (r, &bits) in trace.iter().enumerate() {
        let counts = model(&b, r, &params);
        assert_eq!(
            bits,
            expected_trace(&counts),
            "varlen split row {r} (n = {}): {counts:?}",
            b.n[r]
        );
    }
    // The same rows as one CTA each (BLK 64, small buffers).
    let mut small = EmuLaunch::planned(&b, lens.len());
    small.use_small_non_split_cta();
    emu_check(exe, &b, &small, "varlen one CTA per row");
    // The BLK-512 (200 rows) and BLK-256 (300 rows) entry points on the same
    // rows (the first lens.len() rows emulated), paths equal to the model's.
    for (copies, blk) in [(200usize, 512u32), (300, 256)] {
        let many_rows: Vec<Vec<f32>> = (0..copies).map(|r| rows[r % rows.len()].clone()).collect();
        let many_hints: Vec<Vec<i32>> = (0..copies)
            .map(|r| hints[r % hints.len()].clone())
            .collect();
        let many = batch(&many_rows, &many_hints, k);
        let launch = EmuLaunch::planned(&many, lens.len());
        assert_eq!((launch.block, launch.grid_x), (blk, 1), "{copies} rows");
        let label = format!("varlen x{copies} (BLK {blk})");
        let trace = emu_check(exe, &many, &launch, &label);
        let params = planned(&many);
        for (r, &bits) in trace.iter().enumerate() {
            let counts = model(&many, r, &params);
            assert_eq!(bits, expected_trace(&counts), "{label} row {r}: {counts:?}");
        }
    }
    // A plain row for the record: the sample rung on a real entry point.
    let plain = batch(&[spread(30_000)], &[], 1024);
    emu_check(
        exe,
        &plain,
        &EmuLaunch::planned(&plain, 1),
        "plain split row",
    );
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn varlen_on_a_column_sliced_arena_view_is_exact() {
    // The upstream checklist's sliced-arena case: the launch planned for the slice (max_seq_len =
    // the slice width), run with the arena's 256-rounded row stride; the
    // columns past the slice belong to another tensor (+3e38 here), which
    // the kernel may touch only through masked pad loads.
    let Some(exe) = emulator() else { return };
    let k = 512;
    for (next_n, cr) in [(1u32, 1u32), (4, 4)] {
        let kv_lens =
            crate::support::ss::varlen_kv(next_n, cr, &[k as u32 + 1, 2 * k as u32 + 5, 6_000]);
        let slice =
            crate::support::ss::varlen_emu_case(k, next_n, cr, &kv_lens, 707 + next_n as u64);
        let arena = slice.in_arena();
        let stride = arena.input.npad;
        for split in [true, false] {
            let mut launch = EmuLaunch::planned(&slice.check, slice.check.rows);
            if !split {
                launch.use_small_non_split_cta();
            }
            launch.args.npad = stride as u32;
            launch.args.next_n = next_n;
            launch.args.cr_shift = cr.trailing_zeros();
            let label = format!("arena stride {stride} next_n {next_n} cr {cr} split={split}");
            emu_check_as(exe, &arena.input, &arena.check, &launch, &label);
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_varlen_calls_are_exact() {
    // Randomized production varlen calls (certify's varlen soak batches,
    // 1–8 requests, last rows up to 40,000 wide, request-level hints) on the
    // planned launch and on one small CTA per row.
    let Some(exe) = emulator() else { return };
    let limits = VarlenLimits {
        requests: 8,
        width: 40_000,
    };
    let ks = gvr_bench::topk::SUPPORTED_K;
    for (case, name) in crate::support::ss::varlen_soak_rounds(0x50A4_0011, ks, limits) {
        let v = case.check.varlen.clone().expect("varlen");
        for small in [false, true] {
            let mut launch = EmuLaunch::planned(&case.check, case.check.rows);
            if small {
                launch.use_small_non_split_cta();
            }
            launch.args.next_n = v.next_n;
            launch.args.cr_shift = v.compress_ratio.trailing_zeros();
            let label = format!("{name} small_cta={small}");
            emu_check_as(exe, &case.input, &case.check, &launch, &label);
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn production_varlen_calls_are_exact_in_the_kernel_source() {
    // The varlen entry: kv_lens per request in the length
    // array, next_n rows per request, compress ratio 1 or 4, request-level
    // hints; zero-window, short and long requests in one launch, SPLIT and
    // one CTA per row.
    let Some(exe) = emulator() else { return };
    production_varlen_calls(exe);
}

/// Varlen launches of each (next_n, compress ratio) with zero-window, short
/// and long requests, on the planned SPLIT launch and on one small CTA per
/// row; every row exact.
fn production_varlen_calls(exe: &Path) {
    let k = 512;
    for (next_n, cr) in [(1u32, 1u32), (2, 1), (3, 4), (4, 4)] {
        let widths = [
            k as u32 / 2,
            k as u32,
            k as u32 + 1,
            3 * k as u32 + 17,
            9_000,
        ];
        let kv_lens = crate::support::ss::varlen_kv(next_n, cr, &widths);
        let crate::support::ss::VarlenEmuCase { check, input } =
            crate::support::ss::varlen_emu_case(k, next_n, cr, &kv_lens, 606 + next_n as u64);
        let label = format!("varlen next_n {next_n} cr {cr}");
        for split in [true, false] {
            let mut launch = EmuLaunch::planned(&check, check.rows);
            if !split {
                launch.use_small_non_split_cta();
            }
            launch.args.next_n = next_n;
            launch.args.cr_shift = cr.trailing_zeros();
            emu_check_as(
                exe,
                &input,
                &check,
                &launch,
                &format!("{label} split={split}"),
            );
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_wave_stagger_changes_no_output() {
    // The wave stagger (kernels/ss/main.cu `ss_wave_stagger`) only delays a CTA's
    // start. With SS_WAVE_SMS=2 an 8-row launch of the BLK 512 entry is two
    // waves of four CTAs (8 >= 1.9 waves), so rows 2 and 3 wait half the
    // stagger (scaled down for rows shorter than SS_WAVE_FULL_N); a 16-row
    // launch of the BLK 256 entry (its stagger on, flat at every length) is
    // two waves of eight, rows 2-7 waiting.
    // Outputs and path bits must equal the build without a stagger, and every
    // row be exact.
    let sms = "-DSS_WAVE_SMS=2".to_string();
    let Some(off) = build_emulator(&[sms.clone(), "-DSS_WAVE_STAGGER=0".to_string()]) else {
        return;
    };
    let default_on = vec![sms.clone()];
    let knobs_on = vec![
        sms,
        "-DSS_WAVE_STAGGER_256=24000".to_string(),
        "-DSS_WAVE_FULL_N=0".to_string(),
    ];
    // (defines, entry, BLK, rows)
    let configs = [(&default_on, 4u32, 512u32, 8usize), (&knobs_on, 5, 256, 16)];
    let mut rng = ChaCha8Rng::seed_from_u64(0x57A6);
    let mut launches = 0;
    for (defines, entry, blk, rows) in configs {
        let Some(on) = build_emulator(defines) else {
            return;
        };
        for g in row_generators().iter().take(3) {
            let logits: Vec<Vec<f32>> = (0..rows)
                .map(|_| (g.generate)(&mut rng as &mut dyn RngCore, 3_001))
                .collect();
            let b = batch(&logits, &[], 512);
            let mut launch = EmuLaunch::planned(&b, b.rows);
            launch.entry = entry;
            launch.block = blk;
            launch.grid_x = 1;
            launch.args.r = 1;
            launch.args.scap = 2048;
            launch.args.cmp = 512;
            let label = format!(
                "{} n=3001 k=512 BLK {blk} x {rows} rows {defines:?}",
                g.name
            );
            emu_check(&on, &b, &launch, &label);
            let words = launch_words(&b, &launch);
            let a = crate::support::ss::run_emulator(&on, &label, &words, &b);
            let c = crate::support::ss::run_emulator(&off, &label, &words, &b);
            assert_eq!(
                a, c,
                "{label}: outputs or path bits differ with the stagger"
            );
            launches += 1;
        }
    }
    assert_eq!(launches, 6);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn nan_rows_meet_the_contract_in_the_kernel_source() {
    // The suite's NaN batches (NaN counts around k, -NaN, NaN with ±inf, a
    // NaN-only row, hint-free) and NaN-sprinkled long rows that plan SPLIT:
    // every NaN ranks above +inf, and the path matches the CPU model.
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(0x4e61);
    for k in gvr_bench::topk::SUPPORTED_K {
        let mut batches: Vec<(String, Batch)> = gvr_bench::exact::suite(k)
            .into_iter()
            .filter(|c| c.name.starts_with("nan_"))
            .map(|c| (c.name, c.batch))
            .collect();
        let n = 70_001;
        let rows: Vec<Vec<f32>> = [1usize, k - 1, k + 5]
            .iter()
            .map(|&nans| {
                let mut row: Vec<f32> = (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect();
                for i in 0..nans {
                    let at = rng.random_range(0..n);
                    row[at] = gvr_bench::exact::nan_value(i);
                }
                row
            })
            .collect();
        batches.push((
            "nan_long".into(),
            Batch::from_rows(&rows, npad_for(n), k, 3e38),
        ));
        for (name, b) in &batches {
            let label = format!("{name} k={k}");
            check_planned_launch(exe, b, &label);
        }
    }
}
