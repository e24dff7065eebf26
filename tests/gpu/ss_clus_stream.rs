//! On-device exactness of the `ss-clus` arm (kernels/ss/clus.cu,
//! clustered streaming over thread-block clusters on the H200): every
//! routed cluster size with every row generator and hint mode, rows of
//! other lengths in the same launch (per-row schedule), short rows, NaN
//! rows (structure), a forced launch with more clusters than are
//! co-resident (they run in waves), the adversarial suite, and two launches
//! per staging.
//!
//! Runs only with `GVR_GPU_TESTS=1` (set on the H200; there a missing GPU
//! fails). Without the switch the plan half still runs on the CPU (every
//! shape below must be admitted with the intended cluster shape) and the
//! GPU half announces that it was not run.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::support::ss::open_gpu;
use crate::support::ss::{plan_clus_stream, plan_clus_stream_forced};
use gvr_bench::arms::Shape;
use gvr_bench::exact::suite;
use gvr_bench::topk::route::DeviceProfile;

/// (rows, n, k, cluster) of routed clus shapes on the H200, one per CS
/// (per-rank slices of at most 32K values: the H200 route's clus limit).
const ROUTED: [(usize, usize, usize, u32); 5] = [
    (15, 262_144, 512, 8),
    (15, 200_000, 1024, 8),
    (24, 131_072, 1024, 4),
    (24, 100_000, 512, 4),
    (64, 65_536, 512, 2),
];

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn routed_shapes_are_planned_and_exact_on_the_gpu() {
    let dev = DeviceProfile::h200();
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let gpu = open_gpu();
    for (rows, n, k, cs) in ROUTED {
        let shape = Shape {
            rows,
            n,
            npad: n.div_ceil(64) * 64,
            k,
        };
        let plan = plan_clus_stream(&shape, &dev).expect("routed to clus");
        assert_eq!((plan.cluster, plan.routed), (cs, true), "{shape:?}");
        if let Some(gpu) = &gpu {
            let b = crate::support::ss::generated_rows(&mut rng, rows, n, k);
            crate::support::ss::gpu_check(
                gpu,
                "ss-clus",
                &b,
                &format!("routed rows={rows} n={n} k={k}"),
            );
        }
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn mixed_lengths_nan_waves_and_the_adversarial_suite_are_exact() {
    let dev = DeviceProfile::h200();
    let mut rng = ChaCha8Rng::seed_from_u64(78);
    // Forced plans the GPU half uses (checked on the CPU too).
    let waves = Shape {
        rows: 100,
        n: 100_000,
        npad: 100_032,
        k: 512,
    };
    let p = plan_clus_stream_forced(&waves, &dev).unwrap();
    assert_eq!((p.cluster, p.routed), (2, false));
    assert!(!dev.cluster_fits(2, 100), "100 clusters of 2 run in waves");
    let Some(gpu) = open_gpu() else { return };
    // Mixed lengths in one launch: short rows, rows below SCAP (unsampled),
    // rows of other lengths (per-row schedule recompute) up to 2^20.
    for k in [512usize, 1024] {
        let lengths = [
            0usize,
            1,
            k,
            k + 1,
            4_097,
            8_193,
            17_003,
            65_539,
            131_075,
            262_144,
            1 << 20,
        ];
        let b = crate::support::ss::mixed_length_batch(&mut rng, &lengths, k);
        crate::support::ss::gpu_check(&gpu, "ss-clus", &b, &format!("mixed k={k}"));
    }
    // NaN sprinkled rows (structure only), both signs.
    let b = crate::support::ss::nan_rows(&mut rng, 4, 100000, 512);
    crate::support::ss::gpu_check(&gpu, "ss-clus", &b, "nan rows");
    // More clusters than are co-resident (66 of CS 2): forced, in waves.
    let b = crate::support::ss::generated_rows(&mut rng, waves.rows, waves.n, waves.k);
    assert_eq!(Shape::of(&b), waves);
    crate::support::ss::gpu_check(&gpu, "ss-clus", &b, "forced clusters in waves");
    // The adversarial suite, where the arm admits the shape.
    for k in [512usize, 1024, 2048] {
        for case in suite(k) {
            if plan_clus_stream_forced(&Shape::of(&case.batch), &dev).is_ok() {
                crate::support::ss::gpu_check(&gpu, "ss-clus", &case.batch, &case.name);
            }
        }
    }
}
