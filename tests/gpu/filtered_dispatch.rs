//! On-device check of the `filtered` arm's FlashInfer dispatch: one arm
//! object alternates between shapes that take FilteredTopK and shapes that
//! take the multi-CTA radix (entry switch, workspace growth, self-restored
//! scratch), every result exact, the variant naming the kernel that ran; then
//! the same shapes on `filtered-only` (FilteredTopK everywhere).
//!
//! Needs a GPU, so the test is `#[ignore]`d; run it with `--ignored` (a
//! missing GPU is then a failure).

use std::sync::Arc;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gvr_bench::arms::baselines;
use gvr_bench::arms::{Arm, Shape};
use gvr_bench::capture::format::npad_for;
use gvr_bench::exact::{check_batch, row_generators};
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;

fn batch_of(rows: usize, n: usize, k: usize, seed: u64) -> Batch {
    let npad = npad_for(n);
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = vec![3e38f32; rows * npad];
    for r in 0..rows {
        let generator = &generators[(r + seed as usize) % generators.len()];
        let row = (generator.generate)(&mut rng as &mut dyn RngCore, n);
        logits[r * npad..r * npad + n].copy_from_slice(&row);
    }
    Batch {
        rows,
        npad,
        k,
        logits,
        n: vec![n as u32; rows],
        hints: vec![-1; rows * k],
        varlen: None,
    }
}

/// Stage, launch twice (the radix scratch must restore itself), check both.
fn run_exact(arm: &mut dyn Arm, batch: &Batch, label: &str) -> String {
    let shape = Shape::of(batch);
    let variant = arm.variant(&shape).unwrap_or_default();
    arm.stage(batch)
        .unwrap_or_else(|e| panic!("{label}: stage: {e}"));
    for launch in 0..2 {
        arm.poison_output().unwrap();
        arm.launch()
            .unwrap_or_else(|e| panic!("{label} ({variant}): launch: {e}"));
        let out = arm.read_output().unwrap();
        let status = check_batch(batch, &out);
        assert!(
            status.is_exact(),
            "{label} ({variant}) launch {launch}: {status:?}"
        );
    }
    variant
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn dispatch_switches_kernels_and_stays_exact() {
    let gpu: Arc<Gpu> =
        Gpu::open(0).unwrap_or_else(|e| panic!("the filtered dispatch test needs a GPU: {e}"));
    // (rows, n, multi-CTA under the heuristic)
    let shapes = [
        (1usize, 131_087usize, true),
        (1024, 8_229, false),
        (4, 262_144, true),
        (16, 262_127, false),
        (2, 65_536, true),
        (8, 32_768, false),
        (1, 1 << 20, true),
    ];
    for (setting, forced) in [("filtered", None), ("filtered-only", Some(false))] {
        let mut arm = baselines::create(setting, gpu.clone())
            .expect("registered")
            .expect("builds");
        for (i, &(rows, n, heuristic_multi)) in shapes.iter().enumerate() {
            for k in [512usize, 2048] {
                let batch = batch_of(rows, n, k, (i * 31 + k) as u64);
                let label = format!("{setting}: B={rows} n={n} k={k}");
                let variant = run_exact(arm.as_mut(), &batch, &label);
                let multi = forced.unwrap_or(heuristic_multi);
                assert_eq!(
                    variant.starts_with("multi-cta"),
                    multi,
                    "{label}: variant {variant}"
                );
                assert_eq!(
                    variant.starts_with("filtered"),
                    !multi,
                    "{label}: {variant}"
                );
            }
        }
    }
}
