//! Runs the real `kernels/baselines/radix.cu` on the CPU and checks every
//! tier exact: per-row (512 threads), per-row-256, split (512), split-1024
//! and the three-launch multi-pass tier.
//!
//! The kernel is compiled with g++ against `tests/ss_emu/common.cuh` (every
//! CUDA thread a fiber switched at barriers and warp collectives; a scalar
//! load past a row's n aborts, a masked vector lane past n reads +3e38
//! poison) plus the block scans and `find_crossing` of the real
//! `kernels/prim/common.cuh`, and driven by `tests/ss_emu/radix_main.cpp`:
//! each call runs the tier's launch(es) with CTAs one at a time (a shuffled
//! order after the first call, so another CTA is elected last), on a
//! workspace whose candidate space starts as garbage; after every call the
//! state words must be zero again. Two calls per case, the second on the
//! first one's workspace. Workspace sizes come from the host's own layout
//! functions, so a host/kernel layout mismatch shows as a guard-word
//! overwrite. Planted bugs in the kernel text must be caught.
//!
//! It does not model the memory model (fences, L1 staleness) or true
//! interleaving between barriers; `tests/gpu/baselines.rs` runs every tier
//! on the GPU. Skips (passes with a note) when g++ is not installed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::ss::{batch, gxx_available, kernel_emulator, run_emulator, ss_header};
use gvr_bench::arms::baselines::radix::{
    self, multipass_workspace_bytes, multipass_zeroed_words, split_workspace_bytes,
};
use gvr_bench::arms::baselines::LaunchPlan;
use gvr_bench::exact::{check_batch, row_generators, suite};
use gvr_bench::gpu::sources::RADIX;
use gvr_bench::grid::Batch;

const DRIVER: &str = include_str!("../ss_emu/radix_main.cpp");
const SCANS_MARKER: &str =
    "// @PRIM_SCANS@ (replaced by prim/common.cuh's block scans and find_crossing)";
const SMS: usize = 132;

/// The emulated entry points (the driver's tier ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    PerRow = 0,
    PerRow256 = 1,
    Split = 2,
    Split1024 = 3,
    MultiPass = 4,
}

impl Tier {
    fn of(plan: &LaunchPlan) -> Tier {
        match plan.entry {
            radix::ENTRY => Tier::PerRow,
            radix::NARROW_ENTRY => Tier::PerRow256,
            radix::SPLIT_ENTRY => Tier::Split,
            radix::SPLIT_WIDE_ENTRY => Tier::Split1024,
            radix::MULTIPASS_ENTRY => Tier::MultiPass,
            other => panic!("unknown entry {other}"),
        }
    }
}

/// The block scans and `find_crossing` of the real kernels/prim/common.cuh,
/// pasted into the driver (the emulator's common.cuh has no copy of them).
fn prim_scans() -> String {
    let prim = ss_header("prim/common.cuh");
    let start = prim
        .find("template <int BLK>\n__device__ __forceinline__ u32 block_incl_scan")
        .expect("prim/common.cuh: block_incl_scan moved");
    let end = prim
        .find("// A global-memory pointer whose value")
        .expect("prim/common.cuh: the section after find_crossing moved");
    let scans = &prim[start..end];
    assert!(scans.contains("void find_crossing(") && scans.contains("struct Crossing"));
    scans.to_string()
}

fn build(kernel: &str) -> PathBuf {
    assert!(
        DRIVER.contains(SCANS_MARKER),
        "radix_main.cpp: marker moved"
    );
    let driver = DRIVER.replace(SCANS_MARKER, &prim_scans());
    kernel_emulator(
        "radix",
        false,
        ("radix.cu", kernel),
        ("radix_main.cpp", driver.as_str()),
        &[],
    )
}

/// The emulator of the kernel as the arm builds it; `None` without g++.
fn emulator() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| gxx_available("radix.cu").then(|| build(RADIX.code)))
        .as_deref()
}

/// (workspace words, leading words that must be zero between calls).
fn workspace(tier: Tier, b: &Batch, bpr: usize) -> (usize, usize) {
    match tier {
        Tier::PerRow | Tier::PerRow256 => (0, 0),
        Tier::Split | Tier::Split1024 => (
            split_workspace_bytes(b.rows, bpr, b.k) / 4,
            b.rows.div_ceil(4) * 4,
        ),
        Tier::MultiPass => (
            multipass_workspace_bytes(b.rows, b.npad) / 4,
            multipass_zeroed_words(b.rows),
        ),
    }
}

