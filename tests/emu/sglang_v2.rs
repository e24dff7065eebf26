//! Runs the real `kernels/baselines/sglang_v2.cu` (the `sglang-v2` arm) on
//! the CPU: the host emulator (tests/ss_emu, g++; skipped with a note where
//! g++ is missing) executes one whole call as the arm launches it — the plan
//! kernel, the cluster kernel when `sglang_v2::route` sends long rows to
//! clusters (clusters of 8 CTAs with DSMEM emulated), then the per-row kernel
//! — and every row is checked exact. Constructed rows drive every path
//! (trivial, register2, register4, streaming, cluster8), every tie branch
//! (all ties needed, ballot ranks, radix rounds, radix rounds ending on equal
//! keys) and the exact fallback for a threshold bin above the 1,024-entry tie
//! buffer (narrowing rounds, the narrowed set needed whole, or one key),
//! checked by the kernel's path trace; the fallback counter the arm reports
//! must equal the rows that took it. Mutations of the kernel text must fail.
//! Plus the NVRTC gate of the entries' budget: 32 registers (two 1024-thread
//! CTAs per SM, as the design), no spill, no stack.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::support::ss::{batch, emulator_output, gxx_available, kernel_emulator};
use gvr_bench::arms::baselines::sglang_v2::{self, long_threshold, route, Route, RowPath};
use gvr_bench::exact::check_batch;
use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{declared_entries, SGLANG_V2};
use gvr_bench::grid::Batch;

const DRIVER: &str = include_str!("../ss_emu/sglang_main.cpp");

/// SG_TR_* of sglang_v2.cu.
const TR_TRIVIAL: u32 = 1;
const TR_REG: u32 = 2;
const TR_STREAM: u32 = 4;
const TR_CLUSTER: u32 = 8;
const TR_FALLBACK: u32 = 16;
const TR_TIE_ALL: u32 = 32;
const TR_TIE_RANK: u32 = 64;
const TR_TIE_RADIX: u32 = 128;
const TR_TIE_EQUAL: u32 = 256;
const TR_DIRECT_ALL: u32 = 512;
const TR_DIRECT_EQUAL: u32 = 1024;
const TR_NARROW: u32 = 2048;

#[test]
#[cfg_attr(
    any(no_gxx, no_nvrtc),
    ignore = "needs g++ and libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; LD_LIBRARY_PATH)"
)]
fn entries_fit_32_registers_without_spills() {
    let declared = declared_entries(SGLANG_V2.code);
    assert_eq!(declared.len(), 5, "{declared:?}");
    if !crate::support::nvrtc::nvrtc_or_skip() {
        return;
    }
    let report = compile_report(&SGLANG_V2, &[], DEFAULT_ARCH).expect("sglang_v2.cu compiles");
    println!("{}", report.log);
    for name in &declared {
        crate::support::nvrtc::assert_entry_fits(&report, name, sglang_v2::BLOCK, 0);
    }
    // __launch_bounds__(1024, 2): two CTAs per SM, 32 registers each thread.
    let hot: Vec<String> = declared
        .iter()
        .filter(|e| *e != sglang_v2::ENTRY_PLAN)
        .cloned()
        .collect();
    crate::support::nvrtc::assert_registers_at_most(&report, &hot, 32, "sglang_v2.cu");
    crate::support::nvrtc::assert_no_spill_in_log(&report.log, "sglang_v2.cu");
}

fn build(kernel: &str, tag: &str) -> PathBuf {
    kernel_emulator(
        &format!("sglang-v2-emu{tag}"),
        true,
        ("sglang_v2.cu", kernel),
        ("sglang_main.cpp", DRIVER),
        &[],
    )
}

/// The emulator of the real kernel, built once; `None` without g++.
fn emulator() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| gxx_available("sglang_v2.cu").then(|| build(SGLANG_V2.code, "")))
        .as_deref()
}

/// One emulated call.
struct Call {
    out: Vec<i32>,
    trace: Vec<u32>,
    /// Workspace after the call: rows that took the fallback, the plan's
    /// threshold, its long rows as (row, n).
    fallback: u32,
    threshold: u32,
    longs: Vec<(u32, u32)>,
}

fn entry_id(row: RowPath) -> u32 {
    match row {
        RowPath::Register2 => 0,
        RowPath::Register4 => 1,
        RowPath::Streaming => 2,
    }
}

