//! The latency-floor kernels (kernels/harness/floor.cu) on the GPU: every
//! shape `floor::shapes` plans for a batch (every block size, the wave
//! tricks at many rows) writes the identity pattern into every output slot,
//! twice on one staging (the grid hand-off's counters must restore
//! themselves), on rows of mixed lengths (n ≤ k, n not a multiple of 4,
//! zero-length rows, one long row among short ones), and so do the ring
//! shapes of the `floor.extra` knob (bulk copies into shared memory); and the
//! timed measurement keeps its fastest successful shape.
//!
//! Ignored unless asked for: on the H200, `GVR_GPU_TESTS=1 floor_gpu
//! --include-ignored` (a missing GPU then fails).

use crate::support::ss::{batch, open_gpu};
use gvr_bench::arms::Arm;
use gvr_bench::floor::arm::{measure_floor, FloorKernel};
use gvr_bench::floor::{check_output, parse_extra_shapes, shapes, FloorRecord, FloorWave, BLOCKS};
use gvr_bench::grid::Batch;
use gvr_bench::timing::gpu::GpuTimer;
use gvr_bench::timing::Protocol;

fn rows(lengths: &[usize]) -> Vec<Vec<f32>> {
    lengths
        .iter()
        .enumerate()
        .map(|(r, &n)| {
            (0..n)
                .map(|i| ((i * 7919 + r * 104_729) % 1_000_003) as f32 - 5e5)
                .collect()
        })
        .collect()
}

fn batches() -> Vec<(&'static str, Batch)> {
    vec![
        ("one 1,027 row", batch(&rows(&[1027]), &[], 1024)),
        (
            "mixed short rows",
            batch(&rows(&[0, 3, 511, 512, 513, 1027, 2051, 4111]), &[], 512),
        ),
        (
            "one long row among short ones",
            batch(&rows(&[262_144, 17, 2048, 131_087]), &[], 2048),
        ),
        (
            "many rows: waves at every block size",
            batch(
                &rows(
                    &(0..3000)
                        .map(|r| [4111, 17, 0, 8195][r % 4])
                        .collect::<Vec<_>>(),
                ),
                &[],
                2048,
            ),
        ),
        ("one 131,087 row", batch(&rows(&[131_087]), &[], 2048)),
    ]
}

/// `floor_grid`'s residency at each block size, as the measurement plans with.
/// The floor of the last of [`batches`] (one 131,087 row) measured by the
/// kernel `make` builds, with one warm and `cold_reps` cold reps; and the
/// number of shapes the planner gives that batch. `None` without a GPU.
fn measure_131k(
    make: impl FnOnce(std::sync::Arc<gvr_bench::gpu::Gpu>) -> FloorKernel,
    cold_reps: usize,
) -> Option<(FloorRecord, usize)> {
    let gpu = open_gpu()?;
    let mut kernel = make(gpu.clone());
    let protocol = Protocol {
        warmup: 1,
        warm_reps: 1,
        cold_reps,
        flush_bytes: 64 << 20,
    };
    let mut timer = GpuTimer::new(gpu, protocol).unwrap();
    let (_, b) = batches().pop().unwrap();
    let record = measure_floor(&mut kernel, &mut timer, &b, &protocol, empty_record_131k());
    let sms = kernel.sms();
    let per_sm = residency(&mut kernel);
    Some((record, shapes(b.rows, b.n_max(), sms, &per_sm).len()))
}

/// The record `measure_floor` fills for the last of [`batches`] (one 131,087 row).
fn empty_record_131k() -> FloorRecord {
    FloorRecord {
        case: "t@b1".into(),
        cell: "t".into(),
        model: gvr_bench::capture::Model::V32,
        isl: "128k".into(),
        layer: 0,
        n: 131_087,
        k: 2048,
        b: 1,
        bytes: 4 * (131_087 + 2048),
        best: None,
        cold_us: Vec::new(),
        warm_us: Vec::new(),
        tried: Vec::new(),
        error: None,
        method: None,
    }
}

