//! On-device exactness of the GPU baseline arms (`radix`, `radix-mcta`):
//! every tier of both plans, the adversarial suite, varlen rows, +3e38
//! padding poison, and a second launch on the self-restored workspace.
//!
//! Needs a GPU, so every test is `#[ignore]`d: CI (no GPU) lists them as
//! ignored. On the H200 run the test binary with `--ignored`; there a missing
//! GPU is a failure, never a silent pass. `radix_every_tier_is_exact` instead
//! runs only with `GVR_GPU_TESTS=1` (as the ss GPU tests) and says so
//! otherwise.

use std::sync::Arc;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gvr_bench::arms::baselines::radix::{self, Radix};
use gvr_bench::arms::baselines::{self, BaselineKernel, GpuBaselineArm, SUPPORTED_K};
use gvr_bench::arms::{Arm, Shape};
use gvr_bench::capture::format::npad_for;
use gvr_bench::exact::{check_batch, row_generators, suite};
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;

const PAD: f32 = 3e38;
const ARMS: [&str; 4] = ["radix", "radix-mcta", "filtered", "gvr1"];

fn open_gpu() -> Arc<Gpu> {
    Gpu::open(0).unwrap_or_else(|e| panic!("GPU baseline exactness needs a GPU: {e}"))
}

/// A batch whose row r has length `lens[r]`, values from generator
/// `families[r % len]`, and +3e38 in the padding.
fn batch_of(lens: &[usize], k: usize, seed: u64) -> Batch {
    let npad = npad_for(lens.iter().copied().max().unwrap_or(0));
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = vec![PAD; lens.len() * npad];
    for (r, &n) in lens.iter().enumerate() {
        let generator = &generators[(r + seed as usize) % generators.len()];
        let row = (generator.generate)(&mut rng as &mut dyn RngCore, n);
        logits[r * npad..r * npad + n].copy_from_slice(&row);
    }
    Batch {
        rows: lens.len(),
        npad,
        k,
        logits,
        n: lens.iter().map(|&n| n as u32).collect(),
        hints: vec![-1; lens.len() * k],
        varlen: None,
    }
}

/// Run `arm` on `batch` twice without re-zeroing its workspace in between
/// (the second launch relies on the kernels restoring it) and check both.
fn run_and_check(gpu: &Arc<Gpu>, arm_name: &str, batch: &Batch, label: &str) {
    let arm = baselines::create(arm_name, gpu.clone())
        .expect("baseline arm is registered")
        .expect("arm builds");
    check_twice(arm, batch, label);
}

/// [`run_and_check`] on an arm already built; returns its variant.
fn check_twice(mut arm: Box<dyn Arm>, batch: &Batch, label: &str) -> String {
    let arm_name = arm.name().to_string();
    let shape = Shape::of(batch);
    if let Err(reason) = arm.admits(&shape) {
        panic!("{arm_name} refuses {label}: {reason}");
    }
    arm.stage(batch)
        .unwrap_or_else(|e| panic!("{arm_name} {label}: stage: {e}"));
    arm.poison_output().unwrap();
    arm.launch()
        .unwrap_or_else(|e| panic!("{arm_name} {label}: launch: {e}"));
    let first = arm
        .read_output()
        .unwrap_or_else(|e| panic!("{arm_name} {label}: {e}"));
    let status = check_batch(batch, &first);
    assert!(
        status.is_exact(),
        "{arm_name} {label} ({:?}): {status:?}",
        arm.variant(&shape)
    );
    arm.launch().unwrap();
    let second = arm.read_output().unwrap();
    let status = check_batch(batch, &second);
    assert!(
        status.is_exact(),
        "{arm_name} {label} second launch: {status:?}"
    );
    arm.variant(&shape).unwrap_or_default()
}

