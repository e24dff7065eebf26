//! On-device exactness of the GPU baseline arms (`radix`, `radix-mcta`):
//! every tier of both plans, the adversarial suite, varlen rows, +3e38
//! padding poison, and a second launch on the self-restored workspace.
//!
//! Needs a GPU, so every test is `#[ignore]`d: CI (no GPU) lists them as
//! ignored. On the H200 run the test binary with `--ignored`; there a missing
//! GPU is a failure, never a silent pass.

use std::sync::Arc;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gvr_bench::arms::baselines::{self, SUPPORTED_K};
use gvr_bench::arms::Shape;
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
    let mut arm = baselines::create(arm_name, gpu.clone())
        .expect("baseline arm is registered")
        .expect("arm builds");
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
