//! Kernel compile gates through NVRTC (libnvrtc, no GPU): every specialisation compiles, hot entries do not spill. Without libnvrtc they fail on CI and say SKIPPED elsewhere.

#[path = "../support/mod.rs"]
mod support;

mod filtered_dispatch;
mod gvr1_cluster;
mod gvr1_filtered;
mod nvrtc_compile;
mod nvrtc_parallel;
mod phase_probe_compile;
mod ss_kernel_compile;
