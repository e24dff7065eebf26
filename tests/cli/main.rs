//! The binary as a user runs it: commands, flags, errors and exit codes, interrupts and resume.

#[path = "../support/mod.rs"]
mod support;

mod certify;
mod devices;
mod errors;
mod grid;
mod run_interrupt;
mod tuning;
mod verdicts;
