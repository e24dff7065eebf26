//! Runs the real `kernels/ss/clus.cu` (clus, clustered streaming)
//! source on the CPU, with thread-block clusters emulated
//! (tests/ss_emu/cluster.cuh), and checks it exact against the CPU
//! reference; plus the NVRTC spill gate for its entry points.

use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{declared_entries, SS_CLUS_STREAM};

#[test]
#[cfg_attr(
    any(no_gxx, no_nvrtc),
    ignore = "needs g++ and libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; LD_LIBRARY_PATH)"
)]
fn ss_clus_stream_entries_compile_without_spills_or_stack() {
    let declared = declared_entries(SS_CLUS_STREAM.code);
    for name in ["ss_clus_u1", "ss_clus_u2", "ss_clus_u4", "ss_clus_u8"] {
        assert!(
            declared.iter().any(|d| d == name),
            "{name} not declared: {declared:?}"
        );
    }
    if !crate::support::nvrtc::nvrtc_or_skip() {
        return;
    }
    let report =
        compile_report(&SS_CLUS_STREAM, &[], DEFAULT_ARCH).expect("ss_clus_stream.cu compiles");
    println!("{}", report.log);
    // __launch_bounds__(1024, 1): the whole register file, 64 per thread.
    crate::support::nvrtc::assert_registers_at_most(&report, &declared, 64, "ss_clus_stream.cu");
    crate::support::nvrtc::assert_no_spill_in_log(&report.log, "ss_clus_stream.cu");
}

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::ss::{batch, generated_batch, hints_for, HINT_MODES};
use gvr_bench::arms::Shape;
use gvr_bench::exact::soak::VarlenLimits;
use gvr_bench::exact::{check_batch, check_row, reference_topk, row_generators};
use gvr_bench::grid::Batch;
use gvr_bench::topk::families::clus::{clus_smem_bytes, ClusStreamArgs};
use gvr_bench::topk::route::DeviceProfile;
use gvr_bench::topk::{Family, Plan, Tuning};

/// CL_TR_* bits of kernels/ss/clus.cu.
const TR_HINT_START: u32 = 1;
const TR_RETRY: u32 = 2;
const TR_FALLBACK: u32 = 4;
const TR_DEGEN: u32 = 8;
const TR_RESWEEP: u32 = 32;
const TR_WHOLE: u32 = 64;
const TR_RANK: u32 = 128;
const TR_NARROW: u32 = 256;
const TR_SAMPLE: u32 = 512;
const TR_TSH: u32 = 1024;
const TR_HINT_FLOOR: u32 = 2048;

/// Build the cluster emulator once per source version; `None` without g++.
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

fn build_emulator(defines: &[String]) -> Option<PathBuf> {
    if !crate::support::ss::gxx_available("ss_clus_stream.cu") {
        return None;
    }
    // Mutation testing: GVR_SS_CLUS_STREAM_EMU_SOURCE=<path> runs a
    // modified kernel through the same checks.
    let kernel = std::env::var("GVR_SS_CLUS_STREAM_EMU_SOURCE")
        .map(|p| std::fs::read_to_string(p).expect("read GVR_SS_CLUS_STREAM_EMU_SOURCE"))
        .unwrap_or_else(|_| SS_CLUS_STREAM.code.to_string());
    Some(crate::support::ss::kernel_emulator(
        "ss-clus-stream-emu",
        true,
        ("ss_clus_stream.cu", kernel.as_str()),
        (
            "clus_stream_main.cpp",
            include_str!("../ss_emu/clus_stream_main.cpp"),
        ),
        defines,
    ))
}

/// Emulator entry ids of clus_stream_main.cpp: 0..3 the compiled BLK-1024
/// entries (U 1/2/4/8); small CTAs: 4 (64, 1), 5 (64, 2), 6 (64, 8),
/// 7 (128, 1), 8 (128, 4).
fn entry_id(blk: u32, u: u32) -> u32 {
    match (blk, u) {
        (1024, u) => u.trailing_zeros(),
        (64, 1) => 4,
        (64, 2) => 5,
        (64, 8) => 6,
        (128, 1) => 7,
        (128, 4) => 8,
        _ => panic!("no emulator entry for BLK {blk}, U {u}"),
    }
}

