//! On-device exactness of the `sglang-v2` arm (kernels/baselines/sglang_v2.cu):
//! every route (register2, register4, streaming, clusters of 8 beside the
//! streaming per-row kernel, the pool threshold moved past 64K), every row
//! generator, ragged and short rows with +3e38 in the padding, the
//! adversarial suite, two launches per staging — and the fallback count the
//! arm reports after each call (`fallback rows N`), which must equal a host
//! model of the design's overflow: rows whose threshold bin of the coarse
//! fp16 key holds more than 1,024 values.
//!
//! Runs only with `GVR_GPU_TESTS=1` (set on the GPU machine; there a missing
//! GPU fails). Without the switch the routes are still checked on the CPU
//! and the GPU half announces that it was not run.

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::support::ss::open_gpu;
use gvr_bench::arms::baselines::sglang_v2::{self, fallback_note, long_threshold, route, RowPath};
use gvr_bench::arms::{registry, Shape};
use gvr_bench::exact::{check_batch, suite};
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;

/// fp16 bits of `x`, round to nearest even (cvt.rn.f16.f32); no NaN here.
fn f16_bits(x: f32) -> u32 {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let exp = ((b >> 23) & 0xff) as i32;
    let mant = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00;
    }
    let e = exp - 112;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    let round = |m: u32, shift: u32| {
        let kept = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        if rem > half || (rem == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        return sign | round(mant | 0x80_0000, (14 - e) as u32);
    }
    sign | round(((e as u32) << 23) | mant, 13)
}

/// The 16-bit ordered key of the kernels' coarse bins (prim's half_key):
/// every NaN takes the top key, above +inf (the NaN contract).
fn key16(x: f32) -> u32 {
    if x.is_nan() {
        return 0xffff;
    }
    let h = f16_bits(x);
    if h & 0x8000 != 0 {
        !h & 0xffff
    } else {
        h | 0x8000
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn the_fp16_model_rounds_like_cvt_rn() {
    for (x, h) in [
        (1.0f32, 0x3c00),
        (1.000_488_3, 0x3c00), // halfway: to even
        (1.001_464_8, 0x3c02),
        (65_504.0, 0x7bff),
        (65_519.0, 0x7bff),
        (65_520.0, 0x7c00),
        (f32::INFINITY, 0x7c00),
        (-0.0, 0x8000),
        (5.960_464_5e-8, 0x0001),
        (2.980_232_2e-8, 0x0000), // half the smallest subnormal: to even
        (2.99e-8, 0x0001),
        (1e-10, 0),
        (-1e30, 0xfc00),
    ] {
        assert_eq!(f16_bits(x), h, "{x:e}");
    }
}

/// Rows of `b` that take the exact fallback: the coarse key (12 bits, or 10
/// bits on the cluster path) has more than 1,024 values in the bin holding
/// the k-th largest.
fn expected_fallback_rows(b: &Batch) -> usize {
    let r = route(b.rows, b.n_max());
    let lengths: Vec<usize> = b.n.iter().map(|&n| n as usize).collect();
    let threshold = long_threshold(&lengths);
    (0..b.rows)
        .filter(|&row| {
            let values = b.row(row);
            if values.len() <= b.k {
                return false;
            }
            let shift = if r.clusters.is_some() && values.len() > threshold {
                6
            } else {
                4
            };
            let mut hist = vec![0usize; 1 << (16 - shift)];
            for &x in values {
                hist[(key16(x) >> shift) as usize] += 1;
            }
            let mut above = 0;
            for &count in hist.iter().rev() {
                if above + count >= b.k {
                    return count > sglang_v2::TIE_CAP;
                }
                above += count;
            }
            unreachable!("n > k values")
        })
        .count()
}

/// Stage `b`, launch twice, check both outputs and both call notes.
fn run_and_check(gpu: &Arc<Gpu>, b: &Batch, label: &str) {
    let mut arm = registry::create("sglang-v2", Some(gpu.clone())).expect("sglang-v2 builds");
    let variant = arm.variant(&Shape::of(b));
    arm.stage(b)
        .unwrap_or_else(|e| panic!("{label}: stage: {e}"));
    let want = fallback_note(expected_fallback_rows(b) as u32);
    for launch in 0..2 {
        arm.poison_output().unwrap();
        arm.launch()
            .unwrap_or_else(|e| panic!("{label}: launch: {e}"));
        let out = arm.read_output().unwrap_or_else(|e| panic!("{label}: {e}"));
        let status = check_batch(b, &out);
        assert!(
            status.is_exact(),
            "{label} ({variant:?}) launch {launch}: {status:?}"
        );
        assert_eq!(
            arm.call_note().as_deref(),
            Some(want.as_str()),
            "{label} ({variant:?}) launch {launch}"
        );
    }
}

/// (rows, n, tier) of each route.
const SHAPES: [(usize, usize, &str); 7] = [
    (1024, 4_000, sglang_v2::TIER_REG2),
    (64, 16_000, sglang_v2::TIER_REG4),
    (300, 40_000, sglang_v2::TIER_STREAM),
    (200, 70_000, sglang_v2::TIER_STREAM),
    (8, 262_144, sglang_v2::TIER_CLUSTER),
    (45, 131_075, sglang_v2::TIER_CLUSTER),
    (2, 1 << 20, sglang_v2::TIER_CLUSTER),
];

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn every_route_is_exact_and_counts_its_fallback_rows() {
    for (rows, n, tier) in SHAPES {
        let p = sglang_v2::plan(rows, n).unwrap();
        assert_eq!(p.tier, tier, "{rows}x{n}");
    }
    let Some(gpu) = open_gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(0x5c1a);
    for (i, (rows, n, tier)) in SHAPES.into_iter().enumerate() {
        for k in [512usize, 1024, 2048] {
            let b = crate::support::ss::generated_rows(&mut rng, rows, n, k);
            run_and_check(&gpu, &b, &format!("{tier} {rows}x{n} k={k} #{i}"));
        }
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn mixed_lengths_and_the_pool_threshold() {
    let mut lens = vec![66_000usize; 31];
    lens.extend([
        100_000, 262_147, 0, 1, 511, 512, 513, 2049, 8_191, 16_387, 65_536, 65_537,
    ]);
    assert_eq!(long_threshold(&lens), 98_304);
    assert!(route(lens.len(), 262_147).clusters.is_some());
    let Some(gpu) = open_gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(0x5c1b);
    for k in [512usize, 1024, 2048] {
        let b = crate::support::ss::mixed_length_batch(&mut rng, &lens, k);
        run_and_check(&gpu, &b, &format!("pool k={k}"));
        let short: Vec<usize> = lens.iter().map(|&n| n.min(16_384)).collect();
        let b = crate::support::ss::mixed_length_batch(&mut rng, &short, k);
        assert_eq!(route(b.rows, b.n_max()).row, RowPath::Register4);
        run_and_check(&gpu, &b, &format!("short mixed k={k}"));
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn adversarial_suite_is_exact() {
    let Some(gpu) = open_gpu() else { return };
    for k in [512usize, 1024, 2048] {
        for case in suite(k) {
            run_and_check(&gpu, &case.batch, &format!("{} k={k}", case.name));
        }
    }
}