fn residency(kernel: &mut FloorKernel) -> impl Fn(u32) -> u32 {
    let per_sm: Vec<(u32, u32)> = BLOCKS.iter().map(|&b| (b, kernel.per_sm(b))).collect();
    move |block| per_sm.iter().find(|(b, _)| *b == block).map_or(0, |p| p.1)
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn every_shape_writes_every_slot_and_restores_its_counters() {
    let Some(gpu) = open_gpu() else { return };
    let mut kernel = FloorKernel::new(gpu.clone());
    for (label, b) in batches() {
        kernel.stage(&b).unwrap();
        let per_sm = residency(&mut kernel);
        let mut planned = shapes(b.rows, b.n_max(), kernel.sms(), &per_sm);
        assert!(planned.len() >= 3, "{label}: {planned:?}");
        if b.rows >= 3000 {
            assert!(
                planned.iter().any(|s| s.wave == Some(FloorWave::NextWave))
                    && planned.iter().any(|s| s.wave == Some(FloorWave::Stagger)),
                "{label}: {planned:?}"
            );
        }
        // Rings of one chunk or many, chunks shorter than a block's float4s,
        // and the last chunk of a row shorter than the others.
        planned.extend(parse_extra_shapes("b512:4x16384,b256:2x4096,b1024:3x48,b512").unwrap());
        for shape in planned {
            kernel.set_shape(shape).unwrap();
            kernel.poison_output().unwrap();
            for launch in 0..2 {
                kernel.launch().unwrap();
                let out = kernel.read_output().unwrap();
                if let Err(why) = check_output(&b, &out) {
                    panic!("{label}, {} launch {launch}: {why}", shape.label());
                }
                // Poison again without zeroing the counters: the second
                // launch must find them restored to write anything.
                kernel.poison_slots().unwrap();
            }
        }
    }
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn measurement_keeps_the_fastest_shape() {
    // Three cold reps with the default screen of three: no screen.
    let Some((record, planned)) = measure_131k(FloorKernel::new, 3) else {
        return;
    };
    assert_eq!(record.tried.len(), planned);
    for t in &record.tried {
        assert!(t.error.is_none(), "{}: {:?}", t.shape.label(), t.error);
    }
    let best = record.best.expect("a floor");
    let best_mean = record.cold_us.iter().sum::<f64>() / record.cold_us.len() as f64;
    let fastest = record
        .tried
        .iter()
        .filter_map(|t| t.mean_cold_us)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(record.cold_us.len(), 3);
    assert!((best_mean - fastest).abs() < 1e-9, "{best:?}");
    println!(
        "131,087 × K 2,048 × 1: floor {best_mean:.2} µs ({}); {}",
        best.label(),
        record
            .tried
            .iter()
            .map(|t| format!(
                "{} {:.2}",
                t.shape.label(),
                t.mean_cold_us.unwrap_or(f64::NAN)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[test]
#[ignore = "needs the H200: run with GVR_GPU_TESTS=1 --include-ignored"]
fn a_screen_times_every_shape_and_the_finalists_in_full() {
    let Some((record, planned)) = measure_131k(|gpu| FloorKernel::new(gpu).with_screen(2), 5)
    else {
        return;
    };
    assert_eq!(record.tried.len(), planned);
    let screened: Vec<Option<f64>> = record.tried.iter().map(|t| t.screen_cold_us).collect();
    assert!(
        screened.iter().all(Option::is_some),
        "every shape screened: {screened:?}"
    );
    let finals = gvr_bench::floor::finalists(&screened);
    for (i, t) in record.tried.iter().enumerate() {
        assert!(t.error.is_none(), "{}: {:?}", t.shape.label(), t.error);
        assert_eq!(
            t.mean_cold_us.is_some(),
            finals.contains(&i),
            "{}",
            t.shape.label()
        );
    }
    let best = record.best.expect("a floor");
    assert!(finals.iter().any(|&i| record.tried[i].shape == best));
    // The floor's reps are the full protocol's, not the screen's.
    assert_eq!(record.cold_us.len(), 5);
    assert_eq!(record.warm_us.len(), 1);
}
