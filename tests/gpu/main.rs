//! On-device tests: they run when built and run with GVR_GPU_TESTS=1 on a machine with a GPU and show as ignored otherwise (build.rs sets `no_gpu_tests`).

#[path = "../support/mod.rs"]
mod support;

mod baselines;
mod campaign_throughput;
mod filtered_dispatch;
mod floor;
mod gpu_runtime;
mod gvr1_cluster_exact;
mod nan;
mod phases;
mod sglang_v2;
mod ss_clus;
mod ss_clus_stream;
mod ss_main;
mod ss_reg;
mod ss_varlen;
mod timing_methods;
