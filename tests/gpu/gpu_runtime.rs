//! GPU runtime end to end, on a machine with a CUDA device: open, build
//! every kernel, batch round trip, flush, both timing methods (the same
//! path as `gvr-bench gpu info`). Without a device it checks that opening
//! fails cleanly and passes with a SKIPPED note.

use gvr_bench::gpu::Gpu;
use gvr_bench::run::selfcheck::gpu_selfcheck;
use gvr_bench::GvrError;

#[test]
fn selfcheck_runs_on_a_gpu_or_open_fails_cleanly() {
    match Gpu::open(0) {
        Err(GvrError::Gpu(reason)) => {
            println!("SKIPPED: no usable GPU ({reason})");
        }
        Err(other) => panic!("Gpu::open must fail with GvrError::Gpu, got {other}"),
        Ok(gpu) => {
            assert!(gpu.facts.sms > 0);
            assert!(gpu.facts.l2_bytes > 0);
            drop(gpu);
            let report = gpu_selfcheck().expect("self-check on a GPU host");
            println!("{report}");
            assert!(report.contains("device batch round trip: ok"), "{report}");
            assert!(report.contains("empty kernel [CudaEvents]"), "{report}");
        }
    }
}
