//! The real kernel sources run on the CPU through the host emulator (tests/ss_emu, built with g++; each test says SKIPPED where g++ is missing).

#[path = "../support/mod.rs"]
mod support;

mod floor;
mod radix;
mod sglang_v2;
mod ss_clus;
mod ss_clus_stream;
mod ss_main;
mod ss_reg;
