//! The `filtered` arm's module (`filtered.cu` + `radix_mcta.cu` as one
//! translation unit, `filtered::DISPATCH_SOURCE`) compiled with NVRTC for
//! sm_90a (no GPU needed): both entry points are present, neither spills nor
//! uses a local stack frame, and each fits the plan it is launched with, i.e.
//! concatenating the sources changes nothing the two arms rely on.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::arms::gpu_baselines::{filtered, radix_mcta};
use gvr_bench::gpu::nvrtc::{compile_report, nvrtc_available, DEFAULT_ARCH, NVRTC_INSTALL_HINT};
use gvr_bench::gpu::sources::{FILTERED, RADIX_MCTA};

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
fn combined_module_keeps_both_kernels_as_compiled_alone() {
    if !nvrtc_or_skip() {
        return;
    }
    let combined = compile_report(&filtered::DISPATCH_SOURCE, &[], DEFAULT_ARCH)
        .expect("filtered.cu + radix_mcta.cu compiles as one unit");
    for (alone_source, entry, block, static_reserve) in [
        (
            FILTERED,
            filtered::ENTRY,
            filtered::BLOCK,
            filtered::STATIC_SMEM_RESERVE,
        ),
        (
            RADIX_MCTA,
            radix_mcta::ENTRY,
            radix_mcta::BLOCK,
            radix_mcta::STATIC_SMEM_RESERVE,
        ),
    ] {
        let info = combined
            .entries
            .iter()
            .find(|e| e.name == entry)
            .unwrap_or_else(|| panic!("{entry} missing from the ptxas log:\n{}", combined.log));
        assert_eq!(
            info.stack_frame, 0,
            "{entry} stack frame:\n{}",
            combined.log
        );
        assert_eq!(
            (info.spill_stores, info.spill_loads),
            (0, 0),
            "{entry} spills"
        );
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
        // Same resources as the kernel compiled from its own file.
        let alone = compile_report(&alone_source, &[], DEFAULT_ARCH).expect("compiles alone");
        let alone_info = alone
            .entries
            .iter()
            .find(|e| e.name == entry)
            .unwrap_or_else(|| panic!("{entry} missing alone:\n{}", alone.log));
        assert_eq!(
            (info.registers, info.smem),
            (alone_info.registers, alone_info.smem),
            "{entry}: registers / static smem differ from the single-file build"
        );
    }
}