/// One emulated launch.
struct Launch<'a> {
    entry: u32,
    cs: u32,
    blk: u32,
    args: ClusStreamArgs,
    hint_free: bool,
    /// `Some(kv_lens)`: the kernel reads lengths through `ss_row_len`'s varlen form.
    kv: Option<&'a [u32]>,
}

/// The kernel args of the H200 plan for `b` (routed, else forced), with the
/// batch's stride and `k`.
fn planned_args(b: &Batch, rows_for_plan: usize) -> (u32, u32, ClusStreamArgs) {
    let dev = DeviceProfile::h200();
    let shape = Shape {
        rows: rows_for_plan,
        ..Shape::of(b)
    };
    let Ok(Plan::Clus(p)) = Plan::forced(Family::Clus, &shape, &dev, &Tuning::default()) else {
        panic!("clus plans the batch")
    };
    (p.cluster, p.u, p.args)
}

/// Small-CTA args: staging `scap`, candidates `cmp`, the schedule of a row of
/// `n_plan` recomputed in-kernel for every other length.
fn small_args(b: &Batch, n_plan: u32, cs: u32, scap: u32, cmp: u32) -> ClusStreamArgs {
    let k = b.k as u32;
    let base = ClusStreamArgs {
        n_plan: u32::MAX, // never a row length: every row recomputes its schedule
        npad: b.npad as u32,
        k,
        scap,
        cmp,
        smp: 0,
        ss2: 1,
        tgt: 0,
        tgt2: 0,
        aim_base: 2 * k,
        amin: if cs == 2 { 3 * k } else { 7 * k / 2 },
        sfac: if cs == 2 { 32 } else { 16 },
        next_n: 0,
        cr_shift: 0,
    };
    let (smp, ss2, tgt, tgt2) = gvr_bench::topk::families::clus::row_schedule(&base, n_plan);
    ClusStreamArgs {
        n_plan,
        smp,
        ss2,
        tgt,
        tgt2,
        ..base
    }
}

