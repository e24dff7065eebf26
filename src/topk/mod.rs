//! The product: the self-sampling (GVR V2) exact top-K on the GPU.
//!
//! - [`route`]: the pure family choice per batch shape and the launch
//!   parameter math, with the device profile it depends on.
//! - [`plan`]: one [`Plan`] per launch, made once (by the route, or for one
//!   family when an arm forces it).
//! - [`families`]: one file per kernel family (main, reg, clus, reg_clus):
//!   its by-value kernel arguments, its planner and its launch.
//! - [`tuning`]: every knob, and the typed [`Tuning`] an arm runs with.
//! - [`launcher`]: the loaded entry point and the argument list every family
//!   launches with.
//! - [`varlen`]: the production entry (per-request `kv_lens` on the device).
//! - [`cpu`]: a CPU model of the main and register families (same route).
//!
//! This module imports only `gpu` and `error`; the arms that run it in the
//! harness are thin adapters in `crate::arms`.

pub mod cpu;
pub mod families;
pub mod launcher;
pub mod plan;
pub mod route;
pub mod tuning;
pub mod varlen;

pub use plan::{Family, Plan};
pub use route::DeviceProfile;
pub use tuning::Tuning;

/// The K values the kernels are built and tested for.
pub const SUPPORTED_K: [usize; 3] = [512, 1024, 2048];
/// Longest row of the contract.
pub const MAX_ROW_LEN: usize = 1 << 20;
/// Rows are `blockIdx.y`: at most 65,535 per launch.
pub const MAX_ROWS: usize = 65_535;

/// The shape facts that decide admissibility and the launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub rows: usize,
    /// Largest valid row length in the batch.
    pub n: usize,
    pub npad: usize,
    pub k: usize,
}

/// `Err(reason)` for shapes no self-sampling kernel takes.
pub fn admits(shape: &Shape) -> std::result::Result<(), String> {
    if !SUPPORTED_K.contains(&shape.k) {
        return Err(format!("k = {} is not one of {SUPPORTED_K:?}", shape.k));
    }
    if shape.n > MAX_ROW_LEN {
        return Err(format!("row length {} exceeds {MAX_ROW_LEN}", shape.n));
    }
    if shape.n > shape.npad {
        return Err(format!(
            "row length {} exceeds npad {}",
            shape.n, shape.npad
        ));
    }
    if shape.npad == 0 || !shape.npad.is_multiple_of(64) {
        return Err(format!(
            "npad = {} is not a positive multiple of 64",
            shape.npad
        ));
    }
    if u32::try_from(shape.npad).is_err() {
        return Err(format!("npad = {} does not fit 32 bits", shape.npad));
    }
    if shape.rows > MAX_ROWS {
        return Err(format!(
            "{} rows exceed one launch's {MAX_ROWS}",
            shape.rows
        ));
    }
    Ok(())
}

/// A planned value as a 32-bit kernel scalar, or why it does not fit.
pub(crate) fn to_u32(value: usize, what: &str) -> std::result::Result<u32, String> {
    u32::try_from(value)
        .map_err(|_| format!("{what} = {value} does not fit a 32-bit kernel scalar"))
}

/// The device profile the plans use on `gpu`: the H200 profile of the route,
/// with the SM count of the device actually opened.
pub fn profile_for(gpu: &crate::gpu::Gpu) -> DeviceProfile {
    DeviceProfile {
        sms: gpu.facts.sms.max(1),
        ..DeviceProfile::h200()
    }
}
