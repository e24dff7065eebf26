//! The `filtered` and `gvr1` kernels compiled with NVRTC for sm_90a (no GPU
//! needed): no local-memory stack frame (a dynamically indexed local array
//! would put hot data in local memory without counting as a spill), register
//! budget within the launch bounds, and static + dynamic shared memory within
//! the host plan's reserve and the 227 KiB opt-in limit.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::arms::baselines::{filtered, gvr1};
use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::{FILTERED, GVR1};

use crate::support::nvrtc::{assert_entry_fits, nvrtc_or_skip};

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
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
        assert_entry_fits(&report, entry, block, static_reserve);
        assert!(
            dyn_smem + static_reserve <= gvr1::SMEM_OPTIN_BYTES,
            "{entry}: smem over the opt-in limit"
        );
    }
}