/// Run the call the arm makes on `b` (or the forced `route`); `plan_only`
/// stops after the plan kernel. Panics, naming `label`, if the emulator fails.
fn call(exe: &Path, b: &Batch, forced: Option<Route>, plan_only: bool, label: &str) -> Call {
    let r = forced.unwrap_or_else(|| route(b.rows, b.n_max()));
    let header = [
        0x55EE_5C07u32,
        b.rows as u32,
        b.npad as u32,
        b.k as u32,
        entry_id(r.row),
        r.clusters.unwrap_or(0),
        u32::from(r.clusters.is_some()),
        u32::from(plan_only),
    ];
    let raw = emulator_output(exe, label, &header, b);
    let words: Vec<u32> = raw
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let slots = b.rows * b.k;
    assert!(words.len() >= slots + b.rows + 3, "{label}: short output");
    let (fallback, threshold, nlong) = (
        words[slots + b.rows],
        words[slots + b.rows + 1],
        words[slots + b.rows + 2] as usize,
    );
    let list = &words[slots + b.rows + 3..];
    assert_eq!(list.len(), 2 * nlong, "{label}: long-row list");
    Call {
        out: words[..slots].iter().map(|&w| w as i32).collect(),
        trace: words[slots..slots + b.rows].to_vec(),
        fallback,
        threshold,
        longs: list.chunks_exact(2).map(|p| (p[0], p[1])).collect(),
    }
}

/// Run and check: every row exact, the fallback counter equals the rows
/// whose trace took the fallback, and the plan's long rows are the rows
/// longer than its threshold, which is `long_threshold` of the lengths.
fn run_exact(exe: &Path, b: &Batch, forced: Option<Route>, label: &str) -> Call {
    let c = call(exe, b, forced, false, label);
    let status = check_batch(b, &c.out);
    assert!(
        status.is_exact(),
        "{label}: {status:?} (trace {:x?})",
        c.trace
    );
    let fell_back = c.trace.iter().filter(|&&t| t & TR_FALLBACK != 0).count();
    assert_eq!(
        c.fallback as usize, fell_back,
        "{label}: the reported fallback count must be the rows that took it"
    );
    let lengths: Vec<usize> = b.n.iter().map(|&n| n as usize).collect();
    assert_eq!(c.threshold as usize, long_threshold(&lengths), "{label}");
    let want: Vec<(u32, u32)> = lengths
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > c.threshold as usize)
        .map(|(r, &n)| (r as u32, n as u32))
        .collect();
    assert_eq!(c.longs, want, "{label}: long rows");
    c
}

/// Every bit of `want` in row `r`'s trace.
fn assert_path(c: &Call, r: usize, want: u32, label: &str) {
    assert_eq!(
        c.trace[r] & want,
        want,
        "{label} row {r}: trace {:#x} lacks {want:#x}",
        c.trace[r]
    );
}

fn forced(row: RowPath) -> Option<Route> {
    Some(Route {
        row,
        clusters: None,
    })
}

/// Distinct values in [0, 0.5): the bulk of a constructed row, all below its
/// planted values.
fn low(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % n) as f32 / n as f32 * 0.5)
        .collect()
}

/// Distinct values spread over the 30 binades of fp16's range: every 12-bit
/// bin holds few of them, so the threshold bin is ranked by ballots.
fn wide(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7919) % n) as f32 / n as f32 * 30.0 - 15.0).exp2())
        .collect()
}

