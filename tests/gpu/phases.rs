//! The phase probe on the H200 (`gvr-bench phases`): each self-sampling
//! family's probe build stays exact, leaves one stamp row per CTA with its
//! marks in order, and the finishing chain of each family is present
//! (main one CTA per row and SPLIT, reg, reg_clus, clus). Prints the phase
//! tables, so the device log shows where each launch's time went.
//!
//! Ignored unless asked for: on the H200, `GVR_GPU_TESTS=1 phases_gpu
//! --include-ignored` (a missing GPU then fails).

use crate::support::ss::{open_gpu, replicated, spread};
use gvr_bench::arms::registry;
use gvr_bench::run::phases::{probe_arm, probe_protocol, table};
use gvr_bench::timing::gpu::GpuTimer;

#[test]
#[ignore = "needs the H200: GVR_GPU_TESTS=1 phases_gpu --include-ignored"]
fn every_family_leaves_its_phase_chain() {
    let Some(gpu) = open_gpu() else { return };
    gpu.set_phase_probe(true);
    let protocol = probe_protocol(5, 512 << 20);
    let mut timer = GpuTimer::new(gpu.clone(), protocol).expect("timer");
    // (arm, n, k, B, the marks the finishing CTA must pass)
    let cases: [(&str, usize, usize, usize, &[&str]); 6] = [
        ("ss-main", 262_144, 2048, 1, &["hand-off", "verify", "emit"]),
        (
            "ss-main",
            131_072,
            512,
            256,
            &["sample", "pass", "verify", "emit"],
        ),
        (
            "ss-clus",
            65_551,
            2048,
            1,
            &["sample", "hand-off", "verify", "emit"],
        ),
        (
            "ss-regclus",
            32_771,
            1024,
            4,
            &["pass", "hand-off", "verify", "emit"],
        ),
        (
            "ss-reg",
            16_399,
            2048,
            8,
            &["threshold", "pass", "verify", "emit"],
        ),
        ("ss", 1_027, 1024, 1, &[]),
    ];
    let mut records = Vec::new();
    for (arm_name, n, k, rows, chain) in cases {
        let b = replicated(&spread(n), &[], rows, k);
        let mut arm = registry::create(arm_name, Some(gpu.clone())).expect("arm builds");
        let label = format!("{arm_name} {n} x {rows} K {k}");
        let r = probe_arm(
            &gpu,
            &mut timer,
            &protocol,
            3,
            (arm_name, arm.as_mut()),
            &b,
            &label,
        );
        assert_eq!(r.error, None, "{label}");
        assert_eq!(r.exact, "exact", "{label}");
        assert_eq!(r.launches.len(), 3, "{label}");
        for launch in &r.launches {
            assert!(launch.ctas >= rows, "{label}: {} CTAs probed", launch.ctas);
            let critical: Vec<&str> = launch.critical.iter().map(|(p, _)| *p).collect();
            assert_eq!(critical.first(), Some(&"length"), "{label}: {critical:?}");
            assert_eq!(critical.last(), Some(&"finish"), "{label}: {critical:?}");
            for mark in chain {
                assert!(
                    critical.contains(mark),
                    "{label}: {mark} missing from {critical:?}"
                );
            }
            assert!(launch.launch_ns > 0, "{label}");
        }
        records.push(r);
    }
    println!("{}", table(&records));
}
