//! `nvrtc::compile_all` (the run's parallel prebuild): compiling several
//! programs on concurrent threads gives, in job order, the CUBIN each gives
//! alone, and a failing job fails alone. NVRTC only, no GPU.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::gpu::nvrtc::{compile_all, compile_cubin, compile_options, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{KernelSource, FLUSH, SS_VALUES};

use crate::support::nvrtc::nvrtc_or_skip;

const BROKEN: KernelSource = KernelSource {
    name: "broken.cu",
    code: "extern \"C\" __global__ void k() { this is not C++; }",
};

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
fn parallel_compiles_match_sequential_ones_in_job_order() {
    if !nvrtc_or_skip() {
        return;
    }
    let options = |defines: &[(&str, String)]| compile_options(DEFAULT_ARCH, defines);
    let jobs = vec![
        (FLUSH, options(&[])),
        (SS_VALUES, options(&[])),
        (BROKEN, options(&[])),
        (FLUSH, options(&[("GVR_UNUSED_DEFINE", "1".to_string())])),
    ];
    let parallel = compile_all(&jobs, 3);
    assert_eq!(parallel.len(), jobs.len());
    for ((source, opts), result) in jobs.iter().zip(&parallel) {
        let alone = compile_cubin(source, opts);
        match (result, alone) {
            (Ok(p), Ok(a)) => assert_eq!(p.cubin, a.cubin, "{} {opts:?}", source.name),
            (Err(p), Err(a)) => {
                assert_eq!(source.name, "broken.cu");
                assert_eq!(p.to_string(), a.to_string());
            }
            (p, a) => panic!(
                "{}: parallel ok={} alone ok={}",
                source.name,
                p.is_ok(),
                a.is_ok()
            ),
        }
    }
    assert!(parallel[2].is_err(), "the broken source must fail");
    assert!(compile_all(&[], 4).is_empty());
}

#[test]
#[ignore = "heavy (two ss_main.cu builds twice, ~1 min on two cores); run with --ignored"]
fn two_large_sources_compile_concurrently_to_the_same_cubins() {
    if !nvrtc_or_skip() {
        return;
    }
    use gvr_bench::gpu::sources::SS_MAIN;
    let jobs = vec![
        (SS_MAIN, compile_options(DEFAULT_ARCH, &[])),
        (
            SS_MAIN,
            compile_options(DEFAULT_ARCH, &[("SS_SCAN_FORM", "0".to_string())]),
        ),
    ];
    let started = std::time::Instant::now();
    let parallel = compile_all(&jobs, 2);
    let parallel_s = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let sequential = compile_all(&jobs, 1);
    let sequential_s = started.elapsed().as_secs_f64();
    println!("two ss_main.cu builds: {parallel_s:.1} s on two threads, {sequential_s:.1} s on one");
    for (p, s) in parallel.iter().zip(&sequential) {
        assert_eq!(p.as_ref().unwrap().cubin, s.as_ref().unwrap().cubin);
    }
}
