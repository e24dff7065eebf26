//! Runs the real `kernels/ss/reg_clus.cu` (reg_clus) source on the CPU, with
//! thread-block clusters emulated (tests/ss_emu/cluster.cuh), and checks it
//! exact; plus the NVRTC spill gate for its entry points.

use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{declared_entries, SS_CLUS};

#[test]
#[cfg_attr(
    any(no_gxx, no_nvrtc),
    ignore = "needs g++ and libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; LD_LIBRARY_PATH)"
)]
fn ss_clus_entries_compile_without_spills_or_stack() {
    let declared = declared_entries(SS_CLUS.code);
    for name in ["ss_regclus_v1", "ss_regclus_v2", "ss_regclus_v4"] {
        assert!(
            declared.iter().any(|d| d == name),
            "{name} not declared: {declared:?}"
        );
    }
    if !crate::support::nvrtc::nvrtc_or_skip() {
        return;
    }
    // The default build (local refine on), the coarse merge the plan builds
    // for clusters of 8, and the RC_LOCAL_REFINE=0 builds.
    let on = || "1".to_string();
    let off = || "0".to_string();
    for defines in [
        vec![],
        vec![("RC_COARSE_MERGE", on())],
        vec![("RC_LOCAL_REFINE", off())],
        vec![("RC_COARSE_MERGE", on()), ("RC_LOCAL_REFINE", off())],
    ] {
        let label = format!("ss_clus.cu {defines:?}");
        let report = compile_report(&SS_CLUS, &defines, DEFAULT_ARCH).expect(&label);
        println!("{label}\n{}", report.log);
        // __launch_bounds__(1024, 1): the whole register file, 64 per thread.
        crate::support::nvrtc::assert_registers_at_most(&report, &declared, 64, &label);
        crate::support::nvrtc::assert_no_spill_in_log(&report.log, &label);
    }
}

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::ss::{batch, generated_batch, hints_for, HINT_MODES};
use gvr_bench::exact::soak::VarlenLimits;
use gvr_bench::exact::{check_batch, check_row, reference_topk, row_generators};
use gvr_bench::grid::Batch;

/// RC_TR_* bits of kernels/ss/reg_clus.cu.
const TR_ESCAPE: u32 = 1;
const TR_WHOLE: u32 = 2;
const TR_RANK: u32 = 4;
const TR_NARROW: u32 = 8;
const TR_GUARD: u32 = 16;
const TR_FIRSTK: u32 = 32;
const TR_LOCAL: u32 = 64;

/// The emulator of kernels/ss/reg_clus.cu built with `defines` (`NAME=VALUE`),
/// once per set of defines for the whole test binary; `None` without g++.
fn emulator_with(defines: &[&str]) -> Option<&'static Path> {
    type Builds = Mutex<HashMap<Vec<String>, &'static OnceLock<Option<PathBuf>>>>;
    static BUILDS: OnceLock<Builds> = OnceLock::new();
    let flags: Vec<String> = defines.iter().map(|d| format!("-D{d}")).collect();
    // The map's lock is held only to find the set's cell: builds of different
    // sets run in parallel, a second caller of one set waits for its build.
    let cell: &'static OnceLock<Option<PathBuf>> = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(flags.clone())
        .or_insert_with(|| Box::leak(Box::new(OnceLock::new())));
    cell.get_or_init(|| build_emulator(&flags)).as_deref()
}

/// The default build.
fn emulator() -> Option<&'static Path> {
    emulator_with(&[])
}

fn build_emulator(extra: &[String]) -> Option<PathBuf> {
    if !crate::support::ss::gxx_available("ss_clus.cu") {
        return None;
    }
    // Mutation testing: GVR_SS_CLUS_EMU_SOURCE=<path> runs a modified
    // kernel through the same checks.
    let kernel = std::env::var("GVR_SS_CLUS_EMU_SOURCE")
        .map(|p| std::fs::read_to_string(p).expect("read GVR_SS_CLUS_EMU_SOURCE"))
        .unwrap_or_else(|_| SS_CLUS.code.to_string());
    Some(crate::support::ss::kernel_emulator(
        "ss-clus-emu",
        true,
        ("ss_clus.cu", kernel.as_str()),
        ("clus_main.cpp", include_str!("../ss_emu/clus_main.cpp")),
        extra,
    ))
}

