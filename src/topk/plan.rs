//! One [`Plan`] per launch: which family runs a batch shape and everything
//! its launch needs, made once. `Plan::routed` asks `route()` once and hands
//! its decision to the family's planner (the product, `ss`); `Plan::forced`
//! plans one family for the shape (the `ss-main`, `ss-reg`, `ss-clus`,
//! `ss-regclus` arms, for certification and tuning). On the shapes the route
//! gives a family, both plan byte-identical launches.
//!
//! [`Runner`] holds what a planned launch needs on the device (the loaded
//! entry point and the SPLIT workspace) and enqueues it.

use std::sync::Arc;

use cudarc::driver::LaunchConfig;

use super::families::{clus, main, reg, reg_clus, FamilyLaunch};
use super::launcher::Launcher;
use super::route::{route, DeviceProfile, RouteDecision};
use super::tuning::Tuning;
use super::Shape;
use crate::error::Result;
use crate::gpu::{DeviceBatch, Gpu, KernelBuild, Workspace};

/// A kernel family, as an arm forces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Main,
    Reg,
    Clus,
    RegClus,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Main => "main",
            Family::Reg => "reg",
            Family::Clus => "clus",
            Family::RegClus => "reg_clus",
        }
    }
}

/// The launch of one batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Main(main::MainLaunch),
    Reg(reg::RegLaunch),
    Clus(clus::ClusStreamLaunch),
    RegClus(reg_clus::ClusLaunch),
}

fn decide(shape: &Shape, dev: &DeviceProfile) -> RouteDecision {
    route(shape.rows.max(1), shape.n, shape.npad, shape.k, dev)
}

impl Plan {
    /// The route's family for `shape` with its launch, or main when the
    /// route's family has no compiled launch for the shape as routed (main
    /// admits every shape any family admits).
    pub fn routed(
        shape: &Shape,
        dev: &DeviceProfile,
        tuning: &Tuning,
    ) -> std::result::Result<Plan, String> {
        super::admits(shape)?;
        let decision = decide(shape, dev);
        Plan::from_decision(shape, dev, &decision, tuning)
    }

    /// [`Plan::routed`] with the route's decision for `shape` already made.
    pub fn from_decision(
        shape: &Shape,
        dev: &DeviceProfile,
        decision: &RouteDecision,
        tuning: &Tuning,
    ) -> std::result::Result<Plan, String> {
        use super::route::Family as Routed;
        let family = match decision.family {
            // (`reg.entry` replaces the routed entry: a tuning run's own choice.)
            Routed::Reg | Routed::RegImg => reg::plan(shape, dev, decision, tuning)
                .ok()
                .filter(|p| matches!(p.source, reg::RegSource::Routed(_) | reg::RegSource::Forced))
                .map(Plan::Reg),
            Routed::RegClus => reg_clus::plan(shape, dev, decision)
                .ok()
                .filter(|p| p.routed)
                .map(Plan::RegClus),
            Routed::Clus => clus::plan_routed(shape, dev, decision, tuning)
                .ok()
                .map(Plan::Clus),
            Routed::Main => None,
        };
        match family {
            Some(plan) => Ok(plan),
            None => main::plan(shape, dev, Some(decision), tuning).map(Plan::Main),
        }
    }

    /// `family`'s launch for `shape`, where that family can run it.
    pub fn forced(
        family: Family,
        shape: &Shape,
        dev: &DeviceProfile,
        tuning: &Tuning,
    ) -> std::result::Result<Plan, String> {
        super::admits(shape)?;
        match family {
            Family::Main => main::plan(shape, dev, None, tuning).map(Plan::Main),
            Family::Reg => reg::plan(shape, dev, &decide(shape, dev), tuning).map(Plan::Reg),
            Family::Clus => {
                clus::plan_forced(shape, dev, &decide(shape, dev), tuning).map(Plan::Clus)
            }
            Family::RegClus => reg_clus::plan(shape, dev, &decide(shape, dev)).map(Plan::RegClus),
        }
    }