/// Run every row of `b` as one cluster; check exactness (NaN rows:
/// structure only); return each row's path-trace bits.
fn emu_check(exe: &Path, b: &Batch, l: &Launch, label: &str) -> Vec<u32> {
    let smem = clus_smem_bytes(l.args.scap as usize, l.args.cmp as usize) as u32;
    let kv = l.kv.unwrap_or(&[]);
    let mut words = vec![
        0x55EE_0C51u32,
        l.entry,
        l.cs,
        l.blk,
        smem,
        b.rows as u32,
        b.npad as u32,
        b.k as u32,
        l.hint_free as u32,
        b.rows as u32,
        kv.len() as u32,
    ];
    let a = l.args;
    words.extend_from_slice(&[
        a.n_plan, a.npad, a.k, a.scap, a.cmp, a.smp, a.ss2, a.tgt, a.tgt2, a.aim_base, a.amin,
        a.sfac, a.next_n, a.cr_shift,
    ]);
    words.extend_from_slice(kv);
    let (out, trace) = crate::support::ss::run_emulator(exe, label, &words, b);
    let nan = |r: usize| b.row(r).iter().any(|x| x.is_nan());
    if (0..b.rows).any(nan) {
        for r in 0..b.rows {
            let slots = &out[r * b.k..(r + 1) * b.k];
            let n = b.n[r] as usize;
            if n <= b.k || !nan(r) {
                assert!(
                    check_row(b.row(r), b.k, slots).is_ok(),
                    "{label} row {r}: {:?}",
                    check_row(b.row(r), b.k, slots)
                );
                continue;
            }
            let mut seen = slots.to_vec();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), b.k, "{label} row {r}: duplicate indices");
            assert!(
                slots.iter().all(|&i| i >= 0 && (i as usize) < n),
                "{label} row {r}: index out of range"
            );
        }
    } else {
        let status = check_batch(b, &out);
        assert!(status.is_exact(), "{label}: {status:?}");
    }
    trace.iter().map(|&t| t as u32).collect()
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn small_clusters_are_exact_for_every_generator_hint_mode_and_cs() {
    // 64/128-thread CTAs with small staging and candidate buffers: sampled
    // rows, staging overflow re-sweeps, the CMP escape, the retry ladder and
    // both refines all happen on rows of a few thousand values.
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(4343);
    let mut seen = 0u32;
    for (blk, u) in [(64u32, 1u32), (64, 2), (64, 8), (128, 1), (128, 4)] {
        for cs in [2u32, 4, 8] {
            let k = [37usize, 100, 200][(cs.trailing_zeros() as usize + u as usize) % 3];
            let chunk = (blk * u * 4) as usize;
            let scap = 512u32;
            // Small CMP: the escape above it; CMP above the O(m²) gate: the
            // narrowing refine of tie-heavy crossing bins.
            let cmp = if (cs + u) % 2 == 0 { 64u32 } else { 1024 };
            // Several chunks per rank, a partial last chunk, a 1–3 element
            // tail, rows below SCAP (unsampled), just above k, short rows.
            let lengths = [
                3 * cs as usize * chunk + 3,
                cs as usize * chunk / 2 + 1,
                5_001,
                2_050,
                400,
                k + 1,
                k,
                k / 2,
            ];
            let b = generated_batch(&mut rng, k, &lengths, &HINT_MODES);
            let args = small_args(&b, 5_001, cs, scap, cmp);
            let label = format!("blk={blk} u={u} cs={cs} k={k}");
            let l = Launch {
                entry: entry_id(blk, u),
                cs,
                blk,
                args,
                hint_free: false,
                kv: None,
            };
            for t in emu_check(exe, &b, &l, &label) {
                seen |= t;
            }
            let free = generated_batch(&mut rng, k, &lengths, &["absent"]);
            let l = Launch {
                hint_free: true,
                ..l
            };
            for t in emu_check(exe, &free, &l, &format!("{label} hint-free")) {
                seen |= t;
            }
        }
    }
    for (bit, path) in [
        (TR_HINT_START, "hint start"),
        (TR_RETRY, "retry"),
        (TR_FALLBACK, "whole-row fallback"),
        (TR_DEGEN, "crossing bin above CMP"),
        (TR_RESWEEP, "staging overflow re-sweep"),
        (TR_WHOLE, "whole crossing bin"),
        (TR_RANK, "O(m²) rank"),
        (TR_NARROW, "narrowing refine"),
        (TR_SAMPLE, "sample rung"),
    ] {
        assert!(
            seen & bit != 0,
            "no row took the {path} path (bits {seen:#x})"
        );
    }
}

/// Distinct values in [0, 1) spread over the row.
fn spread(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % n) as f32 / n as f32).collect()
}

/// Positions the QUAD sample of `a` reads in a row of length n.
fn sample_positions(a: &ClusStreamArgs, n: u32) -> Vec<usize> {
    let (smp, ss2, _, _) = gvr_bench::topk::families::clus::row_schedule(a, n);
    assert!(smp > 0, "construction needs a sampled row");
    (0..smp as usize)
        .flat_map(|j| {
            let start = j * ss2 as usize * 16;
            start..start + 16
        })
        .collect()
}