/// Emulator entry ids of clus_main.cpp: 0..2 are the compiled BLK-1024
/// entries (VPT 1/2/4), 3..5 BLK 64, 6..8 BLK 128.
fn small_entry(blk: u32, vpt: u32) -> u32 {
    let base = if blk == 64 { 3 } else { 6 };
    base + vpt.trailing_zeros()
}

/// Dynamic shared memory of a CTA of `blk` threads (kernels/ss/reg_clus.cu RC_SMEM_WORDS).
fn smem_bytes(blk: u32) -> u32 {
    (128 + 3 * 1024 + 2 * 4 * blk) * 4
}

/// Run every row of `b` as one cluster of `cs` CTAs; check exactness;
/// return each row's path-trace bits.
fn emu_check(
    exe: &Path,
    b: &Batch,
    entry: u32,
    cs: u32,
    blk: u32,
    hint_free: bool,
    label: &str,
) -> Vec<u32> {
    let (out, trace) = emu_run(exe, b, entry, cs, blk, hint_free, (0, 0), label);
    let (out, trace) = (out.as_slice(), trace.as_slice());
    check_rows(b, out, label);
    trace.iter().map(|&t| t as u32).collect()
}

/// One emulated launch of `input` (`varlen` = (next_n, cr_shift); (0, 0) for
/// per-row lengths): the output slots and path-trace bits.
#[allow(clippy::too_many_arguments)]
fn emu_run(
    exe: &Path,
    b: &Batch,
    entry: u32,
    cs: u32,
    blk: u32,
    hint_free: bool,
    varlen: (u32, u32),
    label: &str,
) -> (Vec<i32>, Vec<i32>) {
    let header = [
        0x55EE_0C02u32,
        entry,
        cs,
        blk,
        smem_bytes(blk),
        b.rows as u32,
        b.npad as u32,
        b.k as u32,
        hint_free as u32,
        b.rows as u32,
        varlen.0,
        varlen.1,
    ];
    crate::support::ss::run_emulator(exe, label, &header, b)
}