/// Rows of length `n` for top-`k` that drive each tie branch and each
/// fallback mode, with the trace bits each must show.
fn tie_rows(n: usize, k: usize) -> Vec<(&'static str, Vec<f32>, u32)> {
    let mut rows = Vec::new();
    rows.push(("rank", wide(n), TR_TIE_RANK));
    // Exactly k equal top values: the bin is needed whole.
    let mut all = low(n);
    all[100..100 + k].fill(5.0);
    rows.push(("all ties fit", all, TIE_ALL_OR_FALLBACK(k)));
    // 600 distinct values inside one 12-bit (and 10-bit) bin, k = 512 of them.
    let mut radix = low(n);
    for (i, x) in radix.iter_mut().take(600).enumerate() {
        *x = 1.0 + i as f32 * 1e-5;
    }
    rows.push(("radix", radix, if k < 600 { TR_TIE_RADIX } else { 0 }));
    // 400 distinct + 300 equal values in one bin: the radix ends on equal keys.
    let mut equal = low(n);
    for (i, x) in equal.iter_mut().take(400).enumerate() {
        *x = 1.0 + (i + 1) as f32 * 2e-5;
    }
    equal[400..700].fill(1.0);
    rows.push((
        "radix to equal keys",
        equal,
        if k > 400 && k < 700 {
            TR_TIE_RADIX | TR_TIE_EQUAL
        } else {
            0
        },
    ));
    // 3,000 distinct values in one bin: the fallback narrows to a ranked set.
    let mut over = low(n);
    for (i, x) in over.iter_mut().take(3000).enumerate() {
        *x = 1.0 + i as f32 * 5e-6;
    }
    rows.push(("bin overflow", over, TR_FALLBACK | TR_NARROW));
    rows.push((
        "constant",
        vec![1.0; n],
        TR_FALLBACK | TR_NARROW | TR_DIRECT_EQUAL,
    ));
    rows.push((
        "two-valued",
        (0..n).map(|i| if i % 2 == 0 { 1.0 } else { 2.0 }).collect(),
        TR_FALLBACK | TR_DIRECT_EQUAL,
    ));
    let mut inf = low(n);
    inf.iter_mut().step_by(3).for_each(|x| *x = f32::INFINITY);
    rows.push(("+inf storm", inf, TR_FALLBACK | TR_DIRECT_EQUAL));
    let mut ninf = vec![f32::NEG_INFINITY; n];
    ninf[..100].copy_from_slice(&low(100));
    rows.push(("-inf majority", ninf, TR_FALLBACK | TR_DIRECT_EQUAL));
    rows.push((
        "signed zeros",
        (0..n)
            .map(|i| if i % 2 == 0 { -0.0 } else { 0.0 })
            .collect(),
        TR_FALLBACK,
    ));
    rows
}

/// The bits the "all ties fit" row shows: k planted equal values are one
/// bin; it overflows the buffer (needed whole, no narrowing) when k > 1024.
#[allow(non_snake_case)]
fn TIE_ALL_OR_FALLBACK(k: usize) -> u32 {
    if k > 1024 {
        TR_FALLBACK | TR_DIRECT_ALL
    } else {
        TR_TIE_ALL
    }
}

