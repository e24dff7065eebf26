//! The NaN contract on the device, per arm: every NaN (either sign, any
//! payload) ranks above +inf and NaNs tie. Every GPU arm runs the suite's NaN
//! batches and NaN-sprinkled rows at shapes that reach its streaming,
//! register and cluster paths; each output is checked with the tie-aware
//! checker, twice (the second launch over the self-restored workspace).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gvr_bench::arms::{registry, Shape};
use gvr_bench::capture::format::npad_for;
use gvr_bench::exact::{check_batch, nan_value, suite};
use gvr_bench::grid::Batch;

use crate::support::ss::open_gpu;

const ARMS: [&str; 12] = [
    "ss",
    "ss-main",
    "ss-reg",
    "ss-clus",
    "ss-regclus",
    "ss-varlen",
    "radix",
    "radix-mcta",
    "filtered",
    "gvr1",
    "sglang-v2",
    "cpu-ss",
];

/// `rows` rows of `n` normal values with `nans` NaN of mixed signs and
/// payloads at random positions; +3e38 padding.
fn nan_batch(rng: &mut ChaCha8Rng, rows: usize, n: usize, k: usize, nans: usize) -> Batch {
    let rows: Vec<Vec<f32>> = (0..rows)
        .map(|_| {
            let mut row: Vec<f32> = (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect();
            for i in 0..nans.min(n) {
                row[rng.random_range(0..n)] = nan_value(i);
            }
            row
        })
        .collect();
    Batch::from_rows(&rows, npad_for(n), k, 3e38)
}

fn run_arm(gpu: &std::sync::Arc<gvr_bench::gpu::Gpu>, name: &str, batch: &Batch, label: &str) {
    let mut arm = registry::create(name, Some(gpu.clone())).expect("arm builds");
    if arm.admits(&Shape::of(batch)).is_err() {
        return;
    }
    arm.stage(batch).expect("stage");
    for launch in 0..2 {
        arm.poison_output().expect("poison");
        arm.launch().expect("launch");
        let out = arm.read_output().expect("read");
        let verdict = check_batch(batch, &out);
        assert!(
            verdict.is_exact(),
            "{name} {label} launch {launch}: {verdict:?}"
        );
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn every_arm_meets_the_nan_contract_on_the_suite() {
    let Some(gpu) = open_gpu() else { return };
    for k in [512usize, 1024, 2048] {
        for case in suite(k).into_iter().filter(|c| c.name.starts_with("nan_")) {
            for name in ARMS {
                run_arm(&gpu, name, &case.batch, &format!("{} k={k}", case.name));
            }
        }
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn every_arm_meets_the_nan_contract_on_every_path() {
    let Some(gpu) = open_gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(0x4a4e);
    // (rows, n): register rows, streaming one-CTA rows, split and cluster
    // rows of small batches, and a long row.
    let shapes = [
        (64usize, 4_099usize),
        (300, 16_387),
        (1024, 40_000),
        (4, 70_001),
        (2, 262_147),
        (1, 1 << 20),
    ];
    for (rows, n) in shapes {
        for k in [512usize, 1024, 2048] {
            for nans in [1, k / 2, k, k + 7] {
                let b = nan_batch(&mut rng, rows, n, k, nans);
                for name in ARMS {
                    run_arm(&gpu, name, &b, &format!("{rows}x{n} k={k} nans={nans}"));
                }
            }
        }
    }
}
