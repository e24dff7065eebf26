//! On-device exactness of the `gvr1` cluster tier (`gvr1_topk_c2/_c4/_c8`)
//! with hints, which `baselines_exact.rs` (hint-free batches) does not
//! give it: perfect hints (the row's own top-K: the verify search finds T at
//! once), previous-step hints (top-K of a perturbed row: secant passes, then
//! the DSMEM gather to rank 0), random hints (wide bracket) and no hints
//! (rank 0's whole-row fallback), over every row family, varlen rows and
//! every cluster size the plan picks.
//!
//! Needs a GPU, so every test is `#[ignore]`d; on the H200 run with
//! `--ignored` (a missing GPU is a failure there).

use std::sync::Arc;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gvr_bench::arms::baselines::{self, SUPPORTED_K};
use gvr_bench::arms::Shape;
use gvr_bench::capture::format::npad_for;
use gvr_bench::exact::{check_batch, reference_topk, row_generators};
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;

const PAD: f32 = 3e38;

#[derive(Clone, Copy, Debug)]
enum Hints {
    Perfect,
    PreviousStep,
    Random,
    Absent,
}

fn hints_for(row: &[f32], k: usize, mode: Hints, rng: &mut ChaCha8Rng) -> Vec<i32> {
    let n = row.len();
    let mut hints = match mode {
        Hints::Perfect => reference_topk(row, k),
        Hints::PreviousStep => {
            let perturbed: Vec<f32> = row
                .iter()
                .map(|&x| {
                    if x.is_finite() {
                        x + rng.random_range(-0.05f32..0.05)
                    } else {
                        x
                    }
                })
                .collect();
            reference_topk(&perturbed, k)
        }
        Hints::Random => (0..k)
            .map(|_| rng.random_range(0..n.max(1)) as i32)
            .collect(),
        Hints::Absent => vec![-1; k],
    };
    hints.resize(k, -1);
    hints
}

fn batch_of(lens: &[usize], k: usize, mode: Hints, seed: u64) -> Batch {
    let npad = npad_for(lens.iter().copied().max().unwrap_or(0));
    let generators = row_generators();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = vec![PAD; lens.len() * npad];
    let mut hints = Vec::with_capacity(lens.len() * k);
    for (r, &n) in lens.iter().enumerate() {
        let generator = &generators[(r + seed as usize) % generators.len()];
        let row = (generator.generate)(&mut rng as &mut dyn RngCore, n);
        hints.extend(hints_for(&row, k, mode, &mut rng));
        logits[r * npad..r * npad + n].copy_from_slice(&row);
    }
    Batch {
        rows: lens.len(),
        npad,
        k,
        logits,
        n: lens.iter().map(|&n| n as u32).collect(),
        hints,
        varlen: None,
    }
}

fn run_and_check(gpu: &Arc<Gpu>, batch: &Batch, label: &str) {
    let mut arm = baselines::create("gvr1", gpu.clone())
        .expect("gvr1 is registered")
        .expect("arm builds");
    let shape = Shape::of(batch);
    let variant = arm.variant(&shape).unwrap_or_default();
    arm.stage(batch)
        .unwrap_or_else(|e| panic!("gvr1 {label}: stage: {e}"));
    for launch in 0..2 {
        arm.poison_output().unwrap();
        arm.launch()
            .unwrap_or_else(|e| panic!("gvr1 {label}: launch: {e}"));
        let out = arm.read_output().unwrap();
        let status = check_batch(batch, &out);
        assert!(
            status.is_exact(),
            "gvr1 {label} [{variant}] launch {launch}: {status:?}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn cluster_tier_is_exact_with_every_kind_of_hint() {
    let gpu = Gpu::open(0).unwrap_or_else(|e| panic!("needs a GPU: {e}"));
    let sms = gpu.facts.sms as usize;
    // (rows, n): CS = 8, 8, 4, 2, 2 on the H200.
    let shapes: &[(usize, usize)] = &[
        (1, 65_536),
        (3, 262_144),
        (16, 131_072),
        (40, 65_536),
        (2, 20_000),
    ];
    let modes = [
        Hints::Perfect,
        Hints::PreviousStep,
        Hints::Random,
        Hints::Absent,
    ];
    for (i, &(rows, n)) in shapes.iter().enumerate() {
        let cluster = gvr_bench::arms::baselines::gvr1::cluster_size_for(rows, n, sms);
        assert!(
            cluster.is_some(),
            "B={rows} n={n} should be clustered on {sms} SMs"
        );
        for k in SUPPORTED_K {
            for (m, &mode) in modes.iter().enumerate() {
                // Several seeds rotate the row families across the rows.
                for seed in 0..2u64 {
                    let batch = batch_of(
                        &vec![n; rows],
                        k,
                        mode,
                        (i * 131 + m * 17) as u64 + seed * 1000 + k as u64,
                    );
                    run_and_check(
                        &gpu,
                        &batch,
                        &format!("B={rows} n={n} k={k} {mode:?} seed {seed}"),
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn cluster_tier_handles_varlen_rows() {
    let gpu = Gpu::open(0).unwrap_or_else(|e| panic!("needs a GPU: {e}"));
    for k in SUPPORTED_K {
        // The longest row picks CS = 8; the others get slices that are
        // short, partly empty, or not a multiple of the cluster size.
        let lens = [262_144, 0, k, k + 1, 3 * k + 5, 70_001, 9, 131_071];
        for mode in [Hints::Perfect, Hints::PreviousStep, Hints::Absent] {
            let batch = batch_of(&lens, k, mode, 7 + k as u64);
            run_and_check(&gpu, &batch, &format!("varlen k={k} {mode:?}"));
        }
    }
}
