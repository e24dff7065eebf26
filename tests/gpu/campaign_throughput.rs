//! On-device checks of the campaign throughput machinery: the batched GPU
//! timer (one synchronisation per measurement, reps split by marker
//! kernels) under CUPTI and CUDA events, and the per-case shared staging
//! with device-side row replication.
//!
//! Needs a GPU, so every test is `#[ignore]`d; on the H200 run
//! `cargo test --release --test campaign_throughput_gpu -- --ignored`
//! (there a missing GPU is a failure, never a silent pass).

use std::sync::Arc;

use gvr_bench::arms::baselines;
use gvr_bench::arms::Arm;
use gvr_bench::exact::PeriodicCheck;
use gvr_bench::gpu::{DeviceBatch, Gpu, StagedInputs};
use gvr_bench::grid::Batch;
use gvr_bench::timing::gpu::{GpuTimer, TimingChoice};
use gvr_bench::timing::{Protocol, Timer, TimingMethod};

fn open_gpu() -> Arc<Gpu> {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs a GPU: {e}"))
}

/// `rows` rows cycling through `period` distinct rows of length `n` (with
/// ties), hints distinct per distinct row.
fn periodic_batch(rows: usize, period: usize, n: usize, k: usize) -> Batch {
    let distinct: Vec<Vec<f32>> = (0..period)
        .map(|p| {
            (0..n)
                .map(|i| ((i * 7919 + p * 104_729) % 1000) as f32 - 500.0)
                .collect()
        })
        .collect();
    let all: Vec<&Vec<f32>> = (0..rows).map(|r| &distinct[r % period]).collect();
    let mut batch = Batch::from_rows(&all, n.div_ceil(64) * 64, k, f32::MIN);
    for r in 0..rows {
        for slot in 0..k {
            batch.hints[r * k + slot] = ((r % period) * 31 + slot) as i32;
        }
    }
    batch
}

fn download<T: cudarc::driver::DeviceRepr + Default + Clone>(
    gpu: &Gpu,
    slice: &cudarc::driver::CudaSlice<T>,
) -> Vec<T> {
    gpu.stream.clone_dtoh(slice).expect("download")
}

#[test]
#[ignore = "needs an H200: shared staging with device-side replication"]
fn shared_staging_is_byte_identical_to_a_host_upload() {
    let gpu = open_gpu();
    for (rows, period) in [(1, 1), (37, 1), (37, 3), (64, 5), (5, 5)] {
        let batch = Arc::new(periodic_batch(rows, period, 3000, 512));
        let direct = DeviceBatch::upload(&gpu, &batch).unwrap();
        let shared = StagedInputs::share(&gpu, Arc::clone(&batch), period).unwrap();
        assert_eq!(
            shared.uploaded_rows(),
            period,
            "rows {rows} period {period}"
        );
        let via_shared = DeviceBatch::upload(&gpu, &batch).unwrap();
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(
            bits(download(&gpu, &via_shared.logits)),
            bits(download(&gpu, &direct.logits)),
            "logits differ: rows {rows} period {period}"
        );
        assert_eq!(download(&gpu, &via_shared.n), download(&gpu, &direct.n));
        assert_eq!(
            download(&gpu, &via_shared.hints),
            download(&gpu, &direct.hints)
        );
        drop(shared);
        // A false period is refused: every row is uploaded.
        if period > 1 {
            let shared = StagedInputs::share(&gpu, Arc::clone(&batch), 1).unwrap();
            assert_eq!(shared.uploaded_rows(), rows);
        }
    }
}

#[test]
#[ignore = "needs an H200: batched CUPTI / events timing of a real arm"]
fn batched_timer_yields_every_rep_and_exact_output() {
    let gpu = open_gpu();
    let protocol = Protocol {
        warmup: 3,
        warm_reps: 5,
        cold_reps: 10,
        flush_bytes: 64 << 20,
    };
    let batch = Arc::new(periodic_batch(8, 2, 40_000, 2048));
    let check = PeriodicCheck::new(Arc::clone(&batch), 2);
    let mut arms: Vec<Box<dyn Arm>> = ["radix", "radix-mcta", "filtered"]
        .iter()
        .map(|name| baselines::create(name, gpu.clone()).unwrap().unwrap())
        .collect();
    for (choice, method) in [
        (TimingChoice::Cupti, TimingMethod::Cupti),
        (TimingChoice::Events, TimingMethod::CudaEvents),
    ] {
        let mut timer = GpuTimer::with_choice(gpu.clone(), protocol, choice).unwrap();
        let _shared = StagedInputs::share(&gpu, Arc::clone(&batch), 2).unwrap();
        // Several arms and repeated measurements back to back: a stale
        // record of one measurement must never leak into the next.
        for round in 0..3 {
            for arm in arms.iter_mut() {
                arm.stage(&batch).unwrap();
                arm.poison_output().unwrap();
                let t = timer.measure(arm.as_mut(), &protocol).unwrap();
                assert_eq!(t.method, method);
                assert_eq!(t.warm_us.len(), 5);
                assert_eq!(t.cold_us.len(), 10);
                assert!(
                    t.warm_us
                        .iter()
                        .chain(&t.cold_us)
                        .all(|&us| us > 0.0 && us < 1e5),
                    "{} round {round} {method:?}: {t:?}",
                    arm.name()
                );
                let phases = timer.take_phases();
                assert!(!phases.is_empty());
                let output = arm.read_output().unwrap();
                assert!(check.check(&output).is_exact(), "{} {method:?}", arm.name());
            }
        }
    }
}
