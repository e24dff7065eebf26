//! Exactness of the `ss-reg` GPU arm (kernels/ss/reg.cu) on the H200: every
//! compiled entry point (through shapes the route sends to it, plus shapes
//! the route sends elsewhere, and regimg forced), the adversarial row generators, ties, ±inf,
//! −inf tails, NaN (structure only), varlen rows with n ≤ k, hints perfect /
//! random / absent / degenerate / out of range, and the hint-free mode. Each
//! batch runs twice on one staging (no state may leak between launches).
//!
//! `GVR_TEST_KNOBS` (comma-separated `--knob` assignments) reaches every build
//! of the arm test.
//!
//! Runs only with `GVR_GPU_TESTS=1` (set on the H200), where a missing GPU
//! fails the test; without the switch the plan half still runs (every shape
//! below plans to the entry it is meant to cover) and the GPU half is
//! announced as not run.

use std::collections::HashSet;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::ss::{batch, open_gpu};
use gvr_bench::arms::ss::{Selector, SsArm};
use gvr_bench::arms::{Arm, Shape};
use gvr_bench::exact::{check_row, reference_topk, row_generators};
use gvr_bench::grid::Batch;
use gvr_bench::topk::families::reg::{plan, plan_reg, RegSource, REG_ENTRIES};
use gvr_bench::topk::route::{route, DeviceProfile};
use gvr_bench::topk::{Family, Plan, Tuning};

/// (rows, n, k), the entry (BLK, VPT) it must plan to, and whether the
/// route itself picked a register family for it.
type ShapeCase = (usize, usize, usize, (u32, u32), bool);

/// The regimg entry, which the H200 route no longer picks: forced
/// (the `reg.entry` knob) on a wide batch of non-DEG rows.
const IMG_ENTRY: &str = "ss_regimg_b1024_v1";
const IMG_SHAPE: (usize, usize, usize) = (16, 4096, 512);

const SHAPES: &[ShapeCase] = &[
    (8, 1024, 512, (256, 1), true),
    (300, 2048, 1024, (512, 1), true),
    (64, 4096, 1024, (1024, 1), true),
    (256, 4099, 512, (512, 2), true),
    (132, 16_384, 2048, (1024, 4), true),
    (1, 16_387, 512, (1024, 4), true),
    (1024, 8192, 512, (512, 4), false),    // route: main
    (1024, 16_384, 512, (1024, 4), false), // route: main
    // Rows past the float4 registers, held by the tail scalars.
    (64, 4111, 2048, (1024, 1), true),
    (8, 8207, 2048, (512, 4), true),
    (256, 4111, 2048, (512, 2), true),
    (512, 4111, 2048, (512, 2), true),
    (1, 16_399, 2048, (1024, 4), true),
    (1024, 16_399, 2048, (1024, 4), true),
    (2, 17_408, 2048, (1024, 4), true),
    (512, 8207, 512, (512, 4), false),
    // About four indices emitted per thread beyond one row per SM: the
    // slots emit gathers them in shared memory (reg_stage_out).
    (300, 8207, 2048, (512, 4), true),
    (512, 1027, 1024, (256, 1), true),
    // k < n <= k + 4: the drop-few path (256/1), and a 512/1 launch, which
    // does not compile it (the chain).
    (64, 1025, 1024, (256, 1), true),
    (16, 516, 512, (256, 1), true),
    (8, 2052, 2048, (512, 1), true),
    // 1024/2: routed for K <= 1024 rows of 8K at b <= 64; the nearest plan
    // for rows just above 512/4's capacity (8,704 values).
    (32, 8195, 1024, (1024, 2), true),
    (256, 9000, 512, (1024, 2), false), // route: main
];

fn hints_for(row: &[f32], k: usize, mode: usize, rng: &mut ChaCha8Rng) -> Vec<i32> {
    let n = row.len().max(1) as i32;
    match mode % 6 {
        0 => reference_topk(row, k),
        1 => (0..k).map(|_| rng.random_range(0..n)).collect(),
        2 => vec![-1; k],
        3 => vec![rng.random_range(0..n); k],
        4 => (0..k as i32).map(|i| n + i).collect(),
        _ => {
            let top = reference_topk(row, 8.min(row.len()));
            (0..k).map(|i| top[i % top.len().max(1)]).collect()
        }
    }
}

