//! The `filtered` arm's module (`filtered.cu` + `radix_mcta.cu` as one
//! translation unit, `filtered::DISPATCH_SOURCE`) compiled with NVRTC for
//! sm_90a (no GPU needed): both entry points are present, neither spills nor
//! uses a local stack frame, and each fits the plan it is launched with, i.e.
//! concatenating the sources changes nothing the two arms rely on.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::arms::baselines::{filtered, radix_mcta};
use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{FILTERED, RADIX_MCTA};

use crate::support::nvrtc::{assert_entry_fits, nvrtc_or_skip};

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
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
        let info = assert_entry_fits(&combined, entry, block, static_reserve);
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