/// Rows built to take each ladder path of a small cluster (64 threads,
/// U 2, CS 4, k 64), in the order `constructed_rows_take_the_ladder_paths`
/// checks, and their launch.
fn constructed_ladder_rows() -> (Batch, Launch<'static>) {
    let (blk, u, cs) = (64u32, 2u32, 4u32);
    let k = 64usize;
    let n = 6_000usize;
    let probe = batch(&[spread(n)], &[], k);
    let args = small_args(&probe, n as u32, cs, 1024, 512);
    let (_, _, tgt, _) = gvr_bench::topk::families::clus::row_schedule(&args, n as u32);
    let tgt = tgt as usize;
    let sample = sample_positions(&args, n as u32);
    let in_sample: std::collections::HashSet<usize> = sample.iter().copied().collect();
    let mut rows = Vec::new();
    let mut hints = Vec::new();
    // 0: plain sampled row → sample rung, rank or whole, no retry.
    rows.push(spread(n));
    hints.push(vec![]);
    // 1: the sample sees TGT tens and TGT fives, the row 2k more fives → TSH retry.
    {
        let mut row = spread(n);
        for (rank, &i) in sample.iter().enumerate() {
            if rank < tgt {
                row[i] = 10.0;
            } else if rank < 2 * tgt {
                row[i] = 5.0;
            }
        }
        for i in (0..n).filter(|i| !in_sample.contains(i)).take(2 * k) {
            row[i] = 5.0;
        }
        rows.push(row);
        hints.push(vec![]);
    }
    // 2: 3·TGT sample tens, no more in the row, hints bracket low → hint floor.
    {
        let mut row = spread(n);
        for &i in sample.iter().take(3 * tgt) {
            row[i] = 10.0;
        }
        let lo = (0..n)
            .filter(|&i| row[i] < 10.0)
            .min_by(|&a, &b| row[a].total_cmp(&row[b]))
            .unwrap();
        rows.push(row);
        hints.push(vec![lo as i32, sample[0] as i32]);
    }
    // 3: fewer than k values above −3e38 outside the sample → fallback.
    {
        let mut row = vec![-3.2e38f32; n];
        for (placed, i) in (0..n)
            .filter(|i| !in_sample.contains(i))
            .take(k - 1)
            .enumerate()
        {
            row[i] = 1.0 + placed as f32;
        }
        rows.push(row);
        hints.push(vec![]);
    }
    // 4: degenerate sample (all equal in the sample) and no hints: every
    // value survives (> SCAP per rank → re-sweep), crossing bin > CMP?
    {
        let mut row = spread(n);
        for &i in &sample {
            row[i] = 0.5;
        }
        rows.push(row);
        hints.push(vec![]);
    }
    // 5: same, hints bracket the whole row → hint start, re-sweep, refine.
    {
        let mut row = spread(n);
        for &i in &sample {
            row[i] = 0.5;
        }
        let lo = (0..n).min_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        let hi = (0..n).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        rows.push(row);
        hints.push(vec![lo as i32, hi as i32]);
    }
    // 6: two-valued row: the crossing bin holds 600 > CMP ties → degen.
    {
        let row: Vec<f32> = (0..n)
            .map(|i| match i % 10 {
                0 => 2.0,
                1 | 2 => 1.0,
                _ => 0.0,
            })
            .collect();
        rows.push(row);
        hints.push(vec![]);
    }
    // 7: 40 values above a block of 400 equal values: the crossing bin holds
    // 400 candidates (> 288, ≤ CMP 512) → key-narrowing refine.
    {
        let mut row = spread(n);
        for (j, x) in row.iter_mut().enumerate() {
            if j % 15 == 1 && j < 15 * 40 {
                *x = 3.0;
            } else if j % 15 == 2 {
                *x = 2.0;
            }
        }
        rows.push(row);
        hints.push(vec![]);
    }
    let b = batch(&rows, &hints, k);
    let l = Launch {
        entry: entry_id(blk, u),
        cs,
        blk,
        args,
        hint_free: false,
        kv: None,
    };
    (b, l)
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn constructed_rows_take_the_ladder_paths() {
    let Some(exe) = emulator() else { return };
    let (b, l) = constructed_ladder_rows();
    let tr = emu_check(exe, &b, &l, "constructed");
    for (r, t) in tr.iter().enumerate() {
        eprintln!("constructed row {r}: trace {t:#x}");
    }
    assert_eq!(
        tr[0] & (TR_SAMPLE | TR_RETRY | TR_FALLBACK),
        TR_SAMPLE,
        "{:#x}",
        tr[0]
    );
    assert_ne!(tr[0] & (TR_RANK | TR_WHOLE | TR_NARROW), 0, "{:#x}", tr[0]);
    assert_eq!(tr[1] & (TR_TSH | TR_FALLBACK), TR_TSH, "TSH: {:#x}", tr[1]);
    assert_ne!(tr[2] & TR_HINT_FLOOR, 0, "hint floor: {:#x}", tr[2]);
    assert_ne!(tr[3] & TR_FALLBACK, 0, "fallback: {:#x}", tr[3]);
    assert_ne!(tr[4] & TR_HINT_START, 0, "degenerate sample: {:#x}", tr[4]);
    assert_ne!(tr[5] & TR_RESWEEP, 0, "re-sweep: {:#x}", tr[5]);
    assert_ne!(tr[6] & TR_DEGEN, 0, "ties above CMP: {:#x}", tr[6]);
    assert_ne!(tr[7] & TR_NARROW, 0, "ties within CMP: {:#x}", tr[7]);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_phase_probe_marks_every_ladder_path_in_order() {
    // The probe build of the constructed ladder rows: exact (emu_check);
    // every rank of every row passes the whole chain in order (clus has no
    // rank that leaves early), and makes more than one pass exactly when the
    // row retried.
    let Some(exe) = emulator_probed() else { return };
    let (b, l) = constructed_ladder_rows();
    let tr = emu_check(exe, &b, &l, "probe constructed");
    let (summary, ctas) = crate::support::ss::last_probed_launch("probe constructed");
    assert_eq!(summary.ctas, b.rows * l.cs as usize, "a stamp row per rank");
    let chain = [
        "length",
        "sample",
        "threshold",
        "pass",
        "hand-off",
        "verify",
        "emit",
        "finish",
    ];
    // The histogram mark is passed only where the sample has a width.
    let mut histograms = 0;
    for cta in &ctas {
        let row = cta.cta / l.cs as usize;
        let mut marks = cta.marks.clone();
        if let Some(at) = marks.iter().position(|&m| m == "histogram") {
            marks.remove(at);
            histograms += 1;
        }
        assert_eq!(marks, chain, "row {row} rank {}", cta.cta % l.cs as usize);
        assert_eq!(
            cta.passes > 1,
            tr[row] & TR_RETRY != 0,
            "row {row}: {} passes, trace {:#x}",
            cta.passes,
            tr[row]
        );
    }
    assert!(
        summary.retried_ctas > 0,
        "the constructed rows include retries"
    );
    assert!(histograms > 0, "no rank passed the histogram mark");
}

/// Positions the first `threads` half-units of the QUAD sample of `a` read
/// in a row of length n (the loop's j = t: what `CL_SAMPLE_AHEAD` loads
/// before the row length arrives).
fn first_half_unit_positions(a: &ClusStreamArgs, n: u32, threads: u32) -> Vec<usize> {
    let (smp, ss2, _, _) = gvr_bench::topk::families::clus::row_schedule(a, n);
    (0..threads.min(2 * smp))
        .flat_map(|j| {
            let unit = if j < smp { j } else { j - smp } as usize;
            let start = (unit * ss2 as usize * 4 + if j < smp { 0 } else { 2 }) * 4;
            start..start + 8
        })
        .collect()
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn a_row_shorter_than_planned_samples_its_own_schedule() {
    // Row 1 is constant except where the planned length's first half-units
    // (loaded ahead of the row length) read and its own schedule does not:
    // its own sample is degenerate (no sample rung), while a kernel that kept
    // the loads made for the planned length would see a spread and take it.
    let Some(exe) = emulator() else { return };
    let (blk, u, cs) = (64u32, 2u32, 4u32);
    let (k, n_plan, n1) = (64usize, 12_000usize, 6_000usize);
    let probe = batch(&[spread(n_plan)], &[], k);
    let args = small_args(&probe, n_plan as u32, cs, 1024, 512);
    let own: std::collections::HashSet<usize> =
        sample_positions(&args, n1 as u32).into_iter().collect();
    let mut row1 = vec![1.0f32; n1];
    let mut planted = 0;
    for p in first_half_unit_positions(&args, n_plan as u32, blk) {
        if p < n1 && !own.contains(&p) {
            row1[p] = 2.0 + (p % 97) as f32;
            planted += 1;
        }
    }
    assert!(planted > 0, "the two schedules read the same positions");
    let b = batch(&[spread(n_plan), row1], &[vec![], vec![]], k);
    let l = Launch {
        entry: entry_id(blk, u),
        cs,
        blk,
        args,
        hint_free: true,
        kv: None,
    };
    let tr = emu_check(exe, &b, &l, "shorter than planned");
    assert_ne!(tr[0] & TR_SAMPLE, 0, "planned row: {:#x}", tr[0]);
    assert_eq!(
        tr[1] & TR_SAMPLE,
        0,
        "row 1 used the planned sample: {:#x}",
        tr[1]
    );
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn randomized_rows_match_the_reference() {
    let Some(exe) = emulator() else { return };
    randomized_rounds(exe, 1234);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_threshold_trim_build_stays_exact() {
    // CL_THRESHOLD_TRIM=0: the threshold phase with its middle barrier and
    // the ladder width by division (the untrimmed form; the default build
    // trims).
    knob_build_takes_the_default_paths("CL_THRESHOLD_TRIM=0", 4321);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_parallel_crossing_scan_build_stays_exact() {
    // CL_SCAN_FORM=0 (kernels/ss/common.cuh `ss_scan256`): the walk finds the
    // same crossings as the default build's count.
    knob_build_takes_the_default_paths("CL_SCAN_FORM=0", 5678);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_spread_merge_build_stays_exact() {
    // CL_MERGE_SPREAD=1 (kernels/ss/clus.cu `cl_merge_spread`; the host
    // builds it for clusters of 8): every thread of the first 256 reads its
    // bin from every rank, warp 0 scans the totals, the owners add their
    // lower-rank sums; the small CTAs own two to four bins each. Same paths
    // as the warp-0 build, random launches (clusters of 2, 4 and 8) exact.
    knob_build_takes_the_default_paths("CL_MERGE_SPREAD=1", 8765);
}

/// The emulator built with `define`: the constructed ladder rows take the
/// same paths as in the default build (exact, same path bits), then twelve
/// random launches from `seed` are exact.
fn knob_build_takes_the_default_paths(define: &str, seed: u64) {
    let Some(exe) = build_emulator(&[format!("-D{define}")]) else {
        return;
    };
    let (b, l) = constructed_ladder_rows();
    let plain = emulator().map(|plain| emu_check(plain, &b, &l, "constructed"));
    let built = emu_check(&exe, &b, &l, &format!("{define} constructed"));
    if let Some(plain) = plain {
        assert_eq!(built, plain, "{define}: the ladder paths differ");
    }
    randomized_rounds(&exe, seed);
}

/// Twelve random launches of small clusters (shapes, k, capacities,
/// generators, hint modes), each checked against the reference.
fn randomized_rounds(exe: &Path, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let generators = row_generators();
    let shapes = [(64u32, 1u32), (64, 2), (64, 8), (128, 1), (128, 4)];
    for round in 0..12 {
        let (blk, u) = shapes[round % shapes.len()];
        let cs = 1u32 << rng.random_range(1..=3);
        let k = rng.random_range(1..=300usize);
        let scap = [256u32, 1024, 4096][rng.random_range(0..3)];
        let cmp = [32u32, 300, 1024][rng.random_range(0..3)];
        let mut rows = Vec::new();
        let mut hints = Vec::new();
        for _ in 0..10 {
            let n = rng.random_range(0..=12_000usize);
            let g = &generators[rng.random_range(0..generators.len())];
            let row = (g.generate)(&mut rng as &mut dyn RngCore, n);
            let mode = HINT_MODES[rng.random_range(0..HINT_MODES.len())];
            hints.push(hints_for(&row, k, mode, &mut rng));
            rows.push(row);
        }
        let b = batch(&rows, &hints, k);
        let n_plan = b.n[0];
        let l = Launch {
            entry: entry_id(blk, u),
            cs,
            blk,
            args: small_args(&b, n_plan, cs, scap, cmp),
            hint_free: round % 6 == 5,
            kv: None,
        };
        let label = format!("random #{round} blk={blk} u={u} cs={cs} k={k} scap={scap} cmp={cmp}");
        emu_check(exe, &b, &l, &label);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_hazard_rows_are_exact() {
    // Randomized rounds (crate::support::ss::soak_seeds: a few on CI, any number with
    // GVR_EMU_SOAK): certify generators with hazards laid over them, every
    // hint mode, mixed lengths (the schedule planned for the first row and
    // recomputed for the others), on small clusters of any CS, staging and
    // candidate capacity and k up to 2,048.
    let Some(exe) = emulator() else { return };
    let shapes = [(64u32, 1u32), (64, 2), (64, 8), (128, 1), (128, 4)];
    for seed in crate::support::ss::soak_seeds(4, 0x50A4_0004) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (blk, u) = shapes[rng.random_range(0..shapes.len())];
        let cs = 1u32 << rng.random_range(1..=3);
        let k = if rng.random_bool(0.5) {
            rng.random_range(1..=300usize)
        } else {
            [512usize, 1024, 2048][rng.random_range(0..3)]
        };
        let scap = [256u32, 1024, 4096, 8192][rng.random_range(0..4)];
        let cmp = [32u32, 300, 1024, 4096][rng.random_range(0..4)];
        let hint_free = rng.random_bool(0.2);
        let lengths: Vec<usize> = (0..5)
            .map(|_| match rng.random_range(0..6) {
                0 => rng.random_range(0..=k),
                _ => rng.random_range(k + 1..=k + 30_000),
            })
            .collect();
        let (b, labels) = crate::support::ss::soak_batch(&mut rng, k, &lengths, hint_free);
        let l = Launch {
            entry: entry_id(blk, u),
            cs,
            blk,
            args: small_args(&b, b.n[0], cs, scap, cmp),
            hint_free,
            kv: None,
        };
        let label = format!(
            "soak seed {seed}: blk={blk} u={u} cs={cs} k={k} scap={scap} cmp={cmp} rows {labels:?}"
        );
        emu_check(exe, &b, &l, &label);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_varlen_calls_are_exact() {
    // Randomized production varlen calls (certify's varlen soak batches,
    // 1–8 requests, last rows up to 30,000 wide) on small clusters, the
    // schedule planned for 9,000 and recomputed per row, request-level hints
    // or hint-free.
    let Some(exe) = emulator() else { return };
    let limits = VarlenLimits {
        requests: 8,
        width: 30_000,
    };
    for (case, name) in crate::support::ss::varlen_soak_rounds(0x50A4_0014, [50, 512, 2048], limits)
    {
        let v = case.check.varlen.clone().expect("varlen");
        // The kernel reads request-level hints (row r reads hint row r / next_n).
        let b = Batch {
            hints: case.input.hints.clone(),
            ..case.check.clone()
        };
        for hint_free in [false, true] {
            let cs = 4;
            let mut args = small_args(&b, 9_000, cs, 1024, 128);
            args.next_n = v.next_n;
            args.cr_shift = v.compress_ratio.trailing_zeros();
            let l = Launch {
                entry: entry_id(128, 1),
                cs,
                blk: 128,
                args,
                hint_free,
                kv: Some(&v.kv_lens),
            };
            emu_check(exe, &b, &l, &format!("{name} hint_free={hint_free}"));
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn varlen_kv_lens_and_zero_window_rows_are_exact() {
    // The kernel reads lengths through ss_row_len's varlen form (next_n
    // rows per request, compress ratio 1 or 4), zero-window rows included.
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(55);
    let gens = row_generators();
    for (next_n, cr) in [(1u32, 1u32), (2, 1), (3, 4)] {
        let k = 50usize;
        let kv: Vec<u32> = vec![9_001, 2, 4_000, 0, 200, 12_345];
        let src: Vec<Vec<f32>> = kv
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                (gens[i % gens.len()].generate)(&mut rng as &mut dyn RngCore, l as usize)
            })
            .collect();
        let src_refs: Vec<&[f32]> = src.iter().map(Vec::as_slice).collect();
        let mut b = Batch::varlen(&src_refs, &kv, next_n, cr, k, None).unwrap();
        for x in b.logits.iter_mut() {
            if *x == f32::MIN {
                *x = crate::support::ss::PAD; // poison the padding
            }
        }
        for r in 0..b.rows {
            let n = b.n[r] as usize;
            for x in &mut b.logits[r * b.npad + n..(r + 1) * b.npad] {
                *x = crate::support::ss::PAD;
            }
        }
        let cs = 4;
        let mut args = small_args(&b, 9_000, cs, 1024, 128);
        args.next_n = next_n;
        args.cr_shift = cr.trailing_zeros();
        // Request-level hints (row r reads hint row r / next_n) for one
        // configuration, hint-free (null pointer) for the others.
        let hinted = next_n == 2;
        if hinted {
            for h in b.hints.iter_mut() {
                *h = rng.random_range(-10..9_010);
            }
        }
        let kv_i: Vec<u32> = kv.clone();
        let l = Launch {
            entry: entry_id(128, 1),
            cs,
            blk: 128,
            args,
            hint_free: !hinted,
            kv: Some(&kv_i),
        };
        emu_check(exe, &b, &l, &format!("varlen next_n={next_n} cr={cr}"));
        assert!(b.n.contains(&0), "a zero-window row");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn nan_rows_keep_the_output_structure() {
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let (n, k) = (3_000usize, 64usize);
    let mut rows = Vec::new();
    let mut hints = Vec::new();
    for r in 0..4 {
        let mut row: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
        for i in (r..n).step_by(29) {
            row[i] = if i % 2 == 0 { f32::NAN } else { -f32::NAN };
        }
        hints.push(if r % 2 == 0 {
            reference_topk(&row, k)
        } else {
            vec![-1; k]
        });
        rows.push(row);
    }
    let b = batch(&rows, &hints, k);
    let l = Launch {
        entry: entry_id(64, 2),
        cs: 4,
        blk: 64,
        args: small_args(&b, n as u32, 4, 512, 64),
        hint_free: false,
        kv: None,
    };
    emu_check(exe, &b, &l, "nan rows");
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_suites_sampling_adversaries_are_exact_in_the_kernel_source() {
    // certify's hint-free rows whose top values hide from a strided sample,
    // and sorted rows, on the clus launch the H200 plan makes for them.
    let Some(exe) = emulator() else { return };
    for k in [512usize, 1024, 2048] {
        for case in gvr_bench::exact::sampling_adversaries(k) {
            let b = &case.batch;
            let (cs, u, args) = planned_args(b, b.rows);
            let l = Launch {
                entry: entry_id(1024, u),
                cs,
                blk: 1024,
                args,
                hint_free: true,
                kv: None,
            };
            let label = format!("{} k={k} cs={cs} u={u}", case.name);
            emu_check(exe, b, &l, &label);
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn compiled_entries_at_full_size_are_exact() {
    // The BLK-1024 entry bodies with the H200 plan's own scalars (routed
    // clus shapes: CS 2/4/8, k = 512/1024), a few rows each, plus rows of
    // other lengths in the same launch (per-row schedule recompute) and a
    // short row.
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let gens = row_generators();
    // (rows the plan is made for, n, k): route → clus with CS 8 / 4 / 2.
    for (plan_rows, n, k, want_cs, want_u) in [
        (8usize, 262_144usize, 512usize, 8u32, 8u32),
        (24, 131_075, 1024, 4, 8),
        (64, 65_536, 512, 2, 8),
        (24, 80_000, 512, 4, 4),
        (24, 40_000, 1024, 4, 2),
        (30, 20_000, 512, 4, 1),
    ] {
        let mut rows = Vec::new();
        let mut hints = Vec::new();
        for (i, (g, mode)) in [
            (0usize, "perfect"),
            (1, "absent"),
            (2, "random"),
            (0, "absent"),
        ]
        .iter()
        .enumerate()
        {
            let len = if i == 3 { n / 3 + 7 } else { n };
            let row = (gens[*g].generate)(&mut rng as &mut dyn RngCore, len);
            hints.push(hints_for(&row, k, mode, &mut rng));
            rows.push(row);
        }
        rows.push(spread(k / 2));
        hints.push(vec![]);
        let b = batch(&rows, &hints, k);
        let (cs, u, args) = planned_args(&b, plan_rows);
        assert_eq!(
            (cs, u),
            (want_cs, want_u),
            "plan for {plan_rows} rows of {n}"
        );
        assert_eq!(args.n_plan as usize, n);
        let l = Launch {
            entry: entry_id(1024, u),
            cs,
            blk: 1024,
            args,
            hint_free: false,
            kv: None,
        };
        let tr = emu_check(exe, &b, &l, &format!("full cs={cs} u={u} n={n} k={k}"));
        assert_ne!(tr[0] & TR_SAMPLE, 0, "full-size row sampled: {:#x}", tr[0]);
    }
}
