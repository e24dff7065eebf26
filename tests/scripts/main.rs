//! The Python tools under scripts/ (each test says SKIPPED where python3 or a package is missing).

#[path = "../support/mod.rs"]
mod support;

mod ab_compare;
mod import;
mod ncu_sass_regions;
mod peer_dry;
mod phase_table;
mod ptx_entries_diff;
mod trim_flashinfer;
