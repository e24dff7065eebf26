//! Helpers shared by the test binaries.
#![allow(dead_code)]

pub mod cli;
pub mod nvrtc;
pub mod script;
pub mod ss;
