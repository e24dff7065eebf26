//! gvr-bench: a benchmark and certification harness for exact top-K decode
//! kernels (self-sampling GVR V2 and the baselines it is judged against).
//!
//! Data flows one way: `capture` + `grid` select cases, `arms` run them,
//! `timing` measures, `exact` checks every row, `run` streams result records,
//! `floor` (with `grid --floor`) times each case's latency floor beside them,
//! `stats` and `report` turn records into tables.

pub mod arms;
pub mod capture;
pub mod cli;
pub mod env_manifest;
pub mod error;
pub mod exact;
pub mod floor;
pub mod gpu;
pub mod grid;
pub mod progress;
pub mod record;
pub mod reference;
pub mod report;
pub mod run;
pub mod stats;
pub mod synth;
pub mod timing;
pub mod topk;

pub use error::{GvrError, Result};