/// Every tier of the `radix` dispatcher on the GPU: per-row (512 and 256
/// threads) and multi-pass (3 launches) from the production arm, split (512
/// and 1024 threads) from the same dispatcher without multi-pass scratch.
/// Each shape must plan the tier named, and both launches (the second on
/// the workspace the first restored) must be exact. Runs only with
/// `GVR_GPU_TESTS=1`.
#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn radix_every_tier_is_exact() {
    if std::env::var("GVR_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("GPU half NOT RUN: set GVR_GPU_TESTS=1 on a machine with a GPU");
        return;
    }
    let gpu = open_gpu();
    static PRODUCTION: Radix = Radix::PRODUCTION;
    static WITHOUT_MP: Radix = Radix::WITHOUT_MULTI_PASS;
    let varlen = |k: usize| vec![0, 1, k - 1, k, k + 1, 70_001, 262_127, 17, 131_072];
    // (kernel, row lengths, the k values, tier).
    type Case = (
        &'static dyn BaselineKernel,
        Vec<usize>,
        Vec<usize>,
        &'static str,
    );
    let all_k = SUPPORTED_K.to_vec();
    let mut cases: Vec<Case> = vec![
        (
            &PRODUCTION,
            vec![4_000, 0, 513, 3_001],
            all_k.clone(),
            radix::TIER_PER_ROW,
        ),
        (
            &PRODUCTION,
            vec![8_192; 512],
            all_k.clone(),
            radix::TIER_PER_ROW_256,
        ),
        (
            &PRODUCTION,
            vec![8_229; 1024],
            vec![2048],
            radix::TIER_PER_ROW_256,
        ),
        (
            &PRODUCTION,
            vec![65_536],
            all_k.clone(),
            radix::TIER_MULTI_PASS,
        ),
        (
            &PRODUCTION,
            vec![262_144],
            all_k.clone(),
            radix::TIER_MULTI_PASS,
        ),
        (
            &PRODUCTION,
            vec![1 << 20; 2],
            vec![2048],
            radix::TIER_MULTI_PASS,
        ),
        (
            &PRODUCTION,
            vec![65_536; 32],
            vec![512],
            radix::TIER_MULTI_PASS,
        ),
        (
            &PRODUCTION,
            vec![131_072; 64],
            vec![1024],
            radix::TIER_MULTI_PASS,
        ),
        (
            &PRODUCTION,
            vec![524_288; 256],
            vec![2048],
            radix::TIER_MULTI_PASS,
        ),
        (&WITHOUT_MP, vec![262_144], all_k.clone(), radix::TIER_SPLIT),
        (
            &WITHOUT_MP,
            vec![200_000; 16],
            vec![2048],
            radix::TIER_SPLIT,
        ),
        (
            &WITHOUT_MP,
            vec![1 << 20],
            all_k.clone(),
            radix::TIER_SPLIT_1024,
        ),
        (
            &WITHOUT_MP,
            vec![1 << 20; 4],
            vec![512],
            radix::TIER_SPLIT_1024,
        ),
    ];
    for k in SUPPORTED_K {
        cases.push((&PRODUCTION, varlen(k), vec![k], radix::TIER_MULTI_PASS));
        cases.push((&WITHOUT_MP, varlen(k), vec![k], radix::TIER_SPLIT));
    }
    for (i, (kernel, lens, ks, tier)) in cases.into_iter().enumerate() {
        for k in ks {
            let batch = batch_of(&lens, k, 1000 + i as u64 * 7 + k as u64);
            let label = format!("B={} n_max={} k={k}", lens.len(), batch.n_max());
            let arm = Box::new(GpuBaselineArm::new(kernel, gpu.clone()));
            let variant = check_twice(arm, &batch, &label);
            assert!(
                variant.starts_with(&format!("{tier} (")),
                "{label}: planned {variant}, want tier {tier}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn adversarial_suite_is_exact() {
    let gpu = open_gpu();
    for k in SUPPORTED_K {
        for case in suite(k) {
            for arm in ARMS {
                run_and_check(&gpu, arm, &case.batch, &format!("{} k={k}", case.name));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn every_tier_is_exact() {
    let gpu = open_gpu();
    // (rows, n): per-row radix, split radix (B <= 8 long rows), mcta with one
    // CTA per row, several CTAs per row, and the longest contract rows.
    let shapes: &[(usize, usize)] = &[
        (1, 4_000),
        (1, 70_000),
        (1, 262_144),
        (2, 400_000),
        (4, 1 << 20),
        (8, 131_072),
        (16, 200_000),
        (64, 65_536),
        (130, 32_768),
        (1024, 8_229),
    ];
    for (i, &(rows, n)) in shapes.iter().enumerate() {
        for k in SUPPORTED_K {
            let batch = batch_of(&vec![n; rows], k, i as u64 * 7 + k as u64);
            for arm in ARMS {
                run_and_check(&gpu, arm, &batch, &format!("B={rows} n={n} k={k}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn varlen_rows_are_exact() {
    let gpu = open_gpu();
    for k in SUPPORTED_K {
        // Zero-length, short (n <= k), exactly k, k + 1, and long rows mixed.
        let lens = [
            0,
            1,
            k - 1,
            k,
            k + 1,
            3 * k + 5,
            70_001,
            262_127,
            17,
            131_072,
        ];
        let batch = batch_of(&lens, k, 99 + k as u64);
        for arm in ARMS {
            run_and_check(&gpu, arm, &batch, &format!("varlen k={k}"));
        }
    }
}
