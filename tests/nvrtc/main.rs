//! Kernel compile gates through NVRTC (libnvrtc, no GPU): every specialisation compiles, hot entries do not spill. Without libnvrtc at build time (LD_LIBRARY_PATH or ldconfig, probed by build.rs) they show as ignored with the reason; under CI=true they fail instead.

#[path = "../support/mod.rs"]
mod support;

mod filtered_dispatch;
mod gvr1_cluster;
mod gvr1_filtered;
mod nvrtc_compile;
mod nvrtc_parallel;
mod phase_probe_compile;
mod ss_kernel_compile;
