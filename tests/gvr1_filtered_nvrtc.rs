//! The `filtered` and `gvr1` kernels compiled with NVRTC for sm_90a (no GPU
//! needed): no local-memory stack frame (a dynamically indexed local array
//! would put hot data in local memory without counting as a spill), register
//! budget within the launch bounds, and static + dynamic shared memory within
//! the host plan's reserve and the 227 KiB opt-in limit.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::arms::gpu_baselines::{filtered, gvr1};
use gvr_bench::gpu::nvrtc::{compile_report, nvrtc_available, DEFAULT_ARCH, NVRTC_INSTALL_HINT};
use gvr_bench::gpu::sources::{FILTERED, GVR1};

fn nvrtc_or_skip() -> bool {
    if nvrtc_available() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("libnvrtc not found but CI is set: {NVRTC_INSTALL_HINT}");
    }
    println!("SKIPPED: libnvrtc not found ({NVRTC_INSTALL_HINT})");
    false
}

#[test]
fn filtered_and_gvr1_fit_their_plans() {
    if !nvrtc_or_skip() {
        return;
    }
    let cases = [
        (
            FILTERED,
            filtered::ENTRY,
            filtered::BLOCK,
            filtered::DYN_SMEM_BYTES,
            filtered::STATIC_SMEM_RESERVE,
        ),
        (
            GVR1,
            gvr1::ENTRY,
            gvr1::BLOCK,
            gvr1::DYN_SMEM_BYTES,
            gvr1::STATIC_SMEM_RESERVE,
        ),
    ];
    for (source, entry, block, dyn_smem, static_reserve) in cases {
        let report = compile_report(&source, &[], DEFAULT_ARCH).expect("compiles");
        let info = report
            .entries
            .iter()
            .find(|e| e.name == entry)
            .unwrap_or_else(|| panic!("{entry} missing from the ptxas log:\n{}", report.log));
        assert_eq!(
            info.stack_frame, 0,
            "{entry} uses a local stack frame:\n{}",
            report.log
        );
        assert_eq!(
            (info.spill_stores, info.spill_loads),
            (0, 0),
            "{entry} spills"
        );
        // 64K registers per SM must hold one CTA of `block` threads.
        assert!(
            info.registers as u64 * block as u64 <= 65_536,
            "{entry}: {} registers",
            info.registers
        );
        assert!(
            info.smem as usize <= static_reserve,
            "{entry}: static smem {} > reserve {static_reserve}",
            info.smem
        );
        assert!(
            dyn_smem + static_reserve <= gvr1::SMEM_OPTIN_BYTES,
            "{entry}: smem over the opt-in limit"
        );
    }
}
