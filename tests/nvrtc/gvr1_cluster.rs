//! The `gvr1` cluster-tier entries (`gvr1_topk_c2/_c4/_c8`) compiled with
//! NVRTC for sm_90a (no GPU needed): every entry the host plan can pick
//! exists, keeps no local stack frame or spills, fits 512 threads in the
//! register file, and stays within the plan's shared-memory reserve.
//!
//! Without libnvrtc: fails when `CI` is set, else prints SKIPPED and passes.

use gvr_bench::arms::baselines::gvr1;
use gvr_bench::gpu::nvrtc::{compile_report, DEFAULT_ARCH};
use gvr_bench::gpu::sources::GVR1;

use crate::support::nvrtc::{assert_entry_fits, nvrtc_or_skip};

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
fn every_gvr1_tier_entry_fits_its_plan() {
    if !nvrtc_or_skip() {
        return;
    }
    let report = compile_report(&GVR1, &[], DEFAULT_ARCH).expect("gvr1.cu compiles");
    let entries = std::iter::once(gvr1::ENTRY).chain(gvr1::CLUSTER_ENTRIES.iter().map(|e| e.1));
    for entry in entries {
        let info = assert_entry_fits(&report, entry, gvr1::BLOCK, gvr1::STATIC_SMEM_RESERVE);
        println!("{entry}: regs={} smem={}", info.registers, info.smem);
    }
}