/// Run `calls` calls of `tier` with `bpr` CTAs per row on the emulator
/// `exe`; returns the last call's output. Panics if the emulator fails.
fn run_calls(
    exe: &Path,
    label: &str,
    tier: Tier,
    b: &Batch,
    bpr: usize,
    calls: u32,
    seed: u32,
) -> Vec<i32> {
    let (ws_words, zeroed) = workspace(tier, b, bpr);
    let words = [
        0x55EE_0A01,
        tier as u32,
        b.rows as u32,
        b.npad as u32,
        b.k as u32,
        bpr as u32,
        u32::try_from(ws_words).expect("workspace fits the header"),
        zeroed as u32,
        calls,
        seed,
    ];
    run_emulator(exe, label, &words, b).0
}

/// Two calls on one workspace; the second call's output must be exact.
fn check(exe: &Path, label: &str, tier: Tier, b: &Batch, bpr: usize) {
    let out = run_calls(exe, label, tier, b, bpr, 2, 0x5EED ^ b.rows as u32);
    let status = check_batch(b, &out);
    assert!(
        status.is_exact(),
        "{label} ({tier:?}, bpr {bpr}): {status:?}"
    );
}

/// Rows of the given lengths, each from a different generator family.
fn rows(lens: &[usize], k: usize, seed: u64) -> Batch {
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rows: Vec<Vec<f32>> = lens
        .iter()
        .enumerate()
        .map(|(r, &n)| {
            let g = &generators[(r + seed as usize) % generators.len()];
            (g.generate)(&mut rng as &mut dyn RngCore, n)
        })
        .collect();
    batch(&rows, &[], k)
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn every_tier_is_exact_on_mixed_rows() {
    let Some(exe) = emulator() else { return };
    // Short (n <= k, n = 0), k + 1, lengths off every multiple of 4, and rows
    // long enough for the split tier's slices (n >= 16 384).
    let lens = [0usize, 3, 512, 513, 4_099, 16_385, 21_003];
    for seed in 0..3u64 {
        let b = rows(&lens, 512, seed);
        for tier in [Tier::PerRow, Tier::PerRow256] {
            check(exe, &format!("mixed seed {seed}"), tier, &b, 1);
        }
        for tier in [Tier::Split, Tier::Split1024] {
            for bpr in [2, 5] {
                check(exe, &format!("mixed seed {seed}"), tier, &b, bpr);
            }
        }
        for bpr in [1, 3, 8] {
            check(exe, &format!("mixed seed {seed}"), Tier::MultiPass, &b, bpr);
        }
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn every_generator_family_is_exact_at_every_k() {
    let Some(exe) = emulator() else { return };
    let generators = row_generators();
    for k in [512usize, 1024, 2048] {
        for (i, g) in generators.iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(i as u64 * 31 + k as u64);
            let n = 4 * k + 37 + i;
            let row = (g.generate)(&mut rng as &mut dyn RngCore, n);
            let b = batch(&[row.clone(), row[..k + 1].to_vec()], &[], k);
            let label = format!("{} k={k}", g.name);
            check(exe, &label, Tier::PerRow, &b, 1);
            check(exe, &label, Tier::MultiPass, &b, 3);
        }
    }
}

/// The adversarial suite (k = 512) on the per-row and multi-pass tiers.
#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn adversarial_suite_is_exact() {
    let Some(exe) = emulator() else { return };
    let (mut ran, mut skipped) = (Vec::new(), Vec::new());
    for case in suite(512) {
        if case.batch.rows * case.batch.npad > 1 << 19 {
            // The long-row cases run on the GPU (tests/gpu/baselines.rs).
            skipped.push(case.name);
            continue;
        }
        check(exe, &case.name, Tier::PerRow, &case.batch, 1);
        check(exe, &case.name, Tier::MultiPass, &case.batch, 4);
        ran.push(case.name);
    }
    eprintln!(
        "ran {}: {ran:?}\nskipped {}: {skipped:?}",
        ran.len(),
        skipped.len()
    );
    assert!(
        ran.len() >= 3 * skipped.len(),
        "most of the suite must run here"
    );
}

/// Launch shapes the production dispatcher plans, at their real sizes.
#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn planned_shapes_are_exact() {
    let Some(exe) = emulator() else { return };
    // (rows, n, k): multi-pass at its smallest row length (bpr 32) and at
    // B = 2 (bpr 32, a shorter row and a short one in the same launch).
    let shapes: &[(&[usize], usize)] = &[(&[65_536], 2048), (&[70_001, 65_536, 100], 1024)];
    for (i, &(lens, k)) in shapes.iter().enumerate() {
        let b = rows(lens, k, 40 + i as u64);
        let plan = radix::plan(b.rows, b.n_max(), b.npad, k, SMS).expect("plans");
        assert_eq!(plan.tier, radix::TIER_MULTI_PASS, "{lens:?}");
        check(
            exe,
            &format!("planned {lens:?}"),
            Tier::of(&plan),
            &b,
            plan.ctas_per_row as usize,
        );
    }
    // The split tiers (a caller without multi-pass scratch): B = 1, 10 CTAs
    // of 512 threads.
    let b = rows(&[70_001], 2048, 50);
    let plan = radix::plan_with(
        1,
        b.n_max(),
        b.npad,
        2048,
        SMS,
        radix::Scratch::WithoutMultiPass,
    )
    .unwrap();
    assert_eq!((plan.tier, plan.ctas_per_row), (radix::TIER_SPLIT, 10));
    check(exe, "planned split", Tier::of(&plan), &b, 10);
}

