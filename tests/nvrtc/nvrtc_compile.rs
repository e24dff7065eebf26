//! Compile every kernel specialisation the arms use for sm_90a with NVRTC
//! (no GPU needed) and gate on compile errors and on register spills in hot
//! entry points (every `extern "C" __global__` except the `flush*` harness
//! kernels).
//!
//! Without libnvrtc: fails when `CI` is set (CI must have it), else prints
//! SKIPPED and passes.

use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{declared_entries, is_hot_entry, variants};

use crate::support::nvrtc::nvrtc_or_skip;

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
fn every_variant_compiles_without_hot_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut failures = Vec::new();
    let table = variants();
    assert!(!table.is_empty(), "no kernel variants listed");
    for (source, defines) in &table {
        let label = format!("{} {:?}", source.name, defines);
        let report = match compile_report(source, defines, DEFAULT_ARCH) {
            Ok(report) => report,
            Err(e) => {
                failures.push(format!("{label}: compile error: {e}"));
                continue;
            }
        };
        // Every declared entry must appear in the ptxas log: otherwise the
        // spill gate would silently check nothing for it.
        for declared in declared_entries(source.code) {
            if !report.entries.iter().any(|e| e.name == declared) {
                failures.push(format!(
                    "{label}: entry {declared} missing from the ptxas -v log"
                ));
            }
        }
        for entry in report.spilling() {
            if is_hot_entry(&entry.name) {
                failures.push(format!(
                    "{label}: hot entry {} spills ({} B stores, {} B loads, {} registers)",
                    entry.name, entry.spill_stores, entry.spill_loads, entry.registers
                ));
            }
        }
        for entry in &report.entries {
            println!(
                "{label}: {} regs={} spill_st={} spill_ld={} smem={}",
                entry.name, entry.registers, entry.spill_stores, entry.spill_loads, entry.smem
            );
        }
    }
    assert!(
        failures.is_empty(),
        "NVRTC gate failed:\n{}",
        failures.join("\n")
    );
}

/// The gate must actually catch what it claims to: a kernel forced to
/// spill is reported, and a syntax error is a compile error.
#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
fn gate_detects_spills_and_errors() {
    if !nvrtc_or_skip() {
        return;
    }
    use gvr_bench::gpu::sources::KernelSource;
    // A large per-thread array indexed dynamically under a 32-register cap
    // forces local memory traffic.
    let spilling = KernelSource {
        name: "spill_probe.cu",
        code: r#"
extern "C" __global__ void __launch_bounds__(1024, 2) hot_spill(float* out, const float* in, int n) {
    float acc[96];
    #pragma unroll
    for (int i = 0; i < 96; ++i) acc[i] = in[(threadIdx.x * 96 + i) % n];
    float s = 0.f;
    for (int r = 0; r < n; ++r) {
        #pragma unroll
        for (int i = 0; i < 96; ++i) { acc[i] = acc[i] * in[(r + i) % n] + acc[(i + 7) % 96]; }
    }
    #pragma unroll
    for (int i = 0; i < 96; ++i) s += acc[i];
    out[threadIdx.x] = s;
}
"#,
    };
    let report =
        compile_report(&spilling, &[("UNUSED", "1".into())], DEFAULT_ARCH).expect("probe compiles");
    assert_eq!(report.entries.len(), 1, "{}", report.log);
    assert_eq!(report.entries[0].name, "hot_spill");
    assert!(report.entries[0].registers > 0, "{}", report.log);
    assert!(
        report.spilling().count() == 1,
        "expected a spill:\n{}",
        report.log
    );

    let broken = KernelSource {
        name: "broken.cu",
        code: "extern \"C\" __global__ void k() { this is not C++; }",
    };
    let err = compile_report(&broken, &[], DEFAULT_ARCH).expect_err("must not compile");
    assert!(err.to_string().contains("broken.cu"), "{err}");
}

#[test]
#[should_panic(expected = "spill in demo.cu")]
fn a_spilling_function_in_the_log_fails_the_spill_gate() {
    crate::support::nvrtc::assert_no_spill_in_log(
        "ptxas info    : Function properties for ss_narrow_emit\n\
         \x20   16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n",
        "demo.cu",
    );
}

#[test]
fn a_log_without_spills_passes_the_spill_gate() {
    crate::support::nvrtc::assert_no_spill_in_log(
        "ptxas info    : Function properties for ss_narrow_emit\n\
         \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n",
        "demo.cu",
    );
}
