//! `ss`: the self-sampling GVR V2 top-K as a user calls it — one `route()`
//! decision per batch shape, handed to the family kernel that serves it.
//!
//! Families: `main` (src/arms/ss.rs), `reg`/`regimg` (ss_reg.rs), `clus`
//! (ss_clus_stream.rs), `reg_clus` (ss_clus.rs). Which delegate serves a
//! shape is the pure [`delegate_for`],
//! tested without a GPU; each delegate plans its own launch from the same
//! `route()` decision, so `ss` and the forced arms (`ss-reg`, `ss-regclus`)
//! time byte-identical launches on the shapes the route gives them.

use std::sync::Arc;

use crate::arms::ss::{self, Mode, SsMain};
use crate::arms::ss_clus::{self, SsRegClus};
use crate::arms::ss_clus_stream::{self, SsClusStream};
use crate::arms::ss_reg::{self, RegSource, SsReg};
use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::{Gpu, KernelBuild};
use crate::grid::Batch;
use crate::route::{route, DeviceProfile, Family};

/// The kernel family arm that runs a shape for `ss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delegate {
    Main,
    Reg,
    Clus,
    RegClus,
}

/// Which delegate runs `shape`: the route's family when it is built and its
/// plan takes the shape as routed, else `main` (always admissible for the
/// shapes `ss` admits).
pub fn delegate_for(shape: &Shape, dev: &DeviceProfile) -> Delegate {
    let rows = shape.rows.max(1);
    match route(rows, shape.n, shape.npad, shape.k, dev).family {
        Family::Reg | Family::RegImg => match ss_reg::plan_reg(shape, dev) {
            Ok(plan) if matches!(plan.source, RegSource::Routed(_)) => Delegate::Reg,
            _ => Delegate::Main,
        },
        Family::RegClus => match ss_clus::plan_regclus(shape, dev) {
            Ok(plan) if plan.routed => Delegate::RegClus,
            _ => Delegate::Main,
        },
        Family::Clus => match ss_clus_stream::plan_clus_stream(shape, dev) {
            Ok(_) => Delegate::Clus,
            Err(_) => Delegate::Main,
        },
        Family::Main => Delegate::Main,
    }
}

/// The routed `ss` arm.
pub struct SsRouted {
    device: DeviceProfile,
    main: SsMain,
    reg: SsReg,
    clus: SsClusStream,
    regclus: SsRegClus,
    /// Delegate of the staged batch.
    active: Option<Delegate>,
}

impl SsRouted {
    pub fn new(gpu: Arc<Gpu>) -> SsRouted {
        SsRouted {
            device: ss::profile_for(&gpu),
            main: SsMain::new(Mode::Routed, gpu.clone()),
            reg: SsReg::new(gpu.clone()),
            clus: SsClusStream::new(gpu.clone()),
            regclus: SsRegClus::new(gpu),
            active: None,
        }
    }

    /// The register delegate with the tuning switches the environment sets
    /// ([`SsReg::with_env_tuning`]).
    pub fn with_reg_env_tuning(mut self) -> Result<SsRouted> {
        self.reg = self.reg.with_env_tuning()?;
        Ok(self)
    }

    fn delegate(&mut self, which: Delegate) -> &mut dyn Arm {
        match which {
            Delegate::Main => &mut self.main,
            Delegate::Reg => &mut self.reg,
            Delegate::Clus => &mut self.clus,
            Delegate::RegClus => &mut self.regclus,
        }
    }

    /// The delegate the route picks for `shape`.
    fn routed(&self, shape: &Shape) -> &dyn Arm {
        match delegate_for(shape, &self.device) {
            Delegate::Main => &self.main,
            Delegate::Reg => &self.reg,
            Delegate::Clus => &self.clus,
            Delegate::RegClus => &self.regclus,
        }
    }

    fn staged(&mut self) -> Result<&mut dyn Arm> {
        let which = self
            .active
            .ok_or_else(|| GvrError::Other(anyhow::anyhow!("arm ss: launch before stage")))?;
        Ok(self.delegate(which))
    }
}

impl Arm for SsRouted {
    fn name(&self) -> &str {
        "ss"
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        // Main admits every shape any family admits; it is the fallback.
        ss::plan(Mode::Routed, shape, &self.device).map(|_| ())
    }

    fn variant(&self, shape: &Shape) -> Option<String> {
        self.routed(shape).variant(shape)
    }

    fn builds(&self, shape: &Shape) -> Vec<KernelBuild> {
        self.routed(shape).builds(shape)
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        let which = delegate_for(&Shape::of(batch), &self.device);
        self.active = None;
        self.delegate(which).stage(batch)?;
        self.active = Some(which);
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        self.staged()?.poison_output()
    }

    fn launch(&mut self) -> Result<()> {
        self.staged()?.launch()
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        self.staged()?.read_output()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(rows: usize, n: usize, k: usize) -> Shape {
        Shape {
            rows,
            n,
            npad: n.div_ceil(64) * 64,
            k,
        }
    }

    #[test]
    fn route_families_map_to_their_built_kernels() {
        let dev = DeviceProfile::h200();
        // A wide batch of 4K rows is the register family's home (§4.4).
        assert_eq!(delegate_for(&shape(64, 4096, 512), &dev), Delegate::Reg);
        // One 64K row with k ≤ 1024 is a reg_clus row.
        assert_eq!(delegate_for(&shape(1, 65536, 512), &dev), Delegate::RegClus);
        // Long rows at big batch stream through main.
        assert_eq!(
            delegate_for(&shape(512, 131072, 2048), &dev),
            Delegate::Main
        );
    }

    #[test]
    fn every_grid_shape_has_a_delegate_that_agrees_with_the_route() {
        let dev = DeviceProfile::h200();
        for k in [512usize, 1024, 2048] {
            for n in [1usize, 100, 2048, 4099, 8195, 16387, 65539, 131075, 262147] {
                for b in crate::grid::BATCH_SIZES {
                    let s = shape(b, n, k);
                    let family = route(b, n, s.npad, k, &dev).family;
                    let d = delegate_for(&s, &dev);
                    match d {
                        Delegate::Reg => {
                            assert!(matches!(family, Family::Reg | Family::RegImg))
                        }
                        Delegate::RegClus => assert_eq!(family, Family::RegClus),
                        Delegate::Clus => assert_eq!(family, Family::Clus),
                        Delegate::Main => {}
                    }
                    if matches!(family, Family::Reg | Family::RegImg) {
                        assert_eq!(d, Delegate::Reg, "b={b} n={n} k={k}");
                    }
                    if family == Family::RegClus {
                        assert_eq!(d, Delegate::RegClus, "b={b} n={n} k={k}");
                    }
                    if family == Family::Clus {
                        assert_eq!(d, Delegate::Clus, "b={b} n={n} k={k}");
                    }
                }
            }
        }
    }
}