/// `rows` rows of length `n` (every 7th row a varlen short row), values from
/// the generators plus ties at the threshold, −inf tails and NaN.
fn shape_batch(rows: usize, n: usize, k: usize, seed: u64) -> Batch {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let generators = row_generators();
    let data: Vec<Vec<f32>> = (0..rows)
        .map(|r| {
            let len = if r % 7 == 6 {
                rng.random_range(0..=k)
            } else {
                n
            };
            match r % (generators.len() + 3) {
                g if g < generators.len() => {
                    (generators[g].generate)(&mut rng as &mut dyn RngCore, len)
                }
                g if g == generators.len() => {
                    (0..len).map(|_| rng.random_range(0..40) as f32).collect()
                }
                g if g == generators.len() + 1 => (0..len)
                    .map(|i| {
                        if i < len / 3 {
                            i as f32
                        } else {
                            f32::NEG_INFINITY
                        }
                    })
                    .collect(),
                _ => (0..len)
                    .map(|i| {
                        if i % 9 == 0 {
                            f32::NAN
                        } else {
                            (i % 101) as f32
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    let hints: Vec<Vec<i32>> = data
        .iter()
        .enumerate()
        .map(|(r, row)| hints_for(row, k, r, &mut rng))
        .collect();
    batch(&data, &hints, k)
}

fn check(b: &Batch, out: &[i32], label: &str) {
    for r in 0..b.rows {
        let row = b.row(r);
        let slots = &out[r * b.k..(r + 1) * b.k];
        if row.len() > b.k && row.iter().any(|x| x.is_nan()) {
            let mut seen = HashSet::new();
            for &i in slots {
                assert!(
                    i >= 0 && (i as usize) < row.len() && seen.insert(i),
                    "{label} row {r}: NaN row slot {i}"
                );
            }
        } else if let Err(reason) = check_row(row, b.k, slots) {
            panic!("{label} row {r} (n = {}): {reason}", row.len());
        }
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn every_entry_is_exact_on_the_h200() {
    let dev = DeviceProfile::h200();
    let mut covered = HashSet::new();
    for &(rows, n, k, (blk, vpt), routed) in SHAPES {
        let b = shape_batch(rows, n, k, 1);
        let plan = plan_reg(&Shape::of(&b), &dev).expect("plans");
        assert_eq!(
            (plan.entry.blk, plan.entry.vpt),
            (blk, vpt),
            "{rows}x{n} k={k}"
        );
        assert_eq!(matches!(plan.source, RegSource::Routed(_)), routed);
        covered.insert(plan.entry.name());
    }
    let (rows, n, k) = IMG_SHAPE;
    let img_batch = shape_batch(rows, n, k, 1);
    let img_shape = Shape::of(&img_batch);
    let decision = route(
        img_shape.rows,
        img_shape.n,
        img_shape.npad,
        img_shape.k,
        &dev,
    );
    let mut img_knob = Tuning::default();
    img_knob.set("reg.entry", IMG_ENTRY).expect("regimg entry");
    let plan = plan(&img_shape, &dev, &decision, &img_knob).expect("plans");
    assert!(plan.entry.img && plan.source == RegSource::Forced);
    covered.insert(plan.entry.name());
    assert_eq!(covered.len(), REG_ENTRIES.len(), "every entry has a shape");

    let Some(gpu) = open_gpu() else { return };
    // GVR_TEST_KNOBS reaches every build here, so a knob is GPU-tested by
    // running this test with it set.
    let mut base = Tuning::default();
    for item in std::env::var("GVR_TEST_KNOBS")
        .unwrap_or_default()
        .split(',')
    {
        if !item.trim().is_empty() {
            base.set_assignment(item).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let cases = SHAPES
        .iter()
        .map(|&(rows, n, k, _, _)| (rows, n, k, false))
        .chain([(rows, n, k, true)]);
    for (i, (rows, n, k, forced)) in cases.enumerate() {
        let b = shape_batch(rows, n, k, 100 + i as u64);
        // The route's emit form, then each form forced (the slots form gathers
        // its indices in shared memory where reg_stage_out holds, and in extra
        // words where reg_stage_out_extra does: 512/2 at K 2048 x 512 rows).
        for emit in [None, Some("slots"), Some("cur")] {
            let mut tuning = base.clone();
            if forced {
                tuning.set("reg.entry", IMG_ENTRY).unwrap();
            }
            if let Some(form) = emit {
                tuning.set("reg.emit", form).unwrap();
            }
            let mut arm = SsArm::new("ss-reg", Selector::Forced(Family::Reg), gpu.clone(), tuning);
            let label = format!("{rows}x{n} k={k} {:?}", arm.variant(&Shape::of(&b)));
            arm.stage(&b)
                .unwrap_or_else(|e| panic!("{label}: stage: {e}"));
            // The occupancy calculator: one 1024 x 4 CTA per SM (56 registers
            // a thread), so its multi-wave batches prefetch one SM count of
            // rows ahead; one-wave batches never do, and an entry with two
            // or more CTAs per SM prefetches nothing.
            let Some(Plan::Reg(plan)) = arm.staged_plan() else {
                panic!("{label}: no register plan staged")
            };
            let ahead = plan.args.ahead;
            if rows <= gpu.facts.sms as usize {
                assert_eq!(ahead, 0, "{label}");
            } else if (plan.entry.blk, plan.entry.vpt) == (1024, 4) {
                assert_eq!(ahead, gpu.facts.sms, "{label}");
            }
            assert!(
                ahead == 0 || ahead == gpu.facts.sms,
                "{label}: ahead {ahead}"
            );
            assert!(
                ahead == 0 || (ahead as usize) < rows,
                "{label}: ahead {ahead}"
            );
            arm.poison_output().unwrap();
            for launch in 0..2 {
                arm.launch()
                    .unwrap_or_else(|e| panic!("{label}: launch: {e}"));
                let out = arm.read_output().unwrap();
                check(&b, &out, &format!("{label} launch {launch}"));
            }
        }
    }
}

#[test]
#[cfg_attr(
    no_gpu_tests,
    ignore = "needs a GPU: build and run with GVR_GPU_TESTS=1"
)]
fn registry_builds_ss_reg() {
    let Some(gpu) = open_gpu() else { return };
    let arm = gvr_bench::arms::registry::create("ss-reg", Some(gpu)).expect("ss-reg builds");
    assert_eq!(arm.name(), "ss-reg");
    let too_long = Shape {
        rows: 1,
        n: 1 << 20,
        npad: 1 << 20,
        k: 1024,
    };
    assert!(arm.admits(&too_long).is_err());
}