/// One call on a fresh workspace (grid order) is exact too.
#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn first_call_is_exact() {
    let Some(exe) = emulator() else { return };
    let b = rows(&[9_001, 20_000, 7], 1024, 60);
    for (tier, bpr) in [(Tier::MultiPass, 5), (Tier::Split, 3), (Tier::PerRow, 1)] {
        let out = run_calls(exe, "first call", tier, &b, bpr, 1, 1);
        assert!(check_batch(&b, &out).is_exact(), "{tier:?}");
    }
}

/// The emulated output of a planted bug: `Err` (the emulator failed, e.g. a
/// workspace word left non-zero) or the output.
fn run_mutant(
    kernel: &str,
    what: &str,
    tier: Tier,
    b: &Batch,
    bpr: usize,
) -> Result<Vec<i32>, String> {
    let exe = build(kernel);
    catch_unwind(AssertUnwindSafe(|| {
        run_calls(&exe, what, tier, b, bpr, 2, 7)
    }))
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "emulator panicked".to_string())
    })
}

fn mutate(from: &str, to: &str) -> String {
    let mutated = RADIX.code.replacen(from, to, 1);
    assert_ne!(mutated, RADIX.code, "`{from}` is no longer in radix.cu");
    mutated
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn planted_bugs_are_caught() {
    if emulator().is_none() {
        return;
    }
    // A randn row (its level-0 crossing bin fits the candidate buffer), a
    // two-valued row (a tie storm at the crossing) and a short row last.
    let family = |name: &str, n: usize| {
        let g = row_generators()
            .into_iter()
            .find(|g| g.name == name)
            .expect("generator");
        (g.generate)(&mut ChaCha8Rng::seed_from_u64(70) as &mut dyn RngCore, n)
    };
    let b = batch(
        &[
            family("randn", 9_001),
            family("two_valued", 20_003),
            family("randn", 5),
        ],
        &[],
        512,
    );
    let inexact = |kernel: &str, what: &str, tier: Tier, bpr: usize| match run_mutant(
        kernel, what, tier, &b, bpr,
    ) {
        Ok(out) => assert!(
            !check_batch(&b, &out).is_exact(),
            "{what}: the mutant's output passed the check"
        ),
        Err(message) => {
            panic!("{what}: expected an inexact output, the emulator failed: {message}")
        }
    };
    // Multi-pass: candidates of the top digit counted as winners too.
    inexact(
        &mutate(
            "const bool win = ok && top > d1;",
            "const bool win = ok && top >= d1;",
        ),
        "multi-pass winners include the crossing digit",
        Tier::MultiPass,
        3,
    );
    // Multi-pass: pass 0 histograms masked lanes (padding / redirected loads).
    inexact(
        &mutate(
            "if (ok) red_shared_add(&sm.hist[key >> 21], 1u);",
            "red_shared_add(&sm.hist[key >> 21], 1u);",
        ),
        "multi-pass pass 0 ignores the lane mask",
        Tier::MultiPass,
        3,
    );
    // Multi-pass: the final ties start one slot late.
    inexact(
        &mutate(
            "out_row[k - need + t] = pos;",
            "out_row[k - need + t + 1u] = pos;",
        ),
        "multi-pass tie slots shifted",
        Tier::MultiPass,
        3,
    );
    // Per-row job: the level-0 need is one short.
    inexact(
        &mutate(
            "need = k - sm.cross.above;",
            "need = k - sm.cross.above - 1u;",
        ),
        "per-row level-0 need off by one",
        Tier::PerRow256,
        1,
    );
    // Multi-pass: the winner counter is not restored after pass 2.
    let kept = mutate("        st[MP_WIN] = 0u;\n", "");
    let err = run_mutant(
        &kept,
        "multi-pass keeps its winner count",
        Tier::MultiPass,
        &b,
        3,
    )
    .expect_err("a workspace word left non-zero went unnoticed");
    assert!(err.contains("left workspace word"), "{err}");
    // Split: the done counter is not restored.
    let kept = mutate("if (threadIdx.x == 0) done[r] = 0u;", "");
    let err = run_mutant(&kept, "split keeps its done counter", Tier::Split, &b, 2)
        .expect_err("a done counter left non-zero went unnoticed");
    assert!(err.contains("left workspace word"), "{err}");
}
