//! On-device exactness of the `ss-regclus` arm (kernels/ss/reg_clus.cu, thread-
//! block clusters on the H200): every routed (CS, VPT) shape with every row
//! generator and hint mode, varlen rows, the adversarial suite, NaN rows
//! (structure), a forced launch with more clusters than are co-resident
//! (they run in waves), and two launches per staging.
//!
//! Runs only with `GVR_GPU_TESTS=1` (set on the H200; there a missing GPU
//! fails). Without the switch the plan half still runs on the CPU (every
//! shape below must be admitted with the intended cluster shape) and the
//! GPU half announces that it was not run.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::support::ss::open_gpu;
use crate::support::ss::plan_regclus;
use gvr_bench::arms::Shape;
use gvr_bench::exact::suite;
use gvr_bench::topk::route::{DeviceProfile, REG_CLUS_MAX_N};

/// (rows, n, cluster, vpt) for every routed reg_clus shape kind on the H200.
const ROUTED: [(usize, usize, u32, u32); 8] = [
    (1, 32_768, 8, 1),
    (1, 65_536, 8, 2),
    (1, 131_072, 8, 4),
    // Past the float4s: 15 values and a full tail in rank 0's scalars.
    (1, 131_087, 8, 4),
    (2, REG_CLUS_MAX_N, 8, 4),
    (16, 32_768, 4, 2),
    (16, 65_536, 4, 4),
    // Two-CTA clusters at 4–7 SMs per row (the H200 leaves b = 64 to main).
    (32, 32_768, 2, 4),
];

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn routed_shapes_are_exact_on_the_gpu() {
    let dev = DeviceProfile::h200();
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let gpu = open_gpu();
    for (rows, n, cs, vpt) in ROUTED {
        for k in [512usize, 1024, 2048] {
            let b = crate::support::ss::generated_rows(&mut rng, rows.max(12), n, k);
            let plan = plan_regclus(
                &Shape {
                    rows,
                    ..Shape::of(&b)
                },
                &dev,
            )
            .expect("admitted");
            // K = 2048 takes the same cluster shape, routed or forced.
            assert_eq!(
                (plan.cluster, plan.vpt, plan.routed || k > 1024),
                (cs, vpt, true),
                "rows={rows} n={n} k={k}"
            );
            if let Some(gpu) = &gpu {
                // The batch may hold more rows than the routed shape (to
                // cover every generator); the route's shape is checked above.
                crate::support::ss::gpu_check(
                    gpu,
                    "ss-regclus",
                    &b,
                    &format!("rows={rows} n={n} k={k}"),
                );
                let exact_rows = crate::support::ss::generated_rows(&mut rng, rows, n, k);
                crate::support::ss::gpu_check(
                    gpu,
                    "ss-regclus",
                    &exact_rows,
                    &format!("routed rows={rows} n={n} k={k}"),
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn varlen_nan_waves_and_the_adversarial_suite_are_exact() {
    let dev = DeviceProfile::h200();
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let Some(gpu) = open_gpu() else { return };
    // Varlen: one launch, lengths from short rows to the cluster's limit.
    for k in [512usize, 1024, 2048] {
        let lengths = [
            1usize,
            k,
            k + 1,
            4_097,
            17_003,
            30_001,
            32_768,
            65_539,
            131_075,
            131_087,
            REG_CLUS_MAX_N,
        ];
        let b = crate::support::ss::mixed_length_batch(&mut rng, &lengths, k);
        crate::support::ss::gpu_check(&gpu, "ss-regclus", &b, &format!("varlen k={k}"));
    }
    // NaN sprinkled rows (structure only), both signs.
    let b = crate::support::ss::nan_rows(&mut rng, 4, 40000, 512);
    crate::support::ss::gpu_check(&gpu, "ss-regclus", &b, "nan rows");
    // More 8-CTA clusters than are co-resident (15): they run in waves.
    let b = crate::support::ss::generated_rows(&mut rng, 40, 100_000, 512);
    let plan = plan_regclus(&Shape::of(&b), &dev).unwrap();
    assert_eq!(plan.cluster, 8);
    crate::support::ss::gpu_check(&gpu, "ss-regclus", &b, "waves of 8-CTA clusters");
    // The adversarial suite, where the arm admits the shape.
    for k in [512usize, 1024, 2048] {
        for case in suite(k) {
            if plan_regclus(&Shape::of(&case.batch), &dev).is_ok() {
                crate::support::ss::gpu_check(&gpu, "ss-regclus", &case.batch, &case.name);
            }
        }
    }
}