fn check_tie_rows(exe: &Path, path: RowPath, n: usize, k: usize) {
    let rows = tie_rows(n, k);
    let b = batch(
        &rows.iter().map(|(_, r, _)| r.clone()).collect::<Vec<_>>(),
        &[],
        k,
    );
    let label = format!("{path:?} n={n} k={k}");
    let c = run_exact(exe, &b, forced(path), &label);
    let bit = if path == RowPath::Streaming {
        TR_STREAM
    } else {
        TR_REG
    };
    for (r, (name, _, want)) in rows.iter().enumerate() {
        assert_path(&c, r, bit | want, &format!("{label} {name}"));
        assert_eq!(c.trace[r] & TR_CLUSTER, 0);
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn register2_rows_take_every_tie_branch_and_the_fallback() {
    let Some(exe) = emulator() else { return };
    check_tie_rows(exe, RowPath::Register2, 8000, 512);
    check_tie_rows(exe, RowPath::Register2, 8192, 2048);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn register4_rows_take_every_tie_branch_and_the_fallback() {
    let Some(exe) = emulator() else { return };
    check_tie_rows(exe, RowPath::Register4, 16_384, 512);
    check_tie_rows(exe, RowPath::Register4, 12_007, 1024);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn streaming_rows_take_every_tie_branch_and_the_fallback() {
    let Some(exe) = emulator() else { return };
    check_tie_rows(exe, RowPath::Streaming, 20_003, 512);
    check_tie_rows(exe, RowPath::Streaming, 16_385, 2048);
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn short_rows_ragged_tails_and_poisoned_pads() {
    let Some(exe) = emulator() else { return };
    for k in [512usize, 1024, 2048] {
        let lens = [0, 1, 3, k - 1, k, k + 1, k + 2, 3 * k + 37, 8191, 8189];
        let rows: Vec<Vec<f32>> = lens.iter().map(|&n| low(n)).collect();
        let b = batch(&rows, &[], k);
        let plan = route(b.rows, b.n_max());
        assert_eq!(plan.row, RowPath::Register2);
        let c = run_exact(exe, &b, None, &format!("short k={k}"));
        for (r, &n) in lens.iter().enumerate() {
            let want = if n <= k { TR_TRIVIAL } else { TR_REG };
            assert_path(&c, r, want, &format!("short k={k}"));
        }
        // The same rows on every per-row entry.
        for path in [RowPath::Register4, RowPath::Streaming] {
            run_exact(exe, &b, forced(path), &format!("short k={k} {path:?}"));
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn adversarial_suite_is_exact() {
    let Some(exe) = emulator() else { return };
    for k in [512usize, 2048] {
        for case in gvr_bench::exact::suite(k) {
            // Of the long rows (minutes in emulation; the GPU test runs them
            // all) only the ragged 262K row, at one k: clusters of 8.
            if case.batch.n_max() > 70_000 && !(k == 2048 && case.name == "large_n262127") {
                continue;
            }
            run_exact(exe, &case.batch, None, &format!("{} k={k}", case.name));
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn soak_rows_are_exact_on_every_per_row_entry() {
    let Some(exe) = emulator() else { return };
    for seed in crate::support::ss::soak_seeds(3, 0x5c1a_2000) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let k = [512usize, 1024, 2048][(seed % 3) as usize];
        let lengths = [k + 1, 3 * k + 2, 8192, 7001, 16_000, 12_289];
        let (b, labels) = crate::support::ss::soak_batch(&mut rng, k, &lengths, true);
        for path in [RowPath::Register4, RowPath::Streaming] {
            run_exact(
                exe,
                &b,
                forced(path),
                &format!("seed {seed} {path:?} {labels:?}"),
            );
        }
        let short: Vec<Vec<f32>> = (0..3).map(|r| b.row(r).to_vec()).collect();
        run_exact(
            exe,
            &batch(&short, &[], k),
            forced(RowPath::Register2),
            &format!("seed {seed} reg2"),
        );
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn long_rows_run_on_clusters_of_eight() {
    let Some(exe) = emulator() else { return };
    let n = 70_001;
    let k = 512;
    let mut rows: Vec<(&str, Vec<f32>, u32)> = tie_rows(n, k)
        .into_iter()
        .filter(|(name, _, _)| {
            ["rank", "radix", "bin overflow", "constant", "+inf storm"].contains(name)
        })
        .collect();
    // 10-bit bins are 4x wider: a random row's threshold bin holds more ties.
    for (_, _, want) in rows.iter_mut() {
        *want &= TR_FALLBACK;
    }
    rows.push(("short", low(3000), 0));
    rows.push(("a row the per-row kernel streams", low(40_000), 0));
    let b = batch(
        &rows.iter().map(|(_, r, _)| r.clone()).collect::<Vec<_>>(),
        &[],
        k,
    );
    let plan = route(b.rows, b.n_max());
    assert_eq!(plan.clusters, Some(rows.len() as u32));
    assert_eq!(plan.row, RowPath::Streaming);
    let c = run_exact(exe, &b, None, "cluster");
    for (r, (name, row, want)) in rows.iter().enumerate() {
        let label = format!("cluster {name}");
        if row.len() > 65_536 {
            assert_path(&c, r, TR_CLUSTER | want, &label);
            assert_eq!(
                c.trace[r] & (TR_STREAM | TR_REG),
                0,
                "{label}: {:#x}",
                c.trace[r]
            );
        } else {
            assert_eq!(c.trace[r] & TR_CLUSTER, 0, "{label}");
        }
    }
    // The cluster's tie branches: rank 0 resolves what the 8 CTAs pushed.
    let all_bits = c.trace.iter().fold(0, |a, t| a | t);
    for bit in [TR_TIE_RANK | TR_TIE_RADIX, TR_DIRECT_EQUAL, TR_NARROW] {
        assert_ne!(all_bits & bit, 0, "cluster rows never took {bit:#x}");
    }
    // Fewer persistent clusters than long rows: each cluster loops.
    let looped = Route {
        row: RowPath::Streaming,
        clusters: Some(2),
    };
    run_exact(exe, &b, Some(looped), "cluster, 2 clusters looping");
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn cluster_rows_cover_every_tie_branch_and_ragged_tails() {
    let Some(exe) = emulator() else { return };
    let k = 1024;
    let n = 65_539; // a 3-element tail on the last rank
    let mut all = low(n);
    all[1000..1000 + k].fill(5.0);
    // 600 values above the bin, then 300 distinct and 300 equal in it.
    let mut equal = low(n);
    for (i, x) in equal.iter_mut().take(600).enumerate() {
        *x = 5.0 + i as f32 * 0.01;
    }
    for (i, x) in equal.iter_mut().skip(600).take(300).enumerate() {
        *x = 1.0 + (i + 1) as f32 * 2e-5;
    }
    equal[900..1200].fill(1.0);
    let mut two_level = low(n);
    for (i, x) in two_level.iter_mut().enumerate().skip(n - 3000) {
        *x = if i % 2 == 0 { 3.0 } else { 3.0 + 1e-6 };
    }
    let rows = vec![all, equal, two_level];
    let b = batch(&rows, &[], k);
    let c = run_exact(exe, &b, None, "cluster ties");
    assert_path(&c, 0, TR_CLUSTER | TR_TIE_ALL, "cluster all fit");
    assert_path(
        &c,
        1,
        TR_CLUSTER | TR_TIE_RADIX | TR_TIE_EQUAL,
        "cluster equal keys",
    );
    assert_path(
        &c,
        2,
        TR_CLUSTER | TR_FALLBACK | TR_NARROW | TR_DIRECT_EQUAL,
        "cluster overflow",
    );
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn the_plan_moves_the_threshold_to_keep_the_pool() {
    let Some(exe) = emulator() else { return };
    // 31 rows above 64K: the threshold moves to 96K and only the two rows
    // above it go to the clusters; the per-row kernel streams the rest.
    let mut lens = vec![66_000usize; 31];
    lens.extend([100_000, 100_003]);
    let rows: Vec<Vec<f32>> = lens.iter().map(|&n| low(n)).collect();
    let b = batch(&rows, &[], 2048);
    let c = run_exact(exe, &b, None, "pool");
    assert_eq!(c.threshold, 98_304);
    assert_eq!(c.longs, vec![(31, 100_000), (32, 100_003)]);
    for r in 0..31 {
        assert_path(&c, r, TR_STREAM, "pool streamed");
        assert_eq!(c.trace[r] & TR_CLUSTER, 0);
    }
    assert_path(&c, 31, TR_CLUSTER, "pool clustered");
    assert_path(&c, 32, TR_CLUSTER, "pool clustered");
    // A route without clusters (the arm's above 128 rows) streams every
    // row; the plan still names its long rows.
    let many: Vec<Vec<f32>> = (0..3).map(|_| low(70_000)).collect();
    let b = batch(&many, &[], 512);
    let flat = Route {
        row: RowPath::Streaming,
        clusters: None,
    };
    let c = run_exact(exe, &b, Some(flat), "no clusters");
    assert!(c.trace.iter().all(|t| t & TR_CLUSTER == 0));
    let c = call(exe, &b, None, true, "plan only");
    assert_eq!((c.threshold, c.longs.len()), (65_536, 3));
}

/// A mutant of the kernel text must fail `check`.
fn mutant_fails(
    from: &str,
    to: &str,
    tag: &str,
    check: impl FnOnce(&Path) + std::panic::UnwindSafe,
) {
    assert!(SGLANG_V2.code.contains(from), "mutation site moved: {from}");
    let text = SGLANG_V2.code.replacen(from, to, 1);
    let exe = build(&text, tag);
    let caught = std::panic::catch_unwind(|| check(&exe));
    assert!(caught.is_err(), "mutation {tag} went unnoticed");
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn mutations_are_caught() {
    if emulator().is_none() {
        return;
    }
    let k = 512;
    let overflow = batch(&[tie_rows(8000, k)[4].1.clone()], &[], k);
    // No fallback: the published design's overflow (ties beyond the buffer
    // dropped) leaves slots unwritten.
    mutant_fails(
        "    if (m > SG_TIE_CAP) {\n        // The exact fallback",
        "    if (false) {\n        // The exact fallback",
        "-nofallback",
        |exe| {
            run_exact(exe, &overflow, None, "mutant: no fallback");
        },
    );
    // The ballot rank orders keys the wrong way.
    let rank = batch(&[low(5000)], &[], k);
    mutant_fails(
        "before = kj > kt || (kj == kt",
        "before = kj < kt || (kj == kt",
        "-rank",
        |exe| {
            run_exact(exe, &rank, None, "mutant: rank order");
        },
    );
    // The cluster all-reduce misses the last peer's histogram.
    let long = batch(&[low(70_001)], &[], k);
    mutant_fails(
        "for (u32 q = 0; q < SG_CL_SIZE; ++q) s += *sg_map(&local[bin], q);",
        "for (u32 q = 0; q + 1u < SG_CL_SIZE; ++q) s += *sg_map(&local[bin], q);",
        "-allreduce",
        |exe| {
            run_exact(exe, &long, None, "mutant: all-reduce");
        },
    );
    // The fallback counter is not counted: the reported count is wrong.
    mutant_fails(
        "        if (threadIdx.x == 0u) atomicAdd(&ws[SG_WS_FALLBACK], 1u);",
        "",
        "-nocount",
        |exe| {
            run_exact(exe, &overflow, None, "mutant: uncounted fallback");
        },
    );
}