    pub fn family(&self) -> Family {
        match self {
            Plan::Main(_) => Family::Main,
            Plan::Reg(_) => Family::Reg,
            Plan::Clus(_) => Family::Clus,
            Plan::RegClus(_) => Family::RegClus,
        }
    }

    /// The planned launch, whatever its family.
    pub fn launch(&self) -> &dyn FamilyLaunch {
        match self {
            Plan::Main(p) => p,
            Plan::Reg(p) => p,
            Plan::Clus(p) => p,
            Plan::RegClus(p) => p,
        }
    }

    fn launch_mut(&mut self) -> &mut dyn FamilyLaunch {
        match self {
            Plan::Main(p) => p,
            Plan::Reg(p) => p,
            Plan::Clus(p) => p,
            Plan::RegClus(p) => p,
        }
    }

    /// The family's own variant (`main/blk512/r1`, `reg/blk1024/v4`, ...).
    pub fn family_variant(&self) -> String {
        self.launch().variant()
    }

    /// Recorded variant: the family's, then every knob of `tuning` that acts
    /// on this launch (` +NAME=VALUE`).
    pub fn variant(&self, tuning: &Tuning) -> String {
        self.family_variant() + &tuning.label(self.launch().scopes())
    }

    /// The builds staging this plan may load (the register family's with and
    /// without the next-wave prefetch, which is decided once the first is
    /// loaded), for compiling ahead of the first case.
    pub fn builds(&self, tuning: &Tuning) -> Vec<KernelBuild> {
        self.launch().builds(tuning)
    }

    pub fn config(&self) -> LaunchConfig {
        self.launch().config()
    }

    /// Bytes of zeroed workspace the launch needs (main's SPLIT slab).
    pub fn workspace_bytes(&self) -> usize {
        self.launch().workspace_bytes()
    }

    /// Rows of the launch.
    pub fn rows(&self) -> u32 {
        self.config().grid_dim.1
    }
}

/// What a plan needs on the device: its loaded entry point and the SPLIT
/// workspace (zeroed once; the kernels restore it to zero).
pub struct Runner {
    launcher: Launcher,
    workspace: Workspace,
}

impl Runner {
    pub fn new(gpu: Arc<Gpu>, arm: &str) -> Runner {
        Runner {
            workspace: Workspace::new(&gpu),
            launcher: Launcher::new(gpu, arm),
        }
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        self.launcher.gpu()
    }

    /// Load `plan`'s build (compiling it if needed), finish the parts of the
    /// plan that depend on the loaded function (the register family's
    /// next-wave prefetch distance) and size the workspace. Outside any
    /// timed window.
    pub fn prepare(&mut self, plan: &mut Plan, tuning: &Tuning) -> Result<()> {
        plan.launch_mut().prepare(&mut self.launcher, tuning)?;
        self.workspace.ensure(plan.workspace_bytes())?;
        Ok(())
    }

    /// Zero the workspace again (outside timing): a launch aborted mid-row
    /// would otherwise leave nonzero counters behind.
    pub fn reset_workspace(&mut self) -> Result<()> {
        self.workspace.zero()
    }