/// Every row of `b` exact (NaN rows: structure only).
fn check_rows(b: &Batch, out: &[i32], label: &str) {
    if b.n
        .iter()
        .zip(b.logits.chunks(b.npad))
        .any(|(&n, row)| row[..n as usize].iter().any(|x| x.is_nan()))
    {
        // NaN order is implementation-specific: structure only.
        for r in 0..b.rows {
            let slots = &out[r * b.k..(r + 1) * b.k];
            let n = b.n[r] as usize;
            if n <= b.k {
                assert!(
                    check_row(b.row(r), b.k, slots).is_ok(),
                    "{label} row {r}: short row"
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
        let status = check_batch(b, out);
        assert!(status.is_exact(), "{label}: {status:?}");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn without_local_refine_small_clusters_are_exact_for_every_generator_hint_mode_cs_and_vpt() {
    let Some(exe) = emulator_with(&["RC_LOCAL_REFINE=0"]) else {
        return;
    };
    let seen = generator_suite(exe);
    assert_eq!(
        seen & TR_LOCAL,
        0,
        "the RC_LOCAL_REFINE=0 build refined locally"
    );
}

/// Every generator × hint mode on small clusters of every CS and VPT, hinted
/// and hint-free, each launch checked exact; the union of the path-trace bits,
/// after checking that every path of the default build was taken.
fn generator_suite(exe: &Path) -> u32 {
    // 64- and 128-thread CTAs keep the emulation fast and shrink the
    // candidate slabs (4·BLK per rank), so the capacity escape, narrowing
    // refine and O(m²) rank all happen on ordinary rows.
    let mut rng = ChaCha8Rng::seed_from_u64(4242);
    let mut seen = 0u32;
    for blk in [64u32, 128] {
        for cs in [2u32, 4, 8] {
            for vpt in [1u32, 2, 4] {
                let cap = (cs * blk * vpt * 4) as usize;
                let k = [37usize, 100, 256][(cs.trailing_zeros() as usize + vpt as usize) % 3]
                    .min(cap / 4);
                // Full cluster, full minus a 3-element tail (n not a multiple
                // of 4), the float4 capacity plus a 3-value tail and plus a
                // full tail (one value per thread of rank 0), half, just
                // above k, short rows, and one row too long for the cluster.
                let tail = blk as usize;
                let lengths = [
                    cap,
                    cap - 3,
                    cap + 3,
                    cap + tail,
                    cap / 2 + 1,
                    k + 1,
                    k,
                    k / 2,
                    cap + tail + 1,
                ];
                let b = generated_batch(&mut rng, k, &lengths, &HINT_MODES);
                let entry = small_entry(blk, vpt);
                let label = format!("blk={blk} cs={cs} vpt={vpt} k={k}");
                for t in emu_check(exe, &b, entry, cs, blk, false, &label) {
                    seen |= t;
                }
                let free = generated_batch(&mut rng, k, &lengths, &["absent"]);
                for t in emu_check(
                    exe,
                    &free,
                    entry,
                    cs,
                    blk,
                    true,
                    &format!("{label} hint-free"),
                ) {
                    seen |= t;
                    assert!(
                        t == 0 || t & TR_FIRSTK != 0,
                        "{label}: hint-free row did not use the first k values"
                    );
                }
            }
        }
    }
    for (bit, path) in [
        (TR_ESCAPE, "escape"),
        (TR_WHOLE, "whole crossing bin"),
        (TR_RANK, "O(m²) rank"),
        (TR_NARROW, "narrowing refine"),
        (TR_GUARD, "bracket guard"),
        (TR_FIRSTK, "first-k bracket"),
    ] {
        assert!(
            seen & bit != 0,
            "no row took the {path} path (bits {seen:#x})"
        );
    }
    seen
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn local_refine_is_exact_on_every_path_and_refines_locally_only_when_all_candidates_are_rank_0s() {
    // The default build (RC_LOCAL_REFINE=1): the peers leave at (C) when the m
    // candidates fit rank 0's slab (m ≤ 4·BLK); larger crossing bins keep the
    // striped slabs and (D). every_path_exact also holds the default build's
    // constructed rows to their expected traces.
    let Some(exe) = emulator() else { return };
    let (seen, trace) = every_path_exact(exe, "local refine", 0x50A4_0007);
    assert_ne!(
        seen & TR_LOCAL,
        0,
        "no row was refined locally (bits {seen:#x})"
    );
    if trace[0] & TR_RANK != 0 {
        assert_ne!(
            trace[0] & TR_LOCAL,
            0,
            "perfect hints, m ≤ 96: {:#x}",
            trace[0]
        );
    }
    // The two-valued row's 600 candidates exceed rank 0's 256 slots.
    assert_eq!(trace[2], TR_NARROW, "two-valued row: {:#x}", trace[2]);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn coarse_merge_is_exact_on_every_path() {
    // RC_COARSE_MERGE=1 (the plan's build for clusters of 8): the crossing
    // from the group counts and the crossing group's bins, winners placed by
    // rank. Every path of the default build (generator suite, here on every
    // CS), the constructed rows' expected traces, soak rounds.
    let Some(exe) = emulator_with(&["RC_COARSE_MERGE=1"]) else {
        return;
    };
    let (seen, _) = every_path_exact(exe, "coarse merge", 0x50A4_0009);
    assert_ne!(seen & TR_LOCAL, 0, "no row was refined locally ({seen:#x})");
}

/// A build of reg_clus through the generator suite, the constructed rows and
/// two soak rounds (seed `soak_seed`), every launch checked exact: the union
/// of the suite's path bits and the constructed rows' traces.
fn every_path_exact(exe: &Path, label: &str, soak_seed: u64) -> (u32, Vec<u32>) {
    let seen = generator_suite(exe);
    let trace = constructed_paths_as_expected(exe, &format!("constructed, {label}"));
    soak_rounds(exe, 2, soak_seed);
    (seen, trace)
}

/// The constructed rows, each checked exact, took the paths they were built
/// for (every build of reg_clus: its knobs change how a path runs, not which
/// path a row takes); their trace bits.
fn constructed_paths_as_expected(exe: &Path, label: &str) -> Vec<u32> {
    let trace = constructed_trace(exe, label);
    assert_eq!(
        trace[0] & (TR_ESCAPE | TR_NARROW),
        0,
        "perfect hints: {:#x}",
        trace[0]
    );
    assert_ne!(
        trace[0] & (TR_WHOLE | TR_RANK),
        0,
        "perfect hints: {:#x}",
        trace[0]
    );
    assert_eq!(
        trace[1] & (TR_ESCAPE | TR_FIRSTK),
        TR_FIRSTK,
        "degenerate hints: {:#x}",
        trace[1]
    );
    assert_eq!(
        trace[4],
        TR_FIRSTK | TR_ESCAPE | TR_GUARD,
        "degenerate hints, flat head"
    );
    assert_eq!(trace[5], TR_ESCAPE, "fewer than k values in the bracket");
    assert_eq!(trace[2], TR_NARROW, "two-valued row");
    assert_eq!(
        trace[3] & TR_ESCAPE,
        TR_ESCAPE,
        "row longer than the cluster"
    );
    trace
}

/// The path-trace bits of the constructed rows, each row checked exact.
fn constructed_trace(exe: &Path, label: &str) -> Vec<u32> {
    let (b, blk, cs, vpt) = constructed_path_rows();
    emu_check(exe, &b, small_entry(blk, vpt), cs, blk, false, label)
}

/// Rows built to take each reg_clus path on a small cluster (64 threads,
/// VPT 2, CS 4, k 100), in the order `constructed_paths_as_expected`
/// checks: (batch, BLK, CS, VPT).
fn constructed_path_rows() -> (Batch, u32, u32, u32) {
    let (blk, cs, vpt) = (64u32, 4u32, 2u32);
    let k = 100usize;
    let n = 2000usize;
    let spread: Vec<f32> = (0..n).map(|i| ((i * 7919) % n) as f32).collect();
    // Perfect hints of distinct values: the crossing bin holds the k-th
    // value alone (or with few neighbours) → whole or O(m²) rank.
    let perfect = reference_topk(&spread, k);
    // All hints on one position: Tv == GMAX, the hint bracket is rejected
    // and the first k values bracket instead.
    let degenerate = vec![3; k];
    // ... and when the first k values are all equal too, the guard sends the
    // row to the whole-row escape.
    let mut flat_head = spread.clone();
    for x in flat_head.iter_mut().take(k) {
        *x = 5.0;
    }
    // Hints on only the two largest values: a valid bracket with fewer than
    // k values at or above Tv, so the scan pins the (uncounted) trash bin
    // and the row takes the escape.
    let top = reference_topk(&spread, 2);
    let two_top: Vec<i32> = (0..k).map(|i| top[i % 2]).collect();
    // The threshold value repeated 600 times (hints bracket [1, 2]): the
    // crossing bin holds 600 > 96 candidates, the refine narrows in key space.
    let two: Vec<f32> = (0..n)
        .map(|i| match i {
            0..=49 => 2.0,
            50..=649 => 1.0,
            _ => 0.0,
        })
        .collect();
    let two_hints: Vec<i32> = (0..k as i32).collect();
    // Too long for the cluster's registers and rank 0's tail → escape.
    let long: Vec<f32> = (0..((cs * blk * vpt * 4) + blk) as usize + 8)
        .map(|i| i as f32)
        .collect();
    let long_hints = reference_topk(&long, k);
    let b = batch(
        &[spread.clone(), spread.clone(), two, long, flat_head, spread],
        &[
            perfect,
            degenerate.clone(),
            two_hints,
            long_hints,
            degenerate,
            two_top,
        ],
        k,
    );
    (b, blk, cs, vpt)
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_phase_probe_marks_every_path_in_order() {
    // The probe build of the constructed rows: exact (emu_check); every
    // rank passes one histogram pass and the cluster merge; rows that escape
    // leave from the verify mark, the others pass the emit rendezvous.
    let Some(exe) = emulator_with(&["SS_PHASE_PROBE=1"]) else {
        return;
    };
    let (b, blk, cs, vpt) = constructed_path_rows();
    let trace = emu_check(
        exe,
        &b,
        small_entry(blk, vpt),
        cs,
        blk,
        false,
        "probe constructed",
    );
    let (summary, ctas) = crate::support::ss::last_probed_launch("probe constructed");
    assert_eq!(summary.ctas, b.rows * cs as usize, "a stamp row per rank");
    for cta in &ctas {
        let row = cta.cta / cs as usize;
        let mut chain = vec!["length", "threshold", "pass", "hand-off", "verify"];
        if trace[row] & TR_ESCAPE == 0 {
            chain.push("emit");
        }
        chain.push("finish");
        assert_eq!(
            cta.marks,
            chain,
            "row {row} rank {} ({:#x})",
            cta.cta % cs as usize,
            trace[row]
        );
        assert_eq!(cta.passes, 1, "row {row}");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn randomized_rows_match_the_reference() {
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let generators = row_generators();
    for round in 0..6 {
        let blk = if round % 2 == 0 { 64u32 } else { 128 };
        let cs = 1u32 << rng.random_range(1..=3);
        let vpt = 1u32 << rng.random_range(0..=2);
        let cap = (cs * blk * vpt * 4) as usize;
        let k = rng.random_range(1..=cap / 3);
        let mut rows = Vec::new();
        let mut hints = Vec::new();
        for _ in 0..12 {
            let n = rng.random_range(k + 1..=cap + blk as usize);
            let g = &generators[rng.random_range(0..generators.len())];
            let row = (g.generate)(&mut rng as &mut dyn RngCore, n);
            let mode = HINT_MODES[rng.random_range(0..HINT_MODES.len())];
            hints.push(hints_for(&row, k, mode, &mut rng));
            rows.push(row);
        }
        let b = batch(&rows, &hints, k);
        let label = format!("random #{round} blk={blk} cs={cs} vpt={vpt} k={k}");
        emu_check(exe, &b, small_entry(blk, vpt), cs, blk, round == 5, &label);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_hazard_rows_are_exact() {
    // Randomized rounds (crate::support::ss::soak_seeds: a few on CI, any number with
    // GVR_EMU_SOAK): certify generators with hazards laid over them, every
    // hint mode, lengths from empty to twice the cluster's capacity, on small
    // clusters of any CS / VPT and k, hinted or hint-free.
    let Some(exe) = emulator() else { return };
    soak_rounds(exe, 4, 0x50A4_0003);
}

/// Randomized soak rounds (crate::support::ss::soak_seeds: `rounds` on CI, any
/// number with GVR_EMU_SOAK), each launch checked exact.
fn soak_rounds(exe: &Path, rounds: usize, base: u64) {
    for seed in crate::support::ss::soak_seeds(rounds, base) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let blk = [64u32, 128][rng.random_range(0..2)];
        let cs = 1u32 << rng.random_range(1..=3);
        let vpt = 1u32 << rng.random_range(0..=2);
        let cap = (cs * blk * vpt * 4) as usize;
        let tail = blk as usize;
        let k = rng.random_range(1..=cap / 3);
        let hint_free = rng.random_bool(0.25);
        let lengths: Vec<usize> = (0..6)
            .map(|_| match rng.random_range(0..8) {
                0 => rng.random_range(0..=k),
                1 => rng.random_range(cap + tail + 1..=2 * cap),
                _ => rng.random_range(k + 1..=cap + tail),
            })
            .collect();
        let (b, labels) = crate::support::ss::soak_batch(&mut rng, k, &lengths, hint_free);
        let label = format!(
            "soak seed {seed}: blk={blk} cs={cs} vpt={vpt} k={k} hint_free={hint_free} rows {labels:?}"
        );
        emu_check(exe, &b, small_entry(blk, vpt), cs, blk, hint_free, &label);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_suites_sampling_adversaries_are_exact_in_the_kernel_source() {
    // certify's hint-free rows whose top values hide from a strided look,
    // and sorted rows, on the BLK-1024 entry whose cluster holds them.
    let Some(exe) = emulator() else { return };
    for k in [512usize, 1024] {
        for case in gvr_bench::exact::sampling_adversaries(k) {
            let b = &case.batch;
            let Some((vpt, cs)) = [(2u32, 8u32), (4, 4), (4, 8)]
                .into_iter()
                .find(|&(vpt, cs)| b.n_max() <= (cs * 1024 * vpt * 4 + 1024) as usize)
            else {
                continue;
            };
            let entry = vpt.trailing_zeros();
            for hint_free in [false, true] {
                let label = format!(
                    "{} k={k} cs={cs} vpt={vpt} hint_free={hint_free}",
                    case.name
                );
                emu_check(exe, b, entry, cs, 1024, hint_free, &label);
            }
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn compiled_entries_at_full_size_are_exact() {
    // The three BLK-1024 entry bodies at route-sized rows (k = 512/1024,
    // 4096-slot slabs): one cluster size each, a few rows.
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for (entry, vpt, cs, n, k) in [
        (0u32, 1u32, 8u32, 32_768usize, 512usize),
        (1, 2, 4, 30_001, 1024),
        (2, 4, 2, 32_771, 512),
        // v32's 2^17 + 15 at K = 2048: 15 values past the float4s.
        (2, 4, 8, 131_087, 2048),
    ] {
        let cap = (cs * 1024 * vpt * 4) as usize;
        assert!(n <= cap + 1024);
        let gens = row_generators();
        let mut rows = Vec::new();
        let mut hints = Vec::new();
        for (g, mode) in [
            (0usize, "perfect"),
            (0, "random"),
            (1, "perfect"),
            (2, "absent"),
        ] {
            let row = (gens[g].generate)(&mut rng as &mut dyn RngCore, n);
            hints.push(hints_for(&row, k, mode, &mut rng));
            rows.push(row);
        }
        let b = batch(&rows, &hints, k);
        emu_check(
            exe,
            &b,
            entry,
            cs,
            1024,
            false,
            &format!("entry {entry} cs={cs} n={n} k={k}"),
        );
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn nan_rows_keep_the_output_structure() {
    // NaN order is implementation-specific: k unique in-range
    // indices, whether NaN sits in the hints (bracket guard → escape) or
    // only in the row (trash bin).
    let Some(exe) = emulator() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let n = 1500usize;
    let k = 64usize;
    let mut rows = Vec::new();
    let mut hints = Vec::new();
    for r in 0..4 {
        let mut row: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
        for i in (r..n).step_by(37) {
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
    emu_check(exe, &b, small_entry(64, 2), 4, 64, false, "nan rows");
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rounds_of_varlen_calls_are_exact() {
    // Randomized production varlen calls (certify's varlen soak batches,
    // 1–8 requests, last rows up to 6,000 wide, k up to 256) on small
    // clusters of 4,096 values, request-level hints or hint-free.
    let Some(exe) = emulator() else { return };
    let limits = VarlenLimits {
        requests: 8,
        width: 6_000,
    };
    for (case, name) in crate::support::ss::varlen_soak_rounds(0x50A4_0013, [37, 128, 256], limits)
    {
        let v = case.check.varlen.clone().expect("varlen");
        for hint_free in [false, true] {
            let label = format!("{name} hint_free={hint_free}");
            let (out, _) = emu_run(
                exe,
                &case.input,
                small_entry(64, 4),
                4,
                64,
                hint_free,
                (v.next_n, v.compress_ratio.trailing_zeros()),
                &label,
            );
            check_rows(&case.check, &out, &label);
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn production_varlen_calls_are_exact_in_the_kernel_source() {
    // The varlen entry on reg_clus: kv_lens per request,
    // next_n rows per request, compress ratio, request-level hints or
    // hint-free; zero-window, short and clustered rows in one launch.
    let Some(exe) = emulator() else { return };
    let k = 128;
    for (next_n, cr) in [(1u32, 1u32), (2, 1), (3, 4), (4, 4)] {
        let widths = [k as u32 / 2, k as u32 + 1, 2_000, 3_000];
        let kv_lens = crate::support::ss::varlen_kv(next_n, cr, &widths);
        let crate::support::ss::VarlenEmuCase { check, input } =
            crate::support::ss::varlen_emu_case(k, next_n, cr, &kv_lens, 4242 + next_n as u64);
        // BLK 64, VPT 4, CS 4: 4·64·4·4 = 4,096 values per cluster.
        for hint_free in [false, true] {
            let label = format!("varlen next_n {next_n} cr {cr} hint_free {hint_free}");
            let (out, _) = emu_run(
                exe,
                &input,
                small_entry(64, 4),
                4,
                64,
                hint_free,
                (next_n, cr.trailing_zeros()),
                &label,
            );
            check_rows(&check, &out, &label);
        }
    }
}
