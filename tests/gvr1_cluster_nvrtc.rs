//! The `gvr1` cluster-tier entries (`gvr1_topk_c2/_c4/_c8`) compiled with
//! NVRTC for sm_90a (no GPU needed): every entry the host plan can pick
//! exists, keeps no local stack frame or spills, fits 512 threads in the
//! register file, and stays within the plan's shared-memory reserve.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::arms::gpu_baselines::gvr1;
use gvr_bench::gpu::nvrtc::{compile_report, nvrtc_available, DEFAULT_ARCH, NVRTC_INSTALL_HINT};
use gvr_bench::gpu::sources::GVR1;

#[test]
fn every_gvr1_tier_entry_fits_its_plan() {
    if !nvrtc_available() {
        if std::env::var_os("CI").is_some() {
            panic!("libnvrtc not found but CI is set: {NVRTC_INSTALL_HINT}");
        }
        println!("SKIPPED: libnvrtc not found ({NVRTC_INSTALL_HINT})");
        return;
    }
    let report = compile_report(&GVR1, &[], DEFAULT_ARCH).expect("gvr1.cu compiles");
    let entries = std::iter::once(gvr1::ENTRY).chain(gvr1::CLUSTER_ENTRIES.iter().map(|e| e.1));
    for entry in entries {
        let info = report
            .entries
            .iter()
            .find(|e| e.name == entry)
            .unwrap_or_else(|| panic!("{entry} missing from the ptxas log:\n{}", report.log));
        assert_eq!(
            info.stack_frame, 0,
            "{entry} uses a stack frame:\n{}",
            report.log
        );
        assert_eq!(
            (info.spill_stores, info.spill_loads),
            (0, 0),
            "{entry} spills"
        );
        assert!(
            info.registers as u64 * gvr1::BLOCK as u64 <= 65_536,
            "{entry}: {} registers",
            info.registers
        );
        assert!(
            info.smem as usize <= gvr1::STATIC_SMEM_RESERVE,
            "{entry}: static smem {}",
            info.smem
        );
        println!("{entry}: regs={} smem={}", info.registers, info.smem);
    }
}
