//! The tools under scripts/ (each test says SKIPPED where python3, bash or a package is missing).

#[path = "../support/mod.rs"]
mod support;

mod ab_compare;
mod device_lib;
mod floor_targets;
mod import;
mod ncu_sass_regions;
mod peer_dry;
mod phase_table;
mod ptx_entries_diff;
mod trim_flashinfer;
