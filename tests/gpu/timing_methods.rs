//! On-device checks of the second timing method and of the read-bandwidth
//! probe: every audited GPU arm captured in a CUDA graph and replayed gives
//! exact output and every rep, within reach of its CUPTI kernel time; an
//! unaudited arm is refused; the probe's figure is a plausible HBM read rate.
//!
//! Needs a GPU, so every test is `#[ignore]`d; on the device run
//! `cargo test --release --test timing_methods_gpu -- --ignored --nocapture`
//! (there a missing GPU is a failure, never a silent pass).

use std::sync::Arc;

use gvr_bench::arms::registry;
use gvr_bench::exact::PeriodicCheck;
use gvr_bench::gpu::Gpu;
use gvr_bench::grid::Batch;
use gvr_bench::timing::bandwidth;
use gvr_bench::timing::gpu::{GpuTimer, TimingChoice};
use gvr_bench::timing::{graph, Protocol, Timer, TimingMethod};

fn open_gpu() -> Arc<Gpu> {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs a GPU: {e}"))
}

/// `rows` rows of length `n` with ties, distinct per row.
fn batch(rows: usize, n: usize, k: usize) -> Batch {
    let data: Vec<Vec<f32>> = (0..rows)
        .map(|r| {
            (0..n)
                .map(|i| ((i * 7919 + r * 104_729) % 1000) as f32 - 500.0)
                .collect()
        })
        .collect();
    let all: Vec<&Vec<f32>> = data.iter().collect();
    let mut b = Batch::from_rows(&all, n.div_ceil(64) * 64, k, f32::MIN);
    for r in 0..rows {
        for slot in 0..k {
            b.hints[r * k + slot] = (r * 31 + slot) as i32;
        }
    }
    b
}

#[test]
#[ignore = "needs a Hopper GPU: CUDA-graph replay of every audited arm"]
fn graph_replay_of_every_audited_arm_is_exact_and_close_to_kernel_time() {
    let gpu = open_gpu();
    let protocol = Protocol {
        warmup: 3,
        warm_reps: 3,
        cold_reps: 8,
        flush_bytes: 256 << 20,
    };
    let names = [
        "radix",
        "radix-mcta",
        "filtered",
        "gvr1",
        "ss",
        "ss-main",
        "ss-reg",
        "ss-clus",
        "ss-regclus",
        "ss-varlen",
    ];
    // Shapes that take the arms through their families and tiers.
    let shapes = [(1, 65_539, 2048), (64, 8_195, 512), (256, 131_075, 2048)];
    let mut cupti = GpuTimer::with_choice(gpu.clone(), protocol, TimingChoice::Cupti).ok();
    let mut graphed = GpuTimer::with_choice(gpu.clone(), protocol, TimingChoice::Graph).unwrap();
    for (rows, n, k) in shapes {
        let b = Arc::new(batch(rows, n, k));
        let check = PeriodicCheck::new(Arc::clone(&b), rows);
        for name in names {
            graph::audit(name).unwrap();
            let mut arm = registry::create(name, Some(gpu.clone())).unwrap();
            if arm.admits(&gvr_bench::arms::Shape::of(&b)).is_err() {
                continue;
            }
            arm.stage(&b).unwrap();
            arm.poison_output().unwrap();
            let t = graphed
                .measure(arm.as_mut(), &protocol)
                .unwrap_or_else(|e| panic!("{name} B={rows} N={n}: {e}"));
            assert_eq!(t.method, TimingMethod::GraphReplay);
            assert_eq!((t.warm_us.len(), t.cold_us.len()), (3, 8));
            let output = arm.read_output().unwrap();
            assert!(
                check.check(&output).is_exact(),
                "{name} B={rows} N={n}: graph replay output not exact"
            );
            let graph_mean = t.cold_us.iter().sum::<f64>() / 8.0;
            if let Some(cupti) = cupti.as_mut() {
                arm.poison_output().unwrap();
                let k = cupti.measure(arm.as_mut(), &protocol).unwrap();
                let kernel_mean = k.cold_us.iter().sum::<f64>() / 8.0;
                eprintln!(
                    "{name:<12} B={rows:<4} N={n:<7} kernel {kernel_mean:8.2} µs  graph {graph_mean:8.2} µs  ({:.3})",
                    graph_mean / kernel_mean
                );
                // Graph replay adds launch and gap time, never removes kernel time.
                assert!(
                    graph_mean > 0.8 * kernel_mean,
                    "{name} B={rows} N={n}: graph {graph_mean} vs kernel {kernel_mean}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU: the unaudited-arm refusal and the probe"]
fn read_bandwidth_probe_is_a_plausible_hbm_rate() {
    let gpu = open_gpu();
    let mut timer =
        GpuTimer::with_choice(gpu.clone(), Protocol::default(), TimingChoice::Auto).unwrap();
    let bw = bandwidth::measure(&gpu, &mut timer).unwrap();
    eprintln!("{} on {}", bw.describe(), gpu.facts.name);
    for (shape, rate) in &bw.shapes {
        eprintln!("  {shape:<28} {:.3} TB/s", rate / 1e12);
    }
    // H100 SXM 3.35 TB/s and H200 4.8 TB/s nominal: reads reach 80-95 %.
    assert!(
        (1.5e12..6.0e12).contains(&bw.bytes_per_s),
        "{}",
        bw.describe()
    );
    assert!(graph::audit("fi-radix").is_err());
}
