//! The `kernels/ss/main.cu` kernel compiles for sm_90a, declares every entry point
//! the `ss-main` host plan can pick, and nothing in it (entries or
//! non-inlined device functions) spills or uses a stack frame for locals.
//! Skips (passes with a note) without libnvrtc unless `CI` is set.

use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{declared_entries, SS_MAIN};
use gvr_bench::topk::families::main::{device_defines, entry_name, ENTRY_SHAPES};

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
fn ss_main_entries_exist_and_nothing_spills() {
    // The declaration scan needs no compiler: every planned entry is declared.
    let declared = declared_entries(SS_MAIN.code);
    for &(blk, u, split) in ENTRY_SHAPES {
        let name = entry_name(blk, u, split);
        assert!(
            declared.contains(&name),
            "{name} not declared in ss_main.cu: {declared:?}"
        );
    }
    assert_eq!(declared.len(), ENTRY_SHAPES.len(), "{declared:?}");

    if !crate::support::nvrtc::nvrtc_or_skip() {
        return;
    }
    // The build the arms launch (the device's SM count is its one define).
    let defines = device_defines(132);
    let report = compile_report(&SS_MAIN, &defines, DEFAULT_ARCH)
        .unwrap_or_else(|e| panic!("ss/main.cu {defines:?} compiles: {e}"));
    crate::support::nvrtc::assert_registers_at_most(
        &report,
        &declared,
        64,
        &format!("{defines:?}"),
    );
    crate::support::nvrtc::assert_no_spill_in_log(&report.log, &format!("ss/main.cu {defines:?}"));
}

/// `SS_DEFINES="SS_PFD=2,SS_L2_DIST=0"` → NVRTC defines (diagnostics only).
fn defines_from_env() -> Vec<(&'static str, String)> {
    let text = std::env::var("SS_DEFINES").unwrap_or_default();
    text.split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let name: &'static str = Box::leak(k.trim().to_string().into_boxed_str());
            (name, v.trim().to_string())
        })
        .collect()
}

#[test]
#[ignore = "diagnostic: prints the ptxas log (defines from $SS_DEFINES)"]
fn dump_ptxas_log() {
    let report = compile_report(&SS_MAIN, &defines_from_env(), DEFAULT_ARCH).expect("compiles");
    println!("{}", report.log);
}