    /// Enqueue `plan` (prepared) over `batch`; no synchronisation.
    pub fn launch(&mut self, plan: &Plan, batch: &mut DeviceBatch) -> Result<()> {
        plan.launch()
            .launch(&self.launcher, batch, &mut self.workspace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(rows: usize, n: usize, k: usize) -> Shape {
        Shape {
            rows,
            n,
            npad: n.div_ceil(64).max(1) * 64,
            k,
        }
    }

    #[test]
    fn route_families_map_to_their_built_kernels() {
        let dev = DeviceProfile::h200();
        let t = Tuning::default();
        // A wide batch of 4K rows is the register family's home.
        let p = Plan::routed(&shape(64, 4096, 512), &dev, &t).unwrap();
        assert_eq!(p.family(), Family::Reg);
        // One 64K row with k ≤ 1024 is a reg_clus row.
        let p = Plan::routed(&shape(1, 65536, 512), &dev, &t).unwrap();
        assert_eq!(p.family(), Family::RegClus);
        // Long rows at big batch stream through main.
        let p = Plan::routed(&shape(512, 131072, 2048), &dev, &t).unwrap();
        assert_eq!(p.family(), Family::Main);
    }

    #[test]
    fn the_entry_knob_reaches_the_routed_arm_where_the_route_picks_reg() {
        // Before, the routed arm dropped the forced entry's plan and ran main
        // in its place ("main(for reg)"), so an experiment variant that set
        // `reg.entry` on `ss` timed another family without saying so.
        let dev = DeviceProfile::h200();
        let mut t = Tuning::default();
        t.set("reg.entry", "ss_reg_b1024_v4").unwrap();
        let p = Plan::routed(&shape(8, 8195, 1024), &dev, &t).unwrap();
        let Plan::Reg(reg) = p else {
            panic!("{:?}", p.family())
        };
        assert_eq!((reg.entry.blk, reg.entry.vpt), (1024, 4));
        assert_eq!(reg.source, reg::RegSource::Forced);
        // Where the route picks another family the knob does not move it.
        let p = Plan::routed(&shape(512, 131072, 2048), &dev, &t).unwrap();
        assert_eq!(p.family(), Family::Main);
    }

    #[test]
    fn every_grid_shape_runs_the_family_the_route_picks_and_forced_arms_match() {
        use crate::topk::route::Family as Routed;
        let dev = DeviceProfile::h200();
        let t = Tuning::default();
        for k in [512usize, 1024, 2048] {
            for n in [1usize, 100, 2048, 4099, 8195, 16387, 65539, 131075, 262147] {
                for b in [1usize, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] {
                    let s = shape(b, n, k);
                    let family = decide(&s, &dev).family;
                    let p = Plan::routed(&s, &dev, &t).unwrap();
                    let want = match family {
                        Routed::Reg | Routed::RegImg => Family::Reg,
                        Routed::RegClus => Family::RegClus,
                        Routed::Clus => Family::Clus,
                        Routed::Main => Family::Main,
                    };
                    assert_eq!(p.family(), want, "b={b} n={n} k={k}");
                    // The forced arm of the routed family plans the same launch.
                    let forced = Plan::forced(p.family(), &s, &dev, &t).unwrap();
                    if p.family() != Family::Main {
                        assert_eq!(forced, p, "b={b} n={n} k={k}");
                    }
                }
            }
        }
    }

    #[test]
    fn knobs_name_themselves_in_the_variant_of_the_launches_they_touch() {
        let dev = DeviceProfile::h200();
        let mut t = Tuning::default();
        t.set("SS_L2_DIST", "1").unwrap();
        t.set("CL_L2_NEXT", "0").unwrap();
        let main = Plan::forced(Family::Main, &shape(256, 65_536, 2048), &dev, &t).unwrap();
        assert_eq!(main.variant(&t), "main/blk512/r1 +SS_L2_DIST=1");
        let reg = Plan::routed(&shape(64, 4096, 512), &dev, &t).unwrap();
        assert!(!reg.variant(&t).contains('+'), "{}", reg.variant(&t));
        let b = reg.builds(&t);
        assert!(b
            .iter()
            .all(|b| !b.defines.iter().any(|(n, _)| *n == "SS_L2_DIST")));
        let m = &main.builds(&t)[0];
        assert!(m.defines.contains(&("SS_L2_DIST", "1".to_string())));
        assert!(m.defines.contains(&("SS_WAVE_SMS", "132".to_string())));
    }

    #[test]
    fn refused_shapes_say_why() {
        let dev = DeviceProfile::h200();
        let t = Tuning::default();
        let err = Plan::routed(&shape(1, 4096, 256), &dev, &t).unwrap_err();
        assert!(err.contains("k = 256"), "{err}");
        let err = Plan::forced(Family::Reg, &shape(1, 65_536, 512), &dev, &t).unwrap_err();
        assert!(err.contains("capacity"), "{err}");
        let err = Plan::forced(Family::Clus, &shape(1, 2048, 512), &dev, &t).unwrap_err();
        assert!(err.contains("too short"), "{err}");
    }
}
