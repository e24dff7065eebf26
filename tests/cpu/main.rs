//! Tests that need nothing but the CPU: captures, grid, checker, statistics, the CPU model of the self-sampling kernels, the route, reports.

#[path = "../support/mod.rs"]
mod support;

mod capture_inspect;
mod capture_roundtrip;
mod cpu_ss_paths;
mod cpu_ss_prop;
mod exact_checker;
mod grid_batch;
mod grid_files;
mod grid_select;
mod report_pipeline;
mod route_h200;
mod stats_properties;
mod synth_full;
mod synth_gates;
mod synth_sample;
