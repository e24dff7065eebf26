//! A faithful CPU model of the self-sampling GVR V2 main family
//! (non-split and SPLIT), row by row: sample, threshold ladder, one classify +
//! histogram + stage pass, verify, retry ladder, cursor emit, crossing
//! refinement and the exact fallbacks (docs/algorithm.md, "main: one streaming pass per row"). It uses the same
//! launch parameters as the GPU host side (`route::main_params`), so its path
//! counts say how often each path of the real kernel would run on the data.
//! The `cpu-ss` arm (crate::arms::cpu_ss) runs it over batches.

mod keys;
mod reg;
mod row;

pub use keys::{fkey, invkey};
pub use reg::{select_row_reg, RegCounts, RegModel};
pub use row::{select_row, PathCounts};

use crate::topk::families::reg::{plan_reg, RegSource};
use crate::topk::families::FamilyLaunch;
use crate::topk::route::{clus_params, main_params, route, DeviceProfile, Family, MainParams};
use crate::topk::Shape;

/// What the model plans for a batch shape: the route's family and launch
/// parameters, on one device profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuModel {
    device: DeviceProfile,
    /// Fixed CTAs per row, or `None` to take R from the route.
    forced_parts: Option<u32>,
}

impl Default for CpuModel {
    fn default() -> Self {
        CpuModel::new()
    }
}

impl CpuModel {
    /// Plans launches for our H200 (132 SMs), like the `ss` arm does.
    pub fn new() -> CpuModel {
        CpuModel::with_device(DeviceProfile::h200())
    }

    pub fn with_device(device: DeviceProfile) -> CpuModel {
        CpuModel {
            device,
            forced_parts: None,
        }
    }

    /// Model every row with `parts` CTAs per row (1 = non-split; > 1 =
    /// SPLIT) instead of the route's choice.
    pub fn with_parts(mut self, parts: u32) -> CpuModel {
        self.forced_parts = Some(parts.max(1));
        self
    }

    /// The reg launch the model runs for a shape: when the route picks reg
    /// or regimg (regimg runs the reg kernel, as on the GPU) and no split
    /// factor is forced. `use_hints` is decided per batch at launch.
    pub fn reg_launch(&self, shape: &Shape) -> Option<(RegModel, String)> {
        if self.forced_parts.is_some() {
            return None;
        }
        let plan = plan_reg(shape, &self.device).ok()?;
        if !matches!(plan.source, RegSource::Routed(_)) {
            return None;
        }
        let model = RegModel {
            nbh: plan.entry.nbh,
            capacity: plan.entry.capacity(),
            cmp: plan.plan.cmp,
            qc: plan.plan.qc,
            use_hints: true,
            drops_few: plan.drop_few(),
        };
        Some((model, plan.variant()))
    }

    /// The streaming launch the model runs for a shape: R from the route
    /// when it picks main (SPLIT when R > 1); the route's clus picks with
    /// their cluster size and QUAD sample (`clus_params`: the clus kernel's
    /// sample, ladder and single pass over the whole row; its cluster-merged
    /// histogram is the same histogram, and its H cap is not modelled);
    /// reg_clus shapes run main with one CTA per row (not modelled).
    pub fn launch_params(&self, shape: &Shape) -> MainParams {
        let decision = route(shape.rows, shape.n, shape.npad, shape.k, &self.device);
        if self.forced_parts.is_none() && decision.family == Family::Clus {
            return clus_params(
                shape.rows,
                shape.n,
                shape.npad,
                shape.k,
                decision.cluster,
                &self.device,
            );
        }
        let parts = self.forced_parts.unwrap_or(match decision.family {
            Family::Main => decision.ctas_per_row,
            _ => 1,
        });
        main_params(
            shape.rows,
            shape.n,
            shape.npad,
            shape.k,
            parts,
            &self.device,
        )
    }

    /// The recorded variant of `shape`'s launch.
    pub fn variant(&self, shape: &Shape) -> Option<String> {
        if let Some((_, variant)) = self.reg_launch(shape) {
            return Some(variant);
        }
        let params = self.launch_params(shape);
        let clus = self.forced_parts.is_none()
            && route(shape.rows, shape.n, shape.npad, shape.k, &self.device).family == Family::Clus;
        if clus {
            return Some(format!("clus/cl{}", params.r));
        }
        Some(format!("main/blk{}/r{}", params.blk, params.r))
    }
}
